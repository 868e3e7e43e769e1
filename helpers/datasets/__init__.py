"""Data the notebooks share, made or read without trusting it (no notebook of its own).

- ``cifar``, ``cifar_download``: CIFAR-10 read from disk and its verified download, or the
  synthetic sample shipped in ``data/`` (notebook 06, and the images of 07, 11, 14 and 16)
- ``datafiles``: data files read without trusting them (sizes, pickles, archives, folders)
"""
