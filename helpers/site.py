"""Build the workbook's reference site: the saved notebooks (outputs, figures and tables as they
are; nothing is executed) and the README as static HTML with full-text search and a copy button
on every code cell, readable offline.

    python -m helpers.site               # make site: writes _site/ (git-ignored),
                                         # then open _site/index.html
    python -m helpers.site --out DIR

Sphinx with myst-nb renders the notebooks (site/conf.py). Before that, each notebook is staged
in a temporary folder: a live widget's output (which would need scripts from a CDN) becomes a
note on how to run it, the Summary's idiom cell gets a "Copy this" heading, each page opens with
how to run the notebook, and the test-only ``# NBVAL_`` lines are left out of the code shown.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CONF = ROOT / "site"
DEFAULT_OUT = ROOT / "_site"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
WIDGET_NOTE = (
    "*A live widget: in JupyterLab (`make lab`) this cell draws controls to rerun the measurement "
    "with other settings. The figure and table above are the saved run.*"
)
REMOTE = re.compile(r"""<(?:script|link|img)\b[^>]*\b(?:src|href)=["'](?:https?:)?//""", re.I)


class SiteError(RuntimeError):
    """The site could not be built (the message says why)."""


def _text(cell: dict[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _markdown(text: str) -> dict[str, Any]:
    return {"cell_type": "markdown", "metadata": {}, "source": text}


def stage_notebook(nb: dict[str, Any], name: str) -> dict[str, Any]:
    """The notebook as the site shows it (a new dict; ``nb`` is not changed)."""
    nb = json.loads(json.dumps(nb))
    nb.get("metadata", {}).pop("widgets", None)  # saved widget state would pull in CDN scripts
    cells = []
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            lines = _text(cell).splitlines()
            cell["source"] = "\n".join(
                line for line in lines if not line.lstrip().startswith("# NBVAL_")
            )
            if any(WIDGET_MIME in out.get("data", {}) for out in cell.get("outputs", [])):
                cell["outputs"] = [
                    {
                        "output_type": "display_data",
                        "metadata": {},
                        "data": {"text/markdown": WIDGET_NOTE},
                    }
                ]
        cells.append(cell)
    summary = next(
        (
            i
            for i, c in enumerate(cells)
            if c["cell_type"] == "markdown" and re.search(r"^## Summary", _text(c), re.M)
        ),
        None,
    )
    if summary is not None:
        idiom = next(
            (i for i in range(len(cells) - 1, summary, -1) if cells[i]["cell_type"] == "code"), None
        )
        if idiom is not None:
            cells.insert(
                idiom, _markdown("### Copy this\n\nThe Summary's idiom, run in the saved notebook:")
            )
    run = (
        f"*Run this notebook*: from the repository, `make lab`, then open `notebooks/{name}`; "
        f"or {{download}}`download it <{name}>`."
    )
    title = next((i for i, c in enumerate(cells) if c["cell_type"] == "markdown"), 0)
    cells.insert(title + 1, _markdown(run))
    nb["cells"] = cells
    return nb


def stage(dest: Path, notebooks: list[Path]) -> None:
    """Write the site's sources into ``dest``: index, README and the staged notebooks."""
    (dest / "notebooks").mkdir(parents=True)
    shutil.copy(CONF / "index.md", dest / "index.md")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    # Files outside the site (CONTRIBUTING.md, LICENSE, Makefile ...) are linked on the code host,
    # not here.
    readme = re.sub(
        r"\[([^\]]+)\]\((?!https?:|notebooks/|#)([^)]+)\)", r"\1 (`\2` in the repository)", readme
    )
    (dest / "README.md").write_text(readme, encoding="utf-8")
    for path in notebooks:
        nb = json.loads(path.read_text(encoding="utf-8"))
        (dest / "notebooks" / path.name).write_text(
            json.dumps(stage_notebook(nb, path.name)), encoding="utf-8"
        )


def remote_references(out: Path) -> list[str]:
    """Pages of the built site that load a script, style or image from another host."""
    return [
        f"{p.relative_to(out)}: {m.group(0)[:80]}"
        for p in sorted(out.rglob("*.html"))
        for m in REMOTE.finditer(p.read_text(encoding="utf-8", errors="replace"))
    ]


def build(out: Path = DEFAULT_OUT, notebooks: list[Path] | None = None) -> Path:
    """Stage and build the site into ``out`` (replaced); refuse a site that needs the network."""
    out = Path(out).resolve()
    if (
        out == ROOT
        or ROOT.is_relative_to(out)
        or out in (ROOT / "notebooks", ROOT / "helpers", ROOT / "site")
    ):
        raise SiteError(f"refusing to replace {out}: give --out a folder of its own, such as _site")
    if out.exists() and not out.is_dir():
        raise SiteError(f"{out} is a file; --out must be a folder")
    notebooks = (
        sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")) if notebooks is None else notebooks
    )
    if not notebooks:
        raise SiteError("no notebooks to render in notebooks/")
    with tempfile.TemporaryDirectory(prefix="workbook-site-") as tmp:
        source, built = Path(tmp) / "src", Path(tmp) / "html"
        stage(source, notebooks)
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "sphinx",
                "-b",
                "html",
                "-q",
                "-c",
                str(CONF),
                str(source),
                str(built),
            ],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise SiteError(f"sphinx-build failed:\n{(done.stderr or done.stdout)[-3000:]}")
        remote = remote_references(built)
        if remote:
            raise SiteError("the site would need the network:\n" + "\n".join(remote[:10]))
        if out.exists():
            shutil.rmtree(out)
        shutil.copytree(built, out)
    return out


def _check_out(out: Path) -> None:
    """Refuse an ``--out`` that cannot be written (a file, or under one, or unwritable)."""
    if out.exists() and not out.is_dir():
        raise SiteError(f"{out} is a file; --out must be a folder")
    parent = next(p for p in Path(out).resolve().parents if p.exists())
    if not parent.is_dir():
        raise SiteError(f"--out {out}: {parent} is a file, not a folder")
    try:
        with tempfile.TemporaryFile(dir=parent):
            pass
    except OSError as exc:
        raise SiteError(f"--out {out}: cannot write in {parent} ({exc.strerror or exc})") from exc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.site", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help="the folder to write (replaced); default _site/",
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    try:
        _check_out(args.out)  # before the build, which takes minutes
        out = build(args.out)
    except (SiteError, OSError) as exc:
        print(f"make site: {exc}", file=sys.stderr)
        return 1
    print(
        f"built {out} in {time.perf_counter() - started:.0f} s; open {out / 'index.html'} "
        f"(or: .venv/bin/python -m http.server -d {out} -b 127.0.0.1 8000)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
