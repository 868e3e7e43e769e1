"""Notebook 16 and ``python -m helpers.tune``, one trial at a time: what a trial is, which trials
a job gets on this machine (the plan and its table), how trials combine or clash, one run of one
trial in a fresh process (notebook 16's ``TRIAL_PROGRAM``), and what its outcome says against the
job's own (speed ratio, loss check). ``tuning`` runs the trials in rounds under a time budget;
``tune_report`` ranks their outcomes.

A trial is the job with one change. Its settings are what ``TRIAL_PROGRAM`` reads; its ``code``
is the change to make in the job, shown in the report.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from helpers import checks, env, procs, timing

ROOT = Path(__file__).resolve().parents[3]
BASELINE = "your job as it is"
COMBINED = "combined: every faster change"
HAND = ("notebook 14: naive", "notebook 14: hand-tuned")  # the capstone's first and last stages
LOSS_TOLERANCE = (
    0.25  # a trial's last-epoch loss within 25 % of the job's own: training still trains
)


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
    # One value per run (a fresh process): its median timed epoch. Epochs of one process differ
    # less than two processes do; pooled, they would narrow the spread a verdict reads.
    seconds: list[float] = field(default_factory=list)
    examples: int = 0
    losses: list[float] = field(default_factory=list)
    error: str = ""


def _choice_code(function: str, name: str, value: Any) -> str:
    call = "make_model(" if function == "model" else "make_dataset(batch_size, "
    return f"{call}{name}={value!r})"


@checks.arguments(onednn=checks.optional_flag)
def plan(
    job_settings: dict[str, Any], cpuinfo: str | None = None, onednn: bool | None = None
) -> list[Trial]:
    """The trials for a job with ``job_settings`` (``jobfile.settings_of``) on this machine: the
    job as it is first, then one change each."""
    onednn = env.onednn_enabled() if onednn is None else onednn
    bf16, why = env.bf16_kernels(cpuinfo, onednn)
    cores = (
        env.usable_cores()
    )  # the cores this process may run on (its affinity), not all the machine has
    steps = job_settings["steps"]
    per_call = max((k for k in (8, 4, 2) if steps % k == 0 and k < steps), default=0)
    trials = [
        Trial(BASELINE),
        Trial("prefetch", {"prefetch": True}, code="dataset = dataset.prefetch(tf.data.AUTOTUNE)"),
        Trial(
            "tf.data options",
            {"data_options": True},
            code=(
                "options = tf.data.Options(); options.deterministic = False; "
                "options.experimental_optimization.map_parallelization = True; "
                "dataset = dataset.with_options(options)"
            ),
        ),
        Trial("XLA", {"jit_compile": True}, code="model.compile(..., jit_compile=True)"),
        Trial(
            "mixed_bfloat16",
            {"policy": "mixed_bfloat16"},
            code='keras.mixed_precision.set_global_policy("mixed_bfloat16")  # before make_model()',
            skipped="" if bf16 else why,
        ),
        Trial(
            f"{per_call} steps per call",
            {"steps_per_execution": per_call},
            code=f"model.compile(..., steps_per_execution={per_call})",
            skipped="" if per_call else f"STEPS={steps} has no divisor 2, 4 or 8 below it",
        ),
    ]
    trials += [
        Trial(f"batch {b}", {"batch_size": b}, code=f"make_dataset({b})")
        for b in job_settings["batch_sizes"][1:]
    ]
    trials.append(
        Trial(
            f"threads {cores} intra, 1 inter",
            {"threads": [cores, 1]},
            code=f"tf.config.threading.set_intra_op_parallelism_threads({cores}); "
            "tf.config.threading.set_inter_op_parallelism_threads(1)  # before any op runs",
        )
    )
    flip = "0" if onednn else "1"
    trials.append(
        Trial(
            f"oneDNN {'off' if onednn else 'on'}",
            env={"TF_ENABLE_ONEDNN_OPTS": flip},
            code=f"export TF_ENABLE_ONEDNN_OPTS={flip}  # before Python starts",
        )
    )
    for kind, key in (("model", "model_choices"), ("dataset", "dataset_choices")):
        for name, values in job_settings[key].items():
            trials += [
                Trial(
                    f"your {name}={value!r}",
                    {kind: {name: value}},
                    code=_choice_code(kind, name, value),
                )
                for value in values[1:]
            ]
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
        keys |= {k for k, v in trial.settings.items() if not isinstance(v, dict)} | {
            f"env {k}" for k in trial.env
        }
        better = next((owner[k] for k in sorted(keys) if k in owner), None)
        if better is not None:
            dropped[trial.name] = better
            continue
        owner.update(dict.fromkeys(keys, trial.name))
    return dropped


def plan_table(trials: Sequence[Trial]) -> Any:
    """The plan as a table: each trial's change, and why it is skipped here, if it is."""
    import pandas as pd

    return pd.DataFrame(
        [
            {"trial": t.name, "change": t.code or "(none)", "skipped here because": t.skipped}
            for t in trials
        ]
    ).set_index("trial")


@checks.arguments(
    steps=checks.whole(1, 100_000), epochs=checks.whole(1, 100), timeout=checks.timeout
)
def run_one(
    program: Path, job: Path, trial: Trial, steps: int, epochs: int, timeout: float
) -> dict[str, Any]:
    """One trial in a fresh process: its row, or ``{"error": ...}`` when the job broke under it."""
    import json

    args = [
        sys.executable,
        str(Path(program).resolve()),
        str(Path(job).resolve()),
        "--settings",
        json.dumps(trial.settings),
        "--steps",
        str(steps),
        "--epochs",
        str(epochs),
    ]
    try:
        (row,) = procs.run_rows(
            args, env={"TF_CPP_MIN_LOG_LEVEL": "2", **trial.env}, timeout=timeout, cwd=str(ROOT)
        )
    except procs.ChildError as exc:
        return {"error": procs.tail(str(exc), 3)}
    return row


def rate_ratio(base: Outcome, other: Outcome) -> tuple[float, float, float]:
    """Examples per second of ``other`` over ``base``: median, and the quartile bounds."""
    b, o = (timing.Timing(x.trial.name, tuple(x.seconds), items=x.examples) for x in (base, other))
    rate = lambda t, s: t.items / s  # noqa: E731
    return (
        rate(o, o.median) / rate(b, b.median),
        rate(o, o.q3) / rate(b, b.q1),
        rate(o, o.q1) / rate(b, b.q3),
    )


def loss_problem(base: Outcome, other: Outcome) -> str:
    """Why ``other`` no longer trains like the job, or "" (last-epoch loss within the tolerance)."""
    if not base.losses or not other.losses:
        return ""
    mine, theirs = (
        sorted(base.losses)[len(base.losses) // 2],
        sorted(other.losses)[len(other.losses) // 2],
    )
    if not math.isfinite(theirs):
        return f"the loss became {theirs}"
    if abs(theirs - mine) > LOSS_TOLERANCE * max(abs(mine), 0.1):
        return (
            f"loss {theirs:.3g} after the same steps, against the job's {mine:.3g} "
            f"(more than {LOSS_TOLERANCE:.0%} apart)"
        )
    return ""


def measured(frame: Any, name: str) -> bool:
    """Whether ``name`` is a row of a report table with a measured gain (pandas holds an unmeasured
    one as NaN, not None: a combined run that the budget did not reach)."""
    if name not in frame.index:
        return False
    gain = frame.at[name, "gain"]
    return gain is not None and gain == gain
