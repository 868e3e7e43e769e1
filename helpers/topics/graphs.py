"""Graphs as tables, the graph exercises' checks, and the eager vs ``tf.function`` comparison's
registration (notebooks 00, 01). The comparison itself is lesson code, written in notebook 00
and exported to ``helpers.lessons.start_here``."""

from __future__ import annotations

from typing import Any

from helpers import checks
from helpers.comparison import Comparison
from helpers.exercises import Feedback, correct, not_yet


@checks.arguments(start=checks.whole(0))
def ops_table(graph: Any, start: int = 0) -> Any:
    """A table of a graph's operations from index ``start``: name, type, inputs, outputs
    (name, shape, dtype) and the device each op asks for (empty: let TensorFlow choose)."""
    import pandas as pd

    rows = []
    for op in graph.get_operations()[start:]:
        rows.append(
            {
                "name": op.name,
                "type": op.type,
                "inputs": ", ".join(t.name for t in op.inputs),
                "outputs": ", ".join(f"{t.name} {t.shape} {t.dtype.name}" for t in op.outputs),
                "device": op.device,
            }
        )
    return pd.DataFrame(rows, columns=["name", "type", "inputs", "outputs", "device"])


@checks.arguments(start=checks.whole(0))
def op_types(graph: Any, start: int = 0) -> Any:
    """How many ops of each type a graph holds from index ``start`` on, most common first."""
    import pandas as pd

    types = pd.Series([op.type for op in graph.get_operations()[start:]], dtype="object")
    counts = types.value_counts()
    return counts.rename_axis("type").reset_index(name="count").sort_values(
        ["count", "type"], ascending=[False, True], ignore_index=True
    )


def check_affine_graph(graph: Any) -> Feedback:
    """Exercise (01): ``graph`` holds ``z = x @ w + b`` with a placeholder, a variable and a constant."""
    import tensorflow as tf

    if not isinstance(graph, tf.Graph):
        return not_yet(f"g_ex must be a tf.Graph, got {type(graph).__name__}.")
    types = {op.type for op in graph.get_operations()}
    wanted = {"a placeholder x": {"Placeholder"}, "a variable w": {"VarHandleOp", "VariableV2"},
              "a matmul": {"MatMul", "BatchMatMulV2", "Einsum"}, "an add": {"AddV2", "Add", "BiasAdd"}}
    missing = [text for text, kinds in wanted.items() if not types & kinds]
    if missing:
        return not_yet(f"the graph is missing {' and '.join(missing)}. Its op types: {sorted(types)}.")
    return correct(f"{len(graph.get_operations())} ops; the graph only describes z until a Session runs it.")


def check_training_step(step: Any, w: Any) -> Feedback:
    """Exercise (01): calling ``step()`` five times moves ``w`` towards 3.0 and lowers the loss."""
    import tensorflow as tf

    if not isinstance(w, tf.Variable):
        return not_yet(f"w must be a tf.Variable, got {type(w).__name__}.")
    if not hasattr(step, "get_concrete_function"):
        return not_yet("step must be a tf.function (put @tf.function above its def).")
    given = w.numpy()  # put back afterwards: a check never changes what it is given
    w.assign(tf.zeros_like(w))
    try:
        losses = [float(step()) for _ in range(5)]
        reached = w.numpy().round(3)
    except Exception as exc:  # the learner's code
        return not_yet(f"step() raised {type(exc).__name__}: {exc}")
    finally:
        w.assign(given)
    if not all(b < a for a, b in zip(losses, losses[1:], strict=False)):
        return not_yet(f"the loss did not fall at every step: {[round(x, 3) for x in losses]}.")
    return correct(f"the loss fell from {losses[0]:.3f} to {losses[-1]:.3f}, starting from w = 0; w reached {reached}.")


BENCHMARKS = [
    Comparison(
        id="graphs.eager_vs_function",
        title="100-1000 tiny ops: eager op by op vs one tf.function graph",
        make_variants="helpers.lessons.start_here:eager_vs_function",
        baseline="eager",
        variant="tf.function",
        quick={"n_ops": 100},
        full={"n_ops": 1000},
    ),
]
