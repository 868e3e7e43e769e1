"""Notebook 04's exercise check: towers summed with ``tf.add_n``, read from the placement log.

The technique (a ``tf.device`` block per tower, ``tf.add_n`` on the CPU) is written in the
notebook's cells.
"""

from __future__ import annotations

from typing import Any

from helpers.exercises import Feedback, correct, not_yet
from helpers.topics.find_where_ops_run.placement import devices_used

#: The ops a tower's product may be written with.
PRODUCTS = ("MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3", "Einsum")


def check_towers(fn: Any, batch: Any, log: Any) -> Feedback:
    """Exercise (04): calls a fresh copy of ``fn`` on ``batch`` through ``log.run`` (the notebook's
    placement log, which sees a tf.function's first call only) and
    checks that it is a ``tf.function`` whose two towers each take part of the batch, pinned to
    ``CPU:2`` and ``CPU:3``, summed by an ``add_n`` pinned to ``CPU:0``, giving ``batch^T batch``.
    The learner's exceptions come back as feedback."""
    if not callable(fn):
        return not_yet(f"pass your function my_towers itself, got {type(fn).__name__}.")
    if not callable(getattr(log, "run", None)):
        return not_yet("pass the notebook's placement log, log, as the third argument.")
    try:
        call = _fresh_copy(fn)
        result, table = log.run(lambda: call(batch))
    except Exception as exc:  # the learner's code: report it, do not let it escape
        return not_yet(f"calling my_towers(batch) raised {type(exc).__name__}: {_first_line(exc)}")
    feedback = _judge_run(result, table, batch)
    if not feedback:
        return feedback
    # The copy's graph: the learner's function is not traced here. A Feedback that is "not yet"
    # is falsy: test for None.
    graph = _judge_graph(call, batch)
    return feedback if graph is None else graph


def _fresh_copy(fn: Any) -> Any:
    """A ``tf.function``'s copy with the same options (``jit_compile``, ...) and no traces, so that
    the log sees a first call even where my_towers ran before (a ``tf.function`` is placed once
    per trace); anything else as it is."""
    clone = getattr(fn, "_clone", None)  # tf.function's own copy (private in TensorFlow 2.21)
    return clone(None) if callable(clone) and hasattr(fn, "python_function") else fn


def _first_line(exc: BaseException) -> str:
    try:
        return (str(exc).strip().splitlines() or [""])[0][:160]
    except Exception:  # a learner's exception whose __str__ fails
        return "(its message could not be read)"


def _judge_graph(fn: Any, batch: Any) -> Feedback | None:
    """What the placement log cannot show, read from the traced graph: whether the towers split
    the batch, and whether the add_n was pinned (an unpinned op lands on CPU:0 anyway)."""
    import tensorflow as tf

    if not hasattr(fn, "get_concrete_function"):
        return not_yet("make my_towers itself the tf.function (@tf.function above its def).")
    try:
        ops = fn.get_concrete_function(batch).graph.get_operations()
    except Exception as exc:  # the learner's function: report, don't crash
        return not_yet(f"tracing my_towers raised {type(exc).__name__}: {_first_line(exc)}")
    whole = [op.name for op in ops if op.type in PRODUCTS and any(map(_whole_batch, op.inputs))]
    if whole:
        return not_yet(
            f"{whole[0]} takes the whole batch: split it (tf.split(batch, 2)) and give each "
            "tower its own part."
        )
    pinned = [
        op for op in ops if op.type == "AddN" and _on_cpu0(tf.DeviceSpec.from_string(op.device))
    ]
    if not pinned:
        return not_yet(
            "the add_n is not pinned: it ran on CPU:0 only because that is the default device; "
            'put it inside with tf.device("/CPU:0").'
        )
    return None


def _whole_batch(tensor: Any) -> bool:
    """Whether ``tensor`` is the function's input itself (through identities, casts or
    transposes), not a part of it."""
    op = tensor.op
    while op.type in ("Identity", "Cast", "Transpose", "ConjugateTranspose") and op.inputs:
        op = op.inputs[0].op
    return op.type == "Placeholder"


def _on_cpu0(spec: Any) -> bool:
    """Whether a requested device names CPU:0 ("/CPU:0", "/device:CPU:0", "cpu:0", a job's)."""
    return (spec.device_type or "").upper() == "CPU" and spec.device_index in (0, None)


def _judge_run(result: Any, table: Any, batch: Any) -> Feedback:
    """``result`` equals ``batch^T batch``; the table shows matmuls on CPU:2 and CPU:3 and the
    ``AddN`` on ``CPU:0``."""
    import tensorflow as tf

    if not hasattr(result, "shape"):
        got = "nothing" if result is None else f"a {type(result).__name__}, not a tensor"
        return not_yet(f"my_towers returned {got}: return the tf.add_n of the two towers.")
    if table["type"].astype(str).str.startswith("__inference").all():  # no op placed anew
        return not_yet(
            "the log recorded no ops placed. A tf.function logs where its ops run on its first "
            "call only (if my_towers wraps one you called before, rerun the cell that defines "
            "it), and one compiled with XLA (jit_compile=True) logs none: its ops run as one "
            "compiled cluster, not as towers pinned op by op, so leave jit_compile off."
        )
    try:
        want = tf.matmul(batch, batch, transpose_a=True)
    except Exception as exc:  # the third argument is not the notebook's batch
        first = (str(exc).strip().splitlines() or [""])[0][:120]
        return not_yet(f"pass the batch as the second argument ({type(exc).__name__}: {first}).")
    if tuple(result.shape) != tuple(want.shape):
        return not_yet(f"the result has shape {tuple(result.shape)}, not {tuple(want.shape)}.")
    try:
        got = tf.cast(result, want.dtype)
        error = float(tf.reduce_max(tf.abs(got - want)) / (tf.reduce_max(tf.abs(want)) + 1e-12))
    except (TypeError, ValueError, tf.errors.OpError) as exc:  # a result of another kind
        return not_yet(f"the result is not a number tensor like batch: {type(exc).__name__}.")
    if not error <= 1e-4:  # NaN too
        return not_yet(
            f"the sum of the towers differs from batch^T batch (relative error {error:.1e})."
        )
    matmuls = sorted({d for kind in PRODUCTS for d in devices_used(table, kind)})
    sums = devices_used(table, "AddN")
    if not table["type"].astype(str).str.startswith("__inference").any():
        return not_yet(
            "the ops ran eagerly: make my_towers a tf.function (@tf.function above its def)."
        )
    if not matmuls:
        return not_yet("the table shows no matmul: compute each tower with tf.matmul.")
    if matmuls != ["CPU:2", "CPU:3"]:
        return not_yet(
            f"the matmuls ran on {matmuls}: put one tower on CPU:2 and the other on CPU:3."
        )
    if sums != ["CPU:0"]:
        return not_yet(
            f"the add_n ran on {sums or 'no device (is there an add_n?)'}, not on CPU:0."
        )
    return correct(f"towers on {', '.join(matmuls)}, summed on CPU:0; same numbers as one matmul.")
