"""Unit tests for helpers.checks."""

import pytest

from helpers import checks


def test_whole_number_accepts_ints_at_or_above_the_minimum():
    assert checks.whole_number("n", 1) == 1
    assert checks.whole_number("intra", 0, minimum=0) == 0


@pytest.mark.parametrize("value", [0, -3, 2.0, True, "4", None])
def test_whole_number_refuses_everything_else(value):
    with pytest.raises(ValueError, match=rf"^steps must be a whole number >= 1, got {value!r}$".replace("(", r"\(")):
        checks.whole_number("steps", value)


def test_hint_is_part_of_the_message():
    with pytest.raises(ValueError, match=r"intra must be a whole number >= 0 \(0 = TensorFlow's default\), got -1"):
        checks.whole_number("intra", -1, minimum=0, hint="0 = TensorFlow's default")
