"""Unit tests for helpers.exercises."""

from helpers.exercises import Feedback, correct, not_yet


def test_feedback_truth_and_repr():
    assert correct("yes") and repr(correct("yes")) == "Correct: yes"
    assert not not_yet("no") and repr(not_yet("no")) == "Not yet: no"
    assert Feedback(True, "m") == Feedback(True, "m")
