"""Shared pieces of the bad-input suites (tests/test_bad_input*.py): Hypothesis strategies for the
values a learner gets wrong, and ``refused``, which asserts that a call fails fast with a
``TypeError`` / ``ValueError`` (or the module's own error) whose message names the argument.

Survey mode: with ``BADINPUT_SURVEY=FILE`` set, ``refused`` does not assert; it appends one JSON
line per bad input (module, argument, outcome: clear / obscure / accepted / hang) to FILE. Run the
suite that way on an old checkout to count what a change fixed.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
from collections.abc import Callable, Iterator
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

# Deterministic in CI (the same examples every run), few examples per property: each example is a
# call into a helper, and the suite runs on two cores beside the notebooks.
settings.register_profile(
    "workbook",
    max_examples=12,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.load_profile("workbook")

SURVEY = os.environ.get("BADINPUT_SURVEY", "")
HUGE = 10**12


class Hang(Exception):
    """A call that did not return within its bound."""


@contextlib.contextmanager
def bounded(seconds: float) -> Iterator[None]:
    """Raise ``Hang`` in this (main) thread if the block runs longer than ``seconds``."""

    def alarm(signum: int, frame: Any) -> None:
        raise Hang(f"no answer within {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def outcome(
    call: Callable[[], Any],
    arg: str,
    errors: tuple[type[BaseException], ...] = (),
    seconds: float = 20.0,
) -> tuple[str, str]:
    """('clear' | 'obscure' | 'accepted' | 'hang', detail) for one bad input."""
    try:
        with bounded(seconds):
            call()
    except Hang as exc:
        return "hang", str(exc)
    except (TypeError, ValueError, *errors) as exc:
        message = str(exc)
        return ("clear" if arg in message else "obscure"), f"{type(exc).__name__}: {message}"
    except Exception as exc:  # noqa: BLE001 - the point is to classify what a learner would see
        return "obscure", f"{type(exc).__name__}: {exc}"
    return "accepted", "no error"


def refused(
    module: str,
    arg: str,
    call: Callable[[], Any],
    value: Any = None,
    errors: tuple[type[BaseException], ...] = (),
    seconds: float = 20.0,
) -> None:
    """Assert ``call()`` is refused clearly, naming ``arg`` (or record it in survey mode)."""
    kind, detail = outcome(call, arg, errors, seconds)
    if SURVEY:
        with open(SURVEY, "a", encoding="utf-8") as log:
            log.write(
                json.dumps(
                    {
                        "module": module,
                        "arg": arg,
                        "value": repr(value)[:80],
                        "outcome": kind,
                        "detail": detail[:200],
                    }
                )
                + "\n"
            )
        return
    assert kind == "clear", f"{module}: {arg}={value!r} gave {kind}: {detail}"


# --- what a learner types instead of the right value ------------------------------------------


def not_a_flag() -> st.SearchStrategy[Any]:
    """Anything but True/False: the strings a learner means as booleans, 0/1, None."""
    return st.one_of(
        st.sampled_from(["off", "no", "False", "true", "0", "", 0, 1, None, 1.0, [], "on"]),
        st.text(max_size=5),
    )


def wrong_type() -> st.SearchStrategy[Any]:
    """Values of the wrong kind for a number: strings, None, lists, dicts, bytes, booleans."""
    return st.one_of(
        st.text(max_size=6),
        st.none(),
        st.lists(st.integers(), max_size=2),
        st.dictionaries(st.text(max_size=2), st.integers(), max_size=1),
        st.binary(max_size=3),
        st.booleans(),
    )


def bad_whole(minimum: int, maximum: int) -> st.SearchStrategy[Any]:
    """Whole numbers out of ``[minimum, maximum]`` (below, huge), floats and wrong types."""
    return st.one_of(
        st.integers(max_value=minimum - 1, min_value=minimum - 10**6),
        st.integers(min_value=maximum + 1, max_value=max(HUGE, maximum + 1)),
        st.floats(allow_nan=True, allow_infinity=True),
        wrong_type(),
    )


def bad_number(minimum: float, maximum: float) -> st.SearchStrategy[Any]:
    """Numbers out of ``[minimum, maximum]``, NaN, infinities and wrong types."""
    return st.one_of(
        st.floats(max_value=minimum, exclude_max=True, allow_nan=False, min_value=-1e12),
        st.floats(min_value=maximum, exclude_min=True, allow_nan=False, allow_infinity=True),
        st.just(math.nan),
        st.just(math.inf),
        wrong_type().filter(lambda v: not isinstance(v, bool)),
        st.just(True),
    )
