"""Notebook 10's exercise check: the fastest setting of a sweep, or one no setting ran clearly
faster than (a tie within the spread, as a verdict line reads it)."""

from __future__ import annotations

import re
from typing import Any

from helpers.exercises import Feedback, correct, not_yet
from helpers.verdicts import outcome, quartile_ratios


def _spelling(setting: Any) -> str:
    """A setting's name for matching: case, spaces, commas and "=" do not matter."""
    return re.sub(r"[\s,=]+", " ", str(setting).lower()).strip()


def check_fastest(table: Any, workload: str, choice: str) -> Feedback:
    """Exercise check: is ``choice`` the fastest setting for ``workload`` in a sweep ``table``, or
    within the run-to-run spread of it? Spelling of the name is free ("intra=2, inter=1")."""
    if not hasattr(table, "columns") or not {"setting", "workload", "median_ms"} <= set(
        table.columns
    ):
        return not_yet("pass the table a sweep returned")
    if not isinstance(workload, str):
        return not_yet(
            f"name the workload as text, such as 'conv_step'; got {type(workload).__name__}"
        )
    if not isinstance(choice, str):
        return not_yet(
            "name the setting as text, one of the table's 'setting' column; "
            f"got {type(choice).__name__}"
        )
    table = table.reset_index(drop=True)  # a copy; duplicate labels (a concatenated table) are fine
    ran = (
        table["error"].isna() | (table["error"] == "") if "error" in table.columns else True
    )  # NaN: read_csv
    part = table[(table["workload"] == workload) & ran & table["median_ms"].notna()]
    if part.empty:
        return not_yet(
            f"the table has no result for workload {workload!r}; "
            f"it has {sorted(set(table['workload']))}"
        )
    mine = part[part["setting"].map(_spelling) == _spelling(choice)]
    if mine.empty:
        return not_yet(f"{choice!r} is not one of the settings: {list(part['setting'])}")
    best, mine = part.loc[part["median_ms"].idxmin()], mine.loc[mine["median_ms"].idxmin()]
    if mine.setting == best.setting:
        return correct(f"{mine.setting} was the fastest on {workload} ({best.median_ms:.1f} ms)")
    if not {"q1_ms", "q3_ms"} <= set(part.columns):  # no spread: no tie to grant
        return not_yet(
            f"{best.setting} ran faster ({best.median_ms:.1f} ms against {mine.median_ms:.1f} ms)"
        )
    # A tie: no setting clearly faster than the answer, as a verdict line reads it (quartile
    # ratios above 1 and a median gap of more than verdicts.MIN_EFFECT).
    beaten = [
        r
        for r in part.sort_values("median_ms").itertuples()
        if r.setting != mine.setting
        and outcome(
            *quartile_ratios(mine.q1_ms, mine.q3_ms, r.q1_ms, r.q3_ms), mine.median_ms / r.median_ms
        )
        == "faster"
    ]
    if beaten:
        return not_yet(
            f"{beaten[0].setting} ran faster ({beaten[0].median_ms:.1f} ms against "
            f"{mine.median_ms:.1f} ms, their quartiles apart)"
        )
    return correct(
        f"{mine.setting} is within the spread of the fastest ({best.setting}) and no setting ran "
        "clearly faster: a tie on this machine"
    )
