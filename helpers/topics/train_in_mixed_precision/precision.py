"""Mixed precision and Keras 3's compile settings (notebook 12): the synthetic images it trains
on, whether this CPU computes bfloat16 natively, the variants the widgets and the bench time
(built from the notebook's exported lesson code, ``helpers.lessons.train_in_mixed_precision``),
the batch-size sweep and the bench's comparisons.

Fresh-process runs of its ``PRECISION_CHILD`` under a narrower oneDNN instruction set are in
``helpers.topics.train_in_mixed_precision.precision_isa``, the exercise checks in
``helpers.topics.train_in_mixed_precision.precision_checks``; both
are re-exported here, so the notebook calls them as ``precision.<name>``."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from helpers import checks, env, verdicts
from helpers.checks import whole_number
from helpers.comparison import Comparison
from helpers.timing import ProgressFn

# precision_isa holds POLICIES and lesson (its child runs the lesson code), so that it imports
# nothing from here. The names imported "as" themselves are re-exported: notebook 12 calls them as
# precision.<name>.
from helpers.topics.train_in_mixed_precision.precision_checks import (
    check_float32_output as check_float32_output,
)
from helpers.topics.train_in_mixed_precision.precision_checks import (
    check_scaled_step as check_scaled_step,
)
from helpers.topics.train_in_mixed_precision.precision_isa import POLICIES, lesson
from helpers.topics.train_in_mixed_precision.precision_isa import bf16_expected as bf16_expected
from helpers.topics.train_in_mixed_precision.precision_isa import isa_summary as isa_summary
from helpers.topics.train_in_mixed_precision.precision_isa import isa_table as isa_table
from helpers.topics.train_in_mixed_precision.precision_isa import run_child as run_child

BF16_FLAGS = env.BF16_FLAGS
MAX_IMAGE_BYTES = 2 * 2**30


@checks.arguments(
    n=checks.whole(1), size=checks.whole(1), classes=checks.whole(1, 1000), seed=checks.seed
)
def make_images(n: int, size: int = 56, classes: int = 10, seed: int = 0) -> tuple[Any, Any]:
    """``n`` synthetic images ``[n, size, size, 3]`` (float32 in about 0..1) and int32 labels: each
    class is a stripe pattern at its own angle, with random frequency, phase and noise."""
    import numpy as np

    if n * size * size * 3 * 4 > MAX_IMAGE_BYTES:
        raise ValueError(
            f"{n} images of {size}x{size}x3 float32 need {n * size * size * 12 / 2**30:.1f} GiB; "
            f"the limit is {MAX_IMAGE_BYTES / 2**30:.0f} GiB"
        )
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, classes, n)
    yy, xx = np.mgrid[0:size, 0:size] / size
    angle = (labels * np.pi / classes + rng.normal(0, 0.05, n))[:, None, None]
    freq, phase = rng.uniform(3, 5, n)[:, None, None], rng.uniform(0, 2 * np.pi, n)[:, None, None]
    wave = np.sin(2 * np.pi * freq * (np.cos(angle) * xx + np.sin(angle) * yy) + phase)
    images = 0.5 + 0.3 * wave[..., None] + rng.normal(0, 0.18, (n, size, size, 3))
    return images.astype("float32"), labels.astype("int32")


def bf16_support(cpuinfo: str | None = None) -> dict[str, bool]:
    """Which bfloat16 instructions this CPU reports: AVX512_BF16 and AMX_BF16 on x86, the BF16
    extension on ARM. Having them is not using them: ``env.bf16_kernels`` (``bf16_note``) says
    whether TensorFlow's kernels do, which also takes oneDNN."""
    flags = env.cpu_flags(cpuinfo)
    if "asimd" in flags:  # aarch64
        return {"bf16": "bf16" in flags}
    return {flag: flag in flags for flag in BF16_FLAGS}


def bf16_note(cpuinfo: str | None = None, onednn: bool | None = None) -> str:
    """One line: whether mixed_bfloat16 can be expected to pay here, and what decided it."""
    return env.bf16_kernels(cpuinfo, onednn)[1]


def fit_variants(
    policies: Sequence[str] = ("float32", "mixed_bfloat16"),
    jit_compile: Sequence[bool] = (False,),
    batch: int = 64,
    steps: int = 15,
    size: int = 56,
    steps_per_execution: int = 1,
) -> dict[str, Callable[[], Any]]:
    """One epoch of ``model.fit`` (``steps`` batches) per policy and ``jit_compile`` setting, each
    model from the notebook's ``compiled_model``, all on the same images."""
    for name, value in (
        ("batch", batch),
        ("steps", steps),
        ("size", size),
        ("steps_per_execution", steps_per_execution),
    ):
        whole_number(name, value)
    bad = [p for p in policies if p not in POLICIES]
    if bad or not policies:
        raise ValueError(f"policies must be among {list(POLICIES)}, got {list(policies)!r}")
    if not jit_compile or not all(isinstance(j, bool) for j in jit_compile):
        raise ValueError(f"jit_compile must be a list of True/False, got {jit_compile!r}")
    code = lesson()
    train = code.image_dataset(*make_images(batch * steps, size), batch)
    out = {}
    for policy in policies:
        for jit in jit_compile:
            model = code.compiled_model(
                policy, jit_compile=jit, steps_per_execution=steps_per_execution, image_size=size
            )
            out[policy + (" + XLA" if jit else "")] = functools.partial(
                model.fit, train, epochs=1, verbose=0, shuffle=False
            )
    return out


@checks.arguments(batch=checks.whole(1, 65536), steps=checks.whole(1, 10**6))
def fit_items(batch: int = 64, steps: int = 15, **_: Any) -> int:
    """Images in one timed call of a ``fit_variants`` variant."""
    return batch * steps


def spe_variants(
    values: Sequence[int] = (1, 16), batch: int = 32, steps: int = 256, features: int = 32
) -> dict[str, Callable[[], Any]]:
    """One epoch of ``fit`` on the notebook's ``compiled_mlp`` for each ``steps_per_execution``."""
    import numpy as np
    import tensorflow as tf

    for name, value in (
        ("batch", batch),
        ("steps", steps),
        ("features", features),
        *(("steps_per_execution", v) for v in values),
    ):
        whole_number(name, value)
    rng = np.random.default_rng(0)
    data = (
        rng.normal(size=(batch * steps, features)).astype("float32"),
        rng.integers(0, 10, batch * steps),
    )
    train = tf.data.Dataset.from_tensor_slices(data).batch(batch).cache()
    return {
        f"steps_per_execution={v}": functools.partial(
            lesson().compiled_mlp(v, features).fit, train, epochs=1, verbose=0, shuffle=False
        )
        for v in values
    }


def batch_sweep(
    batches: Sequence[int] = (16, 32, 64, 128, 256),
    policy: str = "mixed_bfloat16",
    images: int = 512,
    size: int = 56,
    repeats: int = 3,
    on_progress: ProgressFn | None = None,
) -> Any:
    """Training throughput (images/s) and time per batch for each batch size: the same
    ``images`` per timed epoch, one model per size from the notebook's ``compiled_model``."""
    import pandas as pd

    from helpers import timing

    sizes = [whole_number("batch", b) for b in batches]
    if not sizes or max(sizes) > whole_number("images", images):
        raise ValueError(
            f"batches must be non-empty and at most images={images}, got {list(batches)!r}"
        )
    code, data = lesson(), make_images(images, size)
    rows = []
    for i, batch in enumerate(sizes):
        train = code.image_dataset(*data, batch)
        model = code.compiled_model(policy, image_size=size)
        t = timing.measure(
            functools.partial(model.fit, train, epochs=1, verbose=0, shuffle=False),
            warmup=1,
            repeats=repeats,
        )
        steps = images // batch
        rows.append(
            {
                "batch": batch,
                "images/s": round(steps * batch / t.median),
                "ms per batch": round(t.median / steps * 1e3, 1),
            }
        )
        if on_progress is not None:
            on_progress(i + 1, len(sizes))
    return pd.DataFrame(rows).set_index("batch")


def sweep_figure(table: Any, title: str = "") -> Any:
    """Throughput and time per batch against batch size, side by side."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 3.2), layout="constrained")
    for ax, column, colour in zip(
        fig.subplots(1, 2), ("images/s", "ms per batch"), ("tab:blue", "tab:orange"), strict=True
    ):
        ax.plot(table.index, table[column], "o-", color=colour)
        ax.set_xscale("log", base=2)
        ax.set_xticks(list(table.index), [str(b) for b in table.index])
        ax.set_xlabel("batch size (log scale)")
        ax.set_ylim(bottom=0)  # from zero: a cut-off axis makes a small gain look steep
        ax.set_title(column, fontsize=10)
        ax.grid(alpha=0.3)
    if title:
        fig.suptitle(title)
    return fig


def sweep_summary(table: Any) -> str:
    """The fastest batch size (with the sizes within ``verdicts.MIN_EFFECT`` of it: a tie at
    this few repeats), and what the largest one costs per batch against the smallest."""
    best, small, large = table["images/s"].idxmax(), table.index.min(), table.index.max()
    top = table.loc[best, "images/s"]
    tied = [
        b
        for b in table.index
        if b != best and table.loc[b, "images/s"] >= top * (1 - verdicts.MIN_EFFECT)
    ]
    tie = ""
    if tied:
        names = ", ".join(map(str, tied[:-1])) + (" and " if len(tied) > 1 else "") + str(tied[-1])
        word = "batches" if len(tied) > 1 else "batch"
        tie = f"; {word} {names} within {verdicts.MIN_EFFECT:.0%} of it, a tie at this few repeats"
    return (
        f"most images/s at batch {best} ({top}{tie}); batch {large} took "
        f"{table.loc[large, 'ms per batch'] / table.loc[small, 'ms per batch']:.1f}x as long "
        f"per batch as batch {small}, "
        f"for {large / small:g}x the images"
    )


@checks.arguments(repeats=checks.repeats)
def bench_precision(batch: int = 64, steps: int = 15, size: int = 56, repeats: int = 7) -> Any:
    """float32 against mixed_bfloat16 under ``fit`` (images/s), with the CPU's bfloat16 support
    as the note."""
    from helpers import timing

    table = timing.compare(
        fit_variants(batch=batch, steps=steps, size=size), repeats=repeats, items=batch * steps
    )
    table.attrs["note"] = bf16_note()
    return table


BENCHMARKS = [
    Comparison(
        id="train_in_mixed_precision.float32_vs_bfloat16",
        title="Training a 4-conv model under fit: float32 vs mixed_bfloat16 (images/s)",
        measure=bench_precision,
        baseline="float32",
        variant="mixed_bfloat16",
        quick={"batch": 16, "steps": 2, "size": 32, "repeats": 3},
        full={"batch": 64, "steps": 15, "size": 56, "repeats": 7},
    ),
    Comparison(
        id="train_in_mixed_precision.steps_per_execution",
        title="fit on a tiny MLP, 256 steps of 32: steps_per_execution 1 vs 16",
        make_variants=spe_variants,
        baseline="steps_per_execution=1",
        variant="steps_per_execution=16",
        quick={"steps": 64},
        full={"steps": 256},
        repeats=7,
    ),
]
