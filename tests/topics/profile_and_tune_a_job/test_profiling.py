"""Unit tests for helpers.topics.profile_and_tune_a_job.profiling: the parser on a small recorded
trace (six traced steps
of a matmul training step with NumPy work between them), a live recording found by
``trace_file``, and bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.topics.profile_and_tune_a_job import profiling

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "profile" / "six_steps.xplane.pb"


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
    line = profiling.steps_compared(
        steps, steps.assign(**{"gap after ms": steps["gap after ms"] / 4})
    )
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
    hint = profiling.tensorboard_hint(tmp_path)
    assert f"tensorboard --logdir {tmp_path}" in hint and f"xprof --logdir {tmp_path}" in hint


def test_check_slowest_op(recorded):
    slowest = profiling.op_table(recorded).index[0]
    assert profiling.check_slowest_op(recorded, slowest)
    assert "another op type took more" in repr(profiling.check_slowest_op(recorded, "ReluGrad"))
    assert "not an op type" in repr(profiling.check_slowest_op(recorded, "..."))


def _events(rows):
    import pandas as pd

    return pd.DataFrame(
        [
            {
                "plane": "/host:CPU",
                "thread": t,
                "name": n,
                "op_type": o,
                "start_ms": s,
                "duration_ms": d,
                "step_num": k,
            }
            for t, n, o, s, d, k in rows
        ]
    )


def test_gap_ops_sum_the_eager_ops_between_steps_only():
    table = _events(
        [
            ("python", "train", "", 0.0, 10.0, 0),
            ("python", "train", "", 20.0, 10.0, 1),
            ("python", "train", "", 40.0, 10.0, 2),
            ("python", "EagerLocalExecute: DecodeJpeg", "", 12.0, 3.0, None),  # first gap
            ("python", "EagerLocalExecute: DecodeJpeg", "", 32.0, 1.0, None),  # second gap
            ("python", "EagerLocalExecute: ParseExampleV2", "", 35.0, 2.0, None),
            (
                "python",
                "EagerLocalExecute: __inference_step",
                "",
                1.0,
                8.0,
                None,
            ),  # inside a step: not a gap
            ("worker", "EagerLocalExecute: DecodeJpeg", "", 15.0, 4.0, None),  # another thread
        ]
    )
    gaps = profiling.gap_ops(table)
    assert list(gaps.index) == ["DecodeJpeg", "ParseExampleV2"] and list(gaps["calls"]) == [2, 1]
    assert list(gaps["total ms"]) == [4.0, 2.0] and gaps.attrs["gap_ms"] == 20.0
    assert list(gaps["share of gaps"]) == [0.2, 0.1]
    line = profiling.gap_summary(gaps)
    assert line.startswith(
        "the 2 gaps between recorded steps: 20.0 ms in all; eager ops ran for 6.0 ms of it (30%)"
    )
    assert profiling.gap_summary(profiling.gap_ops(table, top=1)).startswith(
        line[:80]
    )  # every op counted, not only the rows shown
    assert "DecodeJpeg the most (4.0 ms in 2 calls)" in line


def test_python_summary_and_keras_step_spans():
    plain = _events([("python", "EagerExecute", "", 0.0, 1.0, None)])
    assert (
        profiling.python_summary(plain)
        == "0 Python function events (names starting with $) in the trace"
    )
    traced = _events(
        [
            ("python", "$feed.py:10 python_batches", "", 0.0, 5.0, None),
            ("python", "$feed.py:20 decode", "", 1.0, 2.0, None),
            ("python", "$feed.py:20 decode", "", 4.0, 2.0, None),
        ]
    )
    assert (
        profiling.python_summary(traced)
        == "3 Python function events; the longest in total: $feed.py:10 python_batches (5.0 ms)"
    )
    fit = _events(
        [
            ("python", "Profiled batch", "", 0.0, 9.0, 3),
            ("python", "Profiled batch", "", 10.0, 9.0, 4),
        ]
    )
    assert list(profiling.step_table(fit, event="Profiled batch").index) == [3, 4]
    with pytest.raises(ValueError, match="no 'train' step events"):
        profiling.step_table(fit)
