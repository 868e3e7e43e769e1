"""Notebook 12's exercise checks: a model whose hidden layers compute in 16 bits with a float32
softmax and output, and a training step whose loss scaling keeps a float16 gradient from
underflowing.

``helpers.topics.train_in_mixed_precision.precision`` re-exports both for the notebook.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from helpers.exercises import Feedback, correct, not_yet


def check_float32_output(model: Any) -> Feedback:
    """Exercise check: a model whose hidden layers with weights compute in a 16-bit dtype, whose
    output is float32 probabilities, and whose softmax is not computed in 16 bits. The softmax is
    found by what a layer returns, not by its name: the last 16-bit layer must not already return
    rows that sum to 1 (a float32 layer after it would only cast a rounded softmax)."""
    import keras
    import numpy as np

    if not isinstance(model, keras.Model):
        return not_yet(f"pass a keras.Model, got {type(model).__name__}")
    if not model.built:
        return not_yet(
            "your model is not built: start it with keras.Input, so its layers have weights"
        )
    low = [layer for layer in model.layers if layer.compute_dtype in ("bfloat16", "float16")]
    if not any(layer.weights for layer in low):
        return not_yet(
            "no layer with weights computes in bfloat16 or float16: build the hidden layer "
            "under mixed_bfloat16"
        )
    try:
        if len(model.inputs) != 1 or len(model.outputs) != 1:
            return not_yet(
                f"the exercise's model has one input and one output; yours has "
                f"{len(model.inputs)} and {len(model.outputs)}"
            )
        inputs = np.random.default_rng(0).normal(size=(4, *model.input_shape[1:]))
        probe = keras.Model(
            model.inputs[0], [layer.output for layer in model.layers] + model.outputs
        )
        *outputs, output = probe(inputs.astype("float32"))
        dtype = output.dtype
    except Exception as exc:  # the learner's model: unbuilt, reused layers, ...
        return not_yet(
            f"calling your model layer by layer raised {type(exc).__name__}: {exc} "
            "(build it with keras.Input, each layer used once)"
        )
    kept_low = [layer for layer in low if layer.weights and layer.variable_dtype != "float32"]
    if kept_low:
        layer = kept_low[0]
        return not_yet(
            f"layer {layer.name!r} keeps its weights in {layer.variable_dtype} (a dtype of "
            f"{layer.compute_dtype!r}, not a mixed policy): build it under mixed_bfloat16, which "
            "keeps the weights in float32 and computes in bfloat16"
        )
    weighted = [layer for layer in model.layers if layer.weights]
    hidden = [layer for layer in weighted[:-1] if layer not in low]  # all but the output layer
    if hidden:
        return not_yet(
            f"the hidden layer {hidden[0].name!r} computes in {hidden[0].compute_dtype}: keep it "
            "under mixed_bfloat16, and give float32 only to the output's softmax"
        )
    if dtype != "float32":
        return not_yet(f"the model's output is {dtype}: give its last layer dtype='float32'")
    if not _probabilities(output):
        return not_yet("the output rows do not sum to 1: keep the softmax, computed in float32")
    rounded = None  # the 16-bit layer that made the probabilities, if the last 16-bit one has them
    for index in sorted((model.layers.index(layer) for layer in low), reverse=True):
        if not _probabilities(outputs[index]):
            break
        rounded = index  # earlier 16-bit layers that also return them: the softmax came sooner
    if rounded is not None:  # a float32 layer after it casts a softmax rounded to 16 bits
        layer = model.layers[rounded]
        return not_yet(
            f"layer {layer.name!r} computes its softmax in {layer.compute_dtype}: the output is "
            "float32 only after it; give the layer with the softmax dtype='float32'"
        )
    return correct(
        f"{len(low)} of {len(model.layers)} layers compute in 16 bits, the softmax and the "
        "output in float32"
    )


def _probabilities(tensor: Any) -> bool:
    """Whether every row of ``tensor`` (last axis wider than 1) is non-negative and sums to 1
    within 16-bit rounding."""
    import numpy as np

    try:
        values = np.asarray(tensor, dtype="float64")
    except Exception:  # several tensors of different shapes, say: not one table of rows
        return False
    if values.ndim < 2 or values.shape[-1] < 2:
        return False
    return bool((values >= 0).all() and np.allclose(values.sum(axis=-1), 1.0, atol=2e-2))


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
        # its variables exist before the call, so a tf.function step may trace again
        optimizer.build([w])
        try:
            step(w, tf.fill([1024], tf.constant(value, tf.float16)), optimizer)
        except Exception as exc:  # the learner's code
            try:
                said = str(exc)
            except Exception:  # a learner's exception class with a broken __str__
                said = "(its message could not be read)"
            none = "No gradients provided" in said or "NoneType" in said
            hint = " (a gradient of None: scale the loss inside the GradientTape)" if none else ""
            return not_yet(f"calling your function raised {type(exc).__name__}: {said}{hint}")
        moved, expected = (
            1.0 - float(w.numpy()),
            1000.0 * float(np.float16(value)),
        )  # SGD: w -= lr * mean(x)
        scale = float(optimizer.scale_loss(tf.constant(1.0)))  # the loss scale, 2**15 to start
        if not np.isclose(moved, expected, rtol=0.02):
            hint = ""
            if moved == 0:
                hint = (
                    ": did the step apply the gradient? In float16 it underflows unless the "
                    "loss is scaled, inside the GradientTape"
                )
            elif np.isclose(moved * scale, expected, rtol=0.05):  # float16 rounding: 3 %
                hint = (
                    f": {scale:g} times too short, the loss scale: optimizer.apply divides the "
                    "gradients by it, so give it the gradients of optimizer.scale_loss(loss), "
                    "taken inside the GradientTape, and do not divide them yourself"
                )
            elif np.isclose(moved, expected * scale, rtol=0.02):
                hint = (
                    f": {scale:g} times too far, the loss scale: apply the scaled gradients "
                    "with optimizer.apply, which divides by it"
                )
            return not_yet(
                f"with x = {value:g}, w moved by {moved:.6g}, expected {expected:.6g} (the "
                f"check's optimizer: SGD, learning rate 1000){hint}"
            )
    return correct(
        "w moved by SGD's update both for a gradient too small for float16 and for an ordinary one"
    )
