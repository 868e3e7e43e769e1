"""Unit tests for helpers.checks: the shared argument checks (issue 20)."""

import math

import pytest

from helpers import checks


def test_whole_number_accepts_ints_in_range():
    assert checks.whole_number("n", 1) == 1
    assert checks.whole_number("intra", 0, minimum=0) == 0
    assert checks.whole_number("n", checks.MAX_COUNT) == checks.MAX_COUNT


@pytest.mark.parametrize("value", [0, -3, checks.MAX_COUNT + 1])
def test_whole_number_refuses_out_of_range_with_the_range(value):
    with pytest.raises(
        ValueError, match=rf"^steps must be a whole number from 1 to 1,000,000,000, got {value}$"
    ):
        checks.whole_number("steps", value)


@pytest.mark.parametrize("value", [2.0, True, "4", None])
def test_whole_number_refuses_other_types_as_type_errors(value):
    with pytest.raises(
        TypeError, match=r"^steps must be a whole number .*\(" + type(value).__name__ + r"\)$"
    ):
        checks.whole_number("steps", value)
    with pytest.raises(
        ValueError
    ):  # BadType is both, so code that catches ValueError still catches it
        checks.whole_number("steps", value)


def test_hint_and_maximum_are_part_of_the_message():
    with pytest.raises(
        ValueError,
        match=r"intra must be a whole number from 0 to 64 \(0 = TensorFlow's default\), got 65",
    ):
        checks.whole_number("intra", 65, minimum=0, hint="0 = TensorFlow's default", maximum=64)


@pytest.mark.parametrize("value", ["off", "no", "False", 0, 1, None, []])
def test_flag_takes_only_true_or_false(value):
    with pytest.raises(TypeError, match=r"^prefetch must be True or False"):
        checks.flag("prefetch", value)
    assert checks.flag("prefetch", True) is True and checks.optional_flag("onednn", None) is None


@pytest.mark.parametrize("value", [math.nan, math.inf, -1.0, 0.0, 1e300, "1", True])
def test_number_refuses_non_finite_out_of_range_and_other_types(value):
    with pytest.raises(ValueError, match="^timeout must be"):
        checks.timeout("timeout", value)
    assert checks.timeout("timeout", 2.5) == 2.5


def test_paths_refuses_one_string_where_a_list_is_expected():
    with pytest.raises(
        TypeError, match=r"shards must be a list of paths, got the single path 'a.tfrecord'"
    ):
        checks.paths("shards", "a.tfrecord")
    with pytest.raises(ValueError, match="at least 1 path"):
        checks.paths("shards", [])
    assert checks.paths("shards", ("a", "b")) == ["a", "b"]


def test_one_of_names_what_is_allowed():
    with pytest.raises(
        ValueError, match=r"cache must be one of 'none', 'after_decode'; got 'in memory'"
    ):
        checks.one_of("none", "after_decode")("cache", "in memory")


def test_fits_memory_refuses_with_both_numbers(monkeypatch):
    monkeypatch.setattr(checks, "available_bytes", lambda: 2**30)
    with pytest.raises(
        ValueError,
        match=r"make_array\(mib=4096\) needs about 4,096 MiB, more than 50% of the 1,024 MiB",
    ):
        checks.fits_memory("make_array(mib=4096)", 4 * 2**30)
    checks.fits_memory("small", 2**20)


def test_arguments_checks_defaults_and_given_values_before_the_body():
    ran = []

    @checks.arguments(n=checks.whole(1, 10), fast=checks.flag)
    def helper(n=3, fast=True):
        ran.append(n)
        return n

    assert helper() == 3 and helper(n=10) == 10
    with pytest.raises(ValueError, match="n must be"):
        helper(11)
    with pytest.raises(TypeError, match="fast must be True or False"):
        helper(fast="no")
    assert ran == [3, 10]
    with pytest.raises(TypeError, match="has no parameter"):
        checks.arguments(m=checks.flag)(lambda n: n)
