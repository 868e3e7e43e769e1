"""Exercise checks are graders: each is tried with the notebook's stub (fails), its solution
(passes), other correct answers written differently (pass) and typical mistakes, among them the
one the exercise warns about (fail, with a message that names the real problem). A check never
changes what it is given and never lets the learner's exception escape.

Table-driven: one row per answer, ``(id, answer, passes, words the message must hold)``.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOM = Path(__file__).resolve().parent.parent / "data" / "room-example"


def judge(feedback, passes: bool, words: str) -> None:
    assert bool(feedback) is passes, feedback.message
    assert feedback.message.startswith("Correct: " if passes else "Not yet: "), feedback.message
    assert words in feedback.message, feedback.message


# --- 09: an LSTM that takes cuDNN on a GPU ---------------------------------------------------


def _lstm(**kwargs):
    import keras

    return keras.layers.LSTM(64, **kwargs)


def _cudnn_answers():
    import keras
    import tensorflow as tf

    return [
        (
            "stub",
            lambda: _lstm(dropout=0.2, recurrent_dropout=0.2, activation="relu", unroll=True),
            False,
            "recurrent_dropout",
        ),
        ("solution", lambda: _lstm(dropout=0.2), True, "cuDNN"),
        (
            "tf.tanh, tf.sigmoid",
            lambda: _lstm(activation=tf.tanh, recurrent_activation=tf.sigmoid, dropout=0.2),
            True,
            "cuDNN",
        ),
        (
            "keras.ops names",
            lambda: _lstm(
                activation=keras.ops.tanh, recurrent_activation=keras.ops.sigmoid, dropout=0.2
            ),
            True,
            "cuDNN",
        ),
        ("use_cudnn=True", lambda: _lstm(use_cudnn=True, dropout=0.2), True, "cuDNN"),
        ("string activations", lambda: _lstm(activation="tanh", dropout=0.2), True, "cuDNN"),
        ("units changed", lambda: keras.layers.LSTM(32, dropout=0.2), False, "64 units"),
        ("input dropout dropped", lambda: _lstm(), False, "dropout=0.2"),
        ("input dropout changed", lambda: _lstm(dropout=0.5), False, "dropout=0.2"),
        (
            "recurrent dropout (the warned mistake)",
            lambda: _lstm(recurrent_dropout=0.1),
            False,
            "recurrent_dropout=0.1",
        ),
        ("relu", lambda: _lstm(activation="relu"), False, "activation=relu"),
        ("no bias", lambda: _lstm(use_bias=False), False, "use_bias=False"),
        ("a GRU", lambda: keras.layers.GRU(64), False, "pass a keras.layers.LSTM"),
        ("not a layer", lambda: "LSTM(64)", False, "pass a keras.layers.LSTM"),
    ]


@pytest.mark.parametrize(
    "row",
    range(14),
    ids=[
        "stub",
        "solution",
        "tf-names",
        "ops-names",
        "use_cudnn",
        "string-activation",
        "units-changed",
        "dropout-dropped",
        "dropout-changed",
        "recurrent_dropout",
        "relu",
        "no-bias",
        "gru",
        "string",
    ],
)
def test_cudnn_ready_grader(row):
    from helpers.topics.choose_rnn_kernels import rnn

    name, make, passes, words = _cudnn_answers()[row]
    judge(rnn.check_cudnn_ready(make()), passes, words)


def test_cudnn_blockers_know_gru_reset_after():
    import keras

    from helpers.lessons.choose_rnn_kernels import cudnn_blockers

    assert cudnn_blockers(keras.layers.GRU(8)) == []
    assert cudnn_blockers(keras.layers.GRU(8, reset_after=False)) == ["reset_after=False"]


# --- 00: measure the warm-up -----------------------------------------------------------------


def _warmup_answers():
    import tensorflow as tf

    from helpers import timing
    from helpers.lessons.start_here import small_ops_chain

    x = tf.ones([8, 8])

    def new_function():
        return tf.function(lambda t: small_ops_chain(t, 300))

    def solution():
        chain = new_function()
        return timing.time_once(chain, x), timing.measure(chain, x, repeats=10)

    def first_call_by_hand():  # another correct spelling: perf_counter around the first call
        import time

        chain = new_function()
        start = time.perf_counter()
        chain(x).numpy()
        return time.perf_counter() - start, timing.measure(chain, x, repeats=12)

    def already_traced():  # the mistake the check names: the function was called before, so the
        # "first" call is a steady one. Its time is set to 1.5 steady medians rather than measured:
        # one call is one sample, and on a loaded machine one sample can take 20 medians (seen in
        # CI).
        chain = new_function()
        chain(x)
        steady = timing.measure(chain, x, repeats=10)
        return 1.5 * steady.median, steady

    def too_few_repeats():
        chain = new_function()
        return timing.time_once(chain, x), timing.measure(chain, x, repeats=3)

    def with_tf_timestamp():  # TensorFlow's own clock: a scalar tensor of seconds
        chain = new_function()
        start = tf.timestamp()
        chain(x).numpy()
        return tf.timestamp() - start, timing.measure(chain, x, repeats=10)

    def in_nanoseconds():
        import time

        chain = new_function()
        start = time.perf_counter_ns()
        chain(x).numpy()
        return time.perf_counter_ns() - start, timing.measure(chain, x, repeats=10)

    return [
        ("stub", lambda: (None, None), False, "first must be the seconds"),
        (
            "tf.timestamp",
            with_tf_timestamp,
            True,
            "it traced the function and ran the traced graph",
        ),
        ("nanoseconds", in_nanoseconds, False, "are both in seconds?"),
        (
            "a NumPy bool",
            lambda: (__import__("numpy").True_, solution()[1]),
            False,
            "first must be the seconds",
        ),
        (
            "a Timing of zeros",
            lambda: (0.1, timing.Timing("f", (0.0,) * 10)),
            False,
            "not a time in seconds",
        ),
        (
            "a Timing of strings",
            lambda: (0.1, timing.Timing("f", ("a",) * 10)),
            False,
            "not a time in seconds",
        ),
        ("solution", solution, True, "it traced the function and ran the traced graph"),
        (
            "perf_counter by hand",
            first_call_by_hand,
            True,
            "it traced the function and ran the traced graph",
        ),
        ("already traced", already_traced, False, "already traced"),
        ("three repeats", too_few_repeats, False, "repeats=10"),
        ("a string", lambda: ("0.5 s", None), False, "first must be the seconds"),
        ("NaN", lambda: (math.nan, None), False, "first must be the seconds"),
    ]


WARMUP_IDS = ["stub", "tf-timestamp", "nanoseconds", "numpy-bool", "zeros", "strings", "solution"]
WARMUP_IDS += ["perf_counter", "already-traced", "three-repeats", "string", "nan"]


@pytest.mark.parametrize("row", range(len(WARMUP_IDS)), ids=WARMUP_IDS)
def test_warmup_grader(row):
    from helpers.topics.start_here import start

    name, answer, passes, words = _warmup_answers()[row]
    judge(start.check_warmup(*answer()), passes, words)


# --- 15: the comparison that varies most between machines -------------------------------------


@pytest.fixture(scope="module")
def speedups():
    from helpers.topics.compare_the_room import gather

    return gather.room_table(ROOM)


def _most_varied_answers():
    import numpy as np

    def stub(table): ...

    def solution(table):
        ratio = table.max(axis=1) / table.min(axis=1)
        return ratio.idxmax()

    def adds_a_column(table):  # correct, but changes what it is given
        table["ratio"] = table.max(axis=1) / table.min(axis=1)
        return table["ratio"].idxmax()

    def by_loop(table):
        best, best_ratio = None, 0.0
        for name, row in table.iterrows():
            values = [v for v in row if v == v]
            if values and max(values) / min(values) > best_ratio:
                best, best_ratio = name, max(values) / min(values)
        return best

    def difference(table):  # a mistake: max - min is not the ratio
        return (table.max(axis=1) - table.min(axis=1)).idxmax()

    def first_machine(table):  # a mistake: one machine's largest speed-up
        return table.iloc[:, 0].idxmax()

    def raises(table):
        return table["no such column"].idxmax()

    def returns_the_series(table):
        return table.max(axis=1) / table.min(axis=1)

    def typed_in(table):  # a mistake: this room's answer, typed in
        return "train_in_mixed_precision.float32_vs_bfloat16"

    def lowest_speedup(table):  # a mistake: the row with the smallest speed-up (here the same row)
        return table.min(axis=1).idxmin()

    def other(measure):  # a mistake: another measure of spread, equal on the room's own table
        return lambda table: measure(table).idxmax()

    def machine(table):  # a mistake: the machine whose speed-ups vary most
        return (table.max() / table.min()).idxmax()

    def builtin_max(table):  # a mistake: Python's max and min keep a NaN that comes first
        return table.apply(lambda row: max(row) / min(row), axis=1).idxmax()

    def sorted_last(table):  # correct: another spelling
        return (table.max(axis=1) / table.min(axis=1)).sort_values().index[-1]

    return [
        ("stub", stub, False, "got NoneType"),
        ("solution", solution, True, "varies most"),
        ("adds a column", adds_a_column, True, "varies most"),
        ("a loop", by_loop, True, "varies most"),
        ("max minus min", difference, False, "largest max/min ratio"),
        ("one machine", first_machine, False, "largest max/min ratio"),
        ("raises", raises, False, "calling your function raised KeyError"),
        ("the ratios, not a name", returns_the_series, False, "got Series"),
        ("typed in", typed_in, False, "not a row of this table"),
        ("lowest speed-up", lowest_speedup, False, "without the row"),
        ("std/mean", other(lambda t: t.std(axis=1) / t.mean(axis=1)), False, "made-up room"),
        ("max/mean", other(lambda t: t.max(axis=1) / t.mean(axis=1)), False, "made-up room"),
        ("mean/min", other(lambda t: t.mean(axis=1) / t.min(axis=1)), False, "made-up room"),
        (
            "range/mean",
            other(lambda t: (t.max(axis=1) - t.min(axis=1)) / t.mean(axis=1)),
            False,
            "made-up room",
        ),
        (
            "gaps dropped",
            other(lambda t: t.dropna().max(axis=1) / t.dropna().min(axis=1)),
            False,
            "made-up",
        ),
        (
            "gaps filled",
            other(lambda t: t.fillna(1.0).max(axis=1) / t.fillna(1.0).min(axis=1)),
            False,
            "made-up",
        ),
        ("a machine's name", machine, False, "a machine (a column)"),
        ("spread of the logs", other(lambda t: np.log(t).std(axis=1)), False, "made-up room"),
        ("builtin max and min", builtin_max, False, "machines in another order"),
        ("sorted, the last", sorted_last, True, "varies most"),
    ]


@pytest.mark.parametrize(
    "row",
    range(20),
    ids=[
        "stub",
        "solution",
        "adds-column",
        "loop",
        "difference",
        "one-machine",
        "raises",
        "series",
        "typed-in",
        "lowest-speedup",
        "std-mean",
        "max-mean",
        "mean-min",
        "range-mean",
        "dropna",
        "fillna",
        "machine",
        "log-std",
        "builtin-max",
        "sorted-last",
    ],
)
def test_most_varied_grader(row, speedups):
    from helpers.topics.compare_the_room import gather

    before = speedups.copy()
    name, fn, passes, words = _most_varied_answers()[row]
    judge(gather.check_most_varied(fn, speedups), passes, words)
    assert speedups.equals(before) and list(speedups.columns) == list(
        before.columns
    )  # the table is untouched


# --- 07: cache after the decode, augment after the cache --------------------------------------


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    from helpers.topics.tune_input_pipeline import pipelines

    return pipelines.make_jpeg_shards(tmp_path_factory.mktemp("jpeg"), 64, n_shards=2)


def _pipeline_answers():
    import tensorflow as tf

    from helpers.lessons.tune_input_pipeline import (
        augment_random,
        augment_stateless,
        decode_record,
    )

    auto = tf.data.AUTOTUNE

    def stub(paths, decode=decode_record):  # the notebook's bad_pipeline
        return tf.data.TFRecordDataset(paths).map(decode).map(augment_random).cache().batch(64)

    def solution(paths, decode=decode_record):
        dataset = tf.data.TFRecordDataset(paths).map(decode, num_parallel_calls=auto).cache()
        return dataset.map(augment_random, num_parallel_calls=auto).batch(64)

    def without_decode_argument(paths):  # correct, and ignores the injected decode
        dataset = tf.data.TFRecordDataset(paths).map(decode_record, num_parallel_calls=auto).cache()
        return dataset.map(augment_random, num_parallel_calls=auto).batch(32).prefetch(auto)

    def decode_by_hand(paths, decode=None):  # correct: its own parse and tf.image.decode_jpeg
        spec = {
            "image": tf.io.FixedLenFeature([], tf.string),
            "label": tf.io.FixedLenFeature([], tf.int64),
        }

        def parse(raw):
            parsed = tf.io.parse_single_example(raw, spec)
            return tf.image.decode_jpeg(parsed["image"], channels=3), parsed["label"]

        dataset = tf.data.TFRecordDataset(paths).map(parse, num_parallel_calls=auto).cache()
        return dataset.map(augment_random, num_parallel_calls=auto).batch(16)

    def decode_image(paths, decode=None):  # correct: tf.io.decode_image instead of decode_jpeg
        spec = {
            "image": tf.io.FixedLenFeature([], tf.string),
            "label": tf.io.FixedLenFeature([], tf.int64),
        }

        def parse(raw):
            parsed = tf.io.parse_single_example(raw, spec)
            image = tf.io.decode_image(parsed["image"], channels=3, expand_animations=False)
            return image, parsed["label"]

        dataset = tf.data.TFRecordDataset(paths).map(parse, num_parallel_calls=auto).cache()
        return dataset.map(augment_random, num_parallel_calls=auto).batch(64)

    def sequential(paths, decode=decode_record):  # the right order, maps not parallel
        return tf.data.TFRecordDataset(paths).map(decode).cache().map(augment_random).batch(64)

    def shuffled_before_cache(paths, decode=decode_record):  # the cache freezes the first order
        dataset = tf.data.TFRecordDataset(paths).map(decode, num_parallel_calls=auto)
        dataset = dataset.shuffle(64).cache()
        return dataset.map(augment_random, num_parallel_calls=auto).batch(64)

    def files_shuffled(paths, decode=decode_record):  # the Summary idiom's order: a file shuffle
        files = tf.data.Dataset.list_files(paths)  # shuffles the file names (shuffle=True)
        dataset = files.interleave(tf.data.TFRecordDataset, num_parallel_calls=auto)
        dataset = dataset.map(decode, num_parallel_calls=auto).cache().shuffle(1_000)
        return dataset.map(augment_random, num_parallel_calls=auto).batch(64)

    def one_thread(paths, decode=decode_record):  # num_parallel_calls=1: still one thread
        dataset = tf.data.TFRecordDataset(paths).map(decode, num_parallel_calls=1).cache()
        return dataset.map(augment_random, num_parallel_calls=auto).batch(64)

    def unbatched(paths, decode=decode_record):  # forgets .batch
        dataset = tf.data.TFRecordDataset(paths).map(decode, num_parallel_calls=auto).cache()
        return dataset.map(augment_random, num_parallel_calls=auto)

    def seeds_repeat(paths, decode=decode_record):  # stateless, seeds replayed every epoch
        dataset = tf.data.TFRecordDataset(paths).map(decode, num_parallel_calls=auto).cache()
        seeds = tf.data.Dataset.random(seed=1).batch(2)  # no rerandomize_each_iteration=True
        both = tf.data.Dataset.zip(dataset, seeds)
        return both.map(augment_stateless, num_parallel_calls=auto).batch(64)

    def cached_augmentation_shuffled(
        paths, decode=decode_record
    ):  # the warned bug, hidden by a shuffle
        dataset = tf.data.TFRecordDataset(paths).map(decode).map(augment_random).cache()
        return dataset.shuffle(64).batch(64)

    def no_cache(paths, decode=decode_record):  # decodes every epoch
        return tf.data.TFRecordDataset(paths).map(decode).map(augment_random).batch(64)

    def raw_bytes_cached(paths, decode=decode_record):  # caches before the decode
        return tf.data.TFRecordDataset(paths).cache().map(decode).map(augment_random).batch(64)

    def raises(paths, decode=decode_record):
        raise ValueError("not written yet")

    spec = {
        "image": tf.io.FixedLenFeature([], tf.string),
        "label": tf.io.FixedLenFeature([], tf.int64),
    }
    jpeg = tf.io.decode_jpeg  # bound before the check runs: its calls go uncounted

    def parse_bound(raw):
        parsed = tf.io.parse_single_example(raw, spec)
        return jpeg(parsed["image"], channels=3), parsed["label"]

    def bound_decode(paths, decode=None):  # correct, with a decode function bound beforehand
        dataset = tf.data.TFRecordDataset(paths).map(parse_bound, num_parallel_calls=auto).cache()
        return dataset.map(augment_random, num_parallel_calls=auto).batch(64)

    def bound_decode_after_cache(paths, decode=None):  # bound, and decoding every epoch
        dataset = tf.data.TFRecordDataset(paths).cache().map(parse_bound, num_parallel_calls=auto)
        return dataset.map(augment_random, num_parallel_calls=auto).batch(64)

    def crop_while_decoding(paths, decode=None):  # correct: decode_and_crop_jpeg, a 60x60 window
        def parse(raw):
            parsed = tf.io.parse_single_example(raw, spec)
            window = [2, 2, 60, 60]  # crop_y, crop_x, height, width: the same window every epoch
            return tf.io.decode_and_crop_jpeg(parsed["image"], window, channels=3), parsed["label"]

        dataset = tf.data.TFRecordDataset(paths).map(parse, num_parallel_calls=auto).cache()
        return dataset.map(augment_random, num_parallel_calls=auto).batch(64)

    def crop_cached(paths, decode=decode_record):  # the crop before the cache, the flip after it
        def crop(image, label):
            return tf.image.random_crop(image, [56, 56, 3]), label

        def flip(image, label):
            return tf.cast(tf.image.random_flip_left_right(image), tf.float32) / 127.5 - 1.0, label

        dataset = tf.data.TFRecordDataset(paths).map(decode, num_parallel_calls=auto)
        dataset = dataset.map(crop, num_parallel_calls=auto).cache()
        return dataset.map(flip, num_parallel_calls=auto).batch(64)

    def flip_cached(paths, decode=decode_record):  # the flip before the cache, the crop after it
        def flip(image, label):
            return tf.image.random_flip_left_right(image), label

        def crop(image, label):
            return tf.cast(
                tf.image.random_crop(image, [56, 56, 3]), tf.float32
            ) / 127.5 - 1.0, label

        dataset = tf.data.TFRecordDataset(paths).map(decode, num_parallel_calls=auto)
        dataset = dataset.map(flip, num_parallel_calls=auto).cache()
        return dataset.map(crop, num_parallel_calls=auto).batch(64)

    return [
        ("stub", stub, False, "augmentation before the cache"),
        ("solution", solution, True, "fresh augmentation"),
        ("ignores decode=", without_decode_argument, True, "fresh augmentation"),
        ("tf.image.decode_jpeg by hand", decode_by_hand, True, "fresh augmentation"),
        (
            "cached augmentation, shuffled",
            cached_augmentation_shuffled,
            False,
            "augmentation before the cache",
        ),
        ("no cache", no_cache, False, "128 JPEG decodes"),
        ("raw bytes cached", raw_bytes_cached, False, "128 JPEG decodes"),
        ("raises", raises, False, "calling your function raised ValueError: not written yet"),
        ("tf.io.decode_image", decode_image, True, "fresh augmentation"),
        ("maps not parallel", sequential, False, "2 map(s) without parallel calls"),
        ("shuffle before the cache", shuffled_before_cache, False, "shuffle before the cache"),
        ("no batch", unbatched, False, "end the pipeline with .batch(64)"),
        ("stateless seeds replayed", seeds_repeat, False, "rerandomize_each_iteration=True"),
        ("file names shuffled, then the cache", files_shuffled, True, "fresh augmentation"),
        ("num_parallel_calls=1", one_thread, False, "1 map(s) without parallel calls"),
        ("decode bound beforehand", bound_decode, True, "decoding before the cache (read from"),
        ("bound, after the cache", bound_decode_after_cache, False, "no cache holds"),
        ("decode_and_crop_jpeg", crop_while_decoding, True, "64 decodes"),
        ("crop cached, flip after", crop_cached, False, "a random op runs before the cache"),
        ("flip cached, crop after", flip_cached, False, "a random op runs before the cache"),
    ]


@pytest.mark.parametrize(
    "row",
    range(20),
    ids=[
        "stub",
        "solution",
        "no-decode-arg",
        "decode-by-hand",
        "cached-aug-shuffled",
        "no-cache",
        "raw-cached",
        "raises",
        "decode-image",
        "sequential",
        "shuffle-before-cache",
        "no-batch",
        "seeds-replayed",
        "files-shuffled",
        "one-thread",
        "bound-decode",
        "bound-after-cache",
        "decode-and-crop",
        "crop-cached",
        "flip-cached",
    ],
)
def test_reordered_grader(row, shards):
    import tensorflow as tf

    from helpers.topics.tune_input_pipeline import pipelines

    given = list(shards)
    name, make, passes, words = _pipeline_answers()[row]
    judge(pipelines.check_reordered(make, given, 64), passes, words)
    assert given == shards  # the check did not change the list it was given
    assert tf.io.decode_jpeg is tf.image.decode_jpeg and "counted" not in tf.io.decode_jpeg.__name__
    assert "counted" not in tf.io.decode_image.__name__
    assert "counted" not in tf.io.decode_and_crop_jpeg.__name__


def test_reordered_grader_counts_repeated_images_where_it_cannot_read_the_graph(
    shards, monkeypatch
):
    """Without a graph to read, a cached crop still shows: about half of the second epoch's
    images (those flipped the same way again) were in the first."""
    from helpers.topics.tune_input_pipeline import pipeline_check, pipelines

    monkeypatch.setattr(pipeline_check, "dataset_graph", lambda dataset: None)
    answers = {row[0]: row for row in _pipeline_answers()}
    judge(
        pipelines.check_reordered(answers["crop cached, flip after"][1], list(shards), 64),
        False,
        "part of the augmentation is cached",
    )
    judge(
        pipelines.check_reordered(answers["solution"][1], list(shards), 64),
        True,
        "fresh augmentation",
    )


def test_reordered_grader_explains_a_cache_file_from_an_earlier_run(shards, tmp_path):
    import tensorflow as tf

    from helpers.lessons.tune_input_pipeline import augment_random, decode_record
    from helpers.topics.tune_input_pipeline import pipelines

    def to_file(paths, decode=decode_record):  # correct, caching to a file
        dataset = tf.data.TFRecordDataset(paths).map(decode, num_parallel_calls=tf.data.AUTOTUNE)
        dataset = dataset.cache(str(tmp_path / "decoded"))
        return dataset.map(augment_random, num_parallel_calls=tf.data.AUTOTUNE).batch(64)

    judge(pipelines.check_reordered(to_file, shards, 64), True, "fresh augmentation")
    judge(pipelines.check_reordered(to_file, shards, 64), False, "cache file from an earlier run")

    jpeg = tf.io.decode_jpeg  # bound beforehand: no decode is counted, even in the first run

    def bound_to_file(paths, decode=None):
        def parse(raw):
            parsed = tf.io.parse_single_example(
                raw, {"image": tf.io.FixedLenFeature([], tf.string)}
            )
            return jpeg(parsed["image"], channels=3), 0

        dataset = tf.data.TFRecordDataset(paths).map(parse, num_parallel_calls=tf.data.AUTOTUNE)
        dataset = dataset.cache(str(tmp_path / "bound"))
        return dataset.map(augment_random, num_parallel_calls=tf.data.AUTOTUNE).batch(64)

    judge(pipelines.check_reordered(bound_to_file, shards, 64), True, "read from the graph")
    judge(pipelines.check_reordered(bound_to_file, shards, 64), False, "cache file from an earlier")


def test_reordered_grader_reads_the_graph_where_no_decode_was_counted(shards, monkeypatch):
    import tensorflow as tf

    from helpers.lessons.tune_input_pipeline import augment_random, decode_record
    from helpers.topics.tune_input_pipeline import pipeline_check, pipelines

    auto = tf.data.AUTOTUNE
    decoded = tf.data.TFRecordDataset(shards).map(decode_record, num_parallel_calls=auto).cache()
    for _ in decoded:  # an earlier cell read it: its cache is full, no decode left to count
        pass

    def reuses_a_filled_cache(paths, decode=None):  # the right order, but not built from paths
        return decoded.map(augment_random, num_parallel_calls=auto).batch(64)

    judge(pipelines.check_reordered(reuses_a_filled_cache, shards, 64), False, "built and cached")

    jpeg = tf.io.decode_jpeg  # bound beforehand: uncounted

    def bound_without_cache(paths, decode=None):
        def parse(raw):
            parsed = tf.io.parse_single_example(
                raw, {"image": tf.io.FixedLenFeature([], tf.string)}
            )
            return jpeg(parsed["image"], channels=3), 0

        dataset = tf.data.TFRecordDataset(paths).map(parse, num_parallel_calls=auto)
        return dataset.map(augment_random, num_parallel_calls=auto).batch(64)

    judge(pipelines.check_reordered(bound_without_cache, shards, 64), False, "no cache holds")

    def unreadable(*args, **kwargs):
        raise OSError(36, "File name too long")  # Path.exists on an over-long cache file name

    monkeypatch.setattr(pipeline_check, "_decodes_in_graph", unreadable)  # feedback, not a raise
    judge(pipelines.check_reordered(bound_without_cache, shards, 64), False, "cache file from")


# --- 01: the graph of z = x @ w + b -------------------------------------------------------------


def _graph(body, x_shape=(None, 3), w_shape=(3, 2), with_default=False):
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        x = (
            tf.compat.v1.placeholder_with_default(tf.zeros([1, 3]), list(x_shape), name="x")
            if with_default
            else tf.compat.v1.placeholder(tf.float32, list(x_shape), name="x")
        )
        w = tf.Variable(tf.zeros(list(w_shape)), name="w")
        body(tf, x, w)
    return graph


AFFINE = [
    ("stub", lambda: None, False, "must be a tf.Graph"),
    (
        "x a placeholder with a default",
        lambda: _graph(lambda tf, x, w: x @ w + tf.constant([1.0, 2.0]), with_default=True),
        True,
        "ops",
    ),
    (
        "b a second placeholder",
        lambda: _graph(lambda tf, x, w: x @ w + tf.compat.v1.placeholder(tf.float32, [2])),
        False,
        "the add's other input must be the constant b",
    ),
    (
        "x @ w added to itself",
        lambda: _graph(lambda tf, x, w: x @ w + x @ w),
        False,
        "the add's other input must be the constant b",
    ),
    (
        "solution",
        lambda: _graph(lambda tf, x, w: tf.matmul(x, w) + tf.constant([1.0, 2.0])),
        True,
        "ops",
    ),
    (
        "bias_add",
        lambda: _graph(lambda tf, x, w: tf.nn.bias_add(x @ w, tf.constant([1.0, 2.0]))),
        True,
        "ops",
    ),
    (
        "einsum and tf.add",
        lambda: _graph(lambda tf, x, w: tf.add(tf.einsum("ij,jk->ik", x, w), 1.0)),
        True,
        "ops",
    ),
    ("no add", lambda: _graph(lambda tf, x, w: x @ w), False, "missing an add"),
    (
        "x of the wrong shape",
        lambda: _graph(lambda tf, x, w: x @ w + 1.0, x_shape=[None, 2], w_shape=[2, 2]),
        False,
        "x must have shape [None, 3]",
    ),
    (
        "w of the wrong shape",
        lambda: _graph(lambda tf, x, w: x @ w + 1.0, w_shape=[3, 3]),
        False,
        "w must have shape [3, 2]",
    ),
    (
        "multiply, not matmul",
        lambda: _graph(lambda tf, x, w: x[:, :2] * w[0] + 1.0),
        False,
        "missing a matmul",
    ),
    (
        "eager, not a graph",
        lambda: __import__("tensorflow").constant(1.0),
        False,
        "must be a tf.Graph",
    ),
    (
        "w @ x, the operands swapped",
        lambda: _graph(lambda tf, x, w: tf.matmul(w, x) + 0.5),
        False,
        "is it x @ w, not w @ x?",
    ),
    (
        "x unused",
        lambda: _graph(lambda tf, x, w: tf.matmul(tf.ones([1, 3]), w) + tf.reduce_sum(x)),
        False,
        "the matmul must multiply x by w",
    ),
    (
        "einsum with w written first",
        lambda: _graph(lambda tf, x, w: tf.einsum("jk,ij->ik", w, x) + tf.constant([1.0, 2.0])),
        True,
        "ops",
    ),
    (
        "tensordot",
        lambda: _graph(lambda tf, x, w: tf.tensordot(x, w, 1) + tf.constant([1.0, 2.0])),
        True,
        "ops",
    ),
    (
        "b from a one-operand einsum",
        lambda: _graph(lambda tf, x, w: x @ w + tf.einsum("ij->j", tf.ones([3, 2]))),
        True,
        "ops",
    ),
    (
        "b a variable",
        lambda: _graph(lambda tf, x, w: x @ w + tf.Variable([1.0, 2.0], name="b")),
        False,
        "only w is one; b is a constant",
    ),
    (
        "the add beside the matmul",
        lambda: _graph(lambda tf, x, w: [x @ w, tf.constant(1.0) + 2.0][0]),
        False,
        "the add must take the matmul's result",
    ),
]


@pytest.mark.parametrize("row", range(len(AFFINE)), ids=[row[0] for row in AFFINE])
def test_affine_graph_grader(row):
    from helpers.topics.look_inside_graphs import graphs

    name, make, passes, words = AFFINE[row]
    judge(graphs.check_affine_graph(make()), passes, words)


def _table(rows):
    import pandas as pd

    return pd.DataFrame(rows, columns=["op", "type", "device"])


# --- 04: two towers summed with add_n on CPU:0 (real answers, in a child with four logical CPUs) --

#: The exercise's solution, as notebook 04 holds it.
TOWERS_SOLUTION = """
@tf.function
def my_towers(batch):
    parts = []
    for device, piece in zip(["/CPU:2", "/CPU:3"], tf.split(batch, 2)):
        with tf.device(device):
            parts.append(tf.matmul(piece, piece, transpose_a=True))
    with tf.device("/CPU:0"):
        return tf.add_n(parts)
"""

#: The answers, as a learner writes them: each defines my_towers (and may call it first).
TOWER_ANSWERS = {
    "stub": """
def my_towers(batch):
    ...
""",
    "solution": TOWERS_SOLUTION,
    "slices, transpose first, lower-case devices": """
@tf.function
def my_towers(batch):
    half = batch.shape[0] // 2
    with tf.device("/cpu:2"):
        a = tf.matmul(tf.transpose(batch[:half]), batch[:half])
    with tf.device("/device:CPU:3"):
        b = tf.matmul(tf.transpose(batch[half:]), batch[half:])
    with tf.device("/cpu:0"):
        return tf.add_n([a, b])
""",
    "einsum towers": """
@tf.function
def my_towers(batch):
    a, b = tf.split(batch, 2)
    with tf.device("/CPU:2"):
        a = tf.einsum("bi,bj->ij", a, a)
    with tf.device("/CPU:3"):
        b = tf.einsum("bi,bj->ij", b, b)
    with tf.device("/CPU:0"):
        return tf.add_n([a, b])
""",
    "no split: the whole batch on both devices, halved": """
@tf.function
def my_towers(batch):
    with tf.device("/CPU:2"):
        a = tf.matmul(batch, batch, transpose_a=True)
    with tf.device("/CPU:3"):
        b = tf.matmul(batch, batch, transpose_a=True)
    with tf.device("/CPU:0"):
        return tf.add_n([a, b]) / 2
""",
    "add_n not pinned": """
@tf.function
def my_towers(batch):
    parts = []
    for device, piece in zip(["/CPU:2", "/CPU:3"], tf.split(batch, 2)):
        with tf.device(device):
            parts.append(tf.matmul(piece, piece, transpose_a=True))
    return tf.add_n(parts)
""",
    "split in three (512 rows do not divide)": """
@tf.function
def my_towers(batch):
    a, b, c = tf.split(batch, 3)
    with tf.device("/CPU:2"):
        a = tf.matmul(a, a, transpose_a=True)
    with tf.device("/CPU:3"):
        b = tf.matmul(b, b, transpose_a=True)
    with tf.device("/CPU:0"):
        return tf.add_n([a, b])
""",
    ".numpy() inside the tf.function": """
@tf.function
def my_towers(batch):
    a, b = tf.split(batch, 2)
    with tf.device("/CPU:2"):
        a = tf.matmul(a, a, transpose_a=True).numpy()
    with tf.device("/CPU:3"):
        b = tf.matmul(b, b, transpose_a=True)
    with tf.device("/CPU:0"):
        return tf.add_n([a, b])
""",
    "eager (no tf.function)": """
def my_towers(batch):
    a, b = tf.split(batch, 2)
    with tf.device("/CPU:2"):
        a = tf.matmul(a, a, transpose_a=True)
    with tf.device("/CPU:3"):
        b = tf.matmul(b, b, transpose_a=True)
    with tf.device("/CPU:0"):
        return tf.add_n([a, b])
""",
    "one tower": """
@tf.function
def my_towers(batch):
    a, b = tf.split(batch, 2)
    with tf.device("/CPU:2"):
        a = tf.matmul(a, a, transpose_a=True)
        b = tf.matmul(b, b, transpose_a=True)
    with tf.device("/CPU:0"):
        return tf.add_n([a, b])
""",
    "sum on a tower's device": """
@tf.function
def my_towers(batch):
    a, b = tf.split(batch, 2)
    with tf.device("/CPU:2"):
        a = tf.matmul(a, a, transpose_a=True)
    with tf.device("/CPU:3"):
        b = tf.matmul(b, b, transpose_a=True)
        return tf.add_n([a, b])
""",
    "one half twice": """
@tf.function
def my_towers(batch):
    a, _ = tf.split(batch, 2)
    with tf.device("/CPU:2"):
        x = tf.matmul(a, a, transpose_a=True)
    with tf.device("/CPU:3"):
        y = tf.matmul(a, a, transpose_a=True)
    with tf.device("/CPU:0"):
        return tf.add_n([x, y])
""",
    "a list returned": """
@tf.function
def my_towers(batch):
    a, b = tf.split(batch, 2)
    with tf.device("/CPU:2"):
        a = tf.matmul(a, a, transpose_a=True)
    with tf.device("/CPU:3"):
        b = tf.matmul(b, b, transpose_a=True)
    return [a, b]
""",
    "checked twice (the function already placed)": TOWERS_SOLUTION
    + "towers.check_towers(my_towers, batch, log)\n",
    "called once before the check": TOWERS_SOLUTION + "my_towers(batch)\n",
    "compiled with XLA (one cluster: no towers)": TOWERS_SOLUTION.replace(
        "@tf.function", "@tf.function(jit_compile=True)"
    )
    + "my_towers(batch)\n",
    "a wrapper around a tf.function": TOWERS_SOLUTION.replace("def my_towers", "def inner")
    + "def my_towers(batch):\n    return inner(batch)\n",
    "not a function": """
my_towers = None
""",
}

#: (answer, passes, words the message must hold)
TOWERS = [
    ("stub", False, "my_towers returned nothing: return the tf.add_n"),
    ("solution", True, "towers on CPU:2, CPU:3, summed on CPU:0"),
    ("slices, transpose first, lower-case devices", True, "towers on CPU:2, CPU:3"),
    ("einsum towers", True, "towers on CPU:2, CPU:3"),
    ("no split: the whole batch on both devices, halved", False, "takes the whole batch"),
    ("add_n not pinned", False, "the add_n is not pinned"),
    ("split in three (512 rows do not divide)", False, "calling my_towers(batch) raised"),
    (".numpy() inside the tf.function", False, "calling my_towers(batch) raised"),
    ("eager (no tf.function)", False, "make my_towers a tf.function"),
    ("one tower", False, "put one tower on CPU:2 and the other on CPU:3"),
    ("sum on a tower's device", False, "not on CPU:0"),
    ("one half twice", False, "differs from batch^T batch"),
    ("a list returned", False, "returned a list, not a tensor"),
    ("checked twice (the function already placed)", True, "towers on CPU:2, CPU:3"),
    ("called once before the check", True, "towers on CPU:2, CPU:3"),
    ("compiled with XLA (one cluster: no towers)", False, "leave jit_compile off"),
    ("a wrapper around a tf.function", False, "make my_towers itself the tf.function"),
    ("not a function", False, "pass your function my_towers itself, got NoneType"),
]

TOWERS_CHILD = textwrap.dedent("""
    import json, sys
    from helpers import fdlog
    import tensorflow as tf
    tf.debugging.set_log_device_placement(True)  # as notebook 04's Setup: before any op
    log = fdlog.start_logging()
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 4)
    from helpers.topics.split_work_into_towers import towers
    batch = tf.random.stateless_normal([512, 512], seed=(4, 2))  # the notebook's
    kept = batch.numpy().copy()
    answers = json.loads(open(sys.argv[1]).read())
    with open(sys.argv[2], "w") as out:  # not stdout: the placement log holds fd 1 and 2
        for name, source in answers:
            space = {"tf": tf, "towers": towers, "batch": batch, "log": log}
            exec(source, space)
            fn = space["my_towers"]
            count = getattr(fn, "experimental_get_tracing_count", lambda: None)
            traces = count()
            feedback = towers.check_towers(fn, batch, log)
            unchanged = bool((batch.numpy() == kept).all())
            out.write(json.dumps({"name": name, "ok": bool(feedback), "message": feedback.message,
                                  "batch unchanged": unchanged,
                                  "traces unchanged": count() == traces}) + "\\n")
""")


def test_check_towers_grader_table(tmp_path):  # in a child: four logical CPUs
    answers, results = tmp_path / "answers.json", tmp_path / "results.jsonl"
    answers.write_text(json.dumps([(name, TOWER_ANSWERS[name]) for name, _, _ in TOWERS]))
    done = subprocess.run(
        [sys.executable, "-c", TOWERS_CHILD, str(answers), str(results)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "0"},  # the placement lines are INFO
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert [row["name"] for row in rows] == [name for name, _, _ in TOWERS]
    for (name, passes, words), row in zip(TOWERS, rows, strict=True):
        assert row["ok"] is passes, (name, row["message"])
        assert row["message"].startswith("Correct: " if passes else "Not yet: "), (name, row)
        assert words in row["message"], (name, row["message"])
        assert row["batch unchanged"], name
        assert row["traces unchanged"], name  # the check traces a copy, not the learner's function


def test_towers_grader_refuses_a_log_that_is_not_one():
    from helpers.topics.split_work_into_towers import towers

    judge(towers.check_towers(lambda b: b, [1.0], None), False, "pass the notebook's placement log")


# --- 01: a training step as a tf.function -------------------------------------------------------


def _training_answers(v):
    import keras
    import tensorflow as tf

    sgd = keras.optimizers.SGD(0.1)

    def stub(): ...

    @tf.function
    def solution():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(v - 3.0))
        sgd.apply_gradients([(tape.gradient(loss, v), v)])
        return loss

    @tf.function
    def by_hand():  # another spelling: the update written out, a mean instead of a sum
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(v - 3.0))
        v.assign_sub(0.2 * tape.gradient(loss, v))
        return loss

    @tf.function
    def adam():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(v - 3.0))
        keras_adam.apply([tape.gradient(loss, v)], [v])
        return loss

    keras_adam = keras.optimizers.Adam(0.5)
    slow = keras.optimizers.SGD(0.01)

    @tf.function
    def small_rate():  # a mistake: SGD, but not the learning rate asked for
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(v - 3.0))
        slow.apply_gradients([(tape.gradient(loss, v), v)])
        return loss

    def eager():  # the mistake the exercise is about: not a tf.function
        return tf.reduce_sum(tf.square(v - 3.0))

    @tf.function
    def ascends():  # a sign error: the loss grows
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(v - 3.0))
        v.assign_add(0.1 * tape.gradient(loss, v))
        return loss

    @tf.function
    def frozen():  # a mistake: computes the loss, never updates v
        return tf.reduce_sum(tf.square(v - 3.0))

    @tf.function
    def no_tape():  # a mistake: the right update, but the exercise is the tape
        loss = tf.reduce_sum(tf.square(v - 3.0))
        v.assign_sub(0.2 * (v - 3.0))
        return loss

    @tf.function
    def never_applied():  # a mistake: the tape's gradient is computed and dropped
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(v - 3.0))
        tape.gradient(loss, v)
        return loss

    @tf.function
    def raises():
        return tf.reduce_sum(v) + tf.constant("x")

    @tf.function
    def returns_nothing():  # the solution without its return
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(v - 3.0))
        sgd.apply_gradients([(tape.gradient(loss, v), v)])

    @tf.function
    def unreduced():  # the same update (the tape sums), but the loss of every element returned
        with tf.GradientTape() as tape:
            loss = tf.square(v - 3.0)
        sgd.apply_gradients([(tape.gradient(loss, v), v)])
        return loss

    return [
        ("stub", stub, False, "must be a tf.function"),
        ("solution", solution, True, "the loss fell"),
        ("by hand, mean", by_hand, True, "the loss fell"),
        ("Adam", adam, False, "learning rate (0.1)"),
        ("SGD 0.01", small_rate, False, "five SGD steps of learning rate 0.1 reach 2.017"),
        ("eager", eager, False, "must be a tf.function"),
        ("ascends", ascends, False, "did not fall"),
        ("frozen", frozen, False, "step() takes no gradient"),
        ("no tape: the gradient written by hand", no_tape, False, "step() takes no gradient"),
        ("the gradient taken, never applied", never_applied, False, "does step() update v itself?"),
        ("raises", raises, False, "step() raised"),
        ("returns nothing", returns_nothing, False, "step() returned nothing: return the loss"),
        ("the loss not reduced", unreduced, False, "step() returned 2 numbers"),
    ]


TRAINING_IDS = ["stub", "solution", "by-hand", "adam", "sgd-0.01", "eager", "ascends", "frozen"]
TRAINING_IDS += ["no-tape", "never-applied", "raises", "returns-nothing", "unreduced"]


@pytest.mark.parametrize("row", range(len(TRAINING_IDS)), ids=TRAINING_IDS)
def test_training_step_grader(row):
    import numpy as np
    import tensorflow as tf

    from helpers.topics.look_inside_graphs import graphs

    v = tf.Variable([1.5, -2.0])
    name, step, passes, words = _training_answers(v)[row]
    judge(graphs.check_training_step(step, v), passes, words)
    assert np.array_equal(v.numpy(), [1.5, -2.0])  # the learner's variable is put back


def test_training_step_grader_puts_the_optimizer_back():
    # A wrong attempt with momentum, checked twice: the check's five steps must not leave the
    # learner's optimizer counted on or its momentum moved, or the second check would differ.
    import keras
    import numpy as np
    import tensorflow as tf

    from helpers.topics.look_inside_graphs import graphs

    v = tf.Variable([0.0, 0.0])
    optimizer = keras.optimizers.SGD(0.1, momentum=0.9)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(v - 3.0))
        optimizer.apply_gradients([(tape.gradient(loss, v), v)])
        return loss

    first = graphs.check_training_step(step, v)
    state = [var.numpy().copy() for var in optimizer.variables]
    assert int(optimizer.iterations.numpy()) == 0 and not first
    second = graphs.check_training_step(step, v)
    assert second.message == first.message
    assert all(
        np.array_equal(a, b.numpy()) for a, b in zip(state, optimizer.variables, strict=True)
    )


def test_training_step_grader_needs_a_variable():
    from helpers.topics.look_inside_graphs import graphs

    judge(graphs.check_training_step(lambda: 1.0, 1.0), False, "must be a tf.Variable")


def test_training_step_grader_with_a_graph_variable_or_a_result():
    import tensorflow as tf

    from helpers.topics.look_inside_graphs import graphs

    with tf.Graph().as_default():  # exercise 1's kind of variable, which has no value eagerly
        in_graph = tf.Variable([0.0, 0.0])
    judge(graphs.check_training_step(tf.function(lambda: 1.0), in_graph), False, "eager variable")
    eager = tf.Variable([0.0, 0.0])
    judge(graphs.check_training_step(tf.constant(1.0), eager), False, "not what step() returned")


# --- 10: read the fastest setting off a sweep table ---------------------------------------------


def _sweep():
    import pandas as pd

    rows = [
        ("intra 1, inter 1", 10.0, 9.5, 10.5),
        ("intra 2, inter 1", 6.0, 5.8, 6.3),
        ("intra 4, inter 1", 6.2, 5.9, 6.6),
    ]
    return pd.DataFrame(
        [
            {
                "setting": s,
                "workload": "conv_step",
                "median_ms": m,
                "q1_ms": q1,
                "q3_ms": q3,
                "error": "",
            }
            for s, m, q1, q3 in rows
        ]
    )


FASTEST = [
    ("stub", "...", False, "is not one of the settings"),
    ("solution", "intra 2, inter 1", True, "was the fastest"),
    ("a tie inside the spread", "intra 4, inter 1", True, "a tie on this machine"),
    ("the slowest", "intra 1, inter 1", False, "intra 2, inter 1 ran faster"),
    ("another spelling of the solution", "Intra=2, inter=1 ", True, "was the fastest"),
    ("a trailing comma", "intra 2, inter 1,", True, "was the fastest"),
    ("a setting name with a typo", "intra 2, inner 1", False, "is not one of the settings"),
]


@pytest.mark.parametrize("row", range(len(FASTEST)), ids=[row[0] for row in FASTEST])
def test_fastest_grader(row):
    from helpers.topics.tune_the_cpu import cputune

    table = _sweep()
    before = table.copy()
    name, choice, passes, words = FASTEST[row]
    judge(cputune.check_fastest(table, "conv_step", choice), passes, words)
    assert table.equals(before)


def test_fastest_grader_refuses_a_setting_another_ran_clearly_faster_than():
    # Seen in notebook 10 with three processes a row: the slowest setting's spread reached the
    # fastest's (a tie by the old rule), while a third ran clearly faster than it.
    import pandas as pd

    from helpers.topics.tune_the_cpu import cputune

    rows = [("one", 5.64, 5.44, 6.17), ("two", 4.36, 4.0, 5.61), ("four", 4.72, 4.51, 4.9)]
    table = pd.DataFrame(
        [
            {"setting": s, "workload": "w", "median_ms": m, "q1_ms": a, "q3_ms": b, "error": ""}
            for s, m, a, b in rows
        ]
    )
    judge(cputune.check_fastest(table, "w", "one"), False, "four ran faster")
    judge(cputune.check_fastest(table, "w", "four"), True, "a tie on this machine")


def test_fastest_grader_takes_tables_as_they_come(tmp_path):
    import pandas as pd

    from helpers.topics.tune_the_cpu import cputune

    table = _sweep()
    judge(
        cputune.check_fastest(pd.concat([table, table]), "conv_step", "intra 2, inter 1"), True, ""
    )
    no_spread = table[["setting", "workload", "median_ms"]]  # no quartiles: no tie to grant
    judge(cputune.check_fastest(no_spread, "conv_step", "intra 4, inter 1"), False, "ran faster")
    table.to_csv(tmp_path / "sweep.csv", index=False)  # the empty error column comes back as NaN
    reloaded = pd.read_csv(tmp_path / "sweep.csv")
    judge(cputune.check_fastest(reloaded, "conv_step", "intra 2, inter 1"), True, "was the fastest")
    judge(cputune.check_fastest(table, ["conv_step"], "intra 2, inter 1"), False, "as text")


# --- 13: TF_CONFIG for the third of three workers ------------------------------------------------

HOSTS = ["host-a:2222", "host-b:2222", "host-c:2222"]
TF_CONFIGS = [
    ("stub", "{}", False, "its cluster should be"),
    (
        "solution",
        json.dumps({"cluster": {"worker": HOSTS}, "task": {"type": "worker", "index": 2}}),
        True,
        "third host",
    ),
    (
        "keys in another order, spaced",
        '{ "task": {"index": 2, "type": "worker"},\n  "cluster": {"worker": '
        + json.dumps(HOSTS)
        + "} }",
        True,
        "third host",
    ),
    (
        "with rpc_layer",
        json.dumps(
            {
                "cluster": {"worker": HOSTS},
                "task": {"type": "worker", "index": 2},
                "rpc_layer": "grpc",
            }
        ),
        True,
        "third host",
    ),
    (
        "counted from 1 (the typical mistake)",
        json.dumps({"cluster": {"worker": HOSTS}, "task": {"type": "worker", "index": 3}}),
        False,
        "counted from 0",
    ),
    (
        "a dict, not JSON text",
        {"cluster": {"worker": HOSTS}, "task": {"type": "worker", "index": 2}},
        False,
        "json.dumps",
    ),
    ("Python's repr", str({"cluster": {"worker": HOSTS}}), False, "must be a JSON string"),
    (
        "index 2.0",
        json.dumps({"cluster": {"worker": HOSTS}, "task": {"type": "worker", "index": 2.0}}),
        False,
        "a whole number",
    ),
    ("nested too deep for json", "[" * 100_000, False, "must be a JSON string: RecursionError"),
    (
        "bytes, not str",
        json.dumps({"cluster": {"worker": HOSTS}, "task": {"type": "worker", "index": 2}}).encode(),
        False,
        "must be a JSON string (str), got bytes",
    ),
    (
        "two workers listed",
        json.dumps({"cluster": {"worker": HOSTS[:2]}, "task": {"type": "worker", "index": 1}}),
        False,
        "its cluster should be",
    ),
]


@pytest.mark.parametrize("row", range(len(TF_CONFIGS)), ids=[row[0] for row in TF_CONFIGS])
def test_tf_config_grader(row):
    from helpers.topics.distribute_training import distribute

    name, text, passes, words = TF_CONFIGS[row]
    judge(distribute.check_tf_config(text), passes, words)


# --- 14: the op type with the most time in a trace ---------------------------------------------


@pytest.fixture(scope="module")
def trace():
    from helpers.topics.profile_and_tune_a_job import profiling

    return profiling.events(
        profiling.load(Path(__file__).parent / "fixtures" / "profile" / "six_steps.xplane.pb")
    )


def _slowest_answers(trace):
    from helpers.topics.profile_and_tune_a_job import profiling

    ops = profiling.op_events(trace)
    table = profiling.op_table(trace)
    return [
        ("stub", "...", False, "is not an op type in this trace"),
        ("solution", table.index[0], True, "of all op time"),
        ("top=1", profiling.op_table(trace, top=1).index[0], True, "of all op time"),
        (
            "pandas by hand",
            ops.groupby("op_type")["duration_ms"].sum().idxmax(),
            True,
            "of all op time",
        ),
        ("the second", table.index[1], False, "another op type took more"),
        ("the least time", table.index[-1], False, "another op type took more"),
        ("not a string", 7, False, "is not an op type in this trace"),
        ("an Index of one", profiling.op_table(trace, top=1).index, False, "index it"),
        ("a list of one", [table.index[0]], False, "not a list holding it"),
        ("the least time, figure", table.index[-1], False, f"{table.index[-1]} took"),
    ]


@pytest.mark.parametrize(
    "row",
    range(10),
    ids=[
        "stub",
        "solution",
        "top-1",
        "by-hand",
        "second",
        "least",
        "number",
        "index",
        "list",
        "least-figure",
    ],
)
def test_slowest_op_grader(row, trace):
    from helpers.topics.profile_and_tune_a_job import profiling

    name, answer, passes, words = _slowest_answers(trace)[row]
    judge(profiling.check_slowest_op(trace, answer), passes, words)


def test_slowest_op_grader_names_a_wrong_table_and_the_onednn_name(trace):
    import numpy as np

    from helpers.topics.profile_and_tune_a_job import profiling

    answer = profiling.op_table(trace).index[0]
    for wrong in (profiling.step_table(trace), profiling.op_table(trace), "trace.xplane.pb", None):
        judge(profiling.check_slowest_op(wrong, answer), False, "pass the trace's event table")
    ops = profiling.op_table(trace, top=10_000)
    assert "_MklMatMul" in ops.index  # the fixture was recorded with oneDNN on
    # A plain name is judged as oneDNN's (the trace's), and the feedback says which it was.
    top, plain = ops.index[0], ops.index[0].removeprefix("_MklNative").removeprefix("_Mkl")
    assert top != plain  # the fixture's slowest op is a oneDNN one
    judge(profiling.check_slowest_op(trace, plain), True, f"runs {plain} as {top}")
    if "_MklMatMul" != top:
        judge(profiling.check_slowest_op(trace, "MatMul"), False, "runs MatMul as _MklMatMul")
    judge(profiling.check_slowest_op(trace, f" {answer}\n"), True, "of all op time")  # padded
    judge(profiling.check_slowest_op(trace, np.array("x")), False, "is not an op type")


def test_slowest_op_grader_names_the_usual_slips(monkeypatch, trace):
    import pandas as pd

    from helpers.topics.profile_and_tune_a_job import profiling

    made_up = pd.DataFrame(  # the most calls, the largest mean and the most total time apart
        {"count": [4, 90, 1], "total ms": [40.0, 30.0, 20.0], "mean ms": [10.0, 0.3, 20.0]},
        index=["Conv2D", "Cast", "MatMul"],
    ).assign(share=lambda t: t["total ms"] / t["total ms"].sum())
    monkeypatch.setattr(profiling, "op_table", lambda table, top=12: made_up)
    judge(profiling.check_slowest_op(trace, "Conv2D"), True, "of all op time")
    judge(profiling.check_slowest_op(trace, "Cast"), False, "has the most calls")
    judge(profiling.check_slowest_op(trace, "MatMul"), False, "has the largest mean")


# --- 12: a mixed-precision model with a float32 output; a loss-scaled step ----------------------


def _classifier(
    policy, last_dtype=None, softmax_layer=False, softmax_dtype="float32", cast_after=False
):
    """The exercise's classifier under ``policy``; ``softmax_layer`` puts the softmax in a layer
    of its own (an Activation, or a Softmax layer if it says "Softmax") of ``softmax_dtype``;
    ``cast_after`` appends a float32 layer that only casts (the mistake: the softmax was already
    rounded to 16 bits)."""
    import keras

    keras.mixed_precision.set_global_policy(policy)
    try:
        layers = [keras.Input((8,)), keras.layers.Dense(16, activation="relu")]
        if softmax_layer:  # another spelling: a separate float32 Activation after the logits
            last = (
                keras.layers.Softmax(dtype=softmax_dtype)
                if softmax_layer == "Softmax"
                else keras.layers.Activation("softmax", dtype=softmax_dtype)
            )
            layers += [keras.layers.Dense(3), last]
        else:
            layers.append(keras.layers.Dense(3, activation="softmax", dtype=last_dtype))
        if cast_after:
            layers.append(keras.layers.Activation("linear", dtype="float32"))
        return keras.Sequential(layers)
    finally:
        keras.mixed_precision.set_global_policy("float32")


def _tf_softmax_then_cast():
    """The mistake spelled with TensorFlow's softmax (its function is named softmax_v2)."""
    import keras
    import tensorflow as tf

    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        return keras.Sequential(
            [
                keras.Input((8,)),
                keras.layers.Dense(16, activation="relu"),
                keras.layers.Dense(3, activation=tf.nn.softmax),
                keras.layers.Activation("linear", dtype="float32"),
            ]
        )
    finally:
        keras.mixed_precision.set_global_policy("float32")


def _mixed_sequential(mixed, float32, hidden_dtype=None):
    """``Input``, a hidden ``Dense(16)`` (of ``hidden_dtype``), then ``mixed(keras)``'s layers
    built under mixed_bfloat16 and ``float32(keras)``'s after them."""
    import keras

    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        hidden = keras.layers.Dense(16, activation="relu", dtype=hidden_dtype)
        layers = [keras.Input((8,)), hidden, *mixed(keras)]
    finally:
        keras.mixed_precision.set_global_policy("float32")
    return keras.Sequential(layers + float32(keras))


def _functional():
    import keras

    inputs = keras.Input((8,))
    hidden = keras.layers.Dense(16, activation="relu", dtype="mixed_bfloat16")(inputs)
    return keras.Model(inputs, keras.layers.Dense(3, activation="softmax", dtype="float32")(hidden))


def _no_input():
    import keras

    hidden = keras.layers.Dense(16, activation="relu", dtype="mixed_bfloat16")
    return keras.Sequential([hidden, keras.layers.Dense(3, activation="softmax", dtype="float32")])


def _two_outputs():
    import keras

    inputs = keras.Input((8,))
    hidden = keras.layers.Dense(16, dtype="mixed_bfloat16")(inputs)
    heads = [keras.layers.Dense(3, activation="softmax", dtype="float32")(hidden)]
    return keras.Model(inputs, heads + [keras.layers.Dense(2, dtype="float32")(hidden)])


FLOAT32_OUTPUT = [
    (
        "stub",
        lambda: _classifier("mixed_bfloat16"),
        False,
        "the model's output is <dtype: 'bfloat16'>: give its last layer dtype='float32'",
    ),
    (
        "solution",
        lambda: _classifier("mixed_bfloat16", "float32"),
        True,
        "the softmax and the output in float32",
    ),
    (
        "a float32 Activation layer",
        lambda: _classifier("mixed_bfloat16", softmax_layer=True),
        True,
        "the softmax and the output in float32",
    ),
    (
        "mixed_float16",
        lambda: _classifier("mixed_float16", "float32"),
        True,
        "the softmax and the output in float32",
    ),
    (
        "a float32 layer after a bfloat16 softmax",
        lambda: _classifier("mixed_bfloat16", cast_after=True),
        False,
        "computes its softmax in bfloat16",
    ),
    (
        "a bfloat16 tf.nn.softmax before a float32 layer",
        lambda: _tf_softmax_then_cast(),
        False,
        "computes its softmax in bfloat16",
    ),
    (
        "a bfloat16 Softmax layer before a float32 one",
        lambda: _classifier(
            "mixed_bfloat16", softmax_layer=True, softmax_dtype=None, cast_after=True
        ),
        False,
        "computes its softmax in bfloat16",
    ),
    (
        "all float32 (no mixed precision)",
        lambda: _classifier("float32"),
        False,
        "no layer with weights computes in bfloat16",
    ),
    (
        "a bfloat16 Lambda softmax before a float32 layer",
        lambda: _mixed_sequential(
            lambda k: [k.layers.Dense(3), k.layers.Lambda(k.ops.softmax, name="softmax_lambda")],
            lambda k: [k.layers.Activation("linear", dtype="float32")],
        ),
        False,
        "layer 'softmax_lambda' computes its softmax in bfloat16",
    ),
    (
        "only a Dropout in bfloat16, the Dense layers in float32",
        lambda: _mixed_sequential(
            lambda k: [k.layers.Dropout(0.1)],
            lambda k: [k.layers.Dense(3, activation="softmax", dtype="float32")],
            hidden_dtype="float32",
        ),
        False,
        "no layer with weights computes in bfloat16",
    ),
    (
        "the hidden layer in float32, the output Dense in bfloat16",
        lambda: _mixed_sequential(
            lambda k: [k.layers.Dense(3)],
            lambda k: [k.layers.Activation("softmax", dtype="float32")],
            hidden_dtype="float32",
        ),
        False,
        "computes in float32: keep it under mixed_bfloat16",
    ),
    (
        "the softmax dropped",
        lambda: _mixed_sequential(lambda k: [], lambda k: [k.layers.Dense(3, dtype="float32")]),
        False,
        "do not sum to 1",
    ),
    ("two outputs", lambda: _two_outputs(), False, "one input and one output; yours has 1 and 2"),
    (
        "a functional model",
        lambda: _functional(),
        True,
        "the softmax and the output in float32",
    ),
    (
        "a bfloat16 softmax, a bfloat16 Dropout, then a float32 layer",
        lambda: _mixed_sequential(
            lambda k: [
                k.layers.Dense(3, activation="softmax", name="rounded"),
                k.layers.Dropout(0.1),
            ],
            lambda k: [k.layers.Activation("linear", dtype="float32")],
        ),
        False,
        "layer 'rounded' computes its softmax in bfloat16",
    ),
    (
        "the hidden layer given dtype='bfloat16' (bfloat16 weights)",
        lambda: _bfloat16_weights(),
        False,
        "keeps its weights in bfloat16",
    ),
    (
        "no keras.Input",
        lambda: _no_input(),
        False,
        "start it with keras.Input",
    ),
    (
        "a layer, not a model",
        lambda: __import__("keras").layers.Dense(3),
        False,
        "pass a keras.Model",
    ),
]


def _bfloat16_weights():
    """A typical mistake: the hidden layer's dtype set to bfloat16 itself, not a mixed policy,
    so its weights are bfloat16 too; the output layer is right."""
    import keras

    return keras.Sequential(
        [
            keras.Input((8,)),
            keras.layers.Dense(16, activation="relu", dtype="bfloat16"),
            keras.layers.Dense(3, activation="softmax", dtype="float32"),
        ]
    )


@pytest.mark.parametrize("row", range(len(FLOAT32_OUTPUT)), ids=[row[0] for row in FLOAT32_OUTPUT])
def test_float32_output_grader(row):
    from helpers.topics.train_in_mixed_precision import precision

    name, make, passes, words = FLOAT32_OUTPUT[row]
    judge(precision.check_float32_output(make()), passes, words)
    assert (
        __import__("keras").mixed_precision.global_policy().name == "float32"
    )  # the check left the policy alone


def _scaled_step_answers():
    import tensorflow as tf

    def stub(w, x, optimizer):  # the notebook's stub: no scaling, the float16 gradient underflows
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.cast(w, tf.float16) * x)
        optimizer.apply(tape.gradient(loss, [w]), [w])

    def solution(w, x, optimizer):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.cast(w, tf.float16) * x)
            scaled_loss = optimizer.scale_loss(loss)
        optimizer.apply(tape.gradient(scaled_loss, [w]), [w])

    def by_hand(
        w, x, optimizer
    ):  # a fixed scale of 1024, unscaled in float32, applied by the inner optimizer
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.cast(w, tf.float16) * x) * 1024.0
        (gradient,) = tape.gradient(loss, [w])
        optimizer.inner_optimizer.apply([gradient / 1024.0], [w])

    def with_apply_gradients(
        w, x, optimizer
    ):  # the solution with the (gradient, variable) pairs spelling
        with tf.GradientTape() as tape:
            scaled_loss = optimizer.scale_loss(tf.reduce_mean(tf.cast(w, tf.float16) * x))
        optimizer.apply_gradients(zip(tape.gradient(scaled_loss, [w]), [w], strict=True))

    def scaled_outside_the_tape(w, x, optimizer):  # a mistake: the scaling is not recorded
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.cast(w, tf.float16) * x)
        optimizer.scale_loss(loss)
        optimizer.apply(tape.gradient(loss, [w]), [w])

    def scaled_but_not_unscaled(w, x, optimizer):  # a mistake: the scaled gradient applied as it is
        with tf.GradientTape() as tape:
            scaled = optimizer.scale_loss(tf.reduce_mean(tf.cast(w, tf.float16) * x))
        w.assign_sub(1000.0 * tape.gradient(scaled, w))

    def raises(w, x, optimizer):
        raise RuntimeError("not yet")

    def tape_missed_the_scaling(w, x, optimizer):  # the scaled loss is not on the tape: no gradient
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.cast(w, tf.float16) * x)
        scaled_loss = optimizer.scale_loss(loss)
        optimizer.apply(tape.gradient(scaled_loss, [w]), [w])

    def unscaled_twice(w, x, optimizer):  # a mistake: divides by the scale that apply divides by
        with tf.GradientTape() as tape:
            scaled_loss = optimizer.scale_loss(tf.reduce_mean(tf.cast(w, tf.float16) * x))
        (gradient,) = tape.gradient(scaled_loss, [w])
        optimizer.apply([gradient / optimizer.scale_loss(1.0)], [w])

    def float32_unscaled(w, x, optimizer):  # a mistake: float32 avoids the underflow, but
        # optimizer.apply still divides by the loss scale the loss was never multiplied by
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(w * tf.cast(x, tf.float32))
        optimizer.apply(tape.gradient(loss, [w]), [w])

    @tf.function
    def compiled(w, x, optimizer):  # the solution as a tf.function, as the notebook's own step is
        with tf.GradientTape() as tape:
            scaled_loss = optimizer.scale_loss(tf.reduce_mean(tf.cast(w, tf.float16) * x))
        optimizer.apply(tape.gradient(scaled_loss, [w]), [w])

    def never_applies(w, x, optimizer):  # a mistake: the gradient is computed and dropped
        with tf.GradientTape() as tape:
            scaled_loss = optimizer.scale_loss(tf.reduce_mean(tf.cast(w, tf.float16) * x))
        tape.gradient(scaled_loss, [w])

    return [
        ("stub", stub, False, "underflows unless the loss is scaled"),
        (
            "scaled but not unscaled",
            scaled_but_not_unscaled,
            False,
            "expected 0.0100136 (the check's optimizer: SGD, learning rate 1000): 32768 times",
        ),
        ("not a function", None, False, "pass your step function"),
        ("solution", solution, True, "w moved by SGD's update"),
        ("scaled by hand", by_hand, True, "w moved by SGD's update"),
        ("apply_gradients", with_apply_gradients, True, "w moved by SGD's update"),
        (
            "scaled outside the tape",
            scaled_outside_the_tape,
            False,
            "underflows unless the loss is scaled, inside the GradientTape",
        ),
        ("raises", raises, False, "calling your function raised RuntimeError"),
        ("a tf.function", compiled, True, "w moved by SGD's update"),
        ("never applies", never_applies, False, "did the step apply the gradient?"),
        (
            "the gradient of a loss scaled outside the tape",
            tape_missed_the_scaling,
            False,
            "scale the loss inside the GradientTape",
        ),
        ("unscaled twice", unscaled_twice, False, "32768 times too short"),
        (
            "float32, the loss not scaled",
            float32_unscaled,
            False,
            "32768 times too short, the loss scale: optimizer.apply divides the gradients by it, "
            "so give it the gradients of optimizer.scale_loss(loss)",
        ),
    ]


@pytest.mark.parametrize(
    "row",
    range(13),
    ids=[
        "stub",
        "not-unscaled",
        "none",
        "solution",
        "by-hand",
        "apply_gradients",
        "outside-tape",
        "raises",
        "tf-function",
        "never-applies",
        "tape-missed-scaling",
        "unscaled-twice",
        "float32-unscaled",
    ],
)
def test_scaled_step_grader(row):
    from helpers.topics.train_in_mixed_precision import precision

    name, step, passes, words = _scaled_step_answers()[row]
    judge(precision.check_scaled_step(step), passes, words)


# --- 02: pin a matmul; say where an eager result lives -------------------------------------------


def _placements(*rows):
    return _table([(op, kind, device) for op, kind, device in rows])


INFERENCE = ("__inference_my_pinned_12", "__inference_my_pinned_12", "CPU:0")
PINNED = [
    ("stub (nothing ran)", _placements(), "CPU:1", False, "shows no MatMul"),
    ("solution", _placements(INFERENCE, ("MatMul", "MatMul", "CPU:1")), "CPU:1", True, "as pinned"),
    (
        "oneDNN's kernel name",
        _placements(INFERENCE, ("MatMul", "_MklMatMul", "CPU:1")),
        "CPU:1",
        True,
        "as pinned",
    ),
    (
        "the device in long form",
        _placements(INFERENCE, ("MatMul", "MatMul", "CPU:1")),
        "/device:CPU:1",
        True,
        "as pinned",
    ),
    (
        "eager, no tf.function",
        _placements(("MatMul", "MatMul", "CPU:1")),
        "CPU:1",
        False,
        "ran eagerly",
    ),
    (
        "not pinned",
        _placements(INFERENCE, ("MatMul", "MatMul", "CPU:0")),
        "CPU:1",
        False,
        "ran on CPU:0, not on CPU:1: inside the function, put the matmul under with tf.device",
    ),
    (
        "a TF1 session's table (named nodes, no function)",
        _placements(("y1", "MatMul", "CPU:1")),
        "CPU:1",
        False,
        "this table is a graph's",
    ),
    ("the result, not the table", None, "CPU:1", False, "pass the table"),
    (
        "oneDNN's native kernel name",
        _placements(INFERENCE, ("MatMul", "_MklNativeMatMul", "CPU:1")),
        "CPU:1",
        True,
        "as pinned",
    ),
    (
        "the device as tf.device spells it",
        _placements(INFERENCE, ("MatMul", "MatMul", "CPU:1")),
        "/CPU:1",
        True,
        "as pinned",
    ),
    (
        "a table without a device column",
        _placements(INFERENCE).drop(columns="device"),
        "CPU:1",
        False,
        "pass the table",
    ),
    (
        "numbers in the type column",
        _placements(("MatMul", "MatMul", "CPU:1")).assign(type=[1]),
        "CPU:1",
        False,
        "shows no MatMul",
    ),
]


@pytest.mark.parametrize("row", range(len(PINNED)), ids=[row[0] for row in PINNED])
def test_pinned_grader(row):
    from helpers.topics.find_where_ops_run import placement

    name, table, device, passes, words = PINNED[row]
    judge(placement.check_pinned(table, device), passes, words)


class _Tensor:
    device = "/job:localhost/replica:0/task:0/device:CPU:1"


RESULT_DEVICE = [
    ("stub", "", False, "answer with a device name"),
    ("solution", "CPU:1", True, "lives on CPU:1"),
    ("long form", "/job:localhost/replica:0/task:0/device:CPU:1", True, "lives on CPU:1"),
    ("lower case, /device: prefix", "/device:cpu:1", True, "lives on CPU:1"),
    ("where the inputs were", "CPU:0", False, "is not where the result lives"),
    ("a number", 1, False, "answer with a device name"),
    ("tf.device's spelling", "/CPU:1", True, "lives on CPU:1"),
    ("spaces around it", " CPU:1 ", True, "lives on CPU:1"),
    ("NumPy's device name", "cpu", False, "names a kind of device: give its index too"),
    ("TF1's spelling", "/job:localhost/replica:0/task:0/cpu:1", True, "lives on CPU:1"),
    ("a device type alone", "CPU", False, "names a kind of device: give its index too"),
    ("a physical device's name", "/physical_device:CPU:0", False, "is a physical device"),
    ("a made-up name", "CPU:one", False, "is not where the result lives"),
]


@pytest.mark.parametrize("row", range(len(RESULT_DEVICE)), ids=[row[0] for row in RESULT_DEVICE])
def test_result_device_grader(row):
    from helpers.topics.find_where_ops_run import placement

    name, answer, passes, words = RESULT_DEVICE[row]
    judge(placement.check_result_device(answer, _Tensor()), passes, words)


def test_result_device_grader_takes_device_objects():
    """The Setup's list of logical devices and tf.DeviceSpec name a device as well as a string."""
    import tensorflow as tf

    from helpers.topics.find_where_ops_run import placement

    for answer in (
        tf.config.LogicalDevice("/job:localhost/replica:0/task:0/device:CPU:1", "CPU"),
        tf.DeviceSpec(device_type="CPU", device_index=1),
        tf.DeviceSpec.from_string("/job:localhost/replica:0/task:0/device:CPU:1"),
    ):
        judge(placement.check_result_device(answer, _Tensor()), True, "lives on CPU:1")
    judge(
        placement.check_result_device(tf.DeviceSpec(device_type="CPU"), _Tensor()),
        False,
        "answer with a device name",
    )


@pytest.mark.parametrize("actual", [None, __import__("numpy").zeros(2), "CPU:1"])
def test_result_device_grader_without_a_tensor(actual):
    from helpers.topics.find_where_ops_run import placement

    judge(placement.check_result_device("cpu", actual), False, "pass the result tensor itself")


# --- 08: decode only a window of a JPEG ----------------------------------------------------------


def _window_answers():
    import tensorflow as tf

    def stub(jpeg, top, left, height, width): ...

    def solution(jpeg, top, left, height, width):
        return tf.io.decode_and_crop_jpeg(jpeg, [top, left, height, width], channels=3)

    def image_alias(jpeg, top, left, height, width):  # the same op under tf.image
        return tf.image.decode_and_crop_jpeg(jpeg, tf.stack([top, left, height, width]), channels=3)

    @tf.function
    def as_tf_function(jpeg, top, left, height, width):  # the op inside the learner's own graph
        return tf.io.decode_and_crop_jpeg(jpeg, [top, left, height, width], channels=3)

    def decode_then_crop(
        jpeg, top, left, height, width
    ):  # the mistake the exercise is about: decodes every pixel
        return tf.image.crop_to_bounding_box(
            tf.io.decode_jpeg(jpeg, channels=3), top, left, height, width
        )

    def box_swapped(jpeg, top, left, height, width):  # x before y, as in many image libraries
        return tf.io.decode_and_crop_jpeg(jpeg, [left, top, width, height], channels=3)

    def both_decodes(jpeg, top, left, height, width):  # the window op, after a full decode anyway
        full = tf.io.decode_jpeg(jpeg, channels=3)
        tf.debugging.assert_less_equal(top + height, tf.shape(full)[0])
        return tf.io.decode_and_crop_jpeg(jpeg, [top, left, height, width], channels=3)

    def as_float32(jpeg, top, left, height, width):  # the same values in another dtype
        return tf.cast(solution(jpeg, top, left, height, width), tf.float32)

    def as_floats(jpeg, top, left, height, width):
        return tf.cast(solution(jpeg, top, left, height, width), tf.float32) / 255.0

    def eager_only(jpeg, top, left, height, width):
        return solution(jpeg, top, left, height, width).numpy()

    return [
        ("stub", stub, False, "it returned None"),
        ("a full decode as well", both_decodes, False, "still decodes the whole JPEG (DecodeJpeg)"),
        ("floats in [0, 1]", as_floats, False, "its pixels are scaled to [0, 1]"),
        ("cast to float32, 0 to 255", as_float32, True, "skips the work outside the window"),
        (".numpy() inside", eager_only, False, "inside a tf.function it raised AttributeError"),
        ("solution", solution, True, "skips the work outside the window"),
        ("tf.image alias, stacked window", image_alias, True, "skips the work outside the window"),
        ("a tf.function", as_tf_function, True, "skips the work outside the window"),
        ("decode then crop", decode_then_crop, False, "no DecodeAndCropJpeg op"),
        ("box in x, y order", box_swapped, False, "the crop has shape"),
        ("not a function", "decode_and_crop_jpeg", False, "pass your function itself"),
    ]


WINDOW_IDS = ["stub", "both-decodes", "floats", "float32", "numpy", "solution", "alias"]
WINDOW_IDS += ["tf-function"]
WINDOW_IDS += ["decode-then-crop", "swapped", "string"]


@pytest.mark.parametrize("row", range(len(WINDOW_IDS)), ids=WINDOW_IDS)
def test_window_decode_grader(row):
    from helpers.topics.fuse_ops_and_pick_layouts import fused

    name, fn, passes, words = _window_answers()[row]
    judge(fused.check_window_decode(fn), passes, words)


# --- 00: the chain as one graph (tf.function) --------------------------------------------------


def _chain_answers():
    import functools

    import tensorflow as tf

    from helpers.lessons.start_here import small_ops_chain

    def stub(x): ...

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def with_signature(x):
        return small_ops_chain(x, 50)

    @tf.function(input_signature=[tf.TensorSpec([64], tf.float32)])  # the notebook's x: 64 floats
    def fixed_length(x):
        return small_ops_chain(x, 50)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float64)])
    def in_float64(x):
        return small_ops_chain(x, 50)

    return [
        ("stub", stub, False, "must be a tf.function"),
        ("solution", tf.function(lambda x: small_ops_chain(x, 50)), True, "one graph"),
        ("input_signature", with_signature, True, "one graph"),
        (
            "jit_compile=True",
            tf.function(lambda x: small_ops_chain(x, 50), jit_compile=True),
            True,
            "one graph",
        ),
        (
            "functools.partial",
            tf.function(functools.partial(small_ops_chain, n_ops=50)),
            True,
            "one graph",
        ),
        (
            "not a tf.function (the warned mistake)",
            lambda x: small_ops_chain(x, 50),
            False,
            "must be a tf.function",
        ),
        (
            "49 ops",
            tf.function(lambda x: small_ops_chain(x, 49)),
            False,
            "not return the same values",
        ),
        ("returns nothing", tf.function(lambda x: None), False, "not return the same values"),
        (
            ".numpy() inside",
            tf.function(lambda x: small_ops_chain(x, 50).numpy()),
            False,
            "raised AttributeError",
        ),
        (
            "strings of the right shape",
            tf.function(lambda x: tf.strings.as_string(small_ops_chain(x, 50))),
            False,
            "not return the same values",
        ),
        ("a fixed-length signature", fixed_length, True, "one graph"),
        ("a float64 signature", in_float64, True, "one graph"),
        (
            "tf.py_function one function down",
            tf.function(
                lambda x: tf.function(
                    lambda t: tf.py_function(lambda u: small_ops_chain(u, 50), [t], tf.float32)
                )(x)
            ),
            False,
            "it calls Python through tf.py_function",
        ),
        (
            "the eager chain inside tf.py_function",
            tf.function(
                lambda x: tf.py_function(lambda t: small_ops_chain(t, 50), [x], tf.float32)
            ),
            False,
            "it calls Python through tf.py_function",
        ),
    ]


CHAIN_IDS = [
    "stub",
    "solution",
    "signature",
    "jit",
    "partial",
    "plain-python",
    "49-ops",
    "none",
    "numpy-inside",
    "strings",
    "fixed-length",
    "float64",
    "nested-py-function",
    "py-function",
]


@pytest.mark.parametrize("row", range(len(CHAIN_IDS)), ids=CHAIN_IDS)
def test_graph_function_grader(row):
    from helpers.topics.start_here import start

    name, fn, passes, words = _chain_answers()[row]
    judge(start.check_graph_function(fn), passes, words)


def test_graph_function_grader_with_functions_run_eagerly():
    import tensorflow as tf

    from helpers.lessons.start_here import small_ops_chain
    from helpers.topics.start_here import start

    tf.config.run_functions_eagerly(True)
    try:
        feedback = start.check_graph_function(tf.function(lambda x: small_ops_chain(x, 50)))
    finally:
        tf.config.run_functions_eagerly(False)
    judge(feedback, False, "run_functions_eagerly(True) is on")


# --- 03: a guard that fails loudly (soft placement off, restored) ------------------------------


def _strict_answers():
    import contextlib

    import tensorflow as tf

    a = tf.ones([2, 2])

    def solution():
        before = tf.config.get_soft_device_placement()
        tf.config.set_soft_device_placement(False)
        try:
            with tf.device("/GPU:99"):
                return tf.matmul(a, a)
        finally:
            tf.config.set_soft_device_placement(before)

    def in_a_tf_function():
        before = tf.config.get_soft_device_placement()
        tf.config.set_soft_device_placement(False)
        try:

            @tf.function
            def on_gpu7():
                with tf.device("/device:GPU:99"):
                    return tf.matmul(a, a)

            return on_gpu7()
        finally:
            tf.config.set_soft_device_placement(before)

    @contextlib.contextmanager
    def hard_placement():
        before = tf.config.get_soft_device_placement()
        tf.config.set_soft_device_placement(False)
        try:
            yield
        finally:
            tf.config.set_soft_device_placement(before)

    def with_a_context_manager():
        with hard_placement(), tf.device("/job:localhost/replica:0/task:0/device:GPU:99"):
            return tf.matmul(a, a)

    def soft_placement_left_on():
        with tf.device("/GPU:99"):
            return tf.matmul(a, a)

    def no_finally():
        tf.config.set_soft_device_placement(False)
        with tf.device("/GPU:99"):
            result = tf.matmul(a, a)
        tf.config.set_soft_device_placement(True)
        return result

    def hard_coded_restore():  # restores True, not what it found
        tf.config.set_soft_device_placement(False)
        try:
            with tf.device("/GPU:99"):
                return tf.matmul(a, a)
        finally:
            tf.config.set_soft_device_placement(True)

    def shape_error():  # an InvalidArgumentError, but not the placement one
        with hard_placement():
            return tf.matmul(a, tf.ones([3, 2]))

    def empty_message():
        raise tf.errors.InvalidArgumentError(None, None, "")

    def exits():
        raise SystemExit(1)

    def caught():  # the placement error printed and swallowed
        before = tf.config.get_soft_device_placement()
        tf.config.set_soft_device_placement(False)
        try:
            with tf.device("/GPU:99"):
                return tf.matmul(a, a)
        except tf.errors.InvalidArgumentError as error:
            return str(error)
        finally:
            tf.config.set_soft_device_placement(before)

    def tf1_session():  # the TF1 form: a graph and a session that does not allow soft placement
        graph = tf.Graph()
        with graph.as_default(), tf.device("/GPU:99"):
            y = tf.matmul(tf.ones([2, 2]), tf.ones([2, 2]))
        config = tf.compat.v1.ConfigProto(allow_soft_placement=False)
        with tf.compat.v1.Session(graph=graph, config=config) as session:
            return session.run(y)

    class Unreadable(Exception):
        def __str__(self):
            raise ValueError("no message")

    def unreadable_error():
        raise Unreadable()

    def own_error():
        if (
            len(tf.config.list_physical_devices("GPU")) < 8
        ):  # no GPU:99 (the test machines have none)
            raise RuntimeError("no GPU here")
        return tf.matmul(a, a)

    return [
        ("stub", lambda: None, False, "no error reached the caller"),
        ("solution", solution, True, "failed loudly"),
        ("in a tf.function, /device:GPU:99", in_a_tf_function, True, "failed loudly"),
        ("a context manager, the full device name", with_a_context_manager, True, "failed loudly"),
        (
            "soft placement left on (the warned mistake)",
            soft_placement_left_on,
            False,
            "switch soft placement off",
        ),
        ("not restored when it raises", no_finally, False, "restore that value in a finally:"),
        ("its own error", own_error, False, "raised RuntimeError, not the placement error"),
        ("the result, not the function", a, False, "must be a function"),
        ("restores True, not what it found", hard_coded_restore, False, "where it found it off"),
        ("a shape error", shape_error, False, "but not the placement error"),
        ("an empty error message", empty_message, False, "but not the placement error"),
        ("exit()", exits, False, "raised SystemExit"),
        ("the error caught inside", caught, False, "let the error out (do not catch it)"),
        ("a TF1 session", tf1_session, True, "failed loudly: Cannot assign a device"),
        ("an error whose message fails", unreadable_error, False, "could not be read: Unreadable"),
    ]


STRICT_IDS = [
    "stub",
    "solution",
    "tf-function",
    "context-manager",
    "soft-on",
    "no-finally",
    "own-error",
    "not-callable",
    "hard-coded-restore",
    "shape-error",
    "empty-message",
    "exit",
    "caught",
    "tf1-session",
    "unreadable-error",
]


@pytest.mark.parametrize("row", range(len(STRICT_IDS)), ids=STRICT_IDS)
def test_strict_grader(row):
    import tensorflow as tf

    from helpers.topics.choose_soft_placement import soft_placement

    assert tf.config.get_soft_device_placement()
    name, fn, passes, words = _strict_answers()[row]
    judge(soft_placement.check_strict(fn), passes, words)
    assert tf.config.get_soft_device_placement(), "the check left soft placement off"


# --- 05: the array stored once in a TF1 graph; a tf.function that traces once -------------------


def _graph_answers():
    import numpy as np
    import tensorflow as tf

    from helpers.topics.keep_arrays_out_of_graphs import memory

    small = memory.make_array(1)

    def build(body):
        graph = tf.Graph()
        with graph.as_default():
            x = tf.compat.v1.placeholder(tf.float32, small.shape)
            body(x)
        return graph

    def build_any(body):  # the input as a placeholder of any length, as notebook 05 teaches
        graph = tf.Graph()
        with graph.as_default():
            body(tf.compat.v1.placeholder(tf.float32, [None]))
        return graph

    def twice(x):
        first, second = tf.convert_to_tensor(small), tf.convert_to_tensor(small)
        return [x + (first if i % 2 else second) for i in range(10)]

    def fresh_inputs(x):  # a mistake: the array added to ten new placeholders, not to x
        values = tf.convert_to_tensor(small)
        return [tf.compat.v1.placeholder(tf.float32, small.shape) + values for _ in range(10)]

    return [
        ("stub", None, False, "must be a tf.Graph"),
        (
            "solution",
            build(lambda x: [x + v for v in [tf.convert_to_tensor(small)] for _ in range(10)]),
            True,
            "at most once",
        ),
        (
            "tf.constant, tf.add",
            build(lambda x: [tf.add(x, c) for c in [tf.constant(small)] for _ in range(10)]),
            True,
            "at most once",
        ),
        (
            "a second placeholder",
            build(
                lambda x: [
                    x + y
                    for y in [tf.compat.v1.placeholder(tf.float32, small.shape)]
                    for _ in range(10)
                ]
            ),
            True,
            "at most once",
        ),
        (
            "leaky (the warned mistake)",
            build(lambda x: [x + small for _ in range(10)]),
            False,
            "copied into each op",
        ),
        ("converted twice", build(twice), False, "holds 2 large constants"),
        (
            "nine adds",
            build(lambda x: [x + v for v in [tf.convert_to_tensor(small)] for _ in range(9)]),
            False,
            "keep all ten",
        ),
        ("a GraphDef", build(lambda x: x + 1.0).as_graph_def(), False, "must be a tf.Graph"),
        ("the array dropped", build(lambda x: [x + 1.0 for _ in range(10)]), False, "keep all ten"),
        ("x + x", build(lambda x: [x + x for _ in range(10)]), False, "keep all ten"),
        ("x + 2 * x", build(lambda x: [x + 2.0 * x for _ in range(10)]), False, "keep all ten"),
        (
            "a placeholder of any length",
            build_any(lambda x: [x + v for v in [tf.convert_to_tensor(small)] for _ in range(10)]),
            True,
            "at most once",
        ),
        (
            "tf.math.add_n",
            build(
                lambda x: [tf.math.add_n([x, v]) for v in [tf.constant(small)] for _ in range(10)]
            ),
            True,
            "at most once",
        ),
        (
            "placeholder_with_default (the array stored once, as its default)",
            build(
                lambda x: [
                    x + y
                    for y in [tf.compat.v1.placeholder_with_default(small, small.shape)]
                    for _ in range(10)
                ]
            ),
            True,
            "at most once",
        ),
        (
            "a variable initialised from the array",
            build(lambda x: [x + v for v in [tf.Variable(small)] for _ in range(10)]),
            True,
            "at most once",
        ),
        (
            "another array of its shape, stored once",
            build(
                lambda x: [x + v for v in [tf.constant(np.zeros_like(small))] for _ in range(10)]
            ),
            False,
            "does not hold the array's values",
        ),
        ("ten new inputs", build(fresh_inputs), False, "the same input x"),
    ]


GRAPH_IDS = [
    "stub",
    "solution",
    "constant",
    "placeholder",
    "leaky",
    "twice",
    "nine",
    "graphdef",
    "dropped",
    "x-plus-x",
    "x-plus-2x",
    "any-length",
    "add_n",
    "with-default",
    "variable",
    "zeros",
    "fresh-inputs",
]


@pytest.mark.parametrize("row", range(len(GRAPH_IDS)), ids=GRAPH_IDS)
def test_graph_is_small_grader(row):
    from helpers.topics.keep_arrays_out_of_graphs import memory

    name, graph, passes, words = _graph_answers()[row]
    nodes = len(graph.get_operations()) if hasattr(graph, "get_operations") else None
    judge(memory.check_graph_is_small(graph, memory.make_array(1)), passes, words)
    if nodes is not None:
        assert len(graph.get_operations()) == nodes, "the check changed the graph"


def test_graph_is_small_grader_without_the_array_checks_only_the_graph():
    from helpers.topics.keep_arrays_out_of_graphs import memory

    rows = {name: (graph, passes) for name, graph, passes, _ in _graph_answers()}
    assert memory.check_graph_is_small(rows["solution"][0])  # array=None: no value check
    zeros, _ = rows["another array of its shape, stored once"]
    assert memory.check_graph_is_small(zeros)  # its values are what only the array can tell
    assert not memory.check_graph_is_small(rows["leaky (the warned mistake)"][0])


def _scale_answers():
    import tensorflow as tf

    def scale(v):
        return v * 3.0

    called_before = tf.function(scale)
    for n in (1, 2, 3):
        called_before(tf.ones([n]))
    traced_ahead = tf.function(scale)  # correct: one trace made ahead for every length
    traced_ahead.get_concrete_function(tf.TensorSpec([None], tf.float32))
    every_length_ahead = tf.function(scale)  # a mistake: eight traces made ahead, one a length
    for n in range(1, 9):
        every_length_ahead.get_concrete_function(tf.TensorSpec([n], tf.float32))
    reduce_called = tf.function(scale, reduce_retracing=True)  # its second call generalizes
    for n in (1, 2):
        reduce_called(tf.ones([n]))
    return [
        ("stub", scale, False, "must be a tf.function"),
        (
            "solution",
            tf.function(scale, input_signature=[tf.TensorSpec([None], tf.float32)]),
            True,
            "one trace",
        ),
        (
            "unknown rank",
            tf.function(scale, input_signature=[tf.TensorSpec(None, tf.float32)]),
            True,
            "one trace",
        ),
        (
            "tf.math.multiply, shape=(None,)",
            tf.function(
                lambda v: tf.math.multiply(v, 3.0),
                input_signature=(tf.TensorSpec(shape=(None,), dtype=tf.float32),),
            ),
            True,
            "one trace",
        ),
        ("no signature (the warned mistake)", tf.function(scale), False, "traced 8 times"),
        (
            "reduce_retracing=True",
            tf.function(scale, reduce_retracing=True),
            False,
            "reduce_retracing=True still traces twice",
        ),
        (
            "a fixed length",
            tf.function(scale, input_signature=[tf.TensorSpec([8], tf.float32)]),
            False,
            "length 1 raised",
        ),
        (
            "float64 signature",
            tf.function(scale, input_signature=[tf.TensorSpec([None], tf.float64)]),
            False,
            "in float32)",
        ),
        ("called 3 times before the check", called_before, False, "traced 8 times"),
        (
            "the wrong factor",
            tf.function(lambda v: v * 2.0, input_signature=[tf.TensorSpec([None], tf.float32)]),
            False,
            "should return v * 3.0",
        ),
        (
            "a concrete function",
            tf.function(scale).get_concrete_function(tf.TensorSpec([None], tf.float32)),
            True,
            "a concrete function",
        ),
        ("traced ahead for every length", traced_ahead, True, "one trace"),
        ("traced ahead, one trace a length", every_length_ahead, False, "traced 8 times"),
        ("reduce_retracing=True, called before", reduce_called, False, "still traces twice"),
    ]


SCALE_IDS = [
    "stub",
    "solution",
    "unknown-rank",
    "multiply",
    "no-signature",
    "reduce-retracing",
    "fixed-length",
    "float64",
    "called-before",
    "wrong-factor",
    "concrete",
    "traced-ahead",
    "traced-ahead-per-length",
    "reduce-retracing-called",
]


@pytest.mark.parametrize("row", range(len(SCALE_IDS)), ids=SCALE_IDS)
def test_no_retracing_grader(row):
    from helpers.topics.keep_arrays_out_of_graphs import retracing

    name, fn, passes, words = _scale_answers()[row]
    traces = (
        fn.experimental_get_tracing_count()
        if hasattr(fn, "experimental_get_tracing_count")
        else None
    )
    judge(retracing.check_no_retracing(fn), passes, words)
    if traces is not None:
        assert fn.experimental_get_tracing_count() == traces, (
            "the check traced the learner's function"
        )


# --- 08: batch norm through the fused kernel ---------------------------------------------------


def _batchnorm_answers():
    import keras
    import tensorflow as tf

    def ones_zeros(x):
        channels = x.shape[-1]
        return tf.ones([channels]), tf.zeros([channels])

    def solution(x):
        y, _, _ = tf.compat.v1.nn.fused_batch_norm(x, *ones_zeros(x), epsilon=1e-3)
        return y

    def raw_op(x):
        scale, offset = ones_zeros(x)
        return tf.raw_ops.FusedBatchNormV3(
            x=x,
            scale=scale,
            offset=offset,
            mean=tf.zeros([0]),
            variance=tf.zeros([0]),
            epsilon=1e-3,
            is_training=True,
        ).y

    def whole_tuple(x):
        return tf.compat.v1.nn.fused_batch_norm(x, *ones_zeros(x), epsilon=1e-3)

    def unfused(x):
        mean, variance = tf.nn.moments(x, axes=[0, 1, 2])
        return tf.nn.batch_normalization(x, mean, variance, None, None, 1e-3)

    layer = keras.layers.BatchNormalization(epsilon=1e-3)

    def keras_layer(x):
        return layer(x, training=True)

    @tf.function
    def explicit_nhwc(x):
        scale, offset = ones_zeros(x)
        normalized, _, _ = tf.compat.v1.nn.fused_batch_norm(
            x, scale, offset, epsilon=0.001, data_format="NHWC", is_training=True
        )
        return normalized

    def wrong_epsilon(x):
        y, _, _ = tf.compat.v1.nn.fused_batch_norm(x, *ones_zeros(x), epsilon=0.5)
        return y

    def epsilon_keras(x):  # a typical slip: another library's epsilon (1e-5, PyTorch's default)
        y, _, _ = tf.compat.v1.nn.fused_batch_norm(x, *ones_zeros(x), epsilon=1e-5)
        return y

    def numpy_float64(x):  # an answer in NumPy, in float64 (no fused op)
        values = x.numpy().astype("float64")
        return (values - values.mean(axis=(0, 1, 2))) / (values.var(axis=(0, 1, 2)) + 1e-3) ** 0.5

    def tf1_spelling(x):
        y, _, _ = tf.nn.fused_batch_norm(x, *ones_zeros(x), epsilon=1e-3)
        return y

    def stub(x): ...

    def inference_mode(x):  # the batch's statistics from separate ops, handed in as constants
        mean, variance = tf.nn.moments(x, [0, 1, 2])
        y, _, _ = tf.compat.v1.nn.fused_batch_norm(
            x, *ones_zeros(x), mean=mean, variance=variance, epsilon=1e-3, is_training=False
        )
        return y

    def nan_output(x):
        return solution(x) * float("nan")

    return [
        ("stub", stub, False, "it returned None"),
        ("is_training=False, moments passed in", inference_mode, False, "is_training=True"),
        ("NaN out", nan_output, False, "differ from the unfused result by up to nan"),
        ("epsilon 1e-5", epsilon_keras, False, "epsilon 1e-3?"),
        ("NumPy in float64", numpy_float64, False, "inside a tf.function it raised"),
        ("the TF1 name", tf1_spelling, False, "tf.compat.v1.nn.fused_batch_norm"),
        ("solution", solution, True, "one FusedBatchNorm op"),
        ("tf.raw_ops.FusedBatchNormV3", raw_op, True, "one FusedBatchNorm op"),
        ("a tf.function, NHWC spelled out", explicit_nhwc, True, "one FusedBatchNorm op"),
        ("the whole tuple", whole_tuple, False, "return only y"),
        ("unfused ops (the warned mistake)", unfused, False, "no FusedBatchNorm op"),
        ("a Keras 3 layer", keras_layer, False, "no FusedBatchNorm op"),
        ("epsilon 0.5", wrong_epsilon, False, "differ from the unfused result"),
        ("not a function", "fused_batch_norm", False, "pass your function itself"),
    ]


BATCHNORM_IDS = [
    "stub",
    "epsilon-1e-5",
    "numpy-float64",
    "tf1-name",
    "solution",
    "raw-op",
    "explicit-nhwc",
    "tuple",
    "unfused",
    "keras",
    "epsilon",
    "string",
]
BATCHNORM_IDS[1:1] = ["inference-mode", "nan"]


@pytest.mark.parametrize("row", range(len(BATCHNORM_IDS)), ids=BATCHNORM_IDS)
def test_fused_batchnorm_grader(row):
    from helpers.topics.fuse_ops_and_pick_layouts import fused

    name, fn, passes, words = _batchnorm_answers()[row]
    judge(fused.check_fused_batchnorm(fn), passes, words)


# --- 16: a make_dataset(batch_size) that keeps the job-file contract --------------------------


def _contract_answers():
    import numpy as np
    import tensorflow as tf

    features = np.random.default_rng(0).normal(size=(256, 8)).astype("float32")
    labels = (features[:, 0] > 0).astype("int64")
    pairs = lambda: tf.data.Dataset.from_tensor_slices((features, labels))  # noqa: E731

    def raises(batch_size):
        raise RuntimeError("my pipeline broke")

    return (
        features,
        labels,
        [
            # (id, answer, passes, words in the message)
            (
                "stub",
                lambda b: tf.data.Dataset.from_tensor_slices(features).batch(b),
                False,
                "(inputs, targets) pairs",
            ),
            (
                "solution",
                lambda b: pairs().shuffle(256, seed=0).batch(b),
                True,
                "every example once",
            ),
            ("no-shuffle", lambda b: pairs().batch(b), True, "every example once"),
            (
                "zip",
                lambda b: (
                    tf.data.Dataset.zip(
                        (
                            tf.data.Dataset.from_tensor_slices(features),
                            tf.data.Dataset.from_tensor_slices(labels),
                        )
                    )
                    .batch(b)
                    .prefetch(2)
                ),
                True,
                "every example once",
            ),
            (
                "with-weights",
                lambda b: tf.data.Dataset.from_tensor_slices(
                    (features, labels, np.ones(256, "float32"))
                ).batch(b),
                True,
                "every example once",
            ),
            (
                "shuffled-apart",
                lambda b: tf.data.Dataset.zip(
                    (
                        tf.data.Dataset.from_tensor_slices(features),
                        tf.data.Dataset.from_tensor_slices(labels).shuffle(256, seed=1),
                    )
                ).batch(b),
                False,
                "do not match",
            ),
            ("fixed-batch", lambda b: pairs().batch(64), False, "not 32"),
            (
                "drop-remainder",
                lambda b: pairs().batch(b, drop_remainder=True),
                False,
                "not all of features",
            ),
            ("unbatched", lambda b: pairs(), False, "single examples"),
            ("raises", raises, False, "RuntimeError"),
            ("not-a-function", "pairs", False, "must be a function"),
            ("repeated", lambda b: pairs().batch(b).repeat(), False, "no .repeat()"),
            (
                "dict inputs",
                lambda b: tf.data.Dataset.from_tensor_slices(({"x": features}, labels)).batch(b),
                False,
                "the inputs are a dict",
            ),
            (
                "targets-column",
                lambda b: pairs().map(lambda x, y: (x, y[None])).batch(b),
                True,
                "once",
            ),
            ("batches-shuffled", lambda b: pairs().batch(b).shuffle(8, seed=3), True, "once"),
            (
                "labels-as-weights",
                lambda b: tf.data.Dataset.from_tensor_slices((features, labels, labels)).batch(b),
                False,
                "weigh 0 or less",
            ),
            (
                "one-hot",
                lambda b: pairs().map(lambda x, y: (x, tf.one_hot(y, 2))).batch(b),
                False,
                "one-hot targets need another loss",
            ),
            (
                "bool-labels",
                lambda b: tf.data.Dataset.from_tensor_slices((features, labels > 0)).batch(b),
                False,
                "targets are bool",
            ),
            (
                "int32-labels",
                lambda b: pairs().map(lambda x, y: (x, tf.cast(y, tf.int32))).batch(b),
                True,
                "once",
            ),
            ("empty", lambda b: pairs().skip(256).batch(b), False, "gave no batches"),
            (
                "features-as-targets",
                lambda b: tf.data.Dataset.from_tensor_slices((features, features)).batch(b),
                False,
                "not all of features",
            ),
            (
                "swapped",
                lambda b: tf.data.Dataset.from_tensor_slices((labels, features)).batch(b),
                False,
                "the pairs are (targets, inputs)",
            ),
        ],
    )


@pytest.mark.parametrize(
    "row",
    range(22),
    ids=[
        "stub",
        "solution",
        "no-shuffle",
        "zip",
        "with-weights",
        "shuffled-apart",
        "fixed-batch",
        "drop-remainder",
        "unbatched",
        "raises",
        "not-a-function",
        "repeated",
        "dict-inputs",
        "targets-column",
        "batches-shuffled",
        "labels-as-weights",
        "one-hot",
        "bool-labels",
        "int32-labels",
        "empty",
        "features-as-targets",
        "swapped",
    ],
)
def test_make_dataset_contract_grader(row):
    import numpy as np

    from helpers.topics.tune_your_own_job import jobfile

    features, labels, answers = _contract_answers()
    before = features.copy(), labels.copy()
    _, answer, passes, words = answers[row]
    judge(jobfile.check_make_dataset(answer, features, labels), passes, words)
    assert np.array_equal(features, before[0]) and np.array_equal(
        labels, before[1]
    )  # never changes its input


@pytest.mark.parametrize("row", [1, 3, 19])  # the solution, a loop, sorted: each picks a tied row
def test_most_varied_grader_accepts_any_tied_row_in_a_room_of_one(row, speedups):
    # With one machine every row's max/min is 1: any row is the most varied, whichever a correct
    # answer's tie-break picks (the first, the last, the first a loop found above the rest).
    from helpers.topics.compare_the_room import gather

    alone = speedups.iloc[:, [0]].dropna()
    _, fn, _, _ = _most_varied_answers()[row]
    judge(gather.check_most_varied(fn, alone), True, "varies most")
