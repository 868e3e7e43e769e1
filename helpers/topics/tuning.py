"""Notebook 16 and ``python -m helpers.tune``, their plumbing: which trials a job gets on this
machine, running each in a fresh process (notebook 16's ``TRIAL_PROGRAM``) in rotated rounds
under a time budget, and the combined best settings measured against the job as it is.

A trial is the job with one change. Its settings are what ``TRIAL_PROGRAM`` reads; its ``code``
is the change to make in the job, shown in the report.
"""

from __future__ import annotations

import math
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from helpers import checks, env, lessons, procs, timing
from helpers.timing import ProgressFn

ROOT = Path(__file__).resolve().parents[2]
BASELINE = "your job as it is"
COMBINED = "combined: every faster change"
LOSS_TOLERANCE = 0.25  # a trial's last-epoch loss within 25 % of the job's own: training still trains


@dataclass(frozen=True)
class Trial:
    name: str
    settings: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    code: str = ""
    skipped: str = ""  # why this machine does not run it


@dataclass
class Outcome:
    trial: Trial
    seconds: list[float] = field(default_factory=list)
    examples: int = 0
    losses: list[float] = field(default_factory=list)
    error: str = ""


def lesson() -> Any:
    """Notebook 16's exported lesson code: the trial program and the diagnosis."""
    return lessons.of("16_tune_your_own_job")


def _choice_code(function: str, name: str, value: Any) -> str:
    call = "make_model(" if function == "model" else "make_dataset(batch_size, "
    return f"{call}{name}={value!r})"


@checks.arguments(onednn=checks.optional_flag)
def plan(job_settings: dict[str, Any], cpuinfo: str | None = None, onednn: bool | None = None) -> list[Trial]:
    """The trials for a job with ``job_settings`` (``jobfile.settings_of``) on this machine: the
    job as it is first, then one change each."""
    onednn = env.onednn_enabled() if onednn is None else onednn
    bf16, why = env.bf16_kernels(cpuinfo, onednn)
    cores = env.usable_cores()  # the cores this process may run on (its affinity), not all the machine has
    steps = job_settings["steps"]
    per_call = max((k for k in (8, 4, 2) if steps % k == 0 and k < steps), default=0)
    trials = [
        Trial(BASELINE),
        Trial("prefetch", {"prefetch": True}, code="dataset = dataset.prefetch(tf.data.AUTOTUNE)"),
        Trial("tf.data options", {"data_options": True},
              code="options.deterministic = False; options.experimental_optimization.map_parallelization = True"),
        Trial("XLA", {"jit_compile": True}, code="model.compile(..., jit_compile=True)"),
        Trial("mixed_bfloat16", {"policy": "mixed_bfloat16"},
              code='keras.mixed_precision.set_global_policy("mixed_bfloat16")  # before make_model()',
              skipped="" if bf16 else why),
        Trial(f"{per_call} steps per call", {"steps_per_execution": per_call},
              code=f"model.compile(..., steps_per_execution={per_call})",
              skipped="" if per_call else f"STEPS={steps} has no divisor 2, 4 or 8 below it"),
    ]
    trials += [Trial(f"batch {b}", {"batch_size": b}, code=f"make_dataset({b})") for b in job_settings["batch_sizes"][1:]]
    trials.append(Trial(f"threads {cores} intra, 1 inter", {"threads": [cores, 1]},
                        code=f"tf.config.threading.set_intra_op_parallelism_threads({cores}); "
                             "tf.config.threading.set_inter_op_parallelism_threads(1)"))
    flip = "0" if onednn else "1"
    trials.append(Trial(f"oneDNN {'off' if onednn else 'on'}", env={"TF_ENABLE_ONEDNN_OPTS": flip},
                        code=f"export TF_ENABLE_ONEDNN_OPTS={flip}  # before Python starts"))
    for kind, key in (("model", "model_choices"), ("dataset", "dataset_choices")):
        for name, values in job_settings[key].items():
            trials += [Trial(f"your {name}={value!r}", {kind: {name: value}}, code=_choice_code(kind, name, value))
                       for value in values[1:]]
    return trials


def combine(trials: Sequence[Trial]) -> Trial:
    """One trial with every change of ``trials`` (the later wins where two set the same thing)."""
    settings: dict[str, Any] = {}
    environment: dict[str, str] = {}
    for trial in trials:
        for key, value in trial.settings.items():
            settings[key] = {**settings.get(key, {}), **value} if isinstance(value, dict) else value
        environment.update(trial.env)
    return Trial(COMBINED, settings, environment, code="\n".join(t.code for t in trials))


@checks.arguments(steps=checks.whole(1, 100_000), epochs=checks.whole(1, 100), timeout=checks.timeout)
def run_one(program: Path, job: Path, trial: Trial, steps: int, epochs: int, timeout: float) -> dict[str, Any]:
    """One trial in a fresh process: its row, or ``{"error": ...}`` when the job broke under it."""
    import json

    args = [sys.executable, str(Path(program).resolve()), str(Path(job).resolve()), "--settings", json.dumps(trial.settings),
            "--steps", str(steps), "--epochs", str(epochs)]
    try:
        (row,) = procs.run_rows(args, env={"TF_CPP_MIN_LOG_LEVEL": "2", **trial.env}, timeout=timeout, cwd=str(ROOT))
    except procs.ChildError as exc:
        return {"error": procs.tail(str(exc), 3)}
    return row


@checks.arguments(rounds=checks.whole(1, 100), epochs=checks.whole(1, 100), steps=checks.whole(1, 100_000),
                  budget=checks.number(1.0, 7 * 24 * 3600.0, hint="seconds"), timeout=checks.timeout)
def run_trials(job: str | Path, trials: Sequence[Trial], steps: int, epochs: int = 3, rounds: int = 3,
               budget: float = 600.0, timeout: float = 900.0, on_progress: ProgressFn | None = None,
               clock: Callable[[], float] = time.monotonic) -> dict[str, Outcome]:
    """Each trial not skipped, ``rounds`` times in rotation, each run a fresh process; stop
    starting runs when the next would likely end after ``budget`` seconds (the job's own first run
    is always made). The first round runs the job as it is first and last, so that a machine that
    speeds up or slows down during the round widens its spread instead of biasing every gain. A trial that breaks the job is kept with its error and not rerun."""
    runnable = [t for t in trials if not t.skipped]
    outcomes = {t.name: Outcome(t) for t in trials}
    folder = Path(tempfile.mkdtemp(prefix="workbook-tune-"))
    program = folder / "tune_trial.py"
    program.write_text(lesson().TRIAL_PROGRAM)
    try:
        return _rounds(program, job, runnable, outcomes, steps, epochs, rounds, budget, timeout, on_progress, clock)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _rounds(program: Path, job: str | Path, runnable: list[Trial], outcomes: dict[str, Outcome], steps: int,
            epochs: int, rounds: int, budget: float, timeout: float, on_progress: ProgressFn | None,
            clock: Callable[[], float]) -> dict[str, Outcome]:
    started, durations = clock(), []
    total = rounds * len(runnable)
    for r in range(rounds):
        order = timing.rotated(runnable, r)
        if r == 0 and len(order) > 1:  # the job as it is also ends the first round: drift shows as its spread
            order.append(order[0])
        for n, trial in enumerate(order):
            done = r * len(runnable) + min(n, len(runnable) - 1)
            outcome = outcomes[trial.name]
            if outcome.error:
                continue
            estimate = sum(durations) / len(durations) if durations else 0.0
            if clock() - started + estimate > budget and (r or n):  # the job's own first run always
                return outcomes
            if on_progress is not None:
                on_progress(done, total)
            before = clock()
            row = run_one(program, Path(job).resolve(), trial, steps, epochs, timeout)
            durations.append(clock() - before)
            if "error" in row:
                outcome.error = row["error"]
                continue
            outcome.seconds += list(row["seconds"])
            outcome.examples = row["examples"]
            outcome.losses.append(float(row["loss"]))
    if on_progress is not None:
        on_progress(total, total)
    return outcomes


def rate_ratio(base: Outcome, other: Outcome) -> tuple[float, float, float]:
    """Examples per second of ``other`` over ``base``: median, and the quartile bounds."""
    b, o = (timing.Timing(x.trial.name, tuple(x.seconds), items=x.examples) for x in (base, other))
    rate = lambda t, s: t.items / s  # noqa: E731
    return rate(o, o.median) / rate(b, b.median), rate(o, o.q3) / rate(b, b.q1), rate(o, o.q1) / rate(b, b.q3)


def loss_problem(base: Outcome, other: Outcome) -> str:
    """Why ``other`` no longer trains like the job, or "" (last-epoch loss within the tolerance)."""
    if not base.losses or not other.losses:
        return ""
    mine, theirs = sorted(base.losses)[len(base.losses) // 2], sorted(other.losses)[len(other.losses) // 2]
    if not math.isfinite(theirs):
        return f"the loss became {theirs}"
    if abs(theirs - mine) > LOSS_TOLERANCE * max(abs(mine), 0.1):
        return f"loss {theirs:.3g} after the same steps, against the job's {mine:.3g} (more than {LOSS_TOLERANCE:.0%} apart)"
    return ""


def plan_table(trials: Sequence[Trial]) -> Any:
    """The plan as a table: each trial's change, and why it is skipped here, if it is."""
    import pandas as pd

    return pd.DataFrame([{"trial": t.name, "change": t.code or "(none)", "skipped here because": t.skipped}
                         for t in trials]).set_index("trial")


def bound_reading(table: Any) -> str:
    """Input- or compute-bound, from a ``timing.compare`` table of "data only", "compute only"
    and "end to end" with ``items_per_s``: one computed line."""
    data, compute, both = (float(table.at[k, "items_per_s"]) for k in ("data only", "compute only", "end to end"))
    shared = 1 / (1 / data + 1 / compute)  # the two one after the other on the same cores
    kind = (f"Input-bound: the pipeline alone gives {data:,.0f} examples/s, less than the model takes ({compute:,.0f}/s)"
            if data < compute else
            f"Compute-bound: the model alone takes {compute:,.0f} examples/s, less than the pipeline gives ({data:,.0f}/s)")
    turns = (" End to end is well below both: the two take turns on the same cores rather than overlap, so making "
             "either side cheaper pays, the faster one included." if both < 0.8 * min(data, compute) else "")
    return (f"{kind}. End to end: {both:,.0f}/s, {both / min(data, compute):.0%} of the slower of the two; "
            f"{shared:,.0f}/s is what to expect if the two took turns on the same cores, "
            f"{min(data, compute):,.0f}/s if they overlapped perfectly.{turns}")


def keras_traces(model: Any) -> int | None:
    """How many times Keras traced ``model``'s training step (its ``tf.function``), or None if
    this Keras keeps it where this cannot see it. Keras wraps the function in closures."""
    seen, todo = set(), [getattr(model, "train_function", None)]
    while todo:
        fn = todo.pop()
        if fn is None or id(fn) in seen or len(seen) > 50:
            continue
        seen.add(id(fn))
        if hasattr(fn, "experimental_get_tracing_count"):
            return int(fn.experimental_get_tracing_count())
        todo += [c.cell_contents for c in (getattr(fn, "__closure__", None) or ()) if callable(c.cell_contents)]
    return None


def measured(frame: Any, name: str) -> bool:
    """Whether ``name`` is a row of a report table with a measured gain (pandas holds an unmeasured
    one as NaN, not None: a combined run that the budget did not reach)."""
    if name not in frame.index:
        return False
    gain = frame.at[name, "gain"]
    return gain is not None and gain == gain


def against_hand_tuned(frame: Any, hand: Any) -> str:
    """The tuner's combined gain beside notebook 14's hand-tuned one (``capstone.run_stages``
    with the first and last stages), each against its own baseline, in one computed line."""
    rows = hand[hand["cumulative"].notna()]
    if not measured(frame, COMBINED) or len(rows) < 2:
        return ("No combined run to compare: no trial was faster within the budget" if COMBINED not in frame.index
                else "Not measured: a run is missing") + " (at test size the budget is small)."
    mine, theirs = float(frame.at[COMBINED, "gain"]), float(rows["cumulative"].iloc[-1])
    fast, slow = float(frame.at[COMBINED, "examples/s"]), float(frame.at[BASELINE, "examples/s"])
    tuned, naive = float(rows["images/s"].iloc[-1]), float(rows["images/s"].iloc[0])
    spans = [timing.span(q) for q in (frame.at[COMBINED, "gain q1-q3"], rows["cumulative q1-q3"].iloc[-1])]
    (lo_mine, hi_mine), (lo_theirs, hi_theirs) = spans
    if lo_mine <= hi_theirs and lo_theirs <= hi_mine:
        reading = (f"the quartile ranges overlap, so this run does not tell the two apart (the tuner's median is "
                   f"{mine / theirs:.0%} of the hand-tuned one)")
    else:
        reading = (f"the quartile ranges do not overlap: the {'hand-tuned job' if theirs > mine else 'tuner'} gained more "
                   f"on this run (the tuner's median is {mine / theirs:.0%} of the hand-tuned one)")
    return (f"The tuner's combined settings: {mine:.2f}x over the job as it is (quartiles {frame.at[COMBINED, 'gain q1-q3']}); "
            f"notebook 14's hand-tuned job: {theirs:.2f}x over its naive stage (quartiles {rows['cumulative q1-q3'].iloc[-1]}): "
            f"{reading}. In examples per second the two tuned jobs run at "
            f"{fast:,.0f} and {tuned:,.0f} ({fast / tuned:.0%}), and the two naive ones at {slow:,.0f} (model.fit) and "
            f"{naive:,.0f} (the capstone's own loop): a ratio also depends on its baseline.")
