"""The benchmark runner: every timing claim of the workbook, rerun from the command line.

Each topic module lists its comparisons in a module-level ``BENCHMARKS`` list of
``Comparison`` objects; ``TOPIC_MODULES`` names the modules this runner reads.

    python -m helpers.bench --list            # the ids
    python -m helpers.bench --quick           # every comparison, small sizes
    python -m helpers.bench --only graphs.eager_vs_function

A run prints a markdown table and writes ``data/results/bench.json`` (atomically).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from helpers import fileio, timing

#: The modules whose ``BENCHMARKS`` lists make up the registry, in notebook order.
TOPIC_MODULES: tuple[str, ...] = (
    "helpers.graphs", "helpers.memory", "helpers.tfrecords", "helpers.pipelines", "helpers.fused",
    "helpers.rnn", "helpers.cputune", "helpers.quant", "helpers.distribute", "helpers.capstone",
)

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "data" / "results" / "bench.json"
ID_PATTERN = re.compile(r"^[a-z0-9_]+\.[a-z0-9_]+$")


@dataclass(frozen=True)
class Comparison:
    """A named comparison: ``make_variants(**params)`` returns at least the baseline and the
    variant, timed here in one process; or, for settings that need fresh processes,
    ``measure(**params)`` returns ``timing.compare``'s table itself (its ``attrs["note"]``, if
    any, is reported beside the result). ``quick`` and ``full`` are the two workloads'
    parameters; ``bound()``, when given, is the largest ratio physics allows (the core count for
    threads); ``unit`` is what the medians count when they are not seconds (``"bytes"``)."""

    id: str
    title: str
    make_variants: Callable[..., Mapping[str, Callable[..., Any]]] | None = None
    baseline: str = "baseline"
    variant: str = "variant"
    quick: Mapping[str, Any] = field(default_factory=dict)
    full: Mapping[str, Any] = field(default_factory=dict)
    repeats: int = 7
    min_time: float = 0.5
    items: Callable[..., int] | None = None
    measure: Callable[..., Any] | None = None
    bound: Callable[[], float] | None = None
    unit: str = "s"

    def __post_init__(self) -> None:
        if not ID_PATTERN.match(self.id):
            raise ValueError(f"comparison id {self.id!r} must look like 'topic.name' (a-z, 0-9, _)")
        if self.baseline == self.variant:
            raise ValueError(f"{self.id}: baseline and variant are both {self.baseline!r}")
        if (self.make_variants is None) == (self.measure is None):
            raise ValueError(f"{self.id}: give exactly one of make_variants and measure")

    def run(self, quick: bool = False) -> dict[str, Any]:
        """Time baseline against variant, interleaved; return one ``bench.json`` record."""
        params = dict(self.quick if quick else self.full)
        if self.measure is not None:
            table = self.measure(**params)
            missing = {self.baseline, self.variant} - set(table.index)
        else:
            built = self.make_variants(**params)  # type: ignore[misc]
            missing = {self.baseline, self.variant} - set(built)
            if not missing:
                table = timing.compare(
                    {self.baseline: built[self.baseline], self.variant: built[self.variant]},
                    baseline=self.baseline,
                    repeats=max(3, self.repeats // 2) if quick else self.repeats,
                    min_time=self.min_time / 5 if quick else self.min_time,
                    items=self.items(**params) if self.items else None,
                )
        if missing:
            raise ValueError(f"{self.id}: the measurement did not return {sorted(missing)}")
        base, var = table.loc[self.baseline], table.loc[self.variant]
        record = {
            "id": self.id,
            "baseline": self.baseline,
            "variant": self.variant,
            "baseline_s": float(base["median_s"]),
            "variant_s": float(var["median_s"]),
            "speedup": float(var["speedup"]),
            "spread": [float(var["speedup_low"]), float(var["speedup_high"])],
            "repeats": int(var["repeats"]),
            "params": {k: _jsonable(v) for k, v in params.items()},
        }
        if self.unit != "s":
            record["unit"] = self.unit
        if table.attrs.get("note"):
            record["note"] = str(table.attrs["note"])
        if self.bound is not None:
            record["bound"] = float(self.bound())
        return record


def _jsonable(value: Any) -> Any:
    return value if isinstance(value, (bool, int, float, str, type(None))) else repr(value)


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
            found[comparison.id] = comparison
    return found


def select(comparisons: Mapping[str, Comparison], only: Sequence[str] | None) -> list[Comparison]:
    """The comparisons named by ``only`` (all when empty); unknown ids are a ``ValueError``."""
    if not only:
        return list(comparisons.values())
    unknown = [i for i in only if i not in comparisons]
    if unknown:
        raise ValueError(f"unknown comparison id(s) {unknown}; known: {sorted(comparisons)}")
    return [comparisons[i] for i in only]


def markdown(records: Sequence[Mapping[str, Any]]) -> str:
    """The results as a markdown table."""
    lines = [
        "| id | baseline | variant | baseline median | variant median | speed-up | spread (IQR) | repeats | note |",
        "|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in records:
        notes = [r["note"]] if r.get("note") else []
        if "bound" in r:
            notes.append(f"at most {r['bound']:g}x" + (" (ABOVE THE BOUND: check the measurement)"
                                                     if r["speedup"] > r["bound"] * 1.1 else ""))
        unit = r.get("unit", "s")
        shown = [timing.format_seconds(r[k]) if unit == "s" else f"{r[k]:,.0f} {unit}" for k in ("baseline_s", "variant_s")]
        note = "; ".join(notes)
        lines.append(
            f"| {r['id']} | {r['baseline']} | {r['variant']} "
            f"| {shown[0]} | {shown[1]} "
            f"| {r['speedup']:.2f}x | {r['spread'][0]:.2f}-{r['spread'][1]:.2f}x | {r['repeats']} | {note} |"
        )
    return "\n".join(lines)


def run_all(
    chosen: Sequence[Comparison], quick: bool, out: Path, machine: Mapping[str, Any]
) -> dict[str, Any]:
    """Run the chosen comparisons with a progress bar; write ``out`` after each one."""
    from tqdm.auto import tqdm

    result: dict[str, Any] = {
        "machine": dict(machine),
        "quick": quick,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "comparisons": [],
    }
    for comparison in tqdm(chosen, desc="bench", unit="comparison", file=sys.stderr):
        result["comparisons"].append(comparison.run(quick=quick))
        # Written after every comparison: an interrupted run keeps what it finished.
        fileio.atomic_write_text(out, json.dumps(result, indent=2) + "\n")
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; see the module docstring."""
    parser = argparse.ArgumentParser(prog="python -m helpers.bench", description=__doc__.split("\n")[0])
    parser.add_argument("--list", action="store_true", help="print the comparison ids and exit")
    parser.add_argument("--only", action="append", metavar="ID", help="run only this id (repeatable)")
    parser.add_argument("--quick", action="store_true", help="small workloads (about a minute in all)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where to write the JSON results")
    args = parser.parse_args(argv)

    comparisons = registry()
    if args.list:
        for comparison in comparisons.values():
            print(f"{comparison.id}\t{comparison.title}")
        return 0
    try:
        chosen = select(comparisons, args.only)
    except ValueError as exc:
        parser.error(str(exc))
    from helpers import env

    result = run_all(chosen, args.quick, args.out, env.machine_info())
    print(markdown(result["comparisons"]))
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    # Quiet TensorFlow's C++ start-up lines unless the user asked for a level.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    # Run the importable helpers.bench, not this __main__ copy: topic modules build their
    # Comparison objects from helpers.bench, and the two copies' classes differ.
    from helpers.bench import main as _main

    sys.exit(_main())
