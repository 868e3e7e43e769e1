"""Quantization for inference (notebook 11): the tables, figures, widgets and bench entries
around the notebook's exported lesson code (``helpers.lessons.quantize_for_inference``:
``train_small_cnn``, ``convert``, ``load_interpreter``, ``to_model_input``, ``run``,
``from_model_output``).

The converter prints ``Saved artifact at '/tmp/...'`` and C++ log lines while it works;
``quiet()`` keeps that chatter (and its machine paths) out of notebooks.
"""

from __future__ import annotations

import contextlib
import functools
import io
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from helpers import checks, lessons
from helpers.checks import whole_number
from helpers.comparison import Comparison
from helpers.exercises import Feedback, correct, not_yet
from helpers.timing import ProgressFn

MODES = ("float32", "dynamic range", "int8", "float16")
#: The other integer modes of section 7: calibrated like int8, float32 in and out.
MORE_MODES = ("int8, float fallback", "16x8")
CALIBRATED = ("int8", *MORE_MODES)
#: The rms rounding error of a uniform quantizer, in units of its scale: 1/sqrt(12).
ROUNDING_FLOOR = 12 ** -0.5
KIB = 1024


def lesson() -> Any:
    """Notebook 11's exported lesson code (imported on use: it imports TensorFlow)."""
    return lessons.of("11_quantize_for_inference")


@contextlib.contextmanager
def quiet() -> Iterator[io.StringIO]:
    """Swallow what the converter and interpreter print: Python's stdout/stderr, file
    descriptors 1 and 2 (C++ logs) and warnings. Yields the Python-level text, for errors."""
    from helpers.fdlog import capture_fds

    text = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(text), contextlib.redirect_stderr(text), capture_fds():
        warnings.simplefilter("ignore")
        yield text


@checks.arguments(seed=checks.seed)
def dataset(n_train: int = 6000, n_test: int = 1000, seed: int = 1) -> tuple[Any, Any, Any, Any]:
    """Generated 32x32 RGB images (class shows in colour and stripe direction) scaled to [0, 1]:
    ``x_train, y_train, x_test, y_test``, from one draw so both splits share the classes."""
    from helpers.topics import cifar

    for name, value in (("n_train", n_train), ("n_test", n_test)):
        whole_number(name, value, 1, "images", 10**7)
    checks.fits_memory(f"dataset(n_train={n_train}, n_test={n_test})", (n_train + n_test) * 32 * 32 * 3 * 5)
    images, labels = cifar.synthetic_images(n_train + n_test, seed=seed)
    x = images.astype("float32") / 255.0
    return x[:n_train], labels[:n_train], x[n_train:], labels[n_train:]


@checks.arguments(epochs=checks.whole(1, 1000), width=checks.whole(1, 4096), seed=checks.seed)
def train(x: Any, y: Any, epochs: int = 3, width: int = 16, seed: int = 0) -> Any:
    """The notebook's ``train_small_cnn``, with its arguments checked first."""
    for name, value in (("epochs", epochs), ("width", width)):
        whole_number(name, value)
    return lesson().train_small_cnn(x, y, epochs=epochs, width=width, seed=seed)


def convert(model: Any, mode: str, representative: Any = None) -> bytes:
    """The notebook's ``convert``, quietly, after checking ``mode`` (one of ``MODES``) and that
    ``int8`` has ``representative`` inputs."""
    if mode not in MODES + MORE_MODES:
        raise ValueError(f"mode must be one of {MODES + MORE_MODES}, got {mode!r}")
    if mode in CALIBRATED and (representative is None or len(representative) == 0):
        raise ValueError(f"{mode} needs representative inputs to calibrate activation ranges")
    if mode in CALIBRATED:
        import numpy as np

        values = np.asarray(representative)
        if not np.issubdtype(values.dtype, np.number) or not np.isfinite(values).all():
            raise ValueError(f"representative inputs must be finite numbers (got {values.dtype}): "
                             "a NaN or inf would set the int8 ranges")
    with quiet():
        return lesson().convert(model, mode, representative)


@checks.arguments(num_threads=checks.optional(checks.threads))
def make_interpreter(content: bytes, num_threads: int | None = None) -> tuple[Any, str]:
    """The notebook's ``load_interpreter``, quietly, and which interpreter it used."""
    with quiet():
        interpreter = lesson().load_interpreter(content, num_threads)
    module = type(interpreter).__module__
    source = ("ai_edge_litert (LiteRT)" if module.startswith("ai_edge_litert")
              else "tf.lite.Interpreter (deprecated fallback: pip install ai-edge-litert)")
    return interpreter, source


def predict(content: bytes, x: Any) -> Any:
    """Class predictions of a TFLite model for every image in ``x``, one image at a time."""
    import numpy as np

    code, (interpreter, _) = lesson(), make_interpreter(content)
    run = code.make_runner(interpreter)
    return np.array([int(np.argmax(code.from_model_output(interpreter, run(code.to_model_input(interpreter, x[i:i + 1])))))
                     for i in range(len(x))])


@checks.arguments(threads=checks.optional(checks.threads))
def runners(contents: Mapping[str, bytes], image: Any, threads: int | None = None) -> dict[str, Any]:
    """One call per model: the notebook's ``make_runner`` on ``image`` already in the model's input type."""
    code = lesson()
    runners = {}
    for mode, content in contents.items():
        interpreter, _ = make_interpreter(content, threads)
        runners[mode] = functools.partial(code.make_runner(interpreter), code.to_model_input(interpreter, image))
    return runners


@checks.arguments(repeats=checks.repeats)
def quant_table(model: Any, contents: Mapping[str, bytes], x_test: Any, y_test: Any, repeats: int = 200,
                on_progress: ProgressFn | None = None) -> Any:
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
    timings = timing.compare(runners(contents, x_test[:1]), baseline=modes[0], warmup=5, repeats=repeats).attrs["timings"]
    if on_progress is not None:
        on_progress(len(modes) + 1, len(modes) + 1)
    rows = [{"mode": m, "size KiB": round(len(contents[m]) / KIB, 1),
             "latency us": round(timings[m].median * 1e6, 1), "q1 us": round(timings[m].q1 * 1e6, 1),
             "q3 us": round(timings[m].q3 * 1e6, 1), "accuracy": round(float(np.mean(predictions[m] == y_test)), 4),
             "agrees with Keras": round(float(np.mean(predictions[m] == keras_pred)), 4)} for m in modes]
    table = pd.DataFrame(rows).set_index("mode")
    if "float32" in contents:
        table.insert(1, "smaller by", [f"{len(contents['float32']) / len(contents[m]):.2f}x" for m in modes])
    table.attrs["timings"] = timings
    return table


@checks.arguments(width=checks.whole(1, 4096), epochs=checks.whole(1, 1000), n_train=checks.whole(1, 10**7),
                  repeats=checks.repeats)
def quant_experiment(width: int = 16, epochs: int = 3, n_train: int = 6000, repeats: int = 200,
                     modes: Sequence[str] = MODES, on_progress: ProgressFn | None = None) -> Any:
    """Train a CNN of ``width`` on ``n_train`` generated images, convert it each of ``modes`` ways,
    then ``quant_table`` on 1,000 held-out ones: the experiment behind notebook 11's first widget."""
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
    right.barh(modes, med, xerr=[(med - table["q1 us"]).clip(lower=0), (table["q3 us"] - med).clip(lower=0)],
               color="tab:orange", capsize=3)
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
    speed = (verdicts.verdict_of(timings, other, "float32") if {"float32", other} <= set(timings)
             else f"{base['latency us'] / row['latency us']:.2f}x the float32 speed per image (no spread kept).")
    return (f"{other}: {base['size KiB'] / row['size KiB']:.1f}x smaller, agrees with the Keras model on "
            f"{row['agrees with Keras']:.1%} of the test images. Per image: {speed}")


def check_int8_model(content: Any, model: Any, x_test: Any) -> Feedback:
    """Exercise check: ``content`` is a fully int8 TFLite model (int8 input and output) that
    agrees with ``model`` on at least 95% of ``x_test``."""
    import numpy as np

    if not isinstance(content, bytes | bytearray) or not content:
        shown = "empty bytes" if isinstance(content, bytes | bytearray) else type(content).__name__
        return not_yet(f"pass the converter's output (the model's bytes), got {shown}")
    try:
        interpreter, _ = make_interpreter(bytes(content))
    except Exception as exc:  # the learner's model: report, don't crash the notebook
        return not_yet(f"the interpreter could not load it: {exc}")
    dtypes = (interpreter.get_input_details()[0]["dtype"], interpreter.get_output_details()[0]["dtype"])
    if dtypes != (np.int8, np.int8):
        return not_yet(f"input and output are {dtypes[0].__name__} and {dtypes[1].__name__}, not int8: "
                       "set inference_input_type and inference_output_type")
    try:
        agreement = float(np.mean(predict(bytes(content), x_test) == np.argmax(model.predict(x_test, verbose=0), axis=1)))
    except Exception as exc:  # a model that loads but does not run on these images
        return not_yet(f"running it on the test images raised {type(exc).__name__}: {exc}")
    if agreement < 0.95:
        return not_yet(f"it agrees with the Keras model on only {agreement:.1%}: is the representative data right?")
    return correct(f"an int8 model of {len(content) / KIB:.0f} KiB that agrees with Keras on {agreement:.1%}")


# --- the benchmark runner's view ------------------------------------------------------------

def _size_table(small: bool = False) -> Any:
    import pandas as pd

    x, y, _, _ = dataset(2000 if small else 6000, 10)
    model = train(x, y, epochs=1 if small else 3)
    sizes = {m: len(convert(model, m, x[:200])) for m in ("float32", "int8")}
    return pd.DataFrame([{"variant": m, "median_s": float(b), "speedup": sizes["float32"] / b,
                          "speedup_low": sizes["float32"] / b, "speedup_high": sizes["float32"] / b, "repeats": 1}
                         for m, b in sizes.items()]).set_index("variant")


BENCHMARKS = [
    Comparison(id="quant.int8_size_ratio", title="small CNN as a TFLite model: float32 vs full int8 size",
               measure=_size_table, baseline="float32", variant="int8", unit="bytes", kind="size ratio",
               quick={"small": True}, full={}, bound=lambda: 4.0, deterministic=True),
]


def op_dtypes(interpreter: Any) -> dict[str, int]:
    """How many of a LiteRT model's ops produce each output dtype (``{"int8": 9, "float32": 2}``);
    the ``DELEGATE`` nodes XNNPACK adds beside the ops it takes over are not counted."""
    import numpy as np

    dtypes = {t["index"]: np.dtype(t["dtype"]).name for t in interpreter.get_tensor_details()}
    counts: dict[str, int] = {}
    for op in interpreter._get_ops_details():  # LiteRT's op list (private, long-standing)
        if op["op_name"] == "DELEGATE":
            continue
        name = dtypes.get(op["outputs"][0], "-") if len(op["outputs"]) else "-"
        counts[name] = counts.get(name, 0) + 1
    return counts


def modes_summary(table: Any) -> str:
    """One line per mode against float32: size, agreement with Keras and the speed verdict."""
    from helpers import verdicts

    timings, base = table.attrs.get("timings", {}), table.loc["float32"]
    return "\n".join(f"{mode}: {base['size KiB'] / row['size KiB']:.1f}x smaller, agrees with Keras on {row['agrees with Keras']:.1%}; "
                     + verdicts.verdict_of(timings, mode, "float32") for mode, row in table.drop(index="float32").iterrows())


def layer_errors(stats: Any) -> Any:
    """The debugger's per-layer statistics (``layer_statistics_dump`` read into a table, with a
    ``rmse/scale`` column), largest error first, each with a short layer name from its tensor name."""
    for column in ("rmse/scale", "tensor_name", "op_name"):
        if column not in stats:
            raise ValueError(f"the statistics need a {column!r} column (add rmse/scale = sqrt(mean_squared_error) / scale)")
    table = stats.assign(layer=stats["tensor_name"].str.split(";").str[0].str.rsplit("/", n=1).str[0])  # "model/layer/Op"
    table = table.sort_values("rmse/scale", ascending=False)[["layer", "op_name", "rmse/scale", "mean_error", "tensor_name"]]
    return table.reset_index(drop=True).round({"rmse/scale": 3})


def layer_errors_summary(table: Any) -> str:
    """The layer with the largest error, against the rounding floor (1/sqrt(12) steps), and how
    many of the layers that round (error above zero: pooling and reshaping pass values through) exceed twice it."""
    top, rounding = table.iloc[0], table[table["rmse/scale"] > 0.001]
    over = int((rounding["rmse/scale"] > 2 * ROUNDING_FLOOR).sum())
    return (f"largest rmse/scale: {top['rmse/scale']:.3f} at {top['layer']} ({top['op_name']}), "
            f"{top['rmse/scale'] / ROUNDING_FLOOR:.2f}x rounding alone ({ROUNDING_FLOOR:.3f}); "
            f"{over} of the {len(rounding)} layers that round are above twice that")
