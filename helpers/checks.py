"""Argument checks shared by the helpers, so that every one refuses bad input the same way: a
``TypeError`` for the wrong kind of value, a ``ValueError`` for a value out of range, each naming
the argument, what is allowed and what was given. Sizes have upper bounds tied to this machine
(its CPUs, its memory), and the message gives the numbers.

    @checks.arguments(n=checks.whole(1, 10**6), prefetch=checks.flag, kind=checks.one_of("a", "b"))
    def helper(n, prefetch=True, kind="a"): ...
"""

from __future__ import annotations

import functools
import inspect
import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])
Check = Callable[[str, Any], Any]


class BadType(TypeError, ValueError):
    """The wrong kind of value. A ``TypeError``, and a ``ValueError`` too, so that code written to
    catch a helper's ``ValueError`` (a widget showing the message) still catches it."""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def logical_cpus() -> int:
    """This machine's logical CPUs (at least 1)."""
    return os.cpu_count() or 1


def max_threads() -> int:
    """The most threads (or logical devices) a helper starts: 8 per logical CPU, at least 64.
    Oversubscribing a little is a lesson; 100,000 threads only exhausts the machine."""
    return max(64, 8 * logical_cpus())


def available_bytes() -> int:
    """Memory available to new allocations now (psutil), in bytes."""
    import psutil

    return int(psutil.virtual_memory().available)


def flag(name: str, value: Any) -> bool:
    """``True`` or ``False`` only: the string ``"off"`` is truthy and would turn a setting on."""
    if not isinstance(value, bool):
        raise BadType(f"{name} must be True or False, got {_show(value)} ({type(value).__name__})")
    return value


def optional_flag(name: str, value: Any) -> bool | None:
    """``True``, ``False`` or ``None`` (leave the default)."""
    return None if value is None else flag(name, value)


#: The largest count any helper takes unless it says otherwise (sizes that allocate are also
#: checked against the memory available: ``fits_memory``).
MAX_COUNT = 10**9


def whole_number(
    name: str, value: Any, minimum: int = 1, hint: str = "", maximum: int | None = None
) -> int:
    """``value`` if it is an int (not a bool) in ``[minimum, maximum]`` (``MAX_COUNT`` by default);
    otherwise an error that names ``name``, what is allowed (plus ``hint``) and what was given."""
    extra = f" ({hint})" if hint else ""
    maximum = MAX_COUNT if maximum is None else maximum
    allowed = f"from {minimum} to {maximum:,}"
    if not _is_int(value):
        raise BadType(
            f"{name} must be a whole number {allowed}{extra}, "
            f"got {_show(value)} ({type(value).__name__})"
        )
    if not minimum <= value <= maximum:
        raise ValueError(f"{name} must be a whole number {allowed}{extra}, got {value!r}")
    return value


def whole(
    minimum: int = 1, maximum: int | Callable[[], int] | None = None, hint: str = ""
) -> Check:
    """A check for ``arguments``: a whole number in range; ``maximum`` may be a function of the
    machine (``checks.max_threads``), read when the helper is called."""

    def check(name: str, value: Any) -> int:
        top = maximum() if callable(maximum) else maximum
        return whole_number(name, value, minimum, hint, top)

    return check


def optional(check: Check) -> Check:
    """``check``, or ``None`` allowed."""
    return lambda name, value: None if value is None else check(name, value)


def number(
    minimum: float = 0.0, maximum: float | None = None, hint: str = "", above: bool = False
) -> Check:
    """A finite real number in ``[minimum, maximum]`` (``above=True``: strictly above
    ``minimum``)."""

    def check(name: str, value: Any) -> float:
        extra = f" ({hint})" if hint else ""
        low = f"> {minimum:g}" if above else f">= {minimum:g}"
        allowed = low if maximum is None else f"{low} and <= {maximum:g}"
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise BadType(
                f"{name} must be a number {allowed}{extra}, "
                f"got {_show(value)} ({type(value).__name__})"
            )
        if (
            not math.isfinite(value)
            or value < minimum
            or (above and value == minimum)
            or (maximum is not None and value > maximum)
        ):
            raise ValueError(f"{name} must be a finite number {allowed}{extra}, got {value!r}")
        return value

    return check


def one_of(*options: Any) -> Check:
    """One of ``options`` exactly (a typo is named with what is allowed)."""

    def check(name: str, value: Any) -> Any:
        if not any(value == o and type(value) is type(o) for o in options):
            raise (ValueError if isinstance(value, str) else BadType)(
                f"{name} must be one of {', '.join(map(repr, options))}; got {_show(value)}"
            )
        return value

    return check


def text(name: str, value: Any) -> str:
    """A non-empty string."""
    if not isinstance(value, str):
        raise BadType(f"{name} must be a string, got {_show(value)} ({type(value).__name__})")
    if not value.strip():
        raise ValueError(f"{name} must not be empty")
    return value


def path(name: str, value: Any) -> Path:
    """A path given as ``str`` or ``os.PathLike``."""
    if not isinstance(value, str | os.PathLike) or not str(value).strip():
        raise BadType(
            f"{name} must be a path (str or pathlib.Path), "
            f"got {_show(value)} ({type(value).__name__})"
        )
    return Path(value)


def paths(name: str, value: Any, minimum: int = 1) -> list[str]:
    """A list (or tuple) of paths; one path passed as a plain string is refused, since each of its
    characters would become a path."""
    if isinstance(value, str | bytes | os.PathLike):
        raise BadType(
            f"{name} must be a list of paths, got the single path {_show(value)}: "
            f"write [{_show(str(value))}]"
        )
    if not isinstance(value, Sequence):
        raise BadType(
            f"{name} must be a list of paths, got {_show(value)} ({type(value).__name__})"
        )
    for item in value:
        path(f"each of {name}", item)
    if len(value) < minimum:
        raise ValueError(
            f"{name} must hold at least {minimum} path{'s' if minimum > 1 else ''}, "
            "got an empty list"
        )
    return [str(p) for p in value]


def fits_memory(what: str, nbytes: float, fraction: float = 0.5) -> None:
    """Refuse, before allocating, a request whose ``nbytes`` exceed ``fraction`` of the memory
    available now, with both numbers."""
    free = available_bytes()
    if nbytes > fraction * free:
        raise ValueError(
            f"{what} needs about {nbytes / 2**20:,.0f} MiB, more than {fraction:.0%} of the "
            f"{free / 2**20:,.0f} MiB this machine has available now; choose a smaller size"
        )


def arguments(**checks: Check) -> Callable[[F], F]:
    """Check the named arguments of every call (defaults included) before the body runs."""

    def decorate(fn: F) -> F:
        signature = inspect.signature(fn)
        unknown = set(checks) - set(signature.parameters)
        if unknown:
            raise TypeError(f"{fn.__qualname__} has no parameter {sorted(unknown)}")

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError as exc:
                raise TypeError(f"{fn.__name__}(): {exc}") from None
            bound.apply_defaults()
            for name, check in checks.items():
                check(name, bound.arguments[name])
            return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


#: Checks many helpers share.
seed = whole(0, 2**32 - 1, "a random seed")
repeats = whole(1, 100_000, "timed calls")
rounds = whole(1, 1_000, "rounds of every variant")
timeout = number(0.0, 7 * 24 * 3600.0, "seconds", above=True)


def threads(name: str, value: Any) -> int:
    """A thread (or device, worker) count from 1 to ``max_threads()``."""
    return whole_number(name, value, 1, f"{logical_cpus()} logical CPUs here", max_threads())
