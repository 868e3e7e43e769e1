"""environment.yml and requirements.txt must name the same packages, and the test tools stay
out of a learner's install (offline checks)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def requirement_lines(text: str) -> set[str]:
    """Requirement specifiers, whitespace removed, comments and blank lines dropped."""
    return {
        re.sub(r"\s+", "", line)
        for line in text.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    }


def test_environment_yml_matches_requirements():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert env["name"] and env["channels"] == ["conda-forge"]
    deps = env["dependencies"]
    assert any(isinstance(d, str) and re.fullmatch(r"python=3\.1[0-3]", d) for d in deps)
    assert "pip" in deps
    pip_section = next(d["pip"] for d in deps if isinstance(d, dict) and "pip" in d)
    packages = {re.sub(r"\s+", "", p) for p in pip_section if not p.startswith("-e")}
    assert packages == requirement_lines((ROOT / "requirements.txt").read_text())
    assert "-e ." in pip_section


def test_every_environment_line_has_a_comment():
    for line in (ROOT / "environment.yml").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#") and not line.rstrip().endswith(":"):
            assert "#" in line, f"environment.yml line without a comment: {line!r}"


def test_pyproject_reads_requirements_and_ships_helpers():
    text = (ROOT / "pyproject.toml").read_text()
    assert 'dependencies = { file = ["requirements.txt"] }' in text
    assert 'optional-dependencies.test = { file = ["requirements-test.txt"] }' in text
    assert 'include = ["helpers", "helpers.*"]' in text


def test_test_tools_are_only_in_the_test_extra():
    runtime = {
        re.split(r"[~<>=]", r)[0]
        for r in requirement_lines((ROOT / "requirements.txt").read_text())
    }
    tools = {
        re.split(r"[~<>=]", r)[0]
        for r in requirement_lines((ROOT / "requirements-test.txt").read_text())
    }
    assert {"pytest", "playwright", "ruff", "nbval"} <= tools
    assert not runtime & tools, f"in both lists: {runtime & tools}"


def test_installed_package_has_every_helpers_subpackage():
    import helpers.datasets
    import helpers.lessons
    import helpers.topics
    import helpers.topics.tune_your_own_job

    for package in (helpers.datasets, helpers.lessons, helpers.topics):
        assert Path(package.__file__).parent.parent == ROOT / "helpers"
    assert Path(helpers.topics.tune_your_own_job.__file__).parent.parent == ROOT / "helpers/topics"


def test_core_pins():
    reqs = requirement_lines((ROOT / "requirements.txt").read_text())
    for pin in ("tensorflow~=2.21.0", "jupyterlab~=4.6", "ipywidgets~=8.1"):
        assert pin in reqs
    assert "nbval~=0.11.0" in requirement_lines((ROOT / "requirements-test.txt").read_text())


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    assert ci.rstrip().endswith("exec make test")
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and "make lab" in readme
