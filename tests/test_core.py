"""Known values (SPEC section 5) written as arithmetic, invariances and API shape."""

from __future__ import annotations

import math

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_rankeval as pr


def judged_from_lists(rels: dict[str, list[int]], n_rel: dict[str, int]) -> pl.DataFrame:
    """A pre-judged table: relevance flags in rank order, |R| per query."""
    rows = [(q, rank, g, n_rel[q]) for q, gs in rels.items() for rank, g in enumerate(gs, start=1)]
    return pl.DataFrame(rows, schema=["query", "rank", "relevance", "n_rel"], orient="row")


def run_and_qrels(rels: dict[str, list[int]], n_rel: dict[str, int]):
    """A run (descending scores, rank order as given) and qrels with |R| relevant docs."""
    run_rows, qrels_rows = [], []
    for q, gs in rels.items():
        for i, g in enumerate(gs):
            run_rows.append((q, f"{q}-d{i}", float(len(gs) - i)))
            qrels_rows.append((q, f"{q}-d{i}", g))
        for j in range(n_rel[q] - sum(gs)):  # relevant documents never retrieved
            qrels_rows.append((q, f"{q}-missed{j}", 1))
    run = pl.DataFrame(run_rows, schema=["query", "doc", "score"], orient="row")
    qrels = pl.DataFrame(qrels_rows, schema=["query", "doc", "relevance"], orient="row")
    return run, qrels


SEED_RELS = {"q1": [0, 1, 0, 1, 0], "q2": [1, 1, 0, 0, 0], "q3": [1, 0, 1, 0, 0]}
SEED_NREL = {"q1": 2, "q2": 2, "q3": 3}


@pytest.fixture(params=["qrels", "judged"])
def seed_scores(request):
    """The three-query worked example, scored from run+qrels and from a judged table."""

    def score(measures):
        if request.param == "qrels":
            run, qrels = run_and_qrels(SEED_RELS, SEED_NREL)
            return pr.evaluate(run, qrels, measures)
        return pr.evaluate_judged(judged_from_lists(SEED_RELS, SEED_NREL), measures, n_rel="n_rel")

    return score


def test_seed_average_precision(seed_scores):
    out = seed_scores(["AP", "AP@3"])
    ap = dict(zip(out["query"], out["AP"], strict=True))
    assert ap["q1"] == pytest.approx((1 / 2 + 2 / 4) / 2, abs=1e-12)  # 0.5
    assert ap["q2"] == pytest.approx((1 / 1 + 2 / 2) / 2, abs=1e-12)  # 1.0
    assert ap["q3"] == pytest.approx((1 / 1 + 2 / 3) / 3, abs=1e-12)  # 0.5556
    assert out["AP"].mean() == pytest.approx((0.5 + 1.0 + (1 + 2 / 3) / 3) / 3, abs=1e-12)
    assert round(out["AP"].mean(), 4) == 0.6852
    ap3 = dict(zip(out["query"], out["AP@3"], strict=True))
    assert ap3["q1"] == pytest.approx((1 / 2) / 2, abs=1e-12)  # |R| stays 2 -> 0.25


LONG = [1, 0, 1, 1, 0, 1, 0, 1, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 0, 1]


def test_precision_recall_identity_and_rprec():
    judged = judged_from_lists({"q": LONG}, {"q": 10})
    ks = range(1, 21)
    names = [f"P@{k}" for k in ks] + [f"R@{k}" for k in ks] + ["Rprec"]
    out = pr.evaluate_judged(judged, names, n_rel="n_rel").row(0, named=True)
    for k in ks:
        assert out[f"P@{k}"] * k == pytest.approx(out[f"R@{k}"] * 10, abs=1e-12)
        assert out[f"P@{k}"] == pytest.approx(sum(LONG[:k]) / k, abs=1e-12)
    assert out["Rprec"] == pytest.approx(out["P@10"], abs=1e-12)
    assert out["Rprec"] == pytest.approx(out["R@10"], abs=1e-12)
    assert out["Rprec"] == pytest.approx(sum(LONG[:10]) / 10, abs=1e-12)


def test_known_item_ap_equals_rr():
    rels = {"a": [0, 0, 1], "b": [1, 0], "c": [0, 1, 0, 0], "d": [0, 0]}
    nrel = dict.fromkeys(rels, 1)
    run, qrels = run_and_qrels(rels, nrel)
    out = pr.evaluate(run, qrels, ["AP", "RR"])
    assert out["AP"].to_list() == pytest.approx(out["RR"].to_list(), abs=1e-12)
    assert out["RR"].to_list() == pytest.approx([1 / 3, 1.0, 1 / 2, 0.0], abs=1e-12)


def test_ndcg_linear_gain_by_hand():
    run = pl.DataFrame({"query": ["q"] * 3, "doc": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
    qrels = pl.DataFrame(
        {"query": ["q"] * 4, "doc": ["a", "b", "c", "z"], "relevance": [1, 0, 2, 3]}
    )
    out = pr.evaluate(run, qrels, ["nDCG", "nDCG@2"]).row(0, named=True)
    dcg = 1 / math.log2(2) + 0 + 2 / math.log2(4)
    ideal = 3 / math.log2(2) + 2 / math.log2(3) + 1 / math.log2(4)
    assert out["nDCG"] == pytest.approx(dcg / ideal, abs=1e-12)
    assert out["nDCG@2"] == pytest.approx(1 / (3 + 2 / math.log2(3)), abs=1e-12)


def test_ties_broken_by_doc_id_descending_as_strings():
    # Equal scores: trec_eval ranks "b" before "a10" before "a1" (strcmp descending),
    # and integer ids compare as strings ("9" > "10").
    run = pl.DataFrame({"query": ["q"] * 3, "doc": ["a1", "b", "a10"], "score": [1.0] * 3})
    assert pr.rank_run(run.lazy()).collect()["doc"].to_list() == ["b", "a10", "a1"]
    run_int = pl.DataFrame({"query": [1, 1, 1], "doc": [10, 9, 100], "score": [1.0] * 3})
    assert pr.rank_run(run_int.lazy()).collect()["doc"].to_list() == [9, 100, 10]


def test_rank_order_options_agree_when_ranks_match_scores():
    run, qrels = run_and_qrels(SEED_RELS, SEED_NREL)
    run = run.with_columns(rank=pl.int_range(1, pl.len() + 1).over("query"))
    measures = ["AP", "nDCG@3", "RR"]
    by_score = pr.evaluate(run, qrels, measures)
    assert_frame_equal(pr.evaluate(run, qrels, measures, order="rank"), by_score)
    assert_frame_equal(pr.evaluate(run, qrels, measures, order="presorted"), by_score)


def test_lazy_in_lazy_out_and_namespaces_agree():
    run, qrels = run_and_qrels(SEED_RELS, SEED_NREL)
    eager = pr.evaluate(run, qrels, ["AP", "P@2"])
    lazy = pr.evaluate(run.lazy(), qrels.lazy(), ["AP", "P@2"])
    assert isinstance(lazy, pl.LazyFrame)
    assert_frame_equal(lazy.collect(), eager)
    assert_frame_equal(run.rankeval.evaluate(qrels, ["AP", "P@2"]), eager)
    assert_frame_equal(run.lazy().rankeval.evaluate(qrels, ["AP", "P@2"]).collect(), eager)


def test_output_columns_are_canonical_float64():
    run, qrels = run_and_qrels(SEED_RELS, SEED_NREL)
    out = pr.evaluate(run, qrels, ["map", "P_2", "ndcg_cut_3", "recip_rank", "num_ret"])
    assert out.columns == ["query", "AP", "P@2", "nDCG@3", "RR", "NumRet"]
    assert all(out.schema[c] == pl.Float64 for c in out.columns[1:])


def test_systems_scored_in_one_plan_equal_separately():
    run, qrels = run_and_qrels(SEED_RELS, SEED_NREL)
    other = run.with_columns(score=-pl.col("score"))
    both = pl.concat([run.with_columns(system=pl.lit("A")), other.with_columns(system=pl.lit("B"))])
    out = pr.evaluate(both, qrels, ["AP", "nDCG"])
    assert out.columns[:2] == ["system", "query"]
    for name, single in (("A", run), ("B", other)):
        expected = pr.evaluate(single, qrels, ["AP", "nDCG"])
        assert_frame_equal(out.filter(pl.col("system") == name).drop("system"), expected)


def test_custom_column_names():
    run, qrels = run_and_qrels(SEED_RELS, SEED_NREL)
    run2 = run.rename({"query": "qid", "doc": "docno", "score": "sim"})
    qrels2 = qrels.rename({"query": "qid", "doc": "docno", "relevance": "rel"})
    out = pr.evaluate(run2, qrels2, ["AP"], query="qid", doc="docno", score="sim", relevance="rel")
    assert_frame_equal(out.rename({"qid": "query"}), pr.evaluate(run, qrels, ["AP"]))


def test_per_query_false_gives_means():
    run, qrels = run_and_qrels(SEED_RELS, SEED_NREL)
    means = pr.evaluate(run, qrels, ["AP"], per_query=False)
    assert means["n_queries"].item() == 3
    assert means["AP"].item() == pytest.approx((0.5 + 1.0 + (1 + 2 / 3) / 3) / 3, abs=1e-12)


def test_missing_queries_policies():
    run, qrels = run_and_qrels(SEED_RELS, SEED_NREL)
    extra_qrels = pl.concat(
        [qrels, pl.DataFrame({"query": ["q9"], "doc": ["x"], "relevance": [1]})]
    )
    extra_run = pl.concat([run, pl.DataFrame({"query": ["q0"], "doc": ["y"], "score": [1.0]})])
    with pytest.warns(pr.UnscoredQueriesWarning, match="1 run queries have no qrels"):
        dropped = pr.evaluate(extra_run, extra_qrels, ["AP", "NumRel", "NumRet"])
    assert dropped["query"].to_list() == ["q1", "q2", "q3"]
    zero = pr.evaluate(run, extra_qrels, ["AP", "NumRel", "NumRet"], missing="zero")
    assert zero.filter(pl.col("query") == "q9").row(0) == ("q9", 0.0, 1.0, 0.0)
    with pytest.raises(ValueError, match=r"1 qrels queries are not in the run \(q9\)"):
        pr.evaluate(run, extra_qrels, ["AP"], missing="error")
    cov = pr.coverage(extra_run, extra_qrels)
    assert dict(zip(cov["query"], cov["status"], strict=True)) == {
        "q0": "no_qrels",
        "q1": "scored",
        "q2": "scored",
        "q3": "scored",
        "q9": "not_in_run",
    }


def test_depth_keeps_top_n():
    run, qrels = run_and_qrels(SEED_RELS, SEED_NREL)
    cut = pr.evaluate(run, qrels, ["AP", "NumRet"], depth=3)
    full_at_3 = pr.evaluate(run, qrels, ["AP@3"])
    assert cut["AP"].to_list() == pytest.approx(full_at_3["AP@3"].to_list(), abs=1e-12)
    assert cut["NumRet"].to_list() == [3.0, 3.0, 3.0]


def test_user_group_by_with_metric_expressions():
    run, qrels = run_and_qrels(SEED_RELS, SEED_NREL)
    judged = pr.judge(run, qrels)
    mine = (
        judged.group_by("query")
        .agg(pr.metrics.average_precision().alias("AP"), pr.metrics.precision(2).alias("P@2"))
        .sort("query")
    )
    assert_frame_equal(mine, pr.evaluate(run, qrels, ["AP", "P@2"]))


def test_inputs_are_not_modified():
    run, qrels = run_and_qrels(SEED_RELS, SEED_NREL)
    run_before, qrels_before = run.clone(), qrels.clone()
    pr.evaluate(run, qrels, ["AP", "nDCG@3"])
    assert_frame_equal(run, run_before)
    assert_frame_equal(qrels, qrels_before)
