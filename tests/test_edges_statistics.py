"""Issue 37, "nothing silently wrong": the statistics refuse or handle the inputs that
gave a silently wrong answer (ids averaged as measures, p-values outside [0, 1],
intervals clipped to wrong bounds, lower-is-better measures bolded as best, NaN power)."""

from __future__ import annotations

import math

import polars as pl
import pytest

import polars_rankeval as pr

# ------------------------------------------------- item 2: p-values outside [0, 1]

CORRECTIONS = ["none", "bonferroni", "holm", "bh", "by"]


@pytest.mark.parametrize("method", CORRECTIONS)
@pytest.mark.parametrize("bad", [-0.5, 1.5, math.inf, -math.inf])
def test_corrections_refuse_p_values_outside_0_1(method, bad):
    frame = pl.DataFrame({"p": [0.01, 0.2, bad, 0.04]})
    with pytest.raises(ValueError, match=rf"\[0, 1\]. Got {bad} at row 2 of 'p'"):
        frame.select(pr.adjust_pvalues("p", method=method))


@pytest.mark.parametrize(
    "function", [pr.bonferroni, pr.holm, pr.benjamini_hochberg, pr.benjamini_yekutieli]
)
def test_correction_functions_refuse_out_of_range_per_group(function):
    frame = pl.DataFrame({"g": [1, 1, 2, 2], "p": [0.5, 0.1, 0.2, -0.01]})
    with pytest.raises(ValueError, match=r"-0.01 at row 1"):
        frame.select(function("p").over("g"))
    with pytest.raises(ValueError, match=r"-0.01 at row 1"):
        frame.group_by("g").agg(function("p"))


@pytest.mark.parametrize("method", CORRECTIONS)
def test_corrections_keep_nan_and_null_as_null_and_0_1_inclusive(method):
    frame = pl.DataFrame({"p": [0.0, None, float("nan"), 1.0, 0.02]})
    out = frame.select(pr.adjust_pvalues("p", method=method))["p"]
    assert out[1] is None and out[2] is None
    assert all(0.0 <= v <= 1.0 for v in out.drop_nulls())
