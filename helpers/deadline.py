"""The one way a wait in the workbook gets a deadline and names what it waits for.

Every loop that waits for something outside this process (a port to listen, a log line, a
child to exit, a cluster's tasks) holds a ``Deadline``: ``left()`` bounds each blocking call
inside the loop, ``passed`` ends it, ``message()`` says for how long it waited and for what, and
``pause()`` is the polling interval (never beyond the deadline). ``until`` is the whole loop for
a condition that can be asked again and again. ``tests/test_deadline.py`` checks that no other
module writes its own ``time.monotonic() + ...`` wait.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from helpers import checks

T = TypeVar("T")
_SECONDS = checks.number(0.0, 7 * 24 * 3600.0, "seconds")  # 0 is allowed: look once, do not wait


class WaitTimeout(TimeoutError):
    """A wait passed its deadline; the message names what it waited for and for how long."""


class Deadline:
    """The clock of one wait: ``seconds`` from now, waiting for ``what`` (a phrase: "the
    dispatcher at host:2222", "worker:0 to report step 60")."""

    @checks.arguments(seconds=_SECONDS, what=checks.text)
    def __init__(self, seconds: float, what: str) -> None:
        self.seconds, self.what = float(seconds), what
        self.ends = time.monotonic() + self.seconds

    @property
    def passed(self) -> bool:
        return time.monotonic() >= self.ends

    def left(self, at_most: float = float("inf")) -> float:
        """Seconds until the deadline (0 once passed), at most ``at_most``: a blocking call's
        timeout."""
        return max(0.0, min(at_most, self.ends - time.monotonic()))

    def message(self, detail: str = "") -> str:
        """``gave up after N s waiting for <what> (<detail>)``."""
        return f"gave up after {self.seconds:g} s waiting for {self.what}" + (
            f" ({detail})" if detail else ""
        )

    def pause(self, interval: float) -> None:
        """Sleep one polling interval, cut short at the deadline."""
        time.sleep(self.left(interval))  # the interval between two looks, not a stand-in for work


@checks.arguments(
    seconds=_SECONDS, what=checks.text, interval=checks.number(0.001, 3600.0, "seconds")
)
def until(ready: Callable[[], T], seconds: float, what: str, interval: float = 0.1) -> T:
    """Ask ``ready()`` every ``interval`` seconds until it returns anything but None or False (0 is
    an answer) and return that; after ``seconds``, raise ``WaitTimeout`` naming ``what``.
    ``ready`` raises to stop early (a process it watches has exited)."""
    if not callable(ready):
        raise checks.BadType(f"ready must be a function to call, got {type(ready).__name__}")
    deadline = Deadline(seconds, what)
    while True:
        result = ready()
        if result is not None and result is not False:
            return result
        if deadline.passed:
            raise WaitTimeout(deadline.message())
        deadline.pause(interval)
