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

#: CPU features that decide which TensorFlow kernels and builds pay off.
CPU_FEATURES = ("avx", "avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile")

DEVICE_TYPES = ("CPU", "GPU")


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
    """Read the CPU model, core counts and instruction-set flags (Linux ``/proc/cpuinfo``).

    ``cpuinfo`` takes the file's text for tests; elsewhere (macOS, Windows) the flags are empty.
    """
    import psutil

    if cpuinfo is None:
        path = Path("/proc/cpuinfo")
        cpuinfo = path.read_text(errors="replace") if path.exists() else ""
    model, flags = platform.processor() or platform.machine(), set()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key == "model name" and value.strip():
            model = value.strip()
        elif key in ("flags", "features") and not flags:
            flags = set(value.split())
    return {
        "model": model,
        "physical_cores": psutil.cpu_count(logical=False) or 0,
        "logical_cores": psutil.cpu_count(logical=True) or 0,
        "features": {name: name in flags for name in CPU_FEATURES},
    }


def onednn_enabled() -> bool:
    """Whether TensorFlow's oneDNN optimizations are on in this process (build and env var)."""
    try:
        from tensorflow.python.util import _pywrap_util_port
    except ImportError:  # pragma: no cover - only on unusual builds
        return False
    return bool(_pywrap_util_port.IsMklEnabled())


def usable_cores() -> int:
    """The logical CPUs this process may run on (its affinity: ``taskset``, a container's cpuset)."""
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
        ("CPU features", ", ".join(f"{k.upper()} {'yes' if v else 'no'}" for k, v in features.items())),
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

    # Each logical CPU device brings its own thread pools: bounded by the machine's CPUs.
    checks.whole_number("n", n, 1, f"logical devices; {os.cpu_count() or 1} logical CPUs here", checks.max_threads())
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
