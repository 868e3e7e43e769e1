"""Helpers behind the TensorFlow Performance Workbook notebooks.

One small module per notebook topic:

- ``start`` (00): the environment check; ``graphs`` (00, 01): ops, tensors, graphs, eager vs graph
- ``placement`` (02-04): placement logs as tables, soft placement, towers with ``add_n``
- ``memory`` (05): embedded constants and retracing, behind a memory guard
- ``cifar``, ``tfrecords`` (06): verified CIFAR-10 download, TFRecord shards, readers
- ``pipelines`` (07): input pipelines, throughput bounds, utilisation sampling
- ``fused`` (08): fused batch norm, XLA, data formats, ``decode_and_crop_jpeg``
- ``rnn`` (09): Keras 3's LSTM paths, GRU, ``BlockLSTMV2``, unrolling
- ``cputune`` (08, 10): workloads timed in fresh processes per thread/oneDNN/allocator setting
- ``quant`` (11): TFLite conversion modes run with LiteRT
- ``distribute``, ``cluster`` (12): strategies, and local ``TF_CONFIG`` clusters
- ``profiling``, ``capstone`` (13): XPlane traces as tables, the naive-to-tuned job

and shared pieces: ``timing`` (honest timing), ``widgets`` (the live comparison and experiment
widgets and their static figures), ``env`` (machine report, logical devices, the scale knob),
``bench`` (the benchmark runner), ``procs`` (fresh child processes with timeouts), ``checks``
(argument checks),
``exercises`` (check results), ``fileio`` (atomic writes) and ``nbtools`` (execute, check and
re-run notebooks). Importing this package does nothing else:
import the module you need, e.g. ``from helpers import timing``.
"""

__version__ = "0.1.0"
