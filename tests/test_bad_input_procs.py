"""Processes, clusters and command-line tools refuse bad input clearly and leave nothing running
(issue 20): property tests of the public arguments, then each finding (a setsid grandchild, a
grandchild holding the pipes, a task that ignores SIGTERM, the CLIs' user errors)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid

import psutil
import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import bench, cluster, nbtools, procs, reaper
from tests import badinput

OK = [sys.executable, "-c", "pass"]


@given(badinput.bad_number(0.0, 7 * 24 * 3600.0).filter(lambda v: v != 0.0))
def test_run_timeout(value):
    badinput.refused("procs", "timeout", lambda: procs.run(OK, timeout=value), value)


@given(
    st.one_of(
        st.text(max_size=5),
        st.lists(st.integers(), min_size=1, max_size=2),
        st.just([]),
        st.just(["python", None]),
        st.just(["a\0b"]),
        st.integers(),
        st.none(),
    )
)
def test_run_args(value):
    badinput.refused("procs", "args", lambda: procs.run(value, timeout=5), value)


@given(
    st.one_of(
        st.dictionaries(st.text(max_size=3), st.integers(), min_size=1, max_size=1),
        st.just({"": "1"}),
        st.just({"A=B": "1"}),
        st.just({"A": "x\0"}),
        st.just(["A=1"]),
        st.just("A=1"),
    )
)
def test_run_env(value):
    badinput.refused("procs", "env", lambda: procs.run(OK, env=value, timeout=5), value)


def test_run_cwd(tmp_path):
    for value in (tmp_path / "missing", 3, ""):
        badinput.refused("procs", "cwd", lambda v=value: procs.run(OK, cwd=v, timeout=5), value)


@given(badinput.bad_whole(1, 100_000))
def test_tail_lines(value):
    badinput.refused("procs", "lines", lambda: procs.tail("a\nb", lines=value), value)


@given(
    st.one_of(
        st.just(""),
        st.just("helpers bench"),
        st.just("-m x"),
        st.just("a..b"),
        st.integers(),
        st.none(),
    )
)
def test_python_module(value):
    badinput.refused("procs", "module", lambda: procs.python_module(value), value)


@given(badinput.bad_whole(1, 64))
def test_free_ports_n(value):
    badinput.refused("cluster", "n", lambda: cluster.free_ports(value), value)


@given(
    st.one_of(
        st.builds(lambda n: {"worker": n}, badinput.bad_whole(1, 64)),
        st.just({"server": 1}),
        st.just({"chief": 2}),
        st.just({}),
        st.just("worker"),
        st.just(["worker"]),
        st.just({1: 1}),
    )
)
def test_cluster_spec_roles(value):
    badinput.refused("cluster", "roles", lambda: cluster.cluster_spec(value), value)


@given(
    st.one_of(
        st.just(["a:99999"]),
        st.just(["a:0"]),
        st.just(["a"]),
        st.just([":80"]),
        st.just(["a:x"]),
        st.just("a:1"),
        st.just([1]),
        st.just(["a:1", "b:2"]),
    )
)
def test_cluster_spec_hosts(value):
    badinput.refused(
        "cluster", "hosts", lambda: cluster.cluster_spec({"worker": 1}, hosts=value), value
    )


def test_a_port_out_of_range_is_named():
    with pytest.raises(ValueError, match="a:99999"):
        cluster.cluster_spec({"worker": 2}, hosts=["b:2222", "a:99999"])


SPEC = {"chief": ["a:1"], "worker": ["b:1", "c:1"]}


@given(st.one_of(badinput.bad_whole(0, 1), st.just(True)))
def test_tf_config_index(value):
    badinput.refused("cluster", "index", lambda: cluster.tf_config(SPEC, "worker", value), value)


@given(st.one_of(st.just("ps"), st.just("Worker"), st.just(""), st.integers(), st.none()))
def test_tf_config_task_type(value):
    badinput.refused("cluster", "task_type", lambda: cluster.tf_config(SPEC, value, 0), value)


def test_tf_config_never_writes_a_boolean_index():
    with pytest.raises(TypeError, match="index"):
        cluster.tf_config(SPEC, "worker", True)


@given(badinput.bad_number(0.0, 7 * 24 * 3600.0).filter(lambda v: v != 0.0))
def test_cluster_timeout(tmp_path_factory, value):
    logdir = tmp_path_factory.mktemp("c")
    badinput.refused(
        "cluster",
        "timeout",
        lambda: cluster.Cluster({"worker": 1}, OK, logdir=logdir, timeout=value),
        value,
    )
    badinput.refused(
        "cluster",
        "timeout",
        lambda: cluster.run({"worker": 1}, OK, logdir=logdir, timeout=value),
        value,
    )


def test_cluster_bounds_local_tasks(tmp_path):
    badinput.refused(
        "cluster", "roles", lambda: cluster.Cluster({"worker": 60}, OK, logdir=tmp_path), 60
    )
    badinput.refused(
        "cluster",
        "wait_for",
        lambda: cluster.Cluster({"worker": 1}, OK, logdir=tmp_path, wait_for="worker"),
        "worker",
    )


@given(badinput.bad_whole(1, 24 * 3600))
def test_nbtools_execute_timeout(tmp_path_factory, value):
    path = tmp_path_factory.mktemp("nb") / "a.ipynb"
    badinput.refused("nbtools", "timeout", lambda: nbtools.execute(path, timeout=value), value)


@given(
    st.one_of(
        st.just("look_inside_graphs.eager_vs_function"),
        st.just(["nope.x"]),
        st.just([1]),
        st.integers(),
        st.just(b"x"),
    )
)
def test_bench_select_only(value):
    comparisons = bench.registry()
    badinput.refused("bench", "only", lambda: bench.select(comparisons, value), value)


# --- nothing outlives its runner -----------------------------------------------------------


def alive_with(marker: str) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter():
        try:
            if marker in " ".join(process.cmdline()) and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
        except psutil.Error:
            pass
    return found


@pytest.fixture
def marker():
    mark = f"MARK{uuid.uuid4().hex}"
    yield mark
    for process in alive_with(mark):  # a test that fails must not leave its grandchild behind
        process.kill()


def grandchild(marker: str, redirect: str = "") -> str:
    return (
        f"setsid {sys.executable} -c 'import time; time.sleep(300)' "
        f"{marker} {redirect} & echo started"
    )


def test_a_setsid_grandchild_is_ended_and_reported(marker):
    with pytest.raises(
        procs.ChildError, match="exited with 0 but left 1 background process"
    ) as info:
        procs.run(["bash", "-c", grandchild(marker, ">/dev/null 2>&1")], timeout=60)
    assert "it was ended" in str(info.value)
    time.sleep(0.2)
    assert not alive_with(marker), "the setsid grandchild outlived procs.run"


def test_a_grandchild_holding_the_pipes_is_named_quickly(marker):
    started = time.monotonic()
    with pytest.raises(
        procs.ChildError, match="left 1 background process holding its output"
    ) as info:
        procs.run(["bash", "-c", grandchild(marker)], timeout=30)
    assert time.monotonic() - started < 15, "reported only at the timeout"
    assert "timeout" not in str(info.value) and marker[:20] in str(info.value)
    assert not alive_with(marker)


STUBBORN = textwrap.dedent("""
    import os, signal, subprocess, sys, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    subprocess.Popen(
        ["setsid", sys.executable, "-c", "import time; time.sleep(300)", os.environ["MARKER"]],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    print("waiting for a peer that never answers", flush=True)
    time.sleep(300)
""")


def test_a_cluster_stuck_on_a_peer_is_bounded_and_everything_ends(tmp_path, marker):
    started = time.monotonic()
    run = cluster.Cluster(
        {"worker": 2},
        [sys.executable, "-c", STUBBORN],
        logdir=tmp_path,
        timeout=3,
        env={"MARKER": marker},
    )
    run.start()
    with (
        badinput.bounded(40),
        pytest.raises(cluster.ClusterError, match="worker:0, worker:1 had not finished") as info,
    ):
        run.wait()
    assert "waiting for a peer that never answers" in info.value.logs["worker:1"]
    assert all(
        p.returncode == -signal.SIGKILL for p in run.processes.values()
    )  # SIGTERM was ignored
    assert time.monotonic() - started < 30
    time.sleep(0.2)
    assert not alive_with(marker), "a task's setsid child outlived the cluster"


# --- command-line tools: one clear line, non-zero, never a traceback --------------------------

CLI_CASES = [
    ("helpers.bench", ["--out", "/tmp"], "is a folder"),
    ("helpers.bench", ["--out", "/proc/none/bench.json"], "cannot write"),
    (
        "helpers.bench",
        ["--only", "unknown.id"],
        "see the ids with `python -m helpers.bench --list`",
    ),
    ("helpers.bench", ["--gather", "README.md"], "is a file"),
    ("helpers.bench", ["--quick=3"], "error"),
    ("helpers.nbtools", ["check", "/none/a.ipynb", "README.md"], "README.md"),
    ("helpers.nbtools", ["execute", "x.ipynb", "--timeout", "-5"], "--timeout"),
    ("helpers.nbtools", ["run", "x.ipynb"], "invalid choice"),
    ("helpers.export", ["--bogus"], "unrecognized"),
    ("helpers.site", ["--out", "/proc/none/site"], "cannot write"),
    ("helpers.site", ["--out", "README.md"], "is a file"),
]


@pytest.mark.parametrize("module, args, says", CLI_CASES)
def test_cli_user_errors(module, args, says):
    done = subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert says in done.stderr.strip().splitlines()[-1] or says in done.stderr


def test_nbtools_check_reports_every_missing_notebook():
    done = subprocess.run(
        [sys.executable, "-m", "helpers.nbtools", "check", "/none/a.ipynb", "/none/b.ipynb"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "/none/a.ipynb" in done.stderr and "/none/b.ipynb" in done.stderr


def test_nbtools_execute_goes_on_after_a_timed_out_notebook(tmp_path):
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    slow = tmp_path / "slow.ipynb"
    nbformat.write(
        new_notebook(
            cells=[new_markdown_cell("# Slow"), new_code_cell("import time; time.sleep(60)")]
        ),
        slow,
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "helpers.nbtools",
            "execute",
            str(slow),
            str(tmp_path / "gone.ipynb"),
            "--timeout",
            "3",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=os.getcwd(),
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "ran past the 3 s timeout" in done.stderr and "gone.ipynb" in done.stderr


def test_a_grandchild_that_drops_the_mark_and_leaves_its_session_is_ended(marker):
    """Issue 35: `env -u WORKBOOK_PROCESS_MARK setsid ...` with its output sent elsewhere carried
    neither the mark nor the pipes, and outlived procs.run without a word. Re-parented to this
    subreaper with no mark at all, it is now found and ended."""
    command = f"env -u {reaper.MARK} " + grandchild(marker, ">/dev/null 2>&1")
    with pytest.raises(procs.ChildError, match="exited with 0 but left 1 background process"):
        procs.run(["bash", "-c", command], timeout=60)
    time.sleep(0.2)
    assert not alive_with(marker), "the unmarked grandchild outlived procs.run"
