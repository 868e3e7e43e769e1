"""Data-parallel training and where variables live (notebook 13).

In one process: ``MirroredStrategy`` and ``CentralStorageStrategy`` over logical devices, with a
small linear model trained by a custom loop, so that variable placement and replica agreement can
be read off. Across processes (``helpers.cluster`` starts them): ``MultiWorkerMirroredStrategy``
workers and a ``ParameterServerStrategy`` chief with its servers, run as
``python -m helpers.topics.distribute mwms|keras-fit|ps``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from helpers.checks import whole_number
from helpers.comparison import Comparison
from helpers.exercises import Feedback, correct, not_yet

FEATURES = 8
STRATEGIES = ("no strategy", "MirroredStrategy", "CentralStorageStrategy")
CROSS_DEVICE_OPS = ("ReductionToOneDevice", "HierarchicalCopyAllReduce", "NcclAllReduce")


def make_data(n: int = 512, seed: int = 0) -> tuple[Any, Any]:
    """Features and targets of a noisy linear problem: ``y = x @ w_true + noise``."""
    import numpy as np

    whole_number("n", n)
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, FEATURES)).astype("float32")
    w_true = np.linspace(-1.0, 1.0, FEATURES, dtype="float32")[:, None]
    y = x @ w_true + 0.01 * rng.normal(size=(n, 1)).astype("float32")
    return x, y


def make_strategy(name: str, devices: Sequence[str] | None = None, cross_device_ops: str = "ReductionToOneDevice") -> Any:
    """A ``tf.distribute`` strategy by name over ``devices`` (default: every logical CPU)."""
    import tensorflow as tf

    if name not in STRATEGIES:
        raise ValueError(f"name must be one of {STRATEGIES}, got {name!r}")
    if cross_device_ops not in CROSS_DEVICE_OPS:
        raise ValueError(f"cross_device_ops must be one of {CROSS_DEVICE_OPS}, got {cross_device_ops!r}")
    if devices is None:
        devices = [d.name for d in tf.config.list_logical_devices("CPU")]
    if name == "no strategy":
        return tf.distribute.get_strategy()
    if name == "CentralStorageStrategy":
        return tf.distribute.experimental.CentralStorageStrategy(compute_devices=list(devices),
                                                                 parameter_device="/device:CPU:0")
    ops = getattr(tf.distribute, cross_device_ops)()
    return tf.distribute.MirroredStrategy(devices=list(devices), cross_device_ops=ops)


def build_trainer(strategy: Any, steps: int = 20, batch: int = 64, learning_rate: float = 0.1,
                  seed: int = 0) -> tuple[Any, dict[str, Any]]:
    """A function that trains ``y = x @ w + b`` by SGD for ``steps`` batches under ``strategy``
    (custom loop: the global batch is split across replicas, gradients summed across them) and
    returns the losses; and the variables it trains."""
    import tensorflow as tf

    for name, value in (("steps", steps), ("batch", batch)):
        whole_number(name, value)
    x, y = make_data(steps * batch, seed)
    # Every replica applies the same all-reduced update; ONLY_FIRST_REPLICA says so, which
    # CentralStorageStrategy needs to update its single copy from replica context.
    agg = tf.VariableAggregation.ONLY_FIRST_REPLICA
    with strategy.scope():
        w = tf.Variable(tf.zeros([FEATURES, 1]), name="w", aggregation=agg)
        b = tf.Variable(tf.zeros([1]), name="b", aggregation=agg)
    dataset = strategy.experimental_distribute_dataset(tf.data.Dataset.from_tensor_slices((x, y)).batch(batch))

    @tf.function
    def step(inputs: Any) -> Any:
        def replica_step(features: Any, targets: Any) -> Any:
            with tf.GradientTape() as tape:
                per_example = tf.square(features @ w + b - targets)
                loss = tf.nn.compute_average_loss(per_example, global_batch_size=batch)
            grads = tape.gradient(loss, [w, b])
            grads = tf.distribute.get_replica_context().all_reduce("sum", grads)
            w.assign_sub(learning_rate * grads[0])
            b.assign_sub(learning_rate * grads[1])
            return loss

        per_replica = strategy.run(replica_step, args=inputs)
        return strategy.reduce("sum", per_replica, axis=None)

    def epoch() -> list[float]:
        return [float(step(inputs)) for inputs in dataset]

    return epoch, {"w": w, "b": b}


def train(strategy: Any, steps: int = 20, batch: int = 64, learning_rate: float = 0.1, seed: int = 0) -> dict[str, Any]:
    """One pass of ``build_trainer``'s loop from zero weights: the losses, the variables, and
    each replica's copy of the weights."""
    epoch, variables = build_trainer(strategy, steps, batch, learning_rate, seed)
    losses = epoch()
    copies = [v.numpy() for v in strategy.experimental_local_results(variables["w"])]
    return {"losses": losses, "variables": variables, "replica_weights": copies,
            "replicas": strategy.num_replicas_in_sync}


def variable_devices(result: dict[str, Any]) -> Any:
    """Where each variable of a ``train`` result lives: one row per variable and copy."""
    import pandas as pd
    import tensorflow as tf

    rows = []
    for name, variable in result["variables"].items():
        strategy = tf.distribute.get_strategy() if not hasattr(variable, "_distribute_strategy") else variable._distribute_strategy
        copies = strategy.experimental_local_results(variable) if strategy is not None else [variable]
        for i, copy in enumerate(copies):
            rows.append({"variable": name, "copy": i, "device": copy.device.split("/job:localhost/replica:0/task:0")[-1] or copy.device,
                         "type": type(variable).__name__})
    return pd.DataFrame(rows).set_index(["variable", "copy"])


def replica_spread(result: dict[str, Any]) -> float:
    """Largest difference between any replica's weights and the first replica's (0 when they agree)."""
    import numpy as np

    first = result["replica_weights"][0]
    return float(max(np.max(np.abs(copy - first)) for copy in result["replica_weights"]))


def strategy_variants(steps: int = 10, batch: int = 256) -> dict[str, Any]:
    """The same training run under each strategy of ``STRATEGIES``, for ``timing.compare``:
    on logical CPUs this shows what the machinery costs, not a speed-up."""
    return {name: build_trainer(make_strategy(name), steps, batch)[0] for name in STRATEGIES}


# --- the processes of a cluster -------------------------------------------------------------

def _weights_digest(values: Sequence[Any]) -> str:
    digest = hashlib.sha256()
    for value in values:
        digest.update(value.tobytes())
    return digest.hexdigest()[:16]


def _task() -> tuple[str, int]:
    task = json.loads(os.environ["TF_CONFIG"])["task"]
    return task["type"], int(task["index"])


def mwms_main(steps: int, batch: int) -> None:
    """One MultiWorkerMirroredStrategy worker: a custom loop over its shard of the data; emits
    its losses and a digest of its final weights (identical on every worker when in sync)."""
    import tensorflow as tf

    from helpers import procs

    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    result = train(strategy, steps=steps, batch=batch)
    w, b = (v.numpy() for v in result["variables"].values())
    kind, index = _task()
    procs.emit({"task": f"{kind}:{index}", "replicas": result["replicas"], "first_loss": result["losses"][0],
                "last_loss": result["losses"][-1], "weights_sha": _weights_digest([w, b]),
                "w": [round(float(v), 6) for v in w.ravel()]})


def keras_fit_main(steps: int, batch: int) -> None:
    """Keras 3 ``model.fit`` under MultiWorkerMirroredStrategy; emits the error it raises."""
    import keras
    import tensorflow as tf

    from helpers import procs

    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    x, y = make_data(steps * batch)
    with strategy.scope():
        model = keras.Sequential([keras.Input((FEATURES,)), keras.layers.Dense(1)])
        model.compile("sgd", "mse")
    kind, index = _task()
    try:
        model.fit(tf.data.Dataset.from_tensor_slices((x, y)).batch(batch), epochs=1, verbose=0)
    except Exception as exc:  # the failure is the result this demo reports
        text = re.sub(r"\(PerReplica:\{.*\}\) with", "(PerReplica:{...}) with", str(exc), flags=re.S)
        procs.emit({"task": f"{kind}:{index}", "error": f"{type(exc).__name__}: {text.splitlines()[0][:300]}"})
        return
    procs.emit({"task": f"{kind}:{index}", "error": ""})


def ps_main(steps: int, batch: int) -> None:
    """ParameterServerStrategy: parameter servers and workers serve; the chief creates the
    variables (on the servers) and schedules training steps on the workers through a
    ``ClusterCoordinator``, then emits where the variables live and their values."""
    import tensorflow as tf

    from helpers import procs

    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    kind, index = _task()
    if kind in ("worker", "ps"):
        server = tf.distribute.Server(resolver.cluster_spec(), job_name=kind, task_index=index,
                                      protocol=resolver.rpc_layer or "grpc", start=True)
        server.join()  # runs until the launcher stops the cluster
        return
    strategy = tf.distribute.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    x, y = make_data(steps * batch)
    with strategy.scope():
        w = tf.Variable(tf.zeros([FEATURES, 1]), name="w")
        b = tf.Variable(tf.zeros([1]), name="b")

    def dataset_fn() -> Any:
        return tf.data.Dataset.from_tensor_slices((x, y)).shuffle(len(x), seed=0).batch(batch).repeat()

    iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))

    @tf.function
    def step(it: Any) -> Any:
        features, targets = next(it)

        def replica_step(f: Any, t: Any) -> Any:
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(f @ w + b - t))
            gw, gb = tape.gradient(loss, [w, b])
            w.assign_sub(0.1 * gw)
            b.assign_sub(0.1 * gb)
            return loss

        return strategy.run(replica_step, args=(features, targets))

    losses = [coordinator.schedule(step, args=(iterator,)) for _ in range(steps)]
    coordinator.join()
    # Steps run asynchronously on the workers: the first one scheduled need not run first, so
    # judge training by the loss on all the data before (zero variables) and after.
    start_loss = float(tf.reduce_mean(tf.square(y)))
    end_loss = float(tf.reduce_mean(tf.square(x @ w.read_value() + b.read_value() - y)))
    procs.emit({"task": f"{kind}:{index}", "steps": len(losses), "first_loss": float(losses[0].fetch()),
                "last_loss": float(losses[-1].fetch()), "start_loss": start_loss, "end_loss": end_loss,
                "w_device": w.device, "b_device": b.device,
                "w": [round(float(v), 6) for v in w.numpy().ravel()]})


MODES = {"mwms": mwms_main, "keras-fit": keras_fit_main, "ps": ps_main}
ROLES = {"mwms": {"worker": 2}, "keras-fit": {"worker": 2}, "ps": {"chief": 1, "ps": 1, "worker": 2}}


def run_cluster(mode: str, logdir: str | Path, steps: int = 20, batch: int = 64, timeout: float = 180.0,
                workers: int = 2) -> Any:
    """Run one of ``MODES`` as a local cluster (``helpers.cluster``) and return one row per
    reporting task (the workers for ``mwms`` and ``keras-fit``, the chief for ``ps``)."""
    import pandas as pd

    from helpers import cluster, procs

    if mode not in MODES:
        raise ValueError(f"mode must be one of {list(MODES)}, got {mode!r}")
    roles = {**ROLES[mode], "worker": workers}
    results = cluster.run(roles, procs.python_module("helpers.topics.distribute", mode, str(steps), str(batch)),
                          logdir=logdir, timeout=timeout, wait_for=("chief",) if mode == "ps" else ("worker",),
                          env={"PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    rows = [row for result in results.values() for row in result.rows]
    if not rows:
        raise RuntimeError(f"no task reported a result; logs are in {logdir}")
    return pd.DataFrame(rows).set_index("task").sort_index()


def workers_agree(table: Any) -> bool:
    """True when every worker of an ``mwms`` run ended with the same weights (same digest)."""
    return table["weights_sha"].nunique() == 1 and len(table) >= 2


def cluster_experiment(mode: str = "mwms", workers: int = 2, steps: int = 20,
                       on_progress: Any = None) -> Any:
    """Run ``mode`` as a local cluster in a fresh temporary log folder: the experiment behind
    notebook 13's widget."""
    import tempfile

    if on_progress is not None:
        on_progress(0, 1)
    with tempfile.TemporaryDirectory() as logdir:
        table = run_cluster(mode, logdir, steps=steps, workers=workers)
    if on_progress is not None:
        on_progress(1, 1)
    return table


def weights_figure(table: Any, title: str = "") -> Any:
    """Each reporting task's final weights beside the true ones: agreeing workers overlap."""
    import numpy as np
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.5, 3), layout="constrained")
    ax = fig.subplots()
    index = np.arange(FEATURES)
    ax.plot(index, np.linspace(-1.0, 1.0, FEATURES), "k--", label="true weights")
    if "w" in table.columns:
        for marker, (task, row) in zip("os^vD", table.iterrows(), strict=False):
            ax.plot(index, row["w"], marker, alpha=0.7, label=task)
    ax.set_xlabel("weight index")
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title)
    return fig


def cluster_summary(table: Any) -> str:
    """One line: agreement of MWMS workers, Keras' error, or where the PS chief's variables live."""
    if "error" in table.columns:
        errors = [e for e in table["error"] if e]
        return f"{len(errors)} of {len(table)} workers failed: {errors[0][:100]}" if errors else "Keras fit ran"
    if "weights_sha" in table.columns:
        return f"{len(table)} workers, weights identical: {workers_agree(table)}, final loss {table['last_loss'].iloc[0]:.4f}"
    row = table.iloc[0]
    return f"{row['steps']} steps scheduled by the chief, variables on {row['w_device']}, final loss {row['last_loss']:.4f}"


def check_mirrored(strategy: Any) -> Feedback:
    """Exercise check: a ``MirroredStrategy`` over two devices that all-reduces with
    ``HierarchicalCopyAllReduce``."""
    import tensorflow as tf

    if not isinstance(strategy, tf.distribute.MirroredStrategy):
        return not_yet(f"make a tf.distribute.MirroredStrategy, got {type(strategy).__name__}")
    if strategy.num_replicas_in_sync != 2:
        return not_yet(f"it has {strategy.num_replicas_in_sync} replicas; give it the two logical CPUs")
    ops = type(strategy.extended._cross_device_ops).__name__  # noqa: SLF001 - no public accessor
    if ops != "HierarchicalCopyAllReduce":
        return not_yet(f"its cross-device ops are {ops}, not HierarchicalCopyAllReduce")
    result = train(strategy, steps=3, batch=16)
    return correct(f"2 replicas, hierarchical copy; after 3 steps the replicas differ by {replica_spread(result)}")


def check_tf_config(text: Any) -> Feedback:
    """Exercise check: ``TF_CONFIG`` for worker 2 of three workers on host-a, host-b and
    host-c, port 2222 each."""
    try:
        config = json.loads(text)
    except (TypeError, ValueError) as exc:
        return not_yet(f"TF_CONFIG must be a JSON string: {exc}")
    want = ["host-a:2222", "host-b:2222", "host-c:2222"]
    if not isinstance(config, dict) or config.get("cluster") != {"worker": want}:
        return not_yet(f"its cluster should be {{'worker': {want}}}, got {config.get('cluster') if isinstance(config, dict) else config!r}")
    if config.get("task") != {"type": "worker", "index": 2}:
        return not_yet(f"its task should be worker 2 (index 2, counted from 0), got {config.get('task')}")
    return correct("the third host's TF_CONFIG; the other two differ only in their index")


def _workers_agree_table(steps: int = 20, small: bool = False) -> Any:
    """For the bench: time one MWMS cluster run and report whether its workers agree."""
    import tempfile
    import time

    from helpers import timing

    with tempfile.TemporaryDirectory() as logdir:
        started = time.perf_counter()
        table = run_cluster("mwms", logdir, steps=steps)
        seconds = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as logdir:
        started = time.perf_counter()
        run_cluster("mwms", logdir, steps=steps, workers=1)
        single = time.perf_counter() - started
    result = timing.comparison_table({"1 worker": timing.Timing("1 worker", (single,)),
                                      "2 workers": timing.Timing("2 workers", (seconds,))}, "1 worker")
    result.attrs["note"] = f"workers agree: {workers_agree(table)} (weight digests {sorted(set(table['weights_sha']))})"
    return result


BENCHMARKS = [
    Comparison(id="distribute.workers_agree", title="MultiWorkerMirroredStrategy on 127.0.0.1, whole run: 1 vs 2 workers",
               measure=_workers_agree_table, baseline="1 worker", variant="2 workers",
               quick={"steps": 5}, full={"steps": 20}),
]


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in MODES:
        sys.exit(f"usage: python -m helpers.topics.distribute {{{'|'.join(MODES)}}} STEPS BATCH (with TF_CONFIG set)")
    MODES[sys.argv[1]](int(sys.argv[2]), int(sys.argv[3]))
