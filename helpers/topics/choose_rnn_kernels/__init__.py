"""Notebook 09, ``notebooks/09_choose_rnn_kernels.ipynb``.

``rnn``, ``rnn_report``: Keras 3's LSTM paths, GRU, ``BlockLSTMV2``, unrolling; the unrolling
figure and reading; the bench id.
"""
