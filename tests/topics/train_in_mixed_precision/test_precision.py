"""Unit tests for helpers.topics.train_in_mixed_precision.precision: data, CPU flags, the oneDNN
log reader, the variants,
the fresh-process child, the sweep and the exercise checks (stubs fail, solutions pass)."""

from __future__ import annotations

import ast
import json
import os
import types
from pathlib import Path

import pytest

from helpers import checks, env, onednn
from helpers.nbtools import source
from helpers.topics.train_in_mixed_precision import precision, precision_isa

CPUINFO_BF16 = (
    "processor\t: 0\nmodel name\t: Test CPU\n"
    "flags\t\t: fpu sse avx2 avx512f avx512_bf16 amx_tile amx_bf16\n"
)
CPUINFO_AVX2 = "processor\t: 0\nflags\t\t: fpu sse avx2 fma\n"

VERBOSE = (
    "onednn_verbose,v1,primitive,info,template:operation,engine,primitive,implementation,"
    "prop_kind,memory_descriptors,attributes,auxiliary,problem_desc,exec_time\n"
    "onednn_verbose,v1,primitive,exec,cpu,convolution,brg_conv_fwd:avx10_1_512_amx,"
    "forward_training,src:bf16::blocked:acdb::f0 wei:bf16:a:blocked:Acdb16a::f0,"
    "attr-scratchpad:user,alg:convolution_direct,mb8_ic3oc16,0.5\n"
    "onednn_verbose,v1,primitive,exec,cpu,convolution,brg_conv_fwd:avx10_1_512_amx,"
    "forward_training,src:bf16::blocked:acdb::f0 wei:bf16:a:blocked:Acdb16a::f0,"
    "attr-scratchpad:user,alg:convolution_direct,mb8_ic3oc16,1.5\n"
    "onednn_verbose,v1,primitive,exec,cpu,convolution,ref:any,backward_weights,"
    "src:f16::blocked:acdb::f0 wei:f16:a:blocked:abcd::f0,,alg:convolution_direct,mb8,2620.25\n"
    "onednn_verbose,v1,primitive,exec,cpu,gemm_api,,undef,"
    "src_f32::blocked:ba:f0 wei_f32::blocked:ab:f0 dst_f32::blocked:ab:f0,,,16x8:8x10,0.25\n"
    '{"some": "other stdout line"}\n'
)


def test_make_images_is_deterministic_and_learnable_shaped():
    import numpy as np

    images, labels = precision.make_images(20, size=8, classes=4, seed=1)
    assert images.shape == (20, 8, 8, 3) and images.dtype == np.float32 and labels.dtype == np.int32
    assert set(labels.tolist()) <= {0, 1, 2, 3}
    again, _ = precision.make_images(20, size=8, classes=4, seed=1)
    assert np.array_equal(images, again)
    with pytest.raises(ValueError, match="n must be a whole number"):
        precision.make_images(0)
    with pytest.raises(ValueError, match="GiB"):
        precision.make_images(10**6, size=224)


def test_bf16_support_reads_the_flags(monkeypatch):
    monkeypatch.delenv(
        "ONEDNN_MAX_CPU_ISA", raising=False
    )  # a cap in the caller's shell would change the verdict
    assert precision.bf16_support(CPUINFO_BF16) == {"avx512_bf16": True, "amx_bf16": True}
    assert precision.bf16_support(CPUINFO_AVX2) == {"avx512_bf16": False, "amx_bf16": False}
    arm = "processor\t: 0\nFeatures\t: fp asimd evtstrm aes sha2 crc32 atomics i8mm bf16 sve\n"
    assert precision.bf16_support(arm) == {"bf16": True}
    assert precision.bf16_support(arm.replace(" bf16", "")) == {"bf16": False}
    # having the instructions is not using them: with oneDNN off the note says emulated
    assert "oneDNN is off" in precision.bf16_note(CPUINFO_BF16, onednn=False)
    assert "in hardware (AVX512_BF16, AMX_BF16)" in precision.bf16_note(CPUINFO_BF16, onednn=True)
    assert "slower than float32" in precision.bf16_note(CPUINFO_AVX2, onednn=True)


@pytest.mark.parametrize(
    ("cpuinfo", "onednn", "isa", "fast", "words"),
    [
        (CPUINFO_BF16, True, "", True, "in hardware"),
        (CPUINFO_BF16, True, "AVX512_CORE_AMX", True, "in hardware"),
        (CPUINFO_BF16, False, "", False, "oneDNN is off"),
        (CPUINFO_BF16, True, "AVX512_CORE", False, "ONEDNN_MAX_CPU_ISA=AVX512_CORE forbids"),
        (CPUINFO_AVX2, True, "", False, "no bfloat16 instructions"),
        (CPUINFO_AVX2, False, "", False, "no bfloat16 instructions"),
    ],
)
def test_bf16_kernels_takes_the_instructions_and_onednn(
    monkeypatch, cpuinfo, onednn, isa, fast, words
):
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", isa)
    got, why = env.bf16_kernels(cpuinfo, onednn)
    assert got is fast and words in why
    assert ("slower than float32" in why) is not fast


def test_bf16_kernels_without_cpuinfo_is_not_known():  # macOS, Windows
    got, why = env.bf16_kernels("", True)
    assert got is None and "no CPU flags to read here" in why and "emulated" not in why


def test_bf16_kernels_on_arm_names_the_feature_and_promises_nothing(monkeypatch):
    neoverse_v1 = (
        "processor\t: 0\nFeatures\t: fp asimd evtstrm aes sha2 crc32 atomics i8mm bf16 sve\n"
    )
    older = "processor\t: 0\nFeatures\t: fp asimd evtstrm aes crc32 atomics asimddp\n"
    got, why = env.bf16_kernels(older, True)
    assert got is False and "no bfloat16 instructions" in why and "ARM BF16" in why
    got, why = env.bf16_kernels(neoverse_v1, True)
    assert got is None and why.startswith("this ARM CPU has BF16 instructions")  # not known
    assert "not run for the workbook" in why and "slower" not in why
    real = env.bf16_kernels
    monkeypatch.setattr(env, "bf16_kernels", lambda isa=None: real(neoverse_v1, True, isa))
    assert precision_isa.bf16_expected() == {"expect": None, "why": why}  # not "slower"


def test_onednn_kernels_sums_calls_per_implementation():
    table = onednn.kernels(VERBOSE)
    assert list(table.columns) == [
        "primitive",
        "pass",
        "implementation",
        "dtype",
        "calls",
        "total ms",
    ]
    first = table.iloc[0]  # sorted by time: the reference kernel first
    assert (first["implementation"], first["dtype"], first["calls"]) == ("ref:any", "f16", 1)
    amx = table[table["implementation"] == "brg_conv_fwd:avx10_1_512_amx"].iloc[0]
    assert amx["calls"] == 2 and amx["total ms"] == 2.0 and amx["dtype"] == "bf16"
    assert table[table["primitive"] == "gemm_api"].iloc[0]["dtype"] == "f32"
    assert onednn.kernels("no oneDNN here").empty


def test_kernel_summary_names_the_slowest_pass_and_a_reference_fallback():
    table = onednn.kernels(VERBOSE)
    conv = table[table["primitive"] == "convolution"].set_index(
        ["pass", "implementation", "dtype"]
    )["total ms"]
    amx = conv[conv.index.get_level_values("implementation") != "ref:any"]
    lines = onednn.kernel_summary(
        {"mixed_float16": conv, "mixed_bfloat16": amx, "float32": conv.iloc[:0]}
    ).splitlines()
    assert lines[0] == (
        "mixed_float16: slowest pass backward_weights in f16 on ref:any, oneDNN's reference "
        "implementation (the slow fallback): 2,620.2 ms"
    )
    assert lines[1] == (
        "mixed_bfloat16: slowest pass forward_training in bf16 "
        "on brg_conv_fwd:avx10_1_512_amx: 2.0 ms"
    )
    assert lines[2].startswith("float32: oneDNN ran no convolution")


ZEN5 = "processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512bw avx512_bf16 avx_vnni\n"
SAPPHIRE = (
    "processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512bw avx512_bf16 avx512_fp16 amx_tile "
    "amx_bf16\n"
)
ARROW_LAKE = "processor\t: 0\nflags\t\t: fpu avx2 avx_vnni avx_ne_convert\n"


@pytest.mark.parametrize(
    "cpuinfo, on, want, words",
    [
        (ZEN5, True, False, "AVX512_FP16, AMX_FP16 or AVX_NE_CONVERT, and this one has none"),
        (SAPPHIRE, True, True, "this CPU has AVX512_FP16"),
        (ARROW_LAKE, True, True, "this CPU has AVX_NE_CONVERT"),
        (SAPPHIRE, False, False, "oneDNN is off"),
        (CPUINFO_AVX2, True, False, "this one has none"),
        # AVX512_FP16 counts only with AVX512BW, as in TensorFlow's check
        ("processor\t: 0\nflags\t\t: avx512f avx512_fp16\n", True, False, "this one has none"),
    ],
)
def test_float16_kernels_follows_tensorflows_check(cpuinfo, on, want, words):
    got, why = onednn.float16_kernels(cpuinfo, on)
    assert got is want and words in why


@pytest.mark.parametrize(
    "cpuinfo, on, isa, want, words",
    [
        (ZEN5, True, "", False, "AVX512_BF16 but no AMX"),
        (CPUINFO_AVX2, True, "", False, "this CPU has no AMX"),
        (SAPPHIRE, True, "", True, "its AMX kernels can compute float32 in bfloat16"),
        (SAPPHIRE, True, "AVX512_CORE_BF16", False, "forbids oneDNN this CPU's AMX"),
        (SAPPHIRE, True, "AVX512_CORE_AMX", True, "AMX"),
        (SAPPHIRE, False, "", False, "oneDNN is off"),
    ],
)
def test_fpmath_bf16_needs_amx_onednn_and_no_cap(cpuinfo, on, isa, want, words, monkeypatch):
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)  # "" reads this process's own cap
    got, why = onednn.fpmath_bf16(cpuinfo, on, isa=isa)
    assert got is want and words in why


def test_kernel_summary_says_why_float16_ran_on_tensorflows_kernels():
    empty = onednn.kernels(VERBOSE).iloc[:0].set_index(["pass", "implementation", "dtype"])
    line = onednn.kernel_summary({"mixed_float16": empty["total ms"]}, cpuinfo=ZEN5)
    assert line == (
        "mixed_float16: oneDNN ran no convolution (TensorFlow's own kernels did: TensorFlow hands "
        "float16 to oneDNN only on CPUs with AVX512_FP16, AMX_FP16 or AVX_NE_CONVERT, and this "
        "one has none)"
    )
    fp16_cpu = onednn.kernel_summary({"mixed_float16": empty["total ms"]}, cpuinfo=SAPPHIRE)
    assert fp16_cpu.endswith(
        "(TensorFlow's own kernels did: oneDNN is off or capped, TensorFlow does not hand this "
        "type to oneDNN on this CPU, or a GPU ran it)"
    )
    bf16 = onednn.kernel_summary({"mixed_bfloat16": empty["total ms"]}, cpuinfo=ZEN5)
    assert bf16.endswith(
        "(TensorFlow's own kernels did: oneDNN is off or capped, TensorFlow does not hand this "
        "type to oneDNN on this CPU, or a GPU ran it)"
    )
    with pytest.raises(checks.BadType):
        onednn.fpmath_bf16(ZEN5, True, isa=3)


def test_isa_summary_reads_each_limit_against_its_expectation(monkeypatch):
    from types import SimpleNamespace

    from helpers import timing

    monkeypatch.setattr(env, "cpu_flags", lambda cpuinfo=None: {"avx512_bf16", "amx_bf16"})
    monkeypatch.setattr(env, "onednn_enabled", lambda: True)
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    seconds = {
        ("", "float32"): 3.0,
        ("", "mixed_bfloat16"): 1.0,
        ("AVX512_CORE", "float32"): 3.0,
        ("AVX512_CORE", "mixed_bfloat16"): 9.0,
    }
    timings = {pair: timing.Timing(" ".join(pair), (t, t, t)) for pair, t in seconds.items()}
    lines = precision.isa_summary(SimpleNamespace(attrs={"timings": timings})).splitlines()
    assert lines[0].startswith(
        "ONEDNN_MAX_CPU_ISA=(all the CPU has): mixed_bfloat16 is 3.00x faster than float32"
    )
    assert lines[0].endswith("; as expected.")
    assert lines[1].startswith(
        "ONEDNN_MAX_CPU_ISA=AVX512_CORE: mixed_bfloat16 is 3.00x slower than float32"
    )
    assert "forbids oneDNN" in lines[1] and lines[1].endswith("; as expected.")


def test_bf16_kernels_reads_a_childs_cap_and_refuses_a_non_string(monkeypatch):
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    assert env.bf16_kernels(CPUINFO_BF16, True, isa="AVX512_CORE")[0] is False
    assert env.bf16_kernels(CPUINFO_BF16, True, isa="")[0] is True
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    assert (
        env.bf16_kernels(CPUINFO_BF16, True, isa="")[0] is False
    )  # the child inherits this process's cap
    with pytest.raises(TypeError, match="isa must be"):
        env.bf16_kernels(CPUINFO_BF16, True, isa=3)


# The exercise checks (check_float32_output, check_scaled_step) are tried in tests/test_graders.py.


def test_fit_variants_train_each_policy_and_setting():
    variants = precision.fit_variants(
        ("float32", "mixed_bfloat16"), (False, True), batch=4, steps=2, size=8
    )
    assert list(variants) == ["float32", "float32 + XLA", "mixed_bfloat16", "mixed_bfloat16 + XLA"]
    for fit in variants.values():
        history = fit()
        assert len(history.history["loss"]) == 1
    assert precision.fit_items(batch=4, steps=2) == 8
    with pytest.raises(ValueError, match="policies must be among"):
        precision.fit_variants(("float64",))
    with pytest.raises(ValueError, match="jit_compile must be"):
        precision.fit_variants(jit_compile=("auto",))


def test_spe_variants_and_registered_benchmarks():
    variants = precision.spe_variants((1, 4), steps=8)
    assert list(variants) == ["steps_per_execution=1", "steps_per_execution=4"]
    assert all(len(fit().history["loss"]) == 1 for fit in variants.values())
    ids = {c.id: c for c in precision.BENCHMARKS}
    assert set(ids) == {
        "train_in_mixed_precision.float32_vs_bfloat16",
        "train_in_mixed_precision.steps_per_execution",
    }
    table = precision.bench_precision(batch=4, steps=1, size=8, repeats=1)
    assert set(table.index) == {"float32", "mixed_bfloat16"}
    # The note is this machine's reason, whichever it is: a CPU without bfloat16 instructions,
    # oneDNN off, an ONEDNN_MAX_CPU_ISA cap below them (a run playing an AVX-512 server without
    # AVX512_BF16), or bfloat16 in hardware.
    assert table.attrs["note"] == env.bf16_kernels()[1]


def test_sweep_summary_names_the_batches_tied_with_the_best():
    import pandas as pd

    table = pd.DataFrame(
        {"images/s": [500, 780, 790, 793], "ms per batch": [16.0, 164.0, 162.0, 322.8]},
        index=pd.Index([8, 64, 128, 256], name="batch"),
    )
    assert precision.sweep_summary(table) == (
        "most images/s at batch 256 (793; batches 64 and 128 within 3% of it, a tie at this few "
        "repeats); batch 256 took 20.2x as long per batch as batch 8, for 32x the images"
    )
    alone = table.assign(**{"images/s": [500, 600, 700, 793]})
    assert "tie" not in precision.sweep_summary(alone)


def test_batch_sweep_table_figure_and_summary():
    table = precision.batch_sweep((2, 4), "float32", images=8, size=8, repeats=1)
    assert (
        list(table.index) == [2, 4]
        and (table["images/s"] > 0).all()
        and (table["ms per batch"] > 0).all()
    )
    assert precision.sweep_summary(table).startswith("most images/s at batch")
    axes = precision.sweep_figure(table, "t").axes
    assert len(axes) == 2 and all(ax.get_ylim()[0] == 0 for ax in axes)  # from zero
    with pytest.raises(ValueError, match="at most images"):
        precision.batch_sweep((16,), images=8)


def test_child_runs_in_a_fresh_process_and_reports_kernels():
    row, stdout = precision.run_child("float32", verbose=True, batch=2, size=8, steps=1, repeats=1)
    assert row["policy"] == "float32" and row["images"] == 2 and len(row["seconds"]) == 1
    primitives = set(onednn.kernels(stdout)["primitive"])
    # The child inherits this environment, so oneDNN is on or off there as here. Where it is on it
    # runs the convolutions and says so; where it is off (AVX2-only CPUs, TF_ENABLE_ONEDNN_OPTS=0)
    # TensorFlow's own Conv2D kernel runs and oneDNN's log holds at most its matmuls (gemm_api).
    assert ("convolution" in primitives) == env.onednn_enabled(), (env.onednn_status(), primitives)
    table = precision.isa_table(("float32",), ("",), rounds=1, batch=2, size=8, steps=1, repeats=1)
    assert table.loc[("(all the CPU has)", "float32"), "speed-up vs float32"] == "1.00x"
    with pytest.raises(ValueError, match="isa must be one of"):
        precision.run_child("float32", isa="SSE9")
    with pytest.raises(ValueError, match="policy must be one of"):
        precision.run_child("float64")


def _idiom_mixed_policy():
    """The ``mixed_policy`` function of notebook 12's Summary idiom, alone (no model is built)."""
    path = Path(__file__).resolve().parents[3] / "notebooks" / "12_train_in_mixed_precision.ipynb"
    code = [source(c) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    tree = ast.parse(code[-1])
    (func,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "mixed_policy"]
    config = types.SimpleNamespace(list_physical_devices=lambda kind: [])  # no GPU
    scope = {"os": os, "tf": types.SimpleNamespace(config=config)}
    exec(compile(ast.Module([func], []), str(path), "exec"), scope)
    return scope["mixed_policy"]


@pytest.mark.parametrize(
    "cpuinfo",
    [
        CPUINFO_BF16,
        CPUINFO_AVX2,
        CPUINFO_BF16.replace(" amx_bf16", ""),  # AVX512_BF16 alone
        CPUINFO_BF16.replace(" avx512_bf16", ""),  # AMX alone
        "processor\t: 0\nFeatures\t: fp asimd atomics i8mm bf16 sve\n",  # ARM with BF16
    ],
)
@pytest.mark.parametrize("onednn_opts", [None, "0", "1", "false", "True"])
@pytest.mark.parametrize("isa", ["", "AVX2", "AVX512_CORE", "AVX512_CORE_BF16", "avx512_core_amx"])
def test_the_idioms_policy_agrees_with_the_notebooks_rule(
    monkeypatch, tmp_path, cpuinfo, onednn_opts, isa
):
    """The copied idiom picks mixed_bfloat16 exactly where env.bf16_kernels says bfloat16 runs in
    hardware (oneDNN on unless TF_ENABLE_ONEDNN_OPTS turns it off: TensorFlow's default on CPUs
    with these instructions), and float32 elsewhere."""
    mixed_policy = _idiom_mixed_policy()
    if onednn_opts is None:
        monkeypatch.delenv("TF_ENABLE_ONEDNN_OPTS", raising=False)
    else:
        monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", onednn_opts)
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", isa)
    (tmp_path / "cpuinfo").write_text(cpuinfo)
    onednn_on = onednn_opts is None or onednn_opts.lower() in ("1", "true")
    fast, _ = env.bf16_kernels(cpuinfo, onednn_on)
    want = "mixed_bfloat16" if fast else "float32"
    assert mixed_policy(str(tmp_path / "cpuinfo")) == want
    assert mixed_policy(str(tmp_path / "missing")) == "float32"  # macOS, Windows: cannot tell
