"""The eager vs ``tf.function`` comparison's registration (notebooks 00, 01), and the graph
exercises' checks, imported back from ``graphs_check``. The comparison itself is lesson code,
written in notebook 00 and exported to ``helpers.lessons.start_here``. Also the readers of what a
compiler made of a function (notebook 08): XLA's HLO text, Grappler's optimised graph,
recompilations per shape."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from helpers.comparison import Comparison
from helpers.topics.look_inside_graphs.graphs_check import (
    check_affine_graph as check_affine_graph,
)
from helpers.topics.look_inside_graphs.graphs_check import (
    check_training_step as check_training_step,
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
