"""Notebook 02, ``notebooks/02_find_where_ops_run.ipynb``.

``placement``: device names, the device-choice runs' reading and the exercise checks;
notebooks 03 and 04 reuse the names.
"""
