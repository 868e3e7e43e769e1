"""Where ops run: capture TensorFlow's placement log at the file-descriptor level and read it
as a table; soft placement; towers on several devices summed with ``add_n`` (notebooks 02-04).

TensorFlow's C++ runtime writes placement lines to file descriptors 1 and 2 directly, below
Python's ``sys.stdout``: ``contextlib.redirect_stdout`` sees nothing, a Jupyter kernel under
nbval drops them, and JupyterLab shows them raw. ``capture_fds`` points both descriptors at
temporary files for the duration of a block and always puts them back.
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

from helpers.checks import whole_number
from helpers.exercises import Feedback, correct, not_yet

# "MatMul: (MatMul): /job:localhost/replica:0/task:0/device:CPU:0", optionally behind a glog
# prefix ("I0000 00:00:1795287681.511107    4925 placer.cc:162] ").
_PLACER = re.compile(r"^(?:[IWE]\d{4} [\d:.]+\s+\d+ \S+\] )?(?P<op>[^\s:][^:]*): \((?P<kernel>[\w.]+)\): (?P<device>/\S+)$")
# "Executing op _MklMatMul in device /job:localhost/replica:0/task:0/device:CPU:0"
_EXECUTING = re.compile(r"Executing op (?P<kernel>\S+) in device (?P<device>/\S+)$")
# Function names carry a process-wide counter: __inference_f_9 -> __inference_f
_COUNTER = re.compile(r"^(__inference_\w+?)_\d+$")
#: Kernels that only move a function's arguments and results in and out.
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


def parse_placement(text: str, plumbing: bool = False) -> Any:
    """Read placement log text into a table with one row per (op, kernel, device).

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
        kernel = _COUNTER.sub(r"\1", match["kernel"])
        op = _COUNTER.sub(r"\1", match.groupdict().get("op") or kernel)
        if not plumbing and kernel in PLUMBING:
            continue
        rows.append((op, kernel, short_device(match["device"])))
    table = pd.DataFrame(list(dict.fromkeys(rows)), columns=["op", "kernel", "device"])
    return table


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
    logs nothing, turning it off later does not stop it. ``start()`` therefore switches it on
    before TensorFlow initialises and points file descriptors 1 and 2 at a log file until
    ``stop()``. In a Jupyter kernel TensorFlow also prints an ``Executing op ...`` line through
    ``sys.stdout`` for every eager op; those lines are diverted into the same file, and the
    rest of Python's output is untouched. ``run(fn)`` returns what ``fn`` placed.
    """

    def __init__(self) -> None:
        self._file: Any = None
        self._saved: dict[int, int] = {}
        self._stdout: Any = None

    @property
    def active(self) -> bool:
        return self._file is not None

    def start(self) -> PlacementLog:
        """Turn placement logging on and send C++ output to the log file. Call it first."""
        import tensorflow as tf

        if self.active:
            return self
        from tensorflow.python.eager import context

        if tensorflow_started() and not context.context().log_device_placement:
            raise RuntimeError(
                "TensorFlow has already started without placement logging, and in TF 2.21 it "
                "cannot be switched on afterwards. Restart the kernel and run this cell first."
            )
        tf.debugging.set_log_device_placement(True)
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

        Only new placements show: an op kernel or function already placed is not placed again.
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
    """Start this process's placement log (once; calling again returns the same log)."""
    return _LOG.start()


def _flush_all() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    _flush_c_streams()


@contextlib.contextmanager
def soft_placement(enabled: bool) -> Iterator[None]:
    """Set ``tf.config.set_soft_device_placement(enabled)`` inside the block, then restore it."""
    import tensorflow as tf

    if not isinstance(enabled, bool):
        raise TypeError(f"enabled must be True or False, got {enabled!r}")
    before = tf.config.get_soft_device_placement()
    tf.config.set_soft_device_placement(enabled)
    try:
        yield
    finally:
        tf.config.set_soft_device_placement(before)


def accelerator() -> str:
    """The device to pin heavy math to: ``GPU:0`` when there is one, else the second logical
    CPU (``CPU:1``) if set up, else ``CPU:0``."""
    import tensorflow as tf

    if tf.config.list_logical_devices("GPU"):
        return "GPU:0"
    cpus = tf.config.list_logical_devices("CPU")
    return "CPU:1" if len(cpus) > 1 else "CPU:0"


def full_device(name: str) -> str:
    """``CPU:1`` or ``/device:CPU:1`` -> ``/device:CPU:1`` (what ``tf.device`` takes)."""
    return name if name.startswith("/") else f"/device:{name}"


def towers_vs_single(
    n_towers: int = 4, size: int = 512, devices: Sequence[str] | None = None, sum_device: str = "CPU:0"
) -> dict[str, Callable[[], Any]]:
    """The seed's tower pattern: ``X^T X`` for a batch ``X`` of ``size`` x ``size``.

    ``one device`` computes it in one matmul. ``N towers`` splits the batch into ``n_towers``
    slices, computes each slice's ``x^T x`` on its own device (round robin over ``devices``,
    default: every logical CPU, or every GPU when there are GPUs) and sums them with
    ``tf.add_n`` pinned to ``sum_device``. Same arithmetic, same result.
    """
    import tensorflow as tf

    for name, value in (("n_towers", n_towers), ("size", size)):
        whole_number(name, value)
    if size % n_towers:
        raise ValueError(f"size {size} must split evenly into {n_towers} towers")
    if devices is None:
        kind = "GPU" if tf.config.list_logical_devices("GPU") else "CPU"
        devices = [short_device(d.name) for d in tf.config.list_logical_devices(kind)]
    if not devices:
        raise ValueError("devices is empty: give at least one device name such as 'CPU:0'")
    x = tf.random.stateless_normal([size, size], seed=(4, 2))

    @tf.function
    def one_device(batch: Any) -> Any:
        with tf.device(full_device(devices[0])):
            return tf.matmul(batch, batch, transpose_a=True)

    @tf.function
    def towers(batch: Any) -> Any:
        parts = []
        for i, piece in enumerate(tf.split(batch, n_towers)):
            with tf.device(full_device(devices[i % len(devices)])):
                parts.append(tf.matmul(piece, piece, transpose_a=True))
        with tf.device(full_device(sum_device)):
            return tf.add_n(parts)

    return {"one device": lambda: one_device(x), f"{n_towers} towers": lambda: towers(x)}


def devices_used(table: Any, kernel_prefix: str) -> list[str]:
    """The devices on which kernels starting with ``kernel_prefix`` ran, in first-seen order
    (``"MatMul"`` also matches oneDNN's ``_MklMatMul``)."""
    kernels = table["kernel"].str.replace(r"^_Mkl", "", regex=True)
    return list(dict.fromkeys(table.loc[kernels.str.startswith(kernel_prefix), "device"]))


def check_pinned(table: Any, device: str = "CPU:1") -> Feedback:
    """Exercise (02): the placement table shows the matmul on ``device``."""
    if not hasattr(table, "columns") or "kernel" not in getattr(table, "columns", []):
        return not_yet("pass the table that log.run(...) returned (the second item).")
    used = devices_used(table, "MatMul")
    if not used:
        return not_yet("the table shows no MatMul: did the function run for the first time inside log.run?")
    if used != [short_device(device)]:
        return not_yet(f"the MatMul ran on {used}, not on {short_device(device)}.")
    return correct(f"the MatMul ran on {short_device(device)}, as pinned.")


def check_result_device(answer: Any, actual: Any) -> Feedback:
    """Exercise (02): ``answer`` names the device that holds the tensor ``actual``."""
    want = short_device(getattr(actual, "device", ""))
    if not isinstance(answer, str) or not answer:
        return not_yet("answer with a device name such as 'CPU:0'.")
    if short_device(answer).upper() != want.upper():
        return not_yet(f"{answer!r} is not where the result lives; look at its .device.")
    return correct(f"the result lives on {want}.")


def check_strict(fn: Any) -> Feedback:
    """Exercise (03): ``fn()`` raises for a missing device and leaves soft placement as it was."""
    import tensorflow as tf

    if not callable(fn):
        return not_yet(f"strict_matmul must be a function, got {fn!r}.")
    before = tf.config.get_soft_device_placement()
    try:
        fn()
    except tf.errors.InvalidArgumentError as exc:
        if tf.config.get_soft_device_placement() != before:
            tf.config.set_soft_device_placement(before)
            return not_yet("it raised, but left soft placement switched off: restore it (use placement.soft_placement).")
        first_sentence = str(exc).splitlines()[0].split(". ")[0]
        return correct(f"it failed loudly: {first_sentence}.")
    except Exception as exc:  # the learner's code
        tf.config.set_soft_device_placement(before)
        return not_yet(f"it raised {type(exc).__name__}, not the placement error: {exc}")
    tf.config.set_soft_device_placement(before)
    return not_yet("it ran without an error: it fell back to another device. Switch soft placement off inside it.")


def check_towers(result: Any, table: Any, batch: Any) -> Feedback:
    """Exercise (04): ``result`` equals ``batch^T batch``; the table shows matmuls on several
    devices and the ``AddN`` on ``CPU:0``."""
    import tensorflow as tf

    if result is None or not hasattr(table, "columns"):
        return not_yet("run my_towers(batch) with log.run and pass its result and table.")
    want = tf.matmul(batch, batch, transpose_a=True)
    if tuple(result.shape) != tuple(want.shape):
        return not_yet(f"the result has shape {tuple(result.shape)}, not {tuple(want.shape)}.")
    error = float(tf.reduce_max(tf.abs(result - want)) / (tf.reduce_max(tf.abs(want)) + 1e-12))
    if error > 1e-4:
        return not_yet(f"the sum of the towers differs from batch^T batch (relative error {error:.1e}).")
    matmuls, sums = devices_used(table, "MatMul"), devices_used(table, "AddN")
    if len(matmuls) < 2:
        return not_yet(f"the matmuls all ran on {matmuls}: give each tower its own tf.device.")
    if sums != ["CPU:0"]:
        return not_yet(f"the add_n ran on {sums or 'no device (is there an add_n?)'}, not on CPU:0.")
    return correct(f"towers on {', '.join(matmuls)}, summed on CPU:0; same numbers as one matmul.")
