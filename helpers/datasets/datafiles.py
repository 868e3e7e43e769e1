"""Reading data files without trusting them, and checking image arrays before they are written.

``load_pickle`` unpickles with notebook 06's restricted unpickler (``ArraysOnly``, exported to
``helpers/lessons/``), which admits only what a CIFAR batch holds: a pickle naming any other
callable (``os.system``, a ``__reduce__`` payload) is refused before anything in it runs.
``images_and_labels`` refuses pixel values a ``uint8`` cannot hold, labels that are not whole
class numbers, and arrays of the wrong shape, instead of letting them wrap or truncate silently.
``parse_manifest`` checks a shard manifest's structure and names what is damaged.
"""

from __future__ import annotations

import json
import pickle
import re
import shutil
import tarfile
from pathlib import Path
from typing import Any

from helpers import checks


class UnsafePickle(ValueError):
    """A pickle that names a callable a data file has no reason to hold; nothing in it was run."""


# --- argument checks for the file helpers ---------------------------------------------------


def md5_hex(name: str, value: Any) -> str:
    """A 32-digit hex MD5, in either case (compared in lower case)."""
    checks.text(name, value)
    if len(value.strip()) != 32 or any(c not in "0123456789abcdef" for c in value.strip().lower()):
        raise ValueError(
            f"{name} must be an MD5 hex digest (32 hex digits), got {checks._show(value)}"
        )
    return value.strip().lower()


def existing_file(name: str, value: Any) -> Path:
    path = checks.path(name, value)
    if not path.exists():
        raise FileNotFoundError(f"{name}: no such file: {path}")
    if path.is_dir():
        raise ValueError(f"{name}: {path} is a folder; a file is needed")
    return path


def folder(name: str, value: Any) -> Path:
    path = checks.path(name, value)
    if path.exists() and not path.is_dir():
        raise ValueError(f"{name}: {path} is a file; a folder is needed")
    return path


def safe_members(archive: tarfile.TarFile, dest: Path) -> list[tarfile.TarInfo]:
    """Every member, after refusing any that is absolute, climbs with '..', or is a link."""
    root = dest.resolve()
    members = archive.getmembers()
    for member in members:
        name = member.name
        if name.startswith(("/", "\\")) or Path(name).is_absolute():
            raise ValueError(f"refusing archive member with an absolute path: {name!r}")
        if ".." in Path(name).parts or not (root / name).resolve().is_relative_to(root):
            raise ValueError(f"refusing archive member that escapes the target folder: {name!r}")
        if member.issym() or member.islnk() or member.isdev():
            raise ValueError(f"refusing archive member that is a link or device: {name!r}")
    total, free = sum(m.size for m in members), shutil.disk_usage(root).free
    if total > 0.9 * free:
        raise ValueError(
            f"the archive would extract {total / 2**20:,.0f} MiB, "
            f"more than the {free / 2**20:,.0f} MiB "
            f"free under {root}: free some space first"
        )
    return members


def load_pickle(path: Path) -> Any:
    """Unpickle ``path`` with notebook 06's ``ArraysOnly`` (exported lesson code), which admits only
    NumPy arrays and plain data (``bytes`` keys, as CIFAR's)."""
    from helpers.lessons.pack_files_into_shards import ArraysOnly

    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{path} is a folder, not a pickle file")
    try:
        with open(path, "rb") as handle:
            return ArraysOnly(handle, encoding="bytes").load()
    except pickle.UnpicklingError as exc:
        if str(exc).startswith("refused: the pickle names "):
            named = str(exc).removeprefix("refused: the pickle names ")
            raise UnsafePickle(
                f"{path.name}: refused: it names {named}, which a data file has no reason to hold "
                f"(only NumPy arrays and plain data are unpickled); nothing in it was run"
            ) from None
        raise ValueError(f"{path.name} is not a readable CIFAR pickle: {exc}") from None
    except (
        EOFError,
        ValueError,
        TypeError,
        AttributeError,
        IndexError,
        KeyError,
        MemoryError,
        RecursionError,
    ) as exc:
        raise ValueError(
            f"{path.name} is not a readable CIFAR pickle (truncated or corrupt): "
            f"{type(exc).__name__}: {exc}"
        ) from None


def _whole_valued(array: Any) -> bool:
    import numpy as np

    return bool(np.all(np.isfinite(array)) and np.all(array == np.round(array)))


def _numbers(value: Any, name: str, what: str, holds: str) -> Any:
    """``value`` as a NumPy array of integers or floats, or a ``BadType`` saying it must be
    ``what``."""
    import numpy as np

    if isinstance(value, str | bytes | dict) or value is None or not hasattr(value, "__len__"):
        raise checks.BadType(
            f"{name} must be {what}, got {checks._show(value)} ({type(value).__name__})"
        )
    try:
        array = np.asarray(value)
    except (ValueError, TypeError) as exc:
        raise checks.BadType(f"{name} must be {what}: {exc}") from None
    if array.dtype == bool or not (
        np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)
    ):
        raise checks.BadType(f"{name} must hold {holds}, got dtype {array.dtype}")
    return array


def images_array(images: Any, name: str = "images") -> Any:
    """``images`` as a ``uint8`` array N x H x W x C (C 1 or 3), refusing values a ``uint8``
    would wrap."""
    import numpy as np

    array = _numbers(
        images, name, "an array of images (N x H x W x C, uint8)", "pixel values 0-255 (uint8)"
    )
    if array.ndim != 4 or array.shape[3] not in (1, 3):
        raise ValueError(
            f"{name} must have the shape N x height x width x channels (channels 1 or 3), "
            f"got {array.shape}"
        )
    if len(array) == 0:
        raise ValueError(f"{name} is empty: no images")
    if array.dtype == np.uint8:
        return array
    if not _whole_valued(array):
        raise ValueError(
            f"{name} must hold whole pixel values 0-255; its {array.dtype} values include "
            f"{array.flat[np.flatnonzero(~np.isfinite(array) | (array != np.round(array)))[0]]!r}"
        )
    low, high = array.min(), array.max()
    if low < 0 or high > 255:
        raise ValueError(
            f"{name} must hold pixel values 0-255 (uint8); found values from {low} to {high}, "
            f"which uint8 would wrap: scale or clip them first"
        )
    return array.astype(np.uint8)


def labels_array(labels: Any, n: int, classes: int = 10, name: str = "labels") -> Any:
    """``labels`` as an int64 vector of length ``n``, each a whole class number from 0 to
    ``classes - 1``."""
    import numpy as np

    classes = checks.whole_number("classes", classes, 1)
    array = _numbers(
        labels,
        name,
        f"an array of class numbers 0-{classes - 1}",
        f"whole class numbers 0-{classes - 1}",
    )
    if array.ndim != 1:
        raise ValueError(
            f"{name} must be one class number per image (shape (N,)), got shape {array.shape}"
        )
    if len(array) != n:
        raise ValueError(
            f"{n} images but {len(array)} labels: images and labels must have the same length"
        )
    bad = (
        ~np.isfinite(array) | (array != np.round(array)) | (array < 0) | (array > classes - 1)
        if np.issubdtype(array.dtype, np.floating)
        else (array < 0) | (array > classes - 1)
    )
    if bad.any():
        index = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{name} must be whole class numbers from 0 to {classes - 1}; "
            f"{name}[{index}] is {array[index].item()!r} ({int(bad.sum())} bad in all)"
        )
    return array.astype(np.int64)


def images_and_labels(images: Any, labels: Any, classes: int = 10) -> tuple[Any, Any]:
    """Both checked: ``uint8`` images N x H x W x C and ``int64`` labels 0 to ``classes - 1``."""
    images = images_array(images)
    return images, labels_array(labels, len(images), classes)


_SHARD_FILE = re.compile(r"[A-Za-z0-9_]+-\d{5,}-of-\d{5,}\.tfrecord(\.gz)?")
_HEX = re.compile(r"[0-9a-f]{64}")


def parse_manifest(path: Path, encodings: tuple[str, ...]) -> dict[str, Any]:
    """The manifest at ``path`` as a dict, after checking every field; a damaged one is named with
    what is wrong (a shard file outside the folder included), so nothing acts on it."""

    def damaged(what: str) -> ValueError:
        return ValueError(f"{path} is damaged: {what}; delete it and convert again")

    if path.is_dir():
        raise ValueError(f"{path} is a folder; the manifest must be a file")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise damaged(f"not valid JSON ({exc})") from None
    if not isinstance(manifest, dict):
        raise damaged(f"it holds a {type(manifest).__name__}, not a dict of splits")
    for split, entry in manifest.items():
        if not isinstance(entry, dict) or set(entry) != {"options", "shards"}:
            raise damaged(f"split {split!r} must have exactly 'options' and 'shards'")
        options, shards = entry["options"], entry["shards"]
        if (
            not isinstance(options, dict)
            or not isinstance(options.get("gzip"), bool)
            or options.get("encoding") not in encodings
        ):
            raise damaged(
                f"split {split!r} has options {options!r}, "
                f"not {{'gzip': True/False, 'encoding': one of {encodings}}}"
            )
        if not isinstance(shards, list):
            raise damaged(f"split {split!r} has shards {checks._show(shards)}, not a list")
        for shard in shards:
            if not isinstance(shard, dict) or set(shard) != {
                "file",
                "records",
                "sha256",
                "source_sha256",
            }:
                raise damaged(
                    f"split {split!r} has a shard entry {checks._show(shard)} without exactly "
                    "file, records, sha256, source_sha256"
                )
            if not isinstance(shard["file"], str) or not _SHARD_FILE.fullmatch(shard["file"]):
                raise damaged(
                    f"split {split!r} names the shard file {shard['file']!r}, "
                    "not a shard name in the folder"
                )
            if (
                isinstance(shard["records"], bool)
                or not isinstance(shard["records"], int)
                or shard["records"] < 0
            ):
                raise damaged(f"{shard['file']} has records={shard['records']!r}, not a count")
            if not all(
                isinstance(shard[k], str) and _HEX.fullmatch(shard[k])
                for k in ("sha256", "source_sha256")
            ):
                raise damaged(f"{shard['file']} has a checksum that is not a SHA-256 hex digest")
    return manifest


def split_name(name: str, value: Any) -> str:
    """A split's name, used in shard file names: letters, digits and ``_`` only (``train``,
    ``eval``)."""
    checks.text(name, value)
    if not re.fullmatch(r"[A-Za-z0-9_]+", value):
        raise ValueError(
            f"{name} must be a plain name such as 'train' (letters, digits, _), "
            f"got {checks._show(value)}"
        )
    return value
