"""The lesson-in-cells pattern (CONTRIBUTING.md), checked on the saved notebooks that follow it.

For each notebook in ``TAUGHT``: every call it teaches appears in a visible, executed code cell
that is not an exercise's solution; its Summary ends in an executed idiom cell; and each helpers
module it imports (not the generated ``helpers.lessons`` copy of its own cells) is at most 300
lines.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from helpers.nbtools import source

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 300

#: Per notebook: the calls it teaches, each of which must be in a visible, executed,
#: non-solution code cell.
TAUGHT: dict[str, list[str]] = {
    "00_start_here.ipynb": [
        "tf.function(",
        "%timeit",
        ".numpy()",
        "time.perf_counter()",
        "statistics.quantiles(",  # the median and the quartiles
        "tf.compat.v1.placeholder(",
        "tf.compat.v1.Session(",
        "feed_dict=",
        "tf.config.experimental.set_synchronous_execution(False)",
    ],
    "01_look_inside_graphs.ipynb": [
        "tf.Graph()",
        "g.as_default()",
        "tf.compat.v1.placeholder(",
        "tf.Variable(",
        "get_operations()",
        "tf.compat.v1.global_variables_initializer()",
        "sess.run(",
        "get_concrete_function(",
        "tf.TensorSpec(",
        "GradientDescentOptimizer(",
        ".minimize(",
        "tf.GradientTape()",
        "tape.gradient(",
        "apply_gradients(",
        "graph_def.library.function",
        "for value in values:",
        "if value > 0:",
        "tf.print(",
        "experimental_get_tracing_count()",
        "tf.config.run_functions_eagerly(True)",
        "if self.weight is None:",
    ],
    "02_find_where_ops_run.ipynb": [
        "tf.debugging.set_log_device_placement(True)",
        "tf.config.set_logical_device_configuration(",
        "tf.config.LogicalDeviceConfiguration()",
        "with tf.device(",
        ".device",
        "tf.io.decode_jpeg(",
        "ConfigProto(log_device_placement=True",
        "device_count=",
    ],
    "03_choose_soft_placement.ipynb": [
        "tf.config.get_soft_device_placement()",
        "tf.config.set_soft_device_placement(False)",
        "ConfigProto(allow_soft_placement=False)",
        "ConfigProto(allow_soft_placement=True",
        'with tf.device("/GPU:2")',
    ],
    "04_split_work_into_towers.ipynb": [
        "tf.split(",
        "with tf.device(",
        "tf.add_n(",
        "tf.distribute.MirroredStrategy(",
        "strategy.experimental_distribute_dataset(",
        "strategy.run(",
        "strategy.reduce(",
        "tf.distribute.ReduceOp.SUM",
        "ConfigProto(device_count=",
    ],
    "05_keep_arrays_out_of_graphs.ipynb": [
        "tf.Graph()",
        "tf.compat.v1.placeholder(",
        "tf.convert_to_tensor(",
        ".as_graph_def()",
        ".ByteSize()",
        "g.finalize()",
        "@tf.function",
        "get_concrete_function(",
        "tf.data.Dataset.from_tensor_slices(",
        "reduce_retracing=True",
        "input_signature=[tf.TensorSpec(",
        ".experimental_get_tracing_count()",
        "EMBEDDING_CHILD",
        "tf.compat.v1.Session(",
    ],
    "06_pack_files_into_shards.ipynb": [
        "tf.train.Example(",
        "tf.train.BytesList(",
        "tf.train.Int64List(",
        ".SerializeToString()",
        "tf.io.TFRecordWriter(",
        "tf.io.TFRecordOptions(",
        "tf.io.FixedLenFeature(",
        "tf.io.parse_example(",
        "tf.io.parse_single_example(",
        "tf.data.TFRecordDataset(",
        ".interleave(",
        "tf.io.decode_raw(",
        "tf.io.decode_png(",
        "tf.io.read_file(",
        ".cache()",
        "tf.io.gfile.glob(",
        "tf.io.gfile.exists(",
        "tf.io.gfile.GFile(",
        "deterministic=False",
        "tf.compat.v1.python_io.TFRecordWriter(",
        "tf.compat.v1.gfile.Glob(",
        'ArraysOnly(handle, encoding="bytes").load()',
        "def find_class(self, module, name):",
        "os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)",
        "os.fdatasync(",
        'encoding="png"',
        "before_each=",
    ],
    "07_tune_input_pipeline.ipynb": [
        "tf.data.TFRecordDataset(",
        "tf.io.parse_single_example(",
        "tf.io.parse_example(",
        "tf.io.decode_jpeg(",
        "tf.data.Dataset.from_generator(",
        "num_parallel_calls=AUTOTUNE",
        ".interleave(",
        ".cache()",
        ".prefetch(AUTOTUNE)",
        ".shuffle(",
        ".repeat(",
        "tf.data.Options()",
        "options.deterministic = False",
        "options.autotune.ram_budget",
        "options.threading.private_threadpool_size",
        ".with_options(options)",
        ".snapshot(",
        ".save(",
        "tf.data.Dataset.load(",
        "tf.compat.v1.data.make_one_shot_iterator(",
        "tf.GradientTape()",
        "keras.Sequential(",
        "def data_only():",
        "def compute_only():",
        "def end_to_end():",
        "1 / (1 / data + 1 / compute)",
        "data < compute",
        "model.fit(fed, epochs=1",
        "SHUFFLE_MEMORY",
        "records.shuffle(args.buffer).map(decode",
        ".map(decode, num_parallel_calls=tf.data.AUTOTUNE).shuffle(args.buffer)",
        "tf.compat.v1.train.string_input_producer(",
        'hasattr(tf, "estimator")',
    ],
    "08_fuse_ops_and_pick_layouts.ipynb": [
        "tf.compat.v1.nn.fused_batch_norm(",
        "tf.raw_ops.FusedBatchNormV3(",
        "tf.nn.moments(",
        "tf.nn.batch_normalization(",
        "tf.GradientTape()",
        "keras.layers.BatchNormalization(",
        "jit_compile=True",
        'jit_compile="auto"',
        "model.jit_compile",
        'data_format="NCHW"',
        "tf.io.decode_and_crop_jpeg(",
        "tf.io.encode_jpeg(",
        "global_jit_level",
        "tf.compat.v1.Session(",
    ],
    "09_choose_rnn_kernels.ipynb": [
        "keras.layers.LSTM(",
        "keras.layers.RNN(keras.layers.LSTMCell(",
        "unroll=True",
        "keras.layers.GRU(",
        "tf.raw_ops.BlockLSTMV2(",
        "cell.kernel, cell.recurrent_kernel",
        "set_weights(",
        "tf.GradientTape()",
        "use_cudnn=True",
        "cudnn_blockers(",
        ".as_graph_def()",
        "tf.compat.v1.nn.dynamic_rnn",
    ],
    "10_tune_the_cpu.ipynb": [
        "CPU_CHILD",
        "tf.config.threading.set_intra_op_parallelism_threads(",
        "tf.config.threading.set_inter_op_parallelism_threads(",
        "get_intra_op_parallelism_threads()",
        "subprocess.run(",
        '"TF_ENABLE_ONEDNN_OPTS": "0"',
        '"LD_PRELOAD"',
        "psutil.Process().num_threads()",
        "ConfigProto(intra_op_parallelism_threads=",
        "tf.compat.v1.Session(",
        "os.sched_getaffinity(0)",
    ],
    "11_quantize_for_inference.ipynb": [
        "tf.lite.TFLiteConverter.from_keras_model(",
        "converter.optimizations = [tf.lite.Optimize.DEFAULT]",
        "converter.representative_dataset",
        "tf.lite.OpsSet.TFLITE_BUILTINS_INT8",
        "converter.inference_input_type",
        "converter.target_spec.supported_types = [tf.float16]",
        "from ai_edge_litert.interpreter import Interpreter",
        "allocate_tensors()",
        "get_input_details()",
        "set_tensor(",
        "invoke()",
        "get_tensor(",
        '["quantization"]',
        "keras.applications.MobileNetV2(",
        "weights=None",
        "num_threads=",
        'format="litert"',
        '.quantize("int8")',
    ],
    "12_train_in_mixed_precision.ipynb": [
        'keras.mixed_precision.set_global_policy("mixed_bfloat16")',
        "keras.mixed_precision.global_policy()",
        ".compute_dtype",
        ".variable_dtype",
        'dtype="float32"',
        "model.compile(",
        "jit_compile=jit_compile",
        "steps_per_execution=steps_per_execution",
        'jit_compile="auto"',
        ".jit_compile",
        "model.fit(",
        "model.evaluate(",
        "keras.optimizers.LossScaleOptimizer(",
        ".initial_scale",
        ".dynamic_growth_steps",
        ".inner_optimizer",
        "optimizer.scale_loss(",
        "optimizer.apply(",
        "tf.GradientTape()",
        "tf.float16",
        "tf.config.experimental.tensor_float_32_execution_enabled()",
        "tf.config.experimental.enable_tensor_float_32_execution(False)",
        '"ONEDNN_MAX_CPU_ISA": "AVX512_CORE"',
        '"ONEDNN_VERBOSE": "1"',
        "tf.compat.v1.mixed_precision.enable_mixed_precision_graph_rewrite(",
        "tf.config.optimizer.set_experimental_options(",
        "auto_mixed_precision_onednn_bfloat16",
    ],
    "13_distribute_training.ipynb": [
        "strategy.scope()",
        "strategy.experimental_distribute_dataset(",
        "strategy.run(",
        "strategy.reduce(",
        "tf.distribute.get_replica_context().all_reduce(",
        "tf.nn.compute_average_loss(",
        "tf.VariableAggregation.ONLY_FIRST_REPLICA",
        "tf.distribute.MirroredStrategy(DEVICES)",
        "tf.distribute.HierarchicalCopyAllReduce()",
        "tf.distribute.ReductionToOneDevice()",
        "tf.distribute.NcclAllReduce()",
        "tf.distribute.experimental.CentralStorageStrategy(",
        ".experimental_local_results(",
        "tf.distribute.MultiWorkerMirroredStrategy()",
        "TF_CONFIG",
        "tf.distribute.cluster_resolver.TFConfigClusterResolver()",
        "tf.distribute.Server(",
        "tf.distribute.ParameterServerStrategy(resolver)",
        "tf.distribute.coordinator.ClusterCoordinator(",
        "coordinator.create_per_worker_dataset(",
        "coordinator.schedule(",
        "coordinator.join()",
        "model.fit(",
        "tf.train.Checkpoint(",
        "tf.train.CheckpointManager(",
        "tf.train.latest_checkpoint(",
        "manager.save(",
        ".skip(",
        "keras.callbacks.BackupAndRestore(",
        '.processes["worker:1"].kill()',
        "tf.data.experimental.service.DispatchServer(",
        "tf.data.experimental.service.DispatcherConfig(",
        "tf.data.experimental.service.WorkerServer(",
        "tf.data.experimental.service.WorkerConfig(",
        "tf.data.experimental.service.distribute(",
        "processing_mode=",
        '"parallel_epochs"',
        '"distributed_epoch"',
        "os.sched_setaffinity(",
        "tf.compat.v1.train",
        "tf.config.set_logical_device_configuration(",
        "tf.config.LogicalDeviceConfiguration()",
        "mirrored.num_replicas_in_sync",
        "learning_rate)",
        "auto_shard_policy = policy",
        "tf.data.experimental.AutoShardPolicy",
        "strategy.distribute_datasets_from_function(per_worker)",
        "context.num_input_pipelines",
        "context.input_pipeline_id",
        "context.get_per_replica_batch_size(",
        "tf.distribute.experimental.PreemptionCheckpointHandler(",
        "handler.run(train_step, batch)",
        "signal.SIGTERM",
        "optimizer.iterations",
        "state.restore(saved)",
    ],
    "14_profile_and_tune_a_job.ipynb": [
        "tf.profiler.experimental.start(",
        'tf.profiler.experimental.Trace("train", step_num=step, _r=1)',
        "tf.profiler.experimental.stop()",
        "tf.profiler.experimental.Profile(logdir)",
        "tf.compat.v1.nn.fused_batch_norm(",
        "exponential_avg_factor=",
        "keras.mixed_precision.set_global_policy(policy)",
        "@tf.function",
        "tf.GradientTape()",
        "optimizer.apply(",
        "for _ in tf.range(steps)",
        "next(iterator)",
        "make_pipeline(",
        'cache="after_decode"',
        "prefetch=True",
        ".repeat()",
        "CAPSTONE_CHILD",
        '{"TF_ENABLE_ONEDNN_OPTS": "1"}',
        "stage_environment(stage_settings(",
    ],
    "16_tune_your_own_job.ipynb": [
        "dataset.take(steps)",
        "dataset.take(1).cache().repeat()",
        "model.fit(",
        "steps_per_epoch=steps",
        "model.train_on_batch(",
        "tf.profiler.experimental.start(",
        'tf.profiler.experimental.Trace("train", step_num=step, _r=1)',
        "tf.profiler.experimental.stop()",
        "dataset.prefetch(tf.data.AUTOTUNE)",
        "tf.data.Options()",
        "options.deterministic = False",
        "options.experimental_optimization.map_parallelization = True",
        "dataset.with_options(options)",
        "jit_compile=",
        "steps_per_execution=",
        "keras.mixed_precision.set_global_policy(",
        "tf.config.threading.set_intra_op_parallelism_threads(",
        "tf.config.threading.set_inter_op_parallelism_threads(",
        "keras.callbacks.LambdaCallback(",
        "TRIAL_PROGRAM",
        "tune.tune(",
        "jobfile.load(",
        "widgets.ExperimentWidget(",
        "widgets.ComparisonWidget(",
    ],
    # No TensorFlow to teach: the facilitator's calls, each visible.
    "15_compare_the_room.ipynb": [
        "gather.load(",
        "gather.table(",
        "gather.figure(",
        "gather.disagreements(",
        "gather.missing(",
        '"--gather"',
        "widgets.ExperimentWidget(",
    ],
}


def cells(name: str) -> list[dict]:
    return json.loads((ROOT / "notebooks" / name).read_text(encoding="utf-8"))["cells"]


def lesson_cells(name: str) -> list[dict]:
    """Visible, executed code cells that are not exercise solutions."""
    return [
        c
        for c in cells(name)
        if c["cell_type"] == "code"
        and not c.get("metadata", {}).get("jupyter", {}).get("source_hidden")
        and not source(c).lstrip().startswith("# Solution")
        and c.get("execution_count") is not None
    ]


@pytest.mark.parametrize("name", sorted(TAUGHT))
def test_every_taught_call_is_in_a_visible_executed_cell(name):
    visible = "\n".join(source(c) for c in lesson_cells(name))
    missing = [call for call in TAUGHT[name] if call not in visible]
    assert not missing, f"{name}: taught but in no visible, executed, non-solution cell: {missing}"


@pytest.mark.parametrize("name", sorted(TAUGHT))
def test_summary_ends_in_an_executed_idiom_cell(name):
    nb = cells(name)
    summary = [
        i
        for i, c in enumerate(nb)
        if c["cell_type"] == "markdown" and source(c).startswith("## Summary")
    ]
    assert len(summary) == 1, f"{name}: expected one '## Summary' heading"
    after = [c for c in nb[summary[0] + 1 :] if c["cell_type"] == "code"]
    assert after, f"{name}: the Summary has no code cell: its idiom must run"
    idiom = after[-1]
    assert idiom in lesson_cells(name), (
        f"{name}: the Summary's idiom cell is hidden, a solution or not executed"
    )
    assert not any(o.get("output_type") == "error" for o in idiom.get("outputs", []))


def imported_helpers(name: str) -> set[str]:
    modules = set()
    for cell in cells(name):
        if cell["cell_type"] != "code":
            continue
        for match in re.finditer(r"^from (helpers(?:\.\w+)*) import ([\w, ]+)", source(cell), re.M):
            package, names = match[1], [n.strip().split(" as ")[0] for n in match[2].split(",")]
            for item in names:
                candidate = f"{package}.{item}"
                try:
                    is_module = importlib.util.find_spec(candidate) is not None
                except (ModuleNotFoundError, AttributeError):  # a function, not a module
                    is_module = False
                modules.add(candidate if is_module else package)
    return modules


@pytest.mark.parametrize("name", sorted(TAUGHT))
def test_modules_the_notebook_uses_are_small(name):
    modules = imported_helpers(name)
    assert modules, f"{name}: imports no helpers module?"
    # helpers.lessons.* are the notebook's own cells, copied by `make export` (test_export.py keeps
    # them equal); their length is the lesson's, so the limit is for the hand-written helpers.
    for module in sorted(m for m in modules if not m.startswith("helpers.lessons")):
        origin = Path(importlib.util.find_spec(module).origin)
        lines = len(origin.read_text(encoding="utf-8").splitlines())
        assert lines <= MAX_LINES, (
            f"{module} ({origin.name}) has {lines} lines; at most {MAX_LINES}"
        )


def test_every_hand_written_helper_module_is_small():
    """All of them, not only those a notebook imports: a module split off another is held to the
    same limit. Lines are counted as `ruff format` writes them at the project's line length, which
    `make lint` enforces (format check and E501), so the limit cannot be met by packing lines."""
    paths = [
        p for p in (ROOT / "helpers").rglob("*.py") if "lessons" not in p.relative_to(ROOT).parts
    ]
    assert len(paths) > 40, "helpers/ not found"
    long = {
        p.relative_to(ROOT).as_posix(): n
        for p in paths
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, f"over {MAX_LINES} lines: {long}"


def test_plumbing_and_topics_are_apart():
    plumbing = {p.stem for p in (ROOT / "helpers").glob("*.py")} - {"__init__"}
    topics = {p.stem for p in (ROOT / "helpers" / "topics").rglob("*.py")} - {"__init__"}
    datasets = {p.stem for p in (ROOT / "helpers" / "datasets").glob("*.py")} - {"__init__"}
    assert topics and plumbing and datasets
    assert not plumbing & topics and not plumbing & datasets and not topics & datasets


def feedback_text(cell: dict) -> str:
    for output in cell.get("outputs", []):
        plain = output.get("data", {}).get("text/plain")
        if plain:
            return "".join(plain) if isinstance(plain, list) else plain
    return ""


@pytest.mark.parametrize("name", sorted(TAUGHT))
def test_each_exercise_stub_fails_and_each_solution_passes(name):
    """In the saved run (full scale); nbval compares the same verdicts at small scale, since
    these cells carry NBVAL_CHECK_OUTPUT and the sanitize file keeps only the verdict."""
    checks = [
        c
        for c in cells(name)
        if c["cell_type"] == "code" and re.search(r"\bcheck_\w+\(", source(c))
    ]
    assert checks, f"{name}: no exercise checks"
    for cell in checks:
        solution = source(cell).lstrip().startswith("# Solution")
        assert "NBVAL_CHECK_OUTPUT" in source(cell), (
            f"{name}: a check cell without NBVAL_CHECK_OUTPUT"
        )
        want = "Correct:" if solution else "Not yet:"
        assert feedback_text(cell).startswith(want), (
            f"{name}: {'solution' if solution else 'stub'} shows {feedback_text(cell)!r}"
        )
