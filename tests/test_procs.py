"""The fresh-process runner: results, crashes, hangs, garbage, and no child left behind."""

import os
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from helpers import procs


def py(code: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code)]


def test_rows_come_back_and_env_reaches_the_child(no_children_left):
    rows = procs.run_rows(
        py("""
        import os
        from helpers import procs
        print("some chatter that is not a result")
        procs.emit({"threads": os.environ["WORKBOOK_TEST"], "ms": 1.5})
        procs.emit({"threads": "2", "ms": 0.75})
    """),
        env={"WORKBOOK_TEST": "1"},
        timeout=60,
    )
    assert rows == [{"threads": "1", "ms": 1.5}, {"threads": "2", "ms": 0.75}]


def test_crash_reports_exit_code_and_last_lines(no_children_left):
    with pytest.raises(procs.ChildError, match="failed with exit code 3") as info:
        procs.run_rows(
            py("""
            import sys
            print("step 1 done", flush=True)
            sys.stderr.write("broke at step 2\\n")
            sys.exit(3)
        """),
            timeout=60,
        )
    assert "broke at step 2" in info.value.tail and "step 1 done" in info.value.tail


def test_killed_by_signal_is_named(no_children_left):
    with pytest.raises(procs.ChildError, match="killed by SIGSEGV"):
        procs.run(py("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"), timeout=60)


def test_hang_past_timeout_is_stopped_with_its_grandchildren(no_children_left, tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    with pytest.raises(procs.ChildError, match="ran past its 3 s timeout"):
        procs.run(
            py(f"""
            import subprocess, sys, time
            grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
            open({str(pid_file)!r}, "w").write(str(grandchild.pid))
            print("started", flush=True)
            time.sleep(600)  # the hang under test
        """),
            timeout=3,
        )
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while True:
        try:
            if psutil.Process(grandchild).status() == psutil.STATUS_ZOMBIE:
                break
        except psutil.NoSuchProcess:
            break
        assert time.monotonic() < deadline, "the grandchild outlived its killed parent"
        time.sleep(0.05)


def test_garbage_and_missing_rows_are_errors(no_children_left):
    with pytest.raises(procs.ChildError, match="not a JSON object") as info:
        procs.run_rows(py("print('@@row {not json'); print('@@row [1, 2]')"), timeout=60)
    assert "@@row {not json" in info.value.tail
    with pytest.raises(procs.ChildError, match="reported no result rows") as info:
        procs.run_rows(py("print('12.5 ms, probably')"), timeout=60)
    assert "12.5 ms, probably" in info.value.tail


def test_interrupt_while_waiting_stops_the_child(no_children_left, monkeypatch):
    real = subprocess.Popen.communicate
    calls = []

    def interrupted(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return real(self, *args, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "communicate", interrupted)
    with pytest.raises(KeyboardInterrupt):
        procs.run(py("import time; time.sleep(600)"), timeout=600)


def test_a_process_caught_inside_execve_is_still_found(no_children_left, monkeypatch, tmp_path):
    """Inside ``execve`` a process's environment reads empty for an instant. The CI run of
    2026-11-26 let a setsid grandchild go unreported, most likely this way: its environment
    was read twice (empty for the mark, full for the orphan test). Here every first read is
    empty."""
    real, seen = psutil.Process.environ, set()

    def first_read_empty(self):
        if self.pid not in seen:
            seen.add(self.pid)
            return {}
        return real(self)

    monkeypatch.setattr(psutil.Process, "environ", first_read_empty)
    started = tmp_path / "started"
    code = f"""
        import subprocess, sys, time
        subprocess.Popen(["setsid", sys.executable, "-c", "import time; time.sleep(300)"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        open({str(started)!r}, "w").close()
    """
    with pytest.raises(procs.ChildError, match="exited with 0 but left 1 background process"):
        procs.run(py(code), timeout=60)
    assert started.exists()


def test_bad_arguments():
    with pytest.raises(TypeError, match="no shell"):
        procs.run("python -c 'print(1)'")
    with pytest.raises(TypeError, match="no shell"):
        procs.run([])
    with pytest.raises(ValueError, match="timeout"):
        procs.run([sys.executable, "-c", "pass"], timeout=0)
    with pytest.raises(TypeError, match="env must map strings"):
        procs.run([sys.executable, "-c", "pass"], env={"OMP_NUM_THREADS": 2})
    with pytest.raises(FileNotFoundError):
        procs.run([sys.executable + "-missing"])


def test_python_module_uses_this_interpreter():
    assert procs.python_module("helpers.bench", "--list") == [
        sys.executable,
        "-m",
        "helpers.bench",
        "--list",
    ]
    assert os.path.isabs(procs.python_module("x")[0])


def test_tail_leaves_out_tensorflow_start_up_banners():
    log = "\n".join(
        [
            (
                "WARNING: All log messages before absl::InitializeLog() is called "
                "are written to STDERR"
            ),
            (
                "I0000 00:00:1795298553.994276   32357 port.cc:153] "
                "oneDNN custom operations are on. You may see ..."
            ),
            (
                "I0000 00:00:1795298553.994696   32357 cudart_stub.cc:31] "
                "Could not find cuda drivers on your machine"
            ),
            "Traceback (most recent call last):",
            "ValueError: the real reason",
            "",
        ]
    )
    assert procs.tail(log) == "Traceback (most recent call last):\nValueError: the real reason"
    assert procs.tail("a\nb\nc", lines=2) == "b\nc"


def test_a_sibling_that_exited_unwaited_keeps_its_exit_code(no_children_left):
    """A process started beside procs.run (a cluster's crashed task, not yet waited for) is the
    caller's: run must not reap it, or its Popen would report 0 instead of the crash."""
    sibling = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    deadline = time.monotonic() + 30
    while (
        psutil.Process(sibling.pid).status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline
    ):
        time.sleep(0.05)  # waiting for the sibling to exit, unwaited
    procs.run(py("print('done')"), timeout=60)
    assert sibling.wait(timeout=10) == 3


def test_programs_are_written_for_the_block_and_removed_after_it_also_on_an_error():
    with procs.programs({"child.py": "print('hi')\n", "other.py": ""}) as files:
        assert (
            files["child.py"].read_text() == "print('hi')\n"
            and files["other.py"].parent == files["child.py"].parent
        )
        folder = files["child.py"].parent
    assert not folder.exists()
    with pytest.raises(RuntimeError, match="inside"), procs.programs({"child.py": ""}) as files:
        folder = files["child.py"].parent
        raise RuntimeError("inside the block")
    assert not folder.exists()
    for bad in ({}, {"child": ""}, {"../child.py": ""}, {"child.py": b""}):
        with (
            pytest.raises(ValueError, match="sources must map file names ending in .py"),
            procs.programs(bad),
        ):
            pass
