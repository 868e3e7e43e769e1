"""Notebook 10's drift reading: which leads are no larger than one setting's own spread."""

from __future__ import annotations

import pandas as pd
import pytest

from helpers.topics.tune_the_cpu import cpu_drift


def _sweep(**medians):
    rows = [{"setting": k, "workload": "conv_step", "median_ms": v} for k, v in medians.items()]
    rows.append({"setting": "x", "workload": "matmul", "median_ms": 1.0})  # another workload
    return pd.DataFrame(rows)


def test_leads_within_the_drift_are_named_and_larger_ones_are_not():
    same = {"section 3": 5.0, "section 4": 5.5, "section 5": 5.2}  # 1.10x apart
    sweeps = {
        "omp": _sweep(base=5.5, one=5.0, two=6.6),  # 1.10x faster: within; 1.20x slower: not
        "alloc": _sweep(base=5.2, tc=5.25, je=4.9),  # 1.01x: below 3 %, not named; 1.06x: within
    }
    text = cpu_drift.drift_reading(same, sweeps, openmp_loaded=False)
    assert text.splitlines()[0] == "section 3                             5.00 ms"
    assert "lie up to 1.10x apart across the 3 sections" in text
    assert "'one' 1.10x faster; 'je' 1.06x faster." in text
    assert "'two'" not in text and "'tc'" not in text and "'x'" not in text
    assert text.endswith("where no process loaded an OpenMP runtime for the variables to act on.")
    assert cpu_drift.drift_reading(same, sweeps).endswith("credit a larger gap.")


def test_no_lead_within_the_drift_is_said_so():
    text = cpu_drift.drift_reading({"a": 5.0, "b": 5.05}, {"omp": _sweep(base=5.0, far=7.0)})
    assert "No conv_step lead or loss is as small as that drift." in text


@pytest.mark.parametrize("same", [{"a": 5.0}, {"a": 5.0, "b": 0.0}])
def test_too_few_or_empty_medians_are_refused(same):
    with pytest.raises(ValueError, match="two medians or more"):
        cpu_drift.drift_reading(same, {})
