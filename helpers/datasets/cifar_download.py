"""The verified download of CIFAR-10's python archive (notebook 06): the published address and
MD5, ``md5_of``, and ``download``, which keeps the file only once it is complete and matches.

A mismatch raises ``ChecksumMismatch`` and a network failure ``NetworkUnavailable``; either way
nothing is left behind. ``helpers.datasets.cifar`` extracts and reads what this fetched (and
re-exports ``download``, which notebook 06 calls as ``cifar.download``).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from helpers import checks, fileio
from helpers.datasets import datafiles

URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
#: Published on the CIFAR-10 home page beside the download link.
MD5 = "c58f30108f718f92721af3b95e74349a"


class NetworkUnavailable(RuntimeError):
    """The archive could not be fetched: no network, or the server did not answer."""


class ChecksumMismatch(ValueError):
    """A downloaded file is not the published archive."""


@checks.arguments(
    path=datafiles.existing_file, chunk=checks.whole(1, 1 << 30, "bytes read at a time")
)
def md5_of(path: Path, chunk: int = 1 << 20) -> str:
    """The MD5 hex digest of a file, read in chunks."""
    checks.fits_memory(f"md5_of(chunk={chunk:,})", chunk)
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(chunk), b""):
            digest.update(block)
    return digest.hexdigest()


@checks.arguments(
    dest_dir=checks.path,
    url=checks.text,
    md5=datafiles.md5_hex,
    timeout=checks.number(0, 600, above=True),
)
def download(dest_dir: Path, url: str = URL, md5: str = MD5, timeout: float = 20.0) -> Path:
    """Fetch the archive into ``dest_dir`` (with a progress bar) and check its MD5.

    The file appears under its final name only once it is complete and verified; a mismatch
    raises ``ChecksumMismatch`` and a network failure ``NetworkUnavailable``, leaving nothing.
    """
    from tqdm.auto import tqdm

    if urllib.parse.urlsplit(url).scheme not in ("http", "https", "file"):
        raise ValueError(f"url must start with https://, http:// or file://, got {url!r}")
    dest_dir, md5 = fileio.make_folder(dest_dir, "dest_dir"), md5.strip().lower()
    target = dest_dir / Path(url).name
    if target.exists() and md5_of(target) == md5:
        return target
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=dest_dir)
    try:
        try:
            with (
                urllib.request.urlopen(url, timeout=timeout) as response,
                os.fdopen(fd, "wb") as out,
            ):
                total = int(response.headers.get("Content-Length") or 0) or None
                with tqdm(total=total, unit="B", unit_scale=True, desc=target.name) as bar:
                    for block in iter(lambda: response.read(1 << 16), b""):
                        out.write(block)
                        bar.update(len(block))
        except (
            urllib.error.HTTPError
        ) as exc:  # the server answered: the address is wrong, not the network
            raise ValueError(
                f"url {url} answered {exc.code} {exc.reason}: check the address"
            ) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            if urllib.parse.urlsplit(url).scheme == "file":  # a local mirror: no network involved
                raise ValueError(f"url {url}: {getattr(exc, 'reason', exc)}") from None
            raise NetworkUnavailable(
                f"could not download {url}: {getattr(exc, 'reason', exc)}"
            ) from exc
        found = md5_of(Path(tmp))
        if found != md5:
            raise ChecksumMismatch(
                f"{url} has MD5 {found}, not the published {md5}: refusing to use it"
            )
        os.replace(tmp, target)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return target
