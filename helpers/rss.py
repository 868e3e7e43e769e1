"""Resident memory (RSS) of this process: now, its highest so far, and the peak inside a block.

Plumbing for the memory measurements (notebook 05's tables and its child program).
"""

from __future__ import annotations

import resource
import sys
import threading

MIB = 2**20


def rss_mib() -> float:
    """This process's resident memory now, in MiB."""
    import psutil

    return psutil.Process().memory_info().rss / MIB


def max_rss_mib() -> float:
    """The highest resident memory this process has had since it started, in MiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / MIB if sys.platform == "darwin" else peak / 1024  # bytes on macOS, KiB on Linux


class PeakRSS:
    """Samples resident memory every few milliseconds inside a ``with`` block.

    ``peak_mib`` is the highest increase over the start, ``end_mib`` the increase still held at
    the end (memory that stays allocated, or that the allocator keeps).
    """

    def __init__(self, interval: float = 0.002) -> None:
        from helpers import checks

        self.interval = checks.number(0.0, 60.0, "seconds between samples", above=True)(
            "interval", interval
        )
        self.base = self.peak = self.end = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> PeakRSS:
        self.base = self.peak = rss_mib()
        self._stop.clear()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_mib())
            self._stop.wait(self.interval)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.end = rss_mib()
        self.peak = max(self.peak, self.end)

    @property
    def peak_mib(self) -> float:
        return self.peak - self.base

    @property
    def end_mib(self) -> float:
        return self.end - self.base
