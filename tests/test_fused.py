"""Unit tests for helpers.fused: the fused and unfused paths agree; bad input is refused."""

from __future__ import annotations

import pytest

from helpers import fused


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_batchnorm_paths_agree_forward(data_format):
    assert fused.batchnorm_difference((4, 8, 8, 6), data_format) < 1e-4


def test_batchnorm_paths_agree_on_gradients():
    import tensorflow as tf

    variants = fused.batchnorm_variants((4, 8, 8, 6), backward=True)
    a, b = variants["fused"](), variants["unfused"]()
    for ga, gb in zip(a, b, strict=True):
        scale = float(tf.reduce_max(tf.abs(gb))) + 1e-6
        assert float(tf.reduce_max(tf.abs(ga - gb))) / scale < 1e-3


@pytest.mark.parametrize("chain", fused.CHAINS)
def test_xla_gives_the_same_numbers(chain):
    import tensorflow as tf

    variants = fused.xla_variants(chain, n_ops=6, size=1000)
    assert float(tf.reduce_max(tf.abs(variants["XLA"]() - variants["graph"]()))) < 1e-4


def test_decode_and_crop_differs_only_slightly():
    fraction, largest = fused.crop_difference(240, 320, 112)
    assert 0.0 <= fraction < 0.05 and 0 <= largest <= 255  # a few values, at JPEG block edges
    shapes = {name: tuple(fn().shape) for name, fn in fused.decode_crop_variants(240, 320, 112).items()}
    assert set(shapes.values()) == {(112, 112, 3)}


def test_bad_input():
    with pytest.raises(ValueError, match="data_format"):
        fused.batchnorm_variants(data_format="NWHC")
    with pytest.raises(ValueError, match="shape must be four"):
        fused.batchnorm_variants(shape=(2, 3))
    with pytest.raises(ValueError, match="chain must be one of"):
        fused.xla_variants("matmul")
    with pytest.raises(ValueError, match="n_ops"):
        fused.xla_variants(n_ops=0)
    with pytest.raises(ValueError, match="crop must be between"):
        fused.decode_crop_variants(100, 100, 200)


def test_benchmarks_registered():
    from helpers import bench

    ids = bench.registry()
    for id_ in ("fused.batchnorm_fwd_bwd", "fused.decode_and_crop", "fused.xla_elementwise"):
        assert ids[id_].run(quick=True)["speedup"] > 0
