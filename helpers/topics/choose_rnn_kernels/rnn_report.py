"""Notebook 09's unrolling experiment read back: the loop-vs-unrolled figure (first call, step
time, graph nodes against sequence length) and the one-paragraph reading of the longest sequence.
``rnn.unroll_table`` makes the table both take."""

from __future__ import annotations

from typing import Any


def unroll_figure(table: Any, title: str = "") -> Any:
    """Three panels against sequence length: first call, step time and graph nodes, loop vs
    unrolled."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 3.4), layout="constrained")
    axes = fig.subplots(1, 3)
    for ax, column, label in zip(
        axes,
        ("first call s", "step ms", "graph nodes"),
        ("first call (trace + run), s", "training step, ms (median)", "graph nodes"),
        strict=True,
    ):
        for mode, marker in (("loop", "o-"), ("unrolled", "s--")):
            part = table.xs(mode, level="mode")[column]
            ax.plot(part.index, part.values, marker, label=mode)
        ax.set_xlabel("sequence length (steps)")
        ax.set_title(label, fontsize=10)
        ax.grid(alpha=0.3)
    axes[0].legend()
    if title:
        fig.suptitle(title)
    return fig


def unroll_summary(table: Any) -> str:
    """The longest sequence: how unrolling changed the first call and the graph, and the training
    step read with its spread (``verdicts.verdict``: "no clear difference" inside the noise)."""
    from helpers import verdicts

    steps = table.index.get_level_values("steps").max()
    loop, unrolled = table.loc[(steps, "loop")], table.loc[(steps, "unrolled")]
    timings = table.attrs.get("timings", {})
    step = (
        verdicts.verdict_of(
            {"loop": timings[(steps, "loop")], "unrolled": timings[(steps, "unrolled")]},
            "unrolled",
            "loop",
        )
        if (steps, "loop") in timings and (steps, "unrolled") in timings
        else f"unrolled {loop['step ms'] / unrolled['step ms']:.2f}x as fast (no spread kept)."
    )

    def cost(n: Any) -> str:
        loop_n, unrolled_n = table.loc[(n, "loop")], table.loc[(n, "unrolled")]
        return (
            f"the first call {unrolled_n['first call s'] / loop_n['first call s']:.1f}x as long "
            f"and the graph {unrolled_n['graph nodes'] / loop_n['graph nodes']:.1f}x as many nodes"
        )

    shortest = table.index.get_level_values("steps").min()
    grown = f"at {steps} steps unrolling made {cost(steps)}"
    if shortest != steps:  # how the cost grows: the shortest length against the longest
        grown = (
            f"at {shortest} steps unrolling made {cost(shortest)}; at {steps} steps, {cost(steps)}"
        )
    return f"{grown}; the training step at {steps} steps: {step}"
