"""The sentence that reads a timed comparison, computed from this run's table.

The markdown of a notebook states the mechanism and the direction to expect, and under which
conditions; the line printed here says what this run showed: the ratio with its spread, "no
clear difference" when the quartiles overlap, and, when the notebook says what it expects on
this machine (``expect``, with ``why``: what decided it), whether that held. So the prose never
carries another machine's numbers, and the reader's output agrees with the reader's machine.
"""

from __future__ import annotations

import math
from typing import Any

from helpers import checks, timing
from helpers.timing_stats import _ratio, quartile_ratios  # the topics read verdicts.quartile_ratios

EXPECTATIONS = ("faster", "slower", "no clear difference", "not faster", "not slower")


def ratio(table: Any, variant: str, baseline: str | None = None) -> tuple[float, float, float, int]:
    """``variant``'s speed-up over ``baseline`` (the table's own baseline by default): median,
    the low and high ends from the quartiles (baseline q1 over variant q3, baseline q3 over
    variant q1: the "quartile ratios" a verdict prints), and the runs in the smaller row."""
    baseline = table.attrs.get("baseline", table.index[0]) if baseline is None else baseline
    for name in (variant, baseline):
        if name not in table.index:
            raise ValueError(f"variant {name!r} is not in the table {list(table.index)}")
    if baseline == table.attrs.get("baseline", table.index[0]):
        row, runs = table.loc[variant], int(table.loc[[variant, baseline], "repeats"].min())
        return row["speedup"], row["speedup_low"], row["speedup_high"], runs
    base, var = table.loc[baseline], table.loc[variant]
    low, high = quartile_ratios(base["q1_s"], base["q3_s"], var["q1_s"], var["q3_s"])
    return (
        _ratio(base["median_s"], var["median_s"]),
        low,
        high,
        int(min(base["repeats"], var["repeats"])),
    )


#: Fewer runs than this in either row leave no spread to read (the quartiles of one run are the
#: run itself), so a verdict names no winner from them.
MIN_RUNS = 2

#: A median within this fraction of 1 is no clear difference even when the quartiles part: a 1 %
#: gain is inside what a rerun moves, and a verdict must not name a winner there.
MIN_EFFECT = 0.03


def outcome(low: float, high: float, speedup: float = 1.0) -> str:
    """ "faster", "slower" or "no clear difference", from the speed-up's quartile range and
    median."""
    if low <= 1.0 <= high or abs(speedup - 1.0) < MIN_EFFECT:
        return "no clear difference"
    return "faster" if low > 1.0 else "slower"


def _two(value: float) -> str:
    """A ratio to two decimals, or up to six where two would print 1.00 for a ratio that is not 1:
    a "faster" line whose low end is 1.0015 must not read "1.00", which looks like an overlap."""
    for digits in (2, 3, 4, 5, 6):
        text = f"{value:.{digits}f}"
        if value == 1.0 or float(text) != 1.0:
            break
    return text


def verdict(
    table: Any,
    variant: str | None = None,
    baseline: str | None = None,
    expect: str | None = None,
    why: str = "",
) -> str:
    """One line: how ``variant`` (the fastest other row by default) compares with ``baseline``,
    with its spread; with ``expect``, whether the direction the notebook leads the reader to
    expect on this machine held (``why``: what decided that expectation, such as CPU features)."""
    if expect is not None and expect not in EXPECTATIONS:
        raise ValueError(f"expect must be one of {EXPECTATIONS} or None, got {expect!r}")
    base_name = table.attrs.get("baseline", table.index[0]) if baseline is None else baseline
    others = [name for name in table.index if name != base_name]
    if not others:
        row = table.loc[base_name]
        return (
            f"{base_name}: median {timing.format_seconds(row['median_s'])} "
            f"over {int(row['repeats'])} runs."
        )
    if variant is None:
        variant = max(others, key=lambda name: ratio(table, name, base_name)[0])
    speedup, low, high, repeats = ratio(table, variant, base_name)
    if not all(math.isfinite(v) and v > 0 for v in (low, high, speedup)):
        return (
            f"{variant} vs {base_name}: some calls were too fast for the clock to time; "
            "use a bigger workload."
        )
    because = f" ({why})" if why else ""
    if repeats < MIN_RUNS:
        line = (
            f"{variant} vs {base_name}: {speedup:.2f}x from {repeats} run each, too few to judge "
            f"(no spread); rerun with {MIN_RUNS} or more."
        )
        if expect is None:
            return line
        return f"{line} Expected here: {_wanted(variant, base_name, expect)}{because}; not judged."
    spread = f"quartile ratios {_two(low)}-{_two(high)}x, {repeats} runs each"
    seen = outcome(low, high, speedup)
    if seen == "no clear difference":
        why_not = (
            "the runs overlap, so rerun with more runs before drawing a conclusion"
            if low <= 1.0 <= high
            else f"within {MIN_EFFECT:.0%} at the median: too small a gap to call"
        )
        line = (
            f"{variant} vs {base_name}: no clear difference ({speedup:.2f}x; {spread}); {why_not}."
        )
    elif seen == "faster":
        line = f"{variant} is {speedup:.2f}x faster than {base_name} ({spread})."
    else:  # the spread as slow-downs too, so that both ends read the same way as the median
        line = (
            f"{variant} is {1 / speedup:.2f}x slower than {base_name} "
            f"(quartile ratios {_two(1 / high)}-{_two(1 / low)}x, {repeats} runs each)."
        )
    if expect is None:
        return line
    if (
        seen == "no clear difference"
        and low <= 1.0 <= high
        and (expect == seen or expect.startswith("not "))
    ):  # the overlap is what was expected: no rerun needed (a gap under MIN_EFFECT keeps its why)
        line = f"{variant} vs {base_name}: no clear difference ({speedup:.2f}x; {spread})."
    if seen == expect or (expect.startswith("not ") and seen != expect[4:]):
        held = "as expected"
    elif seen == "no clear difference":
        held = "not shown in this run"
    else:
        held = "not what this machine was expected to show: see the conditions in the text"
    return f"{line} Expected here: {_wanted(variant, base_name, expect)}{because}; {held}."


def _wanted(variant: str, base_name: str, expect: str) -> str:
    if expect == "no clear difference":
        return expect
    return f"{variant} {expect} than {base_name}"


def verdict_of(timings: Any, variant: str, baseline: str, **kwargs: Any) -> str:
    """``verdict`` for two of a mapping of ``timing.Timing`` (name -> Timing), such as the
    ``timings`` a table keeps in its attrs: the line for a table that shows no spread itself."""
    return verdict(
        timing.comparison_table({baseline: timings[baseline], variant: timings[variant]}, baseline),
        variant,
        **kwargs,
    )


@checks.arguments(factor=checks.number(1.0, 100.0, "times the fastest run", above=True))
def slow_runs(table: Any, factor: float = 1.25) -> str:
    """One line: how many of each row's timed runs took more than ``factor`` times that row's
    fastest run. Two levels of run times (a fast group and a slow one) leave the median on either
    side, so a verdict can read "no clear difference" where one row alone has slow runs; this
    count shows which rows have them."""
    timings = table.attrs.get("timings") if hasattr(table, "attrs") else None
    if not timings:
        raise ValueError("table must be what timing.compare returns (it keeps the raw timings)")
    counts = ", ".join(
        f"{name} {sum(s > factor * t.minimum for s in t.seconds)} of {t.count}"
        for name, t in timings.items()
    )
    return f"Runs more than {factor - 1:.0%} slower than their row's fastest: {counts}."


def timeit_reading(timeit_result: Any, measured: Any) -> str:
    """One line setting IPython's ``%timeit -o`` result beside ``timing.measure``'s of the same
    call: %timeit's runs (each the mean of its loop) and their mean, measure's single calls,
    and whether the mean falls inside measure's interquartile range, or which side of it."""
    loops, runs = getattr(timeit_result, "loops", None), getattr(timeit_result, "all_runs", None)
    if not isinstance(loops, int) or loops < 1 or not runs:
        raise TypeError("timeit_result must be what %timeit -o returns (a TimeitResult)")
    if not isinstance(measured, timing.Timing):
        raise TypeError(
            f"measured must be what timing.measure returns, got {type(measured).__name__}"
        )
    show = timing.format_seconds
    per_call = [run / loops for run in runs]
    mean = sum(per_call) / len(per_call)
    head = (
        f"%timeit: {len(per_call)} runs of {loops} calls, {show(min(per_call))} to "
        f"{show(max(per_call))} a call (mean {show(mean)}); timing.measure: {measured.count} "
        f"single calls, median {show(measured.median)} (IQR {show(measured.q1)} to "
        f"{show(measured.q3)}). "
    )
    if measured.q1 <= mean <= measured.q3:
        return head + "%timeit's mean lies inside measure's middle half: the two agree here."
    longer = mean < measured.q1
    count = sum((t > mean) if longer else (t < mean) for t in measured.seconds)
    why = (
        "each single call carries the clock's and the forcing's own cost and shows a slow moment "
        f"in full, where a run of {loops} calls spreads both"
        if longer
        else "a mean carries its slow runs in full, where a median leaves the slowest calls aside"
    )
    return head + (
        f"{count} of measure's {measured.count} single calls took {'longer' if longer else 'less'} "
        f"than %timeit's mean (its median is {measured.median / mean:.2f}x that mean): {why}, and "
        "the two ran at different moments; rerun both cells to see whether the gap stays."
    )


def drift_reading(before: Any, now: Any, what: str, where: tuple[str, str]) -> str:
    """One line on the same timing taken in two cells (``before`` and ``now``: rows of
    ``timing.compare`` tables, with ``median_s``, ``q1_s`` and ``q3_s``): how far apart their
    medians are, set beside each row's own quartile range relative to its median, compared as
    printed (whole percents)."""
    for name, row in (("before", before), ("now", now)):
        try:
            median, q1, q3 = (float(row[k]) for k in ("median_s", "q1_s", "q3_s"))
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"{name} must be a row of a timing.compare table") from None
        if not (math.isfinite(median) and median > 0 and q1 <= median <= q3):
            raise ValueError(f"{name} must be a row of a timing.compare table")
    gap = round(abs(now["median_s"] / before["median_s"] - 1), 2)
    narrow, wide = sorted(round((r["q3_s"] - r["q1_s"]) / r["median_s"], 2) for r in (before, now))
    head = (
        f"{what} took {timing.format_seconds(now['median_s'])} {where[1]} and "
        f"{timing.format_seconds(before['median_s'])} {where[0]}, {gap:.0%} apart: "
    )
    if gap > wide:
        return head + (
            f"more than either cell's own quartile range ({narrow:.0%} and {wide:.0%}), so two "
            "cells can drift apart by more than a table's quartiles show"
        )
    if gap > narrow:
        return head + (
            f"more than the narrower cell's quartile range ({narrow:.0%}), within the wider's "
            f"({wide:.0%})"
        )
    return head + f"within both cells' quartile ranges ({narrow:.0%} and {wide:.0%})"
