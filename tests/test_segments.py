"""Segments (``by=``): per-segment values equal scoring each segment on its own."""

from __future__ import annotations

import warnings

import polars as pl
import pytest
from corpus import random_corpus
from polars.testing import assert_frame_equal

import polars_rankeval as pr

MEASURES = ["AP", "nDCG@5", "P@3", "RR", "NumRet", "GMAP", "Bpref"]


def day_corpus(seed: int = 40, systems: int = 2) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Two days of rankings of the same queries (different rankings each day)."""
    mon, qrels = random_corpus(seed, n_queries=20, systems=systems)
    tue, _ = random_corpus(seed + 1, n_queries=20, systems=systems)
    tue = tue.join(qrels.select("query").unique(), on="query", how="semi")  # tue: judged only
    run = pl.concat(
        [mon.with_columns(day=pl.lit("mon")), tue.with_columns(day=pl.lit("tue"))],
        how="vertical_relaxed",
    )
    return run.sample(fraction=1.0, shuffle=True, seed=seed), qrels


def quiet(call, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        return call(*args, **kw)


@pytest.mark.parametrize("lazy", [False, True])
def test_each_segment_scores_as_on_its_own(lazy):
    run, qrels = day_corpus()
    if lazy:
        got = quiet(lambda: pr.evaluate(run.lazy(), qrels, MEASURES, by="day").collect())
    else:
        got = quiet(pr.evaluate, run, qrels, MEASURES, by="day")
    assert got.columns[:3] == ["day", "system", "query"]
    for (day,), part in run.partition_by("day", as_dict=True).items():
        alone = quiet(pr.evaluate, part.drop("day"), qrels, MEASURES)
        assert_frame_equal(got.filter(pl.col("day") == day).drop("day"), alone)


def test_two_segment_columns_and_means_per_segment():
    run, qrels = day_corpus(systems=1)
    run = run.with_columns(country=pl.when(pl.col("query").str.len_bytes() % 2 == 0)
                           .then(pl.lit("fr")).otherwise(pl.lit("de")))  # fmt: skip
    per_query = quiet(pr.evaluate, run, qrels, MEASURES, by=["day", "country"])
    means = quiet(pr.evaluate, run, qrels, MEASURES, by=["day", "country"], per_query=False)
    assert means.columns[:3] == ["day", "country", "n_queries"]
    assert_frame_equal(means, pr.mean_scores(per_query, by=["day", "country"]))
    for (day, country), part in per_query.partition_by(["day", "country"], as_dict=True).items():
        row = means.filter(day=day, country=country)
        assert row["n_queries"].item() == part.height
        alone = pr.mean_scores(part.drop("day", "country"))
        assert row["GMAP"].item() == pytest.approx(alone["GMAP"].item(), abs=1e-15)
        assert row["NumRet"].item() == part["NumRet"].sum()


def test_missing_zero_scores_a_query_only_where_it_belongs():
    run = pl.DataFrame(
        {
            "day": ["mon", "mon", "tue", "tue", "tue"],
            "system": ["a", "b", "a", "a", "b"],
            "query": ["q1", "q1", "q1", "q2", "q2"],
            "doc": ["x", "y", "x", "z", "z"],
            "score": [1.0] * 5,
        }
    )
    qrels = pl.DataFrame(
        {"query": ["q1", "q2", "q3"], "doc": ["x", "z", "w"], "relevance": [1] * 3}
    )
    got = pr.evaluate(run, qrels, ["AP"], by="day", missing="zero")
    # q2 was issued only on tue: not scored on mon; b missed q1 on tue: 0 there;
    # q3 was issued on no day: it belongs to no segment.
    assert got.rows() == [
        ("mon", "a", "q1", 1.0),
        ("mon", "b", "q1", 0.0),
        ("tue", "a", "q1", 1.0),
        ("tue", "a", "q2", 1.0),
        ("tue", "b", "q1", 0.0),
        ("tue", "b", "q2", 1.0),
    ]
    status = pr.coverage(run, qrels, by="day", missing="zero")
    assert status.filter(pl.col("status") == "scored_empty").rows() == [
        ("tue", "b", "q1", "scored_empty")
    ]
    assert status.filter(pl.col("query") == "q3").rows() == [(None, None, "q3", "not_in_run")]


def test_judged_logs_by_segment():
    log = pl.DataFrame(
        {
            "day": ["mon"] * 3 + ["tue"] * 3,
            "query": ["u1"] * 6,
            "rank": [1, 2, 3, 1, 2, 3],
            "clicked": [False, True, False, True, False, False],
        }
    )
    got = pr.evaluate_judged(log, ["RR", "P@2"], relevance="clicked", by="day")
    assert got.rows() == [("mon", "u1", 0.5, 0.5), ("tue", "u1", 1.0, 0.5)]


def test_compare_and_summarize_per_segment_equal_each_segment_alone():
    run, qrels = day_corpus(systems=3)
    per_query = quiet(pr.evaluate, run, qrels, ["AP", "nDCG@5"], by="day", missing="zero")
    compared = pr.compare(per_query, by="day", test="t", correction="holm")
    summary = pr.summarize(per_query, by="day")
    for (day,), part in per_query.partition_by("day", as_dict=True).items():
        alone = pr.compare(part.drop("day"), test="t", correction="holm")
        assert_frame_equal(compared.filter(day=day).drop("day"), alone)
        assert_frame_equal(summary.filter(day=day).drop("day"), pr.summarize(part.drop("day")))


def test_a_report_per_segment_equals_each_segment_alone():
    run, qrels = day_corpus(systems=3)
    per_query = quiet(pr.evaluate, run, qrels, ["AP", "nDCG@5"], by="day", missing="zero")
    by_day = pr.reports(per_query, "day", baseline="sys0", correction="holm")
    assert list(by_day) == [("mon",), ("tue",)]
    for (day,), part in per_query.partition_by("day", as_dict=True).items():
        alone = pr.report(part.drop("day"), baseline="sys0", correction="holm")
        assert_frame_equal(by_day[(day,)].frame, alone.frame)
        assert by_day[(day,)].to_markdown() == alone.to_markdown()


def test_segments_in_dask_and_spark_pieces_equal_evaluate():
    from polars_rankeval import pieces

    run, qrels = day_corpus(systems=2)
    want = quiet(pr.evaluate, run, qrels, MEASURES, by="day", missing="zero")
    job = pieces.prepare(run.schema, qrels.schema, MEASURES, {"by": "day", "missing": "zero"})
    job = job.with_systems([run["system"].unique()])
    parts = zip(pieces.split(run, "query", 3), pieces.split(qrels, "query", 3), strict=True)
    scored = [pieces.score(r, q, job) for r, q in parts]
    got = quiet(pieces.combine, scored, job, run_rows=run.height, qrels_rows=qrels.height)
    assert got.columns[:3] == ["day", "system", "query"]
    assert_frame_equal(got, want, check_exact=False, rel_tol=1e-12, abs_tol=1e-12)


def test_per_query_attributes_in_a_separate_table():
    run, qrels = day_corpus(systems=1)
    per_query = quiet(pr.evaluate, run.filter(day="mon").drop("day"), qrels, ["AP"])
    categories = per_query.select("query").unique().with_columns(
        category=pl.when(pl.col("query").str.starts_with("q")).then(pl.lit("q")).otherwise(
            pl.lit("n"))
    )  # fmt: skip
    joined = per_query.join(categories, on="query")
    means = pr.mean_scores(joined, by="category")
    for (category,), part in joined.partition_by("category", as_dict=True).items():
        assert means.filter(category=category)["AP"].item() == pytest.approx(part["AP"].mean())


@pytest.mark.parametrize(
    ("by", "pattern"),
    [
        ("nope", r"run is missing column 'nope'"),
        ("query", r"by cannot name 'query'"),
        (["day", "day"], r"by names a column twice"),
        (3, r"by must be a column name"),
    ],
)
def test_bad_segments_are_refused(by, pattern):
    run, qrels = day_corpus()
    with pytest.raises((ValueError, TypeError), match=pattern):
        pr.evaluate(run, qrels, ["AP"], by=by)
