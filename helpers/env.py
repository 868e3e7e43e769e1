"""What machine and TensorFlow build this is, logical devices, and the workbook's scale knob.

Nothing here runs at import time. Functions that need TensorFlow import it when called, so
``scale()`` and the CPU readers work (and are cheap) in a process without TensorFlow.
"""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

#: The scale knob: ``small`` under the test command, ``full`` (the default) for learners.
SCALE_VAR = "WORKBOOK_SCALE"
SCALES = ("small", "full")

CPU_FEATURES = tuple(  #: CPU features that decide which kernels pay off, and oneDNN's default
    "avx avx2 fma avx_vnni avx512f avx512_vnni avx512_bf16 amx_tile amx_bf16 amx_int8".split()
)

DEVICE_TYPES = ("CPU", "GPU")

#: With one of these, TensorFlow's Linux x86 build turns oneDNN on by default (its IsMklEnabled in
#: util.cc; TensorFlow 2.9's release notes: "neural-network-focused hardware features such as
#: AVX512_VNNI, AVX512_BF16, AMX"); without, it leaves oneDNN off unless TF_ENABLE_ONEDNN_OPTS=1.
#: AVX_VNNI is on AVX2-only laptops too (Intel's 12th generation and later).
ONEDNN_DEFAULT_FEATURES = (
    "avx512_vnni",
    "avx_vnni",
    "avx512_bf16",
    "amx_tile",
    "amx_int8",
    "amx_bf16",
)
#: Instructions that compute bfloat16 in hardware: AVX-512 BF16 dot products, AMX tiles.
BF16_FLAGS = ("avx512_bf16", "amx_bf16")
#: ONEDNN_MAX_CPU_ISA caps that forbid oneDNN those instructions.
BF16_BLOCKING_ISAS = ("SSE41", "AVX", "AVX2", "AVX2_VNNI", "AVX512_CORE", "AVX512_CORE_VNNI")


def scale() -> str:
    """Return the workbook scale, ``"small"`` or ``"full"``, from ``$WORKBOOK_SCALE``."""
    value = os.environ.get(SCALE_VAR, "full").strip().lower() or "full"
    if value not in SCALES:
        raise ValueError(f"{SCALE_VAR}={value!r} is not a scale; use one of {SCALES}")
    return value


def sized(full: T, small: T) -> T:
    """Pick the full-size value for learners, the small one under the test command."""
    return small if scale() == "small" else full


def cpu_info(cpuinfo: str | None = None) -> dict[str, Any]:
    """The CPU model, core counts and instruction-set flags (``/proc/cpuinfo`` or the text)."""
    import psutil

    cpuinfo = _cpuinfo_text() if cpuinfo is None else cpuinfo
    flags, model = cpu_flags(cpuinfo), _cpuinfo_field(cpuinfo, "model name")
    return {
        "model": model or platform.processor() or platform.machine(),
        "physical_cores": psutil.cpu_count(logical=False) or 0,
        "logical_cores": psutil.cpu_count(logical=True) or 0,
        "features": {name: name in flags for name in CPU_FEATURES},
    }


def cpu_flags(cpuinfo: str | None = None) -> set[str]:
    """The instruction-set flags of the first CPU in ``/proc/cpuinfo`` (or the text given)."""
    text = _cpuinfo_text() if cpuinfo is None else cpuinfo
    return set(_cpuinfo_field(text, "flags", "features").split())


def _cpuinfo_text() -> str:
    path = Path("/proc/cpuinfo")  # Linux; elsewhere (macOS, Windows) no text and no flags
    return path.read_text(errors="replace") if path.exists() else ""


def _cpuinfo_field(cpuinfo: str, *keys: str) -> str:
    """The first non-empty value of one of ``keys`` in ``/proc/cpuinfo``'s text, or ""."""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() in keys and value.strip():
            return value.strip()
    return ""


def bf16_kernels(
    cpuinfo: str | None = None, onednn: bool | None = None, isa: str | None = None
) -> tuple[bool | None, str]:
    """Whether TensorFlow's CPU kernels compute bfloat16 in hardware here, and why, in one line:
    it takes AVX512_BF16 or AMX, oneDNN on (TensorFlow's own kernels emulate bfloat16), and no
    ``ONEDNN_MAX_CPU_ISA`` below them (``isa``: a cap a child process will run under; by default,
    or when empty, this process's own). None: not known (ARM with BF16; no CPU flags)."""
    from helpers import checks

    onednn = checks.optional_flag("onednn", onednn)
    if isa is not None and not isinstance(isa, str):
        raise checks.BadType(
            f"isa must be an ONEDNN_MAX_CPU_ISA value such as 'AVX512_CORE', got {isa!r}"
        )
    flags = cpu_flags(cpuinfo)
    have = [f.upper() for f in BF16_FLAGS if f in flags]
    onednn = onednn_enabled() if onednn is None else onednn
    cap = (isa or os.environ.get("ONEDNN_MAX_CPU_ISA", "")).strip().upper()
    slower = "mixed_bfloat16 is emulated here: expect it slower than float32"
    if not have and {"asimd", "bf16"} <= flags:  # aarch64 with Armv8.6 BF16
        why = "this ARM CPU has BF16 instructions; whether TensorFlow's aarch64 build uses them "
        return None, why + "depends on the build (oneDNN with ACL): not run for the workbook"
    if not flags:  # no /proc/cpuinfo (macOS, Windows): the CPU cannot be read here
        return None, "not known: no CPU flags to read here (no /proc/cpuinfo), so float32 is kept"
    if not have:
        why = "this CPU has no bfloat16 instructions (AVX512_BF16, AMX, ARM BF16)"
        return False, f"{why}: {slower}"
    if not onednn:
        return (
            False,
            f"this CPU has {', '.join(have)} but oneDNN is off, so nothing uses them: {slower}",
        )
    if cap in BF16_BLOCKING_ISAS:
        return (
            False,
            f"ONEDNN_MAX_CPU_ISA={cap} forbids oneDNN this CPU's {', '.join(have)}: {slower}",
        )
    return (
        True,
        f"this CPU computes bfloat16 in hardware ({', '.join(have)}) and oneDNN is on to use it",
    )


def onednn_enabled() -> bool:
    """Whether TensorFlow's oneDNN optimizations are on in this process (build and env var)."""
    try:
        from tensorflow.python.util import _pywrap_util_port
    except ImportError:  # pragma: no cover - only on unusual builds
        return False
    return bool(_pywrap_util_port.IsMklEnabled())


def onednn_status(cpuinfo: str | None = None) -> str:
    """One line: whether oneDNN is on in this process, and what decided it (the environment
    variable, or this CPU's features under TensorFlow's default), with any ISA cap."""
    on = onednn_enabled()
    forced = os.environ.get("TF_ENABLE_ONEDNN_OPTS", "").strip()
    have = [f.upper() for f in ONEDNN_DEFAULT_FEATURES if f in cpu_flags(cpuinfo)]
    if forced:
        why = f"TF_ENABLE_ONEDNN_OPTS={forced} is set"
    elif platform.machine().lower() not in ("x86_64", "amd64"):
        why = f"TensorFlow's default on {platform.machine()}"
    elif have:
        why = f"TensorFlow's default on a CPU with {', '.join(have)}"
    else:
        why = "TensorFlow's default on a CPU without AVX512_VNNI, AVX_VNNI, AVX512_BF16 or AMX"
    cap = os.environ.get("ONEDNN_MAX_CPU_ISA", "").strip()
    return f"oneDNN is {'on' if on else 'off'} here ({why}" + (
        f"; ONEDNN_MAX_CPU_ISA={cap})" if cap and on else ")"
    )


def usable_cores() -> int:
    """The logical CPUs this process may run on (its affinity: ``taskset``, a container's
    cpuset)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS, Windows: no affinity call
        return os.cpu_count() or 1


def machine_info() -> dict[str, Any]:
    """A JSON-ready summary of this machine and TensorFlow build (for reports and bench.json)."""
    import psutil
    import tensorflow as tf

    build = dict(tf.sysconfig.get_build_info())
    cpu = cpu_info()
    return {
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.machine()}",
        "tensorflow": tf.__version__,
        "cuda_build": bool(build.get("is_cuda_build", False)),
        "cuda_version": build.get("cuda_version", ""),
        "cudnn_version": build.get("cudnn_version", ""),
        "onednn": onednn_enabled(),
        "cpu_model": cpu["model"],
        "physical_cores": cpu["physical_cores"],
        "logical_cores": cpu["logical_cores"],
        "usable_cores": usable_cores(),
        "cpu_features": [name for name, has in cpu["features"].items() if has],
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "gpus": [d.name for d in tf.config.list_physical_devices("GPU")],
    }


def report() -> Any:
    """The environment as a two-column table: TensorFlow build, CPU, memory, devices.

    Lists logical devices, which initialises TensorFlow: call ``setup_logical_devices`` first.
    """
    import pandas as pd
    import tensorflow as tf

    info = machine_info()
    features = cpu_info()["features"]
    rows = [
        ("Python", info["python"]),
        ("TensorFlow", info["tensorflow"]),
        (
            "CUDA / cuDNN build",
            f"CUDA {info['cuda_version']}, cuDNN {info['cudnn_version']}"
            if info["cuda_build"]
            else "no (CPU-only build)",
        ),
        ("oneDNN optimizations", "on" if info["onednn"] else "off"),
        ("CPU", info["cpu_model"]),
        ("Cores (physical / logical)", f"{info['physical_cores']} / {info['logical_cores']}"),
        (
            "CPU features",
            ", ".join(f"{k.upper()} {'yes' if v else 'no'}" for k, v in features.items()),
        ),
        ("Memory", f"{info['memory_gib']} GiB"),
        ("Physical devices", ", ".join(_short(d.name) for d in tf.config.list_physical_devices())),
        ("Logical devices", ", ".join(_short(d.name) for d in tf.config.list_logical_devices())),
    ]
    return pd.DataFrame(rows, columns=["item", "value"]).set_index("item")


def _short(name: str) -> str:
    """``/physical_device:CPU:0`` or ``/job:localhost/.../device:CPU:0`` -> ``CPU:0``."""
    return name.rsplit("device:", 1)[-1]


def setup_logical_devices(n: int, device_type: str | None = None) -> list[Any]:
    """Split the first GPU (or, without one, the CPU) into ``n`` logical devices; return them.

    Safe to call again with the same ``n``. Asking for another layout once TensorFlow has
    initialised raises ``RuntimeError`` saying to restart the kernel. ``device_type`` forces
    ``"CPU"`` or ``"GPU"``; GPU logical devices get ``gpu_memory_mb`` each (1024 MiB).
    """
    import tensorflow as tf

    from helpers import checks

    # Logical devices run on the machine's CPUs: more than a few per CPU only adds overhead.
    checks.whole_number(
        "n", n, 1, f"logical devices; {os.cpu_count() or 1} logical CPUs here", checks.max_threads()
    )
    if device_type is not None and not isinstance(device_type, str):
        raise checks.BadType(f"device_type must be 'CPU', 'GPU' or None, got {device_type!r}")
    if device_type is None:
        device_type = "GPU" if tf.config.list_physical_devices("GPU") else "CPU"
    device_type = str(device_type).upper()
    if device_type not in DEVICE_TYPES:
        raise ValueError(f"unknown device type {device_type!r}; use one of {DEVICE_TYPES}")
    physical = tf.config.list_physical_devices(device_type)
    if not physical:
        raise ValueError(f"no physical {device_type} on this machine; use device_type='CPU'")
    config = tf.config.LogicalDeviceConfiguration
    wanted = [config(memory_limit=1024) if device_type == "GPU" else config() for _ in range(n)]
    current = tf.config.get_logical_device_configuration(physical[0])
    if _same_layout(current, wanted):
        return tf.config.list_logical_devices(device_type)
    try:
        tf.config.set_logical_device_configuration(physical[0], wanted)
    except RuntimeError as exc:
        have = len(current) if current else 1
        raise RuntimeError(
            f"TensorFlow has already started with {have} logical {device_type} device(s); "
            f"it cannot switch to {n}. Restart the kernel (Kernel > Restart) and run "
            f"setup_logical_devices({n}) before any other TensorFlow call."
        ) from exc
    return tf.config.list_logical_devices(device_type)


def _same_layout(current: Sequence[Any] | None, wanted: Sequence[Any]) -> bool:
    """Whether an existing logical-device configuration already is the one wanted."""
    if not current:
        return len(wanted) == 1 and wanted[0].memory_limit is None
    return len(current) == len(wanted) and all(
        c.memory_limit == w.memory_limit for c, w in zip(current, wanted, strict=True)
    )


def has_gpu() -> bool:
    """Whether TensorFlow sees a physical GPU."""
    import tensorflow as tf

    return bool(tf.config.list_physical_devices("GPU"))


def python_ok(version: Sequence[int] | None = None) -> bool:
    """Whether this Python is one TensorFlow 2.21 ships wheels for (3.10 to 3.13)."""
    major_minor = tuple(version or sys.version_info[:2])[:2]
    return (3, 10) <= major_minor <= (3, 13)
