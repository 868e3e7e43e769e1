"""How notebook 10's child processes start (and notebook 08's data-format check's): the
``Setting`` each fresh process runs under (TensorFlow's thread pools, oneDNN, ``OMP_NUM_THREADS``,
an allocator to preload, extra environment variables), checked before any process starts, and
the settings each of notebook 10's named sweeps (``SWEEPS``) compares.

Running them is ``helpers.topics.tune_the_cpu.cputune``'s part, which re-exports these names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from helpers import checks, env
from helpers.checks import whole_number
from helpers.topics.tune_the_cpu.cpu_report import find_allocators


def _is_elf(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


# Variables a sweep sets: a learner's own exported value would otherwise reach every baseline.
# (TF_ENABLE_ONEDNN_OPTS and ONEDNN_MAX_CPU_ISA are inherited on purpose: they play other CPUs.)
TUNED = (
    "OMP_NUM_THREADS",
    "KMP_AFFINITY",
    "KMP_BLOCKTIME",
    "LD_PRELOAD",
    "ONEDNN_DEFAULT_FPMATH_MODE",
)


@dataclass(frozen=True)
class Setting:
    """How one child process starts: TensorFlow's thread pools (0 = TF's default, all cores),
    oneDNN (None = the build's default), ``OMP_NUM_THREADS`` and an allocator to preload."""

    intra: int = 0
    inter: int = 0
    onednn: bool | None = None
    omp_threads: int | None = None
    allocator: str | None = None
    extra_env: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("intra", "inter"):
            whole_number(
                name, getattr(self, name), 0, "0 = TensorFlow's default", checks.max_threads()
            )
        if self.omp_threads is not None:
            whole_number("omp_threads", self.omp_threads, 1, "", checks.max_threads())
        checks.optional_flag(
            "onednn", self.onednn
        )  # "off" is a truthy string: it would turn oneDNN on
        if self.allocator is not None:
            checks.path("allocator", self.allocator)
        if not isinstance(self.extra_env, Mapping):
            raise checks.BadType(
                f"extra_env must map names to strings, got {type(self.extra_env).__name__}"
            )
        if self.allocator is not None and not Path(self.allocator).is_file():
            raise ValueError(
                f"allocator must be the path of a shared library, {self.allocator!r} is not a file"
            )
        if self.allocator is not None and not _is_elf(
            self.allocator
        ):  # ld.so would skip it and run on glibc's malloc
            raise ValueError(
                f"allocator must be the path of a shared library, {self.allocator!r} is not one "
                "(no ELF header)"
            )
        if "LD_PRELOAD" in self.extra_env:
            raise ValueError(
                "extra_env must not set LD_PRELOAD: pass the library as allocator=, "
                "which is checked"
            )
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in self.extra_env.items()):
            raise ValueError(f"extra_env must map names to strings, got {dict(self.extra_env)!r}")

    def env(self) -> dict[str, str | None]:
        """The environment variables this setting adds to the child's; None removes one the
        notebook's own environment may hold, so that a baseline is the library's default."""
        env: dict[str, str | None] = {name: None for name in TUNED}
        env["TF_CPP_MIN_LOG_LEVEL"] = "2"
        if self.onednn is not None:
            env["TF_ENABLE_ONEDNN_OPTS"] = "1" if self.onednn else "0"
        if self.omp_threads is not None:
            env["OMP_NUM_THREADS"] = str(self.omp_threads)
        if self.allocator is not None:
            env["LD_PRELOAD"] = self.allocator
        env.update(self.extra_env)
        return env

    def describe(self) -> str:
        """A short label, e.g. ``intra 1, inter 1, oneDNN off``."""
        parts = [f"intra {self.intra or 'default'}", f"inter {self.inter or 'default'}"]
        if self.onednn is not None:
            parts.append(f"oneDNN {'on' if self.onednn else 'off'}")
        if self.omp_threads is not None:
            parts.append(f"OMP {self.omp_threads}")
        if self.allocator is not None:
            parts.append(Path(self.allocator).name.split(".so")[0].removeprefix("lib"))
        parts.extend(f"{k}={v}" for k, v in self.extra_env.items())
        return ", ".join(parts)


@checks.arguments(max_threads=checks.optional(checks.threads), inter=checks.whole(0, 4096))
def thread_settings(max_threads: int | None = None, inter: int = 1) -> dict[str, Setting]:
    """``intra`` = 1, 2, 4, ... (powers of two) and ``max_threads`` itself (default: the CPUs this
    process may use, and the physical core count too), each with ``inter`` inter-op threads: a
    many-core server gets a handful of settings, not one per core."""
    cores = whole_number("max_threads", env.usable_cores() if max_threads is None else max_threads)
    physical = env.cpu_info()["physical_cores"] if max_threads is None else 0  # hyper-threads aside
    counts = {2**k for k in range(cores.bit_length()) if 2**k <= cores} | {cores}
    counts = sorted(counts | ({physical} if 0 < physical < cores else set()))
    return {f"intra {n}, inter {inter}": Setting(intra=n, inter=inter) for n in counts}


SWEEPS = ("threads", "inter-op threads", "oneDNN", "OpenMP and KMP variables", "allocators")


def sweep_settings(kind: str) -> dict[str, Setting]:
    """The settings one named sweep compares (``SWEEPS``); allocators only where installed."""
    cores = (
        env.usable_cores()
    )  # the CPUs this process may use: a pinned run has fewer than the machine
    if kind == "threads":
        return thread_settings(cores)
    if kind == "inter-op threads":
        return {
            f"intra {cores}, inter {n}": Setting(intra=cores, inter=n)
            for n in sorted({1, 2, cores})
        }
    if kind == "oneDNN":
        return {"oneDNN on": Setting(onednn=True), "oneDNN off": Setting(onednn=False)}
    if kind == "OpenMP and KMP variables":
        return {
            "no OMP/KMP variables": Setting(),
            "OMP_NUM_THREADS=1": Setting(omp_threads=1),
            (
                f"OMP_NUM_THREADS={cores}, KMP_BLOCKTIME=0, "
                "KMP_AFFINITY=granularity=fine,compact,1,0"
            ): Setting(
                omp_threads=cores,
                extra_env={"KMP_BLOCKTIME": "0", "KMP_AFFINITY": "granularity=fine,compact,1,0"},
            ),
        }
    if kind == "allocators":
        return {
            "glibc malloc": Setting(),
            **{name: Setting(allocator=path) for name, path in find_allocators().items()},
        }
    raise ValueError(f"kind must be one of {SWEEPS}, got {kind!r}")
