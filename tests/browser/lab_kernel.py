"""nbval's kernel interface on a kernel that a session of the test run's JupyterLab owns.

``conftest.py`` (with ``--nbval-lab``) gives nbval one of these per notebook, so nbval runs and
compares every cell in a kernel that JupyterLab then opens for the second run
(``tests/browser/lab.py``). It lives in a module of its own so that its start-up, with the
retry on a port taken, can be tested with a stand-in server (``tests/test_lab_kernel.py``).
"""

from __future__ import annotations

from pathlib import Path

from jupyter_client import BlockingKernelClient
from nbval.kernel import RunningKernel

from helpers.deadline import Deadline

#: What a kernel's log says when a port the server chose for it was taken before it bound it.
PORT_TAKEN = "zmq.error.ZMQError: Address already in use"
#: Kernels started for one notebook before giving up on ports taken.
ATTEMPTS = 3


class LabKernel(RunningKernel):
    """A kernel started through the server's sessions API, driven by a client of our own.

    ``lab`` is a ``tests.browser.lab.Lab`` (or anything with the same methods); ``client`` makes
    the kernel client (``jupyter_client.BlockingKernelClient``)."""

    def __init__(
        self, lab, path: Path, startup_timeout: float, client=BlockingKernelClient
    ) -> None:
        self.lab, self.client = lab, client
        self.served = self.lab.add_notebook(path)
        for _ in range(ATTEMPTS):  # a kernel whose port was taken is started afresh, on new ports
            if self._start(startup_timeout):
                break
            self.kc.stop_channels()
            self.lab.end_session(self.session)  # the server would restart it on the same ports
        else:
            raise RuntimeError(f"{ATTEMPTS} kernels found a port taken:\n{self.lab.log_tail()}")
        self._ensure_iopub_up()

    def _start(self, startup_timeout: float) -> bool:
        """Start a session's kernel and wait for it; False if it could not bind a port. The
        server picks free ports and the kernel binds them later: another process can take one
        in between (once, 12's 36 cells errored so, on "Address already in use"). Only what the
        server logged after this start counts: an earlier kernel's line is not this one's."""
        seen = len(self.lab.log_text())
        self.session, self.kernel_id = self.lab.start_session(self.served)
        self.kc = self.client()
        self.kc.load_connection_file(str(self.lab.connection_file(self.kernel_id)))
        self.kc.start_channels()
        deadline = Deadline(startup_timeout, f"kernel {self.kernel_id} to start")
        while True:
            try:
                self.kc.wait_for_ready(timeout=max(1.0, deadline.left()))
                return True
            except RuntimeError as exc:  # "Kernel died before replying to kernel_info"
                if PORT_TAKEN in self.lab.log_text()[seen:]:
                    return False
                # A client without the kernel's process judges it by heartbeats, and a busy
                # 2-core machine can delay one past its 1 s limit (one notebook's 15 cells
                # errored so, in a native run): ask the server, which watches the process,
                # before giving up.
                if deadline.passed or not self.server_says_alive():
                    raise RuntimeError(
                        f"{exc}; the server's log ends:\n{self.lab.log_tail()}"
                    ) from exc

    def server_says_alive(self) -> bool:
        """Whether the JupyterLab server, which started the kernel's process, has it alive."""
        try:
            return self.lab.api(f"kernels/{self.kernel_id}")["execution_state"] != "dead"
        except OSError:  # an HTTP error (the kernel is gone) or no server
            return False

    def is_alive(self) -> bool:
        """Alive while the server has it: while nbval holds it (by the process, not the client's
        heartbeats), and after ``detach`` while its session lasts, so that nbval's teardown
        still calls ``stop`` (otherwise every notebook's kernel stayed up to the end)."""
        if self.kc is not None:
            return self.server_says_alive()
        return self.session is not None

    def restart(self) -> None:
        self.lab.api(f"kernels/{self.kernel_id}/restart", method="POST")

    def interrupt(self) -> None:
        self.lab.api(f"kernels/{self.kernel_id}/interrupt", method="POST")

    def detach(self) -> None:
        """Let go of the kernel (JupyterLab takes it over); it keeps running."""
        if self.kc is not None:
            self.kc.stop_channels()
            self.kc = None

    def stop(self) -> None:
        self.detach()
        if self.session is not None:
            self.lab.end_session(self.session)
            self.session = None

    @property
    def language(self) -> str:
        return "python"
