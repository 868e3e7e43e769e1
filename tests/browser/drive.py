"""Drive a notebook in JupyterLab: open it on its running kernel, run all of it, save it, check
that every cell ran without an unexpected error, then click every widget's Run button and wait
for its plot and verdict. Screenshots go to artifacts/screenshots/."""

from __future__ import annotations

import re
import time
from datetime import datetime
from pathlib import Path

from helpers import deadline
from helpers.nbtools import source

from .lab import ARTIFACTS, RAISES, WIDGET, Lab


def wait_for_idle(page, timeout: float) -> None:
    """Wait until the kernel is idle and no cell shows the running prompt [*], for half a second
    (three looks a quarter of a second apart: Run All queues every cell at once, so a notebook
    still running always shows a [*])."""
    calm = 0

    def settled() -> bool:
        nonlocal calm
        idle = page.locator('.jp-Notebook-ExecutionIndicator[data-status="idle"]').count() > 0
        running = page.locator(".jp-InputPrompt", has_text="[*]").count()
        calm = calm + 1 if idle and not running else 0
        return calm >= 3

    try:
        deadline.until(settled, timeout, "the notebook to finish running", interval=0.25)
    except deadline.WaitTimeout:
        raise AssertionError(f"the notebook was still running after {timeout:.0f} s") from None


def run_all(page) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click(timeout=10_000)
    page.locator('.lm-Menu-item[data-command="runmenu:run-all"]').click(timeout=10_000)


def start_run_all(page, lab: Lab, name: str, attempts: int = 3) -> None:
    """Run all cells and wait until the first one has started ([*]) or run ([1]): the notebook
    was opened without outputs, so a prompt shows only what this run did. On a loaded machine the
    first click can land before the notebook is ready, or a passing dialog can cover the menu:
    then deal with the dialog and click again."""
    started = ".jp-InputPrompt:has-text('[*]'), .jp-InputPrompt:has-text('[1]')"
    for attempt in range(attempts):
        no_dialog(page, lab, name)
        try:
            run_all(page)
            page.wait_for_selector(started, timeout=30_000)
            return
        except Exception:  # playwright's TimeoutError: a dialog over the menu, or a page not ready
            if attempt == attempts - 1:
                no_dialog(page, lab, name)  # a dialog that stayed fails with its own words
                raise


def no_dialog(page, lab: Lab, name: str) -> None:
    """If JupyterLab shows a dialog, save a screenshot and act on its words. A "Server Connection
    Error" on a loaded machine is the browser losing the server for a moment: if the server
    answers now, close it and go on (with a note in the log). Any other dialog (a dead kernel, a
    file changed on disk, "Select Kernel" for a notebook that lost its kernel) fails the run with
    its words and the end of the server's log."""
    dialog = page.locator("dialog.jp-Dialog")
    if not dialog.count():
        return
    page.screenshot(path=str(ARTIFACTS / f"{Path(name).stem}_dialog.png"), full_page=True)
    words = " | ".join(t.strip() for t in dialog.all_inner_texts())
    if "Server Connection Error" in words and lab.answers():
        print(f"{name}: closed a passing dialog, the server answers: {words[:200]}")
        dialog.locator("button").last.click()
        dialog.first.wait_for(state="detached", timeout=10_000)
        return
    raise AssertionError(
        f"JupyterLab showed a dialog: {words[:500]}\n--- end of the server log:\n{lab.log_tail()}"
    )


def save(page) -> None:
    page.locator(".jp-NotebookPanel .jp-Notebook").first.click()
    page.keyboard.press("Control+s")
    page.wait_for_function(
        "() => !document.querySelector('.jp-mod-current.jp-mod-dirty')", timeout=30_000
    )


def cell_seconds(notebook: dict) -> list[float | None]:
    """Each code cell's run time in a saved notebook, from the start and end JupyterLab records in
    its metadata (``recordTiming``); None for a cell without them."""

    def seconds(cell: dict) -> float | None:
        timing = cell.get("metadata", {}).get("execution", {})
        try:
            start, end = timing["iopub.execute_input"], timing["shell.execute_reply"]
            start, end = (datetime.fromisoformat(t.replace("Z", "+00:00")) for t in (start, end))
            return (end - start).total_seconds()
        except (AttributeError, KeyError, TypeError, ValueError):
            return None

    return [seconds(c) for c in notebook["cells"] if c["cell_type"] == "code"]


def errors(notebook: dict) -> list[str]:
    """What went wrong in a saved run: cells that did not run, and errors a cell does not expect,
    named as nbval names them (Cell N counts code cells from 0)."""
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    problems = [f"Cell {i} did not run" for i, c in enumerate(code) if not c.get("execution_count")]
    problems += [
        f"Cell {i} raised {o.get('ename')}: {o.get('evalue', '')[:300]}"
        for i, c in enumerate(code)
        for o in c.get("outputs", [])
        if o.get("output_type") == "error" and RAISES not in source(c)
    ]
    return problems


def click_widgets(page, lab: Lab, code: list[dict], stem: str) -> None:
    """Click every widget's Run button, in order, and wait for its plot and a verdict line."""
    buttons = page.locator(".jupyter-widgets button", has_text=re.compile(r"^\s*Run\s*$"))
    expected = sum(len(WIDGET.findall(source(c))) for c in code)
    assert buttons.count() == expected, f"{buttons.count()} Run buttons for {expected} widgets"
    for k in range(expected):
        button = buttons.nth(k)
        box = button.locator("xpath=ancestor::div[contains(@class, 'widget-vbox')][1]")
        button.scroll_into_view_if_needed()
        no_dialog(page, lab, stem)
        button.click()
        output = box.locator(".widget-output")
        output.locator("img, [data-mime-type='application/vnd.jupyter.stderr']").first.wait_for(
            timeout=180_000
        )
        failed = output.locator('[data-mime-type="application/vnd.jupyter.stderr"]')
        assert not failed.count(), f"widget {k} failed: {failed.first.inner_text()[:500]}"
        verdict = output.locator('[data-mime-type="application/vnd.jupyter.stdout"]').first
        verdict.wait_for(timeout=30_000)
        assert verdict.inner_text().strip(), f"widget {k} printed an empty verdict"
        box.screenshot(path=str(ARTIFACTS / f"{stem}_widget{k}.png"))


#: True once the current notebook's session context is ready on a connected kernel with this id.
ON_KERNEL = """id => {
    const panel = window.jupyterapp && window.jupyterapp.shell.currentWidget;
    const context = panel && panel.sessionContext;
    const kernel = context && context.session && context.session.kernel;
    return Boolean(
        context && context.isReady && kernel && kernel.id === id
        && kernel.connectionStatus === "connected"
    );
}"""
KERNEL_NOW = """() => {
    const panel = window.jupyterapp && window.jupyterapp.shell.currentWidget;
    const kernel = panel && panel.sessionContext && panel.sessionContext.session
        && panel.sessionContext.session.kernel;
    return kernel ? `${kernel.id} (${kernel.connectionStatus})` : "no kernel";
}"""


def wait_for_kernel(page, kernel_id: str, timeout: float = 90) -> None:
    """Wait until the notebook has joined its running kernel (nbval's), connected. A Run All
    clicked before that finds no kernel yet, and JupyterLab answers it with "Select Kernel"
    (seen on the first notebook of a worker, whose page loads fastest relative to the session)."""
    try:
        page.wait_for_function(ON_KERNEL, arg=kernel_id, timeout=timeout * 1000)
    except Exception as exc:  # playwright's TimeoutError: say what the notebook has instead
        raise AssertionError(
            f"the notebook did not join kernel {kernel_id[:8]} within {timeout:.0f} s; "
            f"it has {page.evaluate(KERNEL_NOW)}"
        ) from exc


#: Close every document in the page's JupyterLab (without asking to save: the run was saved, and a
#: widget's click since then only changed outputs), then open the next notebook, which joins the
#: session nbval started for it, as a page load would.
OPEN_NEXT = """async path => {
    const app = window.jupyterapp;
    for (const widget of Array.from(app.shell.widgets("main"))) {
        if (widget.context) { widget.context.model.dirty = false; }
        widget.dispose();
    }
    await app.commands.execute("docmanager:open", {path});
}"""

#: One JupyterLab page per browser, kept from one notebook to the next: loading the application
#: took 5-8 s per notebook on a loaded 2-core machine, opening a notebook in a loaded page
#: about 1 s.
#: A notebook whose run failed closes the page, so the next one starts in a fresh page.
_PAGES: dict[int, object] = {}


def open_page(lab: Lab, browser, served: str):
    """The page showing ``served``: the kept page with its documents closed and this one opened,
    or a new page (first notebook, or after a failure) loading JupyterLab on it."""
    page = _PAGES.get(id(browser))
    if page is not None and not page.is_closed():
        page.evaluate(OPEN_NEXT, served)
        return page
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(lab.notebook_url(Path(served).name))
    _PAGES[id(browser)] = page
    return page


def run_in_jupyterlab(
    lab: Lab,
    browser,
    served: str,
    kernel_id: str,
    timeout: float = 420,
    phases: dict[str, float] | None = None,
    cells: list[float | None] | None = None,
) -> None:
    """Open a served notebook in JupyterLab (it joins the notebook's running kernel, ``kernel_id``),
    run all of it, save it, check it, click its widgets. Raises AssertionError saying what went
    wrong. ``phases``, if given, receives the seconds of each phase, in order: "open", "run all",
    "save" (with the check of the saved cells) and "clicks"; a failed run leaves out the phases
    after it. ``cells``, if given, receives each code cell's seconds in the run all (None where
    JupyterLab recorded none)."""
    name = Path(served).name
    phases = {} if phases is None else phases
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()

    def done(phase: str) -> None:
        nonlocal start
        phases[phase] = time.perf_counter() - start
        start = time.perf_counter()

    page = open_page(lab, browser, served)
    try:
        wait_for_kernel(page, kernel_id)
        page.wait_for_selector(
            '.jp-Notebook-ExecutionIndicator[data-status="idle"]', timeout=90_000
        )
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=30_000)
        done("open")
        start_run_all(page, lab, name)
        wait_for_idle(page, timeout=timeout)
        no_dialog(page, lab, name)
        done("run all")
        save(page)
        notebook = lab.saved_notebook(served)
        if cells is not None:
            cells[:] = cell_seconds(notebook)
        page.screenshot(path=str(ARTIFACTS / f"{Path(name).stem}.png"), full_page=True)
        problems = errors(notebook)
        assert not problems, "; ".join(problems)
        done("save")
        click_widgets(
            page, lab, [c for c in notebook["cells"] if c["cell_type"] == "code"], Path(name).stem
        )
        done("clicks")
    except BaseException:
        _PAGES.pop(id(browser), None)
        page.context.close()
        raise
