"""Writes that never leave a half-written file under its final name, and folders made with a clear
message when a file stands where a folder is needed."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from helpers import checks


def make_folder(path: str | os.PathLike[str], name: str = "path") -> Path:
    """Create the folder ``path`` (and its parents) if needed. A file where a folder is needed (the
    path itself or one of its parents) is named: ``ValueError``, not
    ``FileExistsError: File exists``."""
    folder = checks.path(name, path)
    for candidate in (folder, *folder.parents):
        if candidate.exists() or candidate.is_symlink():
            if not candidate.is_dir():
                where = "" if candidate == folder else f" (a parent of {name}={str(folder)!r})"
                raise ValueError(f"{name}: {candidate} is a file{where}; a folder is needed there")
            break
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to a temporary file beside ``path``, then ``os.replace`` it into place."""
    target = checks.path("path", path)
    if not isinstance(data, bytes | bytearray | memoryview):
        raise checks.BadType(f"data must be bytes, got {type(data).__name__}")
    if target.is_dir():
        raise ValueError(f"path: {target} is a folder; a file name is needed")
    make_folder(target.parent, "path")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        # mkstemp makes the file private (0600); keep the mode the file had, or what a plain
        # open() gives
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(fd, target.stat().st_mode & 0o7777 if target.exists() else 0o666 & ~umask)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    sync_folder(target.parent)  # the rename on disk too, not only the bytes
    return target


def sync_folder(folder: Path) -> None:
    """fsync a folder, so that a rename in it survives a power cut (POSIX only: Windows cannot
    open a folder; a file system that cannot sync one, such as some network mounts, is left)."""
    if os.name != "posix":
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) atomically; see ``atomic_write_bytes``."""
    if not isinstance(text, str):
        raise checks.BadType(f"text must be a string, got {type(text).__name__}")
    return atomic_write_bytes(path, text.encode("utf-8"))


def staging_folder(parent: str | os.PathLike[str], prefix: str) -> Path:
    """A new private folder ``parent/.{prefix}-{pid}-XXXX`` to build a result in before moving it
    into place. Staging folders of the same prefix left by processes that are gone (killed before
    their ``finally`` ran) are removed first, so an interruption leaves nothing for good."""
    import shutil

    import psutil

    parent = make_folder(parent, "parent")
    for stale in parent.glob(f".{prefix}-*-*"):
        pid = stale.name[len(prefix) + 2 :].split("-", 1)[0]
        if stale.is_dir() and pid.isdigit() and not psutil.pid_exists(int(pid)):
            shutil.rmtree(stale, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=f".{prefix}-{os.getpid()}-", dir=parent))
