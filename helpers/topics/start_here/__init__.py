"""Notebook 00, ``notebooks/00_start_here.ipynb``.

``start``: the environment check, its rows and the exercise check.
"""
