"""Unit tests for helpers.topics.split_work_into_towers (notebook 04's exercise check); its grader
table is in tests/test_graders.py."""

from __future__ import annotations

from helpers.topics.split_work_into_towers import towers


def test_check_towers():
    import pandas as pd
    import tensorflow as tf

    batch = tf.random.stateless_normal([8, 4], seed=(1, 1))
    want = tf.matmul(batch, batch, transpose_a=True)
    good = pd.DataFrame(
        [
            ("MatMul", "MatMul", "CPU:2"),
            ("MatMul_1", "MatMul", "CPU:3"),
            ("AddN", "AddN", "CPU:0"),
            ("__inference_my_towers_5", "__inference_my_towers_5", "CPU:0"),  # a tf.function's call
        ],
        columns=["op", "kernel", "device"],
    )
    assert towers.check_towers(want, good, batch)
    assert "differs" in repr(towers.check_towers(want * 2, good, batch))
    assert "put one tower on CPU:2" in repr(towers.check_towers(want, good.iloc[[0, 2, 3]], batch))
    assert "make my_towers a tf.function" in repr(towers.check_towers(want, good.iloc[:3], batch))
    moved_sum = good.copy()
    moved_sum.loc[2, "device"] = "CPU:3"
    assert "not on CPU:0" in repr(towers.check_towers(want, moved_sum, batch))
