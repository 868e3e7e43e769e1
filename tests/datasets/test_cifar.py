"""Unit tests for helpers.datasets.cifar: verified download (offline, from a local fake archive),
safe
extraction, reading, and the shipped sample's format."""

from __future__ import annotations

import hashlib
import io
import pickle
import socket
import tarfile
from pathlib import Path

import numpy as np
import pytest

from helpers.datasets import cifar, cifar_download


@pytest.fixture(scope="module")
def sample_folder(tmp_path_factory) -> Path:
    return cifar.make_sample(tmp_path_factory.mktemp("sample"), per_batch=20)


def make_archive(path: Path, folder: Path, extra: dict[str, bytes] | None = None) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        archive.add(folder, arcname=cifar.FOLDER)
        for name, data in (extra or {}).items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes(), usedforsecurity=False).hexdigest()


def test_shipped_sample_has_the_cifar_layout_and_format():
    folder = cifar.SHIPPED_SAMPLE / cifar.FOLDER
    assert sorted(p.name for p in folder.iterdir() if p.name != "README.txt") == sorted(cifar.FILES)
    with open(folder / "data_batch_1", "rb") as handle:
        assert handle.read(2) == b"\x80\x02"  # pickle protocol 2, as the real archive
    batch = cifar.read_batch(folder / "data_batch_1")
    assert set(batch) == {b"batch_label", b"data", b"labels", b"filenames"}
    assert batch[b"data"].dtype == np.uint8 and batch[b"data"].shape[1] == 3072
    assert batch[b"batch_label"].startswith(b"SYNTHETIC")
    meta = cifar.read_batch(folder / "batches.meta")
    assert [n.decode() for n in meta[b"label_names"]] == list(cifar.CLASSES)


def test_sample_is_reproducible(tmp_path):
    again = cifar.make_sample(tmp_path, per_batch=250)
    shipped = cifar.SHIPPED_SAMPLE / cifar.FOLDER
    for name in cifar.FILES:
        assert (again / name).read_bytes() == (shipped / name).read_bytes(), name


def test_splits_follow_the_seed(sample_folder):
    splits = cifar.load_splits(sample_folder)
    assert {k: len(v[0]) for k, v in splits.items()} == {"train": 80, "validation": 20, "eval": 20}
    images, labels = splits["train"]
    assert images.shape[1:] == (32, 32, 3) and images.dtype == np.uint8 and labels.max() < 10
    batch = cifar.read_batch(sample_folder / "data_batch_1")
    np.testing.assert_array_equal(
        images[0], batch[b"data"][0].reshape(3, 32, 32).transpose(1, 2, 0)
    )


def test_download_verifies_and_extracts(tmp_path, sample_folder):
    archive = make_archive(tmp_path / "cifar-10-python.tar.gz", sample_folder)
    got = cifar.download(tmp_path / "dl", url=archive.as_uri(), md5=md5(archive))
    assert got.read_bytes() == archive.read_bytes()
    folder = cifar.extract(got, tmp_path / "data")
    assert folder.name == cifar.FOLDER and len(cifar.read_folder(folder)) == 6


def test_checksum_mismatch_leaves_nothing(tmp_path, sample_folder):
    archive = make_archive(tmp_path / "cifar-10-python.tar.gz", sample_folder)
    with pytest.raises(cifar_download.ChecksumMismatch, match="not the published"):
        cifar.download(tmp_path / "dl", url=archive.as_uri(), md5="0" * 32)
    assert list((tmp_path / "dl").iterdir()) == []


def test_unreachable_network_falls_back_to_the_sample(tmp_path, capsys):
    with socket.socket() as sock:  # a loopback port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/cifar-10-python.tar.gz"
    with pytest.raises(cifar.NetworkUnavailable, match="could not download"):
        cifar.download(tmp_path, url=url, timeout=5)
    assert (
        cifar.locate(tmp_path, download_real=True, url=url) == cifar.SHIPPED_SAMPLE / cifar.FOLDER
    )
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "using the shipped synthetic sample" in out
    assert [p.name for p in tmp_path.iterdir()] == []


@pytest.mark.parametrize("member", ["../evil.txt", "/tmp/abs.txt", "cifar-10-batches-py/../../x"])
def test_extract_refuses_escaping_members(tmp_path, sample_folder, member):
    archive = make_archive(tmp_path / "bad.tar.gz", sample_folder, {member: b"x"})
    dest = tmp_path / "data"
    with pytest.raises(ValueError, match="refusing archive member"):
        cifar.extract(archive, dest)
    assert list(dest.iterdir()) == []
    assert not (tmp_path / "evil.txt").exists()


def test_extract_refuses_links(tmp_path, sample_folder):
    path = tmp_path / "link.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        archive.add(sample_folder, arcname=cifar.FOLDER)
        info = tarfile.TarInfo("cifar-10-batches-py/passwd")
        info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
        archive.addfile(info)
    with pytest.raises(ValueError, match="link or device"):
        cifar.extract(path, tmp_path / "data")


def test_truncated_pickle_and_wrong_folder(tmp_path, sample_folder):
    broken = tmp_path / cifar.FOLDER
    broken.mkdir()
    for name in cifar.FILES:
        (broken / name).write_bytes((sample_folder / name).read_bytes())
    data = (sample_folder / "data_batch_3").read_bytes()
    (broken / "data_batch_3").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="data_batch_3 is not a readable CIFAR pickle"):
        cifar.read_folder(broken)
    with pytest.raises(ValueError, match="missing data_batch_1"):
        cifar.read_folder(tmp_path)


def test_extract_of_a_broken_archive_leaves_nothing(tmp_path, sample_folder):
    broken = tmp_path / "src" / cifar.FOLDER
    broken.mkdir(parents=True)
    for name in cifar.FILES:
        (broken / name).write_bytes((sample_folder / name).read_bytes())
    (broken / "test_batch").write_bytes(pickle.dumps({b"data": 1}, protocol=2))
    archive = make_archive(tmp_path / "a.tar.gz", broken)
    with pytest.raises(ValueError, match="test_batch"):
        cifar.extract(archive, tmp_path / "data")
    assert list((tmp_path / "data").iterdir()) == []


def test_make_sample_command(tmp_path, capsys):
    assert cifar.main(["make-sample", str(tmp_path)]) == 0
    assert (tmp_path / cifar.FOLDER / "test_batch").exists()
    assert cifar.main(["nonsense"]) == 2
