"""Notebook 13, ``notebooks/13_distribute_training.ipynb``.

``distribute``, ``distribute_check``, ``distribute_cluster``, ``distribute_input``,
``data_service``: strategy tables and timings; the exercise checks; the notebook's worker
programs as local ``TF_CONFIG`` clusters and the resume demo's logs; the records each worker
received; the tf.data service sweep.
"""
