"""Fixtures shared by the test files (the repository's conftest.py holds the notebook hooks)."""

from __future__ import annotations

import pytest

from helpers import reaper


@pytest.fixture
def no_orphans():
    """Fails the test when a process it started is still running 5 s after it (exits under way
    are let finish)."""
    before = reaper.descendants(live_only=True)
    yield
    left = reaper.outlived(before)
    assert not left, f"processes outlived the test: {sorted(left)}"


@pytest.fixture
def no_children_left():
    """Stricter, for the launcher's own tests: when the test ends, no descendant it started is
    left at all, not even one that exited without being waited for."""
    before = reaper.descendants()
    yield
    left = reaper.descendants() - before
    assert not left, f"child processes left (running or unreaped): {sorted(left)}"
