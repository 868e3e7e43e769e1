"""Argument checks shared by the helpers, so that every one refuses bad input the same way."""

from __future__ import annotations

from typing import Any


def whole_number(name: str, value: Any, minimum: int = 1, hint: str = "") -> int:
    """``value`` if it is an int (not a bool) of at least ``minimum``; otherwise a ``ValueError``
    that names ``name``, what is allowed (plus ``hint``) and what was given."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        extra = f" ({hint})" if hint else ""
        raise ValueError(f"{name} must be a whole number >= {minimum}{extra}, got {value!r}")
    return value
