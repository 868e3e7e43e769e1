"""What notebook 10's processes, sweeps and the TensorFlow wheel report: the allocator and
OpenMP runtime a process has loaded (read by the child program), the allocators installed, a
sweep's figure and one-line summary, and the instruction sets the wheel's generic code leaves
unused.
"""

from __future__ import annotations

import ctypes.util
import glob
import os
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from helpers import checks, procs, verdicts

#: Allocators that can replace glibc malloc through LD_PRELOAD: file names to look for.
ALLOCATORS: dict[str, tuple[str, ...]] = {
    "tcmalloc": (
        "libtcmalloc_minimal.so.4",
        "libtcmalloc.so.4",
        "libtcmalloc_minimal.so",
        "libtcmalloc.so",
    ),
    "jemalloc": ("libjemalloc.so.2", "libjemalloc.so"),
}
INSTALL_HINTS = {
    "tcmalloc": (
        "Debian/Ubuntu: sudo apt-get install libtcmalloc-minimal4 | "
        "conda: conda install -c conda-forge gperftools"
    ),
    "jemalloc": (
        "Debian/Ubuntu: sudo apt-get install libjemalloc2 | "
        "conda: conda install -c conda-forge jemalloc"
    ),
}
LIB_DIRS = (
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/lib",
)


def error_text(exc: BaseException) -> str:
    """The first line of an error, without TensorFlow's ``{{function_node ...}}`` prefix."""
    text = getattr(exc, "message", None) or str(exc)
    text = re.sub(r"\{\{function_node [^}]*\}\}\s*", "", text).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"


def _mapped_libraries() -> str:
    try:
        return Path("/proc/self/maps").read_text()
    except OSError:
        return ""


def _loaded_allocator(maps: str) -> str:
    """Which malloc replacement a process has mapped, from its /proc/<pid>/maps text."""
    if not maps:
        return "unknown"
    for name in ALLOCATORS:
        if name in maps:
            return name
    return "default"


def _openmp_runtime(maps: str) -> str:
    """Which OpenMP runtime a process has mapped (GNU libgomp, Intel libiomp), or "none"."""
    if not maps:
        return "unknown"
    found = [
        name for name, marker in (("libgomp", "libgomp"), ("libiomp", "libiomp")) if marker in maps
    ]
    return ", ".join(found) or "none"


def loaded_libraries() -> dict[str, str]:
    """Which allocator and OpenMP runtime this process has mapped: called by the child program."""
    maps = _mapped_libraries()  # read after the workload ran: everything it loaded is mapped
    return {"allocator": _loaded_allocator(maps), "openmp": _openmp_runtime(maps)}


def find_allocators(dirs: Sequence[str] = LIB_DIRS) -> dict[str, str]:
    """Installed malloc replacements: name -> library path, for those found."""
    found = {}
    prefix = os.environ.get("CONDA_PREFIX")
    search = [*dirs, *([os.path.join(prefix, "lib")] if prefix else [])]
    for name, files in ALLOCATORS.items():
        for directory in search:
            hits = [p for f in files for p in sorted(glob.glob(os.path.join(directory, f)))]
            if hits:
                found[name] = hits[0]
                break
        else:
            lib = ctypes.util.find_library(name.replace("tcmalloc", "tcmalloc_minimal"))
            if lib and os.path.isabs(lib):
                found[name] = lib
    return found


def sweep_figure(table: Any, title: str = "") -> Any:
    """Median ms with quartile bars for each setting, one panel per workload; errors marked."""
    from matplotlib.figure import Figure

    workloads = list(dict.fromkeys(table["workload"]))
    fig = Figure(
        figsize=(4.6 * len(workloads), 0.45 * table["setting"].nunique() + 1.8),
        layout="constrained",
    )
    for ax, workload in zip(
        fig.subplots(1, len(workloads), squeeze=False, sharex=True)[0], workloads, strict=True
    ):
        part = table[table["workload"] == workload]
        ok = part["error"] == ""
        y = range(len(part))
        medians = part["median_ms"].where(ok, 0)
        xerr = [(medians - part["q1_ms"]).where(ok, 0), (part["q3_ms"] - medians).where(ok, 0)]
        ax.barh(
            list(y),
            medians,
            xerr=xerr,
            color=["tab:blue" if o else "lightgray" for o in ok],
            capsize=3,
        )
        for i, o in enumerate(ok):
            if not o:
                ax.text(0, i, "  fails (see its error)", va="center", fontsize=9, color="tab:red")
        ax.set_yticks(list(y), part["setting"])
        ax.invert_yaxis()
        ax.set_xlabel("ms per step (median, IQR)")
        ax.set_title(workload)
    if title:
        fig.suptitle(title)
    return fig


def sweep_summary(
    table: Any, pairs: Any = (), expect: str | None = None, why: str = "", noun: str = "setting"
) -> str:
    """Per workload, one line per setting against the sweep's first (its baseline), read as
    ``verdicts.verdict`` reads a comparison (with ``expect`` and ``why``, whether each held): the
    ratio with its quartile ratios, or no clear difference. ``pairs``: more (setting, against)
    comparisons per workload (twice the cores against all); ``noun``: what lines call a setting."""
    import pandas as pd

    lines = []
    for workload, part in table.groupby("workload", sort=False):
        ok = part[part["error"] == ""].set_index("setting")
        failed = len(part) - len(ok)
        if ok.empty:
            lines.append(f"{workload}: every setting failed")
            continue
        base = ok.iloc[0]
        low, high = verdicts.quartile_ratios(base["q1_ms"], base["q3_ms"], ok["q1_ms"], ok["q3_ms"])
        rows = pd.DataFrame(
            {
                "median_s": ok["median_ms"] / 1e3,
                "q1_s": ok["q1_ms"] / 1e3,
                "q3_s": ok["q3_ms"] / 1e3,
                "repeats": ok["repeats"],
                "speedup": base["median_ms"] / ok["median_ms"],
                "speedup_low": low,
                "speedup_high": high,
            }
        )
        rows.attrs["baseline"] = ok.index[0]
        lines += [
            f"{workload}: " + verdicts.verdict(rows, name, expect=expect, why=why)
            for name in rows.index[1:]
        ]
        lines += [
            f"{workload}: " + verdicts.verdict(rows, name, baseline=against)
            for name, against in pairs
            if name in rows.index and against in rows.index
        ]
        if len(ok) == 1:
            lines.append(
                f"{workload}: {ok.index[0]} {base['median_ms']:.1f} ms (the only {noun} that ran)"
            )
        if failed:
            lines.append(f"{workload}: {failed} {noun}(s) failed")
    return "\n".join(lines)


def wheel_missing_instructions(stderr: str) -> list[str]:
    """Parse TensorFlow's start-up line "To enable the following instructions: AVX2 FMA, in
    other operations, rebuild TensorFlow ..." into the instruction sets the wheel leaves unused."""
    match = re.search(r"To enable the following instructions: (.*?), in other operations", stderr)
    return match.group(1).split() if match else []


@checks.arguments(timeout=checks.timeout)
def wheel_report(timeout: float = 120.0) -> list[str]:
    """Start TensorFlow in a fresh process with its info log on and return the instruction sets
    it says it was not built to use outside its performance-critical (oneDNN) kernels."""
    result = procs.run(
        [sys.executable, "-c", "import tensorflow"],
        env={"TF_CPP_MIN_LOG_LEVEL": "0"},
        timeout=timeout,
    )
    return wheel_missing_instructions(result.stderr)


def features_table(cpu_flags: Mapping[str, bool], missing: Sequence[str]) -> Any:
    """One row per instruction set: does this CPU have it (``cpu_flags``, as in
    ``env.cpu_info()["features"]``), and does the wheel use it everywhere or only in the kernels
    that pick their code at run time (oneDNN)."""
    import pandas as pd

    from helpers.env import CPU_FEATURES

    if not isinstance(cpu_flags, Mapping):
        raise TypeError(
            "cpu_flags must map instruction sets to True/False, "
            "as env.cpu_info()['features'] does, "
            f"got {type(cpu_flags).__name__}"
        )
    if isinstance(missing, str) or not isinstance(missing, Sequence):
        raise TypeError(
            f"missing must be a list of instruction set names, got {missing!r:.60}"
            + (f": write [{missing!r}]" if isinstance(missing, str) else "")
        )
    unused = {str(m).lower() for m in missing}
    rows = []
    for feature in CPU_FEATURES:
        has = bool(cpu_flags.get(feature, False))
        if not has:
            used = "-"
        elif feature in unused:
            used = "only in oneDNN kernels"
        else:
            used = "everywhere"
        rows.append(
            {
                "instruction set": feature.upper(),
                "this CPU": "yes" if has else "no",
                "the wheel uses it": used,
            }
        )
    return pd.DataFrame(rows).set_index("instruction set")


def fpmath_summary(default: Any, bf16: Any, why: str = "", expected: bool | None = None) -> str:
    """Read notebook 10's two saved outputs (float32 math, ``ONEDNN_DEFAULT_FPMATH_MODE=BF16``):
    how far each op's results moved, relative to their largest value; 0 means that kernel did not
    use bfloat16. ``expected``, ``why``: whether this machine should use it, and why
    (``onednn.fpmath_bf16``); a result against the expectation is said so."""
    import numpy as np

    expected, parts, moved_any = checks.optional_flag("expected", expected), [], False
    for name in ("conv", "matmul"):
        reference = np.asarray(default[name], dtype=np.float64)
        moved = float(
            np.max(np.abs(reference - np.asarray(bf16[name], dtype=np.float64)))
            / np.max(np.abs(reference))
        )
        moved_any = moved_any or moved > 0
        parts.append(
            f"the {name}'s outputs moved by up to {moved:.1e} of their largest value"
            + (" (unchanged: its kernel kept float32 math)" if moved == 0 else "")
        )
    said = "Under ONEDNN_DEFAULT_FPMATH_MODE=BF16, " + "; ".join(parts) + "."
    reason = f" ({why})." if why else "."
    if expected is not None and expected != moved_any:
        turn = (
            "Nothing moved, though bfloat16 was" if expected else "Results moved; bfloat16 was not"
        )
        return f"{said} {turn} expected here{reason}"
    if not moved_any:
        return said + " Nothing moved: no kernel used bfloat16 here" + reason
    return said + (
        " With 8 significant bits, bfloat16 arithmetic is expected to move results"
        " by about 1e-3 to 1e-2."
    )


def numa_summary(root: str = "/sys/devices/system/node") -> str:
    """How many NUMA nodes this Linux machine has (from sysfs), and what that means for pinning."""
    from pathlib import Path

    nodes = sorted(p.name for p in Path(root).glob("node[0-9]*")) if Path(root).is_dir() else []
    if not nodes:
        return "No NUMA information here (not Linux, or no sysfs): nothing to pin."
    if len(nodes) == 1:
        return (
            "This machine has 1 NUMA node: all its cores share one memory, "
            "so pinning has nothing to choose between."
        )
    return (
        f"This machine has {len(nodes)} NUMA nodes ({', '.join(nodes)}): a process that runs on "
        "one node's cores and allocates in another's memory pays for every remote access; "
        "pin each process to one node."
    )
