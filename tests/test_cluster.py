"""The local cluster launcher: clean start and stop, a killed worker, a timeout, a failing task,
ports on loopback only, and no process left behind in any case."""

from __future__ import annotations

import json
import signal
import sys
import textwrap
import time

import pytest

from helpers import cluster, cluster_layout

# A stand-in task (no TensorFlow, so the launcher's tests stay fast): servers block, the others
# report their TF_CONFIG and exit, or behave as the environment variable TASK_MODE says.
TASK = textwrap.dedent("""
    import json, os, sys, time
    from helpers import procs
    config = json.loads(os.environ["TF_CONFIG"])
    me = config["task"]
    mode = os.environ.get("TASK_MODE", "ok")
    if me["type"] == "ps" or mode == "hang":
        print("serving", flush=True)
        time.sleep(600)  # a server that never returns, or the hang under test
    if mode == "fail" and me["index"] == 1:
        sys.stderr.write("worker 1 ran out of patience\\n")
        sys.exit(3)
    procs.emit({"type": me["type"], "index": me["index"], "cluster": config["cluster"]})
""")
COMMAND = [sys.executable, "-c", TASK]


def test_clean_run_on_loopback(tmp_path, no_orphans):
    results = cluster.run({"chief": 1, "worker": 2, "ps": 1}, COMMAND, logdir=tmp_path, timeout=60)
    assert set(results) == {"chief:0", "worker:0", "worker:1", "ps:0"}
    assert (
        results["ps:0"].returncode == -signal.SIGTERM
    )  # servers are stopped when the others finish
    spec = results["chief:0"].rows[0]["cluster"]
    addresses = [a for hosts in spec.values() for a in hosts]
    assert all(a.startswith("127.0.0.1:") for a in addresses) and len(set(addresses)) == 4
    for task in ("chief:0", "worker:0", "worker:1"):
        row = results[task].rows[0]
        assert (row["type"], row["index"]) == (task.split(":")[0], int(task.split(":")[1]))
        assert row["cluster"] == spec
    assert (tmp_path / "ps-0.log").read_text().startswith("serving")


def test_killed_worker_stops_the_cluster(tmp_path, no_orphans):
    with cluster.Cluster(
        {"worker": 2}, COMMAND, logdir=tmp_path, timeout=60, env={"TASK_MODE": "hang"}
    ) as c:
        time.sleep(0.5)  # let the workers start before one is killed
        c.processes["worker:1"].kill()
        with pytest.raises(
            cluster.ClusterError, match="task worker:1 failed with exit code -9"
        ) as info:
            c.wait()
    assert c.processes["worker:0"].returncode == -signal.SIGTERM
    assert "serving" in info.value.logs["worker:0"]


def test_failing_task_reports_its_log(tmp_path, no_orphans):
    with pytest.raises(cluster.ClusterError, match="task worker:1 failed with exit code 3") as info:
        cluster.run(
            {"worker": 2, "ps": 1}, COMMAND, logdir=tmp_path, timeout=60, env={"TASK_MODE": "fail"}
        )
    assert "worker 1 ran out of patience" in info.value.logs["worker:1"]


def test_timeout_stops_everything(tmp_path, no_orphans):
    started = time.monotonic()
    with pytest.raises(cluster.ClusterError, match="ran past its 2 s timeout"):
        cluster.run({"worker": 2}, COMMAND, logdir=tmp_path, timeout=2, env={"TASK_MODE": "hang"})
    assert time.monotonic() - started < 15


def test_free_ports_are_distinct_and_bindable():
    import socket

    ports = cluster.free_ports(5)
    assert len(set(ports)) == 5
    for port in ports:
        with socket.socket() as s:
            s.bind((cluster_layout.LOOPBACK, port))


def test_free_ports_come_from_outside_the_ephemeral_range_and_never_twice():
    low, high = cluster_layout._ephemeral_range()
    first, second = cluster.free_ports(5), cluster.free_ports(5)
    for port in first + second:
        assert cluster_layout.PICK_RANGE[0] <= port < cluster_layout.PICK_RANGE[1]
        assert not low <= port <= high
    assert not set(first) & set(second)  # this process never hands a port out twice


class _Picks:
    """Stands in for free_ports' random source: hands out the given ports in order."""

    def __init__(self, *ports):
        self.ports = list(ports)

    def randrange(self, start, stop):
        return self.ports.pop(0)


def test_free_ports_skip_a_port_in_use(monkeypatch):
    import socket

    with socket.socket() as busy:
        busy.bind((cluster_layout.LOOPBACK, 0))
        busy.listen()
        taken = busy.getsockname()[1]
        monkeypatch.setattr(cluster_layout, "_ephemeral_range", lambda: (1, 2))
        monkeypatch.setattr(cluster_layout, "_RANDOM", _Picks(taken, *range(20000, 20050)))
        ports = cluster.free_ports(2)
    assert taken not in ports and len(set(ports)) == 2


def test_free_ports_fall_back_to_the_systems_choice(monkeypatch):
    import socket

    low, high = cluster_layout._ephemeral_range()
    monkeypatch.setattr(cluster_layout, "PICK_RANGE", (low, high + 1))  # every pick refused
    ports = cluster.free_ports(3)
    assert len(set(ports)) == 3
    for port in ports:
        with socket.socket() as s:
            s.bind((cluster_layout.LOOPBACK, port))


def test_tf_config_for_real_hosts():
    spec = cluster.cluster_spec({"worker": 2, "chief": 1}, hosts=["a:2222", "b:2222", "c:2222"])
    assert spec == {"chief": ["a:2222"], "worker": ["b:2222", "c:2222"]}
    config = json.loads(cluster.tf_config(spec, "worker", 1))
    assert config == {"cluster": spec, "task": {"type": "worker", "index": 1}}


@pytest.mark.parametrize(
    "roles, match",
    [
        ({"server": 1}, "role 'server'"),
        ({"worker": 0}, "whole number from 1"),
        ({"chief": 2}, "at most one chief"),
    ],
)
def test_bad_roles(roles, match):
    with pytest.raises(ValueError, match=match):
        cluster.cluster_spec(roles)


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="need 2 host:port"):
        cluster.cluster_spec({"worker": 2}, hosts=["a:1"])
    with pytest.raises(ValueError, match="no task worker:5"):
        cluster.tf_config({"worker": ["a:1"]}, "worker", 5)
    with pytest.raises(TypeError, match="no shell"):
        cluster.Cluster({"worker": 1}, "python train.py", logdir=tmp_path)
    with pytest.raises(ValueError, match="timeout"):
        cluster.Cluster({"worker": 1}, COMMAND, logdir=tmp_path, timeout=0)
    with pytest.raises(ValueError, match="wait_for"):
        cluster.Cluster({"ps": 1}, COMMAND, logdir=tmp_path)


# A stand-in server (no TensorFlow): listens on its own port from TF_CONFIG, or exits at once
# when SERVER_MODE=die, as a server that cannot start would.
SERVER = textwrap.dedent("""
    import json, os, socket, sys, time
    config = json.loads(os.environ["TF_CONFIG"])
    me = config["task"]
    if os.environ.get("SERVER_MODE") == "die" and me["type"] == "worker":
        sys.exit(4)
    host, port = config["cluster"][me["type"]][me["index"]].rsplit(":", 1)
    listener = socket.create_server((host, int(port)))
    print("ready", flush=True)
    time.sleep(600)  # serve until the launcher stops it
""")


def test_a_cluster_of_servers_serves_on_loopback_then_stops(tmp_path, no_orphans):
    with cluster.Cluster(
        {"dispatcher": 1, "worker": 2}, [sys.executable, "-c", SERVER], logdir=tmp_path, wait_for=()
    ) as service:
        service.serve(deadline=30, ready="ready")
        assert all(
            address.startswith("127.0.0.1:") for hosts in service.spec.values() for address in hosts
        )
        assert all(p.poll() is None for p in service.processes.values())
        with pytest.raises(ValueError, match="serve"):
            service.wait()
    assert all(p.returncode is not None for p in service.processes.values())


def test_a_server_that_dies_before_serving_stops_the_cluster(tmp_path, no_orphans):
    service = cluster.Cluster(
        {"dispatcher": 1, "worker": 1},
        [sys.executable, "-c", SERVER],
        logdir=tmp_path,
        wait_for=(),
        env={"SERVER_MODE": "die"},
    )
    service.start()
    with pytest.raises(
        cluster.ClusterError, match="worker:0 exited with code 4 before it was serving"
    ):
        service.serve(deadline=30)


def test_a_server_that_never_listens_runs_into_the_deadline(tmp_path, no_orphans):
    service = cluster.Cluster(
        {"dispatcher": 1}, COMMAND, logdir=tmp_path, wait_for=(), env={"TASK_MODE": "hang"}
    )
    service.start()
    with pytest.raises(cluster.ClusterError, match="not serving after 2 s"):
        service.serve(deadline=2)


def test_results_reads_a_stopped_clusters_logs(tmp_path, no_orphans):
    run = cluster.Cluster({"worker": 2}, COMMAND, logdir=tmp_path, env={"TASK_MODE": "fail"})
    run.start()
    with pytest.raises(cluster.ClusterError):
        run.wait()
    results = run.results()
    assert results["worker:1"].returncode == 3 and "out of patience" in results["worker:1"].log


def test_serve_waits_for_the_ready_line(tmp_path, no_orphans):
    service = cluster.Cluster(
        {"dispatcher": 1}, [sys.executable, "-c", SERVER], logdir=tmp_path, wait_for=()
    )
    service.start()
    with pytest.raises(cluster.ClusterError, match="not serving after 3 s"):
        service.serve(deadline=3, ready="a line this server never writes")
