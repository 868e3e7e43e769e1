"""Unit tests for helpers.exercises."""

from helpers.exercises import Feedback, correct, not_yet


def test_feedback_truth_and_repr():
    assert correct("yes") and repr(correct("yes")) == "Correct: yes"
    assert not not_yet("no") and repr(not_yet("no")) == "Not yet: no"
    assert Feedback(True, "m") == Feedback(True, "m")


def test_counting_calls_counts_traced_calls_and_puts_the_function_back():
    import tensorflow as tf

    from helpers.exercises import counting_calls

    original = tf.io.decode_jpeg
    jpeg = tf.io.encode_jpeg(tf.zeros([4, 4, 3], tf.uint8))
    with counting_calls((tf.io, tf.image), "decode_jpeg") as count:
        dataset = (
            tf.data.Dataset.from_tensors(jpeg).repeat(3).map(tf.image.decode_jpeg)
        )  # traced once, runs 3 times
        assert len(list(dataset)) == 3
        tf.io.decode_jpeg(jpeg)  # and once eagerly
    assert int(count.numpy()) == 4
    assert tf.io.decode_jpeg is original and tf.image.decode_jpeg is original
