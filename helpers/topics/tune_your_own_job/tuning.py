"""Notebook 16 and ``python -m helpers.tune``, their plumbing: the trials (``tuning_trials``) run
in fresh processes (notebook 16's ``TRIAL_PROGRAM``), in rotated rounds under a time budget; how
often Keras traced a job's training step, and the tuned job head to head with notebook 14's naive
and hand-tuned stages.

A trial is the job with one change. Its settings are what ``TRIAL_PROGRAM`` reads; its ``code``
is the change to make in the job, shown in the report.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from helpers import checks, lessons, procs, timing
from helpers.timing import ProgressFn

# Notebook 16 also calls BASELINE, COMBINED, Trial and run_one as ``tuning.*``. _rounds and
# _trial_run look run_one up here, so a test that patches ``tuning.run_one`` reaches both.
from helpers.topics.tune_your_own_job.tuning_trials import (
    BASELINE,
    COMBINED,
    HAND,
    Outcome,
    Trial,
    run_one,
)
from helpers.topics.tune_your_own_job.tuning_trials import (
    clashes as clashes,
)  # re-exported: helpers.tune calls it
from helpers.topics.tune_your_own_job.tuning_trials import (
    combine as combine,
)  # re-exported: helpers.tune calls it
from helpers.topics.tune_your_own_job.tuning_trials import (
    plan as plan,
)  # re-exported: notebook 16 calls it
from helpers.topics.tune_your_own_job.tuning_trials import (
    plan_table as plan_table,
)  # re-exported: notebook 16


def lesson() -> Any:
    """Notebook 16's exported lesson code: the trial program and the diagnosis."""
    return lessons.of("16_tune_your_own_job")


@checks.arguments(
    rounds=checks.whole(1, 100),
    epochs=checks.whole(1, 100),
    steps=checks.whole(1, 100_000),
    budget=checks.number(1.0, 7 * 24 * 3600.0, hint="seconds"),
    timeout=checks.timeout,
)
def run_trials(
    job: str | Path,
    trials: Sequence[Trial],
    steps: int,
    epochs: int = 3,
    rounds: int = 3,
    budget: float = 600.0,
    timeout: float = 900.0,
    on_progress: ProgressFn | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, Outcome]:
    """Each trial not skipped, ``rounds`` times in rotation, each run a fresh process read at its
    median epoch (``Outcome.seconds`` holds one value per run); stop starting runs when the next
    would likely end after ``budget`` seconds (the job's own first run is always made). The first
    round runs the job as it is first and last, so that a machine that speeds up or slows down
    during the round widens its spread instead of biasing every gain. A trial that breaks the job
    is kept with its error and not rerun."""
    runnable = [t for t in trials if not t.skipped]
    outcomes = {t.name: Outcome(t) for t in trials}
    with procs.programs(
        {"tune_trial.py": lesson().TRIAL_PROGRAM}, prefix="workbook-tune-"
    ) as files:
        return _rounds(
            files["tune_trial.py"],
            job,
            runnable,
            outcomes,
            steps,
            epochs,
            rounds,
            budget,
            timeout,
            on_progress,
            clock,
        )


def _rounds(
    program: Path,
    job: str | Path,
    runnable: list[Trial],
    outcomes: dict[str, Outcome],
    steps: int,
    epochs: int,
    rounds: int,
    budget: float,
    timeout: float,
    on_progress: ProgressFn | None,
    clock: Callable[[], float],
) -> dict[str, Outcome]:
    started, durations = clock(), []
    total = rounds * len(runnable)
    for r in range(rounds):
        order = timing.rotated(runnable, r)
        if (
            r == 0 and len(order) > 1
        ):  # the job as it is also ends the first round: drift shows as its spread
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
            outcome.seconds.append(statistics.median(row["seconds"]))  # one value per process
            outcome.examples = row["examples"]
            outcome.losses.append(float(row["loss"]))
    if on_progress is not None:
        on_progress(total, total)
    return outcomes


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
        todo += [
            c.cell_contents
            for c in (getattr(fn, "__closure__", None) or ())
            if callable(c.cell_contents)
        ]
    return None


@checks.arguments(
    steps=checks.whole(1, 100_000),
    n_images=checks.whole(128, 1_000_000),
    epochs=checks.whole(1, 100),
    rounds=checks.whole(1, 100),
    timeout=checks.timeout,
)
def head_to_head(
    job: str | Path,
    tuned: Trial,
    workdir: str | Path,
    steps: int,
    n_images: int = 2048,
    epochs: int = 3,
    rounds: int = 3,
    timeout: float = 900.0,
    on_progress: ProgressFn | None = None,
) -> Any:
    """The job as it is and with ``tuned`` (the tuner's combined settings; a trial without change
    when nothing paid), beside notebook 14's naive and hand-tuned stages on ``n_images`` images per
    epoch: four fresh processes a round (three when nothing paid: the job as it is then stands for
    the tuned job), rounds rotated, so that the machine's drift falls on all alike. Each run is
    read at its median epoch; examples per second at the median run, the runs' quartiles, and the
    speed over notebook 14's naive job: one start for both tuned jobs."""
    import pandas as pd

    from helpers.topics.profile_and_tune_a_job import capstone
    from helpers.topics.tune_input_pipeline import pipelines

    if not Path(job).is_file():
        raise FileNotFoundError(f"job: no job file at {job}")
    if not isinstance(tuned, Trial):
        raise TypeError(
            f"tuned must be a tuning.Trial (the tune report's 'tuned'), got {type(tuned).__name__}"
        )
    if n_images % capstone.LARGEST_BATCH:
        raise ValueError(
            f"n_images must be a multiple of {capstone.LARGEST_BATCH} (the largest batch), "
            f"got {n_images}"
        )
    skip, last = capstone.skipped(), len(capstone.names()) - 1
    changed = bool(
        tuned.settings or tuned.env
    )  # False: the tuner kept the job as it is, whose runs then stand for it
    shard_dir = (Path(workdir) / f"capstone-{n_images}").resolve()
    pipelines.make_jpeg_shards(shard_dir, n_images)
    runs: dict[str, tuple[list[list[float]], list[int]]] = {
        name: ([], []) for name in (BASELINE, COMBINED, *HAND)
    }
    sources = {
        "tune_trial.py": lesson().TRIAL_PROGRAM,
        "capstone_child.py": capstone.lesson().CAPSTONE_CHILD,
    }
    with procs.programs(sources, prefix="workbook-tune-") as files:
        trial_program, stage_program = files["tune_trial.py"], files["capstone_child.py"]
        start = {
            BASELINE: lambda: _trial_run(
                trial_program, job, Trial(BASELINE), steps, epochs, timeout
            ),
            **(
                {COMBINED: lambda: _trial_run(trial_program, job, tuned, steps, epochs, timeout)}
                if changed
                else {}
            ),
            HAND[0]: lambda: (
                capstone.run_stage(stage_program, 0, shard_dir, n_images, epochs, skip, timeout),
                n_images,
            ),
            HAND[1]: lambda: (
                capstone.run_stage(stage_program, last, shard_dir, n_images, epochs, skip, timeout),
                n_images,
            ),
        }
        for r in range(rounds):
            for n, name in enumerate(timing.rotated(list(start), r)):
                if on_progress is not None:
                    on_progress(r * len(start) + n, rounds * len(start))
                seconds, items = start[name]()
                runs[name][0].append(seconds)
                runs[name][1].append(items)
    if on_progress is not None:
        on_progress(rounds * len(start), rounds * len(start))
    timings = {  # one value per run (a fresh process): its median epoch
        name: timing.per_run(name, seconds, items=items[0])
        for name, (seconds, items) in runs.items()
        if items
    }
    timings = {
        BASELINE: timings[BASELINE],
        COMBINED: replace(timings.get(COMBINED, timings[BASELINE]), label=COMBINED),
        **{name: timings[name] for name in HAND},
    }
    naive = timings[HAND[0]]
    rows = [
        {
            "run": name,
            "examples/s": round(t.items / t.median),
            "q1-q3 examples/s": f"{t.items / t.q3:.0f}-{t.items / t.q1:.0f}",
            "over notebook 14's naive": round(
                (t.items / t.median) / (naive.items / naive.median), 2
            ),
        }
        for name, t in timings.items()
    ]
    table = pd.DataFrame(rows).set_index("run")
    table.attrs["timings"] = timings
    table.attrs["changed"] = changed
    return table


def _trial_run(
    program: Path, job: str | Path, trial: Trial, steps: int, epochs: int, timeout: float
) -> tuple[list[float], int]:
    row = run_one(program, Path(job), trial, steps, epochs, timeout)
    if "error" in row:
        raise procs.ChildError(f"the trial {trial.name!r} broke the job: {row['error']}")
    return list(row["seconds"]), int(row["examples"])
