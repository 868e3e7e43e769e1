"""Notebook 16 and ``python -m helpers.tune``, the report: the trials ranked by measured gain with
spread, verdict, loss check and the change to make; the combined settings; and the same as
markdown. The files it writes (with the bench result ``bench --gather`` reads) are in
``tune_files``; the notebook's figure and readings in ``tune_readings``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from helpers import results, timing, verdicts
from helpers.topics.tune_your_own_job.tune_readings import (  # re-exported: notebook 16 calls them
    bound_reading as bound_reading,
)
from helpers.topics.tune_your_own_job.tune_readings import (
    figure as figure,
)
from helpers.topics.tune_your_own_job.tune_readings import (
    head_to_head_reading as head_to_head_reading,
)
from helpers.topics.tune_your_own_job.tuning_trials import (
    BASELINE,
    COMBINED,
    Outcome,
    loss_problem,
    measured,
    rate_ratio,
)

#: The verdict of a trial with fewer than ``verdicts.MIN_RUNS`` runs, or against a job with fewer:
#: its gain is shown, not judged (one process's reading is no spread).
TOO_FEW = "too few runs"


def _row(base: Outcome, outcome: Outcome) -> dict[str, Any]:
    trial = outcome.trial
    row = {
        "trial": trial.name,
        "examples/s": None,
        "gain": None,
        "gain q1-q3": "",
        "verdict": "",
        "loss": None,
        "runs": len(outcome.seconds),
        "change": trial.code,
        "note": "",
    }
    if trial.skipped:
        return {**row, "verdict": "skipped", "note": trial.skipped}
    if outcome.error:
        return {**row, "verdict": "broke the job", "note": outcome.error}
    if not outcome.seconds or not base.seconds:
        return {**row, "verdict": "not run", "note": "the time budget ran out first"}
    gain, low, high = rate_ratio(base, outcome)
    median = timing.Timing(trial.name, tuple(outcome.seconds)).median
    runs, theirs = len(outcome.seconds), len(base.seconds)
    verdict, note = "trains differently", loss_problem(base, outcome)
    if not note and min(runs, theirs) < verdicts.MIN_RUNS:
        verdict = TOO_FEW
        note = (
            f"{runs} run{'' if runs == 1 else 's'} against the job's {theirs}: "
            f"a verdict needs {verdicts.MIN_RUNS} of each"
        )
    elif not note:
        verdict = verdicts.outcome(low, high, gain)
    return {
        **row,
        "examples/s": round(outcome.examples / median, 1),
        "gain": round(gain, 2),
        "gain q1-q3": f"{low:.2f}-{high:.2f}",
        "verdict": verdict,
        "loss": round(sorted(outcome.losses)[len(outcome.losses) // 2], 4),
        "note": note,
    }


def table(outcomes: Mapping[str, Outcome], combined: Mapping[str, Outcome] | None = None) -> Any:
    """The ranked table: the job first, then trials by gain (measured ones first), then the
    combined run (measured against the job in a rotation of its own)."""
    import pandas as pd

    base = outcomes[BASELINE]
    rows = [_row(base, o) for name, o in outcomes.items() if name != BASELINE]
    rows.sort(key=lambda r: (r["gain"] is None, -(r["gain"] or 0)))
    first = _row(base, base) | {"verdict": "", "gain q1-q3": "", "note": ""}
    exact = {  # unrounded gains, for the summary's product
        n: rate_ratio(base, o)
        for n, o in outcomes.items()
        if n != BASELINE and o.seconds and base.seconds
    }
    if combined:
        rows.append(_row(combined[BASELINE], combined[COMBINED]))
        if combined[COMBINED].seconds and combined[BASELINE].seconds:
            exact[COMBINED] = rate_ratio(combined[BASELINE], combined[COMBINED])
    frame = pd.DataFrame([first, *rows]).set_index("trial")
    frame.attrs["exact"] = exact
    if COMBINED in exact:  # the job's rerun that the combined gain is over, in examples/s
        frame.attrs["rerun"] = _row(combined[BASELINE], combined[BASELINE])["examples/s"]
    return frame


def _exact(frame: Any, name: str) -> tuple[float, float, float]:
    """A row's gain and quartile range before the table rounded them (a table read back from a
    file has only the rounded ones)."""
    if name in frame.attrs.get("exact", {}):
        return frame.attrs["exact"][name]
    low, high = timing.span(frame.at[name, "gain q1-q3"])
    return frame.at[name, "gain"], low, high


def faster(frame: Any) -> list[str]:
    """The trials whose verdict is "faster" (not the combined row), best first."""
    return [
        name
        for name, verdict in frame["verdict"].items()
        if verdict == "faster" and name != COMBINED
    ]


def worth_retrying(frame: Any) -> list[str]:
    """Trials that did not pay alone but might once the bottleneck moves: no clear difference,
    whatever the median (a spread that wide is no verdict), or clearly slower by at most 10 % (not
    broken, skipped, unrun or training differently)."""
    return [
        name
        for name, r in frame.iterrows()
        if name not in (BASELINE, COMBINED)
        and (
            r["verdict"] == "no clear difference" or (r["verdict"] == "slower" and r["gain"] >= 0.9)
        )
    ]


def summary(frame: Any, second: Any = None) -> str:
    """The report's reading, computed from the table (and ``second``, the trials tried again on
    top of the winners): what paid, what did not, what broke."""
    won = faster(frame)
    said = frame["verdict"]
    trials = [n for n, v in said.items() if n not in (BASELINE, COMBINED) and v != "skipped"]
    unrun = sum(said[n] == "not run" for n in trials)  # counted apart: neither paid nor not
    few = [n for n in trials if said[n] == TOO_FEW]  # ran, but too few times to judge
    ran, gains = len(trials) - unrun, ", ".join(f"{n} ({frame.at[n, 'gain']:.2f}x)" for n in won)
    judged = ran - len(few)
    counted = ("the " if unrun or few else "") + f"{judged} trial{'' if judged == 1 else 's'}"
    counted += " judged" if few else " that ran" if unrun else ""
    parts = [f"{len(won)} of {counted} made the job faster" + (f": {gains}." if won else ".")]
    if not judged:
        parts = ["No trial ran."] if not ran else ["No trial ran often enough to judge."]
    if few:
        parts.append(
            f"{', '.join(few)} ran fewer than {verdicts.MIN_RUNS} times within the time budget "
            "(or against fewer runs of the job), too few to judge: give it more."
        )
    if unrun:
        more = "more " if ran else ""
        parts.append(
            f"{unrun} {more}did not run within the time budget: give it more to measure them."
        )
    if COMBINED in frame.index and said[COMBINED] == "not run":
        parts.append("The changes that paid were not run together within the time budget.")
    for label, verdict in (
        ("made it slower", "slower"),
        ("broke the job", "broke the job"),
        ("trained differently", "trains differently"),
    ):
        names = [n for n, v in frame["verdict"].items() if v == verdict]
        if names:
            parts.append(f"{', '.join(names)} {label}.")
    if second is not None:
        late, said_on_top = faster(second), second["verdict"].drop(BASELINE, errors="ignore")
        parts.append(
            f"Tried again on top of the changes that paid, {len(late)} of {len(said_on_top)} "
            "then paid"
            + (
                ": " + ", ".join(f"{n} ({second.at[n, 'gain']:.2f}x over them)" for n in late) + "."
                if late
                else "."
            )
        )
        few_on_top = [n for n, v in said_on_top.items() if v == TOO_FEW]
        unrun_on_top = sum(v == "not run" for v in said_on_top)
        if few_on_top:
            parts.append(f"On top, {', '.join(few_on_top)} ran too few times to judge.")
        if unrun_on_top:
            parts.append(f"On top, {unrun_on_top} did not run within the time budget.")
    clashed = frame.attrs.get("clashes", {})
    if clashed:
        parts.append(
            " ".join(
                f"{n} was not combined: it sets what {better} sets, which gained more."
                for n, better in clashed.items()
            )
        )
    if measured(frame, COMBINED) and said[COMBINED] == TOO_FEW:
        parts.append(
            f"All of them together: {frame.at[COMBINED, 'gain']:.2f}x, from fewer than "
            f"{verdicts.MIN_RUNS} runs, too few to judge: give the budget more."
        )
    elif measured(frame, COMBINED):
        c = frame.loc[COMBINED]
        gains = [_exact(frame, n)[0] for n in won if n not in clashed]
        gains += [] if second is None else [_exact(second, n)[0] for n in faster(second)]
        product, on_top_paid = math.prod(gains), second is not None and bool(faster(second))
        _, low, high = _exact(frame, COMBINED)  # unrounded, so rounding cannot decide the side
        inside = low <= product <= high
        side = "inside" if inside else "outside"
        edge = min((low, high), key=lambda e: abs(e - product))
        shown = f"{product:.2f}x, {side} "
        if f"{product:.2f}" == f"{edge:.2f}":  # rounded alike: enough decimals to tell the side
            places = next((d for d in range(3, 9) if f"{product:.{d}f}" != f"{edge:.{d}f}"), 8)
            exact = f"{product:.{places}f}x against {edge:.{places}f}x"
            shown = f"{product:.2f}x, just {side} ({exact}) "
        rerun, first = frame.attrs.get("rerun"), frame.at[BASELINE, "examples/s"]
        parts.append(
            f"All of them together: {c['gain']:.2f}x "
            + (
                f"over the job run again beside them ({rerun:,.0f} examples/s, {first:,.0f} in the "
                "first rotation) "
                if rerun
                else ""
            )
            + f"({c['gain q1-q3']} from the quartiles of both); "
            "the product of their gains "
            f"measured {'alone and on top' if on_top_paid else 'one at a time'} "
            f"is {shown}that range"
            + (
                " this time: gains need not multiply, so measure the combination."
                if inside
                else ": measure a combination, do not multiply."
            )
        )
    return " ".join(parts)


#: The report's last section: the changes alone, best first, then those that paid on top of them.
PAID_HEADING = "## The changes that paid (alone, best first; then on top, best first)"


def markdown(frame: Any, job: str, stamp: str, second: Any = None) -> str:
    """The report as markdown: the reading, the table, and the changes to make."""
    lines = [
        f"# Tuning report: {results.cell(job)}",
        "",
        f"Machine: {results.cell(stamp)}",
        "",
        summary(frame, second),
        "",
        "| trial | examples/s | gain | gain q1-q3 | verdict | loss | note |",
        "|---|--:|--:|---|---|--:|---|",
    ]
    for name, r in frame.iterrows():
        columns = ("examples/s", "gain", "gain q1-q3", "verdict", "loss", "note")
        cells = [name, *(r[c] for c in columns)]
        lines.append(
            "| " + " | ".join(results.cell("" if v is None or v != v else v) for v in cells) + " |"
        )
    if second is not None:
        lines += [
            "",
            "## Tried again on top of the changes that paid",
            "",
            "| trial | gain over them | gain q1-q3 | verdict |",
            "|---|--:|---|---|",
        ]
        lines += [
            "| "
            + " | ".join(
                results.cell("" if v is None or v != v else v)
                for v in (n, r["gain"], r["gain q1-q3"], r["verdict"])
            )
            + " |"
            for n, r in second.iterrows()
            if n != BASELINE
        ]
    clashed = frame.attrs.get("clashes", {})
    won = [n for n in faster(frame) if n not in clashed] + (
        [] if second is None else faster(second)
    )
    if won:
        lines += ["", PAID_HEADING, ""]
        for name in won:
            where = frame if name in faster(frame) else second
            lines += [
                f"- **{results.cell(name)}** ({where.at[name, 'gain']:.2f}x"
                f"{'' if where is frame else ' on top'}):",
                "",
                "  ```python",
                *(f"  {line}" for line in frame.at[name, "change"].splitlines()),
                "  ```",
            ]
        lines += [
            f"- Not combined: {results.cell(n)} sets what {results.cell(b)} sets."
            for n, b in clashed.items()
        ]
    return "\n".join(lines) + "\n"
