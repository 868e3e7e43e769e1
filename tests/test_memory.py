"""Unit tests for helpers.topics.memory: the guard, the estimates, the measured pitfalls, the checks.
Sizes stay at 1 MiB so the suite stays light."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from helpers.topics import memory


def test_guard_refuses_with_the_numbers():
    memory.guard(100 * memory.MIB, "small", available=1024 * memory.MIB)
    with pytest.raises(memory.MemoryGuardError, match=r"about 600 MiB .* 50% of the 1,024 MiB available"):
        memory.guard(600 * memory.MIB, "A demo", available=1024 * memory.MIB)


def test_every_demo_is_guarded(monkeypatch):
    monkeypatch.setattr(memory, "available_bytes", lambda: 8 * memory.MIB)
    array = memory.make_array(1)
    for call in (
        lambda: memory.tf1_graph(array, 10),
        lambda: memory.tf2_table(array),
        lambda: memory.dataset_table(array),
        lambda: memory.embedding_experiment(mib=1, n_ops=20),
    ):
        with pytest.raises(memory.MemoryGuardError):
            call()


def test_estimates_and_bad_input():
    assert memory.estimate_peak("tf1_graph", 1000, 10) == 40_000
    assert memory.estimate_peak("function", 1000) == 16_000
    with pytest.raises(ValueError, match="unknown kind"):
        memory.estimate_peak("gpu", 1)
    for bad in (0, -1, float("nan"), True, "4"):
        with pytest.raises(ValueError, match="positive size"):
            memory.make_array(bad)


def test_make_array_is_seeded_float32():
    a, b = memory.make_array(1), memory.make_array(1)
    assert a.dtype == np.float32 and a.nbytes == memory.MIB
    np.testing.assert_array_equal(a, b)


def test_tf1_graph_counts_copies():
    array = memory.make_array(0.25)
    none = memory.graph_stats(memory.tf1_graph(array, 4, "none"))
    once = memory.graph_stats(memory.tf1_graph(array, 4, "convert_once"))
    feed = memory.graph_stats(memory.tf1_graph(array, 4, "placeholder"))
    assert none["graph_bytes"] > 4 * array.nbytes > once["graph_bytes"] > array.nbytes > feed["graph_bytes"]
    assert none["nodes"] == 1 + 2 * 4 and once["nodes"] == feed["nodes"] == 2 + 4
    with pytest.raises(ValueError, match="fix must be one of"):
        memory.tf1_graph(array, 4, "cache")
    with pytest.raises(ValueError, match="n_ops"):
        memory.tf1_graph(array, 0)


def test_function_graph_bytes():
    sizes = memory.function_graph_bytes(memory.make_array(1))
    assert sizes["embedded constant"] > memory.MIB
    assert sizes["tensor argument"] < 4096 and sizes["captured tensor"] < 4096


def test_dataset_forms_compute_the_same_sum():
    array = memory.make_array(0.1)
    inside = memory.dataset_in_function(array)()
    eager = memory.dataset_built_eagerly(array)()
    assert float(inside) == pytest.approx(float(eager), rel=1e-5)
    assert float(eager) == pytest.approx(float(array.sum(dtype=np.float64)), rel=1e-4)


def test_trace_counts():
    counts = memory.trace_counts()["traces"].to_dict()
    assert counts == {
        "Python ints 0..9": 10,
        "tensors 0..9": 1,
        "shapes [1]..[5]": 5,
        "shapes [1]..[5], reduce_retracing=True": 2,
        "shapes [1]..[5], input_signature [None]": 1,
    }


def test_captured_warnings_collects_the_retracing_warning():
    import tensorflow as tf

    with memory.captured_tf_warnings() as caught:
        f = tf.function(lambda v: v + 1)
        for i in range(6):
            f(i)
    assert any("triggered tf.function retracing" in m for m in caught.messages)
    assert not tf.get_logger().handlers or all(h.__class__.__name__ != "_Collect" for h in tf.get_logger().handlers)


def test_peak_rss_sees_an_allocation():
    with memory.PeakRSS() as peak:
        block = np.ones(64 * memory.MIB // 8)
        block.sum()
    del block
    assert peak.peak_mib >= 40


def test_the_2gb_demo_allocates_nothing():
    code = textwrap.dedent("""
        from helpers.topics import memory
        before = memory.max_rss_mib()
        view = memory.over_2gb_view()
        for attempt in (lambda: memory.embed_in_function(view),):
            try:
                attempt()
            except ValueError as exc:
                assert "larger than 2GB" in str(exc)
            else:
                raise SystemExit("no error")
        print(round(memory.max_rss_mib() - before))
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert int(result.stdout.strip().splitlines()[-1]) < 100  # MiB, not 2 GiB


def test_experiment_table_and_summary():
    table = memory.embedding_experiment(mib=0.25, n_ops=4)
    assert list(table.index) == [1, 2, 3, 4]
    assert table["graph_mib"].is_monotonic_increasing
    assert memory.embedding_summary(table).startswith("4 ops: a 1 MiB graph")
    assert memory.embedding_figure(table, "t").axes[0].get_title() == "t"


def test_check_graph_is_small():
    import tensorflow as tf

    array = memory.make_array(1)
    assert memory.check_graph_is_small(memory.tf1_graph(array, 10, "convert_once"))
    assert "still copied" in repr(memory.check_graph_is_small(memory.tf1_graph(array, 10, "none")))
    assert "10 add ops" not in repr(memory.check_graph_is_small(tf.Graph()))
    assert "must be a tf.Graph" in repr(memory.check_graph_is_small(None))


def test_check_no_retracing():
    import tensorflow as tf

    good = tf.function(lambda v: v * 3.0, input_signature=[tf.TensorSpec([None], tf.float32)])
    assert memory.check_no_retracing(good)
    assert "traced 8 times" in repr(memory.check_no_retracing(tf.function(lambda v: v * 3.0)))
    assert "must be a tf.function" in repr(memory.check_no_retracing(lambda v: v))


def test_benchmarks_run_quick():
    from helpers import bench

    for id_ in ("memory.embedded_vs_argument", "retracing.python_scalar_vs_tensor"):
        record = bench.registry()[id_].run(quick=True)
        assert record["speedup"] > 0 and record["repeats"] >= 3


def test_experiment_failure_and_timeout_leave_no_child(monkeypatch):
    import psutil

    before = {p.pid for p in psutil.Process().children(recursive=True)}
    with pytest.raises(RuntimeError, match="ran past its 0.01 s timeout and was stopped"):
        memory.embedding_experiment(mib=0.25, n_ops=4, timeout=0.01)
    with pytest.raises(ValueError, match="n_ops"):
        memory.embedding_experiment(mib=0.25, n_ops=0)
    monkeypatch.setattr(sys, "executable", sys.executable + "-missing")
    with pytest.raises(FileNotFoundError):
        memory.embedding_experiment(mib=0.25, n_ops=4)
    after = {p.pid for p in psutil.Process().children(recursive=True)}
    assert after <= before


def test_experiment_child_failure_is_reported(monkeypatch):
    monkeypatch.setattr(sys, "executable", "/bin/false")
    with pytest.raises(RuntimeError, match=r"failed with exit code 1"):
        memory.embedding_experiment(mib=0.25, n_ops=4)


def test_retracing_warning_text():
    text = memory.retracing_warning()
    assert "triggered tf.function retracing" in text or "warns once per function" in text
