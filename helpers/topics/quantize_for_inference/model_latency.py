"""Latency of quantized models against their size (notebook 11, sections 4 and 5): MobileNetV2
built with ``weights=None`` and converted by the notebook's ``convert``, timed with its ``run``
through LiteRT on chosen thread counts, beside the small CNN and a one-unit model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from helpers import checks
from helpers.checks import whole_number
from helpers.comparison import Comparison
from helpers.timing import ProgressFn
from helpers.topics.quantize_for_inference.quant_models import KIB, convert, runners

#: Instructions that multiply int8 numbers into 32-bit sums in one step, as /proc/cpuinfo names
#: them: VNNI on x86 (AVX512_VNNI, AVX_VNNI, AMX's int8 tiles), the dot-product and int8
#: matrix-multiply extensions on ARM (asimddp, i8mm). XNNPACK, LiteRT's CPU back end, picks its
#: int8 kernels by the instructions it finds; without these it widens int8 to 16 bits and uses
#: 16-bit multiply-adds (AVX2's vpmaddwd, ARM's smlal).
INT8_DOT_PRODUCTS = ("avx512_vnni", "avx_vnni", "amx_int8", "asimddp", "i8mm")


def int8_instructions(cpuinfo: str | None = None) -> str:
    """One line: this CPU and its integer dot-product instructions (``INT8_DOT_PRODUCTS``), read
    from /proc/cpuinfo, or from ``cpuinfo``, that file's text."""
    from helpers import env

    if cpuinfo is not None and not isinstance(cpuinfo, str):
        raise checks.BadType(f"cpuinfo must be /proc/cpuinfo's text or None, got {cpuinfo!r}")
    model, flags = env.cpu_info(cpuinfo)["model"], env.cpu_flags(cpuinfo)
    if not flags:
        return f"{model}: this system does not list its CPU's instructions (Linux's /proc/cpuinfo)"
    have = [name.upper() for name in INT8_DOT_PRODUCTS if name in flags]
    if have:
        return f"{model}: integer dot-product instructions {', '.join(have)}"
    return (
        f"{model}: no integer dot-product instructions (no VNNI, no ARM dot product): "
        "int8 goes through 16-bit multiply-adds here"
    )


@checks.arguments(repeats=checks.repeats)
def latency_table(
    contents: Mapping[str, bytes],
    image: Any,
    threads: Sequence[int] = (1, 2),
    repeats: int = 30,
    on_progress: ProgressFn | None = None,
) -> Any:
    """Median single-image latency (ms, with quartiles) of each model on each thread count, all
    interleaved, and each mode's speed-up over float32 at the same thread count."""
    import pandas as pd

    from helpers import timing

    whole_number("repeats", repeats)
    for n in threads:
        whole_number("threads", n)
    calls = {(mode, n): run for n in threads for mode, run in runners(contents, image, n).items()}
    labels = {key: f"{key[0]}, {key[1]} thread{'s' if key[1] > 1 else ''}" for key in calls}
    table = timing.compare(
        {labels[k]: run for k, run in calls.items()},
        warmup=3,
        repeats=repeats,
        on_progress=on_progress,
    )
    timings = table.attrs["timings"]
    rows = []
    for (mode, n), label in labels.items():
        t, base = timings[label], timings.get(labels.get(("float32", n), ""), None)
        rows.append(
            {
                "mode": mode,
                "threads": n,
                "size MiB": round(len(contents[mode]) / 2**20, 2),
                "median ms": round(t.median * 1e3, 2),
                "q1 ms": round(t.q1 * 1e3, 2),
                "q3 ms": round(t.q3 * 1e3, 2),
                "speed-up vs float32": f"{base.median / t.median:.2f}x" if base else "-",
            }
        )
    result = pd.DataFrame(rows).set_index(["mode", "threads"])
    result.attrs["timings"] = {key: timings[label] for key, label in labels.items()}
    return result


def latency_figure(table: Any, title: str = "") -> Any:
    """Median latency with quartile bars per mode, one bar per thread count."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 0.4 * len(table) + 1.6), layout="constrained")
    ax = fig.add_subplot()
    labels = [f"{mode}, {n} thr" for mode, n in table.index]
    med = table["median ms"]
    ax.barh(
        labels,
        med,
        xerr=[(med - table["q1 ms"]).clip(lower=0), (table["q3 ms"] - med).clip(lower=0)],
        color=["tab:blue" if n == 1 else "tab:orange" for _, n in table.index],
        capsize=3,
    )
    ax.invert_yaxis()
    ax.set_xlabel("ms per image (median, IQR)")
    ax.set_title(title)
    return fig


def latency_summary(table: Any) -> str:
    """Each quantized mode against float32 at the same thread count, one line each, with the
    spread and "no clear difference" where the quartiles overlap (``verdicts.verdict``)."""
    from helpers import verdicts

    timings = table.attrs.get("timings", {})
    label = {key: f"{key[0]}, {key[1]} thread{'s' if key[1] > 1 else ''}" for key in timings}
    lines = [
        verdicts.verdict_of(
            {label[k]: t for k, t in timings.items()}, label[(mode, n)], label[("float32", n)]
        )
        for (mode, n) in timings
        if mode != "float32" and ("float32", n) in timings
    ]
    return "\n".join(lines) or "only float32 was timed"


@checks.arguments(size=checks.whole(32, 1024), repeats=checks.repeats)
def mobilenet_experiment(
    size: int = 224,
    modes: Sequence[str] = ("float32", "int8"),
    repeats: int = 20,
    threads: Sequence[int] = (1, 2),
    on_progress: ProgressFn | None = None,
) -> Any:
    """MobileNetV2 (``weights=None``) at ``size`` x ``size``, converted to ``modes`` (int8
    calibrated on 50 random images), then ``latency_table``: notebook 11's second widget."""
    import keras
    import numpy as np

    whole_number("size", size, minimum=32)
    model = keras.applications.MobileNetV2(input_shape=(size, size, 3), weights=None)
    calibration = np.random.default_rng(0).uniform(-1, 1, (50, size, size, 3)).astype(np.float32)
    contents = {mode: convert(model, mode, calibration) for mode in modes}
    return latency_table(
        contents, calibration[:1], threads=threads, repeats=repeats, on_progress=on_progress
    )


@checks.arguments(repeats=checks.repeats)
def size_latency_table(
    models: Mapping[str, tuple[Mapping[str, bytes], Any]], repeats: int = 30
) -> Any:
    """For each named model (its converted versions and one input image): float32 size, and the
    single-thread latency of float32 and int8 (interleaved within each model), with int8's
    speed-up."""
    import pandas as pd

    from helpers import timing

    rows, timings = [], {}
    for name, (contents, image) in models.items():  # one model at a time: a large model's weights
        picked = {
            mode: contents[mode] for mode in ("float32", "int8")
        }  # would evict a small one's from cache
        t = timing.compare(runners(picked, image, 1), warmup=3, repeats=repeats).attrs["timings"]
        rows.append(
            {
                "model": name,
                "float32 KiB": round(len(contents["float32"]) / KIB, 1),
                "float32 us": round(t["float32"].median * 1e6, 1),
                "int8 us": round(t["int8"].median * 1e6, 1),
                "int8 speed-up": round(t["float32"].median / t["int8"].median, 2),
            }
        )
        timings[name] = t
    table = pd.DataFrame(rows).set_index("model")
    table.attrs["timings"] = timings  # per model: {"float32": Timing, "int8": Timing}
    return table


def size_latency_summary(table: Any) -> str:
    """int8 against float32 on one thread, per model, smallest model first: one verdict line
    each, with the spread (``verdicts.verdict``)."""
    from helpers import verdicts

    timings = table.attrs.get("timings", {})
    return "int8 against float32, one thread, per model:\n" + "\n".join(
        f"{name} (float32 {row['float32 us']:.1f} us): "
        + verdicts.verdict_of(timings[name], "int8", "float32")
        for name, row in table.iterrows()
        if name in timings
    )


def size_latency_figure(table: Any) -> Any:
    """Latency against float32 model size, log-log, float32 and int8."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 3.4), layout="constrained")
    ax = fig.add_subplot()
    for column, marker in (("float32 us", "o"), ("int8 us", "s")):
        ax.plot(table["float32 KiB"], table[column], marker=marker, label=column.split()[0])
    for name, row in table.iterrows():
        ax.annotate(
            f" {name}: int8 {row['int8 speed-up']:.2f}x",
            (row["float32 KiB"], row["int8 us"]),
            fontsize=8,
        )
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="float32 model size, KiB",
        ylabel="us per image, 1 thread (median)",
        title="latency against model size",
    )
    ax.legend()
    return fig


def _mobilenet_latency(small: bool = False, repeats: int = 30) -> Any:
    """MobileNetV2 (224x224, or 96x96 quick), one image, one thread: float32 vs int8."""
    from helpers import timing

    size = 96 if small else 224
    timings = mobilenet_experiment(size, ("float32", "int8"), repeats=repeats, threads=(1,)).attrs[
        "timings"
    ]
    return timing.comparison_table(
        {mode: timings[(mode, 1)] for mode in ("float32", "int8")}, "float32"
    )


BENCHMARKS = [
    Comparison(
        id="quantize_for_inference.int8_latency",
        title="MobileNetV2 224x224 (weights=None), one image, one LiteRT thread: float32 vs int8",
        measure=_mobilenet_latency,
        baseline="float32",
        variant="int8",
        quick={"small": True, "repeats": 10},
        full={"repeats": 30},
    ),
]
