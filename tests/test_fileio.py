"""Unit tests for helpers.fileio: a failed write never replaces the old file."""

from __future__ import annotations

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
