"""Compound ids (``query=[...]``, ``doc=[...]``) give the values of the joined id."""

from __future__ import annotations

import warnings

import polars as pl
import pytest
from corpus import random_corpus
from polars.testing import assert_frame_equal

import polars_rankeval as pr
from polars_rankeval.inputs import joined_id

MEASURES = ["AP", "nDCG@5", "P@3", "RR", "Bpref", "NumRet"]


def split_ids(frame: pl.DataFrame) -> pl.DataFrame:
    """query 'q12' -> (kind 'q', number 12); doc 'FT93-7' -> (prefix 'FT93-', number '7')."""
    return frame.with_columns(
        kind=pl.col("query").str.extract(r"^(\D*)", 1),
        number=pl.col("query").str.extract(r"(\d+)$", 1).cast(pl.Int64),
        prefix=pl.col("doc").str.extract(r"^(\D*)", 1),
        tail=pl.col("doc").str.extract(r"(\d*)$", 1),
    )


def quiet(call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        return call()


@pytest.mark.parametrize("missing", ["drop", "zero"])
@pytest.mark.parametrize("lazy", [False, True])
def test_compound_ids_equal_the_joined_id(missing, lazy):
    run, qrels = random_corpus(60, n_queries=25, systems=2)
    run, qrels = split_ids(run), split_ids(qrels)
    key = {"query": ["kind", "number"], "doc": ["prefix", "tail"]}
    joined = {
        "query": joined_id(key["query"]).alias("qkey"),
        "doc": joined_id(key["doc"]).alias("dkey"),
    }
    run_j = run.with_columns(*joined.values())
    qrels_j = qrels.with_columns(*joined.values())
    want = quiet(lambda: pr.evaluate(run_j, qrels_j, MEASURES, query="qkey", doc="dkey",
                                     missing=missing))  # fmt: skip
    if lazy:
        got = quiet(lambda: pr.evaluate(run.lazy(), qrels, MEASURES, missing=missing,
                                        **key).collect())  # fmt: skip
    else:
        got = quiet(lambda: pr.evaluate(run, qrels, MEASURES, missing=missing, **key))
    assert got.columns[:3] == ["system", "kind", "number"]
    parts = qrels_j.select("qkey", "kind", "number").unique()
    expected = want.join(parts, on="qkey").select("system", "kind", "number", *MEASURES)
    assert_frame_equal(got, expected.sort("system", "kind", "number"))


def test_ties_break_on_the_doc_parts_in_order():
    run = pl.DataFrame(
        {"query": ["q"] * 3, "site": ["a", "b", "a"], "page": ["2", "1", "10"], "score": 1.0}
    )
    qrels = pl.DataFrame({"query": ["q"], "site": ["a"], "page": ["2"], "relevance": [1]})
    judged = pr.judge(run, qrels, doc=["site", "page"])
    # descending by (site, page) as strings: (b, 1), (a, 2), (a, 10)
    assert judged.select("site", "page").rows() == [("b", "1"), ("a", "2"), ("a", "10")]
    assert pr.evaluate(run, qrels, ["RR"], doc=["site", "page"])["RR"].item() == 0.5


def test_ids_with_nul_characters_stay_apart():
    """("a\\x00", "b") and ("a", "\\x00b") differ, and so do their joined ids."""
    run = pl.DataFrame(
        {"query": ["q", "q"], "x": ["a\x00", "a"], "y": ["b", "\x00b"], "score": [2.0, 1.0]}
    )
    qrels = pl.DataFrame({"query": ["q"], "x": ["a"], "y": ["\x00b"], "relevance": [1]})
    assert pr.evaluate(run, qrels, ["RR", "NumRet"], doc=["x", "y"]).row(0) == ("q", 0.5, 2.0)


def test_judged_logs_and_means_with_compound_queries():
    log = pl.DataFrame(
        {
            "user": ["u1"] * 4,
            "session": [1, 1, 2, 2],
            "rank": [1, 2, 1, 2],
            "clicked": [False, True, True, False],
        }
    )
    got = pr.evaluate_judged(log, ["RR"], query=["user", "session"], relevance="clicked")
    assert got.rows() == [("u1", 1, 0.5), ("u1", 2, 1.0)]
    assert pr.mean_scores(got, query=["user", "session"])["RR"].item() == 0.75


def test_bad_compound_ids_are_refused():
    run = pl.DataFrame({"q": ["a"], "doc": ["x"], "score": [1.0]})
    qrels = pl.DataFrame({"q": ["a"], "doc": ["x"], "relevance": [1]})
    with pytest.raises(ValueError, match="query names a column twice"):
        pr.evaluate(run, qrels, ["AP"], query=["q", "q"])
    with pytest.raises(ValueError, match="run is missing column 'session'"):
        pr.evaluate(run, qrels, ["AP"], query=["q", "session"])
    with pytest.raises(TypeError, match="query must be a column name or a non-empty list"):
        pr.evaluate(run, qrels, ["AP"], query=[])
