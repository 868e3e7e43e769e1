"""Lesson code exported from the notebooks: generated, never edited by hand (this file aside).

Each module here is written by ``make export`` from one notebook's cells marked ``#| export``
(``start_here`` from ``notebooks/00_start_here.ipynb``, and so on). The benchmark runner, later
notebooks and child programs import the technique from here, so it exists once: in the cell
the reader saw. See ``helpers/export.py``. ``of(notebook)`` finds a notebook's module by its name:
the one accessor the topic modules' ``lesson()`` call.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from types import ModuleType


def of(notebook: str) -> ModuleType:
    """The lesson module exported from ``notebooks/<notebook>.ipynb``, found by the notebook's name
    (``of("07_tune_input_pipeline")`` is ``helpers.lessons.tune_input_pipeline``). Imported on use:
    lesson code imports TensorFlow."""
    name = re.sub(r"^\d\d_", "", notebook.removesuffix(".ipynb"))
    if not (Path(__file__).parent / f"{name}.py").exists():
        raise ModuleNotFoundError(f"{notebook}: no exported lesson module helpers/lessons/{name}.py "
                                  "(mark cells '#| export' in the notebook and run make export)")
    return importlib.import_module(f"helpers.lessons.{name}")
