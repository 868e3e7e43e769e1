"""Notebook 13's worker programs run as local clusters (``helpers.cluster``): run a program on
127.0.0.1 and read the last row each task emitted, wait for a running task to reach a step, tabulate
a killed run and its restart, and run the experiment behind the notebook's cluster widget.

The notebook calls these through ``helpers.topics.distribute_training.distribute``, which imports
them back; the
programs themselves (``MWMS_WORKER``, ``PS_PROGRAM``) are in ``helpers.lessons.distribute_training``
and ``distribute.write_program`` writes them to files.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from helpers import checks, deadline, reaper
from helpers.checks import whole_number

#: Each mode's cluster (``keras-fit`` is ``MWMS_WORKER --keras-fit``).
ROLES = {
    "mwms": {"worker": 2},
    "keras-fit": {"worker": 2},
    "ps": {"chief": 1, "ps": 1, "worker": 2},
}
REPO = Path(__file__).resolve().parents[3]


def final_rows(results: Mapping[str, Any]) -> Any:
    """The last row each task emitted, one per reporting task, as a table indexed by task."""
    import pandas as pd

    rows = [result.rows[-1] for result in results.values() if result.rows]
    if not rows:
        raise RuntimeError("no task reported a result; read the logs in the cluster's log folder")
    return pd.DataFrame(rows).set_index("task").sort_index()


@checks.arguments(timeout=checks.timeout)
def run_cluster(
    roles: Mapping[str, int],
    command: Sequence[str],
    *,
    logdir: str | Path,
    timeout: float = 300.0,
    wait_for: Sequence[str] = ("worker",),
) -> Any:
    """Run ``command`` as a local cluster (``helpers.cluster``) and return the last row each
    task emitted: the workers' for a mirrored job, the chief's for a parameter-server job."""
    from helpers import cluster

    results = cluster.run(
        roles,
        command,
        logdir=logdir,
        timeout=timeout,
        wait_for=wait_for,
        env={"PYTHONPATH": str(REPO)},
    )
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
            raise RuntimeError(
                f"{task} exited (code {running.processes[task].returncode}) before step {step}"
            )
        return None

    return deadline.until(reached, timeout, f"{task} to report step {step}", interval=0.05)


def resume_table(first: Mapping[str, Any], second: Mapping[str, Any]) -> Any:
    """A killed run and its restart, from their tasks' rows: the step each run restored, the
    first and last step it trained (across its workers), and the checkpoint it restored (as the
    first task by name, worker:0, reported them)."""
    import pandas as pd

    rows = {}
    for name, results in (("run 1", first), ("run 2", second)):
        events = [
            row for _, result in sorted(results.items()) for row in result.rows
        ]  # worker:0 first
        starts = [row for row in events if row.get("event") == "start"]
        steps = [row["step"] for row in events if row.get("event") == "step"]
        if not starts or not steps:
            raise ValueError(f"{name} reported no start or no step; read its logs")
        rows[name] = {
            "restored": starts[0]["restored"],
            "restored step": starts[0]["step"],
            "first step": min(steps),
            "last step": max(steps),
            "finished": any(row.get("event") == "done" for row in events),
        }
    return pd.DataFrame(rows).T


def resumed_at_checkpoint(table: Any, kept: Sequence[str]) -> bool:
    """True when run 1 restored nothing and run 2 restored the newest of ``kept``: the checkpoints
    run 1 left (``ckpt-N`` or ``ckpt-N.index`` names, listed before run 2 started)."""
    import re

    steps = [int(m[1]) for k in kept if (m := re.fullmatch(r"ckpt-(\d+)(\.index)?", Path(k).name))]
    restored = int(table.loc["run 2", "restored step"])
    return (
        table.loc["run 1", "restored"] == "nothing"
        and table.loc["run 2", "restored"] == f"ckpt-{restored}"
        and bool(steps)
        and restored == max(steps)  # by step: "ckpt-100" sorts before "ckpt-25" by name
    )


def descendants_running(before: set[int]) -> set[int]:
    """PIDs of this process's descendants still running that were not in ``before``."""
    return reaper.descendants(live_only=True) - before


def cluster_experiment(
    mode: str = "mwms",
    workers: int = 2,
    steps: int = 20,
    *,
    programs: Mapping[str, Any],
    on_progress: Any = None,
) -> Any:
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
            args += ["--checkpoints", f"{work}/checkpoints"] + (
                ["--keras-fit"] if mode == "keras-fit" else []
            )
        table = run_cluster(
            {**ROLES[mode], "worker": workers},
            args,
            logdir=f"{work}/logs",
            wait_for=("chief",) if mode == "ps" else ("worker",),
        )
    if on_progress is not None:
        on_progress(1, 1)
    return table
