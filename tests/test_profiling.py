"""Unit tests for helpers.topics.profiling: the parser on a small recorded trace (six traced steps of a
matmul training step with NumPy work between them), a live recording found by ``trace_file``, and bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.topics import profiling

FIXTURE = Path(__file__).parent / "fixtures" / "profile" / "six_steps.xplane.pb"


@pytest.fixture(scope="module")
def recorded():
    return profiling.events(profiling.load(FIXTURE))


def test_op_table_from_the_recorded_trace(recorded):
    ops = profiling.op_table(recorded)
    assert ops.index[0] in ("_MklMatMul", "MatMul")  # the forward and backward matmuls lead
    assert ops.loc[ops.index[0], "count"] == 12  # two per step, six steps
    assert {"ReluGrad", "AssignSubVariableOp"} <= set(ops.index)
    assert abs(ops["share"].sum() - 1.0) < 0.01 and ops["total ms"].is_monotonic_decreasing


def test_step_table_shows_the_gaps(recorded):
    steps = profiling.step_table(recorded)
    assert list(steps.index) == [0, 1, 2, 3, 4, 5]
    gaps = steps["gap after ms"].dropna()
    assert len(gaps) == 5 and (gaps > 1.0).all()  # NumPy sorting between the steps, outside them
    assert (steps["duration_ms"] > 0).all()
    summary = profiling.step_summary(steps)
    assert summary.startswith("6 steps: median") and "inside steps" in summary
    line = profiling.steps_compared(steps, steps.assign(**{"gap after ms": steps["gap after ms"] / 4}))
    assert "(4x shorter)" in line and "takes 100% of the naive step's time" in line


def test_timeline_figure(recorded):
    fig = profiling.timeline_figure(recorded, "trace")
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels[-1] == "train steps" and labels[0].endswith("thread 1")


def test_live_recording_is_found_and_read(tmp_path):
    import numpy as np
    import tensorflow as tf

    x = tf.random.normal([16, 16])
    step = tf.function(lambda: x @ x)
    step()
    tf.profiler.experimental.start(str(tmp_path))
    for i in range(3):
        np.sort(np.random.default_rng(i).random(100_000))  # outside the span: a gap
        with tf.profiler.experimental.Trace(profiling.STEP_EVENT, step_num=i, _r=1):
            step().numpy()
    tf.profiler.experimental.stop()
    path = profiling.trace_file(tmp_path)
    assert path.suffixes[-2:] == [".xplane", ".pb"] and path.parent.parent.name == "profile"
    steps = profiling.step_table(profiling.events(profiling.load(path)))
    assert list(steps.index) == [0, 1, 2] and (steps["gap after ms"].dropna() > 0).all()


def test_bad_input(tmp_path):
    with pytest.raises(FileNotFoundError, match="no trace file"):
        profiling.load(tmp_path / "missing.xplane.pb")
    with pytest.raises(FileNotFoundError, match="no .xplane.pb trace under"):
        profiling.trace_file(tmp_path)
    junk = tmp_path / "junk.xplane.pb"
    junk.write_bytes(b"\xff\xfe not a protobuf")
    with pytest.raises(ValueError, match="not an XPlane trace|holds no planes"):
        profiling.load(junk)


def test_tensorboard_hint_names_the_command(tmp_path):
    assert f"tensorboard --logdir {tmp_path}" in profiling.tensorboard_hint(tmp_path)


def test_check_slowest_op(recorded):
    slowest = profiling.op_table(recorded).index[0]
    assert profiling.check_slowest_op(recorded, slowest)
    assert "another op type took more" in repr(profiling.check_slowest_op(recorded, "ReluGrad"))
    assert "not an op type" in repr(profiling.check_slowest_op(recorded, "..."))
