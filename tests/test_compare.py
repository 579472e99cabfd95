"""compare / summarize / align on long per-query frames: scipy, arithmetic, errors."""

from __future__ import annotations

import importlib
import math
import os
import pty
import select
import subprocess
import sys
import warnings

import numpy as np
import polars as pl
import pytest
import scipy.stats as sps
from corpus import random_corpus
from polars.testing import assert_frame_equal

import polars_rankeval as pr

MEASURES = ["AP", "P@10", "nDCG@10", "RR"]
# the module (pr.compare is the function of the same name)
compare_module = importlib.import_module("polars_rankeval.compare")


@pytest.fixture(scope="module")
def per_query() -> pl.DataFrame:
    run, qrels = random_corpus(505, systems=4, n_queries=70)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pr.evaluate(run, qrels, MEASURES)


def column(pq: pl.DataFrame, system: str, measure: str) -> np.ndarray:
    return pq.filter(pl.col("system") == system).sort("query")[measure].to_numpy()


def test_baseline_rows_equal_scipy_and_arithmetic(per_query):
    out = pr.compare(per_query, baseline="sys0")
    assert out.columns == [
        "measure",
        "aggregate",
        "system_a",
        "system_b",
        "mean_a",
        "mean_b",
        "diff",
        "statistic",
        "p_value",
        "p_adjusted",
        "significant",
        "effect_size",
        "n",
        "wins",
        "ties",
        "losses",
    ]
    assert out.height == len(MEASURES) * 3  # every other system against the baseline
    assert set(out["system_b"]) == {"sys0"}
    for row in out.iter_rows(named=True):
        a = column(per_query, row["system_a"], row["measure"])
        b = column(per_query, "sys0", row["measure"])
        ref = sps.ttest_rel(a, b)
        assert row["statistic"] == pytest.approx(ref.statistic, abs=1e-9)
        assert row["p_value"] == pytest.approx(ref.pvalue, abs=1e-9)
        assert row["p_adjusted"] == row["p_value"]  # correction="none"
        assert row["significant"] == (ref.pvalue < 0.05)
        assert row["mean_a"] == pytest.approx(a.mean())
        assert row["mean_b"] == pytest.approx(b.mean())
        assert row["diff"] == pytest.approx(a.mean() - b.mean())
        assert row["effect_size"] == pytest.approx((a - b).mean() / (a - b).std(ddof=1))
        assert (row["wins"], row["ties"], row["losses"]) == (
            (a > b).sum(),
            (a == b).sum(),
            (a < b).sum(),
        )
        assert row["n"] == len(a) == row["wins"] + row["ties"] + row["losses"]


def test_all_pairs_without_baseline(per_query):
    out = pr.compare(per_query, ["AP", "RR"], test="wilcoxon")
    assert out.height == 2 * 6  # 4 systems -> 6 pairs per measure
    pairs = out.filter(pl.col("measure") == "AP").select("system_a", "system_b").rows()
    assert pairs == [
        ("sys0", "sys1"),
        ("sys0", "sys2"),
        ("sys0", "sys3"),
        ("sys1", "sys2"),
        ("sys1", "sys3"),
        ("sys2", "sys3"),
    ]
    row = out.row(4, named=True)  # AP, sys1 vs sys3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = sps.wilcoxon(column(per_query, "sys1", "AP"), column(per_query, "sys3", "AP"))
    assert row["statistic"] == pytest.approx(ref.statistic, abs=1e-9)
    assert row["p_value"] == pytest.approx(ref.pvalue, abs=1e-9)


def test_wilcoxon_options_pass_through(per_query):
    out = pr.compare(
        per_query, "P@10", baseline="sys2", test="wilcoxon", test_options={"zero_method": "pratt"}
    )
    for row in out.iter_rows(named=True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = sps.wilcoxon(
                column(per_query, row["system_a"], "P@10"),
                column(per_query, "sys2", "P@10"),
                zero_method="pratt",
            )
        assert row["p_value"] == pytest.approx(ref.pvalue, abs=1e-9)


@pytest.mark.parametrize("family", ["measure", "all"])
def test_holm_and_bonferroni_over_the_family(per_query, family):
    holm = pr.compare(per_query, baseline="sys0", correction="holm", family=family)
    bonf = pr.compare(per_query, baseline="sys0", correction="bonferroni", family=family)
    groups = ["measure"] if family == "measure" else []
    for h_part, b_part in zip(
        holm.partition_by(groups, maintain_order=True) if groups else [holm],
        bonf.partition_by(groups, maintain_order=True) if groups else [bonf],
        strict=True,
    ):
        p = h_part["p_value"].to_numpy()
        m = len(p)
        order = np.argsort(p)
        expected = np.empty(m)
        running = 0.0
        for rank, i in enumerate(order):  # step-down, written out
            running = max(running, min(1.0, (m - rank) * p[i]))
            expected[i] = running
        assert h_part["p_adjusted"].to_numpy() == pytest.approx(expected, abs=1e-12)
        assert b_part["p_adjusted"].to_numpy() == pytest.approx(np.minimum(1, m * p), abs=1e-12)
        assert h_part["significant"].to_list() == list(expected < 0.05)


def test_randomization_row_equals_expression_with_same_seed(per_query):
    out = pr.compare(per_query, baseline="sys1", test="randomization", n_resamples=600, seed=5)
    wide = per_query.pivot(on="system", index="query", values="nDCG@10").sort("query")
    for row in out.filter(pl.col("measure") == "nDCG@10").iter_rows(named=True):
        expr = pr.randomization_test(row["system_a"], "sys1", n_resamples=600, seed=5)
        got = wide.select(expr).to_series().to_list()[0]
        assert got["p_value"] == row["p_value"]
        assert got["statistic"] == pytest.approx(row["diff"], abs=1e-12)


def test_column_blocks_do_not_change_results(per_query, monkeypatch):
    whole = pr.compare(per_query, test="bootstrap", n_resamples=300, seed=2)
    monkeypatch.setattr(compare_module, "COLUMN_BLOCK", 5)
    blocked = pr.compare(per_query, test="bootstrap", n_resamples=300, seed=2)
    assert_frame_equal(whole, blocked)


def test_lazy_input_and_integer_ids(per_query):
    codes = per_query.with_columns(
        pl.col("system").str.slice(3).cast(pl.Int64),
        pl.col("query").cast(pl.Categorical).to_physical().cast(pl.Int32),
    )
    out = pr.compare(codes.lazy(), "AP", baseline=0)
    assert out["system_b"].dtype == pl.Int64
    ref = pr.compare(per_query, "AP", baseline="sys0")
    assert out["p_value"].to_list() == pytest.approx(ref["p_value"].to_list(), abs=1e-12)


def mismatched(per_query: pl.DataFrame) -> pl.DataFrame:
    """sys1 lacks two queries, sys3 one."""
    queries = per_query["query"].unique().sort().to_list()
    drop = (pl.col("system") == "sys1") & pl.col("query").is_in(queries[:2])
    drop |= (pl.col("system") == "sys3") & (pl.col("query") == queries[5])
    return per_query.filter(~drop), queries


def test_mismatched_queries_name_the_queries_and_the_fix(per_query):
    pq, queries = mismatched(per_query)
    with pytest.raises(ValueError) as err:
        pr.compare(pq, baseline="sys0")
    msg = str(err.value)
    assert f"system 'sys1' lacks 2 ({queries[0]}, {queries[1]})" in msg
    assert f"system 'sys3' lacks 1 ({queries[5]})" in msg
    assert "missing='drop'" in msg
    assert "missing='zero'" in msg
    assert f"keep only the {len(queries) - 3} queries" in msg


def test_missing_drop_keeps_common_queries(per_query):
    pq, queries = mismatched(per_query)
    out = pr.compare(pq, "AP", baseline="sys0", missing="drop")
    common = sorted(set(queries) - {queries[0], queries[1], queries[5]})
    assert set(out["n"]) == {len(common)}
    keep = per_query.filter(pl.col("query").is_in(common))
    ref = pr.compare(keep, "AP", baseline="sys0")
    assert_frame_equal(out, ref)


def test_missing_zero_scores_absent_queries_zero(per_query):
    pq, queries = mismatched(per_query)
    out = pr.compare(pq, "RR", baseline="sys0", missing="zero")
    row = out.filter(pl.col("system_a") == "sys1").row(0, named=True)
    a = column(per_query, "sys1", "RR").copy()
    a[:2] = 0.0  # the two absent queries, first in sorted order
    b = column(per_query, "sys0", "RR")
    assert row["n"] == len(queries)
    assert row["mean_a"] == pytest.approx(a.mean())
    assert row["p_value"] == pytest.approx(sps.ttest_rel(a, b).pvalue, abs=1e-9)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"baseline": "bm25"}, "baseline 'bm25' is not a system"),
        ({"test": "ttest"}, "test must be one of 't', 'wilcoxon'"),
        ({"correction": "fdr"}, "correction must be one of 'none', 'bonferroni', 'holm'"),
        ({"baseline": []}, "baseline=\\[\\] names no system"),
        ({"baseline": ["sys0", "bm25"]}, "baseline 'bm25' is not a system"),
        (
            {"test": "tukey", "correction": "holm"},
            "controls the family-wise error over all pairs itself: correction must be one of "
            "'none'. Got 'holm'",
        ),
        (
            {"test": "randomized_tukey", "alternative": "greater"},
            "is two-sided: alternative must be one of 'two-sided'. Got 'greater'",
        ),
        ({"aggregate": "median"}, "aggregate must be one of 'trec', 'mean'"),
        ({"missing": "ignore"}, "missing must be one of 'drop', 'zero', 'error'"),
        ({"measures": ["MAP"]}, "per_query has no measure column 'MAP'"),
        ({"system": "run"}, "per_query has no system column 'run'"),
    ],
)
def test_bad_arguments_are_named(per_query, kwargs, message):
    with pytest.raises(ValueError, match=message):
        pr.compare(per_query, **kwargs)


def test_duplicate_rows_and_single_system_raise(per_query):
    with pytest.raises(ValueError, match="rows for system='sys0'"):
        pr.compare(pl.concat([per_query, per_query.head(1)]))
    with pytest.raises(ValueError, match="at least two systems"):
        pr.compare(per_query.filter(pl.col("system") == "sys0"))


# ------------------------------------------------------------------ summarize


def test_summarize_stderr_and_intervals(per_query):
    normal = pr.summarize(per_query, ["AP", "RR"])
    t95 = pr.summarize(per_query, ["AP", "RR"], interval="t", level=0.9)
    assert normal.columns == [
        "system",
        "measure",
        "aggregate",
        "mean",
        "std",
        "stderr",
        "ci_low",
        "ci_high",
        "n",
        "clipped",
    ]
    assert normal.select("system", "measure").rows()[:3] == [
        ("sys0", "AP"),
        ("sys0", "RR"),
        ("sys1", "AP"),
    ]
    for row, trow in zip(normal.iter_rows(named=True), t95.iter_rows(named=True), strict=True):
        x = column(per_query, row["system"], row["measure"])
        n = len(x)
        sd = math.sqrt(((x - x.mean()) ** 2).sum() / (n - 1))
        assert row["n"] == n
        assert row["mean"] == pytest.approx(x.mean())
        assert row["std"] == pytest.approx(sd)
        assert row["stderr"] == pytest.approx(sd / math.sqrt(n))
        z = sps.norm.ppf(0.975)
        low, high = x.mean() - z * sd / math.sqrt(n), x.mean() + z * sd / math.sqrt(n)
        # AP and RR lie in [0, 1]: the interval is clipped there, and says so
        assert row["ci_low"] == pytest.approx(max(low, 0.0))
        assert row["ci_high"] == pytest.approx(min(high, 1.0))
        assert row["clipped"] == (low < 0.0 or high > 1.0)
        low, high = sps.t.interval(0.9, n - 1, loc=x.mean(), scale=sd / math.sqrt(n))
        assert (trow["ci_low"], trow["ci_high"]) == pytest.approx(
            (max(low, 0.0), min(high, 1.0)), abs=1e-12
        )


def test_summarize_bootstrap_is_seeded_and_agrees_with_scipy(per_query):
    boot = pr.summarize(per_query, "nDCG@10", interval="bootstrap", n_resamples=10_000, seed=3)
    again = pr.summarize(per_query, "nDCG@10", interval="bootstrap", n_resamples=10_000, seed=3)
    assert_frame_equal(boot, again)
    for row in boot.iter_rows(named=True):
        x = column(per_query, row["system"], "nDCG@10")
        ref = sps.bootstrap(
            (x,),
            np.mean,
            n_resamples=10_000,
            method="percentile",
            rng=np.random.default_rng(77),
        ).confidence_interval
        assert row["ci_low"] < row["mean"] < row["ci_high"]
        # two independent Monte Carlo estimates of the same percentiles
        assert row["ci_low"] == pytest.approx(ref.low, abs=0.1 * row["stderr"])
        assert row["ci_high"] == pytest.approx(ref.high, abs=0.1 * row["stderr"])


def test_summarize_without_system_column():
    pq = pl.DataFrame({"query": ["a", "b", "c"], "P@5": [0.2, 0.4, 0.6]})
    out = pr.summarize(pq)
    assert out.columns[0] == "measure"
    assert out.row(0, named=True)["stderr"] == pytest.approx(0.2 / math.sqrt(3))


PROGRESS_SCRIPT = """
import polars as pl, polars_rankeval as pr
pq = pl.DataFrame({"system": ["a"] * 6 + ["b"] * 6, "query": list("uvwxyz") * 2,
                   "AP": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.2, 0.2, 0.5, 0.3, 0.9, 0.7]})
pr.compare(pq, baseline="a", test="randomization", n_resamples=1000)
"""


def read_all(fd: int) -> str:
    """Everything written to a pseudo-terminal so far (a slow machine redraws the bar more
    often: more than one read's 4096 bytes)."""
    chunks = []
    while select.select([fd], [], [], 0.2)[0]:
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode()


def test_progress_only_on_a_terminal(per_query, capfd):
    pr.compare(per_query, "AP", baseline="sys0", test="randomization", n_resamples=600)
    assert capfd.readouterr().err == ""  # stderr is captured here: not a terminal
    leader, follower = pty.openpty()
    try:
        subprocess.run(
            [sys.executable, "-c", PROGRESS_SCRIPT], stderr=follower, check=True, timeout=120
        )
        text = read_all(leader)
    finally:
        os.close(leader)
        os.close(follower)
    assert "randomization test, comparisons 1-1 of 1, resamples: 512/1000" in text
    assert "resamples: 1000/1000" in text


# ------------------------------------------------- aggregation-aware scores


@pytest.fixture(scope="module")
def aggregated() -> pl.DataFrame:
    """Measures that trec_eval combines as a mean, a geometric mean and a total."""
    run, qrels = random_corpus(606, systems=3, n_queries=40)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pr.evaluate(run, qrels, ["AP", "GMAP", "NumRet", "NumRelRet"], missing="zero")


def test_compare_and_summarize_scores_agree_with_mean_scores(aggregated):
    means = pr.mean_scores(aggregated)
    expected = {
        (row["system"], m): row[m]
        for row in means.iter_rows(named=True)
        for m in ("AP", "GMAP", "NumRet", "NumRelRet")
    }
    # GMAP differs from the arithmetic mean of the same per-query AP values
    assert expected[("sys0", "GMAP")] < expected[("sys0", "AP")]
    out = pr.compare(aggregated, baseline="sys0")
    assert dict(out.select("measure", "aggregate").unique(maintain_order=True).rows()) == {
        "AP": "mean",
        "GMAP": "gmean",
        "NumRet": "sum",
        "NumRelRet": "sum",
    }
    for row in out.iter_rows(named=True):
        assert row["mean_a"] == pytest.approx(expected[(row["system_a"], row["measure"])])
        assert row["mean_b"] == pytest.approx(expected[(row["system_b"], row["measure"])])
        assert row["diff"] == pytest.approx(row["mean_a"] - row["mean_b"])
    summary = pr.summarize(aggregated)
    for row in summary.iter_rows(named=True):
        assert row["mean"] == pytest.approx(expected[(row["system"], row["measure"])])
    plain = pr.summarize(aggregated, "GMAP", aggregate="mean")
    assert plain["mean"].to_list() == pytest.approx(means["AP"].to_list())


def test_gmap_is_tested_on_log_ap_and_counts_on_per_query_values(aggregated):
    out = pr.compare(aggregated, ["GMAP", "NumRet"], baseline="sys0")
    for row in out.iter_rows(named=True):
        a = column(aggregated, row["system_a"], row["measure"])
        b = column(aggregated, "sys0", row["measure"])
        if row["measure"] == "GMAP":
            a, b = np.log(np.maximum(a, 1e-5)), np.log(np.maximum(b, 1e-5))
        ref = sps.ttest_rel(a, b)
        assert row["statistic"] == pytest.approx(ref.statistic, abs=1e-9)
        assert row["p_value"] == pytest.approx(ref.pvalue, abs=1e-9)
    plain = pr.compare(aggregated, "GMAP", baseline="sys0", aggregate="mean")
    ap = pr.compare(aggregated, "AP", baseline="sys0")
    assert plain["p_value"].to_list() == pytest.approx(ap["p_value"].to_list(), abs=1e-12)


def test_summarize_gmap_interval_on_the_log_scale(aggregated):
    row = pr.summarize(aggregated, "GMAP", interval="t").row(0, named=True)
    logs = np.log(np.maximum(column(aggregated, "sys0", "GMAP"), 1e-5))
    half = sps.t.ppf(0.975, len(logs) - 1) * logs.std(ddof=1) / math.sqrt(len(logs))
    assert row["aggregate"] == "gmean"
    assert row["ci_low"] == pytest.approx(math.exp(logs.mean() - half))
    assert row["ci_high"] == pytest.approx(min(1.0, math.exp(logs.mean() + half)))


# ------------------------------------------------------ bad values, baselines


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), None])
def test_nan_inf_and_null_values_name_measure_system_and_query(per_query, bad):
    queries = per_query["query"].unique().sort()
    target = (pl.col("system") == "sys2") & (pl.col("query") == queries[3])
    pq = per_query.with_columns(
        RR=pl.when(target).then(pl.lit(bad, dtype=pl.Float64)).otherwise("RR")
    )
    where = f"system='sys2', query='{queries[3]}'"
    for call in (
        lambda: pr.compare(pq, test="randomization", n_resamples=100),
        lambda: pr.compare(pq, test="bootstrap", n_resamples=100),
        lambda: pr.compare(pq, test="tukey"),
        lambda: pr.summarize(pq),
        lambda: pr.report(pq),
    ):
        with pytest.raises(ValueError, match=rf"measure 'RR' has 1 .*first: {where}"):
            call()


def test_several_baselines_test_each_unordered_pair_once(per_query):
    out = pr.compare(per_query, "AP", baseline=["sys2", "sys0"])
    pairs = out.select("system_a", "system_b").rows()
    assert pairs == [
        ("sys0", "sys2"),
        ("sys1", "sys2"),
        ("sys3", "sys2"),
        ("sys1", "sys0"),
        ("sys3", "sys0"),
    ]
    single = pr.compare(per_query, "AP", baseline="sys0")
    for row in out.filter(pl.col("system_b") == "sys0").iter_rows(named=True):
        ref = single.filter(pl.col("system_a") == row["system_a"]).row(0, named=True)
        assert row["p_value"] == ref["p_value"]
    dup = pr.compare(per_query, "AP", baseline=("sys2", "sys2"))
    assert dup.height == 3


def test_summarize_bca_and_clipping_options(per_query):
    bca = pr.summarize(per_query, "RR", interval="bca", n_resamples=2_000, seed=4)
    for row in bca.iter_rows(named=True):
        x = column(per_query, row["system"], "RR")
        ref = sps.bootstrap(
            (x,), np.mean, n_resamples=2_000, method="BCa", rng=np.random.default_rng(4)
        ).confidence_interval
        assert row["ci_low"] == pytest.approx(max(ref.low, 0.0))
        assert row["ci_high"] == pytest.approx(min(ref.high, 1.0))
    free = pr.summarize(per_query, "RR", clip=False)
    assert not free["clipped"].any()
    assert pr.summarize(per_query.rename({"RR": "custom"}), "custom")["clipped"].sum() == 0


def test_measure_bounds_and_kinds():
    assert compare_module.measure_bounds("P_10") == (0.0, 1.0)
    assert compare_module.measure_bounds("nDCG(gains=0:-1;1:1)@10") is None
    assert compare_module.measure_bounds("nDCG(gains=1:3;2:9)") == (0.0, 1.0)
    assert compare_module.measure_bounds("num_rel_ret") == (0.0, math.inf)
    assert compare_module.measure_bounds("my_column") is None
    assert compare_module.measure_kind("gm_bpref") == "gmean"


PROGRESS_TUKEY = """
import numpy as np, polars as pl, polars_rankeval as pr
rng = np.random.default_rng(0)
pq = pl.DataFrame({"system": np.repeat(["a", "b", "c"], 20), "query": np.tile(range(20), 3),
                   "AP": rng.random(60)})
pr.compare(pq, test="randomized_tukey", n_resamples=1000)
"""


def test_randomized_tukey_progress_on_a_terminal():
    leader, follower = pty.openpty()
    try:
        subprocess.run(
            [sys.executable, "-c", PROGRESS_TUKEY], stderr=follower, check=True, timeout=120
        )
        text = read_all(leader)
    finally:
        os.close(leader)
        os.close(follower)
    assert "randomised Tukey HSD test, AP (1 of 1), permutations: 512/1000" in text
    assert "permutations: 1000/1000" in text
