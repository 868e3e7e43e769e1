"""helpers.site without a browser: what staging changes in a notebook, and the paths it refuses
(the built site itself is checked in tests/browser/test_site.py)."""

from __future__ import annotations

import pytest

from helpers import site


def notebook():
    return {
        "metadata": {"widgets": {"state": {}}},
        "nbformat": 4,
        "nbformat_minor": 5,
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": "# Title"},
            {
                "cell_type": "code",
                "metadata": {},
                "execution_count": 1,
                "source": "# NBVAL_CHECK_OUTPUT\nx = 1",
                "outputs": [],
            },
            {
                "cell_type": "code",
                "metadata": {},
                "execution_count": 2,
                "source": "widgets.ComparisonWidget(f)",
                "outputs": [
                    {
                        "output_type": "display_data",
                        "metadata": {},
                        "data": {"text/plain": "VBox(...)", site.WIDGET_MIME: {"model_id": "abc"}},
                    }
                ],
            },
            {"cell_type": "markdown", "metadata": {}, "source": "## Summary\n\n- a point"},
            {
                "cell_type": "code",
                "metadata": {},
                "execution_count": 3,
                "source": "idiom()",
                "outputs": [],
            },
        ],
    }


def test_staging_a_notebook():
    original = notebook()
    staged = site.stage_notebook(original, "07_x.ipynb")
    sources = [c["source"] for c in staged["cells"]]
    assert "widgets" not in staged["metadata"]  # no saved widget state, so no CDN widget scripts
    assert sources[1].startswith("*Run this notebook*") and "notebooks/07_x.ipynb" in sources[1]
    assert sources[2] == "x = 1"  # the test-only comment is left out
    assert staged["cells"][3]["outputs"][0]["data"] == {"text/markdown": site.WIDGET_NOTE}
    assert (
        sources[-2].startswith("### Copy this") and sources[-1] == "idiom()"
    )  # right before the idiom
    assert original["cells"][1]["source"].startswith("# NBVAL_")  # the saved notebook is untouched


def test_a_notebook_without_summary_gets_no_copy_heading():
    nb = notebook()
    nb["cells"] = nb["cells"][:3]
    assert not any(
        "Copy this" in str(c["source"]) for c in site.stage_notebook(nb, "a.ipynb")["cells"]
    )


@pytest.mark.parametrize("out", [site.ROOT, site.ROOT / "notebooks", site.ROOT.parent])
def test_build_refuses_to_replace_the_repository(out):
    with pytest.raises(site.SiteError, match="refusing to replace"):
        site.build(out)


def test_build_refuses_a_file_for_out(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(site.SiteError, match="is a file"):
        site.build(tmp_path / "f")


def test_remote_references_are_found(tmp_path):
    (tmp_path / "a.html").write_text(
        '<script src="https://cdn.example/x.js"></script><img src="_images/a.png">'
    )
    (tmp_path / "b.html").write_text('<link href="//fonts.example/f.css" rel="stylesheet">')
    found = site.remote_references(tmp_path)
    assert len(found) == 2 and found[0].startswith("a.html") and found[1].startswith("b.html")
