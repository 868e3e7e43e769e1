"""Mixed precision and Keras 3's compile settings (notebook 12): the synthetic images it trains
on, whether this CPU computes bfloat16 natively, the variants the widgets and the bench time
(built from the notebook's exported lesson code, ``helpers.lessons.train_in_mixed_precision``),
fresh-process runs of its ``PRECISION_CHILD`` under a narrower oneDNN instruction set (their
kernel logs are read by ``helpers.onednn``), the batch-size sweep and the exercise checks."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Sequence
from typing import Any

from helpers import checks, env, lessons
from helpers.checks import whole_number
from helpers.comparison import Comparison
from helpers.exercises import Feedback, correct, not_yet
from helpers.timing import ProgressFn

POLICIES = ("float32", "mixed_bfloat16", "mixed_float16")
BF16_FLAGS = env.BF16_FLAGS
#: ONEDNN_MAX_CPU_ISA values a child may run under ("" = all the CPU has).
ISAS = ("", "AVX512_CORE_AMX", "AVX512_CORE_BF16", "AVX512_CORE", "AVX2")
MAX_IMAGE_BYTES = 2 * 2**30


def lesson() -> Any:
    """Notebook 12's exported lesson code (imported on use: it imports TensorFlow)."""
    return lessons.of("12_train_in_mixed_precision")


@checks.arguments(n=checks.whole(1), size=checks.whole(1), classes=checks.whole(1, 1000), seed=checks.seed)
def make_images(n: int, size: int = 56, classes: int = 10, seed: int = 0) -> tuple[Any, Any]:
    """``n`` synthetic images ``[n, size, size, 3]`` (float32 in about 0..1) and int32 labels: each
    class is a stripe pattern at its own angle, with random frequency, phase and noise."""
    import numpy as np

    if n * size * size * 3 * 4 > MAX_IMAGE_BYTES:
        raise ValueError(f"{n} images of {size}x{size}x3 float32 need {n * size * size * 12 / 2**30:.1f} GiB; "
                         f"the limit is {MAX_IMAGE_BYTES / 2**30:.0f} GiB")
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, classes, n)
    yy, xx = np.mgrid[0:size, 0:size] / size
    angle = (labels * np.pi / classes + rng.normal(0, 0.05, n))[:, None, None]
    freq, phase = rng.uniform(3, 5, n)[:, None, None], rng.uniform(0, 2 * np.pi, n)[:, None, None]
    wave = np.sin(2 * np.pi * freq * (np.cos(angle) * xx + np.sin(angle) * yy) + phase)
    images = 0.5 + 0.3 * wave[..., None] + rng.normal(0, 0.18, (n, size, size, 3))
    return images.astype("float32"), labels.astype("int32")


def bf16_support(cpuinfo: str | None = None) -> dict[str, bool]:
    """Which of ``BF16_FLAGS`` this CPU reports, and ``native``: any of them (``env.bf16_kernels``
    says whether TensorFlow's kernels use them: that also takes oneDNN)."""
    flags = env.cpu_flags(cpuinfo)
    found = {flag: flag in flags for flag in BF16_FLAGS}
    return {**found, "native": any(found.values())}


def bf16_note(cpuinfo: str | None = None, onednn: bool | None = None) -> str:
    """One line: whether mixed_bfloat16 can be expected to pay here, and what decided it."""
    return env.bf16_kernels(cpuinfo, onednn)[1]


def fit_variants(policies: Sequence[str] = ("float32", "mixed_bfloat16"), jit_compile: Sequence[bool] = (False,),
                 batch: int = 64, steps: int = 15, size: int = 56, steps_per_execution: int = 1) -> dict[str, Callable[[], Any]]:
    """One epoch of ``model.fit`` (``steps`` batches) per policy and ``jit_compile`` setting, each
    model from the notebook's ``compiled_model``, all on the same images."""
    for name, value in (("batch", batch), ("steps", steps), ("size", size), ("steps_per_execution", steps_per_execution)):
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
            model = code.compiled_model(policy, jit_compile=jit, steps_per_execution=steps_per_execution, image_size=size)
            out[policy + (" + XLA" if jit else "")] = functools.partial(model.fit, train, epochs=1, verbose=0, shuffle=False)
    return out


@checks.arguments(batch=checks.whole(1, 65536), steps=checks.whole(1, 10**6))
def fit_items(batch: int = 64, steps: int = 15, **_: Any) -> int:
    """Images in one timed call of a ``fit_variants`` variant."""
    return batch * steps


def spe_variants(values: Sequence[int] = (1, 16), batch: int = 32, steps: int = 256, features: int = 32) -> dict[str, Callable[[], Any]]:
    """One epoch of ``fit`` on the notebook's ``compiled_mlp`` for each ``steps_per_execution``."""
    import numpy as np
    import tensorflow as tf

    for name, value in (("batch", batch), ("steps", steps), ("features", features), *(("steps_per_execution", v) for v in values)):
        whole_number(name, value)
    rng = np.random.default_rng(0)
    data = (rng.normal(size=(batch * steps, features)).astype("float32"), rng.integers(0, 10, batch * steps))
    train = tf.data.Dataset.from_tensor_slices(data).batch(batch).cache()
    return {f"steps_per_execution={v}": functools.partial(lesson().compiled_mlp(v, features).fit, train, epochs=1, verbose=0,
                                                          shuffle=False) for v in values}


@checks.arguments(verbose=checks.flag, timeout=checks.timeout, batch=checks.whole(1, 65536), size=checks.whole(8, 1024),
                  steps=checks.whole(1, 10_000), repeats=checks.repeats)
def run_child(policy: str, isa: str = "", verbose: bool = False, batch: int = 64, size: int = 56, steps: int = 3,
              repeats: int = 3, timeout: float = 600.0) -> tuple[dict[str, Any], str]:
    """Run the notebook's ``PRECISION_CHILD`` in a fresh process under ``ONEDNN_MAX_CPU_ISA=isa``
    (and ``ONEDNN_VERBOSE=1`` with ``verbose``): its result row and its whole stdout."""
    from helpers import procs

    checks.one_of(*POLICIES)("policy", policy)
    checks.one_of(*ISAS)("isa", isa)
    env = {"TF_CPP_MIN_LOG_LEVEL": "2", **({"ONEDNN_MAX_CPU_ISA": isa} if isa else {}), **({"ONEDNN_VERBOSE": "1"} if verbose else {})}
    with procs.programs({"precision_child.py": lesson().PRECISION_CHILD}) as files:
        args = [sys.executable, str(files["precision_child.py"]), "--policy", policy, "--batch", str(batch), "--size", str(size),
                "--steps", str(steps), "--repeats", str(repeats)]
        result = procs.run(args, env=env, timeout=timeout)
    rows = procs.parse_rows(result.stdout)
    if not rows:
        raise procs.ChildError("precision_child.py reported no result", procs.tail(result.stderr + result.stdout))
    return rows[-1], result.stdout


@checks.arguments(rounds=checks.rounds)
def isa_table(policies: Sequence[str] = ("float32", "mixed_bfloat16"), isas: Sequence[str] = ("", "AVX512_CORE"),
              rounds: int = 2, on_progress: ProgressFn | None = None, **child: Any) -> Any:
    """Training images/s of each policy under each ``ONEDNN_MAX_CPU_ISA``, every pair in its own
    fresh process, ``rounds`` times in rotation; speed-up against float32 under the same limit."""
    import pandas as pd

    from helpers import timing

    whole_number("rounds", rounds)
    pairs = [(isa, policy) for isa in isas for policy in policies]
    seconds: dict[tuple[str, str], list[float]] = {pair: [] for pair in pairs}
    images = 0
    for r in range(rounds):
        for i, (isa, policy) in enumerate(timing.rotated(pairs, r)):
            row, _ = run_child(policy, isa, **child)
            seconds[(isa, policy)].extend(row["seconds"])
            images = row["images"]
            if on_progress is not None:
                on_progress(r * len(pairs) + i + 1, rounds * len(pairs))
    timings = {pair: timing.Timing(" ".join(pair), tuple(s), images) for pair, s in seconds.items()}
    rows = []
    for (isa, policy), t in timings.items():
        base = timings.get((isa, "float32"))
        rows.append({"ONEDNN_MAX_CPU_ISA": isa or "(all the CPU has)", "policy": policy, "images/s": round(images / t.median),
                     "q1-q3 images/s": f"{images / t.q3:.0f}-{images / t.q1:.0f}",
                     "vs float32": f"{base.median / t.median:.2f}x" if base else "-"})
    table = pd.DataFrame(rows).set_index(["ONEDNN_MAX_CPU_ISA", "policy"])
    table.attrs["timings"] = timings
    return table


def bf16_expected(isa: str | None = None) -> dict[str, str]:
    """What the notebook leads the reader to expect of mixed_bfloat16 against float32 here, for
    ``verdicts.verdict``: "faster" where the kernels compute bfloat16 in hardware, else "slower"."""
    fast, why = env.bf16_kernels(isa=isa)
    return {"expect": "faster" if fast else "slower", "why": why}


def isa_summary(table: Any) -> str:
    """One line per instruction limit of an ``isa_table``: mixed_bfloat16 against float32, with
    the spread and whether this CPU's expectation under that limit held."""
    from helpers import timing, verdicts

    lines = []
    for (isa, policy), t in table.attrs["timings"].items():
        base = table.attrs["timings"].get((isa, "float32"))
        if policy == "float32" or base is None:
            continue
        pair = timing.comparison_table({"float32": base, policy: t}, "float32")
        expected = bf16_expected(isa) if policy == "mixed_bfloat16" else {}
        lines.append(f"ONEDNN_MAX_CPU_ISA={isa or '(all the CPU has)'}: {verdicts.verdict(pair, policy, **expected)}")
    return "\n".join(lines)


def batch_sweep(batches: Sequence[int] = (16, 32, 64, 128, 256), policy: str = "mixed_bfloat16", images: int = 512,
                size: int = 56, repeats: int = 3, on_progress: ProgressFn | None = None) -> Any:
    """Training throughput (images/s) and time per batch for each batch size: the same
    ``images`` per timed epoch, one model per size from the notebook's ``compiled_model``."""
    import pandas as pd

    from helpers import timing

    sizes = [whole_number("batch", b) for b in batches]
    if not sizes or max(sizes) > whole_number("images", images):
        raise ValueError(f"batches must be non-empty and at most images={images}, got {list(batches)!r}")
    code, data = lesson(), make_images(images, size)
    rows = []
    for i, batch in enumerate(sizes):
        train = code.image_dataset(*data, batch)
        model = code.compiled_model(policy, image_size=size)
        t = timing.measure(functools.partial(model.fit, train, epochs=1, verbose=0, shuffle=False), warmup=1, repeats=repeats)
        steps = images // batch
        rows.append({"batch": batch, "images/s": round(steps * batch / t.median), "ms per batch": round(t.median / steps * 1e3, 1)})
        if on_progress is not None:
            on_progress(i + 1, len(sizes))
    return pd.DataFrame(rows).set_index("batch")


def sweep_figure(table: Any, title: str = "") -> Any:
    """Throughput and time per batch against batch size, side by side."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 3.2), layout="constrained")
    for ax, column, colour in zip(fig.subplots(1, 2), ("images/s", "ms per batch"), ("tab:blue", "tab:orange"), strict=True):
        ax.plot(table.index, table[column], "o-", color=colour)
        ax.set_xscale("log", base=2)
        ax.set_xticks(list(table.index), [str(b) for b in table.index])
        ax.set_xlabel("batch size")
        ax.set_title(column, fontsize=10)
        ax.grid(alpha=0.3)
    if title:
        fig.suptitle(title)
    return fig


def sweep_summary(table: Any) -> str:
    """The fastest batch size, and what the largest one costs per batch against the smallest."""
    best, small, large = table["images/s"].idxmax(), table.index.min(), table.index.max()
    return (f"most images/s at batch {best} ({table.loc[best, 'images/s']}); batch {large} took "
            f"{table.loc[large, 'ms per batch'] / table.loc[small, 'ms per batch']:.1f}x as long per batch as batch {small}, "
            f"for {large / small:g}x the images")


def check_float32_output(model: Any) -> Feedback:
    """Exercise check: a model whose hidden layers compute in a 16-bit dtype and whose output is float32."""
    import keras
    import numpy as np

    if not isinstance(model, keras.Model):
        return not_yet(f"pass a keras.Model, got {type(model).__name__}")
    low = [layer.name for layer in model.layers if layer.compute_dtype in ("bfloat16", "float16")]
    if not low:
        return not_yet("no layer computes in bfloat16 or float16: build the model under mixed_bfloat16")
    try:
        output = model(np.zeros((1, *model.input_shape[1:]), "float32"))
    except Exception as exc:  # the learner's model
        return not_yet(f"calling your model raised {type(exc).__name__}: {exc}")
    if output.dtype != "float32":
        return not_yet(f"the model's output is {output.dtype}: give its last layer dtype='float32'")
    return correct(f"{len(low)} of {len(model.layers)} layers compute in 16 bits, the output is float32")


def check_scaled_step(step: Callable[..., Any]) -> Feedback:
    """Exercise check: ``step(w, x, optimizer)`` must move ``w`` by SGD's update of the true
    gradient, mean(x), where the float16 gradient of each element underflows without scaling."""
    import keras
    import numpy as np
    import tensorflow as tf

    if not callable(step):
        return not_yet(f"pass your step function, got {type(step).__name__}")
    for value in (1e-5, 0.5):  # an underflowing gradient, and an ordinary one
        w = tf.Variable(1.0)
        optimizer = keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD(learning_rate=1000.0))
        try:
            step(w, tf.fill([1024], tf.constant(value, tf.float16)), optimizer)
        except Exception as exc:  # the learner's code
            return not_yet(f"calling your function raised {type(exc).__name__}: {exc}")
        moved, expected = 1.0 - float(w.numpy()), 1000.0 * float(np.float16(value))  # SGD: w -= lr * mean(x)
        if not np.isclose(moved, expected, rtol=0.02):
            hint = ": the float16 gradient underflowed; scale the loss" if moved == 0 else ""
            return not_yet(f"with x = {value:g}, w moved by {moved:.6g}, expected {expected:.6g}{hint}")
    return correct("the scaled gradient survived float16 and the optimizer unscaled it")


@checks.arguments(repeats=checks.repeats)
def bench_precision(batch: int = 64, steps: int = 15, size: int = 56, repeats: int = 7) -> Any:
    """float32 against mixed_bfloat16 under ``fit`` (images/s), with the CPU's bfloat16 support as the note."""
    from helpers import timing

    table = timing.compare(fit_variants(batch=batch, steps=steps, size=size), repeats=repeats, items=batch * steps)
    table.attrs["note"] = bf16_note()
    return table


BENCHMARKS = [
    Comparison(id="precision.float32_vs_bfloat16", title="Training a 4-conv model under fit: float32 vs mixed_bfloat16 (images/s)",
               measure=bench_precision, baseline="float32", variant="mixed_bfloat16",
               quick={"batch": 16, "steps": 2, "size": 32, "repeats": 3}, full={"batch": 64, "steps": 15, "size": 56, "repeats": 7}),
    Comparison(id="keras.steps_per_execution", title="fit on a tiny MLP, 256 steps of 32: steps_per_execution 1 vs 16",
               make_variants=spe_variants, baseline="steps_per_execution=1", variant="steps_per_execution=16",
               quick={"steps": 64}, full={"steps": 256}, repeats=7),
]
