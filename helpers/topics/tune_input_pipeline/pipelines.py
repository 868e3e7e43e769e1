"""Notebook 07's plumbing: the JPEG shards, the pipeline's switches, the widget's experiment, the
exercise check and the bench ids; throughput with CPU use sampled and the readings of the
measurements are in ``helpers.topics.tune_input_pipeline.pipelines_measure``. The pipelines
themselves are the
notebook's ``#| export`` cells, imported from ``helpers.lessons.tune_input_pipeline``."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any

from helpers import checks, timing
from helpers.comparison import Comparison
from helpers.timing import ProgressFn
from helpers.topics.tune_input_pipeline.pipeline_check import check_reordered as check_reordered

# The names imported "as" themselves are re-exported: notebook 07 calls pipelines.<name>.
from helpers.topics.tune_input_pipeline.pipelines_measure import (
    IMAGE,
    MAX_IMAGES,
    lesson,
    throughputs,
)
from helpers.topics.tune_input_pipeline.pipelines_measure import (
    augmentation_summary as augmentation_summary,
)
from helpers.topics.tune_input_pipeline.pipelines_measure import bound_verdict as bound_verdict
from helpers.topics.tune_input_pipeline.pipelines_measure import buffer_summary as buffer_summary
from helpers.topics.tune_input_pipeline.pipelines_measure import (
    throughput_figure as throughput_figure,
)

CROP = 56
CACHES = ("none", "before_map", "after_decode")
MAX_BATCH = 65536  # images per batch


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
        for name in (
            "parallel",
            "vectorized",
            "interleave",
            "prefetch",
        ):  # "no" is truthy: it would turn it on
            checks.flag(name, getattr(self, name))
        checks.whole_number("batch", self.batch, 1, "images per batch", MAX_BATCH)


def build(shards: Sequence[str], options: Options = Options()) -> Any:
    """The notebook's ``make_pipeline(shards, **options)``: batches of (float32 [B, 56, 56, 3],
    label)."""
    shards = checks.paths(
        "shards", shards
    )  # one path as a string would become one path per character
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

    from helpers.datasets import cifar
    from helpers.topics.pack_files_into_shards import tfrecords

    checks.whole_number("n", n, 1, "images", MAX_IMAGES), checks.seed("seed", seed)
    checks.whole_number(
        "n_shards", n_shards, 1, f"at most n={n}: every shard holds at least one image", n
    )
    checks.fits_memory(
        f"make_jpeg_shards(n={n})", n * (IMAGE * IMAGE * 3 * 5)
    )  # uint8 + float32 resize
    small, labels = cifar.synthetic_images(n, seed)
    images = tf.cast(tf.image.resize(small, [IMAGE, IMAGE]), tf.uint8).numpy()
    tfrecords.convert(
        images, labels, Path(out_dir), "jpeg", n_shards=n_shards, encoding="jpeg", progress=False
    )
    return tfrecords.shard_paths(Path(out_dir), "jpeg")


def read_epoch(dataset: Any) -> int:
    """Read one full pass of a dataset of (image batch, label batch) from a new iterator, as a
    ``for`` loop does; return the image count. The timer deletes the spent iterator after its
    clock stops (``timing.read_pass``): that deletion's wait is section 4's subject, timed there."""
    return timing.read_pass(dataset)


def epoch_timers(datasets: dict[str, Any]) -> dict[str, Any]:
    """``{name: dataset}`` -> ``{name: a call that reads one epoch}``, what ``timing.compare``
    times."""
    if not isinstance(datasets, dict) or not datasets:
        raise ValueError(
            f"datasets must be a non-empty dict of name -> tf.data.Dataset, got {datasets!r}"
        )
    return {name: (lambda d=dataset: read_epoch(d)) for name, dataset in datasets.items()}


@checks.arguments(n_images=checks.whole(1, MAX_IMAGES))
def toggles_experiment(shards: Sequence[str], n_images: int) -> Any:
    """For the widget: ``experiment(parallel=..., ..., on_progress=...)`` -> a throughputs table."""

    def experiment(
        source: str = "tfrecord",
        parallel: bool = False,
        vectorized: bool = False,
        interleave: bool = False,
        cache_after_decode: bool = False,
        prefetch: bool = False,
        on_progress: ProgressFn | None = None,
    ) -> Any:
        options = Options(
            source=source,
            parallel=parallel,
            vectorized=vectorized,
            interleave=interleave,
            cache="after_decode" if cache_after_decode else "none",
            prefetch=prefetch,
        )
        return throughputs(
            lesson().training_runs(build(shards, options), n_images),
            n_images,
            repeats=2,
            on_progress=on_progress,
        )

    return experiment


def _bench_shards(n: int) -> list[str]:
    import tempfile

    return make_jpeg_shards(Path(tempfile.gettempdir()) / f"workbook-bench-jpeg-{n}", n)


TUNED = Options(
    parallel=True, vectorized=True, interleave=True, cache="after_decode", prefetch=True
)


def _generator_vs_tfdata(n: int = 1024) -> dict[str, Any]:
    shards = _bench_shards(n)
    return {
        "Python generator": partial(read_epoch, build(shards, Options(source="generator"))),
        "tf.data tuned": partial(read_epoch, build(shards, TUNED)),
    }


def _sequential_vs_tuned(n: int = 1024) -> dict[str, Any]:
    shards = _bench_shards(n)
    return {
        "sequential": partial(read_epoch, build(shards, Options())),
        "tuned": partial(read_epoch, build(shards, TUNED)),
    }


def _e2e_vs_compute_bound(n: int = 1024) -> dict[str, Any]:
    runs = lesson().training_runs(build(_bench_shards(n), TUNED), n)
    return {"compute only": runs["compute only"], "end to end": runs["end to end"]}


BENCHMARKS = [
    Comparison(
        id="tune_input_pipeline.generator_vs_tfdata",
        title="one epoch of JPEG decode + augment: Python generator vs tuned tf.data",
        make_variants=_generator_vs_tfdata,
        baseline="Python generator",
        variant="tf.data tuned",
        quick={"n": 512},
        full={"n": 4096},
        repeats=5,
        min_time=0.0,
    ),
    Comparison(
        id="tune_input_pipeline.sequential_vs_tuned",
        title="one epoch: sequential map -> batch vs the tuned pipeline",
        make_variants=_sequential_vs_tuned,
        baseline="sequential",
        variant="tuned",
        quick={"n": 512},
        full={"n": 4096},
        repeats=5,
        min_time=0.0,
    ),
    Comparison(
        id="tune_input_pipeline.e2e_vs_compute_bound",
        title=(
            "training epoch: end to end on the tuned pipeline "
            "as a fraction of the compute-only bound (<= 1)"
        ),
        make_variants=_e2e_vs_compute_bound,
        baseline="compute only",
        variant="end to end",
        quick={"n": 512},
        full={"n": 4096},
        repeats=5,
        min_time=0.0,
        kind="share of bound",
    ),
]
