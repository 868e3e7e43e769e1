"""Plumbing for notebook 13's tf.data service section: start a dispatcher and workers as local
processes (``helpers.cluster``), run the notebook's trainer program against them in fresh
processes, rotate the rounds, and tabulate examples per second.

The lesson code (``preprocess``, ``input_pipeline``, ``from_service``, the programs
``DATA_SERVICE_SERVER`` and ``DATA_SERVICE_TRAINER``) is in the notebook's ``#| export`` cells,
generated into ``helpers.lessons.distribute_training``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from helpers import checks, procs
from helpers.checks import whole_number
from helpers.comparison import Comparison
from helpers.timing import ProgressFn

MAX_WORKERS = 8


def cpu_split() -> tuple[str, str, str]:
    """``(trainer CPUs, service CPUs, note)``: core 0 for the trainer and core 1 for the service
    where this machine has two or more cores and Linux CPU masks; otherwise no pinning."""
    if not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2:
        return (
            "",
            "",
            "not pinned: pinning needs Linux and two or more cores, "
            "so the service shares the trainer's cores",
        )
    first, second = sorted(os.sched_getaffinity(0))[:2]
    return (
        str(first),
        str(second),
        f"trainer pinned to CPU {first}; dispatcher and workers to CPU {second}",
    )


def _label(workers: int) -> str:
    return "0 workers (local)" if workers == 0 else f"{workers} worker{'s' if workers > 1 else ''}"


@checks.arguments(examples=checks.whole(1, 10**8), repeats=checks.repeats, timeout=checks.timeout)
def run_trainer(
    trainer_file: str | Path,
    service: str = "",
    *,
    examples: int = 2048,
    repeats: int = 3,
    cpus: str = "",
    timeout: float = 600.0,
) -> dict[str, Any]:
    """Run the notebook's trainer program once in a fresh process; its result row."""
    args = [
        sys.executable,
        str(trainer_file),
        "--service",
        service,
        "--examples",
        str(examples),
        "--repeats",
        str(repeats),
        "--cpus",
        cpus,
    ]
    return procs.run_rows(args, env={"TF_CPP_MIN_LOG_LEVEL": "2"}, timeout=timeout)[-1]


@checks.arguments(examples=checks.whole(1, 10**8), rounds=checks.rounds, repeats=checks.repeats)
def worker_sweep(
    server_file: str | Path,
    trainer_file: str | Path,
    *,
    workers: Sequence[int] = (0, 1, 2),
    examples: int = 2048,
    rounds: int = 3,
    repeats: int = 3,
    logdir: str | Path,
    on_progress: ProgressFn | None = None,
) -> Any:
    """Seconds per epoch of the trainer reading locally (0 workers) or from a local tf.data
    service with each number of ``workers``; rounds rotate the order, every service is started
    fresh for its run and stopped after it. A run is one trainer process, read at its median
    epoch (its epochs share one process and differ less than two runs do). A
    ``timing.compare``-style table, 0 workers first."""
    from helpers import cluster, timing

    workers = list(workers)
    if not workers or any(
        not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= MAX_WORKERS for n in workers
    ):
        raise ValueError(f"workers must be whole numbers from 0 to {MAX_WORKERS}, got {workers!r}")
    for name, value in (("examples", examples), ("rounds", rounds), ("repeats", repeats)):
        whole_number(name, value)
    if 0 not in workers:
        workers = [0, *workers]
    trainer_cpus, service_cpus, note = cpu_split()
    seconds: dict[int, list[list[float]]] = {n: [] for n in workers}  # each run's epochs
    counts: dict[int, int] = {}
    total, done = rounds * len(workers), 0
    for round_index in range(rounds):
        order = workers[round_index % len(workers) :] + workers[: round_index % len(workers)]
        for n in order:
            if on_progress is not None:
                on_progress(done, total)
            if n == 0:
                row = run_trainer(
                    trainer_file, examples=examples, repeats=repeats, cpus=trainer_cpus
                )
            else:
                with cluster.Cluster(
                    {"dispatcher": 1, "worker": n},
                    [sys.executable, str(server_file), "--cpus", service_cpus],
                    logdir=Path(logdir) / f"round{round_index}-{n}",
                    timeout=600,
                    wait_for=(),
                ) as service:
                    service.serve(ready="serving")
                    address = "grpc://" + service.spec["dispatcher"][0]
                    row = run_trainer(
                        trainer_file, address, examples=examples, repeats=repeats, cpus=trainer_cpus
                    )
            seconds[n].append(row["seconds"])
            counts[n] = row["examples"]
            done += 1
    if on_progress is not None:
        on_progress(total, total)
    timings = {_label(n): timing.per_run(_label(n), seconds[n], items=counts[n]) for n in workers}
    table = timing.comparison_table(timings, _label(0))
    table.attrs["note"] = f"{examples} examples per epoch; {note}"
    return table


def sweep_experiment(
    server_file: str | Path,
    trainer_file: str | Path,
    logdir: str | Path,
    workers: int = 1,
    examples: int = 2048,
    rounds: int = 2,
    on_progress: ProgressFn | None = None,
) -> Any:
    """The widget's run: 0 workers against ``workers``, ``rounds`` runs of three epochs each
    (one round is one run a row: too few for a verdict)."""
    return worker_sweep(
        server_file,
        trainer_file,
        workers=(0, workers),
        examples=examples,
        rounds=rounds,
        logdir=logdir,
        on_progress=on_progress,
    )


def sweep_figure(table: Any, title: str = "") -> Any:
    """The widget's figure: the workbook's comparison chart (``widgets.figure``), in examples
    per second."""
    from helpers import widgets

    return widgets.figure(table, title or "tf.data service: examples per second", unit="s")


def sweep_summary(table: Any) -> str:
    """Each service row against reading locally, as the workbook's verdict line (speed-up with its
    spread, "no clear difference" inside the noise), then the table's note."""
    from helpers import verdicts

    rows = [verdicts.verdict(table, label) for label in table.index[1:]]
    return " ".join(rows) + f" ({table.attrs.get('note', '')})"


def _bench_sweep(examples: int = 2048, rounds: int = 3) -> Any:
    """For the bench: the notebook's trainer with 0 and 2 service workers, written from the
    lesson."""
    from helpers.lessons import distribute_training as lesson

    sources = {
        "data_service_server.py": lesson.DATA_SERVICE_SERVER,
        "data_service_trainer.py": lesson.DATA_SERVICE_TRAINER,
    }
    with procs.programs(sources) as files:
        return worker_sweep(
            files["data_service_server.py"],
            files["data_service_trainer.py"],
            workers=(0, 2),
            examples=examples,
            rounds=rounds,
            logdir=files["data_service_server.py"].parent / "logs",
        )


BENCHMARKS = [
    Comparison(
        id="distribute_training.workers_0_vs_2",
        title=(
            "tf.data service on 127.0.0.1: an input-bound trainer reading locally "
            "vs from 2 service workers"
        ),
        measure=_bench_sweep,
        baseline=_label(0),
        variant=_label(2),
        quick={"examples": 512, "rounds": 3},  # one value a process: a comparison needs 3
        full={"examples": 2048, "rounds": 3},
    ),
]
