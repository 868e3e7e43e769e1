"""Bad input to the data helpers (issue 20): CIFAR files, TFRecord shards, the readers' inputs.

Property tests feed every public function a learner calls (``cifar``, ``tfrecords``,
``shard_reading``, ``fileio``) wrong types, out-of-range and huge values, damaged files and paths
that are files where a folder is needed; each must be refused quickly with a ``TypeError`` /
``ValueError`` naming the argument. The tests after them pin each finding of the issue: a pickle
never runs code, pixel values and labels never wrap or truncate silently, a damaged manifest or
archive is named, the CLI prints one line.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import subprocess
import sys
import tarfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import fileio
from helpers.datasets import cifar, cifar_download
from helpers.topics.pack_files_into_shards import shard_reading, tfrecords, tfrecords_manifest
from tests import badinput
from tests.badinput import bad_whole, not_a_flag, wrong_type

ROOT = Path(__file__).resolve().parents[1]


class Marker:
    """A pickle payload: unpickling it would create the file ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (self.path, "w"))


def evil_batch(marker: Path) -> bytes:
    return pickle.dumps(
        {b"data": np.zeros((2, 3072), np.uint8), b"labels": [1, 2], b"x": Marker(marker)},
        protocol=2,
    )


@pytest.fixture(scope="module")
def ctx(tmp_path_factory) -> SimpleNamespace:
    root = tmp_path_factory.mktemp("bad")
    images, labels = cifar.synthetic_images(8, seed=1)
    afile = root / "notes.txt"
    afile.write_text("not data")
    sample = cifar.make_sample(root / "sample", per_batch=4)
    archive = root / "cifar.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(sample, arcname=cifar.FOLDER)
    truncated = root / "truncated.tar.gz"
    truncated.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    evil = root / "evil.pkl"
    evil.write_bytes(evil_batch(root / "MARKER"))
    listed = root / "list.pkl"
    listed.write_bytes(pickle.dumps([1, 2], protocol=2))
    (root / "empty").mkdir()
    (root / "work").mkdir()
    (root / "work" / "notes.txt").write_text("mine")
    return SimpleNamespace(
        root=root,
        images=images,
        labels=labels,
        afile=afile,
        under_file=afile / "sub",
        missing=root / "missing.bin",
        sample=sample,
        truncated=truncated,
        evil=evil,
        listed=listed,
        empty=root / "empty",
        marker=root / "MARKER",
        work=root / "work",
    )


# --- strategies ---------------------------------------------------------------------------------


def not_a_path() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.none(),
        st.integers(),
        st.floats(),
        st.lists(st.text(max_size=2), max_size=2),
        st.just(""),
        st.just("   "),
        st.binary(max_size=2),
        st.booleans(),
    )


def bad_images() -> st.SearchStrategy[Any]:
    """Not images: wrong kinds, wrong shapes, values a uint8 would wrap, non-whole pixels, empty."""
    arrays = [
        np.full((8, 32, 32, 3), 300, np.int64),
        np.full((8, 32, 32, 3), -1, np.int16),
        np.full((8, 32, 32, 3), 0.5),
        np.full((8, 32, 32, 3), np.nan),
        np.zeros((8, 32, 32)),
        np.zeros((8, 32, 32, 5), np.uint8),
        np.zeros((0, 32, 32, 3), np.uint8),
        np.zeros((8, 32, 32, 3), bool),
        np.array(["a"] * 8),
        np.zeros(8, np.uint8),
    ]
    return st.one_of(wrong_type(), st.sampled_from(arrays), st.integers())


def bad_labels() -> st.SearchStrategy[Any]:
    """Not 8 labels 0-9: wrong kinds, out of range, fractional, wrong length or shape."""
    arrays = [
        np.full(8, 10),
        np.full(8, -1),
        np.full(8, 3.7),
        np.full(8, np.nan),
        np.zeros(7, np.int64),
        np.zeros((8, 1), np.int64),
        np.zeros(8, bool),
        np.array(["cat"] * 8),
        [0] * 9,
        [1.5] * 8,
    ]
    return st.one_of(wrong_type(), st.sampled_from(arrays), st.integers())


def bad_md5() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.sampled_from(["", "abc", "z" * 32, "0" * 31, "0" * 33]), st.integers(), st.none()
    )


def bad_split() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.sampled_from(["", "../train", "a b", "train/x", "é", "-"]), st.integers(), st.none()
    )


def bad_classes() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.sampled_from(["airplane", ["a", "a"], ["../x", "b"], [], [1, 2], ["a", ""]]),
        st.none(),
        st.integers(),
    )


def no_none(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return strategy.filter(lambda v: v is not None)


FILE_ERRORS = (FileNotFoundError,)
#: Files whose content is wrong: the error names the file.
CONTENT = {"text": "notes.txt", "evil": "evil.pkl", "list": "list.pkl"}
#: The cases whose values "text", "evil" and "list" stand for those files. Another case can draw
#: the same strings as plain bad values (Hypothesis mixes in string constants found in the loaded
#: modules, so which it draws depends on what the worker imported before): they name the argument.
CONTENT_CASES = {("cifar.read_batch", "path")}

# (module, argument, strategy, call(ctx, value)); every call must be refused naming the argument.
CASES: list[tuple[str, str, Any, Any]] = [
    # cifar
    (
        "cifar.md5_of",
        "path",
        st.one_of(not_a_path(), st.just("dir")),
        lambda c, v: cifar_download.md5_of(c.root if v == "dir" else v),
    ),
    ("cifar.md5_of", "chunk", bad_whole(1, 2**30), lambda c, v: cifar_download.md5_of(c.afile, v)),
    (
        "cifar.download",
        "md5",
        bad_md5(),
        lambda c, v: cifar.download(c.root / "dl", url="file:///nowhere", md5=v),
    ),
    (
        "cifar.download",
        "timeout",
        badinput.bad_number(0, 600),
        lambda c, v: cifar.download(c.root / "dl", timeout=v),
    ),
    (
        "cifar.extract",
        "archive_path",
        st.one_of(not_a_path(), st.sampled_from(["missing", "dir", "text", "truncated"])),
        lambda c, v: cifar.extract(
            {"missing": c.missing, "dir": c.root, "text": c.afile, "truncated": c.truncated}.get(
                v, v
            )
            if isinstance(v, str)
            else v,
            c.root / "out",
        ),
    ),
    (
        "cifar.extract",
        "dest_dir",
        st.one_of(not_a_path(), st.sampled_from(["file", "under"])),
        lambda c, v: cifar.extract(
            c.truncated,
            {"file": c.afile, "under": c.under_file}.get(v, v) if isinstance(v, str) else v,
        ),
    ),
    (
        "cifar.read_batch",
        "path",
        st.one_of(not_a_path(), st.sampled_from(["missing", "dir", "text", "evil", "list"])),
        lambda c, v: cifar.read_batch(
            {
                "missing": c.missing,
                "dir": c.root,
                "text": c.afile,
                "evil": c.evil,
                "list": c.listed,
            }.get(v, v)
            if isinstance(v, str)
            else v
        ),
    ),
    (
        "cifar.read_folder",
        "folder",
        st.one_of(not_a_path(), st.sampled_from(["file", "empty"])),
        lambda c, v: cifar.read_folder(
            {"file": c.afile, "empty": c.empty}.get(v, v) if isinstance(v, str) else v
        ),
    ),
    (
        "cifar.load_splits",
        "folder",
        st.one_of(not_a_path(), st.sampled_from(["file", "empty"])),
        lambda c, v: cifar.load_splits(
            {"file": c.afile, "empty": c.empty}.get(v, v) if isinstance(v, str) else v
        ),
    ),
    (
        "cifar.locate",
        "data_dir",
        st.one_of(not_a_path(), st.just("file")),
        lambda c, v: cifar.locate(c.afile if v == "file" else v),
    ),
    (
        "cifar.locate",
        "download_real",
        not_a_flag(),
        lambda c, v: cifar.locate(c.empty, download_real=v),
    ),
    ("cifar.locate", "md5", bad_md5(), lambda c, v: cifar.locate(c.empty, md5=v)),
    (
        "cifar.make_sample",
        "out_dir",
        st.one_of(not_a_path(), st.sampled_from(["file", "under"])),
        lambda c, v: cifar.make_sample(
            {"file": c.afile, "under": c.under_file}.get(v, v) if isinstance(v, str) else v, 1
        ),
    ),
    (
        "cifar.make_sample",
        "per_batch",
        bad_whole(1, 10_000),
        lambda c, v: cifar.make_sample(c.root / "s", v),
    ),
    (
        "cifar.make_sample",
        "seed",
        bad_whole(0, 2**63 - 1),
        lambda c, v: cifar.make_sample(c.root / "s", 1, v),
    ),
    (
        "cifar.synthetic_images",
        "n",
        bad_whole(0, 10**10),
        lambda c, v: cifar.synthetic_images(v, 0),
    ),
    (
        "cifar.synthetic_images",
        "seed",
        bad_whole(0, 2**63 - 1),
        lambda c, v: cifar.synthetic_images(2, v),
    ),
    (
        "cifar.examples_figure",
        "images",
        bad_images(),
        lambda c, v: cifar.examples_figure(v, c.labels, 2),
    ),
    (
        "cifar.examples_figure",
        "labels",
        bad_labels(),
        lambda c, v: cifar.examples_figure(c.images, v, 2),
    ),
    (
        "cifar.examples_figure",
        "n",
        bad_whole(1, 8),
        lambda c, v: cifar.examples_figure(c.images, c.labels, v),
    ),
    # tfrecords
    (
        "tfrecords.plan_shards",
        "n_records",
        st.one_of(st.integers(max_value=0), st.floats(), wrong_type()),
        lambda c, v: tfrecords.plan_shards(v, 100, 300),
    ),
    (
        "tfrecords.plan_shards",
        "record_bytes",
        bad_whole(1, 2**40),
        lambda c, v: tfrecords.plan_shards(10, v, 300),
    ),
    (
        "tfrecords.plan_shards",
        "target_bytes",
        bad_whole(1, 2**40),
        lambda c, v: tfrecords.plan_shards(10, 100, v),
    ),
    (
        "tfrecords.plan_shards",
        "n_shards",
        no_none(bad_whole(1, 10)),
        lambda c, v: tfrecords.plan_shards(10, 100, 300, v),
    ),
    (
        "tfrecords.shard_name",
        "split",
        bad_split(),
        lambda c, v: tfrecords.shard_name(v, 0, 3, False),
    ),
    (
        "tfrecords.shard_name",
        "index",
        bad_whole(0, 2),
        lambda c, v: tfrecords.shard_name("train", v, 3, False),
    ),
    (
        "tfrecords.shard_name",
        "count",
        bad_whole(1, getattr(tfrecords, "MAX_SHARDS", 99_999)),
        lambda c, v: tfrecords.shard_name("train", 0, v, False),
    ),
    (
        "tfrecords.shard_name",
        "gzip",
        not_a_flag(),
        lambda c, v: tfrecords.shard_name("train", 0, 3, v),
    ),
    (
        "tfrecords.convert",
        "images",
        bad_images(),
        lambda c, v: tfrecords.convert(v, c.labels, c.root / "c", "train", progress=False),
    ),
    (
        "tfrecords.convert",
        "labels",
        bad_labels(),
        lambda c, v: tfrecords.convert(c.images, v, c.root / "c", "train", progress=False),
    ),
    (
        "tfrecords.convert",
        "out_dir",
        st.one_of(not_a_path(), st.sampled_from(["file", "under"])),
        lambda c, v: tfrecords.convert(
            c.images,
            c.labels,
            {"file": c.afile, "under": c.under_file}.get(v, v) if isinstance(v, str) else v,
            "train",
            progress=False,
        ),
    ),
    (
        "tfrecords.convert",
        "split",
        bad_split(),
        lambda c, v: tfrecords.convert(c.images, c.labels, c.root / "c", v, progress=False),
    ),
    (
        "tfrecords.convert",
        "target_bytes",
        bad_whole(1, 2**40),
        lambda c, v: tfrecords.convert(
            c.images, c.labels, c.root / "c", "train", target_bytes=v, progress=False
        ),
    ),
    (
        "tfrecords.convert",
        "gzip",
        not_a_flag(),
        lambda c, v: tfrecords.convert(
            c.images, c.labels, c.root / "c", "train", gzip=v, progress=False
        ),
    ),
    (
        "tfrecords.convert",
        "encoding",
        st.one_of(st.sampled_from(["JPEG", "jpg", "png ", "gif", ""]), st.none(), st.integers()),
        lambda c, v: tfrecords.convert(
            c.images, c.labels, c.root / "c", "train", encoding=v, progress=False
        ),
    ),
    (
        "tfrecords.convert",
        "progress",
        not_a_flag(),
        lambda c, v: tfrecords.convert(c.images, c.labels, c.root / "c", "train", progress=v),
    ),
    (
        "tfrecords.convert",
        "n_shards",
        no_none(bad_whole(1, 8)),
        lambda c, v: tfrecords.convert(
            c.images, c.labels, c.root / "c", "train", n_shards=v, progress=False
        ),
    ),
    (
        "tfrecords.verify",
        "out_dir",
        not_a_path(),
        lambda c, v: tfrecords.verify(v, c.images, c.labels, "train", progress=False),
    ),
    (
        "tfrecords.verify",
        "images",
        bad_images(),
        lambda c, v: tfrecords.verify(c.empty, v, c.labels, "train", progress=False),
    ),
    (
        "tfrecords.verify",
        "labels",
        bad_labels(),
        lambda c, v: tfrecords.verify(c.empty, c.images, v, "train", progress=False),
    ),
    (
        "tfrecords.verify",
        "split",
        bad_split(),
        lambda c, v: tfrecords.verify(c.empty, c.images, c.labels, v, progress=False),
    ),
    (
        "tfrecords.verify",
        "progress",
        not_a_flag(),
        lambda c, v: tfrecords.verify(c.empty, c.images, c.labels, "train", progress=v),
    ),
    (
        "tfrecords.shard_paths",
        "out_dir",
        not_a_path(),
        lambda c, v: tfrecords.shard_paths(v, "train"),
    ),
    ("tfrecords.shard_paths", "split", bad_split(), lambda c, v: tfrecords.shard_paths(c.empty, v)),
    (
        "tfrecords.fresh_dir",
        "path",
        st.one_of(not_a_path(), st.sampled_from(["file", "under"])),
        lambda c, v: tfrecords.fresh_dir(
            {"file": c.afile, "under": c.under_file}.get(v, v) if isinstance(v, str) else v
        ),
    ),
    (
        "tfrecords.flip_bit",
        "path",
        st.one_of(not_a_path(), st.sampled_from(["missing", "dir"])),
        lambda c, v: tfrecords.flip_bit(
            {"missing": c.missing, "dir": c.root}.get(v, v) if isinstance(v, str) else v
        ),
    ),
    (
        "tfrecords.flip_bit",
        "offset",
        no_none(bad_whole(0, 7)),
        lambda c, v: tfrecords.flip_bit(c.afile, v),
    ),
    (
        "tfrecords_manifest.where_in_record",
        "path",
        st.one_of(not_a_path(), st.sampled_from(["missing", "dir"])),
        lambda c, v: tfrecords_manifest.where_in_record(
            {"missing": c.missing, "dir": c.root}.get(v, v) if isinstance(v, str) else v, 0
        ),
    ),
    (
        "tfrecords_manifest.where_in_record",
        "offset",
        no_none(bad_whole(0, 7)),
        lambda c, v: tfrecords_manifest.where_in_record(c.afile, v),
    ),
    ("tfrecords.read_manifest", "out_dir", not_a_path(), lambda c, v: tfrecords.read_manifest(v)),
    # shard_reading
    (
        "shard_reading.write_image_files",
        "images",
        bad_images(),
        lambda c, v: shard_reading.write_image_files(v, c.labels, c.root / "png", cifar.CLASSES),
    ),
    (
        "shard_reading.write_image_files",
        "labels",
        bad_labels(),
        lambda c, v: shard_reading.write_image_files(c.images, v, c.root / "png", cifar.CLASSES),
    ),
    (
        "shard_reading.write_image_files",
        "out_dir",
        st.one_of(not_a_path(), st.sampled_from(["file", "under", "work", "."])),
        lambda c, v: shard_reading.write_image_files(
            c.images,
            c.labels,
            {"file": c.afile, "under": c.under_file, "work": c.work}.get(v, v)
            if isinstance(v, str)
            else v,
            cifar.CLASSES,
        ),
    ),
    (
        "shard_reading.write_image_files",
        "classes",
        bad_classes(),
        lambda c, v: shard_reading.write_image_files(c.images, c.labels, c.root / "png", v),
    ),
    (
        "shard_reading.reader_inputs",
        "workdir",
        st.one_of(not_a_path(), st.just("file")),
        lambda c, v: shard_reading.reader_inputs(
            c.afile if v == "file" else v, c.images, c.labels, cifar.CLASSES
        ),
    ),
    (
        "shard_reading.reader_inputs",
        "images",
        st.one_of(bad_images(), st.just(np.zeros((3, 32, 32, 3), np.uint8))),
        lambda c, v: shard_reading.reader_inputs(c.root / "r", v, c.labels, cifar.CLASSES),
    ),
    (
        "shard_reading.reader_inputs",
        "labels",
        bad_labels(),
        lambda c, v: shard_reading.reader_inputs(c.root / "r", c.images, v, cifar.CLASSES),
    ),
    (
        "shard_reading.reader_inputs",
        "classes",
        bad_classes(),
        lambda c, v: shard_reading.reader_inputs(c.root / "r", c.images, c.labels, v),
    ),
    (
        "shard_reading.files_vs_reader",
        "reader",
        st.one_of(st.sampled_from(["PNG files", "4 shards", ""]), st.none(), st.integers()),
        lambda c, v: shard_reading.files_vs_reader(v, 8, c.root / "w"),
    ),
    (
        "shard_reading.files_vs_reader",
        "n",
        bad_whole(4, 10**9),
        lambda c, v: shard_reading.files_vs_reader("1 shard, batched parse", v, c.root / "w"),
    ),
    (
        "shard_reading.files_vs_reader",
        "workdir",
        no_none(st.one_of(not_a_path(), st.just("file"))),
        lambda c, v: shard_reading.files_vs_reader(
            "1 shard, batched parse", 8, c.afile if v == "file" else v
        ),
    ),
    # fileio
    (
        "fileio.atomic_write_text",
        "path",
        st.one_of(not_a_path(), st.sampled_from(["dir", "under"])),
        lambda c, v: fileio.atomic_write_text(
            {"dir": c.root, "under": c.under_file / "x.json"}.get(v, v)
            if isinstance(v, str)
            else v,
            "{}",
        ),
    ),
    (
        "fileio.atomic_write_text",
        "text",
        st.one_of(st.none(), st.integers(), st.binary(max_size=2)),
        lambda c, v: fileio.atomic_write_text(c.root / "w.txt", v),
    ),
    (
        "fileio.make_folder",
        "path",
        st.one_of(not_a_path(), st.sampled_from(["file", "under"])),
        lambda c, v: fileio.make_folder(
            {"file": c.afile, "under": c.under_file}.get(v, v) if isinstance(v, str) else v
        ),
    ),
]


@pytest.mark.parametrize(
    "module,arg,strategy,call", CASES, ids=[f"{m}:{a}" for m, a, _, _ in CASES]
)
def test_bad_input_is_refused_naming_the_argument(ctx, monkeypatch, module, arg, strategy, call):
    # Relative paths ("", ".") land in a scratch folder, never in the repository.
    (ctx.root / "cwd").mkdir(exist_ok=True)
    monkeypatch.chdir(ctx.root / "cwd")

    @given(value=strategy)
    def check(value):
        # A damaged file is named by its file name (read_folder reads several); the rest by the
        # argument.
        by_file = (module, arg) in CONTENT_CASES and isinstance(value, str)
        named = CONTENT.get(value, arg) if by_file else arg
        badinput.refused(module, named, lambda: call(ctx, value), value, errors=FILE_ERRORS)

    check()
    assert not ctx.marker.exists(), "a pickle ran code"
    assert ctx.afile.read_text() == "not data" and (ctx.work / "notes.txt").read_text() == "mine"


# --- 1. a data file never runs code -------------------------------------------------------------


def folder_with(tmp_path: Path, sample: Path, name: str, data: bytes) -> Path:
    folder = tmp_path / "src" / cifar.FOLDER
    folder.mkdir(parents=True)
    for file in cifar.FILES:
        (folder / file).write_bytes((sample / file).read_bytes())
    (folder / name).write_bytes(data)
    return folder


@pytest.mark.parametrize("how", ["read_batch", "read_folder", "load_splits", "extract"])
def test_a_pickle_with_reduce_never_runs(tmp_path, ctx, how):
    marker = tmp_path / "MARKER"
    folder = folder_with(tmp_path, ctx.sample, "data_batch_1", evil_batch(marker))
    archive = tmp_path / "evil.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(folder, arcname=cifar.FOLDER)
    calls = {
        "read_batch": lambda: cifar.read_batch(folder / "data_batch_1"),
        "read_folder": lambda: cifar.read_folder(folder),
        "load_splits": lambda: cifar.load_splits(folder),
        "extract": lambda: cifar.extract(archive, tmp_path / "data"),
    }
    with pytest.raises(ValueError, match=r"data_batch_1: refused: it names io\.open"):
        calls[how]()
    assert not marker.exists()


def test_os_system_is_refused_too(tmp_path):
    marker = tmp_path / "MARKER"
    payload = b"cos\nsystem\n(V" + f"touch {marker}".encode() + b"\ntR."
    (tmp_path / "b").write_bytes(payload)
    with pytest.raises(ValueError, match="refused: it names os.system"):
        cifar.read_batch(tmp_path / "b")
    assert not marker.exists()


def test_real_cifar_batches_still_load(tmp_path, ctx):
    shipped = cifar.read_folder(cifar.SHIPPED_SAMPLE / cifar.FOLDER)
    assert shipped["data_batch_1"][0].shape == (250, 32, 32, 3)
    assert len(cifar.read_folder(ctx.sample)["test_batch"][1]) == 4
    # The real archive was pickled by Python 2 with NumPy 1: numpy.core.multiarray, str keys as
    # bytes.
    py2 = pickle.dumps(
        {
            b"data": np.arange(2 * 3072).astype(np.uint8).reshape(2, 3072),
            b"labels": [1, 9],
            b"batch_label": b"x",
        },
        protocol=2,
    ).replace(b"numpy._core.multiarray", b"numpy.core.multiarray")
    assert b"numpy.core.multiarray\n_reconstruct" in py2
    (tmp_path / "b").write_bytes(py2)
    batch = cifar.read_batch(tmp_path / "b")
    assert batch[b"labels"] == [1, 9] and batch[b"data"][1, 5] == (3072 + 5) % 256


# --- 2. archives, checksums, samples, folders ---------------------------------------------------


def test_truncated_archive_is_named(tmp_path, ctx):
    with pytest.raises(ValueError, match=r"truncated\.tar\.gz is not a complete tar archive"):
        cifar.extract(ctx.truncated, tmp_path / "data")
    assert list((tmp_path / "data").iterdir()) == []


def test_an_upper_case_md5_is_accepted(tmp_path, ctx):
    archive = tmp_path / "cifar-10-python.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(ctx.sample, arcname=cifar.FOLDER)
    got = cifar.download(
        tmp_path / "dl", url=archive.as_uri(), md5=cifar_download.md5_of(archive).upper()
    )
    assert got.read_bytes() == archive.read_bytes()


def test_an_empty_sample_is_refused(tmp_path):
    with pytest.raises(ValueError, match="per_batch must be a whole number from 1"):
        cifar.make_sample(tmp_path, per_batch=0)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "call",
    [
        lambda p: tfrecords.fresh_dir(p / "x"),
        lambda p: cifar.make_sample(p / "x", 1),
        lambda p: fileio.atomic_write_text(p / "x" / "a.json", "{}"),
    ],
)
def test_a_file_where_a_folder_is_needed_is_named(tmp_path, call):
    (tmp_path / "f").write_text("")
    with pytest.raises(ValueError, match=rf"{tmp_path / 'f'} is a file .*a folder is needed"):
        call(tmp_path / "f")


# --- 3. silently wrong data ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "images,labels,kwargs,message",
    [
        (
            np.full((3, 4, 4, 3), 300, np.int64),
            [1, 2, 3],
            {},
            "found values from 300 to 300, which uint8 would wrap",
        ),
        (np.zeros((3, 4, 4, 3), np.uint8), [1, 10, 3], {}, r"labels\[1\] is 10"),
        (np.zeros((3, 4, 4, 3), np.uint8), [1.0, 3.7, 3.0], {}, r"labels\[1\] is 3.7"),
        (
            np.zeros((3, 4, 4, 3), np.uint8),
            [1, 2, 3],
            {"encoding": "gif"},
            "encoding must be one of 'raw', 'png', 'jpeg'",
        ),
        (
            np.zeros((3, 4, 4, 3), np.uint8),
            [1, 2, 3],
            {"n_shards": 10},
            "n_shards=10 is more shards than the 3 images",
        ),
        (np.zeros((0, 4, 4, 3), np.uint8), [], {}, "images is empty"),
        (np.zeros((3, 4, 4, 3), np.uint8), [1, 2], {}, "3 images but 2 labels"),
        (
            np.zeros((3, 4, 4), np.uint8),
            [1, 2, 3],
            {},
            r"images must have the shape N x height x width x channels",
        ),
        (np.zeros((3, 4, 4, 3), np.float32) + 0.25, [1, 2, 3], {}, "whole pixel values 0-255"),
    ],
)
def test_convert_refuses_data_it_would_store_wrongly(tmp_path, images, labels, kwargs, message):
    with pytest.raises(ValueError, match=message):
        tfrecords.convert(images, labels, tmp_path / "out", "train", progress=False, **kwargs)
    assert not list(tmp_path.rglob("*.tfrecord*"))


def test_whole_valued_integers_and_floats_are_still_taken(tmp_path):
    images = np.arange(2 * 4 * 4 * 3).reshape(2, 4, 4, 3)  # int64, all within 0-255
    shards = tfrecords.convert(images, np.array([1.0, 9.0]), tmp_path, "train", progress=False)
    assert [s.records for s in shards] == [2]


@pytest.mark.parametrize(
    "content,message",
    [
        ("{not json", "not valid JSON"),
        ('{"train": {"shards": []}}', "exactly 'options' and 'shards'"),
        ('{"train": {"options": {"gzip": "no", "encoding": "raw"}, "shards": []}}', "has options"),
        (
            '{"train": {"options": {"gzip": false, "encoding": "raw"}, '
            '"shards": [{"file": "../../etc/passwd", "records": 1,'
            ' "sha256": "' + "0" * 64 + '", "source_sha256": "' + "0" * 64 + '"}]}}',
            "names the shard file '../../etc/passwd'",
        ),
        ("[]", "not a dict of splits"),
    ],
)
def test_a_damaged_manifest_is_named(tmp_path, content, message):
    (tmp_path / "manifest.json").write_text(content)
    for call in (
        lambda: tfrecords.read_manifest(tmp_path),
        lambda: tfrecords.shard_paths(tmp_path, "train"),
        lambda: tfrecords.convert(
            np.zeros((2, 4, 4, 3), np.uint8), [1, 2], tmp_path, "train", progress=False
        ),
    ):
        with pytest.raises(ValueError, match=rf"manifest\.json is damaged: .*{re.escape(message)}"):
            call()


def test_a_manifest_cannot_make_convert_delete_files_outside_its_folder(tmp_path):
    outside = tmp_path / "precious.tfrecord"
    outside.write_text("keep")
    (tmp_path / "out").mkdir()
    shard = {
        "file": "../precious.tfrecord",
        "records": 1,
        "sha256": "0" * 64,
        "source_sha256": "0" * 64,
    }
    (tmp_path / "out" / "manifest.json").write_text(
        json.dumps({"train": {"options": {"gzip": False, "encoding": "raw"}, "shards": [shard]}})
    )
    with pytest.raises(ValueError, match="is damaged"):
        tfrecords.convert(
            np.zeros((2, 4, 4, 3), np.uint8), [1, 2], tmp_path / "out", "train", progress=False
        )
    assert outside.read_text() == "keep"


def test_write_image_files_never_replaces_a_folder_of_other_files(tmp_path, monkeypatch, ctx):
    """The old code replaced out_dir whatever it held: out_dir="" or "." deleted the current
    folder."""
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "notes.txt").write_text("mine")
    monkeypatch.chdir(tmp_path / "work")
    for out_dir in (".", tmp_path / "work", tmp_path):
        with pytest.raises(ValueError, match="out_dir: "):
            shard_reading.write_image_files(ctx.images, ctx.labels, out_dir, cifar.CLASSES)
    assert (tmp_path / "work" / "notes.txt").read_text() == "mine"
    files = shard_reading.write_image_files(ctx.images, ctx.labels, tmp_path / "png", cifar.CLASSES)
    assert (
        shard_reading.write_image_files(ctx.images, ctx.labels, tmp_path / "png", cifar.CLASSES)
        == files
    )


# --- 4./5. sizes and flags ----------------------------------------------------------------------


def test_sizes_that_cannot_fit_are_refused_before_allocating():
    with pytest.raises(ValueError, match=r"synthetic_images\(n=100,000,000\) needs about"):
        cifar.synthetic_images(10**8, 0)  # under the count cap, over the memory
    with pytest.raises(ValueError, match="target_bytes=1 would make 1,000,000 shards"):
        tfrecords.plan_shards(10**6, 100, 1)


# --- 7. the CLI ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args,code",
    [
        (["make-sample"], 2),
        (["bake-sample", "x"], 2),
        (["make-sample", "FILE"], 1),
        (["make-sample", "OUT", "0"], 1),
        (["make-sample", "OUT", "abc"], 2),
    ],
)
def test_cli_bad_arguments_print_one_line(tmp_path, args, code):
    (tmp_path / "file").write_text("")
    args = [{"FILE": str(tmp_path / "file"), "OUT": str(tmp_path / "out")}.get(a, a) for a in args]
    done = subprocess.run(
        [sys.executable, "-m", "helpers.datasets.cifar", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    assert done.returncode == code
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert not (tmp_path / "out" / cifar.FOLDER).exists()


def test_a_pickle_in_batches_meta_is_refused_the_same_way(tmp_path, ctx):
    folder = folder_with(tmp_path, ctx.sample, "batches.meta", evil_batch(tmp_path / "M"))
    with pytest.raises(ValueError, match="batches.meta: refused"):
        cifar.read_batch(folder / "batches.meta")
    assert not (tmp_path / "M").exists()


def test_an_archive_larger_than_the_free_disk_is_refused_before_extracting(
    tmp_path, ctx, monkeypatch
):
    from collections import namedtuple

    from helpers.datasets import datafiles

    archive = tmp_path / "a.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(ctx.sample, arcname=cifar.FOLDER)
    monkeypatch.setattr(
        datafiles.shutil, "disk_usage", lambda p: namedtuple("U", "total used free")(0, 0, 1000)
    )
    with pytest.raises(ValueError, match="MiB free under"):
        cifar.extract(archive, tmp_path / "data")
    assert list((tmp_path / "data").iterdir()) == []
