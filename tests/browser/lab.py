"""A real JupyterLab server and headless Chromium, and the second run of a notebook in them.

`make test` runs each notebook twice in one kernel: nbval runs every cell once and compares the
marked outputs, then JupyterLab opens the notebook on that same kernel, runs all of it again as a
learner who reruns cells would, and every widget's Run button is clicked (``conftest.py``). The
kernel belongs to a session of this server, so nbval and the browser use the same one.

The server runs on 127.0.0.1 with a random free port and a random token; its config, data,
runtime, settings and workspace folders live in a temporary directory; news, update checks and
autosave are off. It serves a folder of its own: a copy of ``data/`` and, as each notebook's turn
comes, a copy of that notebook without its outputs, so the repository's saved copies are never
touched and every output the browser sees comes from this run. It is stopped and reaped at the
end, also when a test fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from helpers import deadline
from helpers.cluster import free_ports

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path(os.environ.get("WORKBOOK_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = ROOT / "artifacts" / "screenshots"
WIDGET = re.compile(r"\b(ComparisonWidget|ExperimentWidget)\(")
RAISES = "NBVAL_RAISES_EXCEPTION"


def missing_browser() -> str | None:
    """Why the browser cannot run here, or None when it can."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the Python package playwright is not installed (it is in requirements-test.txt)"
    if not CHROMIUM.exists():
        return (
            f"Chromium is not at {CHROMIUM} "
            "(Debian: apt-get install chromium; or set WORKBOOK_CHROMIUM)"
        )
    return None


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def free_port() -> int:
    """A TCP port that is free on the loopback interface right now (the clusters' own helper)."""
    return free_ports(1)[0]


@dataclass(frozen=True)
class Lab:
    """A running JupyterLab: where it is, its token, the folder it serves, its runtime folder."""

    url: str
    token: str
    root: Path
    runtime: Path

    def notebook_url(self, name: str) -> str:
        """The notebook alone in a fresh workspace (no tabs restored from an earlier notebook)."""
        workspace = "w" + secrets.token_hex(4)
        return (
            f"{self.url}/lab/workspaces/{workspace}/tree/notebooks/{name}?reset&token={self.token}"
        )

    def api(self, path: str, method: str = "GET", body: dict | None = None) -> object:
        request = urllib.request.Request(
            f"{self.url}/api/{path}",
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            payload = response.read()
        return json.loads(payload) if payload else None

    def answers(self) -> bool:
        """Whether the server answers its status API now."""
        try:
            self.api("status")
            return True
        except OSError:
            return False

    def log_text(self) -> str:
        """The server's whole log so far ("" before it has one): read from a length taken
        before an action, it holds what the action logged."""
        log = self.root.parent / "lab.log"
        return log.read_text(errors="replace") if log.exists() else ""

    def log_tail(self, lines: int = 30) -> str:
        """The end of the server's log (kernel deaths and restarts show there)."""
        return "\n".join(self.log_text().splitlines()[-lines:]) or "(no log)"

    def add_notebook(self, path: Path) -> str:
        """Copy a notebook into the served folder without its outputs; return its served path."""
        notebook = json.loads(path.read_text(encoding="utf-8"))
        for cell in notebook["cells"]:
            if cell["cell_type"] == "code":
                cell["outputs"], cell["execution_count"] = [], None
        (self.root / "notebooks" / path.name).write_text(json.dumps(notebook), encoding="utf-8")
        return f"notebooks/{path.name}"

    def start_session(self, served: str) -> tuple[str, str]:
        """Start a kernel for a served notebook, as JupyterLab would; return (session id,
        kernel id). JupyterLab, opening the notebook later, joins this session and its kernel."""
        session = self.api(
            "sessions",
            "POST",
            {
                "path": served,
                "name": Path(served).name,
                "type": "notebook",
                "kernel": {"name": "python3"},
            },
        )
        return session["id"], session["kernel"]["id"]

    def connection_file(self, kernel_id: str) -> Path:
        return self.runtime / f"kernel-{kernel_id}.json"

    def end_session(self, session_id: str) -> None:
        """Stop a session and its kernel (a session already gone is fine)."""
        with contextlib.suppress(OSError):
            self.api(f"sessions/{session_id}", method="DELETE")

    def saved_notebook(self, served: str) -> dict:
        """The notebook as the server has it on disk (after the front end saved it)."""
        return self.api(f"contents/{served}?content=1")["content"]


def write_settings(settings_dir: Path) -> None:
    """JupyterLab user settings: no news pop-up, no update check, no autosave; cell timing
    recorded."""
    files = {
        "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
            "fetchNews": "false",
            "checkForUpdates": False,
        },
        "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
        # Each cell's start and end in its metadata, for the time per cell of the second run.
        "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"recordTiming": True},
    }
    for relative, content in files.items():
        path = settings_dir / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(content))


def wait_until_up(url: str, token: str, process: subprocess.Popen, timeout: float = 90) -> None:
    def answers() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"jupyter lab exited early with code {process.returncode}")
        request = urllib.request.Request(
            f"{url}/api/status", headers={"Authorization": f"token {token}"}
        )
        try:
            with urllib.request.urlopen(request, timeout=2) as response:
                return response.status == 200
        except OSError:  # the server is not listening yet
            return False

    try:
        deadline.until(answers, timeout, f"jupyter lab to answer at {url}", interval=0.5)
    except deadline.WaitTimeout as exc:
        raise RuntimeError(str(exc)) from None


def stop(process: subprocess.Popen) -> None:
    """Stop the server and everything it started (kernels), then reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        pass
    with contextlib.suppress(ProcessLookupError):  # no kernel of its group may survive
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=15)


@contextlib.contextmanager
def serve() -> Iterator[Lab]:
    """A JupyterLab server on a folder of its own holding a copy of ``data/``, ``jobs/`` and
    ``notebooks/``."""
    base = Path(tempfile.mkdtemp(prefix="workbook-lab-"))
    root = base / "workbook"
    (root / "notebooks").mkdir(parents=True)
    shutil.copytree(
        ROOT / "data", root / "data", ignore=shutil.ignore_patterns("results", "generated")
    )
    shutil.copytree(
        ROOT / "jobs", root / "jobs"
    )  # notebook 16 reads the job files beside notebooks/
    write_settings(base / "settings")
    port, token = free_port(), secrets.token_hex(24)
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(base / "config"),
        "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
        "JUPYTER_DATA_DIR": str(base / "data"),
        "WORKBOOK_SCALE": os.environ.get("WORKBOOK_SCALE", "small"),
    }
    command = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        f"--LabApp.user_settings_dir={base / 'settings'}",
        f"--LabApp.workspaces_dir={base / 'workspaces'}",
        "--ServerApp.port_retries=0",
        "--LabApp.expose_app_in_browser=True",  # window.jupyterapp, for drive.py
        *(["--allow-root"] if os.geteuid() == 0 else []),
    ]
    with open(base / "lab.log", "w") as log:
        process = subprocess.Popen(
            command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            wait_until_up(f"http://127.0.0.1:{port}", token, process)
            yield Lab(f"http://127.0.0.1:{port}", token, root, base / "runtime")
        finally:
            stop(process)
    shutil.rmtree(base, ignore_errors=True)


@contextlib.contextmanager
def chromium() -> Iterator[object]:
    """Headless Debian Chromium driven by Playwright (no browser download)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield browser
        finally:
            browser.close()


#: One JupyterLab server and one Chromium per pytest process (Playwright's sync API allows one
#: per thread), started on first use and closed by ``close_shared`` at the end of the session.
_SHARED: dict[str, object] = {}


def _shared(key: str, factory) -> object:
    if key not in _SHARED:
        stack = _SHARED.setdefault("stack", contextlib.ExitStack())
        _SHARED[key] = stack.enter_context(factory())
    return _SHARED[key]


def shared_lab() -> Lab:
    return _shared("lab", serve)


def shared_browser() -> object:
    return _shared("browser", chromium)


def close_shared() -> None:
    stack = _SHARED.pop("stack", None)
    _SHARED.clear()
    if stack is not None:
        stack.close()
