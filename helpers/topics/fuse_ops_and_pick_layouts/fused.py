"""Fused ops, data format and XLA (notebook 08): the variants the widgets and the bench time,
built from the notebook's exported lesson code (``helpers.lessons.fuse_ops_and_pick_layouts``).

Each ``*_variants`` function returns same-result callables for ``timing.compare``; each
``*_difference`` function says how far apart their results are, so a speed claim always comes
with its correctness check. The batch-norm variants, their grid and its readings are in
``helpers.topics.fuse_ops_and_pick_layouts.fused_batchnorm`` (re-exported here).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from helpers import checks
from helpers.checks import whole_number
from helpers.comparison import Comparison
from helpers.exercises import Feedback, correct, not_yet

# fused_batchnorm holds lesson (its variants build the lesson code), so that it imports nothing
# from here; xla_variants and decode_crop_variants look lesson up in this module. The names
# imported "as" themselves are re-exported: notebook 08 calls them as fused.<name>.
from helpers.topics.fuse_ops_and_pick_layouts.fused_batchnorm import FORMATS as FORMATS
from helpers.topics.fuse_ops_and_pick_layouts.fused_batchnorm import (
    batchnorm_grid as batchnorm_grid,
)
from helpers.topics.fuse_ops_and_pick_layouts.fused_batchnorm import batchnorm_variants, lesson
from helpers.topics.fuse_ops_and_pick_layouts.fused_batchnorm import grid_summary as grid_summary
from helpers.topics.fuse_ops_and_pick_layouts.fused_batchnorm import (
    keras_batchnorm_variants as keras_batchnorm_variants,
)

CHAINS = ("multiply_add", "transcendental")


@checks.arguments(small=checks.flag, repeats=checks.repeats, rounds=checks.rounds)
def data_format_table(
    small: bool = False, repeats: int = 5, rounds: int = 1, on_progress: Any = None
) -> Any:
    """A 3x3 ``conv2d`` in NHWC and in NCHW, each in fresh processes with oneDNN on and off
    (``TF_ENABLE_ONEDNN_OPTS``): medians in ms, or the error where a format cannot run."""
    from helpers.topics.tune_the_cpu import cputune

    settings = {
        "oneDNN on": cputune.Setting(onednn=True),
        "oneDNN off": cputune.Setting(onednn=False),
    }
    return cputune.sweep(
        settings,
        ["conv2d_NHWC", "conv2d_NCHW"],
        repeats=repeats,
        rounds=rounds,
        small=small,
        on_progress=on_progress,
    )


def data_format_summary(table: Any) -> str:
    """``data_format_table`` read both ways, each line with its spread: per layout, oneDNN off
    against on; per oneDNN setting, NCHW against NHWC (expected slower on a CPU), where both ran."""
    from helpers.topics.tune_the_cpu import cpu_report

    by_layout = cpu_report.sweep_summary(table)
    swapped = table.rename(columns={"setting": "workload", "workload": "setting"})
    by_setting = cpu_report.sweep_summary(
        swapped,
        expect="slower",
        why="CPU kernels vectorise over the channels NHWC keeps together",
        noun="layout",
    )
    return f"{by_layout}\n{by_setting}"


@checks.arguments(n_ops=checks.whole(1, 10_000), size=checks.whole(1, 10**9))
def xla_variants(
    chain: str = "multiply_add", n_ops: int = 20, size: int = 1_000_000
) -> dict[str, Callable[[], Any]]:
    """Notebook 08's ``multiply_add_chain`` or ``transcendental_chain`` of ``n_ops`` steps as a
    plain ``tf.function`` and compiled by XLA (``jit_compile=True``)."""
    import tensorflow as tf

    if chain not in CHAINS:
        raise ValueError(f"chain must be one of {CHAINS}, got {chain!r}")
    for name, value in (("n_ops", n_ops), ("size", size)):
        whole_number(name, value)
    checks.fits_memory(
        f"xla_variants(size={size:,})", 4 * size * 4
    )  # the input, the output and two temporaries
    body = getattr(lesson(), f"{chain}_chain")
    x = tf.random.stateless_uniform([size], seed=(5, 6))
    graph = tf.function(functools.partial(body, n_ops=n_ops))
    compiled = tf.function(functools.partial(body, n_ops=n_ops), jit_compile=True)
    return {"graph": lambda: graph(x), "XLA": lambda: compiled(x)}


@checks.arguments(
    height=checks.whole(1, 8192, "pixels"),
    width=checks.whole(1, 8192, "pixels"),
    crop=checks.whole(1, 8192, "pixels"),
)
def decode_crop_variants(
    height: int = 480, width: int = 640, crop: int = 224
) -> dict[str, Callable[[], Any]]:
    """A generated ``height`` x ``width`` JPEG, center-cropped to ``crop`` x ``crop`` by notebook
    08's ``decode_then_crop`` and ``decode_window`` (``tf.io.decode_and_crop_jpeg``)."""
    import tensorflow as tf

    for name, value in (("height", height), ("width", width), ("crop", crop)):
        whole_number(name, value)
    if crop > min(height, width):
        raise ValueError(f"crop must be between 1 and {min(height, width)}, got {crop}")
    # int32 random values, the uint8 image, the JPEG, a decoded copy and libjpeg's buffers
    checks.fits_memory(f"decode_crop_variants({height} x {width})", height * width * 3 * 8)
    code = lesson()
    pixels = tf.cast(
        tf.random.stateless_uniform([height, width, 3], seed=(3, 4), maxval=256, dtype=tf.int32),
        tf.uint8,
    )
    jpeg = tf.io.encode_jpeg(pixels)
    box = ((height - crop) // 2, (width - crop) // 2, crop, crop)
    whole, window = tf.function(code.decode_then_crop), tf.function(code.decode_window)
    return {
        "decode then crop": lambda: whole(jpeg, *box),
        "decode_and_crop_jpeg": lambda: window(jpeg, *box),
    }


@checks.arguments(
    height=checks.whole(1, 8192, "pixels"),
    width=checks.whole(1, 8192, "pixels"),
    crop=checks.whole(1, 8192, "pixels"),
)
def crop_difference(height: int = 480, width: int = 640, crop: int = 224) -> tuple[float, int]:
    """The fraction of pixel values that differ between the two crops, and the largest
    difference."""
    import tensorflow as tf

    variants = decode_crop_variants(height, width, crop)
    a = tf.cast(variants["decode then crop"](), tf.int32)
    b = tf.cast(variants["decode_and_crop_jpeg"](), tf.int32)
    return float(tf.reduce_mean(tf.cast(a != b, tf.float32))), int(tf.reduce_max(tf.abs(a - b)))


def _op_types(fn: Callable[..., Any], *specs: Any) -> set[str]:
    import tensorflow as tf

    graph_def = tf.function(fn).get_concrete_function(*specs).graph.as_graph_def()
    # ops of nested functions too (a learner's own tf.function shows as one PartitionedCall)
    nested = {node.op for function in graph_def.library.function for node in function.node_def}
    return {node.op for node in graph_def.node} | nested


def check_fused_batchnorm(fn: Any) -> Feedback:
    """Exercise check: ``fn(x)`` batch-normalizes an NHWC batch (scale 1, offset 0, epsilon
    1e-3) through the fused kernel and matches the unfused result."""
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
    if worst > 1e-3:
        return not_yet(
            f"the values differ from the unfused result by up to {worst:.3g}: scale 1, offset 0, "
            "epsilon 1e-3?"
        )
    return correct(f"one FusedBatchNorm op, within {worst:.1g} of the unfused ops")


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
        got = tf.convert_to_tensor(fn(jpeg, *box))
        ops = _op_types(lambda j: fn(j, *box), tf.TensorSpec([], tf.string))
    except Exception as exc:  # the learner's code: report, don't crash the notebook
        return not_yet(f"calling it raised {type(exc).__name__}: {exc}")
    want = tf.image.crop_to_bounding_box(tf.io.decode_jpeg(jpeg, channels=3), *box)
    if got.shape != want.shape:
        return not_yet(f"the crop has shape {got.shape}, expected {want.shape}")
    if "DecodeAndCropJpeg" not in ops:
        return not_yet(f"the graph has no DecodeAndCropJpeg op, only {sorted(ops)}")
    mean_diff = float(tf.reduce_mean(tf.abs(tf.cast(got, tf.float32) - tf.cast(want, tf.float32))))
    if mean_diff > 2.0:
        return not_yet(
            f"the pixels differ from decode-then-crop by {mean_diff:.1f} on average: "
            "is the box right?"
        )
    return correct(
        "DecodeAndCropJpeg skips the work outside the window; "
        f"mean difference {mean_diff:.2f} of 255"
    )


BENCHMARKS = [
    Comparison(
        id="fuse_ops_and_pick_layouts.batchnorm_fwd_bwd",
        title="batch norm forward + backward, [32,56,56,64] NHWC: unfused ops vs fused kernel",
        make_variants=batchnorm_variants,
        baseline="unfused",
        variant="fused",
        quick={"shape": (8, 28, 28, 32)},
        full={"shape": (32, 56, 56, 64)},
        repeats=7,
    ),
    Comparison(
        id="fuse_ops_and_pick_layouts.decode_and_crop",
        title="224x224 crop of a 640x480 JPEG: decode then crop vs decode_and_crop_jpeg",
        make_variants=decode_crop_variants,
        baseline="decode then crop",
        variant="decode_and_crop_jpeg",
        quick={},
        full={},
        repeats=7,
    ),
    Comparison(
        id="fuse_ops_and_pick_layouts.xla_elementwise",
        title="20 multiply-adds on 1M floats: tf.function vs XLA (jit_compile=True)",
        make_variants=xla_variants,
        baseline="graph",
        variant="XLA",
        quick={"size": 100_000},
        full={"size": 1_000_000},
        repeats=7,
    ),
]
