"""What an exercise check returns: shown as its message in a notebook, true when correct."""

from __future__ import annotations

from dataclasses import dataclass


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
