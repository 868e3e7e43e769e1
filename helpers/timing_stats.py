"""What a set of timed calls says: ``Timing`` (the seconds of each call, with the median,
quartiles and throughput), ``comparison_table`` (the speed-up table ``timing.compare`` returns,
built from timings), ``format_seconds`` and ``span`` (a table's ``"low-high"`` cell read back).

It serves every notebook that times something: ``timing`` takes the measurements and
re-exports these names, so notebooks and topics reach them as ``timing.Timing``,
``timing.format_seconds`` and so on. ``per_run`` makes a ``Timing`` of fresh processes, one
value each. ``speed_probe`` and ``run_setting`` are what ``make test``
prints about the machine a run had (the repository's conftest.py).
"""

from __future__ import annotations

import math
import os
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from helpers import checks


@dataclass(frozen=True)
class Timing:
    """The seconds each timed call took, with the statistics the workbook reports."""

    label: str
    seconds: tuple[float, ...]
    items: int | None = None

    @property
    def count(self) -> int:
        return len(self.seconds)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def minimum(self) -> float:
        return min(self.seconds)

    @property
    def maximum(self) -> float:
        return max(self.seconds)

    @property
    def q1(self) -> float:
        return _quantile(self.seconds, 0.25)

    @property
    def q3(self) -> float:
        return _quantile(self.seconds, 0.75)

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1

    @property
    def throughput(self) -> float | None:
        """Items per second at the median, when ``items`` was given."""
        return None if self.items is None else self.items / self.median

    def __str__(self) -> str:
        text = (
            f"{self.label}: median {format_seconds(self.median)} "
            f"(IQR {format_seconds(self.q1)}-{format_seconds(self.q3)}, "
            f"min {format_seconds(self.minimum)}, n={self.count})"
        )
        if self.throughput is not None:
            text += f", {self.throughput:,.0f} items/s"
        return text


@checks.arguments(items=checks.optional(checks.whole(1)))
def per_run(label: str, runs: Sequence[Sequence[float]], items: int | None = None) -> Timing:
    """A ``Timing`` with one value per run, each run (a fresh process) read at its median
    epoch. Epochs of one process share its memory layout, threads' placement and warm caches,
    and differ less than two runs do: pooled, they would make the spread a verdict reads look
    narrower than a rerun is."""
    if not runs or any(not run for run in runs):
        raise ValueError(f"runs must be non-empty lists of seconds, got {runs!r}")
    return Timing(label, tuple(statistics.median(run) for run in runs), items)


def _quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile (numpy's default), exact for one value."""
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def format_seconds(seconds: float) -> str:
    """Format a duration with a readable unit: ``1.23 s``, ``4.56 ms``, ``7.8 µs``."""
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"


def comparison_table(timings: Mapping[str, Timing], baseline: str) -> Any:
    """Build ``compare``'s table from timings already taken (baseline row first)."""
    import pandas as pd

    if baseline not in timings:
        raise ValueError(f"baseline {baseline!r} is not one of {list(timings)}")
    base = timings[baseline]
    rows = []
    for name, t in timings.items():
        low, high = quartile_ratios(base.q1, base.q3, t.q1, t.q3)
        row = {
            "variant": name,
            "median_s": t.median,
            "min_s": t.minimum,
            "max_s": t.maximum,
            "q1_s": t.q1,
            "q3_s": t.q3,
            "repeats": t.count,
            "speedup": _ratio(base.median, t.median),
            "speedup_low": low,
            "speedup_high": high,
        }
        if t.items is not None:
            row["items_per_s"] = t.items / t.median
        rows.append(row)
    table = pd.DataFrame(rows).set_index("variant")
    table.attrs["baseline"] = baseline
    table.attrs["timings"] = dict(timings)
    return table


def _ratio(a: float, b: float) -> float:
    """a / b, with inf (or nan for 0/0) where the clock could not resolve b."""
    if b > 0:
        return a / b
    return math.nan if a == 0 else math.inf


def quartile_ratios(base_q1: Any, base_q3: Any, q1: Any, q3: Any) -> tuple[Any, Any]:
    """The low and high ends of a speed-up from two rows' quartiles of time (numbers, with
    ``_ratio``'s inf where a quartile is 0, or table columns): the baseline's q1 over the
    variant's q3, and its q3 over the variant's q1. Where they straddle 1x, the runs overlap."""
    if all(isinstance(v, int | float) for v in (base_q1, base_q3, q1, q3)):
        return _ratio(base_q1, q3), _ratio(base_q3, q1)
    return base_q1 / q3, base_q3 / q1


def span(text: Any) -> tuple[float, float] | tuple[None, None]:
    """A table's ``"low-high"`` cell (``"1.56-1.91"``, ``"310-402"``) as two numbers; anything
    else (an empty cell, a skipped row's NaN) as ``(None, None)``."""
    try:
        low, high = str(text).split("-")
        return float(low), float(high)
    except ValueError:
        return None, None


@checks.arguments(loops=checks.whole(1, 100_000_000), tries=checks.whole(1, 100))
def speed_probe(loops: int = 5_000_000, tries: int = 3) -> float:
    """Seconds a fixed pure-Python loop takes on one core, best of ``tries``: how fast this machine
    runs right now. A shared virtual machine's speed changes from hour to hour (the same suite
    has taken 890 s and 1,183 s an hour apart), so compare run times made at similar probes."""
    best = float("inf")
    for _ in range(tries):
        start, total = time.perf_counter(), 0
        for i in range(loops):
            total += i
        best = min(best, time.perf_counter() - start)
    return best


def run_setting(cpuinfo: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """One line: the CPU a run had and its oneDNN variables. ``make test`` prints it next to the
    speed probe, so that a run's log says whether it ran on the CPU as it is, played an AVX2-only
    CPU or capped the instruction set (docs/test-times.md). ``cpuinfo`` and ``environ`` are for
    tests."""
    from helpers import env

    environ = os.environ if environ is None else environ
    cpu = env.cpu_info(cpuinfo)
    have = [name for name, present in cpu["features"].items() if present]
    variables = ", ".join(
        f"{name}={environ[name]}" if name in environ else f"{name} unset"
        for name in ("TF_ENABLE_ONEDNN_OPTS", "ONEDNN_MAX_CPU_ISA")
    )
    usable = env.usable_cores()  # fewer under taskset or a container's cpuset
    cpus = f"{cpu['logical_cores']} logical CPUs" + (
        f" ({usable} usable by this run)" if usable < (cpu["logical_cores"] or 0) else ""
    )
    return (
        f"this run: {cpu['model']}, {cpus}, "
        f"flags {' '.join(have) or 'none of ' + ' '.join(env.CPU_FEATURES)}; {variables}"
    )
