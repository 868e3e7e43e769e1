"""The embedded-constant family of memory pitfalls, measured safely (notebook 05).

A NumPy array that reaches a graph (a TF1 op, a ``tf.function`` that closes over it, a
``Dataset.from_tensor_slices`` inside a function) is copied into the graph as a constant, once per
use. Every demo here first estimates its peak memory and refuses to run when the estimate is above
a safe fraction of the memory available, so no setting can swap a learner's laptop to death.
"""

from __future__ import annotations

import contextlib
import logging
import math
import resource
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from helpers.checks import whole_number
from helpers.comparison import Comparison
from helpers.exercises import Feedback, correct, not_yet
from helpers.timing import ProgressFn

MIB = 2**20
#: Refuse a demo whose estimated peak is above this fraction of the available memory.
SAFE_FRACTION = 0.5
#: Peak RSS per byte, measured on TF 2.21 (x86-64 Linux) and rounded up: a TF1 graph peaks at
#: ~3x its GraphDef; a tf.function embedding an array at ~14x the array; from_tensor_slices
#: inside a tf.function at ~16x.
PEAK_FACTORS = {"tf1_graph": 4.0, "function": 16.0, "dataset": 18.0}
#: TensorFlow refuses a TensorProto of this many bytes or more.
PROTO_LIMIT = 2**31


class MemoryGuardError(RuntimeError):
    """A demo would need more memory than it is safe to take on this machine."""


def available_bytes() -> int:
    """Memory available to new allocations without swapping (psutil's estimate)."""
    import psutil

    return int(psutil.virtual_memory().available)


def estimate_peak(kind: str, nbytes: int, copies: int = 1) -> int:
    """Estimated extra peak memory, in bytes, of embedding ``copies`` of an ``nbytes`` array."""
    if kind not in PEAK_FACTORS:
        raise ValueError(f"unknown kind {kind!r}; use one of {sorted(PEAK_FACTORS)}")
    if nbytes < 0 or copies < 0:
        raise ValueError(f"nbytes and copies must be >= 0, got {nbytes} and {copies}")
    return int(PEAK_FACTORS[kind] * nbytes * max(copies, 1))


def guard(estimate: int, what: str, available: int | None = None, fraction: float = SAFE_FRACTION) -> None:
    """Raise ``MemoryGuardError`` when ``estimate`` bytes is above ``fraction`` of available memory."""
    available = available_bytes() if available is None else available
    if estimate > fraction * available:
        raise MemoryGuardError(
            f"{what} would need about {estimate / MIB:,.0f} MiB at its peak, more than "
            f"{fraction:.0%} of the {available / MIB:,.0f} MiB available on this machine. "
            "Choose a smaller size or fewer copies."
        )


def rss_mib() -> float:
    """This process's resident memory now, in MiB."""
    import psutil

    return psutil.Process().memory_info().rss / MIB


def max_rss_mib() -> float:
    """The highest resident memory this process has had since it started, in MiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / MIB if sys.platform == "darwin" else peak / 1024  # bytes on macOS, KiB on Linux


class PeakRSS:
    """Samples resident memory every few milliseconds inside a ``with`` block.

    ``peak_mib`` is the highest increase over the start, ``end_mib`` the increase still held at
    the end (memory that stays allocated, or that the allocator keeps).
    """

    def __init__(self, interval: float = 0.002) -> None:
        self.interval = interval
        self.base = self.peak = self.end = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> PeakRSS:
        self.base = self.peak = rss_mib()
        self._stop.clear()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_mib())
            self._stop.wait(self.interval)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.end = rss_mib()
        self.peak = max(self.peak, self.end)

    @property
    def peak_mib(self) -> float:
        return self.peak - self.base

    @property
    def end_mib(self) -> float:
        return self.end - self.base


def make_array(mib: float, seed: int = 0) -> Any:
    """A float32 NumPy array of about ``mib`` MiB of random numbers."""
    import numpy as np

    if isinstance(mib, bool) or not isinstance(mib, (int, float)) or not math.isfinite(mib) or mib <= 0:
        raise ValueError(f"mib must be a positive size in MiB, got {mib!r}")
    return np.random.default_rng(seed).random(max(1, int(mib * MIB) // 4), dtype=np.float32)


def graph_stats(graph: Any) -> dict[str, int]:
    """Node count and serialized GraphDef size of a ``tf.Graph``."""
    graph_def = graph.as_graph_def()
    return {"nodes": len(graph_def.node), "graph_bytes": graph_def.ByteSize()}


def tf1_graph(array: Any, n_ops: int, fix: str = "none") -> Any:
    """A TF1 graph in which ``n_ops`` ops each add ``array`` to a placeholder.

    ``fix="none"`` passes the NumPy array to every op (one constant per op);
    ``"convert_once"`` converts it to one tensor first; ``"placeholder"`` feeds it at run time.
    """
    import tensorflow as tf

    fixes = ("none", "convert_once", "placeholder")
    if fix not in fixes:
        raise ValueError(f"fix must be one of {fixes}, got {fix!r}")
    whole_number("n_ops", n_ops)
    copies = n_ops if fix == "none" else 1
    guard(estimate_peak("tf1_graph", array.nbytes, copies), f"A TF1 graph holding {copies} copies of the array")
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, array.shape, name="x")
        if fix == "none":
            value = array
        elif fix == "convert_once":
            value = tf.convert_to_tensor(array, name="array")
        else:
            value = tf.compat.v1.placeholder(tf.float32, array.shape, name="array")
        for i in range(n_ops):
            tf.add(x, value, name=f"add_{i}")
    return graph


def tf1_table(array: Any, n_ops: int) -> Any:
    """Node count, GraphDef MiB and peak extra memory of ``tf1_graph`` for each fix."""
    import pandas as pd

    rows = []
    for fix in ("none", "convert_once", "placeholder"):
        with PeakRSS() as peak:
            stats = graph_stats(tf1_graph(array, n_ops, fix))
        rows.append({"fix": fix, "nodes": stats["nodes"], "graph_mib": round(stats["graph_bytes"] / MIB, 1),
                     "peak_mib": round(peak.peak_mib)})
    return pd.DataFrame(rows).set_index("fix")


def function_variants(array: Any) -> dict[str, Callable[[], Any]]:
    """Three ways to use ``array`` in a ``tf.function``; each call builds a fresh function and
    calls it once, so a timing measures the first call (tracing and, if any, embedding)."""
    import tensorflow as tf

    def embedded() -> Any:  # closes over the NumPy array: copied into the graph
        return tf.function(lambda: tf.reduce_sum(tf.constant(array)))()

    def argument() -> Any:  # takes a tensor: the graph holds only a placeholder
        return tf.function(lambda t: tf.reduce_sum(t))(tensor)

    def captured() -> Any:  # closes over an EagerTensor: captured by reference, not copied
        return tf.function(lambda: tf.reduce_sum(tensor))()

    tensor = tf.constant(array)
    return {"embedded constant": embedded, "tensor argument": argument, "captured tensor": captured}


def function_graph_bytes(array: Any) -> dict[str, int]:
    """GraphDef size of the graph each of the three ``function_variants`` builds."""
    import tensorflow as tf

    tensor = tf.constant(array)
    graphs = {
        "embedded constant": tf.function(lambda: tf.reduce_sum(tf.constant(array))).get_concrete_function(),
        "tensor argument": tf.function(lambda t: tf.reduce_sum(t)).get_concrete_function(tensor),
        "captured tensor": tf.function(lambda: tf.reduce_sum(tensor)).get_concrete_function(),
    }
    return {name: fn.graph.as_graph_def().ByteSize() for name, fn in graphs.items()}


def tf2_table(array: Any) -> Any:
    """Graph MiB, first-call ms and peak extra memory for each of the ``function_variants``."""
    import pandas as pd

    from helpers import timing

    guard(estimate_peak("function", array.nbytes), "Embedding the array in a tf.function")
    sizes = function_graph_bytes(array)
    rows = []
    for name, first_call in function_variants(array).items():
        with PeakRSS() as peak:
            seconds = timing.time_once(first_call)
        rows.append({"variant": name, "graph_mib": round(sizes[name] / MIB, 2),
                     "first_call_ms": round(seconds * 1e3, 1), "peak_mib": round(peak.peak_mib)})
    return pd.DataFrame(rows).set_index("variant")


def dataset_in_function(array: Any) -> Any:
    """A ``tf.function`` that builds ``from_tensor_slices(array)`` inside: the array is embedded."""
    import tensorflow as tf

    @tf.function
    def total() -> Any:
        dataset = tf.data.Dataset.from_tensor_slices(array).batch(4096)
        return dataset.reduce(tf.constant(0.0), lambda s, b: s + tf.reduce_sum(b))

    return total


def dataset_built_eagerly(array: Any) -> Any:
    """The fix: build the dataset eagerly, outside the function, and iterate it inside."""
    import tensorflow as tf

    dataset = tf.data.Dataset.from_tensor_slices(array).batch(4096)

    @tf.function
    def total() -> Any:
        return dataset.reduce(tf.constant(0.0), lambda s, b: s + tf.reduce_sum(b))

    return total


def dataset_table(array: Any) -> Any:
    """Graph MiB and peak extra memory (and its ratio to the array) for both dataset forms."""
    import pandas as pd

    guard(estimate_peak("dataset", array.nbytes), "from_tensor_slices inside a tf.function")
    rows = []
    for name, build in (("inside tf.function", dataset_in_function), ("built eagerly", dataset_built_eagerly)):
        with PeakRSS() as peak:
            fn = build(array)
            fn()
            graph_bytes = fn.get_concrete_function().graph.as_graph_def().ByteSize()
        rows.append({"dataset": name, "graph_mib": round(graph_bytes / MIB, 2), "peak_mib": round(peak.peak_mib),
                     "peak_per_array": round(peak.peak_mib / (array.nbytes / MIB), 1)})
    return pd.DataFrame(rows).set_index("dataset")


def over_2gb_view() -> Any:
    """A NumPy view that reports 2 GiB + 4 bytes but holds 4: it reaches TensorFlow's 2 GB
    TensorProto check without allocating anything."""
    import numpy as np

    view = np.broadcast_to(np.float32(0), (PROTO_LIMIT // 4 + 1,))
    assert view.nbytes >= PROTO_LIMIT and view.base is not None and view.base.nbytes == 4
    return view


def embed_in_function(array: Any) -> Any:
    """Trace a ``tf.function`` that converts ``array`` to a constant; return its concrete function.

    With ``over_2gb_view()`` this reaches the 2 GB check without copying: ``convert_to_tensor``
    checks the size first. (``from_tensor_slices`` copies the whole array before it fails.)
    """
    import tensorflow as tf

    return tf.function(lambda: tf.reduce_sum(tf.convert_to_tensor(array))).get_concrete_function()


def _steps(n_ops: int) -> list[int]:
    whole_number("n_ops", n_ops)
    return sorted({max(1, n_ops * k // 4) for k in range(1, 5)})


def embedding_experiment(
    mib: float = 4, n_ops: int = 20, on_progress: ProgressFn | None = None, timeout: float = 300.0
) -> Any:
    """For up to ``n_ops`` TF1 ops that each embed a ``mib`` MiB array: GraphDef MiB and peak
    extra memory, measured in a fresh Python process.

    A fresh process, because a long-lived kernel's allocator reuses memory freed earlier, which
    hides growth. Guarded as a whole before the child starts; the child is killed and reaped
    if it fails or runs past ``timeout`` seconds.
    """
    import pandas as pd

    from helpers import procs

    array_bytes = make_array(mib).nbytes  # validates mib
    steps = _steps(n_ops)
    # The steps run one after another and the allocator keeps what they freed: guard their sum.
    estimate = sum(estimate_peak("tf1_graph", array_bytes, n) for n in steps)
    guard(estimate, f"Graphs with {', '.join(map(str, steps))} embedded copies of a {mib} MiB array")
    if on_progress is not None:
        on_progress(0, 1)
    rows = procs.run_rows(procs.python_module("helpers.topics.memory", str(mib), str(n_ops)),
                          env={"TF_CPP_MIN_LOG_LEVEL": "2"}, timeout=timeout)
    if on_progress is not None:
        on_progress(1, 1)
    return pd.DataFrame(rows).set_index("ops")


def _experiment_rows(mib: float, n_ops: int) -> Iterator[dict[str, float]]:
    """The child's side of ``embedding_experiment``: one row per step, smallest first."""
    import tensorflow as tf

    array = make_array(mib)
    tf.constant(1.0).numpy()  # start TensorFlow's runtime before the first measurement
    start = rss_mib()
    for n in _steps(n_ops):  # smallest first: each step needs more than the last one freed
        with PeakRSS() as peak:
            stats = graph_stats(tf1_graph(array, n))
        # The process's peak above its start: what a process must have to build this graph.
        yield {"ops": n, "graph_mib": round(stats["graph_bytes"] / MIB, 1), "peak_mib": round(peak.peak - start, 1)}


def embedding_figure(table: Any, title: str = "") -> Any:
    """GraphDef size and peak extra memory against the number of embedding ops."""
    from matplotlib.figure import Figure

    from helpers import widgets

    fig = Figure(figsize=(6.4, 3.2), layout="constrained")
    ax = fig.add_subplot()
    ax.plot(table.index, table["graph_mib"], marker="o", label="GraphDef size")
    ax.plot(table.index, table["peak_mib"], marker="s", label="process peak memory above its start (RSS)")
    ax.set_xlabel("ops that use the NumPy array")
    ax.set_ylabel("MiB")
    ax.legend()
    widgets.set_title(ax, title)
    return fig


def embedding_summary(table: Any) -> str:
    """One line: how graph size and memory grew per op."""
    last = table.iloc[-1]
    return (
        f"{int(table.index[-1])} ops: a {last['graph_mib']:.0f} MiB graph and {last['peak_mib']:.0f} MiB of "
        f"extra memory at the peak ({last['peak_mib'] / max(last['graph_mib'], 1e-9):.1f}x the graph)."
    )


def trace_counts() -> Any:
    """How many traces each calling pattern causes in a fresh ``tf.function``."""
    import pandas as pd
    import tensorflow as tf

    def fresh(**kwargs: Any) -> Any:
        return tf.function(lambda x: x * 2, **kwargs)

    cases: list[tuple[str, Any, list[Any]]] = [
        ("Python ints 0..9", fresh(), list(range(10))),
        ("tensors 0..9", fresh(), [tf.constant(i) for i in range(10)]),
        ("shapes [1]..[5]", fresh(), [tf.ones([i]) for i in range(1, 6)]),
        ("shapes [1]..[5], reduce_retracing=True", fresh(reduce_retracing=True), [tf.ones([i]) for i in range(1, 6)]),
        ("shapes [1]..[5], input_signature [None]",
         fresh(input_signature=[tf.TensorSpec([None], tf.float32)]), [tf.ones([i]) for i in range(1, 6)]),
    ]
    rows = []
    with captured_tf_warnings():
        for name, fn, args in cases:
            for arg in args:
                fn(arg)
            rows.append({"calls": name, "traces": fn.experimental_get_tracing_count()})
    return pd.DataFrame(rows).set_index("calls")


@dataclass
class Warnings:
    """Messages TensorFlow's Python logger emitted inside ``captured_tf_warnings``."""

    messages: list[str]


@contextlib.contextmanager
def captured_tf_warnings() -> Iterator[Warnings]:
    """Collect TensorFlow's Python warnings (such as the retracing warning) instead of printing them."""
    import tensorflow as tf

    logger = tf.get_logger()
    caught = Warnings([])

    class _Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            caught.messages.append(record.getMessage())

    handler, propagate = _Collect(level=logging.WARNING), logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    saved = [h for h in logger.handlers if h is not handler]
    for h in saved:
        logger.removeHandler(h)
    try:
        yield caught
    finally:
        logger.removeHandler(handler)
        for h in saved:
            logger.addHandler(h)
        logger.propagate = propagate


def retracing_warning(calls: int = 6) -> str:
    """Call a fresh ``tf.function`` with ``calls`` new Python ints; return TensorFlow's retracing
    warning (it warns once per function, so a rerun may get an explanation instead)."""
    import tensorflow as tf

    with captured_tf_warnings() as caught:
        double = tf.function(lambda v: v * 2)
        for i in range(calls):
            double(i)
    found = [m for m in caught.messages if "retracing" in m]
    if found:
        return found[0]
    return (f"{double.experimental_get_tracing_count()} traces, no warning this time: TensorFlow "
            "warns once per function. Restart the kernel to see the warning again.")


def scalar_vs_tensor() -> dict[str, Callable[[], Any]]:
    """Per-call cost of passing a new Python int (a new trace each call) against a tensor."""
    import tensorflow as tf

    by_value = tf.function(lambda x: x * 2 + 1)
    by_tensor = tf.function(lambda x: x * 2 + 1)
    counter = iter(range(10**9))

    def python_scalar() -> Any:
        with captured_tf_warnings():
            return by_value(next(counter))

    return {"Python scalar": python_scalar, "tensor": lambda: by_tensor(tf.constant(next(counter)))}


def check_graph_is_small(graph: Any, limit_bytes: int = 64 * 1024) -> Feedback:
    """Exercise: the fixed TF1 graph holds the array at most once (GraphDef under ``limit_bytes``
    plus one copy of the array)."""
    import tensorflow as tf

    if not isinstance(graph, tf.Graph):
        return not_yet(f"fixed must be a tf.Graph, got {type(graph).__name__}.")
    stats = graph_stats(graph)
    adds = [op for op in graph.get_operations() if op.type in ("AddV2", "Add")]
    if len(adds) < 10:
        return not_yet(f"the graph has {len(adds)} add ops; keep all ten.")
    if stats["graph_bytes"] > limit_bytes + 1 * MIB:
        return not_yet(f"the graph is {stats['graph_bytes'] / MIB:.1f} MiB: the array is still copied more than once.")
    return correct(f"{len(adds)} adds in a {stats['graph_bytes'] / 1024:.0f} KiB graph: the array is stored at most once.")


def check_no_retracing(fn: Any) -> Feedback:
    """Exercise: ``fn`` traces once for inputs of lengths 1..8."""
    import tensorflow as tf

    if not hasattr(fn, "experimental_get_tracing_count"):
        return not_yet("scale must be a tf.function.")
    with captured_tf_warnings():
        try:
            for n in range(1, 9):
                fn(tf.ones([n]))
        except Exception as exc:  # the learner's code
            return not_yet(f"calling it raised {type(exc).__name__}: {exc}")
    traces = fn.experimental_get_tracing_count()
    if traces > 1:
        return not_yet(f"it traced {traces} times for 8 lengths; give it an input_signature with shape [None].")
    return correct("one trace for every length.")


def _embedded_vs_argument(mib: float = 4) -> dict[str, Callable[[], Any]]:
    array = make_array(mib)
    guard(estimate_peak("function", array.nbytes), "Embedding the array in a tf.function")
    variants = function_variants(array)
    return {"embedded constant": variants["embedded constant"], "tensor argument": variants["tensor argument"]}


BENCHMARKS = [
    Comparison(
        id="memory.embedded_vs_argument",
        title="first call of a tf.function: a NumPy array embedded as a constant vs passed as a tensor",
        make_variants=_embedded_vs_argument,
        baseline="embedded constant",
        variant="tensor argument",
        quick={"mib": 4},
        full={"mib": 16},
        repeats=5,
        min_time=0.0,
    ),
    Comparison(
        id="retracing.python_scalar_vs_tensor",
        title="per call: a new Python int (a retrace each time) vs a tensor",
        make_variants=scalar_vs_tensor,
        baseline="Python scalar",
        variant="tensor",
        quick={},
        full={},
        repeats=20,
        min_time=0.0,
    ),
]


if __name__ == "__main__":  # the measurement process of embedding_experiment
    from helpers import procs as _procs

    for _row in _experiment_rows(float(sys.argv[1]), int(sys.argv[2])):
        _procs.emit(_row)
