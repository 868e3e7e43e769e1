"""Launch a TensorFlow cluster of local processes (notebook 13): one process per task, each with
its own ``TF_CONFIG``, ports on the loopback interface only, a log file per task, a timeout, and
every process stopped and reaped when the run ends or any task fails.

    command = procs.python_module("helpers.topics.distribute_training.distribute", "mwms")
    with Cluster({"worker": 2}, command, logdir=...) as c:
        results = c.wait()

The same script runs on real hosts by giving each host its own ``TF_CONFIG`` (``tf_config``
builds one from a host list). The layout (roles, free ports, ``cluster_spec``, ``tf_config``) and
the checks on a cluster's arguments are in ``helpers.cluster_layout``.
"""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from helpers import checks, procs, reaper
from helpers.cluster_layout import SECONDS, check_launch, cluster_spec, tf_config
from helpers.cluster_layout import free_ports as free_ports  # re-exported: notebook 13 calls it
from helpers.deadline import Deadline


class ClusterError(RuntimeError):
    """A task failed or the cluster ran past its timeout; ``logs`` maps each task to its log
    tail."""

    def __init__(self, message: str, logs: Mapping[str, str]) -> None:
        shown = "\n".join(
            f"--- {task} (last lines) ---\n{text}" for task, text in logs.items() if text
        )
        super().__init__(f"{message}\n{shown}" if shown else message)
        self.logs = dict(logs)


@dataclass
class TaskResult:
    """How one task ended: exit code, its log, and the rows it emitted (``procs.emit``)."""

    task: str
    returncode: int | None
    log: str
    rows: list[dict[str, Any]] = field(default_factory=list)


class Cluster:
    """Start one process per task of ``roles`` running ``command`` (an argument list, no
    shell), wait for the ``wait_for`` tasks to finish, and stop everything on exit.

    Tasks not in ``wait_for`` (parameter servers) run until the cluster stops. Any task that
    exits non-zero, or a run past ``timeout`` seconds, stops the whole cluster and raises
    ``ClusterError`` with each task's last log lines. A cluster of servers only (``wait_for=()``,
    a tf.data service) is started, ``serve``d until every task listens, and stopped on exit.
    """

    def __init__(
        self,
        roles: Mapping[str, int],
        command: Sequence[str],
        *,
        logdir: str | Path,
        timeout: float = 300.0,
        env: Mapping[str, str] | None = None,
        wait_for: Sequence[str] = ("chief", "worker"),
    ) -> None:
        check_launch(roles, command, logdir=logdir, timeout=timeout, env=env, wait_for=wait_for)
        self.spec = cluster_spec(roles)
        self.command, self.timeout, self.env = list(command), timeout, dict(env or {})
        self.logdir = Path(logdir)
        self.wait_for = [r for r in wait_for if r in self.spec]
        if wait_for and not self.wait_for:
            raise ValueError(
                f"wait_for {list(wait_for)} names no role of the cluster {list(self.spec)}"
            )
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
                env = {
                    **marked,
                    "TF_CPP_MIN_LOG_LEVEL": "2",
                    **self.env,
                    reaper.MARK: marked[reaper.MARK],
                    "TF_CONFIG": tf_config(self.spec, role, int(index)),
                }
                self.processes[task] = subprocess.Popen(
                    self.command,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env=env,
                    start_new_session=True,
                )
        except BaseException:
            self.stop()
            raise

    def wait(self) -> dict[str, TaskResult]:
        """Wait for the ``wait_for`` tasks; return every task's result (servers after they
        stop)."""
        if not self.wait_for:
            raise ValueError("this cluster waits for no task (wait_for=()); use serve() and stop()")
        waited = [t for t in self.tasks if t.split(":")[0] in self.wait_for]
        try:
            while True:
                failed = [t for t, p in self.processes.items() if p.poll() not in (None, 0)]
                if failed:
                    raise ClusterError(
                        f"task {failed[0]} failed with exit code "
                        f"{self.processes[failed[0]].returncode}; the cluster was stopped",
                        self._tails(),
                    )
                if all(self.processes[t].poll() == 0 for t in waited):
                    break
                if self._deadline.passed:
                    late = [t for t in self.tasks if self.processes[t].poll() is None]
                    raise ClusterError(
                        f"the cluster ran past its {self.timeout:g} s timeout; "
                        f"{', '.join(late)} had not finished "
                        "(a task waiting for a peer that never answers, "
                        "or too slow for the timeout); the cluster was stopped",
                        {t: tail for t, tail in self._tails().items() if t in late},
                    )
                self._deadline.pause(0.1)
        finally:
            self.stop()
        return {
            t: TaskResult(
                t, self.processes[t].returncode, self.log(t), procs.parse_rows(self.log(t))
            )
            for t in self.tasks
        }

    def serve(self, deadline: float = 60.0, ready: str | None = None) -> None:
        """Return once every task accepts TCP connections on its port and, when ``ready`` is
        given, has written that text to its log (a server that says when it has registered);
        a task that exits first, or ``deadline`` seconds without all of them ready, stops the
        cluster (``ClusterError``)."""
        SECONDS("deadline", deadline)
        if ready is not None:
            checks.text("ready", ready)
        pending = {t: self.spec[t.split(":")[0]][int(t.split(":")[1])] for t in self.tasks}
        clock = Deadline(deadline, "every task to serve")
        while pending:
            for task, address in list(pending.items()):
                if self.processes[task].poll() is not None:
                    tails = self._tails()
                    self.stop()
                    raise ClusterError(
                        f"task {task} exited with code {self.processes[task].returncode} before "
                        "it was serving; the cluster was stopped",
                        tails,
                    )
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
                raise ClusterError(
                    f"{', '.join(pending)} not serving after {deadline:g} s; "
                    "the cluster was stopped",
                    tails,
                )
            if pending:
                clock.pause(0.1)

    def results(self) -> dict[str, TaskResult]:
        """Each task's result so far, read from its log (after ``wait`` failed, or while
        running)."""
        for log in self._logs.values():
            if not log.closed:
                log.flush()
        return {
            t: TaskResult(
                t,
                self.processes[t].poll() if t in self.processes else None,
                self.log(t),
                procs.parse_rows(self.log(t)),
            )
            for t in self.tasks
        }

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


def run(
    roles: Mapping[str, int],
    command: Sequence[str],
    *,
    logdir: str | Path,
    timeout: float = 300.0,
    env: Mapping[str, str] | None = None,
    wait_for: Sequence[str] = ("chief", "worker"),
) -> dict[str, TaskResult]:
    """Start the cluster, wait for it, stop it: ``Cluster`` in one call."""
    with Cluster(
        roles, command, logdir=logdir, timeout=timeout, env=env, wait_for=wait_for
    ) as cluster:
        return cluster.wait()
