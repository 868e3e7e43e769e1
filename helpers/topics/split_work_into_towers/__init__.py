"""Notebook 04, ``notebooks/04_split_work_into_towers.ipynb``.

``towers``: the exercise check of towers summed with ``tf.add_n``.
"""
