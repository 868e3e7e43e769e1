"""The lists kept by hand are complete: a new notebook or helper module cannot slip past a check
because someone forgot to add it to one (issue 36). Each test reads the files themselves."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from helpers import bench
from helpers.nbtools import source
from tests.test_lesson_pattern import TAUGHT

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
PACKAGES = sorted(
    p.name for p in (ROOT / "helpers" / "topics").iterdir() if p.is_dir() and p.name[0] != "_"
)
TOPICS = sorted(
    f"{p.parent.name}.{p.stem}" for p in (ROOT / "helpers" / "topics").glob("*/[a-z]*.py")
)


def markdown_of(name: str) -> str:
    cells = json.loads((ROOT / "notebooks" / name).read_text())["cells"]
    return "\n".join(source(c) for c in cells if c["cell_type"] == "markdown")


def test_there_is_something_to_check():
    assert len(NOTEBOOKS) >= 17 and len(TOPICS) >= 20 and len(PACKAGES) >= 17


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_notebook_lists_its_taught_calls(name):
    assert TAUGHT.get(name), (
        f"{name} has no entry in TAUGHT (tests/test_lesson_pattern.py): the calls it teaches"
    )


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_notebook_is_in_the_readme_and_the_start_here_map(name):
    number = name[:2]
    row = re.compile(rf"^\| {number} \| \[[^\]]+\]\((?:notebooks/)?{re.escape(name)}\) \|", re.M)
    assert row.search((ROOT / "README.md").read_text()), (
        f"README.md's notebook table has no row for {name}"
    )
    if number != "00":  # 00 names itself "(this one)"
        assert row.search(markdown_of("00_start_here.ipynb")), (
            f"notebook 00's map has no row for {name}"
        )


def test_every_notebook_has_one_helper_package_and_its_tests_found_by_its_name():
    """notebooks/NN_<slug>.ipynb -> helpers/topics/<slug>/ -> tests/topics/<slug>/; no package
    without a notebook, and none loose beside the packages."""
    slugs = {name.removesuffix(".ipynb")[3:] for name in NOTEBOOKS}
    assert set(PACKAGES) == slugs, (
        f"no helper package for {sorted(slugs - set(PACKAGES))}; "
        f"packages with no notebook: {sorted(set(PACKAGES) - slugs)}"
    )
    loose = sorted(p.name for p in (ROOT / "helpers" / "topics").glob("[a-z]*.py"))
    assert not loose, f"modules outside a notebook's package in helpers/topics/: {loose}"
    untested = [s for s in PACKAGES if not list((ROOT / "tests" / "topics" / s).glob("test_*.py"))]
    assert not untested, f"no tests/topics/<slug>/test_*.py for {untested}"
    strays = sorted(
        p.parent.name
        for p in (ROOT / "tests" / "topics").glob("*/test_*.py")
        if p.parent.name not in slugs
    )
    assert not strays, f"tests/topics/ folders with no notebook of that name: {strays}"


def test_every_topic_module_is_described_in_its_package_docstring():
    for name in TOPICS:
        slug, module = name.split(".")
        init = ROOT / "helpers" / "topics" / slug / "__init__.py"
        text = ast.get_docstring(ast.parse(init.read_text())) or ""
        assert f"``{module}``" in text, f"{init.relative_to(ROOT)} does not describe {module}"
        number = next(n[:2] for n in NOTEBOOKS if n[3:].removesuffix(".ipynb") == slug)
        assert text.startswith(f"Notebook {number}, ``notebooks/{number}_{slug}.ipynb``")


def test_the_bench_reads_every_module_that_registers_comparisons_and_ids_name_the_notebook():
    registering = [
        f"helpers.topics.{name}"
        for name in TOPICS
        if re.search(
            r"^BENCHMARKS\s*=",
            (ROOT / "helpers" / "topics" / (name.replace(".", "/") + ".py")).read_text(),
            re.M,
        )
    ]
    assert len(registering) >= 10, registering
    assert sorted(bench.TOPIC_MODULES) == sorted(registering)
    for comparison_id in bench.registry():
        slug = comparison_id.split(".")[0]
        assert slug in PACKAGES, f"{comparison_id} names no notebook"


def exercise_checks() -> set[str]:
    """The ``check_*`` functions the notebooks' exercise cells call."""
    found = set()
    for name in NOTEBOOKS:
        cells = json.loads((ROOT / "notebooks" / name).read_text())["cells"]
        for cell in cells:
            text = source(cell) if cell["cell_type"] == "code" else ""
            if "NBVAL_CHECK_OUTPUT" in text:
                found |= set(re.findall(r"\.(check_\w+)\(", text))
    return found


def grader_calls() -> dict[str, int]:
    """Per check name: how many test functions in tests/ call it, a parametrized one (a table of
    answers) counting as many."""
    calls: dict[str, int] = {}
    for path in (ROOT / "tests").rglob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.FunctionDef) and node.name.startswith("test_")):
                continue
            table = any("parametrize" in ast.unparse(d) for d in node.decorator_list)
            names = {
                n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
                for n in ast.walk(node)
                if isinstance(n, ast.Call)
            }
            # A grader run in a child program (notebook 13's needs logical devices) is named for
            # its check: test_check_mirrored_grader_table tries check_mirrored's table.
            named = re.findall(r"(check_\w+?)_grader", node.name)
            for check in {n for n in names if n.startswith("check_")} | set(named):
                calls[check] = calls.get(check, 0) + (2 if table or check in named else 1)
    return calls


def test_every_exercise_check_is_tried_as_a_grader():
    """A check a notebook's exercise calls is tried by tests with more than one answer (a
    parametrized table in tests/test_graders.py, or several tests): a new notebook's check
    cannot go untested."""
    checks, calls = exercise_checks(), grader_calls()
    assert len(checks) >= 20, checks
    untried = sorted(c for c in checks if calls.get(c, 0) < 2)
    assert not untried, f"no grader tries {untried} with several answers (tests/test_graders.py)"


def test_every_lesson_module_is_found_by_its_notebooks_name():
    from helpers import lessons

    stems = {name.removesuffix(".ipynb") for name in NOTEBOOKS}
    modules = sorted(p.stem for p in (ROOT / "helpers" / "lessons").glob("[a-z]*.py"))
    orphans = [m for m in modules if not any(stem[3:] == m for stem in stems)]
    assert not orphans, f"lesson modules with no notebook of that name: {orphans}"
    for stem in stems:
        if stem[3:] in modules:
            assert lessons.of(stem).__name__ == f"helpers.lessons.{stem[3:]}"
    with pytest.raises(
        ModuleNotFoundError, match="01_look_inside_graphs: no exported lesson module"
    ):
        lessons.of("01_look_inside_graphs")
