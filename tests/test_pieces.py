"""pieces, the scoring Dask and Spark share, without any cluster: pieces put
together give pr.evaluate's values, and the driver's checks catch a bad split."""

from __future__ import annotations

import warnings

import polars as pl
import pytest
from corpus import random_corpus
from polars.testing import assert_frame_equal

import polars_rankeval as pr
from polars_rankeval import pieces

MEASURES = ["AP", "nDCG@10", "P@10", "RR", "GMAP", "NumRet", "Bpref"]


def in_pieces(run, qrels, n, measures=MEASURES, **options) -> pl.DataFrame:
    """What an engine does: prepare, split both tables, score each piece, combine."""
    job = pieces.prepare(run.schema, qrels.schema, measures, options)
    if job.needs_systems:
        job = job.with_systems([run["system"].unique()])
    parts = zip(
        pieces.split(run, job.options.query, n),
        pieces.split(qrels, job.options.query, n),
        strict=True,
    )
    scored = [pieces.score(r, q, job) for r, q in parts]
    return pieces.combine(scored, job, run_rows=run.height, qrels_rows=qrels.height)


def quietly(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        return fn(*args, **kwargs)


@pytest.mark.parametrize("n", [1, 3, 16])
@pytest.mark.parametrize(
    "options",
    [{}, {"missing": "zero", "rel_level": 2}, {"per_query": False}, {"depth": 5}],
    ids=["default", "zero", "means", "depth"],
)
def test_pieces_equal_evaluate(n, options):
    run, qrels = random_corpus(61 + n, n_queries=50, systems=3)
    run = run.filter((pl.col("system") != "sys2") | (pl.col("query") == pl.first("query")))
    expected = quietly(pr.evaluate, run, qrels, MEASURES, **options)
    got = quietly(in_pieces, run, qrels, n, **options)
    assert expected.height > 0
    keys = [c for c in expected.columns if c in ("system", "query", "n_queries")]
    assert_frame_equal(got.select(keys), expected.select(keys), check_exact=True)
    assert_frame_equal(got, expected, check_exact=False, rel_tol=1e-12, abs_tol=1e-12)


@pytest.mark.parametrize("conventions", ["trec_eval-10", "trec_eval-9"])
def test_pieces_follow_the_conventions(conventions):
    # all_trec differs between the two (rbp, unj), IPrec rounds differently, and scores
    # equal in single precision tie under trec_eval-9 only
    run, qrels = random_corpus(5, n_queries=30, systems=2)
    run = run.with_columns(pl.col("score").round(1) + pl.col("doc").str.len_chars() * 1e-9)
    expected = quietly(pr.evaluate, run, qrels, "all_trec", conventions=conventions)
    got = quietly(in_pieces, run, qrels, 3, "all_trec", conventions=conventions)
    assert ("rbp" in expected.columns or "TrecRBP" in expected.columns) == (
        conventions == "trec_eval-10"
    )
    assert got.columns == expected.columns
    assert_frame_equal(got, expected, check_exact=False, rel_tol=1e-12, abs_tol=1e-12)


def test_the_unscored_warning_comes_once_for_all_pieces():
    run, qrels = random_corpus(67, n_queries=40)
    with pytest.warns(pr.UnscoredQueriesWarning) as in_process:
        pr.evaluate(run, qrels, ["AP"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        in_pieces(run, qrels, 8, ["AP"])
    assert len(caught) == len(in_process) == 1
    count = str(in_process[0].message).split("(")[0]
    assert count == "5 run queries have no qrels and were not scored "
    assert str(caught[0].message).startswith(count)  # the queries named: sorted, not run order


def test_a_query_cut_between_two_pieces_is_caught():
    """What workers hashing differently would do: one query's rows in two pieces."""
    run = pl.DataFrame({"query": ["a", "a", "a"], "doc": ["x", "y", "z"], "score": [3.0, 2, 1]})
    qrels = pl.DataFrame({"query": ["a"], "doc": ["z"], "relevance": [1]})
    job = pieces.prepare(run.schema, qrels.schema, ["AP"], {})
    cut = [pieces.score(run.head(2), qrels, job), pieces.score(run.tail(1), qrels.clear(), job)]
    with pytest.raises(RuntimeError, match="A ranking is in two pieces"):
        pieces.combine(cut, job, run_rows=3, qrels_rows=1)
    with pytest.raises(RuntimeError, match="The pieces hold 5 run rows and 2 qrels rows"):
        pieces.combine(cut[:1] + cut, job, run_rows=3, qrels_rows=1)


def test_missing_error_names_every_absent_query_of_every_piece():
    run, qrels = random_corpus(71, n_queries=60)
    with pytest.raises(ValueError, match="qrels queries are not in the run") as in_process:
        pr.evaluate(run, qrels, ["AP"], missing="error")
    with pytest.raises(ValueError) as got:
        in_pieces(run, qrels, 8, ["AP"], missing="error")
    assert str(got.value) == str(in_process.value)


def test_mean_kinds_follow_mean_scores():
    job = pieces.prepare(
        pl.Schema({"query": pl.String, "doc": pl.String, "score": pl.Float64}),
        pl.Schema({"query": pl.String, "doc": pl.String, "relevance": pl.Int64}),
        ["gm_map", "gm_bpref", "num_ret", "num_rel", "num_rel_ret", "map", "P_5"],
        {},
    )
    assert pieces.mean_kinds(job) == [
        ("GMAP", "gmean"),
        ("GMBpref", "gmean"),
        ("NumRet", "sum"),
        ("NumRel", "sum"),
        ("NumRelRet", "sum"),
        ("AP", "mean"),
        ("P@5", "mean"),
    ]
