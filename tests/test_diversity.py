"""Diversity measures over subtopic qrels (polars_rankeval.diversity) against installed
ir_measures' pyndeval provider (ndeval), per query, and by hand."""

from __future__ import annotations

import math

import ir_measures
import numpy as np
import polars as pl
import pytest
from test_ir_measures import ranked_scores

import polars_rankeval as pr
from polars_rankeval.diversity import parse_diversity

NAMES = [
    "alpha_nDCG@10",
    "alpha_nDCG@1",
    "alpha_DCG@5",
    "alpha_DCG@1",
    "alpha_nDCG(alpha=0.25)@20",
    "ERR_IA@10",
    "ERR_IA@1",
    "nERR_IA@5",
    "NRBP",
    "nNRBP",
    "NRBP(alpha=0.25,beta=0.75)",
    "nNRBP(beta=0.8)",
    "AP_IA",
    "P_IA@5",
    "P_IA@20",
    "StRecall@10",
    "StRecall@1",
    "alpha_nDCG(rel=2)@10",
    "AP_IA(rel=2)",
]


def subtopic_corpus(seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A run with tied scores and subtopic qrels: 1-5 subtopics a query, graded and
    negative grades, queries missing from the run, some without a relevant pair."""
    rng = np.random.default_rng(seed)
    run_rows, qrels_rows = [], []
    for qi in range(25):
        q = f"q{qi}"
        pool = [f"d{j}" for j in rng.choice(300, 60, replace=False)]
        for s in range(int(rng.integers(1, 6))):
            for d in rng.choice(pool, int(rng.integers(1, 15)), replace=False):
                grade = int(rng.choice([-1, 0, 0, 1, 1, 2])) if qi % 9 else 0
                qrels_rows.append((q, str(s + 1), str(d), grade))
        if qi % 7 == 3:
            continue  # missing from the run
        docs = rng.choice(pool, int(rng.integers(1, 40)), replace=False)
        scores = rng.integers(0, 5, len(docs)) / 2
        run_rows += [(q, str(d), float(v)) for d, v in zip(docs, scores, strict=True)]
    run = pl.DataFrame(run_rows, schema=["query", "doc", "score"], orient="row")
    qrels = pl.DataFrame(qrels_rows, schema=["query", "subtopic", "doc", "relevance"], orient="row")
    return run, qrels.unique(["query", "subtopic", "doc"], keep="first", maintain_order=True)


def ndeval_values(run: pl.DataFrame, qrels: pl.DataFrame) -> dict[tuple[str, str], float]:
    """(query, name) -> value from ir_measures' pyndeval provider (subtopic: "iteration")."""
    irm_qrels = qrels.rename({"query": "query_id", "subtopic": "iteration", "doc": "doc_id"})
    irm_run = run.rename({"query": "query_id", "doc": "doc_id"})
    provider = ir_measures.providers.registry["pyndeval"]
    out = {}
    for name in NAMES:
        # one call per measure: ir_measures 0.4 reads the run once, so a second set of
        # parameters (alpha, beta, rel) in the same call gets no values
        ours = parse_diversity(name)
        measure = getattr(ir_measures.measures, ours.name)(**dict(ours.params))
        measure = measure if ours.cutoff is None else measure @ ours.cutoff
        found = provider.iter_calc([measure], irm_qrels.to_pandas(), irm_run.to_pandas())
        out |= {(m.query_id, name): m.value for m in found}
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_diversity_measures_equal_ndeval(seed: int) -> None:
    run, qrels = subtopic_corpus(seed)
    run = ranked_scores(run)  # ndeval orders tied scores by doc id ascending
    theirs = ndeval_values(run, qrels)
    ours = pr.evaluate_diversity(run, qrels, NAMES, missing="zero")  # ir_measures: absent -> 0
    got = {(r["query"], n): r[str(parse_diversity(n))] for r in ours.iter_rows(named=True)
           for n in NAMES}  # fmt: skip
    assert set(got) == set(theirs)
    nan = {key for key, value in theirs.items() if math.isnan(value)}
    assert {n for _, n in nan} <= {"nNRBP", "nNRBP(beta=0.8)"}  # ndeval: 0/0 without relevant
    assert all(got[key] == 0.0 for key in nan)
    bad = {k: (got[k], theirs[k]) for k in set(got) - nan if abs(got[k] - theirs[k]) > 1e-9}
    assert not bad, sorted(bad.items())[:10]
    assert sum(v > 0 for v in got.values()) > len(got) // 3


def test_by_hand() -> None:
    # ranking a, b, c; subtopics: a -> {1, 2}, b -> {1}, c -> {3}; alpha = 0.5
    run = pl.DataFrame({"query": ["q"] * 3, "doc": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
    qrels = pl.DataFrame(
        {
            "query": ["q"] * 4,
            "subtopic": ["1", "2", "1", "3"],
            "doc": ["a", "a", "b", "c"],
            "relevance": [1, 1, 1, 1],
        }
    )
    names = ["alpha_DCG@3", "alpha_nDCG@3", "P_IA@2", "StRecall@2", "AP_IA", "NRBP"]
    out = pr.evaluate_diversity(run, qrels, names).row(0, named=True)
    scores = [2.0, 0.5, 1.0]  # a: two new subtopics; b: subtopic 1 again; c: a new one
    dcg = sum(s / math.log2(r + 2) for r, s in enumerate(scores))
    ideal_ideal = sum(3 * 0.5**i / math.log2(i + 2) for i in range(3))
    assert out["alpha_DCG@3"] == pytest.approx(dcg / ideal_ideal, abs=1e-12)
    ideal = [2.0, 1.0, 0.5]  # greedy: a, then c (new subtopic 3), then b
    ideal_dcg = sum(s / math.log2(r + 2) for r, s in enumerate(ideal))
    assert out["alpha_nDCG@3"] == pytest.approx(dcg / ideal_dcg, abs=1e-12)
    assert out["P_IA@2"] == 3 / (2 * 3)
    assert out["StRecall@2"] == 2 / 3
    # subtopic 1: a at 1, b at 2 -> (1 + 1) / 2; subtopic 2: a -> 1; subtopic 3: c at 3 -> 1/3
    assert out["AP_IA"] == pytest.approx((1.0 + 1.0 + 1 / 3) / 3, abs=1e-12)
    nrbp = sum(s * 0.5**r for r, s in enumerate(scores)) * (1 - 0.5 * 0.5) / 3
    assert out["NRBP"] == pytest.approx(nrbp, abs=1e-12)


def test_ir_measures_greek_spelling() -> None:
    """ir_measures reads α_nDCG and α_DCG as alpha_nDCG and alpha_DCG (its aliases): the
    same measures here, with their parameters."""
    run = pl.DataFrame({"query": ["q"] * 3, "doc": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
    qrels = pl.DataFrame(
        {"query": ["q"] * 3, "subtopic": ["1", "2", "1"], "doc": ["a", "b", "c"], "relevance": 1}
    )
    greek = pr.evaluate_diversity(run, qrels, ["α_nDCG(alpha=0.3)@2", "α_DCG@3"])
    latin = pr.evaluate_diversity(run, qrels, ["alpha_nDCG(alpha=0.3)@2", "alpha_DCG@3"])
    assert greek.columns == latin.columns == ["query", "alpha_nDCG(alpha=0.3)@2", "alpha_DCG@3"]
    assert greek.equals(latin)
    assert str(ir_measures.parse_measure("α_nDCG@2")) == "alpha_nDCG@2"
    with pytest.raises(ValueError, match="is a diversity measure"):
        pr.parse_measures(["α_nDCG@10"], conventions="ir_measures")


def test_bad_names_and_columns() -> None:
    run = pl.DataFrame({"query": ["q"], "doc": ["a"], "score": [1.0]})
    qrels = pl.DataFrame({"query": ["q"], "doc": ["a"], "relevance": [1]})
    with pytest.raises(ValueError, match="subtopic"):
        pr.evaluate_diversity(run, qrels, ["alpha_nDCG@10"])
    with pytest.raises(ValueError, match="needs a cutoff"):
        parse_diversity("alpha_nDCG")
    with pytest.raises(ValueError, match="has no parameter"):
        parse_diversity("AP_IA(alpha=0.3)")
    with pytest.raises(ValueError, match="Unknown diversity measure"):
        parse_diversity("alpha_mDCG@10")
    twice = pl.DataFrame({"query": ["q", "q"], "doc": ["a", "a"], "score": [1.0, 2.0]})
    subtopics = qrels.with_columns(subtopic=pl.lit(1))
    with pytest.raises(ValueError, match=r"the run has duplicate rows for \(query=.q., doc=.a.\)"):
        pr.evaluate_diversity(twice, subtopics, ["alpha_nDCG@10"])
    # integer query ids in the run, strings in the qrels: compared as strings
    numbered = pl.DataFrame({"query": [7], "doc": ["a"], "score": [1.0]})
    out = pr.evaluate_diversity(numbered, subtopics.with_columns(query=pl.lit("7")), "P_IA@1")
    assert out.rows() == [("7", 1.0)]
    assert str(parse_diversity("MAP-IA")) == "AP_IA"
    with pytest.raises(ValueError, match="evaluate_diversity"):
        pr.evaluate(run, qrels, ["alpha_nDCG@10"])
    assert str(parse_diversity("nNRBP(alpha=0.5,beta=0.8)")) == "nNRBP(beta=0.8)"
