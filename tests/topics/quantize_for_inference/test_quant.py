"""Unit tests for helpers.topics.quantize_for_inference.quant: conversion modes, the interpreter
and its fallback, the
table."""

from __future__ import annotations

import contextlib
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from helpers.topics.quantize_for_inference import quant, quant_models


@pytest.fixture(scope="module")
def trained():
    x, y, x_test, y_test = quant.dataset(600, 100)
    return quant.train(x, y, epochs=2, width=4), x, x_test, y_test


def test_dataset_shapes_and_bad_input():
    x, y, x_test, y_test = quant.dataset(10, 5)
    assert x.shape == (10, 32, 32, 3) and x_test.shape == (5, 32, 32, 3)
    assert 0.0 <= x.min() and x.max() <= 1.0 and set(y) <= set(range(10))
    with pytest.raises(ValueError, match="n_test"):
        quant.dataset(10, 0)
    with pytest.raises(ValueError, match="width"):
        quant.train(x, y, width=0)


def test_modes_shrink_the_model_and_print_nothing(trained, capfd):
    model, x, _, _ = trained
    capfd.readouterr()
    sizes = {mode: len(quant.convert(model, mode, x[:50])) for mode in quant.MODES}
    out, err = capfd.readouterr()
    assert "Saved artifact" not in out + err and "/tmp/" not in out + err
    assert sizes["int8"] < sizes["float16"] < sizes["float32"]
    assert sizes["dynamic range"] < sizes["float32"]
    with pytest.raises(ValueError, match="representative"):
        quant.convert(model, "int8")
    with pytest.raises(ValueError, match="mode must be one of"):
        quant.convert(model, "int4")


def test_predictions_agree_with_keras(trained):
    model, x, x_test, _ = trained
    keras_pred = np.argmax(model.predict(x_test, verbose=0), axis=1)
    assert np.mean(quant.predict(quant.convert(model, "float32"), x_test) == keras_pred) >= 0.99
    assert (
        np.mean(quant.predict(quant.convert(model, "int8", x[:100]), x_test) == keras_pred) >= 0.9
    )


def test_interpreter_falls_back_to_tf_lite(trained, monkeypatch):
    model, _, x_test, _ = trained
    content = quant.convert(model, "float32")
    assert quant.make_interpreter(content)[1].startswith("ai_edge_litert")
    monkeypatch.setitem(sys.modules, "ai_edge_litert.interpreter", None)  # import now fails
    interpreter, source = quant.make_interpreter(content)
    assert source.startswith("tf.lite.Interpreter (deprecated fallback")
    assert interpreter.get_input_details()[0]["shape"].tolist() == [1, 32, 32, 3]


def test_table_summary_figure(trained):
    model, x, x_test, y_test = trained
    calls = []
    contents = {mode: quant.convert(model, mode, x[:50]) for mode in quant.MODES}
    table = quant.quant_table(
        model, contents, x_test, y_test, repeats=5, on_progress=lambda d, t: calls.append(d)
    )
    assert list(table.index) == list(quant.MODES) and calls == [1, 2, 3, 4, 5]
    assert (
        table.loc["float32", "smaller by"] == "1.00x"
        and table.loc["float32", "agrees with Keras"] == 1.0
    )
    assert (table["latency us"] > 0).all()
    assert quant.quant_summary(table).startswith(
        "int8: "
    ) and "quartile ratios" in quant.quant_summary(table)
    assert len(quant.quant_figure(table, "t").axes) == 2


def _converted(model, x, input_type=None, output_type=None, spelling="notebook"):
    """The notebook's solution, written out, with the parts a learner may change; ``spelling``
    "tf.data" calibrates from a dataset, "saved model" converts the model's SavedModel export."""
    import tensorflow as tf

    def representative():
        if spelling == "tf.data":
            for batch in tf.data.Dataset.from_tensor_slices(x).batch(1).take(100):
                yield [batch]
            return
        for i in range(100):
            yield [x[i : i + 1]]

    with contextlib.ExitStack() as stack:  # the SavedModel folder lives until converted
        if spelling == "saved model":
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="int8-"))
            with quant.quiet():
                model.export(folder)  # Keras 3: a TF SavedModel with a serving signature
            converter = tf.lite.TFLiteConverter.from_saved_model(folder)
        else:
            converter = tf.lite.TFLiteConverter.from_keras_model(model)
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = representative
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        if input_type is not None:  # "int8": the table's ids stay readable
            converter.inference_input_type = getattr(tf, input_type)
        if output_type is not None:
            converter.inference_output_type = getattr(tf, output_type)
        with quant.quiet():
            return converter.convert()


_EXPORTS = tempfile.TemporaryDirectory(prefix="int8-export-")  # removed when the process exits


def _exported_int8(model, x):
    """Section 6's route: Keras 3 writes the full-int8 file itself; the answer is its path."""
    import tensorflow as tf

    path = Path(_EXPORTS.name) / "int8.tflite"
    with quant.quiet():
        model.export(
            str(path),
            format="litert",
            verbose=False,
            optimizations=[tf.lite.Optimize.DEFAULT],
            representative_dataset=lambda: ([x[i : i + 1]] for i in range(100)),
            target_spec={"supported_ops": [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]},
            inference_input_type=tf.int8,
            inference_output_type=tf.int8,
        )
    return path


#: The exercise's grader table: (id, how the answer is made, passes, words the message must hold).
INT8 = [
    ("stub", lambda m, x: b"", False, "got empty bytes"),
    ("solution", lambda m, x: _converted(m, x, "int8", "int8"), True, "an int8 model"),
    (
        "calibrated from a tf.data pipeline",
        lambda m, x: _converted(m, x, "int8", "int8", "tf.data"),
        True,
        "an int8 model",
    ),
    (
        "from a SavedModel export",
        lambda m, x: _converted(m, x, "int8", "int8", "saved model"),
        True,
        "an int8 model",
    ),
    (
        "calibrated, float32 input and output",
        lambda m, x: _converted(m, x),
        False,
        "float32 and float32, not int8: its inside is int8; set inference_input_type",
    ),
    ("int8 input only", lambda m, x: _converted(m, x, "int8"), False, "int8 and float32, not int8"),
    (
        "dynamic range",
        lambda m, x: quant.convert(m, "dynamic range"),
        False,
        "only its weights are int8 (dynamic range): add a representative_dataset",
    ),
    (
        "a float32 model",
        lambda m, x: quant.convert(m, "float32"),
        False,
        "nothing in it is quantized",
    ),
    ("float16", lambda m, x: quant.convert(m, "float16"), False, "its weights are float16"),
    (
        "16x8, float32 at the edges",
        lambda m, x: quant.convert(m, "16x8", x[:100]),
        False,
        "its activations are int16 (16x8)",
    ),
    (
        "uint8 input and output (TF1's type)",
        lambda m, x: _converted(m, x, "uint8", "uint8"),
        False,
        "uint8 is TF1's quantized type; set both inference types to tf.int8",
    ),
    (
        "model.export's file, by its path",
        lambda m, x: _exported_int8(m, x),
        True,
        "an int8 model",
    ),
    (
        "model.export's return value",
        lambda m, x: None,
        False,
        "writes the file and returns None; pass its path",
    ),
    ("a path that is not there", lambda m, x: "model.tflite", False, "there is no file at"),
    (
        "a path to another kind of file",
        lambda m, x: "model.keras",
        False,
        "does not name a .tflite",
    ),
    ("a number", lambda m, x: 3, False, "got int"),
    ("not a model", lambda m, x: b"not a model", False, "could not load"),
]


@pytest.fixture(scope="module")
def int8_answers(trained):
    model, x, _, _ = trained
    return [make(model, x) for _, make, _, _ in INT8]


@pytest.mark.parametrize("row", range(len(INT8)), ids=[row[0] for row in INT8])
def test_int8_model_grader(row, trained, int8_answers):
    model, _, x_test, _ = trained
    name, _, passes, words = INT8[row]
    feedback = quant.check_int8_model(int8_answers[row], model, x_test)
    assert bool(feedback) is passes, feedback.message
    assert feedback.message.startswith("Correct: " if passes else "Not yet: "), feedback.message
    assert words in feedback.message, feedback.message


def test_int8_grader_does_not_let_a_run_error_escape(trained, int8_answers):
    model, _, x_test, _ = trained
    feedback = quant.check_int8_model(
        int8_answers[1], model, x_test[:, :16]
    )  # the solution row  # images of another size
    assert not feedback and "running it on the test images raised" in feedback.message, (
        feedback.message
    )


def test_benchmarks_registered(monkeypatch):
    import pandas as pd

    from helpers import bench, timing
    from helpers.topics.quantize_for_inference import model_latency

    ids = bench.registry()
    size = ids["quantize_for_inference.int8_size_ratio"].run(quick=True)
    assert 1.0 < size["speedup"] <= 4.0 and size["unit"] == "bytes" and size["bound"] == 4.0
    # The latency entry's glue, on the experiment's table shape: the MobileNetV2 experiment itself
    # runs in notebook 11, whose widget JupyterLab clicks in make test.
    calls = []

    def experiment(size, modes, repeats, threads):
        calls.append((size, tuple(modes), repeats, tuple(threads)))
        table = pd.DataFrame()
        table.attrs["timings"] = {
            (m, 1): timing.Timing(
                m, (0.004, 0.005, 0.006) if m == "float32" else (0.002, 0.0025, 0.003)
            )
            for m in modes
        }
        return table

    monkeypatch.setattr(model_latency, "mobilenet_experiment", experiment)
    latency = ids["quantize_for_inference.int8_latency"].run(quick=True)
    assert calls == [(96, ("float32", "int8"), 10, (1,))] and latency["speedup"] == pytest.approx(
        2.0
    )


def test_quant_experiment_trains_then_tabulates():
    calls = []
    table = quant.quant_experiment(
        width=4, epochs=1, n_train=200, repeats=2, on_progress=lambda d, t: calls.append(d)
    )
    assert list(table.index) == list(quant.MODES) and calls[-1] == len(quant.MODES) + 1


def test_latency_tables(trained):
    """model_latency: every mode on every thread count, each against float32 at the same count."""
    from helpers.topics.quantize_for_inference import model_latency

    model, x, x_test, _ = trained
    contents = {mode: quant.convert(model, mode, x[:20]) for mode in ("float32", "int8")}
    table = model_latency.latency_table(contents, x_test[:1], threads=(1, 2), repeats=3)
    assert list(table.index) == [("float32", 1), ("int8", 1), ("float32", 2), ("int8", 2)]
    assert (table["median ms"] > 0).all()
    assert table.loc[("float32", 2), "speed-up vs float32"] == "1.00x"
    assert len(model_latency.latency_figure(table, "t").axes) == 1
    lines = model_latency.latency_summary(
        table
    ).splitlines()  # one verdict per thread count, with its spread
    assert [line.split(" ", 3)[:3] for line in lines] == [
        ["int8,", "1", "thread"],
        ["int8,", "2", "threads"],
    ]
    assert all("quartile ratios" in line and "float32, " in line for line in lines)
    sizes = model_latency.size_latency_table({"cnn": (contents, x_test[:1])}, repeats=3)
    assert (
        sizes.loc["cnn", "int8 speed-up"] > 0
        and len(model_latency.size_latency_figure(sizes).axes) == 1
    )
    assert model_latency.size_latency_summary(sizes).startswith(
        "int8 against float32, one thread, per model:\ncnn (float32 "
    )
    assert "quartile ratios" in model_latency.size_latency_summary(sizes)
    with pytest.raises(ValueError, match="threads"):
        model_latency.latency_table(contents, x_test[:1], threads=(0,))
    with pytest.raises(ValueError, match="size"):
        model_latency.mobilenet_experiment(size=8)


def test_integer_modes_their_ops_and_the_summary(trained):
    model, x, x_test, y_test = trained
    contents = {
        mode: quant.convert(model, mode, x[:50])
        for mode in ("float32", "int8", *quant_models.MORE_MODES)
    }
    fallback, _ = quant.make_interpreter(contents["int8, float fallback"])
    int8, _ = quant.make_interpreter(contents["int8"])
    x16, _ = quant.make_interpreter(contents["16x8"])
    assert (
        fallback.get_input_details()[0]["dtype"] == np.float32
        and int8.get_input_details()[0]["dtype"] == np.int8
    )
    assert "int16" in quant.op_dtypes(x16) and "int8" in quant.op_dtypes(fallback)
    ops = int8._get_ops_details()
    assert (
        sum(quant.op_dtypes(int8).values())
        == sum(op["op_name"] != "DELEGATE" for op in ops)
        < len(ops)
    )
    table = quant.quant_table(model, contents, x_test, y_test, repeats=5)
    lines = quant.modes_summary(table).splitlines()
    assert [line.split(":")[0] for line in lines] == ["int8", *quant_models.MORE_MODES]
    assert all(
        "x smaller, agrees with Keras on" in line and "quartile ratios" in line for line in lines
    )
    with pytest.raises(ValueError, match="16x8 needs representative"):
        quant.convert(model, "16x8")


def test_layer_errors_read_the_debugger_statistics():
    import io

    import pandas as pd

    csv = (
        "op_name,tensor_idx,num_elements,stddev,mean_error,max_abs_error,mean_squared_error,scale,zero_point,tensor_name\n"
        "CONV_2D,3,100,0.1,0.0,0.5,0.0009,0.1,-128,seq/conv2d/Relu;seq/conv2d/BiasAdd\n"
        "MAX_POOL_2D,4,25,0.1,0.0,0.0,0.0,0.1,-128,seq/pool/MaxPool2d\n"
        "FULLY_CONNECTED,7,10,0.1,0.01,0.9,0.04,0.1,3,seq/dense/MatMul;seq/dense/BiasAdd\n"
    )
    stats = pd.read_csv(io.StringIO(csv))
    with pytest.raises(ValueError, match="rmse/scale"):
        quant.layer_errors(stats)
    stats["rmse/scale"] = np.sqrt(stats["mean_squared_error"]) / stats["scale"]
    table = quant.layer_errors(stats)
    assert list(table["layer"]) == [
        "seq/dense",
        "seq/conv2d",
        "seq/pool",
    ]  # largest rmse/scale first: 2.0, 0.3, 0
    assert list(table["rmse/scale"]) == [2.0, 0.3, 0.0] and table["tensor_name"][0].startswith(
        "seq/dense/MatMul"
    )
    line = quant.layer_errors_summary(table)
    assert line.startswith(
        "largest rmse/scale: 2.000 at seq/dense (FULLY_CONNECTED), 6.93x rounding alone (0.289)"
    )
    assert line.endswith("1 of the 2 layers that round are above twice that")


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ("fpu avx2 fma avx512f avx512_vnni avx_vnni", "instructions AVX512_VNNI, AVX_VNNI"),
        ("fpu avx avx2 fma", "no integer dot-product instructions"),
        ("fp asimd asimddp i8mm", "instructions ASIMDDP, I8MM"),
    ],
)
def test_int8_instructions_names_this_cpus_dot_products(flags, expected):
    """The line notebook 11 prints under its MobileNetV2 timing, from /proc/cpuinfo's text: x86
    flags or ARM features."""
    from helpers.topics.quantize_for_inference import model_latency

    key = "Features" if "asimd" in flags else "flags"
    line = model_latency.int8_instructions(f"model name\t: Some CPU\n{key}\t\t: {flags}\n")
    assert line.startswith("Some CPU: ") and expected in line


def test_int8_instructions_without_a_flag_list_says_so():
    from helpers.topics.quantize_for_inference import model_latency

    assert "does not list" in model_latency.int8_instructions("")
    with pytest.raises(TypeError, match="cpuinfo"):
        model_latency.int8_instructions(b"flags : avx2")
