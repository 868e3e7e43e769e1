"""Notebook 03, ``notebooks/03_choose_soft_placement.ipynb``.

``soft_placement``: the exercise check of a function that refuses a missing device.
"""
