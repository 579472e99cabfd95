"""Pinned edge cases with exact expected values, and properties over random runs."""

from __future__ import annotations

import math

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import polars_rankeval as pr

ALL = [
    "AP",
    "AP@3",
    "P@1",
    "P@3",
    "P@10",
    "R@3",
    "R@10",
    "RR",
    "nDCG",
    "nDCG@3",
    "Rprec",
    "Success@3",
    "NumRet",
    "NumRel",
    "NumRelRet",
]


def score(docs, scores, judged, measures=ALL, **kw):
    run = pl.DataFrame(
        {"query": ["q"] * len(docs), "doc": docs, "score": scores},
        schema={"query": pl.String, "doc": pl.String, "score": pl.Float64},
    )
    qrels = pl.DataFrame(
        {"query": ["q"] * len(judged), "doc": list(judged), "relevance": list(judged.values())},
        schema={"query": pl.String, "doc": pl.String, "relevance": pl.Int64},
    )
    return pr.evaluate(run, qrels, measures, **kw).row(0, named=True)


def test_no_relevant_document_scores_zero():
    out = score(["a", "b"], [2.0, 1.0], {"a": 0, "b": 0, "c": -1})
    assert {k: v for k, v in out.items() if k != "query"} == {
        **dict.fromkeys(ALL, 0.0),
        "NumRet": 2.0,
    }


def test_run_of_one_relevant_document():
    out = score(["a"], [1.0], {"a": 1, "b": 1})
    assert out["AP"] == (1 / 1) / 2
    assert out["P@1"] == 1.0 and out["P@3"] == 1 / 3 and out["P@10"] == 1 / 10
    assert out["R@3"] == 1 / 2 and out["RR"] == 1.0 and out["Rprec"] == 1 / 2
    assert out["nDCG"] == pytest.approx(1 / (1 + 1 / math.log2(3)), abs=1e-12)
    assert (out["NumRet"], out["NumRel"], out["NumRelRet"]) == (1.0, 2.0, 1.0)


def test_all_documents_tied_ranked_by_doc_id_descending():
    # Ties: "c" > "b" > "a" as strings, so the order is c, b, a.
    out = score(["a", "b", "c"], [0.0, 0.0, 0.0], {"a": 1})
    assert out["RR"] == 1 / 3
    assert out["AP"] == 1 / 3
    assert out["P@3"] == 1 / 3 and out["P@1"] == 0.0


def test_cutoff_larger_than_run():
    out = score(["a", "b"], [2.0, 1.0], {"a": 1, "b": 1})
    assert out["P@10"] == 2 / 10  # divided by k, not by the run length
    assert out["R@10"] == 1.0 and out["AP@3"] == 1.0 and out["nDCG@3"] == 1.0


def test_negative_grades_are_not_relevant():
    out = score(["a", "b"], [2.0, 1.0], {"a": -2, "b": 1})
    assert out["RR"] == 1 / 2 and out["NumRel"] == 1.0
    assert out["nDCG"] == pytest.approx((1 / math.log2(3)) / 1.0, abs=1e-12)


def test_relevant_document_never_retrieved_costs_score():
    out = score(["a", "b"], [2.0, 1.0], {"a": 1, "z": 3})
    assert out["AP"] == (1 / 1) / 2
    assert out["R@10"] == 1 / 2
    assert out["nDCG"] == pytest.approx(1 / (3 + 1 / math.log2(3)), abs=1e-12)


def test_every_document_relevant():
    out = score(["a", "b", "c"], [3.0, 2.0, 1.0], {"a": 1, "b": 1, "c": 1})
    for m in ("AP", "AP@3", "P@1", "P@3", "R@3", "RR", "nDCG", "nDCG@3", "Rprec", "Success@3"):
        assert out[m] == pytest.approx(1.0, abs=1e-12), m


# ----------------------------------------------------------------------------- properties


@st.composite
def judged_ranking(draw):
    """A single query's ranking: grades in rank order plus relevant docs never retrieved."""
    grades = draw(st.lists(st.sampled_from([None, -1, 0, 1, 2]), min_size=1, max_size=25))
    missed = draw(st.integers(0, 4))
    ties = draw(st.booleans())
    docs = [f"d{i:02d}" for i in range(len(grades))]
    scores = [float(len(grades) - i) // (3 if ties else 1) for i in range(len(grades))]
    judged = {d: g for d, g in zip(docs, grades, strict=True) if g is not None}
    judged |= {f"m{j}": 1 for j in range(missed)}
    if not judged:
        judged = {"m": 1}
    return docs, scores, judged


BOUNDED = [m for m in ALL if not m.startswith("Num")]  # the counts are unbounded
PROPERTY_SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@PROPERTY_SETTINGS
@given(case=judged_ranking())
def test_properties_of_one_ranking(case):
    docs, scores, judged = case
    ks = list(range(1, 12))
    names = BOUNDED + [f"P@{k}" for k in ks] + [f"R@{k}" for k in ks] + ["NumRel"]
    out = score(docs, scores, judged, names)
    for m in BOUNDED:
        assert 0.0 <= out[m] <= 1.0, m
    n_rel = out["NumRel"]
    for k in ks:
        assert out[f"P@{k}"] * k == pytest.approx(out[f"R@{k}"] * n_rel, abs=1e-9)
        if k > 1:
            assert out[f"R@{k}"] >= out[f"R@{k - 1}"]
    if 1 <= n_rel <= 11:
        r = int(n_rel)
        assert out["Rprec"] == pytest.approx(out[f"P@{r}"], abs=1e-12)
        assert out["Rprec"] == pytest.approx(out[f"R@{r}"], abs=1e-12)
    if n_rel == 1:
        assert out["AP"] == pytest.approx(out["RR"], abs=1e-12)


@PROPERTY_SETTINGS
@given(
    case=judged_ranking(),
    seed=st.integers(0, 2**16),
    scale=st.floats(0.1, 10.0),
    shift=st.floats(-5.0, 5.0),
)
def test_row_order_and_monotone_transform_invariance(case, seed, scale, shift):
    docs, scores, judged = case
    expected = score(docs, scores, judged)
    run = pl.DataFrame({"query": ["q"] * len(docs), "doc": docs, "score": scores})
    qrels = pl.DataFrame(
        {"query": ["q"] * len(judged), "doc": list(judged), "relevance": list(judged.values())}
    )
    moved = run.sample(fraction=1.0, shuffle=True, seed=seed).with_columns(
        score=pl.col("score") * scale + shift
    )
    assert pr.evaluate(moved, qrels, ALL).row(0, named=True) == pytest.approx(expected)


def test_query_whose_retrieved_documents_are_all_unjudged_is_scored():
    run = pl.DataFrame(
        {"query": ["q1", "q1", "q2"], "doc": ["a", "b", "c"], "score": [1.0, 2.0, 1.0]}
    )
    qrels = pl.DataFrame({"query": ["q1", "q2"], "doc": ["z", "c"], "relevance": [1, 1]})
    for measures in (["AP", "P@5"], ["AP", "NumRet", "NumRel"]):
        out = pr.evaluate(run, qrels, measures)
        assert out["query"].to_list() == ["q1", "q2"]  # q1 scored, as trec_eval does
        assert out.row(0, named=True)["AP"] == 0.0
    assert pr.evaluate(run, qrels, ["NumRet", "NumRel"]).row(0) == ("q1", 2.0, 1.0)


def test_sums_are_added_in_rank_order_as_trec_eval_adds_them():
    # DCG and the ideal DCG of a perfect ranking are the same terms added in the same
    # order: nDCG is exactly 1 (a grouped summation gave 1.0000000000000002 here)
    run = pl.DataFrame({"query": ["q"] * 4, "doc": ["d00", "d01", "d02", "d03"],
                        "score": [4.0, 3.0, 2.0, 1.0]})  # fmt: skip
    qrels = run.select("query", "doc", relevance=pl.lit(1))
    row = pr.evaluate(run, qrels, ["nDCG", "nDCG@3", "nDCGRel", "Rndcg"]).row(0)
    assert row[1:] == (1.0, 1.0, 1.0, 1.0)
    dcg = 0.0
    for rank in range(1, 5):
        dcg += 1.0 / math.log2(rank + 1)
    judged = pr.judge(run, qrels)
    assert judged.select(pr.metrics.dcg()).item() == dcg
