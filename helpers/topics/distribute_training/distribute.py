"""Plumbing for notebook 13 (distribute training): data, tables of where variables live, the
timing variants, writing the notebook's worker programs, figures, and the bench's
comparison. The exercise checks are in ``distribute_check``; running the programs as local
clusters and reading a resumed run's logs in ``distribute_cluster``; the names the notebook calls
are imported back here.

The lesson code (the custom loop, ``make_strategy``, the worker programs ``MWMS_WORKER`` and
``PS_PROGRAM``) is in the notebook's ``#| export`` cells, generated into
``helpers.lessons.distribute_training``; this module imports it and never rewrites it.
"""

from __future__ import annotations

import hashlib
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from helpers import checks, lessons
from helpers.checks import whole_number
from helpers.comparison import Comparison
from helpers.topics.distribute_training.distribute_check import check_mirrored as check_mirrored
from helpers.topics.distribute_training.distribute_check import check_tf_config as check_tf_config

# The names imported "as" themselves are re-exported: notebook 13 calls them as distribute.<name>.
from helpers.topics.distribute_training.distribute_cluster import (
    cluster_experiment as cluster_experiment,
)
from helpers.topics.distribute_training.distribute_cluster import (
    descendants_running as descendants_running,
)
from helpers.topics.distribute_training.distribute_cluster import final_rows as final_rows
from helpers.topics.distribute_training.distribute_cluster import resume_table as resume_table
from helpers.topics.distribute_training.distribute_cluster import (
    resumed_at_checkpoint as resumed_at_checkpoint,
)
from helpers.topics.distribute_training.distribute_cluster import run_cluster as run_cluster
from helpers.topics.distribute_training.distribute_cluster import wait_for_step as wait_for_step
from helpers.topics.distribute_training.distribute_cluster import workers_agree as workers_agree

FEATURES = 8
STRATEGIES = ("no strategy", "MirroredStrategy", "CentralStorageStrategy")
#: The notebook's programs by mode (``keras-fit`` is ``MWMS_WORKER --keras-fit``); each mode's
#: cluster is ``distribute_cluster.ROLES``.
PROGRAMS = {"mwms": "MWMS_WORKER", "ps": "PS_PROGRAM"}


def lesson() -> Any:
    """Notebook 13's exported lesson code (imported on use: it imports TensorFlow)."""
    return lessons.of("13_distribute_training")


@checks.arguments(n=checks.whole(1, 10**8), seed=checks.seed)
def make_data(n: int = 512, seed: int = 0) -> tuple[Any, Any]:
    """Features and targets of a noisy linear problem: ``y = x @ w_true + noise``."""
    import numpy as np

    whole_number("n", n)
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, FEATURES)).astype("float32")
    w_true = np.linspace(-1.0, 1.0, FEATURES, dtype="float32")[:, None]
    y = x @ w_true + 0.01 * rng.normal(size=(n, 1)).astype("float32")
    return x, y


def weights_digest(values: Sequence[Any]) -> str:
    """A short SHA-256 of the arrays' bytes: equal digests, bit-identical weights."""
    digest = hashlib.sha256()
    for value in values:
        digest.update(value.tobytes())
    return digest.hexdigest()[:16]


def variable_devices(strategy: Any, variables: Mapping[str, Any]) -> Any:
    """Where each variable lives: one row per variable and copy, with the variable's type."""
    import pandas as pd

    rows = []
    for name, variable in variables.items():
        for i, copy in enumerate(strategy.experimental_local_results(variable)):
            rows.append(
                {
                    "variable": name,
                    "copy": i,
                    "device": copy.device.split("/task:0")[-1] or copy.device,
                    "type": type(variable).__name__,
                }
            )
    return pd.DataFrame(rows).set_index(["variable", "copy"])


def strategy_variants(devices: Sequence[str], steps: int = 10, batch: int = 256) -> dict[str, Any]:
    """The notebook's training step under each strategy of ``STRATEGIES``, one pass over
    ``steps`` batches per call, for ``timing.compare``: on logical CPUs this shows what the
    machinery costs, not a speed-up."""
    import tensorflow as tf

    for name, value in (("steps", steps), ("batch", batch)):
        whole_number(name, value)
    code = lesson()
    x, y = make_data(steps * batch)
    variants = {}
    for name in STRATEGIES:
        strategy = code.make_strategy(name, list(devices))
        step = code.make_train_step(strategy, code.make_variables(strategy), batch)
        dataset = strategy.experimental_distribute_dataset(
            tf.data.Dataset.from_tensor_slices((x, y)).batch(batch)
        )
        variants[name] = lambda step=step, dataset=dataset: [float(step(b)) for b in dataset]
    return variants


# --- the notebook's programs ------------------------------------------------------------------


def write_program(mode: str, folder: str | Path) -> Path:
    """Write the notebook's program for ``mode`` (one of ``PROGRAMS``) into ``folder``."""
    if mode not in PROGRAMS:
        raise ValueError(f"mode must be one of {list(PROGRAMS)}, got {mode!r}")
    path = Path(folder) / f"{PROGRAMS[mode].lower()}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(getattr(lesson(), PROGRAMS[mode]))
    return path


def weights_figure(table: Any, title: str = "") -> Any:
    """Each reporting task's final weights beside the true ones: agreeing workers overlap."""
    import numpy as np
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.5, 3), layout="constrained")
    ax = fig.subplots()
    index = np.arange(FEATURES)
    ax.plot(index, np.linspace(-1.0, 1.0, FEATURES), "k--", label="true weights")
    if "w" in table.columns:
        for marker, (task, row) in zip("os^vD", table.iterrows(), strict=False):
            ax.plot(index, row["w"], marker, alpha=0.7, label=task)
    ax.set_xlabel("weight index")
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title)
    return fig


def cluster_summary(table: Any) -> str:
    """One line: agreement of MWMS workers, Keras' error, or where the PS chief's variables
    live."""
    if "error" in table.columns:
        errors = [e for e in table["error"] if e]
        return (
            f"{len(errors)} of {len(table)} tasks failed: {errors[0][:100]}"
            if errors
            else "Keras fit ran"
        )
    if "weights_sha" in table.columns and len(table) < 2:
        loss = table["last_loss"].iloc[0] if len(table) else None
        shown = f"{loss:.4f}" if isinstance(loss, int | float) else "none"
        return f"{len(table)} worker: no other to compare with, final loss {shown}"
    if "weights_sha" in table.columns:
        return (
            f"{len(table)} workers, weights identical: {workers_agree(table)}, "
            f"final loss {table['last_loss'].iloc[0]:.4f}"
        )
    row = table.iloc[0]
    return (
        f"{row['steps']} steps scheduled by the chief, variables on {row['w_device']}, "
        f"loss on all the data {row['loss_at_start']:.3f} -> {row['loss_at_end']:.4f}"
    )


def _workers_agree_table(steps: int = 20, rounds: int = 3) -> Any:
    """For the bench: a whole MWMS job (processes started to exited) with 1 and with 2 workers, in
    rotated rounds (1, 2 then 2, 1, ...), each run in fresh folders; notes whether the 2 workers of
    every run ended with the same weights."""
    from helpers import timing

    seconds: dict[int, list[float]] = {1: [], 2: []}
    agreed = []
    with tempfile.TemporaryDirectory() as work:
        program = write_program("mwms", work)
        for round_ in range(rounds):
            for workers in (1, 2) if round_ % 2 == 0 else (2, 1):
                started = time.perf_counter()
                table = run_cluster(
                    {"worker": workers},
                    [
                        sys.executable,
                        str(program),
                        "--steps",
                        str(steps),
                        "--checkpoints",
                        f"{work}/ckpt-{workers}-{round_}",
                    ],
                    logdir=f"{work}/logs-{workers}-{round_}",
                )
                seconds[workers].append(time.perf_counter() - started)
                if workers == 2:
                    agreed.append(workers_agree(table))
    result = timing.comparison_table(
        {
            "1 worker": timing.Timing("1 worker", tuple(seconds[1])),
            "2 workers": timing.Timing("2 workers", tuple(seconds[2])),
        },
        "1 worker",
    )
    result.attrs["note"] = (
        f"{rounds} rotated rounds, process start to exit; the 2 workers ended with the same "
        f"weights in {sum(agreed)} of {len(agreed)} runs"
    )
    return result


BENCHMARKS = [
    Comparison(
        id="distribute_training.workers_agree",
        title=(
            "MultiWorkerMirroredStrategy job on 127.0.0.1, processes started to exited: "
            "1 vs 2 workers"
        ),
        measure=_workers_agree_table,
        baseline="1 worker",
        variant="2 workers",
        quick={"steps": 5, "rounds": 3},
        full={"steps": 20, "rounds": 3},
    ),
]
