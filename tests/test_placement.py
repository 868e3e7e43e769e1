"""Unit tests for helpers.placement: the log parser on captured text, fd capture, the
placement log (in fresh interpreters: its set-up is fixed per process), towers and checks."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers import placement

FIXTURES = Path(__file__).parent / "fixtures"


def rows(table):
    return [tuple(r) for r in table.itertuples(index=False)]


def test_parse_tf2_eager_folds_doubled_and_prefixed_lines():
    table = placement.parse_placement((FIXTURES / "placement_tf2_eager.txt").read_text())
    assert rows(table) == [("MatMul", "MatMul", "CPU:0"), ("_MklMatMul", "_MklMatMul", "CPU:0")]


def test_parse_keeps_plumbing_on_request():
    table = placement.parse_placement((FIXTURES / "placement_tf2_eager.txt").read_text(), plumbing=True)
    assert ("a", "_Arg", "CPU:0") in rows(table)
    assert ("product_RetVal", "_Retval", "CPU:0") in rows(table)


def test_parse_tf2_function_normalises_function_names():
    table = placement.parse_placement((FIXTURES / "placement_tf2_function.txt").read_text())
    assert rows(table) == [
        ("MatMul", "MatMul", "CPU:1"),
        ("add", "AddV2", "CPU:0"),
        ("Identity", "Identity", "CPU:0"),
        ("add/y", "Const", "CPU:0"),
        ("__inference_f", "__inference_f", "CPU:0"),
    ]


def test_parse_tf1_session_form_and_noise():
    table = placement.parse_placement((FIXTURES / "placement_tf1_session.txt").read_text())
    assert rows(table) == [
        ("y", "MatMul", "CPU:0"),
        ("x", "Const", "CPU:0"),
        ("gradients/MatMul_grad/MatMul_1", "MatMul", "GPU:0"),
    ]


def test_parse_nothing():
    assert list(placement.parse_placement("hello\nworld").columns) == ["op", "kernel", "device"]
    assert placement.parse_placement("").empty


def test_devices_used_sees_through_onednn_names():
    table = placement.parse_placement((FIXTURES / "placement_tf2_function.txt").read_text())
    assert placement.devices_used(table, "MatMul") == ["CPU:1"]
    eager = placement.parse_placement((FIXTURES / "placement_tf2_eager.txt").read_text())
    assert placement.devices_used(eager, "MatMul") == ["CPU:0"]


def test_short_and_full_device_names():
    assert placement.short_device("/job:localhost/replica:0/task:0/device:GPU:1") == "GPU:1"
    assert placement.short_device("") == ""
    assert placement.full_device("CPU:1") == "/device:CPU:1"
    assert placement.full_device("/device:CPU:1") == "/device:CPU:1"


def test_capture_fds_sees_c_level_writes_and_restores_after_exception():
    before = {fd: os.fstat(fd) for fd in (1, 2)}
    with pytest.raises(KeyError), placement.capture_fds() as captured:
        os.write(1, b"to fd one\n")
        os.write(2, b"to fd two\n")
        raise KeyError("inside")
    assert captured.stdout == "to fd one\n" and captured.stderr == "to fd two\n"
    after = {fd: os.fstat(fd) for fd in (1, 2)}
    assert all((before[fd].st_ino, before[fd].st_dev) == (after[fd].st_ino, after[fd].st_dev) for fd in (1, 2))


def test_capture_fds_bad_fds():
    with pytest.raises(ValueError, match="subset of"), placement.capture_fds((3,)):
        pass


def test_diverting_stream():
    out, sink = io.StringIO(), []
    stream = placement._DivertingStream(out, sink.append)
    stream.write("Executing op AddV2 in device /job:localhost/replica:0/task:0/device:CPU:0")
    stream.write("\n")
    stream.write("hello\n")
    stream.write("\n")
    stream.write("Device mapping: no known devices.\n")
    assert out.getvalue() == "hello\n\n"
    assert "".join(sink).count("\n") == 2
    assert stream.getvalue() == out.getvalue()  # everything else is delegated


def run_fresh(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=180,
    )


def test_placement_log_tables_in_a_fresh_process(tmp_path):
    out = tmp_path / "out.txt"
    result = run_fresh(f"""
        import tensorflow as tf
        from helpers import env, placement
        log = placement.start_logging()
        assert placement.start_logging() is log
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


def test_placement_log_refuses_after_tensorflow_started():
    result = run_fresh("""
        import tensorflow as tf
        from helpers import placement
        tf.constant(1.0) + 1
        try:
            placement.start_logging()
        except RuntimeError as exc:
            print("ERR", exc)
    """)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "ERR TensorFlow has already started without placement logging" in result.stdout
    assert "Restart the kernel" in result.stdout


def test_placement_log_not_started():
    log = placement.PlacementLog()
    with pytest.raises(RuntimeError, match="not started"):
        log.text()
    log.stop()  # harmless


def test_towers_equal_one_device_and_bad_sizes():
    import tensorflow as tf

    variants = placement.towers_vs_single(n_towers=4, size=64, devices=["CPU:0"])
    one, towers = variants["one device"](), variants["4 towers"]()
    rel = float(tf.reduce_max(tf.abs(one - towers)) / tf.reduce_max(tf.abs(one)))
    assert rel < 1e-5
    with pytest.raises(ValueError, match="split evenly"):
        placement.towers_vs_single(n_towers=3, size=64)
    with pytest.raises(ValueError, match="n_towers must be"):
        placement.towers_vs_single(n_towers=0)
    with pytest.raises(ValueError, match="devices is empty"):
        placement.towers_vs_single(devices=[])


def test_soft_placement_restores_even_after_error():
    import tensorflow as tf

    before = tf.config.get_soft_device_placement()
    with pytest.raises(tf.errors.InvalidArgumentError), placement.soft_placement(False):
        with tf.device("/GPU:7"):
            tf.matmul(tf.ones([2, 2]), tf.ones([2, 2]))
    assert tf.config.get_soft_device_placement() == before
    with pytest.raises(TypeError, match="True or False"), placement.soft_placement("no"):
        pass


def test_check_strict():
    import tensorflow as tf

    def good():
        with placement.soft_placement(False), tf.device("/GPU:7"):
            return tf.matmul(tf.ones([2, 2]), tf.ones([2, 2]))

    def lenient():
        with tf.device("/GPU:7"):
            return tf.matmul(tf.ones([2, 2]), tf.ones([2, 2]))

    def leaky():
        tf.config.set_soft_device_placement(False)
        with tf.device("/GPU:7"):
            return tf.matmul(tf.ones([2, 2]), tf.ones([2, 2]))

    assert placement.check_strict(good)
    assert "fell back" in repr(placement.check_strict(lenient))
    assert "left soft placement switched off" in repr(placement.check_strict(leaky))
    assert tf.config.get_soft_device_placement()


def test_check_pinned_and_result_device():
    import pandas as pd
    import tensorflow as tf

    table = pd.DataFrame([("MatMul", "MatMul", "CPU:1")], columns=["op", "kernel", "device"])
    assert placement.check_pinned(table)
    assert not placement.check_pinned(table.assign(device="CPU:0"))
    assert not placement.check_pinned(None)
    t = tf.ones([1])
    assert placement.check_result_device("CPU:0", t)
    assert not placement.check_result_device("GPU:0", t)
    assert not placement.check_result_device(None, t)


def test_check_towers():
    import pandas as pd
    import tensorflow as tf

    batch = tf.random.stateless_normal([8, 4], seed=(1, 1))
    want = tf.matmul(batch, batch, transpose_a=True)
    good = pd.DataFrame(
        [("MatMul", "MatMul", "CPU:0"), ("MatMul_1", "MatMul", "CPU:1"), ("AddN", "AddN", "CPU:0")],
        columns=["op", "kernel", "device"],
    )
    assert placement.check_towers(want, good, batch)
    assert "differs" in repr(placement.check_towers(want * 2, good, batch))
    assert "all ran on" in repr(placement.check_towers(want, good.iloc[[0, 2]], batch))
    moved_sum = good.copy()
    moved_sum.loc[2, "device"] = "CPU:1"
    assert "not on CPU:0" in repr(placement.check_towers(want, moved_sum, batch))
