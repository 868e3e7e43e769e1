"""Start-up guards for a program that runs as one task of a TensorFlow cluster (notebook 13's
worker): read ``TF_CONFIG`` or stop with one clear line, and give up with a clear line when the
other tasks do not answer within a deadline, instead of waiting forever.

Started from a terminal, such a program is a command-line tool: a user error (no ``TF_CONFIG``,
bad JSON, a task the cluster does not list) prints one line and exits 2, never a traceback. An
unreachable peer makes ``MultiWorkerMirroredStrategy`` wait for ever, and TensorFlow's
coordination service catches SIGTERM meanwhile; ``startup_deadline`` has a watcher process end it.
``short_error`` is the one line a task reports for an exception (Keras' error under a strategy).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from helpers import checks, cli
from helpers.deadline import Deadline

USAGE_EXIT = 2  # a user error: TF_CONFIG missing or malformed
EXAMPLE = (
    '{"cluster": {"worker": ["host-a:2222", "host-b:2222"]}, '
    '"task": {"type": "worker", "index": 0}}'
)


def _stop(message: str, code: int) -> None:
    print(f"{os.path.basename(sys.argv[0]) or 'worker'}: {message}", file=sys.stderr, flush=True)
    raise SystemExit(code)


def _problem(config: Any) -> str | None:
    """What is wrong with a parsed TF_CONFIG, or None."""
    if (
        not isinstance(config, dict)
        or not isinstance(config.get("cluster"), dict)
        or not config["cluster"]
    ):
        return 'it needs a "cluster" object naming each job\'s "host:port" addresses'
    for job, addresses in config["cluster"].items():
        if (
            not isinstance(addresses, list)
            or not addresses
            or not all(
                isinstance(a, str)
                and a.rpartition(":")[2].isdigit()
                and 1 <= int(a.rpartition(":")[2]) <= 65535
                for a in addresses
            )
        ):
            return (
                f'cluster job "{job}" must be a list of "host:port" addresses (port 1-65535), '
                f"got {addresses!r}"
            )
    task = config.get("task")
    if not isinstance(task, dict) or task.get("type") not in config["cluster"]:
        return (
            f'"task" must name one of the cluster\'s jobs {sorted(config["cluster"])} as "type", '
            f"got {task!r}"
        )
    index, size = task.get("index"), len(config["cluster"][task["type"]])
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < size:
        return (
            f'"task" "index" must be a whole number from 0 to {size - 1} '
            f'(job "{task["type"]}" has {size}), got {index!r}'
        )
    return None


def task_from_tf_config(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """This process's task from ``TF_CONFIG``, e.g. ``{"type": "worker", "index": 0}``; if the
    variable is missing or malformed, print one line saying what is wrong and exit 2."""
    text = (os.environ if env is None else env).get("TF_CONFIG", "")
    if not text.strip():
        _stop(
            f"TF_CONFIG is not set; give each task its own, for example TF_CONFIG='{EXAMPLE}'",
            USAGE_EXIT,
        )
    try:
        config = json.loads(text)
    except json.JSONDecodeError as exc:
        _stop(
            f"TF_CONFIG is not valid JSON: {exc.msg} at character {exc.pos}; "
            f"for example TF_CONFIG='{EXAMPLE}'",
            USAGE_EXIT,
        )
    problem = _problem(config)
    if problem:
        _stop(f"TF_CONFIG: {problem}", USAGE_EXIT)
    return dict(config["task"])


@checks.arguments(
    address=checks.text,
    seconds=checks.number(0.0, cli.DAY, hint="seconds", above=True),
    what=checks.text,
)
def wait_until_listening(address: str, seconds: float, what: str) -> None:
    """Return once something accepts connections at ``address`` ("host:port" or "grpc://host:port");
    if nothing does within ``seconds``, print one line naming ``what`` and exit 1. TensorFlow's
    gRPC clients retry an address where nothing listens for ever, so ask before starting one.
    The peer may start a little later than this process: refused connections are retried."""
    try:
        host, port = cli.host_port(address)
    except argparse.ArgumentTypeError as exc:
        raise ValueError(f"address {exc}") from None
    deadline = Deadline(seconds, f"{what} at {address}")
    while True:
        try:
            socket.create_connection((host, port), timeout=max(0.1, deadline.left(5.0))).close()
            return
        except OSError as exc:
            if deadline.passed:
                _stop(
                    f"{deadline.message(exc.strerror or str(exc))}; "
                    "start it first, or check the address",
                    1,
                )
            deadline.pause(0.2)


# The watcher: a small separate Python process. A thread would not do: TensorFlow's start-up
# holds the GIL while it waits for the other tasks, so no Python thread of this process runs.
_WATCHER = """
import os, select, signal, sys
parent, seconds, message = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
ready, _, _ = select.select([sys.stdin], [], [], seconds)
if not ready:
    print(message, file=sys.stderr, flush=True)
    os.kill(parent, signal.SIGKILL)
"""


@contextmanager
@checks.arguments(
    seconds=checks.number(0.0, cli.DAY, hint="seconds", above=True), waiting_for=checks.text
)
def startup_deadline(seconds: float, waiting_for: str) -> Iterator[None]:
    """Run the block (the strategy's start-up); if it has not finished after ``seconds``, print
    one line naming ``waiting_for`` and end this process (SIGKILL: exit status 137 in a shell)."""
    message = (
        f"{os.path.basename(sys.argv[0]) or 'worker'}: {Deadline(seconds, waiting_for).message()}; "
        "start every task TF_CONFIG lists and check that their addresses are reachable"
    )
    watcher = subprocess.Popen(
        [sys.executable, "-c", _WATCHER, str(os.getpid()), str(seconds), message],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
    )
    try:
        yield
    finally:
        watcher.stdin.close()  # the watcher sees the end of its input and exits quietly
        watcher.wait()


def short_error(exc: BaseException) -> str:
    """``Type: first line`` of an exception a task reports, with a ``PerReplica:{...}`` dump
    shortened."""
    import re

    text = re.sub(r"\(PerReplica:\{.*\}\) with", "(PerReplica:{...}) with", str(exc), flags=re.S)
    return f"{type(exc).__name__}: {(text.splitlines() or [''])[0][:300]}"


# Notebook 13's programs name their argparse types through this module (worker.whole(1), ...).
whole, seconds, folder, host_port = cli.whole, cli.seconds, cli.folder, cli.host_port
