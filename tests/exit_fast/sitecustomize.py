"""Loaded by every Python process of a test run (conftest.py puts this folder on PYTHONPATH):
skip the interpreter's last garbage collections at exit.

A process that imported TensorFlow holds about a million Python objects. At exit CPython clears
its modules and collects cyclic garbage over all of them: about 0.8 CPU-seconds per process on
the machine the suite was timed on (3.1-3.2 s for ``python -c "import tensorflow"``, 2.2-2.4 s
with ``os._exit`` or with ``gc.freeze()`` at exit). A test run starts some 200 such processes
(kernels, the notebooks' child programs, clusters). ``gc.freeze()`` at exit moves every object
into the permanent generation, which those collections skip; the process exits as soon as its
other exit work is done. What the process printed, wrote and returned is all done by then.

Learners' processes exit the usual way. The one difference a test could see: cyclic garbage
left at exit is not collected, so its finalizers do not run. A program that needs one to save
its work would fail here first, which is the safe side.

A ``sitecustomize`` further along ``sys.path`` (Debian's, for one) still runs, after this one.
"""

import atexit
import gc
import importlib.machinery
import importlib.util
import os
import sys

atexit.register(gc.freeze)  # registered first, so it runs last of the exit functions


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
