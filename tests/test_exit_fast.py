"""The test run's processes skip the interpreter's last garbage collections at exit
(``tests/exit_fast/sitecustomize.py``): the hook is on, it does what it says, and a
``sitecustomize`` further along the path still runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HOOK = Path(__file__).resolve().parent / "exit_fast"

#: A reference cycle whose finalizer says when the cycle is collected; only exit can collect it.
CYCLE = """
import gc, os
class Node:
    def __del__(self):
        os.write(1, b"collected\\n")
a, b = Node(), Node()
a.other, b.other = b, a
del a, b
gc.disable()
print("done", flush=True)
"""


def run(code: str, pythonpath: list[Path]) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, pythonpath))}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_test_run_puts_the_hook_on_every_process():
    assert str(HOOK) in os.environ["PYTHONPATH"].split(os.pathsep)
    assert run("import sitecustomize; print(sitecustomize.__file__)", [HOOK]).strip() == str(
        HOOK / "sitecustomize.py"
    )


def test_without_the_hook_exit_collects_the_cycle_and_with_it_does_not():
    assert run(CYCLE, []).split() == ["done", "collected", "collected"]
    assert run(CYCLE, [HOOK]).split() == ["done"]


def test_a_sitecustomize_further_along_the_path_still_runs(tmp_path):
    (tmp_path / "sitecustomize.py").write_text("print('the next sitecustomize ran')\n")
    assert run("print('main')", [HOOK, tmp_path]).split("\n")[:2] == [
        "the next sitecustomize ran",
        "main",
    ]
