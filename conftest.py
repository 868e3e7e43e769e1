"""Repository-wide pytest hooks.

- ``--nbval-rerun``: when all of a notebook's cells have passed nbval, every cell is run a
  second time, top to bottom, in the same kernel, as a learner who reruns cells does; an error
  on the second run fails the notebook's last cell, naming the cell. One kernel thus checks both
  the saved outputs and that each cell can be rerun (the second run's outputs are not compared:
  rerunning may legitimately change them).
- ``--nbval-lab`` (what ``make test`` uses): the same second run, in JupyterLab. The notebook's
  kernel is started by a JupyterLab server of this pytest process (``tests/browser/lab.py``);
  nbval runs and compares every cell in it, then headless Chromium opens the notebook in
  JupyterLab on that kernel, runs all of it again, checks every cell ran without an unexpected
  error, and clicks every widget's Run button (``tests/browser/drive.py``). Two runs of each
  notebook thus cover nbval, the rerun and JupyterLab. Without a browser it falls back to
  ``--nbval-rerun`` and says so loudly; in CI (``CI=true``) a missing browser is a failure.
- ``# NBVAL_RAISES_EXCEPTION`` cells: the error raised must be the one the cell names on a line
  ``# raises: ErrorName``; a cell that stops raising, or raises another error, fails.
- After the run, the time each notebook took: nbval's run of its cells and their second run; then
  the cells whose second run in JupyterLab took ``SLOWER_RERUN_S`` longer than nbval's run of them,
  and twice as long.
- The Python processes the run starts that inherit its ``PYTHONPATH`` import TensorFlow with the
  garbage collector paused, and freeze what the import created until exit
  (``tests/gc_tensorflow_import/sitecustomize.py`` says why and what it saves).
"""

from __future__ import annotations

import os
import re
import statistics
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest

RERUN_KEY = "nbval_rerun_s"
PHASES_KEY = "jupyterlab_phases_s"  # the second run's phases in JupyterLab: {phase: seconds}
CELLS_KEY = "jupyterlab_cells_s"  # the second run's seconds per code cell in JupyterLab
#: A cell whose second run takes this many seconds longer than its first, and twice as long, is
#: named after the table (a stall on a rerun, such as notebook 13's in docs/test-times.md). Set
#: WORKBOOK_SLOWER_RERUN_S lower to see smaller differences.
try:
    SLOWER_RERUN_S = float(os.environ.get("WORKBOOK_SLOWER_RERUN_S", "10"))
except ValueError:
    raise pytest.UsageError(
        f"WORKBOOK_SLOWER_RERUN_S={os.environ['WORKBOOK_SLOWER_RERUN_S']!r}: give seconds, as 10"
    ) from None

#: How the second run happens in this process: "jupyterlab", "kernel" or None (no second run).
SECOND_RUN: dict[str, object] = {"mode": None}


def pytest_addoption(parser) -> None:
    parser.addoption(
        "--nbval-rerun",
        action="store_true",
        default=False,
        help="run every passing notebook cell a second time in the same kernel (no output check)",
    )
    parser.addoption(
        "--nbval-lab",
        action="store_true",
        default=False,
        help="the second run in JupyterLab, on the same kernel, with every widget clicked",
    )


#: The machine's speed through the run: ``timing_stats.speed_probe`` every ``PROBE_EVERY`` seconds
#: in a thread of the controller (a shared machine's speed changes from minute to minute).
PROBES: list[float] = []
PROBE_EVERY = 30.0


def _probe_forever() -> None:
    from helpers.timing_stats import speed_probe

    while True:
        PROBES.append(speed_probe(loops=1_000_000, tries=1))  # 20-40 ms of one core
        time.sleep(PROBE_EVERY)


#: Put on PYTHONPATH for the processes the test run starts (those that inherit it): its
#: sitecustomize pauses the garbage collector while ``import tensorflow`` runs, then freezes what
#: the import created until exit.
GC_TENSORFLOW_IMPORT = Path(__file__).resolve().parent / "tests" / "gc_tensorflow_import"


def _gc_tensorflow_import() -> None:
    """The processes this one starts that inherit its environment (xdist workers, kernels, most of
    the notebooks' child programs)."""
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(GC_TENSORFLOW_IMPORT) not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(GC_TENSORFLOW_IMPORT), *paths])


def pytest_configure(config) -> None:
    _gc_tensorflow_import()
    if not hasattr(config, "workerinput"):  # the controller, not an xdist worker
        threading.Thread(target=_probe_forever, name="speed-probe", daemon=True).start()
    if config.getoption("--nbval-lab", default=False):
        sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/ as a package
        from tests.browser.lab import in_ci, missing_browser

        reason = missing_browser()
        if reason is None:
            SECOND_RUN["mode"] = "jupyterlab"
            _attach_nbval_to_jupyterlab()
            return
        message = (
            f"JUPYTERLAB RUNS NOT DONE: {reason}; "
            "the second run of each notebook stays in nbval's kernel"
        )
        if in_ci():
            raise pytest.UsageError(message)
        print(f"\n{'!' * 70}\n{message}\n{'!' * 70}", file=sys.stderr)
        SECOND_RUN["mode"] = "kernel"
    elif config.getoption("--nbval-rerun", default=False):
        SECOND_RUN["mode"] = "kernel"


def pytest_unconfigure(config) -> None:
    lab = sys.modules.get("tests.browser.lab")
    if lab is not None:
        lab.close_shared()


def _lab():
    """This process's JupyterLab server and Chromium, started on first use."""
    from tests.browser import lab

    return lab.shared_lab(), lab.shared_browser()


def _attach_nbval_to_jupyterlab() -> None:
    """Make nbval run each notebook in a kernel of this process's JupyterLab server."""
    from nbval.plugin import IPyNbFile

    from tests.browser.lab_kernel import LabKernel

    def setup(self) -> None:
        self.kernel = LabKernel(
            _lab()[0], Path(str(self.fspath)), self.config.option.nbval_kernel_startup_timeout
        )
        self.setup_sanitize_files()

    IPyNbFile.setup = setup


#: Scopes (files) that take longest, longest first, from the per-notebook times `make test`
#: prints: scheduled first, so that with --dist loadscope the two workers finish together
#: (longest-first: the short scopes fill in at the end). Everything else keeps its order after them.
LONGEST_FIRST = (
    "notebooks/13_",
    "notebooks/12_",
    "notebooks/10_",
    "notebooks/14_",
    "notebooks/11_",
    "tests/test_other_cpus.py",
    "notebooks/07_",
    "notebooks/16_",
    "notebooks/08_",
)


def pytest_collection_modifyitems(config, items) -> None:
    """Order the scopes longest first (a stable sort: the cells of a notebook stay in order)."""

    def rank(item) -> int:
        path = item.nodeid.split("::", 1)[0]
        return next(
            (i for i, prefix in enumerate(LONGEST_FIRST) if path.startswith(prefix)),
            len(LONGEST_FIRST),
        )

    items.sort(key=rank)


def _is_nbval_cell(item) -> bool:
    return type(item).__name__ == "IPyNbCell" and hasattr(item, "options")


#: An expected-error cell (``# NBVAL_RAISES_EXCEPTION``) names the error it teaches on a line of
#: its own, ``# raises: ValueError``; nbval alone would pass it if it stopped raising.
RAISES = re.compile(r"^# raises: (?P<name>[A-Za-z_][\w.]*)\s*$", re.MULTILINE)


def expected_error_problem(source: str, outputs) -> str | None:
    """Why an expected-error cell's run does not show the error it names, or None when it does."""
    named = RAISES.findall(source)
    if len(named) != 1:
        return (
            "an NBVAL_RAISES_EXCEPTION cell needs one line '# raises: ErrorName' "
            "naming the error it teaches"
        )
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
    if SECOND_RUN["mode"] is None or not _is_nbval_cell(item):
        return
    cells = [i for i in item.session.items if _is_nbval_cell(i) and i.parent is item.parent]
    if outcome.excinfo is not None or item is not cells[-1]:
        return
    # The notebook's last cell passed: run every cell again, top to bottom, in the same kernel.
    # (Not each cell twice in a row: the second run of a cell may change what the next cell's
    # compared output shows, such as a placement table of what was placed "meanwhile".)
    start, phases, seconds = time.perf_counter(), {}, []
    try:
        problem = (
            _second_run_in_jupyterlab(item, phases, seconds)
            if SECOND_RUN["mode"] == "jupyterlab"
            else _second_run_in_kernel(cells)
        )
    finally:
        item.user_properties.append((RERUN_KEY, time.perf_counter() - start))
        if phases:
            item.user_properties.append((PHASES_KEY, phases))
        if seconds:
            item.user_properties.append((CELLS_KEY, seconds))
    if problem:
        outcome.force_exception(AssertionError(problem))


def _second_run_in_kernel(cells) -> str | None:
    for cell in cells:
        if cell.options.get("skip") or cell.options.get("check_exception"):
            continue
        saved = cell.options.get("check")
        cell.options["check"] = False
        try:
            cell.runtest()  # nbval's own execution path; raises NbCellError on an exception
        except BaseException as exc:  # noqa: BLE001 - handed to pytest as this test's failure
            return f"the second run of {cell.name} failed:\n{exc}"
        finally:
            cell.options["check"] = saved
    return None


def _second_run_in_jupyterlab(item, phases: dict[str, float], seconds: list) -> str | None:
    from tests.browser.drive import run_in_jupyterlab

    kernel = item.parent.kernel
    kernel.detach()  # nbval lets go; JupyterLab joins the same kernel
    _, browser = _lab()
    try:
        run_in_jupyterlab(
            kernel.lab, browser, kernel.served, kernel.kernel_id, phases=phases, cells=seconds
        )
    except Exception as exc:  # noqa: BLE001 - an assertion, a timeout, a lost page: all this test's failure
        return f"the second run, in JupyterLab, failed: {type(exc).__name__}: {exc}"
    return None


def pytest_terminal_summary(terminalreporter) -> None:
    """Print each notebook's time per run, so that growth is visible."""
    first: dict[str, float] = defaultdict(float)
    rerun: dict[str, float] = defaultdict(float)
    cells: dict[str, int] = defaultdict(int)
    phases: dict[str, dict[str, float]] = {}  # the second run's phases in JupyterLab
    by_cell: dict[str, dict[int, float]] = defaultdict(dict)  # nbval's run: {cell number: s}
    second_cells: dict[str, list] = {}  # the second run in JupyterLab: seconds per code cell
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
                first_last[0], first_last[1] = (
                    min(first_last[0], report.start),
                    max(first_last[1], report.stop),
                )
            if getattr(report, "when", "call") != "call" or ".ipynb::" not in nodeid:
                continue
            name = nodeid.split("::", 1)[0].rsplit("/", 1)[-1]
            again = sum(v for k, v in getattr(report, "user_properties", []) if k == RERUN_KEY)
            first[name] += duration - again
            number = re.search(r"::Cell (\d+)$", nodeid)
            # An NBVAL_SKIP cell has no nbval time to compare (JupyterLab runs it all the same).
            if number and getattr(report, "outcome", "") != "skipped":
                by_cell[name][int(number.group(1))] = duration - again
            for key, value in getattr(report, "user_properties", []):
                if key == PHASES_KEY:
                    phases[name] = value
                elif key == CELLS_KEY:
                    second_cells[name] = value
            rerun[name] += again
            cells[name] += 1
    from helpers.timing_stats import run_setting

    terminalreporter.write_line(run_setting())
    if PROBES:
        ms = sorted(p * 1e3 for p in PROBES)
        terminalreporter.write_line(
            f"speed probe (a fixed Python loop every {PROBE_EVERY:.0f} s, {len(ms)} samples): "
            f"median {statistics.median(ms):.0f} ms, {ms[0]:.0f} to {ms[-1]:.0f} ms; "
            "compare run times at similar probes"
        )
    if not first:
        return
    where = (
        "in JupyterLab, widgets clicked"
        if SECOND_RUN["mode"] == "jupyterlab"
        else "in nbval's kernel"
    )
    terminalreporter.write_sep("=", f"time per notebook (s): nbval's run, the second run ({where})")
    order = list(dict.fromkeys(k for v in phases.values() for k in v))  # the second run's phases
    terminalreporter.write_line(
        f"{'nbval':>7} {'second':>7} {'total':>7}  cells  notebook"
        + (f"  (second run: {', '.join(order)})" if order else "")
    )
    for name in sorted(first):
        split = " / ".join(f"{phases[name].get(k, 0):.0f}" for k in order) if name in phases else ""
        terminalreporter.write_line(
            f"{first[name]:7.1f} {rerun[name]:7.1f} {first[name] + rerun[name]:7.1f}  "
            f"{cells[name]:5d}  {name}" + (f"  ({split})" if split else "")
        )
    terminalreporter.write_line(
        f"{sum(first.values()):7.1f} {sum(rerun.values()):7.1f} "
        f"{sum(first.values()) + sum(rerun.values()):7.1f}"
        f"  {sum(cells.values()):5d}  in all"
    )
    for line in _slower_reruns(by_cell, second_cells):
        terminalreporter.write_line(line)
    for worker in sorted(span):
        first_start, last_stop = span[worker]
        terminalreporter.write_line(
            f"worker {worker}: busy {busy[worker]:.0f} s of {last_stop - first_start:.0f} s "
            f"(first test start to last test end)"
        )


def _slower_reruns(first: dict[str, dict[int, float]], second: dict[str, list]) -> list[str]:
    """The cells whose second run (JupyterLab's recorded time) took ``SLOWER_RERUN_S`` longer than
    nbval's run of them, and at least twice as long: one line each."""
    lines = []
    for name in sorted(second):
        for number, again in enumerate(second[name]):
            once = first.get(name, {}).get(number)
            if None not in (again, once) and again - once >= SLOWER_RERUN_S and again >= 2 * once:
                lines.append(f"  {name} Cell {number}: {again:.1f} s against {once:.1f} s")
    if lines:
        lines.insert(
            0,
            f"slower on the second run (by {SLOWER_RERUN_S:g} s or more, and twice as long; a "
            "cell that drops tf.data iterators made a minute or more before can wait up to 60 s "
            "for their autotuning threads: docs/test-times.md):",
        )
    return lines
