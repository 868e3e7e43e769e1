"""Notebook 14's naive job as a job file: its small CNN on 56x56 crops of generated JPEGs, fed by
Python one image at a time (python_feed). Its own alternatives are the capstone's fixes that only
its author can make: the tf.data pipeline notebook 07 builds, and the fused batch norm of 08.
    .venv/bin/python -m helpers.tune jobs/capstone_naive.py --budget 10m
"""

from pathlib import Path

import keras
import tensorflow as tf

from helpers.lessons.profile_and_tune_a_job import CROP, python_feed
from helpers.lessons.profile_and_tune_a_job import make_model as capstone_model
from helpers.lessons.tune_input_pipeline import make_pipeline
from helpers.topics.tune_input_pipeline import pipelines

LOSS = keras.losses.SparseCategoricalCrossentropy(
    from_logits=True
)  # notebook 14's loss: the model ends in logits
BATCH_SIZES = [64, 128]
STEPS = 32  # 32 x 64 = 2,048 images per timed epoch, as in notebook 14
MODEL_CHOICES = {"fused_batch_norm": [False, True]}
DATASET_CHOICES = {"pipeline": ["python", "tf.data"]}
SHARDS = Path(__file__).resolve().parent.parent / "data" / "generated" / "jobs" / "capstone-2048"


def make_model(fused_batch_norm=False):
    return capstone_model(
        fused_batch_norm, keras.mixed_precision.global_policy().name
    )  # its logits stay float32


def make_optimizer():
    return keras.optimizers.SGD(0.01)  # notebook 14's training step: SGD, learning rate 0.01


def make_dataset(batch_size, pipeline="python"):
    paths = pipelines.make_jpeg_shards(SHARDS, 2048)  # made once, then reused
    if pipeline == "python":
        signature = (
            tf.TensorSpec([None, CROP, CROP, 3], tf.float32),
            tf.TensorSpec([None], tf.int64),
        )
        return tf.data.Dataset.from_generator(
            lambda: python_feed(paths, batch_size), output_signature=signature
        )
    return make_pipeline(
        paths,
        parallel=True,
        vectorized=True,
        interleave=True,
        cache="after_decode",
        prefetch=True,
        batch=batch_size,
    )  # notebook 14's tuned input
