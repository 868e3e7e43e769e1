"""The test run's processes import TensorFlow with the garbage collector paused
(``tests/import_without_gc/sitecustomize.py``): the hook is on; no collection runs during the
import and one full collection runs right after it; nothing is frozen or skipped, so the import's
garbage and the program's are both collected, their finalizers run; a collector the program had
switched off stays off; an import that fails leaves the collector on; a ``sitecustomize`` further
along the path still runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HOOK = Path(__file__).resolve().parent / "import_without_gc"

#: A stand-in for TensorFlow: its import records the collector's state, then leaves a cycle behind.
FAKE_INIT = """
import gc, os
ENABLED_DURING_IMPORT = gc.isenabled()
class Node:
    def __del__(self):
        os.write(1, b"import-time cycle collected\\n")
a, b = Node(), Node()
a.other, b.other = b, a
del a, b
"""

#: Imports the stand-in, then leaves a cycle of its own whose finalizer says when it is collected.
PROGRAM = """
import gc, os
import tensorflow
print("during", tensorflow.ENABLED_DURING_IMPORT, "after", gc.isenabled(),
      "frozen", gc.get_freeze_count(), flush=True)
class Node:
    def __del__(self):
        os.write(1, b"program cycle collected\\n")
a, b = Node(), Node()
a.other, b.other = b, a
del a, b
"""


def run(code: str, pythonpath: list[Path]) -> list[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, pythonpath))}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def fake_tensorflow(tmp_path: Path, init: str = FAKE_INIT) -> Path:
    (tmp_path / "tensorflow").mkdir(parents=True)
    (tmp_path / "tensorflow" / "__init__.py").write_text(init)
    return tmp_path


def test_the_test_run_puts_the_hook_on_every_process():
    assert str(HOOK) in os.environ["PYTHONPATH"].split(os.pathsep)
    assert run("import sitecustomize; print(sitecustomize.__file__)", [HOOK]) == [
        str(HOOK / "sitecustomize.py")
    ]


def test_the_import_runs_without_the_collector_and_all_garbage_is_still_collected(tmp_path):
    fake = fake_tensorflow(tmp_path)
    without = run(PROGRAM, [fake])
    assert "during True after True frozen 0" in without
    assert sorted(without) == sorted(
        ["during True after True frozen 0"]
        + ["import-time cycle collected"] * 2  # whenever the collector next runs
        + ["program cycle collected"] * 2  # at exit
    )
    # With the hook: paused during the import, the import's cycle collected right after it.
    assert run(PROGRAM, [HOOK, fake]) == [
        "import-time cycle collected",
        "import-time cycle collected",
        "during False after True frozen 0",
        "program cycle collected",
        "program cycle collected",
    ]


def test_a_collector_switched_off_stays_off_and_a_failed_import_leaves_it_on(tmp_path):
    fake = fake_tensorflow(tmp_path)
    off = "import gc; gc.disable(); import tensorflow; print(gc.isenabled())"
    assert run(off, [HOOK, fake])[0] == "False"  # its cycle is left for exit
    broken = fake_tensorflow(tmp_path / "broken", "raise ValueError('no TensorFlow here')\n")
    failed = "import gc\ntry:\n    import tensorflow\nexcept ValueError:\n    print(gc.isenabled())"
    assert run(failed, [HOOK, broken]) == ["True"]


def test_the_real_tensorflow_import_runs_one_full_collection_not_five():
    count = """
import gc
full = []
def count(phase, info):
    if phase == "stop" and info["generation"] == 2:
        full.append(1)
gc.callbacks.append(count)
import tensorflow
print(len(full), gc.isenabled(), gc.get_freeze_count())
"""
    assert run(count, [HOOK])[-1] == "1 True 0"  # about five without the hook (TensorFlow 2.21)


def test_a_sitecustomize_further_along_the_path_still_runs(tmp_path):
    (tmp_path / "sitecustomize.py").write_text("print('the next sitecustomize ran')\n")
    assert run("print('main')", [HOOK, tmp_path]) == ["the next sitecustomize ran", "main"]
