"""The bench result format (helpers/results.py) as ``bench --gather`` meets it: files from a room of
other people's machines, each untrusted. Any file either becomes a result whose numbers are finite
and ordered, or is skipped with one line that names the field; the rest of the room is gathered."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import results
from helpers.topics.compare_the_room import gather, gather_files
from tests import badinput  # noqa: F401  (loads the suite's Hypothesis profile)

ROOM = Path(__file__).resolve().parent.parent / "data" / "room-example"
GOOD = json.loads((ROOM / "xeon-2-cores" / "bench.json").read_text())

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
#: Where a participant's file can go wrong: (path into the result, as keys and list indices).
PLACES = [
    ("machine",),
    ("machine", "gpus"),
    ("machine", "cpu_features"),
    ("machine", "physical_cores"),
    ("machine", "cpu_model"),
    ("stamp",),
    ("workbook",),
    ("quick",),
    ("started",),
    ("ended",),
    ("load_at_start",),
    ("load_at_end",),
    ("comparisons",),
    ("comparisons", 0),
    ("comparisons", 0, "id"),
    ("comparisons", 0, "speedup"),
    ("comparisons", 0, "spread"),
    ("comparisons", 0, "spread", 0),
    ("comparisons", 0, "baseline_s"),
    ("comparisons", 0, "repeats"),
    ("comparisons", 0, "note"),
]


def write(folder: Path, name: str, data: object) -> Path:
    path = folder / name / "bench.json"
    path.parent.mkdir(parents=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def assert_usable(result: gather.Result) -> None:
    for record in result.records.values():
        low, high = record["spread"]
        assert (
            all(math.isfinite(v) and v > 0 for v in (record["speedup"], low, high)) and low <= high
        )


@settings(max_examples=150)  # no TensorFlow here: a file is read in about a millisecond
@given(place=st.sampled_from(PLACES), value=JSON | st.floats(), stamped=st.booleans())
def test_any_field_replaced_by_any_json_is_gathered_or_named(
    tmp_path_factory, place, value, stamped
):
    data = copy.deepcopy(GOOD)
    if not stamped:  # written before stamps existed: gather builds the stamp from "machine"
        del data["stamp"]
    target = data
    for key in place[:-1]:
        target = target[key]
    target[place[-1]] = value
    folder = tmp_path_factory.mktemp("room")
    path = write(folder, "mallory", json.dumps(data, allow_nan=True))
    write(folder, "alice", GOOD)
    try:
        assert_usable(gather_files.read(path, "mallory"))
    except ValueError as exc:  # skipped with a reason; nothing else may escape
        assert str(exc)
    found, notes = gather.load(folder)  # the good file is always gathered
    assert "alice" in [r.label for r in found]
    assert gather.markdown(found, notes)


@settings(max_examples=150)
@given(value=JSON)
def test_any_json_document_is_gathered_or_named(tmp_path_factory, value):
    path = tmp_path_factory.mktemp("one") / "bench.json"
    path.write_text(json.dumps(value, allow_nan=True))
    try:
        assert_usable(gather_files.read(path, "x"))
    except ValueError as exc:
        assert str(exc)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        (json.dumps({**GOOD, "machine": {"gpus": 3}}), "machine.gpus must be a list"),
        (
            json.dumps(GOOD).replace('"speedup": 5.', '"speedup": Infinity, "x": 5.', 1),
            "NaN and Infinity are refused",
        ),
        (
            json.dumps({**GOOD, "comparisons": [{**GOOD["comparisons"][0], "spread": [2.0, 1.0]}]}),
            "low <= high",
        ),
        (json.dumps({**GOOD, "comparisons": GOOD["comparisons"] * 2}), "appears more than once"),
        (
            json.dumps({**GOOD, "comparisons": [{**GOOD["comparisons"][0], "id": "x | y"}]}),
            ".id must be a comparison id",
        ),
        (" " * (results.MAX_BYTES + 1), "a bench result is at most"),
    ],
)
def test_the_issue_cases_are_skipped_with_the_field_named(tmp_path, text, words):
    """Each of these once stopped the whole gather (RecursionError, TypeError) or let a bad number
    into the room's table (infx; a machine both faster and slower)."""
    write(tmp_path, "alice", GOOD)
    write(tmp_path, "mallory", text)
    found, notes = gather.load(tmp_path)
    assert [r.label for r in found] == ["alice"]
    assert any(note.startswith("skipped mallory/bench.json") and words in note for note in notes), (
        notes
    )


def test_a_pipe_in_a_folder_name_does_not_split_the_table(tmp_path):
    write(tmp_path, "alice|bob", GOOD)
    write(tmp_path, "carol", GOOD)
    text = gather.markdown(*gather.load(tmp_path))
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert "alice\\|bob" in rows[0]
    assert {line.replace("\\|", "").count("|") for line in rows} == {
        4
    }  # comparison + 2 machines, every row


def test_the_shipped_room_and_the_writer_follow_the_format(tmp_path):
    for path in sorted(ROOM.glob("*/bench.json")):
        assert results.load(path)["comparisons"]
    assert results.cell("a|b\nc") == "a\\|b c"
