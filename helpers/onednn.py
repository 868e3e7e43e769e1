"""Reading oneDNN's verbose log (``ONEDNN_VERBOSE=1``: one line per kernel call on stdout):
which implementation oneDNN chose for each primitive and pass, and how long the calls took.
Plumbing for notebook 12 and its tests; oneDNN reads the variable when it first runs, so the
log comes from a fresh process."""

from __future__ import annotations

import os
import re
from typing import Any

_DTYPE = re.compile(r"src[:_](\w+?)[:_]")


def kernels(stdout: str) -> Any:
    """oneDNN's ``ONEDNN_VERBOSE=1`` lines read as a table: each primitive, pass and
    implementation with its source dtype, the number of calls and their total milliseconds."""
    import pandas as pd

    totals: dict[tuple[str, str, str, str], list[float]] = {}
    for line in stdout.splitlines():
        fields = line.split(",")
        if len(fields) < 10 or fields[0] != "onednn_verbose" or fields[3] != "exec":
            continue
        dtype = _DTYPE.search(fields[8])
        key = (fields[5], fields[7], fields[6] or "-", dtype.group(1) if dtype else "?")
        entry = totals.setdefault(key, [0, 0.0])
        entry[0] += 1
        entry[1] += float(fields[-1]) if re.fullmatch(r"[\d.]+", fields[-1]) else 0.0
    rows = [
        {
            "primitive": k[0],
            "pass": k[1],
            "implementation": k[2],
            "dtype": k[3],
            "calls": int(v[0]),
            "total ms": round(v[1], 1),
        }
        for k, v in totals.items()
    ]
    columns = ["primitive", "pass", "implementation", "dtype", "calls", "total ms"]
    return pd.DataFrame(rows, columns=columns).sort_values(
        "total ms", ascending=False, ignore_index=True
    )


def kernel_summary(per_policy: dict[str, Any], cpuinfo: str | None = None) -> str:
    """Per policy, the convolution rows of a ``kernels`` table as a Series ((pass,
    implementation, dtype) -> total ms): the slowest pass and the implementation oneDNN chose
    for it, or that oneDNN ran none and why (for float16, from this CPU's flags)."""
    lines = []
    for policy, times in per_policy.items():
        if len(times) == 0:
            why = (
                "oneDNN is off or capped, TensorFlow does not hand this type to oneDNN on this "
                "CPU, or a GPU ran it"
            )
            if "float16" in policy and "bfloat16" not in policy:
                taken, reason = float16_kernels(cpuinfo, onednn=True)
                why = why if taken else reason
            lines.append(
                f"{policy}: oneDNN ran no convolution (TensorFlow's own kernels did: {why})"
            )
            continue
        (step, implementation, dtype), ms = max(times.items(), key=lambda item: item[1])
        fallback = (
            ", oneDNN's reference implementation (the slow fallback)"
            if implementation.startswith("ref")
            else ""
        )
        lines.append(
            f"{policy}: slowest pass {step} in {dtype} on {implementation}{fallback}: {ms:,.1f} ms"
        )
    return "\n".join(lines)


#: CPU flags with which TensorFlow 2.21 hands float16 ops to oneDNN: AVX512BW with AVX512_FP16 or
#: AMX_FP16, or AVX_NE_CONVERT (``IsDataTypeSupportedByOneDNNOnThisCPU`` in TensorFlow's
#: ``core/util/util.cc``). Without them its own (Eigen) kernels run float16.
F16_FLAGS = ("avx512_fp16", "amx_fp16", "avx_ne_convert")


def float16_kernels(cpuinfo: str | None = None, onednn: bool | None = None) -> tuple[bool, str]:
    """Whether TensorFlow hands float16 convolutions and matmuls to oneDNN here, and why."""
    from helpers import checks, env

    onednn = checks.optional_flag("onednn", onednn)
    flags = env.cpu_flags(cpuinfo)
    onednn = env.onednn_enabled() if onednn is None else onednn
    have = [f.upper() for f in F16_FLAGS if f in flags]
    if not onednn:
        return False, "oneDNN is off, so TensorFlow's own kernels run float16"
    if "avx_ne_convert" in flags or (have and "avx512bw" in flags):
        return True, f"this CPU has {', '.join(have)}, so TensorFlow hands float16 to oneDNN"
    return False, (
        "TensorFlow hands float16 to oneDNN only on CPUs with AVX512_FP16, AMX_FP16 or "
        "AVX_NE_CONVERT, and this one has none"
    )


def fpmath_bf16(
    cpuinfo: str | None = None, onednn: bool | None = None, isa: str | None = None
) -> tuple[bool, str]:
    """Whether ``ONEDNN_DEFAULT_FPMATH_MODE=BF16`` can change a float32 convolution here, and why:
    oneDNN computes float32 convolutions in bfloat16 only on its AMX kernels (``is_bf32`` needs
    ``avx512_core_amx`` in its x64 brgemm convolution code), so it takes AMX, oneDNN on, no cap."""
    from helpers import checks, env

    onednn = checks.optional_flag("onednn", onednn)
    if isa is not None and not isinstance(isa, str):
        raise checks.BadType(f"isa must be an ONEDNN_MAX_CPU_ISA value, got {isa!r}")
    flags = env.cpu_flags(cpuinfo)
    onednn = env.onednn_enabled() if onednn is None else onednn
    cap = (isa or os.environ.get("ONEDNN_MAX_CPU_ISA", "")).strip().upper()
    if not onednn:
        return False, "oneDNN is off, so nothing reads the variable"
    if "amx_bf16" not in flags:
        has = "AVX512_BF16 but no AMX" if "avx512_bf16" in flags else "no AMX"
        return False, (
            f"this CPU has {has}, and oneDNN computes float32 convolutions in bfloat16 only on "
            "its AMX kernels"
        )
    if cap and "AMX" not in cap and cap not in ("ALL", "DEFAULT"):
        return False, f"ONEDNN_MAX_CPU_ISA={cap} forbids oneDNN this CPU's AMX"
    return (
        True,
        "this CPU has AMX and oneDNN is on: its AMX kernels can compute float32 in bfloat16",
    )
