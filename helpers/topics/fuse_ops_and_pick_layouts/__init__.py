"""Notebook 08, ``notebooks/08_fuse_ops_and_pick_layouts.ipynb``.

``fused``, ``fused_batchnorm``, ``fused_check``: XLA, data formats, ``decode_and_crop_jpeg``;
fused and unfused batch norm, the Keras layer's variants; the exercise checks; the bench ids.
"""
