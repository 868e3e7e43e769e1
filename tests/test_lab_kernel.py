"""The kernel nbval runs each notebook in (tests/browser/lab_kernel.py), started against a
stand-in JupyterLab server: a kernel that finds its port taken is started afresh, and only what
the server logged after a start is read as that start's failure."""

from __future__ import annotations

import pytest

from tests.browser.lab_kernel import PORT_TAKEN, LabKernel


class FakeLab:
    """The server's side: sessions, a log, and each kernel's fate at start.

    ``fates`` lists, per kernel started, "ready", "port" (dies with the port message in the log),
    "died" (dies with another message) or "slow" (misses one heartbeat, then answers)."""

    def __init__(self, fates: list[str], log: str = "") -> None:
        self.fates, self.log = list(fates), log
        self.started: list[str] = []
        self.ended: list[str] = []
        self.alive: dict[str, bool] = {}

    def add_notebook(self, path) -> str:
        return f"notebooks/{path.name}"

    def start_session(self, served: str) -> tuple[str, str]:
        n = len(self.started)
        self.started.append(f"s{n}")
        self.alive[f"k{n}"] = self.fates[n] in ("ready", "slow")
        return f"s{n}", f"k{n}"

    def connection_file(self, kernel_id: str) -> str:
        return f"kernel-{kernel_id}.json"

    def log_text(self) -> str:
        return self.log

    def log_tail(self) -> str:
        return self.log[-200:]

    def end_session(self, session: str) -> None:
        self.ended.append(session)

    def api(self, path: str, method: str = "GET") -> dict:
        kernel = path.rsplit("/", 1)[-1]
        return {"execution_state": "idle" if self.alive[kernel] else "dead"}


def client_for(lab: FakeLab):
    """A kernel client class whose wait_for_ready plays the fate of the kernel it connects to."""

    class FakeClient:
        def load_connection_file(self, name: str) -> None:
            self.kernel = name.removeprefix("kernel-").removesuffix(".json")
            self.fate = lab.fates[int(self.kernel[1:])]

        def start_channels(self) -> None:
            self.stopped = False

        def stop_channels(self) -> None:
            self.stopped = True

        def wait_for_ready(self, timeout: float) -> None:
            if self.fate == "ready":
                return
            if self.fate == "slow":
                self.fate = "ready"  # answers on the next wait
            elif self.fate == "port":
                lab.log += f"\n[E] kernel {self.kernel} died\n{PORT_TAKEN}\n"
            else:
                lab.log += f"\n[E] kernel {self.kernel} died: ModuleNotFoundError\n"
            raise RuntimeError("Kernel died before replying to kernel_info")

    return FakeClient


@pytest.fixture(autouse=True)
def no_iopub_handshake(monkeypatch):
    """The stand-in has no IOPub channel: nbval's handshake after start is not under test."""
    monkeypatch.setattr(LabKernel, "_ensure_iopub_up", lambda self: None)


def start(lab: FakeLab, tmp_path, timeout: float = 5.0) -> LabKernel:
    return LabKernel(lab, tmp_path / "12_x.ipynb", timeout, client=client_for(lab))


def test_a_kernel_that_starts_is_used_with_no_retry(tmp_path):
    lab = FakeLab(["ready"])
    kernel = start(lab, tmp_path)
    assert (kernel.session, kernel.kernel_id) == ("s0", "k0")
    assert lab.started == ["s0"] and lab.ended == []
    assert kernel.is_alive()


def test_a_kernel_that_found_its_port_taken_is_ended_and_another_started(tmp_path):
    lab = FakeLab(["port", "port", "ready"])
    kernel = start(lab, tmp_path)
    assert kernel.kernel_id == "k2"
    assert lab.ended == ["s0", "s1"]  # the server would restart those on the same ports


def test_three_ports_taken_give_up_with_the_servers_log(tmp_path):
    lab = FakeLab(["port"] * 4)
    with pytest.raises(RuntimeError, match="3 kernels found a port taken") as caught:
        start(lab, tmp_path)
    assert PORT_TAKEN in str(caught.value)
    assert lab.started == ["s0", "s1", "s2"] and lab.ended == ["s0", "s1", "s2"]


def test_an_earlier_kernels_port_message_is_not_this_kernels(tmp_path):
    """The log already holds another notebook's port failure; this kernel dies of something
    else: that is an error to report, not a port to retry."""
    lab = FakeLab(["died", "ready"], log=f"[E] kernel of 10_x died\n{PORT_TAKEN}\n")
    with pytest.raises(RuntimeError, match="ModuleNotFoundError"):
        start(lab, tmp_path)
    assert lab.started == ["s0"]


def test_a_missed_heartbeat_is_waited_out_while_the_server_has_the_kernel_alive(tmp_path):
    lab = FakeLab(["slow"])
    kernel = start(lab, tmp_path)
    assert kernel.kernel_id == "k0" and lab.ended == []


def test_stop_ends_the_session_once(tmp_path):
    lab = FakeLab(["ready"])
    kernel = start(lab, tmp_path)
    kernel.detach()
    assert kernel.is_alive()  # JupyterLab holds it until nbval's teardown stops it
    kernel.stop()
    kernel.stop()
    assert lab.ended == ["s0"] and not kernel.is_alive()
