"""pr.define_measure: a user's Polars expression is a measure in every way in.

DP@k (precision with a log discount) is checked against hand arithmetic; nDCG@k
declared again from pr.metrics.ndcg(k) under another name gives the built-in's values
on random corpora with ties, string ids, graded and negative grades and missing
queries. The Dask and Spark checks are in test_dask.py and test_spark.py (their
clusters), the command line's here (a real process).
"""

from __future__ import annotations

import math
import subprocess
import sys
import warnings

import numpy as np
import polars as pl
import pytest
from corpus import random_corpus
from polars.testing import assert_frame_equal

import polars_rankeval as pr
from polars_rankeval.compare import measure_bounds
from polars_rankeval.measures import REGISTRY, parse


def dp(k: int) -> pl.Expr:
    """DP@k = (1/k) * sum over ranks i <= k of [relevant] / log2(i + 1)."""
    hit = (pl.col("relevance") >= 1) & (pl.col("rank") <= k)
    return (hit.cast(pl.Float64) / (pl.col("rank").cast(pl.Float64) + 1).log(2)).sum() / k


def graded_precision(k: int, grade: int) -> pl.Expr:
    """GP@k: the share of the top k whose grade is at least ``grade``."""
    return ((pl.col("relevance") >= grade) & (pl.col("rank") <= k)).sum() / k


@pytest.fixture(autouse=True)
def declared() -> None:
    """DP@k, GP(grade)@k, MyNDCG@k and Unretrieved, for each test (the root conftest
    forgets them after it)."""
    pr.define_measure("DP", dp, cutoff="required", bounds=(0, 1))
    pr.define_measure("GP", graded_precision, cutoff="required", params={"grade": 2}, bounds=(0, 1))
    pr.define_measure("MyNDCG", lambda k: pr.metrics.ndcg(k), cutoff="optional", bounds=(0, 1))
    pr.define_measure("Unretrieved", pl.col("rank").null_count(), aggregate="sum")


RUN = pl.DataFrame(
    {
        "system": ["a"] * 6 + ["b"] * 6,
        "query": ["q1"] * 4 + ["q2"] * 2 + ["q1"] * 4 + ["q2"] * 2,
        "doc": ["a", "b", "c", "d", "f", "e", "d", "c", "b", "a", "e", "f"],
        "score": [4.0, 3.0, 2.0, 1.0, 2.0, 1.0] * 2,
    }
)
QRELS = pl.DataFrame(
    {
        "query": ["q1", "q1", "q1", "q1", "q2", "q3"],
        "doc": ["a", "c", "d", "z", "e", "x"],
        "relevance": [1, 2, 0, 1, 1, 1],
    }
)
L3 = math.log2(3)
# By hand. System a: q1 ranks a(1, rel) b(2) c(3, rel 2) d(4, 0); q2 f(1) e(2, rel).
# System b: q1 d(1, 0) c(2, rel 2) b(3) a(4, rel); q2 e(1, rel) f(2).
WANT = {
    ("a", "q1"): {"DP@2": 1 / 2, "DP@3": (1 + 1 / 2) / 3, "GP@3": 1 / 3, "Unretrieved": 1.0},
    ("a", "q2"): {"DP@2": (1 / L3) / 2, "DP@3": (1 / L3) / 3, "GP@3": 0.0, "Unretrieved": 0.0},
    ("b", "q1"): {"DP@2": (1 / L3) / 2, "DP@3": (1 / L3) / 3, "GP@3": 1 / 3, "Unretrieved": 1.0},
    ("b", "q2"): {"DP@2": 1 / 2, "DP@3": 1 / 3, "GP@3": 0.0, "Unretrieved": 0.0},
}
MEASURES = ["DP@2", "DP@3", "GP@3", "Unretrieved"]


def expected(keys: list[tuple[str, str]] | None = None) -> pl.DataFrame:
    keys = keys or sorted(WANT)
    rows = [{"system": s, "query": q, **WANT[(s, q)]} for s, q in keys]
    return pl.DataFrame(rows).select("system", "query", *MEASURES)


def quietly(call, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        return call(*args, **kwargs)


def collected(run: pl.DataFrame, qrels: pl.DataFrame, names: list[str], **options):
    """pr.evaluate on the lazy frames, collected."""
    return pr.evaluate(run.lazy(), qrels.lazy(), names, **options).collect()


def check(got: pl.DataFrame | pl.LazyFrame, want: pl.DataFrame | None = None) -> None:
    if isinstance(got, pl.LazyFrame):
        got = got.collect()
    want = expected() if want is None else want
    assert_frame_equal(got.sort("system", "query"), want, rel_tol=1e-12, abs_tol=1e-12)


def test_dp_by_hand_on_a_dataframe():
    check(pr.evaluate(RUN, QRELS, MEASURES))


def test_dp_on_the_frame_methods():
    check(RUN.rankeval.evaluate(QRELS, MEASURES))
    check(RUN.lazy().rankeval.evaluate(QRELS.lazy(), MEASURES))


@pytest.mark.parametrize("limit", [None, 2048, 1])
def test_dp_on_a_lazy_run_held_or_bucketed(limit):
    got = pr.evaluate(RUN.lazy(), QRELS.lazy(), MEASURES, memory_limit=limit)
    assert isinstance(got, pl.LazyFrame)
    check(got)


def test_dp_on_a_parquet_scan(tmp_path):
    RUN.write_parquet(tmp_path / "run.parquet")
    QRELS.write_parquet(tmp_path / "qrels.parquet")
    scan = pl.scan_parquet(tmp_path / "run.parquet")
    check(pr.evaluate(scan, pl.scan_parquet(tmp_path / "qrels.parquet"), MEASURES))
    check(pr.evaluate(scan, QRELS, MEASURES, memory_limit=1))


def test_dp_on_a_judged_table():
    judged = pr.judge(RUN, QRELS)
    check(pr.evaluate_judged(judged, MEASURES))
    check(pr.evaluate_judged(judged.lazy(), MEASURES, memory_limit=1))


def test_dp_with_missing_zero_scores_the_absent_query():
    got = quietly(pr.evaluate, RUN, QRELS, MEASURES, missing="zero")
    absent = got.filter(pl.col("query") == "q3")
    assert absent.height == 2  # one per system
    assert absent.select(MEASURES[:3]).to_numpy().tolist() == [[0.0, 0.0, 0.0]] * 2
    assert absent["Unretrieved"].to_list() == [1.0, 1.0]  # x is judged, not retrieved


def test_dp_by_segment_and_in_the_means():
    run = RUN.with_columns(
        day=pl.when(pl.col("query") == "q1").then(pl.lit("mon")).otherwise(pl.lit("tue"))
    )
    got = pr.evaluate(run, QRELS, MEASURES, by="day")
    assert got.columns[:3] == ["day", "system", "query"]
    assert got.filter(pl.col("day") == "mon")["query"].unique().to_list() == ["q1"]
    check(got.drop("day").select("system", "query", *MEASURES))
    means = pr.mean_scores(pr.evaluate(RUN, QRELS, MEASURES)).sort("system")
    for system in ("a", "b"):
        row = means.filter(pl.col("system") == system).row(0, named=True)
        for name in ("DP@2", "DP@3", "GP@3"):
            want = (WANT[(system, "q1")][name] + WANT[(system, "q2")][name]) / 2
            assert row[name] == pytest.approx(want, abs=1e-12)
        assert row["Unretrieved"] == 1.0  # aggregate="sum"
    assert pr.evaluate(RUN, QRELS, MEASURES, per_query=False).height == 2


def test_parameters_and_names_are_parsed_as_the_builtins_are():
    assert str(parse("GP(grade=1)@3")) == "GP(grade=1)@3"
    assert str(parse("GP(grade=2)@3")) == "GP@3"  # the default is left out, as for built-ins
    got = pr.evaluate(RUN.filter(pl.col("system") == "a"), QRELS, ["GP(grade=1)@3"])
    assert got["GP(grade=1)@3"].to_list() == pytest.approx([2 / 3, 1 / 3])
    with pytest.raises(ValueError, match="needs a cutoff"):
        parse("DP")
    with pytest.raises(ValueError, match="must be int"):
        parse("GP(grade=x)@3")


def test_compare_summarize_report_and_explain_read_the_declaration():
    per_query = pr.evaluate(RUN, QRELS, MEASURES)
    compared = pr.compare(per_query, ["DP@3"], baseline="a").row(0, named=True)
    a = (WANT[("a", "q1")]["DP@3"] + WANT[("a", "q2")]["DP@3"]) / 2
    b = (WANT[("b", "q1")]["DP@3"] + WANT[("b", "q2")]["DP@3"]) / 2
    assert compared["diff"] == pytest.approx(b - a, abs=1e-12) and b - a < -0.08
    assert measure_bounds("DP@2") == (0.0, 1.0)
    assert measure_bounds("Unretrieved") == (0.0, math.inf)
    summary = pr.summarize(per_query, ["DP@3"], interval="t").sort("system")
    assert summary["mean"].to_list() == pytest.approx([a, b])
    # Two queries: the t interval passes both ends of [0, 1], the declared bounds.
    assert summary.select("ci_low", "ci_high", "clipped").rows() == [(0.0, 1.0, True)] * 2
    unbounded = pr.summarize(per_query.rename({"DP@3": "x"}), ["x"], interval="t")
    assert (unbounded["ci_low"] < 0).all() and not unbounded["clipped"].any()
    assert "DP@3" in str(pr.report(per_query, ["DP@3"], baseline="a"))
    explained = pr.explain(RUN.filter(pl.col("system") == "a"), QRELS, "DP@2")
    assert explained.height > 0


def test_a_declared_ndcg_equals_the_builtin_on_random_corpora():
    for seed in range(4):
        run, qrels = random_corpus(seed, n_queries=30, systems=2)
        names = ["MyNDCG@5", "MyNDCG@10", "MyNDCG"]
        builtin = ["nDCG@5", "nDCG@10", "nDCG"]
        for options in ({}, {"missing": "zero"}, {"depth": 7}):
            want = quietly(pr.evaluate, run, qrels, builtin, **options)
            eager = quietly(pr.evaluate, run, qrels, names, **options)
            lazy = quietly(collected, run, qrels, names, memory_limit=4096, **options)
            for got in (eager, lazy):
                got = got.sort("system", "query").rename(dict(zip(names, builtin, strict=True)))
                assert_frame_equal(got, want.sort("system", "query"), rel_tol=1e-12, abs_tol=1e-12)
        per_query = quietly(pr.evaluate, run, qrels, [*names, *builtin])
        mine = pr.compare(per_query, names, baseline="sys0").drop("measure")
        theirs = pr.compare(per_query, builtin, baseline="sys0").drop("measure")
        assert_frame_equal(mine, theirs, rel_tol=1e-12, abs_tol=1e-12)


def test_a_declared_measure_beside_the_builtins_leaves_them_unchanged():
    run, qrels = random_corpus(11, n_queries=30)
    builtin = ["AP", "Bpref", "infAP", "P@5", "nDCG@10", "RR"]
    alone = quietly(pr.evaluate, run, qrels, builtin)
    together = quietly(pr.evaluate, run, qrels, [*builtin, "DP@5"]).drop("DP@5")
    assert_frame_equal(together, alone)


def test_the_cli_loads_declarations_from_a_file(tmp_path):
    qrels = tmp_path / "qrels"
    qrels.write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in QRELS.iter_rows()))
    run = tmp_path / "run"
    rows = RUN.filter(pl.col("system") == "a").select("query", "doc", "score").iter_rows()
    run.write_text("".join(f"{q} Q0 {d} 0 {s} a\n" for q, d, s in rows))
    declared = tmp_path / "my_measures.py"
    declared.write_text(
        "import polars as pl\nimport polars_rankeval as pr\n\n"
        "def dp(k):\n"
        "    hit = (pl.col('relevance') >= 1) & (pl.col('rank') <= k)\n"
        "    return (hit.cast(pl.Float64) / (pl.col('rank') + 1).log(2)).sum() / k\n\n"
        "pr.define_measure('DP', dp, cutoff='required')\n"
    )
    command = [sys.executable, "-m", "polars_rankeval", "eval", str(qrels), str(run)]
    done = subprocess.run(
        [*command, "--measures-from", str(declared), "-m", "DP@2", "-q"],
        capture_output=True,
        text=True,
        check=True,
    )
    lines = [line.split() for line in done.stdout.splitlines()]
    values = {q: float(v) for name, q, v in lines if name == "DP@2"}
    assert values["q1"] == pytest.approx(0.5, abs=1e-4)
    assert values["q2"] == pytest.approx(1 / (2 * L3), abs=1e-4)
    assert values["all"] == pytest.approx((0.5 + 1 / (2 * L3)) / 2, abs=1e-4)
    unknown = subprocess.run([*command, "-m", "DP@2"], capture_output=True, text=True)
    assert unknown.returncode == 1
    assert "Unknown measure 'DP@2'" in unknown.stderr


def test_errors_name_the_measure_and_the_column():
    with pytest.raises(ValueError, match=r"expression of Bad reads the column 'doc'"):
        pr.define_measure("Bad", pl.col("doc").n_unique())
    with pytest.raises(ValueError, match=r"'AP' already names a measure: pass replace=True"):
        pr.define_measure("AP", pl.col("rank").count())
    with pytest.raises(ValueError, match=r"'mrr' already names a measure"):
        pr.define_measure("Mine", pl.col("rank").count(), aliases=["mrr"])
    with pytest.raises(ValueError, match="function of k"):
        pr.define_measure("Cut", pl.col("rank").count(), cutoff="required")
    with pytest.raises(ValueError, match="must take k by name"):
        pr.define_measure("Cut", lambda n: pl.col("rank").count(), cutoff="required")
    pr.define_measure("Listy", pl.col("rank"))
    with pytest.raises(ValueError, match="expression of Listy must reduce a ranking's rows"):
        pr.evaluate(RUN, QRELS, ["Listy"])
    pr.define_measure("Wordy", pl.col("relevance").cast(pl.String).first())
    with pytest.raises(ValueError, match="expression of Wordy must give a number"):
        pr.evaluate(RUN, QRELS, ["Wordy"])
    pr.define_measure("Shifty", lambda k: pl.col("score").sum(), cutoff="optional")
    with pytest.raises(ValueError, match=r"expression of Shifty@3 reads the column 'score'"):
        pr.evaluate(RUN, QRELS, ["Shifty@3"])


def test_replace_declares_a_builtin_name_again_and_back():
    builtin = REGISTRY["Judged"]
    try:
        pr.define_measure("Judged", pl.lit(0.25), replace=True)
        assert pr.evaluate(RUN, QRELS, ["Judged"])["Judged"].to_list() == [0.25] * 4
    finally:
        REGISTRY["Judged"] = builtin
    again = pr.evaluate(RUN, QRELS, ["Judged@2"])["Judged@2"].to_numpy()
    assert np.all(again <= 1.0) and again.tolist() != [0.25] * 4


def test_measures_are_never_computed_for_an_old_declaration():
    pr.define_measure("Moving", pl.lit(1.0))
    first = pr.evaluate(RUN, QRELS, ["Moving"])["Moving"].to_list()
    with pytest.raises(ValueError, match="'Moving' already names a measure"):
        pr.define_measure("Moving", pl.lit(2.0))
    pr.define_measure("Moving", pl.lit(2.0), replace=True)
    second = pr.evaluate(RUN, QRELS, ["Moving"])["Moving"].to_list()
    assert first == [1.0] * 4 and second == [2.0] * 4
