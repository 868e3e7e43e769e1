"""Notebook 00: check that this machine can run the workbook, and say how to fix what fails."""

from __future__ import annotations

import importlib.metadata as metadata
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from helpers import checks, env
from helpers.exercises import Feedback, correct, not_yet

#: Below this much free memory the full-size notebooks may push the machine into swap.
MIN_AVAILABLE_GIB = 3.0


@dataclass(frozen=True)
class Check:
    """One requirement: what was found, whether it passes, and how to fix it if not."""

    requirement: str
    found: str
    status: str  # "pass", "FAIL" or "info"
    fix: str = ""


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _major_minor(version: str | None) -> tuple[int, ...]:
    if not version:
        return ()
    parts = []
    for piece in version.split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def check_package(
    dist: str,
    want: tuple[int, ...] | str,
    fix: str,
    version_of: Callable[[str], str | None] = _version,
) -> Check:
    """Pass when distribution ``dist`` is installed with a version starting with ``want``: a tuple
    such as ``(2, 21)``, or the same as text, ``"2.21"``."""
    if isinstance(want, str):
        if not re.fullmatch(r"\d+(\.\d+)*", want.strip()):
            raise ValueError(f"want must be a version such as (2, 21) or '2.21', got {want!r}")
        want = tuple(int(part) for part in want.strip().split("."))
    if not isinstance(want, tuple | list) or not all(
        isinstance(p, int) and not isinstance(p, bool) for p in want
    ):
        raise TypeError(f"want must be a version such as (2, 21) or '2.21', got {want!r}")
    want = tuple(want)
    found = version_of(dist)
    ok = found is not None and _major_minor(found)[: len(want)] == want
    requirement = f"{dist} {'.'.join(map(str, want))}.x" if want else dist
    return Check(requirement, found or "not installed", "pass" if ok else "FAIL", "" if ok else fix)


@checks.arguments(available_gib=checks.optional(checks.number(0, 2**20)))
def checks(
    version_of: Callable[[str], str | None] | None = None,
    available_gib: float | None = None,
) -> list[Check]:
    """Every requirement of the workbook, checked in this kernel.

    ``version_of`` and ``available_gib`` replace the real look-ups in tests.
    """
    import platform

    import psutil

    look_up = version_of or _version
    fix = "run `make lab` from the repository (it installs the pinned versions)"
    python = platform.python_version()
    python_ok = env.python_ok(tuple(int(p) for p in python.split(".")[:2]))
    rows = [
        Check(
            "Python 3.10-3.13",
            python,
            "pass" if python_ok else "FAIL",
            "" if python_ok else "install Python 3.11 and run `make lab PYTHON=python3.11`",
        ),
        check_package("tensorflow", (2, 21), fix, look_up),
        check_package("keras", (3,), fix, look_up),
        check_package("ipywidgets", (8,), fix, look_up),
        check_package("matplotlib", (3,), fix, look_up),
        check_package("pandas", (), fix, look_up),
        check_package(
            "tf-performance-workbook",
            (),
            "`pip install -e .` in the repository root (make lab does it)",
            look_up,
        ),
    ]
    avail = psutil.virtual_memory().available / 2**30 if available_gib is None else available_gib
    mem_ok = avail >= MIN_AVAILABLE_GIB
    rows.append(
        Check(
            f"free memory >= {MIN_AVAILABLE_GIB:g} GiB",
            f"{avail:.1f} GiB",
            "pass" if mem_ok else "FAIL",
            "" if mem_ok else "close other programs, or run with WORKBOOK_SCALE=small",
        )
    )
    try:
        rows.append(Check("WORKBOOK_SCALE is small or full", env.scale(), "pass"))
    except ValueError as exc:
        rows.append(
            Check(
                "WORKBOOK_SCALE is small or full", str(exc), "FAIL", "unset it, or set it to full"
            )
        )
    return rows


def gpu_check() -> Check:
    """Information only: a GPU changes some results, but no notebook needs one."""
    gpus = env.has_gpu()
    return Check(
        "GPU (optional)",
        "found" if gpus else "none",
        "info",
        "" if gpus else "nothing to fix: every notebook runs on the CPU",
    )


def report(rows: list[Check]) -> Any:
    """The checks as a table (requirement, found, status, fix)."""
    import pandas as pd

    return pd.DataFrame([r.__dict__ for r in rows]).set_index("requirement")


def summary(rows: list[Check]) -> str:
    """One line: all passed, or which failed."""
    failed = [r.requirement for r in rows if r.status == "FAIL"]
    counted = [r for r in rows if r.status != "info"]
    if not failed:
        return f"All {len(counted)} requirements met: the workbook is ready to run."
    return (
        f"{len(failed)} of {len(counted)} requirements failed: {', '.join(failed)}. "
        "See the fix column."
    )


def check_graph_function(fn: Any) -> Feedback:
    """Exercise 1: ``fn`` is a ``tf.function`` returning ``small_ops_chain(x, 50)``
    (notebook 00)."""
    import tensorflow as tf

    from helpers.lessons.start_here import small_ops_chain

    if not hasattr(fn, "get_concrete_function"):
        return not_yet("fast_chain must be a tf.function (put @tf.function above its def).")
    if tf.config.functions_run_eagerly():
        return not_yet(
            "tf.config.run_functions_eagerly(True) is on, so every tf.function runs op by op: "
            "switch it off"
        )
    spec = (getattr(fn, "input_signature", None) or [None])[0]  # a fixed shape: call with it
    fixed = getattr(spec, "shape", None)
    shape = fixed.as_list() if fixed is not None and fixed.is_fully_defined() else [16]
    x = tf.random.stateless_uniform(shape, seed=(3, 4))
    if getattr(spec, "dtype", tf.float32).is_floating:  # a float64 signature: call it with its type
        x = tf.cast(x, getattr(spec, "dtype", tf.float32))
    try:
        got = fn(x)
        graph = fn.get_concrete_function(x).graph.as_graph_def()
        ops = {node.op for node in graph.node}  # and the nested functions' ops
        ops |= {node.op for function in graph.library.function for node in function.node_def}
    except Exception as exc:  # the learner's code: report, do not crash the notebook
        return not_yet(f"fast_chain(x) raised {type(exc).__name__}: {exc}")
    if ops & {"EagerPyFunc", "PyFunc", "PyFuncStateless"}:
        return not_yet(
            "it calls Python through tf.py_function, whose ops run eagerly one by one: call "
            "small_ops_chain(x, 50) in the function itself"
        )
    want = small_ops_chain(tf.cast(x, tf.float32), 50)
    try:  # a string tensor of the right shape cannot be cast: a wrong answer, not a crash
        same = getattr(got, "shape", None) == want.shape and bool(
            tf.reduce_all(tf.abs(tf.cast(got, want.dtype) - want) < 1e-5)
        )
    except (TypeError, ValueError, tf.errors.OpError):
        same = False
    if not same:
        return not_yet("fast_chain(x) does not return the same values as small_ops_chain(x, 50).")
    return correct("one graph, same numbers as the eager chain.")


#: Tracing a chain of hundreds of ops takes far longer than running it: a first call within this
#: factor of a steady call was already traced (or timed something else).
WARMUP_FACTOR = 5


def check_warmup(first: Any, steady: Any) -> Feedback:
    """Exercise 2: ``first`` is a first-call time in seconds, ``steady`` a ``Timing`` of later
    calls."""
    from helpers import timing

    if hasattr(first, "numpy") or type(first).__module__ == "numpy":  # tf.timestamp, np.float64
        import numpy as np

        value = np.asarray(first)
        if value.ndim == 0 and value.dtype.kind in "iuf":  # one number, not a bool or an array
            first = float(value)
    if (
        isinstance(first, bool)
        or not isinstance(first, int | float)
        or not 0 < first < float("inf")
    ):
        return not_yet("first must be the seconds of one call, from timing.time_once(...).")
    if not isinstance(steady, timing.Timing) or steady.count < 10:
        return not_yet("steady must come from timing.measure(..., repeats=10).")
    try:
        median = float(steady.median)
    except (TypeError, ValueError):  # a Timing built by hand from other things than seconds
        median = float("nan")
    if not 0 < median < float("inf"):
        return not_yet("steady's median is not a time in seconds: use timing.measure(...).")
    if first > 60 or first / median > 1e5:
        return not_yet(
            f"first is {first:g} and steady's median {median:g}: are both in seconds? "
            "timing.time_once returns seconds."
        )
    if first < WARMUP_FACTOR * steady.median:
        return not_yet(
            f"the first call took {first / steady.median:.1f}x as long as a steady call; "
            f"a new function's tracing and first run make it at least {WARMUP_FACTOR}x. "
            "Did you time a function that was already traced? "
            "Build a new tf.function and try again."
        )
    return correct(
        f"the first call took {first / steady.median:.0f}x as long as a steady call: "
        "it traced the function and ran the traced graph for the first time."
    )


def forcing_summary(clocks: dict[str, Any]) -> str:
    """Read notebook 00's four clocks (the seconds of each call): what stopping before ``.numpy()``
    measured, with synchronous execution (the CPU default) and with asynchronous (as on a GPU).
    Medians are compared, with each clock's quartiles: an early clock that reads as long as the
    forced one, or longer, differs from it only by the spread between two sets of calls."""
    from helpers import timing

    lines = []
    for mode in ("synchronous", "asynchronous"):
        early, forced = (
            timing.Timing(f"{mode}, {kind}", tuple(clocks[f"{mode}, {kind}"]))
            for kind in ("not forced", "forced")
        )
        share = early.median / forced.median if forced.median > 0 else float("nan")
        overlap = early.q3 >= forced.q1 and forced.q3 >= early.q1
        if share >= 0.5 and share < 1 and not overlap:
            reading = (
                "the early clock read less, outside the forced clock's quartiles: part of that is "
                "the forced clock's own work (.numpy() copies the result), part may be work the "
                "early clock missed"
            )
        elif share >= 0.5:
            reading = "the call returned when its work was done, so the early clock hid the mistake"
            if share > 1 and not overlap:
                reading += (
                    f" (it even read longer, outside the forced clock's quartiles "
                    f"{timing.format_seconds(forced.q1)}-{timing.format_seconds(forced.q3)}: "
                    "forcing only adds work, so what differs is not the forcing but the moment: "
                    "the two sets of calls ran one after the other)"
                )
            elif overlap:
                reading += " (the two clocks' middle halves overlap)"
        elif share >= 0.1:
            reading = "the early clock missed part of the work"
        else:
            reading = "the early clock measured little more than handing the work over"
        lines.append(
            f"{mode.capitalize()}: not forced {timing.format_seconds(early.median)}, "
            f"forced {timing.format_seconds(forced.median)} "
            f"(the early clock read {share:.1%} of the forced one; {early.count} calls each): "
            f"{reading}."
        )
    return "\n".join(lines)
