"""Per-notebook support: exercise checks, data generation, experiments that start fresh
processes, and the ``BENCHMARKS`` each notebook registers. The lesson code itself is in the
notebooks (and, where something else reuses it, exported to ``helpers.lessons``).

- ``start`` (00): the environment check; ``graphs`` (00, 01): graph tables and exercise checks
- ``placement`` (02-04): device names and the placement exercises' checks
- ``memory``, ``memory_guard``, ``retracing`` (05): the measured tables of embedded constants; the
  guard that refuses sizes this machine cannot hold; TensorFlow's retracing warning captured, the
  exercise checks, the bench ids
- ``cifar``, ``cifar_download``, ``tfrecords``, ``tfrecords_manifest``, ``shard_reading``,
  ``shard_reading_summaries``, ``datafiles`` (06): CIFAR-10 read from disk and its verified
  download, data files read without trusting them, the shards and their manifest, checksums and
  verifier, the exercise check, the reading comparison's inputs, readings and bench id
- ``pipelines``, ``pipelines_measure`` (07): the JPEG shards, the training workload, the switches
  notebook 14 uses, the exercise check, the bench ids; throughputs, bounds and their readings
- ``fused``, ``fused_batchnorm`` (08): XLA, data formats, ``decode_and_crop_jpeg``; fused and
  unfused batch norm, the Keras layer's variants
- ``rnn``, ``rnn_report`` (09): Keras 3's LSTM paths, GRU, ``BlockLSTMV2``, unrolling; the
  unrolling figure and reading
- ``cputune``, ``cputune_settings``, ``cpu_report`` (08, 10): workloads timed in fresh processes;
  the setting each process starts with (threads, oneDNN, OpenMP, allocator) and the named sweeps;
  the allocator and OpenMP runtime a process loaded, sweep figures, the wheel's instruction sets
- ``quant``, ``quant_models``, ``model_latency`` (11): the conversion modes compared; the data,
  training, TFLite conversion and LiteRT interpreters; MobileNetV2's latency against its size
- ``precision``, ``precision_isa``, ``precision_checks`` (12): mixed precision under fit, the batch
  sweep; fresh processes under a capped oneDNN instruction set and their kernels; the exercise
  checks
- ``distribute``, ``distribute_cluster``, ``distribute_input``, ``data_service`` (13): strategy
  tables and timings; the notebook's worker programs as local ``TF_CONFIG`` clusters and the
  resume demo's logs; the records each worker received; the tf.data service sweep
- ``profiling``, ``capstone``, ``capstone_stages`` (14): XPlane traces as tables; the
  naive-to-tuned job, its table, report and figure; one stage's program run in a fresh process
- ``jobfile``, ``tuning``, ``tuning_trials``, ``tune_report``, ``tune_readings`` (16, and
  ``python -m helpers.tune``): the job-file contract and its exercise check; the search under a
  budget; one trial in a fresh process and its outcome; the ranked report; the figure and readings
"""
