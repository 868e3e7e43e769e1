"""Every public helper a learner calls refuses bad numbers and flags clearly (issue 20).

The suite finds its targets itself: each public function or class of the modules below whose
parameters are annotated ``int``, ``float`` or ``bool`` (optionally ``| None``). Hypothesis feeds
each such parameter wrong types, negative, huge and non-finite values (and, for a flag, the strings
a learner means as booleans), the other parameters left at their defaults or given a small valid
value, and every call must fail fast with a ``TypeError`` / ``ValueError`` (or the module's own
error) whose message names the parameter. A new helper is covered the day it is written; one that
should not be, goes in ``EXEMPT`` with the reason.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests import badinput

HELPERS = Path(__file__).resolve().parent.parent / "helpers"

#: Modules whose arguments this suite does not fuzz, each with where its bad input is tested instead
#: or why it has none a learner gives. Every other module of helpers/ (its packages included) and
#: the exported lesson code (helpers/lessons/) is fuzzed: a new module is covered the day it is
#: written.
NOT_FUZZED = {
    "helpers.datasets.cifar": "tests/test_bad_input_data.py (numbers, archives, pickles, folders)",
    "helpers.topics.pack_files_into_shards.tfrecords": (
        "tests/test_bad_input_data.py (numbers, shards, manifests)"
    ),
    "helpers.topics.pack_files_into_shards.shard_reading": (
        "tests/test_bad_input_data.py (numbers, the readers' inputs)"
    ),
    "helpers.datasets.cifar_download": "tests/test_bad_input_data.py (md5_of, download)",
    "helpers.topics.pack_files_into_shards.tfrecords_manifest": (
        "tests/test_bad_input_data.py (manifests)"
    ),
    "helpers.topics.pack_files_into_shards.shard_reading_summaries": (
        "tests/test_bad_input_data.py (readers)"
    ),
    "helpers.checks": (
        "the argument checks themselves (their limits are the caller's); tests/test_checks.py"
    ),
}


def modules() -> list[str]:
    """Every helpers module (plumbing, topics, exported lessons) except ``NOT_FUZZED``."""
    found = [f"helpers.{p.stem}" for p in HELPERS.glob("[a-z]*.py")]
    found += [
        "helpers." + ".".join(p.relative_to(HELPERS).with_suffix("").parts)
        for folder in ("topics", "datasets", "lessons")
        for p in (HELPERS / folder).rglob("[a-z]*.py")
    ]
    return sorted(set(found) - set(NOT_FUZZED))


MODULES = modules()

#: Parameters deliberately left out, with the reason.
EXEMPT = {
    "helpers.timing_stats.Timing": "a record the timing functions build, not called by learners",
    "helpers.topics.tune_your_own_job.tuning_trials.Outcome": (
        "a record run_trials fills, not called by learners"
    ),
    "helpers.timing_stats.format_seconds": "formats any number for display (inf and nan as such)",
    "helpers.verdicts.outcome": (
        "reads the ratios that verdict and the topic reports compute from timings "
        "(verdict checks them first); a learner calls verdict"
    ),
    "helpers.timing.rotated:round_index": (
        "any whole number is a valid round; it is taken modulo the length"
    ),
    "helpers.widgets.set_title": "layout plumbing the widgets call",
    "helpers.topics.keep_arrays_out_of_graphs.memory_guard.guard": (
        "the guard itself; its callers' arguments are checked"
    ),
    "helpers.procs.ChildResult": "a record procs.run fills, not called by learners",
    "helpers.cluster.TaskResult": "a record cluster.run fills, not called by learners",
    "helpers.exercises.Feedback": "a grader's answer, built by correct() and not_yet()",
    "helpers.topics.compare_the_room.gather_files.Result": (
        "a record read() builds from a checked file (results.py)"
    ),
    "helpers.bench.run_all": (
        "called by bench.main with its parsed flags; "
        "the command line is tested in test_bad_input_procs"
    ),
    "helpers.lessons.pack_files_into_shards.ArraysOnly:fix_imports": (
        "pickle.Unpickler's own keyword, checked by pickle"
    ),
    "helpers.lessons.profile_and_tune_a_job.FusedBatchNorm": (
        "keeps keras.layers.BatchNormalization's momentum and epsilon, which both convert with "
        "float() and check no range (14 builds it with the defaults)"
    ),
    "helpers.lessons.choose_rnn_kernels.LayerNormLSTMCell": (
        "keeps keras.layers.LSTMCell's constructor: its arguments "
        "are Keras' to check (09 passes only units)"
    ),
}

SCALAR = re.compile(r"(int|float|bool)( \| None)?")
#: Names that count something: a required, unannotated parameter of lesson code with one of them
#: is a whole number.
COUNTS = {
    "steps",
    "n_ops",
    "batch",
    "batch_size",
    "epochs",
    "repeats",
    "units",
    "features",
    "examples",
    "global_batch",
    "n_images",
}

#: A small valid value for required parameters that are not numbers (the numbers are checked
#: before these are used, so most are never touched).
REQUIRED: dict[str, Any] = {
    "fn": lambda: 1,
    "variants": {"a": lambda: 1},
    "make_variants": lambda: {"a": lambda: 1},
    "text": "",
    "ax": None,
    "title": "t",
    "what": "a demo",
    "kind": "function",
    "workdir": "/tmp",
    "graph": None,
    "array": np.zeros(4, np.float32),
    "table": None,
    "dataset": None,
    "shards": ["x.tfrecord"],
    "make": None,
    "model": None,
    "x": np.zeros((4, 28, 28, 1), np.float32),
    "y": np.zeros(4, np.int64),
    "content": b"",
    "contents": {},
    "image": None,
    "models": {},
    "policy": "float32",
    "setting": None,
    "settings": {},
    "workloads": ["matmul"],
    "workload": "matmul",
    "trainer_file": "t.py",
    "server_file": "s.py",
    "logdir": "/tmp",
    "devices": ["/cpu:0"],
    "roles": {"worker": 1},
    "command": ["true"],
    "running": None,
    "task": "worker:0",
    "programs": {},
    "x_test": None,
    "y_test": None,
    "out_dir": "/tmp/none",
    "waiting_for": "the other workers",
    "address": "127.0.0.1:1",
    "n_images": 8,
    "decoded": None,
    "records": None,
    "paths": ["x.tfrecord"],
    "layouts": {},
    "spec": {"worker": ["127.0.0.1:1"]},
    "args": ["true"],
    "path": "none.ipynb",
    "labels": [0, 1],
    "images": np.zeros((2, 4, 4, 3), np.uint8),
    "before": set(),
    "processes": [],
    "task_type": "worker",
    "id": "fake.case",
}


def targets() -> list[tuple[str, Any, str, str]]:
    found = []
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for name, obj in vars(module).items():
            qual = f"{module_name}.{name}"
            if (
                name.startswith("_")
                or getattr(obj, "__module__", "") != module_name
                or not callable(obj)
            ):
                continue
            if qual in EXEMPT or isinstance(obj, type) and issubclass(obj, BaseException):
                continue
            try:
                signature = inspect.signature(obj)
            except (TypeError, ValueError):
                continue
            for param in signature.parameters.values():
                annotation = str(param.annotation)
                if param.annotation is inspect.Parameter.empty and type(param.default) in (
                    int,
                    float,
                    bool,
                ):
                    annotation = type(
                        param.default
                    ).__name__  # lesson code: the default says the kind
                elif (
                    param.annotation is inspect.Parameter.empty
                    and param.default is inspect.Parameter.empty
                    and module_name.startswith("helpers.lessons.")
                    and param.name in COUNTS
                ):
                    annotation = (
                        "int"  # lesson code without annotations or default: the name says it counts
                    )
                if SCALAR.fullmatch(annotation) and f"{qual}:{param.name}" not in EXEMPT:
                    found.append((qual, obj, param.name, annotation))
    return found


TARGETS = targets()


def bad_values(annotation: str) -> st.SearchStrategy[Any]:
    kind, optional = annotation.split(" ")[0], annotation.endswith("None")
    none = st.nothing() if optional else st.none()
    if kind == "bool":
        return st.one_of(
            st.sampled_from(["off", "no", "False", "True", "on", "", 0, 1, 1.0, []]), none
        )
    if kind == "int":
        return st.one_of(
            st.integers(max_value=-1, min_value=-(10**15)),
            st.integers(min_value=10**16, max_value=10**30),
            st.floats(allow_nan=True).filter(lambda v: v != int(v) if np.isfinite(v) else True),
            st.sampled_from(["3", "", b"1", [1], True, False]),
            none,
        )
    return st.one_of(
        st.floats(max_value=-1e-9, min_value=-1e15),
        st.sampled_from([float("nan"), float("inf"), -float("inf"), 1e300]),
        st.sampled_from(["1", b"1", [1.0], True]),
        none,
    )


def call(obj: Any, param: str, value: Any) -> Any:
    signature = inspect.signature(obj)
    kwargs = {}
    for p in signature.parameters.values():
        if p.name == param:
            kwargs[p.name] = value
        elif p.default is inspect.Parameter.empty and p.kind not in (
            p.VAR_POSITIONAL,
            p.VAR_KEYWORD,
        ):
            kind = (
                "int"
                if p.annotation is inspect.Parameter.empty and p.name in COUNTS
                else str(p.annotation).split(" ")[0]
            )
            kwargs[p.name] = {"int": 1, "float": 1.0, "bool": False}.get(kind, REQUIRED.get(p.name))
    return obj(**kwargs)


@pytest.mark.parametrize(
    ("qual", "obj", "param", "annotation"), TARGETS, ids=[f"{q}:{p}" for q, _, p, _ in TARGETS]
)
def test_numbers_and_flags_are_refused_clearly(qual, obj, param, annotation):
    errors = tuple(
        v
        for v in vars(importlib.import_module(obj.__module__)).values()
        if isinstance(v, type) and issubclass(v, Exception) and v.__module__ == obj.__module__
    )

    @given(bad_values(annotation))
    def each(value):
        badinput.refused(qual, param, lambda: call(obj, param, value), value, errors, seconds=8)

    each()


def test_the_suite_finds_what_it_should():
    """The targets are found from the annotations: a helper that stops annotating would drop out."""
    names = {f"{q}:{p}" for q, _, p, _ in TARGETS}
    assert len(TARGETS) >= 150
    for expected in (
        "helpers.topics.tune_the_cpu.cputune_settings.Setting:onednn",
        "helpers.topics.tune_input_pipeline.pipelines.Options:prefetch",
        "helpers.timing.measure:min_time",
        "helpers.env.setup_logical_devices:n",
        "helpers.topics.keep_arrays_out_of_graphs.memory.embedding_experiment:mib",
        "helpers.topics.profile_and_tune_a_job.capstone.run_stages:epochs",
        "helpers.lessons.start_here.eager_vs_function:n_ops",
        "helpers.lessons.profile_and_tune_a_job.make_train_step:learning_rate",
    ):
        assert expected in names
