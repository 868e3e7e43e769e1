"""Run a workload in a fresh Python process and read its results back as rows.

Some settings exist only before TensorFlow starts (thread pools, oneDNN, the allocator, logical
devices, the placer log), and a long-lived kernel hides memory growth. The answer is a fresh
process per measurement. ``run_rows`` starts one from an argument list (never a shell), with
its own environment and a timeout, and kills and reaps it (and anything it started) on a
timeout, an error or an interrupt. The child reports with ``emit``: one JSON object per line,
after a marker, so stray prints and log lines never pass for results. ``programs`` writes a
notebook's child programs (lesson code, shown in full in the notebook) to files for one block,
so that they run as a learner runs them from a terminal.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from helpers import checks, reaper
from helpers.deadline import Deadline

ROW_MARKER = "@@row "
TAIL_LINES = 8
#: TensorFlow's start-up banners, printed by every child whatever TF_CPP_MIN_LOG_LEVEL says:
#: left out of error tails so that the lines that explain a failure are the ones shown.
STARTUP_NOISE = re.compile(
    r"All log messages before absl::InitializeLog|port\.cc:\d+\] oneDNN custom operations|"
    r"cudart_stub\.cc|cpu_feature_guard\.cc|To enable the following instructions|cuda_platform\.cc|"
    r"Unable to register cu(DNN|FFT|BLAS) factory|computation placer already registered"
)


class ChildError(RuntimeError):
    """A child process that failed, ran too long or printed no usable result; ``tail`` holds
    its last output lines."""

    def __init__(self, message: str, tail: str = "") -> None:
        super().__init__(
            f"{message}\n--- last lines of the child's output ---\n{tail}" if tail else message
        )
        self.tail = tail


@dataclass
class ChildResult:
    """What a finished child left: exit code, output, wall time and the rows it emitted."""

    returncode: int
    stdout: str
    stderr: str
    seconds: float
    rows: list[dict[str, Any]] = field(default_factory=list)


def emit(row: Mapping[str, Any]) -> None:
    """Child side: report one result row to the parent (one marked JSON line, flushed)."""
    print(ROW_MARKER + json.dumps(dict(row)), flush=True)


def tail(text: str, lines: int = TAIL_LINES) -> str:
    """The last ``lines`` non-empty lines of ``text``, TensorFlow's start-up banners left out."""
    if not isinstance(text, str):
        raise checks.BadType(
            f"text must be a string, got {checks._show(text)} ({type(text).__name__})"
        )
    checks.whole_number("lines", lines, 1, maximum=100_000)
    kept = [line for line in text.splitlines() if line.strip() and not STARTUP_NOISE.search(line)]
    return "\n".join(kept[-lines:])


def parse_rows(stdout: str) -> list[dict[str, Any]]:
    """The rows a child emitted; a marked line that is not a JSON object raises ``ChildError``."""
    rows = []
    for line in stdout.splitlines():
        if not line.startswith(ROW_MARKER):
            continue
        try:
            row = json.loads(line[len(ROW_MARKER) :])
        except json.JSONDecodeError:
            row = None
        if not isinstance(row, dict):
            raise ChildError(
                f"the child printed a result line that is not a JSON object: {line[:200]!r}",
                tail(stdout),
            )
        rows.append(row)
    return rows


#: How long a child's pipes may stay open after it exits (a helper process finishing) before
#: whatever holds them counts as left behind.
PIPE_GRACE = 1.0
#: The longest timeout a run accepts: a week.
MAX_TIMEOUT = 7 * 24 * 3600.0
_ENV_NAME = re.compile(r"[^=\0]+")


def _check(args: Any, env: Any, timeout: Any, cwd: Any) -> None:
    if isinstance(args, str | bytes) or not isinstance(args, Sequence) or not args:
        raise checks.BadType(
            f"args must be a non-empty list of strings (no shell), got {checks._show(args)}"
        )
    for arg in args:
        if not isinstance(arg, str):
            raise checks.BadType(
                "args must be a non-empty list of strings (no shell), "
                f"got the item {checks._show(arg)} ({type(arg).__name__}) in {checks._show(args)}"
            )
        if "\0" in arg:
            raise ValueError(f"args must not hold a NUL character, got {checks._show(arg)}")
    checks.number(0.0, MAX_TIMEOUT, "seconds", above=True)("timeout", timeout)
    if env is not None:
        if not isinstance(env, Mapping):
            raise checks.BadType(
                f"env must map strings to strings, got {checks._show(env)} ({type(env).__name__})"
            )
        for key, value in env.items():
            if not isinstance(key, str) or not (isinstance(value, str) or value is None):
                raise checks.BadType(
                    f"env must map strings to strings, got {checks._show(dict(env))}"
                )
            if not _ENV_NAME.fullmatch(key) or "\0" in (value or ""):
                raise ValueError(
                    "env names must be non-empty without '=' or NUL, values without NUL; "
                    f"got {key!r}"
                )
    if cwd is not None and not Path(checks.path("cwd", cwd)).is_dir():
        raise ValueError(f"cwd must be an existing folder, got {str(cwd)!r}")


def _collect(child: subprocess.Popen[str], timeout: float) -> tuple[str, str, str]:
    """Read the child's output until it exits and its pipes close: ``(out, err, "done")``;
    ``"timeout"`` when it runs past ``timeout``; ``"held"`` when it exited but something it
    started still holds its pipes after ``PIPE_GRACE``."""
    clock, pipes = Deadline(timeout, "the child to exit"), None
    while True:
        try:
            out, err = child.communicate(timeout=max(0.01, clock.left(0.2)))
            return out, err, "done"
        except subprocess.TimeoutExpired:
            pass
        if child.poll() is not None:
            pipes = pipes or Deadline(PIPE_GRACE, "its pipes to close")
            if pipes.passed:
                return "", "", "held"
        elif clock.passed:
            return "", "", "timeout"


def _finish(
    child: subprocess.Popen[str], token: str, before: set[int], inodes: set[int]
) -> tuple[list[str], bool]:
    """End the child's group and every process it left (marked, or holding its pipes), reap
    them; return their descriptions and whether any held the pipes."""
    holding = reaper.holders(inodes) if child.stdout is not None and not child.stdout.closed else []
    found = {p.pid: p for p in [*reaper.left_behind(token, before, exclude={child.pid}), *holding]}
    shown = [reaper.describe(p) for p in found.values()]
    reaper.end(found.values(), [child])
    reaper.reap_orphans(before, exclude={child.pid})
    return shown, bool(holding)


def run(
    args: Sequence[str],
    *,
    env: Mapping[str, str | None] | None = None,
    timeout: float = 300.0,
    cwd: str | None = None,
) -> ChildResult:
    """Run ``args`` (a list, no shell) with ``env`` added to this process's environment (a None
    value removes that variable); raise
    ``ChildError`` with its last lines if it exits non-zero, dies from a signal, runs past
    ``timeout`` seconds or leaves a process running. The child and everything it started (even
    in a session of its own) never outlive the call."""
    _check(args, env, timeout, cwd)
    reaper.become_subreaper()
    before = reaper.descendants()
    merged = {**os.environ, **(env or {})}
    token, full_env = reaper.marked_env({k: v for k, v in merged.items() if v is not None})
    started = time.perf_counter()
    child = subprocess.Popen(
        list(args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=full_env,
        cwd=cwd,
        start_new_session=True,  # own group: stopped as one
    )
    inodes = reaper.pipe_inodes(child.stdout, child.stderr)
    out, err, state, left, held = "", "", "running", [], False
    try:
        out, err, state = _collect(child, timeout)
    finally:  # an interrupt (KeyboardInterrupt from the notebook's stop button) lands here too
        left, held = _finish(child, token, before, inodes)
        if state != "done":
            with contextlib.suppress(subprocess.TimeoutExpired, ValueError):
                more = child.communicate(timeout=10)
                out, err = out + (more[0] or ""), err + (more[1] or "")
    seconds = time.perf_counter() - started
    also = (
        f"; it left {len(left)} background process{'es' if len(left) > 1 else ''}"
        f"{' holding its output' if held else ''} ({'; '.join(left)}), ended too"
        if left
        else ""
    )
    if state == "timeout":
        raise ChildError(
            f"{_name(args)} ran past its {timeout:g} s timeout and was stopped{also}",
            tail(err + "\n" + out),
        )
    if child.returncode != 0:
        how = (
            f"was killed by {signal.Signals(-child.returncode).name}"
            if child.returncode < 0
            else f"failed with exit code {child.returncode}"
        )
        raise ChildError(f"{_name(args)} {how}{also}", tail(err + "\n" + out))
    if left:
        raise ChildError(
            f"{_name(args)} exited with 0 but left {len(left)} background process"
            f"{'es' if len(left) > 1 else ''}{' holding its output' if held else ''} "
            f"({'; '.join(left)}); {'they were' if len(left) > 1 else 'it was'} ended",
            tail(err + "\n" + out),
        )
    return ChildResult(child.returncode, out, err, seconds)


def run_rows(
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 300.0,
    cwd: str | None = None,
) -> list[dict[str, Any]]:
    """``run`` then ``parse_rows``; a child that exits cleanly but emits no row is an error too."""
    result = run(args, env=env, timeout=timeout, cwd=cwd)
    rows = parse_rows(result.stdout)
    if not rows:
        raise ChildError(
            f"{_name(args)} finished but reported no result rows",
            tail(result.stderr + "\n" + result.stdout),
        )
    return rows


@contextlib.contextmanager
def programs(sources: Mapping[str, str], prefix: str = "workbook-") -> Iterator[dict[str, Path]]:
    """Each of ``sources`` (file name -> program text) written to a new temporary folder for the
    block: ``{name: path}``. The folder is removed after the block, also on an error or Ctrl-C."""
    if not sources or not all(
        isinstance(n, str) and n.endswith(".py") and "/" not in n and isinstance(t, str)
        for n, t in sources.items()
    ):
        raise ValueError(
            f"sources must map file names ending in .py to program text, got {list(sources)!r}"
        )
    with tempfile.TemporaryDirectory(prefix=prefix) as folder:
        paths = {name: Path(folder) / name for name in sources}
        for name, text in sources.items():
            paths[name].write_text(text)
        yield paths


def python_module(module: str, *args: str) -> list[str]:
    """The argument list that runs ``python -m module args...`` with this interpreter."""
    if not isinstance(module, str):
        raise checks.BadType(
            "module must be a dotted module name such as 'helpers.bench', "
            f"got {checks._show(module)} ({type(module).__name__})"
        )
    if not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", module):
        raise ValueError(
            f"module must be a dotted module name such as 'helpers.bench', got {module!r}"
        )
    if not all(isinstance(a, str) for a in args):
        raise checks.BadType(f"args must be strings, got {checks._show(args)}")
    return [sys.executable, "-m", module, *args]


def _name(args: Sequence[str]) -> str:
    shown = " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(args))
    return f"the child process `{shown[:120]}`"
