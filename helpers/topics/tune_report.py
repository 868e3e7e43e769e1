"""Notebook 16 and ``python -m helpers.tune``, the report: the trials ranked by measured gain with
spread, verdict, loss check and the change to make; the combined settings; a figure; and the same
as markdown and as a bench result (``helpers.results``) that ``bench --gather`` reads, so a team
can compare one job across machines.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from helpers import checks, fileio, results, timing, verdicts
from helpers.topics.tuning import (
    BASELINE,
    COMBINED,
    HAND,
    Outcome,
    loss_problem,
    measured,
    rate_ratio,
)


def _row(base: Outcome, outcome: Outcome) -> dict[str, Any]:
    trial = outcome.trial
    row = {"trial": trial.name, "examples/s": None, "gain": None, "gain q1-q3": "", "verdict": "",
           "loss": None, "runs": len(outcome.losses), "change": trial.code, "note": ""}
    if trial.skipped:
        return {**row, "verdict": "skipped", "note": trial.skipped}
    if outcome.error:
        return {**row, "verdict": "broke the job", "note": outcome.error}
    if not outcome.seconds or not base.seconds:
        return {**row, "verdict": "not run", "note": "the time budget ran out first"}
    gain, low, high = rate_ratio(base, outcome)
    problem = loss_problem(base, outcome)
    median = timing.Timing(trial.name, tuple(outcome.seconds)).median
    return {**row, "examples/s": round(outcome.examples / median, 1), "gain": round(gain, 2),
            "gain q1-q3": f"{low:.2f}-{high:.2f}", "verdict": "trains differently" if problem else
            verdicts._outcome(low, high, gain), "loss": round(sorted(outcome.losses)[len(outcome.losses) // 2], 4),
            "note": problem}


def table(outcomes: Mapping[str, Outcome], combined: Mapping[str, Outcome] | None = None) -> Any:
    """The ranked table: the job first, then trials by gain (measured ones first), then the
    combined run (measured against the job in a rotation of its own)."""
    import pandas as pd

    base = outcomes[BASELINE]
    rows = [_row(base, o) for name, o in outcomes.items() if name != BASELINE]
    rows.sort(key=lambda r: (r["gain"] is None, -(r["gain"] or 0)))
    first = _row(base, base) | {"verdict": "", "gain q1-q3": ""}
    if combined:
        rows.append(_row(combined[BASELINE], combined[COMBINED]))
    frame = pd.DataFrame([first, *rows]).set_index("trial")
    return frame


def faster(frame: Any) -> list[str]:
    """The trials whose verdict is "faster" (not the combined row), best first."""
    return [name for name, verdict in frame["verdict"].items() if verdict == "faster" and name != COMBINED]


def worth_retrying(frame: Any) -> list[str]:
    """Trials that did not pay alone but might once the bottleneck moves: no clear difference,
    or at most 10 % slower (not broken, skipped, unrun or training differently)."""
    return [name for name, r in frame.iterrows() if name not in (BASELINE, COMBINED)
            and r["verdict"] in ("no clear difference", "slower") and r["gain"] >= 0.9]


def summary(frame: Any, second: Any = None) -> str:
    """The report's reading, computed from the table (and ``second``, the trials tried again on
    top of the winners): what paid, what did not, what broke."""
    won = faster(frame)
    tried = int((frame["verdict"] != "skipped").sum()) - 1 - int(COMBINED in frame.index)
    gains = ", ".join(f"{n} ({frame.at[n, 'gain']:.2f}x)" for n in won)
    parts = [f"{len(won)} of {tried} trials made the job faster" + (f": {gains}." if won else ".")]
    unrun = int((frame["verdict"] == "not run").sum())
    if unrun:
        parts.append(f"{unrun} of them did not run within the time budget: give it more to measure them.")
    for label, verdict in (("made it slower", "slower"), ("broke the job", "broke the job"),
                           ("trained differently", "trains differently")):
        names = [n for n, v in frame["verdict"].items() if v == verdict]
        if names:
            parts.append(f"{', '.join(names)} {label}.")
    if second is not None:
        late = faster(second)
        parts.append(f"Tried again on top of the changes that paid, {len(late)} of {len(second) - 1} then paid"
                     + (": " + ", ".join(f"{n} ({second.at[n, 'gain']:.2f}x over them)" for n in late) + "." if late else "."))
    clashed = frame.attrs.get("clashes", {})
    if clashed:
        parts.append(" ".join(f"{n} was not combined: it sets what {better} sets, which gained more." for n, better in clashed.items()))
    if measured(frame, COMBINED):
        c = frame.loc[COMBINED]
        gains = [frame.at[n, "gain"] for n in won if n not in clashed]
        gains += [] if second is None else [second.at[n, "gain"] for n in faster(second)]
        product = math.prod(gains)
        low, high = timing.span(c["gain q1-q3"])
        inside = "inside" if low <= product <= high else "outside"
        parts.append(f"All of them together: {c['gain']:.2f}x (quartiles {c['gain q1-q3']}); the product of their gains "
                     f"measured {'one at a time' if second is None else 'alone and on top'} is {product:.2f}x, {inside} "
                     "that range: measure a combination, do not multiply.")
    return " ".join(parts)


def markdown(frame: Any, job: str, stamp: str, second: Any = None) -> str:
    """The report as markdown: the reading, the table, and the changes to make."""
    lines = [f"# Tuning report: {results.cell(job)}", "", f"Machine: {results.cell(stamp)}", "", summary(frame, second), "",
             "| trial | examples/s | gain | gain q1-q3 | verdict | loss | note |", "|---|--:|--:|---|---|--:|---|"]
    for name, r in frame.iterrows():
        cells = [name, r["examples/s"], r["gain"], r["gain q1-q3"], r["verdict"], r["loss"], r["note"]]
        lines.append("| " + " | ".join(results.cell("" if v is None or v != v else v) for v in cells) + " |")
    if second is not None:
        lines += ["", "## Tried again on top of the changes that paid", "", "| trial | gain over them | gain q1-q3 | verdict |",
                  "|---|--:|---|---|"]
        lines += ["| " + " | ".join(results.cell("" if v is None or v != v else v) for v in (n, r["gain"], r["gain q1-q3"],
                                                                                            r["verdict"])) + " |"
                  for n, r in second.iterrows() if n != BASELINE]
    clashed = frame.attrs.get("clashes", {})
    won = [n for n in faster(frame) if n not in clashed] + ([] if second is None else faster(second))
    if won:
        lines += ["", "## The changes that paid, best first", ""]
        for name in won:
            where = frame if name in faster(frame) else second
            lines += [f"- **{results.cell(name)}** ({where.at[name, 'gain']:.2f}x{'' if where is frame else ' on top'}):",
                      "", "  ```python", *(f"  {line}" for line in frame.at[name, "change"].splitlines()), "  ```"]
        lines += [f"- Not combined: {results.cell(n)} sets what {results.cell(b)} sets." for n, b in clashed.items()]
    return "\n".join(lines) + "\n"


@checks.arguments(quick=checks.flag)
def bench_result(frame: Any, outcomes: Mapping[str, Outcome], job: str, machine: dict[str, Any], stamp: str,
                 started: str, quick: bool) -> dict[str, Any] | None:
    """The measured trials as one bench result (``helpers.results``), ids ``tune.<job>.<trial>``;
    None when the budget ended before any trial beside the job's own run was measured."""
    from helpers import stamp as stamps

    slug = re.sub(r"[^A-Za-z0-9_]+", "_", Path(job).stem).strip("_") or "job"
    records = []
    for name, r in frame.iterrows():
        if r["gain"] is None or r["gain"] != r["gain"] or name == BASELINE:
            continue
        low, high = timing.span(r["gain q1-q3"])
        records.append({"id": f"tune.{slug}.{re.sub(r'[^A-Za-z0-9_]+', '_', name).strip('_')}"[:120],
                        "speedup": float(r["gain"]), "spread": [low, high], "baseline": BASELINE, "variant": name,
                        "repeats": len(outcomes[name].seconds) if name in outcomes else 1,
                        "note": f"{r['verdict']}; {r['change']}"[:2000]})
    if not records:  # a bench result compares something: with nothing measured there is none to write
        return None
    data = {"machine": machine, "workbook": stamps.workbook_version(), "stamp": stamp, "quick": quick, "started": started,
            "comparisons": records}
    return results.check(data)


def save(folder: str | Path, frame: Any, data: dict[str, Any] | None, text: str) -> tuple[Path, ...]:
    """Write ``report.md`` and, when a trial was measured (``data``), ``report.json`` into
    ``folder`` (whole files or none); a ``report.json`` of an earlier run is removed otherwise."""
    import json

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    md, js = folder / "report.md", folder / "report.json"
    fileio.atomic_write_text(md, text)
    if data is None:
        js.unlink(missing_ok=True)  # it would describe another run than report.md
        return (md,)
    fileio.atomic_write_text(js, json.dumps(data, indent=1) + "\n")
    return md, js


def figure(frame: Any, title: str = "") -> Any:
    """Gain of each measured trial over the job, with its quartile range; 1.0 marked."""
    import matplotlib.pyplot as plt

    measured = frame[frame["gain"].notna()].drop(index=BASELINE, errors="ignore")
    fig, ax = plt.subplots(figsize=(7, 0.45 * max(3, len(measured)) + 1))
    names = list(measured.index)[::-1]
    gains = [float(measured.at[n, "gain"]) for n in names]
    spans = [timing.span(measured.at[n, "gain q1-q3"]) for n in names]
    colors = ["tab:green" if measured.at[n, "verdict"] == "faster" else
              "tab:red" if measured.at[n, "verdict"] in ("slower", "trains differently") else "tab:gray" for n in names]
    ax.barh(names, gains, color=colors,
            xerr=[[g - lo for g, (lo, _) in zip(gains, spans, strict=True)], [hi - g for g, (_, hi) in zip(gains, spans, strict=True)]])
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
    naive, own = rate[HAND[0]][0], rate[BASELINE][0]
    who = "the tuner's settings" if frame.attrs.get("changed", True) else "the job as it is (no change paid within the budget)"
    if mine_lo <= theirs_hi and theirs_lo <= mine_hi:
        reading = "their quartile ranges overlap: this run does not tell the two apart"
    else:
        reading = f"their quartile ranges do not overlap: {'the hand-tuned job' if theirs > mine else 'the tuner'} was faster on this run"
    return (f"In one rotation of fresh processes, {who} ran the job at {mine:,.0f} examples/s and notebook 14's hand-tuned "
            f"job at {theirs:,.0f}/s: {mine / theirs:.0%} of its speed ({reading}). Over the same start, notebook 14's naive "
            f"job ({naive:,.0f}/s), that is {mine / naive:.2f}x against {theirs / naive:.2f}x. Over its own start, the job as "
            f"model.fit runs it ({own:,.0f}/s), the tuner gained {mine / own:.2f}x: model.fit runs the naive job "
            f"{own / naive:.2f}x as fast as the capstone's own loop, so gains over different starts do not compare.")


def bound_reading(table: Any) -> str:
    """Input- or compute-bound, from a ``timing.compare`` table of "data only", "compute only"
    and "end to end" with ``items_per_s``: one computed line."""
    data, compute, both = (float(table.at[k, "items_per_s"]) for k in ("data only", "compute only", "end to end"))
    shared = 1 / (1 / data + 1 / compute)  # the two one after the other on the same cores
    kind = (f"Input-bound: the pipeline alone gives {data:,.0f} examples/s, less than the model takes ({compute:,.0f}/s)"
            if data < compute else
            f"Compute-bound: the model alone takes {compute:,.0f} examples/s, less than the pipeline gives ({data:,.0f}/s)")
    if both < 0.95 * shared:
        turns = (f" End to end is below even the two taking turns ({shared:,.0f}/s): something besides the two sides costs time "
                 "when they run together (a Python "
                 "feed and the training steps competing for the interpreter, say), so making either side cheaper pays, the "
                 "faster one included.")
    elif both < 0.8 * min(data, compute):
        turns = (" End to end is well below the slower of the two: the two take turns on the same cores rather than overlap, "
                 "so making either side cheaper pays, the faster one included.")
    else:
        turns = ""
    return (f"{kind}. End to end: {both:,.0f}/s, {both / min(data, compute):.0%} of the slower of the two; "
            f"{shared:,.0f}/s is what to expect if the two took turns on the same cores, "
            f"{min(data, compute):,.0f}/s if they overlapped perfectly.{turns}")
