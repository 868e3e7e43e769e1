"""Plumbing for notebook 13's input-splitting section: read the records each worker of the
``SHARDING_WORKER`` cluster reported (one plain JSON line per worker, so that the program needs
only TensorFlow) and say, for each way of splitting, how the records fell between the workers.

The program itself is in the notebook's ``#| export`` cell, generated into
``helpers.lessons.distribute_training``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from helpers import checks

#: The ways the program splits the input, in its row's order.
WAYS = ("FILE", "DATA", "OFF", "distribute_datasets_from_function")


def worker_rows(results: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Each worker's JSON line (the last line of its log that is a JSON object with a "task")."""
    rows = {}
    for task, result in results.items():
        for line in reversed(result.log.splitlines()):
            if line.startswith("{"):
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(row, dict) and "task" in row:
                    rows[task] = row
                    break
        if task not in rows:
            raise RuntimeError(
                f"{task} printed no result line; read its log:\n{result.log[-2000:]}"
            )
    return rows


def ranges(numbers: list[int]) -> str:
    """``[0, 1, 2, 5]`` as ``"0-2, 5"``."""
    spans: list[list[int]] = []
    for n in sorted(numbers):
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ", ".join(f"{a}-{b}" if b > a else f"{a}" for a, b in spans) or "none"


def records_table(results: Mapping[str, Any], per_file: int = 8, files: int = 4) -> Any:
    """One row per way of splitting, for ``files`` files of ``per_file`` records numbered from 0:
    the records each worker got, from how many files each worker got records (a range across
    the workers), how many records were received more than once, and how many by no worker."""
    import pandas as pd

    checks.whole_number("per_file", per_file, 1, maximum=10**6)
    checks.whole_number("files", files, 1, maximum=10**4)
    rows = worker_rows(results)
    tasks = sorted(rows)
    every = set(range(files * per_file))
    table = {}
    for way in WAYS:
        got = {t: rows[t][way] for t in tasks}
        seen: dict[int, int] = {}
        for numbers in got.values():
            for n in numbers:
                seen[n] = seen.get(n, 0) + 1
        table[way] = {
            **{f"{t} got": ranges(got[t]) for t in tasks},
            "files per worker": _span(len({n // per_file for n in got[t]}) for t in tasks),
            "received more than once": sum(1 for c in seen.values() if c > 1),
            "received by no worker": len(every - set(seen)),
        }
    result = pd.DataFrame(table).T
    result.attrs.update(files=files, records=len(every))
    return result


def _span(counts: Any) -> str:
    """``[2, 2]`` as ``"2"``, ``[2, 3]`` as ``"2 to 3"``."""
    counts = list(counts)
    low, high = min(counts), max(counts)
    return f"{low}" if low == high else f"{low} to {high}"


def sharding_summary(table: Any) -> dict[str, str]:
    """One computed line per way of splitting, from ``records_table``."""
    lines = {}
    for way, row in table.iterrows():
        twice, none = row["received more than once"], row["received by no worker"]
        split = (
            "each record received once"
            if twice == 0 and none == 0
            else (
                f"{twice} of {table.attrs['records']} records received more than once, "
                f"{none} by no worker"
            )
        )
        lines[way] = (
            f"each worker got records from {row['files per worker']} of the "
            f"{table.attrs['files']} files; {split}"
        )
    return lines
