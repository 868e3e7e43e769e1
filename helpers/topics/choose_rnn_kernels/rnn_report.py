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
    """How unrolling changed the first call and the graph (the shortest sequence against the
    longest), and the training step at every length, read with its spread (``verdicts``: "no
    clear difference" inside the noise), in full at the longest."""
    from helpers import timing, verdicts

    lengths = sorted(set(table.index.get_level_values("steps")))
    steps, shortest = lengths[-1], lengths[0]
    timings = table.attrs.get("timings", {})

    def cost(n: Any) -> str:
        loop_n, unrolled_n = table.loc[(n, "loop")], table.loc[(n, "unrolled")]
        return (
            f"the first call {unrolled_n['first call s'] / loop_n['first call s']:.1f}x as long "
            f"and the graph {unrolled_n['graph nodes'] / loop_n['graph nodes']:.1f}x as many nodes"
        )

    grown = f"At {steps} steps unrolling made {cost(steps)}."
    if shortest != steps:  # how the cost grows: the shortest length against the longest
        grown = (
            f"At {shortest} steps unrolling made {cost(shortest)}; at {steps} steps, {cost(steps)}."
        )
    if not all((n, mode) in timings for n in lengths for mode in ("loop", "unrolled")):
        loop, unrolled = table.loc[(steps, "loop")], table.loc[(steps, "unrolled")]
        ratio = loop["step ms"] / unrolled["step ms"]
        step = (
            f"The training step at {steps} steps: unrolled {ratio:.2f}x as fast (no spread kept)."
        )
        return f"{grown} {step}"
    readings = {}
    for n in lengths:
        pair = timing.comparison_table(
            {"loop": timings[(n, "loop")], "unrolled": timings[(n, "unrolled")]}, "loop"
        )
        speedup, low, high, runs = verdicts.ratio(pair, "unrolled")
        word = verdicts.outcome(low, high, speedup) if runs >= verdicts.MIN_RUNS else f"{runs}"
        readings[n] = (speedup, word, low, high)

    def reading(speedup: float, word: str, low: float, high: float) -> str:
        if word.isdigit():  # fewer runs than verdicts.MIN_RUNS: no spread, so no direction
            return f"{speedup:.2f}x from {word} run each (too few to judge)"
        if word == "faster":  # a slow-down as one, as verdicts prints it
            return f"{speedup:.2f}x faster"
        if word == "slower":
            return f"{1 / speedup:.2f}x slower"
        return (  # why a median far from 1 is no verdict: the quartile ratios reach 1 (or 3 %)
            f"no clear difference ({speedup:.2f}x, quartile ratios {low:.2f}-{high:.2f}x)"
        )

    each = ", ".join(f"{reading(*readings[n])} at {n} steps" for n in lengths)
    words = {r[1] for r in readings.values()}
    mixed = (
        " Unrolling was faster at some lengths and slower at others in this run:"
        " read each length, not a rule."
        if {"faster", "slower"} <= words
        else ""
    )
    full = verdicts.verdict_of(
        {"loop": timings[(steps, "loop")], "unrolled": timings[(steps, "unrolled")]},
        "unrolled",
        "loop",
    )
    if len(lengths) == 1:
        return f"{grown} The training step: {full}"
    step = f"The training step, unrolled against the loop: {each}.{mixed}"
    return f"{grown} {step} At {steps} steps: {full}"
