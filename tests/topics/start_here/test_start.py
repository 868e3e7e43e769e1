"""Unit tests for helpers.topics.start_here.start (the environment check of notebook 00)."""

from __future__ import annotations

from helpers.topics.start_here import start

GOOD = {
    "tensorflow": "2.21.0",
    "keras": "3.15.1",
    "ipywidgets": "8.1.9",
    "matplotlib": "3.11.2",
    "pandas": "3.1.1",
    "tf-performance-workbook": "0.1.0",
}


def test_all_pass_with_good_versions(monkeypatch):
    monkeypatch.delenv("WORKBOOK_SCALE", raising=False)
    rows = start.checks(version_of=GOOD.get, available_gib=8.0)
    assert {r.status for r in rows} == {"pass"}
    assert start.summary(rows) == f"All {len(rows)} requirements met: the workbook is ready to run."


def test_wrong_or_missing_packages_fail_with_a_fix():
    versions = {**GOOD, "tensorflow": "2.15.1"}
    del versions["ipywidgets"]
    rows = {r.requirement: r for r in start.checks(version_of=versions.get, available_gib=8.0)}
    assert (
        rows["tensorflow 2.21.x"].status == "FAIL" and "make lab" in rows["tensorflow 2.21.x"].fix
    )
    assert rows["ipywidgets 8.x"].found == "not installed"
    summary = start.summary(list(rows.values()))
    assert summary.startswith("2 of ") and "tensorflow 2.21.x, ipywidgets 8.x" in summary


def test_low_memory_and_bad_scale(monkeypatch):
    monkeypatch.setenv("WORKBOOK_SCALE", "tiny")
    rows = {r.requirement: r for r in start.checks(version_of=GOOD.get, available_gib=1.0)}
    assert rows["free memory >= 3 GiB"].status == "FAIL"
    assert "WORKBOOK_SCALE" in rows["free memory >= 3 GiB"].fix
    assert rows["WORKBOOK_SCALE is small or full"].status == "FAIL"


def test_version_prefix_matching():
    assert start.check_package("x", (2, 21), "", {"x": "2.21.0rc1"}.get).status == "pass"
    assert start.check_package("x", (2, 2), "", {"x": "2.21.0"}.get).status == "FAIL"


def test_gpu_row_is_information_only():
    row = start.gpu_check()
    assert row.status == "info"
    table = start.report([row])
    assert list(table.columns) == ["found", "status", "fix"]


def test_check_warmup():
    from helpers import timing

    steady = timing.Timing("f", (0.001,) * 10)
    assert not start.check_warmup(None, steady)
    assert not start.check_warmup(0.5, timing.Timing("f", (0.001,) * 5))
    result = start.check_warmup(0.0005, steady)
    assert not result and "already traced" in repr(result)
    result = start.check_warmup(0.05, steady)
    assert result and "50x as long" in repr(result)


def test_forcing_summary_reads_each_mode():
    def runs(median):  # seconds of 5 calls around a median
        return [median * f for f in (0.9, 0.95, 1.0, 1.05, 1.1)]

    text = start.forcing_summary(
        {
            "synchronous, not forced": runs(0.21),
            "synchronous, forced": runs(0.22),
            "asynchronous, not forced": runs(0.0002),
            "asynchronous, forced": runs(0.14),
        }
    )
    sync, asynchronous = text.splitlines()
    assert sync.startswith(
        "Synchronous: not forced 210.00 ms, forced 220.00 ms "
        "(the early clock read 95.5% of the forced one; 5 calls each): "
        "the call returned when its work"
    )
    assert sync.endswith("(the two clocks' middle halves overlap).")
    assert (
        "(the early clock read 0.1% of the forced one; 5 calls each): "
        "the early clock measured little more than handing" in asynchronous
    )
    assert "missed part of the work" in start.forcing_summary(
        {
            "synchronous, not forced": runs(0.03),
            "synchronous, forced": runs(0.1),
            "asynchronous, not forced": runs(0.0),
            "asynchronous, forced": runs(0.0),
        }
    )


def _sync_line(early, forced):
    """The synchronous line of forcing_summary for these calls (the asynchronous clocks fixed)."""
    clocks = {"synchronous, not forced": early, "synchronous, forced": forced}
    clocks |= {"asynchronous, not forced": [0.0001] * 3, "asynchronous, forced": [0.03] * 3}
    return start.forcing_summary(clocks).splitlines()[0]


def test_forcing_summary_reads_the_quartiles_when_the_clocks_part():
    forced = [0.030, 0.031, 0.0314, 0.032, 0.033]
    # 00's saved run once read 37 ms early against 31 ms forced: not the forcing, the moment
    longer = _sync_line([0.036, 0.037, 0.0372, 0.038, 0.039], forced)
    assert "read 118.5% of the forced one" in longer
    assert "outside the forced clock's quartiles 31.00 ms-32.00 ms" in longer
    assert "not the forcing but the moment" in longer
    shorter = _sync_line([0.018, 0.019, 0.0192, 0.020, 0.021], forced)
    assert "read 61.1% of the forced one" in shorter
    assert "outside the forced clock's quartiles" in shorter and "hid the mistake" not in shorter
