"""Unit tests for helpers.topics.tune_the_cpu.cputune: settings, the child workloads, sweeps,
feature
detection."""

from __future__ import annotations

import os

import pytest

from helpers import env
from helpers.topics.tune_the_cpu import cpu_report, cputune


def test_setting_env_and_label(tmp_path):
    lib = tmp_path / "libtcmalloc_minimal.so.4"
    lib.write_bytes(b"\x7fELF")  # a shared library's first bytes: the setting checks them
    s = cputune.Setting(intra=1, inter=2, onednn=False, omp_threads=1, allocator=str(lib))
    unset = {"KMP_AFFINITY": None, "KMP_BLOCKTIME": None, "ONEDNN_DEFAULT_FPMATH_MODE": None}
    assert s.env() == {
        **unset,
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "TF_ENABLE_ONEDNN_OPTS": "0",
        "OMP_NUM_THREADS": "1",
        "LD_PRELOAD": str(lib),
    }
    assert s.describe() == "intra 1, inter 2, oneDNN off, OMP 1, tcmalloc_minimal"
    baseline = cputune.Setting().env()  # a learner's exported values do not reach a baseline
    assert baseline == {
        **unset,
        "OMP_NUM_THREADS": None,
        "LD_PRELOAD": None,
        "TF_CPP_MIN_LOG_LEVEL": "2",
    }


def test_a_child_does_not_inherit_what_a_baseline_leaves_unset(monkeypatch):
    import sys

    from helpers import procs

    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    monkeypatch.setenv("ONEDNN_DEFAULT_FPMATH_MODE", "BF16")
    names = "'OMP_NUM_THREADS', 'ONEDNN_DEFAULT_FPMATH_MODE'"
    show = f"import os; print(*(os.environ.get(n) for n in ({names})))"
    out = procs.run([sys.executable, "-c", show], env=cputune.Setting().env()).stdout.split()
    assert out == ["None", "None"]
    out = procs.run(
        [sys.executable, "-c", show], env=cputune.Setting(omp_threads=2).env()
    ).stdout.split()
    assert out == ["2", "None"]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"intra": -1}, "intra must be"),
        ({"inter": 1.5}, "inter must be"),
        ({"intra": True}, "intra must be"),
        ({"omp_threads": 0}, "omp_threads"),
        ({"allocator": "/nonexistent/libtcmalloc.so"}, "is not a file"),
    ],
)
def test_bad_settings(kwargs, match):
    with pytest.raises(ValueError, match=match):
        cputune.Setting(**kwargs)


def test_threads_reach_the_child_and_rows_come_back():
    rows = cputune.run_setting(
        cputune.Setting(intra=1, inter=1, onednn=False), ["matmul"], repeats=2, small=True
    )
    assert len(rows) == 1 and rows[0]["workload"] == "matmul"
    assert len(rows[0]["seconds"]) == 2 and all(s > 0 for s in rows[0]["seconds"])
    assert rows[0]["onednn"] is False and rows[0]["allocator"] == "default"
    assert (rows[0]["intra"], rows[0]["inter"]) == (1, 1) and rows[0]["os_threads"] > 1


def fake_children(monkeypatch, seconds=None, errors=None):
    """Replace the fresh process of each setting by canned rows (run_setting and the child program
    are tested above and run for real in notebook 10); record the order settings ran in."""
    ran = []

    def run_setting(setting, workloads, repeats, small, timeout):
        label = setting.describe()
        ran.append(label)
        if label in (errors or {}):
            return [
                {"workload": w, "onednn": setting.onednn, "error": errors[label]} for w in workloads
            ]
        base = (seconds or {}).get(label, 0.01)
        return [
            {
                "workload": w,
                "onednn": setting.onednn,
                "seconds": [base * (1 + k / 100) for k in range(repeats)],
            }
            for w in workloads
        ]

    monkeypatch.setattr(cputune, "run_setting", run_setting)
    return ran


def test_sweep_counts_one_value_per_process_and_builds_the_comparison_table(monkeypatch):
    settings = {
        "1 thread": cputune.Setting(intra=1, inter=1),
        "2 threads": cputune.Setting(intra=2, inter=2),
    }
    ran = fake_children(monkeypatch, seconds={"intra 1, inter 1": 0.02, "intra 2, inter 2": 0.01})
    calls = []
    table = cputune.comparison(
        settings,
        "matmul",
        repeats=2,
        rounds=2,
        small=True,
        on_progress=lambda d, t: calls.append((d, t)),
    )
    assert list(table.index) == ["1 thread", "2 threads"] and table.attrs["baseline"] == "1 thread"
    assert list(table["repeats"]) == [2, 2]  # 2 rounds: two processes, not 2 x 2 repeats pooled
    assert table.attrs["timings"]["1 thread"].seconds == pytest.approx((0.0201, 0.0201))
    assert calls == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert ran == [
        "intra 1, inter 1",
        "intra 2, inter 2",
        "intra 2, inter 2",
        "intra 1, inter 1",
    ]  # rotated
    assert table.loc["2 threads", "speedup"] == pytest.approx(2.0, rel=0.05)


def test_comparison_raises_when_a_setting_fails(monkeypatch):
    settings = {"on": cputune.Setting(onednn=True), "off": cputune.Setting(onednn=False)}
    fake_children(
        monkeypatch,
        errors={
            "intra default, inter default, oneDNN off": (
                "UnimplementedError: The Conv2D op currently only supports"
            )
        },
    )
    with pytest.raises(
        RuntimeError,
        match="off, conv2d_NCHW: UnimplementedError: The Conv2D op currently only supports",
    ):
        cputune.comparison(settings, "conv2d_NCHW", repeats=1, rounds=1, small=True)


def test_summary_and_figure():
    import pandas as pd

    nan = float("nan")
    table = pd.DataFrame(
        [
            {
                "setting": "a",
                "workload": "w",
                "median_ms": 10.0,
                "q1_ms": 9.0,
                "q3_ms": 11.0,
                "repeats": 6,
                "error": "",
            },
            {
                "setting": "b",
                "workload": "w",
                "median_ms": 5.0,
                "q1_ms": 4.0,
                "q3_ms": 6.0,
                "repeats": 6,
                "error": "",
            },
            {
                "setting": "c",
                "workload": "w",
                "median_ms": 9.9,
                "q1_ms": 9.0,
                "q3_ms": 10.5,
                "repeats": 6,
                "error": "",
            },
            {
                "setting": "a",
                "workload": "v",
                "median_ms": nan,
                "q1_ms": nan,
                "q3_ms": nan,
                "repeats": 0,
                "error": "UnimplementedError: nope",
            },
        ]
    )
    # Each setting against the first, with its spread; a lead inside the spread is not a win.
    assert cpu_report.sweep_summary(table).splitlines() == [
        "w: b is 2.00x faster than a (quartile ratios 1.50-2.75x, 6 runs each).",
        "w: c vs a: no clear difference (1.01x; quartile ratios 0.86-1.22x, 6 runs each); "
        "the runs overlap, so rerun with more runs before drawing a conclusion.",
        "v: every setting failed",
    ]
    # A pair compares two settings directly (twice the cores against all cores); a pair naming
    # a setting that did not run adds nothing.
    assert cpu_report.sweep_summary(table, pairs=[("c", "b"), ("c", "zz")]).splitlines()[2] == (
        "w: c is 1.98x slower than b (quartile ratios 1.50-2.62x, 6 runs each)."
    )
    # With an expectation, each line says whether it held (the OpenMP sweep expects no change).
    held = cpu_report.sweep_summary(table, expect="no clear difference", why="nothing reads them")
    assert (
        "Expected here: no clear difference (nothing reads them); not what this machine"
        in (held.splitlines()[0])
    )
    assert held.splitlines()[1].endswith("(nothing reads them); as expected.")
    fig = cpu_report.sweep_figure(table, "title")
    assert [ax.get_title() for ax in fig.axes] == ["w", "v"]


def test_bad_sweeps():
    with pytest.raises(ValueError, match="workloads must be among"):
        cputune.sweep({"a": cputune.Setting()}, ["resnet"])
    with pytest.raises(ValueError, match="at least one Setting"):
        cputune.sweep({}, ["matmul"])
    with pytest.raises(ValueError, match="rounds"):
        cputune.sweep({"a": cputune.Setting()}, ["matmul"], rounds=0)
    with pytest.raises(ValueError, match="repeats"):
        cputune.run_setting(cputune.Setting(), ["matmul"], repeats=0)


def test_wheel_line_parsing():
    line = (
        "I0000 cpu_feature_guard.cc:227] This TensorFlow binary is optimized ...\n"
        "To enable the following instructions: AVX2 AVX512F FMA, in other operations, "
        "rebuild TensorFlow"
    )
    assert cpu_report.wheel_missing_instructions(line) == ["AVX2", "AVX512F", "FMA"]
    assert cpu_report.wheel_missing_instructions("nothing here") == []
    table = cpu_report.features_table(
        {"avx": True, "avx2": True, "fma": True, "avx512f": False}, ["AVX2", "FMA"]
    )
    assert table.loc["AVX", "the wheel uses it"] == "everywhere"
    assert table.loc["AVX2", "the wheel uses it"] == "only in oneDNN kernels"
    assert (
        table.loc["AVX512F", "this CPU"] == "no"
        and table.loc["AVX512F", "the wheel uses it"] == "-"
    )


def test_features_table_shows_what_turns_onednn_on_on_a_laptop():
    # AVX_VNNI without AVX-512 (Intel's laptops from the 12th generation) turns oneDNN on by
    # default, as env.onednn_status says; the table lists it, and AMX's bfloat16 and int8 flags
    # beside its tiles.
    from helpers import env

    laptop = {"avx": True, "avx2": True, "fma": True, "avx_vnni": True}
    table = cpu_report.features_table(laptop, ["AVX2", "FMA", "AVX_VNNI"])
    assert table.loc["AVX_VNNI", "this CPU"] == "yes"
    assert table.loc["AVX_VNNI", "the wheel uses it"] == "only in oneDNN kernels"
    assert table.loc["AMX_BF16", "this CPU"] == "no"
    assert set(env.ONEDNN_DEFAULT_FEATURES) <= set(env.CPU_FEATURES)


def test_wheel_report_reads_a_real_start():
    missing = cpu_report.wheel_report()
    assert isinstance(missing, list) and all(m.isupper() for m in missing)


def test_find_allocators(tmp_path):
    (tmp_path / "libjemalloc.so.2").write_bytes(b"")
    found = cpu_report.find_allocators([str(tmp_path)])
    assert found.get("jemalloc") == str(tmp_path / "libjemalloc.so.2")
    assert set(found) <= set(cpu_report.ALLOCATORS)


def test_preloaded_allocator_is_seen_by_the_child():
    found = cpu_report.find_allocators()
    if not found:
        message = (
            "no tcmalloc or jemalloc installed here "
            "(make test installs them as root; apt-get install libtcmalloc-minimal4)"
        )
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(message)
        pytest.skip(message)
    name, path = next(iter(found.items()))
    rows = cputune.run_setting(cputune.Setting(allocator=path), ["matmul"], repeats=1, small=True)
    assert rows[0]["allocator"] == name


def test_memory_map_readers():
    maps = "7f00-7f01 r-xp 0 08:01 1 /usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4.5.9\n"
    assert cpu_report._loaded_allocator(maps) == "tcmalloc"
    assert cpu_report._loaded_allocator("/usr/lib/libc.so.6\n") == "default"
    assert cpu_report._loaded_allocator("") == "unknown"
    assert cpu_report._openmp_runtime("/usr/lib/x86_64-linux-gnu/libgomp.so.1\n") == "libgomp"
    assert cpu_report._openmp_runtime("/usr/lib/libc.so.6\n") == "none"


def test_thread_sweep_times_the_physical_core_count(monkeypatch):
    from helpers.topics.tune_the_cpu import cputune_settings

    info = {**env.cpu_info(), "physical_cores": 6}  # a 6-core, 12-thread laptop
    monkeypatch.setattr(cputune_settings.env, "usable_cores", lambda: 12)
    monkeypatch.setattr(cputune_settings.env, "cpu_info", lambda: info)
    assert [int(name.split()[1].rstrip(",")) for name in cputune.thread_settings()] == [
        1,
        2,
        4,
        6,
        8,
        12,
    ]
    info["physical_cores"] = 0  # psutil could not tell
    assert [int(name.split()[1].rstrip(",")) for name in cputune.thread_settings()] == [
        1,
        2,
        4,
        8,
        12,
    ]


def test_named_sweeps():
    cores = env.usable_cores()
    threads = cputune.thread_settings()
    assert f"intra {cores}, inter 1" in threads and threads["intra 1, inter 1"] == cputune.Setting(
        intra=1, inter=1
    )
    assert len(threads) <= cores.bit_length() + 2  # powers of two, all CPUs, the physical cores
    assert list(cputune.thread_settings(3, inter=2)) == [
        "intra 1, inter 2",
        "intra 2, inter 2",
        "intra 3, inter 2",
    ]
    assert list(cputune.thread_settings(64)) == [
        f"intra {n}, inter 1" for n in (1, 2, 4, 8, 16, 32, 64)
    ]
    assert list(cputune.thread_settings(6))[-2:] == ["intra 4, inter 1", "intra 6, inter 1"]
    for kind in cputune.SWEEPS:
        assert cputune.sweep_settings(kind)
    kmp = list(cputune.sweep_settings("OpenMP and KMP variables").values())[-1]
    assert kmp.env()["KMP_BLOCKTIME"] == "0" and "KMP_BLOCKTIME=0" in kmp.describe()
    assert "glibc malloc" in cputune.sweep_settings("allocators")
    with pytest.raises(ValueError, match="kind must be one of"):
        cputune.sweep_settings("hugepages")
    with pytest.raises(ValueError, match="max_threads"):
        cputune.thread_settings(-2)
    with pytest.raises(ValueError, match="extra_env"):
        cputune.Setting(extra_env={"KMP_BLOCKTIME": 0})


def test_run_sweep_on_the_pipeline_workload():
    table = cputune.run_sweep("oneDNN", "jpeg_pipeline", repeats=1, rounds=1, small=True)
    assert list(table["setting"]) == ["oneDNN on", "oneDNN off"] and (table["error"] == "").all()
    assert list(table["onednn"]) == [True, False] and set(table["openmp"]) <= {
        "none",
        "libgomp",
        "libiomp",
    }


def test_check_fastest():
    import pandas as pd

    table = pd.DataFrame(
        [
            {
                "setting": "a",
                "workload": "w",
                "median_ms": 10.0,
                "q1_ms": 9.5,
                "q3_ms": 10.5,
                "error": "",
            },
            {
                "setting": "b",
                "workload": "w",
                "median_ms": 5.0,
                "q1_ms": 4.8,
                "q3_ms": 5.2,
                "error": "",
            },
            {
                "setting": "c",
                "workload": "w",
                "median_ms": 5.3,
                "q1_ms": 5.1,
                "q3_ms": 5.6,
                "error": "",
            },
        ]
    )
    assert cputune.check_fastest(table, "w", "b")
    assert "a tie" in repr(cputune.check_fastest(table, "w", "c"))
    assert "b ran faster" in repr(cputune.check_fastest(table, "w", "a"))
    assert "not one of the settings" in repr(cputune.check_fastest(table, "w", "..."))
    assert "no result for workload" in repr(cputune.check_fastest(table, "v", "a"))
    assert "pass the table" in repr(cputune.check_fastest(None, "w", "a"))


def test_fpmath_summary_says_how_far_each_result_moved():
    import numpy as np

    default = {"conv": np.array([1.0, -2.0, 4.0]), "matmul": np.array([3.0, 1.0])}
    bf16 = {"conv": np.array([1.0, -2.0, 4.01]), "matmul": np.array([3.0, 1.0])}
    text = cpu_report.fpmath_summary(default, bf16)
    assert "the conv's outputs moved by up to 2.5e-03 of their largest value;" in text
    assert "the matmul's outputs moved by up to 0.0e+00 of their largest value (unchanged" in text
    assert cpu_report.fpmath_summary(default, default).endswith(
        "Nothing moved: no kernel used bfloat16 here."
    )
    why = "this CPU has AVX512_BF16 but no AMX, and oneDNN computes ... only on its AMX kernels"
    assert cpu_report.fpmath_summary(default, default, why).endswith(
        f"Nothing moved: no kernel used bfloat16 here ({why})."
    )
    # Against the expectation (onednn.fpmath_bf16's), the line says so, both ways round.
    assert cpu_report.fpmath_summary(default, default, why, expected=False).endswith(
        f"Nothing moved: no kernel used bfloat16 here ({why})."
    )
    amx = "this CPU has AMX and oneDNN is on: its AMX kernels can compute float32 in bfloat16"
    assert cpu_report.fpmath_summary(default, default, amx, expected=True).endswith(
        f"Nothing moved, though bfloat16 was expected here ({amx})."
    )
    assert cpu_report.fpmath_summary(default, bf16, why, expected=False).endswith(
        f"Results moved; bfloat16 was not expected here ({why})."
    )
    assert "bfloat16 arithmetic is expected to move" in cpu_report.fpmath_summary(
        default, bf16, amx, expected=True
    )


def test_numa_summary_counts_the_nodes(tmp_path):
    assert "No NUMA information" in cpu_report.numa_summary(str(tmp_path / "missing"))
    (tmp_path / "node0").mkdir()
    assert "1 NUMA node" in cpu_report.numa_summary(str(tmp_path))
    (tmp_path / "node1").mkdir()
    assert "2 NUMA nodes (node0, node1)" in cpu_report.numa_summary(str(tmp_path))


def test_comparisons_run_every_workload_in_each_settings_child(monkeypatch):
    settings = {
        "1 thread": cputune.Setting(intra=1, inter=1),
        "2 threads": cputune.Setting(intra=2, inter=2),
    }
    ran = fake_children(monkeypatch, seconds={"intra 1, inter 1": 0.02, "intra 2, inter 2": 0.01})
    tables = cputune.comparisons(settings, ["matmul", "conv_step"], repeats=2, rounds=1, small=True)
    assert ran == [
        "intra 1, inter 1",
        "intra 2, inter 2",
    ]  # one child per setting, not per workload
    assert list(tables) == ["matmul", "conv_step"]
    assert all(
        t.attrs["baseline"] == "1 thread" and list(t["repeats"]) == [1, 1] for t in tables.values()
    )
    with pytest.raises(ValueError, match="workloads must be among"):
        cputune.comparisons(settings, ["matmul", "typo"], repeats=1, rounds=1)


def test_error_text_keeps_the_first_line_without_the_function_prefix():
    import tensorflow as tf

    from helpers.topics.tune_the_cpu import cpu_report

    error = tf.errors.UnimplementedError(
        None,
        None,
        "{{function_node __inference_conv_12}} The Conv2D op currently only supports NHWC.\n"
        "\t [[{{node Conv2D}}]]",
    )
    assert cpu_report.error_text(error) == (
        "UnimplementedError: The Conv2D op currently only supports NHWC."
    )
    assert cpu_report.error_text(ValueError("")) == "ValueError: "


def test_a_run_is_read_at_its_median_repeat_not_its_mean(monkeypatch):
    # One slow repeat inside a process must not move that process's value: the median, not the
    # mean (0.011 s against 0.174 s here).
    def run_setting(setting, workloads, repeats, small, timeout):
        return [{"workload": w, "onednn": None, "seconds": [0.010, 0.011, 0.5]} for w in workloads]

    monkeypatch.setattr(cputune, "run_setting", run_setting)
    table = cputune.sweep({"a": cputune.Setting()}, ["matmul"], repeats=3, rounds=2)
    assert table.attrs["samples"][("a", "matmul")] == [0.011, 0.011]
    assert table.loc[0, "median_ms"] == pytest.approx(11.0) and table.loc[0, "repeats"] == 2
