"""The capstone of notebook 14: a deliberately naive training job improved one technique at a
time, each stage measured in a fresh process, with step and cumulative speed-ups.

The job: a small conv net with batch norm on generated 64x64 JPEGs in TFRecord shards (the
images of notebook 07). Stage 0 feeds it from a Python generator that decodes and augments one
image at a time, and uses Keras' unfused batch norm with TensorFlow's default threads. Each
later stage adds one technique to the one before.
"""

from __future__ import annotations

import glob
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from helpers import procs, timing
from helpers.checks import whole_number
from helpers.comparison import Comparison
from helpers.timing import ProgressFn, Timing
from helpers.topics import pipelines
from helpers.topics.pipelines import Options


@dataclass(frozen=True)
class Stage:
    """One version of the job: its input pipeline, its batch norm, its thread settings (0 =
    TensorFlow's default)."""

    name: str
    options: Options = field(default_factory=Options)
    fused_batch_norm: bool = False
    intra: int = 0
    inter: int = 0


def _stages() -> list[Stage]:
    naive = Stage("naive: Python generator, Keras batch norm", Options(source="generator"))
    tf_data = replace(naive, name="+ tf.data with a parallel map", options=Options(parallel=True))
    batched = replace(tf_data, name="+ map per batch, interleaved shards",
                      options=replace(tf_data.options, vectorized=True, interleave=True))
    cached = replace(batched, name="+ cache the decoded images", options=replace(batched.options, cache="after_decode"))
    prefetch = replace(cached, name="+ prefetch", options=replace(cached.options, prefetch=True))
    fused = replace(prefetch, name="+ fused batch norm", fused_batch_norm=True)
    cores = os.cpu_count() or 1
    threads = replace(fused, name=f"+ threads: intra {cores}, inter 2", intra=cores, inter=2)
    return [naive, tf_data, batched, cached, prefetch, fused, threads]


STAGES: list[Stage] = _stages()


def make_model(fused_batch_norm: bool, seed: int = 0) -> Any:
    """Two conv + batch norm + ReLU blocks, pooling and a dense layer, for 56x56x3 crops.
    ``fused_batch_norm`` swaps Keras' layer (unfused ops) for one calling the fused kernel."""
    import keras
    import tensorflow as tf

    class FusedBatchNorm(keras.layers.Layer):
        """Training-mode batch norm through ``FusedBatchNormV3`` (batch statistics; no moving
        averages, which a throughput measurement does not need)."""

        def build(self, input_shape: Any) -> None:
            self.gamma = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="gamma")
            self.beta = self.add_weight(shape=(input_shape[-1],), initializer="zeros", name="beta")

        def call(self, x: Any) -> Any:
            return tf.compat.v1.nn.fused_batch_norm(x, self.gamma, self.beta, epsilon=1e-3)[0]

    def norm() -> Any:
        return FusedBatchNorm() if fused_batch_norm else keras.layers.BatchNormalization(epsilon=1e-3)

    keras.utils.set_random_seed(seed)
    return keras.Sequential([
        keras.Input((pipelines.CROP, pipelines.CROP, 3)),
        keras.layers.Conv2D(32, 3, use_bias=False), norm(), keras.layers.ReLU(), keras.layers.MaxPooling2D(),
        keras.layers.Conv2D(64, 3, use_bias=False), norm(), keras.layers.ReLU(),
        keras.layers.GlobalAveragePooling2D(), keras.layers.Dense(10),
    ])


def _stage_child(index: int, shard_dir: str, epochs: int) -> None:
    """The child's side: set the threads, build the stage's job, run a warm-up epoch (tracing,
    filling caches), then time ``epochs`` epochs and emit their seconds."""
    import time

    import tensorflow as tf

    stage = STAGES[index]
    tf.config.threading.set_intra_op_parallelism_threads(stage.intra)
    tf.config.threading.set_inter_op_parallelism_threads(stage.inter)
    shards = sorted(glob.glob(os.path.join(shard_dir, "*.tfrecord")))
    if not shards:
        raise FileNotFoundError(f"no .tfrecord shards in {shard_dir}")
    dataset = pipelines.build(shards, stage.options)
    step = pipelines.train_step_fn(make_model(stage.fused_batch_norm))

    def epoch() -> float:
        loss = None
        for images, labels in dataset:
            loss = step(images, labels)
        return float(loss)

    epoch()
    seconds = []
    for _ in range(epochs):
        started = time.perf_counter()
        epoch()
        seconds.append(time.perf_counter() - started)
    procs.emit({"stage": index, "seconds": seconds})


def run_stages(workdir: str | Path, n_images: int = 2048, epochs: int = 3, stages: Sequence[int] | None = None,
               rounds: int = 1, timeout: float = 600.0, on_progress: ProgressFn | None = None) -> Any:
    """Each stage (all by default) in its own fresh process, on the same ``n_images`` images,
    ``rounds`` times in rotation (drift on a busy machine then hits every stage alike): images per
    second at the median epoch, the gain over the stage before and over the naive job."""
    import pandas as pd

    chosen = list(range(len(STAGES))) if stages is None else list(stages)
    if not chosen or any(not isinstance(i, int) or not 0 <= i < len(STAGES) for i in chosen):
        raise ValueError(f"stages must be indices between 0 and {len(STAGES) - 1}, got {stages!r}")
    for name, value in (("epochs", epochs), ("rounds", rounds)):
        whole_number(name, value)
    shard_dir = (Path(workdir) / f"capstone-{n_images}").resolve()  # the child runs from the repo root
    pipelines.make_jpeg_shards(shard_dir, n_images)
    seconds: dict[int, list[float]] = {i: [] for i in chosen}
    done, total = 0, rounds * len(chosen)
    for r in range(rounds):
        for index in timing.rotated(chosen, r):
            (row,) = procs.run_rows(
                procs.python_module("helpers.topics.capstone", "stage", str(index), str(shard_dir), str(epochs)),
                env={"TF_CPP_MIN_LOG_LEVEL": "2"}, timeout=timeout, cwd=str(Path(__file__).resolve().parents[2]))
            seconds[index].extend(row["seconds"])
            done += 1
            if on_progress is not None:
                on_progress(done, total)
    rows, timings = [], {}
    for index in chosen:
        t = Timing(STAGES[index].name, tuple(seconds[index]), items=n_images)
        timings[STAGES[index].name] = t
        rows.append({"stage": STAGES[index].name, "images/s": round(t.throughput or 0.0),
                     "epoch s": round(t.median, 3), "IQR s": f"{t.q1:.3f}-{t.q3:.3f}"})
    table = pd.DataFrame(rows).set_index("stage")
    speed = table["images/s"].astype(float)
    table["gain over the step before"] = (speed / speed.shift(1)).round(2)
    table["cumulative"] = (speed / speed.iloc[0]).round(2)
    table.attrs["timings"] = timings
    return table


def trace_stage(index: int, shard_dir: str | Path, logdir: str | Path, steps: int = 8) -> Any:
    """Profile ``steps`` training steps of stage ``index`` in this process (its threads are not
    applied: they are fixed here already). Fetching each batch happens between the traced
    steps, so the trace's gaps are the time the loop waited for data; the naive stage is fed
    by plain Python, as a ``feed_dict`` loop was. Returns ``profiling.events``."""
    from helpers.topics import profiling

    if not isinstance(index, int) or not 0 <= index < len(STAGES):
        raise ValueError(f"index must be between 0 and {len(STAGES) - 1}, got {index!r}")
    stage = STAGES[index]
    shards = sorted(glob.glob(os.path.join(str(shard_dir), "*.tfrecord")))
    if not shards:
        raise FileNotFoundError(f"no .tfrecord shards in {shard_dir}")
    if stage.options.source == "generator":  # plain Python feeding, as a feed_dict loop did
        def forever() -> Any:
            while True:
                yield from pipelines.python_batches(shards, stage.options.batch, seed=0)

        batches = forever()
    else:
        batches = iter(pipelines.build(shards, stage.options).repeat())
    step = pipelines.train_step_fn(make_model(stage.fused_batch_norm))
    current: list[Any] = []

    def fetch() -> None:
        current[:] = next(batches)

    path = profiling.record(lambda: step(*current), logdir, steps=steps, between=fetch, warmup=3)
    return profiling.events(profiling.load(path))


def capstone_figure(table: Any, title: str = "") -> Any:
    """Images per second per stage, with the cumulative speed-up at the end of each bar."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 0.45 * len(table) + 1.4), layout="constrained")
    ax = fig.subplots()
    ax.barh(list(table.index), table["images/s"], color="tab:green")
    for i, (speed, cumulative) in enumerate(zip(table["images/s"], table["cumulative"], strict=True)):
        ax.text(speed, i, f" {cumulative:.2f}x", va="center", fontsize=9)
    ax.invert_yaxis()
    ax.set_xlabel("training images per second (median epoch)")
    ax.set_xlim(0, table["images/s"].max() * 1.18)
    if title:
        ax.set_title(title)
    return fig


def capstone_summary(table: Any) -> str:
    """The cumulative speed-up, and the stage that gained most."""
    best = table["gain over the step before"].idxmax()
    return (f"{table.index[0]} -> {table.index[-1]}: {table['cumulative'].iloc[-1]:.2f}x in all; "
            f"the biggest single step: {best} ({table.loc[best, 'gain over the step before']:.2f}x)")


def _naive_vs_tuned(n_images: int = 1024, epochs: int = 3) -> Any:
    import tempfile

    with tempfile.TemporaryDirectory() as workdir:
        table = run_stages(workdir, n_images, epochs, stages=[0, len(STAGES) - 1])
    timings = table.attrs["timings"]
    first, last = STAGES[0].name, STAGES[-1].name
    return timing.comparison_table({"naive": replace(timings[first], label="naive"),
                                    "tuned": replace(timings[last], label="tuned")}, "naive")


BENCHMARKS = [
    Comparison(id="capstone.naive_vs_tuned", title="training job, one epoch, fresh processes: naive vs every technique applied",
               measure=_naive_vs_tuned, baseline="naive", variant="tuned",
               quick={"n_images": 256, "epochs": 2}, full={"n_images": 2048, "epochs": 3}),
]


if __name__ == "__main__":
    if len(sys.argv) != 5 or sys.argv[1] != "stage":
        sys.exit("usage: python -m helpers.topics.capstone stage INDEX SHARD_DIR EPOCHS")
    _stage_child(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
