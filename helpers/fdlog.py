"""Capture what TensorFlow's C++ runtime writes to file descriptors 1 and 2, and read its
placement log as a table (plumbing for notebooks 02-04 and any cell that must keep C++ chatter
out of a notebook).

TensorFlow's C++ runtime writes placement lines to file descriptors 1 and 2 directly, below
Python's ``sys.stdout``: ``contextlib.redirect_stdout`` sees nothing, and without a capture they
land wherever the descriptors point (a cell's output, or the terminal that started Jupyter).
``capture_fds`` points both descriptors at temporary files for the duration of a block and always
puts them back.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from helpers import checks

# "MatMul: (MatMul): /job:localhost/replica:0/task:0/device:CPU:0", optionally behind a glog
# prefix ("I0000 00:00:1795287681.511107    4925 placer.cc:162] ").
_PLACER = re.compile(
    r"^(?:[IWE]\d{4} [\d:.]+\s+\d+ \S+\] )?"
    r"(?P<op>[^\s:][^:]*): \((?P<type>[\w.]+)\): (?P<device>/\S+)$"
)
# "Executing op _MklMatMul in device /job:localhost/replica:0/task:0/device:CPU:0"
_EXECUTING = re.compile(r"Executing op (?P<type>\S+) in device (?P<device>/\S+)$")
# Function names carry a process-wide counter: __inference_f_9 -> __inference_f
_COUNTER = re.compile(r"^(__inference_\w+?)_\d+$")
#: Op types that only move a function's arguments and results in and out.
PLUMBING = frozenset({"_Arg", "_Retval", "_DeviceArg", "_DeviceRetval", "NoOp"})


@dataclass
class Captured:
    """Text written to file descriptors 1 and 2 inside a ``capture_fds`` block."""

    stdout: str = ""
    stderr: str = ""
    lines: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return self.stdout + self.stderr


def _flush_c_streams() -> None:
    """Flush C stdio buffers so buffered C/C++ output lands in the captured file."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None).fflush(None)


@contextlib.contextmanager
def capture_fds(fds: Sequence[int] = (1, 2)) -> Iterator[Captured]:
    """Capture what C, C++ and Python write to ``fds`` (stdout, stderr) inside the block.

    The original descriptors are restored on exit, also when the block raises.
    """
    if not fds or any(fd not in (1, 2) for fd in fds):
        raise ValueError(f"fds must be a subset of (1, 2), got {fds!r}")
    captured = Captured()
    files = {fd: tempfile.TemporaryFile(mode="w+b") for fd in fds}
    saved: dict[int, int] = {}
    try:
        _flush_all()
        for fd, handle in files.items():
            saved[fd] = os.dup(fd)
            os.dup2(handle.fileno(), fd)
        yield captured
    finally:
        _flush_all()
        for fd, copy in saved.items():
            os.dup2(copy, fd)
            os.close(copy)
        for fd, handle in files.items():
            handle.seek(0)
            text = handle.read().decode("utf-8", errors="replace")
            handle.close()
            if fd == 1:
                captured.stdout = text
            else:
                captured.stderr = text
        captured.lines = captured.text.splitlines()


def short_device(device: str) -> str:
    """``/job:localhost/replica:0/task:0/device:CPU:0`` -> ``CPU:0``; '' stays ''."""
    return device.rsplit("device:", 1)[-1] if device else ""


@checks.arguments(plumbing=checks.flag)
def parse_placement(text: str, plumbing: bool = False) -> Any:
    """Read placement log text into a table with one row per (op, type, device): the op's name
    (a graph node's own name; for an eager op, its type), its op type, and its device.

    Understands the plain fd-1 lines, the glog-prefixed fd-2 copies of them (TF1 and TF2
    alike) and eager ``Executing op ... in device ...`` lines; lines seen twice are folded,
    order of first appearance kept. ``plumbing=True`` keeps ``_Arg``/``_Retval`` rows.
    """
    import pandas as pd

    rows: list[tuple[str, str, str]] = []
    for line in text.splitlines():
        line = line.strip()
        match = _PLACER.match(line) or _EXECUTING.search(line)
        if not match:
            continue
        kind = _COUNTER.sub(r"\1", match["type"])
        op = _COUNTER.sub(r"\1", match.groupdict().get("op") or kind)
        if not plumbing and kind in PLUMBING:
            continue
        rows.append((op, kind, short_device(match["device"])))
    table = pd.DataFrame(list(dict.fromkeys(rows)), columns=["op", "type", "device"])
    return table


#: oneDNN's rewrite of a TensorFlow op type: _MklMatMul, _MklNativeConv2D.
_ONEDNN_PREFIX = re.compile(r"^_Mkl(?:Native)?(?=[A-Z])")


def fold_onednn(table: Any) -> Any:
    """The placement table with oneDNN's op types under TensorFlow's names (``_MklMatMul`` ->
    ``MatMul``), duplicates folded: the same table whether oneDNN is on or off on this CPU."""
    out = table.copy()
    for column in ("op", "type"):
        out[column] = out[column].str.replace(_ONEDNN_PREFIX, "", regex=True)
    return out.drop_duplicates().reset_index(drop=True)


def tensorflow_started() -> bool:
    """Whether TensorFlow's runtime has initialised in this process (devices, logging fixed)."""
    if "tensorflow" not in sys.modules:
        return False
    from tensorflow.python.eager import context

    return getattr(context.context(), "_context_handle", None) is not None


#: Log lines that TensorFlow writes through Python's sys.stdout in a Jupyter kernel.
PYTHON_LOG_PREFIXES = ("Executing op ", "Device mapping:")


class _DivertingStream:
    """Wraps a text stream: lines starting with ``PYTHON_LOG_PREFIXES`` go to ``sink``,
    everything else passes through unchanged and unbuffered."""

    def __init__(self, stream: Any, sink: Callable[[str], None]) -> None:
        self._stream, self._sink, self._eat_newline = stream, sink, False

    def write(self, text: str) -> int:
        if self._eat_newline and text == "\n":
            self._eat_newline = False
            self._sink(text)
            return len(text)
        self._eat_newline = False
        if text.startswith(PYTHON_LOG_PREFIXES):
            self._sink(text)
            self._eat_newline = not text.endswith("\n")
            return len(text)
        return self._stream.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class PlacementLog:
    """TensorFlow's placement log, kept in a file instead of the notebook.

    In TF 2.21 the placer log follows the setting TensorFlow started with: turning it on later
    logs nothing, turning it off later does not stop it. So the notebook calls
    ``tf.debugging.set_log_device_placement(True)`` before any other TensorFlow call, and
    ``start()`` (which refuses when logging is off) points file descriptors 1 and 2 at a log file
    until ``stop()``. In a Jupyter kernel TensorFlow also prints an ``Executing op ...`` line
    through ``sys.stdout`` for every eager op; those lines are diverted into the same file, and
    the rest of Python's output is untouched. ``run(fn)`` returns what ``fn`` placed.
    """

    def __init__(self) -> None:
        self._file: Any = None
        self._saved: dict[int, int] = {}
        self._stdout: Any = None

    @property
    def active(self) -> bool:
        return self._file is not None

    def start(self) -> PlacementLog:
        """Send C++ output to the log file. Placement logging must already be on."""
        if self.active:
            return self
        from tensorflow.python.eager import context

        if not context.context().log_device_placement:
            message = (
                "placement logging is off: call tf.debugging.set_log_device_placement(True) "
                "before any other TensorFlow call"
            )
            if tensorflow_started():
                message += (
                    ". TensorFlow has already started without it, and in TF 2.21 it cannot "
                    "be switched on afterwards: restart the kernel and run the Setup cell first"
                )
            raise RuntimeError(message + ".")
        self._file = tempfile.TemporaryFile(mode="w+b")
        _flush_all()
        for fd in (1, 2):
            self._saved[fd] = os.dup(fd)
            os.dup2(self._file.fileno(), fd)
        self._stdout = sys.stdout
        sys.stdout = _DivertingStream(sys.stdout, self._write)
        return self

    def _write(self, text: str) -> None:
        os.write(self._file.fileno(), text.encode("utf-8", errors="replace"))

    def stop(self) -> None:
        """Give file descriptors 1 and 2 back (TensorFlow keeps logging: it cannot stop)."""
        if not self.active:
            return
        if isinstance(sys.stdout, _DivertingStream):
            sys.stdout = self._stdout
        self._stdout = None
        _flush_all()
        for fd, copy in self._saved.items():
            os.dup2(copy, fd)
            os.close(copy)
        self._saved.clear()
        self._file.close()
        self._file = None

    def text(self) -> str:
        """Everything logged so far."""
        if not self.active:
            raise RuntimeError("the placement log is not started; call start() first")
        _flush_all()
        self._file.seek(0)
        return self._file.read().decode("utf-8", errors="replace")

    def run(self, fn: Callable[[], Any], plumbing: bool = False) -> tuple[Any, Any]:
        """Run ``fn`` (forcing a tensor result); return ``(result, table of what it placed)``.

        Only new placements show: an op or function already placed is not placed again.
        """
        if not callable(fn):
            raise TypeError(f"fn must be callable, got {fn!r}")
        before = len(self.text())
        result = fn()
        force = getattr(result, "numpy", None)
        if callable(force):
            force()
        return result, parse_placement(self.text()[before:], plumbing=plumbing)


_LOG = PlacementLog()


def start_logging() -> PlacementLog:
    """Start this process's placement log (once; calling again returns the same log). Call
    ``tf.debugging.set_log_device_placement(True)`` before it, and before any TensorFlow op."""
    return _LOG.start()


def _flush_all() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    _flush_c_streams()
