"""Notebook 03's exercise check: a function that refuses a missing device.

The technique (``tf.config.set_soft_device_placement``) is written in the notebook's cells.
"""

from __future__ import annotations

from typing import Any

from helpers.exercises import Feedback, correct, not_yet


def check_strict(fn: Any) -> Feedback:
    """Exercise (03): ``fn()`` raises for a missing device and leaves soft placement as it was."""
    import tensorflow as tf

    if not callable(fn):
        return not_yet(f"strict_matmul must be a function, got {fn!r}.")
    before = tf.config.get_soft_device_placement()
    try:
        fn()
    except tf.errors.InvalidArgumentError as exc:
        if tf.config.get_soft_device_placement() != before:
            tf.config.set_soft_device_placement(before)
            return not_yet(
                "it raised, but left soft placement switched off: restore it in a finally: block."
            )
        first_sentence = str(exc).splitlines()[0].split(". ")[0]
        return correct(f"it failed loudly: {first_sentence}.")
    except Exception as exc:  # the learner's code
        tf.config.set_soft_device_placement(before)
        return not_yet(f"it raised {type(exc).__name__}, not the placement error: {exc}")
    tf.config.set_soft_device_placement(before)
    return not_yet(
        "it ran without an error, so nothing refused the missing device: inside it, switch soft "
        'placement off and run the matmul under tf.device("/GPU:7").'
    )
