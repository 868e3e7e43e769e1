"""Running any cell of a notebook a second time in the same kernel must not fail: learners
rerun cells all the time. Each notebook runs once top to bottom, then every cell again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers import nbtools

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("[0-9][0-9]_*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_cell_can_run_twice(path, monkeypatch):
    monkeypatch.setenv("WORKBOOK_SCALE", "small")  # the kernel inherits it
    assert os.environ["WORKBOOK_SCALE"] == "small"
    assert nbtools.rerun_failures(path) == []
