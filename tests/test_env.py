"""Unit tests for helpers.env. Logical-device tests run in fresh interpreters: TensorFlow's
device layout is fixed per process once it initialises."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from helpers import env

CPUINFO = """\
processor\t: 0
model name\t: Example CPU @ 2.00GHz
flags\t\t: fpu sse avx avx2 fma avx512f
processor\t: 1
model name\t: Example CPU @ 2.00GHz
flags\t\t: fpu sse avx avx2 fma avx512f
"""


def test_scale_default_small_and_bad(monkeypatch):
    monkeypatch.delenv(env.SCALE_VAR, raising=False)
    assert env.scale() == "full" and env.sized(100, 5) == 100
    monkeypatch.setenv(env.SCALE_VAR, " Small ")
    assert env.scale() == "small" and env.sized(100, 5) == 5
    monkeypatch.setenv(env.SCALE_VAR, "huge")
    with pytest.raises(ValueError, match="WORKBOOK_SCALE='huge' is not a scale"):
        env.scale()


def test_cpu_info_parses_model_and_flags():
    info = env.cpu_info(CPUINFO)
    assert info["model"] == "Example CPU @ 2.00GHz"
    assert info["features"]["avx2"] and info["features"]["avx512f"]
    assert not info["features"]["avx512_vnni"]
    assert info["logical_cores"] >= 1


def test_cpu_info_without_proc_file():
    info = env.cpu_info("")
    assert set(info["features"].values()) == {False}


@pytest.mark.parametrize(
    "version,ok", [((3, 9), False), ((3, 10), True), ((3, 13), True), ((3, 14), False)]
)
def test_python_ok(version, ok):
    assert env.python_ok(version) is ok


def test_report_has_every_row():
    table = env.report()
    for item in ("TensorFlow", "oneDNN optimizations", "CPU features", "Logical devices"):
        assert item in table.index
    assert table.loc["Physical devices", "value"].startswith("CPU:0")


def run_fresh(code: str) -> subprocess.CompletedProcess[str]:
    """Run code in a fresh interpreter (fresh TensorFlow) and return its result."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**__import__("os").environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )


def test_logical_devices_idempotent_then_locked():
    result = run_fresh("""
        from helpers import env
        first = env.setup_logical_devices(3, "CPU")
        again = env.setup_logical_devices(3, "CPU")
        print([d.name.rsplit(':', 2)[-2:] for d in again], len(first))
        try:
            env.setup_logical_devices(2, "CPU")
        except RuntimeError as exc:
            print("ERR", exc)
    """)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[0] == "[['CPU', '0'], ['CPU', '1'], ['CPU', '2']] 3"
    assert lines[1].startswith("ERR TensorFlow has already started with 3 logical CPU device(s)")
    assert "Restart the kernel" in lines[1]


def test_logical_devices_one_after_init_is_harmless():
    result = run_fresh("""
        import tensorflow as tf
        from helpers import env
        tf.constant(1.0) + 1  # initialises TensorFlow with its default single CPU
        print(len(env.setup_logical_devices(1)))
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "1"


@pytest.mark.parametrize(
    "bad,error", [(0, ValueError), (-2, ValueError), (2.5, TypeError), (True, TypeError)]
)
def test_logical_devices_bad_n(bad, error):
    with pytest.raises(error, match="n must be"):
        env.setup_logical_devices(bad)


def test_logical_devices_bad_device_type():
    with pytest.raises(ValueError, match="unknown device type 'TPU'"):
        env.setup_logical_devices(2, "tpu")


def test_logical_devices_no_gpu():
    if env.has_gpu():
        pytest.skip("this machine has a GPU")
    with pytest.raises(ValueError, match="no physical GPU"):
        env.setup_logical_devices(2, "GPU")


def test_machine_info_is_json_ready():
    import json

    info = env.machine_info()
    json.dumps(info)
    assert info["tensorflow"].startswith("2.21")
    assert info["logical_cores"] >= 1


AVX2_ONLY = "model name\t: AMD EPYC\nflags\t\t: fpu sse2 avx avx2 fma\n"
AMX = "model name\t: Intel Xeon\nflags\t\t: avx avx2 fma avx512f avx512_vnni avx512_bf16 amx_tile\n"


@pytest.mark.parametrize(
    ("opts", "cpuinfo", "isa", "words"),
    [
        ("", AVX2_ONLY, "", "CPU without AVX512_VNNI, AVX_VNNI, AVX512_BF16 or AMX"),
        (
            "",
            AVX2_ONLY.replace("fma", "fma avx_vnni"),
            "",
            "CPU with AVX_VNNI",
        ),  # a 12th-gen Intel laptop
        ("", AMX, "", "CPU with AVX512_VNNI, AVX512_BF16, AMX_TILE"),
        ("0", AMX, "", "TF_ENABLE_ONEDNN_OPTS=0 is set"),
        ("1", AVX2_ONLY, "AVX2", "TF_ENABLE_ONEDNN_OPTS=1 is set"),
    ],
)
def test_onednn_status_names_what_decided_it(monkeypatch, opts, cpuinfo, isa, words):
    monkeypatch.setattr(env.platform, "machine", lambda: "x86_64")
    for name, value in (("TF_ENABLE_ONEDNN_OPTS", opts), ("ONEDNN_MAX_CPU_ISA", isa)):
        if value:
            monkeypatch.setenv(name, value)
        else:
            monkeypatch.delenv(name, raising=False)
    for on in (True, False):
        monkeypatch.setattr(env, "onednn_enabled", lambda on=on: on)
        line = env.onednn_status(cpuinfo)
        assert line.startswith(f"oneDNN is {'on' if on else 'off'} here (") and words in line
        assert ("ONEDNN_MAX_CPU_ISA=AVX2" in line) == (on and bool(isa))
