"""The measure parser: three dialects, parameters, round trips, errors."""

from __future__ import annotations

import polars as pl
import pytest
from corpus import random_corpus

import polars_rankeval as pr
from polars_rankeval.measures import REGISTRY

ALIASES = {
    # trec_eval
    "map": "AP",
    "map_cut_10": "AP@10",
    "P_10": "P@10",
    "recall_100": "R@100",
    "recip_rank": "RR",
    "ndcg_cut_10": "nDCG@10",
    "success_1": "Success@1",
    "iprec_at_recall_0.50": "IPrec@0.5",
    "set_F": "SetF",
    "num_ret": "NumRet",
    "Rprec_mult_0.20": "Rprec(mult=0.2)",
    "relative_P_5": "RelP@5",
    "gm_map": "GMAP",
    "11pt_avg": "IPrecAvg",
    "ndcg_rel": "nDCGRel",
    # ranx
    "map@100": "AP@100",
    "precision@10": "P@10",
    "recall@10": "R@10",
    "ndcg@10": "nDCG@10",
    "mrr": "RR",
    "hit_rate@10": "Success@10",
    "f1@10": "F1@10",
    "r-precision": "Rprec",
    "ndcg_burges@10": "nDCG(gain=exp)@10",
}


@pytest.mark.parametrize(("alias", "canonical"), ALIASES.items())
def test_alias_gives_canonical_name(alias: str, canonical: str) -> None:
    assert str(pr.parse(alias)) == canonical
    assert pr.parse(alias) == pr.parse(canonical)


def test_aliases_give_the_same_columns_and_values() -> None:
    run, qrels = random_corpus(11, n_queries=15)
    with pytest.warns(pr.UnscoredQueriesWarning):
        by_alias = pr.evaluate(run, qrels, list(ALIASES))
    with pytest.warns(pr.UnscoredQueriesWarning):
        by_name = pr.evaluate(run, qrels, list(dict.fromkeys(ALIASES.values())))
    assert by_alias.columns == by_name.columns
    assert by_alias.equals(by_name)


ROUND_TRIP = [
    "P(rel=2)@5",
    "AP(norm=min)@10",
    "R(norm=min)@10",
    "nDCG(gain=exp)@10",
    "nDCG(gains=1:3;2:9;4:4.5)",
    "IPrec(rounding=v10)@0.1",
    "IPrecAvg(levels=0.25;0.5;0.75)",
    "Utility(a=2.0,n_docs=1000)",
    "RBP(p=0.5)",
    "RBPResid",
    "ERR(max_grade=4)@20",
    "Judged@10",
    "ExpectedP@10",
    "ExpectedAP",
    "SetF(beta=0.5)",
    "Rprec(mult=2.0)",
]


@pytest.mark.parametrize("name", ROUND_TRIP + sorted(REGISTRY))
def test_round_trip(name: str) -> None:
    if REGISTRY.get(name) and REGISTRY[name].cutoff == "required":
        name += "@0.5" if REGISTRY[name].cutoff_kind is float else "@5"
    m = pr.parse(name)
    assert pr.parse(str(m)) == m
    assert str(pr.parse(str(m))) == str(m)


def test_defaults_are_left_out() -> None:
    assert str(pr.parse("RBP(p=0.8)")) == "RBP"
    assert str(pr.parse("nDCG(gain=linear)@5")) == "nDCG@5"
    assert str(pr.parse("IPrec@1")) == "IPrec@1.0"


def test_trec_parameter_forms_expand() -> None:
    assert [str(m) for m in pr.parse_measures("P.5,10")] == ["P@5", "P@10"]
    assert [str(m) for m in pr.parse_measures("iprec_at_recall..10,.5")] == [
        "IPrec@0.1",
        "IPrec@0.5",
    ]
    assert [str(m) for m in pr.parse_measures("ndcg.1=3,2=9")] == ["nDCG(gains=1:3;2:9)"]
    with pytest.raises(ValueError, match="stands for 2 measures"):
        pr.parse("P.5,10")


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("P@0", "must be >= 1"),
        ("AP@-3", "must be >= 1"),
        ("IPrec@1.5", r"in \[0, 1\]"),
        ("ndgc@10", "Did you mean: .*ndcg"),
        ("Bperf", "Did you mean: .*Bpref"),
        (
            "nDCG(gain=cubic)",
            "Parameter gain of nDCG must be one of 'linear', 'exp', 'binary'. Got 'cubic'",
        ),
        ("P(rel=0)@5", "rel must be >= 1"),
        ("AP(foo=1)", "no parameter 'foo'"),
        ("Bpref@10", "takes no cutoff"),
        ("RelP", "needs a cutoff"),
        ("nDCG(gains=1:x)", "gain"),
        ("utility.1,2", "4 coefficients"),
    ],
)
def test_errors_name_the_problem(name: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        pr.parse_measures(name)


def test_per_measure_rel_threshold() -> None:
    run = pl.DataFrame({"query": ["q"] * 3, "doc": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
    qrels = pl.DataFrame({"query": ["q"] * 3, "doc": ["a", "b", "c"], "relevance": [1, 2, 0]})
    out = pr.evaluate(run, qrels, ["P@2", "P(rel=2)@2"])
    assert out["P@2"].item() == 2 / 2
    assert out["P(rel=2)@2"].item() == 1 / 2
    assert out["P(rel=2)@2"].item() == pr.evaluate(run, qrels, "P@2", rel_level=2)["P@2"].item()


def test_mean_scores_geometric_and_totals() -> None:
    per_query = pl.DataFrame(
        {"query": ["a", "b", "c"], "GMAP": [0.5, 0.0, 1.0], "NumRet": [3.0, 4, 5]}
    )
    out = pr.mean_scores(per_query)
    assert abs(out["GMAP"].item() - (0.5 * 0.00001 * 1.0) ** (1 / 3)) < 1e-12
    assert out["NumRet"].item() == 12.0
    assert pr.mean_scores(per_query, aggregate="mean")["NumRet"].item() == 4.0
