"""Notebook 05's retracing plumbing: TensorFlow's Python warnings captured instead of printed
(around a block, or around each call of a comparison's variants), the exercise check and the
bench id.

The retracing lesson itself (``tf.function`` with ``reduce_retracing`` and ``input_signature``,
``experimental_get_tracing_count``, ``scalar_vs_tensor``) is written in notebook 05's cells.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from helpers.comparison import Comparison
from helpers.exercises import Feedback, correct, not_yet


@dataclass
class Warnings:
    """Messages TensorFlow's Python logger emitted inside ``captured_tf_warnings``."""

    messages: list[str]


@contextlib.contextmanager
def captured_tf_warnings() -> Iterator[Warnings]:
    """Collect TensorFlow's Python warnings (such as the retracing warning) instead of printing
    them."""
    import tensorflow as tf

    logger = tf.get_logger()
    caught = Warnings([])

    class _Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            caught.messages.append(record.getMessage())

    handler, propagate = _Collect(level=logging.WARNING), logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    saved = [h for h in logger.handlers if h is not handler]
    for h in saved:
        logger.removeHandler(h)
    try:
        yield caught
    finally:
        logger.removeHandler(handler)
        for h in saved:
            logger.addHandler(h)
        logger.propagate = propagate


def without_warnings(variants: dict[str, Any]) -> dict[str, Any]:
    """The same variants, each call made inside ``captured_tf_warnings``: for comparisons that
    retrace on purpose (notebook 05's first calls build new functions every time), so that a
    widget's output holds the result, not TensorFlow's retracing warning."""

    def quiet(fn: Any) -> Any:
        def call() -> Any:
            with captured_tf_warnings():
                return fn()

        return call

    return {name: quiet(fn) for name, fn in variants.items()}


def check_no_retracing(fn: Any) -> Feedback:
    """Exercise: ``fn`` returns 3 * v and traces once for inputs of lengths 1..8. The calls go to
    a copy of ``fn`` (same Python function, signature and options) given every trace ``fn`` has,
    so the learner's function is left as it was, and its traces count: one made ahead for every
    length (``get_concrete_function`` with shape [None]) is one trace; traces of earlier calls
    count too. A concrete function has traced once by definition: only its results are checked."""
    import numpy as np
    import tensorflow as tf

    concrete = isinstance(fn, tf.types.experimental.ConcreteFunction)
    if not hasattr(fn, "experimental_get_tracing_count") and not concrete:
        return not_yet("scale must be a tf.function.")
    clone = getattr(fn, "_clone", None)  # no public way to copy a tf.function with its options
    probe = clone(python_function=None) if callable(clone) and not concrete else fn
    # The copy gets every trace the learner's function holds, so it dispatches as theirs would,
    # and those traces count. (Listing a function with an input_signature would trace it; the
    # copy has that signature already.)
    if probe is not fn and getattr(fn, "input_signature", None) is None:
        listed = getattr(fn, "_list_all_concrete_functions", lambda: [])
        try:
            for traced in listed():
                args, kwargs = traced.structured_input_signature
                probe.get_concrete_function(*args, **kwargs)
        except Exception:  # a trace this cannot replay: the copy starts without it
            pass
    before = 0
    with captured_tf_warnings():
        try:
            for n in range(1, 9):
                v = tf.range(1, n + 1, dtype=tf.float32)
                result = np.asarray(probe(v))
                if result.shape != (n,) or not np.allclose(result, 3.0 * v.numpy()):
                    return not_yet(
                        f"scale(v) should return v * 3.0: for {v.numpy()} it gave {result}."
                    )
        except Exception as exc:  # the learner's code
            signature = getattr(fn, "input_signature", None)  # a hint only where one refused it
            hint = (
                " (TensorSpec([None], tf.float32) in input_signature takes any length, in float32)"
                if signature and isinstance(exc, TypeError | ValueError)
                else ""
            )
            return not_yet(
                f"calling it on a float32 vector of length {n} raised {type(exc).__name__}: {exc}"
                + hint
            )
    if concrete:
        return correct("a concrete function: one trace, and it takes every length.")
    traces = probe.experimental_get_tracing_count() - before
    if traces > 1:
        hint = (
            "reduce_retracing=True still traces twice (once for the first shape, once generalized)"
            if getattr(fn, "_reduce_retracing", False)
            else "each new length is a new trace"
        )
        return not_yet(
            f"it traced {traces} times for 8 lengths: {hint}; "
            "give it an input_signature with shape [None]."
        )
    return correct("one trace for every length.")


BENCHMARKS = [
    Comparison(
        id="keep_arrays_out_of_graphs.python_scalar_vs_tensor",
        title="per call: a new Python int (a retrace each time) vs a tensor",
        make_variants="helpers.lessons.keep_arrays_out_of_graphs:scalar_vs_tensor",
        baseline="Python scalar",
        variant="tensor",
        quick={},
        full={},
        repeats=20,
        min_time=0.0,
    ),
]
