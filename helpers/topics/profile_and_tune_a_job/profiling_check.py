"""Notebook 14's exercise check: which op type took the most time in a trace."""

from __future__ import annotations

from typing import Any

from helpers.exercises import Feedback, correct, not_yet


def check_slowest_op(table: Any, answer: Any) -> Feedback:
    """Exercise check: is ``answer`` the op type with the most total time in the trace ``table``
    (``profiling.events(...)``)? Never raises on a wrong argument; hints at the usual slips."""
    from helpers.topics.profile_and_tune_a_job.profiling import op_table

    try:
        ops = op_table(table, top=10_000)  # every op type, the most total time first
    except Exception as exc:  # a step table, an op table, a path: not the event table
        if "holds no op events" in str(exc):
            return not_yet("this trace holds no op events: record a few training steps first")
        return not_yet(
            "pass the trace's event table first (profiling.events(profiling.load(...)), as "
            f"`tuned` is), then your answer; reading it raised {type(exc).__name__}: {exc}"
        )
    if (
        not isinstance(answer, str)
        and getattr(answer, "ndim", 1)
        and hasattr(answer, "__len__")
        and len(answer) == 1
    ):
        return not_yet(
            f"pass the op type itself, a string, not a {type(answer).__name__} holding it: "
            "index it, as in op_table(...).index[0]"
        )
    answer = answer.strip() if isinstance(answer, str) else answer
    also = ""  # a plain name oneDNN renamed (MatMul for _MklMatMul) is judged as the trace's name
    if isinstance(answer, str) and answer not in ops.index:
        bare = answer.removeprefix("_MklNative").removeprefix("_Mkl")
        names = [f"{prefix}{bare}" for prefix in ("_MklNative", "_Mkl", "")]  # renames, not fusions
        renamed = [name for name in names if name != answer and name in ops.index]
        if renamed:
            also = (
                f" (with oneDNN {'on' if renamed[0].startswith('_Mkl') else 'off'}, TensorFlow "
                f"runs {answer} as {renamed[0]}: that is the name in this trace)"
            )
            answer = renamed[0]
    if not isinstance(answer, str) or answer not in ops.index:
        return not_yet(f"{answer!r} is not an op type in this trace; op_table(...) lists them")
    if answer != ops.index[0]:
        by = [
            what
            for what, col in (("most calls", "count"), ("largest mean", "mean ms"))
            if ops[col].idxmax() == answer
        ]
        slip = f" ({answer} has the {by[0]}: rank by total ms)" if by else ""
        return not_yet(
            f"{answer} took {ops.loc[answer, 'total ms']:.1f} ms, {ops.loc[answer, 'share']:.0%} "
            f"of all op time; another op type took more{slip}{also}"
        )
    return correct(
        f"{answer}: {ops['total ms'].iloc[0]:.1f} ms, "
        f"{ops['share'].iloc[0]:.0%} of all op time in the trace{also}"
    )
