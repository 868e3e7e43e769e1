"""helpers.cli's argparse types, one row per input: what each accepts (and returns) and what it
refuses, with the words of argparse's error line. The programs that use them are fuzzed through
their command lines in test_programs_cli.py; this is the table for the types themselves."""

from __future__ import annotations

import argparse

import pytest

from helpers import cli

OK, NO = "ok", "no"
ROWS = [
    # (type, text, OK and the value, or NO and words of the message)
    ("whole", "3", OK, 3),
    ("whole", " 7", OK, 7),
    ("whole", "0", NO, "at least 1, got 0"),
    ("whole", "-5", NO, "at least 1"),
    ("whole", "3.0", NO, "a whole number, got '3.0'"),
    ("whole", "many", NO, "a whole number, got 'many'"),
    ("whole", "", NO, "a whole number, got ''"),
    ("whole", "nan", NO, "a whole number"),
    ("whole", str(10**20), NO, "at most"),
    ("number", "0.5", OK, 0.5),
    ("number", "10", OK, 10.0),
    ("number", "0", NO, "above 0"),
    ("number", "nan", NO, "a finite number"),
    ("number", "inf", NO, "a finite number"),
    ("number", "1e400", NO, "a finite number"),
    ("number", "11", NO, "at most 10"),
    ("number", "x", NO, "must be a number, got 'x'"),
    ("seconds", "2.5", OK, 2.5),
    ("seconds", "86400", OK, 86400.0),
    ("seconds", "0", NO, "above 0"),
    ("seconds", "-1", NO, "above 0"),
    ("seconds", "86401", NO, "at most a day"),
    ("seconds", "nan", NO, "a number of seconds above 0"),
    ("seconds", "soon", NO, "a number of seconds, got 'soon'"),
    ("json_object", '{"jit_compile": true}', OK, {"jit_compile": True}),
    ("json_object", "{}", OK, {}),
    ("json_object", "[1, 2]", NO, "must be a JSON object such as"),
    ("json_object", '"text"', NO, "must be a JSON object such as"),
    ("json_object", "{jit_compile: true}", NO, "must be a JSON object, Expecting property name"),
    ("json_object", '{"batch": NaN}', NO, "NaN and Infinity are not JSON"),
    ("json_object", '{"batch": Infinity}', NO, "NaN and Infinity are not JSON"),
    ("json_object", "", NO, "must be a JSON object, Expecting value at character 0"),
    ("host_port", "127.0.0.1:5000", OK, ("127.0.0.1", 5000)),
    ("host_port", "grpc://localhost:5000", OK, ("localhost", 5000)),
    ("host_port", "localhost:0", NO, "a port from 1 to 65535"),
    ("host_port", "localhost:65536", NO, "a port from 1 to 65535"),
    ("host_port", ":5000", NO, 'must be "grpc://host:port"'),
    ("host_port", "localhost", NO, 'must be "grpc://host:port"'),
    ("host_port", "localhost:http", NO, 'must be "grpc://host:port"'),
]
TYPES = {
    "whole": cli.whole(1),
    "number": cli.number(0.0, 10.0),
    "seconds": cli.seconds,
    "json_object": cli.json_object,
    "host_port": cli.host_port,
}


@pytest.mark.parametrize(
    ("kind", "text", "outcome", "want"), ROWS, ids=[f"{r[0]}:{r[1]!r}" for r in ROWS]
)
def test_each_type_accepts_and_refuses(kind, text, outcome, want):
    parse = TYPES[kind]
    if outcome == OK:
        assert parse(text) == want
    else:
        with pytest.raises(argparse.ArgumentTypeError, match=None) as info:
            parse(text)
        assert want in str(info.value), str(info.value)


def test_every_type_has_rows():
    """A type added to helpers.cli without rows here fails."""
    public = {
        name
        for name, obj in vars(cli).items()
        if callable(obj) and not name.startswith("_") and obj.__module__ == "helpers.cli"
    }
    assert public == set(TYPES) | {"folder", "existing_folder", "existing_file"}


def test_paths(tmp_path):
    afile = tmp_path / "a.txt"
    afile.write_text("x")
    assert cli.folder(str(tmp_path / "not-yet")) == str(tmp_path / "not-yet")
    assert cli.existing_folder(str(tmp_path)) == str(tmp_path)
    assert cli.existing_file(str(afile)) == str(afile)
    for parse, text, words in [
        (cli.folder, str(afile), "is a file, not a folder"),
        (cli.folder, "  ", "must name a folder, got an empty string"),
        (cli.existing_folder, str(tmp_path / "missing"), "no such folder"),
        (cli.existing_folder, str(afile), "is a file, not a folder"),
        (cli.existing_file, str(tmp_path), "no such file"),
        (cli.existing_file, str(tmp_path / "missing.txt"), "no such file"),
        (cli.existing_file, "", "no such file"),
    ]:
        with pytest.raises(argparse.ArgumentTypeError) as info:
            parse(text)
        assert words in str(info.value), (parse.__name__, text, str(info.value))


def test_limits_of_the_factories_are_checked():
    with pytest.raises(ValueError, match="minimum must be below maximum"):
        cli.number(5.0, 1.0)
    with pytest.raises((ValueError, TypeError), match="minimum"):
        cli.whole(-1)
