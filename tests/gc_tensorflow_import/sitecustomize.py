"""Loaded by every Python process of a test run (``conftest.py`` puts this folder on
``PYTHONPATH``): the garbage collector is paused while ``import tensorflow`` runs, and what that
import created is then frozen (``gc.freeze()``) until exit, where it is unfrozen again.

``import tensorflow`` (Keras with it) creates some 350,000 objects, nearly all of them for the
process's whole life. While they are being created CPython's collector runs about 840 times, five
of them full collections over everything created so far, and finds next to no garbage: 0.5 of the
import's 2.3 CPU-seconds on the machine the suite was timed on. After the import every full
collection traverses them all again: a pytest process running grader tests spent 4.9 of its 27
CPU-seconds collecting. Frozen objects sit in a generation the collector does not traverse.
``docs/test-times.md`` has the measurements (a child program spent 0.1 CPU-seconds collecting
instead of 0.5; that pytest process 3.0 instead of 4.9).

Nothing is skipped at exit: ``gc.unfreeze()`` is the last exit function, so the interpreter's own
shutdown collects everything, as it does for a learner's process, and every finalizer runs.
(Freezing without unfreezing at exit let processes crash on their way out: a ``tf.data`` iterator
or TensorFlow's runtime objects were never destroyed before the C++ runtime shut down. A notebook
13 trainer crashed in 5 of 12 runs that way; ``docs/test-times.md`` has the counts.) What the
program creates after the import is collected as usual. The one difference during the run: an
object created by the import that becomes cyclic garbage later is collected at exit, not sooner.

Learners' processes do not load this file. A ``sitecustomize`` further along ``sys.path``
(Debian's, for one) still runs, after this one.
"""

import atexit
import gc
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys


class _TensorFlowImportWithoutGC(importlib.abc.MetaPathFinder):
    """Finds ``tensorflow`` as the path finder would; its import runs with the collector paused,
    and what it created is frozen."""

    def find_spec(self, name, path=None, target=None):
        if name != "tensorflow":
            return None
        sys.meta_path.remove(self)  # once per process
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run_module = spec.loader.exec_module

        def exec_module(module):
            was_on = gc.isenabled()  # a program that switched the collector off keeps it off
            gc.disable()
            try:
                run_module(module)
                if was_on:
                    gc.freeze()
            finally:
                if was_on:
                    gc.enable()

        spec.loader.exec_module = exec_module
        return spec


if "tensorflow" not in sys.modules:
    atexit.register(gc.unfreeze)  # registered first, so it runs last of the exit functions
    sys.meta_path.insert(0, _TensorFlowImportWithoutGC())


def _run_the_next_sitecustomize() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sys.path:
        if os.path.abspath(entry or os.curdir) == here:
            continue
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", [entry])
        if spec is not None and spec.loader is not None:
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return


_run_the_next_sitecustomize()
