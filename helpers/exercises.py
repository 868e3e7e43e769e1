"""What an exercise check returns: shown as its message in a notebook, true when correct."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Feedback:
    """The result of a ``check_...`` call. A notebook cell shows the message; ``bool()`` says
    whether the answer is right."""

    ok: bool
    message: str

    def __bool__(self) -> bool:
        return self.ok

    def __repr__(self) -> str:
        return self.message


def correct(message: str) -> Feedback:
    """A passing check: ``Correct: <message>``."""
    return Feedback(True, f"Correct: {message}")


def not_yet(message: str) -> Feedback:
    """A failing check: ``Not yet: <message>``."""
    return Feedback(False, f"Not yet: {message}")


@contextmanager
def counting_calls(owners: tuple[Any, ...], name: str) -> Iterator[Any]:
    """Count the calls of the function ``name`` of ``owners`` (modules such as ``tf.io`` and
    ``tf.image``, which share one ``decode_jpeg``) made inside the block, also from code traced
    there into a ``tf.function`` or a ``tf.data`` map: whichever way a learner calls it. Yields a
    ``tf.Variable`` holding the count; the functions are put back when the block ends."""
    import tensorflow as tf

    count, original = tf.Variable(0, dtype=tf.int64), getattr(owners[0], name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        count.assign_add(1)
        return original(*args, **kwargs)

    saved = [getattr(owner, name) for owner in owners]
    for owner in owners:
        setattr(owner, name, counted)
    try:
        yield count
    finally:
        for owner, function in zip(owners, saved, strict=True):
            setattr(owner, name, function)
