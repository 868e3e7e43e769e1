"""Notebook 04's exercise check: towers summed with ``tf.add_n``, read from the placement log.

The technique (a ``tf.device`` block per tower, ``tf.add_n`` on the CPU) is written in the
notebook's cells.
"""

from __future__ import annotations

from typing import Any

from helpers.exercises import Feedback, correct, not_yet
from helpers.topics.find_where_ops_run.placement import devices_used


def check_towers(result: Any, table: Any, batch: Any) -> Feedback:
    """Exercise (04): ``result`` equals ``batch^T batch``; the table shows matmuls on several
    devices and the ``AddN`` on ``CPU:0``."""
    import tensorflow as tf

    if not hasattr(result, "shape"):
        got = "nothing" if result is None else f"a {type(result).__name__}, not a tensor"
        return not_yet(f"my_towers returned {got}: return the tf.add_n of the two towers.")
    if not {"kernel", "device"} <= set(getattr(table, "columns", [])):
        return not_yet(
            "pass the table that log.run(lambda: my_towers(batch)) returned (the second item)."
        )
    if len(table) == 0:
        return not_yet(
            "the log recorded no ops: a tf.function logs where its ops run on its first call "
            "only. Rerun the cell that defines my_towers, so that log.run makes its first call."
        )
    try:
        want = tf.matmul(batch, batch, transpose_a=True)
    except Exception as exc:  # the third argument is not the notebook's batch
        first = (str(exc).strip().splitlines() or [""])[0][:120]
        return not_yet(f"pass the batch as the third argument ({type(exc).__name__}: {first}).")
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
    matmuls = sorted(
        {d for kind in ("MatMul", "BatchMatMul", "Einsum") for d in devices_used(table, kind)}
    )
    sums = devices_used(table, "AddN")
    if not table["kernel"].astype(str).str.startswith("__inference").any():
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
