"""Unit tests for helpers.topics.keep_arrays_out_of_graphs.memory and
helpers.topics.keep_arrays_out_of_graphs.retracing (notebook 05's plumbing) and
for the lesson code they run, exported from the notebook: the guard, the estimates, the measured
tables, the child program, the checks. Sizes stay at 1 MiB so the suite stays light."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from helpers import rss
from helpers.lessons import keep_arrays_out_of_graphs as lesson
from helpers.topics.keep_arrays_out_of_graphs import memory, memory_guard, retracing


def test_guard_refuses_with_the_numbers():
    memory.guard(100 * memory.MIB, "small", available=1024 * memory.MIB)
    with pytest.raises(
        memory.MemoryGuardError, match=r"about 600 MiB .* 50% of the 1,024 MiB available"
    ):
        memory.guard(600 * memory.MIB, "A demo", available=1024 * memory.MIB)


def test_every_demo_is_guarded(monkeypatch):
    monkeypatch.setattr(memory_guard, "available_bytes", lambda: 8 * memory.MIB)
    array = memory.make_array(1)
    for call in (
        lambda: memory.tf1_table(lesson.tf1_graph, array, 10),
        lambda: memory.tf2_table(lesson.three_functions, array),
        lambda: memory.dataset_table({"inside": lesson.dataset_inside}, array),
        lambda: memory.guarded_array(1),
        lambda: memory.embedding_experiment(mib=1, n_ops=20),
    ):
        with pytest.raises(memory.MemoryGuardError):
            call()


def test_estimates_and_bad_input():
    assert memory.estimate_peak("tf1_graph", 1000, 10) == 60_000
    assert memory.estimate_peak("function", 1000) == 20_000
    with pytest.raises(ValueError, match="unknown kind"):
        memory.estimate_peak("gpu", 1)
    for bad in (0, -1, float("nan"), True, "4"):
        with pytest.raises(ValueError, match="mib must be a (positive )?size in MiB"):
            memory.make_array(bad)


def test_make_array_is_seeded_float32():
    a, b = memory.make_array(1), memory.make_array(1)
    assert a.dtype == np.float32 and a.nbytes == memory.MIB
    np.testing.assert_array_equal(a, b)


def test_tf1_graph_counts_copies():
    array = memory.make_array(0.25)
    none = memory.graph_stats(lesson.tf1_graph(array, 4, "none"))
    once = memory.graph_stats(lesson.tf1_graph(array, 4, "convert_once"))
    feed = memory.graph_stats(lesson.tf1_graph(array, 4, "placeholder"))
    assert (
        none["graph_bytes"]
        > 4 * array.nbytes
        > once["graph_bytes"]
        > array.nbytes
        > feed["graph_bytes"]
    )
    assert none["nodes"] == 1 + 2 * 4 and once["nodes"] == feed["nodes"] == 2 + 4
    with pytest.raises(ValueError, match="fix must be"):
        lesson.tf1_graph(array, 4, "cache")
    with pytest.raises(ValueError, match="n_ops"):
        memory.tf1_table(lesson.tf1_graph, array, 0)


def test_tf1_table_smallest_first():
    table = memory.tf1_table(lesson.tf1_graph, memory.make_array(0.25), n_ops=4)
    assert list(table.index) == ["placeholder", "convert_once", "none"]
    assert list(table["nodes"]) == [6, 6, 9] and table["graph_mib"].is_monotonic_increasing
    assert (table["rss_rise_mib"] >= 0).all()


def test_three_functions_graph_bytes_and_tf2_table():
    import tensorflow as tf

    array = memory.make_array(1)
    tensor, x = tf.constant(array), tf.zeros(array.shape)
    embedded, argument, captured = lesson.three_functions(array, tensor)
    sizes = [
        f.get_concrete_function(*args).graph.as_graph_def().ByteSize()
        for f, args in ((embedded, (x,)), (argument, (x, tensor)), (captured, (x,)))
    ]
    assert sizes[0] > memory.MIB and max(sizes[1:]) < 4096
    assert (
        float(embedded(x))
        == pytest.approx(float(argument(x, tensor)))
        == pytest.approx(float(captured(x)))
    )
    table = memory.tf2_table(lesson.three_functions, array)
    assert list(table.index) == ["embedded constant", "tensor argument", "captured tensor"]
    assert (
        table.loc["embedded constant", "graph_mib"] >= 1
        and table.loc["tensor argument", "graph_mib"] < 0.01
    )


def test_dataset_forms_compute_the_same_sum():
    array = memory.make_array(0.1)
    inside = lesson.dataset_inside(array)()
    eager = lesson.dataset_outside(array)()
    assert float(inside) == pytest.approx(float(eager), rel=1e-5)
    assert float(eager) == pytest.approx(float(array.sum(dtype=np.float64)), rel=1e-4)
    table = memory.dataset_table(
        {"inside tf.function": lesson.dataset_inside, "built eagerly": lesson.dataset_outside},
        array,
    )
    assert (
        table.loc["inside tf.function", "graph_mib"]
        > 0.09
        > table.loc["built eagerly", "graph_mib"]
    )


def test_scalar_vs_tensor_retraces_only_for_python_ints():
    variants = lesson.scalar_vs_tensor()
    with retracing.captured_tf_warnings():
        results = [int(variants["Python scalar"]()) for _ in range(3)] + [
            int(variants["tensor"]()) for _ in range(3)
        ]
    assert results == [1, 3, 5, 7, 9, 11]


def test_captured_warnings_collects_the_retracing_warning():
    import tensorflow as tf

    with retracing.captured_tf_warnings() as caught:
        f = tf.function(lambda v: v + 1)
        for i in range(6):
            f(i)
    assert any("triggered tf.function retracing" in m for m in caught.messages)
    assert not tf.get_logger().handlers or all(
        h.__class__.__name__ != "_Collect" for h in tf.get_logger().handlers
    )


def test_peak_rss_sees_an_allocation():
    with rss.PeakRSS() as peak:
        block = np.ones(64 * memory.MIB // 8)
        block.sum()
    del block
    assert peak.peak_mib >= 40


def test_the_2gb_demo_allocates_nothing():
    code = textwrap.dedent("""
        import tensorflow as tf
        from helpers import rss
        from helpers.topics.keep_arrays_out_of_graphs import memory
        before = rss.max_rss_mib()
        view = memory.over_2gb_view()
        try:
            tf.function(lambda: tf.reduce_sum(tf.convert_to_tensor(view))).get_concrete_function()
        except ValueError as exc:
            assert "larger than 2GB" in str(exc)
        else:
            raise SystemExit("no error")
        print(round(rss.max_rss_mib() - before))
    """)
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert int(result.stdout.strip().splitlines()[-1]) < 100  # MiB, not 2 GiB


def test_experiment_table_and_summary():
    table = memory.embedding_experiment(mib=0.25, n_ops=4)
    assert list(table.index) == [1, 2, 3, 4]
    assert table["graph_mib"].is_monotonic_increasing
    assert memory.embedding_summary(table).startswith("4 ops: a 1 MiB graph")
    assert memory.embedding_figure(table, "t").axes[0].get_title() == "t"


def test_the_child_program_runs_from_a_terminal(tmp_path):
    program = tmp_path / "embedding_child.py"
    program.write_text(lesson.EMBEDDING_CHILD)
    result = subprocess.run(
        [sys.executable, str(program), "0.25", "2", "1"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    from helpers import procs

    rows = procs.parse_rows(result.stdout)
    assert [r["ops"] for r in rows] == [1, 2] and rows[1]["graph_mib"] > rows[0]["graph_mib"]


def test_benchmarks_run_quick():
    from helpers import bench

    for id_ in (
        "keep_arrays_out_of_graphs.embedded_vs_argument",
        "keep_arrays_out_of_graphs.python_scalar_vs_tensor",
    ):
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


def test_without_warnings_keeps_the_results_and_drops_the_retracing_warning(caplog):
    import tensorflow as tf

    loud = lesson.first_calls(memory.make_array(0.01))
    variants = retracing.without_warnings(loud)
    assert list(variants) == ["embedded constant", "tensor argument", "captured tensor"]

    def retracing_warnings():
        return [r for r in caplog.records if "retracing" in r.getMessage()]

    with caplog.at_level("WARNING", logger="tensorflow"):
        for _ in range(6):  # six new functions, each traced: TensorFlow warns
            loud["captured tensor"]()
    assert retracing_warnings()  # the warning this wrapper is for reaches the log...
    caplog.clear()
    with caplog.at_level("WARNING", logger="tensorflow"):
        sums = [float(variants["embedded constant"]()) for _ in range(6)]
    assert len(set(sums)) == 1 and not retracing_warnings()  # ...and not through the wrapper
    assert tf.get_logger().propagate  # put back as it was


def test_experiment_needs_is_what_the_experiments_guard_asks_for():
    # Twice the guard's estimate of the child's peak, summed over the graphs it builds in turn.
    steps = (5, 10, 15, 20)  # what embedding_experiment builds for n_ops=20
    estimate = sum(memory.estimate_peak("tf1_graph", memory.array_bytes(4), n) for n in steps)
    assert memory.experiment_needs(4, 20) == 2 * estimate == 2400 * memory.MIB
    with pytest.raises(memory.MemoryGuardError):  # the experiment refuses where the need exceeds it
        memory.guard(
            memory.experiment_needs(4, 20) // 2, "x", available=memory.experiment_needs(4, 20) - 1
        )
    with pytest.raises(ValueError):
        memory.experiment_needs(0, 20)
