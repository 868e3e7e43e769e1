"""Notebook 12, ``notebooks/12_train_in_mixed_precision.ipynb``.

``precision``, ``precision_isa``, ``precision_checks``: mixed precision under fit, the batch
sweep; fresh processes under a capped oneDNN instruction set and their kernels; the exercise
checks. Notebook 14 reads its bfloat16 note.
"""
