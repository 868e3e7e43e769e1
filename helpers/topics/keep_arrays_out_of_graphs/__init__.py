"""Notebook 05, ``notebooks/05_keep_arrays_out_of_graphs.ipynb``.

``memory``, ``memory_guard``, ``retracing``, ``graph_check``: the measured tables of embedded
constants; the guard that refuses sizes this machine cannot hold; TensorFlow's retracing warning
captured, the exercise checks (the graph's in ``graph_check``), the bench ids.
"""
