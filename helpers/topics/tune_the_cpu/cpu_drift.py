"""Notebook 10's drift reading: one setting timed again in several sections (each a sweep of fresh
processes), set beside the leads and losses those sections' sweeps measured against it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from helpers import checks, verdicts


@checks.arguments(openmp_loaded=checks.flag)
def drift_reading(
    same: Mapping[str, float],
    sweeps: Mapping[str, Any],
    workload: str = "conv_step",
    openmp_loaded: bool = True,
) -> str:
    """``same``: one setting's median (ms) in each section that timed it; ``sweeps``: those
    sections' tables (``cputune.sweep``), whose first row per workload is that setting. One line
    per median, then the medians' spread and the leads or losses of more than
    ``verdicts.MIN_EFFECT`` that are no larger than it (they may be that drift, not the setting),
    each worded as its own sweep's verdict reads it (``q1_ms`` and ``q3_ms`` where the table has
    them): a lead whose quartile ratios cross 1x is no clear difference, not "faster".
    ``openmp_loaded`` False: no child loaded an OpenMP runtime, so a larger gap in the OpenMP
    section has nothing to act on."""
    if len(same) < 2 or not all(ms > 0 for ms in same.values()):
        raise ValueError(f"same must hold two medians or more, each above 0 ms, got {dict(same)}")
    lines = [f"{where:<36} {ms:5.2f} ms" for where, ms in same.items()]
    drift = max(same.values()) / min(same.values())
    leads = []
    for table in sweeps.values():
        part = table[table["workload"] == workload].set_index("setting")
        base = part.iloc[0]
        for name, row in part.iloc[1:].iterrows():
            r = base["median_ms"] / row["median_ms"]  # above 1: faster than the setting
            # compared as printed (two decimals): a 1.194x loss beside a 1.191x drift reads 1.19x
            if abs(r - 1) > verdicts.MIN_EFFECT and round(max(r, 1 / r), 2) <= round(drift, 2):
                leads.append(f"'{name}' {max(r, 1 / r):.2f}x {_direction(base, row, r)}")
    lines.append(
        f"The default setting's {workload} medians lie up to {drift:.2f}x apart across the "
        f"{len(same)} sections (one setting, separate processes). "
        + (
            f"{workload}'s leads or losses no larger than that may be this drift, not the "
            f"setting: {'; '.join(leads)}. "
            if leads
            else f"No {workload} lead or loss is as small as that drift. "
        )
        + f"{len(same)} medians are a small sample of the drift: rerun a sweep (section 7) "
        "before you credit a larger gap"
        + (
            "."
            if openmp_loaded
            else ", above all in section 4, where no process loaded an OpenMP runtime for the "
            "variables to act on."
        )
    )
    return "\n".join(lines)


def _direction(base: Any, row: Any, r: float) -> str:
    """'faster' or 'slower' at the median, and no clear difference where the sweep's quartile
    ratios cross 1x (``verdicts.outcome``, as the sweep's own verdict line reads it)."""
    if "q1_ms" not in row.index or "q3_ms" not in row.index:
        return "faster at the median" if r > 1 else "slower at the median"
    low, high = verdicts.quartile_ratios(base["q1_ms"], base["q3_ms"], row["q1_ms"], row["q3_ms"])
    if verdicts.outcome(low, high, r) == "no clear difference":
        return f"{'faster' if r > 1 else 'slower'} at the median, no clear difference in its sweep"
    return "faster" if r > 1 else "slower"
