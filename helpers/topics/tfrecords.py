"""Pack many small images into a few verified TFRecord shards, and read them back fast (notebook 06).

Each shard is written under a temporary name and moved into place only when complete, so an
interrupted conversion leaves no partial shard under a final name. A manifest records every
shard's record count, its SHA-256 and a fingerprint of the source it came from; a re-run skips
shards that are up to date, and ``verify`` reads every shard back against the source.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers import fileio
from helpers.checks import whole_number
from helpers.comparison import Comparison
from helpers.exercises import Feedback, correct, not_yet

MANIFEST = "manifest.json"
ENCODINGS = ("raw", "png", "jpeg")


@dataclass(frozen=True)
class Shard:
    """One shard as the manifest records it."""

    file: str
    records: int
    sha256: str
    source_sha256: str


class VerificationError(ValueError):
    """A shard does not match the manifest or the source; the message names shard and record."""


def sha256_of(path: Path) -> str:
    """The SHA-256 hex digest of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _fingerprint(images: Any, labels: Any, options: dict[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps(options, sort_keys=True).encode())
    digest.update(images.tobytes())
    digest.update(labels.astype("int64").tobytes())
    return digest.hexdigest()


def example(image: Any, label: int, encoding: str = "raw") -> bytes:
    """One ``tf.train.Example``: the image (raw bytes, PNG or JPEG), its shape and its label."""
    import tensorflow as tf

    if encoding == "raw":
        data = image.tobytes()
    elif encoding == "png":
        data = tf.io.encode_png(image).numpy()
    else:  # jpeg: lossy, but deterministic for the same pixels and settings
        data = tf.io.encode_jpeg(image).numpy()
    feature = {
        "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[data])),
        "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(label)])),
        "shape": tf.train.Feature(int64_list=tf.train.Int64List(value=list(image.shape))),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def plan_shards(
    n_records: int, record_bytes: int, target_bytes: int, n_shards: int | None = None
) -> list[tuple[int, int]]:
    """Split ``n_records`` into contiguous ``(start, stop)`` ranges of about ``target_bytes``
    each, or into exactly ``n_shards`` ranges when it is given."""
    if n_records < 1:
        raise ValueError(f"nothing to convert: {n_records} records")
    if target_bytes < 1:
        raise ValueError(f"target_bytes must be >= 1, got {target_bytes}")
    if n_shards is not None:
        whole_number("n_shards", n_shards)
    if n_shards is None:
        n_shards = round(n_records * record_bytes / target_bytes)
    n_shards = max(1, min(n_records, n_shards))
    bounds = [round(i * n_records / n_shards) for i in range(n_shards + 1)]
    return list(zip(bounds[:-1], bounds[1:], strict=True))


def shard_name(split: str, index: int, count: int, gzip: bool) -> str:
    """``train-00001-of-00004.tfrecord`` (``.gz`` when compressed)."""
    return f"{split}-{index:05d}-of-{count:05d}.tfrecord" + (".gz" if gzip else "")


def read_manifest(out_dir: Path) -> dict[str, Any]:
    """The manifest in ``out_dir`` as a dict (empty when there is none yet)."""
    path = Path(out_dir) / MANIFEST
    return json.loads(path.read_text()) if path.exists() else {}


def convert(
    images: Any,
    labels: Any,
    out_dir: Path,
    split: str,
    target_bytes: int = 100 * 2**20,
    gzip: bool = False,
    encoding: str = "raw",
    progress: bool = True,
    n_shards: int | None = None,
) -> list[Shard]:
    """Write ``images``/``labels`` as shards of about ``target_bytes`` (or ``n_shards``) under ``out_dir``.

    Skips shards whose file still matches the manifest and whose source slice is unchanged;
    returns the split's shards. Each shard appears only when complete (temporary name, then
    ``os.replace``); the manifest is updated after every shard.
    """
    import tensorflow as tf
    from tqdm.auto import tqdm

    if encoding not in ENCODINGS:
        raise ValueError(f"encoding must be one of {ENCODINGS}, got {encoding!r}")
    if len(images) != len(labels):
        raise ValueError(f"{len(images)} images but {len(labels)} labels")
    if not split or not split.replace("_", "").isalnum():
        raise ValueError(f"split must be a plain name such as 'train', got {split!r}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for leftover in out_dir.glob(f".{split}-*.tmp"):  # from a run that was killed mid-shard
        leftover.unlink(missing_ok=True)
    record_bytes = len(example(images[0], labels[0], encoding)) + 16  # + TFRecord framing
    ranges = plan_shards(len(images), record_bytes, target_bytes, n_shards)
    options = {"gzip": gzip, "encoding": encoding}
    manifest = read_manifest(out_dir)
    previous = {s["file"]: s for s in manifest.get(split, {}).get("shards", [])}
    shards: list[Shard] = []
    writer_options = tf.io.TFRecordOptions(compression_type="GZIP" if gzip else "")
    for index, (start, stop) in enumerate(tqdm(ranges, desc=f"convert {split}", unit="shard", disable=not progress)):
        name = shard_name(split, index, len(ranges), gzip)
        path = out_dir / name
        source = _fingerprint(images[start:stop], labels[start:stop], options)
        old = previous.get(name)
        if old and old["source_sha256"] == source and path.exists() and sha256_of(path) == old["sha256"]:
            shards.append(Shard(**old))
            continue
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=out_dir)
        os.close(fd)
        try:
            with tf.io.TFRecordWriter(tmp, writer_options) as writer:
                for i in range(start, stop):
                    writer.write(example(images[i], labels[i], encoding))
            shard = Shard(name, stop - start, sha256_of(Path(tmp)), source)
            os.replace(tmp, path)
        finally:
            Path(tmp).unlink(missing_ok=True)
        shards.append(shard)
        manifest[split] = {"options": options, "shards": [s.__dict__ for s in shards]}
        fileio.atomic_write_text(out_dir / MANIFEST, json.dumps(manifest, indent=2) + "\n")
    # Shards of an earlier, differently sized run are no longer part of the split.
    for stale in set(previous) - {s.file for s in shards}:
        (out_dir / stale).unlink(missing_ok=True)
    manifest[split] = {"options": options, "shards": [s.__dict__ for s in shards]}
    fileio.atomic_write_text(out_dir / MANIFEST, json.dumps(manifest, indent=2) + "\n")
    return shards


def parse_spec() -> dict[str, Any]:
    """The feature spec of the workbook's examples: image bytes, label, shape."""
    import tensorflow as tf

    return {
        "image": tf.io.FixedLenFeature([], tf.string),
        "label": tf.io.FixedLenFeature([], tf.int64),
        "shape": tf.io.FixedLenFeature([3], tf.int64),
    }


def decode(image_bytes: Any, shape: Any, encoding: str) -> Any:
    """An image tensor from a record's bytes (raw: reshape; png: decode)."""
    import tensorflow as tf

    if encoding == "png":
        return tf.io.decode_png(image_bytes, channels=3)
    if encoding == "jpeg":
        return tf.io.decode_jpeg(image_bytes, channels=3)
    return tf.reshape(tf.io.decode_raw(image_bytes, tf.uint8), shape)


def verify(out_dir: Path, images: Any, labels: Any, split: str, progress: bool = True) -> dict[str, int]:
    """Read every shard of ``split`` back and check it against the manifest and the source.

    Returns ``{"shards": n, "records": n}``; raises ``VerificationError`` naming the shard (and
    the record, where one is at fault) on a checksum, count, content or corruption mismatch.
    """
    import numpy as np
    import tensorflow as tf
    from tqdm.auto import tqdm

    out_dir = Path(out_dir)
    entry = read_manifest(out_dir).get(split)
    if not entry:
        raise VerificationError(f"{out_dir / MANIFEST} has no split {split!r}: convert it first")
    encoding, gzip = entry["options"]["encoding"], entry["options"]["gzip"]
    spec, position, total = parse_spec(), 0, 0
    for shard in tqdm(entry["shards"], desc=f"verify {split}", unit="shard", disable=not progress):
        path = out_dir / shard["file"]
        if not path.exists():
            raise VerificationError(f"{shard['file']}: missing")
        checksum_ok = sha256_of(path) == shard["sha256"]
        dataset = tf.data.TFRecordDataset(str(path), compression_type="GZIP" if gzip else "")
        record = -1
        try:
            for record, raw in enumerate(dataset):
                parsed = tf.io.parse_single_example(raw, spec)
                i = position + record
                if i >= len(images):
                    raise VerificationError(f"{shard['file']}: record {record} is beyond the {len(images)} source images")
                if encoding == "jpeg":  # lossy: compare with the source encoded the same way
                    same = parsed["image"].numpy() == tf.io.encode_jpeg(images[i]).numpy()
                else:
                    same = np.array_equal(decode(parsed["image"], parsed["shape"], encoding).numpy(), images[i])
                if int(parsed["label"]) != int(labels[i]) or not same:
                    raise VerificationError(f"{shard['file']}: record {record} does not match source image {i}")
        except tf.errors.DataLossError as exc:
            where = re.search(r"corrupted record at \d+", str(exc))
            detail = f" ({where.group(0)})" if where else ""
            raise VerificationError(f"{shard['file']}: record {record + 1} is corrupt: its checksum does not "
                                    f"match{detail}; records 0-{record} read back fine") from exc
        except tf.errors.InvalidArgumentError as exc:
            raise VerificationError(f"{shard['file']}: record {record + 1} cannot be parsed: "
                                    f"{str(exc).splitlines()[0]}") from exc
        count = record + 1
        if count != shard["records"]:
            raise VerificationError(f"{shard['file']}: {count} records, the manifest says {shard['records']}")
        if not checksum_ok:
            raise VerificationError(f"{shard['file']}: SHA-256 differs from the manifest")
        position += count
        total += 1
    if position != len(images):
        raise VerificationError(f"split {split!r}: {position} records in the shards, {len(images)} in the source")
    return {"shards": total, "records": position}


def flip_bit(path: Path, offset: int | None = None) -> int:
    """Flip the lowest bit of one byte of a file (the middle one by default); return its offset.
    For demonstrating and testing corruption checks on a copy, never on data you need."""
    path = Path(path)
    raw = bytearray(path.read_bytes())
    if not raw:
        raise ValueError(f"{path} is empty")
    offset = len(raw) // 2 if offset is None else offset
    if not 0 <= offset < len(raw):
        raise ValueError(f"offset {offset} is outside {path.name} ({len(raw)} bytes)")
    raw[offset] ^= 0x01
    path.write_bytes(bytes(raw))
    return offset


def shard_paths(out_dir: Path, split: str) -> list[str]:
    """The shard files of ``split``, in order, as the manifest lists them."""
    entry = read_manifest(Path(out_dir)).get(split)
    if not entry:
        raise ValueError(f"no split {split!r} in {Path(out_dir) / MANIFEST}")
    return [str(Path(out_dir) / s["file"]) for s in entry["shards"]]


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


# --- Readers: each returns a dataset of (image batch uint8 [B, 32, 32, 3], label batch) -------------

def read_files(paths: Sequence[str], classes: Sequence[str], batch: int = 256) -> Any:
    """Many small files: read and decode one PNG per element; the label from the folder name."""
    import tensorflow as tf

    table = tf.constant(list(classes))

    def load(path: Any) -> tuple[Any, Any]:
        folder = tf.strings.split(path, os.sep)[-2]
        label = tf.argmax(tf.cast(tf.equal(table, folder), tf.int64))
        return tf.io.decode_png(tf.io.read_file(path), channels=3), label

    return (tf.data.Dataset.from_tensor_slices(list(paths))
            .map(load, num_parallel_calls=tf.data.AUTOTUNE).batch(batch))


def read_shards(paths: Sequence[str], batched_parse: bool = True, gzip: bool = False, batch: int = 256) -> Any:
    """TFRecord shards (raw encoding), interleaved; parse per example or one ``parse_example`` per batch."""
    import tensorflow as tf

    spec = parse_spec()
    compression = "GZIP" if gzip else ""
    files = tf.data.Dataset.from_tensor_slices(list(paths))
    records = files.interleave(
        lambda f: tf.data.TFRecordDataset(f, compression_type=compression),
        cycle_length=max(1, len(paths)), num_parallel_calls=tf.data.AUTOTUNE,
    )

    def images(parsed: Any) -> tuple[Any, Any]:
        raw = tf.io.decode_raw(parsed["image"], tf.uint8)
        return tf.reshape(raw, [-1, 32, 32, 3]), parsed["label"]

    if batched_parse:
        return records.batch(batch).map(lambda r: images(tf.io.parse_example(r, spec)),
                                        num_parallel_calls=tf.data.AUTOTUNE)
    return records.map(lambda r: tf.io.parse_single_example(r, spec), num_parallel_calls=tf.data.AUTOTUNE) \
        .batch(batch).map(images)


def read_memory(images: Any, labels: Any, batch: int = 256) -> Any:
    """The "under 1 GB, load it whole" advice: the arrays in memory, batched and cached."""
    import tensorflow as tf

    return tf.data.Dataset.from_tensor_slices((images, labels)).batch(batch).cache()


def count_images(dataset: Any) -> int:
    """Iterate a dataset of (image batch, label batch) to the end; return how many images it gave."""
    total = 0
    for image_batch, _ in dataset:
        total += int(image_batch.shape[0])
    return total


READERS = (
    "PNG files",
    "1 shard, per-example parse",
    "1 shard, batched parse",
    "4 shards, batched parse",
    "4 GZIP shards, batched parse",
    "in memory, cached",
)


def readers(workdir: Path, images: Any, labels: Any, classes: Sequence[str]) -> dict[str, Callable[[], int]]:
    """The ``READERS`` compared in notebook 06, over the same images; each call reads them all once.

    Writes what is missing under ``workdir`` first (small files, 1 and 4 shards, a GZIP copy);
    re-runs reuse it.
    """
    workdir = Path(workdir)
    files = write_image_files(images, labels, workdir / "files", classes)
    convert(images, labels, workdir / "one", "all", n_shards=1, progress=False)
    convert(images, labels, workdir / "four", "all", n_shards=4, progress=False)
    convert(images, labels, workdir / "gzip", "all", n_shards=4, gzip=True, progress=False)
    one, four, gz = (shard_paths(workdir / d, "all") for d in ("one", "four", "gzip"))
    memory = read_memory(images, labels)
    count_images(memory)  # fill the cache: later passes read from memory
    return dict(zip(READERS, (
        lambda: count_images(read_files(files, classes)),
        lambda: count_images(read_shards(one, batched_parse=False)),
        lambda: count_images(read_shards(one)),
        lambda: count_images(read_shards(four)),
        lambda: count_images(read_shards(gz, gzip=True)),
        lambda: count_images(memory),
    ), strict=True))


def files_vs_reader(reader: str = "4 shards, batched parse", n: int = 1000, workdir: Path | None = None) -> dict[str, Callable[[], int]]:
    """PNG files against one of the other ``READERS`` on ``n`` generated images (for the widget)."""
    from helpers.topics import cifar

    if reader not in READERS[1:]:
        raise ValueError(f"reader must be one of {READERS[1:]}, got {reader!r}")
    whole_number("n", n)
    images, labels = cifar.synthetic_images(n, seed=6)
    workdir = Path(workdir or tempfile.gettempdir()) / f"readers-{n}"
    built = readers(workdir, images, labels, cifar.CLASSES)
    return {"PNG files": built["PNG files"], reader: built[reader]}


def check_converted(out_dir: Path, images: Any, labels: Any, split: str, n_shards: int, gzip: bool) -> Feedback:
    """Exercise (06): ``split`` sits in ``out_dir`` as ``n_shards`` shards (GZIP or not) that verify."""
    entry = read_manifest(Path(out_dir)).get(split)
    if not entry:
        return not_yet(f"no split {split!r} in {Path(out_dir).name}/manifest.json yet: run tfrecords.convert.")
    if len(entry["shards"]) != n_shards:
        return not_yet(f"{len(entry['shards'])} shards, not {n_shards}: pass n_shards={n_shards}.")
    if entry["options"]["gzip"] != gzip:
        return not_yet(f"the shards are {'' if entry['options']['gzip'] else 'not '}GZIP-compressed.")
    try:
        report = verify(Path(out_dir), images, labels, split, progress=False)
    except VerificationError as exc:
        return not_yet(f"verification failed: {exc}")
    return correct(f"{report['records']} records in {report['shards']} verified GZIP shards.")


def _small_files_vs_shards(n: int = 1000) -> dict[str, Callable[[], int]]:
    from helpers.topics import cifar

    images, labels = cifar.synthetic_images(n, seed=6)
    built = readers(Path(tempfile.gettempdir()) / f"workbook-bench-tfrecord-{n}", images, labels, cifar.CLASSES)
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
