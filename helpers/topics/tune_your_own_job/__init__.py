"""Notebook 16, ``notebooks/16_tune_your_own_job.ipynb``.

``jobfile``, ``tuning``, ``tuning_trials``, ``tune_report``, ``tune_files``, ``tune_readings``
(also ``python -m helpers.tune``): the job-file contract and its exercise check; the search under
a budget; one trial in a fresh process and its outcome; the ranked report; its files (markdown and
the bench result); the figure and readings.
"""
