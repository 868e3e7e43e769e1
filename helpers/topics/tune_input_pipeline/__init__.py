"""Notebook 07, ``notebooks/07_tune_input_pipeline.ipynb``.

``pipelines``, ``pipelines_measure``: the JPEG shards, the training workload, the switches
notebooks 14 and 16 use, the bench ids; throughputs, bounds and their readings.
``pipeline_check``: the exercise check, which reads the pipeline's graph.
"""
