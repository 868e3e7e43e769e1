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

from helpers.nbtools import source

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

#: Runs the file named first on the command line as __main__, without the current folder on the
#: path, and (unless the idiom needs the workbook) without the editable install's import hook.
ALONE = """
import runpy, sys
{isolate}sys.path[:] = [p for p in sys.path if p not in ("", ".")]
runpy.run_path(sys.argv[1], run_name="__main__")
"""
ISOLATE = (
    "sys.meta_path[:] = "
    '[f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]\n'
)
NEEDS_WORKBOOK = "# needs the workbook: "


def idiom(path: Path) -> str:
    """The source of the last code cell after the notebook's '## Summary' heading."""
    cells = json.loads(path.read_text())["cells"]
    text = [source(c) for c in cells]
    start = max(
        i
        for i, (c, t) in enumerate(zip(cells, text, strict=True))
        if c["cell_type"] == "markdown" and t.startswith("## Summary")
    )
    code = [t for c, t in zip(cells[start:], text[start:], strict=True) if c["cell_type"] == "code"]
    return code[-1]


def run_alone(source: str, folder: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    (folder / "idiom.py").write_text(source)
    runner = ALONE.format(isolate="" if NEEDS_WORKBOOK in source else ISOLATE)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "WORKBOOK_SCALE")}
    return subprocess.run(
        [sys.executable, "-c", runner, str(folder / "idiom.py")],
        cwd=folder,
        env={**env, "TF_CPP_MIN_LOG_LEVEL": "2"},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_the_summary_idiom_runs_alone_in_an_empty_folder(path, tmp_path):
    result = run_alone(idiom(path), tmp_path)
    assert result.returncode == 0, (
        f"{path.name}'s idiom, run alone, failed:\n{result.stderr[-1500:]}"
    )


def test_an_idiom_that_needs_the_workbook_or_notebook_state_fails(tmp_path):
    needs_helpers = run_alone("from helpers import env\nprint(env.scale())", tmp_path)
    assert needs_helpers.returncode != 0 and "No module named 'helpers'" in needs_helpers.stderr
    said_why = run_alone(
        f"{NEEDS_WORKBOOK}a test\nfrom helpers import env\nprint(env.scale())", tmp_path
    )
    assert said_why.returncode == 0, said_why.stderr[-1500:]
    needs_state = run_alone("print(SIZE)", tmp_path)
    assert needs_state.returncode != 0 and "NameError" in needs_state.stderr


def test_the_distribute_idiom_resumes_when_run_on_two_workers(tmp_path):
    """13's idiom the way its comments say to run it on a cluster: MultiWorkerMirroredStrategy, the
    same file on two workers, each with its own TF_CONFIG, one shared CHECKPOINTS folder. Run to the
    end; then drop the last checkpoint, as if the cluster had died after step 20, and run again.
    Both workers must resume at step 20: one that did not restore would start at step 0, and the
    two workers' collectives would no longer pair up."""
    from helpers.cluster import free_ports

    source = idiom(ROOT / "notebooks" / "13_distribute_training.ipynb")
    assert source.count("tf.distribute.get_strategy()") == 1, "the idiom's strategy line changed"
    (tmp_path / "idiom.py").write_text(
        source.replace(
            "tf.distribute.get_strategy()", "tf.distribute.MultiWorkerMirroredStrategy()"
        )
    )
    shared = tmp_path / "shared"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "WORKBOOK_SCALE")}

    def run_two_workers() -> list[str]:
        ports = free_ports(2)
        workers = []
        try:
            for index in range(2):
                config = {
                    "cluster": {"worker": [f"127.0.0.1:{p}" for p in ports]},
                    "task": {"type": "worker", "index": index},
                }
                workers.append(
                    subprocess.Popen(
                        [
                            sys.executable,
                            "-c",
                            ALONE.format(isolate=ISOLATE),
                            str(tmp_path / "idiom.py"),
                        ],
                        cwd=tmp_path,
                        env={
                            **env,
                            "TF_CONFIG": json.dumps(config),
                            "CHECKPOINTS": str(shared),
                            "TF_CPP_MIN_LOG_LEVEL": "2",
                        },
                        stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE,
                        text=True,
                    )
                )
            outputs = [w.communicate(timeout=240) for w in workers]
        finally:
            for w in workers:
                w.kill()
                w.wait()
        for w, (_, err) in zip(workers, outputs, strict=True):
            assert w.returncode == 0, f"a worker failed:\n{err[-1500:]}"
        return [out for out, _ in outputs]

    first = run_two_workers()
    assert all(
        "trained to step 30 | checkpoints: ['ckpt-20', 'ckpt-30']" in out for out in first
    ), first
    folder = shared / "checkpoints"
    for stale in folder.glob("ckpt-30.*"):
        stale.unlink()
    (folder / "checkpoint").write_text(
        'model_checkpoint_path: "ckpt-20"\n'
    )  # the last save, as a kill at step 2x leaves it
    second = run_two_workers()
    # A worker that resumed at step 20 saved once (ckpt-30); one that started over would have saved
    # at steps 10, 20 and 30 and list the last two, like the first run.
    assert all("trained to step 30 | checkpoints: ['ckpt-30']" in out for out in second), second
    assert sorted(p.name for p in folder.glob("ckpt-30.*")), (
        "the chief saved step 30 into the shared folder again"
    )
