"""End-to-end: each notebook runs in JupyterLab in a real browser, and each comparison widget
draws its plot and verdict when its Run button is clicked. Screenshots go to artifacts/."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from .conftest import ARTIFACTS, NOTEBOOK_DIR

NOTEBOOKS = sorted(p.name for p in NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb"))
WIDGET = re.compile(r"\b(ComparisonWidget|ExperimentWidget)\(")
RAISES = "NBVAL_RAISES_EXCEPTION"


def source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def wait_for_idle(page, timeout: float) -> None:
    """Wait until the kernel is idle and no cell shows the running prompt [*], for half a second
    (three looks a quarter of a second apart: Run All queues every cell at once, so a notebook
    still running always shows a [*])."""
    deadline, calm = time.monotonic() + timeout, 0
    while time.monotonic() < deadline:
        idle = page.locator('.jp-Notebook-ExecutionIndicator[data-status="idle"]').count() > 0
        running = page.locator(".jp-InputPrompt", has_text="[*]").count()
        calm = calm + 1 if idle and not running else 0
        if calm >= 3:
            return
        time.sleep(0.25)
    raise AssertionError(f"the notebook was still running after {timeout:.0f} s")


def run_all(page) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator('.lm-Menu-item[data-command="runmenu:run-all"]').click()


def start_run_all(page, attempts: int = 3) -> None:
    """Run all cells and wait until the first one has started ([*]) or run ([1]). On a loaded
    machine the first click can land before the notebook is ready: then click again."""
    started = ".jp-InputPrompt:has-text('[*]'), .jp-InputPrompt:has-text('[1]')"
    for attempt in range(attempts):
        run_all(page)
        try:
            page.wait_for_selector(started, timeout=30_000)
            return
        except Exception:  # playwright's TimeoutError
            if attempt == attempts - 1:
                raise


def no_dialog(page, lab, name: str) -> None:
    """If JupyterLab shows a dialog, save a screenshot and act on its words. A "Server Connection
    Error" on a loaded machine is the browser losing the server for a moment: if the server
    answers now, close it and go on (with a note in the log). Any other dialog (a dead kernel, a
    file changed on disk) fails the test with its words and the end of the server's log."""
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
    raise AssertionError(f"JupyterLab showed a dialog: {words[:500]}\n--- end of the server log:\n{lab.log_tail()}")


def save(page) -> None:
    page.locator(".jp-NotebookPanel .jp-Notebook").first.click()
    page.keyboard.press("Control+s")
    page.wait_for_function(
        "() => !document.querySelector('.jp-mod-current.jp-mod-dirty')", timeout=30_000
    )


def run_and_click(lab, page, name: str) -> None:
    """Run all of the notebook in JupyterLab, save it, check every cell ran without an unexpected
    error, then click every widget's Run button and wait for its plot and verdict."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.goto(lab.notebook_url(name))
    page.wait_for_selector('.jp-Notebook-ExecutionIndicator[data-status="idle"]', timeout=90_000)
    time.sleep(1.0)  # let the first render settle before the menu is used
    start_run_all(page)
    wait_for_idle(page, timeout=420)
    no_dialog(page, lab, name)
    save(page)

    notebook = lab.saved_notebook(name)
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    assert all(c.get("execution_count") for c in code), "some cells did not run"
    errors = [
        (i, o.get("ename"), o.get("evalue", "")[:200])
        for i, c in enumerate(code)
        for o in c.get("outputs", [])
        if o.get("output_type") == "error" and RAISES not in source(c)
    ]
    assert errors == []
    page.screenshot(path=str(ARTIFACTS / f"{Path(name).stem}.png"), full_page=True)

    buttons = page.locator(".jupyter-widgets button", has_text=re.compile(r"^\s*Run\s*$"))
    expected = sum(len(WIDGET.findall(source(c))) for c in code)
    assert buttons.count() == expected, f"{buttons.count()} Run buttons for {expected} widgets"
    for k in range(expected):
        button = buttons.nth(k)
        box = button.locator("xpath=ancestor::div[contains(@class, 'widget-vbox')][1]")
        button.scroll_into_view_if_needed()
        button.click()
        box.locator(".widget-output img").first.wait_for(timeout=180_000)
        verdict = box.locator('.widget-output [data-mime-type="application/vnd.jupyter.stdout"]').first
        verdict.wait_for(timeout=30_000)
        assert verdict.inner_text().strip(), "the widget printed an empty verdict"
        assert not box.locator('.widget-output [data-mime-type="application/vnd.jupyter.stderr"]').count()
        box.screenshot(path=str(ARTIFACTS / f"{Path(name).stem}_widget{k}.png"))


# Two classes, so that `--dist loadscope` gives each pytest-xdist worker half of the notebooks
# (and its own JupyterLab); alternate notebooks, so that the slow ones are shared out.
class TestEvenNotebooks:
    @pytest.mark.parametrize("name", NOTEBOOKS[0::2])
    def test_notebook_runs_in_jupyterlab_and_widgets_draw(self, lab, page, name):
        run_and_click(lab, page, name)


class TestOddNotebooks:
    @pytest.mark.parametrize("name", NOTEBOOKS[1::2])
    def test_notebook_runs_in_jupyterlab_and_widgets_draw(self, lab, page, name):
        run_and_click(lab, page, name)
