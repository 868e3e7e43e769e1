"""CPU use per core (and GPU use, through NVML when present), sampled in a background thread.

Plumbing for notebook 07's "am I input-bound?" measurement.
"""

from __future__ import annotations

import threading
from typing import Any


class UtilizationSampler:
    """Samples CPU utilisation per core (psutil) and, when NVML is installed and a GPU is
    present, GPU utilisation, every ``interval`` seconds in a background thread, inside a
    ``with`` block. The thread always stops and is joined on exit."""

    def __init__(self, interval: float = 0.2) -> None:
        from helpers import checks

        checks.number(0.0, 60.0, "seconds between samples", above=True)("interval", interval)
        self.interval = interval
        self.cpu: list[list[float]] = []
        self.gpu: list[float] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._nvml: Any = None

    def __enter__(self) -> UtilizationSampler:
        import psutil

        psutil.cpu_percent(percpu=True)  # the first call only sets the reference point
        self._nvml = _nvml_handle()
        self.gpu = [] if self._nvml is not None else None
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="utilization-sampler", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def _sample(self) -> None:
        """One sample: each core's use since the last one (psutil's reference point)."""
        import psutil

        self.cpu.append(psutil.cpu_percent(percpu=True))
        if self._nvml is not None and self.gpu is not None:
            self.gpu.append(float(self._nvml[0].nvmlDeviceGetUtilizationRates(self._nvml[1]).gpu))

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._sample()  # the time since the last sample, so a block shorter than one
            # interval is sampled too (it once had no sample, and read as 0 % busy)
        self._thread = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def summary(self) -> dict[str, Any]:
        """Mean utilisation per core (percent), overall, and of the GPU when sampled."""
        import numpy as np

        per_core = np.mean(self.cpu, axis=0).round(1).tolist() if self.cpu else []
        return {
            "samples": len(self.cpu),
            "cpu_per_core": per_core,
            "cpu_mean": round(float(np.mean(per_core)), 1) if per_core else 0.0,
            "gpu_mean": round(float(np.mean(self.gpu)), 1) if self.gpu else None,
        }


def _nvml_handle() -> Any:
    """``(pynvml, handle of GPU 0)`` when NVML is installed and a GPU answers, else None."""
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml, pynvml.nvmlDeviceGetHandleByIndex(0)
    except Exception:  # no package, no driver, no GPU: utilisation of the CPU only
        return None
