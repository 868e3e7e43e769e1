"""Unit tests for helpers.topics.distribute: strategies agree in one process (over logical devices, so
in a child process), and across processes on a local cluster (MWMS workers agree; Keras fit's
failure is reported; the parameter-server chief trains variables that live on the server)."""

from __future__ import annotations

import sys
import textwrap

import pytest

from helpers import procs
from helpers.topics import distribute

IN_PROCESS = textwrap.dedent("""
    from helpers import env, procs
    from helpers.topics import distribute
    env.setup_logical_devices(2, "CPU")
    for name in distribute.STRATEGIES:
        result = distribute.train(distribute.make_strategy(name), steps=5, batch=32)
        devices = distribute.variable_devices(result)
        procs.emit({"strategy": name, "replicas": result["replicas"], "last_loss": result["losses"][-1],
                    "spread": distribute.replica_spread(result),
                    "w_devices": list(devices.loc["w", "device"]), "type": devices["type"].iloc[0]})
""")


def test_strategies_agree_and_place_variables_as_documented():
    rows = {r["strategy"]: r for r in procs.run_rows([sys.executable, "-c", IN_PROCESS], timeout=180)}
    assert rows["no strategy"]["replicas"] == 1
    assert rows["MirroredStrategy"]["replicas"] == 2 and rows["MirroredStrategy"]["spread"] == 0.0
    assert rows["MirroredStrategy"]["w_devices"] == ["/device:CPU:0", "/device:CPU:1"]  # a copy per device
    assert rows["MirroredStrategy"]["type"] == "MirroredVariable"
    assert rows["CentralStorageStrategy"]["w_devices"] == ["/device:CPU:0"]  # one copy, on the CPU
    assert rows["CentralStorageStrategy"]["type"] == "AggregatingVariable"
    losses = [r["last_loss"] for r in rows.values()]
    assert max(losses) - min(losses) < 1e-5  # the same math under every strategy


def test_multiworker_mirrored_workers_end_identical(tmp_path):
    table = distribute.run_cluster("mwms", tmp_path, steps=5, batch=32, timeout=180)
    assert list(table.index) == ["worker:0", "worker:1"]
    assert distribute.workers_agree(table) and (table["replicas"] == 2).all()
    assert (table["last_loss"] < table["first_loss"]).all()


def test_keras_fit_failure_is_reported(tmp_path):
    table = distribute.run_cluster("keras-fit", tmp_path, steps=3, batch=16, timeout=180)
    # Keras 3 fit under MultiWorkerMirroredStrategy failed in TF 2.21 (keras-team/keras#20585);
    # if a release fixes it this test says so, and notebook 13's prose must change with it.
    assert table["error"].str.contains("PerReplica").all(), table["error"].tolist()


def test_parameter_server_chief_trains_variables_on_the_server(tmp_path):
    table = distribute.run_cluster("ps", tmp_path, steps=5, batch=32, timeout=180)
    row = table.loc["chief:0"]
    assert row["w_device"].startswith("/job:ps/") and row["steps"] == 5
    assert row["end_loss"] < row["start_loss"]  # on all the data: the async steps' own order varies


def test_workers_agree_needs_two_identical_digests():
    import pandas as pd

    assert distribute.workers_agree(pd.DataFrame({"weights_sha": ["a", "a"]}))
    assert not distribute.workers_agree(pd.DataFrame({"weights_sha": ["a", "b"]}))
    assert not distribute.workers_agree(pd.DataFrame({"weights_sha": ["a"]}))


def test_bad_input(tmp_path):
    with pytest.raises(ValueError, match="name must be one of"):
        distribute.make_strategy("TPUStrategy")
    with pytest.raises(ValueError, match="cross_device_ops"):
        distribute.make_strategy("MirroredStrategy", cross_device_ops="Ring")
    with pytest.raises(ValueError, match="mode must be one of"):
        distribute.run_cluster("horovod", tmp_path)
    with pytest.raises(ValueError, match="n must be"):
        distribute.make_data(0)
    with pytest.raises(procs.ChildError, match="exit code 1"):
        procs.run(procs.python_module("helpers.topics.distribute", "mwms"), timeout=60)


def test_check_tf_config():
    import json

    good = json.dumps({"cluster": {"worker": ["host-a:2222", "host-b:2222", "host-c:2222"]},
                       "task": {"type": "worker", "index": 2}})
    assert distribute.check_tf_config(good)
    assert "JSON string" in repr(distribute.check_tf_config("{not json"))
    assert "its cluster should be" in repr(distribute.check_tf_config("{}"))
    wrong_index = good.replace('"index": 2', '"index": 3')
    assert "worker 2 (index 2" in repr(distribute.check_tf_config(wrong_index))


def test_check_mirrored_in_this_process():
    import tensorflow as tf

    assert "make a tf.distribute.MirroredStrategy" in repr(distribute.check_mirrored(None))
    one_device = tf.distribute.MirroredStrategy(["/device:CPU:0"])  # this process has one logical CPU
    assert "it has 1 replicas" in repr(distribute.check_mirrored(one_device))


def test_strategy_variants_train_and_return_losses():
    variants = distribute.strategy_variants(steps=2, batch=16)
    assert list(variants) == list(distribute.STRATEGIES)
    for run in variants.values():
        losses = run()
        assert len(losses) == 2 and all(isinstance(v, float) for v in losses)


def test_cluster_summary_and_figure():
    import pandas as pd

    mwms = pd.DataFrame({"weights_sha": ["a", "a"], "last_loss": [0.5, 0.5], "w": [[0.0] * 8, [0.0] * 8]},
                        index=["worker:0", "worker:1"])
    assert distribute.cluster_summary(mwms) == "2 workers, weights identical: True, final loss 0.5000"
    fit = pd.DataFrame({"error": ["ValueError: PerReplica", ""]}, index=["worker:0", "worker:1"])
    assert distribute.cluster_summary(fit).startswith("1 of 2 workers failed: ValueError")
    ps = pd.DataFrame({"steps": [5], "w_device": ["/job:ps/replica:0/task:0/device:CPU:0"], "last_loss": [0.1]},
                      index=["chief:0"])
    assert "variables on /job:ps/" in distribute.cluster_summary(ps)
    fig = distribute.weights_figure(mwms, "t")
    assert fig.axes[0].get_title() == "t" and len(fig.axes[0].lines) == 3  # true weights + 2 workers


def test_cluster_experiment_reports_progress():
    calls = []
    table = distribute.cluster_experiment("mwms", workers=1, steps=2, on_progress=lambda d, t: calls.append((d, t)))
    assert list(table.index) == ["worker:0"] and calls == [(0, 1), (1, 1)]
