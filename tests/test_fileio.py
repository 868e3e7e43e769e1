"""Unit tests for helpers.fileio: a failed write never replaces the old file."""

from __future__ import annotations

import os
import stat

import pytest

from helpers import fileio


def test_atomic_write_creates_parents_and_replaces(tmp_path):
    target = tmp_path / "a" / "b.json"
    fileio.atomic_write_text(target, "one")
    fileio.atomic_write_text(target, "two")
    assert target.read_text() == "two"
    assert sorted(p.name for p in target.parent.iterdir()) == ["b.json"]


def test_interrupted_write_keeps_old_content_and_no_temp(tmp_path, monkeypatch):
    target = tmp_path / "results.json"
    target.write_text("old")

    def boom(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(fileio.os, "replace", boom)
    with pytest.raises(KeyboardInterrupt):
        fileio.atomic_write_text(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]


@pytest.mark.skipif(os.name != "posix", reason="a folder can be synced on POSIX only")
def test_atomic_write_syncs_the_file_then_its_folder(tmp_path, monkeypatch):
    real_fsync, synced = os.fsync, []

    def recording(fd):
        synced.append("folder" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording)
    fileio.atomic_write_text(tmp_path / "manifest.json", "{}\n")
    assert synced == ["file", "folder"]


def test_a_folder_that_cannot_be_synced_is_left(tmp_path, monkeypatch):
    def refuses(fd):
        raise OSError(22, "Invalid argument")  # as some network file systems answer for a folder

    monkeypatch.setattr(os, "fsync", refuses)
    fileio.sync_folder(tmp_path)  # no exception


def test_atomic_write_keeps_the_file_mode_not_mkstemps_private_one(tmp_path):
    """The temporary file is made by mkstemp (0600); replaced into place, it made every notebook
    `make execute` saved private to its owner."""
    import os
    import stat

    umask = os.umask(0o022)
    try:
        fresh = fileio.atomic_write_text(tmp_path / "new.txt", "a")
        assert stat.S_IMODE(fresh.stat().st_mode) == 0o644
        shared = tmp_path / "shared.txt"
        shared.write_text("old")
        shared.chmod(0o664)
        fileio.atomic_write_text(shared, "new")
        assert stat.S_IMODE(shared.stat().st_mode) == 0o664 and shared.read_text() == "new"
    finally:
        os.umask(umask)
