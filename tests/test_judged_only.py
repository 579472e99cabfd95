"""``judged_only=True`` (trec_eval's ``-J``, ir_measures' ``judged_only``): each ranking
without its unjudged documents (no qrels row, or a negative grade), the others ranked
1, 2, ... in their order, on every way in, against pytrec_eval's ``judged_docs_only_flag``.
"""

from __future__ import annotations

import warnings

import polars as pl
import pytest
import pytrec_eval
from corpus import as_dicts, random_corpus
from polars.testing import assert_frame_equal

import polars_rankeval as pr

# ours (judged_only) -> pytrec_eval's name
MEASURES = {
    "AP(judged_only=True)": "map",
    "nDCG(judged_only=True)@10": "ndcg_cut_10",
    "R(judged_only=True)@5": "recall_5",
    "RR(judged_only=True)": "recip_rank",
    "Rprec(judged_only=True)": "Rprec",
    "SetAP(judged_only=True)": "set_map",
    "SetF(judged_only=True)": "set_F",
    "SetP(judged_only=True)": "set_P",
    "Success(judged_only=True)@3": "success_3",
    "IPrec(judged_only=True)@0.5": "iprec_at_recall_0.50",
    "P(judged_only=True)@5": "P_5",
}
TREC = {"map", "ndcg_cut.10", "recall.5", "recip_rank", "Rprec", "set_map", "set_F", "set_P",
        "success.3", "iprec_at_recall.0.50", "P.5"}  # fmt: skip


def judged_only_reference(run: pl.DataFrame, qrels: pl.DataFrame) -> dict[str, dict[str, float]]:
    """pytrec_eval (trec_eval 9) with ``judged_docs_only_flag``, per query."""
    run_d, qrels_d = as_dicts(run, qrels)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels_d, TREC, judged_docs_only_flag=True)
    return evaluator.evaluate(run_d)


def evaluated(run: pl.DataFrame | pl.LazyFrame, qrels: pl.DataFrame, **kw) -> pl.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        out = pr.evaluate(run, qrels, [*MEASURES, "AP"], conventions="trec_eval-9", **kw)
    return out.collect() if isinstance(out, pl.LazyFrame) else out


def assert_equal_to_reference(ours: pl.DataFrame, theirs: dict[str, dict[str, float]]) -> None:
    checked = 0
    for row in ours.iter_rows(named=True):
        for name, trec in MEASURES.items():
            assert abs(row[name] - theirs[row["query"]][trec]) <= 1e-9, (row["query"], name)
            checked += 1
    assert checked >= 15 * len(MEASURES)


@pytest.mark.parametrize("seed", [1, 2])
def test_every_family_equals_trec_eval_dash_j(seed, tmp_path):
    """Runs with ties, string ids, negative grades and unjudged documents; the same from
    a Parquet scan, and by evaluate_judged on judge's table, eager and lazy."""
    run, qrels = random_corpus(seed, n_queries=30)
    theirs = judged_only_reference(run, qrels)
    ours = evaluated(run, qrels)
    assert_equal_to_reference(ours, theirs)
    # the unjudged documents matter: AP over them differs somewhere
    assert (ours["AP"] != ours["AP(judged_only=True)"]).any()
    run.write_parquet(tmp_path / "run.parquet")
    scanned = evaluated(pl.scan_parquet(tmp_path / "run.parquet"), qrels)
    assert scanned.sort("query").equals(ours.sort("query"))
    table = pr.judge(run, qrels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        judged = pr.evaluate_judged(table, [*MEASURES, "AP"])
        lazy = pr.evaluate_judged(table.lazy(), [*MEASURES, "AP"]).collect()
    assert judged.sort("query").equals(ours.sort("query"))
    assert lazy.sort("query").equals(ours.sort("query"))


def test_the_expressions_over_judges_table():
    """Each measure's expression over judge's table reads the ranks among the judged
    documents (``catalogue.judged_rank``): the values of evaluate."""
    run, qrels = random_corpus(3, n_queries=25)
    ours = evaluated(run, qrels).drop("AP")
    exprs = [pr.parse(name).expr() for name in MEASURES]
    table = pr.judge(run, qrels)
    by_query = table.group_by("query").agg(exprs).join(ours.select("query"), on="query")
    assert_frame_equal(by_query.sort("query"), ours.sort("query"), check_exact=False, rtol=1e-12)


def test_depth_cuts_before_the_unjudged_are_taken_out():
    """trec_eval's -M then -J: the top ``depth`` of the run, then its judged documents
    (pytrec_eval has no -M: the run cut to its top 5 first, in trec_eval's order)."""
    run, qrels = random_corpus(4, n_queries=30)
    top = pr.rank_run(run, depth=5).select("query", "doc", score=-pl.col("rank").cast(pl.Float64))
    theirs = judged_only_reference(top, qrels)
    ours = evaluated(run, qrels, depth=5)
    assert_equal_to_reference(ours, theirs)
    assert not evaluated(run, qrels).sort("query").equals(ours.sort("query"))


def test_a_ranking_of_unjudged_documents_only_scores_zero():
    run = pl.DataFrame({"query": ["q", "q", "r"], "doc": ["a", "b", "c"], "score": [2.0, 1.0, 1.0]})
    qrels = pl.DataFrame(
        {"query": ["q", "r", "r"], "doc": ["b", "x", "c"], "relevance": [1, 1, -1]}
    )
    out = pr.evaluate(run, qrels, ["RR(judged_only=True)", "RR"]).sort("query")
    assert out.rows() == [("q", 1.0, 0.5), ("r", 0.0, 0.0)]
    judged = pr.evaluate_judged(pr.judge(run, qrels), ["RR(judged_only=True)", "RR"])
    assert judged.sort("query").rows() == out.rows()
