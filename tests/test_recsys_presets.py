"""conventions="lenskit" and "recommenders": the tools' names and definitions, per user.

Against LensKit 2025.8.1 and Microsoft Recommenders 1.2.1 where they are importable,
else against the transcriptions of tests/recsys_tool_peers.py; random logs with equal
scores, users without test interactions, test items never recommended and items
absent from the training log (tests/test_recsys.py's ``random_log``), every value at
1e-9.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import polars as pl
import pytest
import recsys_tool_peers as tool
from test_recsys import CUTOFFS, ITEM, SEEDS, USER, pandas, random_log, ranked, same

import polars_rankeval as pr
from polars_rankeval.measures import parse_measures


def _evaluate(recs: pl.DataFrame, test: pl.DataFrame, names: list[str], **kw) -> pd.DataFrame:
    qrels = test.with_columns(relevance=pl.lit(1))
    with warnings.catch_warnings():  # users without test interactions: left out, warned
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        got = pr.evaluate(recs, qrels, names, query=USER, doc=ITEM, **kw)
    return pandas(got).set_index(USER)


@pytest.mark.parametrize("seed", SEEDS)
def test_lenskit_preset_equals_lenskit_per_list(seed: int) -> None:
    log = random_log(seed)
    reco, test = ranked(log["recs"]), pandas(log["test"])
    recs = pl.DataFrame({c: reco[c].to_numpy() for c in reco})
    names = [f"{name}@{k}" for k in CUTOFFS for name in tool.LENSKIT_NAMES]
    got = _evaluate(recs, log["test"], names, order="rank", conventions="lenskit")
    columns = dict(zip(names, got.columns, strict=True))
    for k in CUTOFFS:
        for name in tool.LENSKIT_NAMES:
            same(tool.lenskit(reco, test, name, k), got[columns[f"{name}@{k}"]])
    assert columns["NDCG@3"] == "nDCG(discount=clipped,gain=binary)@3"
    assert columns["AveragePrecision@3"] == "AP(norm=retrieved)@3"
    assert columns["Precision@3"] == "P(adaptive_k=True)@3"
    assert columns["Recall@3"] == "R(norm=min)@3"


def test_lenskit_known_values() -> None:
    """A list a, b, c against test items b, c, z, as arithmetic from LensKit's formulas."""
    recs = pl.DataFrame({USER: [1, 1, 1], ITEM: [10, 11, 12], "rank": [1, 2, 3]})
    test = pl.DataFrame({USER: [1, 1, 1], ITEM: [11, 12, 99]})
    names = ["NDCG@2", "NDCG@5", "AveragePrecision@2", "AveragePrecision@5",
             "Precision@5", "Recall@2", "RecipRank@5"]  # fmt: skip
    got = _evaluate(recs, test, names, order="rank", conventions="lenskit").iloc[0].tolist()
    expected = [
        (1 / 1) / (1 + 1),  # rank 2 discounted by log2(max(2, 2)) = 1; ideal two of gain 1
        (1 + 1 / math.log2(3)) / (1 + 1 + 1 / math.log2(3)),  # ideal: min(|test|, 5) = 3
        (1 / 2) / min(3, 2),  # two items listed in the top 2
        (1 / 2 + 2 / 3) / min(3, 3),
        2 / 3,  # three items listed, fewer than k
        1 / min(3, 2),
        1 / 2,
    ]
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    for name, value in zip(names, expected, strict=True):
        k = int(name.split("@")[1])
        family = name.split("@")[0]
        assert tool.lenskit_value(family, [10, 11, 12], [11, 12, 99], k) == pytest.approx(
            value, abs=1e-12
        )


@pytest.mark.parametrize("seed", SEEDS)
def test_recommenders_preset_equals_recommenders_per_user(seed: int) -> None:
    log = random_log(seed)
    recs = log["recs"]  # raw scores with ties: the input order decides, as its pandas sort
    pred = pandas(recs.rename({"score": "prediction"}))
    test = pandas(log["test"])
    names = [f"{name}@{k}" for k in CUTOFFS for name in tool.RECOMMENDERS_NAMES]
    got = _evaluate(recs, log["test"], names, conventions="recommenders")
    columns = dict(zip(names, got.columns, strict=True))
    for k in CUTOFFS:
        for name in tool.RECOMMENDERS_NAMES:
            same(tool.recommenders(pred, test, name, k), got[columns[f"{name}@{k}"]])
    assert [columns[f"{n}@3"] for n in tool.RECOMMENDERS_NAMES] == [
        "P@3", "R@3", "nDCG(gain=binary)@3", "AP(norm=min)@3", "AP@3"]  # fmt: skip


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_recommenders_system_means(seed: int) -> None:
    """The functions' means over all users: precision, recall and MAP over the users both
    frames hold (our mean); ndcg_at_k over every test user, 0 for one without
    recommendations (our mean with missing="zero")."""
    log = random_log(seed)
    pred = pandas(log["recs"].rename({"score": "prediction"}))
    true = pandas(log["test"]).assign(rating=1.0)
    with pytest.warns(pr.UnscoredQueriesWarning):  # users without test interactions
        scored = pr.evaluate(log["recs"], log["test"].with_columns(relevance=pl.lit(1)),
                             ["precision_at_k@5", "recall_at_k@5", "map_at_k@5", "ndcg_at_k@5"],
                             query=USER, doc=ITEM, conventions="recommenders", missing="zero",
                             per_query=False)  # fmt: skip
    common = set(pred[USER]) & set(true[USER])
    per_user = {name: tool.recommenders(pred, pandas(log["test"]), name, 5)
                for name in ("precision_at_k", "recall_at_k", "map_at_k", "ndcg_at_k")}  # fmt: skip
    for name in ("precision_at_k", "recall_at_k", "map_at_k"):
        expected = per_user[name].sum() / len(common)
        if tool.ms_eval is not None:
            real = getattr(tool.ms_eval, name)(true, pred, col_user=USER, col_item=ITEM,
                                                col_prediction="prediction", k=5)  # fmt: skip
            assert real == pytest.approx(expected, abs=1e-12)
        ours = _evaluate(log["recs"], log["test"], [f"{name}@5"], conventions="recommenders")
        assert ours.iloc[:, 0].mean() == pytest.approx(expected, abs=1e-12)
    n_test_users = true[USER].nunique()
    expected = per_user["ndcg_at_k"].sum() / n_test_users
    if tool.ms_eval is not None:
        real = tool.ms_eval.ndcg_at_k(true, pred, col_user=USER, col_item=ITEM,
                                      col_prediction="prediction", k=5)  # fmt: skip
        assert real == pytest.approx(expected, abs=1e-12)
    assert scored["nDCG(gain=binary)@5"].item() == pytest.approx(expected, abs=1e-12)


def test_recommenders_catalogue_names() -> None:
    """catalog_coverage: distinct recommended items over the training log's distinct items;
    distributional_coverage: the entropy (log2) of the recommended rows' item shares."""
    log = random_log(4)
    recs = log["recs"]  # Recommenders refuses a training pair that is also recommended
    train = log["train"].join(recs.select(USER, ITEM), on=[USER, ITEM], how="anti")
    items = train[ITEM].unique().to_list()
    got = pr.evaluate_catalog(recs, ["catalog_coverage", "distributional_coverage"], query=USER,
                              doc=ITEM, catalog=items, conventions="recommenders")  # fmt: skip
    reco, history = pandas(recs), pandas(train)
    shares = reco.groupby(ITEM).size() / len(reco)
    expected = [reco[ITEM].nunique() / history[ITEM].nunique(), -(shares * np.log2(shares)).sum()]
    if tool.ms_eval is not None:
        real = [tool.ms_eval.catalog_coverage(history, reco, col_user=USER, col_item=ITEM),
                tool.ms_eval.distributional_coverage(history, reco, col_user=USER,
                                                     col_item=ITEM)]  # fmt: skip
        np.testing.assert_allclose(real, expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got.row(0)[-2:], expected, rtol=0, atol=1e-12)


def test_tool_names_are_read_and_refused_by_preset() -> None:
    parsed = parse_measures(["precision_at_k", "map_at_k", "ndcg_at_k@5"],
                            conventions="recommenders")  # fmt: skip
    assert [str(m) for m in parsed] == ["P@10", "AP(norm=min)@10", "nDCG(gain=binary)@5"]
    with pytest.raises(ValueError, match=r"r_precision_at_k.*min\(k, \|R\|\)"):
        parse_measures(["r_precision_at_k@5"], conventions="recommenders")
    parsed = parse_measures(["novelty", "diversity", "serendipity"], conventions="recommenders")
    assert [str(m) for m in parsed] == ["ChoiceNovelty", "CoocDiversity", "CoocSerendipity"]
    parsed = parse_measures(["AveragePrecision", "Precision", "NDCG"], conventions="lenskit")
    assert [str(m) for m in parsed] == [
        "AP(norm=retrieved)", "SetP", "nDCG(discount=clipped,gain=binary)"]  # fmt: skip
    # the names keep their meaning elsewhere: ranx's precision@10 is P@10, not SetP@10
    assert str(parse_measures(["precision@10"], conventions="ranx")[0]) == "P@10"


def test_clipped_discount_with_averaged_ties() -> None:
    """b and c tie at positions 2 and 3: b's gain takes the mean of their clipped
    discounts, 1 / log2(2) and 1 / log2(3); the ideal puts b first (discount 1)."""
    run = pl.DataFrame({"query": ["q"] * 3, "doc": ["a", "b", "c"], "score": [2.0, 1.0, 1.0]})
    qrels = pl.DataFrame({"query": ["q"], "doc": ["b"], "relevance": [1]})
    got = pr.evaluate(run, qrels, ["nDCG(discount=clipped,ties=average)@3",
                                   "nDCG(discount=clipped)@3"])  # fmt: skip
    averaged = (1 / math.log2(2) + 1 / math.log2(3)) / 2
    assert got.row(0)[1:] == pytest.approx((averaged, 1 / math.log2(3)), abs=1e-12)


def _unseen(log: dict) -> tuple[pl.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The recommendations that are not training pairs (Recommenders refuses those), as
    Polars, and as pandas with the test interactions as a 0/1 ``relevance``; the
    training log as pandas."""
    recs = log["recs"].join(log["train"].unique(), on=[USER, ITEM], how="anti")
    flagged = recs.join(log["test"].unique().with_columns(relevance=pl.lit(1.0)),
                        on=[USER, ITEM], how="left")  # fmt: skip
    reco = pandas(flagged.with_columns(pl.col("relevance").fill_null(0.0)))
    return recs, reco, pandas(log["train"])


@pytest.mark.parametrize("repeats", [False, True])
@pytest.mark.parametrize("seed", SEEDS)
def test_recommenders_cooccurrence_measures_per_user(seed: int, repeats: bool) -> None:
    """diversity and serendipity (with and without col_relevance) per user: users with one
    item or one item repeated, items absent from train (a user without training rows:
    test_cooccurrence_known_values)."""
    log = random_log(seed, repeats=repeats)
    recs, reco, train = _unseen(log)
    names = ["diversity", "serendipity", "CoocSerendipity(relevant=qrels)"]
    got = _evaluate(recs.drop("__order", strict=False), log["test"], names,
                    conventions="recommenders", train=log["train"])  # fmt: skip
    same(tool.recommenders_diversity(train, reco), got["CoocDiversity"])
    same(tool.recommenders_serendipity(train, reco), got["CoocSerendipity"])
    same(tool.recommenders_serendipity(train, reco, "relevance"),
         got["CoocSerendipity(relevant=qrels)"])  # fmt: skip
    assert got["CoocDiversity"].isna().any()  # a list without two different items


@pytest.mark.parametrize("seed", SEEDS)
def test_recommenders_novelty_per_system(seed: int) -> None:
    log = random_log(seed)
    recs, reco, train = _unseen(log)
    two = pl.concat([recs.with_columns(system=pl.lit("a")),
                     recs.head(recs.height // 2).with_columns(system=pl.lit("b"))])  # fmt: skip
    got = pr.evaluate_catalog(two, ["novelty"], query=USER, doc=ITEM, train=log["train"],
                              conventions="recommenders").sort("system")  # fmt: skip
    half = reco.head(recs.height // 2)
    expected = [tool.recommenders_novelty(train, reco), tool.recommenders_novelty(train, half)]
    np.testing.assert_allclose(got["ChoiceNovelty"].to_list(), expected, rtol=0, atol=1e-12)


def test_cooccurrence_known_values() -> None:
    """Training rows: users 5 {10, 11}, 6 {10, 11, 12}, 1 {13}, 2 {12}: N = 2, 2, 2, 1 of
    7 rows; sim(10, 11) = 2 / sqrt(2 * 2), sim(10, 12) = sim(11, 12) = 1 / 2, 13 alone."""
    recs = pl.DataFrame({USER: [1, 1, 1, 2, 2, 3, 3], ITEM: [10, 11, 12, 10, 13, 10, 10],
                         "score": [3.0, 2.0, 1.0, 2.0, 1.0, 1.0, 1.0]})  # fmt: skip
    train = pl.DataFrame({USER: [5, 5, 6, 6, 6, 1, 2], ITEM: [10, 11, 10, 11, 12, 13, 12]})
    test = pl.DataFrame({USER: [1, 2], ITEM: [11, 13]})
    names = ["CoocDiversity", "CoocSerendipity", "CoocSerendipity(relevant=qrels)",
             "CoocDiversity@2"]  # fmt: skip
    got = _evaluate(recs, test, names, train=train)
    np.testing.assert_allclose(
        got.loc[1].tolist(), [1 - (1 + 0.5 + 0.5) / 3, 1.0, 1 / 3, 1 - 1.0], atol=1e-12
    )
    np.testing.assert_allclose(
        got.loc[2].tolist(), [1 - 0.0, (0.5 + 1.0) / 2, (0 + 1.0) / 2, 1.0], atol=1e-12
    )
    assert got.loc[3].isna().all()  # one item twice, and no training row
    novelty = pr.evaluate_catalog(recs, ["ChoiceNovelty"], query=USER, doc=ITEM, train=train)
    expected = (6 * -math.log2(2 / 7) + -math.log2(1 / 7)) / 7
    assert novelty.item() == pytest.approx(expected, abs=1e-12)
    with pytest.raises(ValueError, match="train"):
        pr.evaluate(recs, test.with_columns(relevance=pl.lit(1)), ["CoocDiversity"],
                    query=USER, doc=ITEM)  # fmt: skip
