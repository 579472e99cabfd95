"""The recommender libraries' metric definitions the recommendation tests compare with.

RecTools 0.19 pins numpy < 2 on Python < 3.13, and pyarrow 26 (which the library's
test extra and Dask need) refuses numpy < 2 at import: RecTools cannot share this
environment. When ``rectools`` is importable (a venv of its own: ``pip install
rectools==0.19.0 polars scipy pytest``) the tests compare with it; otherwise with the
transcriptions below, each a line-by-line pandas copy of the RecTools 0.19 function
it names (``rectools/metrics/<file>.py``), checked against RecTools itself in such a
venv. RecBole 1.2.1 (``recbole/evaluator/metrics.py``) is called where it is importable
(a venv of its own: ``pip install torch recbole polars scipy pytest``; it reads numpy's
``np.float``, an alias of the builtin ``float`` that numpy 1.24 removed, so the alias is
put back for it), else transcribed line by line. LensKit and Microsoft Recommenders:
tests/recsys_tool_peers.py.
"""

from __future__ import annotations

import importlib.util
from itertools import combinations
from types import SimpleNamespace

import numpy as np
import pandas as pd

try:  # the real peer, where it installs
    from rectools import metrics as rectools_metrics
except ImportError:  # pragma: no cover - depends on the environment
    rectools_metrics = None

recbole_metrics = None
if importlib.util.find_spec("recbole") is not None:  # RecBole, where it installs
    if not hasattr(np, "float"):
        np.float = float  # type: ignore[attr-defined]  # the alias numpy < 1.24 had
    from recbole.evaluator import metrics as recbole_metrics

PEER = "rectools" if rectools_metrics is not None else "transcribed"
RECBOLE = "recbole" if recbole_metrics is not None else "transcribed"
USER, ITEM, R = "user_id", "item_id", "rank"


def miuf(reco: pd.DataFrame, prev: pd.DataFrame, k: int) -> pd.Series:
    """rectools/metrics/novelty.py: MeanInvUserFreq.fit + calc_per_user_from_fitted."""
    if rectools_metrics is not None:
        return rectools_metrics.MeanInvUserFreq(k=k).calc_per_user(reco, prev)
    n_users = prev[USER].nunique()
    per_item = prev.groupby(ITEM)[USER].nunique()
    rec = reco.loc[reco[R] <= k].copy()
    rec["n"] = rec[ITEM].map(per_item).fillna(1)
    rec["nov"] = -np.log2(rec["n"] / n_users)
    return rec.groupby(USER)["nov"].agg("mean").reindex(reco[USER].unique()).rename(None)


def arp(reco: pd.DataFrame, prev: pd.DataFrame, k: int, normalize: bool) -> pd.Series:
    """rectools/metrics/popularity.py: AvgRecPopularity.calc_per_user."""
    if rectools_metrics is not None:
        return rectools_metrics.AvgRecPopularity(k=k, normalize=normalize).calc_per_user(reco, prev)
    pop = prev[ITEM].value_counts(normalize=normalize)
    pop.name = "popularity"
    rec = reco.loc[reco[R] <= k].join(pop, on=ITEM, how="left")
    rec["popularity"] = rec["popularity"].fillna(0)
    return rec.groupby(USER)["popularity"].mean()


def serendipity(
    reco: pd.DataFrame, test: pd.DataFrame, prev: pd.DataFrame, catalog: list, k: int
) -> pd.Series:
    """rectools/metrics/serendipity.py: Serendipity.fit + calc_per_user_from_fitted."""
    if rectools_metrics is not None:
        return rectools_metrics.Serendipity(k=k).calc_per_user(reco, test, prev, catalog)
    rec = reco.loc[reco[R] <= k]
    merged = pd.merge(rec, test[[USER, ITEM]], how="left", indicator=True)
    merged["rel"] = np.where(merged["_merge"] == "both", 1, 0)
    n = len(catalog)
    counts = prev[ITEM].value_counts()
    unique = counts.unique()
    ranks = counts.map(pd.Series(index=unique, data=np.arange(len(unique)) + 1))
    merged["rank_pop"] = merged[ITEM].map(ranks)
    p = (n + 1 - merged[R]) / n
    pu = np.where(merged["rank_pop"].notnull(), (n + 1 - merged["rank_pop"]) / n, 0.0)
    merged["s"] = np.maximum(p - pu, 0.0) * merged["rel"]
    return merged.groupby(USER)["s"].agg("mean").reindex(rec[USER].unique()).rename(None)


def ild_hamming(reco: pd.DataFrame, features: pd.DataFrame, k: int) -> pd.Series:
    """rectools/metrics/diversity.py: IntraListDiversity with
    distances.py PairwiseHammingDistanceCalculator (``features`` indexed by item)."""
    if rectools_metrics is not None:
        calc = rectools_metrics.PairwiseHammingDistanceCalculator(features)
        return rectools_metrics.IntraListDiversity(k=k, distance_calculator=calc).calc_per_user(
            reco
        )
    rec = reco.loc[reco[R] <= k]
    users = rec[USER].unique()
    out = {}
    for user, items in rec.groupby(USER, sort=False)[ITEM]:
        pairs = list(combinations(items, 2))
        if not pairs:
            continue
        a = features.reindex([p[0] for p in pairs]).to_numpy(dtype=float)
        b = features.reindex([p[1] for p in pairs]).to_numpy(dtype=float)
        d = np.sum(a != b, axis=1).astype(float)
        d[np.isnan(a).any(axis=1) | np.isnan(b).any(axis=1)] = np.nan
        out[user] = pd.Series(d).mean()
    s = pd.Series(out, dtype=float).reindex(users)
    s.loc[~s.index.isin(list(out))] = 0
    return s.rename(None)


def sufficient(reco: pd.DataFrame, k: int, deep: bool) -> pd.Series:
    """rectools/metrics/dq.py: SufficientReco.calc_per_user."""
    if rectools_metrics is not None:
        return rectools_metrics.SufficientReco(k=k, deep=deep).calc_per_user(reco)
    n = reco.loc[reco[R] <= k].groupby(USER).size().reindex(reco[USER].unique(), fill_value=0)
    return (n / k).clip(upper=1) if deep else (n >= k).astype("int")


def unrepeated(reco: pd.DataFrame, k: int, deep: bool) -> pd.Series:
    """rectools/metrics/dq.py: UnrepeatedReco.calc_per_user."""
    if rectools_metrics is not None:
        return rectools_metrics.UnrepeatedReco(k=k, deep=deep).calc_per_user(reco)
    rec = reco.loc[reco[R] <= k].copy()
    rec["first"] = ~rec.duplicated(subset=[USER, ITEM])
    if deep:
        stats = rec.groupby(USER).agg(n=("first", "sum"), size=(USER, "size"))
        return stats["n"] / stats["size"]
    return rec.groupby(USER)["first"].all().astype("int").rename(None)


def auc(reco: pd.DataFrame, test: pd.DataFrame, k: int, pap: bool, handling: str) -> pd.Series:
    """rectools/metrics/auc.py: _AUCMetric.fit, PartialAUC / PAP.calc_per_user_from_fitted
    (base.py outer_merge_reco)."""
    if rectools_metrics is not None:
        cls = rectools_metrics.PAP if pap else rectools_metrics.PartialAUC
        return cls(k=k, insufficient_handling=handling).calc_per_user(reco, test)
    inter = test[[USER, ITEM]].drop_duplicates()
    inter["pos"] = True
    rec = reco[reco[USER].isin(inter[USER].unique())][[USER, ITEM, R]]
    merged = pd.merge(inter, rec, on=[USER, ITEM], how="outer")
    max_rank = rec.groupby(USER)[R].max()
    full = max_rank.apply(lambda a: list(range(1, a + 1))).explode().rename(R)
    full = full.reset_index().astype({R: float})
    merged = merged.merge(full, on=[USER, R], how="outer").sort_values([USER, R])
    merged["pos"] = merged["pos"].fillna(False).astype(bool)
    shown = ~merged[R].isna()
    merged["tp"] = shown & merged["pos"]
    merged["fp"] = shown & ~merged["pos"]
    g = merged.groupby(USER, sort=False)
    merged["fp_cum"] = g["fp"].cumsum()
    merged["pos_cum"] = g["pos"].cumsum()
    stats = g.agg(n_pos=("pos", "sum"), n_fp=("fp", "sum"))
    n_pos = stats["n_pos"]
    keep = (merged["fp_cum"] < k) & shown
    if pap:
        keep &= merged["pos_cum"] <= k
        n_pos = n_pos.clip(upper=k)
    cropped = merged[keep]
    if handling == "exclude":
        with_fn = merged.loc[~shown, USER].unique()
        bad = stats.index[(stats["n_fp"] < k) & stats.index.isin(with_fn)]
        cropped = cropped[~cropped[USER].isin(bad)]
        n_pos = n_pos[~n_pos.index.isin(bad)]
    gain = (k - cropped["fp_cum"]) * cropped["tp"]
    num = gain.groupby(cropped[USER]).sum()
    out = num.rename("num").to_frame().join((n_pos * k).rename("den"), how="outer")
    return (out["num"] / out["den"]).fillna(0)


def catalog_coverage(reco: pd.DataFrame, catalog: list, k: int, normalize: bool) -> float:
    """rectools/metrics/catalog.py: CatalogCoverage.calc."""
    if rectools_metrics is not None:
        return rectools_metrics.CatalogCoverage(k=k, normalize=normalize).calc(reco, catalog)
    n = reco.loc[reco[R] <= k, ITEM].nunique()
    return n / len(catalog) if normalize else n


# ------------------------------------------------------------------ RecBole 1.2 (transcribed)


def item_matrix(reco: pd.DataFrame, k: int) -> np.ndarray:
    """RecBole's ``rec.items``: one row per user, its top k items (full lists)."""
    top = reco.loc[reco[R] <= k].sort_values([USER, R])
    return np.array([list(g) for _, g in top.groupby(USER)[ITEM]])


def recbole_topk(name: str, pos_index: np.ndarray, pos_len: np.ndarray) -> np.ndarray:
    """recbole/evaluator/metrics.py: ``<name>.metric_info`` (Hit, MRR, MAP, Recall, NDCG,
    Precision): per user (row) and cutoff (column k - 1), from ``pos_index`` (whether the
    item at each position is a test item) and ``pos_len`` (the user's test items)."""
    if recbole_metrics is not None:  # metric_info reads nothing of its instance
        metric = getattr(recbole_metrics, name)
        args = (pos_index, pos_len) if name in ("MAP", "Recall", "NDCG") else (pos_index,)
        return np.asarray(metric.metric_info(None, *args), dtype=float)
    positions = np.arange(1, pos_index.shape[1] + 1)
    if name == "Hit":
        return (np.cumsum(pos_index, axis=1) > 0).astype(float)
    if name == "MRR":
        result = np.zeros_like(pos_index, dtype=float)
        for row, idx in enumerate(pos_index.argmax(axis=1)):
            result[row, idx:] = 1 / (idx + 1) if pos_index[row, idx] > 0 else 0
        return result
    if name == "MAP":
        pre = pos_index.cumsum(axis=1) / positions
        sum_pre = np.cumsum(pre * pos_index.astype(float), axis=1)
        actual = np.minimum(pos_len, pos_index.shape[1])
        result = np.zeros_like(pos_index, dtype=float)
        for row, lens in enumerate(actual):
            ranges = positions.copy()
            ranges[lens:] = ranges[lens - 1]
            result[row] = sum_pre[row] / ranges
        return result
    if name == "Recall":
        return np.cumsum(pos_index, axis=1) / pos_len.reshape(-1, 1)
    if name == "NDCG":
        idcg = np.tile(np.cumsum(1.0 / np.log2(positions + 1.0)), (len(pos_len), 1))
        for row, idx in enumerate(np.minimum(pos_len, pos_index.shape[1])):
            idcg[row, idx:] = idcg[row, idx - 1]
        dcg = np.cumsum(np.where(pos_index, 1.0 / np.log2(positions + 1.0), 0), axis=1)
        return dcg / idcg
    if name == "Precision":
        return pos_index.cumsum(axis=1) / positions
    raise ValueError(name)


def recbole_popularity(matrix: np.ndarray, count_items: dict) -> np.ndarray:
    """recbole/evaluator/metrics.py: AveragePopularity.get_pop then metric_info: per user,
    the mean training count of the items down to each position (0 for an unseen item)."""
    if recbole_metrics is not None:
        metric = recbole_metrics.AveragePopularity
        return np.asarray(metric.metric_info(None, metric.get_pop(None, matrix, count_items)))
    value = np.vectorize(lambda item: count_items.get(item, 0))(matrix).astype(matrix.dtype)
    return value.cumsum(axis=1) / np.arange(1, value.shape[1] + 1)


def recbole_gini(matrix: np.ndarray, num_items: int) -> float:
    """recbole/evaluator/metrics.py: GiniIndex.get_gini."""
    if recbole_metrics is not None:
        return float(recbole_metrics.GiniIndex.get_gini(None, matrix, num_items))
    from collections import Counter

    count = dict(Counter(matrix.flatten()))
    sorted_count = np.array(sorted(count.values()))
    n = sorted_count.shape[0]
    total = matrix.shape[0] * matrix.shape[1]
    idx = np.arange(num_items - n + 1, num_items + 1)
    return float(np.sum((2 * idx - num_items - 1) * sorted_count) / total / num_items)


def recbole_entropy(matrix: np.ndarray) -> float:
    """recbole/evaluator/metrics.py: ShannonEntropy.get_entropy."""
    if recbole_metrics is not None:
        return float(recbole_metrics.ShannonEntropy.get_entropy(None, matrix))
    from collections import Counter

    count = dict(Counter(matrix.flatten()))
    total = matrix.shape[0] * matrix.shape[1]
    result = 0.0
    for cnt in count.values():
        p = cnt / total
        result += -p * np.log(p)
    return result / len(count)


def recbole_tail(matrix: np.ndarray, count_items: dict, tail: float) -> np.ndarray:
    """recbole/evaluator/metrics.py: TailPercentage.get_tail then metric_info: per user,
    the share of tail items down to each position."""
    if recbole_metrics is not None:
        metric = recbole_metrics.TailPercentage
        values = metric.get_tail(SimpleNamespace(tail=tail), matrix, count_items)
        return np.asarray(metric.metric_info(None, values), dtype=float)
    if tail > 1:
        tail_items = [item for item, cnt in count_items.items() if cnt <= tail]
    else:
        ordered = sorted(count_items.items(), key=lambda kv: (kv[1], kv[0]))
        cut = max(int(len(ordered) * tail), 1)
        tail_items = [item for item, _ in ordered[:cut]]
    value = np.isin(matrix, tail_items).astype(float)
    return value.cumsum(axis=1) / np.arange(1, value.shape[1] + 1)


def recbole_item_coverage(matrix: np.ndarray, num_items: int) -> float:
    """recbole/evaluator/metrics.py: ItemCoverage.get_coverage."""
    if recbole_metrics is not None:
        return float(recbole_metrics.ItemCoverage.get_coverage(None, matrix, num_items))
    return len(np.unique(matrix)) / num_items


# ------------------------------------------------- recmetrics 0.1.5 personalization (transcribed)


def personalization(lists: list[list]) -> float:
    """recmetrics/metrics.py: personalization: 1 - the mean off-diagonal cosine
    similarity of the users' binary item vectors (scikit-learn's cosine_similarity)."""
    from sklearn.metrics.pairwise import cosine_similarity

    items = sorted({i for row in lists for i in row})
    where = {item: j for j, item in enumerate(items)}
    matrix = np.zeros((len(lists), len(items)))
    for u, row in enumerate(lists):
        for item in row:
            matrix[u, where[item]] = 1
    sim = cosine_similarity(matrix)
    dim = sim.shape[0]
    return float(1 - (sim.sum() - dim) / (dim * (dim - 1)))


# ------------------------------------------------------------ RecTools 0.19 accuracy measures


def merged(reco: pd.DataFrame, test: pd.DataFrame) -> pd.DataFrame:
    """rectools/metrics/base.py: merge_reco (each test interaction with its rank, if any)."""
    return pd.merge(test[[USER, ITEM]], reco[[USER, ITEM, R]], on=[USER, ITEM], how="left")


def accuracy(reco: pd.DataFrame, test: pd.DataFrame, name: str, k: int, **kw) -> pd.Series:
    """RecTools' MAP, NDCG, MRR, HitRate, Recall, Precision ``calc_per_user`` (ranking.py,
    classification.py): transcribed from their confusion counts and merged ranks."""
    if rectools_metrics is not None:
        cls = getattr(rectools_metrics, name)
        return cls(k=k, **kw).calc_per_user(reco, test)
    m = merged(reco, test)
    users = m[USER].unique()
    within = m[R] <= k
    tp = within.groupby(m[USER]).sum().reindex(users)
    liked = m.groupby(USER).size().reindex(users)
    if name == "Precision":
        return tp / k
    if name == "Recall":
        return tp / liked
    if name == "HitRate":
        return (tp > 0).astype(float)
    if name == "MRR":
        first = m[R].where(within).groupby(m[USER]).min().reindex(users)
        return (1 / first).fillna(0)
    if name == "NDCG":
        gains = within.astype(int) / np.log2(m[R] + 1)
        dcg = gains.fillna(0).groupby(m[USER]).sum().reindex(users)
        discounts = 1 / np.log2(np.arange(1, k + 1) + 1)
        if kw.get("divide_by_achievable"):
            ideal = np.concatenate([[0], discounts.cumsum()])[liked.clip(upper=k)]
            return dcg / ideal
        return dcg / discounts.sum()
    if name == "MAP":  # sum over relevant ranks i <= k of P@i, over |R| (or k)
        hits = m[within].sort_values([USER, R])
        hits["n"] = hits.groupby(USER).cumcount() + 1
        total = (hits["n"] / hits[R]).groupby(hits[USER]).sum().reindex(users).fillna(0)
        return total / k if kw.get("divide_by_k") else total / liked
    raise ValueError(name)
