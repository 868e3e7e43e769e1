"""Fused ops, data format and XLA (notebook 08): the variants the widgets and the bench time,
built from the notebook's exported lesson code (``helpers.lessons.fuse_ops_and_pick_layouts``).

Each ``*_variants`` function returns same-result callables for ``timing.compare``; each
``*_difference`` function says how far apart their results are, so a speed claim always comes
with its correctness check. The batch-norm variants, their grid and its readings are in
``helpers.topics.fuse_ops_and_pick_layouts.fused_batchnorm``, the exercise checks in
``fused_check`` (both re-exported here).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from helpers import checks
from helpers.checks import whole_number
from helpers.comparison import Comparison

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
from helpers.topics.fuse_ops_and_pick_layouts.fused_check import (
    check_fused_batchnorm as check_fused_batchnorm,
)
from helpers.topics.fuse_ops_and_pick_layouts.fused_check import (
    check_window_decode as check_window_decode,
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
