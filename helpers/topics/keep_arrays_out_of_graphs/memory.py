"""Notebook 05's plumbing: the measured tables of the embedded-constant pitfalls, the embedding
experiment in a fresh process, the exercise check and the bench id. The memory guard is in
``helpers.topics.keep_arrays_out_of_graphs.memory_guard`` (its names are re-exported here).

The lesson (``tf1_graph``, ``three_functions``, the two dataset forms, ``first_calls``, the child
program that measures a fresh process) is written in the notebook's ``#| export`` cells. The
tables take the notebook's functions as arguments, so an edited cell is what they measure; the
bench and the child program import the exported copy,
``helpers.lessons.keep_arrays_out_of_graphs``. Every measurement first estimates its peak memory
and refuses to run when the estimate is above a safe fraction of the memory available.
"""

from __future__ import annotations

import math
import sys
from typing import Any

from helpers import checks, lessons
from helpers.checks import whole_number
from helpers.comparison import Comparison
from helpers.rss import PeakRSS
from helpers.timing import ProgressFn

# The names imported "as" themselves are re-exported: notebook 05 calls memory.available_bytes, and
# its child program (EMBEDDING_CHILD) imports MemoryGuardError, estimate_peak and guard from here.
from helpers.topics.keep_arrays_out_of_graphs.memory_guard import (
    MIB,
    SAFE_FRACTION,
    array_bytes,
    estimate_peak,
    guard,
    make_array,
)
from helpers.topics.keep_arrays_out_of_graphs.memory_guard import (
    MemoryGuardError as MemoryGuardError,
)
from helpers.topics.keep_arrays_out_of_graphs.memory_guard import available_bytes as available_bytes

#: TensorFlow refuses a TensorProto of this many bytes or more.
PROTO_LIMIT = 2**31


def lesson() -> Any:
    """Notebook 05's exported lesson code (imported on use: it imports TensorFlow)."""
    return lessons.of("05_keep_arrays_out_of_graphs")


def graph_stats(graph: Any) -> dict[str, int]:
    """Node count and serialized GraphDef size of a ``tf.Graph``."""
    graph_def = graph.as_graph_def()
    return {"nodes": len(graph_def.node), "graph_bytes": graph_def.ByteSize()}


@checks.arguments(n_ops=checks.whole(1, 100_000))
def tf1_table(tf1_graph: Any, array: Any, n_ops: int) -> Any:
    """Node count, GraphDef MiB and the rise of this process's memory (RSS) while building
    ``tf1_graph(array, n_ops, fix)`` (the notebook's) for each fix, smallest first; guarded before
    anything is built."""
    import pandas as pd

    whole_number("n_ops", n_ops)
    guard(
        estimate_peak("tf1_graph", array.nbytes, n_ops),
        f"A TF1 graph holding {n_ops} copies of the array",
    )
    rows = []
    for fix in ("placeholder", "convert_once", "none"):
        with PeakRSS() as peak:
            stats = graph_stats(tf1_graph(array, n_ops, fix))
        rows.append(
            {
                "fix": fix,
                "nodes": stats["nodes"],
                "graph_mib": round(stats["graph_bytes"] / MIB, 1),
                "rss_rise_mib": round(peak.peak_mib),
            }
        )
    return pd.DataFrame(rows).set_index("fix")


def tf2_table(three_functions: Any, array: Any) -> Any:
    """Graph MiB and the rise of this process's memory during the first call of each function
    ``three_functions(array, tensor)`` (the notebook's) returns, each built afresh, smallest
    first; guarded before anything is built."""
    import pandas as pd
    import tensorflow as tf

    guard(estimate_peak("function", array.nbytes), "Embedding the array in a tf.function")
    tensor, x = tf.constant(array), tf.zeros(array.shape)
    tf.reduce_sum(x + tensor)  # every first call makes x + array, an array's size: made once here,
    # its memory is reused by each row's, so a row's rise is what its graph holds, not the result
    names = ("embedded constant", "tensor argument", "captured tensor")
    rows = []
    for k in (1, 2, 0):  # smallest first: memory the embedded call frees would hide the others'
        name = names[k]
        function = three_functions(array, tensor)[k]
        args = (x, tensor) if name == "tensor argument" else (x,)
        with PeakRSS() as peak:
            function(*args)  # the first call: traces, and embeds the array where it is NumPy
        graph_bytes = function.get_concrete_function(*args).graph.as_graph_def().ByteSize()
        rows.append(
            {
                "variant": name,
                "graph_mib": round(graph_bytes / MIB, 2),
                "rss_rise_mib": round(peak.peak_mib),
            }
        )
    return pd.DataFrame(rows).set_index("variant").loc[list(names)]


def dataset_table(forms: dict[str, Any], array: Any) -> Any:
    """Graph MiB and the rise of this process's memory (and its ratio to the array) for each
    dataset form (the notebook's ``dataset_inside`` and ``dataset_outside``, by name); guarded
    before anything is built."""
    import pandas as pd

    guard(estimate_peak("dataset", array.nbytes), "from_tensor_slices inside a tf.function")
    rows = []
    for name, build in forms.items():
        with PeakRSS() as peak:  # the reader's code: build and call; serialising is the table's
            total = build(array)
            total()
        graph_bytes = total.get_concrete_function().graph.as_graph_def().ByteSize()
        rows.append(
            {
                "dataset": name,
                "graph_mib": round(graph_bytes / MIB, 2),
                "rss_rise_mib": round(peak.peak_mib),
                "rise_per_array": round(peak.peak_mib / (array.nbytes / MIB), 1),
            }
        )
    return pd.DataFrame(rows).set_index("dataset")


def over_2gb_view() -> Any:
    """A NumPy view that reports 2 GiB + 4 bytes but holds 4: it reaches TensorFlow's 2 GB
    TensorProto check without allocating anything."""
    import numpy as np

    view = np.broadcast_to(np.float32(0), (PROTO_LIMIT // 4 + 1,))
    assert view.nbytes >= PROTO_LIMIT and view.base is not None and view.base.nbytes == 4
    return view


def _steps(n_ops: int) -> list[int]:
    whole_number("n_ops", n_ops)
    return sorted({max(1, n_ops * k // 4) for k in range(1, 5)})


@checks.arguments(n_ops=checks.whole(1, 100_000))
def experiment_needs(mib: float = 4, n_ops: int = 20) -> int:
    """The bytes of available memory ``embedding_experiment(mib, n_ops)`` asks for before its child
    starts: the guard's estimate of the child's peak over the fraction it allows (``guard``)."""
    estimate = sum(estimate_peak("tf1_graph", array_bytes(mib), n) for n in _steps(n_ops))
    return math.ceil(estimate / SAFE_FRACTION)


def embedding_experiment(
    mib: float = 4, n_ops: int = 20, on_progress: ProgressFn | None = None, timeout: float = 300.0
) -> Any:
    """For up to ``n_ops`` TF1 ops that each embed a ``mib`` MiB array: GraphDef MiB and peak
    memory above the start, measured by the notebook's ``EMBEDDING_CHILD`` program in a fresh
    Python process (a long-lived kernel reuses memory it freed earlier, which hides growth).

    Guarded as a whole before the child starts; the child is killed and reaped if it fails or
    runs past ``timeout`` seconds.
    """
    import pandas as pd

    from helpers import procs

    nbytes = array_bytes(mib)  # validates mib; nothing is allocated here
    steps = _steps(n_ops)
    # The steps run one after another and the allocator keeps what they freed: guard their sum.
    estimate = sum(estimate_peak("tf1_graph", nbytes, n) for n in steps)
    guard(
        estimate,
        f"embedding_experiment(mib={mib}, n_ops={n_ops}): graphs with "
        f"{', '.join(map(str, steps))} embedded copies of a {mib} MiB array",
    )
    checks.number(0, 24 * 3600, above=True)("timeout", timeout)
    if on_progress is not None:
        on_progress(0, 1)
    with procs.programs(
        {"embedding_child.py": lesson().EMBEDDING_CHILD}, prefix="workbook-05-"
    ) as files:
        rows = procs.run_rows(
            [sys.executable, str(files["embedding_child.py"]), str(mib), *map(str, steps)],
            env={"TF_CPP_MIN_LOG_LEVEL": "2"},
            timeout=timeout,
        )
    if on_progress is not None:
        on_progress(1, 1)
    return pd.DataFrame(rows).set_index("ops")


def embedding_figure(table: Any, title: str = "") -> Any:
    """GraphDef size and peak extra memory against the number of embedding ops."""
    from matplotlib.figure import Figure

    from helpers import widgets

    fig = Figure(figsize=(6.4, 3.2), layout="constrained")
    ax = fig.add_subplot()
    ax.plot(table.index, table["graph_mib"], marker="o", label="GraphDef size")
    ax.plot(
        table.index,
        table["peak_mib"],
        marker="s",
        label="process peak memory above its start (RSS)",
    )
    ax.set_xlabel("ops that use the NumPy array")
    ax.set_ylabel("MiB")
    ax.legend()
    widgets.set_title(ax, title)
    return fig


def embedding_summary(table: Any) -> str:
    """One line: how graph size and memory grew per op."""
    last = table.iloc[-1]
    return (
        f"{int(table.index[-1])} ops: a {last['graph_mib']:.0f} MiB graph "
        f"and {last['peak_mib']:.0f} MiB of extra memory at the peak "
        f"({last['peak_mib'] / max(last['graph_mib'], 1e-9):.1f}x the graph)."
    )


def guarded_array(mib: float, kind: str = "function") -> Any:
    """A ``mib`` MiB float32 array, after the guard has checked that embedding it (``kind``, one of
    ``PEAK_FACTORS``) fits this machine."""
    guard(estimate_peak(kind, array_bytes(mib)), f"Embedding a {mib} MiB array ({kind})")
    return make_array(mib)


def _embedded_vs_argument(mib: float = 4) -> dict[str, Any]:
    variants = lesson().first_calls(guarded_array(mib))  # the notebook's first calls, exported
    return {name: variants[name] for name in ("embedded constant", "tensor argument")}


BENCHMARKS = [
    Comparison(
        id="keep_arrays_out_of_graphs.embedded_vs_argument",
        title=(
            "first call of a tf.function: "
            "a NumPy array embedded as a constant vs passed as a tensor"
        ),
        make_variants=_embedded_vs_argument,
        baseline="embedded constant",
        variant="tensor argument",
        quick={"mib": 4},
        full={"mib": 16},
        repeats=5,
        min_time=0.0,
    ),
]


# Notebook 05 calls memory.check_graph_is_small: the exercise check lives in its own module.
from helpers.topics.keep_arrays_out_of_graphs.graph_check import (  # noqa: E402
    check_graph_is_small as check_graph_is_small,
)
