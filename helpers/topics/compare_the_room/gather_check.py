"""Notebook 15's exercise check: the comparison whose speed-up varies most between machines."""

from __future__ import annotations

from typing import Any


def _ratios(speedups: Any) -> Any:
    return speedups.max(axis=1, skipna=True) / speedups.min(axis=1, skipna=True)


def _most_varied(speedups: Any) -> str:
    return str(_ratios(speedups).idxmax())


def _tied(speedups: Any) -> set[str]:
    """Every row whose max/min equals the largest (a room of one machine ties them all at 1)."""
    ratio = _ratios(speedups)
    return {str(i) for i in ratio.index[(ratio - ratio.max()).abs() <= 1e-9 * ratio.max()]}


def _made_up_room() -> Any:
    """Four made-up machines whose rows tell max/min apart from other measures: std/mean,
    max/mean and (max - min)/mean pick row C, mean/min row D, the spread of the logs row G,
    dropping gaps row C, filling them with 1.0 row F; max/min, skipping gaps, picks row A."""
    import pandas as pd

    nan = float("nan")
    rows = {"A": [0.25, 0.3, nan, 1.0], "C": [1, 1, 1, 3.9], "D": [1, 3.9, 3.9, 3.9]}
    rows.update(F=[nan, 4.5, 4.6, 4.5], G=[1, 1, 3.8, 3.8])  # G: the spread of the logs
    return pd.DataFrame.from_dict(
        {f"made-up row {k}": v for k, v in rows.items()}, orient="index", columns=list("wxyz")
    )


def check_most_varied(fn: Any, speedups: Any) -> Any:
    """Exercise: ``fn(speedups)`` names the comparison whose speed-up varies most between machines
    (largest max/min), on this room's table, without its first machine, with a gap (NaN), without
    the winning row (so a name typed in fails), and on a made-up room built to tell max/min from
    other measures."""
    from helpers.exercises import correct, not_yet

    if not callable(fn):
        return not_yet(f"most_varied must be a function of the table, got {type(fn).__name__}")
    try:
        best, first = _most_varied(speedups), speedups.columns[0]
        # A machine that did not run the least varied row: skipping the NaN keeps the answer, while
        # NumPy's max and min turn that row's ratio into NaN, which np.argmax then picks.
        gap_row = (speedups.max(axis=1) / speedups.min(axis=1)).idxmin()
    except Exception as exc:  # not the room's table of speed-ups
        return not_yet(
            "pass your function first and the room's speed-up table second (as in the cell); "
            f"reading the table raised {type(exc).__name__}: {exc}"
        )
    holey = speedups.copy()
    holey.loc[gap_row, first] = float("nan")
    cases = [("", speedups)]
    if speedups.shape[1] > 2:
        cases.append((f"without {first}", speedups.drop(columns=first)))
    if speedups.shape[1] > 1:  # with one machine, the gap would leave a row nobody ran
        cases.append((f"with {first}'s {gap_row} missing (NaN)", holey))
    if len(speedups) > 2:
        cases.append((f"without the row {best!r}", speedups.drop(index=best)))
    made_up = _made_up_room()
    cases.append(("a made-up room, with gaps (NaN)", made_up))
    # Row A's gap first: Python's max() and min() keep a leading NaN, which pandas skips.
    cases.append(("the made-up room, machines in another order", made_up[["y", "z", "w", "x"]]))
    said = []
    for case, t in cases:
        want = _most_varied(t)
        try:  # a copy: an answer that adds a column changes neither the check nor the table
            got = fn(t.copy())
        except (Exception, SystemExit) as exc:  # the learner's code
            return not_yet(f"calling your function raised {type(exc).__name__}: {exc}")
        if not isinstance(got, str):
            return not_yet(
                f"return the comparison's name (a row label of the table), got {type(got).__name__}"
            )
        where = f"on machines {list(t.columns)}{f' ({case})' if case else ''}"
        if got not in t.index:
            what = "a machine (a column)" if got in t.columns else "not a row of this table"
            return not_yet(
                f"{where} you named {got!r}, {what}: compute the name from the table you are "
                "given (the check passes it tables with machines and rows left out)."
            )
        if got not in _tied(t):
            return not_yet(
                f"{where} you named {got!r}; the largest max/min ratio is {want!r}. "
                "Divide each row's max by its min, skipping machines that did not run it."
            )
        if case:
            said.append(f"{case} it is {want!r}")
    return correct(
        f"{best!r} varies most: from {speedups.loc[best].min():.2f}x "
        f"to {speedups.loc[best].max():.2f}x; " + "; ".join(said) + "."
    )
