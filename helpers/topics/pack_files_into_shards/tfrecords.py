"""Notebook 06's plumbing around its lesson code (``make_example``, ``write_shard``, ``PARSE_SPEC``,
the readers: imported from ``helpers.lessons.pack_files_into_shards``): atomic shards, verification,
the exercise check. The manifest, the ``Shard`` record, the shards' names, layout and checksums
(and ``flip_bit``) are in ``helpers.topics.pack_files_into_shards.tfrecords_manifest``.

Each shard is written under a temporary name and moved into place only when complete, so an
interrupted conversion leaves no partial shard under a final name. A manifest records every
shard's record count, its SHA-256 and a fingerprint of the source it came from; a re-run skips
shards that are up to date, and ``verify`` reads every shard back against the source.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from helpers import checks, fileio, lessons
from helpers.datasets import datafiles
from helpers.exercises import Feedback, correct, not_yet
from helpers.topics.pack_files_into_shards.tfrecords_manifest import (
    _SHARDS,
    _TARGET,
    ENCODINGS,
    MANIFEST,
    Shard,
    _fingerprint,
    plan_shards,
    read_manifest,
    sha256_of,
    shard_name,
)

# Re-exported (with read_manifest, used above): notebook 06 calls tfrecords.<name>.
from helpers.topics.pack_files_into_shards.tfrecords_manifest import flip_bit as flip_bit
from helpers.topics.pack_files_into_shards.tfrecords_manifest import shard_paths as shard_paths


class VerificationError(ValueError):
    """A shard does not match the manifest or the source; the message names shard and record."""


def lesson_module() -> Any:
    """Notebook 06's lesson code (``make_example``, ``write_shard``, the parse spec, the readers),
    exported from its ``#| export`` cells; imported on use, since it imports TensorFlow."""
    return lessons.of("06_pack_files_into_shards")


@checks.arguments(
    out_dir=checks.path,
    split=datafiles.split_name,
    target_bytes=_TARGET,
    gzip=checks.flag,
    encoding=checks.one_of(*ENCODINGS),
    progress=checks.flag,
    n_shards=_SHARDS,
)
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
    """Write ``images``/``labels`` as shards of about ``target_bytes`` (or ``n_shards``) under
    ``out_dir``.

    Skips shards whose file still matches the manifest and whose source slice is unchanged;
    returns the split's shards. Each shard appears only when complete (temporary name, then
    ``os.replace``); the manifest is updated after every shard. Pixel values outside 0-255, labels
    that are not whole numbers 0-9, and more shards than images are refused before anything is
    written.
    """
    from tqdm.auto import tqdm

    images, labels = datafiles.images_and_labels(images, labels)
    if n_shards is not None and n_shards > len(images):
        raise ValueError(
            f"n_shards={n_shards:,} is more shards than the {len(images):,} images to write: "
            f"choose n_shards from 1 to {len(images):,}"
        )
    lesson = lesson_module()
    out_dir = fileio.make_folder(out_dir, "out_dir")
    manifest = read_manifest(out_dir)
    # From a run that was killed mid-shard, or while it rewrote the manifest.
    for leftover in [*out_dir.glob(f".{split}-*.tmp"), *out_dir.glob(f".{MANIFEST}.*.tmp")]:
        leftover.unlink(missing_ok=True)
    record_bytes = (
        len(lesson.make_example(images[0], labels[0], encoding)) + 16
    )  # + TFRecord framing
    ranges = plan_shards(len(images), record_bytes, target_bytes, n_shards)
    options = {"gzip": gzip, "encoding": encoding}
    previous = {s["file"]: s for s in manifest.get(split, {}).get("shards", [])}
    shards: list[Shard] = []
    for index, (start, stop) in enumerate(
        tqdm(ranges, desc=f"convert {split}", unit="shard", disable=not progress)
    ):
        name = shard_name(split, index, len(ranges), gzip)
        path = out_dir / name
        source = _fingerprint(images[start:stop], labels[start:stop], options)
        old = previous.get(name)
        if (
            old
            and old["source_sha256"] == source
            and path.exists()
            and sha256_of(path) == old["sha256"]
        ):
            shards.append(Shard(**old))
            continue
        # Notebook 06's write_shard_safely: a temporary name, os.replace, the folder synced.
        lesson.write_shard_safely(path, images[start:stop], labels[start:stop], encoding, gzip)
        shards.append(Shard(name, stop - start, sha256_of(path), source))
        manifest[split] = {"options": options, "shards": [s.__dict__ for s in shards]}
        fileio.atomic_write_text(out_dir / MANIFEST, json.dumps(manifest, indent=2) + "\n")
    # Shards of an earlier, differently sized run are no longer part of the split.
    for stale in set(previous) - {s.file for s in shards}:
        (out_dir / stale).unlink(missing_ok=True)
    manifest[split] = {"options": options, "shards": [s.__dict__ for s in shards]}
    fileio.atomic_write_text(out_dir / MANIFEST, json.dumps(manifest, indent=2) + "\n")
    return shards


@checks.arguments(out_dir=checks.path, split=datafiles.split_name, progress=checks.flag)
def verify(
    out_dir: Path, images: Any, labels: Any, split: str, progress: bool = True
) -> dict[str, int]:
    """Read every shard of ``split`` back and check it against the manifest and the source.

    Returns ``{"shards": n, "records": n}``; raises ``VerificationError`` naming the shard (and
    the record, where one is at fault) on a checksum, count, content or corruption mismatch.
    """
    import numpy as np
    import tensorflow as tf
    from tqdm.auto import tqdm

    images, labels = datafiles.images_and_labels(images, labels)
    lesson = lesson_module()
    out_dir = Path(out_dir)
    entry = read_manifest(out_dir).get(split)
    if not entry:
        raise VerificationError(f"{out_dir / MANIFEST} has no split {split!r}: convert it first")
    encoding, gzip = entry["options"]["encoding"], entry["options"]["gzip"]
    spec, position, total = lesson.PARSE_SPEC, 0, 0
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
                    raise VerificationError(
                        f"{shard['file']}: record {record} is beyond the "
                        f"{len(images)} source images"
                    )
                if encoding == "jpeg":  # lossy: compare with the source encoded the same way
                    same = parsed["image"].numpy() == tf.io.encode_jpeg(images[i]).numpy()
                else:
                    same = np.array_equal(
                        lesson.decode_image(parsed["image"], parsed["shape"], encoding).numpy(),
                        images[i],
                    )
                if int(parsed["label"]) != int(labels[i]) or not same:
                    raise VerificationError(
                        f"{shard['file']}: record {record} does not match source image {i}"
                    )
        except tf.errors.DataLossError as exc:
            where = re.search(r"corrupted record at \d+", str(exc))
            detail = f" ({where.group(0)})" if where else ""
            raise VerificationError(
                f"{shard['file']}: record {record + 1} is corrupt: its checksum does not "
                f"match{detail}; records 0-{record} read back fine"
            ) from exc
        except tf.errors.InvalidArgumentError as exc:
            raise VerificationError(
                f"{shard['file']}: record {record + 1} cannot be parsed: {str(exc).splitlines()[0]}"
            ) from exc
        count = record + 1
        if count != shard["records"]:
            raise VerificationError(
                f"{shard['file']}: {count} records, the manifest says {shard['records']}"
            )
        if not checksum_ok:
            raise VerificationError(f"{shard['file']}: SHA-256 differs from the manifest")
        position += count
        total += 1
    if position != len(images):
        raise VerificationError(
            f"split {split!r}: {position} records in the shards, {len(images)} in the source"
        )
    return {"shards": total, "records": position}


SIGNATURES = {"png": b"\x89PNG\r\n\x1a\n", "jpeg": b"\xff\xd8"}  # how each file starts
LOSSY = " It holds JPEG bytes, which are lossy: write raw or PNG."
SHARD_NAMES = (".tfr", ".gz")  # a name holding one of these is taken for a shard (.tfrecord too)


def shard_files(path: Path) -> list[Path]:
    """The regular files in ``path`` named like shards (``.tfr``, ``.tfrec``, ``.tfrecord`` or
    ``.gz``, in any case, anywhere in the name), sorted by name."""
    return sorted(
        p
        for p in Path(path).iterdir()
        if p.is_file()
        and not p.name.startswith(".")
        and any(m in p.name.lower() for m in SHARD_NAMES)
    )


def fresh_dir(path: Path) -> Path:
    """Create ``path`` and delete the files named like shards in it (``shard_files``): a check
    then sees only shards written since."""
    path = fileio.make_folder(path, "path")
    for old in shard_files(path):
        old.unlink()
    return path


def check_two_gzip_shards(out_dir: Path, images: Any, labels: Any) -> Feedback:
    """Exercise (06): two GZIP shards in ``out_dir`` that read back as every image (raw or PNG) and
    label, in order."""
    import numpy as np
    import tensorflow as tf

    lesson = lesson_module()
    if not Path(out_dir).is_dir():
        return not_yet(f"{Path(out_dir).name} is not a folder: pass the folder the shards are in.")
    files = shard_files(out_dir)
    if len(files) != 2:
        others = sorted(p.name for p in Path(out_dir).iterdir() if p.is_file() and p not in files)
        named = f" (other files there: {', '.join(others[:5])}; name shards *.tfrecord.gz)"
        return not_yet(
            f"{len(files)} TFRecord files in {Path(out_dir).name}/, not 2: write two shards there "
            f"with write_shard(..., gzip=True).{named if others else ''}"
        )
    position, counts = 0, []
    for path in files:
        count = 0
        try:  # the first two bytes: every GZIP stream starts with 1f 8b
            with path.open("rb") as file:
                magic = file.read(2)
        except OSError as exc:  # unreadable (permissions, a file removed meanwhile): feedback
            return not_yet(f"{path.name} could not be read: {exc.strerror or exc}.")
        if magic != b"\x1f\x8b":
            return not_yet(f"{path.name} is not GZIP-compressed: pass gzip=True to write_shard.")
        try:
            for record in tf.data.TFRecordDataset(str(path), compression_type="GZIP"):
                parsed = tf.io.parse_single_example(record, lesson.PARSE_SPEC)
                i = position + count
                # PNG by its 8-byte signature (a PNG can be as long as the raw pixels), then raw
                # by length (raw pixels can start like a JPEG), then JPEG's 2 bytes.
                data = parsed["image"].numpy()
                raw = len(data) == int(tf.reduce_prod(parsed["shape"]))
                png, jpeg = (data.startswith(SIGNATURES[e]) for e in ("png", "jpeg"))
                encoding = "png" if png else "raw" if raw or not jpeg else "jpeg"
                image = lesson.decode_image(parsed["image"], parsed["shape"], encoding).numpy()
                if (
                    i >= len(images)
                    or int(parsed["label"]) != int(labels[i])
                    or not np.array_equal(image, images[i])
                ):
                    return not_yet(
                        f"{path.name}: record {count} is not image {i} of the split with its "
                        f"label.{LOSSY if encoding == 'jpeg' else ''}"
                    )
                count += 1
        except (tf.errors.NotFoundError, tf.errors.PermissionDeniedError) as exc:  # gone meanwhile
            return not_yet(
                f"{path.name} could not be read: {''.join((exc.message or '').splitlines()[:1])}"
            )
        except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as exc:
            reason = "".join((exc.message or "").splitlines()[:1]).split("}} ")[-1][:200]
            return not_yet(
                f"{path.name}: record {count} is not an Example as write_shard writes it (image "
                f"bytes, shape, label): {type(exc).__name__}: {reason}"
            )
        if count == 0:
            return not_yet(f"{path.name} is empty: split the images between the two shards.")
        position += count
        counts.append(count)
    if position != len(images):
        return not_yet(f"the shards hold {position} records; the split has {len(images)}.")
    if abs(counts[0] - counts[1]) > 1:
        return not_yet(
            f"the shards hold {counts[0]} and {counts[1]} records: "
            "put the first half of the images in one and the second half in the other."
        )
    return correct(f"{position} records in 2 GZIP shards, read back in order.")
