"""CIFAR-10, the python version: safe extraction, reading, and the synthetic sample shipped in
``data/`` in exactly the same format (notebook 06). The verified download is in
``helpers.datasets.cifar_download`` (``download`` is re-exported here).

    python -m helpers.datasets.cifar make-sample data/cifar-10-sample  # regenerate the shipped
    sample

The real archive is checked against its published MD5 before anything is extracted, and every
pickle is read with a restricted unpickler that admits only NumPy arrays and plain data, so a
batch file cannot run code; extraction refuses members that would land outside the target folder.
Every file is written under a temporary name and moved into place, so an interrupted step leaves
nothing half-written.
"""

from __future__ import annotations

import gzip
import os
import pickle
import shutil
import sys
import tarfile
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from helpers import checks, fileio
from helpers.datasets import datafiles

# locate uses all four; download is also re-exported: notebook 06 calls cifar.download.
from helpers.datasets.cifar_download import MD5, URL, NetworkUnavailable, download

FOLDER = "cifar-10-batches-py"
TRAIN_BATCHES = tuple(f"data_batch_{i}" for i in range(1, 6))
FILES = (*TRAIN_BATCHES, "test_batch", "batches.meta")
CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
#: The seed's splits: train = batches 1-4, validation = batch 5, eval = the test batch.
SPLITS = {"train": TRAIN_BATCHES[:4], "validation": TRAIN_BATCHES[4:], "eval": ("test_batch",)}
SHIPPED_SAMPLE = Path(__file__).resolve().parents[2] / "data" / "cifar-10-sample"


@checks.arguments(archive_path=datafiles.existing_file, dest_dir=checks.path)
def extract(archive_path: Path, dest_dir: Path) -> Path:
    """Extract the archive's ``cifar-10-batches-py`` folder into ``dest_dir``, safely and
    atomically. Its batches are read back with the restricted unpickler before the folder is moved
    into place."""
    dest_dir = fileio.make_folder(dest_dir, "dest_dir")
    final = dest_dir / FOLDER
    staging = fileio.staging_folder(dest_dir, "extract")
    try:
        try:
            with tarfile.open(archive_path, "r:*") as archive:
                members = datafiles.safe_members(archive, staging)
                kwargs = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
                archive.extractall(staging, members=members, **kwargs)
        except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise ValueError(
                f"archive_path: {archive_path} is not a complete tar archive "
                "(truncated or corrupt: "
                f"{type(exc).__name__}: {str(exc) or 'unexpected end of data'}); download it again"
            ) from None
        if not (staging / FOLDER).is_dir():
            raise ValueError(f"{archive_path} holds no {FOLDER}/ folder")
        read_folder(staging / FOLDER)  # a broken archive fails here, not in a later step
        if final.exists():
            shutil.rmtree(final)
        os.chmod(staging / FOLDER, 0o755)
        os.replace(staging / FOLDER, final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return final


@checks.arguments(path=datafiles.existing_file)
def read_batch(path: Path) -> dict[bytes, Any]:
    """Unpickle one batch file (CIFAR's python pickles use byte-string keys), admitting only NumPy
    arrays and plain data: a pickle that names any other callable is refused before it runs."""
    path = Path(path)
    batch = datafiles.load_pickle(path)
    if not isinstance(batch, dict):
        raise ValueError(f"{path.name} holds a {type(batch).__name__}, not a CIFAR batch dict")
    return batch


@checks.arguments(folder=datafiles.folder)
def read_folder(folder: Path) -> dict[str, tuple[Any, Any]]:
    """Read a ``cifar-10-batches-py`` folder into ``{batch name: (images N x 32 x 32 x 3 uint8,
    labels)}``, refusing pixel values outside 0-255 and labels outside 0-9."""
    import numpy as np

    folder = Path(folder)
    missing = [name for name in FILES if not (folder / name).is_file()]
    if missing:
        raise ValueError(
            f"{folder} is not a {FOLDER} folder: missing {', '.join(missing)} "
            f"(expected {', '.join(FILES)})"
        )
    batches = {}
    for name in (*TRAIN_BATCHES, "test_batch"):
        batch = read_batch(folder / name)
        try:
            data, labels = batch[b"data"], batch[b"labels"]
        except KeyError as exc:
            raise ValueError(f"{name} has no {exc.args[0]!r} entry") from exc
        try:
            data, n_labels = np.asarray(data), len(labels)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"{name}: data and labels are not an array and a list: {exc}"
            ) from None
        if data.ndim != 2 or data.shape[1] != 3072 or n_labels != len(data):
            raise ValueError(
                f"{name}: data {data.shape} and {n_labels} labels are not N x 3072 and N"
            )
        images = datafiles.images_array(
            data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1), f"{name} data"
        )
        batches[name] = (
            np.ascontiguousarray(images),
            datafiles.labels_array(labels, len(images), name=f"{name} labels"),
        )
    return batches


@checks.arguments(folder=datafiles.folder)
def load_splits(folder: Path) -> dict[str, tuple[Any, Any]]:
    """The seed's splits from a CIFAR folder: train (batches 1-4), validation (5), eval (test)."""
    import numpy as np

    batches = read_folder(folder)
    return {
        split: (
            np.concatenate([batches[b][0] for b in names]),
            np.concatenate([batches[b][1] for b in names]),
        )
        for split, names in SPLITS.items()
    }


@checks.arguments(
    data_dir=datafiles.folder, download_real=checks.flag, url=checks.text, md5=datafiles.md5_hex
)
def locate(data_dir: Path, download_real: bool = False, url: str = URL, md5: str = MD5) -> Path:
    """The CIFAR folder to use: the real one under ``data_dir`` if there, else downloaded and
    extracted when ``download_real``; when the network is unreachable, the shipped sample."""
    real = Path(data_dir) / FOLDER
    if real.is_dir():
        return real
    if download_real:
        try:
            return extract(download(Path(data_dir), url, md5), Path(data_dir))
        except NetworkUnavailable as exc:
            print(f"Network unreachable ({exc}); using the shipped synthetic sample instead.")
    return SHIPPED_SAMPLE / FOLDER


@checks.arguments(n=checks.whole(1, 50, "images in one row"))
def examples_figure(images: Any, labels: Any, n: int = 10) -> Any:
    """The first ``n`` images with their class names, in one row."""
    from matplotlib.figure import Figure

    images, labels = datafiles.images_and_labels(images, labels)
    if n > len(images):
        raise ValueError(f"n must be at most the {len(images)} images given, got {n}")

    fig = Figure(figsize=(1.1 * n, 1.5), layout="constrained")
    for i, ax in enumerate(fig.subplots(1, n)):
        ax.imshow(images[i])
        ax.set_title(CLASSES[int(labels[i])], fontsize=8)
        ax.axis("off")
    return fig


_SEED = checks.whole(0, 2**63 - 1, "a random seed")


@checks.arguments(n=checks.whole(0, hint="images"), seed=_SEED)
def synthetic_images(n: int, seed: int) -> tuple[Any, Any]:
    """``n`` 32 x 32 RGB images whose class shows in colour and stripe direction, plus labels."""
    import numpy as np

    checks.fits_memory(
        f"synthetic_images(n={n:,})", n * 32 * 32 * 3 * 2
    )  # the images, and a batch's pickle

    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, size=n)
    yy, xx = np.mgrid[0:32, 0:32].astype(np.float32) / 31.0
    palette = rng.uniform(40, 215, size=(10, 3)).astype(np.float32)
    angles = np.linspace(0, np.pi, 10, endpoint=False)
    images = np.empty((n, 32, 32, 3), dtype=np.uint8)
    for i, label in enumerate(labels):
        stripes = np.sin(
            12.0 * (xx * np.cos(angles[label]) + yy * np.sin(angles[label])) + rng.uniform(0, 6.3)
        )
        pixel = palette[label] + 35.0 * stripes[..., None] + rng.normal(0, 12.0, size=(32, 32, 3))
        images[i] = np.clip(pixel, 0, 255).astype(np.uint8)
    return images, labels


@checks.arguments(
    out_dir=checks.path,
    per_batch=checks.whole(1, 10_000, "images per batch, as the real CIFAR-10's"),
    seed=_SEED,
)
def make_sample(out_dir: Path, per_batch: int = 250, seed: int = 2026) -> Path:
    """Write a synthetic ``cifar-10-batches-py`` folder in the exact CIFAR format (protocol-2
    pickles with byte-string keys), atomically."""
    out_dir = fileio.make_folder(out_dir, "out_dir")
    staging = fileio.staging_folder(out_dir, "sample")
    try:
        for k, name in enumerate((*TRAIN_BATCHES, "test_batch")):
            images, labels = synthetic_images(per_batch, seed + k)
            label = (
                f"{'testing' if name == 'test_batch' else 'training'} "
                f"batch {k + 1 if k < 5 else 1} of 5"
            )
            batch = {
                b"batch_label": f"SYNTHETIC {label}".encode(),
                b"labels": [int(v) for v in labels],
                b"data": images.transpose(0, 3, 1, 2).reshape(per_batch, 3072),
                b"filenames": [f"synthetic_{name}_{i:05d}.png".encode() for i in range(per_batch)],
            }
            with open(staging / name, "wb") as handle:
                pickle.dump(batch, handle, protocol=2)
        meta = {
            b"label_names": [c.encode() for c in CLASSES],
            b"num_cases_per_batch": per_batch,
            b"num_vis": 3072,
        }
        with open(staging / "batches.meta", "wb") as handle:
            pickle.dump(meta, handle, protocol=2)
        (staging / "README.txt").write_text(
            "SYNTHETIC sample in the CIFAR-10 python format, "
            "made by `python -m helpers.datasets.cifar make-sample`.\n"
            "The images are generated stripes and colours, not CIFAR-10 photographs.\n"
        )
        final = out_dir / FOLDER
        if final.exists():
            shutil.rmtree(final)
        os.chmod(staging, 0o755)  # mkdtemp makes it private
        os.replace(staging, final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out_dir / FOLDER


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point: ``make-sample OUT_DIR [PER_BATCH]``. A bad argument or an
    unwritable folder prints one line and exits non-zero, without a traceback."""
    args = list(sys.argv[1:] if argv is None else argv)
    usage = "usage: python -m helpers.datasets.cifar make-sample OUT_DIR [PER_BATCH]"
    if len(args) not in (2, 3) or args[0] != "make-sample" or not args[1].strip():
        print(usage, file=sys.stderr)
        return 2
    if len(args) == 3 and not args[2].isdigit():
        print(
            f"cifar: PER_BATCH must be a whole number from 1 to 10,000, got {args[2]!r}; {usage}",
            file=sys.stderr,
        )
        return 2
    try:
        folder = make_sample(Path(args[1]), *(int(a) for a in args[2:]))
    except (ValueError, OSError) as exc:
        print(f"cifar: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
