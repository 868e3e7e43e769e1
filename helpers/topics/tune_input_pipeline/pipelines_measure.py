"""Notebook 07's measurements and what they say: images per second of the notebook's
``training_runs`` with CPU use sampled (``throughputs``), which bound the pipeline hits
(``bound_verdict``), the throughput figure, the shuffle buffer's memory (``buffer_summary``) and the
crop windows of each way of augmenting (``augmentation_summary``). It also holds the image size,
the image limit and ``lesson()``, which ``helpers.topics.tune_input_pipeline.pipelines`` shares;
that module builds
the pipelines and re-exports what notebook 07 calls from here as ``pipelines.<name>``.
"""

from __future__ import annotations

from typing import Any

from helpers import checks, lessons
from helpers.timing import ProgressFn
from helpers.utilization import UtilizationSampler

#: The stored JPEGs' side, in pixels (the notebook trains on random crops of them).
IMAGE = 64
#: The most images a helper generates or reads (memory is checked too).
MAX_IMAGES = 10**7


def lesson() -> Any:
    """Notebook 07's exported lesson code (imported on use: it imports TensorFlow)."""
    return lessons.of("07_tune_input_pipeline")


def _crop_windows(originals: Any, crops: Any) -> list[tuple[int, int, bool] | None]:
    """For each augmented image (scaled to [-1, 1]), the (top, left, flipped) window of its
    original it was cut from, or None when no window matches."""
    import numpy as np

    scaled = np.asarray(originals, dtype=np.float32) / 127.5 - 1.0
    side = crops.shape[1]
    found: list[tuple[int, int, bool] | None] = []
    for original, crop in zip(scaled, np.asarray(crops), strict=True):
        hit = None
        for top in range(original.shape[0] - side + 1):
            for left in range(original.shape[1] - side + 1):
                window = original[top : top + side, left : left + side]
                for flipped, candidate in ((False, window), (True, window[:, ::-1])):
                    if hit is None and np.allclose(candidate, crop, atol=1e-4):
                        hit = (top, left, flipped)
        found.append(hit)
    return found


def augmentation_summary(originals: Any, draws: dict[str, dict[str, Any]]) -> str:
    """One line per way of augmenting: distinct crop windows in its first batch, whether a rebuilt
    pipeline repeats its first batch, whether the next epoch draws anew (07's section 6)."""
    import numpy as np

    lines = []
    for name, batches in draws.items():
        first = np.asarray(batches["first batch"])
        windows = _crop_windows(originals[: len(first)], first)
        distinct = len({(top, left) for top, left, _ in filter(None, windows)})
        unmatched = sum(w is None for w in windows)
        repeats = np.array_equal(first, batches["rebuilt"])
        renews = not np.array_equal(first, batches["next epoch"])
        lines.append(
            f"{name}: {len(first)} images cut at {distinct} distinct crop window(s)"
            + (f" ({unmatched} not matched to a window)" if unmatched else "")
            + f"; rebuilt, it {'repeats' if repeats else 'does not repeat'} its first batch;"
            f" the next epoch {'draws new crops' if renews else 'repeats the same crops'}."
        )
    return "\n".join(lines)


@checks.arguments(n_images=checks.whole(1, MAX_IMAGES), repeats=checks.repeats)
def throughputs(
    runs: dict[str, Any], n_images: int, repeats: int = 3, on_progress: ProgressFn | None = None
) -> Any:
    """Images per second of each of the notebook's ``training_runs(dataset, n_images)`` (``runs``),
    with CPU (and GPU) utilisation sampled during each run's timed repeats (its warm-up call runs
    before the sampler starts)."""
    import pandas as pd

    from helpers import timing

    if not isinstance(runs, dict) or list(runs) != ["data only", "compute only", "end to end"]:
        raise checks.BadType(
            f"runs must be training_runs(dataset, n_images), got {checks._show(runs)}"
        )
    rows = []
    for i, (name, fn) in enumerate(runs.items(), start=1):
        timing.force(fn())  # the warm-up (tracing, first batches), outside the sampled window
        with UtilizationSampler(interval=0.1) as sampler:  # so the CPU figures cover the timed runs
            measured = timing.measure(fn, warmup=0, repeats=repeats, items=n_images, label=name)
        usage = sampler.summary()
        per_core = usage.get("cpu_per_core")
        rows.append(
            {
                "run": name,
                "images_per_s": round(measured.throughput),
                "median_s": round(measured.median, 4),
                "cpu_mean": usage.get("cpu_mean"),
                "cpu_per_core": " / ".join(f"{v:.0f}%" for v in per_core) if per_core else "",
                "gpu_mean": usage.get("gpu_mean"),
            }
        )
        if on_progress is not None:
            on_progress(i, len(runs))
    table = pd.DataFrame(rows).set_index("run")
    table.attrs["fraction_of_bound"] = (
        table.loc["end to end", "images_per_s"] / table.loc["compute only", "images_per_s"]
    )
    return table


def bound_verdict(table: Any) -> str:
    """Which bound the pipeline hits, from a ``throughputs`` table."""
    data, compute = (
        table.loc["data only", "images_per_s"],
        table.loc["compute only", "images_per_s"],
    )
    e2e = table.loc["end to end", "images_per_s"]
    fraction = e2e / compute
    cpu = table.loc["end to end", "cpu_mean"]
    usage = f"; CPU {cpu:.0f}% busy" if cpu is not None and cpu == cpu else ""
    if data < compute:
        return (
            f"Input-bound: the pipeline alone gives {data:,.0f} img/s, "
            f"less than the model can take ({compute:,.0f} img/s); "
            f"end to end reaches {fraction:.0%} of the compute-only bound{usage}."
        )
    import tensorflow as tf

    if tf.config.list_physical_devices("GPU"):  # the model ran on a GPU: the cores are not shared
        gpu = table.loc["end to end"].get("gpu_mean") if "gpu_mean" in table.columns else None
        kernel = (
            f"; the GPU ran a kernel {gpu:.0f}% of the time"
            if gpu is not None and gpu == gpu
            else ""
        )
        return (
            f"Not input-bound: the pipeline alone gives {data:,.0f} img/s, "
            f"more than the model's {compute:,.0f}; "
            f"end to end reaches {fraction:.0%} of the compute-only bound{usage}{kernel}. "
            "The model ran on the GPU, so the CPU's shared-core limit does not apply."
        )
    shared = lesson().shared_core_limit(data, compute) / compute
    busy = [table.loc[run].get("cpu_mean") for run in ("data only", "compute only")]
    assumption = (
        " That limit assumes that data only and compute only each kept every core busy; "
        f"the CPU was {busy[0]:.0f}% and {busy[1]:.0f}% busy during them (every process on the "
        "machine counts): cores left idle are room for end to end to pass the limit."
        if all(isinstance(b, int | float) and b == b for b in busy)
        else ""
    )
    return (
        f"Not input-bound: the pipeline alone gives {data:,.0f} img/s, "
        f"more than the model's {compute:,.0f}; "
        f"end to end reaches {fraction:.0%} of the compute-only bound{usage}. "
        "If the pipeline's work and the model's take turns on the same cores, "
        f"the most to expect is {shared:.0%} of the bound.{assumption}"
    )


@checks.arguments(side=checks.whole(1, 65_536, hint="pixels"))
def buffer_summary(table: Any, side: int = IMAGE) -> str:
    """Read the shuffle-memory table (one fresh process per order): what each order added at peak,
    against the decoded pixels the buffer could hold."""
    decoded, encoded = (
        float(table.loc[order, "peak_added_mib"]) for order in ("decode-first", "shuffle-first")
    )
    held = int(min(table["images"].iloc[0], table["buffer"].iloc[0]))
    pixels = held * side * side * 3 / 2**20
    if decoded > 1.2 * max(encoded, 0.0):
        reading = (
            f"{decoded - encoded:,.0f} MiB more with decoded images in the buffer, as expected"
        )
    else:
        reading = (
            "no clear saving from shuffling the records first in this run, against the expectation"
        )
    return (
        "Peak memory the epoch added, one run each: "
        f"decode first {decoded:,.0f} MiB, shuffle first {encoded:,.0f} MiB: "
        f"{reading}. The buffer could hold {held:,} elements; "
        f"as decoded {side}x{side}x3 images they are {pixels:,.0f} MiB of pixels."
    )


def throughput_figure(table: Any, title: str = "") -> Any:
    """Bars of data-only, compute-only and end-to-end images per second."""
    from matplotlib.figure import Figure

    from helpers import widgets

    fig = Figure(figsize=(6.4, 2.4), layout="constrained")
    ax = fig.add_subplot()
    colors = ["#1f77b4", "#9e9e9e", "#ff7f0e"]
    ax.barh(list(table.index), table["images_per_s"], color=colors[: len(table)])
    ax.invert_yaxis()
    ax.set_xlabel("images per second (median)")
    for y, value in enumerate(table["images_per_s"]):
        ax.annotate(f"  {value:,.0f}", (value, y), va="center", fontsize=9)
    ax.margins(x=0.25)
    widgets.set_title(ax, title)
    return fig
