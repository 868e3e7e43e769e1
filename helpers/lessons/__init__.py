"""Lesson code exported from the notebooks: generated, never edited by hand.

Each module here is written by ``make export`` from one notebook's cells marked ``#| export``
(``start_here`` from ``notebooks/00_start_here.ipynb``, and so on). The benchmark runner, later
notebooks and child programs import the technique from here, so it exists once: in the cell
the reader saw. See ``helpers/export.py``.
"""
