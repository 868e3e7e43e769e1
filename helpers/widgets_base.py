"""``RunWidget``: the base of the workbook's live widgets (``widgets.ComparisonWidget`` and
``widgets.ExperimentWidget``, which the notebooks show).

Parameter controls (an ipywidget each, or a dropdown made from a list of choices), a Run button,
a progress bar and an output area; a subclass says what a run computes and how it is shown. The
widget writes only through ``Output.append_*`` (never ``with out:``), which behaves the same under
JupyterLab, nbconvert and nbval.
"""

from __future__ import annotations

import traceback
from collections.abc import Mapping, Sequence
from typing import Any

from helpers.timing import ProgressFn


class RunWidget:
    """Parameter controls, a Run button, a progress bar and an output area.

    Subclasses say what a run computes (``compute``) and how its result is shown (``render``,
    which returns displayable objects and a one-line verdict). ``controls`` maps each
    parameter name to an ipywidget or to a list of choices (a dropdown; ``(label, value)``
    pairs show the label and pass the value).
    """

    def __init__(self, controls: Mapping[str, Any] | None = None, *, title: str = "") -> None:
        import ipywidgets as W

        self.title = title
        self.controls = {name: _control(name, spec) for name, spec in (controls or {}).items()}
        self.button = W.Button(description="Run", button_style="primary", icon="play")
        self.progress = W.IntProgress(value=0, min=0, max=1, description="idle")
        self.out = W.Output()
        self.last: Any = None
        self.button.on_click(lambda _: self.run())

    def layout(self) -> Any:
        """The widget tree: controls, then the Run button and progress bar, then the output."""
        import ipywidgets as W

        rows = [*self.controls.values(), W.HBox([self.button, self.progress])]
        return W.VBox([*rows, self.out])

    def params(self) -> dict[str, Any]:
        """The current value of every control."""
        return {name: control.value for name, control in self.controls.items()}

    def compute(self, params: dict[str, Any], on_progress: ProgressFn) -> Any:
        """Run the measurement for ``params``; report progress through ``on_progress``."""
        raise NotImplementedError

    def render(self, result: Any, title: str) -> tuple[list[Any], str]:
        """The objects to display for ``result`` and its one-line verdict."""
        raise NotImplementedError

    def run(self) -> Any:
        """Run with the current settings and show the result; return it (None on failure)."""
        self.button.disabled = True
        self.progress.value, self.progress.max = 0, 1
        self.progress.description = "running"
        self.out.outputs = ()  # clear_output() only works with a front end attached
        try:
            params = self.params()
            result = self.compute(params, self._on_progress)
            settings = ", ".join(f"{k}={v}" for k, v in params.items())
            shown, verdict = self.render(
                result, f"{self.title} ({settings})" if settings else self.title
            )
        except Exception as exc:  # show the learner what went wrong, keep the widget usable
            self.out.append_stderr(f"Run failed: {type(exc).__name__}: {exc}\n")
            self.out.append_stderr("".join(traceback.format_exception(exc)[-3:]))
            self.progress.description = "failed"
            return None
        finally:
            self.button.disabled = False
        for item in shown:
            self.out.append_display_data(item)
        self.out.append_stdout(verdict + "\n")
        self.progress.description = "done"
        self.last = result
        return result

    def _on_progress(self, done: int, total: int) -> None:
        self.progress.max = max(total, 1)
        self.progress.value = done

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.layout())


def _control(name: str, spec: Any) -> Any:
    """An ipywidget for one parameter: a widget as given, or a dropdown of a list of choices."""
    import ipywidgets as W

    if isinstance(spec, W.ValueWidget):
        if not spec.description:
            spec.description = name
        return spec
    if isinstance(spec, Sequence) and not isinstance(spec, str) and len(spec) > 0:
        options = list(spec)
        # (label, value) pairs, as ipywidgets takes them: the first value, not the first pair
        labelled = all(
            isinstance(o, tuple) and len(o) == 2 and isinstance(o[0], str) for o in options
        )
        return W.Dropdown(
            options=options, value=options[0][1] if labelled else options[0], description=name
        )
    raise TypeError(
        f"control {name!r} must be an ipywidget or a non-empty list of choices, got {spec!r}"
    )
