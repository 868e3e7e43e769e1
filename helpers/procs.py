"""Run a workload in a fresh Python process and read its results back as rows.

Some settings exist only before TensorFlow starts (thread pools, oneDNN, the allocator, logical
devices, the placer log), and a long-lived kernel hides memory growth. The answer is a fresh
process per measurement. ``run_rows`` starts one from an argument list (never a shell), with
its own environment and a timeout, and kills and reaps it (and anything it started) on a
timeout, an error or an interrupt. The child reports with ``emit``: one JSON object per line,
after a marker, so stray prints and log lines never pass for results.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

ROW_MARKER = "@@row "
TAIL_LINES = 8
#: TensorFlow's start-up banners, printed by every child whatever TF_CPP_MIN_LOG_LEVEL says:
#: left out of error tails so that the lines that explain a failure are the ones shown.
STARTUP_NOISE = re.compile(
    r"All log messages before absl::InitializeLog|port\.cc:\d+\] oneDNN custom operations|"
    r"cudart_stub\.cc|cpu_feature_guard\.cc|To enable the following instructions|cuda_platform\.cc|"
    r"Unable to register cu(DNN|FFT|BLAS) factory|computation placer already registered")


class ChildError(RuntimeError):
    """A child process that failed, ran too long or printed no usable result; ``tail`` holds
    its last output lines."""

    def __init__(self, message: str, tail: str = "") -> None:
        super().__init__(f"{message}\n--- last lines of the child's output ---\n{tail}" if tail else message)
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
    kept = [line for line in text.splitlines() if line.strip() and not STARTUP_NOISE.search(line)]
    return "\n".join(kept[-lines:])


def parse_rows(stdout: str) -> list[dict[str, Any]]:
    """The rows a child emitted; a marked line that is not a JSON object raises ``ChildError``."""
    rows = []
    for line in stdout.splitlines():
        if not line.startswith(ROW_MARKER):
            continue
        try:
            row = json.loads(line[len(ROW_MARKER):])
        except json.JSONDecodeError:
            row = None
        if not isinstance(row, dict):
            raise ChildError(f"the child printed a result line that is not a JSON object: {line[:200]!r}", tail(stdout))
        rows.append(row)
    return rows


def _stop(child: subprocess.Popen[str]) -> None:
    """Kill whatever is left of the child's process group (the child may have started its own
    children), then reap the child."""
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if child.returncode is None:
        try:
            child.communicate(timeout=10)
        except (subprocess.TimeoutExpired, ValueError):
            child.kill()
            child.wait()


def run(
    args: Sequence[str], *, env: Mapping[str, str] | None = None, timeout: float = 300.0, cwd: str | None = None
) -> ChildResult:
    """Run ``args`` (a list, no shell) with ``env`` added to this process's environment; raise
    ``ChildError`` with its last lines if it exits non-zero, dies from a signal or runs past
    ``timeout`` seconds. The child and its own children never outlive the call."""
    if isinstance(args, str | bytes) or not args or not all(isinstance(a, str) for a in args):
        raise TypeError(f"args must be a non-empty list of strings (no shell), got {args!r}")
    if not timeout > 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
    if env is not None and not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise TypeError(f"env must map strings to strings, got {dict(env)!r}")
    started = time.perf_counter()
    child = subprocess.Popen(
        list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        env={**os.environ, **(env or {})}, cwd=cwd, start_new_session=True,  # own group: killed as one
    )
    try:
        out, err = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ChildError(f"{_name(args)} ran past its {timeout:g} s timeout and was stopped") from None
    finally:  # an interrupt (KeyboardInterrupt from the notebook's stop button) lands here too
        _stop(child)
    seconds = time.perf_counter() - started
    if child.returncode != 0:
        how = (f"was killed by {signal.Signals(-child.returncode).name}" if child.returncode < 0
               else f"failed with exit code {child.returncode}")
        raise ChildError(f"{_name(args)} {how}", tail(err + "\n" + out))
    return ChildResult(child.returncode, out, err, seconds)


def run_rows(
    args: Sequence[str], *, env: Mapping[str, str] | None = None, timeout: float = 300.0, cwd: str | None = None
) -> list[dict[str, Any]]:
    """``run`` then ``parse_rows``; a child that exits cleanly but emits no row is an error too."""
    result = run(args, env=env, timeout=timeout, cwd=cwd)
    rows = parse_rows(result.stdout)
    if not rows:
        raise ChildError(f"{_name(args)} finished but reported no result rows", tail(result.stderr + "\n" + result.stdout))
    return rows


def python_module(module: str, *args: str) -> list[str]:
    """The argument list that runs ``python -m module args...`` with this interpreter."""
    return [sys.executable, "-m", module, *args]


def _name(args: Sequence[str]) -> str:
    shown = " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(args))
    return f"the child process `{shown[:120]}`"
