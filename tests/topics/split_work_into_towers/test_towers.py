"""Unit tests for helpers.topics.split_work_into_towers (notebook 04's exercise check): how it reads
a placement table and a result. The grader itself, with real answers run in a process with four
logical CPUs, is tried in tests/test_graders.py."""

from __future__ import annotations

import pytest

from helpers.topics.split_work_into_towers import towers

CALL = ("__inference_my_towers_5", "__inference_my_towers_5", "CPU:0")  # a tf.function's call
GOOD = [("MatMul", "MatMul", "CPU:2"), ("MatMul_1", "MatMul", "CPU:3"), ("AddN", "AddN", "CPU:0")]


def _read(result, rows):
    import pandas as pd
    import tensorflow as tf

    batch = tf.random.stateless_normal([8, 4], seed=(1, 1))
    want = tf.matmul(batch, batch, transpose_a=True)
    answer = {
        "right": want,
        "double": want * 2,
        "float64": tf.cast(want, tf.float64),
        "strings": tf.strings.as_string(want),
        "nan": want * float("nan"),
    }[result]
    table = pd.DataFrame(rows, columns=["op", "type", "device"])
    return towers._judge_run(answer, table, batch)


@pytest.mark.parametrize(
    ("result", "rows", "passes", "words"),
    [
        ("right", [*GOOD, CALL], True, "towers on CPU:2, CPU:3"),
        (
            "right",
            [
                ("MatMul", "_MklMatMul", "CPU:3"),
                ("MatMul_1", "_MklMatMul", "CPU:2"),
                ("AddN", "AddN", "CPU:0"),
                CALL,
            ],
            True,
            "towers on CPU:2, CPU:3",
        ),  # oneDNN's kernel names
        ("float64", [*GOOD, CALL], True, "towers on CPU:2, CPU:3"),
        ("double", [*GOOD, CALL], False, "differs from batch^T batch"),
        ("nan", [*GOOD, CALL], False, "differs from batch^T batch"),
        ("strings", [("AddN", "AddN", "CPU:0"), CALL], False, "not a number tensor"),
        ("right", GOOD, False, "make my_towers a tf.function"),  # no function call: eager ops
        ("right", [CALL], False, "on its first call only"),  # placed before: nothing new
        ("right", [], False, "on its first call only"),
    ],
)
def test_judge_run_reads_the_table_and_the_result(result, rows, passes, words):
    feedback = _read(result, rows)
    assert bool(feedback) is passes and words in feedback.message, feedback.message
