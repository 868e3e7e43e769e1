"""RNN kernels (notebook 09): the variants the widgets and the bench time, built from the
notebook's exported lesson code (``helpers.lessons.choose_rnn_kernels``: the Keras 3 LSTM paths,
GRU and the fused ``BlockLSTMV2`` op), and what unrolling costs in tracing, speed and graph size
(its figure and reading are in ``rnn_report``).

The LSTM variants share one set of weights, so their outputs can be checked against each other
before any of them is timed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from helpers import checks, lessons
from helpers.checks import whole_number
from helpers.comparison import Comparison
from helpers.exercises import Feedback, correct, not_yet
from helpers.timing import ProgressFn
from helpers.topics.choose_rnn_kernels.rnn_report import (
    unroll_figure as unroll_figure,
)  # notebook 09 calls rnn.*
from helpers.topics.choose_rnn_kernels.rnn_report import unroll_summary as unroll_summary

KINDS = ("LSTM", "RNN(LSTMCell)", "LSTM unroll=True", "GRU", "BlockLSTMV2")
LSTM_KINDS = ("LSTM", "RNN(LSTMCell)", "LSTM unroll=True", "BlockLSTMV2")


def lesson() -> Any:
    """Notebook 09's exported lesson code (imported on use: it imports TensorFlow)."""
    return lessons.of("09_choose_rnn_kernels")


def _fits(batch: int, steps: int, features: int, units: int, layers: int) -> None:
    """Refuse, before building, sizes whose float32 weights (four gates, their gradients) and
    activations (kept for the backward pass) would not fit: units=65536 is a 64 GiB kernel."""
    weights = layers * 4 * units * (features + units + 1) * 4 * 2
    activations = layers * batch * steps * units * 4 * 4 * 3
    checks.fits_memory(
        f"rnn sizes (batch={batch}, steps={steps}, features={features}, units={units})",
        weights + activations,
    )


@checks.arguments(
    batch=checks.whole(1, 65536),
    steps=checks.whole(1, 10_000),
    features=checks.whole(1, 65536),
    units=checks.whole(1, 65536),
    training=checks.flag,
)
def rnn_variants(
    batch: int = 32,
    steps: int = 50,
    features: int = 32,
    units: int = 128,
    training: bool = True,
    kinds: Sequence[str] = KINDS,
) -> dict[str, Callable[[], Any]]:
    """Notebook 09's paths as ``tf.function``s on one ``[batch, steps, features]`` input: its
    ``recurrent_layers`` (the LSTM kinds share weights) and ``block_lstm``, forward only or, with
    ``training``, through its ``train_step``."""
    import keras
    import tensorflow as tf

    for name, value in (
        ("batch", batch),
        ("steps", steps),
        ("features", features),
        ("units", units),
    ):
        whole_number(name, value)
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not kinds:
        raise ValueError(f"kinds must be among {list(KINDS)}, got {list(kinds)!r}")
    _fits(batch, steps, features, units, layers=len(KINDS))
    code = lesson()
    keras.utils.set_random_seed(0)
    layers = code.recurrent_layers(units, steps, features)
    x = tf.random.stateless_normal([batch, steps, features], seed=(1, 2))
    target = tf.random.stateless_normal([batch, steps, units], seed=(3, 4))
    cell = layers["LSTM"].cell
    calls: dict[str, Any] = {**layers, "BlockLSTMV2": functools.partial(code.block_lstm, cell=cell)}
    variables = {name: layer.trainable_variables for name, layer in layers.items()}
    variables["BlockLSTMV2"] = [cell.kernel, cell.recurrent_kernel, cell.bias]
    out = {}
    for kind in kinds:
        forward = functools.partial(calls[kind], x)
        out[kind] = tf.function(
            functools.partial(code.train_step, forward, target, variables[kind])
            if training
            else forward
        )
    return out


@checks.arguments(
    batch=checks.whole(1, 65536),
    steps=checks.whole(1, 10_000),
    features=checks.whole(1, 65536),
    units=checks.whole(1, 65536),
)
def lstm_differences(
    batch: int = 4, steps: int = 10, features: int = 8, units: int = 16
) -> dict[str, float]:
    """Largest absolute difference of each LSTM kind's output sequence from
    ``keras.layers.LSTM``."""
    import tensorflow as tf

    variants = rnn_variants(batch, steps, features, units, training=False, kinds=LSTM_KINDS)
    reference = variants["LSTM"]()
    return {
        k: float(tf.reduce_max(tf.abs(variants[k]() - reference)))
        for k in LSTM_KINDS
        if k != "LSTM"
    }


def _graph_size(concrete: Any) -> tuple[int, float]:
    """Nodes (including those inside loop bodies and other library functions) and GraphDef MiB."""
    graph_def = concrete.graph.as_graph_def()
    nodes = len(graph_def.node) + sum(len(f.node_def) for f in graph_def.library.function)
    return nodes, graph_def.ByteSize() / 2**20


@checks.arguments(
    batch=checks.whole(1, 65536),
    features=checks.whole(1, 65536),
    units=checks.whole(1, 65536),
    repeats=checks.repeats,
)
def unroll_table(
    steps_list: Sequence[int] = (10, 25, 50, 100),
    batch: int = 32,
    features: int = 32,
    units: int = 128,
    repeats: int = 5,
    on_progress: ProgressFn | None = None,
) -> Any:
    """For each sequence length: the LSTM as a loop (``unroll=False``) and unrolled
    (``unroll=True``): first call (trace + run), median training step (the two timed in turns)
    and graph size."""
    import pandas as pd

    from helpers import timing

    lengths = [whole_number("steps", s) for s in steps_list]
    if not lengths:
        raise ValueError("steps_list must hold at least one length")
    rows, timings = [], {}
    for i, steps in enumerate(lengths):
        variants = rnn_variants(
            batch, steps, features, units, training=True, kinds=("LSTM", "LSTM unroll=True")
        )
        fns = {"loop": variants["LSTM"], "unrolled": variants["LSTM unroll=True"]}
        first = {mode: timing.time_once(fn) for mode, fn in fns.items()}  # trace + run
        # the two steps timed in turns, the order rotated each round, so drift hits both alike
        steps_timed = timing.compare(fns, warmup=1, repeats=repeats).attrs["timings"]
        for mode, fn in fns.items():
            step = steps_timed[mode]
            nodes, mib = _graph_size(fn.get_concrete_function())
            timings[(steps, mode)] = step
            rows.append(
                {
                    "steps": steps,
                    "mode": mode,
                    "first call s": round(first[mode], 3),
                    "step ms": round(step.median * 1e3, 2),
                    "step q1-q3 ms": f"{step.q1 * 1e3:.2f}-{step.q3 * 1e3:.2f}",
                    "graph nodes": nodes,
                    "graph MiB": round(mib, 2),
                }
            )
        if on_progress is not None:
            on_progress(i + 1, len(lengths))
    table = pd.DataFrame(rows).set_index(["steps", "mode"])
    table.attrs["timings"] = timings  # {(steps, "loop" or "unrolled"): Timing of the training step}
    return table


def check_cudnn_ready(layer: Any) -> Feedback:
    """Exercise check: a ``keras.layers.LSTM`` whose settings let it take the cuDNN kernel on a
    GPU, judged by the notebook's ``cudnn_blockers``."""
    import keras

    if not isinstance(layer, keras.layers.LSTM):
        return not_yet(f"pass a keras.layers.LSTM layer, got {type(layer).__name__}")
    try:
        blockers = lesson().cudnn_blockers(layer)
        units, dropout = layer.units, float(layer.cell.dropout)
    except Exception as exc:  # an unusual LSTM subclass: say what failed, do not raise
        return not_yet(f"could not read the layer's settings: {type(exc).__name__}: {exc}")
    if blockers:
        return not_yet(
            "this layer would run the generic loop on a GPU because of: " + ", ".join(blockers)
        )
    if units != 64:
        return not_yet(f"keep 64 units, as the exercise asks (this layer has {units})")
    if abs(dropout - 0.2) > 1e-9:
        return not_yet(
            f"keep the input dropout, dropout=0.2 (this layer has {dropout:g}): it does not block "
            "cuDNN; of the two dropouts, only recurrent_dropout does"
        )
    return correct(
        "on a GPU this layer takes the cuDNN kernel (with no mask, or a right-padded one that "
        "masks no sequence entirely)"
    )


def _loop_vs_unrolled(**kwargs: Any) -> dict[str, Callable[[], Any]]:
    variants = rnn_variants(kinds=("LSTM", "LSTM unroll=True"), **kwargs)
    return {"loop": variants["LSTM"], "unroll=True": variants["LSTM unroll=True"]}


BENCHMARKS = [
    Comparison(
        id="choose_rnn_kernels.unrolled_vs_loop",
        title="LSTM training step, B32 T50 D32 U128: symbolic loop vs unroll=True",
        make_variants=_loop_vs_unrolled,
        baseline="loop",
        variant="unroll=True",
        quick={"steps": 20},
        full={"steps": 50},
        repeats=9,
    ),
]
