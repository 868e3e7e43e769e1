"""Unit tests for helpers.topics.fuse_ops_and_pick_layouts.fused: the fused and unfused paths
agree; bad input is refused."""

from __future__ import annotations

import pytest

from helpers.topics.fuse_ops_and_pick_layouts import fused, fused_batchnorm


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_batchnorm_paths_agree_forward(data_format):
    assert fused_batchnorm.batchnorm_difference((4, 8, 8, 6), data_format) < 1e-4


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
    shapes = {
        name: tuple(fn().shape) for name, fn in fused.decode_crop_variants(240, 320, 112).items()
    }
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
    for id_ in (
        "fuse_ops_and_pick_layouts.batchnorm_fwd_bwd",
        "fuse_ops_and_pick_layouts.decode_and_crop",
        "fuse_ops_and_pick_layouts.xla_elementwise",
    ):
        assert ids[id_].run(quick=True)["speedup"] > 0


def test_keras_batchnorm_runs_unfused_ops():
    """What notebook 08's section 2 shows: the layer's training call has no fused kernel."""
    import keras
    import tensorflow as tf

    layer = keras.layers.BatchNormalization()
    layer.build((None, 4, 4, 3))
    graph = (
        tf.function(lambda t: layer(t, training=True))
        .get_concrete_function(tf.TensorSpec([2, 4, 4, 3]))
        .graph
    )
    ops = {op.type for op in graph.get_operations()}
    assert {"Mean", "SquaredDifference", "Rsqrt"} <= set(ops)
    assert not any(op.startswith("FusedBatchNorm") for op in ops)


def test_keras_batchnorm_variants_agree():
    import tensorflow as tf

    variants = fused.keras_batchnorm_variants((4, 8, 8, 6), backward=False)
    reference = variants["Keras layer"]()
    for name in ("Keras layer + XLA", "fused_batch_norm"):
        assert float(tf.reduce_max(tf.abs(variants[name]() - reference))) < 1e-3, name
    grads = fused.keras_batchnorm_variants((4, 8, 8, 6), backward=True)
    a, b = grads["Keras layer"](), grads["fused_batch_norm"]()
    for ga, gb in zip(a, b, strict=True):
        assert (
            float(tf.reduce_max(tf.abs(ga - gb))) / (float(tf.reduce_max(tf.abs(gb))) + 1e-6) < 1e-3
        )


def test_data_format_table_shows_the_nchw_error_without_onednn():
    table = fused.data_format_table(small=True, repeats=2)
    rows = {(r.setting, r.workload): r for r in table.itertuples()}
    assert len(rows) == 4
    assert (
        rows[("oneDNN on", "conv2d_NCHW")].error == ""
        and rows[("oneDNN on", "conv2d_NCHW")].median_ms > 0
    )
    assert (
        "only supports the NHWC tensor format on the CPU"
        in rows[("oneDNN off", "conv2d_NCHW")].error
    )
    assert rows[("oneDNN off", "conv2d_NHWC")].onednn is False


def test_data_format_summary_reads_the_table_both_ways():
    """Per layout, oneDNN off against on; per setting, NCHW against NHWC with the CPU's
    expectation; the NCHW row that failed without oneDNN is named, not compared."""
    import pandas as pd

    def row(setting, workload, median, error=""):
        spread = (median * 0.98, median * 1.02) if median else (float("nan"),) * 2
        return {
            "setting": setting,
            "workload": workload,
            "median_ms": median or float("nan"),
            "q1_ms": spread[0],
            "q3_ms": spread[1],
            "repeats": 7,
            "error": error,
        }

    table = pd.DataFrame(
        [
            row("oneDNN on", "conv2d_NHWC", 8.0),
            row("oneDNN on", "conv2d_NCHW", 10.0),
            row("oneDNN off", "conv2d_NHWC", 13.0),
            row("oneDNN off", "conv2d_NCHW", None, "Unimplemented"),
        ]
    )
    lines = fused.data_format_summary(table).splitlines()
    assert lines[0].startswith("conv2d_NHWC: oneDNN off is 1.62x slower than oneDNN on")
    assert "conv2d_NCHW: 1 setting(s) failed" in lines
    layout = [line for line in lines if line.startswith("oneDNN on: conv2d_NCHW")]
    assert (
        layout
        and "1.25x slower than conv2d_NHWC" in layout[0]
        and layout[0].endswith("as expected.")
    )
    assert "oneDNN off: conv2d_NHWC 13.0 ms (the only layout that ran)" in lines
    assert "oneDNN off: 1 layout(s) failed" in lines


def test_exercise_checks():
    import tensorflow as tf

    def good(x):
        c = x.shape[-1]
        return tf.compat.v1.nn.fused_batch_norm(x, tf.ones([c]), tf.zeros([c]), epsilon=1e-3)[0]

    def unfused(x):
        mean, variance = tf.nn.moments(x, axes=[0, 1, 2])
        return tf.nn.batch_normalization(x, mean, variance, None, None, 1e-3)

    assert fused.check_fused_batchnorm(good)
    assert "no FusedBatchNorm op" in repr(fused.check_fused_batchnorm(unfused))
    assert "raised" in repr(fused.check_fused_batchnorm(lambda x: x[99]))
    assert "pass your function" in repr(fused.check_fused_batchnorm(None))
    assert fused.check_window_decode(
        lambda j, t, left, h, w: tf.io.decode_and_crop_jpeg(j, [t, left, h, w], channels=3)
    )
    slow = fused.check_window_decode(
        lambda j, t, left, h, w: tf.image.crop_to_bounding_box(
            tf.io.decode_jpeg(j, channels=3), t, left, h, w
        )
    )
    assert "no DecodeAndCropJpeg op" in repr(slow)
    wrong = fused.check_window_decode(
        lambda j, t, left, h, w: tf.io.decode_and_crop_jpeg(j, [0, 0, h, w], channels=3)
    )
    assert "is the box right" in repr(wrong)


def test_batchnorm_grid_has_every_case():
    calls = []
    grid = fused.batchnorm_grid((2, 4, 4, 3), repeats=1, on_progress=lambda d, t: calls.append(d))
    assert list(grid.index) == [
        ("NHWC", "forward"),
        ("NHWC", "forward + backward"),
        ("NCHW", "forward"),
        ("NCHW", "forward + backward"),
    ]
    assert (grid["fused ms"] > 0).all() and grid["speed-up"].str.match(r"^\d+\.\d\dx \[").all()
    assert calls == [1, 2, 3, 4]
    lines = fused.grid_summary(grid).splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "NHWC forward",
        "NHWC forward + backward",
        "NCHW forward",
        "NCHW forward + backward",
        "forward, NCHW against NHWC",
        "forward + backward, NCHW against NHWC",
    ]
    assert all("Expected here" in line for line in lines[:2]) and not any(
        "Expected" in line for line in lines[2:]
    )


def test_grid_layout_lines_say_which_column_moved():
    import pandas as pd

    from helpers.topics.fuse_ops_and_pick_layouts import fused_batchnorm

    def grid(nchw_fused, nchw_unfused):
        rows = [("NHWC", "forward", 6.41, 12.48), ("NCHW", "forward", nchw_fused, nchw_unfused)]
        frame = pd.DataFrame(rows, columns=["format", "pass", "fused ms", "unfused ms"])
        return frame.set_index(["format", "pass"])

    (line,) = fused_batchnorm._layout_lines(grid(12.25, 11.86))  # notebook 08's saved grid
    assert line == (
        "forward, NCHW against NHWC: the fused kernel took 1.91x the time, the separate ops 0.95x "
        "(the fused kernel's time moved more; medians of separate comparisons)."
    )
    (line,) = fused_batchnorm._layout_lines(grid(6.6, 24.0))
    assert "1.03x the time, the separate ops 1.92x (the separate ops' time moved more" in line
    (line,) = fused_batchnorm._layout_lines(grid(12.82, 24.96))  # 2.00x and 2.00x
    assert "(neither moved clearly more: their factors are within 5% of each other;" in line
    (line,) = fused_batchnorm._layout_lines(grid(5.13, 15.6))  # 0.80x and 1.25x: as far apart
    assert "neither moved clearly more" in line
    assert fused_batchnorm._layout_lines(grid(float("nan"), 11.86)) == []  # did not run
    assert fused_batchnorm._layout_lines(grid(1.0, 1.0).drop(("NCHW", "forward"))) == []


def test_remapper_variants_run_the_fused_and_the_separate_graph():
    import tensorflow as tf

    from helpers.lessons import fuse_ops_and_pick_layouts as lesson
    from helpers.topics.look_inside_graphs import graphs

    before = tf.config.optimizer.get_experimental_options()
    variants = lesson.remapper_variants(batch=1, side=8, channels=4)
    # Each variant's first call is where Grappler optimises it, under that variant's own options.
    assert graphs.optimized_op_types(variants["remapper off"]) == ["BiasAdd", "Conv2D", "Relu"]
    assert "_FusedConv2D" in graphs.optimized_op_types(variants["remapper on"])
    off, on = variants["remapper off"](), variants["remapper on"]()
    assert float(tf.reduce_max(tf.abs(off - on))) < 1e-4
    assert tf.config.optimizer.get_experimental_options().get("remapping", True) is before.get(
        "remapping", True
    )


def test_grappler_options_puts_each_option_back_to_its_default():
    """An option never set goes back to unset (TensorFlow's default) after the block, on or off:
    the remapper (on by default) and auto_mixed_precision (off, which True would leave on)."""
    import tensorflow as tf

    from helpers.lessons.fuse_ops_and_pick_layouts import grappler_options

    before = tf.config.optimizer.get_experimental_options()
    try:
        tf.config.optimizer.set_experimental_options(
            {"remapping": None, "auto_mixed_precision": None}
        )
        with grappler_options(remapping=False, auto_mixed_precision=True):
            inside = tf.config.optimizer.get_experimental_options()
        after = tf.config.optimizer.get_experimental_options()
        assert inside["remapping"] is False and inside["auto_mixed_precision"] is True
        assert "remapping" not in after and "auto_mixed_precision" not in after
        with grappler_options(remapping=False):
            with grappler_options(remapping=True):
                pass
            assert tf.config.optimizer.get_experimental_options()["remapping"] is False
    finally:
        tf.config.optimizer.set_experimental_options(
            {
                "remapping": before.get("remapping"),
                "auto_mixed_precision": before.get("auto_mixed_precision"),
            }
        )
