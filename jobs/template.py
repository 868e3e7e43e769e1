"""A job for the workbook's tuner: copy this file, fill in the two functions, then run
    .venv/bin/python -m helpers.tune my_job.py --budget 10m
or point notebook 16 (16_tune_your_own_job.ipynb) at it. Each trial imports this file in a fresh
process, so keep module level cheap: build things inside the functions, but import at the top
what they need (this file's folder is on the import path only while the file is imported). That
process runs the Python that started the tuner (the workbook's .venv when you run it as above: add
your own packages there), in the workbook's folder, and notebook 16 reads the file from
notebooks/: open your data files by absolute paths or relative to this file
(Path(__file__).parent / "data.npz"), never relative to where Python started.

What the trials keep of your job: the model, the dataset, the loss, the optimizer and the batch
size, compiled and trained with model.fit (verbose=0) for STEPS steps per timed epoch of the
repeated dataset. Each trial sets its own dtype policy (float32, or mixed_bfloat16) after
importing this file, replacing one the file sets, and fixes the seed
(keras.utils.set_random_seed(0)). They leave out your metrics, callbacks, validation data and a
custom training loop; tune those parts of your script by hand once the report says what paid.

Required
    make_model(**MODEL_CHOICES) -> keras.Model
        Build your model, uncompiled (the tuner compiles it, with your loss and optimizer). It is
        called inside the dtype policy a trial sets (mixed_bfloat16, say): give the layer that
        produces the loss's input dtype="float32", as Keras' mixed-precision guide does.
    make_dataset(batch_size, **DATASET_CHOICES) -> tf.data.Dataset
        Batches of (inputs, targets) of batch_size each, for model.fit. Finite datasets are
        repeated.

Optional (the defaults in brackets)
    LOSS                  anything model.compile(loss=...) takes ["sparse_categorical_crossentropy"]
    make_optimizer()      a new optimizer per call [keras.optimizers.Adam(1e-3)]
    BATCH_SIZES           the batch sizes your job may use; the first is its own [[64]]
    STEPS                 training steps per timed epoch [32]
    MODEL_CHOICES, DATASET_CHOICES
                          your own switches, {name: [your value, an alternative, ...]}: the tuner
                          tries each alternative in turn, passing name=value to the function
"""

import keras
import numpy as np
import tensorflow as tf

LOSS = "sparse_categorical_crossentropy"
BATCH_SIZES = [64, 128]
STEPS = 32


def make_model():
    return keras.Sequential(
        [
            keras.Input((32,)),
            keras.layers.Dense(256, activation="relu"),
            keras.layers.Dense(
                10, activation="softmax", dtype="float32"
            ),  # the loss's input in float32
        ]
    )


def make_optimizer():
    return keras.optimizers.Adam(1e-3)


def make_dataset(batch_size):
    rng = np.random.default_rng(0)
    features = rng.normal(size=(4096, 32)).astype("float32")
    labels = (features[:, 0] > 0).astype("int64") + 2 * (
        features[:, 1] > 0
    )  # learnable: 4 of the 10 classes
    return (
        tf.data.Dataset.from_tensor_slices((features, labels))
        .shuffle(4096, seed=0)
        .batch(batch_size)
    )
