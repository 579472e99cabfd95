"""The edges found by trying to break the library: each gets trec_eval's number, a
documented one, or a clear error naming what to change."""

from __future__ import annotations

import math
import warnings

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from test_engine import SAMPLES, assert_same, engine_values, reference_values

import polars_rankeval as pr

RUN = pl.DataFrame({"query": ["q"] * 3, "doc": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
QRELS = pl.DataFrame({"query": ["q", "q"], "doc": ["b", "z"], "relevance": [2, 1]})


def test_err_max_grade_is_checked():
    with pytest.raises(ValueError, match="max_grade of ERR must be an int >= 1"):
        pr.evaluate(RUN, QRELS, ["ERR(max_grade=0)@5"])
    with pytest.raises(ValueError, match=r"ERR\(max_grade=1\) but the qrels hold grade 2"):
        pr.evaluate(RUN, QRELS, ["ERR(max_grade=1)@5"])
    r2 = (2**2 - 1) / 2**3  # b, grade 2 at rank 2, max grade 3
    assert pr.evaluate(RUN, QRELS, ["ERR(max_grade=3)@5"])["ERR(max_grade=3)@5"].item() == r2 / 2


@pytest.mark.parametrize(
    "name", ["__rk_ranking", "__rk_rank", "__rk_bucket", "__row", "__n", "__rk_query", "_n"]
)
def test_user_columns_named_like_internal_ones(name, tmp_path):
    """Whatever the user's columns are called, they never meet an internal column."""
    run = pl.DataFrame(
        {name: ["s"] * 3, "query": ["q"] * 3, "doc": ["a", "b", "c"], "score": [3.0, 2, 1]}
    )
    want = pr.evaluate(RUN, QRELS, ["AP", "NumRet"])
    got = pr.evaluate(run, QRELS, ["AP", "NumRet"], system=name)
    assert_frame_equal(got.drop(name), want)
    assert_frame_equal(pr.evaluate(run, QRELS, ["AP", "NumRet"], by=name).drop(name), want)
    path = tmp_path / "run.parquet"
    run.write_parquet(path)
    spilled = pr.evaluate(pl.scan_parquet(path), QRELS, ["AP"], by=name, memory_limit=1024)
    assert_frame_equal(spilled.collect().drop(name), want.drop("NumRet"))
    doubled = pl.concat([run, run.with_columns(score=pl.col("score") - 1)])
    with pytest.raises(ValueError, match="run has duplicate rows"):
        pr.evaluate(doubled, QRELS, ["AP"], by=name)


def test_column_names_that_collide_with_roles():
    predicted = RUN.rename({"score": "relevance"})  # a model's predicted relevance
    assert_frame_equal(
        pr.evaluate(predicted, QRELS, ["AP"], score="relevance"), pr.evaluate(RUN, QRELS, ["AP"])
    )
    keyed_ap = RUN.rename({"query": "AP"})
    with pytest.raises(ValueError, match="has the name of a measure's output column"):
        pr.evaluate(keyed_ap, QRELS.rename({"query": "AP"}), ["AP"], query="AP")
    keyed_rank = RUN.rename({"query": "rank"})
    with pytest.raises(ValueError, match="pass rank='<another name>'"):
        pr.judge(keyed_rank, QRELS.rename({"query": "rank"}), query="rank")


def test_depth_zero_scores_every_ranking_empty_on_every_path():
    lazy = pr.evaluate(RUN.lazy(), QRELS, ["AP", "NumRet", "Bpref"], depth=0).collect()
    assert lazy.row(0) == ("q", 0.0, 0.0, 0.0)
    assert_frame_equal(lazy, pr.evaluate(RUN, QRELS, ["AP", "NumRet", "Bpref"], depth=0))


def test_huge_cutoffs_give_numbers():
    huge = 10**20
    out = pr.evaluate(RUN, QRELS, [f"P@{huge}", f"nDCG@{huge}", f"RelP@{huge}", f"R@{huge}"])
    assert out.row(0)[1:] == (1 / huge, pr.evaluate(RUN, QRELS, ["nDCG"])["nDCG"].item(), 0.5, 0.5)


@pytest.mark.parametrize(
    ("qrels", "error", "pattern"),
    [
        (
            QRELS.with_columns(relevance=pl.Series([2**63 + 5, 1], dtype=pl.UInt64)),
            ValueError,
            r"qrels row 0 \(0-based\) has a grade 'relevance' beyond",
        ),
        (
            QRELS.with_columns(relevance=pl.Series([1e300, 1.0])),
            ValueError,
            r"qrels row 0 \(0-based\) has a grade 'relevance' beyond",
        ),
        (
            QRELS.with_columns(relevance=pl.Series([math.nan, 1.0])),
            ValueError,
            r"qrels row 0 \(0-based\) has a grade 'relevance' that is not a finite number",
        ),
        (
            QRELS.with_columns(relevance=pl.Series([math.inf, 1.0])),
            ValueError,
            r"qrels row 0 \(0-based\) has a grade 'relevance' that is not a finite number",
        ),
    ],
    ids=["uint64-beyond-int64", "float-1e300", "nan", "inf"],
)
@pytest.mark.parametrize("lazy", [False, True])
def test_grades_that_cannot_be_grades(qrels, error, pattern, lazy):
    with pytest.raises(error, match=pattern):
        if lazy:
            pr.evaluate(RUN.lazy(), qrels.lazy(), ["AP"]).collect()
        else:
            pr.evaluate(RUN, qrels, ["AP"])


def test_other_raw_errors_are_now_clear():
    with pytest.raises(TypeError, match="must hold numeric ranks for order='rank'"):
        pr.evaluate(RUN.with_columns(rank=pl.lit("1")), QRELS, ["AP"], order="rank")
    listed = RUN.with_columns(doc=pl.Series([["a"], ["b"], ["c"]]))
    with pytest.raises(TypeError, match="an id must be one value"):
        pr.evaluate(listed, QRELS.with_columns(doc=pl.Series([["b"], ["z"]])), ["AP"])
    with pytest.raises(TypeError, match="measures must be a name or a list of names"):
        pr.evaluate(RUN, QRELS, None)
    with pytest.raises(ValueError, match=r"rel_level must be an int >= 0\. Got .2."):
        pr.evaluate(RUN, QRELS, ["AP"], rel_level="2")
    pq = pl.DataFrame({"system": ["a", "a", "b", "b"], "query": ["q1", "q2"] * 2,
                       "AP": [0.1, 0.2, 0.3, 0.5]})  # fmt: skip
    with pytest.raises(ValueError, match=r"seed must be an int >= 0 or None\. Got -1"):
        pr.compare(pq, test="randomization", seed=-1)
    assert pr.evaluate(RUN, QRELS, ["P(rel=100000000000000000000)@2"]).item(0, 1) == 0.0


def test_a_query_whose_qrels_are_all_negative_scores_zero():
    """trec_eval aborts and pytrec_eval crashes on such a query; it has no relevant
    document, so every measure is 0 (documented in docs/conventions.md)."""
    qrels = pl.DataFrame({"query": ["q", "q"], "doc": ["a", "b"], "relevance": [-1, -2]})
    out = pr.evaluate(RUN, qrels, ["AP", "nDCG", "Bpref", "RR", "Rndcg", "NumRel", "infAP"])
    assert out.row(0) == ("q", 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


@settings(max_examples=60, deadline=None)
@given(
    scores=st.lists(
        st.integers(-(2**63), 2**63 - 1) | st.integers(2**53 - 3, 2**53 + 3),
        min_size=1,
        max_size=30,
    ),
    judged=st.lists(st.integers(0, 40), max_size=15),
)
def test_integer_scores_rank_exactly(scores, judged):
    n = len(scores)
    run = pl.DataFrame(
        {"query": [f"q{i % 2}" for i in range(n)], "doc": [f"d{i}" for i in range(n)],
         "score": pl.Series(scores, dtype=pl.Int64)}
    )  # fmt: skip
    qrels = pl.DataFrame(
        {"query": [f"q{j % 2}" for j in judged], "doc": [f"d{j}" for j in judged],
         "relevance": [1 + j % 3 for j in judged]}
    ).unique(["query", "doc"])  # fmt: skip
    ranked = pr.rank_run(run)
    for (q,), part in ranked.partition_by("query", as_dict=True).items():
        exact = run.filter(query=q).sort(["score", "doc"], descending=[True, True])["doc"]
        assert part.sort("rank")["doc"].to_list() == exact.to_list()
    if qrels.height:
        measures = ["AP", "RR", "nDCG@3", "Bpref", "P@2"]
        got = engine_values(run, qrels, measures)
        reference = reference_values(run.with_columns(pl.col("score").rank("dense")), qrels,
                                     measures)  # fmt: skip
        assert_same(got, reference)


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 60),
    judged=st.lists(st.integers(0, 80), max_size=30),
    names=st.permutations(["query", "doc", "score", "rank", "__rk_ranking", "AP_x"]),
)
def test_all_tied_runs_and_any_column_names(n, judged, names):
    """Every score equal: ranks come from the doc ids alone; columns may be called
    anything, internal-looking names included."""
    query, doc, score = names[0], names[1], names[2]
    run = pl.DataFrame({query: ["q"] * n, doc: [f"d{i}" for i in range(n)], score: 1.0})
    qrels = pl.DataFrame(
        {query: ["q"] * len(judged), doc: [f"d{j}" for j in judged],
         "grade": [j % 3 for j in judged]}
    ).unique([query, doc])  # fmt: skip
    if not qrels.height:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        got = pr.evaluate(run, qrels, SAMPLES, query=query, doc=doc, score=score,
                          relevance="grade")  # fmt: skip
    plain_run = run.rename({query: "query", doc: "doc", score: "score"})
    plain_qrels = qrels.rename({query: "query", doc: "doc", "grade": "relevance"})
    want = reference_values(plain_run, plain_qrels, SAMPLES)
    assert_same(got.rename({query: "query"}), want)
