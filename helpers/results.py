"""The one format of a bench result (``bench.json``): what ``make bench`` writes and
``bench --gather`` reads. A room's files come from other people's machines, so ``load`` treats
each as untrusted: a size limit, no NaN or Infinity, a nesting limit, and every field checked
for its type and range, with a message that names the field.

    {"machine": {...env.machine_info()...}, "workbook": "0.1.0",
     "stamp": "Intel Xeon · 2 cores · ...",
     "quick": true, "started": "2026-11-23T13:59:58+0000", "ended": "2026-11-23T14:03:31+0000",
     "load_at_start": [0.4, 0.9, 1.1], "load_at_end": [2.1, 1.6, 1.3],
     "comparisons": [{"id": "look_inside_graphs.eager_vs_function", "speedup": 5.78, "spread":
     [5.16, 6.98],
                      "baseline_s": 0.0022, "variant_s": 0.00038, "repeats": 39, ...}, ...]}
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

MAX_BYTES = 2 * 2**20  # a 40-comparison result is about 20 kB
MAX_COMPARISONS = 500
MAX_TEXT = 300
ID = re.compile(
    r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,119}"
)  # look_inside_graphs.eager_vs_function, pipeline.prefetch, ...
TEXT_FIELDS = ("workbook", "stamp", "started", "ended")
LOAD_FIELDS = ("load_at_start", "load_at_end")  # os.getloadavg(): 1, 5 and 15 minutes
#: What a record's ratio measures. A speed-up is baseline seconds / variant seconds; the others are
#: ratios a comparison also records, read and drawn apart from the speed-ups.
KINDS = {
    "speed-up": "baseline time / variant time: above 1 the variant is faster",
    "size ratio": "baseline size / variant size (bytes): above 1 the variant is smaller",
    "share of bound": (
        "the variant's speed as a share of the bound the baseline sets: at most 1 in principle"
    ),
}


class ResultError(ValueError):
    """A file that is not a usable bench result; the message names the field."""


def _refuse_constant(name: str) -> float:
    raise ResultError(f"{name} is not a number a result can hold (NaN and Infinity are refused)")


def load(path: str | Path) -> dict[str, Any]:
    """Read and ``check`` one bench result file; ``ResultError`` saying what is wrong."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise ResultError(f"{size:,} bytes; a bench result is at most {MAX_BYTES:,}")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultError(f"not readable ({type(exc).__name__}: {exc})") from None
    try:
        data = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise ResultError(f"not readable JSON ({exc})") from None
    except RecursionError:
        raise ResultError("nested too deeply to be a bench result") from None
    return check(data)


def _finite(value: Any, where: str, *, positive: bool = True) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or (positive and value <= 0)
    ):
        raise ResultError(
            f"{where} must be a finite {'positive ' if positive else ''}number, got {value!r:.60}"
        )
    return float(value)


def _text(value: Any, where: str, limit: int = MAX_TEXT, one_line: bool = True) -> str:
    if not isinstance(value, str) or len(value) > limit or (one_line and "\n" in value):
        lines = "one line of text" if one_line else "text"
        raise ResultError(
            f"{where} must be {lines} of at most {limit} characters, got {value!r:.60}"
        )
    return value


def _machine(machine: Any) -> dict[str, Any]:
    """Flat: text, numbers, true/false or null per key; lists of text for cpu_features and gpus."""
    if not isinstance(machine, dict) or len(machine) > 50:
        raise ResultError(
            "'machine' must be an object of at most 50 fields, as env.machine_info() writes"
        )
    for key, value in machine.items():
        where = f"machine.{_text(key, 'a machine field name', 40)}"
        if key in ("cpu_features", "gpus"):
            if not isinstance(value, list) or len(value) > 200:
                raise ResultError(f"{where} must be a list of names, got {value!r:.60}")
            for item in value:
                _text(item, f"an entry of {where}", 100)
        elif key in ("physical_cores", "logical_cores", "usable_cores"):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 2**16
            ):
                raise ResultError(f"{where} must be a whole number of cores, got {value!r:.60}")
        elif isinstance(value, str):
            _text(value, where)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            _finite(value, where, positive=False)
        elif value is not None and not isinstance(value, bool):
            raise ResultError(
                f"{where} must be text, a number, true/false or null, got {type(value).__name__}"
            )
    return machine


def _record(record: Any, index: int) -> dict[str, Any]:
    where = f"comparisons[{index}]"
    if not isinstance(record, dict):
        raise ResultError(f"{where} must be an object, got {type(record).__name__}")
    if not isinstance(record.get("id"), str) or not ID.fullmatch(record["id"]):
        raise ResultError(
            f"{where}.id must be a comparison id such as 'look_inside_graphs.eager_vs_function', "
            f"got {record.get('id')!r:.60}"
        )
    where = f"{where} ({record['id']})"
    _finite(record.get("speedup"), f"{where}.speedup")
    spread = record.get("spread")
    if not isinstance(spread, list) or len(spread) != 2:
        raise ResultError(f"{where}.spread must be [low, high], got {spread!r:.60}")
    low, high = (_finite(v, f"{where}.spread") for v in spread)
    if low > high:
        raise ResultError(
            f"{where}.spread must be [low, high] with low <= high, got {spread!r:.60}"
        )
    for key in ("baseline_s", "variant_s"):
        if key in record:
            _finite(record[key], f"{where}.{key}")
    for key in ("baseline", "variant", "unit"):
        if key in record:
            _text(record[key], f"{where}.{key}")
    if "deterministic" in record and not isinstance(record["deterministic"], bool):
        raise ResultError(
            f"{where}.deterministic must be true or false, got {record['deterministic']!r:.60}"
        )
    if "kind" in record and record["kind"] not in KINDS:
        raise ResultError(
            f"{where}.kind must be one of {', '.join(map(repr, KINDS))}, got {record['kind']!r:.60}"
        )
    if record.get("note") is not None:
        _text(record["note"], f"{where}.note", 2000, one_line=False)
    if "repeats" in record and (
        isinstance(record["repeats"], bool)
        or not isinstance(record["repeats"], int)
        or record["repeats"] < 1
    ):
        raise ResultError(
            f"{where}.repeats must be a whole number of at least 1, got {record['repeats']!r:.60}"
        )
    return record


def check(data: Any) -> dict[str, Any]:
    """``data`` itself when it is a bench result; ``ResultError`` naming the first bad field."""
    if (
        not isinstance(data, dict)
        or "machine" not in data
        or not isinstance(data.get("comparisons"), list)
    ):
        raise ResultError(
            "not a bench result: no 'machine' and 'comparisons' (write one with make bench)"
        )
    _machine(data["machine"])
    for key in TEXT_FIELDS:
        if data.get(key) is not None:
            _text(data[key], key)
    for key in LOAD_FIELDS:
        load = data.get(key)
        if load is not None and (not isinstance(load, list) or len(load) != 3):
            raise ResultError(
                f"{key} must be the three load averages [1, 5, 15 minutes], got {load!r:.60}"
            )
        for value in load or ():
            _finite(value, key, positive=False)
            if value < 0:
                raise ResultError(f"{key} must hold load averages of at least 0, got {value!r:.60}")
    if not isinstance(data.get("quick", False), bool):
        raise ResultError(f"quick must be true or false, got {data['quick']!r:.60}")
    comparisons = data["comparisons"]
    if not comparisons:
        raise ResultError(
            "a bench result with no comparisons (was the run interrupted before the first?)"
        )
    if len(comparisons) > MAX_COMPARISONS:
        raise ResultError(
            f"{len(comparisons)} comparisons; a bench result holds at most {MAX_COMPARISONS}"
        )
    ids = [_record(r, i)["id"] for i, r in enumerate(comparisons)]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise ResultError(f"comparison {twice[0]!r} appears more than once")
    return data


def kind(record: dict[str, Any]) -> str:
    """What ``record``'s ratio measures (``KINDS``): its ``kind``; a record without one is a
    speed-up, unless its ``unit`` is ``"bytes"`` (results written before records had a kind)."""
    return record.get("kind") or ("size ratio" if record.get("unit") == "bytes" else "speed-up")


def cell(text: str) -> str:
    """``text`` safe inside a markdown table cell or list item: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")
