"""Fixtures shared by the test files (the repository's conftest.py holds the notebook hooks)."""

from __future__ import annotations

import pytest

from helpers import reaper


@pytest.fixture
def no_orphans():
    """Fails the test when a process it started outlives it (5 s allowed for exits under way)."""
    before = reaper.descendants()
    yield
    left = reaper.outlived(before)
    assert not left, f"processes outlived the test: {sorted(left)}"
