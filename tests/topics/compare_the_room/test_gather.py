"""The workshop kit: every figure the widgets render carries the machine's stamp, and a room's
bench.json files (the real format, written by ``bench.run_all``) gather into one table and
figure, with clear messages for files that are not results and for what disagrees."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers import bench, stamp, timing, widgets
from helpers.topics.compare_the_room import gather

MACHINE = {
    "python": "3.11.7",
    "platform": "Linux x86_64",
    "tensorflow": "2.21.0",
    "cuda_build": True,
    "cuda_version": "12.5.1",
    "cudnn_version": "9",
    "onednn": True,
    "cpu_model": "Intel(R) Xeon(R) Processor",
    "physical_cores": 2,
    "logical_cores": 2,
    "cpu_features": ["avx2"],
    "memory_gib": 23.5,
    "gpus": [],
}


def variants(n: int = 1):
    return {"slow": lambda: sum(range(3000 * n)), "fast": lambda: n}


FAST = bench.Comparison(
    id="fake.slow_vs_fast",
    title="t",
    make_variants=variants,
    baseline="slow",
    variant="fast",
    quick={"n": 1},
    full={"n": 1},
    repeats=3,
    min_time=0.0,
)


@pytest.fixture(scope="module")
def real_result(tmp_path_factory):
    """One bench.json as ``bench.run_all`` writes it."""
    out = tmp_path_factory.mktemp("one") / "bench.json"
    bench.run_all([FAST], quick=True, out=out, machine=MACHINE)
    return json.loads(out.read_text())


def room(folder, real_result, n=3):
    """``n`` participants' files: the real result with the machine and numbers varied."""
    machines = [
        ("alice", "Intel(R) Xeon(R) Processor", [], 2.0),
        ("bob", "AMD EPYC 7B13", [], 0.5),
        ("carol", "Apple M3", ["/physical_device:GPU:0"], 1.2),
    ]
    for name, cpu, gpus, speedup in machines[:n]:
        data = copy.deepcopy(real_result)
        data["machine"].update(cpu_model=cpu, gpus=gpus)
        data.pop("stamp")  # written before stamps existed: gather builds one from "machine"
        record = data["comparisons"][0]
        record.update(speedup=speedup, spread=[speedup * 0.9, speedup * 1.1])
        (folder / name).mkdir()
        (folder / name / "bench.json").write_text(json.dumps(data))


def test_every_widget_figure_carries_the_stamp():
    table = timing.comparison_table(
        {"a": timing.Timing("a", (1.0, 1.2, 0.8)), "b": timing.Timing("b", (0.5, 0.6, 0.4))}, "a"
    )
    fig = widgets.figure(table, "t")
    assert stamp.of_figure(fig) is None
    widgets.png(fig)  # show(), show_figure() and both widgets render through png()
    line = stamp.of_figure(fig)
    assert line == stamp.text() and "cores" in line and "TF " in line
    widgets.png(fig)
    assert (
        sum(t.get_gid() == stamp.FOOTER_TAG for t in fig.texts) == 1
    )  # once, however often it is drawn


def test_the_stamp_names_cpu_cores_gpu_tensorflow_scale_and_date():
    line = stamp.text(MACHINE, scale="quick", day="2026-11-23")
    assert line == "Intel Xeon · 2 cores · no GPU · TF 2.21.0 · quick · 2026-11-23"
    gpu = stamp.text({**MACHINE, "gpus": ["a", "b"]}, scale="full", day="d")
    assert "2 GPUs" in gpu
    # a process held to fewer CPUs (taskset, a container's cpuset) and oneDNN switched off say so
    held = stamp.text({**MACHINE, "usable_cores": 1, "onednn": False}, scale="full", day="d")
    assert held.startswith("Intel Xeon · 1 of 2 logical cores · oneDNN off · no GPU")
    assert stamp.text({**MACHINE, "usable_cores": 2}, scale="full", day="d").startswith(
        "Intel Xeon · 2 cores · no GPU"
    )
    with pytest.raises(TypeError, match="mapping"):
        stamp.text(["not", "a", "machine"])
    with pytest.raises(TypeError, match="matplotlib Figure"):
        stamp.on_figure("a figure")


def test_bench_results_carry_the_stamp_and_version(real_result):
    assert (
        real_result["stamp"].endswith(real_result["started"][:10])
        and "· quick ·" in real_result["stamp"]
    )
    assert real_result["workbook"] == stamp.workbook_version()


def test_gather_three_machines(tmp_path, real_result):
    room(tmp_path, real_result)
    (tmp_path / "notes.json").write_text('{"not": "a result"}')
    (tmp_path / "broken.json").write_text("{truncated")
    results, notes = gather.load(tmp_path)
    assert [r.label for r in results] == ["alice", "bob", "carol"]
    assert any("skipped notes.json: not a bench result" in n for n in notes)
    assert any("skipped broken.json: not readable JSON" in n for n in notes)
    speedups = gather.table(results)
    assert speedups.loc["fake.slow_vs_fast"].tolist() == [2.0, 0.5, 1.2]
    assert gather.disagreements(results) == [
        "fake.slow_vs_fast: faster on alice, carol; slower on bob"
    ]
    text = gather.markdown(results, notes)
    assert "| fake.slow_vs_fast | 2.00x | 0.50x | 1.20x |" in text
    assert "- carol: Apple M3 · 2 cores · 1 GPU · TF 2.21.0 · quick ·" in text
    fig = gather.figure(results)
    assert [t.get_text().split(":")[0] for t in fig.legends[0].get_texts()] == [
        "alice",
        "bob",
        "carol",
    ]
    assert stamp.of_figure(fig).startswith("gathered from 3 bench results")


def test_gather_reports_versions_and_missing_comparisons(tmp_path, real_result):
    room(tmp_path, real_result)
    data = json.loads((tmp_path / "bob" / "bench.json").read_text())
    data["workbook"] = "0.0.9"
    data["comparisons"][0]["id"] = "fake.other"
    (tmp_path / "bob" / "bench.json").write_text(json.dumps(data))
    results, notes = gather.load(tmp_path)
    assert any("different workbook versions" in n and "0.0.9" in n for n in notes)
    assert "fake.other: not run on alice, carol" in gather.missing(results)
    assert "| fake.other | - | 0.50x | - |" in gather.markdown(results)


def test_sizes_and_shares_of_a_bound_are_not_read_or_drawn_as_speed_ups(tmp_path, real_result):
    room(tmp_path, real_result)
    for name, size in (("alice", 3.7), ("bob", 3.7), ("carol", 3.6)):
        data = json.loads((tmp_path / name / "bench.json").read_text())
        data["comparisons"] += [
            {
                "id": "fake.size",
                "speedup": size,
                "spread": [size, size],
                "repeats": 1,
                "unit": "bytes",
            },
            {"id": "fake.share", "speedup": 0.5, "spread": [0.4, 0.6], "kind": "share of bound"},
        ]
        (tmp_path / name / "bench.json").write_text(json.dumps(data))
    results, _ = gather.load(tmp_path)
    assert list(gather.table(results).index) == [
        "fake.slow_vs_fast"
    ]  # a unit of bytes without a kind: a size
    assert list(gather.table(results, "size ratio").index) == ["fake.size"]
    assert list(gather.table(results, "share of bound").index) == ["fake.share"]
    sides = gather.compared(results)  # baseline -> variant; fields a file may leave out read "?"
    assert sides["fake.slow_vs_fast"] == "slow -> fast" and sides["fake.size"] == "? -> ?"
    assert [line.split(":")[0] for line in gather.disagreements(results)] == ["fake.slow_vs_fast"]
    text = gather.markdown(results)
    assert "| fake.slow_vs_fast | 2.00x | 0.50x | 1.20x |" in text
    assert "Not speed-ups, size ratio (baseline size / variant size (bytes)" in text
    assert "| fake.size | 3.70 | 3.70 | 3.60 |" in text
    assert "| fake.share | 0.50 | 0.50 | 0.50 |" in text
    fig = gather.figure(results)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["fake.slow_vs_fast"]
    assert "2 other ratios" in fig.axes[0].get_title()


def test_a_single_run_has_no_spread_to_disagree_with(tmp_path, real_result):
    room(tmp_path, real_result)
    data = json.loads((tmp_path / "bob" / "bench.json").read_text())
    data["comparisons"][0].update(
        speedup=0.5, spread=[0.5, 0.5], repeats=1
    )  # one wall-clock run per side
    (tmp_path / "bob" / "bench.json").write_text(json.dumps(data))
    results, _ = gather.load(tmp_path)
    assert gather.disagreements(results) == []
    assert "| fake.slow_vs_fast | 2.00x | 0.50x (1 run) | 1.20x |" in gather.markdown(results)


def test_a_kind_the_format_does_not_know_is_refused():
    from helpers import results

    record = {"id": "fake.x", "speedup": 2.0, "spread": [1.9, 2.1], "kind": "latency"}
    with pytest.raises(
        results.ResultError, match=r"comparisons\[0\] \(fake.x\).kind must be one of 'speed-up'"
    ):
        results.check({"machine": MACHINE, "comparisons": [record]})
    with pytest.raises(ValueError, match="kind must be one of"):
        bench.Comparison(
            id="fake.y",
            title="t",
            make_variants=variants,
            baseline="slow",
            variant="fast",
            kind="latency",
        )
    assert results.kind({"unit": "bytes"}) == "size ratio" and results.kind({}) == "speed-up"


def test_gather_command_line(tmp_path, real_result):
    room(tmp_path, real_result)
    done = subprocess.run(
        [sys.executable, "-m", "helpers.bench", "--gather", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Disagree in direction:" in done.stdout
    assert (tmp_path / "gathered.md").exists() and (tmp_path / "gathered.png").read_bytes()[
        :4
    ] == b"\x89PNG"


@pytest.mark.parametrize(
    "setup, message",
    [
        (lambda p: None, "no bench results in"),
        (lambda p: (p / "x.json").write_text("[]"), "not a bench result"),
        (
            lambda p: (p / "x.json").write_text(
                json.dumps({"machine": {}, "comparisons": [{"id": "a", "speedup": -1}]})
            ),
            "speedup must be a finite positive number",
        ),
    ],
)
def test_gather_nothing_usable_is_one_clear_line(tmp_path, setup, message):
    setup(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "helpers.bench", "--gather", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert (
        done.stderr.startswith("bench --gather: ")
        and message in done.stderr
        and done.stderr.count("\n") == 1
    )


def test_gather_refuses_a_file_for_a_folder(tmp_path):
    (tmp_path / "bench.json").write_text("{}")
    with pytest.raises(gather.GatherError, match="is not a folder"):
        gather.load(tmp_path / "bench.json")


def test_notebook_15_widget_and_exercise_on_the_shipped_example_room():
    """The example room ships real results of one machine run three ways; the widget's table,
    figure and summary, and the exercise check, judge what a function returns on it."""
    from pathlib import Path

    folder = Path(__file__).resolve().parents[3] / "data" / "room-example"
    speedups = gather.room_table(folder)
    assert speedups.shape[1] == 3 and len(speedups) >= 10
    assert stamp.of_figure(gather.room_figure(speedups)).startswith("gathered from 3 bench results")
    line = gather.room_summary(speedups)
    assert line.startswith("3 machines,") and "disagree in direction" in line
    assert "medians both ways, not judged: distribute_training.workers_0_vs_2" in line
    stamps = [r.stamp for r in speedups.attrs["results"]]
    assert any("1 of 2 logical cores" in s for s in stamps) and any(
        "oneDNN off" in s for s in stamps
    )

    def solution(table):
        return (table.max(axis=1) / table.min(axis=1)).idxmax()

    assert gather.check_most_varied(lambda table: None, speedups).message.startswith("Not yet")
    assert gather.check_most_varied(lambda table: table.index[0], speedups).message.startswith(
        "Not yet"
    )
    assert gather.check_most_varied(solution, speedups).message.startswith("Correct")
    frozen = solution(speedups)  # a hard-coded answer fails on the table without its first machine
    other = solution(speedups.drop(columns=speedups.columns[0]))
    if other != frozen:
        assert gather.check_most_varied(lambda table: frozen, speedups).message.startswith(
            "Not yet"
        )

    def ignores_nan(
        table,
    ):  # NumPy's max and min do not skip NaN: a row with a gap wins or loses wrongly
        import numpy as np

        values = table.to_numpy()
        return table.index[int(np.argmax(values.max(axis=1) / values.min(axis=1)))]

    assert ignores_nan(speedups) == solution(speedups)  # right on a full table...
    assert gather.check_most_varied(ignores_nan, speedups).message.startswith(
        "Not yet"
    )  # ...not with a gap


def test_one_result_sent_twice_is_named_and_both_are_kept(tmp_path):
    from pathlib import Path

    room = Path(__file__).resolve().parents[3] / "data" / "room-example"
    shutil.copytree(room, tmp_path / "room")
    twin = json.loads((room / "xeon-2-cores" / "bench.json").read_text())
    twin["comparisons"] = twin["comparisons"][
        1:
    ]  # a copy with one comparison fewer is still a copy
    (tmp_path / "room" / "bob.json").write_text(json.dumps(twin))
    results, notes = gather.load(tmp_path / "room")
    assert len(results) == 4
    twice = [n for n in notes if "sent twice" in n]
    assert twice == [
        f"bob and xeon-2-cores hold the same timings for all {len(twin['comparisons'])} "
        "comparisons they share: one result sent twice? Both are gathered; "
        "remove one to count that machine once"
    ]
    _, notes = gather.load(room)  # three different runs of one machine: no such note
    assert not [n for n in notes if "sent twice" in n]


def test_label_of_names_a_file_as_the_room_table_does(tmp_path):
    assert gather.label_of(tmp_path / "alice" / "bench.json", tmp_path) == "alice"
    assert gather.label_of(tmp_path / "bob.json", tmp_path) == "bob"
    assert gather.label_of(tmp_path / "team" / "carol" / "bench.json", tmp_path) == "team/carol"


def _bob_reads(tmp_path: Path, real_result: Any, **record: Any) -> tuple[list[Any], dict]:
    """The example room with bob's first record changed; the gathered results and bob's file."""
    room(tmp_path, real_result)
    data = json.loads((tmp_path / "bob" / "bench.json").read_text())
    data["comparisons"][0].update(record)
    (tmp_path / "bob" / "bench.json").write_text(json.dumps(data))
    return gather.load(tmp_path)[0], data


def _bars(fig, label: str):
    """A machine's bars, and the hatched layer over those of its records that have no spread."""
    from matplotlib.container import BarContainer

    found = {c.get_label(): c for c in fig.axes[0].containers if isinstance(c, BarContainer)}
    main = next(c for name, c in found.items() if name.startswith(f"{label}: "))
    return main, found[f"_hatched {label}"]


def _whiskers(fig, label: str) -> int:
    """How many whiskers the figure draws for one machine's bars."""
    from matplotlib.container import ErrorbarContainer

    drawn = [
        c
        for c in fig.axes[0].containers
        if isinstance(c, ErrorbarContainer) and c.get_label() == f"_whiskers {label}"
    ]
    return sum(len(c.lines[2][0].get_segments()) for c in drawn if c.lines[2])


def test_a_record_of_one_process_a_side_is_a_single_run(tmp_path, real_result):
    # Repeats inside one process differ less than two processes do: a record whose params say one
    # round (one fresh process a side) has no spread worth judging, whatever its repeats.
    results, data = _bob_reads(
        tmp_path, real_result, speedup=0.5, spread=[0.45, 0.55], repeats=5, params={"rounds": 1}
    )
    assert gather.disagreements(results) == []
    assert gather.both_ways(results) == [
        "fake.slow_vs_fast: faster on alice, carol; slower on bob (a single run a side on bob)"
    ]
    text = gather.markdown(results)
    assert "| 0.50x (1 run) |" in text and "Medians both ways, not judged:" in text
    # the figure draws it hatched, without whiskers: a spread it does not judge is not drawn as one
    fig = gather.figure(results)
    (alice, alice_hatched), (bob, bob_hatched) = _bars(fig, "alice"), _bars(fig, "bob")
    assert len(alice_hatched.patches) == 0 and len(bob_hatched.patches) == 1
    assert bob_hatched.patches[0].get_hatch() == "///" and bob.patches[0].get_hatch() is None
    assert _whiskers(fig, "alice") == len(alice.patches)  # every record has a spread
    assert _whiskers(fig, "bob") == len(bob.patches) - 1  # not the one-process record
    data["comparisons"][0]["params"] = {"rounds": 3}  # three processes a side: judged
    (tmp_path / "bob" / "bench.json").write_text(json.dumps(data))
    results, _ = gather.load(tmp_path)
    assert gather.disagreements(results) and gather.both_ways(results) == []


def test_two_files_with_one_name_are_both_gathered_under_their_paths(tmp_path, real_result):
    room(tmp_path, real_result)
    shutil.copy(tmp_path / "bob" / "bench.json", tmp_path / "bob.json")
    results, notes = gather.load(tmp_path)
    assert sorted(r.label for r in results) == ["alice", "bob", "bob/bench", "carol"]
    assert "bob/bench.json is named 'bob/bench': 'bob' is also another result's name" in notes
    (tmp_path / "carol.json").write_text("{ not json")  # a stray file renames no real result
    results, notes = gather.load(tmp_path)
    assert "carol" in [r.label for r in results] and not [n for n in notes if "carol/bench" in n]
    assert gather.main(tmp_path) == 0  # the table has a column for each
    summary = gather.room_summary(gather.room_table(tmp_path))
    assert "notes: " in summary and "sent twice" in summary  # the notes named, not counted


def test_medians_both_ways_name_where_the_spread_crosses_1x(tmp_path, real_result):
    # One machine's spread across 1x leaves a row unjudged: the reason names that machine only.
    results, _ = _bob_reads(
        tmp_path, real_result, speedup=0.8, spread=[0.6, 1.1], repeats=5, params={"rounds": 3}
    )
    assert gather.disagreements(results) == []
    assert gather.both_ways(results) == [
        "fake.slow_vs_fast: faster on alice, carol; slower on bob (the spread crosses 1x on bob)"
    ]


def test_a_comparison_run_with_other_parameters_is_noted_and_kept(tmp_path):
    """A bench that changed its parameters under the same workbook version (rounds 1 on record,
    3 in today's quick bench, say) gives the same id another workload: the gather says so."""
    from pathlib import Path

    room = Path(__file__).resolve().parents[3] / "data" / "room-example"
    shutil.copytree(room, tmp_path / "room")
    _, before = gather.load(tmp_path / "room")
    assert not any("different parameters" in n for n in before)  # the example room agrees
    path = tmp_path / "room" / "xeon-1-core" / "bench.json"
    data = json.loads(path.read_text())
    key = "look_inside_graphs.eager_vs_function"
    record = next(c for c in data["comparisons"] if c["id"] == key)
    record["params"] = {"n_ops": 10}
    path.write_text(json.dumps(data))
    results, notes = gather.load(tmp_path / "room")
    (note,) = [n for n in notes if "different parameters" in n]
    assert note.startswith(f"{key} ran with different parameters: ")
    assert '{"n_ops": 10} in xeon-1-core' in note and "xeon-2-cores, xeon-oneDNN-off" in note
    assert len(results) == 3 and key in gather.table(results).index  # still gathered
