"""Notebook 11's exercise check: a full-int8 TFLite model of the small CNN, read by LiteRT.
``helpers.topics.quantize_for_inference.quant`` imports it back, as the notebook calls it."""

from __future__ import annotations

from os import PathLike
from pathlib import Path
from typing import Any

from helpers.exercises import Feedback, correct, not_yet
from helpers.topics.quantize_for_inference.quant_models import KIB, make_interpreter, predict


def check_int8_model(content: Any, model: Any, x_test: Any) -> Feedback:
    """Exercise check: ``content`` (the model's bytes, or the path of the ``.tflite`` file that
    ``model.export`` wrote) is a fully int8 TFLite model (int8 input and output) that agrees
    with ``model`` on at least 95% of ``x_test``."""
    import numpy as np

    if content is None:
        return not_yet(
            "got None: model.export(path, format='litert', ...) writes the file and returns "
            "None; pass its path (or Path(path).read_bytes())"
        )
    if isinstance(content, str | PathLike):
        path = Path(content)
        if path.suffix != ".tflite":
            return not_yet(f"{str(path)!r} does not name a .tflite file: pass the path it wrote")
        if not path.is_file():
            return not_yet(f"there is no file at {str(path)!r}: pass the path model.export wrote")
        content = path.read_bytes()
    if not isinstance(content, bytes | bytearray) or not content:
        shown = "empty bytes" if isinstance(content, bytes | bytearray) else type(content).__name__
        return not_yet(
            f"pass the converter's output (the model's bytes) or the .tflite file's path, "
            f"got {shown}"
        )
    try:
        interpreter, _ = make_interpreter(bytes(content))
        dtypes = (
            interpreter.get_input_details()[0]["dtype"],
            interpreter.get_output_details()[0]["dtype"],
        )
    except Exception as exc:  # the learner's model (no input, say): report, don't crash
        return not_yet(f"the interpreter could not load it: {exc}")
    if dtypes != (np.int8, np.int8):
        return not_yet(
            f"input and output are {dtypes[0].__name__} and {dtypes[1].__name__}, not int8: "
            + _what_is_missing(interpreter, dtypes)
        )
    try:
        agreement = float(
            np.mean(
                predict(bytes(content), x_test)
                == np.argmax(model.predict(x_test, verbose=0), axis=1)
            )
        )
    except Exception as exc:  # a model that loads but does not run on these images
        return not_yet(f"running it on the test images raised {type(exc).__name__}: {exc}")
    if agreement < 0.95:
        return not_yet(
            f"it agrees with the Keras model on only {agreement:.1%}: "
            "is the representative data right?"
        )
    return correct(
        f"an int8 model of {len(content) / KIB:.0f} KiB that agrees with Keras on {agreement:.1%}"
    )


def _what_is_missing(interpreter: Any, dtypes: tuple[Any, Any]) -> str:
    """The hint for a model whose input or output is not int8, from what is inside it."""
    import numpy as np

    if np.uint8 in dtypes:
        return "uint8 is TF1's quantized type; set both inference types to tf.int8"
    if np.int16 in dtypes:
        return "int16 edges are 16x8's: use TFLITE_BUILTINS_INT8 and the int8 inference types"
    if np.int8 in dtypes:
        return "set both inference_input_type and inference_output_type to tf.int8"
    try:
        ops = {op["op_name"] for op in interpreter._get_ops_details()}  # private, as in section 4
        tensors = {np.dtype(t["dtype"]) for t in interpreter.get_tensor_details()}
    except Exception:  # a LiteRT without the private method: the plain hint
        ops, tensors = set(), set()
    if "QUANTIZE" in ops and np.dtype(np.int16) in tensors:  # 16x8: int16 activations
        return (
            "its activations are int16 (16x8): use TFLITE_BUILTINS_INT8 and the int8 "
            "inference types"
        )
    if "QUANTIZE" in ops:  # calibrated: int8 inside, converted at the edges
        return "its inside is int8; set inference_input_type and inference_output_type to tf.int8"
    if np.dtype(np.int8) in tensors:
        return (
            "only its weights are int8 (dynamic range): add a representative_dataset, "
            "TFLITE_BUILTINS_INT8 and the int8 inference types"
        )
    if np.dtype(np.float16) in tensors:
        return (
            "its weights are float16 (supported_types): drop that, and set a "
            "representative_dataset, TFLITE_BUILTINS_INT8 and the int8 inference types"
        )
    return (
        "nothing in it is quantized: set optimizations, a representative_dataset, "
        "TFLITE_BUILTINS_INT8 and the int8 inference types (a converter that "
        "QuantizationDebugger was given only calibrates: make a new one)"
    )
