"""Unit tests for helpers.topics.profile_and_tune_a_job.capstone and notebook 14's lesson code: the
stages build on each
other, each stage's diff names what the stage program runs, the fused model matches Keras' batch
norm, runs in fresh processes come back as a table (a skipped stage included); bad input."""

from __future__ import annotations

import inspect

import pytest

from helpers.timing_stats import Timing
from helpers.topics.profile_and_tune_a_job import capstone, capstone_stages

NO_BF16 = "flags\t\t: fpu sse avx512f"


@pytest.fixture(scope="module")
def lesson():
    return capstone.lesson()


def test_each_stage_adds_one_change(lesson):
    assert [name for name, _ in lesson.STAGES][0] == "naive" and lesson.stage_settings(
        0
    ) == lesson.NAIVE
    for i in range(1, len(lesson.STAGES)):
        before, after = lesson.stage_settings(i - 1), lesson.stage_settings(i)
        assert {k for k in after if after[k] != before[k]} == set(lesson.STAGES[i][1]), (
            lesson.STAGES[i][0]
        )
    last = lesson.stage_settings(len(lesson.STAGES) - 1)
    assert (
        last["feed"] == "tf.data"
        and last["cache"] == "after_decode"
        and last["prefetch"]
        and last["fused_batch_norm"]
    )
    assert (
        last["policy"] == "mixed_bfloat16"
        and lesson.stage_settings(len(lesson.STAGES) - 1, skip=(6,))["policy"] == "float32"
    )


def test_diffs_name_what_the_stage_program_runs(lesson):
    import helpers.lessons.tune_input_pipeline as pipeline_lesson

    switches = set(inspect.signature(pipeline_lesson.make_pipeline).parameters) - {
        "paths",
        "source",
        "batch",
    }
    assert set(capstone_stages.PIPELINE_KEYS) == switches
    assert all(f'"{key}"' in lesson.CAPSTONE_CHILD for key in capstone_stages.PIPELINE_KEYS)
    for call in (
        "python_feed(paths, ",
        "make_pipeline(paths, batch=",
        ").repeat())",
        "make_train_step(make_model(",
        "train_step(*next(batches))",
        "train_steps(batches, tf.constant(",
    ):
        assert call in lesson.CAPSTONE_CHILD, call
    for i in range(1, len(lesson.STAGES)):
        diff = capstone.stage_diff(i)
        assert diff and diff[0].startswith("- ") and diff[-1].startswith("+ "), lesson.STAGES[i][0]
    assert [line[-22:] for line in capstone.stage_diff(7)] == [
        "e, batch=64).repeat())",
        ", batch=128).repeat())",
    ]
    assert "policy='mixed_bfloat16'" in capstone.stage_diff(6)[-1]
    assert (
        capstone.stage_diff(8, since=0)[0] == "- batches = python_feed(paths, 64)"
        and len(capstone.stage_diff(8, since=0)) == 6
    )
    assert capstone.stage_diff(9) == [
        "- # started with the oneDNN setting of the environment it inherits",
        "+ # started with TF_ENABLE_ONEDNN_OPTS=1",
    ]
    assert [lesson.stage_environment(lesson.stage_settings(i)) for i in (8, 9)] == [
        {},
        {"TF_ENABLE_ONEDNN_OPTS": "1"},
    ]


def test_skipped_without_bfloat16(monkeypatch):
    monkeypatch.delenv(
        "ONEDNN_MAX_CPU_ISA", raising=False
    )  # a cap in the caller's shell would change the verdict
    assert capstone.skipped(NO_BF16) == {6: capstone.env.bf16_kernels(NO_BF16)[1]}
    assert capstone.skipped("flags\t\t: fpu avx512_bf16", onednn=True) == {}
    off = capstone.skipped(
        "flags\t\t: fpu avx512_bf16", onednn=False
    )  # the instructions, but nothing uses them
    assert list(off) == [6] and "oneDNN is off" in off[6]


def test_fused_model_matches_keras_batch_norm_in_training(lesson):
    import keras
    import tensorflow as tf

    x = tf.random.stateless_normal([4, 56, 56, 3], seed=(1, 2))
    keras_model, fused_model = lesson.make_model(False), lesson.make_model(True, seed=1)
    for source, target in zip(keras_model.layers, fused_model.layers, strict=True):
        if isinstance(source, keras.layers.Conv2D | keras.layers.Dense):
            target.set_weights(source.get_weights())  # batch norms start at gamma 1, beta 0 in both
    a, b = keras_model(x, training=True), fused_model(x, training=True)
    assert float(tf.reduce_max(tf.abs(a - b))) < 1e-3
    mixed = lesson.make_model(True, "mixed_bfloat16")
    assert (
        mixed.layers[0].compute_dtype == "bfloat16" and mixed(x, training=True).dtype == tf.float32
    )
    assert keras.mixed_precision.global_policy().name == "float32"


@pytest.mark.parametrize("policy", ["float32", "mixed_bfloat16"])
def test_fused_batch_norm_keeps_keras_moving_statistics(lesson, policy):
    """The fused layer updates and uses moving statistics as Keras' layer does, in float32 also
    under mixed_bfloat16 (read through bfloat16, a moving average stalls far from its target)."""
    import keras
    import tensorflow as tf

    keras.mixed_precision.set_global_policy(policy)
    try:
        ours, theirs = lesson.FusedBatchNorm(), keras.layers.BatchNormalization()
    finally:
        keras.mixed_precision.set_global_policy("float32")
    x = tf.random.stateless_normal([16, 6, 6, 3], seed=(5, 6)) * 1.6 + 0.4
    step = tf.function(lambda x: (ours(x, training=True), theirs(x, training=True)))
    for _ in range(300):
        step(x)
    assert ours.moving_mean.dtype == "float32"
    assert float(tf.reduce_max(tf.abs(ours.moving_mean - theirs.moving_mean))) < 1e-4
    assert (
        float(tf.reduce_max(tf.abs(ours.moving_variance / theirs.moving_variance - 1))) < 0.01
    )  # Bessel: n/(n-1)
    inference = tf.cast(ours(x, training=False), tf.float32) - tf.cast(
        theirs(x, training=False), tf.float32
    )
    assert float(tf.reduce_max(tf.abs(inference))) < (0.05 if policy == "mixed_bfloat16" else 0.01)


def test_train_steps_runs_several_steps_per_call(lesson):
    import tensorflow as tf

    model = lesson.make_model(True)
    step = lesson.make_train_step(model)
    data = tf.data.Dataset.from_tensors((tf.zeros([2, 56, 56, 3]), tf.zeros([2], tf.int64))).repeat(
        3
    )
    iterator = iter(data)
    loss = lesson.make_train_steps(step)(iterator, tf.constant(3))
    assert loss.shape == () and next(iterator, None) is None  # the three batches were used


def test_stage_table_from_timings():
    names = capstone.names()
    timings = {
        0: Timing(names[0], (4.0, 4.0, 4.0), items=256),
        5: Timing(names[5], (2.0, 2.0, 2.0), items=256),
        7: Timing(names[7], (1.0, 1.0, 1.0), items=256),
    }
    table = capstone.stage_table(timings, [0, 5, 6, 7], {6: "no bfloat16 here"})
    assert list(table["images/s"].fillna(-1)) == [64, 128, -1, 256]
    assert (
        list(table["cumulative"].fillna(-1)) == [1.0, 2.0, -1, 4.0]
        and table.loc[names[7], "gain"] == 2.0
    )
    assert table.loc[names[6], "note"] == "skipped: no bfloat16 here"
    report = capstone.report(table)
    assert (
        f"{names[6]}: skipped: no bfloat16 here" in report
        and "+ batches = iter(make_pipeline(" in report
    )
    assert capstone.capstone_summary(table).startswith("naive -> + batch 128: 4.00x in all")
    assert len(capstone.capstone_figure(table, "t").axes) == 1
    once = {i: Timing(t.label, t.seconds[:1], items=256) for i, t in timings.items()}
    assert capstone.capstone_summary(capstone.stage_table(once, [0, 5, 7], {})) == (
        "naive -> + batch 128: 4.00x in all, from 1 run per stage: no spread to judge any step by; "
        "choose more rounds."
    )
    spread = capstone.stage_table(
        {
            0: Timing(names[0], (3.0, 4.0, 5.0), items=256),
            7: Timing(names[7], (1.0, 1.0, 1.0), items=256),
        },
        [0, 6, 7],
        {6: "no bfloat16 here"},
    )
    ax = capstone.capstone_figure(spread).axes[0]
    whiskers = [
        seg for coll in ax.collections for seg in coll.get_segments()
    ]  # the error bars' lines
    assert sorted(round(seg[1][0] - seg[0][0]) for seg in whiskers) == [
        0,
        0,
        16,
    ]  # q1-q3 images/s: 57-73 around 64
    assert [t.get_text() for t in ax.texts][1] == " skipped" and "(" in ax.texts[0].get_text()
    # Two steps of 2x: neither is named the winner alone; one inside the noise is no clear gain.
    assert (
        "the biggest single steps, their quartile ratios overlapping: "
        in capstone.capstone_summary(table)
    )
    noisy = {
        0: Timing(names[0], (3.0, 4.0, 5.0), items=256),
        5: Timing(names[5], (3.0, 3.9, 5.0), items=256),
    }
    assert "no single step gained clearly" in capstone.capstone_summary(
        capstone.stage_table(noisy, [0, 5], {})
    )
    # A step whose spread runs from below 1x to above the biggest gain is not named beside it.
    wide = {
        0: Timing(names[0], (4.0, 4.0, 4.0), items=256),
        5: Timing(names[5], (2.0, 2.0, 2.0), items=256),
        7: Timing(names[7], (0.3, 0.5, 1.9, 2.5, 2.6), items=256),
    }
    line = capstone.capstone_summary(capstone.stage_table(wide, [0, 5, 7], {}))
    assert (
        f"the biggest single step: {names[5]} (2.00x" in line and names[7] not in line.split(";")[1]
    )
    # Ranges that touch only once rounded to 2 decimals (1.4930 and 1.4904 both print 1.49) do
    # not overlap: the tie is read from the unrounded gains (a saved run named such a pair tied)
    fused = 1 / 1.4930
    touching = {
        0: Timing(names[0], (1.0, 1.0, 1.0), items=256),
        5: Timing(names[5], (fused,) * 3, items=256),
        7: Timing(names[7], (fused / 1.4904,) * 3, items=256),
    }
    line = capstone.capstone_summary(capstone.stage_table(touching, [0, 5, 7], {}))
    assert f"the biggest single step: {names[5]} (1.49x" in line, line
    assert names[7] not in line.split(";")[1], line
    # A low end of 1.003 is a clear gain, and prints as one: not "1.00", which reads as touching 1x
    just = {
        0: Timing(names[0], (1.0,) * 3, items=256),
        5: Timing(names[5], (1 / 1.003,) * 3, items=256),
    }
    line = capstone.capstone_summary(capstone.stage_table(just, [0, 5], {}))
    assert f"the biggest single step: {names[5]} (1.00x, quartile ratios 1.003-1.003x)" in line, (
        line
    )
    clear = {
        0: Timing(names[0], (4.0, 4.0, 4.0), items=256),
        5: Timing(names[5], (2.0, 2.0, 2.0), items=256),
        7: Timing(names[7], (1.9, 1.9, 1.9), items=256),
    }
    assert f"the biggest single step: {names[5]} (2.00x" in capstone.capstone_summary(
        capstone.stage_table(clear, [0, 5, 7], {})
    )


def test_run_stages_in_fresh_processes(tmp_path, monkeypatch):
    monkeypatch.setattr(capstone, "skipped", lambda: {6: "reason"})
    calls = []
    # Two stages, one of them skipped: notebook 14 runs every stage (at test size the first three),
    # and its last stage (all the changes) in a cell of its own.
    table = capstone.run_stages(
        tmp_path,
        n_images=128,
        epochs=2,
        stages=[6, 8],
        rounds=2,
        on_progress=lambda d, t: calls.append((d, t)),
    )
    assert list(table.index) == [capstone.names()[i] for i in (6, 8)]
    assert table["images/s"].iloc[1] > 0 and table["cumulative"].iloc[1] == 1.0
    assert table["note"].iloc[0] == "skipped: reason"
    assert calls == [(1, 2), (2, 2)]
    # A run is one process at its median epoch: two rounds, two runs, each from two epochs.
    (timed,) = table.attrs["timings"].values()
    (epochs,) = table.attrs["epoch_seconds"].values()
    assert timed.count == 2 and [len(e) for e in epochs] == [2, 2]
    assert sorted(timed.seconds) == sorted((a + b) / 2 for a, b in epochs)
    assert capstone.spread(table).startswith("Spread within one process")


def test_spread_sets_epochs_beside_runs():
    line = capstone.spread_line(
        {"a": [[1.0, 1.1, 1.0], [2.0, 2.0, 2.2]], "b": [[1.0, 1.0, 1.05], [1.5, 1.5, 1.5]]}
    )
    # within: 1.1, 1.1, 1.05, 1.0 -> median 1.075; between, epoch by epoch: 2.0, 2.0/1.1, 2.2,
    # 1.5, 1.5, 1.5/1.05 -> median (1.5 + 1.818) / 2 = 1.66: single epochs on both sides
    assert line == (
        "Spread within one process (longest epoch over shortest, median of 4 runs): 1.08x; "
        "between a stage's processes (the same epoch of each run, longest over shortest, median "
        "of 6 epochs in 2 stages): 1.66x (each side over a different number of epochs, 3 in a "
        "run against 2 runs a stage: not set against each other, since the widest of more values "
        "tends to be wider)."
    )
    # Three epochs a run, three runs a stage: each side the widest of three values.
    same = capstone.spread_line({"a": [[1.0, 1.2, 1.1], [1.0, 1.2, 1.1], [1.0, 1.2, 1.1]]})
    assert same.endswith(
        "1.00x: here the processes differed no more than one process's epochs did."
    )
    # Two epochs a run against three runs: the widest of three tends to be wider; no verdict.
    uneven = capstone.spread_line({"a": [[1.0, 1.1], [1.3, 1.2], [1.0, 1.0]]})
    assert uneven.endswith(
        "(each side over a different number of epochs, 2 in a run against 3 runs a stage: not "
        "set against each other, since the widest of more values tends to be wider)."
    )
    # A run with a zero or NaN epoch is left out, not divided by.
    kept = capstone.spread_line({"a": [[1.0, 1.1, 1.0], [0.0, 1.0, 1.0], [2.0, 2.0, 2.2]]})
    assert "median of 2 runs" in kept and "6 epochs" not in kept
    assert capstone.spread_line({"a": [[1.0, float("nan")], [1.0, 1.0]]}).startswith("Too few")
    assert capstone.spread_line({"a": [[1.0]]}).startswith("Too few epochs or runs")


def test_bad_input(tmp_path):
    with pytest.raises(ValueError, match="stages must be indices"):
        capstone.run_stages(tmp_path, stages=[99])
    with pytest.raises(ValueError, match="epochs"):
        capstone.run_stages(tmp_path, epochs=0)
    with pytest.raises(ValueError, match="rounds"):
        capstone.run_stages(tmp_path, rounds=0)
    with pytest.raises(ValueError, match="multiple of 128"):
        capstone.run_stages(tmp_path, n_images=100)
    with pytest.raises(ValueError, match="index must be"):
        capstone.stage_diff(0)
    with pytest.raises(ValueError, match="index must be"):
        capstone.stage_diff(3, since=5)


def test_stage_verdicts_read_each_stage_against_the_one_before_it():
    names = capstone.names()
    seconds = {0: (1.0, 1.0, 1.0), 1: (0.5, 0.5, 0.5), 2: (0.5, 0.49, 0.51), 7: (0.25, 0.25, 0.25)}
    timings = {i: Timing(names[i], s, items=128) for i, s in seconds.items()}
    table = capstone.stage_table(timings, [0, 1, 2, 6, 7], skip={6: "no bfloat16 here"})
    expect = {
        names[1]: ("faster", "the reason"),
        names[2]: ("faster", "another"),
        names[7]: ("not slower", "x"),
    }
    lines = capstone.stage_verdicts(table, expect)
    assert (
        lines[0].startswith(f"{names[1]} is 2.00x faster than naive") and "as expected" in lines[0]
    )
    assert "no clear difference" in lines[1] and "not shown in this run" in lines[1]
    assert lines[2] == f"{names[6]}: skipped: no bfloat16 here"
    # stage 7 follows stage 2 with stages 3-5 not run between them: several changes, so no
    # expectation
    assert (
        lines[3].startswith(f"{names[7]} is 2.00x faster than {names[2]}")
        and "Expected" not in lines[3]
    )
    assert len(lines) == 4


def test_steps_tied_with_the_biggest_are_named_largest_first():
    names = capstone.names()
    seconds = {
        0: 8.0,
        1: 8.0 / 1.9,
        2: 8.0 / 1.9 / 2.0,
        3: 8.0 / 1.9 / 2.0 / 2.1,
    }  # gains 1.9, 2.0, 2.1
    timings = {i: Timing(names[i], (s * 0.85, s, s * 1.15), items=256) for i, s in seconds.items()}
    summary = capstone.capstone_summary(capstone.stage_table(timings, [0, 1, 2, 3], {}))
    named = summary.split("their quartile ratios overlapping: ")[1]
    assert [named.index(names[i]) for i in (3, 2, 1)] == sorted(
        named.index(names[i]) for i in (3, 2, 1)
    )  # 2.1x, then 2.0x, then 1.9x: not in stage order
