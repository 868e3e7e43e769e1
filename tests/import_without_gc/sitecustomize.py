"""Loaded by every Python process of a test run (``conftest.py`` puts this folder on
``PYTHONPATH``): the garbage collector is paused while ``import tensorflow`` runs, then one full
collection runs and the collector is back as it was.

``import tensorflow`` (Keras with it) creates some 350,000 objects, nearly all of them for the
process's whole life. While they are being created CPython's collector runs about 840 times,
five of them full collections that traverse everything created so far, and finds next to no
garbage: 0.5 of the import's 2.3 CPU-seconds on the machine the suite was timed on. With the
collector paused and one collection after, a TensorFlow process used 0.3 to 0.6 CPU-seconds less
(``docs/test-times.md``, where the measurements are). A test run starts some 300 of them
(kernels, the notebooks' child programs, cluster tasks).

Nothing is skipped, only moved: garbage the import leaves is collected right after it, and what
the program creates is collected as usual, at exit too, so every finalizer runs as it does for a
learner. (Two earlier tries that skipped collections instead, ``gc.freeze()`` at exit and after
the import, let processes crash on their way out; ``docs/test-times.md`` has the counts.)

Learners' processes do not load this file. A ``sitecustomize`` further along ``sys.path``
(Debian's, for one) still runs, after this one.
"""

import gc
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys


class _ImportTensorFlowWithoutGC(importlib.abc.MetaPathFinder):
    """Finds ``tensorflow`` as the path finder would, and pauses the collector while it runs."""

    def find_spec(self, name, path=None, target=None):
        if name != "tensorflow":
            return None
        sys.meta_path.remove(self)  # once per process
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run_module = spec.loader.exec_module

        def exec_module(module):
            was_on = gc.isenabled()
            gc.disable()
            try:
                run_module(module)
            finally:
                if was_on:
                    gc.enable()
                    gc.collect()

        spec.loader.exec_module = exec_module
        return spec


if "tensorflow" not in sys.modules:
    sys.meta_path.insert(0, _ImportTensorFlowWithoutGC())


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
