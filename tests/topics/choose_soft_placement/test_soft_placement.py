"""Unit tests for helpers.topics.choose_soft_placement (notebook 03's exercise check); its grader
table is in tests/test_graders.py."""

from __future__ import annotations

from helpers.topics.choose_soft_placement import soft_placement


def test_check_strict():
    import tensorflow as tf

    def good():
        before = tf.config.get_soft_device_placement()
        tf.config.set_soft_device_placement(False)
        try:
            with tf.device("/GPU:99"):
                return tf.matmul(tf.ones([2, 2]), tf.ones([2, 2]))
        finally:
            tf.config.set_soft_device_placement(before)

    def lenient():
        with tf.device("/GPU:99"):
            return tf.matmul(tf.ones([2, 2]), tf.ones([2, 2]))

    def leaky():
        tf.config.set_soft_device_placement(False)
        with tf.device("/GPU:99"):
            return tf.matmul(tf.ones([2, 2]), tf.ones([2, 2]))

    assert soft_placement.check_strict(good)
    assert "nothing refused the missing device" in repr(soft_placement.check_strict(lenient))
    assert "nothing refused the missing device" in repr(
        soft_placement.check_strict(lambda: None)
    )  # the stub
    assert "left soft placement off where it found it on" in repr(
        soft_placement.check_strict(leaky)
    )
    assert tf.config.get_soft_device_placement()
