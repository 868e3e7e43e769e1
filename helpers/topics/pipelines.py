"""Input pipelines, from feed_dict-style Python feeding to a tuned ``tf.data`` pipeline (notebook 07).

The workload is real: JPEG decode, random crop, random flip and normalisation of generated 64x64
images, feeding a small Keras CNN. No sleeps stand in for work. ``Options`` switches each
optimisation on or off; ``PRESETS`` names the variants the notebook compares; ``build`` makes
the pipeline; ``diagnose`` measures data-only, compute-only and end-to-end throughput.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers.checks import whole_number
from helpers.comparison import Comparison
from helpers.exercises import Feedback, correct, not_yet
from helpers.timing import ProgressFn

IMAGE = 64
CROP = 56
CACHES = ("none", "before_map", "after_decode")


@dataclass(frozen=True)
class Options:
    """What a pipeline does. Each field is one optimisation the notebook explains."""

    source: str = "tfrecord"  # "generator": Python prepares every batch (the feed_dict analogue)
    parallel: bool = False  # map(num_parallel_calls=AUTOTUNE)
    vectorized: bool = False  # batch first, then one map over the whole batch
    interleave: bool = False  # read the shards in parallel
    cache: str = "none"  # "before_map" (raw records) or "after_decode" (decoded, before augmenting)
    prefetch: bool = False  # overlap producing batch n+1 with consuming batch n
    batch: int = 64

    def __post_init__(self) -> None:
        if self.source not in ("generator", "tfrecord"):
            raise ValueError(f"source must be 'generator' or 'tfrecord', got {self.source!r}")
        if self.cache not in CACHES:
            raise ValueError(f"cache must be one of {CACHES}, got {self.cache!r}")
        whole_number("batch", self.batch)


PRESETS: dict[str, Options] = {
    "Python generator": Options(source="generator"),
    "sequential map": Options(),
    "parallel map": Options(parallel=True),
    "vectorized map": Options(parallel=True, vectorized=True),
    "interleave": Options(parallel=True, vectorized=True, interleave=True),
    "cache after decode": Options(parallel=True, vectorized=True, interleave=True, cache="after_decode"),
    "tuned (+ prefetch)": Options(parallel=True, vectorized=True, interleave=True, cache="after_decode",
                                  prefetch=True),
}


def make_jpeg_shards(out_dir: Path, n: int, n_shards: int = 4, seed: int = 7) -> list[str]:
    """Write ``n`` generated 64x64 JPEG images in ``n_shards`` verified TFRecord shards; return
    their paths (re-runs reuse up-to-date shards)."""
    import tensorflow as tf

    from helpers.topics import cifar, tfrecords

    whole_number("n", n)
    small, labels = cifar.synthetic_images(n, seed)
    images = tf.cast(tf.image.resize(small, [IMAGE, IMAGE]), tf.uint8).numpy()
    tfrecords.convert(images, labels, Path(out_dir), "jpeg", n_shards=n_shards, encoding="jpeg", progress=False)
    return tfrecords.shard_paths(Path(out_dir), "jpeg")


def _spec() -> dict[str, Any]:
    import tensorflow as tf

    return {"image": tf.io.FixedLenFeature([], tf.string), "label": tf.io.FixedLenFeature([], tf.int64)}


def augment(image: Any, seed: Any) -> Any:
    """Random 56x56 crop, random left-right flip, scale to [-1, 1]: one image, stateless."""
    import tensorflow as tf

    image = tf.image.stateless_random_crop(image, [CROP, CROP, 3], seed=seed)
    image = tf.image.stateless_random_flip_left_right(image, seed=seed)
    return tf.cast(image, tf.float32) / 127.5 - 1.0


def augment_batch(images: Any, seeds: Any) -> Any:
    """``augment`` for a whole batch in one op chain (per-image crops via ``crop_and_resize``)."""
    import tensorflow as tf

    n = tf.shape(images)[0]
    offsets = tf.random.stateless_uniform([n, 2], seed=seeds[0], maxval=IMAGE - CROP + 1, dtype=tf.int32)
    top_left = tf.cast(offsets, tf.float32) / (IMAGE - 1)
    boxes = tf.concat([top_left, top_left + (CROP - 1) / (IMAGE - 1)], axis=1)
    crops = tf.image.crop_and_resize(tf.cast(images, tf.float32), boxes, tf.range(n), [CROP, CROP],
                                     method="nearest")
    flip = tf.random.stateless_uniform([n, 1, 1, 1], seed=seeds[1]) < 0.5
    crops = tf.where(flip, tf.reverse(crops, axis=[2]), crops)
    return crops / 127.5 - 1.0


def decode_record(raw: Any) -> tuple[Any, Any]:
    """One serialized record -> (uint8 image [64, 64, 3], label)."""
    import tensorflow as tf

    parsed = tf.io.parse_single_example(raw, _spec())
    return tf.io.decode_jpeg(parsed["image"], channels=3), parsed["label"]


def augment_random(image: Any, label: Any) -> tuple[Any, Any]:
    """Random crop and flip with TensorFlow's stateful random ops: new draws on every pass."""
    import tensorflow as tf

    image = tf.image.random_flip_left_right(tf.image.random_crop(image, [CROP, CROP, 3]))
    return tf.cast(image, tf.float32) / 127.5 - 1.0, label


def python_batches(shards: Sequence[str], batch: int, seed: int) -> Iterator[tuple[Any, Any]]:
    """The feed_dict analogue: Python reads, decodes and augments every example, then stacks
    them into NumPy batches."""
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(seed)
    images, labels = [], []
    for record in tf.data.TFRecordDataset(list(shards)):
        parsed = tf.io.parse_single_example(record, _spec())
        image = tf.io.decode_jpeg(parsed["image"], channels=3).numpy()
        top, left = rng.integers(0, IMAGE - CROP + 1, size=2)
        image = image[top:top + CROP, left:left + CROP]
        if rng.random() < 0.5:
            image = image[:, ::-1]
        images.append(image.astype(np.float32) / 127.5 - 1.0)
        labels.append(int(parsed["label"]))
        if len(images) == batch:
            yield np.stack(images), np.array(labels)
            images, labels = [], []
    if images:
        yield np.stack(images), np.array(labels)


def build(shards: Sequence[str], options: Options = Options(), seed: int = 0) -> Any:
    """The pipeline ``options`` describes over ``shards``: batches of (float32 [B, 56, 56, 3], label)."""
    import tensorflow as tf

    if not shards:
        raise ValueError("shards is empty: make them with make_jpeg_shards first")
    autotune = tf.data.AUTOTUNE
    calls = autotune if options.parallel else None
    if options.source == "generator":
        signature = (tf.TensorSpec([None, CROP, CROP, 3], tf.float32), tf.TensorSpec([None], tf.int64))
        dataset = tf.data.Dataset.from_generator(
            lambda: python_batches(shards, options.batch, seed), output_signature=signature
        )
        return dataset.prefetch(autotune) if options.prefetch else dataset
    if options.interleave:
        records = tf.data.Dataset.from_tensor_slices(list(shards)).interleave(
            tf.data.TFRecordDataset, cycle_length=len(shards), num_parallel_calls=calls, deterministic=True
        )
    else:
        records = tf.data.TFRecordDataset(list(shards))
    if options.cache == "before_map":
        records = records.cache()
    if options.vectorized:
        def decode_batch(raw: Any) -> tuple[Any, Any]:
            parsed = tf.io.parse_example(raw, _spec())
            images = tf.map_fn(lambda b: tf.io.decode_jpeg(b, channels=3), parsed["image"],
                               fn_output_signature=tf.TensorSpec([IMAGE, IMAGE, 3], tf.uint8))
            return images, parsed["label"]

        decoded = records.batch(options.batch).map(decode_batch, num_parallel_calls=calls)
        if options.cache == "after_decode":
            decoded = decoded.cache()
        seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True).batch(4).map(lambda s: tf.reshape(s, [2, 2]))
        dataset = tf.data.Dataset.zip((decoded, seeds)).map(
            lambda pair, s: (augment_batch(pair[0], s), pair[1]), num_parallel_calls=calls
        )
    else:
        def decode(raw: Any) -> tuple[Any, Any]:
            parsed = tf.io.parse_single_example(raw, _spec())
            return tf.io.decode_jpeg(parsed["image"], channels=3), parsed["label"]

        decoded = records.map(decode, num_parallel_calls=calls)
        if options.cache == "after_decode":
            decoded = decoded.cache()
        seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True).batch(2)
        dataset = tf.data.Dataset.zip((decoded, seeds)).map(
            lambda pair, s: (augment(pair[0], s), pair[1]), num_parallel_calls=calls
        ).batch(options.batch)
    return dataset.prefetch(autotune) if options.prefetch else dataset


def epoch_order(order: str, n: int = 6, epochs: int = 2, buffer: int = 6, seed: int = 1) -> list[list[int]]:
    """Element ids per epoch-sized chunk for ``"shuffle, repeat"`` or ``"repeat, shuffle"``: the
    second mixes epochs (an element can appear twice before another appears once)."""
    import tensorflow as tf

    base = tf.data.Dataset.range(n)
    if order == "shuffle, repeat":
        dataset = base.shuffle(buffer, seed=seed, reshuffle_each_iteration=True).repeat(epochs)
    elif order == "repeat, shuffle":
        dataset = base.repeat(epochs).shuffle(buffer, seed=seed)
    else:
        raise ValueError(f"order must be 'shuffle, repeat' or 'repeat, shuffle', got {order!r}")
    ids = [int(v) for v in dataset]
    return [ids[i:i + n] for i in range(0, len(ids), n)]


class UtilizationSampler:
    """Samples CPU utilisation per core (psutil) and, when NVML is installed and a GPU is
    present, GPU utilisation, every ``interval`` seconds in a background thread, inside a
    ``with`` block. The thread always stops and is joined on exit."""

    def __init__(self, interval: float = 0.2) -> None:
        if not interval > 0:
            raise ValueError(f"interval must be > 0 seconds, got {interval!r}")
        self.interval = interval
        self.cpu: list[list[float]] = []
        self.gpu: list[float] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._nvml: Any = None

    def __enter__(self) -> UtilizationSampler:
        import psutil

        psutil.cpu_percent(percpu=True)  # the first call only sets the reference point
        self._nvml = _nvml_handle()
        self.gpu = [] if self._nvml is not None else None
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="utilization-sampler", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        import psutil

        while not self._stop.wait(self.interval):
            self.cpu.append(psutil.cpu_percent(percpu=True))
            if self._nvml is not None and self.gpu is not None:
                self.gpu.append(float(self._nvml[0].nvmlDeviceGetUtilizationRates(self._nvml[1]).gpu))

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._thread = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def summary(self) -> dict[str, Any]:
        """Mean utilisation per core (percent), overall, and of the GPU when sampled."""
        import numpy as np

        per_core = np.mean(self.cpu, axis=0).round(1).tolist() if self.cpu else []
        return {
            "samples": len(self.cpu),
            "cpu_per_core": per_core,
            "cpu_mean": round(float(np.mean(per_core)), 1) if per_core else 0.0,
            "gpu_mean": round(float(np.mean(self.gpu)), 1) if self.gpu else None,
        }


def _nvml_handle() -> Any:
    """``(pynvml, handle of GPU 0)`` when NVML is installed and a GPU answers, else None."""
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml, pynvml.nvmlDeviceGetHandleByIndex(0)
    except Exception:  # no package, no driver, no GPU: utilisation of the CPU only
        return None


def read_epoch(dataset: Any) -> int:
    """Read one full pass of a dataset of (image batch, label batch); return the image count."""
    return sum(int(images.shape[0]) for images, _ in dataset)


def variants(names: Sequence[str], shards: Sequence[str]) -> dict[str, Any]:
    """Callables that each read one full pass of the named presets' pipelines (for timing)."""
    from functools import partial

    unknown = [n for n in names if n not in PRESETS]
    if unknown:
        raise ValueError(f"unknown pipeline(s) {unknown}; known: {list(PRESETS)}")
    return {name: partial(read_epoch, build(shards, PRESETS[name])) for name in names}



def make_model(seed: int = 0) -> Any:
    """A small Keras CNN for 56x56x3 images and 10 classes."""
    import keras

    keras.utils.set_random_seed(seed)
    return keras.Sequential([
        keras.Input((CROP, CROP, 3)),
        keras.layers.Conv2D(16, 3, activation="relu"),
        keras.layers.MaxPooling2D(),
        keras.layers.Conv2D(32, 3, activation="relu"),
        keras.layers.MaxPooling2D(),
        keras.layers.GlobalAveragePooling2D(),
        keras.layers.Dense(10),
    ])


def train_step_fn(model: Any, learning_rate: float = 0.01) -> Any:
    """A compiled training step ``step(images, labels) -> loss`` for ``model``."""
    import keras
    import tensorflow as tf

    optimizer = keras.optimizers.SGD(learning_rate)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def step(images: Any, labels: Any) -> Any:
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(images, training=True))
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables,
                                      strict=True))
        return loss

    return step


def training_runs(shards: Sequence[str], options: Options, n_images: int) -> dict[str, Any]:
    """Three callables over the same model, each one epoch of ``n_images``: the pipeline alone
    (``data only``), the training step on one batch kept in memory (``compute only``, the bound),
    and training fed by the pipeline (``end to end``). Each returns something forced when timed."""
    import tensorflow as tf

    dataset = build(shards, options)
    step = train_step_fn(make_model())
    steps = -(-n_images // options.batch)
    x0 = tf.random.stateless_uniform([options.batch, CROP, CROP, 3], seed=(1, 2), minval=-1.0)
    y0 = tf.zeros([options.batch], tf.int64)

    def compute_only() -> Any:
        loss = None
        for _ in range(steps):
            loss = step(x0, y0)
        return loss

    def end_to_end() -> Any:
        loss = None
        for x, y in dataset:
            loss = step(x, y)
        return loss

    return {"data only": lambda: read_epoch(dataset), "compute only": compute_only, "end to end": end_to_end}


def throughputs(shards: Sequence[str], options: Options, n_images: int, repeats: int = 3,
                on_progress: ProgressFn | None = None) -> Any:
    """Images per second for each of ``training_runs``, with CPU (and GPU) utilisation sampled
    during the end-to-end runs."""
    import pandas as pd

    from helpers import timing

    runs = training_runs(shards, options, n_images)
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
    return (f"Not input-bound: the pipeline alone gives {data:,.0f} img/s, more than the model's {compute:,.0f}; "
            f"end to end reaches {fraction:.0%} of the compute-only bound (both share the cores){usage}.")


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


def toggles_experiment(shards: Sequence[str], n_images: int) -> Any:
    """For the widget: ``experiment(parallel=..., ..., on_progress=...)`` -> a throughputs table."""

    def experiment(source: str = "tfrecord", parallel: bool = False, vectorized: bool = False,
                   interleave: bool = False, cache_after_decode: bool = False, prefetch: bool = False,
                   on_progress: ProgressFn | None = None) -> Any:
        options = Options(source=source, parallel=parallel, vectorized=vectorized, interleave=interleave,
                          cache="after_decode" if cache_after_decode else "none", prefetch=prefetch)
        return throughputs(shards, options, n_images, repeats=2, on_progress=on_progress)

    return experiment


def check_reordered(make: Any, shards: Sequence[str], n_images: int) -> Feedback:
    """Exercise (07): ``make(shards)`` gives a pipeline that augments differently every epoch,
    yields every image once per epoch, and decodes only in the first epoch (the second is faster)."""
    import numpy as np

    from helpers import timing

    try:
        dataset = make(shards)
        first_time = timing.time_once(lambda: [b for b in dataset])
        epochs = [[(x.numpy(), y.numpy()) for x, y in dataset] for _ in range(2)]
        second_time = timing.time_once(lambda: [b for b in dataset])
    except Exception as exc:  # the learner's code
        return not_yet(f"building or reading the pipeline raised {type(exc).__name__}: {exc}")
    labels = [np.concatenate([y for _, y in epoch]) for epoch in epochs]
    if any(len(epoch_labels) != n_images for epoch_labels in labels):
        return not_yet(f"an epoch gave {[len(v) for v in labels]} images, not {n_images}: no repeat, no drop.")
    first = np.concatenate([x for x, _ in epochs[0]])
    second = np.concatenate([x for x, _ in epochs[1]])
    if first.shape == second.shape and np.array_equal(first, second):
        return not_yet("both epochs gave identical images: the augmentation ran before the cache.")
    if second_time > 0.7 * first_time:
        return not_yet(f"the second epoch took {second_time / first_time:.0%} of the first: "
                       "is decoding cached (cache right after decode, before augmenting)?")
    return correct(f"fresh augmentation every epoch, every image once, and the second epoch took "
                   f"{second_time / first_time:.0%} of the first.")


def _bench_shards(n: int) -> list[str]:
    import tempfile

    return make_jpeg_shards(Path(tempfile.gettempdir()) / f"workbook-bench-jpeg-{n}", n)


def _generator_vs_tfdata(n: int = 1024) -> dict[str, Any]:
    built = variants(["Python generator", "tuned (+ prefetch)"], _bench_shards(n))
    return {"Python generator": built["Python generator"], "tf.data tuned": built["tuned (+ prefetch)"]}


def _sequential_vs_tuned(n: int = 1024) -> dict[str, Any]:
    built = variants(["sequential map", "tuned (+ prefetch)"], _bench_shards(n))
    return {"sequential": built["sequential map"], "tuned": built["tuned (+ prefetch)"]}


def _e2e_vs_compute_bound(n: int = 1024) -> dict[str, Any]:
    runs = training_runs(_bench_shards(n), PRESETS["tuned (+ prefetch)"], n)
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
               quick={"n": 512}, full={"n": 4096}, repeats=5, min_time=0.0),
]
