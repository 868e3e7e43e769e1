"""Notebook 08's batch-norm section: its ``unfused_norm`` and ``fused_norm`` (from the exported
lesson code, ``helpers.lessons.fuse_ops_and_pick_layouts``) as timed variants in NHWC and NCHW,
forward or through its ``train_step``; how far apart their results are; the fused-against-unfused
grid and its one-line readings; and a Keras ``BatchNormalization`` layer beside them, with and
without XLA.

``helpers.topics.fuse_ops_and_pick_layouts.fused`` re-exports the names the notebook and the bench
call, and takes
``lesson`` from here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from helpers import checks, lessons

FORMATS = ("NHWC", "NCHW")


def _check_shape(shape: Sequence[int]) -> tuple[int, int, int, int]:
    if len(shape) != 4 or any(
        isinstance(d, bool) or not isinstance(d, int) or d < 1 for d in shape
    ):
        raise ValueError(f"shape must be four whole numbers >= 1 (N, H, W, C), got {shape!r}")
    return tuple(shape)  # type: ignore[return-value]


def lesson() -> Any:
    """Notebook 08's exported lesson code (imported on use: it imports TensorFlow)."""
    return lessons.of("08_fuse_ops_and_pick_layouts")


@checks.arguments(backward=checks.flag)
def batchnorm_variants(
    shape: Sequence[int] = (32, 56, 56, 64), data_format: str = "NHWC", backward: bool = True
) -> dict[str, Callable[[], Any]]:
    """Notebook 08's ``unfused_norm`` and ``fused_norm`` over an ``shape`` (NHWC) batch, each a
    ``tf.function``; with ``backward`` each call runs the notebook's ``train_step`` (gradients
    too)."""
    import tensorflow as tf

    n, h, w, c = _check_shape(shape)
    if data_format not in FORMATS:
        raise ValueError(f"data_format must be one of {FORMATS}, got {data_format!r}")
    code = lesson()
    x = tf.random.stateless_normal([n, h, w, c], seed=(1, 2))
    if data_format == "NCHW":
        x = tf.transpose(x, [0, 3, 1, 2])
    scale, offset = tf.Variable(tf.ones([c])), tf.Variable(tf.zeros([c]))
    weights = tf.random.stateless_normal(x.shape, seed=(7, 8))

    def step(norm: Callable[..., Any]) -> Callable[[], Any]:
        def call(t: Any) -> Any:
            return norm(t, scale, offset, data_format)

        def run() -> Any:
            return code.train_step(call, x, weights, [scale, offset]) if backward else call(x)

        return run

    return {
        "unfused": tf.function(step(code.unfused_norm)),
        "fused": tf.function(step(code.fused_norm)),
    }


def batchnorm_difference(
    shape: Sequence[int] = (8, 28, 28, 16), data_format: str = "NHWC"
) -> float:
    """Largest absolute difference between the fused and unfused forward outputs."""
    import tensorflow as tf

    variants = batchnorm_variants(shape, data_format, backward=False)
    return float(tf.reduce_max(tf.abs(variants["fused"]() - variants["unfused"]())))


@checks.arguments(repeats=checks.repeats)
def batchnorm_grid(
    shape: Sequence[int] = (32, 56, 56, 64), repeats: int = 5, on_progress: Any = None
) -> Any:
    """Fused against unfused batch norm for NHWC and NCHW, forward and forward + backward: one
    row each with both medians (ms) and the fused kernel's speed-up with its quartile ratios
    (baseline q1/variant q3 to q3/q1)."""
    import pandas as pd

    from helpers import timing

    rows, tables = [], {}
    cases = [(f, b) for f in FORMATS for b in (False, True)]
    for i, (data_format, backward) in enumerate(cases):
        table = timing.compare(
            batchnorm_variants(shape, data_format, backward), baseline="unfused", repeats=repeats
        )
        tables[f"{data_format} {'forward + backward' if backward else 'forward'}"] = table
        fused_row = table.loc["fused"]
        rows.append(
            {
                "format": data_format,
                "pass": "forward + backward" if backward else "forward",
                "unfused ms": round(table.loc["unfused", "median_s"] * 1e3, 2),
                "fused ms": round(fused_row["median_s"] * 1e3, 2),
                "speed-up": (
                    f"{fused_row['speedup']:.2f}x "
                    f"[{fused_row['speedup_low']:.2f}-{fused_row['speedup_high']:.2f}]"
                ),
            }
        )
        if on_progress is not None:
            on_progress(i + 1, len(cases))
    grid = pd.DataFrame(rows).set_index(["format", "pass"])
    grid.attrs["tables"] = tables  # each row's comparison, for grid_summary
    return grid


def grid_summary(grid: Any) -> str:
    """A computed line per row of ``batchnorm_grid``: the fused kernel against the separate ops,
    with its spread; in NHWC read against the expectation that fusing wins (one kernel writes no
    whole-tensor intermediate, where each separate op writes its result)."""
    from helpers import verdicts

    why = (
        "one kernel: no whole-tensor intermediates written, "
        "against a pass and a written tensor per separate op"
    )
    lines = [
        f"{case}: "
        + verdicts.verdict(
            table, "fused", "unfused", *(("faster", why) if case.startswith("NHWC") else ())
        )
        for case, table in grid.attrs["tables"].items()
    ]
    return "\n".join(lines + _layout_lines(grid))


def _layout_lines(grid: Any) -> list[str]:
    """Per pass, each column's NCHW median over its NHWC one, and which moved more (at the
    printed precision): where fusing pays differently in the two layouts, which side changed."""
    lines = []
    for step in dict.fromkeys(grid.index.get_level_values("pass")):
        if ("NHWC", step) not in grid.index or ("NCHW", step) not in grid.index:
            continue
        ratio = {
            column: round(
                grid.loc[("NCHW", step), f"{column} ms"] / grid.loc[("NHWC", step), f"{column} ms"],
                2,
            )
            for column in ("fused", "unfused")
        }
        if not all(math.isfinite(r) and r > 0 for r in ratio.values()):
            continue  # a case that did not run, or a median that rounds to 0 ms
        moved = {column: abs(math.log(r)) for column, r in ratio.items()}
        if abs(moved["fused"] - moved["unfused"]) < math.log(1.05):
            which = "neither moved clearly more: their factors are within 5% of each other"
        else:
            mover = (
                "the fused kernel's" if moved["fused"] > moved["unfused"] else "the separate ops'"
            )
            which = f"{mover} time moved more"
        lines.append(
            f"{step}, NCHW against NHWC: the fused kernel took {ratio['fused']:.2f}x the time, the "
            f"separate ops {ratio['unfused']:.2f}x ({which}; medians of separate comparisons)."
        )
    return lines


@checks.arguments(backward=checks.flag)
def keras_batchnorm_variants(
    shape: Sequence[int] = (32, 56, 56, 64), backward: bool = True
) -> dict[str, Callable[[], Any]]:
    """A Keras ``BatchNormalization`` layer in training mode as a plain ``tf.function`` and
    compiled by XLA, beside notebook 08's ``fused_norm`` on the layer's own gamma and beta; with
    ``backward`` each runs the notebook's ``train_step``."""
    import keras
    import tensorflow as tf

    n, h, w, c = _check_shape(shape)
    code = lesson()
    x = tf.random.stateless_normal([n, h, w, c], seed=(1, 2))
    weights = tf.random.stateless_normal([n, h, w, c], seed=(7, 8))
    layer = keras.layers.BatchNormalization(epsilon=1e-3)
    layer.build((None, h, w, c))
    variables = [layer.gamma, layer.beta]

    def step(norm: Callable[[Any], Any]) -> Callable[[], Any]:
        def run() -> Any:
            return code.train_step(norm, x, weights, variables) if backward else norm(x)

        return run

    def keras_norm(t: Any) -> Any:
        return layer(t, training=True)

    def fused_norm(t: Any) -> Any:
        return code.fused_norm(t, layer.gamma, layer.beta)

    keras_call, fused_call = step(keras_norm), step(fused_norm)
    return {
        "Keras layer": tf.function(keras_call),
        "Keras layer + XLA": tf.function(keras_call, jit_compile=True),
        "fused_batch_norm": tf.function(fused_call),
    }
