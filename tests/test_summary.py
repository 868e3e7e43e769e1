"""The time table `make test` prints at the end (conftest.py's ``pytest_terminal_summary``): the
run's CPU and oneDNN variables, then each notebook's nbval run, its second run and, for a run in
JupyterLab, that run's phases and the cells whose second run took far longer than their first."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from pathlib import Path

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
        f"slower on the second run (by {conftest.SLOWER_RERUN_S:g} s or more, and twice as long):"
    )
    # Cell 2 against nbval's 10 s, not the 30 s of its call; Cell 1 (skipped) and Cell 0 not named.
    assert reporter.lines[slower + 1 :] == ["  13_c.ipynb Cell 2: 25.0 s against 10.0 s"]
