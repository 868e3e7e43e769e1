"""Notebook 12's fresh-process runs: its ``PRECISION_CHILD`` program (from the exported lesson
code, ``helpers.lessons.train_in_mixed_precision``) trained under each policy with oneDNN held to a
narrower instruction set (``ONEDNN_MAX_CPU_ISA``), every pair in its own process; the images/s
table, what this CPU leads the notebook to expect of mixed_bfloat16 under each limit, and the
one-line reading of each. The children's kernel logs are read by ``helpers.onednn``.

``helpers.topics.train_in_mixed_precision.precision`` re-exports the four functions for the
notebook, and takes
``POLICIES`` and ``lesson`` from here.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from helpers import checks, env, lessons
from helpers.checks import whole_number
from helpers.timing import ProgressFn

POLICIES = ("float32", "mixed_bfloat16", "mixed_float16")
#: ONEDNN_MAX_CPU_ISA values a child may run under ("" = all the CPU has).
ISAS = ("", "AVX512_CORE_AMX", "AVX512_CORE_BF16", "AVX512_CORE", "AVX2")


def lesson() -> Any:
    """Notebook 12's exported lesson code (imported on use: it imports TensorFlow)."""
    return lessons.of("12_train_in_mixed_precision")


@checks.arguments(
    verbose=checks.flag,
    timeout=checks.timeout,
    batch=checks.whole(1, 65536),
    size=checks.whole(8, 1024),
    steps=checks.whole(1, 10_000),
    repeats=checks.repeats,
)
def run_child(
    policy: str,
    isa: str = "",
    verbose: bool = False,
    batch: int = 64,
    size: int = 56,
    steps: int = 3,
    repeats: int = 3,
    timeout: float = 600.0,
) -> tuple[dict[str, Any], str]:
    """Run the notebook's ``PRECISION_CHILD`` in a fresh process under ``ONEDNN_MAX_CPU_ISA=isa``
    (and ``ONEDNN_VERBOSE=1`` with ``verbose``): its result row and its whole stdout."""
    from helpers import procs

    checks.one_of(*POLICIES)("policy", policy)
    checks.one_of(*ISAS)("isa", isa)
    env = {
        "TF_CPP_MIN_LOG_LEVEL": "2",
        **({"ONEDNN_MAX_CPU_ISA": isa} if isa else {}),
        **({"ONEDNN_VERBOSE": "1"} if verbose else {}),
    }
    with procs.programs({"precision_child.py": lesson().PRECISION_CHILD}) as files:
        args = [
            sys.executable,
            str(files["precision_child.py"]),
            "--policy",
            policy,
            "--batch",
            str(batch),
            "--size",
            str(size),
            "--steps",
            str(steps),
            "--repeats",
            str(repeats),
        ]
        result = procs.run(args, env=env, timeout=timeout)
    rows = procs.parse_rows(result.stdout)
    if not rows:
        raise procs.ChildError(
            "precision_child.py reported no result", procs.tail(result.stderr + result.stdout)
        )
    return rows[-1], result.stdout


@checks.arguments(rounds=checks.rounds)
def isa_table(
    policies: Sequence[str] = ("float32", "mixed_bfloat16"),
    isas: Sequence[str] = ("", "AVX512_CORE"),
    rounds: int = 2,
    on_progress: ProgressFn | None = None,
    **child: Any,
) -> Any:
    """Training images/s of each policy under each ``ONEDNN_MAX_CPU_ISA``, every pair in its own
    fresh process, ``rounds`` times in rotation (a run is one process at its median epoch);
    speed-up against float32 under the same limit."""
    import pandas as pd

    from helpers import timing

    whole_number("rounds", rounds)
    pairs = [(isa, policy) for isa in isas for policy in policies]
    seconds: dict[tuple[str, str], list[list[float]]] = {pair: [] for pair in pairs}
    images = 0
    for r in range(rounds):
        for i, (isa, policy) in enumerate(timing.rotated(pairs, r)):
            row, _ = run_child(policy, isa, **child)
            seconds[(isa, policy)].append(row["seconds"])
            images = row["images"]
            if on_progress is not None:
                on_progress(r * len(pairs) + i + 1, rounds * len(pairs))
    timings = {pair: timing.per_run(" ".join(pair), s, images) for pair, s in seconds.items()}
    rows = []
    for (isa, policy), t in timings.items():
        base = timings.get((isa, "float32"))
        rows.append(
            {
                "ONEDNN_MAX_CPU_ISA": isa or "(all the CPU has)",
                "policy": policy,
                "images/s": round(images / t.median),
                "q1-q3 images/s": f"{images / t.q3:.0f}-{images / t.q1:.0f}",
                "speed-up vs float32": f"{base.median / t.median:.2f}x" if base else "-",
            }
        )
    table = pd.DataFrame(rows).set_index(["ONEDNN_MAX_CPU_ISA", "policy"])
    table.attrs["timings"] = timings
    return table


def bf16_expected(isa: str | None = None) -> dict[str, str]:
    """What the notebook leads the reader to expect of mixed_bfloat16 against float32 here, for
    ``verdicts.verdict``: "faster" where the kernels compute bfloat16 in hardware, "slower" where
    they emulate it, none where that is not known (an ARM CPU with BF16)."""
    fast, why = env.bf16_kernels(isa=isa)
    return {"expect": None if fast is None else "faster" if fast else "slower", "why": why}


def isa_summary(table: Any) -> str:
    """One line per instruction limit of an ``isa_table``: mixed_bfloat16 against float32, with
    the spread and whether this CPU's expectation under that limit held."""
    from helpers import timing, verdicts

    lines = []
    for (isa, policy), t in table.attrs["timings"].items():
        base = table.attrs["timings"].get((isa, "float32"))
        if policy == "float32" or base is None:
            continue
        pair = timing.comparison_table({"float32": base, policy: t}, "float32")
        expected = bf16_expected(isa) if policy == "mixed_bfloat16" else {}
        lines.append(
            f"ONEDNN_MAX_CPU_ISA={isa or '(all the CPU has)'}: "
            f"{verdicts.verdict(pair, policy, **expected)}"
        )
    return "\n".join(lines)
