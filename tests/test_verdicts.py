"""The computed sentence under a timed comparison: direction, spread, and the expectation."""

from __future__ import annotations

import pytest

from helpers import timing, verdicts


def _table(**rows):
    timings = {name: timing.Timing(name, seconds) for name, seconds in rows.items()}
    return timing.comparison_table(timings, next(iter(rows)))


def test_verdict_faster_slower_and_overlap():
    assert verdicts.verdict(_table(base=(2.0, 2.0, 2.0), var=(1.0, 1.0, 1.0))).startswith(
        "var is 2.00x faster than base (quartile ratios 2.00-2.00x, 3 runs each)"
    )
    assert "var is 2.00x slower than base" in verdicts.verdict(
        _table(base=(1.0,) * 3, var=(2.0,) * 3)
    )
    assert "no clear difference" in verdicts.verdict(
        _table(base=(1.0, 2.0, 3.0), var=(1.1, 2.0, 2.9))
    )
    with pytest.raises(ValueError, match="not in the table"):
        verdicts.verdict(_table(base=(1.0,), var=(1.0,)), variant="nope")


def test_quartile_ratios_match_the_table_and_read_columns():
    import pandas as pd

    table = _table(base=[2.0, 2.2, 2.4, 2.6], fast=[1.0, 1.1, 1.2, 1.3])
    base, fast = table.loc["base"], table.loc["fast"]
    low, high = verdicts.quartile_ratios(base["q1_s"], base["q3_s"], fast["q1_s"], fast["q3_s"])
    assert (low, high) == pytest.approx((fast["speedup_low"], fast["speedup_high"]))
    assert low < high  # the slow end first
    columns = verdicts.quartile_ratios(4.0, 6.0, pd.Series([1.0, 3.0]), pd.Series([2.0, 6.0]))
    assert list(columns[0]) == [2.0, 4.0 / 6.0] and list(columns[1]) == [6.0, 2.0]


def test_a_tiny_gain_is_no_clear_difference_even_when_the_quartiles_part():
    line = verdicts.verdict(_table(base=(1.01, 1.01, 1.01), var=(1.0, 1.0, 1.0)))
    assert "no clear difference" in line and "within 3% at the median" in line


def test_an_expected_tie_keeps_why_a_small_clear_gain_is_no_difference():
    # Quartiles that overlap 1 need no rerun when a tie was expected; quartiles wholly above 1
    # with a median under MIN_EFFECT must still say why they are not called "faster", or the line
    # reads against a neighbour's "1.03x faster" with the same low end.
    overlap = verdicts.verdict(
        _table(base=(1.0, 2.0, 3.0), var=(1.1, 2.0, 2.9)), expect="not faster", why="a reason"
    )
    assert "rerun" not in overlap and "within 3%" not in overlap and "as expected" in overlap
    small = verdicts.verdict(
        _table(base=(1.01, 1.01, 1.01), var=(1.0, 1.0, 1.0)), expect="not faster", why="a reason"
    )
    assert "within 3% at the median: too small a gap to call" in small and "as expected" in small


def test_one_run_each_is_not_judged():
    # One fresh process per setting (a widget's single round): no spread, so no winner, even
    # when the two runs differ by 2x; an expectation is named and left unjudged.
    line = verdicts.verdict(_table(base=(2.0,), var=(1.0,)))
    assert (
        line
        == "var vs base: 2.00x from 1 run each, too few to judge (no spread); rerun with 2 or more."
    )
    line = verdicts.verdict(_table(base=(2.0,), var=(1.0, 1.0)), expect="faster", why="a reason")
    assert line.endswith("Expected here: var faster than base (a reason); not judged.")
    assert "faster than base (" in verdicts.verdict(_table(base=(2.0, 2.0), var=(1.0, 1.0)))


def test_too_fast_for_the_clock():
    assert "too fast for the clock" in verdicts.verdict(_table(base=(1.0, 1.0), var=(0.0, 0.0)))


@pytest.mark.parametrize(
    ("var", "expect", "words"),
    [
        ((1.0,) * 3, "faster", "Expected here: var faster than base (a reason); as expected."),
        (
            (4.0,) * 3,
            "faster",
            "Expected here: var faster than base (a reason); "
            "not what this machine was expected to show",
        ),
        ((1.5, 2.0, 2.5), "faster", "not shown in this run"),
        (
            (4.0,) * 3,
            "slower",
            "var is 2.00x slower than base (quartile ratios 2.00-2.00x, 3 runs each). "
            "Expected here: var slower than base",
        ),
        (
            (1.5, 2.0, 2.5),
            "no clear difference",
            "Expected here: no clear difference (a reason); as expected.",
        ),
        ((1.0,) * 3, "no clear difference", "not what this machine was expected to show"),
        (
            (4.0,) * 3,
            "not faster",
            "Expected here: var not faster than base (a reason); as expected.",
        ),
        ((1.5, 2.0, 2.5), "not faster", "as expected"),
        ((1.0,) * 3, "not faster", "not what this machine was expected to show"),
    ],
)
def test_the_expectation_is_read_against_the_run(var, expect, words):
    line = verdicts.verdict(_table(base=(2.0,) * 3, var=var), expect=expect, why="a reason")
    assert words in line


def test_any_two_rows_compare_with_their_own_quartiles():
    table = _table(base=(4.0,) * 3, a=(2.0, 2.0, 2.0), b=(1.0, 1.0, 1.0))
    assert verdicts.ratio(table, "b", "a") == (2.0, 2.0, 2.0, 3)
    assert verdicts.verdict(table, "b", baseline="a").startswith("b is 2.00x faster than a")
    assert verdicts.verdict(table, "a", baseline="b").startswith("a is 2.00x slower than b")
    assert verdicts.verdict(table).startswith(
        "b is 4.00x faster than base"
    )  # the fastest by default


def test_bad_expectation_is_refused():
    with pytest.raises(ValueError, match="expect must be one of"):
        verdicts.verdict(_table(base=(1.0,), var=(1.0,)), expect="quicker")


def test_verdict_of_reads_two_timings_kept_beside_a_table():
    timings = {
        "f32": timing.Timing("f32", (4.0, 4.0, 4.0)),
        "i8": timing.Timing("i8", (2.0, 2.0, 2.0)),
        "f16": timing.Timing("f16", (3.0, 4.0, 5.0)),
    }
    assert (
        verdicts.verdict_of(timings, "i8", "f32")
        == "i8 is 2.00x faster than f32 (quartile ratios 2.00-2.00x, 3 runs each)."
    )
    assert verdicts.verdict_of(timings, "f16", "f32").startswith("f16 vs f32: no clear difference")
    assert "as expected" in verdicts.verdict_of(timings, "i8", "f32", expect="faster")


def test_slow_runs_counts_each_rows_slow_group():
    import pandas as pd

    table = timing.comparison_table(
        {
            "two levels": timing.Timing("two levels", (1.0, 1.0, 1.6, 1.0, 1.7)),
            "steady": timing.Timing("steady", (1.0, 1.1, 1.05, 1.2, 1.0)),
        },
        "two levels",
    )
    assert verdicts.slow_runs(table) == (
        "Runs more than 25% slower than their row's fastest: two levels 2 of 5, steady 0 of 5."
    )
    assert "steady 1 of 5" in verdicts.slow_runs(table, factor=1.15)
    with pytest.raises(ValueError, match="factor must be"):
        verdicts.slow_runs(table, factor=1)
    with pytest.raises(ValueError, match="what timing.compare returns"):
        verdicts.slow_runs(pd.DataFrame({"median_s": [1.0]}))


def test_a_clear_lead_never_prints_an_end_of_1_00():
    # A low end of 1.0015 is a lead, and printed as "1.00" it reads as an overlap (notebook 10).
    line = verdicts.verdict(_table(base=(1.10165,) * 3, var=(1.0, 1.0, 1.2)))
    assert "faster" in line and "quartile ratios 1.00-" not in line, line
    assert "quartile ratios 1.001-" in line or "quartile ratios 1.002-" in line, line
    line = verdicts.verdict(_table(base=(1.0, 1.0, 1.2), var=(1.10165,) * 3))
    assert "slower" in line and "-1.00x" not in line and "1.00-" not in line, line


def test_timeit_reading_sets_timeit_beside_measure():
    from IPython.core.magics.execution import TimeitResult

    from helpers.timing_stats import Timing

    runs = [0.0592, 0.0600, 0.0610]  # 3 runs of 200 calls: 296, 300 and 305 us a call
    timeit = TimeitResult(200, 3, min(runs) / 200, max(runs) / 200, runs, 0.0, 3)
    slow = Timing("chain", (290e-6, 330e-6, 560e-6, 600e-6, 700e-6))
    line = verdicts.timeit_reading(timeit, slow)
    assert line.startswith("%timeit: 3 runs of 200 calls, 296.0 µs to 305.0 µs a call (mean ")
    assert "timing.measure: 5 single calls, median 560.0 µs (IQR 330.0 µs to 600.0 µs)" in line
    assert "4 of measure's 5 single calls took longer than %timeit's mean" in line
    assert "(its median is 1.86x that mean)" in line and "a run of 200 calls spreads both" in line
    fast = Timing("chain", (100e-6, 150e-6, 200e-6, 250e-6, 290e-6, 310e-6))
    line = verdicts.timeit_reading(timeit, fast)
    assert "5 of measure's 6 single calls took less than %timeit's mean" in line
    assert "a mean carries its slow runs in full" in line
    agree = Timing("chain", (280e-6, 290e-6, 300e-6, 310e-6, 320e-6))
    assert verdicts.timeit_reading(timeit, agree).endswith("the two agree here.")
    with pytest.raises(TypeError, match="what %timeit -o returns"):
        verdicts.timeit_reading(runs, agree)
    with pytest.raises(TypeError, match="what timing.measure returns"):
        verdicts.timeit_reading(timeit, 0.0003)


def test_drift_reading_sets_the_gap_beside_both_quartile_ranges():
    import pandas as pd

    def row(median, q1, q3):
        return pd.Series({"median_s": median, "q1_s": q1, "q3_s": q3})

    where = ("in section 2", "here")
    # Notebook 12's earlier saved case: 11% apart, ranges of 4% and 12%.
    line = verdicts.drift_reading(row(5.16, 4.96, 5.17), row(4.61, 4.46, 5.01), "float32", where)
    assert line == (
        "float32 took 4.61 s here and 5.16 s in section 2, 11% apart: more than the narrower "
        "cell's quartile range (4%), within the wider's (12%)"
    )
    line = verdicts.drift_reading(row(1.0, 0.95, 1.05), row(1.3, 1.25, 1.35), "x", where)
    assert "30% apart: more than either cell's own quartile range (8% and 10%)" in line
    line = verdicts.drift_reading(row(1.0, 0.9, 1.1), row(1.05, 0.95, 1.15), "x", where)
    assert line.endswith("5% apart: within both cells' quartile ranges (19% and 20%)")
    before = row(1.0, 0.9, 1.1)
    verdicts.drift_reading(before, row(2.0, 1.9, 2.1), "x", where)
    assert before.to_dict() == {"median_s": 1.0, "q1_s": 0.9, "q3_s": 1.1}  # input unchanged
    with pytest.raises(ValueError, match="before must be a row of a timing.compare table"):
        verdicts.drift_reading({"median_s": 1.0}, before, "x", where)
    with pytest.raises(ValueError, match="now must be a row"):
        verdicts.drift_reading(before, row(0.0, 0.0, 0.0), "x", where)
