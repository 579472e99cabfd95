"""precision_recall_curve: interpolated points equal IPrec, averages equal the means."""

from __future__ import annotations

import warnings

import polars as pl
import pytest
from corpus import random_corpus

import polars_rankeval as pr
from polars_rankeval.curves import precision_recall_curve


@pytest.mark.parametrize("conventions", ["trec_eval-10", "trec_eval-9"])
def test_interpolated_points_equal_iprec_and_mean_curve_equals_mean_iprec(conventions) -> None:
    run, qrels = random_corpus(8, n_queries=15)
    names = [f"IPrec@{x / 10}" for x in range(11)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        iprec = pr.evaluate(run, qrels, names, conventions=conventions)
        curve = precision_recall_curve(run, qrels, conventions=conventions)
    assert curve.columns == ["query", "recall", "precision"]
    assert curve.height == iprec.height * 11
    for (q, recall), precision in zip(
        curve.select("query", "recall").iter_rows(), curve["precision"], strict=True
    ):
        assert precision == iprec.filter(pl.col("query") == q)[f"IPrec@{recall}"].item()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        mean = precision_recall_curve(run, qrels, per_query=False, conventions=conventions)
    assert mean["recall"].to_list() == [x / 10 for x in range(11)]
    expected = [iprec[n].mean() for n in names]
    assert mean["precision"].to_list() == pytest.approx(expected, abs=1e-12)


def test_rounding_follows_the_conventions_unless_given() -> None:
    # |R| = 3, relevant retrieved at ranks 1 and 4; recall 0.4 stands for lround(1.2) = 1
    # relevant document in trec_eval 10.0 (max(P@1, P@4) = 1) and (long)(1.2 + 0.9) = 2
    # in 9.x (P@4 = 2/4)
    run = pl.DataFrame({"query": ["q"] * 4, "doc": list("abcd"), "score": [4.0, 3.0, 2.0, 1.0]})
    qrels = pl.DataFrame({"query": ["q"] * 3, "doc": ["a", "d", "z"], "relevance": [1, 1, 1]})

    def at_04(**options) -> float:
        curve = precision_recall_curve(run, qrels, points=6, **options)
        return curve.filter(pl.col("recall") == 0.4)["precision"].item()

    assert at_04() == 1.0
    assert at_04(conventions="trec_eval-9") == 2 / 4
    assert at_04(rounding="v9") == 2 / 4
    assert at_04(conventions="trec_eval-9", rounding="v10") == 1.0


def test_raw_points_by_hand_and_judged_input() -> None:
    run = pl.DataFrame({"query": ["q"] * 5, "doc": list("abcde"), "score": [5.0, 4, 3, 2, 1]})
    qrels = pl.DataFrame({"query": ["q"] * 3, "doc": ["a", "c", "z"], "relevance": [1, 2, 1]})
    curve = precision_recall_curve(run, qrels, points=None)
    assert curve["recall"].to_list() == [1 / 3, 2 / 3]
    assert curve["precision"].to_list() == [1 / 1, 2 / 3]
    judged = pr.judge(run, qrels)
    assert precision_recall_curve(judged, points=None).equals(curve)
    lazy = precision_recall_curve(run.lazy(), qrels.lazy(), points=None)
    assert isinstance(lazy, pl.LazyFrame)
    with pytest.raises(ValueError, match="points"):
        precision_recall_curve(run, qrels, points=None, per_query=False)
    for absurd in (1, 1_000_000):  # the work would follow N, not the data
        with pytest.raises(ValueError, match="points must be an int from 2 to 1001"):
            precision_recall_curve(run, qrels, points=absurd)
