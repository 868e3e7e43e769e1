"""Reading oneDNN's verbose log (``ONEDNN_VERBOSE=1``: one line per kernel call on stdout):
which implementation oneDNN chose for each primitive and pass, and how long the calls took.
Plumbing for notebook 12 and its tests; oneDNN reads the variable when it first runs, so the
log comes from a fresh process."""

from __future__ import annotations

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


def kernel_summary(per_policy: dict[str, Any]) -> str:
    """Per policy, the convolution rows of a ``kernels`` table as a Series ((pass,
    implementation, dtype) -> total ms): the slowest pass and the implementation oneDNN chose
    for it, or that oneDNN ran none."""
    lines = []
    for policy, times in per_policy.items():
        if len(times) == 0:
            lines.append(
                f"{policy}: oneDNN ran no convolution "
                "(TensorFlow's own kernels did: oneDNN is off or capped)"
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
