"""What notebook 06's reading measurements say: the disk's cold read rate (``random_file`` writes
the file it is read from; ``disk_summary`` sets it among typical ``DRIVES``), the readers read
cold against warm and against that rate (``cold_summary``, ``sizes_summary``), and which shard
layouts leave workers idle (``shares_summary``).

``helpers.topics.pack_files_into_shards.shard_reading`` re-exports all five functions: notebook 06
calls them as
``shard_reading.<name>``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from helpers import checks, fileio


@checks.arguments(path=checks.path, size=checks.whole(2**20, 2**34, hint="bytes"))
def random_file(path: Path, size: int) -> Path:
    """A file of ``size`` incompressible bytes at ``path`` (for the disk's read rate), written once
    (kept while its size matches), through a temporary name so no half-written file remains."""
    path = Path(path)
    if path.is_file() and path.stat().st_size == size:
        return path
    if size > 0.5 * shutil.disk_usage(fileio.make_folder(path.parent, "path's folder")).free:
        raise ValueError(
            f"size: {size / 2**20:,.0f} MiB is more than half the free disk; choose a smaller one"
        )
    return fileio.atomic_write_bytes(path, os.urandom(size))


#: A reader's cold MB/s against the disk's sequential rate: from NEAR of it up, likely I/O-bound;
#: below FAR, held back by work per record or file; between, "about half": too close to say.
NEAR, FAR = 0.6, 0.4

#: Typical sequential reads from drive data sheets (MB/s), low to high; not measured here.
DRIVES = (("a hard disk", 100, 250), ("a SATA SSD", 500, 550), ("an NVMe SSD", 2_000, 7_000))
WIDE = 0.75  # the slowest read under this share of the median: the reads spread widely


def disk_summary(rates: Sequence[float], size: int) -> str:
    """The disk's cold sequential read rate (MB/s, from ``rates``) set among the ``DRIVES``."""
    import numpy as np

    median, low, high = float(np.median(rates)), min(rates), max(rates)
    inside = [name for name, lo, hi in DRIVES if lo <= median <= hi]
    near = [  # within a tenth of a range, outside it
        f"just {'below' if median < lo else 'above'} the range of {name} ({lo:,}-{hi:,} MB/s)"
        for name, lo, hi in DRIVES
        if 0.9 * lo <= median <= 1.1 * hi and name not in inside
    ]
    under = [name for name, lo, _ in DRIVES if median < 0.9 * lo]
    over = [name for name, _, hi in DRIVES if median > 1.1 * hi]
    where = (
        f"in the range of {' or '.join(inside)}"
        if inside
        else " and ".join(near)
        if near
        else f"slower than {under[0]} typically reads"
        if not over
        else f"faster than {over[-1]} typically reads"
        if not under
        else f"between {over[-1]} and {under[0]} by their typical figures"
    )
    spread = (
        f" The reads spread widely ({low / median:.0%} to {high / median:.0%} of the median): a "
        "host cache may have served some of them, and then the cold figures below are partly warm."
        if low < WIDE * median or WIDE * high > median
        else ""
    )
    return (
        f"This disk read a {size / 2**20:,.0f} MiB file cold at {median:,.0f} MB/s "
        f"(median of {len(rates)} reads, {low:,.0f}-{high:,.0f}): {where}. "
        "(A virtual machine's disk may be served from its host's cache.)" + spread
    )


def cold_summary(warm: Any, cold: Any, file_bytes: dict[str, int], disk: Sequence[float]) -> str:
    """Read notebook 06's cold table against the warm one and the disk: how much slower each reader
    became, whether the file count costs more cold, and which readers come near the disk's rate."""
    import numpy as np

    from helpers import verdicts

    lines = [
        verdicts.verdict(
            cold,
            "1 shard, PNG records",
            "PNG files",
            "faster",
            "one file instead of one per image; the same PNG decode",
        )
    ]
    (c_lo, c_hi), (w_lo, w_hi) = (
        t.loc["1 shard, PNG records", ["speedup_low", "speedup_high"]] for t in (cold, warm)
    )
    ranges = f"(quartile ratios {c_lo:.2f}-{c_hi:.2f}x cold, {w_lo:.2f}-{w_hi:.2f}x warm)"
    lines.append(
        "The file count's gap "
        + (
            f"grew when the files came from the disk {ranges}."
            if c_lo > w_hi
            else f"shrank when the files came from the disk {ranges}."
            if c_hi < w_lo
            else f"shows no clear change between cold and warm reads {ranges}: the ranges overlap, "
            "so rerun with more repeats before drawing a conclusion."
        )
    )
    rate = float(np.median(disk))
    for name in cold.index:
        moved = file_bytes[name] / cold.loc[name, "median_s"] / 1e6
        slower = cold.loc[name, "median_s"] / warm.loc[name, "median_s"]
        per = "file" if "files" in name else "record"  # "PNG files": a file per image
        bound = (  # the rule sizes_summary reads by too
            "near the disk's rate: this reader is likely I/O-bound here"
            if moved >= NEAR * rate
            else "about half the disk's rate: too close to the line to say whether the disk's "
            f"throughput or the work per {per} held it back"
            if moved >= FAR * rate
            else "below half the disk's rate: not held back by its throughput but by work per "
            f"{per}, or the CPU"
        )
        low = cold.loc[name, "q1_s"] / warm.loc[name, "q3_s"]  # cold over warm, from quartiles
        high = cold.loc[name, "q3_s"] / warm.loc[name, "q1_s"]
        spread = f"quartile ratios {low:.2f}-{high:.2f}x"
        latency = (  # the disk's throughput aside, what reading from it cost (or warm noise)
            f"; reading from the disk added {slower - 1:.0%} to the warm time ({spread}: the cost "
            "of going to the disk beyond its throughput, its latency, unless the warm passes fell "
            "in a fast and a slow group: see whether the warm row's min or max lies far from its "
            "median)"
            if slower > 1.1 and low > 1
            else f"; the cold median is {slower - 1:.0%} above the warm one, but the two rows' "
            f"runs overlap ({spread}): this run cannot tell reading from the disk from noise"
            if slower > 1.1
            else "; faster cold than warm: the warm passes spread wide (see whether the warm "
            "row's min or max lies far from its median), so read this ratio as noise"
            if slower < 0.9
            else ""
        )
        lines.append(
            f"{name}: {moved:,.1f} MB/s cold, {moved / rate:.0%} of the disk's {rate:,.0f} MB/s, "
            f"{slower:.2f}x the warm time; {bound}{latency}."
        )
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
    share = sizes.loc[best, "MB_per_s"] / rate
    reading = (  # notebook 06's rule, as in cold_summary
        "near it: the disk's throughput is likely what limits it"
        if share >= NEAR
        else "about half of it: too close to the line to say whether the disk's throughput or "
        "the work per record and per file held it back"
        if share >= FAR
        else "below half of it: the work per record and per file held it back more than the "
        "disk's throughput"
    )
    return (
        f"Read cold: {rates}; the fastest, {best}, "
        f"reached {share:.0%} of the disk's {rate:,.0f} MB/s sequential rate measured above, "
        f"{reading}."
    )


def _span(fewest_most: str) -> str:
    """'2-2' -> '2'; '48-49' -> '48 to 49'."""
    low, _, high = str(fewest_most).partition("-")
    return low if low == high else f"{low} to {high}"


def shares_summary(shares: Any) -> str:
    """Read 06's table of files per worker: which layouts leave workers with nothing to read."""
    lines = []
    for _, row in shares.iterrows():
        idle = int(row["idle workers"])
        lines.append(
            f"{row['layout']} among {row['workers']} workers: "
            + (
                f"{idle} of them get no file and sit idle"
                if idle
                else f"every worker gets {_span(row['files each (fewest-most)'])} files"
            )
        )
    return "; ".join(lines) + "."
