"""The test run's processes import TensorFlow with the garbage collector paused and freeze what
the import created until exit (``tests/gc_tensorflow_import/sitecustomize.py``): the hook is on
in a process that inherits the run's environment; no full collection runs during the import;
what the import created is frozen, what the program creates is not; the unfreeze runs after the
program's own exit functions, and the import's garbage is collected at exit; a spec asked for
before the import does not use the hook up; a collector the program had switched off stays off;
an import that fails leaves it on and freezes nothing; a ``sitecustomize`` further along the path
still runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HOOK = Path(__file__).resolve().parent / "gc_tensorflow_import"


def cycle(says: str) -> str:
    """Code that leaves a reference cycle whose finalizer prints ``says`` when it is collected."""
    return f"""
class Node:
    def __del__(self):
        os.write(1, b"{says}\\n")
a, b = Node(), Node()
a.other, b.other = b, a
del a, b
"""


#: A stand-in for TensorFlow: its import records the collector's state, then leaves a cycle behind.
FAKE_INIT = "import gc, os\nENABLED_DURING_IMPORT = gc.isenabled()\n" + cycle(
    "import-time cycle collected"
)

#: Imports the stand-in, leaves a cycle of its own, collects, then ends; each finalizer says when
#: its cycle is collected.
PROGRAM = (
    """
import gc, os
import tensorflow
print("during", tensorflow.ENABLED_DURING_IMPORT, "after", gc.isenabled(),
      "frozen", "many" if gc.get_freeze_count() > 100 else gc.get_freeze_count(), flush=True)
"""
    + cycle("program cycle collected")
    + """
gc.collect()
print("the run is over", flush=True)
"""
)


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


def test_a_process_that_inherits_the_test_runs_environment_loads_the_hook():
    assert str(HOOK) in os.environ["PYTHONPATH"].split(os.pathsep)
    done = subprocess.run(
        [sys.executable, "-c", "import sitecustomize; print(sitecustomize.__file__)"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.splitlines() == [str(HOOK / "sitecustomize.py")], done.stderr


def test_the_import_is_frozen_until_exit_and_every_cycle_is_still_collected(tmp_path):
    fake = fake_tensorflow(tmp_path)
    without = run(PROGRAM, [fake])
    over = without.index("the run is over")
    assert sorted(without[:over]) == sorted(
        ["during True after True frozen 0"]
        + ["import-time cycle collected"] * 2  # by the program's gc.collect(), if not sooner
        + ["program cycle collected"] * 2
    )
    assert without[over + 1 :] == []
    # With the hook the import's cycle is frozen through the run and collected at exit.
    assert run(PROGRAM, [HOOK, fake]) == [
        "during False after True frozen many",
        "program cycle collected",
        "program cycle collected",
        "the run is over",
        "import-time cycle collected",
        "import-time cycle collected",
    ]


def test_the_unfreeze_runs_after_the_programs_exit_functions(tmp_path):
    fake = fake_tensorflow(tmp_path)
    program = (
        "import atexit, gc, os, tensorflow\n"
        "def say():\n"
        "    os.write(1, b'frozen at exit: %d\\n' % (gc.get_freeze_count() > 0))\n"
        "atexit.register(say)"
    )
    assert run(program, [HOOK, fake]) == [
        "frozen at exit: 1",  # the program's exit function still sees the freeze
        "import-time cycle collected",  # then the unfreeze, then the shutdown's collection
        "import-time cycle collected",
    ]


def test_a_spec_asked_for_before_the_import_does_not_use_the_hook_up(tmp_path):
    fake = fake_tensorflow(tmp_path)
    program = (
        "import gc, importlib.util\n"
        "importlib.util.find_spec('tensorflow')\n"
        "import tensorflow\n"
        "print(tensorflow.ENABLED_DURING_IMPORT, gc.get_freeze_count() > 0)"
    )
    assert run(program, [HOOK, fake])[0] == "False True"


def test_a_collector_switched_off_stays_off_and_a_failed_import_leaves_it_on(tmp_path):
    fake = fake_tensorflow(tmp_path / "fake")
    off = "import gc; gc.disable(); import tensorflow; print(gc.isenabled(), gc.get_freeze_count())"
    assert run(off, [HOOK, fake])[0] == "False 0"  # its cycle is left for exit
    broken = fake_tensorflow(tmp_path / "broken", "raise ValueError('no TensorFlow here')\n")
    failed = (
        "import gc\ntry:\n    import tensorflow\n"
        "except ValueError:\n    print(gc.isenabled(), gc.get_freeze_count())"
    )
    assert run(failed, [HOOK, broken]) == ["True 0"]


def test_the_real_tensorflow_import_runs_no_full_collection_and_is_frozen():
    """A full collection is one of generation 2; younger ones would show as well, but the pause
    stops them all."""
    count = """
import gc
full = []
def count(phase, info):
    if phase == "stop" and info["generation"] == 2:
        full.append(1)
gc.callbacks.append(count)
import tensorflow
print(len(full), gc.isenabled(), gc.get_freeze_count() > 100_000)
"""
    assert run(count, [HOOK])[-1] == "0 True True"  # about five full collections without the hook


def test_a_sitecustomize_further_along_the_path_still_runs(tmp_path):
    (tmp_path / "sitecustomize.py").write_text("print('the next sitecustomize ran')\n")
    assert run("print('main')", [HOOK, tmp_path]) == ["the next sitecustomize ran", "main"]
