"""Unit tests for helpers.graphs."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import graphs


def test_small_ops_chain_matches_numpy():
    x = np.arange(4, dtype=np.float64)
    expected = x.copy()
    for i in range(5):
        expected = expected * 0.999 if i % 2 == 0 else expected + 0.001
    np.testing.assert_allclose(graphs.small_ops_chain(x, 5), expected)


def test_eager_and_function_agree():
    variants = graphs.eager_vs_function(n_ops=20, size=8)
    assert list(variants) == ["eager", "tf.function"]
    np.testing.assert_allclose(variants["eager"]().numpy(), variants["tf.function"]().numpy(), rtol=1e-6)


@pytest.mark.parametrize("kwargs", [{"n_ops": 0}, {"n_ops": 2.0}, {"size": -1}])
def test_bad_sizes(kwargs):
    with pytest.raises(ValueError, match="must be a whole number"):
        graphs.eager_vs_function(**kwargs)
