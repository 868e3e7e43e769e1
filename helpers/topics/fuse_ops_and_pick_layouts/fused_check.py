"""Notebook 08's exercise checks: batch norm through the fused kernel, and a JPEG window decoded
with ``decode_and_crop_jpeg``. ``helpers.topics.fuse_ops_and_pick_layouts.fused`` imports them
back, as the notebook calls them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from helpers.exercises import Feedback, correct, not_yet


def _op_types(fn: Callable[..., Any], *specs: Any) -> set[str]:
    import tensorflow as tf

    graph_def = tf.function(fn).get_concrete_function(*specs).graph.as_graph_def()
    # ops of nested functions too (a learner's own tf.function shows as one PartitionedCall)
    nested = {node.op for function in graph_def.library.function for node in function.node_def}
    return {node.op for node in graph_def.node} | nested


def check_fused_batchnorm(fn: Any) -> Feedback:
    """Exercise check: ``fn(x)`` batch-normalizes an NHWC batch (scale 1, offset 0, epsilon
    1e-3) through the fused kernel and matches the unfused result and its gradient."""
    import tensorflow as tf

    if not callable(fn):
        return not_yet(f"pass your function itself, got {fn!r}")
    # a small variance (about 1e-3), so that an epsilon other than 1e-3 shows in the result
    x = tf.random.stateless_normal([4, 8, 8, 6], seed=(9, 9)) * 0.03 + 1.0
    mean, variance = tf.nn.moments(x, axes=[0, 1, 2])
    want = tf.nn.batch_normalization(x, mean, variance, None, None, 1e-3)
    try:
        got = fn(x)
        if got is None:
            return not_yet("it returned None: return the normalized batch")
        if isinstance(got, tuple | list):
            return not_yet(
                f"it returned {len(got)} items; fused_batch_norm returns (y, mean, variance): "
                "return only y"
            )
        got = tf.cast(tf.convert_to_tensor(got), tf.float32)
        worst = float(tf.reduce_max(tf.abs(got - want))) if got.shape == want.shape else None
    except Exception as exc:  # the learner's code: report, don't crash the notebook
        tf1 = isinstance(exc, AttributeError) and "has no attribute 'fused_batch_norm'" in str(exc)
        hint = " (TF 2.x: tf.compat.v1.nn.fused_batch_norm)" if tf1 else ""
        return not_yet(f"calling it raised {type(exc).__name__}: {exc}{hint}")
    try:
        ops = _op_types(fn, tf.TensorSpec(x.shape, tf.float32))
    except Exception as exc:  # eager-only code (NumPy, .numpy()) cannot be traced
        return not_yet(
            f"inside a tf.function it raised {type(exc).__name__}: {exc} (the check looks for "
            "the fused op in its graph: use TensorFlow ops only)"
        )
    if worst is None:
        return not_yet(f"the result has shape {got.shape}, expected {want.shape}")
    if not any(op.startswith("FusedBatchNorm") for op in ops):
        return not_yet(f"the graph has no FusedBatchNorm op, only {sorted(ops)}")
    if not worst <= 1e-3:  # NaN too
        return not_yet(
            f"the values differ from the unfused result by up to {worst:.3g}: scale 1, offset 0, "
            "epsilon 1e-3?"
        )
    weights = tf.random.stateless_normal(x.shape, seed=(3, 4))  # a loss that reads every output
    try:
        grads = []
        for forward in (
            fn,
            lambda x: tf.nn.batch_normalization(x, *tf.nn.moments(x, [0, 1, 2]), None, None, 1e-3),
        ):
            with tf.GradientTape() as tape:
                tape.watch(x)
                loss = tf.reduce_sum(tf.cast(forward(x), tf.float32) * weights)
            grads.append(tape.gradient(loss, x))
        off = float(tf.reduce_max(tf.abs(grads[0] - grads[1])) / tf.reduce_max(tf.abs(grads[1])))
    except Exception as exc:  # no gradient (None), or the learner's code failing under a tape
        return not_yet(f"its gradient could not be taken ({type(exc).__name__}: {exc})")
    if not off <= 1e-2:
        return not_yet(
            f"the forward values match but the gradient differs from the unfused ops' (by "
            f"{off:.0%} of its largest value): with is_training=False the kernel treats the mean "
            "and variance as constants; let it compute the batch's own (is_training=True)"
        )
    return correct(f"one FusedBatchNorm op, within {worst:.1g} of the unfused ops, same gradient")


def check_window_decode(fn: Any) -> Feedback:
    """Exercise check: ``fn(jpeg, top, left, height, width)`` decodes only that window of the
    JPEG with ``decode_and_crop_jpeg`` and matches decode-then-crop closely."""
    import tensorflow as tf

    if not callable(fn):
        return not_yet(f"pass your function itself, got {fn!r}")
    pixels = tf.cast(
        tf.random.stateless_uniform([96, 128, 3], seed=(1, 1), maxval=256, dtype=tf.int32), tf.uint8
    )
    jpeg = tf.io.encode_jpeg(pixels)
    box = (8, 16, 48, 64)
    try:
        got = fn(jpeg, *box)
        if got is None:
            return not_yet("it returned None: return the decoded window")
        got = tf.convert_to_tensor(got)
    except Exception as exc:  # the learner's code: report, don't crash the notebook
        return not_yet(f"calling it raised {type(exc).__name__}: {exc}")
    try:
        ops = _op_types(lambda j: fn(j, *box), tf.TensorSpec([], tf.string))
    except Exception as exc:  # eager-only code (NumPy, .numpy()) cannot be traced
        return not_yet(
            f"inside a tf.function it raised {type(exc).__name__}: {exc} (the check looks for "
            "the op in its graph: use TensorFlow ops only)"
        )
    want = tf.image.crop_to_bounding_box(tf.io.decode_jpeg(jpeg, channels=3), *box)
    if got.shape != want.shape:
        return not_yet(f"the crop has shape {got.shape}, expected {want.shape}")
    if "DecodeAndCropJpeg" not in ops:
        return not_yet(f"the graph has no DecodeAndCropJpeg op, only {sorted(ops)}")
    whole = sorted(ops & {"DecodeJpeg", "DecodeImage"})
    if whole:
        return not_yet(
            f"the graph still decodes the whole JPEG ({whole[0]}): decode only the window"
        )
    mean_diff = float(tf.reduce_mean(tf.abs(tf.cast(got, tf.float32) - tf.cast(want, tf.float32))))
    if mean_diff > 2.0 and got.dtype.is_floating and float(tf.reduce_max(got)) <= 1.0:
        return not_yet("its pixels are scaled to [0, 1]: return them as decoded, 0 to 255")
    if mean_diff > 2.0:
        return not_yet(
            f"the pixels differ from decode-then-crop by {mean_diff:.1f} on average: "
            "is the box right?"
        )
    return correct(
        "DecodeAndCropJpeg skips the work outside the window; "
        f"mean difference {mean_diff:.2f} of 255"
    )
