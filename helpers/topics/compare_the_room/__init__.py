"""Notebook 15, ``notebooks/15_compare_the_room.ipynb``.

``gather``, ``gather_files``: a room's ``bench.json`` files read into one table and one figure
(also ``python -m helpers.bench --gather``). ``gather_check``: the exercise check.
"""
