"""Unit tests for helpers.widgets: the widget is driven with button.click(), no front end."""

from __future__ import annotations

import ipywidgets as W
import pytest

from helpers import timing, verdicts, widgets


def make_variants(n: int = 10):
    return {"loop": lambda: sum(range(n * 100)), "builtin": lambda: n * 100 * (n * 100 - 1) // 2}


def test_click_runs_and_shows_plot_table_and_verdict():
    widget = widgets.ComparisonWidget(make_variants, {"n": [10, 50]}, title="sums", repeats=3)
    widget.controls["n"].value = 50
    widget.button.click()
    table = widget.last
    assert list(table.index) == ["loop", "builtin"]
    assert int(table.loc["loop", "repeats"]) == 3
    kinds = [o["output_type"] for o in widget.out.outputs]
    assert kinds == ["display_data", "display_data", "stream"]
    assert widget.out.outputs[0]["data"]["image/png"]  # the chart
    assert "text/html" in widget.out.outputs[1]["data"]  # the table
    assert widget.out.outputs[2]["text"] == verdicts.verdict(table) + "\n"
    assert widget.progress.value == widget.progress.max == 3
    assert widget.progress.description == "done" and not widget.button.disabled


def test_second_run_replaces_the_output():
    widget = widgets.ComparisonWidget(make_variants, repeats=2)
    widget.button.click()
    widget.button.click()
    assert len(widget.out.outputs) == 3


def test_failing_variant_is_reported_and_widget_stays_usable():
    def broken(n):
        return {"a": lambda: 1 / 0, "b": lambda: 1}

    widget = widgets.ComparisonWidget(broken, {"n": W.IntSlider(value=3)})
    assert widget.run() is None
    text = widget.out.outputs[0]["text"]
    assert widget.out.outputs[0]["name"] == "stderr"
    assert "ZeroDivisionError" in text
    assert not widget.button.disabled and widget.progress.description == "failed"


def test_controls_from_lists_and_widgets():
    slider = W.IntSlider(value=7)
    widget = widgets.ComparisonWidget(make_variants, {"n": slider, "m": ["x", "y"]})
    assert widget.controls["n"] is slider and slider.description == "n"
    assert isinstance(widget.controls["m"], W.Dropdown)
    assert widget.params() == {"n": 7, "m": "x"}
    shapes = widgets.ComparisonWidget(
        make_variants, {"shape": [("small", (8, 28)), ("large", (32, 56))]}
    )
    assert shapes.params() == {"shape": (8, 28)} and shapes.controls["shape"].label == "small"


@pytest.mark.parametrize("spec", [[], "abc", 3, None])
def test_bad_control(spec):
    with pytest.raises(TypeError, match="control 'n' must be an ipywidget"):
        widgets.ComparisonWidget(make_variants, {"n": spec})


def test_bad_factory_and_repeats():
    with pytest.raises(TypeError, match="make_variants must be callable"):
        widgets.ComparisonWidget({"a": lambda: 1})
    with pytest.raises(ValueError, match="repeats"):
        widgets.ComparisonWidget(make_variants, repeats=0)


def _table(items=None):
    return timing.comparison_table(
        {
            "base": timing.Timing("base", (0.2, 0.3, 0.4), items),
            "fast": timing.Timing("fast", (0.1, 0.1, 0.2), items),
        },
        "base",
    )


def test_figure_time_and_throughput():
    fig = widgets.figure(_table(), "t")
    assert "ms" in fig.axes[0].get_xlabel() and fig.axes[0].get_title() == "t"
    long_title = "PNG files vs (reader=1 shard, per-example parse, n=10000) on a long line"
    assert "\n" in widgets.figure(_table(), long_title).axes[0].get_title()
    fig = widgets.figure(_table(items=100), unit="s")
    assert "items per second" in fig.axes[0].get_xlabel()
    assert widgets.png(fig).startswith(b"\x89PNG")
    with pytest.raises(ValueError, match="unit"):
        widgets.figure(_table(), unit="hours")


def test_display_table_formats_units():
    shown = widgets.display_table(_table(items=100))
    assert shown.loc["fast", "median"] == "100.00 ms"
    assert shown.loc["fast", "speedup"].startswith("3.00x (")
    assert shown.loc["base", "items_per_s"] == "333"
    table = _table()
    table["MB_per_s"] = [12.345, 1234.5]
    assert list(widgets.display_table(table)["MB_per_s"]) == ["12.3", "1,234.5"]


def test_before_each_hook_is_built_from_the_controls_and_runs_before_each_timed_call():
    seen = []

    def hook_for(n, cache):
        return (lambda name: seen.append((n, name))) if cache == "cold" else None

    widget = widgets.ComparisonWidget(
        lambda n, cache: make_variants(n),
        {"n": [10], "cache": ["warm", "cold"]},
        repeats=2,
        warmup=1,
        before_each=hook_for,
    )
    widget.button.click()
    assert seen == []  # warm: no hook
    widget.controls["cache"].value = "cold"
    widget.button.click()
    assert sorted(seen) == [(10, "builtin")] * 2 + [(10, "loop")] * 2  # 2 rounds, not the warm-up
    with pytest.raises(TypeError, match="before_each must be callable"):
        widgets.ComparisonWidget(make_variants, before_each="cold")


def test_show_prints_the_verdict(capsys):
    widgets.show(_table(), "title")
    assert verdicts.verdict(_table()) in capsys.readouterr().out
    widgets.show(_table(), "title", verdict=False)  # the cell prints its own lines, one per row
    assert verdicts.verdict(_table()) not in capsys.readouterr().out
    with pytest.raises(TypeError, match="prints no verdict"):
        widgets.show(_table(), "title", verdict=False, expect="faster")


def test_experiment_widget_runs_plots_and_summarises():
    import pandas as pd
    from matplotlib.figure import Figure

    def experiment(n, on_progress):
        for i in range(1, 4):
            on_progress(i, 3)
        return pd.DataFrame({"y": [n, 2 * n]})

    def plot(table, title):
        fig = Figure()
        fig.add_subplot().plot(table["y"])
        return fig

    widget = widgets.ExperimentWidget(
        experiment, {"n": [2, 5]}, plot=plot, summary=lambda t: f"max {t['y'].max()}"
    )
    widget.button.click()
    assert widget.last["y"].tolist() == [2, 4]
    assert widget.out.outputs[0]["data"]["image/png"]
    assert widget.out.outputs[-1]["text"] == "max 4\n"
    assert widget.progress.value == widget.progress.max == 3
    with pytest.raises(TypeError, match="plot must be callable"):
        widgets.ExperimentWidget(experiment, plot=None, summary=str)
