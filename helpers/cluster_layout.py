"""The layout of a TensorFlow cluster (notebook 13), before any process starts: the task roles,
free ports on the loopback interface, the ``cluster`` spec of ``TF_CONFIG`` and each task's
``TF_CONFIG``, and the checks on a local cluster's arguments.

``helpers.cluster`` launches the processes from this layout; on real hosts, ``cluster_spec``
with a host list and ``tf_config`` give each host its own ``TF_CONFIG``.
"""

from __future__ import annotations

import json
import random
import socket
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from helpers import checks
from helpers.checks import whole_number

LOOPBACK = "127.0.0.1"
#: TensorFlow's task types, and the tf.data service's dispatcher (its programs read the same
#: layout).
ROLES = ("chief", "dispatcher", "worker", "ps", "evaluator")
#: A cluster run's timeout or a serve deadline: finite, above 0, at most a week.
SECONDS = checks.number(0.0, 7 * 24 * 3600.0, "seconds", above=True)


def max_local_tasks() -> int:
    """The most tasks a local cluster starts: each is a process (a TensorFlow runtime) here."""
    return max(8, 4 * checks.logical_cpus())


#: Where ``free_ports`` looks: below Linux's ephemeral range (32768-60999 by default). The kernel
#: hands out ports from that range to every outgoing connection and to every ``bind((host, 0))``,
#: so a port found free there can be taken by someone else's connection between this check and
#: the moment the task binds it (the task binds after TensorFlow loads, seconds later). A port
#: outside it is only taken by a program that asks for it by number. portpicker, which
#: TensorFlow's own multi-process tests use, also draws random ports from 15000-24999.
PICK_RANGE = (15000, 25000)
_HANDED_OUT: set[int] = set()  # the ports this process gave out: not given out twice
_RANDOM = random.Random()  # seeded from the OS, and not by a notebook's random.seed(0)


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    except (OSError, ValueError):  # not Linux: macOS and Windows use 49152-65535
        return 49152, 65535
    return low, high


def _bindable(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def free_ports(n: int, host: str = LOOPBACK) -> list[int]:
    """``n`` distinct TCP ports that are free on ``host`` right now (each bound, then released),
    outside the ephemeral range (``PICK_RANGE``) and not given out before by this process; when
    none of those is free, the system's choice (``bind((host, 0))``)."""
    whole_number("n", n, maximum=checks.max_threads())
    checks.text("host", host)
    low, high = _ephemeral_range()
    ports: list[int] = []
    for _ in range(50 * n):
        if len(ports) == n:
            break
        port = _RANDOM.randrange(*PICK_RANGE)
        if not low <= port <= high and port not in _HANDED_OUT and _bindable(host, port):
            ports.append(port)
            _HANDED_OUT.add(port)
    sockets = []
    try:
        while len(ports) + len(sockets) < n:  # the fallback: whatever the system hands out
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sockets.append(s)
            s.bind((host, 0))
        return ports + [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def cluster_spec(
    roles: Mapping[str, int], hosts: Sequence[str] | None = None
) -> dict[str, list[str]]:
    """The ``cluster`` part of ``TF_CONFIG``: ``{"worker": ["host:port", ...], ...}``. Without
    ``hosts``, every task gets a free port on 127.0.0.1; with ``hosts`` (one "host:port" per
    task, in role order), the same layout on real machines."""
    if not isinstance(roles, Mapping):
        raise checks.BadType(
            "roles must map role names to task counts, such as {'worker': 2}; "
            f"got {checks._show(roles)}"
        )
    for role, count in roles.items():
        if role not in ROLES:
            raise (ValueError if isinstance(role, str) else checks.BadType)(
                f"roles: role {role!r} is not one of {ROLES}"
            )
        whole_number(f"roles[{role!r}] (the number of {role} tasks)", count)
    if roles.get("chief", 0) > 1:
        raise ValueError("roles: a cluster has at most one chief")
    total = sum(roles.values())
    if total == 0:
        raise ValueError("roles must name at least one task")
    if total > checks.max_threads():
        raise ValueError(
            f"roles name {total:,} tasks, more than the {checks.max_threads()} this machine "
            "launches or addresses"
        )
    if hosts is None:
        hosts = [f"{LOOPBACK}:{port}" for port in free_ports(total)]
    else:
        _check_hosts(hosts, total)
    spec, it = {}, iter(hosts)
    for role in ROLES:
        if role in roles:
            spec[role] = [next(it) for _ in range(roles[role])]
    return spec


def _check_hosts(hosts: Any, total: int) -> None:
    if isinstance(hosts, str | bytes) or not isinstance(hosts, Sequence):
        raise checks.BadType(
            f"hosts must be a list of 'host:port' strings, one per task; got {checks._show(hosts)}"
        )
    if len(hosts) != total:
        raise ValueError(f"hosts: {total} tasks need {total} host:port addresses, got {len(hosts)}")
    for address in hosts:
        host, _, port = address.rpartition(":") if isinstance(address, str) else ("", "", "")
        if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
            raise (ValueError if isinstance(address, str) else checks.BadType)(
                "each of hosts must be 'host:port' with a port from 1 to 65535, "
                f"got {checks._show(address)}"
            )


def tf_config(spec: Mapping[str, Sequence[str]], task_type: str, index: int) -> str:
    """The ``TF_CONFIG`` JSON for one task of ``spec``."""
    if (
        not isinstance(spec, Mapping)
        or not spec
        or not all(
            k in ROLES and isinstance(v, Sequence) and not isinstance(v, str)
            for k, v in spec.items()
        )
    ):
        raise checks.BadType(
            f"spec must map roles {ROLES} to lists of 'host:port' (cluster_spec builds it); "
            f"got {checks._show(spec)}"
        )
    checks.one_of(*spec)("task_type", task_type)
    tasks = len(spec[task_type])
    if not tasks:
        raise ValueError(f"task_type {task_type!r} has no task in the cluster {dict(spec)}")
    whole_number(
        "index", index, 0, f"no task {task_type}:{index} in the cluster", maximum=tasks - 1
    )
    return json.dumps(
        {
            "cluster": {k: list(v) for k, v in spec.items()},
            "task": {"type": task_type, "index": index},
        }
    )


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_launch(
    roles: Mapping[str, int],
    command: Sequence[str],
    *,
    logdir: str | Path,
    timeout: float = 300.0,
    env: Mapping[str, str] | None = None,
    wait_for: Sequence[str] = ("chief", "worker"),
) -> None:
    """Refuse, before anything starts, the arguments of a local cluster (``cluster.Cluster``)
    that cannot run: a command that is not a list of strings, a bad timeout, log folder or
    environment, ``wait_for`` given as one string, or more tasks than this machine starts."""
    if (
        isinstance(command, str | bytes)
        or not isinstance(command, Sequence)
        or not command
        or not all(isinstance(a, str) for a in command)
    ):
        raise checks.BadType(
            f"command must be a non-empty list of strings (no shell), got {checks._show(command)}"
        )
    SECONDS("timeout", timeout)
    checks.path("logdir", logdir)
    if env is not None and (
        not isinstance(env, Mapping)
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
    ):
        raise checks.BadType(f"env must map strings to strings, got {checks._show(env)}")
    if isinstance(wait_for, str) or not isinstance(wait_for, Sequence):
        raise checks.BadType(
            f"wait_for must be a list of roles such as ['worker'], got {checks._show(wait_for)}"
        )
    if (
        isinstance(roles, Mapping)
        and all(_is_count(n) for n in roles.values())
        and sum(roles.values()) > max_local_tasks()
    ):
        raise ValueError(
            f"roles name {sum(roles.values()):,} tasks; a local cluster starts at most "
            f"{max_local_tasks()} (one process each on this machine's "
            f"{checks.logical_cpus()} CPUs)"
        )
