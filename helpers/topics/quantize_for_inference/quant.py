"""Quantization for inference (notebook 11): the tables, figures, widgets, exercise check and
bench entries around the notebook's exported lesson code
(``helpers.lessons.quantize_for_inference``: ``train_small_cnn``, ``convert``,
``load_interpreter``, ``to_model_input``, ``run``, ``from_model_output``). The models they measure
are made and run by ``helpers.topics.quantize_for_inference.quant_models`` (data, training,
conversion, interpreters, ``quiet()``); the exercise check is in ``quant_check``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from helpers import checks
from helpers.checks import whole_number
from helpers.comparison import Comparison
from helpers.timing import ProgressFn
from helpers.topics.quantize_for_inference.quant_check import check_int8_model as check_int8_model

# The names imported "as" themselves are re-exported: notebook 11 calls quant.<name>.
from helpers.topics.quantize_for_inference.quant_models import (
    KIB,
    MODES,
    convert,
    dataset,
    predict,
    runners,
    train,
)
from helpers.topics.quantize_for_inference.quant_models import make_interpreter as make_interpreter
from helpers.topics.quantize_for_inference.quant_models import op_dtypes as op_dtypes
from helpers.topics.quantize_for_inference.quant_models import quiet as quiet

#: The rms rounding error of a uniform quantizer, in units of its scale: 1/sqrt(12).
ROUNDING_FLOOR = 12**-0.5


@checks.arguments(repeats=checks.repeats)
def quant_table(
    model: Any,
    contents: Mapping[str, bytes],
    x_test: Any,
    y_test: Any,
    repeats: int = 200,
    on_progress: ProgressFn | None = None,
) -> Any:
    """One row per converted model: size, single-image latency (interleaved), accuracy and
    agreement with the Keras model."""
    import numpy as np
    import pandas as pd

    from helpers import timing

    whole_number("repeats", repeats)
    modes = list(contents)
    keras_pred = np.argmax(model.predict(x_test, verbose=0), axis=1)
    predictions = {}
    for i, mode in enumerate(modes):
        predictions[mode] = predict(contents[mode], x_test)
        if on_progress is not None:
            on_progress(i + 1, len(modes) + 1)
    timings = timing.compare(
        runners(contents, x_test[:1]), baseline=modes[0], warmup=5, repeats=repeats
    ).attrs["timings"]
    if on_progress is not None:
        on_progress(len(modes) + 1, len(modes) + 1)
    rows = [
        {
            "mode": m,
            "size KiB": round(len(contents[m]) / KIB, 1),
            "latency us": round(timings[m].median * 1e6, 1),
            "q1 us": round(timings[m].q1 * 1e6, 1),
            "q3 us": round(timings[m].q3 * 1e6, 1),
            "accuracy": round(float(np.mean(predictions[m] == y_test)), 4),
            "agrees with Keras": round(float(np.mean(predictions[m] == keras_pred)), 4),
        }
        for m in modes
    ]
    table = pd.DataFrame(rows).set_index("mode")
    if "float32" in contents:
        table.insert(
            1, "smaller by", [f"{len(contents['float32']) / len(contents[m]):.2f}x" for m in modes]
        )
    table.attrs["timings"] = timings
    return table


@checks.arguments(
    width=checks.whole(1, 4096),
    epochs=checks.whole(1, 1000),
    n_train=checks.whole(1, 10**7),
    repeats=checks.repeats,
)
def quant_experiment(
    width: int = 16,
    epochs: int = 3,
    n_train: int = 6000,
    repeats: int = 200,
    modes: Sequence[str] = MODES,
    on_progress: ProgressFn | None = None,
) -> Any:
    """Train a CNN of ``width`` on ``n_train`` generated images, convert it each of ``modes`` ways,
    then ``quant_table`` on 1,000 held-out ones: the experiment behind notebook 11's first
    widget."""
    x, y, x_test, y_test = dataset(n_train, 1000)
    model = train(x, y, epochs=epochs, width=width)
    contents = {mode: convert(model, mode, x[:200]) for mode in modes}
    return quant_table(model, contents, x_test, y_test, repeats=repeats, on_progress=on_progress)


def quant_figure(table: Any, title: str = "") -> Any:
    """Size and single-image latency per mode, side by side."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 3.2), layout="constrained")
    left, right = fig.subplots(1, 2)
    modes = list(table.index)
    left.barh(modes, table["size KiB"], color="tab:blue")
    left.set_xlabel("model size, KiB")
    med = table["latency us"]
    right.barh(
        modes,
        med,
        xerr=[(med - table["q1 us"]).clip(lower=0), (table["q3 us"] - med).clip(lower=0)],
        color="tab:orange",
        capsize=3,
    )
    right.set_xlabel("single-image latency, us (median, IQR)")
    for ax in (left, right):
        ax.invert_yaxis()
    if title:
        fig.suptitle(title)
    return fig


def quant_summary(table: Any) -> str:
    """How much smaller and faster int8 (or the last mode) is than float32, and its agreement."""
    from helpers import verdicts

    if "float32" not in table.index:
        return "no float32 row to compare with"
    other = "int8" if "int8" in table.index else table.index[-1]
    base, row = table.loc["float32"], table.loc[other]
    timings = table.attrs.get("timings", {})
    speed = (
        verdicts.verdict_of(timings, other, "float32")
        if {"float32", other} <= set(timings)
        else f"{base['latency us'] / row['latency us']:.2f}x the float32 speed per image "
        "(no spread kept)."
    )
    return (
        f"{other}: {base['size KiB'] / row['size KiB']:.1f}x smaller, "
        f"agrees with the Keras model on {row['agrees with Keras']:.1%} of the test images. "
        f"Per image: {speed}"
    )


# --- the benchmark runner's view ------------------------------------------------------------


def _size_table(small: bool = False) -> Any:
    import pandas as pd

    x, y, _, _ = dataset(2000 if small else 6000, 10)
    model = train(x, y, epochs=1 if small else 3)
    sizes = {m: len(convert(model, m, x[:200])) for m in ("float32", "int8")}
    return pd.DataFrame(
        [
            {
                "variant": m,
                "median_s": float(b),
                "speedup": sizes["float32"] / b,
                "speedup_low": sizes["float32"] / b,
                "speedup_high": sizes["float32"] / b,
                "repeats": 1,
            }
            for m, b in sizes.items()
        ]
    ).set_index("variant")


BENCHMARKS = [
    Comparison(
        id="quantize_for_inference.int8_size_ratio",
        title="small CNN as a TFLite model: float32 vs full int8 size",
        measure=_size_table,
        baseline="float32",
        variant="int8",
        unit="bytes",
        kind="size ratio",
        quick={"small": True},
        full={},
        bound=lambda: 4.0,
        deterministic=True,
    ),
]


def modes_summary(table: Any) -> str:
    """One line per mode against float32: size, agreement with Keras and the speed verdict."""
    from helpers import verdicts

    timings, base = table.attrs.get("timings", {}), table.loc["float32"]
    return "\n".join(
        f"{mode}: {base['size KiB'] / row['size KiB']:.1f}x smaller, "
        f"agrees with Keras on {row['agrees with Keras']:.1%}; "
        + verdicts.verdict_of(timings, mode, "float32")
        for mode, row in table.drop(index="float32").iterrows()
    )


def layer_errors(stats: Any) -> Any:
    """The debugger's per-layer statistics (``layer_statistics_dump`` read into a table, with a
    ``rmse/scale`` column), largest error first, each with a short layer name from its tensor
    name."""
    for column in ("rmse/scale", "tensor_name", "op_name"):
        if column not in stats:
            raise ValueError(
                f"the statistics need a {column!r} column "
                "(add rmse/scale = sqrt(mean_squared_error) / scale)"
            )
    table = stats.assign(
        layer=stats["tensor_name"].str.split(";").str[0].str.rsplit("/", n=1).str[0]
    )  # "model/layer/Op"
    table = table.sort_values("rmse/scale", ascending=False)[
        ["layer", "op_name", "rmse/scale", "mean_error", "tensor_name"]
    ]
    return table.reset_index(drop=True).round({"rmse/scale": 3})


def layer_errors_summary(table: Any) -> str:
    """The layer with the largest error, against the rounding floor (1/sqrt(12) steps), and how
    many of the layers that round (error above zero: pooling and reshaping pass values through)
    exceed twice it."""
    top, rounding = table.iloc[0], table[table["rmse/scale"] > 0.001]
    over = int((rounding["rmse/scale"] > 2 * ROUNDING_FLOOR).sum())
    return (
        f"largest rmse/scale: {top['rmse/scale']:.3f} at {top['layer']} ({top['op_name']}), "
        f"{top['rmse/scale'] / ROUNDING_FLOOR:.2f}x rounding alone ({ROUNDING_FLOOR:.3f}); "
        f"{over} of the {len(rounding)} layers that round are above twice that"
    )
