"""Notebook 12's exercise checks: a model whose hidden layers compute in 16 bits with a float32
output, and a training step whose loss scaling keeps a float16 gradient from underflowing.

``helpers.topics.train_in_mixed_precision.precision`` re-exports both for the notebook.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from helpers.exercises import Feedback, correct, not_yet


def check_float32_output(model: Any) -> Feedback:
    """Exercise check: a model whose hidden layers compute in a 16-bit dtype and whose output is
    float32."""
    import keras
    import numpy as np

    if not isinstance(model, keras.Model):
        return not_yet(f"pass a keras.Model, got {type(model).__name__}")
    low = [layer.name for layer in model.layers if layer.compute_dtype in ("bfloat16", "float16")]
    if not low:
        return not_yet(
            "no layer computes in bfloat16 or float16: build the model under mixed_bfloat16"
        )
    try:
        output = model(np.zeros((1, *model.input_shape[1:]), "float32"))
    except Exception as exc:  # the learner's model
        return not_yet(f"calling your model raised {type(exc).__name__}: {exc}")
    if output.dtype != "float32":
        return not_yet(f"the model's output is {output.dtype}: give its last layer dtype='float32'")
    rounded = [layer for layer in model.layers if layer.name in low and _applies_softmax(layer)]
    if rounded:  # a float32 layer after it casts a softmax already rounded to 16 bits
        return not_yet(
            f"layer {rounded[0].name!r} computes its softmax in {rounded[0].compute_dtype}: "
            "the output is float32 only after it; give the layer with the softmax dtype='float32'"
        )
    return correct(
        f"{len(low)} of {len(model.layers)} layers compute in 16 bits, the output is float32"
    )


def _applies_softmax(layer: Any) -> bool:
    """Whether ``layer`` applies a softmax: its activation (Dense, Activation; Keras' softmax, or
    TensorFlow's ``tf.nn.softmax``, whose function is ``softmax_v2``) or its kind."""
    activation = getattr(layer, "activation", None)
    return type(layer).__name__ == "Softmax" or "softmax" in getattr(activation, "__name__", "")


def check_scaled_step(step: Callable[..., Any]) -> Feedback:
    """Exercise check: ``step(w, x, optimizer)`` must move ``w`` by SGD's update of the true
    gradient, mean(x), where the float16 gradient of each element underflows without scaling."""
    import keras
    import numpy as np
    import tensorflow as tf

    if not callable(step):
        return not_yet(f"pass your step function, got {type(step).__name__}")
    for value in (1e-5, 0.5):  # an underflowing gradient, and an ordinary one
        w = tf.Variable(1.0)
        optimizer = keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD(learning_rate=1000.0))
        try:
            step(w, tf.fill([1024], tf.constant(value, tf.float16)), optimizer)
        except Exception as exc:  # the learner's code
            return not_yet(f"calling your function raised {type(exc).__name__}: {exc}")
        moved, expected = (
            1.0 - float(w.numpy()),
            1000.0 * float(np.float16(value)),
        )  # SGD: w -= lr * mean(x)
        if not np.isclose(moved, expected, rtol=0.02):
            hint = ": the float16 gradient underflowed; scale the loss" if moved == 0 else ""
            return not_yet(
                f"with x = {value:g}, w moved by {moved:.6g}, expected {expected:.6g}{hint}"
            )
    return correct("the scaled gradient survived float16 and the optimizer unscaled it")
