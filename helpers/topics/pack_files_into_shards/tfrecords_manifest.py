"""The shards' manifest, names and checksums (notebook 06): ``MANIFEST`` and the ``Shard`` record
it keeps for each file (its SHA-256 from ``sha256_of``, and a fingerprint of its source),
``plan_shards`` and ``shard_name`` for a conversion's layout, ``read_manifest`` (refusing a
damaged one), ``shard_paths``, and ``flip_bit``, which corrupts a copy to show the checks at work.

``helpers.topics.pack_files_into_shards.tfrecords`` writes and verifies the shards with these; it
re-exports
``flip_bit``, ``read_manifest`` and ``shard_paths``, which notebook 06 calls as
``tfrecords.<name>``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers import checks
from helpers.datasets import datafiles

MANIFEST = "manifest.json"
ENCODINGS = ("raw", "png", "jpeg")
#: Shard names number shards with five digits.
MAX_SHARDS = 99_999
_SHARDS = checks.optional(checks.whole(1, MAX_SHARDS, "shard names have five digits"))
_TARGET = checks.whole(1, 2**40, "bytes per shard")


@dataclass(frozen=True)
class Shard:
    """One shard as the manifest records it."""

    file: str
    records: int
    sha256: str
    source_sha256: str


def sha256_of(path: Path) -> str:
    """The SHA-256 hex digest of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@checks.arguments(path=datafiles.existing_file, offset=checks.optional(checks.whole(0)))
def flip_bit(path: Path, offset: int | None = None) -> int:
    """Flip the lowest bit of one byte of a file (the middle one by default); return its offset.
    For demonstrating and testing corruption checks on a copy, never on data you need."""
    path = Path(path)
    checks.fits_memory(f"flip_bit on {path.name}", path.stat().st_size)
    raw = bytearray(path.read_bytes())
    if not raw:
        raise ValueError(f"{path} is empty")
    offset = len(raw) // 2 if offset is None else offset
    if not 0 <= offset < len(raw):
        raise ValueError(f"offset {offset} is outside {path.name} ({len(raw)} bytes)")
    raw[offset] ^= 0x01
    path.write_bytes(bytes(raw))
    return offset


@checks.arguments(path=datafiles.existing_file, offset=checks.whole(0))
def where_in_record(path: Path, offset: int) -> str:
    """Which record of an uncompressed TFRecord file holds byte ``offset``, in which part of its
    framing (length: 8 bytes, the length's CRC: 4, data, the data's CRC: 4), and the offset a
    failed read reports (TensorFlow's ``record_reader.cc`` checks the length and its CRC from the
    record's start, the data and its CRC from 12 bytes after it). Reads the framing of the
    records before it only, so it still answers after that byte was changed."""
    path = Path(path)
    checks.fits_memory(f"where_in_record on {path.name}", path.stat().st_size)
    raw = path.read_bytes()
    if offset >= len(raw):
        raise ValueError(f"offset must be a byte of {path.name} (0-{len(raw) - 1}), got {offset!r}")
    if raw[:2] == b"\x1f\x8b":
        raise ValueError(f"{path.name} is GZIP-compressed: its bytes are not the records' framing")
    start, record = 0, 0
    while start + 12 <= len(raw):
        size = int.from_bytes(raw[start : start + 8], "little")
        part = (
            ("length", start)
            if offset < start + 8
            else ("length's CRC", start)
            if offset < start + 12
            else ("data", start + 12)
            if offset < start + 12 + size
            else ("data's CRC", start + 12)
            if offset < start + 16 + size
            else None
        )
        if part is not None:
            return (
                f"byte {offset - start:,} of record {record} (its {part[0]}; the record starts at "
                f"{start:,}, and a read reports it corrupt at {part[1]:,})"
            )
        start, record = start + 16 + size, record + 1
    raise ValueError(f"{path.name} is not an uncompressed TFRecord file up to byte {offset}")


def _fingerprint(images: Any, labels: Any, options: dict[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps(options, sort_keys=True).encode())
    digest.update(images.tobytes())
    digest.update(labels.astype("int64").tobytes())
    return digest.hexdigest()


@checks.arguments(
    n_records=checks.whole(1, hint="records; nothing to convert when 0"),
    record_bytes=checks.whole(1, 2**40),
    target_bytes=_TARGET,
    n_shards=_SHARDS,
)
def plan_shards(
    n_records: int, record_bytes: int, target_bytes: int, n_shards: int | None = None
) -> list[tuple[int, int]]:
    """Split ``n_records`` into contiguous ``(start, stop)`` ranges of about ``target_bytes``
    each, or into exactly ``n_shards`` ranges when it is given."""
    if n_shards is not None and n_shards > n_records:
        raise ValueError(
            f"n_shards={n_shards:,} is more shards than the {n_records:,} records to write: "
            f"choose n_shards from 1 to {n_records:,}"
        )
    if n_shards is None:
        n_shards = max(1, min(n_records, round(n_records * record_bytes / target_bytes)))
        if n_shards > MAX_SHARDS:
            raise ValueError(
                f"target_bytes={target_bytes:,} would make {n_shards:,} shards, "
                f"more than {MAX_SHARDS:,}: choose a larger target_bytes"
            )
    bounds = [round(i * n_records / n_shards) for i in range(n_shards + 1)]
    return list(zip(bounds[:-1], bounds[1:], strict=True))


@checks.arguments(
    split=datafiles.split_name,
    index=checks.whole(0, MAX_SHARDS - 1),
    count=checks.whole(1, MAX_SHARDS),
    gzip=checks.flag,
)
def shard_name(split: str, index: int, count: int, gzip: bool) -> str:
    """``train-00001-of-00004.tfrecord`` (``.gz`` when compressed)."""
    if index >= count:
        raise ValueError(f"index must be below count ({count}), got {index}")
    return f"{split}-{index:05d}-of-{count:05d}.tfrecord" + (".gz" if gzip else "")


@checks.arguments(out_dir=checks.path)
def read_manifest(out_dir: Path) -> dict[str, Any]:
    """The manifest in ``out_dir`` as a dict (empty when there is none yet); a damaged one is
    refused with its path and what is wrong."""
    path = Path(out_dir) / MANIFEST
    return datafiles.parse_manifest(path, ENCODINGS) if path.exists() else {}


@checks.arguments(out_dir=checks.path, split=datafiles.split_name)
def shard_paths(out_dir: Path, split: str) -> list[str]:
    """The shard files of ``split``, in order, as the manifest lists them."""
    entry = read_manifest(Path(out_dir)).get(split)
    if not entry:
        raise ValueError(f"no split {split!r} in {Path(out_dir) / MANIFEST}")
    return [str(Path(out_dir) / s["file"]) for s in entry["shards"]]
