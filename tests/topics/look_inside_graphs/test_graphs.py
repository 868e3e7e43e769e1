"""Unit tests for helpers.topics.look_inside_graphs.graphs."""

from __future__ import annotations

import pytest

from helpers.topics.look_inside_graphs import graphs


def tf1_affine_graph():
    import tensorflow as tf

    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 3], name="x")
        w = tf.Variable(tf.ones([3, 2]), name="w")
        z = tf.matmul(x, w) + tf.constant([1.0, 2.0], name="b")
    return g, z


def test_check_affine_graph():
    import tensorflow as tf

    g, _ = tf1_affine_graph()
    assert graphs.check_affine_graph(g)
    assert "must be a tf.Graph" in repr(graphs.check_affine_graph("graph"))
    empty = tf.Graph()
    with empty.as_default():
        tf.constant(1.0)
    feedback = graphs.check_affine_graph(empty)
    assert (
        not feedback
        and "missing a placeholder x and a variable w and a matmul and an add" in repr(feedback)
    )


# check_training_step is tried in tests/test_graders.py, one row per answer.


HLO_BEFORE = """HloModule m

ENTRY %main (arg0.1: f32[8]) -> f32[8] {
  %arg0.1 = f32[8]{0} parameter(0)
  %c = f32[] constant(2)
  %b = f32[8]{0} broadcast(%c), dimensions={}
  %m = f32[8]{0} multiply(%arg0.1, %b)
  %m2 = f32[8]{0} multiply(%m, %b)
  ROOT %a = f32[8]{0} add(%m2, %b), metadata={op_type="AddV2"}
}
"""
HLO_AFTER = """HloModule m

%fused_computation (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  ROOT %a = f32[8]{0} add(%p, %p)
}

ENTRY %main (arg0.1: f32[8]) -> f32[8] {
  %arg0.1 = f32[8]{0} parameter(0)
  ROOT %f = f32[8]{0} fusion(%arg0.1), kind=kLoop, calls=%fused_computation
}
"""


def test_hlo_summary_counts_the_entry_before_and_after():
    text = graphs.hlo_summary(HLO_BEFORE, HLO_AFTER)
    assert (
        "ran 1 add, 2 multiply instructions (6 instructions in all; "
        "the others: 1 broadcast, 1 constant, 1 parameter)" in text
    )
    assert (
        "after them it runs 2 instructions (no elementwise instruction of its own), "
        "with 1 fusion(s) of kind kLoop holding the elementwise work (1 add, 1 parameter inside)"
        in text
    )
    with pytest.raises(ValueError, match="HLO module text"):
        graphs.hlo_summary("", HLO_AFTER)


def test_hlo_summary_reads_a_real_xla_program():
    import tensorflow as tf

    fn = tf.function(lambda t: t * 2.0 + 1.0, jit_compile=True)
    x = tf.ones([64])
    text = graphs.hlo_summary(
        fn.experimental_get_compiler_ir(x)(stage="hlo"),
        fn.experimental_get_compiler_ir(x)(stage="optimized_hlo"),
    )
    assert "1 add, 1 multiply" in text and "1 fusion(s)" in text


def test_optimized_op_types_show_the_remapper_on_and_off():
    import tensorflow as tf

    def conv_bias_relu(x, kernel, bias):
        return tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, kernel, 1, "SAME"), bias))

    args = tf.ones([1, 8, 8, 4]), tf.ones([3, 3, 4, 4]), tf.zeros([4])
    assert "_FusedConv2D" in graphs.optimized_op_types(tf.function(conv_bias_relu), *args)
    tf.config.optimizer.set_experimental_options({"remapping": False})
    try:
        separate = graphs.optimized_op_types(tf.function(conv_bias_relu), *args)
    finally:
        tf.config.optimizer.set_experimental_options({"remapping": True})
    assert {"Conv2D", "BiasAdd", "Relu"} <= set(separate)
    with pytest.raises(ValueError, match="pass a tf.function"):
        graphs.optimized_op_types(lambda: None)  # runs no TensorFlow at all


def test_recompile_summary_counts_only_compiles_without_a_new_trace():
    rows = [
        {"shape": 1, "shape seen before": "no", "ms": 200.0, "traces so far": 1},
        {"shape": 2, "shape seen before": "no", "ms": 90.0, "traces so far": 2},
        {"shape": 3, "shape seen before": "no", "ms": 60.0, "traces so far": 2},
        {"shape": 1, "shape seen before": "yes", "ms": 2.0, "traces so far": 2},
    ]
    text = graphs.recompile_summary(rows)
    assert (
        "traced 2 time(s)" in text
        and "no new trace still took 60.0 ms" in text
        and "compiled it" in text
    )
    rows[3]["ms"] = 50.0
    assert "no clear compile cost" in graphs.recompile_summary(rows)
    rows[2]["traces so far"] = 3
    assert "cannot tell a compile from a trace" in graphs.recompile_summary(rows)
    with pytest.raises(ValueError):
        graphs.recompile_summary(rows[:3])
