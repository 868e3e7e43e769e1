"""Notebook 01, ``notebooks/01_look_inside_graphs.ipynb``.

``graphs``, ``graphs_check``: graph tables (ops, optimized graphs, HLO), the exercise checks and
the bench id; notebooks 05 and 08 reuse its tables.
"""
