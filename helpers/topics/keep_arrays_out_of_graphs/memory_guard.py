"""Notebook 05's memory guard: every demo estimates its peak memory first (``estimate_peak``, from
the measured ``PEAK_FACTORS``) and ``guard`` refuses to run it, with ``MemoryGuardError``, when the
estimate is above ``SAFE_FRACTION`` of the memory available; ``make_array`` is the guarded array the
demos embed, sized without allocating by ``array_bytes``.

``helpers.topics.keep_arrays_out_of_graphs.memory`` runs the measurements with these and re-exports
them: notebook 05 calls
``memory.make_array`` and ``memory.available_bytes``, and its exported child program imports
``MemoryGuardError``, ``estimate_peak`` and ``guard`` from
``helpers.topics.keep_arrays_out_of_graphs.memory``.
"""

from __future__ import annotations

import math
from typing import Any

from helpers import checks
from helpers.checks import BadType, whole_number

MIB = 2**20
#: Refuse a demo whose estimated peak is above this fraction of the available memory.
SAFE_FRACTION = 0.5
#: Peak RSS per byte on TF 2.21 (x86-64 Linux), with a margin over what was measured in notebook
#: 05's saved runs (2026-11-28 and -29): a TF1 graph peaked at 4.1x its GraphDef in a fresh process,
#: a tf.function embedding an array raised the kernel's memory by 15x to 16x the array, and
#: from_tensor_slices inside a tf.function by 8.8x to 15x (earlier notes: about 3x, 14x and 16x).
PEAK_FACTORS = {"tf1_graph": 6.0, "function": 20.0, "dataset": 20.0}


class MemoryGuardError(RuntimeError):
    """A demo would need more memory than it is safe to take on this machine."""


def available_bytes() -> int:
    """Memory available to new allocations without swapping (psutil's estimate)."""
    import psutil

    return int(psutil.virtual_memory().available)


@checks.arguments(nbytes=checks.whole(0, 2**50), copies=checks.whole(0, 10**6))
def estimate_peak(kind: str, nbytes: int, copies: int = 1) -> int:
    """Estimated extra peak memory, in bytes, of embedding ``copies`` of an ``nbytes`` array."""
    if kind not in PEAK_FACTORS:
        raise ValueError(f"unknown kind {kind!r}; use one of {sorted(PEAK_FACTORS)}")
    if nbytes < 0 or copies < 0:
        raise ValueError(f"nbytes and copies must be >= 0, got {nbytes} and {copies}")
    return int(PEAK_FACTORS[kind] * nbytes * max(copies, 1))


def guard(
    estimate: int, what: str, available: int | None = None, fraction: float = SAFE_FRACTION
) -> None:
    """Raise ``MemoryGuardError`` when ``estimate`` bytes is above ``fraction`` of available
    memory."""
    checks.number(0.0, 1.0, "of the available memory", above=True)(
        "fraction", fraction
    )  # nan would let anything through
    checks.whole(0, 2**62)("estimate", estimate)
    available = available_bytes() if available is None else available
    if estimate > fraction * available:
        raise MemoryGuardError(
            f"{what} would need about {estimate / MIB:,.0f} MiB at its peak, more than "
            f"{fraction:.0%} of the {available / MIB:,.0f} MiB available on this machine. "
            "Choose a smaller size or fewer copies."
        )


def make_array(mib: float, seed: int = 0) -> Any:
    """A float32 NumPy array of about ``mib`` MiB of random numbers."""
    import numpy as np

    nbytes = array_bytes(mib)
    whole_number("seed", seed, 0)
    guard(nbytes, f"make_array(mib={mib}): the array itself")  # before allocating
    return np.random.default_rng(seed).random(nbytes // 4, dtype=np.float32)


def array_bytes(mib: float) -> int:
    """The bytes ``make_array(mib)`` allocates, computed without allocating (validates ``mib``)."""
    if isinstance(mib, bool) or not isinstance(mib, int | float):
        raise BadType(
            f"mib must be a positive size in MiB (a number), got {mib!r} ({type(mib).__name__})"
        )
    if not math.isfinite(mib) or not 0 < mib <= 2**30:
        raise ValueError(
            f"mib must be a size in MiB above 0 and at most {2**30:,} (a PiB), got {mib!r}"
        )
    return 4 * max(1, int(mib * MIB) // 4)
