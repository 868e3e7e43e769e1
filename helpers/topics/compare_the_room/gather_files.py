"""Read a room's bench results for ``gather`` (notebook 15, and ``bench --gather``).

Every bench.json under a folder, each checked by ``results.load`` and kept as a ``Result`` (a
short label, its stamp and its records by comparison id); a file that is not a bench result is
skipped with the reason, and results from different workbook versions, of mixed sizes, sent
twice or with a comparison run under other parameters are noted. ``gather`` makes the table, the
figure and the markdown from them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

MAX_FILES = 500


class GatherError(ValueError):
    """Nothing could be gathered (the message says why)."""


@dataclass(frozen=True)
class Result:
    """One machine's bench.json: a short label, its stamp, and its records by comparison id."""

    label: str
    path: Path
    stamp: str
    workbook: str
    quick: bool
    records: dict[str, dict[str, Any]]


def read(path: Path, label: str) -> Result:
    """One bench.json, checked by ``results.load``; ``ValueError`` saying what is wrong when it is
    not a bench result."""
    from helpers import results, stamp

    data = results.load(path)  # ResultError is a ValueError
    quick = data.get("quick", False)
    line = data.get("stamp") or stamp.text(
        data["machine"],
        scale="quick" if quick else "full",
        day=str(data.get("started") or "")[:10] or "date unknown",
    )
    return Result(
        label,
        Path(path),
        str(line),
        str(data.get("workbook") or "unknown"),
        quick,
        {r["id"]: r for r in data["comparisons"]},
    )


def label_of(path: Path, folder: Path) -> str:
    """A result's name in the room: its path under ``folder`` without ``.json`` or a last
    ``/bench`` (``alice/bench.json`` is ``alice``, ``bob.json`` is ``bob``)."""
    label = Path(path).relative_to(folder).with_suffix("").as_posix()
    return label[: -len("/bench")] if label.endswith("/bench") else label


def load(folder: str | Path) -> tuple[list[Result], list[str]]:
    """Every bench result under ``folder``, and one line per file skipped or worth a warning."""
    folder = Path(folder)
    if not folder.is_dir():
        raise GatherError(f"{folder} is not a folder; put the bench.json files in one and pass it")
    files = sorted(p for p in folder.rglob("*.json") if p.is_file())
    if len(files) > MAX_FILES:
        raise GatherError(
            f"{folder} holds {len(files)} JSON files; at most {MAX_FILES} (one per machine)"
        )
    results, notes = [], []
    for path in files:
        try:
            results.append(read(path, label_of(path, folder)))
        except ValueError as exc:
            notes.append(f"skipped {path.relative_to(folder)}: {exc}")
    labels = [r.label for r in results]  # alice.json and alice/bench.json: named by their paths
    for k, r in enumerate(results):
        named = r.path.relative_to(folder).with_suffix("").as_posix()
        if labels.count(r.label) > 1 and named != r.label:
            notes.append(
                f"{named}.json is named {named!r}: {r.label!r} is also another result's name"
            )
            results[k] = replace(r, label=named)
    if not results:
        raise GatherError(
            f"no bench results in {folder}"
            + (f" ({len(notes)} files skipped: {notes[0]})" if notes else " (no .json files)")
        )
    versions = sorted({r.workbook for r in results})
    if len(versions) > 1:
        by = {v: [r.label for r in results if r.workbook == v] for v in versions}
        notes.append(
            f"results from different workbook versions {by}: "
            "a comparison may have changed between them"
        )
    if len({r.quick for r in results}) > 1:
        notes.append("some results are --quick and some full size: their workloads differ")
    return results, notes + _copies(results) + _mixed_params(results)


def _timings(record: dict[str, Any]) -> tuple[Any, ...]:
    return (
        record.get("baseline_s"),
        record.get("variant_s"),
        record["speedup"],
        tuple(record["spread"]),
    )


def _copies(results: Sequence[Result]) -> list[str]:
    """A note for each pair of results with the same stamp and the same timings: one file sent twice
    would count one machine twice. Both are kept; the facilitator decides."""
    notes = []
    for i, a in enumerate(results):
        for b in results[i + 1 :]:
            shared = sorted(set(a.records) & set(b.records))
            if (
                a.stamp == b.stamp
                and shared
                and all(_timings(a.records[k]) == _timings(b.records[k]) for k in shared)
            ):
                notes.append(
                    f"{a.label} and {b.label} hold the same timings for all {len(shared)} "
                    "comparisons they share: one result sent twice? Both are gathered; "
                    "remove one to count that machine once"
                )
    return notes


def _mixed_params(results: Sequence[Result]) -> list[str]:
    """A note for each comparison run with other parameters in some results than in others (a
    bench changed between checkouts of the same workbook version, say): the workloads differ, so
    the ratios need not compare. The rows are still gathered."""
    notes = []
    for key in sorted({k for r in results for k in r.records}):
        runs: dict[str, list[str]] = {}
        for r in results:
            if key in r.records:
                params = json.dumps(r.records[key].get("params", {}), sort_keys=True)
                runs.setdefault(params, []).append(r.label)
        if len(runs) > 1:
            notes.append(
                f"{key} ran with different parameters: "
                + "; ".join(f"{p} in {', '.join(labels)}" for p, labels in runs.items())
                + ": different workloads, so their ratios need not compare"
            )
    return notes
