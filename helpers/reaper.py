"""Leave nothing running: find and end every process a child started, wherever it went.

A child's own children can leave its process group (``setsid``) or outlive it while holding its
output pipes. So the runners (``procs.run``, ``cluster.Cluster``) make this process a *child
subreaper* on Linux (orphaned descendants are re-parented to it, not to init), mark each child's
environment with a token its descendants inherit, and after the child ends, end every process
that carries the token or holds the child's pipes: SIGTERM, then SIGKILL after a short grace,
then reap.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import psutil

from helpers import checks
from helpers.deadline import Deadline

PR_SET_CHILD_SUBREAPER = 36
MARK = "WORKBOOK_PROCESS_MARK"
GRACE = 3.0
_subreaper: bool | None = None


def become_subreaper() -> bool:
    """Make this process a child subreaper (Linux; once per process); False elsewhere."""
    global _subreaper
    if _subreaper is None:
        _subreaper = False
        if sys.platform.startswith("linux"):
            with contextlib.suppress(OSError, AttributeError):
                _subreaper = (
                    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
                )
    return _subreaper


def marked_env(env: Mapping[str, str]) -> tuple[str, dict[str, str]]:
    """A fresh token and ``env`` with it added to the mark (nested runs keep the outer tokens)."""
    token = uuid.uuid4().hex
    outer = env.get(MARK, "")
    return token, {**env, MARK: f"{outer}:{token}" if outer else token}


@checks.arguments(live_only=checks.flag)
def descendants(live_only: bool = False) -> set[int]:
    """The pids of this process's descendants now. Exited ones not yet waited for (zombies) are
    included, as a snapshot taken before starting a child must (``reap_orphans`` would otherwise
    reap a sibling ``Popen`` and hide its exit code); ``live_only=True`` leaves them out."""
    found = set()
    with contextlib.suppress(psutil.Error):
        for process in psutil.Process().children(recursive=True):
            with contextlib.suppress(psutil.Error):  # gone since the listing
                if not live_only or process.status() != psutil.STATUS_ZOMBIE:
                    found.add(process.pid)
    return found


@checks.arguments(grace=checks.number(0.0, 3600.0, "seconds"))
def outlived(before: set[int], grace: float = 5.0) -> set[int]:
    """The descendants not in ``before`` still running after up to ``grace`` seconds (exits under
    way are let finish)."""
    clock = Deadline(grace, "the new processes to exit")
    while descendants(live_only=True) - before and not clock.passed:
        clock.pause(0.05)
    return descendants(live_only=True) - before


def _candidates() -> Iterable[psutil.Process]:
    # With the subreaper on, every orphan of a child is re-parented here; without it, look
    # everywhere.
    return (
        psutil.Process().children(recursive=True) if become_subreaper() else psutil.process_iter()
    )


def marked(token: str, exclude: Iterable[int] = ()) -> list[psutil.Process]:
    """Live processes whose environment carries ``token``, except the pids in ``exclude``."""
    skip = {os.getpid(), *exclude}
    found = []
    for process in _candidates():
        if process.pid in skip:
            continue
        with contextlib.suppress(psutil.Error):
            if token in process.environ().get(MARK, "").split(":"):
                found.append(process)
    return found


def left_behind(token: str, before: set[int], exclude: Iterable[int] = ()) -> list[psutil.Process]:
    """What a run left running: live processes whose environment carries ``token``, and, with
    the subreaper on, orphans re-parented here since ``before`` that carry no mark at all (a
    descendant that cleared the mark and left its session: ``env -u ... setsid``). A child
    another run started carries that run's own mark and is left alone. Each environment is
    read once: a process caught inside ``execve`` shows an empty one for an instant, and read
    twice it could pass as neither marked nor orphaned (the likely cause of one CI failure)."""
    skip = {os.getpid(), *exclude}
    subreaper, found = become_subreaper(), []
    direct = set()
    with contextlib.suppress(psutil.Error):
        direct = {p.pid for p in psutil.Process().children()} if subreaper else set()
    for process in _candidates():
        if process.pid in skip:
            continue
        with contextlib.suppress(psutil.Error):
            mark = process.environ().get(MARK)
            if token in (mark or "").split(":") or (
                mark is None
                and process.pid in direct
                and process.pid not in before
                and process.status() != psutil.STATUS_ZOMBIE
            ):
                found.append(process)
    return found


def pipe_inodes(*files: Any) -> set[int]:
    """The inodes of the pipes behind ``files`` (this process's ends of a child's pipes)."""
    return {os.fstat(f.fileno()).st_ino for f in files if f is not None and not f.closed}


def holders(inodes: set[int]) -> list[psutil.Process]:
    """Other processes that hold one of the pipes ``inodes`` open (Linux; /proc)."""
    if not inodes or not Path("/proc/self/fd").is_dir():
        return []
    wanted, found = {f"pipe:[{i}]" for i in inodes}, []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError, psutil.Error):
            if any(os.readlink(fd) in wanted for fd in (entry / "fd").iterdir()):
                found.append(psutil.Process(int(entry.name)))
    return found


def describe(process: psutil.Process) -> str:
    """``pid N: its command line`` (shortened)."""
    try:
        shown = " ".join(process.cmdline()) or process.name()
    except psutil.Error:
        shown = "?"
    return f"pid {process.pid}: {shown[:80]}"


@checks.arguments(grace=checks.number(0.0, 3600.0, "seconds"))
def end(
    processes: Iterable[psutil.Process],
    popens: Iterable[subprocess.Popen[Any]] = (),
    grace: float = GRACE,
) -> None:
    """SIGTERM ``processes`` and the process groups led by ``popens`` (started with their own
    session); SIGKILL what is left after ``grace`` seconds; reap everything (``popens`` through
    ``Popen``, so that their exit codes stay right)."""
    popens = list(popens)
    own = {c.pid for c in popens}
    alive = [p for p in processes if p.pid not in own]
    _signal(popens, alive, signal.SIGTERM)
    clock = Deadline(grace, "the stopped processes to exit")
    while True:
        _, alive = psutil.wait_procs(alive, timeout=0.05) if alive else ([], [])
        if (not alive and all(c.poll() is not None for c in popens)) or clock.passed:
            break
        if not alive:
            clock.pause(0.05)
    _signal(popens, alive, signal.SIGKILL)
    for child in popens:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=10)
    psutil.wait_procs(alive, timeout=10)


def _signal(
    popens: list[subprocess.Popen[Any]], processes: list[psutil.Process], signum: int
) -> None:
    for child in popens:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signum)  # the group outlives its leader while members remain
    for process in processes:
        with contextlib.suppress(psutil.Error):
            process.send_signal(signum)


def reap_orphans(before: set[int], exclude: Iterable[int] = ()) -> None:
    """Reap the zombies of orphans re-parented here since ``before`` (not ``exclude``: a
    ``Popen``'s own child is reaped by it)."""
    skip = before | set(exclude)
    with contextlib.suppress(psutil.Error):
        for process in psutil.Process().children():
            if process.pid not in skip:
                with contextlib.suppress(psutil.Error, ChildProcessError):
                    if process.status() == psutil.STATUS_ZOMBIE:
                        os.waitpid(process.pid, os.WNOHANG)
