"""The prose explains, the run reports: no measured number is typed into a notebook's markdown.

A ratio with decimals (2.45x), a time (12 ms) or a throughput (900 images/s) in markdown is one
machine's run, and disagrees with the reader's by construction: the sentence that reads a run is
computed output (``helpers.verdicts``). Exempt are quoted claims (a blockquote line, or text in
double quotes: the seed notes' and guides' own words) and inline code.

The notebooks not yet rewritten this way are listed in ``LEFT`` with the count they still hold,
as a ratchet: a notebook may hold at most its count, and a count that fell must be lowered here,
so the list only shrinks.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

MEASURED = re.compile(
    r"(?<![\w.])\d[\d,]*\.\d+\s?[x\u00d7](?!\w)"
    r"|(?<![\w.])\d[\d,]*(?:\.\d+)?\s?(?:ms|\u00b5s|us|ns)\b"
    r"|(?<![\w.])\d[\d,]*\.\d+\s?s\b"  # seconds with decimals: whole seconds are mostly settings (a 10 s limit)
    r"|(?<![\w.])\d[\d,]*(?:\.\d+)?\s?(?:img/s|images/s|items/s|examples/s|steps/s)"
)
EXEMPT = re.compile(r"`[^`]*`|\"[^\"]*\"|\u201c[^\u201d]*\u201d")

#: Typed numbers still in the notebooks that the computed-verdict rewrite has not reached yet.
LEFT = {
    "06_pack_files_into_shards": 14, "08_fuse_ops_and_pick_layouts": 21,
    "09_choose_rnn_kernels": 17,
    "15_compare_the_room": 20,
}


def typed_numbers(path: Path) -> list[str]:
    found = []
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        for line in source.splitlines():
            if not line.lstrip().startswith(">"):
                found += MEASURED.findall(EXEMPT.sub("", line))
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_markdown_types_no_measured_number(path):
    typed = typed_numbers(path)
    allowed = LEFT.get(path.stem, 0)
    assert len(typed) <= allowed, f"{path.name}: measured numbers typed into markdown: {typed}; compute the sentence"
    assert len(typed) == allowed, f"{path.name}: {len(typed)} typed numbers left, not {allowed}: lower LEFT"


def test_the_pattern_catches_a_typed_number_and_spares_quotes_and_code(tmp_path):
    cell = {"cell_type": "markdown", "source": [
        "Here it ran 2.45x faster, in 12 ms (900 images/s), 3.5 s in all, with a 10 s limit.\n",
        "> The notes: \"more than 2.5x\".\n", "The guide says \"up to 3.1x\"; `0.01 * 2 ms` is code.\n"]}
    path = tmp_path / "99_x.ipynb"
    path.write_text(json.dumps({"cells": [cell]}))
    assert typed_numbers(path) == ["2.45x", "12 ms", "900 images/s", "3.5 s"]
