"""The line `make test` prints about the run's CPU and oneDNN variables
(``timing_stats.run_setting``), which tells the rows of docs/test-times.md apart."""

from __future__ import annotations

from helpers.timing_stats import run_setting

AVX2_LAPTOP = "model name\t: Some Laptop CPU\nflags\t\t: fpu sse2 avx avx2 fma\n"


def test_the_run_line_names_the_cpu_its_flags_and_the_onednn_variables():
    line = run_setting(AVX2_LAPTOP, {"TF_ENABLE_ONEDNN_OPTS": "0", "ONEDNN_MAX_CPU_ISA": "AVX2"})
    assert line.startswith("this run: Some Laptop CPU, ")
    assert "flags avx avx2 fma;" in line
    assert line.endswith("TF_ENABLE_ONEDNN_OPTS=0, ONEDNN_MAX_CPU_ISA=AVX2")


def test_the_run_line_says_when_the_variables_are_unset_and_no_flag_is_known():
    line = run_setting("", {})
    assert "flags none of avx avx2" in line
    assert line.endswith("TF_ENABLE_ONEDNN_OPTS unset, ONEDNN_MAX_CPU_ISA unset")


def test_the_run_line_says_how_many_cpus_a_pinned_run_may_use(monkeypatch):
    from helpers import env

    real = env.cpu_info
    monkeypatch.setattr(env, "cpu_info", lambda text=None: {**real(text), "logical_cores": 4})
    monkeypatch.setattr(env, "usable_cores", lambda: 1)  # as under `taskset -c 0`
    assert "Some Laptop CPU, 4 logical CPUs (1 usable by this run), flags" in run_setting(
        AVX2_LAPTOP, {}
    )
    monkeypatch.setattr(env, "usable_cores", lambda: 4)
    assert "Some Laptop CPU, 4 logical CPUs, flags" in run_setting(AVX2_LAPTOP, {})
