"""One source for lesson code: cells marked ``#| export`` are written into ``helpers.lessons``.

A notebook teaches a technique in a visible cell. Where something else needs the same code (the
benchmark runner, a later notebook, a child process), it is not rewritten in a helper: the cell
starts with the line ``#| export`` and this tool copies it, unchanged, into a generated module
named after the notebook (``notebooks/00_start_here.ipynb`` -> ``helpers/lessons/start_here.py``),
as d2l does with ``#@save`` and nbdev with ``#|export``.

    python -m helpers.export            # (re)write every generated module
    python -m helpers.export --check    # list what is out of step with the notebooks; exit 1 if any

An exported cell holds only imports, definitions and assignments, so that importing the
generated module runs no lesson and prints nothing. ``tests/test_export.py`` fails when a
generated module differs from what its notebook would export.

The workbook's argument checks (``helpers.checks``) are plumbing, not lesson, so a cell names them
in a comment that a reader's copy can keep or drop, right above the ``def`` it guards:

    #| checks: batch=whole(1, 65_536), seed=seed
    def python_batches(paths, batch=64, seed=0):

and the generated module gets ``@checks.arguments(batch=checks.whole(1, 65_536), seed=checks.seed)``
in its place. Several such lines in a row are one list; the names are ``helpers.checks``' own.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from helpers import fileio, nbtools

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
LESSONS = Path(__file__).resolve().parent / "lessons"
MARKER = "#| export"
#: A line naming the argument checks of the ``def`` below it (see the module docstring).
CHECKS_LINE = re.compile(r"^(?P<indent>[ \t]*)#\| checks:(?P<spec>.*)$")
DEF_LINE = re.compile(r"^(async\s+)?def\s|^@")
NOTEBOOK_NAME = re.compile(r"^\d{2}_(?P<slug>[a-z][a-z0-9_]*)\.ipynb$")
#: Top-level statements an exported cell may hold: nothing that runs a lesson at import time.
ALLOWED = (
    ast.Import,
    ast.ImportFrom,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Assign,
    ast.AnnAssign,
)


class ExportError(ValueError):
    """A notebook's ``#| export`` cells cannot be exported as they are (the message says why)."""


def module_name(notebook: Path) -> str:
    """``notebooks/00_start_here.ipynb`` -> ``start_here`` (the number is left out, so that
    renumbering a notebook does not rename its module)."""
    match = NOTEBOOK_NAME.match(Path(notebook).name)
    if not match:
        raise ExportError(f"{Path(notebook).name!r} is not named NN_verb_phrase.ipynb")
    return match["slug"]


def exported_cells(nb: Any, where: str = "the notebook") -> list[tuple[int, str]]:
    """``(cell index, source without the marker line)`` for each code cell marked for export.

    A marked cell that is hidden, is a solution, uses IPython syntax or runs something at
    import time is an ``ExportError``: exported code must be what the reader saw and ran.
    """
    found = []
    for index, cell in enumerate(nb.get("cells", [])):
        text = nbtools.source(cell)
        if cell.get("cell_type") != "code" or text.split("\n", 1)[0].strip() != MARKER:
            continue
        body = text.split("\n", 1)[1] if "\n" in text else ""
        here = f"{where}, cell {index}"
        if cell.get("metadata", {}).get("jupyter", {}).get("source_hidden"):
            raise ExportError(f"{here}: a hidden cell cannot be exported; the reader must see it")
        if body.lstrip().startswith("# Solution"):
            raise ExportError(f"{here}: an exercise's solution cannot be exported")
        if not body.strip():
            raise ExportError(f"{here}: the cell holds nothing to export")
        try:
            tree = ast.parse(body)
        except SyntaxError as exc:
            raise ExportError(
                f"{here}: not plain Python (no % magics or ! commands): "
                f"{exc.msg}, line {exc.lineno}"
            ) from exc
        for node in tree.body:
            if not isinstance(node, ALLOWED):
                raise ExportError(
                    f"{here}, line {node.lineno}: an exported cell may hold only imports, "
                    f"definitions and assignments; found {type(node).__name__}. Move it to a cell "
                    "of its own."
                )
        found.append((index, _with_checks(body, here, first_line=2).rstrip() + "\n"))
    return found


def _with_checks(body: str, where: str = "the cell", first_line: int = 1) -> str:
    """``body`` with each run of ``#| checks:`` lines turned into the ``@checks.arguments(...)``
    decorator it names. An ``ExportError`` says what is wrong with one that names nothing, a name
    ``helpers.checks`` lacks, a parameter the function lacks, or no ``def`` below it; its line
    number counts ``first_line`` for the body's first line."""
    lines, out, index = body.split("\n"), [], 0
    while index < len(lines):
        match = CHECKS_LINE.match(lines[index])
        if not match:
            out.append(lines[index])
            index += 1
            continue
        indent, specs, first = match["indent"], [], index
        while index < len(lines) and (match := CHECKS_LINE.match(lines[index])):
            specs.append(match["spec"].strip().rstrip(","))
            index += 1
        here = f"{where}, line {first + first_line}"
        following = lines[index] if index < len(lines) else ""
        if not (following.startswith(indent) and DEF_LINE.match(following[len(indent) :])):
            raise ExportError(f"{here}: a '#| checks:' line must stand right above a def")
        out.append(f"{indent}@checks.arguments({_qualified(', '.join(specs), here)})")
    text = "\n".join(out)
    for node in ast.walk(ast.parse(text)) if text != body else ():
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            named = {k.arg for d in node.decorator_list if _is_checks(d) for k in d.keywords}
            params = {a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs}
            if named - params:
                raise ExportError(
                    f"{where}: '#| checks:' names {sorted(named - params)}, which {node.name}() "
                    "does not take"
                )
    return text


def _qualified(spec: str, where: str) -> str:
    """``"batch=whole(1, 65_536)"`` -> ``"batch=checks.whole(1, 65_536)"``, spelled as written."""
    from helpers import checks

    try:
        call = ast.parse(f"f({spec})", mode="eval").body
    except SyntaxError as exc:
        raise ExportError(
            f"{where}: '#| checks: {spec}' is not name=check, ...: {exc.msg}"
        ) from exc
    assert isinstance(call, ast.Call)
    if call.args or not call.keywords or any(k.arg is None for k in call.keywords):
        raise ExportError(f"{where}: '#| checks:' takes name=check pairs, e.g. batch=whole(1, 64)")
    raw, offsets = spec.encode(), []
    for node in ast.walk(call):
        if isinstance(node, ast.Name) and node is not call.func:
            if node.id.startswith("_") or not hasattr(checks, node.id):
                raise ExportError(
                    f"{where}: '#| checks:' names {node.id!r}, which helpers.checks does not "
                    "define (write whole(1, 64), not checks.whole(1, 64))"
                )
            offsets.append(node.col_offset - 2)  # the offset counts the "f(" put in front
    for offset in sorted(offsets, reverse=True):
        raw = raw[:offset] + b"checks." + raw[offset:]
    return raw.decode()


def _is_checks(node: ast.expr) -> bool:
    """Whether a decorator is ``@checks.arguments(...)``."""
    func = node.func if isinstance(node, ast.Call) else None
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "arguments"
        and isinstance(func.value, ast.Name)
        and func.value.id == "checks"
    )


def render(notebook: Path) -> str | None:
    """The generated module's text for ``notebook``, or ``None`` when it exports nothing."""
    notebook = Path(notebook)
    where = f"notebooks/{notebook.name}"
    try:
        nb = json.loads(notebook.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ExportError(f"{where}: cannot read it as a notebook ({exc})") from exc
    if not isinstance(nb, dict) or not isinstance(nb.get("cells", []), list):
        raise ExportError(f"{where}: not a notebook (no list of cells)")
    cells = exported_cells(nb, where)
    if not cells:
        return None
    parts = [
        f'"""Lesson code from {where}: its cells marked ``{MARKER}``, in order.\n\n'
        "Generated by ``make export`` (``python -m helpers.export``). Do not edit: change the\n"
        'notebook, then run ``make export``.\n"""\n'
    ]
    if any("@checks.arguments(" in body for _, body in cells):
        parts.append(
            "\nfrom helpers import checks  # the argument checks the cells name above their defs\n"
        )
    for _, body in cells:
        parts.append(f"\n\n{body}")
    return "".join(parts)


def plan(notebooks: Sequence[Path], out_dir: Path | None = None) -> dict[Path, str | None]:
    """What each generated module should hold (``None``: it should not exist); ``out_dir``
    defaults to ``helpers/lessons``."""
    out_dir = Path(out_dir) if out_dir is not None else LESSONS
    wanted: dict[Path, str | None] = {}
    for notebook in sorted(notebooks):
        wanted[out_dir / f"{module_name(notebook)}.py"] = render(notebook)
    for existing in out_dir.glob("*.py"):
        if existing.name != "__init__.py":
            wanted.setdefault(existing, None)
    return wanted


def stale(notebooks: Sequence[Path], out_dir: Path | None = None) -> list[str]:
    """One line per generated module that is missing, out of date or left over."""
    problems = []
    for path, text in plan(notebooks, out_dir).items():
        if text is None and path.exists():
            problems.append(f"{path.name}: no notebook exports it any more (remove it)")
        elif text is not None and not path.exists():
            problems.append(f"{path.name}: missing")
        elif text is not None and path.read_text(encoding="utf-8") != text:
            problems.append(f"{path.name}: differs from its notebook's {MARKER} cells")
    return problems


def write(notebooks: Sequence[Path], out_dir: Path | None = None) -> list[Path]:
    """Write every generated module (atomically), remove left-over ones; return what changed."""
    changed = []
    for path, text in plan(notebooks, out_dir).items():
        if text is None:
            if path.exists():
                path.unlink()
                changed.append(path)
        elif not path.exists() or path.read_text(encoding="utf-8") != text:
            fileio.atomic_write_text(path, text)
            changed.append(path)
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; see the module docstring."""
    parser = argparse.ArgumentParser(
        prog="python -m helpers.export", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--check", action="store_true", help="report modules out of step; change nothing"
    )
    args = parser.parse_args(argv)
    notebooks = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    try:
        if args.check:
            problems = stale(notebooks)
            for line in problems:
                print(f"helpers/lessons/{line}", file=sys.stderr)
            if problems:
                print("Run `make export` to regenerate them.", file=sys.stderr)
            return 1 if problems else 0
        for path in write(notebooks):
            print(
                f"wrote {path.relative_to(ROOT)}"
                if path.exists()
                else f"removed {path.relative_to(ROOT)}"
            )
    except ExportError as exc:
        print(f"export: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"export: cannot write the generated modules: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
