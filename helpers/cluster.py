"""Launch a TensorFlow cluster of local processes (notebook 13): one process per task, each with
its own ``TF_CONFIG``, ports on the loopback interface only, a log file per task, a timeout, and
every process stopped and reaped when the run ends or any task fails.

    with Cluster({"worker": 2}, procs.python_module("helpers.topics.distribute", "mwms"), logdir=...) as c:
        results = c.wait()

The same script runs on real hosts by giving each host its own ``TF_CONFIG`` (``tf_config``
builds one from a host list).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from helpers import checks, procs, reaper
from helpers.checks import whole_number
from helpers.deadline import Deadline

LOOPBACK = "127.0.0.1"
#: TensorFlow's task types, and the tf.data service's dispatcher (its programs read the same layout).
ROLES = ("chief", "dispatcher", "worker", "ps", "evaluator")
#: A cluster run's timeout or a serve deadline: finite, above 0, at most a week.
_SECONDS = checks.number(0.0, 7 * 24 * 3600.0, "seconds", above=True)


def max_local_tasks() -> int:
    """The most tasks a local cluster starts: each is a process (a TensorFlow runtime) here."""
    return max(8, 4 * checks.logical_cpus())


class ClusterError(RuntimeError):
    """A task failed or the cluster ran past its timeout; ``logs`` maps each task to its log tail."""

    def __init__(self, message: str, logs: Mapping[str, str]) -> None:
        shown = "\n".join(f"--- {task} (last lines) ---\n{text}" for task, text in logs.items() if text)
        super().__init__(f"{message}\n{shown}" if shown else message)
        self.logs = dict(logs)


@dataclass
class TaskResult:
    """How one task ended: exit code, its log, and the rows it emitted (``procs.emit``)."""

    task: str
    returncode: int | None
    log: str
    rows: list[dict[str, Any]] = field(default_factory=list)


def free_ports(n: int, host: str = LOOPBACK) -> list[int]:
    """``n`` distinct TCP ports that are free on ``host`` right now (bound, then released)."""
    whole_number("n", n, maximum=checks.max_threads())
    checks.text("host", host)
    sockets = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def cluster_spec(roles: Mapping[str, int], hosts: Sequence[str] | None = None) -> dict[str, list[str]]:
    """The ``cluster`` part of ``TF_CONFIG``: ``{"worker": ["host:port", ...], ...}``. Without
    ``hosts``, every task gets a free port on 127.0.0.1; with ``hosts`` (one "host:port" per
    task, in role order), the same layout on real machines."""
    if not isinstance(roles, Mapping):
        raise checks.BadType(f"roles must map role names to task counts, such as {{'worker': 2}}; got {checks._show(roles)}")
    for role, count in roles.items():
        if role not in ROLES:
            raise (ValueError if isinstance(role, str) else checks.BadType)(f"roles: role {role!r} is not one of {ROLES}")
        whole_number(f"roles[{role!r}] (the number of {role} tasks)", count)
    if roles.get("chief", 0) > 1:
        raise ValueError("roles: a cluster has at most one chief")
    total = sum(roles.values())
    if total == 0:
        raise ValueError("roles must name at least one task")
    if total > checks.max_threads():
        raise ValueError(f"roles name {total:,} tasks, more than the {checks.max_threads()} this machine launches or addresses")
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
        raise checks.BadType(f"hosts must be a list of 'host:port' strings, one per task; got {checks._show(hosts)}")
    if len(hosts) != total:
        raise ValueError(f"hosts: {total} tasks need {total} host:port addresses, got {len(hosts)}")
    for address in hosts:
        host, _, port = address.rpartition(":") if isinstance(address, str) else ("", "", "")
        if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
            raise (ValueError if isinstance(address, str) else checks.BadType)(
                f"each of hosts must be 'host:port' with a port from 1 to 65535, got {checks._show(address)}")


def tf_config(spec: Mapping[str, Sequence[str]], task_type: str, index: int) -> str:
    """The ``TF_CONFIG`` JSON for one task of ``spec``."""
    if not isinstance(spec, Mapping) or not spec or not all(
            k in ROLES and isinstance(v, Sequence) and not isinstance(v, str) for k, v in spec.items()):
        raise checks.BadType(f"spec must map roles {ROLES} to lists of 'host:port' (cluster_spec builds it); "
                             f"got {checks._show(spec)}")
    checks.one_of(*spec)("task_type", task_type)
    tasks = len(spec[task_type])
    if not tasks:
        raise ValueError(f"task_type {task_type!r} has no task in the cluster {dict(spec)}")
    whole_number("index", index, 0, f"no task {task_type}:{index} in the cluster", maximum=tasks - 1)
    return json.dumps({"cluster": {k: list(v) for k, v in spec.items()}, "task": {"type": task_type, "index": index}})


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class Cluster:
    """Start one process per task of ``roles`` running ``command`` (an argument list, no
    shell), wait for the ``wait_for`` tasks to finish, and stop everything on exit.

    Tasks not in ``wait_for`` (parameter servers) run until the cluster stops. Any task that
    exits non-zero, or a run past ``timeout`` seconds, stops the whole cluster and raises
    ``ClusterError`` with each task's last log lines. A cluster of servers only (``wait_for=()``,
    a tf.data service) is started, ``serve``d until every task listens, and stopped on exit.
    """

    def __init__(self, roles: Mapping[str, int], command: Sequence[str], *, logdir: str | Path,
                 timeout: float = 300.0, env: Mapping[str, str] | None = None,
                 wait_for: Sequence[str] = ("chief", "worker")) -> None:
        if isinstance(command, str | bytes) or not isinstance(command, Sequence) or not command or not all(
                isinstance(a, str) for a in command):
            raise checks.BadType(f"command must be a non-empty list of strings (no shell), got {checks._show(command)}")
        _SECONDS("timeout", timeout)
        checks.path("logdir", logdir)
        if env is not None and (not isinstance(env, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in env.items())):
            raise checks.BadType(f"env must map strings to strings, got {checks._show(env)}")
        if isinstance(wait_for, str) or not isinstance(wait_for, Sequence):
            raise checks.BadType(f"wait_for must be a list of roles such as ['worker'], got {checks._show(wait_for)}")
        if isinstance(roles, Mapping) and all(_is_count(n) for n in roles.values()) and sum(roles.values()) > max_local_tasks():
            raise ValueError(f"roles name {sum(roles.values()):,} tasks; a local cluster starts at most "
                             f"{max_local_tasks()} (one process each on this machine's {checks.logical_cpus()} CPUs)")
        self.spec = cluster_spec(roles)
        self.command, self.timeout, self.env = list(command), timeout, dict(env or {})
        self.logdir = Path(logdir)
        self.wait_for = [r for r in wait_for if r in self.spec]
        if wait_for and not self.wait_for:
            raise ValueError(f"wait_for {list(wait_for)} names no role of the cluster {list(self.spec)}")
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self._logs: dict[str, Any] = {}
        self._deadline: Deadline | None = None
        self._token, self._before, self._stopped = "", set(), False

    @property
    def tasks(self) -> list[str]:
        """Every task as ``role:index``."""
        return [f"{role}:{i}" for role, hosts in self.spec.items() for i in range(len(hosts))]

    def start(self) -> None:
        """Start every task (chief and workers last, so servers are listening first)."""
        self.logdir.mkdir(parents=True, exist_ok=True)
        reaper.become_subreaper()
        self._before = reaper.descendants()
        self._token, marked = reaper.marked_env(os.environ)
        self._deadline = Deadline(self.timeout, "the cluster's tasks to finish")
        order = sorted(self.tasks, key=lambda t: t.split(":")[0] in self.wait_for)
        try:
            for task in order:
                role, index = task.split(":")
                log = open(self.logdir / f"{role}-{index}.log", "wb")  # noqa: SIM115 - closed in stop()
                self._logs[task] = log
                env = {**marked, "TF_CPP_MIN_LOG_LEVEL": "2", **self.env, reaper.MARK: marked[reaper.MARK],
                       "TF_CONFIG": tf_config(self.spec, role, int(index))}
                self.processes[task] = subprocess.Popen(
                    self.command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                    start_new_session=True)
        except BaseException:
            self.stop()
            raise

    def wait(self) -> dict[str, TaskResult]:
        """Wait for the ``wait_for`` tasks; return every task's result (servers after they stop)."""
        if not self.wait_for:
            raise ValueError("this cluster waits for no task (wait_for=()); use serve() and stop()")
        waited = [t for t in self.tasks if t.split(":")[0] in self.wait_for]
        try:
            while True:
                failed = [t for t, p in self.processes.items() if p.poll() not in (None, 0)]
                if failed:
                    raise ClusterError(f"task {failed[0]} failed with exit code {self.processes[failed[0]].returncode}; "
                                       "the cluster was stopped", self._tails())
                if all(self.processes[t].poll() == 0 for t in waited):
                    break
                if self._deadline.passed:
                    late = [t for t in self.tasks if self.processes[t].poll() is None]
                    raise ClusterError(
                        f"the cluster ran past its {self.timeout:g} s timeout; {', '.join(late)} had not finished "
                        "(a task waiting for a peer that never answers, or too slow for the timeout); "
                        "the cluster was stopped", {t: tail for t, tail in self._tails().items() if t in late})
                self._deadline.pause(0.1)
        finally:
            self.stop()
        return {t: TaskResult(t, self.processes[t].returncode, self.log(t), procs.parse_rows(self.log(t)))
                for t in self.tasks}

    def serve(self, deadline: float = 60.0, ready: str | None = None) -> None:
        """Return once every task accepts TCP connections on its port and, when ``ready`` is
        given, has written that text to its log (a server that says when it has registered);
        a task that exits first, or ``deadline`` seconds without all of them ready, stops the
        cluster (``ClusterError``)."""
        _SECONDS("deadline", deadline)
        if ready is not None:
            checks.text("ready", ready)
        pending = {t: self.spec[t.split(":")[0]][int(t.split(":")[1])] for t in self.tasks}
        clock = Deadline(deadline, "every task to serve")
        while pending:
            for task, address in list(pending.items()):
                if self.processes[task].poll() is not None:
                    tails = self._tails()
                    self.stop()
                    raise ClusterError(f"task {task} exited with code {self.processes[task].returncode} before "
                                       "it was serving; the cluster was stopped", tails)
                if ready is not None:
                    self._logs[task].flush()
                    if ready not in self.log(task):
                        continue
                host, port = address.rsplit(":", 1)
                with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
                    probe.settimeout(0.5)
                    if probe.connect_ex((host, int(port))) == 0:
                        del pending[task]
            if pending and clock.passed:
                tails = self._tails()
                self.stop()
                raise ClusterError(f"{', '.join(pending)} not serving after {deadline:g} s; the cluster was stopped", tails)
            if pending:
                clock.pause(0.1)

    def results(self) -> dict[str, TaskResult]:
        """Each task's result so far, read from its log (after ``wait`` failed, or while running)."""
        for log in self._logs.values():
            if not log.closed:
                log.flush()
        return {t: TaskResult(t, self.processes[t].poll() if t in self.processes else None, self.log(t),
                              procs.parse_rows(self.log(t))) for t in self.tasks}

    def stop(self) -> None:
        """Stop every task's process group and whatever the tasks started (even in a session
        of their own): SIGTERM, then SIGKILL after a grace; reap them; close the logs. Safe to
        call twice."""
        if not self._stopped:
            self._stopped = True
            own = {p.pid for p in self.processes.values()}
            left = reaper.marked(self._token, exclude=own) if self._token else []
            reaper.end(left, self.processes.values())
            reaper.reap_orphans(self._before, exclude=own)
        for log in self._logs.values():
            log.close()

    def log(self, task: str) -> str:
        """Everything ``task`` wrote so far."""
        role, index = task.split(":")
        path = self.logdir / f"{role}-{index}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def _tails(self) -> dict[str, str]:
        for log in self._logs.values():
            if not log.closed:
                log.flush()
        return {t: procs.tail(self.log(t)) for t in self.tasks}

    def __enter__(self) -> Cluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def run(roles: Mapping[str, int], command: Sequence[str], *, logdir: str | Path, timeout: float = 300.0,
        env: Mapping[str, str] | None = None, wait_for: Sequence[str] = ("chief", "worker")) -> dict[str, TaskResult]:
    """Start the cluster, wait for it, stop it: ``Cluster`` in one call."""
    with Cluster(roles, command, logdir=logdir, timeout=timeout, env=env, wait_for=wait_for) as cluster:
        return cluster.wait()
