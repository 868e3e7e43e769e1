"""Notebook 13's exercise checks: a ``MirroredStrategy`` over the two logical CPUs with
``HierarchicalCopyAllReduce``, and a ``TF_CONFIG`` for the third of three workers.
``helpers.topics.distribute_training.distribute`` imports them back, as the notebook calls them."""

from __future__ import annotations

import json
from typing import Any

from helpers.exercises import Feedback, correct, not_yet


def check_mirrored(strategy: Any) -> Feedback:
    """Exercise check: a ``MirroredStrategy`` over the two logical CPUs that all-reduces with
    ``HierarchicalCopyAllReduce``, whose replicas end three steps with the weights one device
    reaches on the same batches."""
    import tensorflow as tf

    if not isinstance(strategy, tf.distribute.MirroredStrategy):
        hint = (
            " (the TF1 class; use tf.distribute.MirroredStrategy)"
            if "V1" in type(strategy).__name__
            else ""
        )
        return not_yet(
            f"make a tf.distribute.MirroredStrategy, got {type(strategy).__name__}{hint}"
        )
    if strategy.num_replicas_in_sync != 2:
        return not_yet(
            f"it has {strategy.num_replicas_in_sync} replica(s); give it the two logical CPUs"
        )
    specs = [tf.DeviceSpec.from_string(d) for d in strategy.extended.worker_devices]
    devices = [spec.device_type for spec in specs]
    if devices != ["CPU", "CPU"]:
        return not_yet(f"its devices are {devices}; give it the two logical CPUs")
    # MirroredStrategy takes a device that does not exist ("/cpu:7") and runs its replica elsewhere
    here = {
        (d.device_type, tf.DeviceSpec.from_string(d.name).device_index)
        for d in tf.config.list_logical_devices()
    }
    missing = [f"CPU:{s.device_index}" for s in specs if ("CPU", s.device_index) not in here]
    if missing:
        return not_yet(
            f"this process has no {', '.join(missing)}: give it the two logical CPUs, "
            "CPU:0 and CPU:1"
        )
    try:
        chosen = strategy.extended._cross_device_ops  # no public accessor
    except AttributeError:  # a TensorFlow that renamed it: say so rather than blame the learner
        return not_yet(
            "this TensorFlow hides a strategy's cross-device ops; the check cannot read them"
        )
    if isinstance(chosen, type):
        return not_yet(
            f"cross_device_ops is the class {chosen.__name__}: pass an instance, "
            f"{chosen.__name__}() with the brackets"
        )
    ops = type(chosen).__name__
    if ops != "HierarchicalCopyAllReduce":  # the default when none is given: CollectiveAllReduce
        return not_yet(
            f"its cross-device ops are {ops}, not HierarchicalCopyAllReduce: pass "
            "cross_device_ops=tf.distribute.HierarchicalCopyAllReduce()"
        )
    from helpers.topics.distribute_training.distribute import lesson, make_data

    x, y = make_data(3 * 16)
    try:
        _, variables = lesson().train(strategy, x, y, global_batch=16)
        copies = [c.numpy() for c in strategy.experimental_local_results(variables["w"])]
    except Exception as exc:  # the learner's strategy: report, don't crash the notebook
        return not_yet(f"training with it raised {type(exc).__name__}: {exc}")
    # The copies agree by construction (ONLY_FIRST_REPLICA); the weights show the all-reduce.
    _, alone = lesson().train(tf.distribute.get_strategy(), x, y, global_batch=16)
    off = float(max(abs(c - alone["w"].numpy()).max() for c in copies))
    if off > 1e-6:
        return not_yet(
            f"after 3 steps its weights are {off:.3g} away from one device's on the same "
            "batches: its all-reduce did not sum the replicas' gradients"
        )
    return correct(
        "2 replicas, hierarchical copy; after 3 steps both copies hold one device's weights"
    )


def check_tf_config(text: Any) -> Feedback:
    """Exercise check: ``TF_CONFIG`` for worker 2 of three workers on host-a, host-b and
    host-c, port 2222 each."""
    if isinstance(text, dict):
        return not_yet("TF_CONFIG must be a JSON string: turn your dict into one with json.dumps")
    if not isinstance(text, str):  # json.loads also takes bytes, which os.environ does not
        return not_yet(f"TF_CONFIG must be a JSON string (str), got {type(text).__name__}")
    try:
        config = json.loads(text)
    except Exception as exc:  # the learner's text: not a string, not JSON, nested too deep, ...
        return not_yet(f"TF_CONFIG must be a JSON string: {type(exc).__name__}: {exc}")
    want = ["host-a:2222", "host-b:2222", "host-c:2222"]
    if not isinstance(config, dict) or config.get("cluster") != {"worker": want}:
        got = config.get("cluster") if isinstance(config, dict) else config
        return not_yet(f"its cluster should be {{'worker': {want}}}, got {got!r}")
    task = config.get("task")
    if task != {"type": "worker", "index": 2} or type(task["index"]) is not int:
        return not_yet(
            f"its task should be worker 2 (index 2, a whole number counted from 0), got {task}"
        )
    return correct("the third host's TF_CONFIG; the other two differ only in their index")
