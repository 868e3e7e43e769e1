"""The report of cells whose second run (in JupyterLab) took much longer than their first: the
seconds read from a saved notebook, and which cells are named."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.browser.drive import cell_seconds

ROOT = Path(__file__).resolve().parent.parent


def root_conftest():
    spec = importlib.util.spec_from_file_location("workbook_root_conftest", ROOT / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def code(start: str | None, end: str | None) -> dict:
    timing = {k: v for k, v in (("iopub.execute_input", start), ("shell.execute_reply", end)) if v}
    return {"cell_type": "code", "metadata": {"execution": timing}, "source": "", "outputs": []}


def test_cell_seconds_reads_jupyterlab_timing_and_counts_code_cells_only():
    notebook = {
        "cells": [
            code("2026-11-29T17:45:24.058954Z", "2026-11-29T17:46:03.158954Z"),
            {"cell_type": "markdown", "metadata": {}, "source": "text"},
            code("2026-11-29T17:46:03.2Z", None),  # no end: not recorded
            {"cell_type": "code", "metadata": {}, "source": "", "outputs": []},
            code("not a time", "2026-11-29T17:46:03Z"),
        ]
    }
    seconds = cell_seconds(notebook)
    assert seconds[0] is not None and abs(seconds[0] - 39.1) < 1e-6
    assert seconds[1:] == [None, None, None]


def test_slower_reruns_names_cells_10_s_slower_and_twice_as_long(monkeypatch):
    conftest = root_conftest()
    monkeypatch.setattr(conftest, "SLOWER_RERUN_S", 10.0)
    first = {"13.ipynb": {36: 12.0, 38: 0.1, 39: 0.0}, "07.ipynb": {0: 2.0}}
    second = {"13.ipynb": [None] * 36 + [22.5, 1.0, 39.1, 9.9], "07.ipynb": [2.0, 30.0]}
    lines = conftest._slower_reruns(first, second)
    # 38: 39 s later; 36: 10.5 s later but not twice as long; 39: 9.9 s later; 07's Cell 1: no
    # first time known.
    assert lines == [
        "slower on the second run (by 10 s or more, and twice as long):",
        "  13.ipynb Cell 38: 39.1 s against 0.1 s",
    ]
    assert conftest._slower_reruns(first, {"13.ipynb": [None] * 39}) == []
    # At the limits: 10 s later and exactly twice as long is named.
    assert len(conftest._slower_reruns({"a": {0: 10.0}}, {"a": [20.0]})) == 2
    monkeypatch.setattr(conftest, "SLOWER_RERUN_S", 5.0)
    assert conftest._slower_reruns({"a": {0: 1.0}}, {"a": [6.5]})[1:] == [
        "  a Cell 0: 6.5 s against 1.0 s"
    ]


def test_the_threshold_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("WORKBOOK_SLOWER_RERUN_S", "1.5")
    assert root_conftest().SLOWER_RERUN_S == 1.5
    monkeypatch.setenv("WORKBOOK_SLOWER_RERUN_S", "ten")
    with pytest.raises(pytest.UsageError, match="give seconds"):
        root_conftest()
