"""Fixtures for the end-to-end tests: a real JupyterLab server and headless Chromium.

The server runs on 127.0.0.1 with a random free port and a random token; its config, data,
runtime, settings and workspace folders live in a temporary directory; news, update checks and
autosave are off; it serves a copy of the notebooks, so the repository's saved copies are never
touched. It is stopped and reaped at the end of the session, also when a test fails.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: The notebooks under test: the workbook's, or another folder's (tests/test_notebook_gates.py
#: points this at a deliberately broken notebook to show that the browser test fails on it).
NOTEBOOK_DIR = Path(os.environ.get("WORKBOOK_NOTEBOOK_DIR", ROOT / "notebooks"))
CHROMIUM = Path(os.environ.get("WORKBOOK_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]
ARTIFACTS = ROOT / "artifacts" / "screenshots"


def missing_browser() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the Python package playwright is not installed (it is in requirements.txt)"
    if not CHROMIUM.exists():
        return f"Chromium is not at {CHROMIUM} (Debian: apt-get install chromium; or set WORKBOOK_CHROMIUM)"
    return None


@pytest.fixture(scope="session")
def browser_ready() -> None:
    """Skip loudly where no browser can run; in CI (CI=true) a missing browser is a failure."""
    reason = missing_browser()
    if reason is None:
        return
    message = f"BROWSER TESTS NOT RUN: {reason}"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(message)
    print(f"\n{'!' * 70}\n{message}\n{'!' * 70}", file=sys.stderr)
    pytest.skip(message)


def free_port() -> int:
    """A TCP port that is free on the loopback interface right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass(frozen=True)
class Lab:
    """A running JupyterLab: where it is, its token, the folder it serves."""

    url: str
    token: str
    root: Path

    def notebook_url(self, name: str) -> str:
        """The notebook alone in a fresh workspace (no tabs restored from an earlier test)."""
        workspace = "w" + secrets.token_hex(4)
        return f"{self.url}/lab/workspaces/{workspace}/tree/notebooks/{name}?reset&token={self.token}"

    def api(self, path: str, method: str = "GET") -> object:
        request = urllib.request.Request(
            f"{self.url}/api/{path}", method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            body = response.read()
        return json.loads(body) if body else None

    def answers(self) -> bool:
        """Whether the server answers its status API now."""
        try:
            self.api("status")
            return True
        except OSError:
            return False

    def log_tail(self, lines: int = 30) -> str:
        """The end of the server's log (kernel deaths and restarts show there)."""
        log = self.root.parent / "lab.log"
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) if log.exists() else "(no log)"

    def shut_down_kernels(self) -> None:
        """Stop every kernel the server runs (one test's kernels must not slow the next)."""
        for session in self.api("sessions"):
            self.api(f"sessions/{session['id']}", method="DELETE")

    def saved_notebook(self, name: str) -> dict:
        """The notebook as the server has it on disk (after the front end saved it)."""
        return self.api(f"contents/notebooks/{name}?content=1")["content"]


def write_settings(settings_dir: Path) -> None:
    """JupyterLab user settings: no news pop-up, no update check, no autosave."""
    files = {
        "@jupyterlab/apputils-extension/notification.jupyterlab-settings":
            {"fetchNews": "false", "checkForUpdates": False},
        "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    }
    for relative, content in files.items():
        path = settings_dir / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(content))


def wait_until_up(url: str, token: str, process: subprocess.Popen, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"jupyter lab exited early with code {process.returncode}")
        try:
            request = urllib.request.Request(f"{url}/api/status", headers={"Authorization": f"token {token}"})
            with urllib.request.urlopen(request, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"jupyter lab did not answer at {url} within {timeout:.0f} s")


def stop(process: subprocess.Popen) -> None:
    """Stop the server and everything it started (kernels), then reap it."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=15)
    else:  # the server is gone; make sure no kernel of its group survives
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture(scope="session")
def lab(browser_ready, tmp_path_factory) -> Iterator[Lab]:
    """A JupyterLab server serving a copy of the workbook's notebooks and data."""
    base = tmp_path_factory.mktemp("lab")
    root = base / "workbook"
    shutil.copytree(NOTEBOOK_DIR, root / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    shutil.copytree(ROOT / "data", root / "data", ignore=shutil.ignore_patterns("results", "generated"))
    settings = base / "settings"
    write_settings(settings)
    port, token = free_port(), secrets.token_hex(24)
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(base / "config"),
        "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
        "JUPYTER_DATA_DIR": str(base / "data"),
        "WORKBOOK_SCALE": "small",
    }
    command = [
        sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
        f"--LabApp.user_settings_dir={settings}", f"--LabApp.workspaces_dir={base / 'workspaces'}",
        "--ServerApp.port_retries=0",
    ]
    if os.geteuid() == 0:
        command.append("--allow-root")
    log = open(base / "lab.log", "w")  # noqa: SIM115 - closed below
    process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_until_up(f"http://127.0.0.1:{port}", token, process)
        yield Lab(f"http://127.0.0.1:{port}", token, root)
    finally:
        stop(process)
        log.close()


@pytest.fixture(scope="session")
def browser(browser_ready) -> Iterator[object]:
    """Headless Debian Chromium driven by Playwright (no browser download)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser, lab) -> Iterator[object]:
    """A fresh browser page; the kernels it started are shut down afterwards."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    try:
        yield page
    finally:
        context.close()
        lab.shut_down_kernels()
