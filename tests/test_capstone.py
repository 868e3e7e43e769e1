"""Unit tests for helpers.topics.capstone: the stages build on each other, runs come back as a table,
the fused model matches the Keras one, profiling a stage shows its gaps; bad input."""

from __future__ import annotations

import pytest

from helpers.topics import capstone


def test_each_stage_adds_one_technique():
    names = [s.name for s in capstone.STAGES]
    assert names[0].startswith("naive") and len(set(names)) == len(names)
    assert capstone.STAGES[0].options.source == "generator" and not capstone.STAGES[0].fused_batch_norm
    last = capstone.STAGES[-1]
    assert last.options.prefetch and last.options.cache == "after_decode" and last.fused_batch_norm and last.intra > 0


def test_fused_model_matches_keras_batch_norm_in_training():
    import keras
    import tensorflow as tf

    x = tf.random.stateless_normal([4, 56, 56, 3], seed=(1, 2))
    keras_model, fused_model = capstone.make_model(False), capstone.make_model(True, seed=1)
    for source, target in zip(keras_model.layers, fused_model.layers, strict=True):
        if isinstance(source, keras.layers.Conv2D | keras.layers.Dense):
            target.set_weights(source.get_weights())  # batch norms start at gamma 1, beta 0 in both
    a, b = keras_model(x, training=True), fused_model(x, training=True)
    assert float(tf.reduce_max(tf.abs(a - b))) < 1e-3


def test_run_stages_table(tmp_path):
    calls = []
    table = capstone.run_stages(tmp_path, n_images=128, epochs=1, stages=[0, 6], rounds=2,
                                on_progress=lambda d, t: calls.append((d, t)))
    assert list(table.index) == [capstone.STAGES[0].name, capstone.STAGES[6].name]
    assert (table["images/s"] > 0).all() and table["cumulative"].iloc[0] == 1.0
    assert calls == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert [t.count for t in table.attrs["timings"].values()] == [2, 2]  # one epoch per round, pooled
    assert capstone.capstone_summary(table).endswith("x)")
    assert len(capstone.capstone_figure(table, "t").axes) == 1


def test_trace_of_the_naive_stage_shows_gaps(tmp_path):
    from helpers.topics import pipelines, profiling

    shard_dir = tmp_path / "shards"
    pipelines.make_jpeg_shards(shard_dir, 128)
    steps = profiling.step_table(capstone.trace_stage(0, shard_dir, tmp_path / "trace", steps=3))
    assert len(steps) == 3 and (steps["gap after ms"].dropna() > 0).all()


def test_bad_input(tmp_path):
    with pytest.raises(ValueError, match="stages must be indices"):
        capstone.run_stages(tmp_path, stages=[99])
    with pytest.raises(ValueError, match="epochs"):
        capstone.run_stages(tmp_path, epochs=0)
    with pytest.raises(ValueError, match="rounds"):
        capstone.run_stages(tmp_path, rounds=0)
    with pytest.raises(ValueError, match="index must be"):
        capstone.trace_stage(-1, tmp_path, tmp_path)
    with pytest.raises(FileNotFoundError, match="no .tfrecord shards"):
        capstone.trace_stage(0, tmp_path / "empty", tmp_path)
