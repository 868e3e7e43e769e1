"""Unit tests for helpers.topics.graphs."""

from __future__ import annotations

from helpers.topics import graphs


def tf1_affine_graph():
    import tensorflow as tf

    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 3], name="x")
        w = tf.Variable(tf.ones([3, 2]), name="w")
        z = tf.matmul(x, w) + tf.constant([1.0, 2.0], name="b")
    return g, z


def test_ops_table_and_op_types():
    g, z = tf1_affine_graph()
    table = graphs.ops_table(g)
    assert list(table.columns) == ["name", "type", "inputs", "outputs", "device"]
    row = table.set_index("name").loc["x"]
    assert row["type"] == "Placeholder" and "(None, 3) float32" in row["outputs"]
    types = graphs.op_types(g)
    assert types.iloc[0]["count"] >= types.iloc[-1]["count"]
    assert int(types.set_index("type").loc["MatMul", "count"]) == 1
    assert len(graphs.ops_table(g, start=len(g.get_operations()))) == 0


def test_check_affine_graph():
    import tensorflow as tf

    g, _ = tf1_affine_graph()
    assert graphs.check_affine_graph(g)
    assert "must be a tf.Graph" in repr(graphs.check_affine_graph("graph"))
    empty = tf.Graph()
    with empty.as_default():
        tf.constant(1.0)
    feedback = graphs.check_affine_graph(empty)
    assert not feedback and "missing a placeholder x and a variable w and a matmul and an add" in repr(feedback)


# check_training_step is tried in tests/test_graders.py, one row per answer.
