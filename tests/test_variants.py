"""Measures beyond trec_eval against textbook formulas written here independently."""

from __future__ import annotations

import math
import warnings

import polars as pl
import pytest
from corpus import random_corpus

import polars_rankeval as pr


def _rankings(run: pl.DataFrame, qrels: pl.DataFrame) -> dict[str, tuple[list, dict]]:
    """query -> (doc ids in trec_eval order, {doc: grade}) for the scored queries."""
    grades: dict[str, dict[str, int]] = {}
    for q, d, g in qrels.iter_rows():
        grades.setdefault(str(q), {})[str(d)] = g
    ordered = run.sort(
        ["query", "score", pl.col("doc").cast(pl.String)], descending=[False, True, True]
    )
    out: dict[str, tuple[list, dict]] = {}
    for q, d, _ in ordered.select("query", "doc", "score").iter_rows():
        if str(q) in grades:
            out.setdefault(str(q), ([], grades[str(q)]))[0].append(str(d))
    return out


def _evaluate(run: pl.DataFrame, qrels: pl.DataFrame, names: list[str]) -> dict[str, dict]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        out = pr.evaluate(run, qrels, names)
    return {str(r["query"]): r for r in out.iter_rows(named=True)}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_f1_and_exponential_ndcg_equal_textbook_formulas(seed: int) -> None:
    run, qrels = random_corpus(seed, n_queries=20)
    ours = _evaluate(run, qrels, ["F1@10", "nDCG(gain=exp)@10", "AP(norm=min)@10", "R(norm=min)@5"])
    for q, (docs, grades) in _rankings(run, qrels).items():
        top = docs[:10]
        n_rel = sum(g >= 1 for g in grades.values())
        hits = sum(grades.get(d, 0) >= 1 for d in top)
        p, r = hits / 10, (hits / n_rel if n_rel else 0.0)
        f1 = 2 * p * r / (p + r) if p + r else 0.0
        assert ours[q]["F1@10"] == pytest.approx(f1, abs=1e-12)

        def gain(g: int) -> float:
            return 2.0 ** max(g, 0) - 1.0

        dcg = sum(gain(grades.get(d, 0)) / math.log2(i + 2) for i, d in enumerate(top))
        ideal = sorted((gain(g) for g in grades.values()), reverse=True)[:10]
        idcg = sum(x / math.log2(i + 2) for i, x in enumerate(ideal))
        assert ours[q]["nDCG(gain=exp)@10"] == pytest.approx(dcg / idcg if idcg else 0.0, abs=1e-12)

        seen, ap = 0, 0.0
        for i, d in enumerate(top):
            if grades.get(d, 0) >= 1:
                seen += 1
                ap += seen / (i + 1)
        ap_min = ap / min(10, n_rel) if n_rel else 0.0
        assert ours[q]["AP(norm=min)@10"] == pytest.approx(ap_min, abs=1e-12)
        hits5 = sum(grades.get(d, 0) >= 1 for d in docs[:5])
        r5 = hits5 / min(5, n_rel) if n_rel else 0.0
        assert ours[q]["R(norm=min)@5"] == pytest.approx(r5, abs=1e-12)


def _one(docs: list[str], grades: dict[str, int], names: list[str]) -> dict:
    run = pl.DataFrame(
        {"query": ["q"] * len(docs), "doc": docs, "score": [-float(i) for i in range(len(docs))]}
    )
    qrels = pl.DataFrame(
        {"query": ["q"] * len(grades), "doc": list(grades), "relevance": list(grades.values())}
    )
    return pr.evaluate(run, qrels, names).row(0, named=True)


def test_err_by_hand() -> None:
    # grades 2, 0, 1 with max grade 2: R = 3/4, 0, 1/4
    out = _one(["a", "b", "c"], {"a": 2, "b": 0, "c": 1}, ["ERR@3", "ERR@1", "ERR(max_grade=4)@3"])
    assert out["ERR@3"] == pytest.approx(3 / 4 + (1 / 4) * 1 * (1 / 4) / 3, abs=1e-12)
    assert out["ERR@1"] == pytest.approx(3 / 4, abs=1e-12)
    r1, r3 = 3 / 16, 1 / 16
    assert out["ERR(max_grade=4)@3"] == pytest.approx(r1 + (1 - r1) * r3 / 3, abs=1e-12)


def test_rbp_and_residual_by_hand() -> None:
    # relevant, unjudged, non-relevant, relevant; p = 0.5
    out = _one(["a", "x", "b", "c"], {"a": 1, "b": 0, "c": 2}, ["RBP(p=0.5)", "RBPResid(p=0.5)"])
    assert out["RBP(p=0.5)"] == pytest.approx(0.5 * (1 + 0.5**3), abs=1e-12)
    assert out["RBPResid(p=0.5)"] == pytest.approx(0.5 * 0.5 + 0.5**4, abs=1e-12)


def test_judged_and_random_baselines_by_hand() -> None:
    out = _one(
        ["a", "x", "b", "c"],
        {"a": 1, "b": 0, "c": 2, "z": 1},
        ["Judged@2", "Judged@10", "ExpectedP@2", "ExpectedP@10", "ExpectedAP"],
    )
    assert out["Judged@2"] == 1 / 2
    assert out["Judged@10"] == 3 / 4
    assert out["ExpectedP@2"] == pytest.approx(2 / 4, abs=1e-12)  # 2 of 4 retrieved are relevant
    assert out["ExpectedP@10"] == pytest.approx(4 / 10 * 2 / 4, abs=1e-12)
    # all 12 orders of 2 relevant among 4 retrieved (|R| = 3), by enumeration
    import itertools

    aps = []
    for order in set(itertools.permutations([1, 1, 0, 0])):
        seen, total = 0, 0.0
        for i, rel in enumerate(order):
            if rel:
                seen += 1
                total += seen / (i + 1)
        aps.append(total / 3)
    assert out["ExpectedAP"] == pytest.approx(sum(aps) / len(aps), abs=1e-12)
