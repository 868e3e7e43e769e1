"""Notebook 06, ``notebooks/06_pack_files_into_shards.ipynb``.

``tfrecords``, ``tfrecords_manifest``, ``shard_reading``, ``shard_reading_summaries``: the
shards and their manifest, checksums and verifier, the exercise check, the reading comparison's
inputs, readings and bench ids. Notebook 07 reads its shards with ``tfrecords``.
"""
