"""The findings of issue 20 in the modules the generic suite covers, one test each: the memory
guard refuses before it allocates, strings are not taken as booleans, an endless count is refused
in time, and one path given as a string is not split into characters."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import checks, env, timing
from helpers.topics import capstone, cputune, memory, pipelines, quant
from tests import badinput


def test_the_memory_guard_refuses_before_allocating(monkeypatch):
    """The old code made the array first (2.1 GB for mib=2048) and guarded after."""
    def no_allocation(*args, **kwargs):
        raise AssertionError("an array was allocated before the guard refused")

    monkeypatch.setattr(np.random, "default_rng", no_allocation)
    monkeypatch.setattr(memory, "available_bytes", lambda: 2**30)  # a 1 GiB machine
    with pytest.raises(memory.MemoryGuardError, match=r"make_array\(mib=2048\)"):
        memory.make_array(2048)
    with pytest.raises(memory.MemoryGuardError, match=r"embedding_experiment\(mib=2048, n_ops=20\)"):
        memory.embedding_experiment(mib=2048, n_ops=20)
    with pytest.raises(ValueError, match="mib must be a size in MiB"):  # beyond any machine: refused by size
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
    with pytest.raises(ValueError, match=rf"n must be a whole number from 1 to {top:,} \(logical devices"):
        env.setup_logical_devices(100_000)
    with pytest.raises(ValueError, match=r"n_shards must be a whole number from 1 to 3 \(at most n=3"):
        pipelines.make_jpeg_shards("/nonexistent", 3, n_shards=10)


def test_one_path_as_a_string_is_not_split_into_characters():
    with pytest.raises(TypeError, match=r"shards must be a list of paths, got the single path 'train.tfrecord'"):
        pipelines.build("train.tfrecord")
