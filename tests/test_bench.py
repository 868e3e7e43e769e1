"""Unit tests for helpers.bench: the registry, selection, records and the command line."""

from __future__ import annotations

import json
import subprocess
import sys
import types

import pytest

from helpers import bench


def fake_variants(n: int = 1):
    return {"slow": lambda: sum(range(2000 * n)), "fast": lambda: n, "other": lambda: 0}


FAKE = bench.Comparison(
    id="fake.slow_vs_fast",
    title="fake",
    make_variants=fake_variants,
    baseline="slow",
    variant="fast",
    quick={"n": 1},
    full={"n": 3},
    repeats=3,
    min_time=0.0,
)


@pytest.fixture
def fake_module(monkeypatch):
    module = types.ModuleType("fake_topic")
    module.BENCHMARKS = [FAKE]
    monkeypatch.setitem(sys.modules, "fake_topic", module)
    monkeypatch.setattr(bench, "TOPIC_MODULES", ("fake_topic",))
    return module


def test_registry_holds_the_workbook_comparisons():
    ids = bench.registry()
    assert "look_inside_graphs.eager_vs_function" in ids
    for comparison in ids.values():
        assert comparison.baseline != comparison.variant


def test_duplicate_and_foreign_entries(fake_module):
    fake_module.BENCHMARKS = [FAKE, FAKE]
    with pytest.raises(ValueError, match="registered twice"):
        bench.registry()
    fake_module.BENCHMARKS = ["not a comparison"]
    with pytest.raises(TypeError, match="not a Comparison"):
        bench.registry()


def test_a_notebooks_ids_must_start_with_its_name(monkeypatch):
    """A comparison in helpers/topics/<slug>/ whose id names another notebook is refused."""
    module = types.ModuleType("helpers.topics.look_inside_graphs.fake")
    module.BENCHMARKS = [FAKE]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    with pytest.raises(ValueError, match="its ids start with 'look_inside_graphs.'"):
        bench.registry([module.__name__])
    module.BENCHMARKS = [
        bench.Comparison("look_inside_graphs.fake", "t", fake_variants, "slow", "fast")
    ]
    assert list(bench.registry([module.__name__])) == ["look_inside_graphs.fake"]


def test_the_modules_are_found_by_the_layout_rule(tmp_path):
    (tmp_path / "topics" / "add_things").mkdir(parents=True)
    (tmp_path / "topics" / "add_things" / "sums.py").write_text("BENCHMARKS = []\n")
    (tmp_path / "topics" / "add_things" / "quiet.py").write_text("X = 1\n")
    (tmp_path / "topics" / "a_first").mkdir()
    (tmp_path / "topics" / "a_first" / "m.py").write_text("BENCHMARKS = [\n]\n")
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "01_add_things.ipynb").write_text("{}")
    (tmp_path / "notebooks" / "02_a_first.ipynb").write_text("{}")
    found = bench.topic_modules(tmp_path / "topics", tmp_path / "notebooks")
    assert found == ("helpers.topics.add_things.sums", "helpers.topics.a_first.m")


@pytest.mark.parametrize("bad_id", ["nodot", "Upper.case", "a.b.c", ""])
def test_bad_ids(bad_id):
    with pytest.raises(ValueError, match="must look like 'topic.name'"):
        bench.Comparison(bad_id, "t", fake_variants, "slow", "fast")


def test_same_baseline_and_variant():
    with pytest.raises(ValueError, match="baseline and variant"):
        bench.Comparison("a.b", "t", fake_variants, "slow", "slow")


def test_select_unknown_id():
    with pytest.raises(ValueError, match=r"unknown comparison id\(s\) \['nope.x'\]"):
        bench.select({"a.b": FAKE}, ["nope.x"])
    assert bench.select({"a.b": FAKE}, None) == [FAKE]


def test_run_record_schema():
    record = FAKE.run(quick=True)
    assert set(record) == {
        "id",
        "baseline",
        "variant",
        "baseline_s",
        "variant_s",
        "speedup",
        "spread",
        "repeats",
        "params",
    }
    assert record["speedup"] == pytest.approx(record["baseline_s"] / record["variant_s"])
    assert record["spread"][0] <= record["speedup"] <= record["spread"][1]
    assert record["params"] == {"n": 1} and record["repeats"] == 3


def test_run_missing_variant():
    broken = bench.Comparison("a.b", "t", lambda: {"slow": lambda: 1}, "slow", "fast")
    with pytest.raises(ValueError, match=r"did not return \['fast'\]"):
        broken.run()


def test_main_list_and_run(fake_module, tmp_path, capsys):
    assert bench.main(["--list"]) == 0
    assert capsys.readouterr().out == "fake.slow_vs_fast\tfake\n"
    out = tmp_path / "results" / "bench.json"
    assert bench.main(["--only", "fake.slow_vs_fast", "--quick", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| fake.slow_vs_fast | slow | fast |" in printed
    result = json.loads(out.read_text())
    assert set(result) >= {"machine", "comparisons"}
    assert result["machine"]["tensorflow"].startswith("2.21")
    assert [c["id"] for c in result["comparisons"]] == ["fake.slow_vs_fast"]
    # When the run started and ended, and how loaded the machine was at each end (1, 5, 15 minutes).
    assert result["started"] <= result["ended"]
    assert all(
        len(result[k]) == 3 and min(result[k]) >= 0 for k in ("load_at_start", "load_at_end")
    )


def test_a_run_with_only_leaves_the_whole_runs_file_alone(
    fake_module, tmp_path, monkeypatch, capsys
):
    """A learner's full bench.json (what the room gathers) survives a later --only run."""
    whole, only = tmp_path / "bench.json", tmp_path / "bench-only.json"
    monkeypatch.setattr(bench, "DEFAULT_OUT", whole)
    monkeypatch.setattr(bench, "ONLY_OUT", only)
    whole.write_text('{"a whole run": true}')
    assert bench.main(["--only", "fake.slow_vs_fast", "--quick"]) == 0
    assert f"wrote {only}" in capsys.readouterr().out
    assert whole.read_text() == '{"a whole run": true}'
    assert [c["id"] for c in json.loads(only.read_text())["comparisons"]] == ["fake.slow_vs_fast"]
    assert bench.main(["--quick"]) == 0  # no --only: the whole run's file
    assert [c["id"] for c in json.loads(whole.read_text())["comparisons"]] == ["fake.slow_vs_fast"]


def test_main_unknown_id_exits_with_usage_error(fake_module, capsys):
    assert bench.main(["--only", "nope.x"]) == 2
    assert "unknown comparison id" in capsys.readouterr().err


def test_markdown_table():
    text = bench.markdown([FAKE.run(quick=True)])
    assert text.splitlines()[0].startswith("| id | baseline | variant |")
    assert text.count("\n") == 2


def test_command_line_runs_the_real_notebook_00_comparison(tmp_path):
    out = tmp_path / "bench.json"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "helpers.bench",
            "--quick",
            "--only",
            "look_inside_graphs.eager_vs_function",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    record = json.loads(out.read_text())["comparisons"][0]
    assert record["id"] == "look_inside_graphs.eager_vs_function"
    assert record["baseline_s"] > 0 and record["variant_s"] > 0


def _measured(small: bool = False):
    from helpers import timing

    table = timing.comparison_table(
        {"a": timing.Timing("a", (4.0, 4.0)), "b": timing.Timing("b", (1.0, 1.0))}, "a"
    )
    table.attrs["note"] = "b agrees with a on 99.0%"
    return table


def test_measured_comparison_with_unit_note_and_bound():
    comparison = bench.Comparison(
        id="fake.sizes",
        title="sizes",
        measure=_measured,
        baseline="a",
        variant="b",
        unit="bytes",
        bound=lambda: 3.0,
        deterministic=True,
    )
    record = comparison.run()
    assert record["speedup"] == 4.0 and record["unit"] == "bytes" and record["bound"] == 3.0
    assert record["deterministic"] is True
    assert record["note"] == "b agrees with a on 99.0%"
    row = bench.markdown([record]).splitlines()[2]
    assert "| 4 bytes | 1 bytes |" in row
    assert "b agrees with a on 99.0%; at most 3x (ABOVE THE BOUND: check the measurement)" in row


def test_exactly_one_way_to_measure():
    with pytest.raises(ValueError, match="exactly one of make_variants and measure"):
        bench.Comparison(id="fake.none", title="t", baseline="a", variant="b")
    with pytest.raises(ValueError, match="exactly one of make_variants and measure"):
        bench.Comparison(
            id="fake.both",
            title="t",
            make_variants=fake_variants,
            measure=_measured,
            baseline="a",
            variant="b",
        )
    with pytest.raises(ValueError, match="did not return"):
        bench.Comparison(
            id="fake.wrong", title="t", measure=_measured, baseline="a", variant="c"
        ).run()


def test_comparison_resolves_references_and_refuses_bad_ones():
    from helpers.comparison import resolve

    assert resolve(fake_variants) is fake_variants
    assert resolve("helpers.timing:format_seconds").__name__ == "format_seconds"
    with pytest.raises(ValueError, match="has no function 'nope'"):
        resolve("helpers.timing:nope")
    with pytest.raises(ValueError, match="must look like 'package.module:function'"):
        bench.Comparison(
            id="fake.bad_ref",
            title="x",
            make_variants="helpers.timing.format_seconds",
            baseline="a",
            variant="b",
        )


def test_a_timing_needs_three_samples_and_its_speedup_must_be_the_ratio_of_the_medians():
    timed = dict(id="fake.timed", title="t", measure=_measured, baseline="a", variant="b")
    with pytest.raises(
        ValueError, match=r"\{'a': 2, 'b': 2\} timed samples; a timing needs at least 3"
    ):
        bench.Comparison(**timed).run()  # two samples a side: a spread of nothing

    def wrong_ratio():
        table = _measured()
        table.loc["b", "speedup"] = 5.0  # not 4.0 / 1.0
        return table

    with pytest.raises(
        ValueError, match=r"speedup 5 is not the ratio of the medians \(4 / 1 = 4\)"
    ):
        bench.Comparison(**{**timed, "measure": wrong_ratio, "deterministic": True}).run()


def test_fresh_process_comparisons_take_enough_rounds_at_both_sizes():
    # A comparison of fresh processes counts one value a process (timing.per_run), so its rounds
    # are its samples: fewer than MIN_SAMPLES and Comparison refuses the table at run time. The
    # tf.data service sweep's quick size kept one round after it began counting processes, and
    # `make bench ARGS=--quick` would have stopped there.
    import inspect

    from helpers.comparison import MIN_SAMPLES, resolve

    for cid, comparison in bench.registry().items():
        fn = resolve(comparison.measure or comparison.make_variants)
        default = inspect.signature(fn).parameters.get("rounds")  # where a size leaves it out
        for size in ("quick", "full"):
            params = getattr(comparison, size)
            if "rounds" in params:
                assert params["rounds"] >= MIN_SAMPLES, (cid, size, params)
            elif default is not None:
                assert default.default >= MIN_SAMPLES, (cid, size, "the measure's default rounds")
