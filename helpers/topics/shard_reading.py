"""Notebook 06's reading comparison: the files its readers read, the widget's variants, the bench id.

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
from helpers.topics import datafiles
from helpers.topics.tfrecords import convert, lesson_module, shard_paths


def _classes(name: str, value: Any) -> list[str]:
    """Class names, one folder each: a list of distinct plain names (not one string)."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise checks.BadType(f"{name} must be a list of class names, got {checks._show(value)} ({type(value).__name__})")
    for item in value:
        checks.text(f"each of {name}", item)
        if item in (".", "..") or "/" in item or "\\" in item or os.sep in item:
            raise ValueError(f"each of {name} must be a plain folder name, got {item!r}")
    if len(set(value)) != len(value) or not value:
        raise ValueError(f"{name} must be distinct names, at least one, got {checks._show(list(value))}")
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
        raise ValueError(f"out_dir: {str(out_dir)!r} is the current folder or one above it; name a new folder, "
                         "which write_image_files replaces as a whole")
    if out_dir.is_dir():
        for entry in out_dir.iterdir():
            inside = entry.iterdir() if entry.is_dir() and not entry.is_symlink() and entry.name in classes else [entry]
            for item in inside:
                if not (item.is_file() and item.suffix == ".png" and item.parent != out_dir):
                    raise ValueError(f"out_dir: {out_dir} holds {item.relative_to(out_dir)}, which is not one of its "
                                     "class folders of PNG files; write_image_files replaces the whole folder, so "
                                     "choose a new or empty one")


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
def reader_inputs(workdir: Path, images: Any, labels: Any, classes: Sequence[str]) -> dict[str, list[str]]:
    """Write what notebook 06's readers read, under ``workdir``: one PNG per image (``files``), 1 shard
    of PNG records (``one_png``), and of raw records 1 shard (``one``), 4 shards (``four``) and 4
    GZIP shards (``gzip``). Re-runs reuse what is up to date."""
    images, labels = _images_labels_classes(images, labels, classes)
    if len(images) < 4:
        raise ValueError(f"images must hold at least 4 images (the 4-shard readers), got {len(images)}")
    workdir = fileio.make_folder(workdir, "workdir")
    inputs = {"files": write_image_files(images, labels, workdir / "files", classes)}
    for name, n_shards, gzip, encoding in (("one_png", 1, False, "png"), ("one", 1, False, "raw"),
                                           ("four", 4, False, "raw"), ("gzip", 4, True, "raw")):
        convert(images, labels, workdir / name, "all", n_shards=n_shards, gzip=gzip, encoding=encoding, progress=False)
        inputs[name] = shard_paths(workdir / name, "all")
    return inputs


#: The inputs each reader reads from disk (the in-memory reader reads none).
ON_DISK = {"PNG files": "files", "1 shard, PNG records": "one_png", "1 shard, per-example parse": "one",
           "1 shard, batched parse": "one", "4 shards, batched parse": "four", "4 GZIP shards, batched parse": "gzip"}


def _widget_inputs(n: int, workdir: Path | None) -> tuple[Any, Any, dict[str, list[str]]]:
    from helpers.topics import cifar

    # The images, one copy cached by the in-memory reader, and a batch in flight; and the files on disk.
    checks.fits_memory(f"files_vs_reader(n={n:,})", n * 32 * 32 * 3 * 3)
    if n * 32 * 32 * 3 * 5 > 0.5 * shutil.disk_usage(tempfile.gettempdir() if workdir is None else
                                                     fileio.make_folder(workdir, "workdir")).free:
        raise ValueError(f"n={n:,} images would need about {n * 15_360 / 2**20:,.0f} MiB of disk, more than half "
                         "what is free: choose a smaller n")
    images, labels = cifar.synthetic_images(n, seed=6)
    return images, labels, reader_inputs(Path(workdir or tempfile.gettempdir()) / f"readers-{n}", images, labels, cifar.CLASSES)


@checks.arguments(reader=checks.one_of(*READERS[1:]), n=checks.whole(4, hint="images; 4 shards need 4"),
                  workdir=checks.optional(checks.path), cache=checks.one_of("warm", "cold"))
def files_vs_reader(reader: str = "4 shards, batched parse", n: int = 1000, workdir: Path | None = None,
                    cache: str = "warm") -> dict[str, Callable[[], int]]:
    """PNG files against one of the other ``READERS`` on ``n`` generated images (for the widget;
    ``cache`` is read by ``drop_before_each``)."""
    from helpers.topics import cifar

    images, labels, inputs = _widget_inputs(n, workdir)
    built = lesson_module().reader_variants(inputs, images, labels, cifar.CLASSES)
    return {"PNG files": built["PNG files"], reader: built[reader]}


@checks.arguments(reader=checks.one_of(*READERS[1:]), n=checks.whole(4, hint="images; 4 shards need 4"),
                  workdir=checks.optional(checks.path), cache=checks.one_of("warm", "cold"))
def drop_before_each(reader: str = "4 shards, batched parse", n: int = 1000, workdir: Path | None = None,
                     cache: str = "warm") -> Callable[[str], None] | None:
    """For the widget: with ``cache="cold"``, the hook that drops a variant's files from the page
    cache before each timed read (the notebook's ``drop_from_page_cache``); None when warm."""
    if cache == "warm":
        return None
    if not hasattr(os, "posix_fadvise"):
        raise ValueError("cache='cold' needs os.posix_fadvise (Linux); this system has none: choose 'warm'")
    inputs = _widget_inputs(n, workdir)[2]
    drop = lesson_module().drop_from_page_cache
    return lambda name: drop(inputs[ON_DISK[name]]) if name in ON_DISK else None


@checks.arguments(path=checks.path, size=checks.whole(2**20, 2**34, hint="bytes"))
def random_file(path: Path, size: int) -> Path:
    """A file of ``size`` incompressible bytes at ``path`` (for the disk's read rate), written once
    (kept while its size matches), through a temporary name so no half-written file remains."""
    path = Path(path)
    if path.is_file() and path.stat().st_size == size:
        return path
    if size > 0.5 * shutil.disk_usage(fileio.make_folder(path.parent, "path's folder")).free:
        raise ValueError(f"size: {size / 2**20:,.0f} MiB is more than half the free disk; choose a smaller one")
    return fileio.atomic_write_bytes(path, os.urandom(size))


#: Typical sequential reads from drive data sheets (MB/s), low to high; not measured here.
DRIVES = (("a hard disk", 100, 250), ("a SATA SSD", 500, 600), ("an NVMe SSD", 2_000, 7_000))


def disk_summary(rates: Sequence[float], size: int) -> str:
    """The disk's cold sequential read rate (MB/s, from ``rates``) set among the ``DRIVES``."""
    import numpy as np

    median, low, high = float(np.median(rates)), min(rates), max(rates)
    near = [name for name, lo, hi in DRIVES if 0.9 * lo <= median <= 1.1 * hi]
    under = [name for name, lo, _ in DRIVES if median < 0.9 * lo]
    over = [name for name, _, hi in DRIVES if median > 1.1 * hi]
    where = (f"in the range of {' or '.join(near)}" if near else f"slower than {under[0]} typically reads" if not over
             else f"faster than {over[-1]} typically reads" if not under else
             f"between {over[-1]} and {under[0]} by their typical figures")
    return (f"This disk read a {size / 2**20:,.0f} MiB file cold at {median:,.0f} MB/s (median of {len(rates)} reads, "
            f"{low:,.0f}-{high:,.0f}): {where}. (A virtual machine's disk may be served from its host's cache.)")


def cold_summary(warm: Any, cold: Any, file_bytes: dict[str, int], disk: Sequence[float]) -> str:
    """Read notebook 06's cold table against the warm one and the disk: how much slower each reader
    became, whether the file count costs more cold, and which readers come near the disk's rate."""
    import numpy as np

    from helpers import verdicts

    lines = [verdicts.verdict(cold, "1 shard, PNG records", "PNG files", "faster",
                              "one file instead of one per image; the same PNG decode")]
    (c_lo, c_hi), (w_lo, w_hi) = (t.loc["1 shard, PNG records", ["speedup_low", "speedup_high"]] for t in (cold, warm))
    ranges = f"(quartile ratios {c_lo:.2f}-{c_hi:.2f}x cold, {w_lo:.2f}-{w_hi:.2f}x warm)"
    lines.append("The file count's gap " + (f"grew when the files came from the disk {ranges}." if c_lo > w_hi else
                                            f"shrank when the files came from the disk {ranges}." if c_hi < w_lo else
                                            f"shows no clear change between cold and warm reads {ranges}: the ranges overlap, "
                                            "so rerun with more repeats before drawing a conclusion."))
    rate = float(np.median(disk))
    for name in cold.index:
        moved = file_bytes[name] / cold.loc[name, "median_s"] / 1e6
        slower = cold.loc[name, "median_s"] / warm.loc[name, "median_s"]
        bound = ("near the disk's rate: this reader is likely I/O-bound here" if moved >= 0.5 * rate else
                 "far below the disk's rate: not held back by its throughput but by per-file or CPU work")
        lines.append(f"{name}: {moved:,.1f} MB/s cold, {moved / rate:.0%} of the disk's {rate:,.0f} MB/s, "
                     f"{slower:.2f}x the warm time; {bound}.")
    return "\n".join(lines)


def sizes_summary(sizes: Any, disk: Sequence[float] | None) -> str:
    """Each shard-size reader's MB/s (the table's ``MB_per_s``), set beside the disk's cold
    sequential rate when it was measured (``disk``, MB/s), else said to be warm."""
    import numpy as np

    rates = ", ".join(f"{name} {sizes.loc[name, 'MB_per_s']:,.0f} MB/s" for name in sizes.index)
    if not disk:
        return f"Read warm (no cold reads on this system): {rates}."
    rate = float(np.median(disk))
    best = sizes["MB_per_s"].idxmax()
    return (f"Read cold: {rates}; the fastest, {best}, reached {sizes.loc[best, 'MB_per_s'] / rate:.0%} of the disk's "
            f"{rate:,.0f} MB/s sequential rate measured above.")


def _span(fewest_most: str) -> str:
    """'2-2' -> '2'; '48-49' -> '48 to 49'."""
    low, _, high = str(fewest_most).partition("-")
    return low if low == high else f"{low} to {high}"


def shares_summary(shares: Any) -> str:
    """Read 06's table of files per worker: which layouts leave workers with nothing to read."""
    lines = []
    for _, row in shares.iterrows():
        idle = int(row["idle workers"])
        lines.append(f"{row['layout']} among {row['workers']} workers: "
                     + (f"{idle} of them get no file and sit idle" if idle else
                        f"every worker gets {_span(row['files each (fewest-most)'])} files"))
    return "; ".join(lines) + "."


def _bench_readers(n: int) -> dict[str, Callable[[], int]]:
    from helpers.topics import cifar

    images, labels = cifar.synthetic_images(n, seed=6)
    inputs = reader_inputs(Path(tempfile.gettempdir()) / f"workbook-bench-tfrecord-{n}", images, labels, cifar.CLASSES)
    return lesson_module().reader_variants(inputs, images, labels, cifar.CLASSES)


def _small_files_vs_shards(n: int = 1000) -> dict[str, Callable[[], int]]:
    built = _bench_readers(n)
    return {"small files": built["PNG files"], "4 shards": built["4 shards, batched parse"]}


def _file_count(n: int = 1000) -> dict[str, Callable[[], int]]:
    built = _bench_readers(n)
    return {"PNG files": built["PNG files"], "1 shard of PNGs": built["1 shard, PNG records"]}


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
    Comparison(
        id="tfrecord.file_count",
        title="read every image once, a PNG decode each: one PNG file per image vs one TFRecord shard of the same PNGs",
        make_variants=_file_count,
        baseline="PNG files",
        variant="1 shard of PNGs",
        quick={"n": 1000},
        full={"n": 5000},
        repeats=5,
        min_time=0.0,
    ),
]
