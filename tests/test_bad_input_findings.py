"""The findings of issue 20 in the modules the generic suite covers, one test each: the memory
guard refuses before it allocates, strings are not taken as booleans, an endless count is refused
in time, and one path given as a string is not split into characters."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import checks, env, timing
from helpers.topics.keep_arrays_out_of_graphs import memory, memory_guard
from helpers.topics.profile_and_tune_a_job import capstone
from helpers.topics.quantize_for_inference import quant
from helpers.topics.tune_input_pipeline import pipelines
from helpers.topics.tune_the_cpu import cputune
from tests import badinput


def test_the_memory_guard_refuses_before_allocating(monkeypatch):
    """The old code made the array first (2.1 GB for mib=2048) and guarded after."""

    def no_allocation(*args, **kwargs):
        raise AssertionError("an array was allocated before the guard refused")

    monkeypatch.setattr(np.random, "default_rng", no_allocation)
    monkeypatch.setattr(memory_guard, "available_bytes", lambda: 2**30)  # a 1 GiB machine
    with pytest.raises(memory.MemoryGuardError, match=r"make_array\(mib=2048\)"):
        memory.make_array(2048)
    with pytest.raises(
        memory.MemoryGuardError, match=r"embedding_experiment\(mib=2048, n_ops=20\)"
    ):
        memory.embedding_experiment(mib=2048, n_ops=20)
    with pytest.raises(
        ValueError, match="mib must be a size in MiB"
    ):  # beyond any machine: refused by size
        memory.embedding_experiment(mib=10**12)


@pytest.mark.parametrize("text", ["off", "no", "False", "0"])
def test_strings_are_not_taken_as_booleans(text):
    """cputune.Setting(onednn="off") used to set TF_ENABLE_ONEDNN_OPTS=1; Options(prefetch="no")
    turned prefetch on."""
    with pytest.raises(TypeError, match="onednn must be True or False"):
        cputune.Setting(onednn=text)
    with pytest.raises(TypeError, match="prefetch must be True or False"):
        pipelines.Options(prefetch=text)
    assert cputune.Setting(onednn=False).env()["TF_ENABLE_ONEDNN_OPTS"] == "0"


def test_counts_that_would_never_end_are_refused_at_once():
    """epochs=-1 and min_time=inf: refused before any work, well inside the bound."""
    with badinput.bounded(10):
        with pytest.raises(ValueError, match="epochs must be a whole number from 1"):
            capstone.run_stages("/nonexistent", epochs=-1)
        with pytest.raises(ValueError, match="epochs must be a whole number from 1 to 1,000"):
            quant.train(np.zeros((2, 32, 32, 3), np.float32), np.zeros(2, np.int64), epochs=10**6)
        with pytest.raises(ValueError, match="min_time must be a finite number"):
            timing.measure(lambda: 1, min_time=float("inf"))


def test_sizes_beyond_the_machine_are_refused_with_the_numbers():
    top = checks.max_threads()
    with pytest.raises(ValueError, match=rf"intra must be a whole number from 0 to {top:,}"):
        cputune.Setting(intra=100_000)
    with pytest.raises(
        ValueError, match=rf"n must be a whole number from 1 to {top:,} \(logical devices"
    ):
        env.setup_logical_devices(100_000)
    with pytest.raises(
        ValueError, match=r"n_shards must be a whole number from 1 to 3 \(at most n=3"
    ):
        pipelines.make_jpeg_shards("/nonexistent", 3, n_shards=10)


def test_one_path_as_a_string_is_not_split_into_characters():
    with pytest.raises(
        TypeError, match=r"shards must be a list of paths, got the single path 'train.tfrecord'"
    ):
        pipelines.build("train.tfrecord")


def test_answers_that_were_silently_wrong_are_right_or_refused(tmp_path):
    """Issue 35's silent wrong answers, one line each: FAIL for the installed version, a string
    split into letters, a non-library preloaded as nothing, nan letting a petabyte through, int8
    ranges calibrated on NaN, a typo'd local URL reported as a network outage."""
    import pandas as pd

    from helpers.datasets import cifar
    from helpers.topics.start_here import start
    from helpers.topics.tune_the_cpu import cpu_report

    installed = lambda dist: "2.21.0"  # noqa: E731
    assert start.check_package("tensorflow", "2.21", "fix", installed).status == "pass"
    assert start.check_package("tensorflow", (2, 21), "fix", installed).status == "pass"
    assert start.check_package("tensorflow", "2.2", "fix", installed).status == "FAIL"
    with pytest.raises(ValueError, match="want must be a version such as"):
        start.check_package("tensorflow", "two", "fix", installed)
    with pytest.raises(
        TypeError, match=r"missing must be a list of instruction set names.*write \['AVX2'\]"
    ):
        cpu_report.features_table({"avx2": True}, "AVX2")
    with pytest.raises(ValueError, match="is not one \\(no ELF header\\)"):
        cputune.Setting(allocator="/etc/passwd")
    with pytest.raises(ValueError, match="extra_env must not set LD_PRELOAD"):
        cputune.Setting(extra_env={"LD_PRELOAD": "/nonexistent.so"})
    with pytest.raises(ValueError, match="fraction must be a finite number"):
        memory.guard(10**15, "a petabyte", fraction=float("nan"))
    with pytest.raises(ValueError, match="representative inputs must be finite numbers"):
        quant.convert(None, "int8", np.full((2, 4), np.nan, np.float32))
    with pytest.raises(ValueError, match=r"url file://.*typo\.tar\.gz: .*No such file"):
        cifar.locate(tmp_path, download_real=True, url=f"file://{tmp_path}/typo.tar.gz")
    with pytest.raises(ValueError, match="url must start with https://"):
        cifar.locate(tmp_path, download_real=True, url="ftp://example.org/cifar.tar.gz")
    table = pd.DataFrame(
        {
            "setting": ["a", "b"],
            "workload": ["m", "m"],
            "median_ms": [1.0, 2.0],
            "q1_ms": [0.9, 1.9],
            "q3_ms": [1.1, 2.1],
        }
    )  # no "error" column: nothing failed
    assert cputune.check_fastest(table, "m", "a")
    feedback = cputune.check_fastest(table, "m", 0)
    assert (
        not feedback
        and "name the setting as text" in feedback.message
        and "got int" in feedback.message
    )
    feedback = cputune.check_fastest(table, "m", "intra 9")
    assert not feedback and "'intra 9' is not one of the settings: ['a', 'b']" in feedback.message


def test_sizes_the_machine_cannot_hold_are_refused_before_building(monkeypatch):
    """rnn_variants(units=65536) (a 64 GiB kernel), xla_variants(size=10**9) and a 16384-pixel
    JPEG were accepted, then allocated or failed deep inside TensorFlow."""
    from helpers.topics.choose_rnn_kernels import rnn
    from helpers.topics.fuse_ops_and_pick_layouts import fused

    monkeypatch.setattr(checks, "available_bytes", lambda: 2**30)  # a machine with 1 GiB free
    monkeypatch.setattr(
        rnn, "lesson", lambda: pytest.fail("the layers were built before the check")
    )
    monkeypatch.setattr(
        fused, "lesson", lambda: pytest.fail("the workload was built before the check")
    )
    with pytest.raises(
        ValueError, match=r"rnn sizes \(batch=32, steps=50, features=32, units=65536\) needs about"
    ):
        rnn.rnn_variants(units=65536)
    with pytest.raises(
        ValueError, match=r"xla_variants\(size=1,000,000,000\) needs about 15,259 MiB"
    ):
        fused.xla_variants(size=10**9)
    with pytest.raises(
        ValueError, match=r"height must be a whole number from 1 to 8,192 \(pixels\)"
    ):
        fused.decode_crop_variants(height=16384, width=16384)
    with pytest.raises(ValueError, match=r"decode_crop_variants\(8192 x 8192\) needs about"):
        fused.decode_crop_variants(height=8192, width=8192)


def test_a_staging_folder_left_by_a_killed_process_is_removed_by_the_next_run(tmp_path):
    """make_sample (and extract, and the PNG-files copy) build in a hidden staging folder; one
    killed before its finally left that folder for good. The next run removes those of dead
    processes, and keeps a live process's."""
    import subprocess

    from helpers.datasets import cifar

    gone = subprocess.Popen(["true"])
    gone.wait()
    stale = tmp_path / f".sample-{gone.pid}-abcd1234"
    live = tmp_path / f".sample-{__import__('os').getppid()}-efgh5678"
    for folder in (stale, live):
        folder.mkdir()
        (folder / "data_batch_1").write_bytes(b"half")
    cifar.make_sample(tmp_path, per_batch=2)
    assert not stale.exists() and live.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [live.name, cifar.FOLDER]


def test_exported_lesson_code_refuses_what_makes_no_sense(tmp_path):
    """Issue 35: lesson code had lost its helper's checks. Each refusal is one or two visible lines
    in the notebook's cell."""
    import io
    import pickle

    from helpers.lessons import distribute_training, pack_files_into_shards, start_here

    with pytest.raises(ValueError, match="n_ops must be a whole number from 1 to 100,000"):
        start_here.eager_vs_function(n_ops=0)
    with pytest.raises(
        TypeError,
        match=r"paths must be a non-empty list of shard paths.*for one shard write \[path\]",
    ):
        pack_files_into_shards.read_shards("one-file.tfrecord")
    with pytest.raises(ValueError, match="encoding must be 'raw', 'png' or 'jpeg', got 'webp'"):
        pack_files_into_shards.write_shard(
            tmp_path / "x.tfrecord", np.zeros((1, 4, 4, 3), np.uint8), [0], "webp"
        )
    assert list(tmp_path.iterdir()) == []  # no empty shard under the final name
    with pytest.raises(ValueError, match=r"devices \['/device:GPU:7'\] do not exist here"):
        distribute_training.make_strategy("MirroredStrategy", ["/device:GPU:7"])
    empty = {
        b"data": np.zeros((0, 3072), np.uint8),
        b"labels": [],
    }  # a valid CIFAR batch with no images
    assert pack_files_into_shards.ArraysOnly(io.BytesIO(pickle.dumps(empty, protocol=2))).load()[
        b"data"
    ].shape == (0, 3072)
    with pytest.raises(pickle.UnpicklingError, match="bytes\\(\\) with arguments"):
        pack_files_into_shards.ArraysOnly(
            io.BytesIO(b"c__builtin__\nbytes\n(J\x00\x00\x00\x10tR.")
        ).load()


def test_a_comparison_widget_refuses_a_bad_unit_or_baseline_before_run():
    """ComparisonWidget(unit="px") and a non-text baseline were accepted and failed only after Run
    had timed everything."""
    from helpers import widgets

    with pytest.raises(ValueError, match=r"unit must be one of \['ms', 's', 'us'\], got 'px'"):
        widgets.ComparisonWidget(lambda: {"a": lambda: 1}, unit="px")
    with pytest.raises(TypeError, match="baseline must be the name of a variant"):
        widgets.ComparisonWidget(lambda: {"a": lambda: 1}, baseline=3)


def function_from_notebook(notebook: str, name: str, namespace: dict) -> object:
    """``def name(...)`` from a notebook's code cell (lesson code that is not exported), run alone
    in ``namespace``."""
    import ast
    import json
    from pathlib import Path

    from helpers.nbtools import source

    cells = json.loads(
        (Path(__file__).resolve().parent.parent / "notebooks" / notebook).read_text()
    )["cells"]
    for cell in cells:
        if cell["cell_type"] == "code" and f"def {name}(" in source(cell):
            node = next(
                n
                for n in ast.parse(source(cell)).body
                if isinstance(n, ast.FunctionDef) and n.name == name
            )
            exec(compile(ast.Module([node], []), notebook, "exec"), namespace)  # noqa: S102 - the notebook's own code
            return namespace[name]
    raise AssertionError(f"{notebook} has no cell defining {name}()")


def test_lesson_cells_that_are_not_exported_refuse_nonsense_too():
    """make_tower_sum([]) (04) failed inside TensorFlow; profile(..., steps=0) (14) wrote an empty
    trace."""
    import tensorflow as tf

    make_tower_sum = function_from_notebook(
        "04_split_work_into_towers.ipynb", "make_tower_sum", {"tf": tf}
    )
    for bad in ([], "/CPU:0"):
        with pytest.raises(ValueError, match="devices must be a non-empty list of device names"):
            make_tower_sum(bad)
    profile = function_from_notebook("14_profile_and_tune_a_job.ipynb", "profile", {"tf": tf})
    for steps, warmup in ((0, 3), (-1, 3), (2.5, 3), (8, -1)):
        with pytest.raises(ValueError, match="steps must be >= 1 and warmup >= 0"):
            profile(None, iter(()), "/nonexistent", steps=steps, warmup=warmup)
