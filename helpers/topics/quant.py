"""Quantization for inference (notebook 11): train a small CNN on generated images, convert it
with the TFLite converter (float32, dynamic range, full int8, float16), and run each model with
the LiteRT interpreter to compare size, single-image latency and agreement with Keras.

The converter prints ``Saved artifact at '/tmp/...'`` and C++ log lines while it works;
``quiet()`` keeps that chatter (and its machine paths) out of notebooks.
"""

from __future__ import annotations

import contextlib
import functools
import io
import warnings
from collections.abc import Iterator
from typing import Any

from helpers.checks import whole_number
from helpers.comparison import Comparison
from helpers.exercises import Feedback, correct, not_yet
from helpers.timing import ProgressFn, Timing

MODES = ("float32", "dynamic range", "int8", "float16")
KIB = 1024


@contextlib.contextmanager
def quiet() -> Iterator[io.StringIO]:
    """Swallow what the converter and interpreter print: Python's stdout/stderr, file
    descriptors 1 and 2 (C++ logs) and warnings. Yields the Python-level text, for errors."""
    from helpers.fdlog import capture_fds

    text = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(text), contextlib.redirect_stderr(text), capture_fds():
        warnings.simplefilter("ignore")
        yield text


def dataset(n_train: int = 6000, n_test: int = 1000, seed: int = 1) -> tuple[Any, Any, Any, Any]:
    """Generated 32x32 RGB images (class shows in colour and stripe direction) scaled to [0, 1]:
    ``x_train, y_train, x_test, y_test``, from one draw so both splits share the classes."""
    from helpers.topics import cifar

    for name, value in (("n_train", n_train), ("n_test", n_test)):
        whole_number(name, value)
    images, labels = cifar.synthetic_images(n_train + n_test, seed=seed)
    x = images.astype("float32") / 255.0
    return x[:n_train], labels[:n_train], x[n_train:], labels[n_train:]


def train(x: Any, y: Any, epochs: int = 3, width: int = 16, seed: int = 0) -> Any:
    """A small CNN (two conv blocks of ``width`` and ``2 * width`` filters, a dense layer; logits
    out) trained with Adam."""
    import keras

    for name, value in (("epochs", epochs), ("width", width)):
        whole_number(name, value)
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([
        keras.Input(x.shape[1:]),
        keras.layers.Conv2D(width, 3, activation="relu"), keras.layers.MaxPooling2D(),
        keras.layers.Conv2D(2 * width, 3, activation="relu"), keras.layers.MaxPooling2D(),
        keras.layers.Flatten(), keras.layers.Dense(4 * width, activation="relu"), keras.layers.Dense(10),
    ])
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    model.fit(x, y, epochs=epochs, batch_size=64, verbose=0)
    return model


def convert(model: Any, mode: str, representative: Any = None) -> bytes:
    """The TFLite flatbuffer of ``model`` in ``mode`` (one of ``MODES``); ``int8`` needs
    ``representative``, a few hundred inputs to calibrate activation ranges."""
    import tensorflow as tf

    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if mode == "int8" and (representative is None or len(representative) == 0):
        raise ValueError("int8 needs representative inputs to calibrate activation ranges")
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    if mode != "float32":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if mode == "int8":
        def samples() -> Iterator[list[Any]]:
            for i in range(len(representative)):
                yield [representative[i:i + 1]]

        converter.representative_dataset = samples
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        converter.inference_input_type = tf.int8
        converter.inference_output_type = tf.int8
    elif mode == "float16":
        converter.target_spec.supported_types = [tf.float16]
    with quiet():
        return converter.convert()


def interpreter_class() -> tuple[Any, str]:
    """The interpreter class to run TFLite models with, and its name: LiteRT's
    (``ai_edge_litert``), or the deprecated ``tf.lite.Interpreter`` where LiteRT is missing."""
    try:
        from ai_edge_litert.interpreter import Interpreter
    except ImportError:
        import tensorflow as tf

        return tf.lite.Interpreter, "tf.lite.Interpreter (deprecated fallback: pip install ai-edge-litert)"
    return Interpreter, "ai_edge_litert (LiteRT)"


def make_interpreter(content: bytes) -> tuple[Any, str]:
    """A ready interpreter for a TFLite model (see ``interpreter_class``) and where it came from."""
    interpreter_type, source = interpreter_class()
    with quiet():
        interpreter = interpreter_type(model_content=content)
        interpreter.allocate_tensors()
    return interpreter, source


def _runner(content: bytes) -> Any:
    """A function image -> logits (float) for one image, quantizing input and output as the model asks."""
    import numpy as np

    interpreter, _ = make_interpreter(content)
    inp, out = interpreter.get_input_details()[0], interpreter.get_output_details()[0]
    in_scale, in_zero = inp["quantization"]
    out_scale, out_zero = out["quantization"]

    def run(image: Any) -> Any:
        batch = image[None]
        if inp["dtype"] == np.int8:
            batch = np.clip(np.round(batch / in_scale + in_zero), -128, 127).astype(np.int8)
        interpreter.set_tensor(inp["index"], batch)
        interpreter.invoke()
        result = interpreter.get_tensor(out["index"])[0]
        return (result.astype(np.float32) - out_zero) * out_scale if out["dtype"] == np.int8 else result

    return run


def predict(content: bytes, x: Any) -> Any:
    """Class predictions of a TFLite model for every image in ``x``, one image at a time."""
    import numpy as np

    run = _runner(content)
    return np.array([int(np.argmax(run(image))) for image in x])


def latency(content: bytes, image: Any, repeats: int = 200) -> Timing:
    """Single-image inference time (set input, invoke, read output), after a warm-up."""
    from helpers import timing

    run = _runner(content)
    return timing.measure(run, image, warmup=5, repeats=repeats)


def quant_table(model: Any, x_test: Any, y_test: Any, representative: Any, repeats: int = 200,
                modes: tuple[str, ...] = MODES, on_progress: ProgressFn | None = None) -> Any:
    """One row per mode: size, single-image latency, accuracy, and agreement with the Keras model."""
    import numpy as np
    import pandas as pd

    from helpers import timing

    keras_pred = np.argmax(model.predict(x_test, verbose=0), axis=1)
    contents, predictions = {}, {}
    for i, mode in enumerate(modes):
        contents[mode] = convert(model, mode, representative)
        predictions[mode] = predict(contents[mode], x_test)
        if on_progress is not None:
            on_progress(i + 1, len(modes) + 1)
    # Latency: all modes interleaved round by round, so drift on a busy machine hits them alike.
    runners = {mode: functools.partial(_runner(c), x_test[0]) for mode, c in contents.items()}
    latencies = timing.compare(runners, baseline=modes[0], warmup=5, repeats=repeats)
    if on_progress is not None:
        on_progress(len(modes) + 1, len(modes) + 1)
    rows = []
    for mode in modes:
        t = latencies.attrs["timings"][mode]
        rows.append({"mode": mode, "size KiB": round(len(contents[mode]) / KIB, 1),
                     "latency us": round(t.median * 1e6, 1), "q1 us": round(t.q1 * 1e6, 1), "q3 us": round(t.q3 * 1e6, 1),
                     "accuracy": round(float(np.mean(predictions[mode] == y_test)), 4),
                     "agrees with Keras": round(float(np.mean(predictions[mode] == keras_pred)), 4)})
    sizes = {mode: len(c) for mode, c in contents.items()}
    timings = latencies.attrs["timings"]
    table = pd.DataFrame(rows).set_index("mode")
    if "float32" in sizes:
        table.insert(1, "smaller by", [f"{sizes['float32'] / sizes[m]:.2f}x" for m in table.index])
    table.attrs["keras_accuracy"] = float(np.mean(keras_pred == y_test))
    table.attrs["timings"] = timings
    return table


def quant_experiment(width: int = 16, epochs: int = 3, n_train: int = 6000, repeats: int = 200,
                     on_progress: ProgressFn | None = None) -> Any:
    """Train a CNN of ``width`` on ``n_train`` generated images, then ``quant_table`` on 1,000
    held-out ones: the experiment behind notebook 11's widget."""
    x, y, x_test, y_test = dataset(n_train, 1000)
    model = train(x, y, epochs=epochs, width=width)
    return quant_table(model, x_test, y_test, x[:200], repeats=repeats, on_progress=on_progress)


def quant_figure(table: Any, title: str = "") -> Any:
    """Size and single-image latency per mode, side by side."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 3.2), layout="constrained")
    left, right = fig.subplots(1, 2)
    modes = list(table.index)
    left.barh(modes, table["size KiB"], color="tab:blue")
    left.set_xlabel("model size, KiB")
    med = table["latency us"]
    spread = [(med - table["q1 us"]).clip(lower=0), (table["q3 us"] - med).clip(lower=0)]
    right.barh(modes, med, xerr=spread, color="tab:orange", capsize=3)
    right.set_xlabel("single-image latency, us (median, IQR)")
    for ax in (left, right):
        ax.invert_yaxis()
    if title:
        fig.suptitle(title)
    return fig


def quant_summary(table: Any) -> str:
    """How much smaller and faster int8 (or the last mode) is than float32, and its agreement."""
    if "float32" not in table.index:
        return "no float32 row to compare with"
    other = "int8" if "int8" in table.index else table.index[-1]
    base, row = table.loc["float32"], table.loc[other]
    return (f"{other}: {base['size KiB'] / row['size KiB']:.1f}x smaller, "
            f"{base['latency us'] / row['latency us']:.2f}x the float32 speed per image, "
            f"agrees with the Keras model on {row['agrees with Keras']:.1%} of the test images")


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
    agreement = float(np.mean(predict(bytes(content), x_test) == np.argmax(model.predict(x_test, verbose=0), axis=1)))
    if agreement < 0.95:
        return not_yet(f"it agrees with the Keras model on only {agreement:.1%}: is the representative data right?")
    return correct(f"an int8 model of {len(content) / KIB:.0f} KiB that agrees with Keras on {agreement:.1%}")


# --- the benchmark runner's view ------------------------------------------------------------

@functools.lru_cache(maxsize=2)
def _bench_model(small: bool) -> tuple[Any, Any, Any]:
    x, y, x_test, _ = dataset(2000 if small else 6000, 200 if small else 1000)
    return train(x, y, epochs=1 if small else 3), x_test, x[:200]


def _size_table(small: bool = False) -> Any:
    import pandas as pd

    model, _, representative = _bench_model(small)
    sizes = {m: len(convert(model, m, representative)) for m in ("float32", "int8")}
    table = pd.DataFrame([{"variant": m, "median_s": float(b), "speedup": sizes["float32"] / b,
                           "speedup_low": sizes["float32"] / b, "speedup_high": sizes["float32"] / b, "repeats": 1}
                          for m, b in sizes.items()]).set_index("variant")
    return table


def _latency_table(small: bool = False, repeats: int = 300) -> Any:
    import numpy as np

    from helpers import timing

    model, x_test, representative = _bench_model(small)
    contents = {m: convert(model, m, representative) for m in ("float32", "int8")}
    runners = {m: _runner(c) for m, c in contents.items()}
    table = timing.compare({m: functools.partial(run, x_test[0]) for m, run in runners.items()},
                           baseline="float32", warmup=5, repeats=repeats)
    keras_pred = np.argmax(model.predict(x_test, verbose=0), axis=1)
    agreement = float(np.mean(predict(contents["int8"], x_test) == keras_pred))
    table.attrs["note"] = f"int8 agrees with the Keras model on {agreement:.1%} of {len(x_test)} test images"
    return table


BENCHMARKS = [
    Comparison(id="quant.int8_size_ratio", title="small CNN as a TFLite model: float32 vs full int8 size",
               measure=_size_table, baseline="float32", variant="int8", unit="bytes",
               quick={"small": True}, full={}, bound=lambda: 4.0),
    Comparison(id="quant.int8_latency", title="small CNN, one 32x32 image, LiteRT interpreter: float32 vs int8",
               measure=_latency_table, baseline="float32", variant="int8",
               quick={"small": True, "repeats": 100}, full={"repeats": 300}),
]
