"""helpers.deadline: the one way a wait gets a deadline and names what it waits for (issue 35),
and a scan that no other module or notebook writes a wait of its own."""

from __future__ import annotations

import ast
import json
import math
import time
from pathlib import Path

import pytest
from IPython.core.inputtransformer2 import TransformerManager

from helpers import deadline

ROOT = Path(__file__).resolve().parents[1]


def test_a_deadline_counts_down_and_names_what_it_waited_for():
    clock = deadline.Deadline(0.3, "the dispatcher at 127.0.0.1:1")
    assert not clock.passed and 0.0 < clock.left() <= 0.3 and clock.left(0.05) == 0.05
    clock.pause(1.0)  # cut short at the deadline
    assert clock.passed and clock.left() == 0.0
    assert clock.message("Connection refused") == (
        "gave up after 0.3 s waiting for the dispatcher at 127.0.0.1:1 (Connection refused)"
    )


def test_until_returns_the_first_answer_zero_included():
    answers = iter([None, False, 0])
    assert deadline.until(lambda: next(answers), 5, "an answer", interval=0.001) == 0


def test_until_gives_up_at_its_deadline_naming_what():
    calls = []
    started = time.monotonic()
    with pytest.raises(
        deadline.WaitTimeout, match=r"^gave up after 0.2 s waiting for worker:0 to report step 60$"
    ):
        deadline.until(lambda: calls.append(1), 0.2, "worker:0 to report step 60", interval=0.05)
    assert 0.2 <= time.monotonic() - started < 2.0 and len(calls) >= 2
    assert issubclass(deadline.WaitTimeout, TimeoutError)


def test_until_lets_the_condition_stop_early():
    def exited():
        raise RuntimeError("worker:0 exited (code 1) before step 60")

    with pytest.raises(RuntimeError, match="exited"):
        deadline.until(exited, 60, "worker:0")


@pytest.mark.parametrize(
    "seconds,what,words",
    [
        (-1, "x", "seconds"),
        (math.nan, "x", "seconds"),
        (math.inf, "x", "seconds"),
        ("5", "x", "seconds"),
        (10**9, "x", "seconds"),
        (1, "", "what"),
        (1, None, "what"),
    ],
)
def test_bad_deadlines_are_refused_before_any_wait(seconds, what, words):
    with pytest.raises((TypeError, ValueError), match=words):
        deadline.Deadline(seconds, what)
    with pytest.raises((TypeError, ValueError), match=words):
        deadline.until(lambda: True, seconds, what)


def test_until_refuses_what_it_cannot_call_and_a_zero_interval():
    with pytest.raises(TypeError, match="ready must be a function"):
        deadline.until(True, 1, "x")
    with pytest.raises(ValueError, match="interval"):
        deadline.until(lambda: True, 1, "x", interval=0)


def _own_waits(source: str) -> list[str]:
    """``time.sleep(...)`` calls and ``time.monotonic() + ...`` sums in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and ast.unparse(node.func) in ("time.sleep", "sleep"):
            found.append(ast.unparse(node))
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Add)
            and "monotonic()" in ast.unparse(node.left)
        ):
            found.append(ast.unparse(node))
    return found


def _sources():
    # the test harness's own waits too (the browser's, the site's server), not the tests that
    # sleep on purpose to stand in for a hang
    scanned = ["helpers/**/*.py", "jobs/*.py", "tests/browser/*.py"]
    for path in sorted(p for pattern in scanned for p in ROOT.glob(pattern)):
        if path.name != "deadline.py":
            yield str(path.relative_to(ROOT)), path.read_text()
    for path in sorted(ROOT.glob("notebooks/*.ipynb")):
        for i, cell in enumerate(json.loads(path.read_text())["cells"]):
            if cell["cell_type"] == "code":
                code = TransformerManager().transform_cell(
                    "".join(cell["source"])
                )  # %magics to Python
                yield f"{path.name} cell {i}", code
                # the programs a cell writes to disk are strings: read them too
                for node in ast.walk(ast.parse(code)):
                    if (
                        isinstance(node, ast.Constant)
                        and isinstance(node.value, str)
                        and "import" in node.value
                    ):
                        try:
                            ast.parse(node.value)
                        except SyntaxError:
                            continue
                        yield f"{path.name} cell {i} (program)", node.value


def test_no_wait_is_written_by_hand_outside_the_deadline_module():
    sources = dict(_sources())
    assert len(sources) > 100 and any("program" in name for name in sources)
    found = {name: waits for name, source in sources.items() if (waits := _own_waits(source))}
    assert not found, f"write these waits with helpers.deadline (Deadline or until): {found}"


def test_the_scan_finds_a_hand_written_wait():
    assert set(
        _own_waits("import time\nends = time.monotonic() + 5\nwhile True:\n    time.sleep(0.1)\n")
    ) == {"time.sleep(0.1)", "time.monotonic() + 5"}
