"""Notebook 03's exercise check: a function that refuses a missing device.

The technique (``tf.config.set_soft_device_placement``) is written in the notebook's cells.
"""

from __future__ import annotations

from typing import Any

from helpers.exercises import Feedback, correct, not_yet

#: Words of TensorFlow's placement errors: eager, tf.function, TF1 graph.
PLACEMENT_WORDS = (
    "Could not satisfy device specification",
    "devices for spec",
    "Cannot assign a device",
)


def check_strict(fn: Any) -> Feedback:
    """Exercise (03): ``fn()`` raises the placement error for a missing device and leaves soft
    placement as it found it: called once with it on (TF2's default) and once with it off."""
    import tensorflow as tf

    if not callable(fn):
        return not_yet(f"strict_matmul must be a function, got {fn!r}.")
    before = tf.config.get_soft_device_placement()
    try:
        first = None
        for start in (True, False):  # as TF2 sets it, and as a caller that switched it off
            tf.config.set_soft_device_placement(start)
            verdict = _one_call(fn, start)
            if isinstance(verdict, Feedback):
                return verdict
            first = first or verdict
    finally:
        tf.config.set_soft_device_placement(before)
    return correct(f"it failed loudly: {first}.")


def _one_call(fn: Any, start: bool) -> Any:
    """The first sentence of the placement error ``fn()`` raised, or a Feedback saying what is
    wrong; soft placement was ``start`` before the call."""
    import tensorflow as tf

    state = {True: "on", False: "off"}
    try:
        fn()
    except tf.errors.InvalidArgumentError as exc:
        text = _said(exc)
        if tf.config.get_soft_device_placement() != start:
            return not_yet(
                f"it raised, but left soft placement {state[not start]} where it found it "
                f"{state[start]}: read it first and restore that value in a finally: block."
            )
        lines = [line for line in text.splitlines() if line.strip()] or [""]
        # a session's error starts "Graph execution error:": quote the line that names the device
        named = [line for line in lines if any(words in line for words in PLACEMENT_WORDS)]
        plain = [line for line in lines if not line.rstrip().endswith(":")]  # not a heading
        sentence = (named or plain or lines)[0].split(". ")[0].strip()
        if not any(words in text for words in PLACEMENT_WORDS):
            return not_yet(
                f"it raised InvalidArgumentError, but not the placement error: {sentence}"
            )
        return sentence
    except (Exception, SystemExit) as exc:  # the learner's code
        return not_yet(f"it raised {type(exc).__name__}, not the placement error: {_said(exc)}")
    return not_yet(
        "no error reached the caller, so nothing refused the missing device: inside it, switch "
        'soft placement off and run the matmul under tf.device("/GPU:99"), and let the error out '
        "(do not catch it)."
    )


def _said(exc: BaseException) -> str:
    """An exception's text, or its type's name where its own __str__ fails."""
    try:
        return str(exc)
    except Exception:  # a learner's exception class with a broken __str__
        return f"(its message could not be read: {type(exc).__name__})"
