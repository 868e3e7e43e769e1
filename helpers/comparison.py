"""One benchmark comparison: what ``make bench`` runs and records in ``bench.json``.

Kept apart from the runner (``helpers.bench``) so that the modules that register comparisons
import this small module and nothing imports in a circle: the runner imports the registering
modules, they import only this.
"""

from __future__ import annotations

import importlib
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from helpers import checks, timing, timing_stats
from helpers.results import KINDS

ID_PATTERN = re.compile(r"^[a-z0-9_]+\.[a-z0-9_]+$")
REFERENCE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
#: The fewest timed samples of each side a record may rest on (a median of 3 shows the spread).
MIN_SAMPLES = 3


def resolve(fn: Callable[..., Any] | str) -> Callable[..., Any]:
    """``fn`` itself, or the function a ``"package.module:function"`` reference names."""
    if not isinstance(fn, str):
        return fn
    module, _, name = fn.partition(":")
    found = getattr(importlib.import_module(module), name, None)
    if not callable(found):
        raise ValueError(f"{fn!r}: {module} has no function {name!r}")
    return found


@dataclass(frozen=True)
class Comparison:
    """A named comparison: ``make_variants(**params)`` returns at least the baseline and the
    variant, timed here in one process; or, for settings that need fresh processes,
    ``measure(**params)`` returns ``timing.compare``'s table itself (its ``attrs["note"]``, if
    any, is reported beside the result). ``quick`` and ``full`` are the two workloads'
    parameters; ``bound()``, when given, is the largest ratio physics allows (the core count for
    threads); ``unit`` is what the medians count when they are not seconds (``"bytes"``);
    ``kind`` is what the ratio is, when not a speed-up (``results.KINDS``: ``"size ratio"``,
    ``"share of bound"``), so that the room's figure does not draw it as one. A timing needs at
    least ``MIN_SAMPLES`` samples of each side; ``deterministic=True`` says the measure is not a
    timing (a file's size), so one sample is the whole truth and its zero-width spread is exact.

    ``make_variants`` and ``measure`` may be given as ``"package.module:function"``: lesson
    code exported from a notebook (``helpers.lessons``) is then imported only when the
    comparison runs, so registering it costs nothing."""

    id: str
    title: str
    make_variants: Callable[..., Mapping[str, Callable[..., Any]]] | str | None = None
    baseline: str = "baseline"
    variant: str = "variant"
    quick: Mapping[str, Any] = field(default_factory=dict)
    full: Mapping[str, Any] = field(default_factory=dict)
    repeats: int = 7
    min_time: float = 0.5
    items: Callable[..., int] | None = None
    measure: Callable[..., Any] | str | None = None
    bound: Callable[[], float] | None = None
    unit: str = "s"
    kind: str = "speed-up"
    deterministic: bool = False

    def __post_init__(self) -> None:
        if not ID_PATTERN.match(self.id):
            raise ValueError(f"comparison id {self.id!r} must look like 'topic.name' (a-z, 0-9, _)")
        if self.kind not in KINDS:
            raise ValueError(f"{self.id}: kind must be one of {sorted(KINDS)}, got {self.kind!r}")
        checks.whole_number("repeats", self.repeats)
        checks.number(0.0, 3600.0, "seconds")("min_time", self.min_time)
        checks.flag("deterministic", self.deterministic)
        if self.baseline == self.variant:
            raise ValueError(f"{self.id}: baseline and variant are both {self.baseline!r}")
        if (self.make_variants is None) == (self.measure is None):
            raise ValueError(f"{self.id}: give exactly one of make_variants and measure")
        for fn in (self.make_variants, self.measure):
            if isinstance(fn, str) and not REFERENCE.match(fn):
                raise ValueError(f"{self.id}: {fn!r} must look like 'package.module:function'")

    def run(self, quick: bool = False) -> dict[str, Any]:
        """Time baseline against variant, interleaved; return one ``bench.json`` record."""
        params = dict(self.quick if quick else self.full)
        if self.measure is not None:
            table = resolve(self.measure)(**params)
            missing = {self.baseline, self.variant} - set(table.index)
        else:
            built = resolve(self.make_variants)(**params)
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
        self._check_table(base, var)
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
        if self.kind != "speed-up":
            record["kind"] = self.kind
        if table.attrs.get("note"):
            record["note"] = str(table.attrs["note"])
        if self.deterministic:
            record["deterministic"] = True
        if self.bound is not None:
            record["bound"] = float(self.bound())
        return record

    def _check_table(self, base: Any, var: Any) -> None:
        """Refuse a measurement whose table would make a misleading record: too few samples for a
        timing, or a ``speedup`` that is not the baseline's median over the variant's."""
        counts = {self.baseline: int(base["repeats"]), self.variant: int(var["repeats"])}
        if not self.deterministic and min(counts.values()) < MIN_SAMPLES:
            raise ValueError(
                f"{self.id}: {counts} timed samples; a timing needs at least {MIN_SAMPLES} of each "
                "(deterministic=True only where the measure is not a timing)"
            )
        ratio, speedup = (
            timing_stats._ratio(float(base["median_s"]), float(var["median_s"])),
            float(var["speedup"]),
        )
        if not (
            math.isclose(speedup, ratio, rel_tol=1e-6)
            or (math.isnan(speedup) and math.isnan(ratio))
        ):
            raise ValueError(
                f"{self.id}: speedup {speedup:.6g} is not the ratio of the medians "
                f"({float(base['median_s']):.6g} / {float(var['median_s']):.6g} = {ratio:.6g})"
            )


def _jsonable(value: Any) -> Any:
    return value if isinstance(value, (bool, int, float, str, type(None))) else repr(value)
