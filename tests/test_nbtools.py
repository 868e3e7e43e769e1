"""Unit tests for helpers.nbtools: hygiene checks and executing a notebook safely."""

from __future__ import annotations

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from helpers import nbtools


def notebook(*cells):
    return new_notebook(cells=[new_markdown_cell("# Title"), *cells])


def ran(source, *outputs, count=1):
    cell = new_code_cell(source, execution_count=count)
    cell.outputs = list(outputs)
    return cell


def test_clean_notebook_has_no_problems():
    nb = notebook(
        ran("1 + 1", new_output("execute_result", {"text/plain": "2"}, execution_count=1))
    )
    assert nbtools.problems(nb) == []


def test_problems_found():
    nb = notebook(
        ran("boom()", new_output("error", ename="NameError", evalue="boom", traceback=[]), count=1),
        ran("x", new_output("stream", name="stderr", text="W0000 log line"), count=2),
        ran("p", new_output("stream", name="stdout", text="saved to /tmp/abc/model"), count=3),
        ran(
            "# NBVAL_RAISES_EXCEPTION\nraise E",
            new_output("error", ename="E", evalue="", traceback=[]),
            count=4,
        ),
    )
    nbtools.mark_expected_errors(nb)
    found = nbtools.problems(nb)
    assert any("cell 1: unexpected error NameError" in f for f in found)
    assert any("cell 2: a stderr output" in f for f in found)
    assert any("cell 3: output shows a machine path (/tmp/" in f for f in found)
    assert not any("cell 4" in f for f in found)


def test_title_and_execution_order():
    nb = new_notebook(cells=[new_markdown_cell("no title"), ran("1", count=2), ran("2", count=1)])
    found = nbtools.problems(nb)
    assert "the first cell is not a markdown '# Title'" in found
    assert any("execution counts" in f for f in found)


def test_strip_stderr_keeps_everything_else():
    nb = notebook(
        ran(
            "x",
            new_output("stream", name="stderr", text="e"),
            new_output("stream", name="stdout", text="o"),
        )
    )
    assert nbtools.strip_stderr(nb) == 1
    assert [o["name"] for o in nb.cells[1].outputs] == ["stdout"]


def test_mark_expected_errors_is_idempotent():
    nb = notebook(new_code_cell("# NBVAL_RAISES_EXCEPTION\n1/0"), new_code_cell("1"))
    nbtools.mark_expected_errors(nb)
    nbtools.mark_expected_errors(nb)
    assert nb.cells[1].metadata["tags"] == ["raises-exception"]
    assert "tags" not in nb.cells[2].metadata


def test_expected_error_without_tag_is_a_problem():
    cell = ran(
        "# NBVAL_RAISES_EXCEPTION\nraise E", new_output("error", ename="E", evalue="", traceback=[])
    )
    found = nbtools.problems(notebook(cell))
    assert any("no raises-exception tag" in f for f in found)


def test_execute_saves_a_clean_run(tmp_path):
    path = tmp_path / "ok.ipynb"
    nbformat.write(
        notebook(
            new_code_cell("import sys\nprint('hello')\nprint('noise', file=sys.stderr)"),
            new_code_cell("# NBVAL_RAISES_EXCEPTION\n1 / 0"),
            new_code_cell("2 + 3"),
        ),
        path,
    )
    nbtools.execute(path, timeout=60)
    saved = nbformat.read(path, as_version=4)
    assert [c.get("execution_count") for c in saved.cells[1:]] == [1, 2, 3]
    assert saved.cells[1].outputs == [new_output("stream", name="stdout", text="hello\n")]
    assert saved.cells[2].outputs[0]["ename"] == "ZeroDivisionError"
    assert saved.cells[2].metadata["tags"] == ["raises-exception"]  # JupyterLab's Run All goes on
    assert saved.cells[3].outputs[0]["data"]["text/plain"] == "5"


def test_execute_failure_leaves_the_file_untouched(tmp_path):
    path = tmp_path / "bad.ipynb"
    nbformat.write(notebook(new_code_cell("raise ValueError('nope')")), path)
    before = path.read_bytes()
    with pytest.raises(RuntimeError, match="a cell failed, nothing saved"):
        nbtools.execute(path, timeout=60)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["bad.ipynb"]


def test_execute_rejects_non_notebooks(tmp_path):
    with pytest.raises(ValueError, match="not a notebook file"):
        nbtools.execute(tmp_path / "missing.ipynb")


def test_scrub_text_removes_machine_paths():
    root = "/home/ana/workbook"
    text = (
        'File "/home/ana/workbook/.venv/lib/python3.11/site-packages/tensorflow/x.py", line 3\n'
        'File "/tmp/ipykernel_4242/1234567.py", line 2\n'
        'File "/tmp/__autograph_generated_filet3k9x2ab.py", line 11\n'
        "\x1b[0;32m/usr/lib/python3/dist-packages/../site-packages/keras/a.py\x1b[0m\n"
        'File "/root/.pyenv/versions/3.11.7/lib/python3.11/asyncio/events.py", line 80\n'
        "see /home/ana/workbook/helpers/env.py"
    )
    out = nbtools.scrub_text(text, root)
    assert ".../site-packages/tensorflow/x.py" in out and "<cell>" in out and "<autograph>" in out
    assert "see helpers/env.py" in out
    assert '".../python3.11/asyncio/events.py"' in out
    assert not nbtools.MACHINE_PATH.search(out)


def test_execute_scrubs_expected_error_tracebacks(tmp_path):
    path = tmp_path / "err.ipynb"
    # The error is raised inside site-packages, so the raw traceback names the venv's path.
    nbformat.write(
        notebook(
            new_code_cell("# NBVAL_RAISES_EXCEPTION\nimport nbformat\nnbformat.reads('{', 4)")
        ),
        path,
    )
    nbtools.execute(path, timeout=60)
    saved = nbformat.read(path, as_version=4)
    traceback = "\n".join(saved.cells[1].outputs[0]["traceback"])
    assert ".../site-packages/nbformat/" in traceback
    assert nbtools.problems(saved) == []


def test_ctrl_c_during_execute_says_what_was_not_saved(tmp_path):
    """Ctrl-C in a terminal reaches the whole process group, the kernel included. It used to be
    reported as "FAILED: AssertionError"; now the run stops, says which notebook was not saved,
    and exits 130 with that notebook untouched."""
    import os
    import signal
    import subprocess
    import sys
    import time

    started = tmp_path / "started"
    path = tmp_path / "slow.ipynb"
    nbformat.write(
        notebook(
            new_code_cell(  # the cell being interrupted: it waits, as a long cell would
                f"import pathlib, time\npathlib.Path({str(started)!r}).write_text('1')\n"
                "time.sleep(60)"
            )
        ),
        path,
    )
    before = path.read_bytes()
    run = subprocess.Popen(
        [sys.executable, "-m", "helpers.nbtools", "execute", str(path), str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not started.exists() and time.monotonic() < deadline and run.poll() is None:
            time.sleep(0.1)
        assert started.exists(), "the cell never started"
        os.killpg(run.pid, signal.SIGINT)
        out, err = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    assert run.returncode == 130, err
    assert (
        "interrupted (Ctrl-C or a stop signal) while running" in err
        and "it was not saved" in err
        and "1 not started" in err
    ), err
    assert "AssertionError" not in err
    assert path.read_bytes() == before


def test_execute_says_when_a_notebook_names_another_kernel(tmp_path, capsys):
    path = tmp_path / "other.ipynb"
    nb = notebook(new_code_cell("2 + 3"))
    nb.metadata["kernelspec"] = {
        "name": "tf-gpu-not-here",
        "display_name": "TF GPU",
        "language": "python",
    }
    nbformat.write(nb, path)
    nbtools.execute(path, timeout=60)
    assert "names kernel 'tf-gpu-not-here'; running it on 'python3'" in capsys.readouterr().err
    assert (
        nbformat.read(path, as_version=4).metadata["kernelspec"]["name"] == "tf-gpu-not-here"
    )  # kept as it was
