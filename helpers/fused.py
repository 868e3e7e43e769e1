"""Fused ops, data format and XLA (notebook 08; the notebook itself is still to come).

Each ``*_variants`` function returns same-result callables for ``timing.compare``; each
``*_difference`` function says how far apart their results are, so a speed claim always comes
with its correctness check.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from helpers.bench import Comparison

FORMATS = ("NHWC", "NCHW")
CHAINS = ("multiply_add", "transcendental")


def _check_shape(shape: Sequence[int]) -> tuple[int, int, int, int]:
    if len(shape) != 4 or any(isinstance(d, bool) or not isinstance(d, int) or d < 1 for d in shape):
        raise ValueError(f"shape must be four whole numbers >= 1 (N, H, W, C), got {shape!r}")
    return tuple(shape)  # type: ignore[return-value]


def batchnorm_variants(
    shape: Sequence[int] = (32, 56, 56, 64), data_format: str = "NHWC", backward: bool = True
) -> dict[str, Callable[[], Any]]:
    """Batch norm over an ``shape`` (NHWC) batch two ways: ``tf.compat.v1.nn.fused_batch_norm``
    (one fused kernel) and ``tf.nn.moments`` + ``tf.nn.batch_normalization`` (several ops), each a
    ``tf.function``; with ``backward`` each call also computes the gradients."""
    import tensorflow as tf

    n, h, w, c = _check_shape(shape)
    if data_format not in FORMATS:
        raise ValueError(f"data_format must be one of {FORMATS}, got {data_format!r}")
    x = tf.random.stateless_normal([n, h, w, c], seed=(1, 2))
    if data_format == "NCHW":
        x = tf.transpose(x, [0, 3, 1, 2])
    axes = [0, 1, 2] if data_format == "NHWC" else [0, 2, 3]
    scale, offset = tf.Variable(tf.ones([c])), tf.Variable(tf.zeros([c]))
    weights = tf.random.stateless_normal(x.shape, seed=(7, 8))  # a loss with real gradients

    def fused(t: Any) -> Any:
        return tf.compat.v1.nn.fused_batch_norm(t, scale, offset, epsilon=1e-3, data_format=data_format)[0]

    def unfused(t: Any) -> Any:
        mean, variance = tf.nn.moments(t, axes=axes, keepdims=True)
        shape_c = [1, c, 1, 1] if data_format == "NCHW" else [1, 1, 1, c]
        return tf.nn.batch_normalization(t, mean, variance, tf.reshape(offset, shape_c),
                                         tf.reshape(scale, shape_c), 1e-3)

    def wrap(norm: Callable[[Any], Any]) -> Callable[[], Any]:
        @tf.function
        def run() -> Any:
            if not backward:
                return norm(x)
            with tf.GradientTape() as tape:
                tape.watch(x)
                loss = tf.reduce_sum(norm(x) * weights)
            return tape.gradient(loss, [x, scale, offset])

        return run

    return {"unfused": wrap(unfused), "fused": wrap(fused)}


def batchnorm_difference(shape: Sequence[int] = (8, 28, 28, 16), data_format: str = "NHWC") -> float:
    """Largest absolute difference between the fused and unfused forward outputs."""
    import tensorflow as tf

    variants = batchnorm_variants(shape, data_format, backward=False)
    return float(tf.reduce_max(tf.abs(variants["fused"]() - variants["unfused"]())))


def xla_variants(chain: str = "multiply_add", n_ops: int = 20, size: int = 1_000_000) -> dict[str, Callable[[], Any]]:
    """An elementwise chain of ``n_ops`` steps as a plain ``tf.function`` and compiled by XLA
    (``jit_compile=True``, which fuses the chain into one kernel)."""
    import tensorflow as tf

    if chain not in CHAINS:
        raise ValueError(f"chain must be one of {CHAINS}, got {chain!r}")
    for name, value in (("n_ops", n_ops), ("size", size)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")
    x = tf.random.stateless_uniform([size], seed=(5, 6))

    def body(t: Any) -> Any:
        for i in range(n_ops):
            if chain == "multiply_add":
                t = t * 1.0001 + 0.0001
            else:
                t = tf.sin(t) + tf.cos(t * 0.5) if i % 2 == 0 else tf.tanh(t)
        return t

    graph, compiled = tf.function(body), tf.function(body, jit_compile=True)
    return {"graph": lambda: graph(x), "XLA": lambda: compiled(x)}


def decode_crop_variants(height: int = 480, width: int = 640, crop: int = 224) -> dict[str, Callable[[], Any]]:
    """A generated ``height`` x ``width`` JPEG, center-cropped to ``crop`` x ``crop`` two ways:
    decode the whole image then crop, or ``tf.io.decode_and_crop_jpeg`` (decodes only the window)."""
    import tensorflow as tf

    if not (0 < crop <= min(height, width)):
        raise ValueError(f"crop must be between 1 and {min(height, width)}, got {crop}")
    pixels = tf.cast(tf.random.stateless_uniform([height, width, 3], seed=(3, 4), maxval=256, dtype=tf.int32), tf.uint8)
    jpeg = tf.io.encode_jpeg(pixels)
    top, left = (height - crop) // 2, (width - crop) // 2

    @tf.function
    def then_crop() -> Any:
        return tf.image.crop_to_bounding_box(tf.io.decode_jpeg(jpeg, channels=3), top, left, crop, crop)

    @tf.function
    def fused() -> Any:
        return tf.io.decode_and_crop_jpeg(jpeg, [top, left, crop, crop], channels=3)

    return {"decode then crop": then_crop, "decode_and_crop_jpeg": fused}


def crop_difference(height: int = 480, width: int = 640, crop: int = 224) -> tuple[float, int]:
    """The fraction of pixel values that differ between the two crops, and the largest difference:
    the fused decoder may round differently at block edges."""
    import tensorflow as tf

    variants = decode_crop_variants(height, width, crop)
    a = tf.cast(variants["decode then crop"](), tf.int32)
    b = tf.cast(variants["decode_and_crop_jpeg"](), tf.int32)
    return float(tf.reduce_mean(tf.cast(a != b, tf.float32))), int(tf.reduce_max(tf.abs(a - b)))


BENCHMARKS = [
    Comparison(id="fused.batchnorm_fwd_bwd", title="batch norm forward + backward, [32,56,56,64] NHWC: unfused ops vs fused kernel",
               make_variants=batchnorm_variants, baseline="unfused", variant="fused",
               quick={"shape": (8, 28, 28, 32)}, full={"shape": (32, 56, 56, 64)}, repeats=7),
    Comparison(id="fused.decode_and_crop", title="224x224 crop of a 640x480 JPEG: decode then crop vs decode_and_crop_jpeg",
               make_variants=decode_crop_variants, baseline="decode then crop", variant="decode_and_crop_jpeg",
               quick={}, full={}, repeats=7),
    Comparison(id="fused.xla_elementwise", title="20 multiply-adds on 1M floats: tf.function vs XLA (jit_compile=True)",
               make_variants=xla_variants, baseline="graph", variant="XLA",
               quick={"size": 100_000}, full={"size": 1_000_000}, repeats=7),
]
