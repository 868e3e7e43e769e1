"""Repository-wide pytest hooks: a per-notebook time summary after an nbval run."""

from __future__ import annotations

from collections import defaultdict


def pytest_terminal_summary(terminalreporter) -> None:
    """Print each notebook's total nbval time (the sum of its cells' call durations)."""
    totals: dict[str, float] = defaultdict(float)
    cells: dict[str, int] = defaultdict(int)
    for reports in terminalreporter.stats.values():
        for report in reports:
            nodeid = getattr(report, "nodeid", "")
            if ".ipynb::" in nodeid and getattr(report, "when", "call") == "call":
                notebook = nodeid.split("::", 1)[0]
                totals[notebook] += getattr(report, "duration", 0.0)
                cells[notebook] += 1
    if not totals:
        return
    terminalreporter.write_sep("=", "nbval time per notebook")
    for notebook in sorted(totals):
        terminalreporter.write_line(f"{totals[notebook]:7.1f} s  {cells[notebook]:3d} cells  {notebook}")
    terminalreporter.write_line(f"{sum(totals.values()):7.1f} s  in all")
