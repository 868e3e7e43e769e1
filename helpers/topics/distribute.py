"""Plumbing for notebook 13 (distribute training): data, tables of where variables live, the
timing variants, running the notebook's worker programs as local clusters, reading a resumed
run's logs, figures, and the exercise checks.

The lesson code (the custom loop, ``make_strategy``, the worker programs ``MWMS_WORKER`` and
``PS_PROGRAM``) is in the notebook's ``#| export`` cells, generated into
``helpers.lessons.distribute_training``; this module imports it and never rewrites it.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from helpers import checks, deadline, lessons, reaper
from helpers.checks import whole_number
from helpers.comparison import Comparison
from helpers.exercises import Feedback, correct, not_yet

FEATURES = 8
STRATEGIES = ("no strategy", "MirroredStrategy", "CentralStorageStrategy")
#: The notebook's programs by mode (``keras-fit`` is ``MWMS_WORKER --keras-fit``), and each mode's cluster.
PROGRAMS = {"mwms": "MWMS_WORKER", "ps": "PS_PROGRAM"}
ROLES = {"mwms": {"worker": 2}, "keras-fit": {"worker": 2}, "ps": {"chief": 1, "ps": 1, "worker": 2}}
REPO = Path(__file__).resolve().parents[2]


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
            rows.append({"variable": name, "copy": i, "device": copy.device.split("/task:0")[-1] or copy.device,
                         "type": type(variable).__name__})
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
        dataset = strategy.experimental_distribute_dataset(tf.data.Dataset.from_tensor_slices((x, y)).batch(batch))
        variants[name] = lambda step=step, dataset=dataset: [float(step(b)) for b in dataset]
    return variants


# --- the notebook's programs as local clusters ------------------------------------------------

def write_program(mode: str, folder: str | Path) -> Path:
    """Write the notebook's program for ``mode`` (one of ``PROGRAMS``) into ``folder``."""
    if mode not in PROGRAMS:
        raise ValueError(f"mode must be one of {list(PROGRAMS)}, got {mode!r}")
    path = Path(folder) / f"{PROGRAMS[mode].lower()}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(getattr(lesson(), PROGRAMS[mode]))
    return path


def final_rows(results: Mapping[str, Any]) -> Any:
    """The last row each task emitted, one per reporting task, as a table indexed by task."""
    import pandas as pd

    rows = [result.rows[-1] for result in results.values() if result.rows]
    if not rows:
        raise RuntimeError("no task reported a result; read the logs in the cluster's log folder")
    return pd.DataFrame(rows).set_index("task").sort_index()


@checks.arguments(timeout=checks.timeout)
def run_cluster(roles: Mapping[str, int], command: Sequence[str], *, logdir: str | Path, timeout: float = 300.0,
                wait_for: Sequence[str] = ("worker",)) -> Any:
    """Run ``command`` as a local cluster (``helpers.cluster``) and return the last row each
    task emitted: the workers' for a mirrored job, the chief's for a parameter-server job."""
    from helpers import cluster

    results = cluster.run(roles, command, logdir=logdir, timeout=timeout, wait_for=wait_for,
                          env={"PYTHONPATH": str(REPO)})
    return final_rows(results)


def workers_agree(table: Any) -> bool:
    """True when two or more workers ended with the same weights (same digest)."""
    return len(table) >= 2 and table["weights_sha"].nunique() == 1


@checks.arguments(step=checks.whole(0), timeout=checks.timeout)
def wait_for_step(running: Any, task: str, step: int, timeout: float = 120.0) -> int:
    """Read ``task``'s log of a started ``cluster.Cluster`` until it reports ``step`` or later;
    return the step it reported. A task that exits first, or ``timeout``, raises."""
    def reached() -> int | None:
        steps = [row["step"] for row in running.results()[task].rows if row.get("event") == "step"]
        if steps and steps[-1] >= step:
            return steps[-1]
        if running.processes[task].poll() is not None:
            raise RuntimeError(f"{task} exited (code {running.processes[task].returncode}) before step {step}")
        return None
    return deadline.until(reached, timeout, f"{task} to report step {step}", interval=0.05)


def resume_table(first: Mapping[str, Any], second: Mapping[str, Any]) -> Any:
    """A killed run and its restart, from their tasks' rows: the step each run restored, the
    first and last step it trained (across its workers), and the checkpoint it restored."""
    import pandas as pd

    rows = {}
    for name, results in (("run 1", first), ("run 2", second)):
        events = [row for result in results.values() for row in result.rows]
        starts = [row for row in events if row.get("event") == "start"]
        steps = [row["step"] for row in events if row.get("event") == "step"]
        if not starts or not steps:
            raise ValueError(f"{name} reported no start or no step; read its logs")
        rows[name] = {"restored": starts[0]["restored"], "restored step": starts[0]["step"],
                      "first step": min(steps), "last step": max(steps),
                      "finished": any(row.get("event") == "done" for row in events)}
    return pd.DataFrame(rows).T


def resumed_at_checkpoint(table: Any) -> bool:
    """True when run 2 restored the newest checkpoint run 1 can have written (a multiple of
    the interval, at or below run 1's last step) and run 1 restored nothing."""
    restored = int(table.loc["run 2", "restored step"])
    return (table.loc["run 1", "restored"] == "nothing" and table.loc["run 2", "restored"] == f"ckpt-{restored}"
            and 0 < restored <= int(table.loc["run 1", "last step"]))


def descendants_running(before: set[int]) -> set[int]:
    """PIDs of this process's descendants still running that were not in ``before``."""
    return reaper.descendants(live_only=True) - before


def cluster_experiment(mode: str = "mwms", workers: int = 2, steps: int = 20, *, programs: Mapping[str, Any],
                       on_progress: Any = None) -> Any:
    """Run ``mode``'s program (``programs["mwms"]`` or ``programs["ps"]``, files) as a local
    cluster in a temporary folder: the experiment behind notebook 13's widget."""
    if mode not in ROLES:
        raise ValueError(f"mode must be one of {list(ROLES)}, got {mode!r}")
    whole_number("workers", workers)
    whole_number("steps", steps)
    if on_progress is not None:
        on_progress(0, 1)
    args = [sys.executable, str(programs["ps" if mode == "ps" else "mwms"]), "--steps", str(steps)]
    with tempfile.TemporaryDirectory() as work:
        if mode != "ps":
            args += ["--checkpoints", f"{work}/checkpoints"] + (["--keras-fit"] if mode == "keras-fit" else [])
        table = run_cluster({**ROLES[mode], "worker": workers}, args, logdir=f"{work}/logs",
                            wait_for=("chief",) if mode == "ps" else ("worker",))
    if on_progress is not None:
        on_progress(1, 1)
    return table


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
    """One line: agreement of MWMS workers, Keras' error, or where the PS chief's variables live."""
    if "error" in table.columns:
        errors = [e for e in table["error"] if e]
        return f"{len(errors)} of {len(table)} tasks failed: {errors[0][:100]}" if errors else "Keras fit ran"
    if "weights_sha" in table.columns:
        return f"{len(table)} workers, weights identical: {workers_agree(table)}, final loss {table['last_loss'].iloc[0]:.4f}"
    row = table.iloc[0]
    return (f"{row['steps']} steps scheduled by the chief, variables on {row['w_device']}, loss on all the data "
            f"{row['loss_at_start']:.3f} -> {row['loss_at_end']:.4f}")


def check_mirrored(strategy: Any) -> Feedback:
    """Exercise check: a two-device ``MirroredStrategy`` that all-reduces with ``HierarchicalCopyAllReduce``."""
    import tensorflow as tf

    if not isinstance(strategy, tf.distribute.MirroredStrategy):
        return not_yet(f"make a tf.distribute.MirroredStrategy, got {type(strategy).__name__}")
    if strategy.num_replicas_in_sync != 2:
        return not_yet(f"it has {strategy.num_replicas_in_sync} replicas; give it the two logical CPUs")
    if (ops := type(strategy.extended._cross_device_ops).__name__) != "HierarchicalCopyAllReduce":  # no public accessor
        return not_yet(f"its cross-device ops are {ops}, not HierarchicalCopyAllReduce")
    try:
        _, variables = lesson().train(strategy, *make_data(3 * 16), global_batch=16)
    except Exception as exc:  # the learner's strategy: report, don't crash the notebook
        return not_yet(f"training with it raised {type(exc).__name__}: {exc}")
    copies = [c.numpy() for c in strategy.experimental_local_results(variables["w"])]
    spread = float(max(abs(c - copies[0]).max() for c in copies))
    return correct(f"2 replicas, hierarchical copy; after 3 steps the replicas differ by {spread}")


def check_tf_config(text: Any) -> Feedback:
    """Exercise check: ``TF_CONFIG`` for worker 2 of three workers on host-a, host-b and
    host-c, port 2222 each."""
    try:
        config = json.loads(text)
    except (TypeError, ValueError) as exc:
        return not_yet(f"TF_CONFIG must be a JSON string: {exc}")
    want = ["host-a:2222", "host-b:2222", "host-c:2222"]
    if not isinstance(config, dict) or config.get("cluster") != {"worker": want}:
        return not_yet(f"its cluster should be {{'worker': {want}}}, got {config.get('cluster') if isinstance(config, dict) else config!r}")
    if config.get("task") != {"type": "worker", "index": 2}:
        return not_yet(f"its task should be worker 2 (index 2, counted from 0), got {config.get('task')}")
    return correct("the third host's TF_CONFIG; the other two differ only in their index")


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
                table = run_cluster({"worker": workers}, [sys.executable, str(program), "--steps", str(steps),
                                                          "--checkpoints", f"{work}/ckpt-{workers}-{round_}"],
                                    logdir=f"{work}/logs-{workers}-{round_}")
                seconds[workers].append(time.perf_counter() - started)
                if workers == 2:
                    agreed.append(workers_agree(table))
    result = timing.comparison_table({"1 worker": timing.Timing("1 worker", tuple(seconds[1])),
                                      "2 workers": timing.Timing("2 workers", tuple(seconds[2]))}, "1 worker")
    result.attrs["note"] = (f"{rounds} rotated rounds, process start to exit; the 2 workers ended with the same "
                            f"weights in {sum(agreed)} of {len(agreed)} runs")
    return result


BENCHMARKS = [
    Comparison(id="distribute.workers_agree",
               title="MultiWorkerMirroredStrategy job on 127.0.0.1, processes started to exited: 1 vs 2 workers",
               measure=_workers_agree_table, baseline="1 worker", variant="2 workers",
               quick={"steps": 5, "rounds": 3}, full={"steps": 20, "rounds": 3}),
]
