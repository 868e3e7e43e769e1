"""Unit tests for helpers.timing, on a fake clock so every number is exact."""

from __future__ import annotations

import pytest

from helpers import timing


class FakeClock:
    """Stands in for time.perf_counter; work advances it by known amounts."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def work(self, seconds: float):
        def fn(*args):
            self.now += seconds
            return args

        return fn


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(timing.time, "perf_counter", fake)
    return fake


class LazyTensor:
    """Like an EagerTensor: its cost is paid only when .numpy() is called."""

    def __init__(self, clock: FakeClock, seconds: float) -> None:
        self.clock, self.seconds, self.forced = clock, seconds, 0

    def numpy(self):
        self.clock.now += self.seconds
        self.forced += 1
        return 0


def test_timing_statistics():
    t = timing.Timing("x", (4.0, 1.0, 3.0, 2.0, 5.0), items=10)
    assert (t.count, t.median, t.minimum, t.maximum) == (5, 3.0, 1.0, 5.0)
    assert (t.q1, t.q3, t.iqr) == (2.0, 4.0, 2.0)
    assert t.throughput == pytest.approx(10 / 3.0)
    assert "median 3.00 s" in str(t)


def test_per_run_gives_one_value_per_process():
    # Three processes of three epochs: the runs' medians, not nine pooled epochs.
    t = timing.per_run("stage", [[1.0, 3.0, 1.1], [2.0, 2.0, 9.0], [1.5]], items=64)
    assert t.seconds == (1.1, 2.0, 1.5) and t.count == 3 and t.items == 64
    with pytest.raises(ValueError, match="runs must be non-empty"):
        timing.per_run("stage", [[1.0], []])
    with pytest.raises(ValueError, match="runs must be non-empty"):
        timing.per_run("stage", [])
    with pytest.raises(ValueError, match="items"):
        timing.per_run("stage", [[1.0]], items=-1)


def test_measure_counts_warmup_and_repeats(clock):
    calls = []

    def fn():
        calls.append(clock.now)
        clock.now += 0.5

    t = timing.measure(fn, warmup=2, repeats=3)
    assert len(calls) == 5 and t.count == 3
    assert t.seconds == (0.5, 0.5, 0.5)


def test_measure_min_time_adds_repeats(clock):
    t = timing.measure(clock.work(0.125), repeats=2, min_time=1.0)
    assert t.count == 8
    assert sum(t.seconds) == pytest.approx(1.0)


def test_measure_stops_at_max_repeats(clock):
    t = timing.measure(clock.work(0.001), repeats=1, min_time=100.0, max_repeats=7)
    assert t.count == 7


def test_force_waits_for_nested_tensors_before_the_clock_stops(clock):
    inner = LazyTensor(clock, 0.25)
    outer = LazyTensor(clock, 0.5)
    t = timing.measure(lambda: {"a": [inner, (outer, None)], "b": 3}, warmup=0, repeats=2)
    # Without forcing, the measured time would be zero: the cost sits in .numpy().
    assert t.seconds == (0.75, 0.75)
    assert inner.forced == outer.forced == 2


def test_force_syncs_gpus_through_tensorflows_public_name(monkeypatch):
    import tensorflow as tf

    monkeypatch.setattr(timing, "_has_gpu", lambda tf: True)  # as on a machine with a GPU
    calls = []
    real = tf.test.experimental.sync_devices  # TF 2.21's only public name for it
    monkeypatch.setattr(tf.test.experimental, "sync_devices", lambda: calls.append(1) or real())
    timing.force(tf.constant(1.0))
    assert calls == [1]


def test_time_once_forces(clock):
    lazy = LazyTensor(clock, 2.0)
    assert timing.time_once(lambda: lazy) == 2.0


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "3"])
def test_bad_repeats(bad):
    with pytest.raises(ValueError, match="repeats"):
        timing.measure(lambda: None, repeats=bad)
    with pytest.raises(ValueError, match="repeats"):
        timing.compare({"a": lambda: None}, repeats=bad)


def test_bad_warmup_min_time_items():
    with pytest.raises(ValueError, match="warmup"):
        timing.measure(lambda: None, warmup=-1)
    with pytest.raises(ValueError, match="min_time"):
        timing.measure(lambda: None, min_time=-0.1)
    with pytest.raises(ValueError, match="items"):
        timing.compare({"a": lambda: None}, items=0)


def test_non_callable_variant_is_named():
    with pytest.raises(TypeError, match="variant 'b' must be callable"):
        timing.compare({"a": lambda: None, "b": 42})
    with pytest.raises(TypeError, match="must be callable"):
        timing.measure("not a function")


@pytest.mark.parametrize("bad", [{}, None, [lambda: None]])
def test_empty_or_wrong_variants(bad):
    with pytest.raises(ValueError, match="non-empty dict"):
        timing.compare(bad)


def test_unknown_baseline():
    with pytest.raises(ValueError, match="baseline 'c' is not one of"):
        timing.compare({"a": lambda: None, "b": lambda: None}, baseline="c")


def test_compare_interleaves_and_rotates(clock):
    order = []

    def variant(name, seconds):
        def fn():
            order.append(name)
            clock.now += seconds

        return fn

    table = timing.compare(
        {"slow": variant("slow", 0.4), "fast": variant("fast", 0.1)}, warmup=1, repeats=3
    )
    # one warm-up round in order, then rounds that rotate who goes first
    assert order == ["slow", "fast", "slow", "fast", "fast", "slow", "slow", "fast"]
    assert list(table.index) == ["slow", "fast"]
    assert table.loc["fast", "speedup"] == pytest.approx(4.0)
    assert table.loc["slow", "speedup"] == pytest.approx(1.0)
    assert table.attrs["baseline"] == "slow"
    assert int(table.loc["fast", "repeats"]) == 3


def test_before_each_runs_before_every_timed_call_outside_the_clock(clock):
    events = []

    def drop(name):
        events.append(("drop", name))
        clock.now += 5.0  # slow set-up work must not count

    def variant(name):
        def fn():
            events.append(("run", name))
            clock.now += 0.1

        return fn

    table = timing.compare(
        {"a": variant("a"), "b": variant("b")}, warmup=1, repeats=2, before_each=drop
    )
    assert events == [
        ("run", "a"),
        ("run", "b"),  # the warm-up round: no set-up
        ("drop", "a"),
        ("run", "a"),
        ("drop", "b"),
        ("run", "b"),
        ("drop", "b"),
        ("run", "b"),
        ("drop", "a"),
        ("run", "a"),
    ]
    assert table.loc["a", "median_s"] == pytest.approx(0.1)
    with pytest.raises(TypeError, match="before_each must be callable or None"):
        timing.compare({"a": variant("a")}, before_each="drop the cache")


class SlowToDelete:
    """A dataset whose iterator, like a tf.data iterator waiting for its autotuning thread, takes
    time to delete: its deletion advances the clock and is logged."""

    def __init__(self, clock: FakeClock, elements: list, events: list) -> None:
        self.clock, self.elements, self.events = clock, elements, events

    def __iter__(self):
        outer = self

        class Iterator:
            def __init__(self) -> None:
                self.left = list(outer.elements)

            def __iter__(self):
                return self

            def __next__(self):
                if not self.left:
                    raise StopIteration
                outer.clock.now += 0.1
                return self.left.pop(0)

            def __del__(self) -> None:
                outer.clock.now += 0.5
                outer.events.append("deleted")

        return Iterator()


def test_read_pass_counts_rows_and_its_iterator_is_deleted_after_the_clock(clock):
    np = pytest.importorskip("numpy")
    events: list = []
    batches = [(np.zeros((4, 2)), np.zeros(4)), (np.zeros((3, 2)), np.zeros(3))]
    dataset = SlowToDelete(clock, batches, events)
    table = timing.compare({"a": lambda: timing.read_pass(dataset)}, warmup=1, repeats=3)
    assert table.loc["a", "median_s"] == pytest.approx(0.2)  # two elements read, no deletion
    assert events == ["deleted"] * 4 and not timing._SPENT  # warm-up and three timed passes
    assert timing.measure(lambda: timing.read_pass(dataset), repeats=2).median == pytest.approx(0.2)
    assert timing.time_once(timing.read_pass, dataset) == pytest.approx(0.2)
    assert not timing._SPENT
    assert timing.read_pass(SlowToDelete(clock, [np.zeros((2, 5))], [])) == 2  # plain tensors
    nested = [{"x": np.zeros(6)}, ({"x": np.zeros(1)},), {"a": (np.zeros(2), 1)}, {"f": {"x": 3.0}}]
    assert timing.read_pass(SlowToDelete(clock, nested, [])) == 6 + 1 + 2 + 1
    assert timing.read_pass(SlowToDelete(clock, [3.0, 4.0], [])) == 2  # scalars: one row each
    for bad in (5, "dataset", {"a": 1}):
        with pytest.raises(TypeError, match="dataset must be a tf.data.Dataset"):
            timing.read_pass(bad)


def test_read_pass_outside_a_timer_keeps_nothing_and_nested_timers_keep_their_own(clock):
    np = pytest.importorskip("numpy")
    events: list = []
    timing.read_pass(SlowToDelete(clock, [np.zeros(2)], events))
    assert events == ["deleted"] and not timing._SPENT  # no timer running: deleted at once
    events.clear()
    outer = SlowToDelete(clock, [np.zeros(2)], events)

    def read_then_time_another():
        timing.read_pass(outer)
        timing.time_once(timing.read_pass, SlowToDelete(clock, [np.zeros(1)], events))
        assert events == ["deleted"] and len(timing._SPENT) == 1  # the inner pass's only
        return 0

    # two reads and the inner pass's deletion (inside the outer call), not the outer pass's
    assert timing.time_once(read_then_time_another) == pytest.approx(0.1 + 0.1 + 0.5)
    assert events == ["deleted", "deleted"] and not timing._SPENT

    def read_then_raise():
        timing.read_pass(SlowToDelete(clock, [np.zeros(1)], events))
        raise RuntimeError("the variant failed")

    with pytest.raises(RuntimeError):
        timing.time_once(read_then_raise)
    assert len(events) == 3 and not timing._SPENT and timing._TIMED == [0]


def test_compare_passes_the_same_args_to_every_variant(clock):
    seen = []
    data = object()
    timing.compare({"a": seen.append, "b": seen.append}, data, warmup=0, repeats=2)
    assert seen == [data] * 4


def test_compare_baseline_moves_first_and_throughput(clock):
    table = timing.compare(
        {"x": clock.work(0.2), "base": clock.work(0.1)}, baseline="base", repeats=3, items=50
    )
    assert list(table.index) == ["base", "x"]
    assert table.loc["x", "speedup"] == pytest.approx(0.5)
    assert table.loc["base", "items_per_s"] == pytest.approx(500.0)


def test_compare_progress_and_min_time(clock):
    seen = []
    table = timing.compare(
        {"a": clock.work(0.25), "b": clock.work(0.5)},
        repeats=2,
        min_time=2.0,
        on_progress=lambda d, t: seen.append((d, t)),
    )
    assert int(table.loc["a", "repeats"]) == 3  # 0.75 s a round: 3 rounds reach 2 s in all
    assert seen == [(1, 2), (2, 2), (3, 3)]


def test_zero_durations_do_not_crash():
    table = _table((0.0, 0.0), (0.0, 0.0))
    assert table.loc["var", "speedup"] != table.loc["var", "speedup"]  # nan
    table = _table((1.0, 1.0), (0.0, 0.0))
    assert table.loc["var", "speedup"] == float("inf")


def test_speedup_spread_uses_quartiles():
    base = timing.Timing("base", (1.0, 2.0, 3.0))
    var = timing.Timing("var", (0.5, 1.0, 1.5))
    table = timing.comparison_table({"base": base, "var": var}, "base")
    row = table.loc["var"]
    assert row["speedup"] == pytest.approx(2.0)
    assert row["speedup_low"] == pytest.approx(base.q1 / var.q3)
    assert row["speedup_high"] == pytest.approx(base.q3 / var.q1)


def _table(base, var):
    return timing.comparison_table(
        {"base": timing.Timing("base", base), "var": timing.Timing("var", var)}, "base"
    )


def test_format_seconds():
    assert timing.format_seconds(1.5) == "1.50 s"
    assert timing.format_seconds(0.0123) == "12.30 ms"
    assert timing.format_seconds(4.5e-6) == "4.5 µs"


def test_rotated_shifts_one_place_per_round():
    assert [timing.rotated(["a", "b", "c"], r) for r in range(4)] == [
        ["a", "b", "c"],
        ["b", "c", "a"],
        ["c", "a", "b"],
        ["a", "b", "c"],
    ]
    assert timing.rotated([], 3) == []


def test_span_reads_a_tables_low_high_cell():
    assert timing.span("1.56-1.91") == (1.56, 1.91) and timing.span("310-402") == (310.0, 402.0)
    for cell in ("", float("nan"), None, "1.5", "a-b", "1-2-3"):
        assert timing.span(cell) == (None, None), cell


def test_speed_probe_times_a_fixed_loop_and_refuses_no_work():
    from helpers.timing_stats import speed_probe

    seconds = speed_probe(loops=1_000, tries=2)
    assert 0 < seconds < 1  # a thousand additions, best of two
    for bad in ({"loops": 0}, {"tries": 0}, {"tries": 1.5}, {"loops": True}, {"tries": 10**6}):
        with pytest.raises((TypeError, ValueError), match="tries|loops"):
            speed_probe(**bad)
