"""Notebook 06's reading comparison: the files its readers read, the widget's variants, the bench
id. The disk's rate and the tables' readings are in ``shard_reading_summaries`` (re-exported).

The readers themselves (``read_files``, ``read_shards``, ``read_memory``, ``reader_variants``) are
lesson code, written in the notebook and imported from ``helpers.lessons.pack_files_into_shards``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from helpers import checks, fileio
from helpers.comparison import Comparison
from helpers.datasets import datafiles

# The names imported "as" themselves are re-exported: notebook 06 calls shard_reading.<name>.
from helpers.topics.pack_files_into_shards.shard_reading_summaries import (
    cold_summary as cold_summary,
)
from helpers.topics.pack_files_into_shards.shard_reading_summaries import (
    disk_summary as disk_summary,
)
from helpers.topics.pack_files_into_shards.shard_reading_summaries import random_file as random_file
from helpers.topics.pack_files_into_shards.shard_reading_summaries import (
    shares_summary as shares_summary,
)
from helpers.topics.pack_files_into_shards.shard_reading_summaries import (
    sizes_summary as sizes_summary,
)
from helpers.topics.pack_files_into_shards.tfrecords import convert, lesson_module
from helpers.topics.pack_files_into_shards.tfrecords_manifest import shard_paths


def _classes(name: str, value: Any) -> list[str]:
    """Class names, one folder each: a list of distinct plain names (not one string)."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise checks.BadType(
            f"{name} must be a list of class names, "
            f"got {checks._show(value)} ({type(value).__name__})"
        )
    for item in value:
        checks.text(f"each of {name}", item)
        if item in (".", "..") or "/" in item or "\\" in item or os.sep in item:
            raise ValueError(f"each of {name} must be a plain folder name, got {item!r}")
    if len(set(value)) != len(value) or not value:
        raise ValueError(
            f"{name} must be distinct names, at least one, got {checks._show(list(value))}"
        )
    return list(value)


def _images_labels_classes(images: Any, labels: Any, classes: Sequence[str]) -> tuple[Any, Any]:
    images = datafiles.images_array(images)
    return images, datafiles.labels_array(labels, len(images), len(classes))


def _replaceable(out_dir: Path, classes: Sequence[str]) -> None:
    """Refuse an ``out_dir`` this function would wrongly replace: a file, the current folder or one
    above it, or a folder holding anything but class folders of PNG files (a learner's work)."""
    if out_dir.exists() and not out_dir.is_dir():
        raise ValueError(f"out_dir: {out_dir} is a file; a folder is needed")
    here = Path.cwd().resolve()
    if out_dir.resolve() in (here, *here.parents):
        raise ValueError(
            f"out_dir: {str(out_dir)!r} is the current folder or one above it; name a new folder, "
            "which write_image_files replaces as a whole"
        )
    if out_dir.is_dir():
        for entry in out_dir.iterdir():
            inside = (
                entry.iterdir()
                if entry.is_dir() and not entry.is_symlink() and entry.name in classes
                else [entry]
            )
            for item in inside:
                if not (item.is_file() and item.suffix == ".png" and item.parent != out_dir):
                    raise ValueError(
                        f"out_dir: {out_dir} holds {item.relative_to(out_dir)}, "
                        "which is not one of its class folders of PNG files; "
                        "write_image_files replaces the whole folder, so choose a new or empty one"
                    )


@checks.arguments(out_dir=checks.path, classes=_classes)
def write_image_files(images: Any, labels: Any, out_dir: Path, classes: Sequence[str]) -> list[str]:
    """One PNG per image in ``out_dir/<class>/`` (the many-small-files layout); return the paths.
    Written into a staging folder first, so a half-finished copy never sits under ``out_dir``."""
    import tensorflow as tf

    images, labels = _images_labels_classes(images, labels, classes)
    out_dir = Path(out_dir)
    _replaceable(out_dir, classes)
    if out_dir.exists() and len(list(out_dir.rglob("*.png"))) == len(images):
        return sorted(str(p) for p in out_dir.rglob("*.png"))
    fileio.make_folder(out_dir.parent, "out_dir")
    staging = fileio.staging_folder(out_dir.parent, out_dir.name)
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
    "1 shard, PNG records",
    "1 shard, per-example parse",
    "1 shard, batched parse",
    "4 shards, batched parse",
    "4 GZIP shards, batched parse",
    "in memory, cached",
)


@checks.arguments(workdir=checks.path, classes=_classes)
def reader_inputs(
    workdir: Path, images: Any, labels: Any, classes: Sequence[str]
) -> dict[str, list[str]]:
    """Write what notebook 06's readers read, under ``workdir``: one PNG per image (``files``), 1
    shard of PNG records (``one_png``), and of raw records 1 shard (``one``), 4 shards (``four``)
    and 4 GZIP shards (``gzip``). Re-runs reuse what is up to date."""
    images, labels = _images_labels_classes(images, labels, classes)
    if len(images) < 4:
        raise ValueError(
            f"images must hold at least 4 images (the 4-shard readers), got {len(images)}"
        )
    workdir = fileio.make_folder(workdir, "workdir")
    inputs = {"files": write_image_files(images, labels, workdir / "files", classes)}
    for name, n_shards, gzip, encoding in (
        ("one_png", 1, False, "png"),
        ("one", 1, False, "raw"),
        ("four", 4, False, "raw"),
        ("gzip", 4, True, "raw"),
    ):
        convert(
            images,
            labels,
            workdir / name,
            "all",
            n_shards=n_shards,
            gzip=gzip,
            encoding=encoding,
            progress=False,
        )
        inputs[name] = shard_paths(workdir / name, "all")
    return inputs


#: The inputs each reader reads from disk (the in-memory reader reads none).
ON_DISK = {
    "PNG files": "files",
    "1 shard, PNG records": "one_png",
    "1 shard, per-example parse": "one",
    "1 shard, batched parse": "one",
    "4 shards, batched parse": "four",
    "4 GZIP shards, batched parse": "gzip",
}


def _widget_inputs(n: int, workdir: Path | None) -> tuple[Any, Any, dict[str, list[str]]]:
    from helpers.datasets import cifar

    # The images, one copy cached by the in-memory reader, and a batch in flight; and the files on
    # disk.
    checks.fits_memory(f"files_vs_reader(n={n:,})", n * 32 * 32 * 3 * 3)
    if (
        n * 32 * 32 * 3 * 5
        > 0.5
        * shutil.disk_usage(
            tempfile.gettempdir() if workdir is None else fileio.make_folder(workdir, "workdir")
        ).free
    ):
        raise ValueError(
            f"n={n:,} images would need about {n * 15_360 / 2**20:,.0f} MiB of disk, "
            "more than half what is free: choose a smaller n"
        )
    images, labels = cifar.synthetic_images(n, seed=6)
    return (
        images,
        labels,
        reader_inputs(
            Path(workdir or tempfile.gettempdir()) / f"readers-{n}", images, labels, cifar.CLASSES
        ),
    )


@checks.arguments(
    reader=checks.one_of(*READERS[1:]),
    n=checks.whole(4, hint="images; 4 shards need 4"),
    workdir=checks.optional(checks.path),
    cache=checks.one_of("warm", "cold"),
)
def files_vs_reader(
    reader: str = "4 shards, batched parse",
    n: int = 1000,
    workdir: Path | None = None,
    cache: str = "warm",
) -> dict[str, Callable[[], int]]:
    """PNG files against one of the other ``READERS`` on ``n`` generated images (for the widget;
    ``cache`` is read by ``drop_before_each``)."""
    from helpers.datasets import cifar

    images, labels, inputs = _widget_inputs(n, workdir)
    built = lesson_module().reader_variants(inputs, images, labels, cifar.CLASSES)
    return {"PNG files": built["PNG files"], reader: built[reader]}


@checks.arguments(
    reader=checks.one_of(*READERS[1:]),
    n=checks.whole(4, hint="images; 4 shards need 4"),
    workdir=checks.optional(checks.path),
    cache=checks.one_of("warm", "cold"),
)
def drop_before_each(
    reader: str = "4 shards, batched parse",
    n: int = 1000,
    workdir: Path | None = None,
    cache: str = "warm",
) -> Callable[[str], None] | None:
    """For the widget: with ``cache="cold"``, the hook that drops a variant's files from the page
    cache before each timed read (the notebook's ``drop_from_page_cache``); None when warm."""
    if cache == "warm":
        return None
    if not hasattr(os, "posix_fadvise"):
        raise ValueError(
            "cache='cold' needs os.posix_fadvise (Linux); this system has none: choose 'warm'"
        )
    inputs = _widget_inputs(n, workdir)[2]
    drop = lesson_module().drop_from_page_cache
    return lambda name: drop(inputs[ON_DISK[name]]) if name in ON_DISK else None


def _bench_readers(n: int) -> dict[str, Callable[[], int]]:
    from helpers.datasets import cifar

    images, labels = cifar.synthetic_images(n, seed=6)
    inputs = reader_inputs(
        Path(tempfile.gettempdir()) / f"workbook-bench-tfrecord-{n}", images, labels, cifar.CLASSES
    )
    return lesson_module().reader_variants(inputs, images, labels, cifar.CLASSES)


def _small_files_vs_shards(n: int = 1000) -> dict[str, Callable[[], int]]:
    built = _bench_readers(n)
    return {"small files": built["PNG files"], "4 shards": built["4 shards, batched parse"]}


def _file_count(n: int = 1000) -> dict[str, Callable[[], int]]:
    built = _bench_readers(n)
    return {"PNG files": built["PNG files"], "1 shard of PNGs": built["1 shard, PNG records"]}


BENCHMARKS = [
    Comparison(
        id="pack_files_into_shards.small_files_vs_shards",
        title=(
            "read every image once: "
            "one PNG file per image vs 4 TFRecord shards with batched parsing"
        ),
        make_variants=_small_files_vs_shards,
        baseline="small files",
        variant="4 shards",
        quick={"n": 1000},
        full={"n": 5000},
        repeats=5,
        min_time=0.0,
    ),
    Comparison(
        id="pack_files_into_shards.file_count",
        title=(
            "read every image once, a PNG decode each: "
            "one PNG file per image vs one TFRecord shard of the same PNGs"
        ),
        make_variants=_file_count,
        baseline="PNG files",
        variant="1 shard of PNGs",
        quick={"n": 1000},
        full={"n": 5000},
        repeats=5,
        min_time=0.0,
    ),
]
