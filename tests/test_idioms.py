"""Each notebook's Summary idiom runs alone: copied into a file in an empty folder and run by a
fresh Python, with no notebook state and without the workbook's own code on the path (the
editable install's finder is taken off ``sys.meta_path``), as a reader who copies it would. An
idiom that is about the workbook's own tools says so on a line ``# needs the workbook: why``,
and then runs with the workbook installed (still in an empty folder)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

#: Runs the file named first on the command line as __main__, without the current folder on the
#: path, and (unless the idiom needs the workbook) without the editable install's import hook.
ALONE = """
import runpy, sys
{isolate}sys.path[:] = [p for p in sys.path if p not in ("", ".")]
runpy.run_path(sys.argv[1], run_name="__main__")
"""
ISOLATE = 'sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]\n'
NEEDS_WORKBOOK = "# needs the workbook: "


def idiom(path: Path) -> str:
    """The source of the last code cell after the notebook's '## Summary' heading."""
    cells = json.loads(path.read_text())["cells"]
    text = ["".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in cells]
    start = max(i for i, (c, t) in enumerate(zip(cells, text, strict=True))
                if c["cell_type"] == "markdown" and t.startswith("## Summary"))
    code = [t for c, t in zip(cells[start:], text[start:], strict=True) if c["cell_type"] == "code"]
    return code[-1]


def run_alone(source: str, folder: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    (folder / "idiom.py").write_text(source)
    runner = ALONE.format(isolate="" if NEEDS_WORKBOOK in source else ISOLATE)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "WORKBOOK_SCALE")}
    return subprocess.run([sys.executable, "-c", runner, str(folder / "idiom.py")], cwd=folder, env={
        **env, "TF_CPP_MIN_LOG_LEVEL": "2"}, capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_the_summary_idiom_runs_alone_in_an_empty_folder(path, tmp_path):
    result = run_alone(idiom(path), tmp_path)
    assert result.returncode == 0, f"{path.name}'s idiom, run alone, failed:\n{result.stderr[-1500:]}"


def test_an_idiom_that_needs_the_workbook_or_notebook_state_fails(tmp_path):
    needs_helpers = run_alone("from helpers import env\nprint(env.scale())", tmp_path)
    assert needs_helpers.returncode != 0 and "No module named 'helpers'" in needs_helpers.stderr
    said_why = run_alone(f"{NEEDS_WORKBOOK}a test\nfrom helpers import env\nprint(env.scale())", tmp_path)
    assert said_why.returncode == 0, said_why.stderr[-1500:]
    needs_state = run_alone("print(SIZE)", tmp_path)
    assert needs_state.returncode != 0 and "NameError" in needs_state.stderr
