"""Unit tests for helpers.topics.tune_input_pipeline.pipelines and the lesson code of notebook 07
it runs: every switch
combination of make_pipeline yields every image once, the batch augmentation crops exactly, the
cache exercise's check (stub fails, solution passes), throughput tables, and the utilisation
sampler."""

from __future__ import annotations

import dataclasses
import threading
import time

import numpy as np
import pytest

from helpers.lessons import tune_input_pipeline as lesson
from helpers.topics.pack_files_into_shards import tfrecords
from helpers.topics.tune_input_pipeline import pipelines, pipelines_measure
from helpers.utilization import UtilizationSampler


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    return pipelines.make_jpeg_shards(tmp_path_factory.mktemp("jpeg"), n=96, n_shards=4)


def collect(dataset):
    images, labels = zip(*[(x.numpy(), y.numpy()) for x, y in dataset], strict=True)
    return np.concatenate(images), np.concatenate(labels)


def test_shards_verify(shards):
    assert len(shards) == 4
    assert (
        tfrecords.read_manifest(__import__("pathlib").Path(shards[0]).parent)["jpeg"]["options"][
            "encoding"
        ]
        == "jpeg"
    )


SWITCHES = {
    "Python generator": pipelines.Options(source="generator"),
    "sequential map": pipelines.Options(),
    "parallel map": pipelines.Options(parallel=True),
    "vectorized map": pipelines.Options(parallel=True, vectorized=True),
    "interleave": pipelines.Options(parallel=True, vectorized=True, interleave=True),
    "cache before decode": pipelines.Options(parallel=True, cache="before_map"),
    "tuned": pipelines.TUNED,
}


@pytest.mark.parametrize("name", list(SWITCHES))
def test_every_switch_combination_yields_every_image_once(shards, name):
    images, labels = collect(pipelines.build(shards, dataclasses.replace(SWITCHES[name], batch=32)))
    assert images.shape == (96, 56, 56, 3) and images.dtype == np.float32
    assert images.min() >= -1.0 and images.max() <= 1.0
    reference = collect(pipelines.build(shards, pipelines.Options()))[1]
    assert sorted(labels.tolist()) == sorted(reference.tolist())


def test_cache_after_decode_still_augments_differently_each_epoch(shards):
    dataset = pipelines.build(
        shards, pipelines.Options(vectorized=True, cache="after_decode")
    ).repeat(2)
    images = collect(dataset)[0]
    assert not np.array_equal(images[:96], images[96:])


def test_augment_batch_crops_exactly():
    import tensorflow as tf

    rng = np.random.default_rng(0)
    batch = rng.integers(0, 256, size=(3, 64, 64, 3), dtype=np.uint8)
    out, labels = lesson.augment_batch(tf.constant(batch), tf.constant([1, 2, 3]))
    out = out.numpy()
    assert labels.numpy().tolist() == [1, 2, 3]
    for image, crop in zip(batch, out, strict=True):
        crop = np.rint((crop + 1.0) * 127.5)
        candidates = [
            image[top : top + 56, left : left + 56] for top in range(9) for left in range(9)
        ]
        assert any(np.array_equal(crop, c) or np.array_equal(crop, c[:, ::-1]) for c in candidates)


def test_options_reject_nonsense():
    with pytest.raises(ValueError, match="cache must be one of"):
        pipelines.Options(cache="everywhere")
    with pytest.raises(ValueError, match="source must be"):
        pipelines.Options(source="feed_dict")
    with pytest.raises(ValueError, match="batch"):
        pipelines.Options(batch=0)
    with pytest.raises(ValueError, match="shards must hold at least 1 path"):
        pipelines.build([])
    with pytest.raises(ValueError, match="n must be"):
        pipelines.make_jpeg_shards("unused", n=0)


def sampler_threads():
    return [t for t in threading.enumerate() if t.name == "utilization-sampler"]


def test_sampler_starts_samples_and_stops():
    with UtilizationSampler(interval=0.02) as sampler:
        assert sampler.running
        end = time.monotonic() + 0.3
        while time.monotonic() < end:
            sum(i * i for i in range(1000))
    assert not sampler.running and sampler_threads() == []
    summary = sampler.summary()
    assert summary["samples"] >= 3
    assert len(summary["cpu_per_core"]) >= 1 and 0 <= summary["cpu_mean"] <= 100


def test_a_block_shorter_than_one_interval_is_sampled_at_exit():
    """throughputs samples only the timed runs: one short run must not read as no sample and
    0 % busy (a run of `make test` failed so once)."""
    with UtilizationSampler(interval=30) as sampler:
        end = time.monotonic() + 0.05
        while time.monotonic() < end:
            sum(i * i for i in range(1000))
    summary = sampler.summary()
    assert summary["samples"] == 1 and len(summary["cpu_per_core"]) >= 1
    assert 0 < summary["cpu_mean"] <= 100  # the loop above kept a core busy


def test_sampler_stops_when_the_block_raises():
    with pytest.raises(RuntimeError), UtilizationSampler(interval=0.01):
        raise RuntimeError("boom")
    assert sampler_threads() == []
    with pytest.raises(ValueError, match="interval"):
        UtilizationSampler(interval=0)


def test_check_reordered_stub_fails_solution_passes(shards):
    import tensorflow as tf

    def stub(
        paths, decode=lesson.decode_record
    ):  # the notebook's bad_pipeline: cache after augmenting
        return (
            tf.data.TFRecordDataset(paths).map(decode).map(lesson.augment_random).cache().batch(32)
        )

    def solution(paths, decode=lesson.decode_record):
        dataset = (
            tf.data.TFRecordDataset(paths).map(decode, num_parallel_calls=tf.data.AUTOTUNE).cache()
        )
        return dataset.map(lesson.augment_random, num_parallel_calls=tf.data.AUTOTUNE).batch(32)

    def no_cache(paths, decode=lesson.decode_record):
        return tf.data.TFRecordDataset(paths).map(decode).map(lesson.augment_random).batch(32)

    def cache_raw(paths, decode=lesson.decode_record):
        return (
            tf.data.TFRecordDataset(paths).cache().map(decode).map(lesson.augment_random).batch(32)
        )

    assert "augmentation before the cache" in repr(pipelines.check_reordered(stub, shards, 96))
    assert "192 JPEG decodes for 96 images" in repr(pipelines.check_reordered(no_cache, shards, 96))
    assert "192 JPEG decodes for 96 images" in repr(
        pipelines.check_reordered(cache_raw, shards, 96)
    )
    assert "not 96 each" in repr(
        pipelines.check_reordered(lambda p, decode: solution(p, decode).repeat(2), shards, 96)
    )
    assert "raised" in repr(pipelines.check_reordered(lambda p, decode: 1 / 0, shards, 96))
    for _ in range(2):  # no timing involved: the verdict is the same on every run and every machine
        assert repr(pipelines.check_reordered(solution, shards, 96)).startswith(
            "Correct: 96 decodes"
        )


def test_check_reordered_judges_the_same_with_a_global_seed(shards):
    """A learner who set tf.random.set_seed (or a test that ran before) must get the same verdicts:
    a fresh iterator per epoch would replay the random crops and fail even the solution."""
    import tensorflow as tf

    def solution(paths, decode=lesson.decode_record):
        dataset = (
            tf.data.TFRecordDataset(paths).map(decode, num_parallel_calls=tf.data.AUTOTUNE).cache()
        )
        return dataset.map(lesson.augment_random, num_parallel_calls=tf.data.AUTOTUNE).batch(32)

    def no_cache(paths, decode=lesson.decode_record):
        return tf.data.TFRecordDataset(paths).map(decode).map(lesson.augment_random).batch(32)

    tf.random.set_seed(1234)
    try:
        assert repr(pipelines.check_reordered(solution, shards, 96)).startswith(
            "Correct: 96 decodes"
        )
        assert "192 JPEG decodes for 96 images" in repr(
            pipelines.check_reordered(no_cache, shards, 96)
        )
        forever = pipelines.check_reordered(
            lambda p, decode: solution(p, decode).repeat(), shards, 96
        )
        assert "repeats forever" in repr(forever)
    finally:
        tf.random.set_seed(None)


def test_throughputs_table_and_verdict(shards):
    runs = lesson.training_runs(pipelines.build(shards, pipelines.Options(parallel=True)), 96)
    table = pipelines.throughputs(runs, 96, repeats=1)
    assert list(table.index) == ["data only", "compute only", "end to end"]
    assert (table["images_per_s"] > 0).all()
    assert all(0 <= table.loc[run, "cpu_mean"] <= 100 for run in table.index)  # every run sampled
    assert table.loc["end to end", "cpu_per_core"].count("%") >= 1
    verdict = pipelines.bound_verdict(table)
    assert (
        verdict.startswith(("Input-bound", "Not input-bound")) and "compute-only bound" in verdict
    )
    assert pipelines.throughput_figure(table, "t").axes[0].get_title() == "t"
    experiment = pipelines.toggles_experiment(shards, 96)
    assert list(experiment(parallel=True, prefetch=True).index) == list(table.index)


def test_read_epoch_and_cache_placements(shards):
    for where in ("before_map", "after_decode"):
        dataset = pipelines.build(shards, pipelines.Options(parallel=True, cache=where))
        assert pipelines.read_epoch(dataset) == pipelines.read_epoch(dataset) == 96


def test_the_python_generator_draws_new_crops_each_pass(shards):
    """Each pass of the Python feed takes a new seed, as the tf.data pipelines' random ops draw
    anew each epoch (it once replayed seed 0's crops and flips every pass)."""
    dataset = lesson.generator_pipeline(shards)
    first, second = (next(iter(dataset))[0].numpy() for _ in range(2))
    assert first.shape == second.shape and not np.array_equal(first, second)


def test_training_runs_force_their_work(shards):
    runs = lesson.training_runs(pipelines.build(shards, pipelines.Options(parallel=True)), 96)
    assert list(runs) == ["data only", "compute only", "end to end"]
    assert runs["data only"]() == 96
    for name in ("compute only", "end to end"):
        loss = runs[name]()
        assert hasattr(loss, "numpy") and float(loss) > 0  # a tensor: timing.force waits for it
    assert (
        lesson.shared_core_limit(1000.0, 1000.0) == 500.0
    )  # each image: produce it, then train on it
    with pytest.raises(TypeError, match="runs must be training_runs"):
        pipelines.throughputs(pipelines.build(shards, pipelines.Options()), 96)


def test_bound_verdict_reads_the_three_throughputs():
    import pandas as pd

    def table(data, compute, e2e, busy=(None, None)):
        return pd.DataFrame(
            {"images_per_s": [data, compute, e2e], "cpu_mean": [*busy, 90.0]},
            index=["data only", "compute only", "end to end"],
        )

    fed = pipelines.bound_verdict(table(3000, 1000, 700))
    assert (
        fed.startswith("Not input-bound") and "70% of the compute-only bound; CPU 90% busy" in fed
    )
    assert fed.endswith("the most to expect is 75% of the bound.")  # 1 / (1/3000 + 1/1000) = 750
    sampled = pipelines.bound_verdict(table(3000, 1000, 700, busy=(97.0, 62.4)))
    assert "the CPU was 97% and 62% busy during them" in sampled
    assert pipelines.bound_verdict(table(500, 1000, 400)).startswith(
        "Input-bound: the pipeline alone gives 500 img/s"
    )
    no_reading = table(3000, 1000, 700).assign(gpu_mean=[None, None, None])
    assert pipelines.bound_verdict(no_reading) == fed  # TensorFlow sees no GPU: the CPU-only line


def test_bound_verdict_with_a_gpu_drops_the_shared_core_limit(monkeypatch):
    import pandas as pd
    import tensorflow as tf

    monkeypatch.setattr(tf.config, "list_physical_devices", lambda kind=None: ["GPU:0"])
    frame = pd.DataFrame(
        {"images_per_s": [3000, 1000, 700], "cpu_mean": [None, None, 40.0]},
        index=["data only", "compute only", "end to end"],
    )
    line = pipelines.bound_verdict(frame.assign(gpu_mean=[None, 95.0, 71.5]))
    assert "the GPU ran a kernel 72% of the time" in line and "most to expect" not in line
    no_nvml = pipelines.bound_verdict(frame)  # a GPU that NVML cannot read (Metal, no nvidia-ml-py)
    assert "does not apply" in no_nvml and "ran a kernel" not in no_nvml


def test_buffer_summary_reads_both_orders():
    import pandas as pd

    def table(decoded, encoded, images=4096, buffer=10_000):
        return pd.DataFrame(
            {"buffer": [buffer] * 2, "images": [images] * 2, "peak_added_mib": [decoded, encoded]},
            index=pd.Index(["decode-first", "shuffle-first"], name="order"),
        )

    text = pipelines.buffer_summary(table(70.0, 20.0))
    assert (
        "decode first 70 MiB, shuffle first 20 MiB: "
        "50 MiB more with decoded images in the buffer, as expected" in text
    )
    assert "could hold 4,096 elements; as decoded 64x64x3 images they are 48 MiB of pixels" in text
    assert "against the expectation" in pipelines.buffer_summary(table(21.0, 20.0))
    assert "could hold 100 elements" in pipelines.buffer_summary(table(70.0, 20.0, buffer=100))


def test_augmentation_variants_give_every_image_once_and_find_their_crop_windows(shards):
    import tensorflow as tf

    decoded = tf.data.TFRecordDataset(shards).map(lesson.decode_record).cache()
    originals = np.concatenate([x.numpy() for x, _ in decoded.batch(96)])
    variants = lesson.augmentation_variants(decoded, batch=32, seed=3)
    assert set(variants) == {
        "tf.image random_*, per image",
        "tf.image, per batch",
        "stateless, per image",
        "Keras layers, per batch",
    }
    for name, dataset in variants.items():
        images, labels = collect(dataset)
        assert images.shape == (96, lesson.CROP, lesson.CROP, 3), name
        assert images.min() >= -1.0 and images.max() <= 1.0, name
        windows = pipelines_measure._crop_windows(originals[:32], images[:32])
        assert all(w is not None for w in windows), f"{name}: a crop not cut from its own original"
    # Keras' RandomCrop draws one window per batch; the per-image ops draw per image.
    keras_windows = pipelines_measure._crop_windows(
        originals[:32], collect(variants["Keras layers, per batch"])[0][:32]
    )
    assert len({(top, left) for top, left, _ in keras_windows}) == 1
    timers = pipelines.epoch_timers({"a": variants["stateless, per image"]})
    assert timers["a"]() == 96


def test_stateless_augmentation_repeats_when_rebuilt_and_changes_each_epoch(shards):
    import tensorflow as tf

    decoded = tf.data.TFRecordDataset(shards).map(lesson.decode_record).cache()
    first = lambda d: next(iter(d))[0].numpy()  # noqa: E731
    built = lesson.augmentation_variants(decoded, batch=16)["stateless, per image"]
    again = lesson.augmentation_variants(decoded, batch=16)["stateless, per image"]
    epoch_1, epoch_2 = first(built), first(built)
    assert np.array_equal(epoch_1, first(again))
    assert not np.array_equal(epoch_1, epoch_2)


def test_augmentation_summary_reads_windows_repeats_and_epochs():
    rng = np.random.default_rng(0)
    originals = rng.integers(0, 256, size=(3, 64, 64, 3), dtype=np.uint8)
    scaled = originals.astype(np.float32) / 127.5 - 1.0
    same_window = np.stack([s[2:58, 3:59] for s in scaled])
    own_windows = np.stack(
        [scaled[0, 0:56, 0:56], scaled[1, 8:64, 8:64][:, ::-1], scaled[2, 4:60, 1:57]]
    )
    text = pipelines.augmentation_summary(
        originals,
        {
            "one": {"first batch": same_window, "next epoch": same_window, "rebuilt": same_window},
            "own": {"first batch": own_windows, "next epoch": same_window, "rebuilt": same_window},
        },
    )
    one, own = text.splitlines()
    assert "3 images cut at 1 distinct crop window(s)" in one and "repeats its first batch" in one
    assert "repeats the same crops" in one
    assert (
        "3 distinct crop window(s)" in own and "does not repeat" in own and "draws new crops" in own
    )
    noise = rng.uniform(-1, 1, size=(3, 56, 56, 3)).astype(np.float32)
    assert "3 not matched" in pipelines.augmentation_summary(
        originals, {"x": {"first batch": noise, "next epoch": noise, "rebuilt": noise}}
    )


def test_switch_variants_give_every_image_once(shards):
    import tensorflow as tf

    records = tf.data.TFRecordDataset(shards).cache()
    for name, dataset in lesson.switch_variants(records, batch=32).items():
        images, labels = collect(dataset)
        assert images.shape[0] == 96 and sorted(labels.tolist()) == sorted(
            collect(lesson.switch_variants(records, batch=32)["parallel map"])[1].tolist()
        ), name


def test_epoch_timers_refuse_an_empty_mapping():
    with pytest.raises(ValueError, match="non-empty dict"):
        pipelines.epoch_timers({})


def test_throughputs_sample_the_cpu_during_the_timed_runs_only(monkeypatch):
    """The warm-up call (tracing, first batches) runs before the sampler starts, so the CPU
    figures cover the same runs as the images per second (they once covered the warm-up too)."""
    from helpers.topics.tune_input_pipeline import pipelines_measure

    sampling, calls = [False], {"data only": [], "compute only": [], "end to end": []}

    class Sampler:
        def __init__(self, interval):
            pass

        def __enter__(self):
            sampling[0] = True
            return self

        def __exit__(self, *exc):
            sampling[0] = False

        def summary(self):
            return {"cpu_mean": 50.0}

    monkeypatch.setattr(pipelines_measure, "UtilizationSampler", Sampler)
    runs = {name: (lambda name=name: calls[name].append(sampling[0])) for name in calls}
    table = pipelines_measure.throughputs(runs, 10, repeats=2)
    assert all(seen == [False, True, True] for seen in calls.values()), calls
    assert list(table["cpu_mean"]) == [50.0] * 3
