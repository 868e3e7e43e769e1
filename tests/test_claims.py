"""The prose explains, the run reports: no measured number is typed into a notebook's markdown.

A ratio with decimals (2.45x), a time (12 ms) or a throughput (900 images/s) in markdown is one
machine's run, and disagrees with the reader's by construction: the sentence that reads a run is
computed output (``helpers.verdicts``). Exempt are quoted claims (a blockquote line, or text in
double quotes: the seed notes' and guides' own words) and inline code.

Numbers from other runs come from reference runs on file: a ``bench.json`` as ``make bench``
writes it (``helpers.bench``: the machine's stamp and every comparison's speed-up and spread),
one per machine, in a folder under ``data/``. A markdown cell that names such a folder in inline
code (``data/room-example``) may quote ratios, and only ratios its files hold (to two decimals).

The notebooks not yet rewritten this way are listed in ``LEFT`` with the count they still hold,
as a ratchet: a notebook may hold at most its count, and a count that fell must be lowered here,
so the list only shrinks.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from helpers import nbtools

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

MEASURED = re.compile(
    r"(?<![\w.])\d[\d,]*\.\d+\s?[x\u00d7](?!\w)"
    r"|(?<![\w.])\d[\d,]*(?:\.\d+)?\s?(?:ms|\u00b5s|us|ns)\b"
    # seconds with decimals: whole seconds are mostly settings (a 10 s limit)
    r"|(?<![\w.])\d[\d,]*\.\d+\s?s\b"
    r"|(?<![\w.])\d[\d,]*(?:\.\d+)?\s?(?:img/s|images/s|items/s|examples/s|steps/s)"
)
EXEMPT = re.compile(r"`[^`]*`|\"[^\"]*\"|\u201c[^\u201d]*\u201d")

#: Typed numbers still in the notebooks that the computed-verdict rewrite has not reached yet.
LEFT: dict[str, int] = {}


REFERENCE = re.compile(r"`(data/[\w./-]+)`")


def on_file(folder: Path) -> set[str]:
    """The ratios a folder of reference runs holds, as markdown would quote them (``1.81x``)."""
    ratios = set()
    for path in sorted(folder.rglob("bench.json")):
        for row in json.loads(path.read_text()).get("comparisons", []):
            for value in [row.get("speedup"), *(row.get("spread") or [])]:
                if isinstance(value, int | float):
                    ratios.add(f"{value:.2f}x")
    return ratios


def typed_numbers(path: Path) -> list[str]:
    found = []
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        source = nbtools.source(cell)
        quoted = set().union(
            *(on_file(ROOT / name) for name in REFERENCE.findall(source) if (ROOT / name).is_dir())
        )
        for line in source.splitlines():
            if not line.lstrip().startswith(">"):
                found += [
                    n
                    for n in MEASURED.findall(EXEMPT.sub("", line))
                    if n.replace(" ", "") not in quoted
                ]
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_markdown_types_no_measured_number(path):
    typed = typed_numbers(path)
    allowed = LEFT.get(path.stem, 0)
    assert len(typed) <= allowed, (
        f"{path.name}: measured numbers typed into markdown: {typed}; compute the sentence"
    )
    assert len(typed) == allowed, (
        f"{path.name}: {len(typed)} typed numbers left, not {allowed}: lower LEFT"
    )


def test_the_pattern_catches_a_typed_number_and_spares_quotes_and_code(tmp_path):
    cell = {
        "cell_type": "markdown",
        "source": [
            "Here it ran 2.45x faster, in 12 ms (900 images/s), 3.5 s in all, with a 10 s limit.\n",
            '> The notes: "more than 2.5x".\n',
            'The guide says "up to 3.1x"; `0.01 * 2 ms` is code.\n',
        ],
    }
    path = tmp_path / "99_x.ipynb"
    path.write_text(json.dumps({"cells": [cell]}))
    assert typed_numbers(path) == ["2.45x", "12 ms", "900 images/s", "3.5 s"]


def test_a_number_read_from_a_reference_run_must_be_in_its_files(tmp_path):
    folder = ROOT / "data" / "room-example"
    held = sorted(on_file(folder))
    assert (
        "2.06x" in held and "0.12x" in held and "1.91x" not in held
    )  # the example room's bfloat16 row, oneDNN on and off
    named = (
        "From `data/room-example`: bfloat16 gave 2.06x, and 0.12x with oneDNN off; 12 ms a step.\n"
    )
    path = tmp_path / "99_x.ipynb"
    path.write_text(json.dumps({"cells": [{"cell_type": "markdown", "source": [named]}]}))
    assert typed_numbers(path) == ["12 ms"]  # a time is no ratio on file
    path.write_text(
        json.dumps(
            {"cells": [{"cell_type": "markdown", "source": [named.replace("2.06x", "1.91x")]}]}
        )
    )
    assert typed_numbers(path) == ["1.91x", "12 ms"]  # not in the files
    unnamed = named.replace("From `data/room-example`: ", "")
    path.write_text(json.dumps({"cells": [{"cell_type": "markdown", "source": [unnamed]}]}))
    assert typed_numbers(path) == ["2.06x", "0.12x", "12 ms"]  # no reference named in the cell
