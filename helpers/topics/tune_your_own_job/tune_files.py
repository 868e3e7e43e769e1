"""Notebook 16 and ``python -m helpers.tune``, the report's files: the measured trials as a bench
result (``helpers.results``) that ``bench --gather`` reads, so a team can compare one job across
machines, and ``report.md`` beside it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from helpers import checks, fileio, results, timing
from helpers.topics.tune_your_own_job.tuning_trials import BASELINE, Outcome


@checks.arguments(quick=checks.flag)
def bench_result(
    frame: Any,
    outcomes: Mapping[str, Outcome],
    job: str,
    machine: dict[str, Any],
    stamp: str,
    started: str,
    quick: bool,
) -> dict[str, Any] | None:
    """The measured trials as one bench result (``helpers.results``), ids ``tune.<job>.<trial>``;
    None when the budget ended before any trial beside the job's own run was measured."""
    from helpers import stamp as stamps

    slug = re.sub(r"[^A-Za-z0-9_]+", "_", Path(job).stem).strip("_") or "job"
    records = []
    for name, r in frame.iterrows():
        if r["gain"] is None or r["gain"] != r["gain"] or name == BASELINE:
            continue
        low, high = timing.span(r["gain q1-q3"])
        records.append(
            {
                "id": f"tune.{slug}.{re.sub(r'[^A-Za-z0-9_]+', '_', name).strip('_')}"[:120],
                "speedup": float(r["gain"]),
                "spread": [low, high],
                "baseline": BASELINE,
                "variant": name,
                "repeats": len(outcomes[name].seconds) if name in outcomes else 1,
                "note": f"{r['verdict']}; {r['change']}"[:2000],
            }
        )
    if (
        not records
    ):  # a bench result compares something: with nothing measured there is none to write
        return None
    data = {
        "machine": machine,
        "workbook": stamps.workbook_version(),
        "stamp": stamp,
        "quick": quick,
        "started": started,
        "comparisons": records,
    }
    return results.check(data)


def save(
    folder: str | Path, frame: Any, data: dict[str, Any] | None, text: str
) -> tuple[Path, ...]:
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
