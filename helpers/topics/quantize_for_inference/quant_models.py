"""The models notebook 11 measures, made and run: generated images (``dataset``), the notebook's
small CNN trained (``train``), its TFLite conversions (``convert``, one of ``MODES``), and LiteRT
interpreters: loaded (``make_interpreter``), predicting, one runner per model, and how many ops
produce each dtype (``op_dtypes``). The lesson code they call is exported from the notebook
(``helpers.lessons.quantize_for_inference``).

The converter prints ``Saved artifact at '/tmp/...'`` and C++ log lines while it works;
``quiet()`` keeps that chatter (and its machine paths) out of notebooks.
``helpers.topics.quantize_for_inference.quant``
(the tables, figures, exercise check and bench entry) and
``helpers.topics.quantize_for_inference.model_latency`` build
on these; ``quant`` re-exports the names notebook 11 calls as ``quant.<name>``.
"""

from __future__ import annotations

import contextlib
import functools
import io
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

from helpers import checks, lessons
from helpers.checks import whole_number

MODES = ("float32", "dynamic range", "int8", "float16")
#: The other integer modes of section 7: calibrated like int8, float32 in and out.
MORE_MODES = ("int8, float fallback", "16x8")
CALIBRATED = ("int8", *MORE_MODES)
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
    with (
        warnings.catch_warnings(),
        contextlib.redirect_stdout(text),
        contextlib.redirect_stderr(text),
        capture_fds(),
    ):
        warnings.simplefilter("ignore")
        yield text


@checks.arguments(seed=checks.seed)
def dataset(n_train: int = 6000, n_test: int = 1000, seed: int = 1) -> tuple[Any, Any, Any, Any]:
    """Generated 32x32 RGB images (class shows in colour and stripe direction) scaled to [0, 1]:
    ``x_train, y_train, x_test, y_test``, from one draw so both splits share the classes."""
    from helpers.datasets import cifar

    for name, value in (("n_train", n_train), ("n_test", n_test)):
        whole_number(name, value, 1, "images", 10**7)
    checks.fits_memory(
        f"dataset(n_train={n_train}, n_test={n_test})", (n_train + n_test) * 32 * 32 * 3 * 5
    )
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
            raise ValueError(
                f"representative inputs must be finite numbers (got {values.dtype}): "
                "a NaN or inf would set the int8 ranges"
            )
    with quiet():
        return lesson().convert(model, mode, representative)


@checks.arguments(num_threads=checks.optional(checks.threads))
def make_interpreter(content: bytes, num_threads: int | None = None) -> tuple[Any, str]:
    """The notebook's ``load_interpreter``, quietly, and which interpreter it used."""
    with quiet():
        interpreter = lesson().load_interpreter(content, num_threads)
    module = type(interpreter).__module__
    source = (
        "ai_edge_litert (LiteRT)"
        if module.startswith("ai_edge_litert")
        else "tf.lite.Interpreter (deprecated fallback: pip install ai-edge-litert)"
    )
    return interpreter, source


def predict(content: bytes, x: Any) -> Any:
    """Class predictions of a TFLite model for every image in ``x``, one image at a time."""
    import numpy as np

    code, (interpreter, _) = lesson(), make_interpreter(content)
    run = code.make_runner(interpreter)
    given, returned = interpreter.get_input_details()[0], interpreter.get_output_details()[0]
    return np.array(
        [
            int(
                np.argmax(
                    code.from_model_output(returned, run(code.to_model_input(given, x[i : i + 1])))
                )
            )
            for i in range(len(x))
        ]
    )


@checks.arguments(threads=checks.optional(checks.threads))
def runners(
    contents: Mapping[str, bytes], image: Any, threads: int | None = None
) -> dict[str, Any]:
    """One call per model: the notebook's ``make_runner`` on ``image`` already in the model's input
    type."""
    code = lesson()
    runners = {}
    for mode, content in contents.items():
        interpreter, _ = make_interpreter(content, threads)
        runners[mode] = functools.partial(
            code.make_runner(interpreter),
            code.to_model_input(interpreter.get_input_details()[0], image),
        )
    return runners


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
