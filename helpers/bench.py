"""The benchmark runner: every timing claim of the workbook, rerun from the command line.

Each notebook's package (``helpers/topics/<slug>/``) lists its comparisons in module-level
``BENCHMARKS`` lists of ``helpers.comparison.Comparison`` objects, with ids that start with
``<slug>.``; ``TOPIC_MODULES`` is every such module, found by that rule. They import
``helpers.comparison``, never this runner, so nothing imports in a circle. A comparison of lesson
code names it as ``"helpers.lessons.<notebook>:fn"``: the code the notebook shows, exported by
``make export``.

    python -m helpers.bench --list            # the ids
    python -m helpers.bench --gather FOLDER   # a room's bench.json files: one table, one figure
    python -m helpers.bench --quick           # every comparison, small sizes
    python -m helpers.bench --only look_inside_graphs.eager_vs_function

A run prints a markdown table and writes ``data/results/bench.json`` (atomically); a run with
``--only`` writes ``data/results/bench-only.json`` instead, so it never replaces a whole run (the
file a room gathers). ``--out`` names another file.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from helpers import checks, fileio, timing
from helpers.comparison import Comparison

TOPICS = Path(__file__).resolve().parent / "topics"
NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def topic_modules(topics: Path = TOPICS, notebooks: Path = NOTEBOOKS) -> tuple[str, ...]:
    """The modules whose ``BENCHMARKS`` lists make up the registry, found by the layout rule:
    every module of a notebook's package ``helpers/topics/<slug>/`` that assigns ``BENCHMARKS``,
    in notebook order. Read from the source, so listing them imports nothing."""
    order = {p.stem[3:]: p.stem[:2] for p in notebooks.glob("[0-9][0-9]_*.ipynb")}
    found = []
    for package in sorted(topics.iterdir(), key=lambda p: (order.get(p.name, "99"), p.name)):
        for path in sorted(package.glob("[a-z]*.py")) if package.is_dir() else ():
            if re.search(r"^BENCHMARKS\s*=", path.read_text(encoding="utf-8"), re.M):
                found.append(f"helpers.topics.{package.name}.{path.stem}")
    return tuple(found)


TOPIC_MODULES: tuple[str, ...] = topic_modules()

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "data" / "results" / "bench.json"
ONLY_OUT = DEFAULT_OUT.with_name("bench-only.json")  # where a run with --only writes


def registry(modules: Sequence[str] | None = None) -> dict[str, Comparison]:
    """Collect the ``BENCHMARKS`` of each topic module (default ``TOPIC_MODULES``) by id."""
    found: dict[str, Comparison] = {}
    for name in TOPIC_MODULES if modules is None else modules:
        module = importlib.import_module(name)
        for comparison in getattr(module, "BENCHMARKS", ()):
            if not isinstance(comparison, Comparison):
                raise TypeError(f"{name}.BENCHMARKS holds {comparison!r}, not a Comparison")
            if comparison.id in found:
                raise ValueError(f"comparison id {comparison.id!r} is registered twice")
            slug = name.split(".")[2] if name.startswith("helpers.topics.") else None
            if slug and not comparison.id.startswith(f"{slug}."):
                raise ValueError(
                    f"{name} registers {comparison.id!r}: its ids start with {slug + '.'!r}, the "
                    "name of the notebook it belongs to"
                )
            found[comparison.id] = comparison
    return found


def select(comparisons: Mapping[str, Comparison], only: Sequence[str] | None) -> list[Comparison]:
    """The comparisons named by ``only`` (all when empty); unknown ids are a ``ValueError``."""
    if only is None:
        return list(comparisons.values())
    if isinstance(only, str | bytes) or not isinstance(only, Sequence):
        raise checks.BadType(
            f"only must be a list of comparison ids, got {checks._show(only)}"
            + (f": write [{only!r}]" if isinstance(only, str) else f" ({type(only).__name__})")
        )
    if not all(isinstance(i, str) for i in only):
        raise checks.BadType(
            f"only must hold comparison ids (strings), got {checks._show(list(only))}"
        )
    if not only:
        return list(comparisons.values())
    unknown = [i for i in only if i not in comparisons]
    if unknown:
        near = {m for i in unknown for m in difflib.get_close_matches(i, list(comparisons), n=2)}
        raise ValueError(
            f"only: unknown comparison id(s) {unknown}"
            + (f" (did you mean {', '.join(sorted(near))}?)" if near else "")
            + "; see the ids with `python -m helpers.bench --list`"
        )
    return [comparisons[i] for i in only]


def markdown(records: Sequence[Mapping[str, Any]]) -> str:
    """The results as a markdown table."""
    lines = [
        (
            "| id | baseline | variant | baseline median | variant median | speed-up "
            "| spread (IQR) | repeats | note |"
        ),
        "|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in records:
        notes = [r["note"]] if r.get("note") else []
        if "bound" in r:
            notes.append(
                f"at most {r['bound']:g}x"
                + (
                    " (ABOVE THE BOUND: check the measurement)"
                    if r["speedup"] > r["bound"] * 1.1
                    else ""
                )
            )
        unit = r.get("unit", "s")
        shown = [
            timing.format_seconds(r[k]) if unit == "s" else f"{r[k]:,.0f} {unit}"
            for k in ("baseline_s", "variant_s")
        ]
        note = "; ".join(notes)
        lines.append(
            f"| {r['id']} | {r['baseline']} | {r['variant']} "
            f"| {shown[0]} | {shown[1]} "
            f"| {r['speedup']:.2f}x | {r['spread'][0]:.2f}-{r['spread'][1]:.2f}x "
            f"| {r['repeats']} | {note} |"
        )
    return "\n".join(lines)


def run_all(
    chosen: Sequence[Comparison], quick: bool, out: Path, machine: Mapping[str, Any]
) -> dict[str, Any]:
    """Run the chosen comparisons with a progress bar; write ``out`` after each one."""
    from tqdm.auto import tqdm

    from helpers import results, stamp

    result: dict[str, Any] = {
        "machine": dict(machine),
        "workbook": stamp.workbook_version(),
        "stamp": stamp.text(machine, scale="quick" if quick else "full"),
        "quick": quick,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "load_at_start": _load(),
        "comparisons": [],
    }
    for comparison in tqdm(chosen, desc="bench", unit="comparison", file=sys.stderr):
        result["comparisons"].append(comparison.run(quick=quick))
        # When the last record was taken and how busy the machine was then (the bench's own
        # processes count too; a load above the usable cores at the start means another job was
        # already sharing them); an interrupted run shows where it stopped.
        result["ended"], result["load_at_end"] = time.strftime("%Y-%m-%dT%H:%M:%S%z"), _load()
        results.check(
            result
        )  # the format bench --gather reads: a bad record fails here, not in the room
        # Written after every comparison: an interrupted run keeps what it finished.
        fileio.atomic_write_text(out, json.dumps(result, indent=2, allow_nan=False) + "\n")
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; see the module docstring."""
    parser = argparse.ArgumentParser(
        prog="python -m helpers.bench", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--list", action="store_true", help="print the comparison ids and exit")
    parser.add_argument(
        "--only", action="append", metavar="ID", help="run only this id (repeatable)"
    )
    parser.add_argument(
        "--quick", action="store_true", help="small workloads (about a minute in all)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="where to write the JSON results (default: data/results/bench.json, or with --only"
        " data/results/bench-only.json, so a partial run never replaces a whole one)",
    )
    parser.add_argument(
        "--gather",
        type=Path,
        metavar="FOLDER",
        help="gather the bench.json files in FOLDER (one per machine) into one table and figure",
    )
    args = parser.parse_args(argv)
    if args.gather is not None:
        from helpers.topics.compare_the_room import gather

        if not args.gather.is_dir():
            what = "a file" if args.gather.exists() else "not there"
            return _usage(
                f"--gather {args.gather} is {what}; give the folder that holds the bench.json files"
            )

        return gather.main(args.gather)

    comparisons = registry()
    if args.list:
        for comparison in comparisons.values():
            print(f"{comparison.id}\t{comparison.title}")
        return 0
    try:
        chosen = select(comparisons, args.only)
    except ValueError as exc:
        return _usage(str(exc).removeprefix("only: ").replace("unknown", "--only: unknown", 1))
    out = args.out if args.out is not None else (DEFAULT_OUT if args.only is None else ONLY_OUT)
    problem = _unwritable(out)
    if problem:  # checked before the run, which would otherwise be lost at the end
        return _usage(f"--out {out}: {problem}")
    from helpers import env

    result = run_all(chosen, args.quick, out, env.machine_info())
    print(markdown(result["comparisons"]))
    print(f"\n{result['stamp']}")
    print(f"\nwrote {out}")
    return 0


def _load() -> list[float] | None:
    """The system's load averages over 1, 5 and 15 minutes (runnable processes; compare with the
    usable cores), or None where the system has none (Windows)."""
    try:
        return [round(value, 2) for value in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def _usage(message: str) -> int:
    print(f"python -m helpers.bench: error: {message}", file=sys.stderr)
    return 2


def _unwritable(out: Path) -> str:
    """Why the results could not be written to ``out`` ("" when they can), found by trying."""
    if out.is_dir():
        return "is a folder; give a file such as results/bench.json"
    folder = next((p for p in [out.parent, *out.parent.parents] if p.exists()), Path("."))
    if not folder.is_dir():
        return f"{folder} is a file, not a folder"
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out.parent):
            pass
    except OSError as exc:
        return f"cannot write there ({exc.strerror or exc})"
    return ""


if __name__ == "__main__":
    # Quiet TensorFlow's C++ start-up lines unless the user asked for a level.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.exit(main())
