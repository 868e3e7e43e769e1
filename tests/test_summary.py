"""The time table `make test` prints at the end (conftest.py's ``pytest_terminal_summary``): the
run's CPU and oneDNN variables, then each notebook's nbval run, its second run and, for a run in
JupyterLab, that run's phases and the cells whose second run took far longer than their first
(with the seconds read from the notebook JupyterLab saved)."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.browser.drive import cell_seconds

ROOT = Path(__file__).resolve().parent.parent


def _conftest():
    spec = importlib.util.spec_from_file_location(
        "workbook_conftest_under_test", ROOT / "conftest.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass
class Report:
    nodeid: str
    duration: float
    user_properties: list = field(default_factory=list)
    when: str = "call"
    outcome: str = "passed"


class Reporter:
    def __init__(self, reports):
        self.stats = {"passed": reports}
        self.lines: list[str] = []

    def write_sep(self, sep, title):
        self.lines.append(title)

    def write_line(self, line):
        self.lines.append(line)


def test_summary_splits_the_jupyterlab_run_into_its_phases():
    conftest = _conftest()
    conftest.SECOND_RUN["mode"] = "jupyterlab"
    phases = {"open": 4.2, "run all": 5.4, "save": 0.3, "clicks": 0.6}
    reporter = Reporter(
        [
            Report("notebooks/00_a.ipynb::Cell 0", 2.0),
            Report(
                "notebooks/00_a.ipynb::Cell 1",
                13.0,
                [(conftest.RERUN_KEY, 10.5), (conftest.PHASES_KEY, phases)],
            ),
            Report("notebooks/01_b.ipynb::Cell 0", 1.0),
            Report("tests/test_env.py::test_x", 9.0),  # not a notebook: not in the table
        ]
    )
    conftest.pytest_terminal_summary(reporter)
    text = "\n".join(reporter.lines)
    assert reporter.lines[0].startswith("this run: ")  # the CPU and oneDNN variables, first
    assert "(second run: open, run all, save, clicks)" in reporter.lines[2]
    assert "    4.5    10.5    15.0      2  00_a.ipynb  (4 / 5 / 0 / 1)" in reporter.lines
    assert (
        "    1.0     0.0     1.0      1  01_b.ipynb" in reporter.lines
    )  # no second run recorded: no split
    assert "    5.5    10.5    16.0      3  in all" in reporter.lines
    assert "test_env" not in text


def test_summary_without_phases_has_no_split_column():
    conftest = _conftest()
    conftest.SECOND_RUN["mode"] = "kernel"
    reporter = Reporter([Report("notebooks/00_a.ipynb::Cell 0", 3.0, [(conftest.RERUN_KEY, 1.0)])])
    conftest.pytest_terminal_summary(reporter)
    assert reporter.lines[0].startswith("this run: ")
    assert reporter.lines[1].endswith("(in nbval's kernel)")
    assert reporter.lines[2].rstrip().endswith("notebook")
    assert "    2.0     1.0     3.0      1  00_a.ipynb" in reporter.lines


def test_summary_names_a_cell_far_slower_on_its_second_run():
    conftest = _conftest()
    conftest.SECOND_RUN["mode"] = "jupyterlab"
    seconds = [0.5, 20.0, 25.0]  # JupyterLab's times for the three code cells
    reporter = Reporter(
        [
            Report("notebooks/13_c.ipynb::Cell 0", 2.0),
            Report("notebooks/13_c.ipynb::Cell 1", 0.0, outcome="skipped"),  # NBVAL_SKIP
            # The last cell's call holds the whole second run (20 s): nbval's own run took 10 s.
            Report(
                "notebooks/13_c.ipynb::Cell 2",
                30.0,
                [(conftest.RERUN_KEY, 20.0), (conftest.CELLS_KEY, seconds)],
            ),
        ]
    )
    conftest.pytest_terminal_summary(reporter)
    slower = reporter.lines.index(
        f"slower on the second run (by {conftest.SLOWER_RERUN_S:g} s or more, and twice as long; "
        "a cell that drops tf.data iterators made a minute or more before can wait up to 60 s for "
        "their autotuning threads: docs/test-times.md):"
    )
    # Cell 2 against nbval's 10 s, not the 30 s of its call; Cell 1 (skipped) and Cell 0 not named.
    assert reporter.lines[slower + 1 :] == ["  13_c.ipynb Cell 2: 25.0 s against 10.0 s"]


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
    conftest = _conftest()
    monkeypatch.setattr(conftest, "SLOWER_RERUN_S", 10.0)
    first = {"13.ipynb": {36: 12.0, 38: 0.1, 39: 0.0}, "07.ipynb": {0: 2.0}}
    second = {"13.ipynb": [None] * 36 + [22.5, 1.0, 39.1, 9.9], "07.ipynb": [2.0, 30.0]}
    lines = conftest._slower_reruns(first, second)
    # 38: 39 s later; 36: 10.5 s later but not twice as long; 39: 9.9 s later; 07's Cell 1: no
    # first time known.
    assert lines == [
        "slower on the second run (by 10 s or more, and twice as long; a cell that drops tf.data "
        "iterators made a minute or more before can wait up to 60 s for their autotuning threads: "
        "docs/test-times.md):",
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
    assert _conftest().SLOWER_RERUN_S == 1.5
    monkeypatch.setenv("WORKBOOK_SLOWER_RERUN_S", "ten")
    with pytest.raises(pytest.UsageError, match="give seconds"):
        _conftest()
