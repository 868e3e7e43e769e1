"""Notebook 13's lesson code and its plumbing: the custom loop under each strategy places
variables as the notebook says and gives the same losses (over logical devices, so in a child
process); the tf.data service starts, serves both processing modes, and leaves no process behind
after a failure. What notebook 13 itself runs as local clusters and checks in its compared cells
(MWMS workers agree, Keras fit fails under both multi-process strategies, the parameter-server
chief trains variables that live on the server, a killed worker's job resumes from its last
checkpoint, the tf.data service sweep) is tested there, under nbval, not run again here."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from helpers import cluster, procs, reaper
from helpers.topics.distribute_training import data_service, distribute

IN_PROCESS = textwrap.dedent("""
    from helpers import env, procs
    env.setup_logical_devices(2, "CPU")
    from helpers.lessons.distribute_training import make_strategy, train
    from helpers.topics.distribute_training import distribute
    x, y = distribute.make_data(5 * 32)
    for name in distribute.STRATEGIES:
        strategy = make_strategy(name, ["/device:CPU:0", "/device:CPU:1"])
        losses, variables = train(strategy, x, y, global_batch=32)
        devices = distribute.variable_devices(strategy, variables)
        copies = [c.numpy() for c in strategy.experimental_local_results(variables["w"])]
        procs.emit({
            "strategy": name,
            "replicas": strategy.num_replicas_in_sync,
            "last_loss": losses[-1],
            "spread": float(max(abs(c - copies[0]).max() for c in copies)),
            "w_devices": list(devices.loc["w", "device"]),
            "type": devices["type"].iloc[0],
        })
    variants = distribute.strategy_variants(["/device:CPU:0", "/device:CPU:1"], steps=2, batch=16)
    procs.emit({"variants": list(variants), "lengths": [len(run()) for run in variants.values()]})
""")


def test_strategies_agree_and_place_variables_as_documented():
    *rows, variants = procs.run_rows([sys.executable, "-c", IN_PROCESS], timeout=180)
    rows = {r["strategy"]: r for r in rows}
    assert rows["no strategy"]["replicas"] == 1
    assert rows["MirroredStrategy"]["replicas"] == 2 and rows["MirroredStrategy"]["spread"] == 0.0
    assert rows["MirroredStrategy"]["w_devices"] == [
        "/device:CPU:0",
        "/device:CPU:1",
    ]  # a copy per device
    assert rows["MirroredStrategy"]["type"] == "MirroredVariable"
    assert rows["CentralStorageStrategy"]["w_devices"] == ["/device:CPU:0"]  # one copy, on the CPU
    assert rows["CentralStorageStrategy"]["type"] == "AggregatingVariable"
    losses = [r["last_loss"] for r in rows.values()]
    assert max(losses) - min(losses) < 1e-5  # the same math under every strategy
    assert variants == {"variants": list(distribute.STRATEGIES), "lengths": [2, 2, 2]}


def test_resume_table_refuses_runs_without_steps():
    empty = {"worker:0": cluster.TaskResult("worker:0", 0, "", [])}
    with pytest.raises(ValueError, match="run 1 reported no start"):
        distribute.resume_table(empty, empty)


def test_resumed_at_checkpoint_needs_the_newest_checkpoint_kept():
    import pandas as pd

    def table(restored_step):
        return pd.DataFrame(
            {"restored": ["nothing", f"ckpt-{restored_step}"], "restored step": [0, restored_step]},
            index=["run 1", "run 2"],
        )

    kept = ["ckpt-25.index", "ckpt-50.index"]
    assert distribute.resumed_at_checkpoint(table(50), kept)
    assert not distribute.resumed_at_checkpoint(table(25), kept)  # an older one: steps lost
    assert distribute.resumed_at_checkpoint(table(100), ["ckpt-75", "ckpt-100"])  # by step
    assert not distribute.resumed_at_checkpoint(table(50), [])  # run 1 left none
    fresh = table(50)
    fresh.loc["run 1", "restored"] = "ckpt-25"  # run 1 resumed too: not a first run
    assert not distribute.resumed_at_checkpoint(fresh, kept)


def _service_files(tmp_path):
    from helpers.lessons import distribute_training as lesson

    server, trainer = tmp_path / "server.py", tmp_path / "trainer.py"
    server.write_text(lesson.DATA_SERVICE_SERVER)
    trainer.write_text(lesson.DATA_SERVICE_TRAINER)
    return server, trainer


def test_data_service_serves_both_modes_and_leaves_nothing_after_a_failure(tmp_path):
    before = reaper.descendants()
    server, trainer = _service_files(tmp_path)
    script = textwrap.dedent("""
        import sys
        import tensorflow as tf
        from helpers import procs
        from helpers.lessons.distribute_training import from_service, input_pipeline
        for mode in ("parallel_epochs", "distributed_epoch"):
            batches = from_service(input_pipeline(64, 16), sys.argv[1], mode)
            n = sum(int(b.shape[0]) for b in batches)
            procs.emit({"mode": mode, "examples": n})
    """)
    with cluster.Cluster(
        {"dispatcher": 1, "worker": 2},
        [sys.executable, str(server)],
        logdir=tmp_path / "logs",
        timeout=300,
        wait_for=(),
    ) as service:
        service.serve(ready="serving")  # the program prints it once registered with the dispatcher
        assert all(a.startswith("127.0.0.1:") for hosts in service.spec.values() for a in hosts)
        address = "grpc://" + service.spec["dispatcher"][0]
        rows = {
            r["mode"]: r["examples"]
            for r in procs.run_rows([sys.executable, "-c", script, address], timeout=180)
        }
        assert rows == {
            "parallel_epochs": 128,
            "distributed_epoch": 64,
        }  # an epoch per worker; each example once
        service.processes[
            "worker:0"
        ].kill()  # a failure mid-service: the launcher still reaps the rest
    assert not reaper.outlived(before)


def test_worker_sweep_rotates_pools_and_reads_as_a_verdict(monkeypatch, tmp_path):
    """worker_sweep's own logic on canned trainer rows and a stand-in service (the real programs
    run in notebook 13, cell "service_table = data_service.worker_sweep(...)")."""
    from helpers import cluster as cluster_module

    ran, served = [], []

    class Service:  # stands in for cluster.Cluster: a dispatcher address, no processes
        def __init__(self, roles, command, **kwargs):
            self.spec = {"dispatcher": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"] * roles["worker"]}
            served.append(roles["worker"])

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def serve(self, ready):
            assert ready == "serving"

    def run_trainer(
        trainer_file, service="", *, examples, repeats, cpus
    ):  # run_trainer's signature
        ran.append(service or "local")
        fast = 0.1 if service else 0.2  # each run's epochs differ: the middle one is its value
        return {"seconds": [fast * 3, fast, fast * 1.1][:repeats], "examples": examples}

    monkeypatch.setattr(cluster_module, "Cluster", Service)
    monkeypatch.setattr(data_service, "run_trainer", run_trainer)
    calls = []
    table = data_service.worker_sweep(
        "s.py",
        "t.py",
        workers=(1,),
        examples=64,
        rounds=2,
        repeats=3,
        logdir=tmp_path,
        on_progress=lambda d, t: calls.append((d, t)),
    )
    assert ran == ["local", "grpc://127.0.0.1:1", "grpc://127.0.0.1:1", "local"] and served == [
        1,
        1,
    ]  # rotated
    # A run is one trainer process at its median epoch: two rounds, two runs a row.
    assert list(table.index) == ["0 workers (local)", "1 worker"] and (table["repeats"] == 2).all()
    assert table.loc["1 worker", "median_s"] == pytest.approx(0.11)
    assert calls[-1] == (4, 4) and table.attrs["note"].startswith("64 examples per epoch")
    assert data_service.sweep_summary(table).startswith(
        "1 worker is 2.00x faster than 0 workers (local)"
    )
    assert data_service.sweep_figure(table, "t").axes[0].get_title() == "t"


@pytest.mark.parametrize("workers", [(), (0, -1), (9,), (True,), (1.5,)])
def test_worker_sweep_refuses_bad_worker_counts(tmp_path, workers):
    with pytest.raises(ValueError, match="workers must be whole numbers from 0 to 8"):
        data_service.worker_sweep("s.py", "t.py", workers=workers, logdir=tmp_path)


def test_descendants_running_sees_a_new_child_until_it_ends():
    import subprocess

    before = distribute.descendants_running(set())
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert distribute.descendants_running(before) == {child.pid}
    finally:
        child.kill()
        child.wait()
    assert distribute.descendants_running(before) == set()


def test_workers_agree_needs_two_identical_digests():
    import pandas as pd

    assert distribute.workers_agree(pd.DataFrame({"weights_sha": ["a", "a"]}))
    assert not distribute.workers_agree(pd.DataFrame({"weights_sha": ["a", "b"]}))
    assert not distribute.workers_agree(pd.DataFrame({"weights_sha": ["a"]}))


def test_bad_input(tmp_path):
    with pytest.raises(ValueError, match="mode must be one of"):
        distribute.write_program("horovod", tmp_path)
    with pytest.raises(ValueError, match="mode must be one of"):
        distribute.cluster_experiment("horovod", programs={})
    with pytest.raises(ValueError, match="n must be"):
        distribute.make_data(0)
    with pytest.raises(ValueError, match="unknown strategy"):
        distribute.lesson().make_strategy("TPUStrategy", ["/device:CPU:0"])


def test_check_tf_config():
    import json

    good = json.dumps(
        {
            "cluster": {"worker": ["host-a:2222", "host-b:2222", "host-c:2222"]},
            "task": {"type": "worker", "index": 2},
        }
    )
    assert distribute.check_tf_config(good)
    assert "JSON string" in repr(distribute.check_tf_config("{not json"))
    assert "its cluster should be" in repr(distribute.check_tf_config("{}"))
    wrong_index = good.replace('"index": 2', '"index": 3')
    assert "worker 2 (index 2" in repr(distribute.check_tf_config(wrong_index))


def test_check_mirrored_in_this_process():
    import tensorflow as tf

    assert "make a tf.distribute.MirroredStrategy" in repr(distribute.check_mirrored(None))
    one_device = tf.distribute.MirroredStrategy(
        ["/device:CPU:0"]
    )  # this process has one logical CPU
    assert "it has 1 replica(s)" in repr(distribute.check_mirrored(one_device))


#: The exercise's grader table, judged in a child with two logical CPUs (this process has one):
#: (id, strategy expression, passes, words the message must hold).
MIRRORED = [
    (
        "solution",
        "tf.distribute.MirroredStrategy(two, "
        "cross_device_ops=tf.distribute.HierarchicalCopyAllReduce())",
        True,
        "2 replicas, hierarchical copy",
    ),
    (
        "lower-case names, num_packs=2",
        'tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"], '
        "cross_device_ops=tf.distribute.HierarchicalCopyAllReduce(num_packs=2))",
        True,
        "2 replicas, hierarchical copy",
    ),
    (
        "the logical devices' own names",
        "tf.distribute.MirroredStrategy([d.name for d in tf.config.list_logical_devices('CPU')], "
        "cross_device_ops=tf.distribute.HierarchicalCopyAllReduce())",
        True,
        "2 replicas, hierarchical copy",
    ),
    (
        "the default all-reduce (the warned mistake)",
        "tf.distribute.MirroredStrategy(two)",
        False,
        "CollectiveAllReduce, not HierarchicalCopyAllReduce: pass cross_device_ops",
    ),
    (
        "the TF1 class",
        "tf.compat.v1.distribute.MirroredStrategy(two, "
        "cross_device_ops=tf.distribute.HierarchicalCopyAllReduce())",
        False,
        "the TF1 class",
    ),
    (
        "ReductionToOneDevice",
        "tf.distribute.MirroredStrategy(two, "
        "cross_device_ops=tf.distribute.ReductionToOneDevice())",
        False,
        "ReductionToOneDevice, not HierarchicalCopyAllReduce",
    ),
    (
        "NCCL (a GPU all-reduce)",
        "tf.distribute.MirroredStrategy(two, cross_device_ops=tf.distribute.NcclAllReduce())",
        False,
        "NcclAllReduce, not HierarchicalCopyAllReduce",
    ),
    (
        "one device",
        'tf.distribute.MirroredStrategy(["/device:CPU:0"], '
        "cross_device_ops=tf.distribute.HierarchicalCopyAllReduce())",
        False,
        "it has 1 replica(s)",
    ),
    (
        "a device this process does not have",
        'tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:7"], '
        "cross_device_ops=tf.distribute.HierarchicalCopyAllReduce())",
        False,
        "this process has no CPU:7",
    ),
    (
        "the all-reduce's class, not an instance",
        "tf.distribute.MirroredStrategy(two, "
        "cross_device_ops=tf.distribute.HierarchicalCopyAllReduce)",
        False,
        "pass an instance, HierarchicalCopyAllReduce()",
    ),
    (
        "OneDeviceStrategy",
        'tf.distribute.OneDeviceStrategy("/device:CPU:0")',
        False,
        "make a tf.distribute.MirroredStrategy",
    ),
    (
        "the class, not an instance",
        "tf.distribute.MirroredStrategy",
        False,
        "make a tf.distribute.MirroredStrategy",
    ),
]

CHECK_IN_CHILD = textwrap.dedent("""
    import sys
    from helpers import env, procs
    env.setup_logical_devices(2, "CPU")
    import tensorflow as tf
    from helpers.topics.distribute_training import distribute
    two = ["/device:CPU:0", "/device:CPU:1"]
    for expression in sys.argv[1:]:
        feedback = distribute.check_mirrored(eval(expression))
        procs.emit({"ok": bool(feedback), "message": feedback.message})
""")


def test_check_mirrored_reads_the_weights_not_the_copies():
    # With the all-reduce made a no-op, each replica keeps its own half-batch gradient; the
    # copies still agree (ONLY_FIRST_REPLICA writes replica 0's update to both), so only the
    # weights, set against one device's, can tell.
    patched = CHECK_IN_CHILD.replace(
        "two = [",
        "tf.distribute.ReplicaContext.all_reduce = lambda self, op, value, options=None: value\n"
        "two = [",
    )
    (row,) = procs.run_rows([sys.executable, "-c", patched, MIRRORED[0][1]], timeout=300)
    assert row["ok"] is False and "its all-reduce did not sum" in row["message"], row


def test_check_mirrored_grader_table():
    rows = procs.run_rows(
        [sys.executable, "-c", CHECK_IN_CHILD, *[row[1] for row in MIRRORED]], timeout=300
    )
    assert len(rows) == len(MIRRORED)
    for (name, _, passes, words), row in zip(MIRRORED, rows, strict=True):
        assert row["ok"] is passes, (name, row["message"])
        assert row["message"].startswith("Correct: " if passes else "Not yet: "), (
            name,
            row["message"],
        )
        assert words in row["message"], (name, row["message"])


def test_cluster_summary_of_one_worker():
    import pandas as pd

    one = pd.DataFrame({"weights_sha": ["ab12"], "last_loss": [0.25]}, index=["worker:0"])
    assert (
        distribute.cluster_summary(one) == "1 worker: no other to compare with, final loss 0.2500"
    )
    resumed = one.assign(last_loss=[None])  # a worker that found its last step checkpointed
    assert distribute.cluster_summary(resumed).endswith("final loss none")


def test_cluster_summary_and_figure():
    import pandas as pd

    mwms = pd.DataFrame(
        {"weights_sha": ["a", "a"], "last_loss": [0.5, 0.5], "w": [[0.0] * 8, [0.0] * 8]},
        index=["worker:0", "worker:1"],
    )
    assert (
        distribute.cluster_summary(mwms) == "2 workers, weights identical: True, final loss 0.5000"
    )
    fit = pd.DataFrame({"error": ["ValueError: PerReplica", ""]}, index=["worker:0", "worker:1"])
    assert distribute.cluster_summary(fit).startswith("1 of 2 tasks failed: ValueError")
    ps = pd.DataFrame(
        {
            "steps": [5],
            "w_device": ["/job:ps/replica:0/task:0/device:CPU:0"],
            "loss_at_start": [3.0],
            "loss_at_end": [0.1],
        },
        index=["chief:0"],
    )
    assert "variables on /job:ps/" in distribute.cluster_summary(ps)
    fig = distribute.weights_figure(mwms, "t")
    assert (
        fig.axes[0].get_title() == "t" and len(fig.axes[0].lines) == 3
    )  # true weights + 2 workers


def test_cluster_experiment_reports_progress(tmp_path):
    calls = []
    programs = {"mwms": distribute.write_program("mwms", tmp_path)}
    table = distribute.cluster_experiment(
        "mwms", workers=1, steps=2, programs=programs, on_progress=lambda d, t: calls.append((d, t))
    )
    assert list(table.index) == ["worker:0"] and calls == [(0, 1), (1, 1)]
    table = distribute.cluster_experiment("keras-fit", workers=1, steps=2, programs=programs)
    assert list(table.columns) == ["error"]  # the --keras-fit mode of the same program


def _shard_results(rows):
    return {
        task: cluster.TaskResult(task, 0, "TensorFlow banner\n" + json.dumps(row) + "\n", [])
        for task, row in rows.items()
    }


def test_sharding_table_reads_each_workers_line_and_counts_overlaps():
    from helpers.topics.distribute_training import distribute_input

    by_file = {
        "worker:0": list(range(0, 8)) + list(range(16, 24)),
        "worker:1": list(range(8, 16)) + list(range(24, 32)),
    }
    everything = {"worker:0": list(range(32)), "worker:1": list(range(32))}
    every_other = {"worker:0": list(range(0, 32, 2)), "worker:1": list(range(1, 32, 2))}
    half_lost = {"worker:0": list(range(8)), "worker:1": list(range(8, 16))}
    ways = {
        "FILE": by_file,
        "DATA": every_other,
        "OFF": everything,
        "distribute_datasets_from_function": half_lost,
    }
    rows = {
        t: {"task": t, **{way: got[t] for way, got in ways.items()}}
        for t in ("worker:0", "worker:1")
    }
    table = distribute_input.records_table(_shard_results(rows), per_file=8, files=4)
    assert (
        table.loc["FILE", "worker:0 got"] == "0-7, 16-23"
        and table.loc["FILE", "files per worker"] == "2"
    )
    assert (
        table.loc["DATA", "files per worker"] == "4"
        and table.loc["DATA", "received more than once"] == 0
    )
    assert (
        table.loc["OFF", "received more than once"] == 32
        and table.loc["OFF", "received by no worker"] == 0
    )
    assert table.loc["distribute_datasets_from_function", "received by no worker"] == 16
    lines = distribute_input.sharding_summary(table)
    assert (
        lines["FILE"] == "each worker got records from 2 of the 4 files; each record received once"
    )
    assert lines["OFF"].endswith("32 of 32 records received more than once, 0 by no worker")
    uneven = {
        t: {**rows[t], "FILE": by_file["worker:0"] + [8] if t == "worker:0" else by_file[t]}
        for t in rows
    }
    assert (
        distribute_input.records_table(_shard_results(uneven)).loc["FILE", "files per worker"]
        == "2 to 3"
    )
    assert lines["distribute_datasets_from_function"].endswith(
        "0 of 32 records received more than once, 16 by no worker"
    )


def test_sharding_table_names_a_worker_that_printed_no_line():
    from helpers.topics.distribute_training import distribute_input

    results = {
        "worker:0": cluster.TaskResult("worker:0", 1, "Traceback ...\nValueError: boom\n", [])
    }
    with pytest.raises(RuntimeError, match="worker:0 printed no result line"):
        distribute_input.records_table(results)
