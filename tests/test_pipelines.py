"""Unit tests for helpers.topics.pipelines: the builders agree where order is deterministic, shapes and
dtypes, the augmentation crops exactly, epoch order, and the utilisation sampler."""

from __future__ import annotations

import dataclasses
import threading
import time

import numpy as np
import pytest

from helpers.topics import pipelines, tfrecords


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    return pipelines.make_jpeg_shards(tmp_path_factory.mktemp("jpeg"), n=96, n_shards=4)


def collect(dataset):
    images, labels = zip(*[(x.numpy(), y.numpy()) for x, y in dataset], strict=True)
    return np.concatenate(images), np.concatenate(labels)


def test_shards_verify(shards):
    assert len(shards) == 4
    assert tfrecords.read_manifest(__import__("pathlib").Path(shards[0]).parent)["jpeg"]["options"]["encoding"] == "jpeg"


@pytest.mark.parametrize("name", list(pipelines.PRESETS))
def test_every_preset_yields_every_image_once(shards, name):
    images, labels = collect(pipelines.build(shards, dataclasses.replace(pipelines.PRESETS[name], batch=32)))
    assert images.shape == (96, 56, 56, 3) and images.dtype == np.float32
    assert images.min() >= -1.0 and images.max() <= 1.0
    reference = collect(pipelines.build(shards, pipelines.PRESETS["sequential map"]))[1]
    assert sorted(labels.tolist()) == sorted(reference.tolist())


def test_same_seed_same_images_where_order_is_deterministic(shards):
    seq = collect(pipelines.build(shards, pipelines.Options(), seed=3))
    par = collect(pipelines.build(shards, pipelines.Options(parallel=True), seed=3))
    np.testing.assert_array_equal(seq[0], par[0])
    np.testing.assert_array_equal(seq[1], par[1])
    vec = pipelines.Options(parallel=True, vectorized=True)
    a, b = collect(pipelines.build(shards, vec, seed=3)), collect(pipelines.build(shards, vec, seed=3))
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], seq[1])  # same order as the sequential pipeline
    cached = collect(pipelines.build(shards, pipelines.Options(parallel=True, vectorized=True, cache="after_decode"), seed=3))
    np.testing.assert_array_equal(cached[0], a[0])


def test_cache_after_decode_still_augments_differently_each_epoch(shards):
    dataset = pipelines.build(shards, pipelines.Options(vectorized=True, cache="after_decode"), seed=1).repeat(2)
    images = collect(dataset)[0]
    assert not np.array_equal(images[:96], images[96:])


def test_augment_batch_crops_exactly():
    import tensorflow as tf

    rng = np.random.default_rng(0)
    batch = rng.integers(0, 256, size=(3, 64, 64, 3), dtype=np.uint8)
    out = pipelines.augment_batch(tf.constant(batch), tf.constant([[1, 2], [3, 4]], tf.int64)).numpy()
    for image, crop in zip(batch, out, strict=True):
        crop = np.rint((crop + 1.0) * 127.5)
        candidates = [image[top:top + 56, left:left + 56] for top in range(9) for left in range(9)]
        assert any(np.array_equal(crop, c) or np.array_equal(crop, c[:, ::-1]) for c in candidates)


def test_epoch_order():
    kept = pipelines.epoch_order("shuffle, repeat", n=6, epochs=3, buffer=6)
    assert all(sorted(chunk) == list(range(6)) for chunk in kept)
    mixed = pipelines.epoch_order("repeat, shuffle", n=6, epochs=3, buffer=6)
    assert sorted(sum(mixed, [])) == sorted(list(range(6)) * 3)
    assert any(sorted(chunk) != list(range(6)) for chunk in mixed)
    with pytest.raises(ValueError, match="order must be"):
        pipelines.epoch_order("shuffle only")


def test_options_reject_nonsense():
    with pytest.raises(ValueError, match="cache must be one of"):
        pipelines.Options(cache="everywhere")
    with pytest.raises(ValueError, match="source must be"):
        pipelines.Options(source="feed_dict")
    with pytest.raises(ValueError, match="batch"):
        pipelines.Options(batch=0)
    with pytest.raises(ValueError, match="shards is empty"):
        pipelines.build([])
    with pytest.raises(ValueError, match="unknown pipeline"):
        pipelines.variants(["fastest"], ["x"])
    with pytest.raises(ValueError, match="n must be"):
        pipelines.make_jpeg_shards("unused", n=0)


def sampler_threads():
    return [t for t in threading.enumerate() if t.name == "utilization-sampler"]


def test_sampler_starts_samples_and_stops():
    with pipelines.UtilizationSampler(interval=0.02) as sampler:
        assert sampler.running
        end = time.monotonic() + 0.3
        while time.monotonic() < end:
            sum(i * i for i in range(1000))
    assert not sampler.running and sampler_threads() == []
    summary = sampler.summary()
    assert summary["samples"] >= 3
    assert len(summary["cpu_per_core"]) >= 1 and 0 <= summary["cpu_mean"] <= 100


def test_sampler_stops_when_the_block_raises():
    with pytest.raises(RuntimeError), pipelines.UtilizationSampler(interval=0.01):
        raise RuntimeError("boom")
    assert sampler_threads() == []
    with pytest.raises(ValueError, match="interval"):
        pipelines.UtilizationSampler(interval=0)


def test_check_reordered(shards):
    import tensorflow as tf

    def bad(paths):
        ds = tf.data.TFRecordDataset(paths).map(pipelines.decode_record).map(pipelines.augment_random)
        return ds.cache().batch(32)

    def good(paths):
        ds = tf.data.TFRecordDataset(paths).map(pipelines.decode_record, num_parallel_calls=tf.data.AUTOTUNE)
        return ds.cache().map(pipelines.augment_random, num_parallel_calls=tf.data.AUTOTUNE).batch(32)

    def repeated(paths):
        return good(paths).repeat(2)

    assert "identical images" in repr(pipelines.check_reordered(bad, shards, 96))
    assert "not 96" in repr(pipelines.check_reordered(repeated, shards, 96))
    assert "raised" in repr(pipelines.check_reordered(lambda p: 1 / 0, shards, 96))
    result = pipelines.check_reordered(good, shards, 96)
    assert result or "took" in repr(result)  # the speed part depends on the machine; correctness does not


def test_throughputs_table_and_verdict(shards):
    table = pipelines.throughputs(shards, pipelines.PRESETS["parallel map"], 96, repeats=1)
    assert list(table.index) == ["data only", "compute only", "end to end"]
    assert (table["images_per_s"] > 0).all()
    assert 0 <= table.loc["end to end", "cpu_mean"] <= 100
    assert table.loc["end to end", "cpu_per_core"].count("%") >= 1
    verdict = pipelines.bound_verdict(table)
    assert verdict.startswith(("Input-bound", "Not input-bound")) and "compute-only bound" in verdict
    assert pipelines.throughput_figure(table, "t").axes[0].get_title() == "t"
    experiment = pipelines.toggles_experiment(shards, 96)
    assert list(experiment(parallel=True, prefetch=True).index) == list(table.index)


def test_read_epoch_and_cache_placements(shards):
    for where in ("before_map", "after_decode"):
        dataset = pipelines.build(shards, pipelines.Options(parallel=True, cache=where))
        assert pipelines.read_epoch(dataset) == pipelines.read_epoch(dataset) == 96


def test_training_runs_force_their_work(shards):
    runs = pipelines.training_runs(shards, pipelines.PRESETS["parallel map"], 96)
    assert list(runs) == ["data only", "compute only", "end to end"]
    assert runs["data only"]() == 96
    for name in ("compute only", "end to end"):
        loss = runs[name]()
        assert hasattr(loss, "numpy") and float(loss) > 0  # a tensor: timing.force waits for it
