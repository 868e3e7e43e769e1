"""One comparison widget for every notebook, and the static figure and table it also leaves.

``show(table)`` puts a bar chart of medians with their spread, the table and a verdict line
into the saved notebook. ``ComparisonWidget`` reruns the same comparison live with other
settings. The widget writes only through ``Output.append_*`` (never ``with out:``), which
behaves the same under JupyterLab, nbconvert and nbval; its base, ``RunWidget`` (controls, Run
button, progress bar and output area), is in ``widgets_base``.
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Callable, Mapping
from typing import Any

from helpers import timing, verdicts
from helpers.checks import flag, whole_number
from helpers.timing import ProgressFn
from helpers.widgets_base import RunWidget

UNITS = {"s": 1.0, "ms": 1e3, "us": 1e6}  # what a figure's axis can show

VariantsFactory = Callable[..., Mapping[str, Callable[..., Any]]]


def figure(table: Any, title: str = "", unit: str = "ms") -> Any:
    """A bar chart of each variant's median time, whiskers from the first to third quartile.

    With an ``items_per_s`` column the bars show throughput instead (higher is better).
    Returns a matplotlib ``Figure`` that is not registered with pyplot (no double display).
    """
    from matplotlib.figure import Figure

    scale = dict(UNITS)
    if unit not in scale:
        raise ValueError(f"unit must be one of {sorted(scale)}, got {unit!r}")
    names = [str(name) for name in table.index]
    fig = Figure(figsize=(6.4, 0.6 + 0.5 * max(2, len(names))), layout="constrained")
    ax = fig.add_subplot()
    if "items_per_s" in table.columns:
        items = table["items_per_s"] * table["median_s"]
        values = table["items_per_s"]
        low, high = values - items / table["q3_s"], items / table["q1_s"] - values
        ax.set_xlabel("items per second (median; whiskers: interquartile range)")
    else:
        values = table["median_s"] * scale[unit]
        low, high = values - table["q1_s"] * scale[unit], table["q3_s"] * scale[unit] - values
        ax.set_xlabel(f"time per call, {unit} (median; whiskers: interquartile range)")
    baseline = table.attrs.get("baseline", names[0])
    colors = ["#9e9e9e" if name == baseline else "#1f77b4" for name in names]
    low, high = low.clip(lower=0), high.clip(lower=0)
    ax.barh(names, values, xerr=[low, high], color=colors, capsize=4)
    ax.invert_yaxis()
    for y, (end, speedup) in enumerate(zip(values + high, table["speedup"], strict=True)):
        ax.annotate(f"  {speedup:.2f}x", (end, y), va="center", fontsize=9)
    ax.margins(x=0.2)
    set_title(ax, title)
    return fig


def set_title(ax: Any, title: str, width: int = 64) -> None:
    """Give a chart a title wrapped to ``width`` characters, so long settings stay readable."""
    if title:
        ax.set_title("\n".join(textwrap.wrap(title, width)), fontsize=10)


def png(fig: Any) -> bytes:
    """Render a matplotlib figure to PNG bytes, stamped with the machine that made it
    (``stamp``)."""
    from helpers import stamp

    stamp.on_figure(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    return buffer.getvalue()


def display_table(table: Any) -> Any:
    """The comparison table with readable units (a styled copy for display)."""
    columns = {
        "median_s": "median",
        "q1_s": "q1",
        "q3_s": "q3",
        "min_s": "min",
        "max_s": "max",
    }
    shown = table.copy()
    for col in columns:
        shown[col] = shown[col].map(timing.format_seconds)
    shown = shown.rename(columns=columns)
    shown["speedup"] = [
        f"{s:.2f}x ({lo:.2f}-{hi:.2f})"
        for s, lo, hi in zip(
            table["speedup"], table["speedup_low"], table["speedup_high"], strict=True
        )
    ]
    shown = shown.drop(columns=["speedup_low", "speedup_high"])
    if "items_per_s" in shown.columns:
        shown["items_per_s"] = table["items_per_s"].map(lambda v: f"{v:,.0f}")
    if "MB_per_s" in shown.columns:
        shown["MB_per_s"] = table["MB_per_s"].map(lambda v: f"{v:,.1f}")
    return shown


def show_figure(fig: Any) -> None:
    """Display a matplotlib figure as a PNG (saved in the notebook, shown once)."""
    from IPython.display import Image, display

    display(Image(data=png(fig)))


def show(
    table: Any, title: str = "", unit: str = "ms", verdict: bool = True, **reading: Any
) -> None:
    """Display the static figure, the table and the verdict for the saved notebook (``reading``:
    ``verdicts.verdict``'s variant, baseline, expect and why; ``verdict=False`` when the cell
    prints its own lines, one per row)."""
    from IPython.display import display

    if not flag("verdict", verdict) and reading:
        raise TypeError(f"show(verdict=False) prints no verdict to read with {sorted(reading)}")
    show_figure(figure(table, title, unit))
    display(display_table(table))
    if verdict:
        print(verdicts.verdict(table, **reading))


class ComparisonWidget(RunWidget):
    """Rerun a timing comparison live: ``make_variants(**params)`` builds the dict of variants
    from the control values; the result is a chart of medians with spread, the table and the
    verdict. ``items(**params)``, when given, turns times into throughput;
    ``before_each(**params)``, when given, returns ``timing.compare``'s ``before_each`` hook for
    that run (or None)."""

    def __init__(
        self,
        make_variants: VariantsFactory,
        controls: Mapping[str, Any] | None = None,
        *,
        title: str = "",
        baseline: str | None = None,
        repeats: int = 5,
        warmup: int = 1,
        items: Callable[..., int] | None = None,
        unit: str = "ms",
        before_each: Callable[..., Callable[[str], Any] | None] | None = None,
    ) -> None:
        import ipywidgets as W

        if not callable(make_variants):
            raise TypeError(f"make_variants must be callable, got {make_variants!r}")
        (
            whole_number("repeats", repeats, 1, "", 10_000),
            whole_number("warmup", warmup, 0, "", 10_000),
        )
        if unit not in UNITS:  # refused now, not after Run has timed everything
            raise ValueError(f"unit must be one of {sorted(UNITS)}, got {unit!r}")
        if before_each is not None and not callable(before_each):
            raise TypeError(f"before_each must be callable or None, got {before_each!r}")
        if baseline is not None and not isinstance(baseline, str):
            raise TypeError(
                f"baseline must be the name of a variant (text) or None, got {baseline!r}"
            )
        super().__init__(controls, title=title)
        self.make_variants, self.baseline, self.warmup, self.items, self.unit, self.before_each = (
            make_variants,
            baseline,
            warmup,
            items,
            unit,
            before_each,
        )
        self.repeats = W.IntSlider(
            value=repeats, min=1, max=max(50, repeats), description="repeats"
        )

    def layout(self) -> Any:
        import ipywidgets as W

        rows = [*self.controls.values(), self.repeats, W.HBox([self.button, self.progress])]
        return W.VBox([*rows, self.out])

    def compute(self, params: dict[str, Any], on_progress: ProgressFn) -> Any:
        return timing.compare(
            self.make_variants(**params),
            baseline=self.baseline,
            warmup=self.warmup,
            repeats=self.repeats.value,
            items=self.items(**params) if self.items else None,
            on_progress=on_progress,
            before_each=self.before_each(**params) if self.before_each else None,
        )

    def render(self, result: Any, title: str) -> tuple[list[Any], str]:
        from IPython.display import Image

        return [
            Image(data=png(figure(result, title, self.unit))),
            display_table(result),
        ], verdicts.verdict(result)


class ExperimentWidget(RunWidget):
    """Rerun any measurement live: ``experiment(**params, on_progress=...)`` returns a table,
    ``plot(table, title)`` a matplotlib figure, ``summary(table)`` the verdict line."""

    def __init__(
        self,
        experiment: Callable[..., Any],
        controls: Mapping[str, Any] | None = None,
        *,
        plot: Callable[[Any, str], Any],
        summary: Callable[[Any], str],
        title: str = "",
    ) -> None:
        for name, fn in (("experiment", experiment), ("plot", plot), ("summary", summary)):
            if not callable(fn):
                raise TypeError(f"{name} must be callable, got {fn!r}")
        super().__init__(controls, title=title)
        self.experiment, self.plot, self.summary = experiment, plot, summary

    def compute(self, params: dict[str, Any], on_progress: ProgressFn) -> Any:
        return self.experiment(**params, on_progress=on_progress)

    def render(self, result: Any, title: str) -> tuple[list[Any], str]:
        from IPython.display import Image

        return [Image(data=png(self.plot(result, title))), result], self.summary(result)
