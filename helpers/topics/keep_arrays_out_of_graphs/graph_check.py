"""Notebook 05's first exercise check: a TF1 graph that keeps its ten adds of one input and the
array, with the array stored at most once."""

from __future__ import annotations

from typing import Any

from helpers import checks
from helpers.exercises import Feedback, correct, not_yet
from helpers.topics.keep_arrays_out_of_graphs.memory_guard import MIB


@checks.arguments(limit_bytes=checks.whole(1, 2**31))
def check_graph_is_small(graph: Any, array: Any = None, limit_bytes: int = 64 * 1024) -> Feedback:
    """Exercise: the fixed TF1 graph keeps its ten adds of one input and the array, and holds the
    array at most once: at most one constant larger than ``limit_bytes`` (the notebook's array is
    1 MiB), holding ``array``'s values when given (an array fed at run time is stored not at all).
    """
    import numpy as np
    import tensorflow as tf

    from helpers.topics.keep_arrays_out_of_graphs.memory import graph_stats  # memory imports this

    if not isinstance(graph, tf.Graph):
        return not_yet(f"fixed must be a tf.Graph, got {type(graph).__name__}.")

    sources = (
        "Const",
        "Placeholder",
        "PlaceholderV2",
        "PlaceholderWithDefault",
        "ReadVariableOp",
        "VariableV2",
        "Identity",
    )

    def array_like(tensor: Any) -> bool:  # the input or the array: a source, not a scalar or x * 2
        shape = tensor.shape
        big = not shape.is_fully_defined() or shape.num_elements() * 4 > limit_bytes
        return big and tensor.op.type in sources

    adds = [  # an add of two different array-sized sources: the input and the array
        op
        for op in graph.get_operations()
        if op.type in ("AddV2", "Add", "AddN")
        and len({t.ref() for t in op.inputs if array_like(t)}) > 1
    ]
    if len(adds) < 10:
        return not_yet(
            f"the graph has {len(adds)} adds of the input and the array; keep all ten "
            "(x + the array in each)."
        )
    try:
        stats, nodes = graph_stats(graph), graph.as_graph_def().node
    except Exception as exc:  # a graph over 2 GB cannot be serialized
        return not_yet(f"the graph cannot be serialized ({type(exc).__name__}): it is far too big.")
    big = [n for n in nodes if n.op == "Const" and n.ByteSize() > limit_bytes]
    if len(big) > 1:
        return not_yet(
            f"the graph is {stats['graph_bytes'] / MIB:.1f} MiB "
            f"and holds {len(big)} large constants: "
            "the array is still copied into each op. Convert it to a tensor once, before the loop."
        )

    def origin(tensor: Any) -> Any:  # each read of one variable is a new tensor of one origin
        if tensor.op.type in ("ReadVariableOp", "Identity") and tensor.op.inputs:
            return tensor.op.inputs[0].ref()
        return tensor.ref()

    if len({frozenset(origin(t) for t in op.inputs if array_like(t)) for op in adds}) > 1:
        return not_yet(
            "the ten adds do not all add the same two tensors: each should add the array to the "
            "same input x."
        )
    if array is not None and big:
        stored = tf.make_ndarray(big[0].attr["value"].tensor)
        if stored.shape != np.shape(array) or not np.array_equal(stored, array):
            return not_yet(
                "the graph's large constant does not hold the array's values: "
                "add the array itself (small), converted once."
            )
    return correct(
        f"{len(adds)} adds in a {stats['graph_bytes'] / 1024:.0f} KiB graph: "
        "the array is stored at most once."
    )
