"""CPU tuning (notebook 10, and notebook 08's data-format check): run the notebook's workloads
in fresh processes with chosen threads, oneDNN, OpenMP and allocator settings.

Thread pools, oneDNN and ``LD_PRELOAD`` are fixed when TensorFlow starts, so every setting runs
in its own child (``helpers.procs``): notebook 10's ``CPU_CHILD`` program, shown in full there,
times the named workloads and emits one row each, or the error a workload raised. The
``Setting`` each child starts with and the named sweeps' settings are in
``helpers.topics.tune_the_cpu.cputune_settings`` (re-exported here); figures and the wheel's
instruction sets
are in ``helpers.topics.tune_the_cpu.cpu_report``.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from helpers import checks, env, lessons, procs, timing
from helpers.checks import whole_number
from helpers.comparison import Comparison
from helpers.timing import ProgressFn
from helpers.timing_stats import Timing

# Re-exported: notebook 10 calls cputune.Setting, SWEEPS, sweep_settings and thread_settings, and
# fused.data_format_table (notebook 08) builds cputune.Setting.
from helpers.topics.tune_the_cpu.cputune_settings import SWEEPS as SWEEPS
from helpers.topics.tune_the_cpu.cputune_settings import Setting, sweep_settings
from helpers.topics.tune_the_cpu.cputune_settings import thread_settings as thread_settings


def lesson() -> Any:
    """Notebook 10's exported lesson code: the workloads and the child program ``CPU_CHILD``."""
    return lessons.of("10_tune_the_cpu")


def _check_workloads(workloads: Sequence[str]) -> list[str]:
    if isinstance(workloads, str):
        workloads = [workloads]
    known = list(lesson().WORKLOADS)
    unknown = [w for w in workloads if w not in known]
    if unknown or not workloads:
        raise ValueError(f"workloads must be among {known}, got {list(workloads)!r}")
    return list(workloads)


@checks.arguments(repeats=checks.repeats, small=checks.flag, timeout=checks.timeout)
def run_setting(
    setting: Setting,
    workloads: Sequence[str],
    repeats: int = 5,
    small: bool = False,
    timeout: float = 300.0,
) -> list[dict[str, Any]]:
    """Time ``workloads`` in one fresh process started with ``setting``: one row per workload,
    with ``seconds`` (one per repeat) or the ``error`` it raised."""
    workloads = _check_workloads(workloads)
    whole_number("repeats", repeats)
    with procs.programs({"cpu_child.py": lesson().CPU_CHILD}) as files:
        args = [
            sys.executable,
            str(files["cpu_child.py"]),
            "--workloads",
            ",".join(workloads),
            "--intra",
            str(setting.intra),
            "--inter",
            str(setting.inter),
            "--repeats",
            str(repeats),
            *(["--small"] if small else []),
        ]
        return procs.run_rows(args, env=setting.env(), timeout=timeout)


@checks.arguments(
    repeats=checks.repeats, rounds=checks.rounds, small=checks.flag, timeout=checks.timeout
)
def sweep(
    settings: Mapping[str, Setting],
    workloads: Sequence[str],
    repeats: int = 5,
    rounds: int = 3,
    small: bool = False,
    timeout: float = 300.0,
    on_progress: ProgressFn | None = None,
) -> Any:
    """Every setting on every workload, each setting in its own process, ``rounds`` times in
    rotation (so slow drift hits all settings alike). A run is one process, read at its median
    repeat: repeats of one process share its threads' placement and memory layout and differ less
    than two processes do. A table: one row per setting and workload, with the median and
    quartiles of its runs in ms (``repeats``: how many runs), or the error."""
    import pandas as pd

    if not settings:
        raise ValueError("settings must name at least one Setting")
    whole_number("rounds", rounds)
    workloads = _check_workloads(workloads)
    labels = list(settings)
    samples: dict[tuple[str, str], list[float]] = {}
    info: dict[tuple[str, str], dict[str, Any]] = {}
    total, done = rounds * len(labels), 0
    for r in range(rounds):
        for label in timing.rotated(labels, r):
            for row in run_setting(settings[label], workloads, repeats, small, timeout):
                key = (label, row["workload"])
                if row.get("seconds"):  # one value per process: its median repeat
                    samples.setdefault(key, []).append(statistics.median(row["seconds"]))
                samples.setdefault(key, [])
                info[key] = row
            done += 1
            if on_progress is not None:
                on_progress(done, total)
    rows = []
    for (label, workload), row in info.items():
        seconds = samples[(label, workload)]
        t = Timing(label, tuple(seconds)) if seconds else None
        rows.append(
            {
                "setting": label,
                "workload": workload,
                "median_ms": t.median * 1e3 if t else float("nan"),
                "q1_ms": t.q1 * 1e3 if t else float("nan"),
                "q3_ms": t.q3 * 1e3 if t else float("nan"),
                "repeats": len(seconds),
                "onednn": row.get("onednn"),
                "allocator": row.get("allocator"),
                "openmp": row.get("openmp"),
                "error": row.get("error", ""),
            }
        )
    table = pd.DataFrame(rows)
    table.attrs["samples"] = samples
    return table


@checks.arguments(
    repeats=checks.repeats, rounds=checks.rounds, small=checks.flag, timeout=checks.timeout
)
def comparisons(
    settings: Mapping[str, Setting],
    workloads: Sequence[str],
    repeats: int = 5,
    rounds: int = 3,
    small: bool = False,
    timeout: float = 300.0,
    on_progress: ProgressFn | None = None,
) -> dict[str, Any]:
    """Several workloads under several settings, each setting's workloads in one process: per
    workload, ``timing.compare``'s table (first setting is the baseline), so ``widgets.show`` and
    ``timing.verdict`` work on it."""
    workloads = _check_workloads(workloads)
    table = sweep(settings, workloads, repeats, rounds, small, timeout, on_progress)
    failed = table[table["error"] != ""]
    if len(failed):
        raise RuntimeError(
            "; ".join(f"{r.setting}, {r.workload}: {r.error}" for r in failed.itertuples())
        )
    samples, baseline = table.attrs["samples"], next(iter(settings))
    return {
        w: timing.comparison_table(
            {label: Timing(label, tuple(samples[(label, w)])) for label in settings}, baseline
        )
        for w in dict.fromkeys(workloads)
    }


def comparison(
    settings: Mapping[str, Setting],
    workload: str,
    repeats: int = 5,
    rounds: int = 3,
    small: bool = False,
    timeout: float = 300.0,
    on_progress: ProgressFn | None = None,
) -> Any:
    """One workload under several settings: ``comparisons`` for one workload."""
    return comparisons(settings, [workload], repeats, rounds, small, timeout, on_progress)[workload]


@checks.arguments(repeats=checks.repeats, rounds=checks.rounds, small=checks.flag)
def run_sweep(
    kind: str = "threads",
    workload: str = "matmul",
    repeats: int = 5,
    rounds: int = 3,
    small: bool = False,
    on_progress: ProgressFn | None = None,
) -> Any:
    """A named sweep (``SWEEPS``) on one workload, or on all when ``workload`` is ``"all"``: the
    experiment behind notebook 10's widget."""
    workloads = list(lesson().WORKLOADS)[:3] if workload == "all" else [workload]
    return sweep(
        sweep_settings(kind),
        workloads,
        repeats=repeats,
        rounds=rounds,
        small=small,
        on_progress=on_progress,
    )


def _threads_variants(
    workload: str = "matmul", small: bool = False, repeats: int = 5, rounds: int = 3
) -> Any:
    cores = env.usable_cores()
    return comparison(
        {"1 thread": Setting(intra=1, inter=1), "all cores": Setting(intra=cores, inter=cores)},
        workload,
        repeats,
        rounds,
        small,
    )


def _onednn_variants(
    workload: str = "conv_step", small: bool = False, repeats: int = 5, rounds: int = 3
) -> Any:
    return comparison(
        {"oneDNN off": Setting(onednn=False), "oneDNN on": Setting(onednn=True)},
        workload,
        repeats,
        rounds,
        small,
    )


BENCHMARKS = [
    Comparison(
        id="tune_the_cpu.threads_1_vs_all",
        title="1024x1024 matmul, fresh processes: 1 thread vs every core",
        measure=_threads_variants,
        baseline="1 thread",
        variant="all cores",
        quick={"small": True, "repeats": 5, "rounds": 3},  # one value a process: 3 runs
        full={"repeats": 10, "rounds": 3},
        bound=lambda: float(env.usable_cores()),
    ),
    Comparison(
        id="tune_the_cpu.onednn_off_vs_on",
        title="small conv-net training step, fresh processes: oneDNN off vs on",
        measure=_onednn_variants,
        baseline="oneDNN off",
        variant="oneDNN on",
        quick={"small": True, "repeats": 5, "rounds": 3},  # one value a process: 3 runs
        full={"repeats": 10, "rounds": 3},
    ),
]


# Notebook 10 calls cputune.check_fastest: the exercise check lives in its own module.
from helpers.topics.tune_the_cpu.fastest_check import (  # noqa: E402
    check_fastest as check_fastest,
)
