"""The graph exercises' checks, and the eager vs ``tf.function`` comparison's
registration (notebooks 00, 01). The comparison itself is lesson code, written in notebook 00
and exported to ``helpers.lessons.start_here``. Also the readers of what a compiler made of a
function (notebook 08): XLA's HLO text, Grappler's optimised graph, recompilations per shape."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from helpers.comparison import Comparison
from helpers.exercises import Feedback, correct, not_yet


def check_affine_graph(graph: Any) -> Feedback:
    """Exercise (01): ``graph`` holds ``z = x @ w + b`` with a placeholder, a variable and a
    constant."""
    import tensorflow as tf

    if not isinstance(graph, tf.Graph):
        return not_yet(f"g_ex must be a tf.Graph, got {type(graph).__name__}.")
    types = {op.type for op in graph.get_operations()}
    wanted = {
        "a placeholder x": {"Placeholder"},
        "a variable w": {"VarHandleOp", "VariableV2"},
        "a matmul": {"MatMul", "BatchMatMulV2", "Einsum"},
        "an add": {"AddV2", "Add", "BiasAdd"},
    }
    missing = [text for text, kinds in wanted.items() if not types & kinds]
    if missing:
        return not_yet(
            f"the graph is missing {' and '.join(missing)}. Its op types: {sorted(types)}."
        )
    shapes = {  # what the exercise asks for: x of shape [None, 3], w of shape [3, 2]
        "x": [op.outputs[0].shape for op in graph.get_operations() if op.type == "Placeholder"],
        "w": [
            tf.TensorShape(op.get_attr("shape"))
            for op in graph.get_operations()
            if op.type in wanted["a variable w"]
        ],
    }
    for name, want in (("x", [None, 3]), ("w", [3, 2])):
        if not any(shape.as_list() == want for shape in shapes[name] if shape.rank is not None):
            got = [str(shape) for shape in shapes[name]]
            return not_yet(
                f"{name} must have shape {want}; the graph's {name} has {', '.join(got)}."
            )
    return correct(
        f"{len(graph.get_operations())} ops; the graph only describes z until a Session runs it."
    )


def check_training_step(step: Any, v: Any) -> Feedback:
    """Exercise (01): five calls of ``step()`` from ``v = 0`` lower the loss at every call and move
    ``v`` as five SGD steps of learning rate 0.1 on ``reduce_sum((v - 3)^2)`` do."""
    import numpy as np
    import tensorflow as tf

    if not isinstance(v, tf.Variable):
        return not_yet(f"v must be a tf.Variable, got {type(v).__name__}.")
    if not hasattr(step, "get_concrete_function"):
        return not_yet("step must be a tf.function (put @tf.function above its def).")
    given = v.numpy()  # put back afterwards: a check never changes what it is given
    v.assign(tf.zeros_like(v))
    try:
        losses = [float(step()) for _ in range(5)]
        reached = v.numpy()
    except Exception as exc:  # the learner's code
        return not_yet(f"step() raised {type(exc).__name__}: {exc}")
    finally:
        v.assign(given)
    if not all(b < a for a, b in zip(losses, losses[1:], strict=False)):
        return not_yet(f"the loss did not fall at every step: {[round(x, 3) for x in losses]}.")
    want = 3.0 * (1 - 0.8**5)  # each SGD step of 0.1 on the sum: v -> v - 0.1 * 2 (v - 3)
    if reached.shape != given.shape or not np.allclose(reached, want, atol=1e-3):
        return not_yet(
            f"the loss fell, but v reached {reached.round(3)} after five calls from 0, where five "
            f"SGD steps of learning rate 0.1 reach {want:.3f}: check the loss (a sum), the "
            "optimizer (SGD) and its learning rate (0.1)."
        )
    return correct(
        f"the loss fell from {losses[0]:.3f} to {losses[-1]:.3f}, starting from v = 0; "
        f"v reached {reached.round(3)}, as five SGD steps of 0.1 do."
    )


BENCHMARKS = [
    Comparison(
        id="look_inside_graphs.eager_vs_function",
        title="100-1000 tiny ops: eager op by op vs one tf.function graph",
        make_variants="helpers.lessons.start_here:eager_vs_function",
        baseline="eager",
        variant="tf.function",
        quick={"n_ops": 100},
        full={"n_ops": 1000},
    ),
]


# One HLO instruction: "%name = f32[100000]{0} multiply(%a, %b), ..." (optionally after "ROOT").
_HLO_OP = re.compile(r"^\s*(?:ROOT\s+)?%\S+\s*=\s*\S+\s+([a-z][\w-]*)\(")
_ELEMENTWISE = (
    "add",
    "multiply",
    "subtract",
    "divide",
    "sine",
    "cosine",
    "tanh",
    "exponential",
    "maximum",
)


def _ops(hlo: str, entry: bool = True) -> list[str]:
    """The opcodes of an HLO module's ENTRY computation (what runs as separate steps), or with
    ``entry=False`` of its fused computations (what runs inside the fusions' loops)."""
    ops, inside = [], False
    for line in hlo.splitlines():
        if line.startswith("ENTRY ") if entry else line.startswith("%fused"):
            inside = True
        elif inside and line.startswith("}"):
            inside = False
        elif inside and (match := _HLO_OP.match(line)):
            ops.append(match[1])
    return ops


def _counts(ops: list[str], top: int = 3) -> str:
    """ "20 add, 20 multiply, 2 broadcast, ...": the most frequent opcodes first."""
    ranked = sorted(Counter(ops).items(), key=lambda pair: (-pair[1], pair[0]))
    return ", ".join(f"{n} {op}" for op, n in ranked[:top]) + (", ..." if len(ranked) > top else "")


def hlo_summary(before: str, after: str) -> str:
    """Read 08's two compiler IRs (stage "hlo" and "optimized_hlo") in one sentence: how many
    elementwise steps the program's entry ran before XLA's optimisations, and what replaced them."""
    if not all(isinstance(text, str) and "ENTRY" in text for text in (before, after)):
        raise ValueError(
            "before and after must be HLO module text, "
            "from experimental_get_compiler_ir(...)(stage=...)"
        )
    first, second = _ops(before), _ops(after)
    counted = lambda ops: {op: ops.count(op) for op in _ELEMENTWISE if op in ops}  # noqa: E731
    fusions = re.findall(r"=\s*\S+\s+fusion\(.*?kind=(\w+)", after)
    steps = ", ".join(f"{n} {op}" for op, n in counted(first).items()) or "no elementwise"
    rest = _counts([op for op in first if op not in _ELEMENTWISE]) or "none"
    left = (
        ", ".join(f"{n} {op}" for op, n in counted(second).items())
        or "no elementwise instruction of its own"
    )
    fused = _ops(after, entry=False)
    return (
        f"Before XLA's optimisations the program's entry ran {steps} instructions "
        f"({len(first)} instructions in all; the others: {rest}); "
        f"after them it runs {len(second)} instructions ({left}), "
        f"with {len(fusions)} fusion(s) of kind {', '.join(sorted(set(fusions))) or '-'} "
        f"holding the elementwise work ({_counts(fused, top=4) or 'empty'} inside): "
        "one loop per fusion, one pass over memory."
    )


def optimized_op_types(fn: Any, *args: Any) -> list[str]:
    """Call ``fn`` (a ``tf.function``) once and return the op types of its graph as Grappler
    optimised it at its first call: the run metadata's post-optimisation graph (before oneDNN's
    later renaming to its own kernels)."""
    from tensorflow.python.eager import context

    context.enable_run_metadata()
    try:
        fn(*args)
        metadata = context.export_run_metadata()
    finally:
        context.disable_run_metadata()
    graphs = [
        g.post_optimization_graph
        for g in metadata.function_graphs
        if g.post_optimization_graph.node
    ]
    if not graphs:
        raise ValueError(
            "no optimised graph was recorded: pass a tf.function that runs TensorFlow ops"
        )
    plumbing = {"_Arg", "_Retval", "NoOp", "Identity", "Const"}
    return sorted({node.op for graph in graphs for node in graph.node} - plumbing)


def recompile_summary(rows: Any) -> str:
    """Read 08's calls of an XLA function over several shapes. A new shape that needed no new trace
    shows the compile alone; compare it with calls of a shape seen before."""
    new = [r["ms"] for r in rows if r["shape seen before"] == "no"]
    seen = [r["ms"] for r in rows if r["shape seen before"] == "yes"]
    if not new or not seen:
        raise ValueError("rows must hold calls of new shapes and of shapes seen before")
    traces = [0] + [int(r["traces so far"]) for r in rows]
    untraced = [
        r["ms"]
        for r, before, after in zip(rows, traces, traces[1:], strict=False)
        if r["shape seen before"] == "no" and after == before
    ]
    said = f"{len(rows)} calls over {len(new)} shapes: traced {traces[-1]} time(s)"
    if not untraced:
        return (
            f"{said}; every new shape also traced, so this run cannot tell a compile from a trace."
        )
    if min(untraced) > 5 * max(seen):
        took = (
            f"{min(untraced):,.1f}"
            if min(untraced) == max(untraced)
            else f"{min(untraced):,.1f}-{max(untraced):,.1f}"
        )
        return (
            f"{said}. A new shape that needed no new trace still took {took} ms, "
            f"against {min(seen):,.1f}-{max(seen):,.1f} ms for a shape seen before: "
            "XLA compiled it for that shape."
        )
    return (
        f"{said}. A new shape that needed no new trace took {max(untraced):,.1f} ms, against "
        f"{min(seen):,.1f}-{max(seen):,.1f} ms for a shape seen before: "
        "no clear compile cost per shape in this run."
    )
