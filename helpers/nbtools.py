"""Execute and save the workbook's notebooks, and check the saved copies' hygiene.

    python -m helpers.nbtools execute notebooks/*.ipynb  # fresh kernel each, then save
    python -m helpers.nbtools check notebooks/*.ipynb    # what tests/test_saved_notebooks.py checks

A notebook is saved only when it ran top to bottom without an unexpected error; stderr outputs
(TensorFlow's C++ log lines, which nbval never sees) are stripped first, and the file is replaced
atomically, so an interrupted run leaves the old copy untouched.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from helpers import checks, fileio

#: The longest a cell may run: a day.
MAX_TIMEOUT = 24 * 3600

#: Paths that reveal the machine a notebook was saved on (kept in step with shared nbcheck).
MACHINE_PATH = re.compile(r"(/work/|/tmp/|/root/|/home/[^/\s]+/|/Users/[^/\s]+/|[A-Z]:\\Users\\)")
RAISES = "NBVAL_RAISES_EXCEPTION"


def source(cell: Any) -> str:
    """A cell's source as one string."""
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def expects_error(cell: Any) -> bool:
    """Whether a code cell is marked as raising on purpose (nbval comment or tag)."""
    tags = cell.get("metadata", {}).get("tags", [])
    return RAISES in source(cell) or "raises-exception" in tags


def output_text(output: Any) -> str:
    """Every piece of text in one output: stream text, text/* data, error value and traceback."""
    parts = []
    if "text" in output:
        text = output["text"]
        parts.append("".join(text) if isinstance(text, list) else text)
    for key, value in output.get("data", {}).items():
        if key.startswith("text/"):
            parts.append("".join(value) if isinstance(value, list) else str(value))
    if output.get("output_type") == "error":
        parts.append(output.get("evalue", ""))
        parts.extend(output.get("traceback", []))
    return "\n".join(parts)


_SITE_PACKAGES = re.compile(r"(?:/[^\s\"'\x1b:]+)+?/site-packages/")
_STDLIB = re.compile(r"(?:/[^\s\"'\x1b:]+)+?/lib/(python3\.\d+)/")
_KERNEL_FILE = re.compile(r"/tmp/ipykernel_\d+/\d+\.py")
_AUTOGRAPH_FILE = re.compile(r"/tmp/__autograph_generated_file\w+\.py")


def scrub_text(text: str, root: str) -> str:
    """Replace machine paths in one text: site-packages and standard-library dirs, kernel
    cell files, and ``root`` (made relative)."""
    text = _SITE_PACKAGES.sub(".../site-packages/", text)
    text = _STDLIB.sub(r".../\1/", text)
    text = _KERNEL_FILE.sub("<cell>", text)
    text = _AUTOGRAPH_FILE.sub("<autograph>", text)
    return text.replace(root.rstrip("/") + "/", "").replace(root, ".") if root else text


def scrub_error_paths(nb: Any, root: str) -> None:
    """Shorten machine paths in expected errors' values and tracebacks (``root`` -> relative)."""
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                output["evalue"] = scrub_text(output.get("evalue", ""), root)
                output["traceback"] = [scrub_text(t, root) for t in output.get("traceback", [])]


def strip_stderr(nb: Any) -> int:
    """Remove stderr stream outputs from every code cell; return how many were removed."""
    removed = 0
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        kept = [
            o
            for o in cell.get("outputs", [])
            if not (o.get("output_type") == "stream" and o.get("name") == "stderr")
        ]
        removed += len(cell.get("outputs", [])) - len(kept)
        cell["outputs"] = kept
    return removed


def problems(nb: Any) -> list[str]:
    """What makes a saved notebook unfit: no title, unexpected errors, stderr, machine paths,
    cells not run in order in one fresh kernel."""
    found: list[str] = []
    cells = nb.get("cells", [])
    if (
        not cells
        or cells[0].get("cell_type") != "markdown"
        or not source(cells[0]).startswith("# ")
    ):
        found.append("the first cell is not a markdown '# Title'")
    code = [c for c in cells if c.get("cell_type") == "code"]
    counts = [c.get("execution_count") for c in code]
    if counts != list(range(1, len(code) + 1)):
        found.append("not saved from one fresh run top to bottom (execution counts are not 1..N)")
    for i, cell in enumerate(cells):
        if RAISES in source(cell) and "raises-exception" not in cell.get("metadata", {}).get(
            "tags", []
        ):
            found.append(
                f"cell {i}: expects an error but has no raises-exception tag "
                "(Run All would stop there)"
            )
        for output in cell.get("outputs", []):
            kind = output.get("output_type")
            if kind == "error" and not expects_error(cell):
                found.append(
                    f"cell {i}: unexpected error {output.get('ename')}: "
                    f"{output.get('evalue', '')[:100]}"
                )
            if kind == "stream" and output.get("name") == "stderr":
                found.append(f"cell {i}: a stderr output is saved (strip it)")
            match = MACHINE_PATH.search(output_text(output))
            if match:
                found.append(f"cell {i}: output shows a machine path ({match.group(0)}...)")
    return found


def mark_expected_errors(nb: Any) -> None:
    """Tag cells carrying ``# NBVAL_RAISES_EXCEPTION`` with ``raises-exception``: without the
    tag, nbclient and JupyterLab's Run All stop at the expected error."""
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code" and RAISES in source(cell):
            tags = cell.setdefault("metadata", {}).setdefault("tags", [])
            if "raises-exception" not in tags:
                tags.append("raises-exception")


def execute(path: Path, timeout: int = 1800, kernel_name: str = "python3") -> float:
    """Run one notebook in a fresh kernel (cwd: its folder), strip stderr, check, save.

    Returns the seconds it took. Raises ``RuntimeError`` (and saves nothing) when a cell
    fails unexpectedly or the result has hygiene problems.
    """
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError

    path = checks.path("path", path)
    checks.whole_number("timeout", timeout, 1, "seconds per cell", MAX_TIMEOUT)
    checks.text("kernel_name", kernel_name)
    if path.suffix != ".ipynb" or not path.is_file():
        raise ValueError(f"not a notebook file: {path}")
    nb = nbformat.read(path, as_version=4)
    wanted = nb.metadata.get("kernelspec", {}).get("name", kernel_name)
    if (
        wanted != kernel_name
    ):  # run on kernel_name, and say so: the saved notebook keeps its own kernelspec
        print(
            f"  note: {path.name} names kernel {wanted!r}; running it on {kernel_name!r}",
            file=sys.stderr,
            flush=True,
        )
    mark_expected_errors(nb)
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name=kernel_name,
        record_timing=False,
        resources={"metadata": {"path": str(path.parent.resolve())}},
    )
    start = time.perf_counter()
    try:
        # The kernel's own stderr (TensorFlow's C++ start-up lines) is not the notebook's output.
        client.execute(stderr=subprocess.DEVNULL)
    except Exception as exc:
        # nbclient answers Ctrl-C (SIGINT, or SIGTERM) by shutting the kernel down, then fails with
        # DeadKernelError and an AssertionError in its cleanup; its handler leaves this future
        # behind.
        if getattr(client, "_async_cleanup_kernel_future", None) is not None:
            raise KeyboardInterrupt(f"{path.name}: interrupted, nothing saved") from exc
        if isinstance(exc, CellTimeoutError):
            raise RuntimeError(
                f"{path.name}: a cell ran past the {timeout} s timeout, nothing saved"
            ) from exc
        if isinstance(exc, CellExecutionError):
            raise RuntimeError(f"{path.name}: a cell failed, nothing saved:\n{exc}") from exc
        raise
    seconds = time.perf_counter() - start
    strip_stderr(nb)
    scrub_error_paths(nb, str(Path(__file__).resolve().parent.parent))
    found = problems(nb)
    if found:
        raise RuntimeError(f"{path.name}: not saved:\n  " + "\n  ".join(found))
    fileio.atomic_write_text(path, nbformat.writes(nb) + "\n")
    return seconds


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; see the module docstring."""
    parser = argparse.ArgumentParser(prog="python -m helpers.nbtools")
    parser.add_argument("command", choices=["execute", "check"])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per cell")
    args = parser.parse_args(argv)
    if not 1 <= args.timeout <= MAX_TIMEOUT:
        parser.error(
            f"--timeout must be from 1 to {MAX_TIMEOUT} seconds per cell, got {args.timeout}"
        )
    failures = []
    for done, path in enumerate(
        args.notebooks
    ):  # every notebook is tried; the problems are reported at the end too
        try:
            if args.command == "execute":
                print(f"executing {path} ...", flush=True)
                print(f"  saved in {execute(path, timeout=args.timeout):.0f} s", flush=True)
                continue
            import nbformat

            found = problems(nbformat.read(path, as_version=4))
            failures += [f"{path}: {item}" for item in found]
            for item in found:
                print(f"{path}: {item}")
        except KeyboardInterrupt:  # Ctrl-C: stop here, and say what was and was not saved
            print(
                f"\ninterrupted (Ctrl-C or a stop signal) while running {path}: it was not saved; "
                f"{done} notebook(s) before it were handled, "
                f"{len(args.notebooks) - done - 1} not started",
                file=sys.stderr,
            )
            return 130
        except Exception as exc:  # noqa: BLE001 - one notebook's failure must not hide the others'
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            if not isinstance(exc, RuntimeError | ValueError):
                reason = f"{type(exc).__name__}: {reason}"
            failures.append(f"{path}: {reason}")
            print(
                f"  FAILED: {exc}" if args.command == "execute" else failures[-1], file=sys.stderr
            )
    if failures:
        print(
            f"{len(failures)} problem(s) in {len(args.notebooks)} notebook(s):\n  "
            + "\n  ".join(failures),
            file=sys.stderr,
        )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
