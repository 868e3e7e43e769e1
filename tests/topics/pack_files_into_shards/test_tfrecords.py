"""Unit tests for helpers.topics.pack_files_into_shards.tfrecords: conversion, atomicity
(interrupted and killed runs),
idempotence, verification (a flipped byte is named by shard and record) and the readers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from helpers.datasets import cifar
from helpers.lessons import pack_files_into_shards as lesson
from helpers.topics.pack_files_into_shards import shard_reading, tfrecords


@pytest.fixture(scope="module")
def data():
    return cifar.synthetic_images(120, seed=3)


def convert(data, out, **kwargs):
    images, labels = data
    kwargs.setdefault("n_shards", 3)
    return tfrecords.convert(images, labels, out, "train", progress=False, **kwargs)


def test_plan_shards():
    assert tfrecords.plan_shards(10, 100, 300) == [(0, 3), (3, 7), (7, 10)]
    assert tfrecords.plan_shards(10, 100, 10**9) == [(0, 10)]
    assert len(tfrecords.plan_shards(10, 100, 1)) == 10
    assert tfrecords.plan_shards(10, 100, 300, n_shards=2) == [(0, 5), (5, 10)]
    with pytest.raises(ValueError, match="nothing to convert"):
        tfrecords.plan_shards(0, 100, 300)
    with pytest.raises(ValueError, match="n_shards"):
        tfrecords.plan_shards(10, 100, 300, n_shards=0)


@pytest.mark.parametrize(
    "gzip,encoding", [(False, "raw"), (True, "raw"), (False, "png"), (False, "jpeg")]
)
def test_convert_and_verify(tmp_path, data, gzip, encoding):
    shards = convert(data, tmp_path, gzip=gzip, encoding=encoding)
    assert [s.records for s in shards] == [40, 40, 40]
    assert shards[0].file == "train-00000-of-00003.tfrecord" + (".gz" if gzip else "")
    assert tfrecords.verify(tmp_path, *data, "train", progress=False) == {
        "shards": 3,
        "records": 120,
    }
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["train"]["options"] == {"gzip": gzip, "encoding": encoding}


def test_bad_input(tmp_path, data):
    images, labels = data
    with pytest.raises(ValueError, match="120 images but 119 labels"):
        tfrecords.convert(images, labels[:-1], tmp_path, "train")
    with pytest.raises(ValueError, match="encoding must be one of"):
        tfrecords.convert(images, labels, tmp_path, "train", encoding="jpeg2000")
    with pytest.raises(ValueError, match="plain name"):
        tfrecords.convert(images, labels, tmp_path, "../train")
    with pytest.raises(tfrecords.VerificationError, match="has no split 'eval'"):
        tfrecords.verify(tmp_path, images, labels, "eval")


def test_rerun_skips_up_to_date_shards_and_redoes_changed_ones(tmp_path, data):
    convert(data, tmp_path)
    stamps = {p.name: p.stat().st_mtime_ns for p in tmp_path.glob("*.tfrecord")}
    time.sleep(0.01)
    convert(data, tmp_path)
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.glob("*.tfrecord")} == stamps
    images, labels = data
    changed = images.copy()
    changed[100] = 0  # in the last shard only
    tfrecords.convert(changed, labels, tmp_path, "train", n_shards=3, progress=False)
    after = {p.name: p.stat().st_mtime_ns for p in tmp_path.glob("*.tfrecord")}
    assert after["train-00000-of-00003.tfrecord"] == stamps["train-00000-of-00003.tfrecord"]
    assert after["train-00002-of-00003.tfrecord"] != stamps["train-00002-of-00003.tfrecord"]
    assert tfrecords.verify(tmp_path, changed, labels, "train", progress=False)["records"] == 120


def test_resharding_removes_stale_shards(tmp_path, data):
    convert(data, tmp_path, n_shards=3)
    convert(data, tmp_path, n_shards=2)
    assert sorted(p.name for p in tmp_path.glob("*.tfrecord")) == [
        "train-00000-of-00002.tfrecord",
        "train-00001-of-00002.tfrecord",
    ]


def test_flipped_byte_is_named_by_shard_and_record(tmp_path, data):
    convert(data, tmp_path)
    offset = tfrecords.flip_bit(tmp_path / "train-00001-of-00003.tfrecord")
    record_size = (tmp_path / "train-00001-of-00003.tfrecord").stat().st_size // 40
    with pytest.raises(tfrecords.VerificationError) as exc:
        tfrecords.verify(tmp_path, *data, "train", progress=False)
    message = str(exc.value)
    assert message.startswith(
        f"train-00001-of-00003.tfrecord: record {offset // record_size} is corrupt"
    )
    assert "function_node" not in message
    with pytest.raises(ValueError, match="outside"):
        tfrecords.flip_bit(tmp_path / "train-00000-of-00003.tfrecord", offset=10**9)


def test_where_in_record_names_the_part_and_the_offset_a_read_reports(tmp_path, data):
    """Notebook 06 flips the middle byte of a shard and reads it: TensorFlow's DataLossError names
    the record's start for a bad length or length CRC, and 12 bytes after it for bad data or a
    bad data CRC; where_in_record says which, and the reads below check it."""
    import re

    import tensorflow as tf

    from helpers.topics.pack_files_into_shards.tfrecords_manifest import where_in_record

    convert(data, tmp_path)
    name = "train-00001-of-00003.tfrecord"
    size = (tmp_path / name).stat().st_size // 40  # 40 records of one size
    cases = {  # byte flipped: its part, and where the read reports it
        5 * size: ("length", 5 * size),
        5 * size + 9: ("length's CRC", 5 * size),
        5 * size + 12: ("data", 5 * size + 12),
        6 * size - 1: ("data's CRC", 5 * size + 12),
    }
    for offset, (part, reported) in cases.items():
        copy = tmp_path / f"copy-{offset}.tfrecord"
        copy.write_bytes((tmp_path / name).read_bytes())
        tfrecords.flip_bit(copy, offset)
        line = where_in_record(copy, offset)
        assert line == (
            f"byte {offset - 5 * size:,} of record 5 (its {part}; the record starts at "
            f"{5 * size:,}, and a read reports it corrupt at {reported:,})"
        )
        with pytest.raises(tf.errors.DataLossError) as error:
            for _ in tf.data.TFRecordDataset(str(copy)):
                pass
        assert re.search(r"corrupted record at (\d+)", str(error.value))[1] == str(reported)
    with pytest.raises(ValueError, match="offset must be a byte"):
        where_in_record(tmp_path / name, 40 * size)
    for bad in (-1, 2.0, True, "3"):  # the argument check: not a whole number from 0
        with pytest.raises(ValueError, match="offset"):
            where_in_record(tmp_path / name, bad)
    (tmp_path / "short").write_bytes(bytes(20))  # an empty record, then 4 bytes: no framing
    with pytest.raises(ValueError, match="is not an uncompressed TFRecord file"):
        where_in_record(tmp_path / "short", 17)
    (tmp_path / "gz").write_bytes(b"\x1f\x8b" + bytes(30))
    with pytest.raises(ValueError, match="GZIP-compressed"):
        where_in_record(tmp_path / "gz", 3)


def test_wrong_source_is_named(tmp_path, data):
    convert(data, tmp_path)
    images, labels = data
    other = labels.copy()
    other[45] = (other[45] + 1) % 10
    with pytest.raises(
        tfrecords.VerificationError,
        match="train-00001-of-00003.tfrecord: record 5 does not match source image 45",
    ):
        tfrecords.verify(tmp_path, images, other, "train", progress=False)


def test_interrupted_conversion_leaves_no_partial_shard(tmp_path, data, monkeypatch):
    real, calls = lesson.make_example, []

    def flaky(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1 + 40 + 10:  # the size probe, shard 0, then 10 records into shard 1
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(lesson, "make_example", flaky)
    with pytest.raises(KeyboardInterrupt):
        convert(data, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "manifest.json",
        "train-00000-of-00003.tfrecord",
    ]
    monkeypatch.setattr(lesson, "make_example", real)
    convert(data, tmp_path)
    assert tfrecords.verify(tmp_path, *data, "train", progress=False)["shards"] == 3


@pytest.mark.skipif(os.name != "posix", reason="a folder can be synced on POSIX only")
def test_a_safe_write_syncs_the_shard_then_its_folder(tmp_path, data, monkeypatch):
    import stat

    real_fsync, synced = os.fsync, []

    def recording(fd):
        synced.append("folder" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording)
    lesson.write_shard_safely(tmp_path / "one.tfrecord", data[0][:4], data[1][:4])
    # the bytes before the rename, then the rename itself: durable once the call returns
    assert synced == ["file", "folder"]
    assert [p.name for p in tmp_path.iterdir()] == ["one.tfrecord"]

    def folder_refused(fd):  # some network file systems cannot sync a folder
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(22, "Invalid argument")
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", folder_refused)
    lesson.write_shard_safely(tmp_path / "two.tfrecord", data[0][:4], data[1][:4])  # no exception
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.tfrecord", "two.tfrecord"]


def test_a_rerun_removes_what_a_killed_run_left_half_written(tmp_path, data):
    """A kill can land while a shard or the manifest is being written: the rerun removes both
    temps."""
    (tmp_path / ".train-00000-of-00003.tfrecord.x1.tmp").write_bytes(b"half a shard")
    (tmp_path / ".manifest.json.x2.tmp").write_text('{"train": ')
    convert(data, tmp_path)
    assert not list(tmp_path.glob(".*.tmp"))


def test_killed_conversion_leaves_only_complete_shards(tmp_path):
    """SIGKILL a real conversion mid-way: every shard under a final name is complete."""
    code = textwrap.dedent(f"""
        from helpers.datasets import cifar
        from helpers.topics.pack_files_into_shards import tfrecords
        images, labels = cifar.synthetic_images(4000, seed=9)
        print("ready", flush=True)
        tfrecords.convert(
            images, labels, {str(tmp_path)!r}, "train", n_shards=40, encoding="png", progress=False
        )
    """)
    child = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    try:
        assert child.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(list(tmp_path.glob("train-*.tfrecord"))) < 3:
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=30)
    finals = sorted(tmp_path.glob("train-*.tfrecord"))
    assert 3 <= len(finals) < 40, "the kill did not land mid-conversion"
    manifest = json.loads((tmp_path / "manifest.json").read_text())["train"]["shards"]
    recorded = {s["file"]: s for s in manifest}
    for (
        path
    ) in finals:  # complete: it matches the manifest's checksum, or it is the one being recorded
        if path.name in recorded:
            assert tfrecords.sha256_of(path) == recorded[path.name]["sha256"]
    assert len(finals) - len(recorded) <= 1
    images, labels = cifar.synthetic_images(4000, seed=9)
    tfrecords.convert(
        images, labels, tmp_path, "train", n_shards=40, encoding="png", progress=False
    )
    assert not list(tmp_path.glob(".*.tmp"))
    assert tfrecords.verify(tmp_path, images, labels, "train", progress=False) == {
        "shards": 40,
        "records": 4000,
    }


def test_readers_agree(tmp_path):
    images, labels = cifar.synthetic_images(64, seed=4)
    inputs = shard_reading.reader_inputs(tmp_path, images, labels, cifar.CLASSES)
    built = lesson.reader_variants(inputs, images, labels, cifar.CLASSES)
    assert list(built) == list(shard_reading.READERS)
    assert {name: read() for name, read in built.items()} == dict.fromkeys(
        shard_reading.READERS, 64
    )
    first = next(iter(lesson.read_files(inputs["files"], cifar.CLASSES, batch=64)))
    order = [int(Path(p).stem) for p in inputs["files"]]
    np.testing.assert_array_equal(first[1].numpy(), labels[order])
    np.testing.assert_array_equal(first[0].numpy(), images[order])


def test_widget_variants_pair_png_files_with_the_chosen_reader(tmp_path):
    built = shard_reading.files_vs_reader("1 shard, batched parse", n=32, workdir=tmp_path)
    assert list(built) == ["PNG files", "1 shard, batched parse"]
    assert [read() for read in built.values()] == [32, 32]
    with pytest.raises(ValueError, match="reader must be one of"):
        shard_reading.files_vs_reader("PNG files", n=32, workdir=tmp_path)


def test_png_records_decode_to_the_same_pixels_and_refuse_a_batched_parse(tmp_path):
    images, labels = cifar.synthetic_images(40, seed=5)
    inputs = shard_reading.reader_inputs(tmp_path, images, labels, cifar.CLASSES)
    read = list(
        lesson.read_shards(inputs["one_png"], batched_parse=False, encoding="png", batch=40)
    )
    np.testing.assert_array_equal(read[0][0].numpy(), images)
    np.testing.assert_array_equal(read[0][1].numpy(), labels)
    with pytest.raises(ValueError, match="decoded one at a time: pass batched_parse=False"):
        lesson.read_shards(inputs["one_png"], encoding="png")


def page_cached(path):
    """How many of the file's pages sit in the page cache (Linux mincore on a private map of it)."""
    import ctypes
    import mmap

    size = os.path.getsize(path)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    vec = (ctypes.c_ubyte * -(-size // mmap.PAGESIZE))()
    with (
        open(path, "rb") as handle,
        mmap.mmap(handle.fileno(), size, access=mmap.ACCESS_COPY) as mapped,
    ):
        view = ctypes.c_char.from_buffer(mapped)
        status = libc.mincore(ctypes.addressof(view), size, vec)
        del view  # the map cannot close while a pointer into it exists
    assert status == 0, os.strerror(ctypes.get_errno())
    return sum(v & 1 for v in vec)


@pytest.mark.skipif(not hasattr(os, "posix_fadvise"), reason="os.posix_fadvise is Linux's")
def test_drop_from_page_cache_empties_the_cache_and_the_widget_hook_uses_it(tmp_path):
    path = shard_reading.random_file(tmp_path / "probe.bin", 4 * 2**20)
    path.read_bytes()  # now cached
    assert page_cached(path) > 0
    lesson.drop_from_page_cache([str(path)])
    assert page_cached(path) == 0
    assert lesson.cold_read_mb_per_s(str(path)) > 0
    assert (
        shard_reading.random_file(path, 4 * 2**20).stat().st_mtime_ns == path.stat().st_mtime_ns
    )  # kept
    assert shard_reading.drop_before_each("1 shard, batched parse", 8, tmp_path, "warm") is None
    hook = shard_reading.drop_before_each("1 shard, batched parse", 8, tmp_path, "cold")
    one = tmp_path / "readers-8" / "one"
    shard = next(one.glob("*.tfrecord"))
    shard.read_bytes()
    assert page_cached(shard) > 0
    hook("1 shard, batched parse")
    assert page_cached(shard) == 0
    hook("in memory, cached")  # reads no file: nothing to drop


def test_disk_and_cold_summaries_read_the_numbers():
    import pandas as pd

    assert "in the range of a SATA SSD" in shard_reading.disk_summary([520.0, 540.0, 530.0], 2**28)
    assert "slower than a hard disk typically reads" in shard_reading.disk_summary([40.0], 2**28)
    assert (
        "between a SATA SSD and an NVMe SSD by their typical figures"
        in shard_reading.disk_summary([1_200.0], 2**28)
    )
    assert "faster than an NVMe SSD typically reads" in shard_reading.disk_summary([9_000.0], 2**28)
    # 1,885 MB/s, once printed "in the range of an NVMe SSD" (2,000-7,000), with a slow read
    probe = shard_reading.disk_summary([1_885.0, 1_219.0, 2_028.0, 1_900.0, 1_850.0], 2**28)
    assert "just below the range of an NVMe SSD (2,000-7,000 MB/s)" in probe
    assert "in the range" not in probe and "spread widely (65% to 108% of the median)" in probe
    assert "spread widely" not in shard_reading.disk_summary([520.0, 540.0, 530.0], 2**28)
    fast = shard_reading.disk_summary([580.0, 570.0, 900.0], 2**28)  # one read from a host cache
    assert "just above the range of a SATA SSD (500-550 MB/s)" in fast
    assert "spread widely (98% to 155% of the median)" in fast

    def table(files, png_shard, raw_shard):
        from helpers import timing

        runs = {
            "PNG files": files,
            "1 shard, PNG records": png_shard,
            "1 shard, batched parse": raw_shard,
        }
        return timing.comparison_table(
            {k: timing.Timing(k, (v * 0.95, v, v * 1.05)) for k, v in runs.items()}, "PNG files"
        )

    warm, cold = table(0.9, 0.75, 0.19), table(1.4, 0.8, 0.19)
    sizes = {
        "PNG files": 25_000_000,
        "1 shard, PNG records": 26_000_000,
        "1 shard, batched parse": 31_000_000,
    }
    text = shard_reading.cold_summary(warm, cold, sizes, [150.0])
    assert (
        "The file count's gap grew when the files came from the disk "
        "(quartile ratios 1.66-1.84x cold, 1.14-1.26x warm)." in text
    )
    assert (
        "1 shard, batched parse: 163.2 MB/s cold, 109% of the disk's 150 MB/s" in text
        and "likely I/O-bound" in text
    )
    assert (
        "PNG files: 17.9 MB/s cold, 12% of the disk's 150 MB/s, 1.56x the warm time; below half "
        "the disk's rate: not held back by its throughput but by work per file, or the CPU; "
        "reading from the disk added 56% to the warm time (quartile ratios 1.48-1.64x: the cost "
        "of going to the disk beyond its throughput, its latency, unless the warm passes fell in "
        "a fast and a slow group: see whether the warm row's min or max lies far from its "
        "median)." in text
    )
    # a cold median above the warm one with the two rows' runs overlapping names no cause (06's
    # saved run once blamed the disk for 1.50x with warm runs up to the cold median)
    from helpers import timing

    wide = timing.comparison_table(
        {
            "PNG files": timing.Timing("PNG files", (0.9, 0.9, 0.9)),
            "1 shard, PNG records": timing.Timing("1 shard, PNG records", (0.75,) * 3),
            "1 shard, batched parse": timing.Timing("1 shard, batched parse", (0.12, 0.12, 0.18)),
        },
        "PNG files",
    )
    overlap = timing.comparison_table(
        {
            "PNG files": timing.Timing("PNG files", (0.9, 0.9, 0.9)),
            "1 shard, PNG records": timing.Timing("1 shard, PNG records", (0.75,) * 3),
            "1 shard, batched parse": timing.Timing("1 shard, batched parse", (0.11, 0.19, 0.2)),
        },
        "PNG files",
    )
    text = shard_reading.cold_summary(wide, overlap, sizes, [150.0])
    line = next(x for x in text.splitlines() if x.startswith("1 shard, batched parse: "))
    assert "the two rows' runs overlap" in line and "latency" not in line
    assert line.endswith("this run cannot tell reading from the disk from noise.")
    text = shard_reading.cold_summary(warm, cold, sizes, [150.0])
    assert "1 shard, PNG records: " in text and "by work per record, or the CPU" in text
    assert "added" not in shard_reading.cold_summary(warm, warm, sizes, [1_000.0])  # cold = warm
    assert "read this ratio as noise" in shard_reading.cold_summary(cold, warm, sizes, [150.0])
    same = shard_reading.cold_summary(warm, warm, sizes, [1_000.0])
    assert (
        "shows no clear change between cold and warm reads (quartile ratios 1.14-1.26x cold" in same
    )
    assert "the ranges overlap, so rerun with more repeats before drawing a conclusion" in same
    assert "shrank when" in shard_reading.cold_summary(cold, warm, sizes, [150.0])
    # the same rule as sizes_summary's: 109 % is near, 55 % about half, 33 % below half
    about_half = shard_reading.cold_summary(warm, cold, sizes, [163.2 / 0.55])
    assert "1 shard, batched parse: 163.2 MB/s cold, 55% of the disk's" in about_half
    assert "about half the disk's rate: too close to the line to say" in about_half
    below = shard_reading.cold_summary(warm, cold, sizes, [163.2 / 0.33]).splitlines()
    (line,) = [x for x in below if x.startswith("1 shard, batched parse")]
    assert "33% of the disk's" in line and "below half the disk's rate" in line
    assert isinstance(warm, pd.DataFrame)


def test_make_example_refuses_an_unknown_encoding(data):
    with pytest.raises(ValueError, match="encoding must be"):
        lesson.make_example(data[0][0], data[1][0], "jpeg2000")


# --- The exercise: two GZIP shards written in this run ------------------------------------------


def solve(out, images, labels, gzip=True, parts=2, encoding="raw"):
    for index, part in enumerate(np.array_split(np.arange(len(images)), parts)):
        lesson.write_shard(
            out / f"v-{index}-of-{parts}.tfrecord.gz", images[part], labels[part], encoding, gzip
        )


def test_the_stub_fails_even_when_an_earlier_run_left_correct_shards(tmp_path, data):
    images, labels = data
    out = tfrecords.fresh_dir(tmp_path / "exercise")
    solve(out, images, labels)
    assert tfrecords.check_two_gzip_shards(out, images, labels)  # an earlier, solved run
    out = tfrecords.fresh_dir(tmp_path / "exercise")  # the stub cell runs again, writes nothing
    feedback = tfrecords.check_two_gzip_shards(out, images, labels)
    assert not feedback and repr(feedback).startswith("Not yet: 0 TFRecord files")


def test_png_records_are_another_correct_answer(tmp_path, data):
    images, labels = data
    out = tfrecords.fresh_dir(tmp_path / "png")
    solve(out, images, labels, encoding="png")  # valid GZIP shards; PNG is lossless
    assert tfrecords.check_two_gzip_shards(out, images, labels)


def png_as_long_as_raw(shape):
    """An image whose PNG is exactly as many bytes as its raw pixels: noise added to a flat image,
    pixel by pixel, grows the PNG a few bytes at a time until it lands on that length."""
    import tensorflow as tf

    target = int(np.prod(shape))
    for seed in range(20):
        rng = np.random.default_rng(seed)
        image = np.zeros(shape, np.uint8)
        order = rng.permutation(shape[0] * shape[1])
        noise = rng.integers(0, 256, size=(len(order), shape[2]), dtype=np.uint8)
        lo, hi = 0, len(order)
        while lo < hi:  # the fewest noisy pixels whose PNG reaches the target length
            mid = (lo + hi) // 2
            trial = image.reshape(-1, shape[2]).copy()
            trial[order[:mid]] = noise[:mid]
            if len(tf.io.encode_png(trial.reshape(shape)).numpy()) < target:
                lo = mid + 1
            else:
                hi = mid
        for k in range(max(lo - 8, 0), min(lo + 8, len(order)) + 1):
            trial = image.reshape(-1, shape[2]).copy()
            trial[order[:k]] = noise[:k]
            if len(tf.io.encode_png(trial.reshape(shape)).numpy()) == target:
                return trial.reshape(shape)
    raise AssertionError(f"no PNG of exactly {target} bytes found")


def test_a_png_as_long_as_the_raw_pixels_is_read_as_png(tmp_path, data):
    """Raw or PNG is told by the PNG signature: a record whose PNG happens to be as long as the
    image's raw bytes was once reshaped as raw pixels and failed a correct answer."""
    import tensorflow as tf

    images, labels = data
    images = images.copy()
    images[3] = png_as_long_as_raw(images.shape[1:])
    assert len(tf.io.encode_png(images[3]).numpy()) == images[3].size
    out = tfrecords.fresh_dir(tmp_path / "png")
    solve(out, images, labels, encoding="png")
    feedback = tfrecords.check_two_gzip_shards(out, images, labels)
    assert feedback, feedback


def test_raw_pixels_that_start_like_a_jpeg_are_read_as_raw(tmp_path, data):
    """A first pixel of (255, 216, ...) starts with JPEG's two signature bytes: by its length the
    record is still raw, and a correct answer passes."""
    images, labels = data
    images = images.copy()
    images[0, 0, 0, :2] = (255, 216)
    assert images[0].tobytes().startswith(b"\xff\xd8")
    out = tfrecords.fresh_dir(tmp_path / "raw")
    solve(out, images, labels)
    feedback = tfrecords.check_two_gzip_shards(out, images, labels)
    assert feedback, feedback


@pytest.mark.parametrize("n", [7, 120, 250])  # odd, the unit-test size, the validation split's size
def test_the_solution_passes_at_every_size(tmp_path, n):
    images, labels = cifar.synthetic_images(n, seed=5)
    out = tfrecords.fresh_dir(tmp_path / "exercise")
    solve(out, images, labels)
    feedback = tfrecords.check_two_gzip_shards(out, images, labels)
    assert (
        feedback and repr(feedback) == f"Correct: {n} records in 2 GZIP shards, read back in order."
    )


def test_wrong_answers_are_named(tmp_path, data):
    images, labels = data
    cases = {
        "not GZIP": (dict(gzip=False), "is not GZIP-compressed: pass gzip=True"),
        "three shards": (dict(parts=3), "3 TFRecord files"),
        "JPEG records": (dict(encoding="jpeg"), "JPEG bytes, which are lossy: write raw or PNG"),
    }
    for name, (kwargs, message) in cases.items():
        out = tfrecords.fresh_dir(tmp_path / name)
        solve(out, images, labels, **kwargs)
        feedback = tfrecords.check_two_gzip_shards(out, images, labels)
        assert not feedback and message in repr(feedback), (name, feedback)
    out = tfrecords.fresh_dir(tmp_path / "swapped")
    lesson.write_shard(out / "a.tfrecord.gz", images[60:], labels[60:], gzip=True)
    lesson.write_shard(out / "b.tfrecord.gz", images[:60], labels[:60], gzip=True)
    assert "record 0 is not image 0" in repr(tfrecords.check_two_gzip_shards(out, images, labels))
    out = tfrecords.fresh_dir(tmp_path / "short")
    solve(out, images[:100], labels[:100])
    assert "hold 100 records; the split has 120" in repr(
        tfrecords.check_two_gzip_shards(out, images, labels)
    )
    out = tfrecords.fresh_dir(
        tmp_path / "lopsided"
    )  # every record, in order, but not split in halves
    lesson.write_shard(out / "a.tfrecord.gz", images[:1], labels[:1], gzip=True)
    lesson.write_shard(out / "b.tfrecord.gz", images[1:], labels[1:], gzip=True)
    assert "hold 1 and 119 records" in repr(tfrecords.check_two_gzip_shards(out, images, labels))


def test_an_unreadable_shard_is_feedback_not_an_exception(tmp_path, data, monkeypatch):
    images, labels = data
    out = tfrecords.fresh_dir(tmp_path / "unreadable")
    solve(out, images, labels)
    real = Path.open

    def refuse(self, *args, **kwargs):  # as root, chmod 000 would not stop a read
        if self.name.startswith("v-1"):
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", refuse)
    feedback = tfrecords.check_two_gzip_shards(out, images, labels)
    assert not feedback and "v-1-of-2.tfrecord.gz could not be read: Permission denied" in repr(
        feedback
    ), feedback


def test_a_shard_gone_while_read_is_feedback_not_an_exception(tmp_path, data, monkeypatch):
    import tensorflow as tf

    images, labels = data
    out = tfrecords.fresh_dir(tmp_path / "gone")
    solve(out, images, labels)

    def gone(path, **kwargs):  # removed after its first two bytes were read
        raise tf.errors.NotFoundError(None, None, f"{path}; No such file or directory")

    monkeypatch.setattr(tf.data, "TFRecordDataset", gone)
    feedback = tfrecords.check_two_gzip_shards(out, images, labels)
    assert not feedback and "v-0-of-2.tfrecord.gz could not be read: " in repr(feedback), feedback

    def silent(path, **kwargs):  # an error with no message at all is feedback too
        raise tf.errors.PermissionDeniedError(None, None, "")

    monkeypatch.setattr(tf.data, "TFRecordDataset", silent)
    feedback = tfrecords.check_two_gzip_shards(out, images, labels)
    assert not feedback and "v-0-of-2.tfrecord.gz could not be read" in repr(feedback), feedback


def test_shards_named_otherwise_are_found_and_mistakes_explained(tmp_path, data):
    import tensorflow as tf

    images, labels = data
    out = tfrecords.fresh_dir(tmp_path / "names")
    lesson.write_shard(out / "validation-0.gz", images[:60], labels[:60], gzip=True)
    lesson.write_shard(out / "validation-1.TFRec.gz", images[60:], labels[60:], gzip=True)
    (out / "shards.tfrecord").mkdir()  # a folder with a shard's name is not a shard
    assert tfrecords.check_two_gzip_shards(out, images, labels)
    out = tfrecords.fresh_dir(tmp_path / "short")  # .tfr, another common extension
    lesson.write_shard(out / "validation-0-of-2.tfr", images[:60], labels[:60], gzip=True)
    lesson.write_shard(out / "validation-1-of-2.tfr", images[60:], labels[60:], gzip=True)
    assert tfrecords.check_two_gzip_shards(out, images, labels)
    out = tfrecords.fresh_dir(tmp_path / "unnamed")
    lesson.write_shard(out / "first", images[:60], labels[:60], gzip=True)
    feedback = repr(tfrecords.check_two_gzip_shards(out, images, labels))
    assert "0 TFRecord files" in feedback and "other files there: first" in feedback, feedback
    out = tfrecords.fresh_dir(tmp_path / "no-shape")  # the Summary idiom's Example: no "shape"
    for index, part in enumerate((slice(0, 60), slice(60, 120))):
        with tf.io.TFRecordWriter(str(out / f"v-{index}.tfrecord.gz"), "GZIP") as writer:
            for image, label in zip(images[part], labels[part], strict=True):
                feature = {
                    "image": tf.train.Feature(
                        bytes_list=tf.train.BytesList(value=[image.tobytes()])
                    ),
                    "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(label)])),
                }
                example = tf.train.Example(features=tf.train.Features(feature=feature))
                writer.write(example.SerializeToString())
    feedback = repr(tfrecords.check_two_gzip_shards(out, images, labels))
    assert "not an Example as write_shard writes it" in feedback and "shape" in feedback, feedback
    missing = repr(tfrecords.check_two_gzip_shards(tmp_path / "exercize", images, labels))
    assert "is not a folder" in missing, missing
    one_shard = out / "v-0.tfrecord.gz"  # a shard's path instead of its folder
    assert "is not a folder" in repr(tfrecords.check_two_gzip_shards(one_shard, images, labels))
    (out / ".v-2.tfrecord.gz.tmp").write_bytes(b"")  # a hidden temporary file is not a shard
    assert len(tfrecords.shard_files(out)) == 2


def test_fresh_dir_removes_only_files_named_like_shards(tmp_path):
    (tmp_path / "keep.txt").write_text("notes")
    (tmp_path / "old.tfrecord.gz").write_bytes(b"x")
    (tmp_path / "older.gz").write_bytes(b"x")
    assert tfrecords.fresh_dir(tmp_path) == tmp_path
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]
    with pytest.raises(ValueError, match="is a file"):
        tfrecords.fresh_dir(tmp_path / "keep.txt")


def test_shard_size_variants_read_every_record_of_each_layout(tmp_path):
    images, labels = cifar.synthetic_images(200, seed=12)
    layouts = {}
    for target in (2**20, 2**14):
        tfrecords.convert(
            images, labels, tmp_path / str(target), "all", target_bytes=target, progress=False
        )
        layouts[f"{target}"] = tfrecords.shard_paths(tmp_path / str(target), "all")
    assert len(layouts["1048576"]) == 1 and len(layouts["16384"]) > 10
    built = lesson.shard_size_variants(layouts)
    assert len(built) == 6 and {read() for read in built.values()} == {200}
    with pytest.raises(TypeError, match="for one shard write \\[path\\]"):
        lesson.read_records(layouts["1048576"][0])
    with pytest.raises(TypeError, match="for one shard write \\[path\\]"):
        lesson.read_records_batched_per_file(layouts["1048576"][0])


def test_sizes_and_shares_summaries():
    import pandas as pd

    sizes = pd.DataFrame(
        {"MB_per_s": [600.0, 300.0]}, index=["big, one file at a time", "small, one file at a time"]
    )
    text = shard_reading.sizes_summary(sizes, [1000.0, 1200.0, 1100.0])
    assert "the fastest, big, one file at a time, reached 55% of the disk's 1,100 MB/s" in text
    assert "about half of it: too close to the line" in text  # 55 %
    slow = shard_reading.sizes_summary(sizes, [1800.0])  # 33 %: below the notebook's "near"
    assert "reached 33% of the disk's 1,800 MB/s" in slow and "below half of it" in slow
    assert "near it: the disk's throughput" in shard_reading.sizes_summary(sizes, [900.0])  # 67 %
    assert shard_reading.sizes_summary(sizes, None).startswith("Read warm")
    shares = pd.DataFrame(
        [
            {"layout": "4 big", "workers": 8, "files each (fewest-most)": "0-1", "idle workers": 4},
            {
                "layout": "400 small",
                "workers": 8,
                "files each (fewest-most)": "50-50",
                "idle workers": 0,
            },
            {
                "layout": "390 small",
                "workers": 8,
                "files each (fewest-most)": "48-49",
                "idle workers": 0,
            },
        ]
    )
    text = shard_reading.shares_summary(shares)
    assert "4 big among 8 workers: 4 of them get no file and sit idle" in text
    assert "400 small among 8 workers: every worker gets 50 files" in text
    assert "every worker gets 48 to 49 files" in text
