"""A small sequence classifier: token ids, an embedding, a GRU and a dense layer, on generated
sequences whose class is set by which tokens they hold, batched with padding to each batch's
longest sequence, as text jobs are.
    .venv/bin/python -m helpers.tune jobs/sequence_model.py --budget 10m
"""

import keras
import numpy as np
import tensorflow as tf

VOCABULARY, CLASSES, SEQUENCES, LONGEST = 2000, 4, 4096, 64
LOSS = "sparse_categorical_crossentropy"
BATCH_SIZES = [64, 128, 256]
STEPS = 24


def make_model():
    return keras.Sequential(
        [
            keras.Input((None,), dtype="int32"),
            keras.layers.Embedding(VOCABULARY, 64, mask_zero=True),
            keras.layers.GRU(128),
            keras.layers.Dense(
                CLASSES, activation="softmax", dtype="float32"
            ),  # float32 for the loss
        ]
    )


def make_optimizer():
    return keras.optimizers.Adam(2e-3)


def sequences():
    rng = np.random.default_rng(0)
    for _ in range(SEQUENCES):
        label = int(rng.integers(CLASSES))
        length = int(rng.integers(8, LONGEST + 1))
        tokens = rng.integers(1, VOCABULARY, length)
        tokens[rng.random(length) < 0.3] = (
            1 + label
        )  # the class's own token, in about 30 % of the places
        yield tokens.astype("int32"), label


def make_dataset(batch_size):
    signature = (tf.TensorSpec([None], tf.int32), tf.TensorSpec([], tf.int64))
    return tf.data.Dataset.from_generator(sequences, output_signature=signature).padded_batch(
        batch_size, padded_shapes=([None], [])
    )
