"""Per-notebook support: exercise checks, data generation, experiments that start fresh
processes, and the ``BENCHMARKS`` each notebook registers. The lesson code itself is in the
notebooks (and, where something else reuses it, exported to ``helpers.lessons``).

- ``start`` (00): the environment check; ``graphs`` (00, 01): graph tables and exercise checks
- ``placement`` (02-04): device names and the placement exercises' checks
- ``memory``, ``retracing`` (05): the memory guard and the measured tables of embedded constants;
  TensorFlow's retracing warning captured, the exercise checks, the bench ids
- ``cifar``, ``tfrecords``, ``shard_reading``, ``datafiles`` (06): verified CIFAR-10 download, data
  files read without trusting them, the shards' manifest and verifier, the exercise check, the
  reading comparison's inputs and bench id
- ``pipelines`` (07): the JPEG shards, the training workload, throughput bounds, the switches notebook
  14 uses, the exercise check, the bench ids
- ``fused`` (08): fused batch norm, XLA, data formats, ``decode_and_crop_jpeg``
- ``rnn`` (09): Keras 3's LSTM paths, GRU, ``BlockLSTMV2``, unrolling
- ``cputune``, ``cpu_report`` (08, 10): workloads timed in fresh processes per thread/oneDNN/allocator
  setting; the allocator and OpenMP runtime a process loaded, sweep figures, the wheel's instruction sets
- ``quant``, ``model_latency`` (11): TFLite conversion modes run with LiteRT; MobileNetV2's latency
  against its size on chosen thread counts
- ``precision`` (12): mixed precision under fit, oneDNN's instruction sets and kernels, the batch sweep
- ``distribute``, ``distribute_input``, ``data_service`` (13): strategy tables and timings, the notebook's worker programs as local
  ``TF_CONFIG`` clusters, the records each worker received, the resume demo's logs, the tf.data service sweep
- ``profiling``, ``capstone`` (14): XPlane traces as tables, the naive-to-tuned job in fresh processes
- ``jobfile``, ``tuning``, ``tune_report`` (16, and ``python -m helpers.tune``): the job-file contract
  and its exercise check, the trials in fresh processes under a budget, the ranked report
"""
