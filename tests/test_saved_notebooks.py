"""Every saved notebook is fit to read: executed in order, no unexpected errors, no stderr,
no machine paths, and the guide's shape (opener, Setup, Exercises with hidden solutions,
Summary)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from helpers import nbtools

NOTEBOOKS = sorted(
    (Path(__file__).resolve().parent.parent / "notebooks").glob("[0-9][0-9]_*.ipynb")
)


def test_there_are_notebooks():
    assert NOTEBOOKS, "no notebooks found under notebooks/"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_saved_notebook_is_clean(path):
    assert nbtools.problems(nbformat.read(path, as_version=4)) == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_follows_the_template(path):
    nb = nbformat.read(path, as_version=4)
    markdown = "\n".join(nbtools.source(c) for c in nb.cells if c.cell_type == "markdown")
    for needle in (
        "**What you'll do**",
        "**What you'll learn**",
        "**What you need**",
        "**Time**",
        "## Setup",
        "## Exercises",
        "## Summary",
    ):
        assert needle in markdown, f"{path.name} has no {needle}"
    solutions = [c for c in nb.cells if c.cell_type == "code" and "# Solution" in nbtools.source(c)]
    assert all(c.metadata.get("jupyter", {}).get("source_hidden") for c in solutions)
    assert path.stem[:2].isdigit() and path.stem[2] == "_"
