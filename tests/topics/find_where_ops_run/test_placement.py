"""Unit tests for helpers.fdlog (the log parser on captured text, fd capture, the placement log,
in fresh interpreters since its set-up is fixed per process) and
helpers.topics.find_where_ops_run.placement
(device names and the exercises' checks)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers import fdlog
from helpers.topics.find_where_ops_run import placement

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def rows(table):
    return [tuple(r) for r in table.itertuples(index=False)]


def test_parse_tf2_eager_folds_doubled_and_prefixed_lines():
    table = fdlog.parse_placement((FIXTURES / "placement_tf2_eager.txt").read_text())
    assert rows(table) == [("MatMul", "MatMul", "CPU:0"), ("_MklMatMul", "_MklMatMul", "CPU:0")]


def test_parse_keeps_plumbing_on_request():
    table = fdlog.parse_placement((FIXTURES / "placement_tf2_eager.txt").read_text(), plumbing=True)
    assert ("a", "_Arg", "CPU:0") in rows(table)
    assert ("product_RetVal", "_Retval", "CPU:0") in rows(table)


def test_parse_tf2_function_normalises_function_names():
    table = fdlog.parse_placement((FIXTURES / "placement_tf2_function.txt").read_text())
    assert rows(table) == [
        ("MatMul", "MatMul", "CPU:1"),
        ("add", "AddV2", "CPU:0"),
        ("Identity", "Identity", "CPU:0"),
        ("add/y", "Const", "CPU:0"),
        ("__inference_f", "__inference_f", "CPU:0"),
    ]


def test_parse_tf1_session_form_and_noise():
    table = fdlog.parse_placement((FIXTURES / "placement_tf1_session.txt").read_text())
    assert rows(table) == [
        ("y", "MatMul", "CPU:0"),
        ("x", "Const", "CPU:0"),
        ("gradients/MatMul_grad/MatMul_1", "MatMul", "GPU:0"),
    ]


def test_fold_onednn_gives_the_same_table_with_onednn_on_and_off():
    on = fdlog.parse_placement((FIXTURES / "placement_tf2_eager.txt").read_text())
    off = fdlog.parse_placement(
        "MatMul: (MatMul): /job:localhost/replica:0/task:0/device:CPU:0\n"
        "Executing op MatMul in device /job:localhost/replica:0/task:0/device:CPU:0\n"
    )
    assert rows(on) != rows(off)
    assert (
        rows(fdlog.fold_onednn(on))
        == rows(fdlog.fold_onednn(off))
        == [("MatMul", "MatMul", "CPU:0")]
    )
    native = fdlog.parse_placement(
        "Executing op _MklNativeConv2D in device /job:localhost/replica:0/task:0/device:CPU:0"
    )
    assert rows(fdlog.fold_onednn(native)) == [("Conv2D", "Conv2D", "CPU:0")]
    assert rows(on) == [
        ("MatMul", "MatMul", "CPU:0"),
        ("_MklMatMul", "_MklMatMul", "CPU:0"),
    ]  # its input unchanged


def test_parse_nothing():
    assert list(fdlog.parse_placement("hello\nworld").columns) == ["op", "type", "device"]
    assert fdlog.parse_placement("").empty


def test_devices_used_sees_through_onednn_names():
    table = fdlog.parse_placement((FIXTURES / "placement_tf2_function.txt").read_text())
    assert placement.devices_used(table, "MatMul") == ["CPU:1"]
    eager = fdlog.parse_placement((FIXTURES / "placement_tf2_eager.txt").read_text())
    assert placement.devices_used(eager, "MatMul") == ["CPU:0"]


def test_short_and_full_device_names():
    assert placement.short_device("/job:localhost/replica:0/task:0/device:GPU:1") == "GPU:1"
    assert placement.short_device("") == ""
    assert placement.full_device("CPU:1") == "/device:CPU:1"
    assert placement.full_device("/device:CPU:1") == "/device:CPU:1"


def test_capture_fds_sees_c_level_writes_and_restores_after_exception():
    before = {fd: os.fstat(fd) for fd in (1, 2)}
    with pytest.raises(KeyError), fdlog.capture_fds() as captured:
        os.write(1, b"to fd one\n")
        os.write(2, b"to fd two\n")
        raise KeyError("inside")
    assert captured.stdout == "to fd one\n" and captured.stderr == "to fd two\n"
    after = {fd: os.fstat(fd) for fd in (1, 2)}
    assert all(
        (before[fd].st_ino, before[fd].st_dev) == (after[fd].st_ino, after[fd].st_dev)
        for fd in (1, 2)
    )


def test_capture_fds_bad_fds():
    with pytest.raises(ValueError, match="subset of"), fdlog.capture_fds((3,)):
        pass


def test_diverting_stream():
    out, sink = io.StringIO(), []
    stream = fdlog._DivertingStream(out, sink.append)
    stream.write("Executing op AddV2 in device /job:localhost/replica:0/task:0/device:CPU:0")
    stream.write("\n")
    stream.write("hello\n")
    stream.write("\n")
    stream.write("Device mapping: no known devices.\n")
    assert out.getvalue() == "hello\n\n"
    assert "".join(sink).count("\n") == 2
    assert stream.getvalue() == out.getvalue()  # everything else is delegated


def run_fresh(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=180,
        env=None if env is None else {**os.environ, **env},
    )


def test_placement_log_tables_in_a_fresh_process(tmp_path):
    out = tmp_path / "out.txt"
    result = run_fresh(f"""
        import tensorflow as tf
        from helpers import env, fdlog
        from helpers.topics.find_where_ops_run import placement
        tf.debugging.set_log_device_placement(True)
        log = fdlog.start_logging()
        assert fdlog.start_logging() is log
        env.setup_logical_devices(2)
        a = tf.ones([2, 2])
        @tf.function
        def f(x):
            with tf.device("/CPU:1"):
                return tf.matmul(x, x)
        _, table = log.run(lambda: f(a))
        _, again = log.run(lambda: f(a))
        g = tf.Graph()
        with g.as_default():
            y = tf.matmul(tf.ones([1, 2], name="x"), tf.ones([2, 1]), name="y")
            sess = tf.compat.v1.Session(config=tf.compat.v1.ConfigProto(log_device_placement=True))
        _, tf1 = log.run(lambda: sess.run(y))
        log.stop()
        with open({str(out)!r}, "w") as fh:
            fh.write(repr(placement.devices_used(table, "MatMul")) + "\\n")
            fh.write(repr(placement.devices_used(again, "MatMul")) + "\\n")
            fh.write(repr(placement.devices_used(tf1, "MatMul")) + "\\n")
        print("stdout works again")
    """)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().endswith("stdout works again")
    lines = out.read_text().splitlines()
    # The second call places nothing again; the TF1 session places its own graph.
    assert lines == ["['CPU:1']", "[]", "['CPU:0']"]


def test_placement_log_refuses_until_logging_is_on():
    result = run_fresh(
        """
        import tensorflow as tf
        from helpers import fdlog
        try:
            fdlog.start_logging()
        except RuntimeError as exc:
            print("ERR1", exc)
        tf.constant(1.0) + 1
        try:
            fdlog.start_logging()
        except RuntimeError as exc:
            print("ERR2", exc)
        import sys
        print("LATE", file=sys.stderr, flush=True)
        tf.debugging.set_log_device_placement(True)  # too late: the runtime has started
        tf.matmul(tf.ones([2, 3]), tf.ones([3, 2]))  # a new op: logged if the switch worked
        print("TF1", file=sys.stderr, flush=True)
        g = tf.Graph()
        with g.as_default():  # a TF1 session reads its own ConfigProto: this one logs
            y = tf.matmul(tf.ones([1, 2]), tf.ones([2, 1]), name="late_y")
        config = tf.compat.v1.ConfigProto(log_device_placement=True)
        tf.compat.v1.Session(graph=g, config=config).run(y)
    """,
        env={"TF_CPP_MIN_LOG_LEVEL": "0"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    # What notebooks 00, 02 and 04 say: the TF2 switch, turned on after the runtime started, logs
    # nothing, while placement lines do reach this stream (the TF1 session's, at the same level).
    late = result.stderr.split("LATE", 1)[1].split("TF1", 1)
    assert "device:CPU:0" not in late[0], late[0][-2000:]
    assert "late_y" in late[1] and "device:CPU:0" in late[1], late[1][-2000:]
    first, second = [line for line in result.stdout.splitlines() if line.startswith("ERR")]
    assert "call tf.debugging.set_log_device_placement(True) before any other" in first
    assert "restart the kernel" not in first
    assert "TensorFlow has already started without it" in second
    assert "restart the kernel" in second


def test_placement_log_not_started():
    log = fdlog.PlacementLog()
    with pytest.raises(RuntimeError, match="not started"):
        log.text()
    log.stop()  # harmless


def test_check_pinned_and_result_device():
    import pandas as pd
    import tensorflow as tf

    table = pd.DataFrame(
        [
            ("MatMul", "MatMul", "CPU:1"),
            ("__inference_my_pinned", "__inference_my_pinned", "CPU:0"),
        ],
        columns=["op", "type", "device"],
    )
    assert placement.check_pinned(table)
    assert "ran eagerly" in repr(placement.check_pinned(table.iloc[[0]]))
    assert not placement.check_pinned(table.assign(device="CPU:0"))
    assert not placement.check_pinned(None)
    t = tf.ones([1])
    assert placement.check_result_device("CPU:0", t)
    assert not placement.check_result_device("GPU:0", t)
    assert not placement.check_result_device(None, t)


def test_devices_summary_reads_each_run_and_what_was_refused():
    import pandas as pd

    chosen = pd.DataFrame(
        [
            {
                "CUDA_VISIBLE_DEVICES": "(not set)",
                "memory growth on the CPU": "ValueError: no",
                "memory_limit on the CPU": "accepted",
                "physical GPUs": 0,
                "visible GPUs": 0,
                "logical devices": "CPU:0, CPU:1",
                "a change after the first op": "RuntimeError: late",
            },
            {
                "CUDA_VISIBLE_DEVICES": "",
                "memory growth on the CPU": "ValueError: no",
                "memory_limit on the CPU": "accepted",
                "physical GPUs": 2,
                "visible GPUs": 1,
                "logical devices": "CPU:0, CPU:1, GPU:0",
                "a change after the first op": "RuntimeError: late",
            },
        ]
    ).set_index("CUDA_VISIBLE_DEVICES")
    text = placement.devices_summary(chosen)
    assert "CUDA_VISIBLE_DEVICES '(not set)': 0 GPU(s) found, 0 visible" in text
    assert (
        "CUDA_VISIBLE_DEVICES '': 2 GPU(s) found, 1 visible, logical devices CPU:0, CPU:1, GPU:0"
        in text
    )
    assert (
        "Refused in the first run: memory growth on the CPU, a change after the first op; "
        "accepted: memory_limit on the CPU." in text
    )
    with pytest.raises(ValueError):
        placement.devices_summary(pd.DataFrame())
