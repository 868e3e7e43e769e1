"""Notebook 14's capstone stages, each on its own: their names, the lines of the stage program
that a stage's settings decide and a stage's change as a diff of them (``stage_diff``, which the
notebook prints), and one run of one stage in a fresh process of ``CAPSTONE_CHILD``. ``capstone``
runs the stages in rotated rounds and reads the results; it re-exports what the notebook calls.

The job itself (model, training step, input per stage, the stages and the program
``CAPSTONE_CHILD``) is the notebook's lesson code, imported from
``helpers.lessons.profile_and_tune_a_job``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from helpers import checks, lessons, procs

ROOT = Path(__file__).resolve().parents[3]
PIPELINE_KEYS = (
    "parallel",
    "vectorized",
    "interleave",
    "cache",
    "prefetch",
)  # make_pipeline's switches


def lesson() -> Any:
    """Notebook 14's exported lesson code (imported on use: it imports TensorFlow)."""
    return lessons.of("14_profile_and_tune_a_job")


def names() -> list[str]:
    """The stages' names, in order."""
    return [name for name, _ in lesson().STAGES]


def _call(name: str, args: Sequence[str], kwargs: dict[str, Any]) -> str:
    return f"{name}({', '.join([*args, *(f'{k}={v!r}' for k, v in kwargs.items())])})"


def stage_code(settings: dict[str, Any]) -> list[str]:
    """The lines of the stage program that ``settings`` decide, as the child runs them."""
    defaults = {
        "parallel": False,
        "vectorized": False,
        "interleave": False,
        "cache": "none",
        "prefetch": False,
    }
    if settings["feed"] == "python":
        feed = f"batches = python_feed(paths, {settings['batch']})"
    else:
        switches = {k: settings[k] for k in PIPELINE_KEYS if settings[k] != defaults[k]}
        pipeline = _call("make_pipeline", ["paths"], {**switches, "batch": settings["batch"]})
        feed = f"batches = iter({pipeline}.repeat())"
    model = _call("make_model", [], {k: settings[k] for k in ("fused_batch_norm", "policy")})
    k = settings["steps_per_call"]
    step = (
        "loss = train_step(*next(batches))"
        if k == 1
        else f"loss = train_steps(batches, tf.constant({k}))"
    )
    environment = " ".join(
        f"{name}={value}" for name, value in lesson().stage_environment(settings).items()
    )
    started = (
        f"# started with {environment}"
        if environment
        else "# started with the oneDNN setting of the environment it inherits"
    )
    return [started, feed, f"train_step = make_train_step({model})", step]


@checks.arguments(index=checks.whole(0), since=checks.optional(checks.whole(0)))
def stage_diff(index: int, skip: Sequence[int] = (), since: int | None = None) -> list[str]:
    """Stage ``index``'s code change against stage ``since`` (the one before it by default):
    ``-`` and ``+`` lines."""
    settings = lesson().stage_settings
    since = index - 1 if since is None else since
    if not all(isinstance(i, int) for i in (index, since)) or not 0 <= since < index < len(names()):
        raise ValueError(
            f"index must be between 1 and {len(names()) - 1} and after since, "
            f"got {index!r}, {since!r}"
        )
    before, after = stage_code(settings(since, skip)), stage_code(settings(index, skip))
    return [f"- {line}" for line in before if line not in after] + [
        f"+ {line}" for line in after if line not in before
    ]


@checks.arguments(
    index=checks.whole(0, 99),
    n_images=checks.whole(1, 1_000_000),
    epochs=checks.whole(1, 100),
    timeout=checks.timeout,
)
def run_stage(
    program: Path,
    index: int,
    shard_dir: Path,
    n_images: int,
    epochs: int,
    skip: Sequence[int],
    timeout: float,
) -> list[float]:
    """One run of stage ``index`` in a fresh process of ``program`` (``CAPSTONE_CHILD``, written to
    a file): the seconds of each timed epoch of ``n_images`` images."""
    args = [
        sys.executable,
        str(program),
        "--stage",
        str(index),
        "--shards",
        str(shard_dir),
        "--images",
        str(n_images),
        "--epochs",
        str(epochs),
        "--skip",
        *map(str, skip),
    ]
    environment = lesson().stage_environment(lesson().stage_settings(index, skip))
    (row,) = procs.run_rows(
        args, env={"TF_CPP_MIN_LOG_LEVEL": "2", **environment}, timeout=timeout, cwd=str(ROOT)
    )
    return list(row["seconds"])


def spread_line(epoch_seconds: dict[str, list[list[float]]]) -> str:
    """One line: how far the epochs of one process spread (each run's longest epoch over its
    shortest) against how far a stage's processes spread (the same epoch of each run, longest
    over shortest), the median of each; and, where each side's longest-over-shortest is taken
    over the same number of epochs (the widest of more values tends to be wider), which was
    wider at the printed precision. Both sides compare single epochs, so neither is smoothed by
    a median. Runs with an epoch that is not a positive number are left out."""
    import math
    import statistics

    stages = {
        stage: [e for e in runs if e and all(math.isfinite(t) and t > 0 for t in e)]
        for stage, runs in epoch_seconds.items()
    }
    within = [max(e) / min(e) for runs in stages.values() for e in runs if len(e) > 1]
    between = [
        max(same) / min(same)
        for runs in stages.values()
        if len(runs) > 1
        for same in zip(*runs, strict=False)  # epoch k of every run (those all runs have)
    ]
    if not within or not between:
        return "Too few epochs or runs per stage to set the two spreads side by side."
    inside, across = round(statistics.median(within), 2), round(statistics.median(between), 2)
    epochs = {len(e) for runs in stages.values() for e in runs if len(e) > 1}
    runs = {len(r) for r in stages.values() if len(r) > 1}
    n_stages = sum(len(r) > 1 for r in stages.values())
    line = (
        f"Spread within one process (longest epoch over shortest, median of {len(within)} runs): "
        f"{inside:.2f}x; between a stage's processes (the same epoch of each run, longest over "
        f"shortest, median of {len(between)} epochs in {n_stages} stages): {across:.2f}x"
    )
    if epochs != runs or len(epochs) != 1:
        return line + (
            f" (each side over a different number of epochs, {'/'.join(map(str, sorted(epochs)))}"
            f" in a run against {'/'.join(map(str, sorted(runs)))} runs a stage: not set against "
            "each other, since the widest of more values tends to be wider)."
        )
    wider = "more than" if across > inside else "no more than"
    return line + f": here the processes differed {wider} one process's epochs did."
