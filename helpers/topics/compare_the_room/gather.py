"""Gather a room's benchmark results into one table and one figure (a workshop's last half hour).

Every participant runs ``make bench ARGS=--quick``, which writes ``data/results/bench.json``;
the facilitator collects the files into one folder (any names, any subfolders) and runs

    python -m helpers.bench --gather FOLDER

which prints each comparison's speed-up per machine, the machines' stamps, the comparisons whose
direction disagrees between machines, and writes ``FOLDER/gathered.md`` and ``gathered.png``.
A file that is not a bench result is skipped with the reason; the rest is still gathered.
Reading and checking the files is ``gather_files``'s part (``load`` is re-exported here).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from helpers import fileio
from helpers.results import KINDS
from helpers.topics.compare_the_room.gather_files import (
    GatherError,
    Result,
    load,
)  # load and label_of re-exported: notebook 15 calls them
from helpers.topics.compare_the_room.gather_files import label_of as label_of


def table(results: Sequence[Result], kind: str = "speed-up") -> Any:
    """One ``kind`` of ratio (``results.KINDS``; speed-ups by default): one row per comparison id
    that records it, one column per machine (NaN where it was not run)."""
    import pandas as pd

    from helpers.results import kind as kind_of

    ids = sorted({i for r in results for i, record in r.records.items() if kind_of(record) == kind})
    return pd.DataFrame(
        {
            r.label: [r.records[i]["speedup"] if i in r.records else math.nan for i in ids]
            for r in results
        },
        index=pd.Index(ids, name="comparison"),
    )


def compared(results: Sequence[Result]) -> dict[str, str]:
    """What each comparison id compares, "baseline -> variant", from the records (both fields are
    optional in a result file: "?" where one is missing); ids do not all name the baseline first."""
    return {
        i: f"{record.get('baseline', '?')} -> {record.get('variant', '?')}"
        for r in results
        for i, record in r.records.items()
    }


def one_run(record: dict[str, Any]) -> bool:
    """A record from a single run of each side: its spread says nothing of a rerun. That is one
    repeat, or one fresh process (``params`` with ``rounds`` 1): repeats or epochs inside one
    process share its memory layout and threads, and differ less than two processes do (results
    the quick bench once recorded in one process a side hold such spreads)."""
    params = record.get("params")
    rounds = params.get("rounds", 2) if isinstance(params, dict) else 2
    return record.get("repeats", 2) < 2 or (isinstance(rounds, int) and rounds < 2)


def disagreements(results: Sequence[Result]) -> list[str]:
    """Speed-ups that are clearly faster on some machines and clearly slower on others (the whole
    spread of the runs, from their quartiles, above 1 on one, below 1 on another). A single run
    (``one_run``) has no spread, so it counts for neither."""
    lines = []
    for i in table(results).index:
        measured = [r for r in results if i in r.records and not one_run(r.records[i])]
        wins = [r.label for r in measured if r.records[i]["spread"][0] > 1]
        losses = [r.label for r in measured if r.records[i]["spread"][1] < 1]
        if wins and losses:
            lines.append(f"{i}: faster on {', '.join(wins)}; slower on {', '.join(losses)}")
    return lines


def both_ways(results: Sequence[Result]) -> list[str]:
    """Speed-ups whose medians lie clearly on both sides of 1x (by more than
    ``verdicts.MIN_EFFECT``) that ``disagreements`` cannot judge: somewhere the spread crosses 1x,
    or the record is a single run. Rows to rerun before the room explains them."""
    from helpers.verdicts import MIN_EFFECT

    judged = {line.split(":")[0] for line in disagreements(results)}
    lines = []
    for i, row in table(results).iterrows():
        up = [r.label for r in results if row[r.label] > 1 + MIN_EFFECT]
        down = [r.label for r in results if row[r.label] < 1 / (1 + MIN_EFFECT)]
        if i in judged or not (up and down):
            continue
        single = [n for n in up + down if one_run(_record(results, n, i))]
        spreads = {n: _record(results, n, i)["spread"] for n in up + down}
        crossing = [n for n, (low, high) in spreads.items() if low <= 1 <= high]  # no side there
        why = (
            f"a single run a side on {', '.join(single)}"
            if single
            else f"the spread crosses 1x on {', '.join(crossing)}"
        )
        lines.append(f"{i}: faster on {', '.join(up)}; slower on {', '.join(down)} ({why})")
    return lines


def _record(results: Sequence[Result], label: str, comparison: str) -> dict[str, Any]:
    """The record of ``comparison`` on the machine called ``label``."""
    return next(r for r in results if r.label == label).records[comparison]


def missing(results: Sequence[Result]) -> list[str]:
    """Comparisons some machines did not run."""
    every = {i for r in results for i in r.records}
    return [
        f"{i}: not run on {', '.join(r.label for r in results if i not in r.records)}"
        for i in sorted(every)
        if any(i not in r.records for r in results)
    ]


_WHISKERS = {"fmt": "none", "ecolor": "black", "capsize": 2}  # a label "_..." stays off the legend


def figure(results: Sequence[Result], title: str = "") -> Any:
    """Each comparison's speed-up per machine (log scale; 1x marked), machines named by their
    stamps. Other ratios (size ratios, shares of a bound) are not speed-ups: ``markdown`` lists
    them."""
    import matplotlib
    import numpy as np
    from matplotlib.figure import Figure

    from helpers import stamp

    speedups = table(results)
    ids, n = list(speedups.index), len(results)
    height_in = 1.2 + min(0.28 * len(ids) * max(n, 2), 36) + 0.2 * n  # a big room: thinner bars
    fig = Figure(figsize=(8, height_in), layout="constrained")
    ax = fig.add_subplot()
    colors = matplotlib.colormaps["tab10" if n <= 10 else "tab20"]  # beyond 20 colours repeat
    height = 0.8 / n
    for k, r in enumerate(results):
        y = np.arange(len(ids)) + k * height
        values = speedups[r.label].to_numpy()
        spread = {  # no whiskers where there is no spread to judge: one run, or one process, a side
            i: r.records[i]["spread"] for i in ids if i in r.records and not one_run(r.records[i])
        }
        values = np.nan_to_num(values, nan=1.0)  # a comparison not run: no bar
        ax.barh(
            y,
            values - 1.0,
            left=1.0,
            height=height,
            color=colors(k % colors.N),
            label=f"{r.label}: {r.stamp}",
        )  # from 1x: right is faster, left is slower
        at = [n for n, i in enumerate(ids) if i in spread]  # whiskers (and caps) only there
        low = [max(values[n] - spread[ids[n]][0], 0) for n in at]
        high = [max(spread[ids[n]][1] - values[n], 0) for n in at]
        ax.errorbar(values[at], y[at], xerr=[low, high], label=f"_whiskers {r.label}", **_WHISKERS)
        # records without a spread: a hatched layer over their bars (hatching a bar itself would
        # hatch the legend's key wherever a machine's first bar is such a record)
        one = [n for n, i in enumerate(ids) if i in r.records and i not in spread]
        hatch = {"fill": False, "hatch": "///", "label": f"_hatched {r.label}"}
        ax.barh(y[one], values[one] - 1.0, left=1.0, height=height, **hatch)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xscale("log")
    ticks = [
        t for t in (0.1, 0.2, 0.5, 1, 2, 5, 10, 20) if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]
    ] or [1]
    ax.set_xticks(ticks, [f"{t:g}x" for t in ticks])
    ax.minorticks_off()
    ax.set_yticks(np.arange(len(ids)) + 0.4 - height / 2, ids, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(  # three short lines: the ids (<notebook>.<name>) take much of the width
        "speed-up of the variant over the baseline (log scale)\nwhiskers: spread of the runs\n"
        "hatched: one run or process a side, no spread"
    )
    others = sum(len(table(results, k)) for k in KINDS if k != "speed-up")
    ax.set_title(
        (title or f"{len(ids)} speed-ups from {n} bench results")
        + (
            f"\n({others} other ratios, such as sizes, are in the table, not drawn)"
            if others
            else ""
        ),
        fontsize=10,
    )
    fig.legend(
        loc="outside upper center", fontsize=7, ncols=1, frameon=False
    )  # the stamp takes the foot
    days = sorted({r.stamp.rsplit(" · ", 1)[-1] for r in results})
    stamp.on_figure(
        fig,
        f"gathered from {n} bench results · {days[0]}"
        + (f" to {days[-1]}" if len(days) > 1 else ""),
    )
    return fig


def markdown(results: Sequence[Result], notes: Sequence[str] = ()) -> str:
    """The gathered speed-ups, then the other ratios by kind, the machines, and what disagrees or is
    missing, as markdown. A speed-up from a single run of each side is marked "(1 run)" (a size
    is measured once, by nature)."""
    from helpers.results import cell

    labels = [cell(r.label) for r in results]  # folder names: a '|' would split the table
    lines = []
    for kind, meaning in KINDS.items():
        rows = table(results, kind)
        if rows.empty:
            continue
        if kind != "speed-up":
            lines += ["", f"Not speed-ups, {kind} ({meaning}):", ""]
        lines += ["| comparison | " + " | ".join(labels) + " |", "|---|" + "---:|" * len(labels)]
        for i, row in rows.iterrows():
            speed = kind == "speed-up"
            values = [
                "-"
                if math.isnan(v)
                else f"{v:.2f}"
                + ("x" if speed else "")
                + (" (1 run)" if speed and one_run(r.records[i]) else "")
                for r, v in zip(results, row, strict=True)
            ]
            lines.append(f"| {i} | " + " | ".join(values) + " |")
    lines += ["", "Machines:"] + [
        f"- {cell(r.label)}: {cell(r.stamp)} (workbook {cell(r.workbook)})" for r in results
    ]
    for heading, items in (
        ("Disagree in direction", disagreements(results)),
        ("Medians both ways, not judged", both_ways(results)),
        ("Missing", missing(results)),
        ("Notes", list(notes)),
    ):
        if items:
            lines += ["", f"{heading}:"] + [f"- {cell(item)}" for item in items]
    return "\n".join(lines)


def main(folder: str | Path) -> int:
    """``bench --gather FOLDER``: print the markdown, write gathered.md and gathered.png beside
    the results; one clear line and exit code 1 when nothing can be gathered."""
    from helpers import widgets

    try:
        results, notes = load(folder)
    except GatherError as exc:
        print(f"bench --gather: {exc}", file=sys.stderr)
        return 1
    text = markdown(results, notes)
    print(text)
    fileio.atomic_write_text(Path(folder) / "gathered.md", text + "\n")
    fileio.atomic_write_bytes(Path(folder) / "gathered.png", widgets.png(figure(results)))
    print(f"\nwrote {Path(folder) / 'gathered.md'} and gathered.png")
    return 0


# --- notebook 15's widget: gather any folder live --------------------------------------------


def room_table(folder: str | Path, on_progress: Any = None) -> Any:
    """The gathered speed-ups of ``folder`` as a table; the results and notes ride along in
    ``table.attrs`` for ``room_figure`` and ``room_summary``."""
    results, notes = load(folder)
    speedups = table(results)
    speedups.attrs.update(results=results, notes=notes)
    if on_progress is not None:
        on_progress(1, 1)
    return speedups


def room_figure(speedups: Any, title: str = "") -> Any:
    """``figure`` of the results a ``room_table`` gathered."""
    return figure(speedups.attrs["results"], title)


def room_summary(speedups: Any) -> str:
    """One line: how many machines and comparisons, which disagree in direction, which point both
    ways unjudged (to rerun), and the notes (files skipped, versions mixed, copies)."""
    results = speedups.attrs["results"]
    split = [line.split(":")[0] for line in disagreements(results)]
    unjudged = [line.split(":")[0] for line in both_ways(results)]
    return (
        f"{len(results)} machines, {len(speedups)} comparisons; "
        + (
            f"{len(split)} disagree in direction: {', '.join(split)}"
            if split
            else "none disagrees in direction"
        )
        + (f"; medians both ways, not judged: {', '.join(unjudged)}" if unjudged else "")
        + (f"; notes: {' | '.join(speedups.attrs['notes'])}" if speedups.attrs["notes"] else "")
    )


# Notebook 15 calls gather.check_most_varied: the exercise check lives in its own module.
from helpers.topics.compare_the_room.gather_check import (  # noqa: E402
    check_most_varied as check_most_varied,
)
