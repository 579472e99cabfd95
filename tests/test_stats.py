"""Paired tests, corrections and intervals against scipy, exact enumeration and arithmetic."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import polars as pl
import pytest
import scipy.stats as sps
from corpus import random_corpus
from hypothesis import example, given, settings
from hypothesis import strategies as st

import polars_rankeval as pr
from polars_rankeval.stats import (
    bootstrap_matrix,
    count_blocks,
    flip_blocks,
    randomization_matrix,
)

MEASURES = ["AP", "P@5", "P@10", "nDCG@10", "RR", "R@100"]
ALTERNATIVES = ["two-sided", "greater", "less"]


def held_back_columns() -> list[tuple[np.ndarray, np.ndarray]]:
    """Paired per-query columns: real measures of random runs (ties, zeros), and synthetic."""
    pairs = []
    for seed in (101, 202, 303):
        run, qrels = random_corpus(seed, systems=3, n_queries=60)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pq = pr.evaluate(run, qrels, MEASURES)
        for m in MEASURES:
            wide = pq.pivot(on="system", index="query", values=m).sort("query")
            for a, b in (("sys1", "sys0"), ("sys2", "sys0"), ("sys2", "sys1")):
                pairs.append((wide[a].to_numpy(), wide[b].to_numpy()))
    rng = np.random.default_rng(7)
    for n in (3, 8, 25, 51, 200):
        x = rng.integers(0, 11, n) / 10  # tenths: many ties and zero differences
        pairs.append((x, np.clip(x + rng.integers(-2, 3, n) / 10, 0, 1)))
        pairs.append((rng.random(n), rng.random(n)))
    return [(a, b) for a, b in pairs if np.any(a != b)]


PAIRS = held_back_columns()


def struct_row(frame: pl.DataFrame) -> dict:
    return frame.to_series(0).to_list()[0]


def test_held_back_data_has_ties_and_zero_differences():
    zero_diffs = sum(int(np.any(a == b)) for a, b in PAIRS)
    tied_abs = sum(int(len(np.unique(np.abs(a - b))) < len(a)) for a, b in PAIRS)
    assert len(PAIRS) > 50
    assert zero_diffs > 40
    assert tied_abs > 40


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_paired_ttest_equals_scipy(alternative):
    for a, b in PAIRS:
        wide = pl.DataFrame({"a": a, "b": b})
        got = struct_row(wide.select(pr.paired_ttest("a", "b", alternative=alternative)))
        ref = sps.ttest_rel(a, b, alternative=alternative)
        assert got["statistic"] == pytest.approx(ref.statistic, abs=1e-9, rel=1e-9)
        assert got["p_value"] == pytest.approx(ref.pvalue, abs=1e-9)
        assert got["n"] == len(a)
        d = a - b
        assert got["mean_diff"] == pytest.approx(d.mean(), abs=1e-12)
        assert got["effect_size"] == pytest.approx(d.mean() / d.std(ddof=1), rel=1e-9)


WILCOXON_OPTIONS = [
    {},
    {"zero_method": "pratt"},
    {"zero_method": "zsplit"},
    {"correction": True, "method": "asymptotic"},
    {"alternative": "greater"},
    {"alternative": "less", "zero_method": "pratt", "method": "asymptotic"},
]


@pytest.mark.parametrize("options", WILCOXON_OPTIONS)
def test_wilcoxon_equals_scipy_with_ties_and_zeros(options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns about ties / zeros / small n
        for a, b in PAIRS:
            wide = pl.DataFrame({"a": a, "b": b})
            got = struct_row(wide.select(pr.wilcoxon("a", "b", **options)))
            ref = sps.wilcoxon(a, b, **options)
            assert got["statistic"] == pytest.approx(ref.statistic, abs=1e-9)
            assert got["p_value"] == pytest.approx(ref.pvalue, abs=1e-9, nan_ok=True)


def test_wilcoxon_small_exact_case_by_hand():
    # differences 1, 2, 3, -4: W+ = 1 + 2 + 3 = 6, W- = 4; exact two-sided p:
    # P(W- <= 4) over the 16 sign patterns = #{subsets of {1,2,3,4} with sum <= 4} / 16
    # = {}, {1}, {2}, {3}, {4}, {1,2}, {1,3} -> 7/16, doubled = 14/16
    wide = pl.DataFrame({"a": [1.0, 2.0, 3.0, 0.0], "b": [0.0, 0.0, 0.0, 4.0]})
    got = struct_row(wide.select(pr.wilcoxon("a", "b")))
    assert got["statistic"] == 4.0
    assert got["p_value"] == pytest.approx(14 / 16, abs=1e-12)


def exact_randomization_p(d: np.ndarray, alternative: str) -> float:
    """All 2^n sign patterns: the exact permutation p-value (observed pattern included)."""
    signs = np.array(list(itertools.product([1.0, -1.0], repeat=len(d))))
    null = signs @ d
    obs = d.sum()
    tol = 1e-9
    if alternative == "greater":
        return float(np.mean(null >= obs - tol))
    if alternative == "less":
        return float(np.mean(null <= obs + tol))
    return float(np.mean(np.abs(null) >= abs(obs) - tol))


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_randomization_within_monte_carlo_error_of_exact_enumeration(alternative):
    rng = np.random.default_rng(11)
    resamples = 20_000
    for trial in range(6):
        n = int(rng.integers(5, 13))
        a = rng.integers(0, 11, n) / 10
        b = np.clip(a + rng.normal(0.1, 0.2, n).round(1), 0, 1)
        wide = pl.DataFrame({"a": a, "b": b})
        got = struct_row(
            wide.select(
                pr.randomization_test(
                    "a", "b", n_resamples=resamples, seed=trial, alternative=alternative
                )
            )
        )
        exact = exact_randomization_p(a - b, alternative)
        se = math.sqrt(exact * (1 - exact) / resamples)
        assert abs(got["p_value"] - exact) <= 4 * se + 2 / resamples, (n, got, exact)
        assert got["statistic"] == pytest.approx((a - b).mean(), abs=1e-12)


def test_randomization_agrees_with_scipy_permutation_test():
    rng = np.random.default_rng(5)
    a, b = rng.random(60), rng.random(60) - 0.08
    got = struct_row(
        pl.DataFrame({"a": a, "b": b}).select(
            pr.randomization_test("a", "b", n_resamples=20_000, seed=3)
        )
    )
    ref = sps.permutation_test(
        (a, b),
        lambda x, y: np.mean(x - y),
        permutation_type="samples",
        n_resamples=20_000,
        rng=np.random.default_rng(99),
    )
    se = math.sqrt(2 * ref.pvalue * (1 - ref.pvalue) / 20_000)  # two independent estimates
    assert 0.005 < ref.pvalue < 0.5  # a case where the comparison is informative
    assert abs(got["p_value"] - ref.pvalue) <= 4 * se


def test_randomization_is_reproducible_and_seed_dependent():
    rng = np.random.default_rng(1)
    wide = pl.DataFrame({"a": rng.random(40), "b": rng.random(40)})
    expr = pr.randomization_test("a", "b", n_resamples=2_000, seed=42)
    first, second = struct_row(wide.select(expr)), struct_row(wide.select(expr))
    assert first == second
    other = struct_row(wide.select(pr.randomization_test("a", "b", n_resamples=2_000, seed=43)))
    assert other["p_value"] != first["p_value"]
    assert other["statistic"] == first["statistic"]


def test_randomization_p_value_counts_the_observed_assignment():
    # identical columns: every flipped sum is 0 = observed, so all R are as extreme
    wide = pl.DataFrame({"a": [0.5, 0.2, 0.1], "b": [0.5, 0.2, 0.1]})
    got = struct_row(wide.select(pr.randomization_test("a", "b", n_resamples=500)))
    assert got["p_value"] == 1.0
    # constant non-zero differences: an exact permutation distribution, not degenerate;
    # of the 2^3 sign patterns only "none flipped" and "all flipped" reach |T| = 0.1
    shifted = pl.DataFrame({"a": [0.6, 0.3, 0.2], "b": [0.5, 0.2, 0.1]})
    got = struct_row(shifted.select(pr.randomization_test("a", "b", n_resamples=20_000)))
    assert abs(got["p_value"] - 2 / 8) < 4 * math.sqrt(2 / 8 * 6 / 8 / 20_000)
    # one query: nothing to test (NaN), whatever the flips
    one = struct_row(
        pl.DataFrame({"a": [0.7], "b": [0.2]}).select(
            pr.randomization_test("a", "b", n_resamples=99, alternative="greater")
        )
    )
    assert math.isnan(one["p_value"])
    assert one["statistic"] == pytest.approx(0.5)
    flips = np.concatenate(list(flip_blocks(1, 99, 0)))
    assert flips.shape == (99, 1)


def test_flip_and_count_blocks_are_fair():
    flips = np.concatenate(list(flip_blocks(37, 3_000, 0)))
    assert flips.shape == (3_000, 37)
    assert abs(flips.mean() - 0.5) < 4 * math.sqrt(0.25 / flips.size)
    counts = np.concatenate(list(count_blocks(37, 1_000, 0)))
    assert counts.shape == (1_000, 37)
    assert np.all(counts.sum(axis=1) == 37)  # n draws with replacement per resample
    assert abs(counts.mean() - 1.0) < 0.02


def test_matrix_core_equals_per_column_expression():
    rng = np.random.default_rng(8)
    a, b = rng.random((30, 5)), rng.random((30, 5))
    many = randomization_matrix(a, b, n_resamples=1_000, seed=9)
    for j in range(5):
        one = randomization_matrix(a[:, j], b[:, j], n_resamples=1_000, seed=9)
        assert one["p_value"][0] == many["p_value"][j]


def reference_bootstrap_p(d: np.ndarray, resamples: int, seed: int) -> tuple[float, np.ndarray]:
    """Slow loop: resample the centred differences with rng.choice, one resample at a time."""
    rng = np.random.default_rng(seed)
    centred = d - d.mean()
    means = np.array([rng.choice(centred, size=len(d)).mean() for _ in range(resamples)])
    return float(np.mean(np.abs(means) >= abs(d.mean()))), means


def test_bootstrap_within_monte_carlo_error_of_slow_reference():
    rng = np.random.default_rng(12)
    for trial in range(3):
        a = rng.random(30)
        b = a - rng.normal(0.05 * trial, 0.2, 30)
        got = struct_row(
            pl.DataFrame({"a": a, "b": b}).select(
                pr.bootstrap_test("a", "b", n_resamples=10_000, seed=trial)
            )
        )
        ref_p, ref_means = reference_bootstrap_p(a - b, 10_000, seed=100 + trial)
        se = math.sqrt(2 * max(ref_p, 0.01) * (1 - ref_p) / 10_000)
        assert abs(got["p_value"] - ref_p) <= 4 * se + 2e-4
        d = a - b
        ref_low, ref_high = d.mean() + np.quantile(ref_means, [0.025, 0.975])
        half = ref_high - ref_low
        assert abs(got["ci_low"] - ref_low) < 0.05 * half
        assert abs(got["ci_high"] - ref_high) < 0.05 * half
        assert got["statistic"] == pytest.approx(d.mean())


def test_bootstrap_interval_level_and_one_sided():
    rng = np.random.default_rng(2)
    a, b = rng.random(50), rng.random(50)
    out90 = bootstrap_matrix(a, b, n_resamples=4_000, seed=1, level=0.90)
    out99 = bootstrap_matrix(a, b, n_resamples=4_000, seed=1, level=0.99)
    assert out99["ci_low"][0] < out90["ci_low"][0] < out90["ci_high"][0] < out99["ci_high"][0]
    greater = bootstrap_matrix(a, b, n_resamples=4_000, seed=1, alternative="greater")
    less = bootstrap_matrix(a, b, n_resamples=4_000, seed=1, alternative="less")
    # the two tails plus the observed assignment counted twice cover all R + 1 outcomes
    total = (greater["p_value"][0] + less["p_value"][0]) * 4_001
    assert 4_001 + 1 <= round(total) <= 4_001 + 2


# ------------------------------------------------------------- corrections


def test_holm_hand_worked():
    # sorted: 0.01 (x4 = 0.04), 0.02 (x3 = 0.06), 0.03 (x2 = 0.06), 0.04 (x1, max -> 0.06)
    p = pl.DataFrame({"p": [0.03, 0.01, 0.04, 0.02]})
    got = p.select(pr.holm("p"))["p"].to_list()
    assert got == pytest.approx([0.06, 0.04, 0.06, 0.06])
    # cap at 1: 0.5 x 3 = 1.5 -> 1
    capped = pl.DataFrame({"p": [0.5, 0.6, 0.01]}).select(pr.holm("p"))["p"].to_list()
    assert capped == pytest.approx([1.0, 1.0, 0.03])


def naive_holm(p: list[float]) -> list[float]:
    """Holm from its definition: adjusted p_(i) = max over j <= i of min(1, (m - j + 1) p_(j))."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out = [0.0] * m
    for rank, i in enumerate(order):
        out[i] = max(min(1.0, (m - j) * p[order[j]]) for j in range(rank + 1))
    return out


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=30))
@example([0.01, 0.01, 0.01])
@example([0.0, 1.0])
def test_holm_equals_definition(p):
    got = pl.DataFrame({"p": p}).select(pr.holm("p"))["p"].to_list()
    assert got == pytest.approx(naive_holm(p), abs=1e-12)
    bonf = pl.DataFrame({"p": p}).select(pr.bonferroni("p"))["p"].to_list()
    assert bonf == pytest.approx([min(1.0, len(p) * x) for x in p], abs=1e-12)
    assert all(h <= b_ + 1e-15 for h, b_ in zip(got, bonf, strict=True))


def test_corrections_per_group_and_skip_missing():
    df = pl.DataFrame(
        {
            "measure": ["AP", "AP", "AP", "P@10", "P@10"],
            "p": [0.01, None, 0.04, float("nan"), 0.02],
        }
    )
    got = df.with_columns(h=pr.holm("p").over("measure"), b=pr.bonferroni("p").over("measure"))
    # AP family has m = 2 (null left out): 0.01 x 2, max(0.04 x 1, 0.02)
    assert got["h"].to_list() == pytest.approx([0.02, None, 0.04, None, 0.02])
    assert got["b"].to_list() == pytest.approx([0.02, None, 0.08, None, 0.02])
    agg = df.group_by("measure", maintain_order=True).agg(pr.holm("p"))
    assert agg["p"].to_list()[0] == pytest.approx([0.02, None, 0.04])


def test_adjust_pvalues_rejects_unknown_method():
    with pytest.raises(ValueError, match="correction must be one of 'none', 'bonferroni'"):
        pr.adjust_pvalues("p", method="fdr")


# ---------------------------------------------------------------- intervals


def test_mean_interval_normal_and_t_by_arithmetic():
    x = [0.1, 0.4, 0.35, 0.8, 0.0, 0.65]
    n = len(x)
    mean = sum(x) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in x) / (n - 1))
    se = sd / math.sqrt(n)
    frame = pl.DataFrame({"x": x})
    normal = struct_row(frame.select(pr.mean_interval("x")))
    assert normal["mean"] == pytest.approx(mean)
    assert normal["std"] == pytest.approx(sd)
    assert normal["stderr"] == pytest.approx(se)
    assert normal["ci_low"] == pytest.approx(mean - 1.959963984540054 * se)
    assert normal["ci_high"] == pytest.approx(mean + 1.959963984540054 * se)
    assert normal["n"] == n
    t90 = struct_row(frame.select(pr.mean_interval("x", interval="t", level=0.9)))
    low, high = sps.t.interval(0.9, n - 1, loc=mean, scale=se)
    assert (t90["ci_low"], t90["ci_high"]) == pytest.approx((low, high), abs=1e-12)


def test_mean_interval_bootstrap_close_to_normal_for_large_n():
    rng = np.random.default_rng(4)
    frame = pl.DataFrame({"x": rng.random(400)})
    boot = struct_row(frame.select(pr.mean_interval("x", interval="bootstrap", seed=1)))
    normal = struct_row(frame.select(pr.mean_interval("x")))
    assert boot["ci_low"] == pytest.approx(normal["ci_low"], abs=0.1 * normal["stderr"] + 2e-3)
    assert boot["ci_high"] == pytest.approx(normal["ci_high"], abs=0.1 * normal["stderr"] + 2e-3)
    assert boot["ci_low"] < boot["mean"] < boot["ci_high"]


def test_mean_interval_single_value_is_nan_spread():
    got = struct_row(pl.DataFrame({"x": [0.3]}).select(pr.mean_interval("x", interval="t")))
    assert got["mean"] == 0.3
    assert math.isnan(got["stderr"])
    assert math.isnan(got["ci_low"])


# ------------------------------------------------------ expressions in Polars


def test_group_by_agg_one_test_per_measure():
    run, qrels = random_corpus(404, systems=2, n_queries=80)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pq = pr.evaluate(run, qrels, MEASURES)
    long = pq.unpivot(MEASURES, index=["system", "query"], variable_name="measure")
    wide = long.pivot(on="system", index=["measure", "query"], values="value")
    out = (
        wide.group_by("measure", maintain_order=True)
        .agg(
            t=pr.paired_ttest("sys1", "sys0"),
            w=pr.wilcoxon("sys1", "sys0", zero_method="zsplit"),
            r=pr.randomization_test("sys1", "sys0", n_resamples=500),
        )
        .unnest("t", separator="_")
    )
    assert out["measure"].to_list() == MEASURES
    for row in out.iter_rows(named=True):
        part = wide.filter(pl.col("measure") == row["measure"])
        ref = sps.ttest_rel(part["sys1"].to_numpy(), part["sys0"].to_numpy())
        assert row["t_statistic"] == pytest.approx(ref.statistic, abs=1e-9)
        assert row["t_p_value"] == pytest.approx(ref.pvalue, abs=1e-9)
        assert row["t_n"] == part.height
        w = sps.wilcoxon(part["sys1"].to_numpy(), part["sys0"].to_numpy(), zero_method="zsplit")
        assert row["w"]["p_value"] == pytest.approx(w.pvalue, abs=1e-9)
        assert 0 < row["r"]["p_value"] <= 1


def test_expressions_accept_expressions_and_lazy_frames():
    frame = pl.DataFrame({"a": [0.1, 0.5, 0.9, 0.3], "b": [0.2, 0.1, 0.4, 0.3]})
    lazy = frame.lazy().select(pr.paired_ttest(pl.col("a") * 2, pl.col("b") * 2)).collect()
    ref = sps.ttest_rel(frame["a"] * 2, frame["b"] * 2)
    assert struct_row(lazy)["statistic"] == pytest.approx(ref.statistic, abs=1e-12)


def test_null_values_raise_with_a_fix():
    frame = pl.DataFrame({"sysA": [0.1, None, 0.9], "sysB": [0.2, 0.1, 0.4]})
    with pytest.raises(ValueError, match=r"'sysA'\) has 1 null values.*fill_null"):
        frame.select(pr.paired_ttest("sysA", "sysB"))


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        (lambda: pr.paired_ttest("a", "b", alternative="two_sided"), "alternative must be"),
        (lambda: pr.randomization_test("a", "b", n_resamples=0), "n_resamples must be an int"),
        (lambda: pr.bootstrap_test("a", "b", level=95), "level must be strictly between"),
        (lambda: pr.mean_interval("a", interval="student"), "interval must be one of 'normal'"),
        (lambda: pr.mean_interval("a", aggregate="median"), "aggregate must be one of 'mean'"),
        (
            lambda: pr.rank_correlation("a", "b", method="spearman"),
            "method must be one of 'kendall'",
        ),
    ],
)
def test_invalid_options_are_named(expr, message):
    with pytest.raises(ValueError, match=message):
        expr()
