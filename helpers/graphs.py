"""Operations, tensors and graphs; the eager vs ``tf.function`` comparison (notebooks 00, 01)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from helpers.bench import Comparison


def small_ops_chain(x: Any, n_ops: int) -> Any:
    """Apply ``n_ops`` tiny elementwise ops (multiply, add, alternating) to ``x``.

    Each op does almost no arithmetic, so the time goes to launching ops: the cost that
    ``tf.function`` removes by running one graph instead of ``n_ops`` Python-level calls.
    """
    for i in range(n_ops):
        x = x * 0.999 if i % 2 == 0 else x + 0.001
    return x


def eager_vs_function(n_ops: int = 100, size: int = 64) -> dict[str, Callable[[], Any]]:
    """Two variants that compute the same ``small_ops_chain``: op by op, and as one graph."""
    import tensorflow as tf

    if isinstance(n_ops, bool) or not isinstance(n_ops, int) or n_ops < 1:
        raise ValueError(f"n_ops must be a whole number >= 1, got {n_ops!r}")
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"size must be a whole number >= 1, got {size!r}")
    x = tf.random.stateless_uniform([size], seed=(0, 1))
    graph = tf.function(lambda t: small_ops_chain(t, n_ops))
    return {
        "eager": lambda: small_ops_chain(x, n_ops),
        "tf.function": lambda: graph(x),
    }


BENCHMARKS = [
    Comparison(
        id="graphs.eager_vs_function",
        title="100-1000 tiny ops: eager op by op vs one tf.function graph",
        make_variants=eager_vs_function,
        baseline="eager",
        variant="tf.function",
        quick={"n_ops": 100},
        full={"n_ops": 1000},
    ),
]
