"""Fixtures for the browser tests of the reference site: headless Chromium, skipped loudly where
it cannot run (in CI, CI=true, a missing browser is a failure). The notebooks' own JupyterLab
runs are driven from ``conftest.py`` at the repository root, through ``lab.py`` and ``drive.py``."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

# tests.browser.lab, as conftest.py imports it: one module, so one Chromium per process
from tests.browser.lab import ARTIFACTS, ROOT, free_port, in_ci, missing_browser, shared_browser

__all__ = ["ARTIFACTS", "ROOT", "free_port"]


@pytest.fixture(scope="session")
def browser_ready() -> None:
    """Skip loudly where no browser can run; in CI (CI=true) a missing browser is a failure."""
    reason = missing_browser()
    if reason is None:
        return
    message = f"BROWSER TESTS NOT RUN: {reason}"
    if in_ci():
        pytest.fail(message)
    print(f"\n{'!' * 70}\n{message}\n{'!' * 70}", file=sys.stderr)
    pytest.skip(message)


@pytest.fixture(scope="session")
def browser(browser_ready) -> Iterator[object]:
    """This process's Chromium, shared with the notebooks' JupyterLab runs (closed at the end)."""
    yield shared_browser()
