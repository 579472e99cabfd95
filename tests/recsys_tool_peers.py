"""LensKit's and Microsoft Recommenders' accuracy measures, per user, for the presets.

Where the tool is importable (each installs in a venv of its own: ``pip install
lenskit`` pulls torch; ``pip install recommenders`` pulls its own pins; add ``polars
scipy pytest`` and run the tests there with the repository on ``PYTHONPATH``) the
functions call it; otherwise they run the transcriptions below, each a line-by-line
numpy copy of the function it names, checked against the tool itself in such a venv:

* LensKit 2025.8.1, ``lenskit/metrics/ranking/_pr.py`` (``Precision``, ``Recall``),
  ``_hit.py`` (``Hit``), ``_recip.py`` (``RecipRank``), ``_dcg.py`` (``NDCG`` without
  a gain field, ``fixed_dcg``), ``_map.py`` (``AveragePrecision``), ``_weighting.py``
  (``LogRankWeight(base=2, offset=0).weight``), each ``measure_list(recs, test)`` after
  ``RankingMetricBase.truncate`` (the first k items of the ordered list);
* Microsoft Recommenders 1.2.1, ``recommenders/evaluation/python_evaluation.py``:
  ``merge_ranking_true_pred`` and ``get_top_k_items`` (the top k by prediction, a pandas
  sort by user ascending and prediction descending that keeps equal predictions in
  input order), ``precision_at_k``, ``recall_at_k``, ``ndcg_at_k`` (``score_type=
  "binary"``, ``discfun_type="loge"``), ``map_at_k`` and ``map``, called on one user's
  rows (the mean over one user is the user's value); and its measures of item
  co-occurrence: ``_get_pairwise_items``, ``_get_cooccurrence_similarity``,
  ``user_diversity``, ``user_serendipity`` (via ``user_item_serendipity``) and
  ``novelty`` (via ``historical_item_novelty``), with the default
  ``item_sim_measure="item_cooccurrence_count"``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

try:  # the real peers, where they install
    from lenskit.data import ItemList
    from lenskit.metrics import ranking as lenskit_ranking
except ImportError:  # pragma: no cover - depends on the environment
    lenskit_ranking = None
try:
    from recommenders.evaluation import python_evaluation as ms_eval
except ImportError:  # pragma: no cover - depends on the environment
    ms_eval = None

LENSKIT = "lenskit" if lenskit_ranking is not None else "transcribed"
RECOMMENDERS = "recommenders" if ms_eval is not None else "transcribed"
LENSKIT_NAMES = ("Precision", "Recall", "Hit", "RecipRank", "NDCG", "AveragePrecision")
RECOMMENDERS_NAMES = ("precision_at_k", "recall_at_k", "ndcg_at_k", "map_at_k", "map")


def _log_rank_weight(ranks: np.ndarray) -> np.ndarray:
    """_weighting.py LogRankWeight.weight, base 2, offset 0: log(2) / log(max(rank, 2))."""
    return np.log(2) / np.log(np.maximum(ranks, 2))


def lenskit_value(name: str, recs: list, test: list, k: int) -> float:
    """LensKit's ``<name>(k).measure_list`` of one ordered list against its test items."""
    if lenskit_ranking is not None:
        metric = getattr(lenskit_ranking, name)(k)
        return float(metric.measure_list(ItemList(item_ids=recs, ordered=True),
                                         ItemList(item_ids=test)))  # fmt: skip
    top = np.asarray(recs[:k])  # RankingMetricBase.truncate
    good = np.isin(top, np.asarray(test))
    ranks = np.arange(1, len(top) + 1)
    if name == "Precision":
        return math.nan if len(top) == 0 else good.sum() / len(top)
    if name == "Recall":
        nrel = min(len(test), k)
        return good.sum() / nrel if nrel else math.nan
    if len(test) == 0:  # Hit, RecipRank, NDCG: NaN; AveragePrecision divides by zero
        return math.nan
    if name == "Hit":
        return 1.0 if good.any() else 0.0
    if name == "RecipRank":
        (npz,) = np.nonzero(good)
        return 1.0 / (npz[0] + 1.0) if len(npz) else 0.0
    if name == "NDCG":
        realized = _log_rank_weight(ranks[good]).sum()
        ideal = _log_rank_weight(np.arange(1, min(len(test), k) + 1)).sum()  # fixed_dcg
        return realized / ideal
    if name == "AveragePrecision":
        sum_good = np.cumsum(good)
        return (sum_good[good] / ranks[good]).sum() / min(len(test), len(top))
    raise ValueError(name)


def lenskit(reco: pd.DataFrame, test: pd.DataFrame, name: str, k: int) -> pd.Series:
    """Per user of ``reco`` (user, item, rank) with test items: LensKit's value."""
    truth = test.groupby("user_id")["item_id"].agg(list)
    out = {}
    for user, rows in reco.sort_values(["user_id", "rank"]).groupby("user_id"):
        if user in truth.index:  # LensKit's AveragePrecision fails on an empty test list
            out[user] = lenskit_value(name, rows["item_id"].tolist(), truth[user], k)
    return pd.Series(out, dtype=float)


def _top_k(pred: pd.DataFrame, k: int) -> pd.DataFrame:
    """get_top_k_items: sort by user ascending, prediction descending; head(k); rank."""
    top = (
        pred.sort_values(["user_id", "prediction"], ascending=[True, False], kind="stable")
        .groupby("user_id", as_index=False)
        .head(k)
        .reset_index(drop=True)
    )
    top["rank"] = top.groupby("user_id", sort=False).cumcount() + 1
    return top


def recommenders_value(name: str, true: pd.DataFrame, pred: pd.DataFrame, k: int) -> float:
    """Microsoft Recommenders' ``<name>(true, pred, k=k)`` over one user's rows."""
    if ms_eval is not None:
        return float(getattr(ms_eval, name)(true, pred, col_user="user_id", col_item="item_id",
                                            col_rating="rating", col_prediction="prediction",
                                            k=k))  # fmt: skip
    if not set(true["user_id"]) & set(pred["user_id"]):
        return 0.0  # merge_ranking_true_pred: no common user, df_hit empty
    top = _top_k(pred, k)
    hit_ranks = top.loc[top["item_id"].isin(true["item_id"]), "rank"].to_numpy()
    actual = len(true)
    if len(hit_ranks) == 0:
        return 0.0  # each function returns 0.0 on an empty df_hit
    if name == "precision_at_k":
        return len(hit_ranks) / k
    if name == "recall_at_k":
        return len(hit_ranks) / actual
    if name == "ndcg_at_k":  # binary gains, natural log, ideal from the true items' top k
        dcg = (1.0 / np.log(1.0 + hit_ranks)).sum()
        idcg = (1.0 / np.log(1.0 + np.arange(1, min(actual, k) + 1))).sum()
        return dcg / idcg
    rr = (np.arange(1, len(hit_ranks) + 1) / hit_ranks).sum()  # _get_reciprocal_rank
    if name == "map_at_k":
        return rr / min(actual, k)
    if name == "map":
        return rr / actual
    raise ValueError(name)


def recommenders(pred: pd.DataFrame, test: pd.DataFrame, name: str, k: int) -> pd.Series:
    """Per user of ``pred`` (user, item, prediction) with test items: the function's value
    on that user's rows."""
    true = test.assign(rating=1.0)
    out = {}
    for user, rows in pred.groupby("user_id", sort=True):
        mine = true.loc[true["user_id"] == user]
        if len(mine):
            out[user] = recommenders_value(name, mine, rows.reset_index(drop=True), k)
    return pd.Series(out, dtype=float)


def _pairwise_items(df: pd.DataFrame) -> pd.DataFrame:
    """_get_pairwise_items: every pair of a user's rows with i1 <= i2."""
    left = df[["user_id", "item_id"]].rename(columns={"item_id": "i1"})
    right = df[["user_id", "item_id"]].rename(columns={"item_id": "i2"})
    both = pd.merge(left, right, how="inner", on=["user_id"])
    return both[both["i1"] <= both["i2"]][["user_id", "i1", "i2"]].reset_index(drop=True)


def _cooccurrence_similarity(train: pd.DataFrame) -> pd.DataFrame:
    """_get_cooccurrence_similarity: count of (i1, i2) pairs / sqrt of the items' rows."""
    pairs = _pairwise_items(train)
    pairs_count = pd.DataFrame({"count": pairs.groupby(["i1", "i2"]).size()}).reset_index()
    item_count = pd.DataFrame({"count": train.groupby(["item_id"]).size()}).reset_index()
    item_count["sqrt"] = item_count["count"] ** 0.5
    sqrt = item_count[["item_id", "sqrt"]]
    co = pairs_count.merge(sqrt.rename(columns={"item_id": "i1", "sqrt": "s1"}), on="i1")
    co = co.merge(sqrt.rename(columns={"item_id": "i2", "sqrt": "s2"}), on="i2")
    co["sim"] = co["count"] / (co["s1"] * co["s2"])
    return co[["i1", "i2", "sim"]]


def recommenders_diversity(train: pd.DataFrame, reco: pd.DataFrame) -> pd.Series:
    """``user_diversity(train, reco)`` per user: 1 - the mean similarity of the pairs of
    two different items of the user's rows (a pair never held together: 0)."""
    if ms_eval is not None:
        got = ms_eval.user_diversity(train, reco[["user_id", "item_id"]],
                                     col_user="user_id", col_item="item_id")  # fmt: skip
        return got.set_index("user_id")["user_diversity"].astype(float)
    pairs = _pairwise_items(reco).merge(_cooccurrence_similarity(train), on=["i1", "i2"],
                                        how="left")  # fmt: skip
    pairs["sim"] = pairs["sim"].fillna(0)
    pairs = pairs.loc[pairs["i1"] != pairs["i2"]]
    return (1 - pairs.groupby("user_id")["sim"].mean()).astype(float)


def recommenders_serendipity(
    train: pd.DataFrame, reco: pd.DataFrame, relevance: str | None = None
) -> pd.Series:
    """``user_serendipity(train, reco, col_relevance=relevance)`` per user: the mean over
    the user's rows of (1 - the mean similarity to the user's training rows) x the
    row's relevance (1 without ``relevance``); users without training rows left out."""
    if ms_eval is not None:
        columns = ["user_id", "item_id", *([relevance] if relevance else [])]
        got = ms_eval.user_serendipity(train, reco[columns], col_user="user_id",
                                       col_item="item_id", col_relevance=relevance)  # fmt: skip
        return got.set_index("user_id")["user_serendipity"].astype(float)
    rel = reco[relevance].astype(np.float16) if relevance else pd.Series(1.0, index=reco.index)
    reco = reco[["user_id", "item_id"]].assign(rel=rel.to_numpy())
    both = reco.merge(train[["user_id", "item_id"]].rename(columns={"item_id": "j"}),
                      on="user_id")  # fmt: skip
    both["i1"] = both[["item_id", "j"]].min(axis=1)
    both["i2"] = both[["item_id", "j"]].max(axis=1)
    both = both.merge(_cooccurrence_similarity(train), on=["i1", "i2"], how="left")
    both["sim"] = both["sim"].fillna(0)
    mean = both.groupby(["user_id", "item_id"])["sim"].mean().rename("avg").reset_index()
    rows = mean.merge(reco, on=["user_id", "item_id"])
    rows["value"] = (1 - rows["avg"]) * rows["rel"]
    return rows.groupby("user_id")["value"].mean().astype(float)


def recommenders_novelty(train: pd.DataFrame, reco: pd.DataFrame) -> float:
    """``novelty(train, reco)``: the mean over the recommended rows of -log2 of the item's
    share of the training rows (an item absent from them adds 0)."""
    if ms_eval is not None:
        return float(ms_eval.novelty(train, reco[["user_id", "item_id"]],
                                     col_user="user_id", col_item="item_id"))  # fmt: skip
    counts = train.groupby("item_id").size()
    info = -np.log2(counts / len(train))
    shown = reco.groupby("item_id").size()
    common = shown.index.intersection(info.index)
    return float((shown[common] * info[common]).sum() / len(reco))
