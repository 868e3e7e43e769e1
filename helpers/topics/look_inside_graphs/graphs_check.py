"""Notebook 01's exercise checks: a TF1-style graph of ``z = x @ w + b``, and a ``tf.function``
training step. ``helpers.topics.look_inside_graphs.graphs`` imports them back, as the notebook
calls them."""

from __future__ import annotations

from typing import Any

from helpers.exercises import Feedback, correct, not_yet


def _above(op: Any) -> set[str]:
    """The types of the ops whose outputs reach ``op``, through any number of ops between."""
    seen, todo = set(), [t.op for t in op.inputs]
    while todo:
        node = todo.pop()
        if node.name not in seen:
            seen.add(node.name)
            todo.extend(t.op for t in node.inputs)
    return {op.graph.get_operation_by_name(name).type for name in seen}


def _constant(tensor: Any, fed: set[str]) -> bool:
    """Whether ``tensor`` comes from constants only: no op of ``fed`` (the placeholders and
    variables) at or above it."""
    kinds = _above(tensor.op) | {tensor.op.type}
    return "Const" in kinds and not kinds & fed


def check_affine_graph(graph: Any) -> Feedback:
    """Exercise (01): ``graph`` holds ``z = x @ w + b`` with a placeholder, a variable and a
    constant."""
    import tensorflow as tf

    if not isinstance(graph, tf.Graph):
        return not_yet(f"g_ex must be a tf.Graph, got {type(graph).__name__}.")
    types = {op.type for op in graph.get_operations()}
    wanted = {
        "a placeholder x": {"Placeholder", "PlaceholderWithDefault"},
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
        "x": [
            op.outputs[0].shape
            for op in graph.get_operations()
            if op.type in wanted["a placeholder x"]
        ],
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
    if len(shapes["w"]) > 1:
        return not_yet(
            f"the graph has {len(shapes['w'])} variables: only w is one; b is a constant "
            "(tf.constant). (A cell run twice into one graph makes a second w: start from a new "
            "tf.Graph.)"
        )
    products = [
        op
        for op in graph.get_operations()
        if op.type in wanted["a matmul"]
        and _above(op) & wanted["a placeholder x"]
        and _above(op) & wanted["a variable w"]
    ]
    if not products:
        return not_yet("the matmul must multiply x by w: z = x @ w + b.")
    sums = [
        op
        for op in graph.get_operations()
        if op.type in wanted["an add"] and _above(op) & {p.type for p in products}
    ]
    if not sums:
        return not_yet("the add must take the matmul's result: z = x @ w + b.")
    fed = {*wanted["a placeholder x"], *wanted["a variable w"]}
    sums = [op for op in sums if any(_constant(t, fed) for t in op.inputs)]
    if not sums:
        return not_yet(
            "the add's other input must be the constant b (tf.constant), not something computed "
            "from x or w: z = x @ w + b."
        )
    if not any(op.outputs[0].shape.is_compatible_with([None, 2]) for op in sums):
        return not_yet(
            f"z has shape {sums[0].outputs[0].shape}, not (None, 2): is it x @ w, not w @ x?"
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
    if isinstance(step, tf.Tensor):
        return not_yet("pass the function step itself, not what step() returned.")
    if not hasattr(step, "get_concrete_function"):
        return not_yet("step must be a tf.function (put @tf.function above its def).")
    try:
        given = v.numpy()  # put back afterwards: a check never changes what it is given
    except Exception as exc:  # a variable of a tf.Graph (exercise 1) has no value here
        return not_yet(f"v must be an eager variable, made outside any tf.Graph ({exc}).")
    try:  # traces step if it was not called yet; its optimizer makes its variables then
        traced = step.get_concrete_function()
        state = [(var, var.numpy()) for var in traced.variables if var is not v]
    except Exception as exc:  # the learner's code
        return not_yet(f"tracing step() raised {type(exc).__name__}: {exc}")
    if not any(op.name.startswith("gradient_tape/") for op in traced.graph.get_operations()):
        return not_yet(
            "step() takes no gradient: compute the loss under tf.GradientTape and apply "
            "tape.gradient(loss, [v]) with the optimizer."
        )
    v.assign(tf.zeros_like(v))
    losses = []
    try:
        for _ in range(5):
            loss = step()
            if loss is None:
                return not_yet("step() returned nothing: return the loss.")
            try:
                size = int(tf.size(loss))
                value = float(tf.reshape(loss, [])) if size == 1 else None
            except (TypeError, ValueError):  # a tuple, a string: not one number
                return not_yet(f"step() returned {type(loss).__name__}: return one loss (a sum).")
            if value is None:
                return not_yet(f"step() returned {size} numbers: return one loss (a sum).")
            losses.append(value)
        reached = v.numpy()
    except Exception as exc:  # the learner's code
        return not_yet(f"step() raised {type(exc).__name__}: {exc}")
    finally:  # v and the optimizer's state (its step count, any momentum) as they were
        v.assign(given)
        for var, value in state:
            var.assign(value)
    if np.allclose(reached, 0.0):
        return not_yet("v is still 0 after five calls: does step() update v itself?")
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
