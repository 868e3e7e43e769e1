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
