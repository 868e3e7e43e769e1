"""The stamp every figure and result of the workbook carries: the machine, TensorFlow, scale and
date that produced it, so that a number seen later (a saved notebook, a projected figure, a
colleague's ``bench.json``) says where it came from.

    stamp.text()          # 'Intel Xeon · 2 cores · no GPU · TF 2.21.0 · full · 2026-11-23'
    stamp.on_figure(fig)  # the same line as a footer; widgets.png() does this for every figure
"""

from __future__ import annotations

import datetime
import functools
import re
from collections.abc import Mapping
from importlib import metadata
from typing import Any

FOOTER_TAG = (
    "workbook-stamp"  # the footer's matplotlib gid: one stamp per figure, and tests find it
)
FOOTER_INCHES = 0.16  # the strip kept free for it under a constrained layout


@functools.lru_cache(maxsize=1)
def machine() -> dict[str, Any]:
    """This machine's ``env.machine_info()``, read once per process."""
    from helpers import env

    return env.machine_info()


def workbook_version() -> str:
    """The installed workbook's version (pyproject.toml), or ``"unknown"`` outside an install."""
    try:
        return metadata.version("tf-performance-workbook")
    except metadata.PackageNotFoundError:
        return "unknown"


def cpu_name(model: str) -> str:
    """A CPU model string without its trademarks and filler: 'Intel(R) Xeon(R) Processor' ->
    'Intel Xeon'."""
    name = re.sub(r"\((R|TM|tm|r)\)|\bCPU\b|\bProcessor\b|@.*$", "", str(model))
    return re.sub(r"\s+", " ", name).strip() or "unknown CPU"


def text(
    info: Mapping[str, Any] | None = None, scale: str | None = None, day: str | None = None
) -> str:
    """One line: CPU, cores, GPU, TensorFlow version, workbook scale and date."""
    from helpers import env

    info = machine() if info is None else info
    if not isinstance(info, Mapping):
        raise TypeError(
            f"info must be a mapping like env.machine_info(), got {type(info).__name__}"
        )
    gpus = info.get("gpus") or []
    gpu = f"{len(gpus)} GPU{'s' if len(gpus) > 1 else ''}" if gpus else "no GPU"
    cores = info.get("physical_cores") or info.get("logical_cores") or "?"
    usable, logical = info.get("usable_cores"), info.get("logical_cores")
    if (
        isinstance(usable, int) and isinstance(logical, int) and 0 < usable < logical
    ):  # taskset, a container's cpuset
        cores = f"{usable} of {logical} logical"
    onednn = " · oneDNN off" if info.get("onednn") is False else ""
    day = day or datetime.date.today().isoformat()
    return (
        f"{cpu_name(info.get('cpu_model', ''))} · {cores} cores{onednn} · {gpu} · "
        f"TF {info.get('tensorflow', '?')} · {scale or env.scale()} · {day}"
    )


def on_figure(fig: Any, line: str | None = None) -> Any:
    """Add the stamp as a small grey footer to a matplotlib figure (once; a second call does
    nothing)."""
    if not hasattr(fig, "texts") or not hasattr(fig, "text"):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    if any(t.get_gid() == FOOTER_TAG for t in fig.texts):
        return fig
    footer = FOOTER_INCHES / fig.get_figheight()
    engine = fig.get_layout_engine()
    if (
        engine is not None and hasattr(engine, "set") and "rect" in engine.get()
    ):  # constrained layout: keep a strip free
        engine.set(rect=(0, footer, 1, 1 - footer))
    fig.text(
        0.995,
        footer * 0.15,
        line or text(),
        ha="right",
        va="bottom",
        fontsize=6.5,
        color="#777777",
        gid=FOOTER_TAG,
    )
    return fig


def of_figure(fig: Any) -> str | None:
    """The stamp a figure carries, or None."""
    return next(
        (t.get_text() for t in getattr(fig, "texts", []) if t.get_gid() == FOOTER_TAG), None
    )
