"""Repository-wide pytest hooks.

- ``--nbval-rerun``: when all of a notebook's cells have passed nbval, every cell is run a
  second time, top to bottom, in the same kernel, as a learner who reruns cells does; an error
  on the second run fails the notebook's last cell, naming the cell. One kernel thus checks both
  the saved outputs and that each cell can be rerun (the second run's outputs are not compared:
  rerunning may legitimately change them).
- ``# NBVAL_RAISES_EXCEPTION`` cells: the error raised must be the one the cell names on a line
  ``# raises: ErrorName``; a cell that stops raising, or raises another error, fails.
- After the run, the time each notebook took per kind of test: nbval's first run of its cells,
  their second run, and its JupyterLab run in the browser tests.
"""

from __future__ import annotations

import re
import time
from collections import defaultdict

import pytest

RERUN_KEY = "nbval_rerun_s"
BROWSER_TEST = re.compile(r"tests/browser/test_jupyterlab\.py::.*\[(?P<name>[\w.-]+\.ipynb)\]")


def pytest_addoption(parser) -> None:
    parser.addoption(
        "--nbval-rerun", action="store_true", default=False,
        help="run every passing notebook cell a second time in the same kernel (no output check)",
    )


def _is_nbval_cell(item) -> bool:
    return type(item).__name__ == "IPyNbCell" and hasattr(item, "options")


#: An expected-error cell (``# NBVAL_RAISES_EXCEPTION``) names the error it teaches on a line of
#: its own, ``# raises: ValueError``; nbval alone would pass it if it stopped raising.
RAISES = re.compile(r"^# raises: (?P<name>[A-Za-z_][\w.]*)\s*$", re.MULTILINE)


def expected_error_problem(source: str, outputs) -> str | None:
    """Why an expected-error cell's run does not show the error it names, or None when it does."""
    named = RAISES.findall(source)
    if len(named) != 1:
        return "an NBVAL_RAISES_EXCEPTION cell needs one line '# raises: ErrorName' naming the error it teaches"
    raised = [out.get("ename") for out in outputs or () if out.get("ename")]
    if not raised:
        return f"expected {named[0]}, but the cell raised nothing"
    if raised[-1] != named[0].rsplit(".", 1)[-1]:
        return f"expected {named[0]}, but the cell raised {raised[-1]}"
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    outcome = yield
    if _is_nbval_cell(item) and outcome.excinfo is None and item.options.get("check_exception"):
        problem = expected_error_problem(item.cell.source, getattr(item, "test_outputs", None))
        if problem:
            outcome.force_exception(AssertionError(f"{item.name}: {problem}"))
            return
    if not (item.config.getoption("--nbval-rerun") and _is_nbval_cell(item)):
        return
    cells = [i for i in item.session.items if _is_nbval_cell(i) and i.parent is item.parent]
    if outcome.excinfo is not None or item is not cells[-1]:
        return
    # The notebook's last cell passed: run every cell again, top to bottom, in the same kernel.
    # (Not each cell twice in a row: the second run of a cell may change what the next cell's
    # compared output shows, such as a placement table of what was placed "meanwhile".)
    start = time.perf_counter()
    try:
        for cell in cells:
            if cell.options.get("skip") or cell.options.get("check_exception"):
                continue
            saved = cell.options.get("check")
            cell.options["check"] = False
            try:
                cell.runtest()  # nbval's own execution path; raises NbCellError on an exception
            except BaseException as exc:  # noqa: BLE001 - handed to pytest as this test's failure
                outcome.force_exception(AssertionError(f"the second run of {cell.name} failed:\n{exc}"))
                return
            finally:
                cell.options["check"] = saved
    finally:
        item.user_properties.append((RERUN_KEY, time.perf_counter() - start))


def pytest_terminal_summary(terminalreporter) -> None:
    """Print each notebook's time per kind of test, so that growth is visible."""
    first: dict[str, float] = defaultdict(float)
    rerun: dict[str, float] = defaultdict(float)
    browser: dict[str, float] = defaultdict(float)
    cells: dict[str, int] = defaultdict(int)
    busy: dict[str, float] = defaultdict(float)  # per xdist worker: setup + call + teardown
    span: dict[str, list[float]] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            nodeid = getattr(report, "nodeid", "")
            duration = getattr(report, "duration", 0.0)
            node = getattr(report, "node", None)
            worker = getattr(getattr(node, "gateway", None), "id", "main")
            if hasattr(report, "start") and hasattr(report, "stop"):
                busy[worker] += duration
                first_last = span.setdefault(worker, [report.start, report.stop])
                first_last[0], first_last[1] = min(first_last[0], report.start), max(first_last[1], report.stop)
            if getattr(report, "when", "call") != "call":
                continue
            if ".ipynb::" in nodeid:
                name = nodeid.split("::", 1)[0].rsplit("/", 1)[-1]
                again = sum(v for k, v in getattr(report, "user_properties", []) if k == RERUN_KEY)
                first[name] += duration - again
                rerun[name] += again
                cells[name] += 1
            elif match := BROWSER_TEST.search(nodeid):
                browser[match["name"]] += duration
    names = sorted(set(first) | set(browser))
    if not names:
        return
    terminalreporter.write_sep("=", "time per notebook (s): nbval run, second run of each cell, JupyterLab")
    terminalreporter.write_line(f"{'nbval':>7} {'rerun':>7} {'browser':>8} {'total':>7}  cells  notebook")
    for name in names:
        total = first[name] + rerun[name] + browser[name]
        terminalreporter.write_line(
            f"{first[name]:7.1f} {rerun[name]:7.1f} {browser[name]:8.1f} {total:7.1f}  {cells[name]:5d}  {name}"
        )
    terminalreporter.write_line(
        f"{sum(first.values()):7.1f} {sum(rerun.values()):7.1f} {sum(browser.values()):8.1f} "
        f"{sum(first.values()) + sum(rerun.values()) + sum(browser.values()):7.1f}  {sum(cells.values()):5d}  in all"
    )
    for worker in sorted(span):
        first_start, last_stop = span[worker]
        terminalreporter.write_line(
            f"worker {worker}: busy {busy[worker]:.0f} s of {last_stop - first_start:.0f} s "
            f"(first test start to last test end)"
        )
