"""One machine plays the others. The main run checks each notebook on this CPU as TensorFlow sets
it up by default; here the notebooks whose lessons depend on oneDNN run under nbval again, in a
fresh kernel, with oneDNN the other way round: off where this CPU turns it on (AVX-512 and AMX
servers play an AVX2-only laptop), and forced on but capped at AVX2 where it is off (an AVX2-only
laptop plays a server's oneDNN kernels without their AVX-512). A notebook says its lesson depends on
oneDNN by printing ``env.onednn_status()`` or comparing a placement table through
``fdlog.fold_onednn``; that is what puts it in this list, unless it already runs its workloads
under both settings itself (``Setting(onednn=False)`` and ``Setting(onednn=True)``, in child
processes, in every run: notebook 10), where a third run would repeat what the main run covers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import env
from helpers.nbtools import source

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
MARKS = ("env.onednn_status()", "fdlog.fold_onednn(")
BOTH_WAYS = ("onednn=False", "onednn=True")  # a notebook that runs both settings itself


def code(path: Path) -> str:
    cells = json.loads(path.read_text())["cells"]
    return "\n".join(source(c) for c in cells if c["cell_type"] == "code")


def onednn_notebooks() -> list[str]:
    """The notebooks whose code names one of ``MARKS`` and does not run both settings itself."""
    return sorted(
        p.name
        for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")
        if any(m in code(p) for m in MARKS) and not all(b in code(p) for b in BOTH_WAYS)
    )


def other_setting() -> dict[str, str]:
    """The environment that turns this run's oneDNN setting round: the machine's default, or the
    setting the run was given by hand (``TF_ENABLE_ONEDNN_OPTS=0 ONEDNN_MAX_CPU_ISA=AVX2`` playing
    an AVX2-only laptop then runs these notebooks forced on, capped at AVX2, as that laptop
    would)."""
    if env.onednn_enabled():
        return {"TF_ENABLE_ONEDNN_OPTS": "0"}
    return {"TF_ENABLE_ONEDNN_OPTS": "1", "ONEDNN_MAX_CPU_ISA": "AVX2"}


def test_the_oneDNN_notebooks_are_the_ones_that_need_it():
    names = onednn_notebooks()
    # Their lessons differ by CPU: placement logs (02, 03), NCHW convolution (08).
    assert {
        "02_find_where_ops_run.ipynb",
        "03_choose_soft_placement.ipynb",
        "08_fuse_ops_and_pick_layouts.ipynb",
    } <= set(names)
    # 10 prints the status too, but times every workload in child processes and runs its oneDNN
    # comparison under both settings in each run.
    cpu = code(NOTEBOOKS / "10_tune_the_cpu.ipynb")
    assert "10_tune_the_cpu.ipynb" not in names and all(b in cpu for b in BOTH_WAYS)


@pytest.mark.parametrize("name", onednn_notebooks())
def test_notebook_runs_with_onednn_the_other_way_round(name, tmp_path):
    setting = (
        other_setting()
    )  # set by hand for the whole run (a machine playing another), flips that
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--nbval-lax",
            "--nbval-current-env",
            "--nbval-sanitize-with",
            str(ROOT / "tests" / "nbval_sanitize.cfg"),
            str(NOTEBOOKS / name),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
        env={**os.environ, **setting, "WORKBOOK_SCALE": "small"},
    )
    assert result.returncode == 0, f"under {setting}:\n{result.stdout[-4000:]}"
