"""Unit tests for helpers.topics.choose_rnn_kernels.rnn: the LSTM paths agree, the tables hold what
they say, bad
input."""

from __future__ import annotations

import re

import pytest

from helpers.topics.choose_rnn_kernels import rnn


def test_lstm_kinds_give_the_same_outputs():
    differences = rnn.lstm_differences()
    assert set(differences) == {"RNN(LSTMCell)", "LSTM unroll=True", "BlockLSTMV2"}
    assert all(d < 1e-5 for d in differences.values()), differences


def test_training_variants_return_gradients_for_every_kind():
    import tensorflow as tf

    variants = rnn.rnn_variants(batch=2, steps=4, features=3, units=5, training=True)
    assert list(variants) == list(rnn.KINDS)
    for name, fn in variants.items():
        grads = fn()
        assert grads and all(
            g is not None and bool(tf.reduce_all(tf.math.is_finite(g))) for g in grads
        ), name
    # shared weights: the loop and the unrolled LSTM have the same gradients
    a, b = variants["LSTM"](), variants["LSTM unroll=True"]()
    assert all(float(tf.reduce_max(tf.abs(x - y))) < 1e-5 for x, y in zip(a, b, strict=True))


def test_unroll_table_grows_the_unrolled_graph_only():
    calls = []
    table = rnn.unroll_table(
        (2, 6), batch=2, features=3, units=4, repeats=1, on_progress=lambda d, t: calls.append(d)
    )
    assert list(table.index) == [(2, "loop"), (2, "unrolled"), (6, "loop"), (6, "unrolled")]
    assert table.loc[(2, "loop"), "graph nodes"] == table.loc[(6, "loop"), "graph nodes"]
    assert table.loc[(6, "unrolled"), "graph nodes"] > table.loc[(2, "unrolled"), "graph nodes"]
    assert (table["step ms"] > 0).all() and calls == [1, 2]
    summary = rnn.unroll_summary(table)
    assert summary.startswith("At 2 steps unrolling made the first call"), summary
    assert "; at 6 steps, the first call" in summary
    assert "The training step, unrolled against the loop: " in summary
    # one run each leaves no spread: each length names its ratio and no direction (a single run
    # once read "12.36x faster" beside the full verdict's "too few to judge")
    each = r"\d+\.\d\dx from 1 run each \(too few to judge\)"
    assert re.search(each + " at 2 steps, " + each + " at 6 steps[.]", summary), summary
    assert "faster" not in summary and "slower" not in summary, summary
    assert "At 6 steps: unrolled" in summary
    one_length = table.loc[[6]]
    assert rnn.unroll_summary(one_length).startswith("At 6 steps unrolling made the first call")
    # every length read, from this run's timings: faster at one length and slower at another
    # is said to be so; the same direction at both is not
    from helpers.timing import Timing

    def timed(loop_2, unrolled_2, loop_6, unrolled_6):
        seconds = {(2, "loop"): loop_2, (2, "unrolled"): unrolled_2}
        seconds.update({(6, "loop"): loop_6, (6, "unrolled"): unrolled_6})
        crafted = table.copy()
        crafted.attrs["timings"] = {
            k: Timing(k[1], (v, v * 1.01, v * 0.99)) for k, v in seconds.items()
        }
        return rnn.unroll_summary(crafted)

    mixed = timed(2.0, 1.0, 1.0, 2.0)
    assert "2.00x faster at 2 steps, 2.00x slower at 6 steps." in mixed, mixed
    assert "faster at some lengths and slower at others" in mixed
    same = timed(2.0, 1.0, 2.0, 1.0)
    assert "2.00x faster at 2 steps, 2.00x faster at 6 steps." in same
    assert "at others" not in same
    level = timed(1.0, 1.0, 2.0, 1.0)  # a reading of no difference shows why: its quartile ratios
    assert "no clear difference (1.00x, quartile ratios 0.99-1.01x) at 2 steps" in level, level
    untimed = table.copy()
    untimed.attrs["timings"] = {}
    assert "as fast (no spread kept)." in rnn.unroll_summary(untimed)
    fig = rnn.unroll_figure(table, "t")
    assert len(fig.axes) == 3


def test_unroll_table_times_the_two_steps_in_turns(monkeypatch):
    from helpers import timing

    calls = []
    real = timing.compare

    def spy(variants, *args, **kwargs):
        calls.append(sorted(variants))
        return real(variants, *args, **kwargs)

    monkeypatch.setattr(timing, "compare", spy)
    table = rnn.unroll_table((2, 3), batch=2, features=3, units=4, repeats=2)
    assert calls == [
        ["loop", "unrolled"],
        ["loop", "unrolled"],
    ]  # one interleaved comparison per length
    assert all(t.count == 2 for t in table.attrs["timings"].values())


def test_check_cudnn_ready():
    import keras

    assert rnn.check_cudnn_ready(keras.layers.LSTM(64, dropout=0.2))
    text = repr(
        rnn.check_cudnn_ready(
            keras.layers.LSTM(4, recurrent_dropout=0.2, unroll=True, activation="relu")
        )
    )
    assert "recurrent_dropout=0.2" in text and "unroll=True" in text and "activation=relu" in text
    assert "use_cudnn=False" in repr(rnn.check_cudnn_ready(keras.layers.LSTM(4, use_cudnn=False)))
    assert "pass a keras.layers.LSTM" in repr(rnn.check_cudnn_ready(keras.layers.GRU(4)))


def test_bad_input():
    with pytest.raises(ValueError, match="kinds must be among"):
        rnn.rnn_variants(kinds=("cuDNN",))
    with pytest.raises(ValueError, match="steps must be"):
        rnn.rnn_variants(steps=0)
    with pytest.raises(ValueError, match="steps_list"):
        rnn.unroll_table(())


def test_benchmark_registered():
    from helpers import bench

    record = bench.registry()["choose_rnn_kernels.unrolled_vs_loop"].run(quick=True)
    assert record["speedup"] > 0 and record["baseline"] == "loop"


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"activation": "relu"},
        {"recurrent_activation": "hard_sigmoid"},
        {"unroll": True},
        {"use_bias": False},
    ],
)
def test_cudnn_blockers_agree_with_keras_own_check(kwargs):
    """Notebook 09's cudnn_blockers against Keras' private check of the same settings."""
    import keras
    from keras.src.backend.tensorflow.rnn import _do_lstm_arguments_support_cudnn

    layer = keras.layers.LSTM(4, **kwargs)
    cell = layer.cell
    keras_ok = _do_lstm_arguments_support_cudnn(
        cell.activation, cell.recurrent_activation, layer.unroll, cell.use_bias
    )
    assert (rnn.lesson().cudnn_blockers(layer) == []) == keras_ok


def test_layer_norm_cell_and_the_padded_variants_train():
    import keras
    import tensorflow as tf

    from helpers.lessons import choose_rnn_kernels as lesson

    layer = keras.layers.RNN(lesson.LayerNormLSTMCell(8), return_sequences=True)
    out = layer(tf.ones([2, 5, 4]))
    assert out.shape == (2, 5, 8)
    names = {v.path.split("/")[-2] for v in layer.trainable_variables}
    assert len(layer.trainable_variables) == 7 and any("layer_normalization" in n for n in names)
    variants = lesson.padded_and_more_variants(batch=4, steps=6, features=3, units=5)
    assert list(variants) == [
        "LSTM",
        "LSTM, right-padded mask",
        "RNN(LayerNormLSTMCell)",
        "Bidirectional(LSTM)",
    ]
    for name, step in variants.items():
        grads = step()
        assert all(g is not None and bool(tf.reduce_all(tf.math.is_finite(g))) for g in grads), name
