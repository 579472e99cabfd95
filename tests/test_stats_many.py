"""Many-system statistics: Tukey HSD, randomised Tukey HSD, FDR corrections, degenerate
inputs, intervals and the meta-evaluation helpers, each against a hand computation,
scipy, or a slow independent reference."""

from __future__ import annotations

import math
import tracemalloc
import typing
import warnings

import numpy as np
import polars as pl
import pytest
import scipy.stats as sps
from hypothesis import example, given, settings
from hypothesis import strategies as st

import polars_rankeval as pr
from polars_rankeval import stats
from polars_rankeval.stats import (
    CORRECTIONS,
    TESTS,
    anova_residual,
    interval_matrix,
    kendall_tau,
    paired_t_power,
    randomized_tukey_matrix,
    tau_ap,
    tukey_hsd_matrix,
)


def struct_row(frame: pl.DataFrame) -> dict:
    return frame.to_series(0).to_list()[0]


def all_pairs(k: int) -> np.ndarray:
    return np.array([(a, b) for a in range(k) for b in range(a + 1, k)])


def topic_matrix(seed: int, n: int, k: int, *, tenths: bool = False) -> np.ndarray:
    """Scores of k systems on n topics: topic difficulty + system effect + noise, in [0, 1]."""
    rng = np.random.default_rng(seed)
    x = rng.beta(2, 3, (n, 1)) + np.linspace(0, 0.15, k)[None, :] + rng.normal(0, 0.12, (n, k))
    x = np.clip(x, 0, 1)
    return np.round(x, 1) if tenths else x


# ------------------------------------------------------------------ registry


def test_registry_names_match_the_literals():
    assert set(typing.get_args(stats.Test)) == set(TESTS)
    assert set(typing.get_args(stats.Correction)) == set(CORRECTIONS)
    assert {t.name for t in TESTS.values()} == set(TESTS)
    assert [t for t, info in TESTS.items() if info.familywise] == ["tukey", "randomized_tukey"]
    assert {c.controls for c in CORRECTIONS.values()} == {"none", "FWER", "FDR"}


# --------------------------------------------------------------- Tukey HSD


def hand_tukey(x: np.ndarray, a: int, b: int) -> tuple[float, float]:
    """Blocked two-way ANOVA written out with sums of squares, then the studentized range."""
    n, k = x.shape
    grand = sum(sum(row) for row in x) / (n * k)
    topic_means = [sum(x[i]) / k for i in range(n)]
    system_means = [sum(x[i][j] for i in range(n)) / n for j in range(k)]
    ss_total = sum((x[i][j] - grand) ** 2 for i in range(n) for j in range(k))
    ss_systems = n * sum((m - grand) ** 2 for m in system_means)
    ss_topics = k * sum((m - grand) ** 2 for m in topic_means)
    ss_error = ss_total - ss_systems - ss_topics
    df_error = (n - 1) * (k - 1)
    mse = ss_error / df_error
    q = abs(system_means[a] - system_means[b]) / math.sqrt(mse / n)
    return q, float(sps.studentized_range.sf(q, k, df_error))


@pytest.mark.parametrize(("seed", "n", "k", "tenths"), [(1, 12, 3, False), (2, 25, 5, True)])
def test_tukey_equals_hand_anova_and_studentized_range(seed, n, k, tenths):
    x = topic_matrix(seed, n, k, tenths=tenths)
    pairs = all_pairs(k)
    out = tukey_hsd_matrix(x, pairs)
    for j, (a, b) in enumerate(pairs):
        q, p = hand_tukey(x, a, b)
        assert out["statistic"][j] == pytest.approx(q, abs=1e-6)
        assert out["p_value"][j] == pytest.approx(p, abs=1e-6)
        d = x[:, a] - x[:, b]
        assert out["mean_diff"][j] == pytest.approx(d.mean(), abs=1e-12)
        assert out["effect_size"][j] == pytest.approx(d.mean() / d.std(ddof=1))
    assert 0 < out["p_value"].min() < 0.05 < out["p_value"].max()  # informative cases


def test_tukey_with_two_systems_is_the_paired_t_test():
    # k = 2: MSE = var(d) / 2, so q = sqrt(2) |t| and P(Q_{2,n-1} >= q) = P(|T_{n-1}| >= |t|)
    x = topic_matrix(3, 15, 2)
    out = tukey_hsd_matrix(x, [(1, 0)])
    ref = sps.ttest_rel(x[:, 1], x[:, 0])
    assert out["statistic"][0] == pytest.approx(math.sqrt(2) * abs(ref.statistic), rel=1e-9)
    assert out["p_value"][0] == pytest.approx(ref.pvalue, abs=1e-6)


def test_tukey_in_compare_is_familywise_over_all_systems():
    x = topic_matrix(4, 20, 4)
    pq = long_frame(x)
    full = pr.compare(pq, "AP", test="tukey")
    assert full["p_adjusted"].to_list() == full["p_value"].to_list()
    ref = tukey_hsd_matrix(x, all_pairs(4))
    assert full["p_value"].to_numpy() == pytest.approx(ref["p_value"], abs=1e-12)
    # against a baseline only the baseline's pairs are reported, still judged among all 4
    base = pr.compare(pq, "AP", test="tukey", baseline="s0")
    for row in base.iter_rows(named=True):
        match = full.filter(
            (pl.col("system_a") == row["system_b"]) & (pl.col("system_b") == row["system_a"])
        )
        assert row["p_value"] == pytest.approx(match["p_value"].item(), abs=1e-12)
        assert row["diff"] == pytest.approx(-match["diff"].item())


def long_frame(x: np.ndarray, measure: str = "AP") -> pl.DataFrame:
    n, k = x.shape
    return pl.DataFrame(
        {
            "system": np.repeat([f"s{j}" for j in range(k)], n),
            "query": np.tile([f"q{i:03d}" for i in range(n)], k),
            measure: x.T.ravel(),
        }
    )


def test_tukey_degenerate_inputs_give_nan():
    # an additive table (topic effect + system effect, no residual): MSE = 0
    additive = np.add.outer([0.1, 0.4, 0.2, 0.3], [0.0, 0.1, 0.3])
    out = tukey_hsd_matrix(additive, all_pairs(3))
    assert np.isnan(out["p_value"]).all()
    one_topic = tukey_hsd_matrix(np.array([[0.2, 0.5, 0.9]]), all_pairs(3))
    assert np.isnan(one_topic["p_value"]).all()
    pq = long_frame(additive)
    got = pr.compare(pq, "AP", test="tukey")
    assert got["significant"].to_list() == [False] * 3
    assert got["p_adjusted"].null_count() == 3


# ----------------------------------------------------- randomised Tukey HSD


def reference_randomized_tukey(x: np.ndarray, a: int, b: int, resamples: int, seed: int) -> float:
    """One permutation at a time: shuffle each topic's row, take the range of the means."""
    rng = np.random.default_rng(seed)
    n, k = x.shape
    observed = abs(x[:, a].mean() - x[:, b].mean())
    count = 0
    for _ in range(resamples):
        shuffled = np.array([x[i, rng.permutation(k)] for i in range(n)])
        means = shuffled.mean(axis=0)
        count += means.max() - means.min() >= observed - 1e-12
    return count / resamples


def test_randomized_tukey_within_monte_carlo_error_of_slow_reference():
    x = topic_matrix(5, 15, 4, tenths=True)
    pairs = all_pairs(4)
    resamples = 4_000
    got = randomized_tukey_matrix(x, pairs, n_resamples=resamples, seed=1)
    informative = 0
    for j, (a, b) in enumerate(pairs):
        ref = reference_randomized_tukey(x, a, b, 2_000, seed=100 + j)
        se = math.sqrt(max(ref, 0.005) * (1 - ref) * (1 / resamples + 1 / 2_000))
        assert abs(got["p_value"][j] - ref) <= 4 * se + 1 / resamples, (a, b, got, ref)
        informative += 0.01 < ref < 0.99
    assert informative >= 2


def test_randomized_tukey_is_seeded_and_independent_of_block_size(monkeypatch):
    x = topic_matrix(6, 30, 5)
    first = randomized_tukey_matrix(x, all_pairs(5), n_resamples=700, seed=3)
    again = randomized_tukey_matrix(x, all_pairs(5), n_resamples=700, seed=3)
    assert first["p_value"].tolist() == again["p_value"].tolist()
    monkeypatch.setattr(stats, "PERMUTE_BUDGET", 2 * 30 * 5)  # blocks of 2 permutations
    small = randomized_tukey_matrix(x, all_pairs(5), n_resamples=700, seed=3)
    assert small["p_value"].tolist() == first["p_value"].tolist()
    other = randomized_tukey_matrix(x, all_pairs(5), n_resamples=700, seed=4)
    assert other["p_value"].tolist() != first["p_value"].tolist()


def test_randomized_tukey_is_at_least_as_conservative_as_pairwise_randomization():
    # the range of k means is at least |any pair's difference|: p never below the
    # pairwise test's on the same permutations' scale (checked in distribution)
    x = topic_matrix(7, 40, 6)
    tukey = randomized_tukey_matrix(x, all_pairs(6), n_resamples=3_000, seed=0)["p_value"]
    pairwise = np.array(
        [
            stats.randomization_matrix(x[:, a], x[:, b], n_resamples=3_000, seed=0)["p_value"][0]
            for a, b in all_pairs(6)
        ]
    )
    assert np.all(tukey >= pairwise - 0.03)
    assert tukey.mean() > pairwise.mean()


def test_randomized_tukey_memory_does_not_grow_with_permutations():
    x = topic_matrix(8, 2_000, 20)

    def peak(resamples: int) -> int:
        tracemalloc.start()
        randomized_tukey_matrix(x, all_pairs(20), n_resamples=resamples, seed=0)
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return top

    few, many = peak(50), peak(1_000)
    assert many < 1.2 * few + 1_000_000, (few, many)


def test_randomized_tukey_in_compare_equals_core_and_handles_one_topic():
    x = topic_matrix(9, 12, 3)
    out = pr.compare(long_frame(x), "AP", test="randomized_tukey", n_resamples=999, seed=2)
    ref = randomized_tukey_matrix(x, all_pairs(3), n_resamples=999, seed=2)
    assert out["p_value"].to_list() == ref["p_value"].tolist()
    assert out["p_adjusted"].to_list() == ref["p_value"].tolist()
    single = pr.compare(long_frame(x[:1]), "AP", test="randomized_tukey", n_resamples=99)
    assert single["p_value"].is_nan().all()
    assert not single["significant"].any()


# ------------------------------------------------------- FDR corrections


@settings(max_examples=80, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=40))
@example([0.01, 0.01, 0.01])
@example([0.0, 1.0, 0.04, 0.04])
@example([0.2])
def test_bh_and_by_equal_scipy(p):
    frame = pl.DataFrame({"p": p})
    bh = frame.select(pr.benjamini_hochberg("p"))["p"].to_numpy()
    by = frame.select(pr.benjamini_yekutieli("p"))["p"].to_numpy()
    assert bh == pytest.approx(sps.false_discovery_control(p, method="bh"), abs=1e-12)
    assert by == pytest.approx(sps.false_discovery_control(p, method="by"), abs=1e-12)
    assert np.all(by >= bh - 1e-15)


def test_fdr_skips_missing_and_works_per_group():
    df = pl.DataFrame(
        {"measure": ["AP"] * 4 + ["RR"] * 2, "p": [0.01, None, 0.04, float("nan"), 0.03, 0.5]}
    )
    got = df.with_columns(
        bh=pr.benjamini_hochberg("p").over("measure"),
        by=pr.benjamini_yekutieli("p").over("measure"),
    )
    # AP: m = 2 (null and NaN left out): 0.01 x 2/1 = 0.02, 0.04 x 2/2 = 0.04
    assert got["bh"].to_list()[:4] == pytest.approx([0.02, None, 0.04, None])
    # c(2) = 1 + 1/2: 0.03, 0.06
    assert got["by"].to_list()[:4] == pytest.approx([0.03, None, 0.06, None])
    assert got["bh"].to_list()[4:] == pytest.approx(list(sps.false_discovery_control([0.03, 0.5])))


@pytest.mark.parametrize("correction", ["bh", "by"])
@pytest.mark.parametrize("family", ["measure", "all"])
def test_compare_fdr_equals_scipy_over_the_family(correction, family):
    x = topic_matrix(10, 30, 5)
    pq = long_frame(x).with_columns(RR=pl.col("AP").sqrt())
    out = pr.compare(pq, correction=correction, family=family)
    parts = out.partition_by("measure", maintain_order=True) if family == "measure" else [out]
    for part in parts:
        ref = sps.false_discovery_control(part["p_value"].to_numpy(), method=correction)
        assert part["p_adjusted"].to_numpy() == pytest.approx(ref, abs=1e-12)
        assert part["significant"].to_list() == list(ref < 0.05)


# --------------------------------------------------------- degenerate input


def test_t_test_constant_nonzero_differences_is_nan_without_warnings():
    a = np.array([0.5, 0.6, 0.7, 0.3])
    frame = pl.DataFrame({"a": a, "b": a - 0.1})  # differences 0.1 up to rounding
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning leaking from scipy fails the test
        t = struct_row(frame.select(pr.paired_ttest("a", "b")))
        same = struct_row(frame.select(pr.paired_ttest("a", "a")))
        boot = struct_row(frame.select(pr.bootstrap_test("a", "b", n_resamples=200)))
        wil = struct_row(frame.select(pr.wilcoxon("a", "a")))
    assert math.isnan(t["p_value"]) and math.isnan(t["statistic"])
    assert math.isnan(same["p_value"])
    assert math.isnan(boot["p_value"])  # was 1/(R+1): "significant"
    assert boot["ci_low"] == pytest.approx(0.1) and boot["ci_high"] == pytest.approx(0.1)
    assert math.isnan(wil["p_value"])
    assert t["mean_diff"] == pytest.approx(0.1)


def test_single_query_is_nan_in_every_pairwise_test():
    frame = pl.DataFrame({"a": [0.9], "b": [0.1]})
    for expr in (
        pr.paired_ttest("a", "b"),
        pr.wilcoxon("a", "b"),
        pr.randomization_test("a", "b", n_resamples=99),
        pr.bootstrap_test("a", "b", n_resamples=99),
    ):
        got = struct_row(frame.select(expr))
        assert math.isnan(got["p_value"]), expr
        assert got["n"] == 1


@pytest.mark.parametrize("test", list(TESTS))
def test_compare_degenerate_pairs(test):
    # s1 = s0 + 0.2 on every query (constant difference), s2 = a copy of s0
    base = np.linspace(0.1, 0.7, 8)
    x = np.column_stack([base, base + 0.2, base])
    out = pr.compare(long_frame(x), "AP", test=test, n_resamples=20_000)
    rows = {(r["system_a"], r["system_b"]): r for r in out.iter_rows(named=True)}
    copies, shifted = rows[("s0", "s2")], [rows[("s0", "s1")], rows[("s1", "s2")]]
    if test in ("t", "bootstrap", "tukey"):  # no variance: undefined, never significant
        for row in rows.values():
            assert math.isnan(row["p_value"]), row
            assert row["p_adjusted"] is None
            assert row["significant"] is False
    elif test == "wilcoxon":  # nothing to rank for copies; constant shifts are rankable
        assert math.isnan(copies["p_value"]) and copies["significant"] is False
        for row in shifted:
            a, b = (x[:, int(s[1])] for s in (row["system_a"], row["system_b"]))
            assert row["p_value"] == pytest.approx(sps.wilcoxon(a, b).pvalue, abs=1e-12)
    else:  # permutation tests: exact distributions, copies never significant
        assert copies["p_value"] == 1.0 and copies["significant"] is False
        # randomization: only "no flip" and "all flipped" reach |T| (2 of 2^8);
        # randomised Tukey: all 8 topics give the +0.2 to one system (3 of 3^8)
        exact = 2 / 2**8 if test == "randomization" else 3 / 3**8
        for row in shifted:
            se = math.sqrt(exact * (1 - exact) / 20_000)
            assert abs(row["p_value"] - exact) <= 4 * se + 1 / 20_000, row


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_expressions_refuse_nan_and_inf(bad):
    frame = pl.DataFrame({"sysA": [0.1, bad, 0.9], "sysB": [0.2, 0.1, 0.4]})
    for expr in (
        pr.paired_ttest("sysA", "sysB"),
        pr.wilcoxon("sysA", "sysB"),
        pr.randomization_test("sysA", "sysB"),
        pr.bootstrap_test("sysB", "sysA"),
        pr.mean_interval("sysA"),
        pr.rank_correlation("sysA", "sysB"),
    ):
        with pytest.raises(ValueError, match=r"'sysA'\) has 1 NaN or infinite values"):
            frame.select(expr)


# ---------------------------------------------------------------- intervals


def test_bca_interval_is_scipys():
    rng = np.random.default_rng(3)
    x = rng.beta(1, 3, 60)
    got = struct_row(
        pl.DataFrame({"x": x}).select(pr.mean_interval("x", interval="bca", seed=5, level=0.9))
    )
    ref = sps.bootstrap(
        (x,),
        np.mean,
        n_resamples=10_000,
        confidence_level=0.9,
        method="BCa",
        rng=np.random.default_rng(5),
    ).confidence_interval
    assert got["ci_low"] == pytest.approx(ref.low, rel=1e-9)
    assert got["ci_high"] == pytest.approx(ref.high, rel=1e-9)
    constant = interval_matrix(np.full(5, 0.3), interval="bca", n_resamples=99)
    assert np.isnan(constant["ci_low"][0])  # scipy: degenerate data


def test_bca_interval_is_scipys_over_many_columns_and_blocks(monkeypatch):
    """The closed-form jackknife of the mean and resamples drawn in blocks of a few rows
    give scipy's BCa interval (its jackknife recomputes the mean n times, O(n^2))."""
    monkeypatch.setattr(stats, "RESAMPLE_BUDGET", 3_000 * 7)  # blocks of 7 rows
    rng = np.random.default_rng(8)
    # continuous values, and 0/1 values (whose sums are exact in any order: resampled
    # means equal to the mean are ties for scipy too)
    x = np.column_stack([rng.beta(1, 3, 3_000), rng.integers(0, 2, 3_000).astype(float)])
    got = interval_matrix(x, interval="bca", n_resamples=500, seed=2, level=0.9)
    for j in range(x.shape[1]):
        ref = sps.bootstrap(
            (x[:, j],),
            np.mean,
            n_resamples=500,
            confidence_level=0.9,
            method="BCa",
            rng=np.random.default_rng(2),
        ).confidence_interval
        assert got["ci_low"][j] == pytest.approx(ref.low, rel=1e-9)
        assert got["ci_high"][j] == pytest.approx(ref.high, rel=1e-9)


def test_bca_counts_resampled_means_equal_in_exact_arithmetic_as_ties():
    """Tenths (P@10) sum to the mean in another order: those resamples are ties, half
    below the mean, whatever the float sums of one order give."""
    x = np.random.default_rng(8).integers(0, 11, 3_000)[:, None] / 10
    means = stats.bootstrap_means(x, n_resamples=500, seed=2)
    exact = np.rint(means * 3_000 * 10).astype(np.int64)  # resampled totals, in tenths
    total = int(np.rint(x.sum() * 10))
    assert (exact == total).sum() >= 1  # the case at hand: some resamples tie
    share = ((exact < total).sum() + (exact <= total).sum()) / (2 * 500)
    z0, z = sps.norm.ppf(share), sps.norm.ppf(0.95)
    u = x[:, 0] - x.mean()
    a = (u**3).sum() / (6 * (u**2).sum() ** 1.5)
    ends = [sps.norm.cdf(z0 + (z0 + s) / (1 - a * (z0 + s))) for s in (-z, z)]
    low, high = stats.bca_interval(x, means, 0.9)
    assert low[0] == pytest.approx(np.percentile(means[:, 0], 100 * ends[0]), rel=1e-12)
    assert high[0] == pytest.approx(np.percentile(means[:, 0], 100 * ends[1]), rel=1e-12)


def test_rr_normal_interval_is_clipped_and_says_so():
    rr = np.array([1.0] * 18 + [0.5, 0.25])  # mean 0.9375, normal upper end above 1
    free = interval_matrix(rr)
    clipped = interval_matrix(rr, bounds=(0.0, 1.0))
    assert free["ci_high"][0] > 1.0
    assert clipped["ci_high"][0] == 1.0
    assert clipped["ci_low"][0] == free["ci_low"][0]
    assert clipped["clipped"].tolist() == [True]
    assert interval_matrix(rr * 0.5, bounds=(0.0, 1.0))["clipped"].tolist() == [False]


def test_gmean_and_sum_intervals_by_arithmetic():
    ap = np.array([0.5, 0.25, 0.0, 1.0])
    logs = np.log(np.maximum(ap, 1e-5))
    se = logs.std(ddof=1) / 2
    z = sps.norm.ppf(0.975)
    gm = interval_matrix(ap, aggregate="gmean")
    assert gm["mean"][0] == pytest.approx(math.exp(logs.mean()))
    assert gm["stderr"][0] == pytest.approx(se)
    assert gm["ci_low"][0] == pytest.approx(math.exp(logs.mean() - z * se))
    assert gm["ci_high"][0] == pytest.approx(math.exp(logs.mean() + z * se))
    counts = np.array([10.0, 0.0, 4.0, 6.0])
    total = interval_matrix(counts, aggregate="sum", interval="t")
    half = sps.t.ppf(0.975, 3) * counts.std(ddof=1) / 2
    assert total["mean"][0] == 20.0
    assert total["stderr"][0] == pytest.approx(4 * counts.std(ddof=1) / 2)
    assert total["ci_low"][0] == pytest.approx(4 * (5.0 - half))
    assert total["ci_high"][0] == pytest.approx(4 * (5.0 + half))


# ----------------------------------------------------------- meta-evaluation


def test_rank_correlation_hand_examples():
    # reference order A > B > C > D
    frame = pl.DataFrame(
        {
            "ref": [4.0, 3.0, 2.0, 1.0],
            "top_swap": [3.0, 4.0, 2.0, 1.0],  # B above A
            "bottom_swap": [4.0, 3.0, 1.0, 2.0],  # D above C
            "reversed": [1.0, 2.0, 3.0, 4.0],
        }
    )
    got = frame.select(
        k_top=pr.rank_correlation("ref", "top_swap"),
        k_bottom=pr.rank_correlation("ref", "bottom_swap"),
        ap_top=pr.rank_correlation("ref", "top_swap", method="tau_ap"),
        ap_bottom=pr.rank_correlation("ref", "bottom_swap", method="tau_ap"),
        ap_same=pr.rank_correlation("ref", "ref", method="tau_ap"),
        ap_reversed=pr.rank_correlation("ref", "reversed", method="tau_ap"),
    ).row(0, named=True)
    # Kendall: one discordant pair of 6 either way: (5 - 1) / 6
    assert got["k_top"] == pytest.approx(4 / 6)
    assert got["k_bottom"] == pytest.approx(4 / 6)
    # tau_ap, estimate order B, A, C, D: C(2) = 0 (B is below A), C(3) = 2, C(4) = 3
    assert got["ap_top"] == pytest.approx(2 / 3 * (0 / 1 + 2 / 2 + 3 / 3) - 1)  # 1/3
    # estimate order A, B, D, C: C(2) = 1, C(3) = 2 (A, B above D), C(4) = 2 (D below C)
    assert got["ap_bottom"] == pytest.approx(2 / 3 * (1 / 1 + 2 / 2 + 2 / 3) - 1)  # 7/9
    assert got["ap_same"] == pytest.approx(1.0)
    assert got["ap_reversed"] == pytest.approx(-1.0)


def test_tau_ap_reproduces_the_published_ircor_example():
    # the example of R package ircor's tauAP (Urbano), x the true scores: 0.3928571
    x = [0.67, 0.45, 0.29, 0.12, 0.57, 0.24, 0.94, 0.75, 0.08, 0.54]
    y = [0.48, 0.68, 0.32, 0.09, 0.06, 0.61, 0.87, 0.22, 0.44, 0.84]
    assert tau_ap(np.array(x), np.array(y)) == pytest.approx(0.3928571, abs=1e-7)


def slow_tau_ap(reference: list[float], estimate: list[float]) -> float:
    """The definition: walk the estimate best first, count who above is also above in truth."""
    order = sorted(range(len(estimate)), key=lambda i: -estimate[i])
    n = len(order)
    total = 0.0
    for rank in range(1, n):
        item = order[rank]
        correct = sum(reference[j] > reference[item] for j in order[:rank])
        total += correct / rank
    return 2 * total / (n - 1) - 1


@settings(max_examples=60, deadline=None)
@given(st.permutations(list(range(9))), st.permutations(list(range(9))))
def test_tau_ap_equals_definition_and_kendall_equals_scipy(p, q):
    x, y = np.array(p, dtype=float), np.array(q, dtype=float)
    assert tau_ap(x, y) == pytest.approx(slow_tau_ap(list(x), list(y)), abs=1e-12)
    assert kendall_tau(x, y) == pytest.approx(sps.kendalltau(x, y).statistic, abs=1e-12)
    # averaged over both directions tau_ap is symmetric by construction; alone it is not
    assert -1 - 1e-12 <= tau_ap(x, y) <= 1 + 1e-12


def test_tau_ap_refuses_ties_and_works_per_group():
    tied = pl.DataFrame({"a": [0.3, 0.2, 0.1], "b": [0.5, 0.5, 0.1]})
    with pytest.raises(ValueError, match=r"'b'\) has tied values \(0.5 at rows \[0, 1\]\)"):
        tied.select(pr.rank_correlation("a", "b", method="tau_ap"))
    # Kendall's tau-b handles the tie: C = 2, D = 0, T_b = 1: 2 / sqrt(3 * 2)
    assert tied.select(pr.rank_correlation("a", "b")).item() == pytest.approx(2 / math.sqrt(6))
    groups = pl.DataFrame(
        {"subset": ["x"] * 3 + ["y"] * 3, "a": [3.0, 2, 1, 3, 2, 1], "b": [3.0, 2, 1, 1, 2, 3]}
    )
    out = groups.group_by("subset", maintain_order=True).agg(
        tau=pr.rank_correlation("a", "b", method="tau_ap")
    )
    assert out["tau"].to_list() == pytest.approx([1.0, -1.0])


def test_discriminative_power_hand_example():
    # 3 systems on 6 queries; differences chosen so the t-tests are computed by hand
    base = np.array([0.20, 0.35, 0.50, 0.10, 0.60, 0.40])
    up = np.array([0.10, 0.20, 0.10, 0.20, 0.10, 0.20])  # B - A: clearly positive
    wobble = np.array([0.05, -0.05, 0.10, -0.10, 0.00, 0.00])  # C - A: mean 0
    x = np.column_stack([base, base + up, base + wobble])
    pq = long_frame(x)
    got = pr.discriminative_power(pq, "AP", test="t", alpha=0.05)

    def t_p(d: np.ndarray) -> float:
        n = len(d)
        mean = sum(d) / n
        sd = math.sqrt(sum((v - mean) ** 2 for v in d) / (n - 1))
        return 2 * sps.t.sf(abs(mean / (sd / math.sqrt(n))), n - 1)

    # B - A: mean 0.15, sd 0.0548 -> t = 6.71, p = 0.0011; C - A: mean 0 -> p = 1;
    # C - B = wobble - up: mean -0.15, sd 0.1049 -> t = -3.50, p = 0.017
    p_values = [t_p(up), t_p(wobble), t_p(wobble - up)]
    assert p_values[0] < 0.05 and p_values[1] > 0.05 and p_values[2] < 0.05
    expected = sum(p < 0.05 for p in p_values) / 3
    assert got.row(0, named=True) == {
        "measure": "AP",
        "pairs": 3,
        "significant": 2,
        "discriminative_power": pytest.approx(expected),
    }


def test_discriminative_power_defaults_to_randomized_tukey():
    x = topic_matrix(11, 30, 5)
    pq = long_frame(x).with_columns(P=(pl.col("AP") * 10).round() / 10)
    got = pr.discriminative_power(pq, n_resamples=2_000, seed=1)
    ref = pr.compare(pq, test="randomized_tukey", n_resamples=2_000, seed=1)
    for row in got.iter_rows(named=True):
        part = ref.filter(pl.col("measure") == row["measure"])
        assert row["pairs"] == 10
        assert row["significant"] == part["significant"].sum()
        assert row["discriminative_power"] == pytest.approx(part["significant"].mean())


def test_topic_set_size_hand_example():
    # detect 0.05 when per-topic differences have sd 0.2, alpha 0.05, power 0.8
    n = pr.topic_set_size(0.05, 0.2)
    z = sps.norm.ppf
    approx = ((z(0.975) + z(0.8)) * 0.2 / 0.05) ** 2 + z(0.975) ** 2 / 2  # 127.5
    assert abs(n - approx) <= 1.5

    def power(m: int) -> float:  # the noncentral t, written out
        crit = sps.t.ppf(0.975, m - 1)
        nc = math.sqrt(m) * 0.05 / 0.2
        return sps.nct.sf(crit, m - 1, nc) + sps.nct.cdf(-crit, m - 1, nc)

    assert power(n - 1) < 0.8 <= power(n)
    assert paired_t_power(n, 0.05, 0.2) == pytest.approx(power(n), abs=1e-12)
    # one-sided needs fewer; a larger difference needs fewer; more power needs more
    assert pr.topic_set_size(0.05, 0.2, alternative="greater") < n
    assert pr.topic_set_size(0.1, 0.2) < n < pr.topic_set_size(0.05, 0.2, power=0.9)
    assert pr.topic_set_size(1.0, 0.01) == 2  # huge effect: the minimum (t crit 12.7 at df 1)


def test_paired_t_power_matches_simulation():
    rng = np.random.default_rng(0)
    n, diff, sd, sims = 20, 0.08, 0.2, 20_000
    d = rng.normal(diff, sd, (sims, n))
    rejected = (sps.ttest_1samp(d, 0.0, axis=1).pvalue < 0.05).mean()
    expected = paired_t_power(n, diff, sd)
    assert abs(rejected - expected) < 4 * math.sqrt(expected * (1 - expected) / sims)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: pr.topic_set_size(0.0, 0.2), "diff .* must be non-zero"),
        (lambda: pr.topic_set_size(0.05, -1.0), "std .* must be > 0"),
        (lambda: pr.topic_set_size(0.05, 0.2, power=80), "power must be strictly between"),
        (lambda: pr.topic_set_size(1e-4, 1.0, max_topics=1000), "more than max_topics=1000"),
        (lambda: pr.paired_t_power(1, 0.05, 0.2), "n must be an int >= 2"),
    ],
)
def test_design_arguments_are_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_anova_residual_equals_the_textbook_decomposition():
    x = topic_matrix(12, 10, 4)
    mse, df = anova_residual(x)
    n, k = x.shape
    ss_total = ((x - x.mean()) ** 2).sum()
    ss_sys = n * ((x.mean(axis=0) - x.mean()) ** 2).sum()
    ss_top = k * ((x.mean(axis=1) - x.mean()) ** 2).sum()
    assert df == (n - 1) * (k - 1)
    assert mse == pytest.approx((ss_total - ss_sys - ss_top) / df)
