"""Notebook 07's plumbing: the JPEG shards, the training workload, throughput with CPU use sampled,
the widget's experiment, the exercise check and the bench ids. The pipelines themselves are the
notebook's ``#| export`` cells, imported from ``helpers.lessons.tune_input_pipeline``."""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any

from helpers import checks, lessons
from helpers.comparison import Comparison
from helpers.exercises import Feedback, correct, counting_calls, not_yet
from helpers.timing import ProgressFn
from helpers.utilization import UtilizationSampler

IMAGE = 64
CROP = 56
CACHES = ("none", "before_map", "after_decode")
MAX_BATCH, MAX_IMAGES = 65536, 10**7  # images per batch; generated images (memory is checked too)


def lesson() -> Any:
    """Notebook 07's exported lesson code (imported on use: it imports TensorFlow)."""
    return lessons.of("07_tune_input_pipeline")


@dataclass(frozen=True)
class Options:
    """The switches of the notebook's ``make_pipeline``, checked (notebook 14's stages use them)."""

    source: str = "tfrecord"  # "generator": Python prepares every batch (the feed_dict analogue)
    parallel: bool = False
    vectorized: bool = False
    interleave: bool = False
    cache: str = "none"  # "before_map" (raw records) or "after_decode" (decoded, before augmenting)
    prefetch: bool = False
    batch: int = 64

    def __post_init__(self) -> None:
        checks.one_of("generator", "tfrecord")("source", self.source)
        checks.one_of(*CACHES)("cache", self.cache)
        for name in ("parallel", "vectorized", "interleave", "prefetch"):  # "no" is truthy: it would turn it on
            checks.flag(name, getattr(self, name))
        checks.whole_number("batch", self.batch, 1, "images per batch", MAX_BATCH)


def build(shards: Sequence[str], options: Options = Options()) -> Any:
    """The notebook's ``make_pipeline(shards, **options)``: batches of (float32 [B, 56, 56, 3], label)."""
    shards = checks.paths("shards", shards)  # one path as a string would become one path per character
    if not isinstance(options, Options):
        raise checks.BadType(f"options must be a pipelines.Options, got {type(options).__name__}")
    return lesson().make_pipeline(shards, **asdict(options))


@checks.arguments(batch=checks.whole(1, MAX_BATCH), seed=checks.seed)
def python_batches(shards: Sequence[str], batch: int, seed: int) -> Iterator[tuple[Any, Any]]:
    """The notebook's Python feed (``python_batches``), for notebook 14's naive stage."""
    return lesson().python_batches(checks.paths("shards", shards), batch, seed)


def make_jpeg_shards(out_dir: Path, n: int, n_shards: int = 4, seed: int = 7) -> list[str]:
    """``n`` generated 64x64 JPEGs in ``n_shards`` verified TFRecord shards (re-runs reuse them)."""
    import tensorflow as tf

    from helpers.topics import cifar, tfrecords

    checks.whole_number("n", n, 1, "images", MAX_IMAGES), checks.seed("seed", seed)
    checks.whole_number("n_shards", n_shards, 1, f"at most n={n}: every shard holds at least one image", n)
    checks.fits_memory(f"make_jpeg_shards(n={n})", n * (IMAGE * IMAGE * 3 * 5))  # uint8 + float32 resize
    small, labels = cifar.synthetic_images(n, seed)
    images = tf.cast(tf.image.resize(small, [IMAGE, IMAGE]), tf.uint8).numpy()
    tfrecords.convert(images, labels, Path(out_dir), "jpeg", n_shards=n_shards, encoding="jpeg", progress=False)
    return tfrecords.shard_paths(Path(out_dir), "jpeg")


def read_epoch(dataset: Any) -> int:
    """Read one full pass of a dataset of (image batch, label batch); return the image count."""
    return sum(int(images.shape[0]) for images, _ in dataset)



def epoch_timers(datasets: dict[str, Any]) -> dict[str, Any]:
    """``{name: dataset}`` -> ``{name: a call that reads one epoch}``, what ``timing.compare`` times."""
    if not isinstance(datasets, dict) or not datasets:
        raise ValueError(f"datasets must be a non-empty dict of name -> tf.data.Dataset, got {datasets!r}")
    return {name: (lambda d=dataset: read_epoch(d)) for name, dataset in datasets.items()}


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
                window = original[top:top + side, left:left + side]
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
        windows = _crop_windows(originals[:len(first)], first)
        distinct = len({(top, left) for top, left, _ in filter(None, windows)})
        unmatched = sum(w is None for w in windows)
        repeats = np.array_equal(first, batches["rebuilt"])
        renews = not np.array_equal(first, batches["next epoch"])
        lines.append(f"{name}: {len(first)} images cut at {distinct} distinct crop window(s)"
                     + (f" ({unmatched} not matched to a window)" if unmatched else "")
                     + f"; rebuilt, it {'repeats' if repeats else 'does not repeat'} its first batch;"
                     f" the next epoch {'draws new crops' if renews else 'repeats the same crops'}.")
    return "\n".join(lines)

@checks.arguments(n_images=checks.whole(1, MAX_IMAGES), repeats=checks.repeats)
def throughputs(runs: dict[str, Any], n_images: int, repeats: int = 3, on_progress: ProgressFn | None = None) -> Any:
    """Images per second of each of the notebook's ``training_runs(dataset, n_images)`` (``runs``),
    with CPU (and GPU) utilisation sampled during the end-to-end runs."""
    import pandas as pd

    from helpers import timing

    if not isinstance(runs, dict) or list(runs) != ["data only", "compute only", "end to end"]:
        raise checks.BadType(f"runs must be training_runs(dataset, n_images), got {checks._show(runs)}")
    rows = []
    for i, (name, fn) in enumerate(runs.items(), start=1):
        if name == "end to end":
            with UtilizationSampler(interval=0.1) as sampler:
                measured = timing.measure(fn, repeats=repeats, items=n_images, label=name)
            usage = sampler.summary()
        else:
            measured, usage = timing.measure(fn, repeats=repeats, items=n_images, label=name), {}
        per_core = usage.get("cpu_per_core")
        rows.append({"run": name, "images_per_s": round(measured.throughput), "median_s": round(measured.median, 4),
                     "cpu_mean": usage.get("cpu_mean"),
                     "cpu_per_core": " / ".join(f"{v:.0f}%" for v in per_core) if per_core else "",
                     "gpu_mean": usage.get("gpu_mean")})
        if on_progress is not None:
            on_progress(i, len(runs))
    table = pd.DataFrame(rows).set_index("run")
    table.attrs["fraction_of_bound"] = table.loc["end to end", "images_per_s"] / table.loc["compute only", "images_per_s"]
    return table


def bound_verdict(table: Any) -> str:
    """Which bound the pipeline hits, from a ``throughputs`` table."""
    data, compute = table.loc["data only", "images_per_s"], table.loc["compute only", "images_per_s"]
    e2e = table.loc["end to end", "images_per_s"]
    fraction = e2e / compute
    cpu = table.loc["end to end", "cpu_mean"]
    usage = f"; CPU {cpu:.0f}% busy" if cpu is not None and cpu == cpu else ""
    if data < compute:
        return (f"Input-bound: the pipeline alone gives {data:,.0f} img/s, less than the model can take "
                f"({compute:,.0f} img/s); end to end reaches {fraction:.0%} of the compute-only bound{usage}.")
    shared = lesson().shared_core_limit(data, compute) / compute
    return (f"Not input-bound: the pipeline alone gives {data:,.0f} img/s, more than the model's {compute:,.0f}; "
            f"end to end reaches {fraction:.0%} of the compute-only bound{usage}. If the pipeline's work and the "
            f"model's share the same cores, the most to expect is {shared:.0%} of the bound.")


@checks.arguments(side=checks.whole(1, 65_536, hint="pixels"))
def buffer_summary(table: Any, side: int = IMAGE) -> str:
    """Read the shuffle-memory table (one fresh process per order): what each order added at peak,
    against the decoded pixels the buffer could hold."""
    decoded, encoded = (float(table.loc[order, "peak_added_mib"]) for order in ("decode-first", "shuffle-first"))
    held = int(min(table["images"].iloc[0], table["buffer"].iloc[0]))
    pixels = held * side * side * 3 / 2**20
    if decoded > 1.2 * max(encoded, 0.0):
        reading = f"{decoded - encoded:,.0f} MiB more with decoded images in the buffer, as expected"
    else:
        reading = "no clear saving from shuffling the records first in this run, against the expectation"
    return (f"Peak memory the epoch added, one run each: decode first {decoded:,.0f} MiB, shuffle first {encoded:,.0f} MiB: "
            f"{reading}. The buffer could hold {held:,} elements; as decoded {side}x{side}x3 images they are "
            f"{pixels:,.0f} MiB of pixels.")


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


@checks.arguments(n_images=checks.whole(1, MAX_IMAGES))
def toggles_experiment(shards: Sequence[str], n_images: int) -> Any:
    """For the widget: ``experiment(parallel=..., ..., on_progress=...)`` -> a throughputs table."""

    def experiment(source: str = "tfrecord", parallel: bool = False, vectorized: bool = False,
                   interleave: bool = False, cache_after_decode: bool = False, prefetch: bool = False,
                   on_progress: ProgressFn | None = None) -> Any:
        options = Options(source=source, parallel=parallel, vectorized=vectorized, interleave=interleave,
                          cache="after_decode" if cache_after_decode else "none", prefetch=prefetch)
        return throughputs(lesson().training_runs(build(shards, options), n_images), n_images, repeats=2,
                           on_progress=on_progress)

    return experiment


@checks.arguments(n_images=checks.whole(1, MAX_IMAGES))
def check_reordered(make: Any, shards: Sequence[str], n_images: int) -> Feedback:
    """Exercise (07): ``make(shards)`` reads each image once per epoch, decodes each only in the first
    of two epochs (JPEG decodes counted), and augments afresh (not the same images, in any order)."""
    import numpy as np
    import tensorflow as tf

    with counting_calls((tf.io, tf.image), "decode_jpeg") as decodes:
        try:  # the decode function given only to an answer that takes one (the notebook's stub does)
            takes = "decode" in inspect.signature(make).parameters
            dataset = make(list(shards), decode=lesson().decode_record) if takes else make(list(shards))
        except Exception as exc:  # the learner's code
            return not_yet(f"calling your function raised {type(exc).__name__}: {exc}")
        try:
            if int(dataset.cardinality()) == int(tf.data.INFINITE_CARDINALITY):
                return not_yet("the pipeline repeats forever: leave .repeat() out, one pass is one epoch.")
            # One iterator: with a global seed, a second would replay the first one's random draws.
            batches = [(x.numpy(), y.numpy()) for x, y in dataset.repeat(2)]
        except Exception as exc:  # the learner's code
            return not_yet(f"reading your pipeline raised {type(exc).__name__}: {exc}")
        counted = int(decodes.numpy())
    total = sum(len(y) for _, y in batches)
    if total != 2 * n_images:
        return not_yet(f"two epochs gave {total} images, not {n_images} each: no repeat, no drop.")
    images = np.concatenate([x for x, _ in batches])
    first, second = ({image.tobytes() for image in part} for part in (images[:n_images], images[n_images:]))
    if first == second:
        return not_yet("the second epoch replayed the first one's images (in some order): augmentation before the cache.")
    if counted != n_images:
        return not_yet(f"{counted} JPEG decodes for {n_images} images over two epochs: cache right after the "
                       "decode, so that only the first epoch decodes.")
    return correct(f"{n_images} decodes for two epochs of {n_images} images, and fresh augmentation in each.")


def _bench_shards(n: int) -> list[str]:
    import tempfile

    return make_jpeg_shards(Path(tempfile.gettempdir()) / f"workbook-bench-jpeg-{n}", n)


TUNED = Options(parallel=True, vectorized=True, interleave=True, cache="after_decode", prefetch=True)


def _generator_vs_tfdata(n: int = 1024) -> dict[str, Any]:
    shards = _bench_shards(n)
    return {"Python generator": partial(read_epoch, build(shards, Options(source="generator"))),
            "tf.data tuned": partial(read_epoch, build(shards, TUNED))}


def _sequential_vs_tuned(n: int = 1024) -> dict[str, Any]:
    shards = _bench_shards(n)
    return {"sequential": partial(read_epoch, build(shards, Options())), "tuned": partial(read_epoch, build(shards, TUNED))}


def _e2e_vs_compute_bound(n: int = 1024) -> dict[str, Any]:
    runs = lesson().training_runs(build(_bench_shards(n), TUNED), n)
    return {"compute only": runs["compute only"], "end to end": runs["end to end"]}


BENCHMARKS = [
    Comparison(id="pipeline.generator_vs_tfdata", title="one epoch of JPEG decode + augment: Python generator vs tuned tf.data",
               make_variants=_generator_vs_tfdata, baseline="Python generator", variant="tf.data tuned",
               quick={"n": 512}, full={"n": 4096}, repeats=5, min_time=0.0),
    Comparison(id="pipeline.sequential_vs_tuned", title="one epoch: sequential map -> batch vs the tuned pipeline",
               make_variants=_sequential_vs_tuned, baseline="sequential", variant="tuned",
               quick={"n": 512}, full={"n": 4096}, repeats=5, min_time=0.0),
    Comparison(id="pipeline.e2e_vs_compute_bound",
               title="training epoch: end to end on the tuned pipeline as a fraction of the compute-only bound (<= 1)",
               make_variants=_e2e_vs_compute_bound, baseline="compute only", variant="end to end",
               quick={"n": 512}, full={"n": 4096}, repeats=5, min_time=0.0, kind="share of bound"),
]
