"""Loaded by the Python processes of a test run that inherit its ``PYTHONPATH`` (``conftest.py``
puts this folder there; a process started with a ``PYTHONPATH`` of its own does not load it): the
garbage collector is paused while ``import tensorflow`` runs, and every object it tracks when the
import ends (TensorFlow's, and whatever the process made before) is then frozen (``gc.freeze()``)
until exit, where it is unfrozen again.

``import tensorflow`` (Keras with it) leaves some 350,000 objects tracked by the collector, nearly
all of them for the process's whole life (571,773 when the collector was paused, since a
collection stops tracking tuples and dicts that cannot form cycles). While they are being created
CPython's collector runs about 840 times, five of them full collections over everything created
so far, and finds next to no garbage: 0.5 of the import's 2.3 CPU-seconds on the machine the
suite was timed on. After the import every full collection traverses them all again: a pytest
process running grader tests spent 4.9 of its 27 CPU-seconds collecting. Frozen objects sit in a
generation the collector does not traverse. ``docs/test-times.md`` has the measurements (a child
program spent 0.1 CPU-seconds collecting instead of 0.5; that pytest process 3.0 instead of 4.9).

At exit nothing stays frozen: ``gc.unfreeze()`` runs after the program's exit functions, so the
interpreter's shutdown collects whatever garbage is left, frozen or not, as it does any garbage
left at exit. (Freezing without unfreezing at exit let processes crash on their way out: notebook
13's trainer in 5 of 12 runs; the cause was not established. ``docs/test-times.md`` has the
counts.) What the program creates after the import is collected as usual. The differences: the
import's own cyclic garbage (about 3,800 objects) and any object of the import that becomes cyclic
garbage later are collected at exit instead of sooner.

Learners' processes do not load this file. A ``sitecustomize`` further along ``sys.path``
(Debian's, for one) still runs, after this one.
"""

import atexit
import gc
import importlib.machinery
import importlib.util
import os
import sys

#: Loaders made for one file each: patching the instance touches no other module.
_FILE_LOADERS = (importlib.machinery.SourceFileLoader, importlib.machinery.SourcelessFileLoader)


class _TensorFlowImportWithoutGC:
    """A ``sys.meta_path`` finder: finds ``tensorflow`` as the path finder would; its import runs
    with the collector paused, and every object tracked when it ends is frozen."""

    done = False

    def find_spec(self, name, path=None, target=None):
        if name != "tensorflow" or self.done:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or not isinstance(spec.loader, _FILE_LOADERS):
            return spec  # found elsewhere, or by a loader we leave alone: the usual import
        run_module = spec.loader.exec_module
        finder = self

        def exec_module(module):
            finder.done = True  # once per process, whoever asked for the spec before
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
    atexit.register(gc.unfreeze)  # registered early, so it runs after the program's own
    sys.meta_path.insert(0, _TensorFlowImportWithoutGC())


def _run_the_next_sitecustomize() -> None:
    here = os.path.realpath(os.path.dirname(os.path.abspath(__file__)))
    for entry in sys.path:
        if os.path.realpath(entry or os.curdir) == here:
            continue
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", [entry])
        if spec is not None and spec.loader is not None:
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return


_run_the_next_sitecustomize()
