"""An image classifier from keras.applications (MobileNetV2, width 0.35, untrained: weights=None,
so nothing is downloaded) on generated 96x96 images, with a random flip and crop in the input
pipeline, the way a fine-tuning job on a small dataset is often written.
    .venv/bin/python -m helpers.tune jobs/image_classifier.py --budget 10m
"""

import keras
import numpy as np
import tensorflow as tf

SIZE, CLASSES, IMAGES = 96, 10, 1024
LOSS = "sparse_categorical_crossentropy"
BATCH_SIZES = [32, 64]
STEPS = 16


def make_model():
    inputs = keras.Input((SIZE, SIZE, 3))
    features = keras.applications.MobileNetV2(
        input_shape=(SIZE, SIZE, 3), alpha=0.35, include_top=False, weights=None, pooling="avg"
    )(inputs)
    outputs = keras.layers.Dense(CLASSES, activation="softmax", dtype="float32")(
        features
    )  # float32 for the loss
    return keras.Model(inputs, outputs)


def make_optimizer():
    return keras.optimizers.Adam(1e-3)


def augment(image, label):
    image = tf.image.random_flip_left_right(tf.image.convert_image_dtype(image, tf.float32))
    image = tf.image.random_crop(
        tf.image.resize_with_crop_or_pad(image, SIZE + 8, SIZE + 8), [SIZE, SIZE, 3]
    )
    return image * 2.0 - 1.0, label


def make_dataset(batch_size):
    rng = np.random.default_rng(0)
    labels = rng.integers(0, CLASSES, IMAGES)
    images = (
        rng.integers(0, 64, (IMAGES, SIZE, SIZE, 3)) + labels[:, None, None, None] * 19
    ).astype("uint8")
    return (
        tf.data.Dataset.from_tensor_slices((images, labels))
        .shuffle(IMAGES, seed=0)
        .map(augment)
        .batch(batch_size)
    )
