"""Notebook 14, ``notebooks/14_profile_and_tune_a_job.ipynb``.

``profiling``, ``capstone``, ``capstone_stages``: XPlane traces as tables; the naive-to-tuned
job, its table, report and figure; one stage's program run in a fresh process. Notebook 16 reads
its traces with ``profiling``. ``profiling_check``: the exercise check.
"""
