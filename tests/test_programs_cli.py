"""Notebook 13's programs, run from a terminal as the notebook shows, refuse a bad option or a
missing TF_CONFIG with argparse's one line and exit 2, before TensorFlow loads: no traceback, no
exit 0 with a result row, no wait for a dispatcher where nothing listens. Hypothesis picks the
option and the bad value, so an option added to a program is fuzzed once it is listed here."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tests import badinput  # noqa: F401  (the suite's Hypothesis profile)

LESSON = Path(__file__).resolve().parent.parent / "helpers" / "lessons" / "distribute_training.py"
#: The programs' sources, read without importing the lesson module (which imports TensorFlow).
SOURCES = {
    node.targets[0].id: ast.literal_eval(node.value)
    for node in ast.parse(LESSON.read_text()).body
    if isinstance(node, ast.Assign)
    and isinstance(node.targets[0], ast.Name)
    and node.targets[0].id.isupper()
    and isinstance(node.value, ast.Constant)
    and isinstance(node.value.value, str)
}
CONFIG = {"cluster": {"worker": ["127.0.0.1:1"]}, "task": {"type": "worker", "index": 0}}
SERVICE = {
    "cluster": {"dispatcher": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]},
    "task": {"type": "worker", "index": 0},
}
#: program -> (valid arguments, TF_CONFIG); each option below replaces its valid value.
VALID = {
    "MWMS_WORKER": (["--steps", "5", "--checkpoints", "{tmp}/ckpt"], CONFIG),
    "PS_PROGRAM": (["--steps", "5"], CONFIG),
    "DATA_SERVICE_SERVER": ([], SERVICE),
    "DATA_SERVICE_TRAINER": (["--start-timeout", "2"], None),
    # Any existing file passes the program's own check (records are read only after TensorFlow
    # loads): its own source.
    "SHARDING_WORKER": (["{tmp}/sharding_worker.py"], None),
}
WHOLE = [
    ("MWMS_WORKER", "--steps"),
    ("MWMS_WORKER", "--batch"),
    ("MWMS_WORKER", "--every"),
    ("PS_PROGRAM", "--steps"),
    ("PS_PROGRAM", "--batch"),
    ("DATA_SERVICE_TRAINER", "--examples"),
    ("DATA_SERVICE_TRAINER", "--repeats"),
    ("SHARDING_WORKER", "--batch"),
]
OTHER = [
    ("MWMS_WORKER", "--start-timeout"),
    ("PS_PROGRAM", "--start-timeout"),
    ("DATA_SERVICE_TRAINER", "--cpus"),
    ("DATA_SERVICE_SERVER", "--cpus"),
    ("DATA_SERVICE_TRAINER", "--service"),
    ("DATA_SERVICE_TRAINER", "--start-timeout"),
    ("DATA_SERVICE_SERVER", "--start-timeout"),
]
BAD = st.sampled_from(
    [
        "0",
        "-5",
        "x",
        "1.5",
        "nan",
        "inf",
        "-inf",
        "1e400",
        "99999",
        "0,x",
        "grpc://127.0.0.1:1",
        "127.0.0.1",
    ]
) | st.text(max_size=6)


def valid(option: str, value: str) -> bool:
    """Whether ``value`` is one the program should accept (then it would start TensorFlow)."""
    text = value.strip()
    if option == "--start-timeout":
        try:
            return 0 < float(text) < float("inf")
        except ValueError:
            return False
    if option == "--cpus":
        return text == "" or all(
            p.strip().isdigit() and int(p) in os.sched_getaffinity(0) for p in text.split(",")
        )
    if (
        option == "--service"
    ):  # a well-formed address passes the parser and is waited for (tested below)
        host, _, port = text.removeprefix("grpc://").rpartition(":")
        return text == "" or (bool(host) and port.isdigit() and 1 <= int(port) <= 65535)
    return text.lstrip("+").isdigit() and int(text) >= 1


def run(
    program: str, args: list[str], config: dict | None, folder: Path
) -> subprocess.CompletedProcess[str]:
    path = folder / f"{program.lower()}.py"
    path.write_text(SOURCES[program])
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    if config is not None:
        env["TF_CONFIG"] = json.dumps(config)
    return subprocess.run(
        [sys.executable, str(path), *args], env=env, capture_output=True, text=True, timeout=60
    )


def assert_refused(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stdout[-500:], done.stderr[-1500:])
    assert "Traceback" not in done.stderr and done.stdout == "", done.stderr[-1500:]
    assert all(word in done.stderr for word in words), done.stderr[-1500:]


@settings(max_examples=25)
@given(option=st.sampled_from(WHOLE + OTHER), value=BAD)
def test_a_bad_option_is_one_line_and_exit_2(tmp_path_factory, option, value):
    program, flag = option
    assume(not valid(flag, value))
    folder = tmp_path_factory.mktemp("cli")
    args, config = VALID[program]
    args = [a.format(tmp=folder) for a in args]
    args = args[: args.index(flag)] + args[args.index(flag) + 2 :] if flag in args else args
    assert_refused(run(program, [*args, f"{flag}={value}"], config, folder), flag)


#: Options with a test of their own instead of the fuzzing (a folder: which values are bad depends
#: on the disk).
OWN_TEST = {("MWMS_WORKER", "--checkpoints"): "test_checkpoints_naming_a_file_is_refused"}


def test_every_option_that_takes_a_value_is_fuzzed():
    # A new option is a new way to pass a bad value: it must be in WHOLE or OTHER (or have a test of
    # its own).
    options = {
        (program, flag)
        for program in VALID
        for flag, rest in re.findall(r'add_argument\(\s*"(--[\w-]+)"([^\n]*)', SOURCES[program])
        if "store_true" not in rest
    }
    assert len(options) >= 15, "the pattern no longer finds the programs' options"
    assert options <= set(WHOLE + OTHER) | set(OWN_TEST), (
        f"options not fuzzed: {sorted(options - set(WHOLE + OTHER) - set(OWN_TEST))}"
    )
    assert all(name in globals() for name in OWN_TEST.values())


@pytest.mark.parametrize(
    "program, flag, value",
    [
        ("MWMS_WORKER", "--steps", "0"),
        ("MWMS_WORKER", "--every", "0"),
        ("MWMS_WORKER", "--start-timeout", "-1"),
        ("PS_PROGRAM", "--start-timeout", "-1"),
        ("DATA_SERVICE_TRAINER", "--examples", "-5"),
    ],
)
def test_the_options_issue_35_found_are_refused(tmp_path, program, flag, value):
    args, config = VALID[program]
    args = [a.format(tmp=tmp_path) for a in args]
    args = args[: args.index(flag)] + args[args.index(flag) + 2 :] if flag in args else args
    assert_refused(run(program, [*args, flag, value], config, tmp_path), flag)


@pytest.mark.parametrize("program", ["PS_PROGRAM", "DATA_SERVICE_SERVER", "MWMS_WORKER"])
def test_no_tf_config_is_one_line_and_exit_2(tmp_path, program):
    args = [a.format(tmp=tmp_path) for a in VALID[program][0]]
    assert_refused(run(program, args, None, tmp_path), "TF_CONFIG")


def test_checkpoints_naming_a_file_is_refused(tmp_path):
    (tmp_path / "file").write_text("")
    assert_refused(
        run(
            "MWMS_WORKER",
            ["--steps", "5", "--checkpoints", str(tmp_path / "file")],
            CONFIG,
            tmp_path,
        ),
        "--checkpoints",
        "is a file, not a folder",
    )


def test_the_sharding_worker_refuses_a_missing_file_and_no_files(tmp_path):
    assert_refused(
        run("SHARDING_WORKER", [str(tmp_path / "missing.tfrecord")], None, tmp_path),
        "no such files",
        "missing.tfrecord",
    )
    assert_refused(run("SHARDING_WORKER", [], None, tmp_path), "files")


@pytest.mark.parametrize("program", ["DATA_SERVICE_SERVER", "DATA_SERVICE_TRAINER"])
def test_a_dispatcher_that_never_answers_ends_the_program_at_its_deadline(tmp_path, program):
    """Nothing listens at 127.0.0.1:1: the service worker and the trainer wait --start-timeout
    seconds for it (a dispatcher may start later), then print one line and exit 1."""
    args = ["--start-timeout", "1"] + (
        ["--service", "grpc://127.0.0.1:1"] if program == "DATA_SERVICE_TRAINER" else []
    )
    done = run(program, args, SERVICE if program == "DATA_SERVICE_SERVER" else None, tmp_path)
    assert done.returncode == 1, (done.returncode, done.stderr[-1500:])
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert (
        "gave up after 1 s waiting for the dispatcher" in done.stderr
        and "127.0.0.1:1" in done.stderr
    )


@pytest.mark.parametrize(
    "config, words",
    [
        (
            {"cluster": {"worker": ["127.0.0.1:2"]}, "task": {"type": "worker", "index": 0}},
            'one "dispatcher"',
        ),
        ({**SERVICE, "task": {"type": "worker", "index": 3}}, '"index"'),
        (
            {
                "cluster": {"dispatcher": ["127.0.0.1:1"], "chief": ["127.0.0.1:2"]},
                "task": {"type": "chief", "index": 0},
            },
            'one "dispatcher"',
        ),
    ],
)
def test_the_service_server_refuses_a_tf_config_it_cannot_serve(tmp_path, config, words):
    done = run("DATA_SERVICE_SERVER", [], config, tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr and words in done.stderr, (
        done.stderr[-1500:]
    )


# --- Every program a notebook writes, found in the notebooks (issue 35) ---------------------------


def notebook_programs() -> dict[str, str]:
    """Every program a notebook cell holds as an UPPERCASE string constant and that reads its
    command line (argparse or sys.argv), exported or not: name -> source."""
    import nbformat
    from IPython.core.inputtransformer2 import TransformerManager

    found = {}
    for path in sorted((LESSON.parents[2] / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        for cell in nbformat.read(path, 4).cells:
            if cell.cell_type != "code":
                continue
            for node in ast.walk(ast.parse(TransformerManager().transform_cell(cell.source))):
                if (
                    isinstance(node, ast.Assign)
                    and isinstance(node.targets[0], ast.Name)
                    and node.targets[0].id.isupper()
                    and isinstance(node.value, ast.Constant)
                    and isinstance(node.value.value, str)
                    and ("argparse" in node.value.value or "sys.argv" in node.value.value)
                ):
                    found[node.targets[0].id] = node.value.value
    return found


PROGRAMS = notebook_programs()
#: program -> (positional arguments by name, in order; valid options; TF_CONFIG). "{tmp}" is the
#: run's folder, which holds job.py and shard.tfrecord.
CALLS = {
    **{
        name: (
            {"files": "{tmp}/shard.tfrecord"} if name == "SHARDING_WORKER" else {},
            [a for a in args if not a.endswith("sharding_worker.py")],
            config,
        )
        for name, (args, config) in VALID.items()
    },
    "EMBEDDING_CHILD": ({"mib": "4", "ops": "5"}, [], None),
    "SHUFFLE_MEMORY": ({"shards": "{tmp}/shard.tfrecord"}, ["--order", "decode-first"], None),
    "CPU_CHILD": ({}, ["--workloads", "matmul"], None),
    "PRECISION_CHILD": ({}, ["--policy", "float32"], None),
    "CAPSTONE_CHILD": ({}, ["--stage", "0", "--shards", "{tmp}", "--images", "64"], None),
    "TRIAL_PROGRAM": ({"job": "{tmp}/job.py"}, [], None),
}
#: Programs whose command line is one path, checked by hand in the program (no argparse).
BY_HAND = {
    "FPMATH_CHECK": "usage: python fpmath_check.py OUT.npz",
    "GRAPPLER_REWRITE": "usage: python grappler_rewrite.py",
}
ARGUMENT = re.compile(r'add_argument\(\s*"([\w-]+)"((?:[^()\n]|\([^()\n]*\))*)\)')
#: (program, argument) for every argument with a type= or choices=: these bad values fit none of
#: them.
TYPED = sorted(
    (name, arg)
    for name, src in PROGRAMS.items()
    for arg, rest in ARGUMENT.findall(src)
    if "type=" in rest or "choices=" in rest
)
NO_ARGUMENT_TAKES = [
    "-5",
    "x",
    "nan",
    "inf",
    "1e400",
    "",
    " ",
    "-1e9",
    "0x10",
    "99999999999999999999",
]


def call(program: str, folder: Path, target: str | None = None, value: str = "") -> list[str]:
    """The program's valid command line, with ``target`` (an option or a positional) given
    ``value``."""
    positionals, options, _ = CALLS[program]
    options = [a.format(tmp=folder) for a in options]
    positionals = {k: v.format(tmp=folder) for k, v in positionals.items()}
    if target in positionals:
        positionals[target] = value
    elif target is not None:
        options = (
            options[: options.index(target)] + options[options.index(target) + 2 :]
            if target in options
            else options
        )
        options.append(f"{target}={value}")
    return [*options, *positionals.values()]


def start(program: str, args: list[str], folder: Path) -> subprocess.CompletedProcess[str]:
    path = folder / f"{program.lower()}.py"
    path.write_text(PROGRAMS[program])
    (folder / "job.py").write_text("")
    (folder / "shard.tfrecord").write_bytes(b"")
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    if CALLS.get(program, (None, None, None))[2] is not None:
        env["TF_CONFIG"] = json.dumps(CALLS[program][2])
    return subprocess.run(
        [sys.executable, str(path), *args],
        env=env,
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_every_notebook_program_is_found_and_has_a_valid_call():
    # A program added to a notebook is fuzzed below once it has a valid call here (or a check by
    # hand).
    assert {"MWMS_WORKER", "CPU_CHILD", "TRIAL_PROGRAM", "SHUFFLE_MEMORY", "FPMATH_CHECK"} <= set(
        PROGRAMS
    )
    assert set(PROGRAMS) == set(CALLS) | set(BY_HAND), (
        f"no valid call for {sorted(set(PROGRAMS) - set(CALLS) - set(BY_HAND))}"
    )
    assert (
        len(TYPED) >= 30
        and ("EMBEDDING_CHILD", "ops") in TYPED
        and ("CAPSTONE_CHILD", "--shards") in TYPED
    )


@settings(max_examples=40)
@given(target=st.sampled_from(TYPED), value=st.sampled_from(NO_ARGUMENT_TAKES))
def test_a_bad_argument_to_any_notebook_program_is_refused_before_tensorflow_loads(
    tmp_path_factory, target, value
):
    program, argument = target
    folder = tmp_path_factory.mktemp("prog")
    done = start(program, call(program, folder, argument, value), folder)
    assert done.returncode == 2, (program, argument, value, done.returncode, done.stderr[-1500:])
    assert "Traceback" not in done.stderr and done.stdout == "", done.stderr[-1500:]
    # an option is named; a bad positional (argparse may read "-5" as an unknown option) gets the
    # usage line
    assert (argument if argument.startswith("--") else "usage:") in done.stderr, done.stderr[-800:]


@pytest.mark.parametrize(
    "program, args, words",
    [
        (
            "EMBEDDING_CHILD",
            ["1024", "10000"],
            "would need about",
        ),  # the graphs' memory, checked before allocating
        (
            "CAPSTONE_CHILD",
            ["--stage", "0", "--shards", "{tmp}/empty", "--images", "64"],
            "no such folder",
        ),
        ("TRIAL_PROGRAM", ["{tmp}/job.py", "--settings", "[1, 2]"], "must be a JSON object"),
        ("TRIAL_PROGRAM", ["{tmp}/missing.py"], "no such file"),
        ("SHUFFLE_MEMORY", ["--order", "decode-first", "{tmp}/missing.tfrecord"], "no such file"),
        ("FPMATH_CHECK", [], "usage: python fpmath_check.py OUT.npz"),
        ("GRAPPLER_REWRITE", [], "usage: python grappler_rewrite.py"),
        ("GRAPPLER_REWRITE", ["auto_mixed_precision_typo"], "usage: python grappler_rewrite.py"),
    ],
)
def test_notebook_programs_refuse_what_they_cannot_do_in_one_line(tmp_path, program, args, words):
    done = start(program, [a.format(tmp=tmp_path) for a in args], tmp_path)
    assert done.returncode != 0 and "Traceback" not in done.stderr and words in done.stderr, (
        done.stderr[-1500:]
    )


@pytest.mark.parametrize(
    "program, args, words",
    [
        ("CPU_CHILD", ["--workloads", "matmul,typo"], "names a workload not in"),
        (
            "CAPSTONE_CHILD",
            ["--stage", "99", "--shards", "{tmp}", "--images", "64"],
            "--stage: must be from 0 to",
        ),
    ],
)
def test_checks_that_need_the_lesson_code_come_right_after_tensorflow_loads(
    tmp_path, program, args, words
):
    done = start(program, [a.format(tmp=tmp_path) for a in args], tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr and words in done.stderr, (
        done.stderr[-1500:]
    )
