"""Notebook 06's reading comparison: the files its readers read, the widget's variants, the bench id.

The readers themselves (``read_files``, ``read_shards``, ``read_memory``, ``reader_variants``) are
lesson code, written in the notebook and imported from ``helpers.lessons.pack_files_into_shards``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from helpers.checks import whole_number
from helpers.comparison import Comparison
from helpers.topics.tfrecords import convert, lesson_module, shard_paths


def write_image_files(images: Any, labels: Any, out_dir: Path, classes: Sequence[str]) -> list[str]:
    """One PNG per image in ``out_dir/<class>/`` (the many-small-files layout); return the paths.
    Written into a staging folder first, so a half-finished copy never sits under ``out_dir``."""
    import shutil

    import tensorflow as tf

    out_dir = Path(out_dir)
    if out_dir.exists() and len(list(out_dir.rglob("*.png"))) == len(images):
        return sorted(str(p) for p in out_dir.rglob("*.png"))
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}-", dir=out_dir.parent))
    try:
        for i, (image, label) in enumerate(zip(images, labels, strict=True)):
            folder = staging / classes[int(label)]
            folder.mkdir(exist_ok=True)
            (folder / f"{i:06d}.png").write_bytes(tf.io.encode_png(image).numpy())
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.chmod(staging, 0o755)
        os.replace(staging, out_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return sorted(str(p) for p in out_dir.rglob("*.png"))


READERS = (
    "PNG files",
    "1 shard, per-example parse",
    "1 shard, batched parse",
    "4 shards, batched parse",
    "4 GZIP shards, batched parse",
    "in memory, cached",
)


def reader_inputs(workdir: Path, images: Any, labels: Any, classes: Sequence[str]) -> dict[str, list[str]]:
    """Write what notebook 06's readers read, under ``workdir``: one PNG per image (``files``), 1 shard
    (``one``), 4 shards (``four``), 4 GZIP shards (``gzip``). Re-runs reuse what is up to date."""
    workdir = Path(workdir)
    inputs = {"files": write_image_files(images, labels, workdir / "files", classes)}
    for name, n_shards, gzip in (("one", 1, False), ("four", 4, False), ("gzip", 4, True)):
        convert(images, labels, workdir / name, "all", n_shards=n_shards, gzip=gzip, progress=False)
        inputs[name] = shard_paths(workdir / name, "all")
    return inputs


def files_vs_reader(reader: str = "4 shards, batched parse", n: int = 1000, workdir: Path | None = None) -> dict[str, Callable[[], int]]:
    """PNG files against one of the other ``READERS`` on ``n`` generated images (for the widget)."""
    from helpers.topics import cifar

    if reader not in READERS[1:]:
        raise ValueError(f"reader must be one of {READERS[1:]}, got {reader!r}")
    whole_number("n", n)
    images, labels = cifar.synthetic_images(n, seed=6)
    workdir = Path(workdir or tempfile.gettempdir()) / f"readers-{n}"
    inputs = reader_inputs(workdir, images, labels, cifar.CLASSES)
    built = lesson_module().reader_variants(inputs, images, labels, cifar.CLASSES)
    return {"PNG files": built["PNG files"], reader: built[reader]}


def _small_files_vs_shards(n: int = 1000) -> dict[str, Callable[[], int]]:
    from helpers.topics import cifar

    images, labels = cifar.synthetic_images(n, seed=6)
    inputs = reader_inputs(Path(tempfile.gettempdir()) / f"workbook-bench-tfrecord-{n}", images, labels, cifar.CLASSES)
    built = lesson_module().reader_variants(inputs, images, labels, cifar.CLASSES)
    return {"small files": built["PNG files"], "4 shards": built["4 shards, batched parse"]}


BENCHMARKS = [
    Comparison(
        id="tfrecord.small_files_vs_shards",
        title="read every image once: one PNG file per image vs 4 TFRecord shards with batched parsing",
        make_variants=_small_files_vs_shards,
        baseline="small files",
        variant="4 shards",
        quick={"n": 1000},
        full={"n": 5000},
        repeats=5,
        min_time=0.0,
    ),
]
