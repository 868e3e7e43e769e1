"""Honest timing: warm up, repeat, force the result before the clock stops, report the spread.

``measure`` times one callable; ``compare`` times several interleaved on the same inputs and
returns a pandas table with each variant's median, spread and speed-up against a baseline.
Give ``items`` (images, examples, batches per call) to get throughput in items per second.
What the timings say (``Timing``, the table, ``format_seconds``, ``span``) is in ``timing_stats``
and re-exported here.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from helpers import checks
from helpers.timing_stats import Timing, comparison_table

# Re-exported: notebooks 00, 01 and 08 call timing.format_seconds; topics call timing.span.
from helpers.timing_stats import format_seconds as format_seconds
from helpers.timing_stats import per_run as per_run
from helpers.timing_stats import span as span

ProgressFn = Callable[[int, int], None]
T = TypeVar("T")
MAX_REPEATS, MAX_MIN_TIME = (
    1_000_000,
    3600.0,
)  # timed calls of one variant; seconds (inf would never stop)


def force(result: Any) -> Any:
    """Wait until ``result`` is computed: ``.numpy()`` every tensor in it, sync GPUs if any.

    TensorFlow dispatches work asynchronously; a timer that stops before this measures
    only the dispatch. Plain Python and NumPy values pass through untouched.
    """
    leaves: list[Any] = []
    _flatten(result, leaves)
    for leaf in leaves:
        numpy = getattr(leaf, "numpy", None)
        if callable(numpy):
            numpy()
    tf = sys.modules.get("tensorflow")
    if tf is not None and leaves and _has_gpu(tf):
        tf.test.experimental.sync_devices()  # TF 2.21 exports it only under tf.test
    return result


def _flatten(value: Any, out: list[Any]) -> None:
    if isinstance(value, Mapping):
        for v in value.values():
            _flatten(v, out)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _flatten(v, out)
    elif value is not None:
        out.append(value)


_GPU_CACHE: dict[int, bool] = {}


def _has_gpu(tf: Any) -> bool:
    key = id(tf)
    if key not in _GPU_CACHE:
        _GPU_CACHE[key] = bool(tf.config.list_physical_devices("GPU"))
    return _GPU_CACHE[key]


def _check_callable(name: str, fn: Any) -> None:
    if not callable(fn):
        raise TypeError(f"variant {name!r} must be callable, got {type(fn).__name__}: {fn!r}")


def _check_counts(
    warmup: int, repeats: int, min_time: float, items: int | None, max_repeats: int
) -> None:
    checks.whole_number("repeats", repeats, 1, "", MAX_REPEATS)
    checks.whole_number("warmup", warmup, 0, "", MAX_REPEATS)
    checks.whole_number("max_repeats", max_repeats, 1, "", MAX_REPEATS)
    checks.number(0, MAX_MIN_TIME, "seconds")("min_time", min_time)
    if items is not None:
        checks.whole_number("items", items, 1, "", 10**15)


def rotated(items: Sequence[T], round_index: int) -> list[T]:
    """``items`` in the order for round ``round_index``: shifted by one place per round, so that
    no variant always runs first (warm caches, turbo clocks, slow drift)."""
    if not items:
        return []
    shift = round_index % len(items)
    return list(items[shift:]) + list(items[:shift])


_SPENT: list[Any] = []  # iterators of passes read by read_pass inside a timed call
_TIMED = [0]  # how many timed calls are running (nested ones included)


def read_pass(dataset: Any) -> int:
    """Read one pass over a ``tf.data`` dataset from a new iterator, as a ``for`` loop does, and
    return the rows read (the leading dimension of each element's first tensor). Inside a timed
    call (``time_once``, ``measure``, ``compare``) the spent iterator is kept until the clock has
    stopped: deleting one can wait for tf.data's autotuning thread, up to its next scheduled
    wake-up, a cost of ending an epoch that notebook 07 times on its own."""
    if not hasattr(dataset, "__iter__") or isinstance(dataset, (str, bytes, Mapping)):
        raise TypeError(f"dataset must be a tf.data.Dataset, got {type(dataset).__name__}")
    rows, iterator = 0, iter(dataset)
    for element in iterator:
        leaves: list[Any] = []
        _flatten(element, leaves)
        shape = getattr(leaves[0], "shape", ()) if leaves else ()
        rows += int(shape[0]) if len(shape) else 1
    if _TIMED[0]:
        _SPENT.append(iterator)
    return rows


def _clocked(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> float:
    """Seconds for one call of ``fn``, its result forced; the iterators read_pass kept during
    the call are deleted after the clock stops, whether the call returned or raised."""
    mark = len(_SPENT)
    _TIMED[0] += 1
    try:
        start = time.perf_counter()
        force(fn(*args, **kwargs))
        return time.perf_counter() - start
    finally:
        _TIMED[0] -= 1
        del _SPENT[mark:]


def time_once(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> float:
    """Seconds for one call, result forced: for first-call costs (tracing, compiling)."""
    _check_callable(getattr(fn, "__name__", "fn"), fn)
    return _clocked(fn, *args, **kwargs)


def measure(
    fn: Callable[..., Any],
    *args: Any,
    warmup: int = 1,
    repeats: int = 5,
    min_time: float = 0.0,
    max_repeats: int = 10_000,
    items: int | None = None,
    label: str | None = None,
) -> Timing:
    """Time ``fn(*args)``: ``warmup`` untimed calls, then at least ``repeats`` timed calls,
    more until they add up to ``min_time`` seconds (at most ``max_repeats``)."""
    name = label or getattr(fn, "__name__", "fn")
    _check_callable(name, fn)
    _check_counts(warmup, repeats, min_time, items, max_repeats)
    for _ in range(warmup):
        _clocked(fn, *args)
    seconds: list[float] = []
    while len(seconds) < repeats or (sum(seconds) < min_time and len(seconds) < max_repeats):
        seconds.append(_clocked(fn, *args))
    return Timing(name, tuple(seconds), items)


def compare(
    variants: Mapping[str, Callable[..., Any]],
    *args: Any,
    baseline: str | None = None,
    warmup: int = 1,
    repeats: int = 5,
    min_time: float = 0.0,
    max_repeats: int = 1_000,
    items: int | None = None,
    on_progress: ProgressFn | None = None,
    before_each: Callable[[str], Any] | None = None,
) -> Any:
    """Time each variant on the same ``args``, interleaved round by round; return a table.

    Runs at least ``repeats`` rounds, and more (up to ``max_repeats``) until all the timed
    calls add up to ``min_time`` seconds.

    Rows are variants (baseline first). Columns: median/min/max/q1/q3 in seconds, repeats,
    ``speedup`` (baseline median / variant median; above 1 means faster than the baseline)
    with ``speedup_low``/``speedup_high`` from the quartiles, and ``items_per_s`` when
    ``items`` is given. ``table.attrs`` keeps ``baseline`` and the raw ``timings``.
    ``on_progress(done, total)`` is called after each round; ``before_each(name)``, if given,
    before each timed call of a variant, outside the clock (to drop files from the page cache,
    say, so that every timed read is a cold one).
    """
    if not isinstance(variants, Mapping) or not variants:
        raise ValueError(f"variants must be a non-empty dict of name -> callable, got {variants!r}")
    for name, fn in variants.items():
        _check_callable(name, fn)
    if before_each is not None and not callable(before_each):
        raise TypeError(
            "before_each must be callable or None, "
            f"got {type(before_each).__name__}: {before_each!r}"
        )
    _check_counts(warmup, repeats, min_time, items, max_repeats)
    names = list(variants)
    baseline = names[0] if baseline is None else baseline
    if baseline not in variants:
        raise ValueError(f"baseline {baseline!r} is not one of the variants {names}")
    names.remove(baseline)
    names.insert(0, baseline)

    for _ in range(warmup):
        for name in names:
            _clocked(variants[name], *args)
    seconds: dict[str, list[float]] = {name: [] for name in names}
    done = 0
    while done < repeats or (sum(map(sum, seconds.values())) < min_time and done < max_repeats):
        # Rotate the order each round so no variant always runs first (warm caches, turbo).
        for name in rotated(names, done):
            if before_each is not None:
                before_each(name)
            seconds[name].append(_clocked(variants[name], *args))
        done += 1
        if on_progress is not None:
            on_progress(done, max(repeats, done))

    timings = {name: Timing(name, tuple(s), items) for name, s in seconds.items()}
    return comparison_table(timings, baseline)
