"""The capstone of notebook 14, its plumbing: rotating rounds of the stages (each a fresh process,
``capstone_stages``), which stages this machine skips, the results table, the report of each
stage's change beside its gain, the figure and the bench id.

The job itself (model, training step, input per stage, the stages and the program
``CAPSTONE_CHILD`` that runs one of them in a fresh process) is the notebook's lesson code,
imported from ``helpers.lessons.profile_and_tune_a_job``.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from helpers import checks, env, procs, timing, verdicts
from helpers.checks import whole_number
from helpers.comparison import Comparison
from helpers.timing import ProgressFn
from helpers.timing_stats import Timing

# Notebook 14 calls stage_diff as ``capstone.stage_diff``; tuning.head_to_head calls lesson, names
# and run_stage as ``capstone.*`` (and a test patches ``capstone.run_stage`` there).
from helpers.topics.profile_and_tune_a_job.capstone_stages import (
    lesson,
    names,
    run_stage,
    spread_line,
    stage_diff,
)
from helpers.topics.tune_input_pipeline import pipelines

LARGEST_BATCH = 128


def skipped(cpuinfo: str | None = None, onednn: bool | None = None) -> dict[int, str]:
    """Stages this machine cannot gain from, with the reason: mixed_bfloat16 where TensorFlow's
    kernels emulate bfloat16 (``env.bf16_kernels``: no instructions, oneDNN off, or capped)."""
    fast, why = env.bf16_kernels(cpuinfo, onednn)
    if fast:
        return {}
    return {
        i: why
        for i, (_, change) in enumerate(lesson().STAGES)
        if change.get("policy") == "mixed_bfloat16"
    }


@checks.arguments(timeout=checks.timeout)
def run_stages(
    workdir: str | Path,
    n_images: int = 2048,
    epochs: int = 3,
    stages: Sequence[int] | None = None,
    rounds: int = 1,
    timeout: float = 900.0,
    on_progress: ProgressFn | None = None,
) -> Any:
    """Each stage (all by default) in its own fresh process running ``CAPSTONE_CHILD``, on the
    same ``n_images`` images, ``rounds`` times in rotation. A run is one process, read at its
    median epoch: epochs of one process share its memory layout and thread placement and are
    expected to differ less than two processes do (``spread`` sets the two side by side), so the
    spread and the verdicts count processes, not epochs (the epochs stay in
    ``attrs["epoch_seconds"]``). Per stage: images/s at the median run with its
    IQR, the gain over the stage before and over the naive job (``skipped`` stages: no run)."""
    chosen = list(range(len(names()))) if stages is None else list(stages)
    if not chosen or any(not isinstance(i, int) or not 0 <= i < len(names()) for i in chosen):
        raise ValueError(f"stages must be indices between 0 and {len(names()) - 1}, got {stages!r}")
    for name, value in (("epochs", epochs), ("rounds", rounds), ("n_images", n_images)):
        whole_number(name, value)
    if n_images % LARGEST_BATCH:
        raise ValueError(
            f"n_images must be a multiple of {LARGEST_BATCH} (the largest batch), got {n_images}"
        )
    skip = skipped()
    shard_dir = (Path(workdir) / f"capstone-{n_images}").resolve()
    pipelines.make_jpeg_shards(shard_dir, n_images)
    run = [i for i in chosen if i not in skip]
    epoch_seconds: dict[int, list[list[float]]] = {i: [] for i in run}
    with procs.programs({"capstone_child.py": lesson().CAPSTONE_CHILD}) as files:
        program = files["capstone_child.py"]
        for r in range(rounds):
            for n, index in enumerate(timing.rotated(run, r), start=1):
                epoch_seconds[index].append(
                    run_stage(program, index, shard_dir, n_images, epochs, skip, timeout)
                )
                if on_progress is not None:
                    on_progress(r * len(run) + n, rounds * len(run))
    timings = {i: timing.per_run(names()[i], epoch_seconds[i], n_images) for i in run}
    table = stage_table(timings, chosen, skip)
    table.attrs["epoch_seconds"] = {names()[i]: epoch_seconds[i] for i in run}
    return table


def stage_verdicts(table: Any, expect: Mapping[str, tuple[str, str]]) -> list[str]:
    """A computed line per stage that ran: its gain over the stage run before it, read against
    ``expect`` (stage name -> (direction, why), as ``verdicts.verdict`` takes them) when that
    stage is the one just before it in the job (only skipped stages between); a stage compared
    across stages that were not chosen gets no expectation, since its gain is several changes'."""
    timings, order = table.attrs["timings"], {name: i for i, name in enumerate(names())}
    skip = {names()[i] for i in table.attrs.get("skip", {})}
    lines, before = [], None
    for name in table.index:
        if name not in timings:
            lines.append(f"{name}: {table.loc[name, 'note']}")
            continue
        if before is not None:
            pair = timing.comparison_table({before: timings[before], name: timings[name]}, before)
            between = [n for n in names()[order[before] + 1 : order[name]] if n not in skip]
            direction, why = (None, "") if between else expect.get(name, (None, ""))
            lines.append(verdicts.verdict(pair, name, before, expect=direction, why=why))
        before = name
    return lines


def spread(table: Any) -> str:
    """``spread_line`` for what ``run_stages`` returned: epochs within a process, runs between."""
    return spread_line(table.attrs["epoch_seconds"])


def _ratio(base: Timing, t: Timing) -> tuple[float, float, float]:
    return base.median / t.median, *verdicts.quartile_ratios(base.q1, base.q3, t.q1, t.q3)


def stage_table(timings: dict[int, Timing], chosen: Sequence[int], skip: dict[int, str]) -> Any:
    """The results table from each run stage's timings, one per run (equal images per epoch)."""
    import pandas as pd

    rows, before, first, exact = [], None, None, {}
    for i in chosen:
        row: dict[str, Any] = {"stage": names()[i]}
        t = timings.get(i)
        if t is None:
            row["note"] = "skipped: " + skip.get(i, "not run")
        else:
            first = first or t
            gain = _ratio(before, t) if before else (math.nan,) * 3
            total = _ratio(first, t)
            exact.update({row["stage"]: gain} if before else {})
            row.update(
                {
                    "images/s": round(t.throughput or 0.0),
                    "q1-q3 images/s": f"{t.items / t.q3:.0f}-{t.items / t.q1:.0f}",
                    "gain": round(gain[0], 2),
                    "gain q1-q3": f"{gain[1]:.2f}-{gain[2]:.2f}" if before else "",
                    "cumulative": round(total[0], 2),
                    "cumulative q1-q3": f"{total[1]:.2f}-{total[2]:.2f}",
                    "note": "",
                }
            )
            before = t
        rows.append(row)
    table = pd.DataFrame(rows).set_index("stage")
    table.attrs["timings"] = {names()[i]: t for i, t in timings.items()}
    table.attrs["skip"] = dict(skip)
    table.attrs["exact gains"] = exact  # unrounded (median, low, high): the summary's ties
    return table


def report(table: Any) -> str:
    """Each stage's code change (against the stage run before it) beside its measured gain and
    the cumulative speed-up."""
    lines, index, before = [], {name: i for i, name in enumerate(names())}, None
    for name, row in table.iterrows():
        if not isinstance(row.get("images/s"), int | float) or math.isnan(row["images/s"]):
            lines.append(f"{name}: {row['note']}")
        elif row["gain"] != row["gain"]:  # NaN: the first stage run
            lines.append(f"{name}: {row['images/s']:.0f} images/s")
        else:
            lines.append(
                f"{name}: {row['gain']:.2f}x (quartile ratios {row['gain q1-q3']}x), "
                f"cumulative {row['cumulative']:.2f}x"
            )
        if before is not None and row["note"] == "":
            lines += [
                f"    {line}"
                for line in stage_diff(index[name], tuple(table.attrs.get("skip", {})), before)
            ]
        before = index[name] if row["note"] == "" else before
    return "\n".join(lines)


def capstone_figure(table: Any, title: str = "") -> Any:
    """Images per second per stage, whiskers from the quartile runs, with the cumulative speed-up
    and its quartile range at the end of each bar."""
    from matplotlib.figure import Figure

    speeds = list(table["images/s"].fillna(0)) if "images/s" in table else [0] * len(table)
    spans = [timing.span(row.get("q1-q3 images/s")) for _, row in table.iterrows()]
    low = [
        max(0.0, v - a) if a is not None else 0.0 for v, (a, _) in zip(speeds, spans, strict=True)
    ]
    high = [
        max(0.0, b - v) if b is not None else 0.0 for v, (_, b) in zip(speeds, spans, strict=True)
    ]
    fig = Figure(figsize=(9, 0.45 * len(table) + 1.4), layout="constrained")
    ax = fig.subplots()
    ax.barh(list(table.index), speeds, color="tab:green", xerr=[low, high], capsize=3)
    for i, (speed, (_, row)) in enumerate(zip(speeds, table.iterrows(), strict=True)):
        label = (
            f" {row['cumulative']:.2f}x ({row.get('cumulative q1-q3', '')})"
            if speed
            else " skipped"
        )
        ax.text(speed + high[i], i, label, va="center", fontsize=9)
    ax.invert_yaxis()
    ax.set_xlabel(
        "training images per second, median run (whiskers: quartile runs; a run is one fresh\n"
        "process, read at its median epoch)\n"
        "at each bar: the cumulative speed-up over the first stage (its quartile range)"
    )
    ax.set_xlim(0, max(v + h for v, h in zip(speeds, high, strict=True)) * 1.3 or 1)
    if title:
        ax.set_title(title)
    return fig


def capstone_summary(table: Any) -> str:
    """The cumulative speed-up, and the stage that gained most: every stage that clearly gained
    (its gain's quartile ratios above 1x) and whose range reaches the biggest one's is named with
    it, since a lead inside the spread is not a win. From one run per stage, no step is judged."""
    ran = table.dropna(subset=["images/s"])
    runs = min(t.count for t in table.attrs["timings"].values())
    if runs < verdicts.MIN_RUNS:
        return (
            f"{ran.index[0]} -> {ran.index[-1]}: {ran['cumulative'].iloc[-1]:.2f}x in all, from "
            f"{runs} run per stage: no spread to judge any step by; choose more rounds."
        )
    head = (
        f"{ran.index[0]} -> {ran.index[-1]}: {ran['cumulative'].iloc[-1]:.2f}x in all "
        f"(quartile ratios {ran['cumulative q1-q3'].iloc[-1]}x)"
    )
    steps = ran[ran["gain"].notna()]
    if steps.empty:
        return head
    exact = table.attrs.get("exact gains", {})  # a table read back from a file has the rounded
    gain = {
        n: exact.get(n, (r["gain"], *timing.span(r["gain q1-q3"]))) for n, r in steps.iterrows()
    }
    best = max(gain, key=lambda n: gain[n][0])

    def said(n: str) -> str:  # the ends as verdicts prints them: a low end of 1.003 is not "1.00"
        low, high = (verdicts._two(v) for v in gain[n][1:])
        return f"{gain[n][0]:.2f}x, quartile ratios {low}-{high}x"

    if gain[best][1] <= 1.0:
        return f"{head}; no single step gained clearly (the largest, {best}, {said(best)})"
    # a step whose spread reaches below 1x may not have gained at all
    tied = [n for n in gain if n != best and gain[n][2] >= gain[best][1] and gain[n][1] > 1.0]
    named = ", ".join(f"{n} ({said(n)})" for n in [best, *sorted(tied, key=lambda n: -gain[n][0])])
    return f"{head}; " + (
        f"the biggest single step: {named}"
        if not tied
        else f"the biggest single steps, their quartile ratios overlapping: {named}"
    )


def _naive_vs_tuned(n_images: int = 2048, epochs: int = 3, rounds: int = 2) -> Any:
    with tempfile.TemporaryDirectory() as workdir:
        table = run_stages(workdir, n_images, epochs, rounds=rounds)
    timings = table.attrs["timings"]
    first, last = next(iter(timings)), list(timings)[-1]
    result = timing.comparison_table(
        {
            "naive": replace(timings[first], label="naive"),
            "tuned": replace(timings[last], label="tuned"),
        },
        "naive",
    )
    result.attrs["note"] = "; ".join(
        f"{name}: {row['note']}"
        if row["note"]
        else f"{name} {row['cumulative']:.2f}x"
        + (f" (step {row['gain']:.2f}x)" if row["gain"] == row["gain"] else "")
        for name, row in table.iterrows()
    )
    return result


BENCHMARKS = [
    Comparison(
        id="profile_and_tune_a_job.naive_vs_tuned",
        title=(
            "training job, fresh process per stage, rotated rounds: "
            "naive vs every stage applied (note: cumulative per stage)"
        ),
        measure=_naive_vs_tuned,
        baseline="naive",
        variant="tuned",
        quick={"n_images": 256, "epochs": 2, "rounds": 3},  # a comparison needs 3 runs a side
        full={"n_images": 2048, "epochs": 3, "rounds": 3},
    ),
]
