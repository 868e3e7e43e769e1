"""Notebook 16 and ``python -m helpers.tune``, their plumbing: which trials a job gets on this
machine, running each in a fresh process (notebook 16's ``TRIAL_PROGRAM``) in rotated rounds
under a time budget, and the combined best settings measured against the job as it is.

A trial is the job with one change. Its settings are what ``TRIAL_PROGRAM`` reads; its ``code``
is the change to make in the job, shown in the report.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
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


def clashes(trials: Sequence[Trial]) -> dict[str, str]:
    """Among ``trials``, best first, those that set something a better one sets too (two batch
    sizes, one switch twice): {name: the better one's name}. They cannot be applied together."""
    owner: dict[str, str] = {}
    dropped: dict[str, str] = {}
    for trial in trials:
        keys = {f"{k}.{sub}" for k, v in trial.settings.items() if isinstance(v, dict) for sub in v}
        keys |= {k for k, v in trial.settings.items() if not isinstance(v, dict)} | {f"env {k}" for k in trial.env}
        better = next((owner[k] for k in sorted(keys) if k in owner), None)
        if better is not None:
            dropped[trial.name] = better
            continue
        owner.update(dict.fromkeys(keys, trial.name))
    return dropped


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
    with procs.programs({"tune_trial.py": lesson().TRIAL_PROGRAM}, prefix="workbook-tune-") as files:
        return _rounds(files["tune_trial.py"], job, runnable, outcomes, steps, epochs, rounds, budget, timeout,
                       on_progress, clock)


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


HAND = ("notebook 14: naive", "notebook 14: hand-tuned")  # the capstone's first and last stages


@checks.arguments(steps=checks.whole(1, 100_000), n_images=checks.whole(128, 1_000_000), epochs=checks.whole(1, 100),
                  rounds=checks.whole(1, 100), timeout=checks.timeout)
def head_to_head(job: str | Path, tuned: Trial, workdir: str | Path, steps: int, n_images: int = 2048,
                 epochs: int = 3, rounds: int = 3, timeout: float = 900.0, on_progress: ProgressFn | None = None) -> Any:
    """The job as it is and with ``tuned`` (the tuner's combined settings; a trial without change
    when nothing paid), beside notebook 14's naive and hand-tuned stages on ``n_images`` images per
    epoch: four fresh processes a round (three when nothing paid: the job as it is then stands for
    the tuned job), rounds rotated, so that the machine's drift falls on all alike. Examples per second at the median epoch, quartiles, and the speed over notebook
    14's naive job: one start for both tuned jobs."""
    import pandas as pd

    from helpers.topics import capstone, pipelines

    if not Path(job).is_file():
        raise FileNotFoundError(f"job: no job file at {job}")
    if not isinstance(tuned, Trial):
        raise TypeError(f"tuned must be a tuning.Trial (the tune report's 'tuned'), got {type(tuned).__name__}")
    if n_images % capstone.LARGEST_BATCH:
        raise ValueError(f"n_images must be a multiple of {capstone.LARGEST_BATCH} (the largest batch), got {n_images}")
    skip, last = capstone.skipped(), len(capstone.names()) - 1
    changed = bool(tuned.settings or tuned.env)  # False: the tuner kept the job as it is, whose runs then stand for it
    shard_dir = (Path(workdir) / f"capstone-{n_images}").resolve()
    pipelines.make_jpeg_shards(shard_dir, n_images)
    runs: dict[str, tuple[list[float], list[int]]] = {name: ([], []) for name in (BASELINE, COMBINED, *HAND)}
    sources = {"tune_trial.py": lesson().TRIAL_PROGRAM, "capstone_child.py": capstone.lesson().CAPSTONE_CHILD}
    with procs.programs(sources, prefix="workbook-tune-") as files:
        trial_program, stage_program = files["tune_trial.py"], files["capstone_child.py"]
        start = {BASELINE: lambda: _trial_run(trial_program, job, Trial(BASELINE), steps, epochs, timeout),
                 **({COMBINED: lambda: _trial_run(trial_program, job, tuned, steps, epochs, timeout)} if changed else {}),
                 HAND[0]: lambda: (capstone.run_stage(stage_program, 0, shard_dir, n_images, epochs, skip, timeout), n_images),
                 HAND[1]: lambda: (capstone.run_stage(stage_program, last, shard_dir, n_images, epochs, skip, timeout), n_images)}
        for r in range(rounds):
            for n, name in enumerate(timing.rotated(list(start), r)):
                if on_progress is not None:
                    on_progress(r * len(start) + n, rounds * len(start))
                seconds, items = start[name]()
                runs[name][0].extend(seconds)
                runs[name][1].append(items)
    if on_progress is not None:
        on_progress(rounds * len(start), rounds * len(start))
    timings = {name: timing.Timing(name, tuple(seconds), items=items[0]) for name, (seconds, items) in runs.items() if items}
    timings = {BASELINE: timings[BASELINE], COMBINED: replace(timings.get(COMBINED, timings[BASELINE]), label=COMBINED),
               **{name: timings[name] for name in HAND}}
    naive = timings[HAND[0]]
    rows = [{"run": name, "examples/s": round(t.items / t.median), "q1-q3 examples/s": f"{t.items / t.q3:.0f}-{t.items / t.q1:.0f}",
             "over notebook 14's naive": round((t.items / t.median) / (naive.items / naive.median), 2)}
            for name, t in timings.items()]
    table = pd.DataFrame(rows).set_index("run")
    table.attrs["timings"] = timings
    table.attrs["changed"] = changed
    return table


def _trial_run(program: Path, job: str | Path, trial: Trial, steps: int, epochs: int, timeout: float) -> tuple[list[float], int]:
    row = run_one(program, Path(job), trial, steps, epochs, timeout)
    if "error" in row:
        raise procs.ChildError(f"the trial {trial.name!r} broke the job: {row['error']}")
    return list(row["seconds"]), int(row["examples"])
