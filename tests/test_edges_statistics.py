"""Issue 37, "nothing silently wrong": the statistics refuse or handle the inputs that
gave a silently wrong answer (ids averaged as measures, p-values outside [0, 1],
intervals clipped to wrong bounds, lower-is-better measures bolded as best, NaN power)."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
import scipy.integrate
import scipy.stats as sps

import polars_rankeval as pr
from polars_rankeval.compare import SUMMARY_COLUMNS

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


# ------------------------------------------------- item 5: power on 2-3 topics


def power_by_quadrature(n: int, diff: float, std: float, alpha: float, sided: int) -> float:
    """P(reject) for the paired t-test, from T' = (Z + lambda) / sqrt(V / df) with V
    chi-square(df): integrate P(Z > c sqrt(V/df) - lambda) (and the lower tail) over V,
    with the normal and chi-square of scipy (not its noncentral t)."""
    df = n - 1
    lam = math.sqrt(n) * abs(diff) / std
    crit = sps.t.ppf(1 - alpha / sided, df)

    def tails(v: float) -> float:
        s = crit * math.sqrt(v / df)
        upper = sps.norm.sf(s - lam)
        lower = sps.norm.cdf(-s - lam) if sided == 2 else 0.0
        return (upper + lower) * sps.chi2.pdf(v, df)

    value, _ = scipy.integrate.quad(tails, 0, np.inf, limit=200, epsabs=1e-12)
    return value


@pytest.mark.parametrize("n", [2, 3, 4, 5, 10])
@pytest.mark.parametrize("diff", [0.05, 0.3, 1.0, 5.0])
@pytest.mark.parametrize("alternative", ["two-sided", "greater"])
def test_paired_t_power_is_defined_and_exact_on_few_topics(n, diff, alternative):
    got = pr.paired_t_power(n, diff, 0.2, alternative=alternative)
    sided = 2 if alternative == "two-sided" else 1
    assert got == pytest.approx(power_by_quadrature(n, diff, 0.2, 0.05, sided), abs=1e-7)


def test_topic_set_size_of_a_large_difference_is_found_on_few_topics():
    # power at n = 2 with lambda = sqrt(2) * 25 is P(T'_1 > 12.71) = 0.9945 >= 0.99
    assert pr.paired_t_power(2, 5.0, 0.2) == pytest.approx(0.99446, abs=1e-4)
    assert pr.topic_set_size(5.0, 0.2, power=0.99) == 2
    assert pr.topic_set_size(1.0, 0.2, power=0.95) == 3  # power 0.42 at n = 2, 0.9755 at 3


# ------------------------------------------------- item 3: bounds from the parameters


def test_graded_rbp_is_not_clipped_to_1():
    # RBP(gain=linear) weighs a hit by its grade: grade 3 at rank 1 gives (1 - 0.8) * 3
    run = pl.DataFrame({"query": ["q1", "q2", "q3"], "doc": "d", "score": 1.0})
    qrels = pl.DataFrame({"query": ["q1", "q2", "q3"], "doc": "d", "relevance": [3, 4, 5]})
    per_query = pr.evaluate(run, qrels, ["RBP(gain=linear)", "RBP"])
    assert per_query["RBP(gain=linear)"].to_list() == pytest.approx([0.6, 0.8, 1.0])
    rows = pr.summarize(per_query, interval="t").rows_by_key("measure", named=True)
    graded = rows["RBP(gain=linear)"][0]
    assert graded["ci_high"] == pytest.approx(0.8 + sps.t.ppf(0.975, 2) * 0.2 / math.sqrt(3))
    assert graded["ci_high"] > 1 and not graded["clipped"]
    assert rows["RBP"][0]["mean"] == pytest.approx(0.2)  # binary: 0.2 on each query


def test_bounds_follow_the_parameters():
    from polars_rankeval.compare import measure_bounds

    assert measure_bounds("RBP(gain=linear)") == (0.0, math.inf)
    assert measure_bounds("RBP(p=0.5)") == (0.0, 1.0)
    for name in ("nDCG", "nDCGRel", "Rndcg"):
        assert measure_bounds(f"{name}(gains=1:3;2:9)") == (0.0, 1.0)
        assert measure_bounds(f"{name}(gains=0:-1;1:1)") is None


def test_declared_bounds_may_be_a_function_of_the_measure():
    family = pr.define_measure(
        "EdgeGP",
        lambda k, grade: ((pl.col("relevance") >= grade) & (pl.col("rank") <= k)).sum() * grade,
        cutoff="required",
        params={"grade": 1},
        bounds=lambda m: (0, 1) if m.setting("grade") == 1 else (0, m.cutoff * m.setting("grade")),
        replace=True,
    )
    from polars_rankeval.compare import measure_bounds

    assert measure_bounds("EdgeGP@3") == (0.0, 1.0)
    assert measure_bounds("EdgeGP(grade=2)@3") == (0.0, 6.0)
    bad = pr.define_measure("EdgeBad", pl.lit(1.0), bounds=lambda m: (2, 1), replace=True)
    with pytest.raises(ValueError, match="bounds of EdgeBad must be"):
        measure_bounds("EdgeBad")
    assert family.name == "EdgeGP" and bad.name == "EdgeBad"


# ------------------------------------------------- item 4: lower is better


def lower_better_frame() -> pl.DataFrame:
    """Three systems on four queries: 'bad' has the highest FallOut (worst), 'good' the
    lowest; AP the other way round."""
    fallout = {
        "bad": [0.9, 0.8, 0.9, 0.7],
        "mid": [0.5, 0.6, 0.4, 0.5],
        "good": [0.1, 0.2, 0.1, 0.0],
    }
    return pl.DataFrame(
        {
            "system": [s for s in fallout for _ in range(4)],
            "query": ["q1", "q2", "q3", "q4"] * 3,
            "FallOut@10": [v for s in fallout for v in fallout[s]],
            "AP": [1.0 - v for s in fallout for v in fallout[s]],
        }
    )


@pytest.mark.parametrize("name", ["FallOut@10", "Unjudged@10", "RBPResid", "TrecRBPResid"])
def test_lower_is_better_is_declared(name):
    from polars_rankeval.compare import measure_better

    assert measure_better(name) == "lower"
    assert measure_better("AP") == "higher" and measure_better("not_a_measure") == "higher"


def test_report_bolds_the_lowest_of_a_lower_is_better_measure():
    per_query = lower_better_frame()
    rep = pr.report(per_query, baseline="mid", digits=2)
    best = {(r["system"], r["measure"]) for r in rep.frame.iter_rows(named=True) if r["best"]}
    assert best == {("good", "FallOut@10"), ("good", "AP")}
    assert "Lower is better for FallOut@10" in rep.note()
    letters = pr.report(per_query, test="t", digits=2)
    beats = {(r["system"], r["measure"]): r["beats"] for r in letters.frame.iter_rows(named=True)}
    labels = letters.labels
    # 'good' has the lowest FallOut: it beats both others on FallOut as on AP
    assert beats[("good", "FallOut@10")] == sorted([labels["bad"], labels["mid"]])
    assert beats[("good", "AP")] == sorted([labels["bad"], labels["mid"]])
    assert beats[("bad", "FallOut@10")] == []
    best = {(r["system"], r["measure"]) for r in letters.frame.iter_rows(named=True) if r["best"]}
    assert best == {("good", "FallOut@10"), ("good", "AP")}


def test_compare_counts_wins_by_the_direction():
    out = pr.compare(lower_better_frame(), baseline="mid").filter(pl.col("system_a") == "good")
    rows = out.rows_by_key("measure", named=True)
    assert (rows["FallOut@10"][0]["wins"], rows["FallOut@10"][0]["losses"]) == (4, 0)
    assert (rows["AP"][0]["wins"], rows["AP"][0]["losses"]) == (4, 0)


def tau_ap_best_first(reference: list[float], judged: list[float], lower: bool) -> float:
    """Yilmaz et al.'s tau_ap written out: systems sorted best first by ``judged``; for
    the i-th, the share of the i-1 above it that are above it in ``reference`` too."""
    sign = -1.0 if lower else 1.0
    order = sorted(range(len(judged)), key=lambda i: -sign * judged[i])
    total = 0.0
    for i in range(1, len(order)):
        above = order[:i]
        total += sum(sign * reference[j] > sign * reference[order[i]] for j in above) / i
    return 2 / (len(order) - 1) * total - 1


def test_rank_correlation_reads_a_lower_is_better_measure_lowest_first():
    """FallOut's best system is its lowest: AP and FallOut orders that agree correlate
    +1, and tau_ap weighs the swap among the best (lowest) systems, not the worst."""
    means = pl.DataFrame(
        {"AP": [0.4, 0.3, 0.2, 0.1], "FallOut@10": [0.1, 0.2, 0.3, 0.4],
         "swapped": [0.2, 0.1, 0.3, 0.4]}  # the two best FallOut systems swapped
    )  # fmt: skip
    out = means.select(
        kendall=pr.rank_correlation("AP", "FallOut@10"),
        tau_ap=pr.rank_correlation("AP", "FallOut@10", method="tau_ap"),
        top_swap=pr.rank_correlation(
            "FallOut@10", pl.col("swapped").alias("Unjudged@10"), method="tau_ap"
        ),
        raw=pr.rank_correlation("AP", pl.col("FallOut@10").alias("a_column")),
    ).row(0, named=True)
    assert out["kendall"] == 1.0 and out["tau_ap"] == 1.0
    assert out["top_swap"] == pytest.approx(2 / 3 * (0 / 1 + 2 / 2 + 3 / 3) - 1)  # 1/3
    assert out["top_swap"] == pytest.approx(
        tau_ap_best_first([0.1, 0.2, 0.3, 0.4], [0.2, 0.1, 0.3, 0.4], lower=True)
    )
    assert out["raw"] == -1.0  # a column that names no measure: higher is better


def test_ranking_agreement_of_a_lower_is_better_measure():
    """ranking_agreement's tau_ap puts the lowest FallOut systems first."""
    rng = np.random.default_rng(5)
    docs = [f"d{i}" for i in range(12)]
    runs = pl.DataFrame(
        [
            {"system": f"s{s}", "query": q, "doc": d, "score": float(rng.random())}
            for s in range(6) for q in range(8) for d in docs
        ]
    )  # fmt: skip
    qrels = {
        who: pl.DataFrame(
            [
                {"query": q, "doc": d, "relevance": int(rng.random() < 0.4)}
                for q in range(8)
                for d in docs
            ]
        )
        for who in ("alice", "bob")
    }
    table = pr.system_rankings(runs, qrels, measure="FallOut@5")
    a, b = table["alice"].to_list(), table["bob"].to_list()
    assert len(set(a)) == len(a) and len(set(b)) == len(b)  # tau_ap takes no ties
    got = pr.ranking_agreement(runs, qrels, measure="FallOut@5", methods=["tau_ap"])
    expected = tau_ap_best_first(a, b, lower=True)
    assert got["tau_ap"][0] == pytest.approx(expected, abs=1e-12)
    assert expected != pytest.approx(tau_ap_best_first(a, b, lower=False), abs=1e-3)


def test_define_measure_takes_better():
    family = pr.define_measure("EdgeErr", pl.lit(0.5), better="lower", replace=True)
    from polars_rankeval.compare import measure_better

    assert family.better == "lower" and measure_better("EdgeErr") == "lower"
    with pytest.raises(ValueError, match="better of EdgeErr"):
        pr.define_measure("EdgeErr", pl.lit(0.5), better="smaller", replace=True)


# ------------------------------------------------- item 1: an id is never averaged


def user_frame() -> pl.DataFrame:
    """evaluate(..., query="user_id") output: integer user ids, two systems."""
    run = pl.DataFrame(
        {
            "system": ["a"] * 4 + ["b"] * 4,
            "user_id": [50001, 50001, 50127, 50127] * 2,
            "device": ["phone", "phone", "desk", "desk"] * 2,
            "doc": ["d1", "d2"] * 4,
            "score": [2.0, 1.0, 2.0, 1.0, 1.0, 2.0, 1.0, 2.0],
        }
    )
    qrels = pl.DataFrame({"user_id": [50001, 50127], "doc": ["d1", "d2"], "relevance": [1, 1]})
    return pr.evaluate(run, qrels, ["RR"], query="user_id", by="device")


def test_mean_scores_refuses_an_id_column_it_was_not_told_about():
    per_query = user_frame()
    with pytest.raises(ValueError, match=r"mean_scores: column 'user_id' \(Int64\) is not a"):
        pr.mean_scores(per_query, by="device")
    got = pr.mean_scores(per_query, query="user_id", by="device")
    assert "user_id" not in got.columns and got["RR"].to_list() == [0.5, 1.0, 1.0, 0.5]


@pytest.mark.parametrize("function", [pr.summarize, pr.compare, pr.report])
def test_statistics_refuse_an_id_column_they_were_not_told_about(function):
    per_query = user_frame().drop("device").with_columns(query=pl.col("user_id").cast(pl.String))
    with pytest.raises(ValueError, match=r"column 'user_id' \(Int64\) is not a measure"):
        function(per_query)
    function(per_query.drop("user_id"))  # the same frame without the id is fine


def test_reports_refuse_an_id_column():
    with pytest.raises(ValueError, match=r"column 'user_id' \(Int64\) is not a measure"):
        pr.reports(user_frame().with_columns(query=pl.col("user_id").cast(pl.String)), "device")


# ------------------------------------------------- item 6: a compound query id


def session_frame() -> pl.DataFrame:
    """evaluate(..., query=["user", "sess"]): user u1 has sessions s1, s2; u2 has s1."""
    run = pl.DataFrame(
        {
            "system": ["a"] * 6 + ["b"] * 6,
            "user": ["u1", "u1", "u1", "u1", "u2", "u2"] * 2,
            "sess": ["s1", "s1", "s2", "s2", "s1", "s1"] * 2,
            "doc": ["d1", "d2"] * 6,
            "score": [2.0, 1.0] * 3 + [1.0, 2.0] * 3,
        }
    )
    qrels = pl.DataFrame(
        {"user": ["u1", "u1", "u2"], "sess": ["s1", "s2", "s1"], "doc": "d1", "relevance": 1}
    )
    return pr.evaluate(run, qrels, ["RR"], query=["user", "sess"])


def test_summarize_takes_a_compound_query():
    per_query = session_frame()
    out = pr.summarize(per_query, query=["user", "sess"])
    assert out.select("system", "measure", "mean", "n").rows() == [
        ("a", "RR", 1.0, 3),
        ("b", "RR", 0.5, 3),
    ]


def test_compare_and_report_pair_on_a_compound_query():
    per_query = session_frame()
    row = pr.compare(per_query, baseline="a", query=["user", "sess"]).row(0, named=True)
    assert (row["n"], row["diff"], row["losses"]) == (3, -0.5, 3)
    # one session missing for b: the message names it as (user, sess)
    short = per_query.filter(~((pl.col("system") == "b") & (pl.col("sess") == "s2")))
    with pytest.raises(ValueError, match=r"system 'b' lacks 1 \(\{'user': 'u1', 'sess': 's2'\}\)"):
        pr.compare(short, query=["user", "sess"])
    rep = pr.report(per_query, baseline="a", query=["user", "sess"])
    assert rep.n_queries == 3
    per_day = per_query.with_columns(day=pl.when(pl.col("sess") == "s1").then(pl.lit("mon")))
    by_day = pr.reports(per_day.fill_null("tue"), "day", query=["user", "sess"], baseline="a")
    assert {key: r.n_queries for key, r in by_day.items()} == {("mon",): 2, ("tue",): 1}


# ------------------------------------------------- item 7: clear errors, not raw ones


def two_systems() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "system": ["a"] * 2 + ["b"] * 2,
            "query": ["q1", "q2"] * 2,
            "AP": [0.1, 0.2, 0.3, 0.4],
        }
    )


def test_mean_scores_by_part_of_the_segments_names_the_other_segment_column():
    per_query = two_systems().with_columns(day=pl.lit("mon"), device=pl.lit("phone"))
    with pytest.raises(ValueError, match=r"column 'device' \(String\) is not a measure.*by="):
        pr.mean_scores(per_query, by="day")


def test_summarize_of_no_rows_is_an_empty_summary():
    out = pr.summarize(two_systems().clear())
    assert out.height == 0
    assert out.columns == ["system", *SUMMARY_COLUMNS]


def test_summarize_refuses_a_null_system_naming_the_column():
    per_query = two_systems().with_columns(
        system=pl.when(pl.col("query") == "q2").then(pl.col("system"))
    )
    with pytest.raises(
        ValueError, match=r"column 'system' has 2 null system ids \(first at row 0\)"
    ):
        pr.summarize(per_query)


def test_a_segment_with_one_system_is_named():
    per_query = pl.concat(
        [
            two_systems().with_columns(day=pl.lit("mon")),
            two_systems().filter(pl.col("system") == "a").with_columns(day=pl.lit("tue")),
        ]
    )
    for call in (lambda: pr.compare(per_query, by="day"), lambda: pr.reports(per_query, "day")):
        with pytest.raises(ValueError, match=r"in the segment day='tue': compare needs at least"):
            call()


@pytest.mark.parametrize(
    ("function", "name"),
    [
        (pr.mean_scores, "n_queries"),
        (pr.summarize, "measure"),
        (pr.summarize, "mean"),
        (pr.summarize, "n"),
        (pr.compare, "measure"),
        (pr.compare, "p_value"),
    ],
)
def test_a_by_column_named_as_an_output_column_is_refused(function, name):
    per_query = two_systems().with_columns(pl.lit("x").alias(name))
    with pytest.raises(ValueError, match=rf"the by column '{name}' has the name of an output"):
        function(per_query, by=name)
