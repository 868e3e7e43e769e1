"""The gates every notebook passes in `make test`, each shown to fail on a broken notebook: nbval
(a cell raises), the second run of every cell in the same kernel (a cell that fails only when run
twice), in nbval's kernel (`--nbval-rerun`) and in JupyterLab (`--nbval-lab`, what `make test`
uses, which also clicks every widget: a widget whose run fails). Each runs pytest in a fresh
process on notebooks written to a temporary folder, with the repository's own hooks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser  # drives Chromium: left out of make quick

ROOT = Path(__file__).resolve().parent.parent
NBVAL = [
    "--nbval-lax",
    "--nbval-current-env",
    "--nbval-sanitize-with",
    str(ROOT / "tests" / "nbval_sanitize.cfg"),
]


def write_notebook(folder: Path, name: str, *sources: str) -> Path:
    cells = [
        {
            "cell_type": "code",
            "id": f"c{i}",
            "metadata": {},
            "source": s,
            "outputs": [],
            "execution_count": None,
        }
        for i, s in enumerate(sources)
    ]
    meta = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    path = folder / name
    path.write_text(
        json.dumps({"cells": cells, "metadata": meta, "nbformat": 4, "nbformat_minor": 5})
    )
    return path


def run_pytest(
    folder: Path, *args: str, env: dict | None = None
) -> subprocess.CompletedProcess[str]:
    shutil.copy(
        ROOT / "conftest.py", folder / "conftest.py"
    )  # the repository's hooks, as in make test
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=folder,
        env=env,
    )


def test_nbval_fails_on_a_cell_that_raises(tmp_path):
    write_notebook(tmp_path, "98_broken.ipynb", "x = 1", "1 / 0")
    result = run_pytest(tmp_path, *NBVAL, "--nbval-rerun", "98_broken.ipynb")
    assert result.returncode == 1, result.stdout[-2000:]
    assert "1 failed, 1 passed" in result.stdout


def test_rerun_fails_on_a_cell_that_breaks_when_run_twice(tmp_path):
    write_notebook(tmp_path, "97_once.ipynb", "x = 1", "assert 'ran' not in globals()\nran = True")
    without = run_pytest(tmp_path, *NBVAL, "97_once.ipynb")
    assert without.returncode == 0, without.stdout[-2000:]
    with_rerun = run_pytest(tmp_path, *NBVAL, "--nbval-rerun", "97_once.ipynb")
    assert with_rerun.returncode == 1, with_rerun.stdout[-2000:]
    assert (
        "1 failed, 1 passed" in with_rerun.stdout
        and "the second run of Cell 1 failed" in with_rerun.stdout
    )


def test_rerun_passes_a_notebook_that_can_be_rerun_and_skips_expected_errors(tmp_path):
    write_notebook(
        tmp_path,
        "96_fine.ipynb",
        "x = 1",
        "# NBVAL_RAISES_EXCEPTION\n# raises: ZeroDivisionError\n1 / 0",
        "# NBVAL_CHECK_OUTPUT\nprint(x + 1)",
    )
    nb = json.loads((tmp_path / "96_fine.ipynb").read_text())
    nb["cells"][2].update(
        execution_count=1, outputs=[{"output_type": "stream", "name": "stdout", "text": "2\n"}]
    )
    (tmp_path / "96_fine.ipynb").write_text(json.dumps(nb))
    result = run_pytest(tmp_path, *NBVAL, "--nbval-rerun", "96_fine.ipynb")
    assert result.returncode == 0, result.stdout[-2000:]
    assert "3 passed" in result.stdout


@pytest.mark.parametrize(
    ("cell", "words"),
    [
        (
            "# NBVAL_RAISES_EXCEPTION\n# raises: ZeroDivisionError\n1 / 1",
            "expected ZeroDivisionError, but the cell raised nothing",
        ),
        (
            "# NBVAL_RAISES_EXCEPTION\n# raises: ZeroDivisionError\n{}['key']",
            "expected ZeroDivisionError, but the cell raised KeyError",
        ),
        ("# NBVAL_RAISES_EXCEPTION\n1 / 0", "needs one line '# raises: ErrorName'"),
    ],
    ids=["stopped-raising", "another-error", "no-name"],
)
def test_nbval_fails_on_an_expected_error_cell_that_does_not_raise_what_it_names(
    tmp_path, cell, words
):
    write_notebook(tmp_path, "95_raises.ipynb", "x = 1", cell)
    result = run_pytest(tmp_path, *NBVAL, "95_raises.ipynb")
    assert result.returncode == 1, result.stdout[-2000:]
    assert "1 failed, 1 passed" in result.stdout and words in result.stdout


def test_jupyterlab_run_fails_on_a_cell_that_breaks_when_run_twice_and_on_a_widget_that_fails(
    tmp_path,
):
    from tests.browser.lab import in_ci, missing_browser

    if missing_browser() and not in_ci():
        pytest.skip(f"no browser here: {missing_browser()}")
    write_notebook(tmp_path, "97_once.ipynb", "x = 1", "assert 'ran' not in globals()\nran = True")
    write_notebook(
        tmp_path,
        "94_widget.ipynb",
        "from helpers import widgets\n\ndef boom():\n    raise RuntimeError('broken on purpose')",
        "widgets.ComparisonWidget(lambda: {'boom': boom})",
    )
    # The first kernel's client also misses a heartbeat while it waits for the kernel (as on a busy
    # machine): the server still has the kernel, so its notebook must run, not error at setup.
    (tmp_path / "missed_beat.py").write_text(
        "import jupyter_client\n"
        "wait, missed = jupyter_client.BlockingKernelClient.wait_for_ready, []\n"
        "def flaky(self, timeout=None):\n"
        "    if not missed:\n"
        "        missed.append(1)\n"
        "        raise RuntimeError('Kernel died before replying to kernel_info')\n"
        "    return wait(self, timeout=timeout)\n"
        "jupyter_client.BlockingKernelClient.wait_for_ready = flaky\n"
    )
    result = run_pytest(
        tmp_path,
        "-p",
        "missed_beat",
        *NBVAL,
        "--nbval-lab",
        "97_once.ipynb",
        "94_widget.ipynb",
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)]),
            "WORKBOOK_SCALE": "small",
        },
    )
    assert result.returncode == 1, result.stdout[-3000:]
    assert "2 failed, 2 passed" in result.stdout and "Kernel died" not in result.stdout, (
        result.stdout[-3000:]
    )
    assert (
        "the second run, in JupyterLab, failed: AssertionError: Cell 1 raised AssertionError"
        in result.stdout
    )
    assert "widget 0 failed: Run failed: RuntimeError: broken on purpose" in result.stdout
