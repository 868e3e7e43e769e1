"""helpers.worker: a cluster program started from a terminal stops with one line on a missing or
malformed TF_CONFIG, and a worker whose peers never answer is ended at its start-up deadline
instead of waiting for ever (issue 20). The last test runs notebook 13's real worker program."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from helpers import cluster, worker

ROOT = Path(__file__).resolve().parents[1]
GOOD = {
    "cluster": {"worker": ["127.0.0.1:2222", "127.0.0.1:2223"]},
    "task": {"type": "worker", "index": 1},
}


def test_a_good_tf_config_gives_the_task():
    assert worker.task_from_tf_config({"TF_CONFIG": json.dumps(GOOD)}) == {
        "type": "worker",
        "index": 1,
    }


@pytest.mark.parametrize(
    "text,words",
    [
        (None, "TF_CONFIG is not set"),
        ("  ", "TF_CONFIG is not set"),
        ("{bad", "not valid JSON"),
        ("[]", '"cluster" object'),
        (
            '{"cluster": {"worker": "127.0.0.1:2222"}, "task": {"type": "worker", "index": 0}}',
            "list of",
        ),
        (
            '{"cluster": {"worker": ["127.0.0.1:99999"]}, "task": {"type": "worker", "index": 0}}',
            "port 1-65535",
        ),
        (
            '{"cluster": {"worker": ["127.0.0.1:2222"]}, "task": {"type": "chief", "index": 0}}',
            '"type"',
        ),
        (
            '{"cluster": {"worker": ["127.0.0.1:2222"]}, "task": {"type": "worker", "index": 1}}',
            "from 0 to 0",
        ),
        (
            '{"cluster": {"worker": ["127.0.0.1:2222"]}, '
            '"task": {"type": "worker", "index": true}}',
            "whole number",
        ),
        (
            '{"cluster": {"worker": ["127.0.0.1:2222"]}, "task": {"type": "worker", "index": "0"}}',
            "whole number",
        ),
    ],
)
def test_a_bad_tf_config_stops_with_one_line_and_exit_2(capsys, text, words):
    env = {} if text is None else {"TF_CONFIG": text}
    with pytest.raises(SystemExit) as stopped:
        worker.task_from_tf_config(env)
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert words in err and "TF_CONFIG" in err and err.count("\n") == 1, err


@pytest.mark.parametrize("seconds", [0, -1, float("inf"), float("nan"), 10**9, "10", True, None])
def test_the_deadline_refuses_bad_seconds(seconds):
    with pytest.raises((TypeError, ValueError), match="seconds"):
        worker.startup_deadline(seconds, "the other workers")


def test_a_start_up_that_finishes_leaves_no_watcher():
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    with worker.startup_deadline(30, "nothing"):
        during = {p.pid for p in psutil.Process().children(recursive=True)} - before
    assert len(during) == 1, "the watcher process was not started"
    after = {p.pid for p in psutil.Process().children(recursive=True)} - before
    assert after == set()


@pytest.mark.parametrize(
    "name, cluster_spec, args, waiting_for",
    [
        (
            "MWMS_WORKER",
            {"worker": 2},
            ["--steps", "5", "--checkpoints", "{tmp}/ck"],
            "the other workers",
        ),
        (
            "PS_PROGRAM",
            {"chief": 1, "ps": 1, "worker": 1},
            ["--steps", "3"],
            "the servers and workers",
        ),
    ],
)
def test_a_notebook_13_program_ends_at_its_deadline_when_a_peer_never_starts(
    tmp_path, name, cluster_spec, args, waiting_for
):
    from helpers.lessons import distribute_training

    program = tmp_path / f"{name.lower()}.py"
    program.write_text(getattr(distribute_training, name))
    ports = iter(cluster.free_ports(sum(cluster_spec.values())))
    spec = {
        role: [f"127.0.0.1:{next(ports)}" for _ in range(n)] for role, n in cluster_spec.items()
    }
    lonely = {
        "cluster": spec,
        "task": {"type": next(iter(spec)), "index": 0},
    }  # the others are never started
    env = {
        **os.environ,
        "TF_CONFIG": json.dumps(lonely),
        "PYTHONPATH": str(ROOT),
        "TF_CPP_MIN_LOG_LEVEL": "2",
    }
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            str(program),
            *(a.format(tmp=tmp_path) for a in args),
            "--start-timeout",
            "2",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == -9, done.stderr[-2000:]
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .startswith(f"{program.name}: gave up after 2 s waiting for {waiting_for}")
    )
    assert "Traceback" not in done.stderr
    assert time.monotonic() - started < 200


def test_the_notebook_13_worker_without_tf_config_prints_one_line(tmp_path):
    from helpers.lessons.distribute_training import MWMS_WORKER

    program = tmp_path / "mwms_worker.py"
    program.write_text(MWMS_WORKER)
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"} | {
        "PYTHONPATH": str(ROOT),
        "TF_CPP_MIN_LOG_LEVEL": "3",
    }
    done = subprocess.run(
        [sys.executable, str(program), "--steps", "5", "--checkpoints", str(tmp_path / "ck")],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("mwms_worker.py: TF_CONFIG is not set")
    assert "Traceback" not in done.stderr


def test_waiting_for_a_port_returns_once_a_late_peer_listens():
    import socket
    import threading

    port = cluster.free_ports(1)[0]
    listener = socket.socket()

    def listen_late():
        time.sleep(
            0.6
        )  # the peer starts after the waiting program, as a worker may start before its dispatcher
        listener.bind(("127.0.0.1", port))
        listener.listen()

    late = threading.Thread(target=listen_late)
    late.start()
    started = time.monotonic()
    try:
        worker.wait_until_listening(f"grpc://127.0.0.1:{port}", 20, "the test's listener")
    finally:
        late.join()
        listener.close()
    assert 0.5 < time.monotonic() - started < 10


def test_waiting_for_a_port_where_nothing_listens_stops_with_one_line_and_exit_1(capsys):
    port = cluster.free_ports(1)[0]
    started = time.monotonic()
    with pytest.raises(SystemExit) as stopped:
        worker.wait_until_listening(f"127.0.0.1:{port}", 0.5, "the dispatcher")
    assert stopped.value.code == 1 and time.monotonic() - started < 5
    err = capsys.readouterr().err
    assert (
        f"gave up after 0.5 s waiting for the dispatcher at 127.0.0.1:{port}" in err
        and err.count("\n") == 1
    ), err


@pytest.mark.parametrize(
    "address", ["", "127.0.0.1", "grpc://:5050", "host:0", "host:70000", "host:x", "grpc://host:"]
)
def test_waiting_refuses_an_address_without_host_and_port(address):
    with pytest.raises(ValueError, match="host:port|empty"):
        worker.wait_until_listening(address, 1, "the dispatcher")  # "" is refused as empty


def test_short_error_is_type_and_first_line_with_per_replica_dumps_shortened():
    from helpers.worker import short_error

    dump = ValueError(
        "Dataset (PerReplica:{\n 0: <tf.Tensor ...>,\n 1: <tf.Tensor ...>\n}) with a bad shape\n"
        "more detail"
    )
    assert short_error(dump) == "ValueError: Dataset (PerReplica:{...}) with a bad shape"
    assert short_error(RuntimeError("")) == "RuntimeError: "
    assert short_error(KeyError("x" * 400)) == "KeyError: '" + "x" * 299
