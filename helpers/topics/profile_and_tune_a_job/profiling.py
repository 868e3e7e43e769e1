"""Read a profile without TensorBoard (notebook 14).

The notebook records the trace itself (``tf.profiler.experimental.start``, a
``Trace("train", step_num=...)`` span per step, ``stop``); TensorFlow writes it as XPlane
(``plugins/profile/<run>/<host>.xplane.pb``). ``trace_file`` finds it, ``load``
parses it with the protobuf classes TensorFlow ships; ``op_table``, ``step_table`` and
``timeline_figure`` turn it into a per-op time table and a timeline whose gaps between steps
are the time the loop spent outside them (waiting for data). XPlane times are picoseconds.
"""

from __future__ import annotations

import glob
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from helpers import checks

PS_PER_MS = 1e9
STEP_EVENT = "train"


def trace_file(logdir: str | Path) -> Path:
    """The newest ``.xplane.pb`` trace the profiler wrote under ``logdir``
    (``plugins/profile/<run>/<host>.xplane.pb``, one run folder per ``start``/``stop``)."""
    found = glob.glob(str(Path(logdir) / "plugins" / "profile" / "*" / "*.xplane.pb"))
    if not found:
        raise FileNotFoundError(
            f"no .xplane.pb trace under {logdir}: did tf.profiler.experimental.stop() run?"
        )
    return Path(max(found, key=os.path.getmtime))


def load(path: str | Path) -> Any:
    """The ``XSpace`` protobuf in an ``.xplane.pb`` file."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no trace file at {path}")
    space = xplane_pb2.XSpace()
    try:
        space.ParseFromString(path.read_bytes())
    except Exception as exc:  # protobuf's DecodeError and friends
        raise ValueError(f"{path.name} is not an XPlane trace: {exc}") from exc
    if not space.planes:
        raise ValueError(f"{path.name} holds no planes: is it an .xplane.pb file?")
    return space


def _events(space: Any) -> Iterator[dict[str, Any]]:
    for plane in space.planes:
        stat_names = {k: v.name for k, v in plane.stat_metadata.items()}
        for line in plane.lines:
            base_ps = line.timestamp_ns * 1000
            for event in line.events:
                meta = plane.event_metadata[event.metadata_id]
                stats = {
                    stat_names.get(s.metadata_id, ""): getattr(
                        s, s.WhichOneof("value") or "int64_value"
                    )
                    for s in event.stats
                }
                yield {
                    "plane": plane.name,
                    "thread": line.display_name or line.name,
                    "name": meta.name,
                    "op_type": meta.display_name,
                    "start_ps": base_ps + event.offset_ps,
                    "duration_ps": event.duration_ps,
                    "step_num": stats.get("step_num"),
                }


def events(space: Any) -> Any:
    """Every event of the trace, one row each, times in ms from the first event."""
    import pandas as pd

    table = pd.DataFrame(list(_events(space)))
    if table.empty:
        raise ValueError("the trace holds no events")
    start = table["start_ps"].min()
    table["start_ms"] = (table["start_ps"] - start) / PS_PER_MS
    table["duration_ms"] = table["duration_ps"] / PS_PER_MS
    return table.drop(columns=["start_ps", "duration_ps"])


def op_events(table: Any) -> Any:
    """The TensorFlow op executions among ``events``: named ``scope/name:OpType``."""
    ops = table[(table["op_type"] != "") & table["name"].str.contains(":", regex=False)]
    keep = [
        name.endswith(":" + op_type)
        for name, op_type in zip(ops["name"], ops["op_type"], strict=True)
    ]
    return ops[keep]


@checks.arguments(top=checks.whole(1, 10_000))
def op_table(table: Any, top: int = 12) -> Any:
    """Time per op type, largest first: count, total and mean, and share of all op time."""
    ops = op_events(table)
    if ops.empty:
        raise ValueError("the trace holds no op events")
    grouped = ops.groupby("op_type")["duration_ms"].agg(["count", "sum", "mean"])
    grouped = grouped.sort_values("sum", ascending=False)
    grouped["share"] = grouped["sum"] / grouped["sum"].sum()
    grouped.columns = ["count", "total ms", "mean ms", "share"]
    return grouped.head(top).round({"total ms": 3, "mean ms": 4, "share": 3})


def step_table(table: Any, event: str = STEP_EVENT) -> Any:
    """One row per traced step (spans named ``event`` with a step number; Keras' TensorBoard
    callback names its spans ``"Profiled batch"``): start, duration, and the gap before the next
    step begins."""
    steps = table[(table["name"] == event) & table["step_num"].notna()].sort_values("start_ms")
    if steps.empty:
        raise ValueError(
            f"the trace holds no '{event}' step events: "
            f"was each step recorded in a Trace({event!r}, step_num=...) span?"
        )
    result = (
        steps[["step_num", "start_ms", "duration_ms"]]
        .astype({"step_num": int})
        .set_index("step_num")
    )
    ends = result["start_ms"] + result["duration_ms"]
    result["gap after ms"] = (result["start_ms"].shift(-1) - ends).round(3)
    return result.round(3)


def step_summary(steps: Any) -> str:
    """Median step time, median gap between steps, and the share of wall time spent in steps."""
    span = steps["start_ms"].iloc[-1] + steps["duration_ms"].iloc[-1] - steps["start_ms"].iloc[0]
    busy = steps["duration_ms"].sum()
    gaps = steps["gap after ms"].dropna()
    gap_text = f", median gap {gaps.median():.2f} ms" if len(gaps) else ""
    return (
        f"{len(steps)} steps: median {steps['duration_ms'].median():.2f} ms each{gap_text}; "
        f"inside steps {busy / span:.0%} of the time"
    )


def steps_compared(naive: Any, tuned: Any) -> str:
    """Two loops' step tables side by side: the median gap before a step and the median step."""

    def medians(steps: Any) -> tuple[float, float]:
        gaps = steps["gap after ms"].dropna()
        return (float(gaps.median()) if len(gaps) else math.nan), float(
            steps["duration_ms"].median()
        )

    (gap0, step0), (gap1, step1) = medians(naive), medians(tuned)
    shorter = f" ({gap0 / gap1:.0f}x shorter)" if gap1 > 0 and gap0 == gap0 else ""
    return (
        f"median gap between steps: {gap0:.2f} ms naive, {gap1:.2f} ms tuned{shorter}; "
        f"median step: {step0:.1f} ms naive, {step1:.1f} ms tuned "
        f"(the tuned step takes {step1 / step0:.0%} of the naive step's time)"
    )


def timeline_figure(table: Any, title: str = "") -> Any:
    """The traced steps as bars along time, above the op executions on each thread: the white
    space between step bars is time the loop spent outside its steps."""
    from matplotlib.figure import Figure

    steps = step_table(table)
    ops = op_events(table)
    threads = list(dict.fromkeys(ops["thread"]))
    fig = Figure(figsize=(11, 1.2 + 0.35 * (len(threads) + 1)), layout="constrained")
    ax = fig.subplots()
    ax.broken_barh(
        list(zip(steps["start_ms"], steps["duration_ms"], strict=True)),
        (len(threads), 0.8),
        facecolors="tab:blue",
    )
    for i, thread in enumerate(threads):
        part = ops[ops["thread"] == thread]
        ax.broken_barh(
            list(zip(part["start_ms"], part["duration_ms"].clip(lower=0.01), strict=True)),
            (i, 0.8),
            facecolors="tab:orange",
        )
    ax.set_yticks(
        [i + 0.4 for i in range(len(threads) + 1)],
        [f"{t.split('/')[0]} thread {i + 1}" for i, t in enumerate(threads)] + ["train steps"],
    )
    ax.set_xlabel("ms since the first traced event")
    if title:
        ax.set_title(title)
    return fig


def tensorboard_hint(logdir: str | Path) -> str:
    """How to open the same trace in the standard viewer (XProf, TensorBoard's profile plugin)."""
    import importlib.util

    if importlib.util.find_spec("xprof") is not None:
        return (
            f"open it with: xprof --logdir {logdir}  "
            f"(or tensorboard --logdir {logdir}, then its Profile tab)"
        )
    return (
        "The viewer is not installed (the workbook reads traces itself). "
        "To browse the same trace: "
        f"pip install xprof, then xprof --logdir {logdir} (a web page on port 8791), "
        f"or with xprof installed: tensorboard --logdir {logdir}, then its Profile tab"
    )


#: The python tracer's events are named "$<file>:<line> <function>" (XLA's python_hooks).
PYTHON_EVENT = "$"
#: The host tracer's name for an eager op run from Python: "EagerLocalExecute: <op>".
EAGER_OP = "EagerLocalExecute: "


def python_summary(table: Any) -> str:
    """How many Python function events (the python tracer's ``$file:line function``) a trace
    holds."""
    calls = table[table["name"].str.startswith(PYTHON_EVENT)]
    if calls.empty:
        return "0 Python function events (names starting with $) in the trace"
    top = calls.groupby("name")["duration_ms"].sum().sort_values(ascending=False)
    return (
        f"{len(calls)} Python function events; "
        f"the longest in total: {top.index[0]} ({top.iloc[0]:.1f} ms)"
    )


@checks.arguments(top=checks.whole(1, 10_000))
def gap_ops(table: Any, top: int = 8) -> Any:
    """The eager ops that started on the steps' thread between one recorded step's end and the
    next one's start: calls, total ms and share of all gap time, largest first. ``attrs``:
    ``gap_ms`` (the gaps' total), ``gaps`` (how many) and ``eager_ms`` (every such op, beyond the
    ``top`` rows)."""
    steps = step_table(table)
    thread = table.loc[table["name"] == STEP_EVENT, "thread"].iloc[0]
    ends = (steps["start_ms"] + steps["duration_ms"]).to_numpy()[:-1]
    starts = steps["start_ms"].to_numpy()[1:]
    eager = table[(table["thread"] == thread) & table["name"].str.startswith(EAGER_OP)]
    inside = [any(a <= t < b for a, b in zip(ends, starts, strict=True)) for t in eager["start_ms"]]
    eager = eager[inside].assign(op=lambda t: t["name"].str.slice(len(EAGER_OP)))
    grouped = (
        eager.groupby("op")["duration_ms"].agg(["count", "sum"]).sort_values("sum", ascending=False)
    )
    gap_ms = float((starts - ends).sum())
    grouped.columns = ["calls", "total ms"]
    grouped["share of gaps"] = grouped["total ms"] / gap_ms if gap_ms > 0 else math.nan
    result = grouped.head(top).round({"total ms": 2, "share of gaps": 3})
    result.attrs.update(gap_ms=gap_ms, gaps=len(starts), eager_ms=float(grouped["total ms"].sum()))
    return result


def gap_summary(ops: Any) -> str:
    """One line reading ``gap_ops``: the gaps' total, the eager ops' part and the op that took
    most."""
    gap_ms, eager_ms, gaps = (
        ops.attrs.get("gap_ms", math.nan),
        ops.attrs.get("eager_ms", math.nan),
        ops.attrs.get("gaps", 0),
    )
    head = f"the {gaps} gaps between recorded steps: {gap_ms:.1f} ms in all"
    if ops.empty:
        return f"{head}; no eager op started in them"
    return (
        f"{head}; eager ops ran for {eager_ms:.1f} ms of it ({eager_ms / gap_ms:.0%}), "
        f"{ops.index[0]} the most "
        f"({ops['total ms'].iloc[0]:.1f} ms in {ops['calls'].iloc[0]} calls); "
        "the rest ran outside the eager ops the trace recorded: the feed's own Python and "
        "NumPy work, and whatever else the trace left out (not attributed further here)"
    )


# Notebook 14 calls profiling.check_slowest_op: the check lives in its own module.
from helpers.topics.profile_and_tune_a_job.profiling_check import (  # noqa: E402
    check_slowest_op as check_slowest_op,
)
