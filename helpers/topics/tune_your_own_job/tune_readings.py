"""Notebook 16's readings beside the tuning report: the figure of each trial's gain over the job
with its quartile range, the computed line on the tuned job head to head with notebook 14's
hand-tuned one (``tuning.head_to_head``), and whether a job is input- or compute-bound (from the
diagnosis' ``timing.compare`` table). ``tune_report`` re-exports all three for the notebook.
"""

from __future__ import annotations

from typing import Any

from helpers import timing, verdicts
from helpers.topics.tune_your_own_job.tuning_trials import BASELINE, COMBINED, HAND


def figure(frame: Any, title: str = "") -> Any:
    """Gain of each measured trial over the job, with its quartile range; 1.0 marked."""
    import matplotlib.pyplot as plt

    measured = frame[frame["gain"].notna()].drop(index=BASELINE, errors="ignore")
    fig, ax = plt.subplots(figsize=(7, 0.45 * max(3, len(measured)) + 1))
    names = list(measured.index)[::-1]
    gains = [float(measured.at[n, "gain"]) for n in names]
    spans = [timing.span(measured.at[n, "gain q1-q3"]) for n in names]
    colors = [
        "tab:green"
        if measured.at[n, "verdict"] == "faster"
        else "tab:red"
        if measured.at[n, "verdict"] in ("slower", "trains differently")
        else "tab:gray"
        for n in names
    ]
    ax.barh(
        names,
        gains,
        color=colors,
        xerr=[
            [g - lo for g, (lo, _) in zip(gains, spans, strict=True)],
            [hi - g for g, (_, hi) in zip(gains, spans, strict=True)],
        ],
    )
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_xlabel("examples per second, relative to the job as it is (quartile range)")
    ax.set_title(title or "What each change did to your job")
    fig.tight_layout()
    plt.close(fig)
    return fig


def head_to_head_reading(frame: Any) -> str:
    """One computed line from ``tuning.head_to_head``'s table: the tuned job's speed against the
    hand-tuned one's, both over notebook 14's naive job (one start for both), with the quartile
    ranges' reading; and why the gain over each job's own start differs."""
    t = frame.attrs["timings"]
    rate = {name: (x.items / x.median, x.items / x.q3, x.items / x.q1) for name, x in t.items()}
    (mine, mine_lo, mine_hi), (theirs, theirs_lo, theirs_hi) = rate[COMBINED], rate[HAND[1]]
    (naive, naive_lo, naive_hi), (own, own_lo, own_hi) = rate[HAND[0]], rate[BASELINE]
    runs = min(len(x.seconds) for x in t.values())  # one value per fresh process
    few = runs < verdicts.MIN_RUNS  # no spread: one run's reading can tell nothing apart
    starts = (  # the two starts' ranges: does this run tell them apart?
        f"from {runs} run each, too few to tell them apart"
        if few
        else "within their quartile ranges, which overlap"
        if own_lo <= naive_hi and naive_lo <= own_hi
        else "outside each other's quartile ranges"
    )
    who = (
        "the tuner's settings"
        if frame.attrs.get("changed", True)
        else "the job as it is (no change paid within the budget)"
    )
    if few:
        reading = f"{runs} run each: too few to tell the two apart; "
        reading += "rerun with more rounds (3 or more)"
    elif mine_lo <= theirs_hi and theirs_lo <= mine_hi:
        reading = "their quartile ranges overlap: this run does not tell the two apart"
    else:
        reading = (
            "their quartile ranges do not overlap: "
            f"{'the hand-tuned job' if theirs > mine else 'the tuner'} had the higher throughput "
            "on this run"
        )
    return (
        f"In one rotation of fresh processes, {who} ran the job at {mine:,.0f} examples/s "
        "and notebook 14's hand-tuned "
        f"job at {theirs:,.0f}/s: {mine / theirs:.0%} of its speed ({reading}). "
        "Over the same start, notebook 14's naive "
        f"job ({naive:,.0f}/s), that is {mine / naive:.2f}x against {theirs / naive:.2f}x. "
        "Over its own start, the job as "
        f"model.fit runs it ({own:,.0f}/s), the tuner gained {mine / own:.2f}x: "
        "model.fit runs the naive job "
        f"{own / naive:.2f}x as fast as the capstone's own loop here ({starts}), "
        "so gains over different starts do not compare."
    )


def _overlap_case(both: float, data: float, compute: float) -> str:
    """Which of the three readings an end-to-end rate gives, beside the two sides alone."""
    if both < 0.95 / (1 / data + 1 / compute):  # below the two taking turns, with 5 % to spare
        return "worse than turns"
    if both < 0.8 * min(data, compute):  # well below the slower side
        return "turns"
    if both > 1.05 * min(data, compute):  # above the slower side alone, with 5 % to spare
        return "above"
    return "overlap"


#: What each case adds to the reading.
_CASES = {
    "worse than turns": (
        " End to end is below even the two taking turns ({shared:,.0f}/s): "
        "something besides the two sides costs time when they run together (a Python "
        "feed and the training steps competing for the interpreter, say), so making either side "
        "cheaper pays, the faster one included."
    ),
    "turns": (
        " End to end is well below the slower of the two: the two take turns on the same cores "
        "rather than overlap, so making either side cheaper pays, the faster one included."
    ),
    "overlap": "",
    "above": (
        " End to end is above the slower side alone: the three are separate measurements, and a "
        "side timed alone ran slower than it does inside the job, which this reading does not "
        "explain; rerun before acting on it."
    ),
}
#: Each case as the clause "on this run ... could read either way" names it.
_WHETHER = {
    "worse than turns": "the two do worse than taking turns",
    "turns": "the two take turns",
    "overlap": "the two overlap",
    "above": "end to end beats the slower side alone",
}


def bound_reading(table: Any) -> str:
    """Input- or compute-bound, from a ``timing.compare`` table of "data only", "compute only"
    and "end to end" with ``items_per_s``: one computed line. Where the table keeps its raw
    timings and any side's quartiles, the others at their medians, fall on two sides of a line
    between readings, it says so."""
    data, compute, both = (
        float(table.at[k, "items_per_s"]) for k in ("data only", "compute only", "end to end")
    )
    shared = 1 / (1 / data + 1 / compute)  # the two one after the other on the same cores
    kind = (
        f"Input-bound: the pipeline alone gives {data:,.0f} examples/s, "
        f"less than the model takes ({compute:,.0f}/s)"
        if data < compute
        else f"Compute-bound: the model alone takes {compute:,.0f} examples/s, "
        f"less than the pipeline gives ({data:,.0f}/s)"
    )
    case = _overlap_case(both, data, compute)
    reading = (
        f"{kind}. End to end: {both:,.0f}/s, "
        f"{both / min(data, compute):.0%} of the slower of the two; "
        f"{shared:,.0f}/s is what to expect if the two took turns on the same cores, "
        f"{min(data, compute):,.0f}/s if they overlapped perfectly."
        + _CASES[case].format(shared=shared)
    )
    return reading + _spread_caveat(table, data, compute, both)


def _spread_caveat(table: Any, data: float, compute: float, both: float) -> str:
    """A sentence when some side's quartile rates give another reading than the medians: each of
    the three sides taken at its slow and its fast quartile, the other two at their medians."""
    timings = getattr(table, "attrs", {}).get("timings", {})
    medians = {"data only": data, "compute only": compute, "end to end": both}
    sides = {"end to end": "end to end", "data only": "the pipeline", "compute only": "the model"}

    def reading(rates: dict[str, float]) -> tuple[bool, str]:  # which bound, which overlap case
        d, c, b = rates["data only"], rates["compute only"], rates["end to end"]
        return d < c, _overlap_case(b, d, c)

    crossed, bound_flips, cases = [], False, {reading(medians)[1]}
    for key, name in sides.items():
        t = timings.get(key)
        if t is None or not t.items:
            continue
        slow, fast = t.items / t.q3, t.items / t.q1
        readings = {reading({**medians, key: rate}) for rate in (slow, fast)}
        if readings != {reading(medians)}:
            crossed.append(f"{name}'s quartiles span {slow:,.0f} to {fast:,.0f}/s")
            bound_flips |= any(bound != reading(medians)[0] for bound, _ in readings)
            cases |= {case for _, case in readings}
    if not crossed:
        return ""
    which = (
        "which side is the slower one"
        if bound_flips
        else "not which side is the slower one, but whether "
        + " or ".join(_WHETHER[c] for c in _WHETHER if c in cases)
    )
    return (
        f" But {' and '.join(crossed)}, across a line between these readings (times that jumped "
        f"between levels): on this run {which} could read either way, so rerun it, or let "
        "the trials below decide."
    )
