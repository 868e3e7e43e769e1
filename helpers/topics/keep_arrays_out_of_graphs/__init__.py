"""Notebook 05, ``notebooks/05_keep_arrays_out_of_graphs.ipynb``.

``memory``, ``memory_guard``, ``retracing``: the measured tables of embedded constants; the
guard that refuses sizes this machine cannot hold; TensorFlow's retracing warning captured, the
exercise checks, the bench ids.
"""
