"""Recommendation measures against RecTools, RecBole and recmetrics, per user / system.

Random logs with equal scores, users without test interactions, items absent from
the training log and (where the measure allows) repeated items; every value compared
at 1e-9 (see tests/recsys_peers.py for the peers and why RecTools is transcribed
where it cannot be installed).
"""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pandas as pd
import polars as pl
import pytest
import recsys_peers as peer

import polars_rankeval as pr
from polars_rankeval.measures import parse_measures

USER, ITEM, R = peer.USER, peer.ITEM, peer.R
SEEDS = range(6)
CUTOFFS = (1, 3, 5)


def random_log(seed: int, *, repeats: bool = False) -> dict:
    """Recs (user, item, score with ties), train, test, catalogue, item features."""
    rng = np.random.default_rng(seed)
    n_users, n_items = 30, 25
    rows = []
    for u in range(n_users):
        n = int(rng.integers(0, 9))
        items = rng.choice(n_items + 5, size=n, replace=repeats)  # ids >= 25: not in train
        scores = rng.integers(0, 4, size=n).astype(float)  # many ties
        rows += [(u, int(i), float(s)) for i, s in zip(items, scores, strict=True)]
    schema = {USER: pl.Int64, ITEM: pl.Int64, "score": pl.Float64}
    recs = pl.DataFrame(rows, schema=schema, orient="row")
    if repeats:  # a repeated item keeps one score per row; rank by position
        recs = recs.with_row_index("__order")
    train_users = rng.integers(0, n_users + 10, size=300)  # some users only in train
    train_items = rng.integers(0, n_items, size=300) ** 1  # popular and rare items
    train = pl.DataFrame({USER: train_users, ITEM: (train_items * train_items) % n_items})
    test_rows = [
        (u, int(i))
        for u in range(0, n_users, 1)
        if u % 4  # a quarter of the users have no test interaction
        for i in rng.choice(n_items + 5, size=int(rng.integers(1, 6)), replace=False)
    ]
    test = pl.DataFrame(test_rows, schema={USER: pl.Int64, ITEM: pl.Int64}, orient="row")
    features = pl.DataFrame(
        {
            ITEM: list(range(n_items + 3)),  # items 28, 29 have no features
            "genre": rng.integers(0, 3, size=n_items + 3),
            "year": rng.integers(0, 2, size=n_items + 3).astype(float),
        }
    ).with_columns(
        pl.when(pl.col(ITEM) == 7).then(None).otherwise(pl.col("year")).alias("year")
    )  # item 7: a missing value
    return {"recs": recs, "train": train, "test": test, "features": features,
            "catalog": list(range(n_items + 5))}  # fmt: skip


def ranked(recs: pl.DataFrame) -> pd.DataFrame:
    """RecTools' reco: the rank of each row under the library's order (score descending,
    equal scores by item id descending compared as strings)."""
    if "__order" in recs.columns:
        out = recs.with_columns(pl.col("__order").rank("ordinal").over(USER).alias(R))
    else:
        out = recs.sort(
            [USER, "score", pl.col(ITEM).cast(pl.String)], descending=[False, True, True]
        ).with_columns(pl.int_range(1, pl.len() + 1).over(USER).alias(R))
    return pandas(out.select(USER, ITEM, R))


def pandas(frame: pl.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({c: frame[c].to_numpy() for c in frame.columns})


def ours(log: dict, measures: list[str], **kw) -> pd.DataFrame:
    qrels = log["test"].with_columns(relevance=pl.lit(1))
    recs = log["recs"]
    order = "score"
    if "__order" in recs.columns:
        recs = recs.with_columns(pl.col("__order").rank("ordinal").over(USER).alias(R))
        order = "rank"
        kw.setdefault("duplicates", "keep_best")
    out = pr.evaluate(
        recs,
        qrels,
        measures,
        query=USER,
        doc=ITEM,
        order=order,
        train=log["train"],
        catalog=log["catalog"],
        item_features=log["features"],
        **kw,
    )
    return pandas(out).set_index(USER)


def same(values: pd.Series, column: pd.Series) -> None:
    """Per user: the same users scored (non-null) and the same values at 1e-9."""
    expected = values.dropna().astype(float).sort_index()
    got = column.dropna().astype(float).sort_index()
    assert list(got.index) == list(expected.index), (got, expected)
    np.testing.assert_allclose(got.to_numpy(), expected.to_numpy(), rtol=0, atol=1e-9)


@pytest.mark.parametrize("seed", SEEDS)
def test_lists_equal_rectools_per_user(seed: int) -> None:
    log = random_log(seed)
    reco, prev, test = ranked(log["recs"]), pandas(log["train"]), pandas(log["test"])
    feats = pandas(log["features"]).set_index(ITEM)
    names = [f"{m}@{k}" for k in CUTOFFS for m in (
        "MeanInvUserFreq", "AvgRecPopularity", "AvgRecPopularity(normalize=true)",
        "Serendipity", "IntraListDiversity", "SufficientReco", "SufficientReco(deep=true)",
        "UnrepeatedReco", "UnrepeatedReco(deep=true)")]  # fmt: skip
    with pytest.warns(pr.UnscoredQueriesWarning):
        got = ours(log, [*names, "nDCG@3"])
    compared = 0
    for k in CUTOFFS:
        same(peer.miuf(reco, prev, k), got[f"Novelty@{k}"])
        same(peer.arp(reco, prev, k, False), got[f"ARP@{k}"])
        same(peer.arp(reco, prev, k, True), got[f"ARP(normalize=True)@{k}"])
        same(peer.serendipity(reco, test, prev, log["catalog"], k), got[f"Serendipity@{k}"])
        with warnings.catch_warnings():  # RecTools warns of the items without features
            warnings.simplefilter("ignore", UserWarning)
            same(peer.ild_hamming(reco, feats, k), got[f"ILD@{k}"])
        same(peer.sufficient(reco, k, False), got[f"SufficientReco@{k}"])
        same(peer.sufficient(reco, k, True), got[f"SufficientReco(deep=True)@{k}"])
        same(peer.unrepeated(reco, k, False), got[f"UnrepeatedReco@{k}"])
        same(peer.unrepeated(reco, k, True), got[f"UnrepeatedReco(deep=True)@{k}"])
        compared += 9
    assert compared == 27
    # every list of the run is scored by the measures of lists, users without tests too
    assert set(got.index) == set(reco[USER])
    assert got.loc[~got.index.isin(test[USER]), "nDCG@3"].isna().all()


@pytest.mark.parametrize("seed", SEEDS)
def test_repeated_items_equal_rectools(seed: int) -> None:
    log = random_log(seed, repeats=True)
    reco, prev = ranked(log["recs"]), pandas(log["train"])
    assert reco.duplicated([USER, ITEM]).any() or seed > 2  # the logs do repeat items
    names = [f"{m}@{k}" for k in CUTOFFS for m in (
        "MeanInvUserFreq", "AvgRecPopularity", "UnrepeatedReco", "UnrepeatedReco(deep=true)",
        "SufficientReco")]  # fmt: skip
    got = ours(log, names, missing="zero")
    for k in CUTOFFS:
        same(peer.miuf(reco, prev, k), got[f"Novelty@{k}"])
        same(peer.arp(reco, prev, k, False), got[f"ARP@{k}"])
        same(peer.unrepeated(reco, k, False), got[f"UnrepeatedReco@{k}"])
        same(peer.unrepeated(reco, k, True), got[f"UnrepeatedReco(deep=True)@{k}"])
        same(peer.sufficient(reco, k, False), got[f"SufficientReco@{k}"])


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("handling", ["ignore", "exclude"])
def test_auc_equal_rectools(seed: int, handling: str) -> None:
    log = random_log(seed)
    reco, test = ranked(log["recs"]), pandas(log["test"])
    names = [f"{m}(insufficient_handling={handling})@{k}" for k in CUTOFFS
             for m in ("PAP", "PartialAUC")]  # fmt: skip
    qrels = log["test"].with_columns(relevance=pl.lit(1))
    with pytest.warns(pr.UnscoredQueriesWarning):
        got = pr.evaluate(log["recs"], qrels, names, query=USER, doc=ITEM, missing="zero")
    got = pandas(got).set_index(USER)
    for k in CUTOFFS:
        for pap, name in ((True, "PAP"), (False, "PartialAUC")):
            column = got[str(pr.parse(f"{name}(insufficient_handling={handling})@{k}"))]
            same(peer.auc(reco, test, k, pap, handling), column)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", ["PAP", "PartialAUC"])
def test_auc_raise_names_the_users_rectools_refuses(seed: int, name: str) -> None:
    """insufficient_handling=raise refuses exactly the users RecTools' exclude leaves out
    (rectools/metrics/auc.py _handle_insufficient_cases raises on them); without such a
    user the values are those of ignore."""
    log = random_log(seed)
    reco, test = ranked(log["recs"]), pandas(log["test"])
    qrels = log["test"].with_columns(relevance=pl.lit(1))
    kw = dict(query=USER, doc=ITEM, missing="zero")
    for k in CUTOFFS:
        kept = peer.auc(reco, test, k, name == "PAP", "exclude").index
        refused = sorted(set(peer.auc(reco, test, k, name == "PAP", "ignore").index) - set(kept))
        measure = f"{name}(insufficient_handling=raise)@{k}"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
            if refused:
                count = f"{len(refused)} user{' has' if len(refused) == 1 else 's have'} fewer"
                first = f"{{'{USER}': {refused[0]}}}"
                with pytest.raises(ValueError, match=f"{re.escape(measure)} needs at least {k} "
                                   f"non-relevant.*{count}: {re.escape(first)}"):  # fmt: skip
                    pr.evaluate(log["recs"], qrels, [measure], **kw)
            else:
                got = pr.evaluate(log["recs"], qrels, [measure, f"{name}@{k}"], **kw)
                assert got[measure].to_list() == got[f"{name}@{k}"].to_list()


@pytest.mark.parametrize("seed", SEEDS)
def test_catalogue_equal_rectools_recbole_recmetrics(seed: int) -> None:
    log = random_log(seed)
    reco = ranked(log["recs"])
    # RecBole's item matrix holds full lists: the users with at least k items
    k = 3
    full = reco[reco.groupby(USER)[R].transform("max") >= k]
    recs = pl.DataFrame({c: full[c].to_numpy() for c in full})
    got = pr.evaluate_catalog(
        recs,
        ["CatalogCoverage@3", "CatalogCoverage(normalize=true)@3", "ItemCoverage@3",
         "Gini@3", "ShannonEntropy@3", "Entropy@3", "Personalization@3"],
        catalog=log["catalog"], query=USER, doc=ITEM, order="rank",
    ).row(0, named=True)  # fmt: skip
    matrix = peer.item_matrix(full, k)
    n_items = len(log["catalog"])
    expected = {
        "CatalogCoverage@3": peer.catalog_coverage(full, log["catalog"], k, False),
        "CatalogCoverage(normalize=True)@3": peer.catalog_coverage(full, log["catalog"], k, True),
        "Gini@3": peer.recbole_gini(matrix, n_items),
        "Entropy(log=e,per_item=True)@3": peer.recbole_entropy(matrix),
        "Personalization@3": peer.personalization([list(set(r)) for r in matrix]),
    }
    assert peer.recbole_item_coverage(matrix, n_items) == pytest.approx(
        got["CatalogCoverage(normalize=True)@3"], abs=1e-12
    )
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, abs=1e-9), name
    counts = np.unique(matrix, return_counts=True)[1] / matrix.size
    assert got["Entropy@3"] == pytest.approx(-(counts * np.log2(counts)).sum(), abs=1e-9)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("tail", [0.1, 0.3, 2.0])
def test_tail_share_equals_recbole(seed: int, tail: float) -> None:
    log = random_log(seed)
    reco = ranked(log["recs"])
    k = 3
    full = reco[reco.groupby(USER)[R].transform("max") >= k]
    recs = pl.DataFrame({c: full[c].to_numpy() for c in full})
    counts = log["train"].group_by(ITEM).len()
    count_items = dict(zip(counts[ITEM].to_list(), counts["len"].to_list(), strict=True))
    expected = peer.recbole_tail(peer.item_matrix(full, k), count_items, tail)[:, k - 1]
    qrels = pl.DataFrame({USER: [0], ITEM: [0], "relevance": [1]})
    got = pr.evaluate(recs, qrels, [f"TailPercentage(tail_ratio={tail})@{k}"], query=USER, doc=ITEM,
                      order="rank", train=log["train"])  # fmt: skip
    values = got.sort(USER)[got.columns[-1]].to_numpy()
    np.testing.assert_allclose(values, expected, rtol=0, atol=1e-12)


# --------------------------------------------------------------- documented examples


def test_rectools_docstring_examples() -> None:
    """The examples of RecTools 0.19's docstrings (novelty.py MeanInvUserFreq,
    popularity.py AvgRecPopularity, serendipity.py Serendipity, auc.py PartialAUC and
    PAP), written as arithmetic."""
    recs = pl.DataFrame({"query": [1, 2, 2, 3, 3], "doc": [3, 2, 3, 1, 2], "rank": [1, 1, 2, 1, 2]})
    train = pl.DataFrame({"query": [1, 1, 2, 3], "doc": [1, 2, 1, 1]})
    qrels = pl.DataFrame({"query": [9], "doc": [9], "relevance": [1]})
    got = pr.evaluate(recs, qrels, ["Novelty@1", "Novelty@3"], order="rank", train=train,
                      missing="drop", per_query=True)  # fmt: skip
    assert got["Novelty@1"].to_list() == pytest.approx([math.log2(3)] * 2 + [0.0])
    assert got["Novelty@3"].to_list() == pytest.approx([math.log2(3)] * 2 + [math.log2(3) / 2])

    recs = pl.DataFrame(
        {
            "query": [1, 1, 2, 2, 2, 3, 3],
            "doc": [1, 2, 3, 1, 2, 3, 2],
            "rank": [1, 2, 1, 2, 3, 1, 2],
        }
    )
    train = pl.DataFrame({"query": [1, 1, 2, 2, 3, 3], "doc": [1, 2, 1, 3, 1, 2]})
    got = pr.evaluate(recs, qrels, ["ARP@1", "ARP@3", "ARP(normalize=true)@3"], order="rank",
                      train=train)  # fmt: skip
    assert got["ARP@1"].to_list() == [3.0, 1.0, 1.0]
    assert got["ARP@3"].to_list() == [(3 + 2) / 2, (1 + 3 + 2) / 3, (1 + 2) / 2]
    assert got["ARP(normalize=True)@3"].to_list() == pytest.approx([2.5 / 6, 2 / 6, 1.5 / 6])

    test = pl.DataFrame({"query": [1, 1, 2, 2, 3, 3], "doc": [1, 2, 1, 3, 1, 2], "relevance": 1})
    names = ["PartialAUC@1", "PartialAUC@3", "PAP@3", "PartialAUC(insufficient_handling=exclude)@3"]
    got = pr.evaluate(recs, test, names, order="rank")
    assert got["PartialAUC@1"].to_list() == [1.0, 1.0, 0.0]
    assert got["PartialAUC@3"].to_list() == pytest.approx([1.0, 1.0, (3 - 1) / (2 * 3)])
    assert got["PAP@3"].to_list() == pytest.approx([1.0, 1.0, 1 / 3])
    assert got["PartialAUC(insufficient_handling=exclude)@3"].to_list() == [1.0, 1.0, None]

    recs = pl.DataFrame({"query": ["u1", "u1", "u2", "u2", "u3", "u4", "u4"],
                         "doc": ["i1", "i2", "i2", "i3", "i3", "i2", "i3"],
                         "rank": [1, 2, 1, 2, 1, 1, 2]})  # fmt: skip
    test = pl.DataFrame({"query": ["u1", "u1", "u2", "u2", "u3", "u4"],
                         "doc": ["i1", "i2", "i2", "i3", "i2", "i2"], "relevance": 1})  # fmt: skip
    train = pl.DataFrame({"query": ["u1", "u1", "u2", "u2", "u3"],
                          "doc": ["i1", "i2", "i1", "i2", "i1"]})  # fmt: skip
    got = pr.evaluate(recs, test, ["Serendipity@1", "Serendipity@2"], order="rank",
                      train=train, catalog=("i1", "i2", "i3", "i4"))  # fmt: skip
    # i1 is the most popular (3), i2 second (2), i3 unseen; 4 items
    assert got["Serendipity@1"].to_list() == [0.0, (4 / 4 - 3 / 4), 0.0, 0.25]
    assert got["Serendipity@2"].to_list() == [0.0, (0.25 + 0.25) / 1, 0.0, 0.25 / 2]


def test_cosine_diversity_by_hand() -> None:
    """ILD(distance=cosine): 1 - the mean cosine of the pairs, here worked by hand."""
    recs = pl.DataFrame({"query": ["u"] * 3, "doc": ["a", "b", "c"], "rank": [1, 2, 3]})
    feats = pl.DataFrame({"doc": ["a", "b", "c"], "x": [1.0, 0.0, 1.0], "y": [0.0, 1.0, 1.0]})
    qrels = pl.DataFrame({"query": ["u"], "doc": ["a"], "relevance": [1]})
    got = pr.evaluate(recs, qrels, ["ILD(distance=cosine)@3", "ILD@3"], order="rank",
                      item_features=feats).row(0)  # fmt: skip
    cos = [0.0, 1 / math.sqrt(2), 1 / math.sqrt(2)]  # (a,b), (a,c), (b,c)
    assert got[1] == pytest.approx(1 - sum(cos) / 3, abs=1e-12)
    assert got[2] == pytest.approx((2 + 1 + 1) / 3, abs=1e-12)  # Hamming: pairs differ in 2,1,1


def test_long_features_are_sparse() -> None:
    """Long item_features (item, feature, value): a feature an item lacks differs."""
    recs = pl.DataFrame({"query": ["u"] * 2, "doc": ["a", "b"], "rank": [1, 2]})
    long = pl.DataFrame({"doc": ["a", "a", "b"], "feature": ["drama", "comedy", "drama"],
                         "value": [1, 1, 1]})  # fmt: skip
    qrels = pl.DataFrame({"query": ["u"], "doc": ["a"], "relevance": [1]})
    got = pr.evaluate(recs, qrels, ["ILD@2"], order="rank", item_features=long)
    assert got["ILD@2"].to_list() == [1.0]  # comedy: a has it, b does not


# --------------------------------------------------------------- ways in and refusals


def test_every_way_in_gives_the_same_values(tmp_path) -> None:
    log = random_log(3)
    qrels = log["test"].with_columns(relevance=pl.lit(1))
    names = [
        "Novelty@5",
        "ARP@5",
        "Serendipity@5",
        "ILD@5",
        "ILD(distance=jaccard)@5",
        "TailShare@5",
        "SufficientReco@5",
        "UnrepeatedReco@5",
        "PAP@3",
        "nDCG@5",
    ]
    kw = dict(query=USER, doc=ITEM, train=log["train"], catalog=log["catalog"],
              item_features=log["features"], missing="zero")  # fmt: skip
    frame = pr.evaluate(log["recs"], qrels, names, **kw)
    path = tmp_path / "recs.parquet"
    log["recs"].write_parquet(path, row_group_size=20)
    lazy = pr.evaluate(pl.scan_parquet(path), qrels.lazy(), names, **kw, memory_limit=200_000)
    assert isinstance(lazy, pl.LazyFrame)
    from polars_rankeval.recsys import list_buckets

    assert list_buckets(log["recs"], 500) > 10  # the lists scored bucket by bucket
    tiny = pr.evaluate(pl.scan_parquet(path), qrels.lazy(), names, **kw, memory_limit=500)
    side_lazy = {**kw, "train": log["train"].lazy(), "item_features": log["features"].lazy()}
    from_pandas = pr.evaluate(log["recs"].to_pandas(), qrels.to_pandas(), names, **side_lazy)
    for other in (lazy.collect(), tiny.collect(), from_pandas):
        assert other.columns == frame.columns
        for name in names:
            np.testing.assert_allclose(other[name].to_numpy(), frame[name].to_numpy(),
                                       rtol=0, atol=1e-12, equal_nan=True)  # fmt: skip
    means = pr.evaluate(log["recs"], qrels, names, **kw, per_query=False)
    assert means["Novelty@5"].item() == pytest.approx(frame["Novelty@5"].mean(), abs=1e-12)
    catalogue = pr.evaluate_catalog(pl.scan_parquet(path), ["Gini@5"], query=USER, doc=ITEM,
                                    catalog=log["catalog"])  # fmt: skip
    assert isinstance(catalogue, pl.LazyFrame)
    assert catalogue.collect().equals(
        pr.evaluate_catalog(log["recs"], ["Gini@5"], query=USER, doc=ITEM, catalog=log["catalog"])
    )


def test_segments_and_systems() -> None:
    log = random_log(1)
    recs = pl.concat([log["recs"].with_columns(system=pl.lit(s), day=pl.lit(d))
                      for s in ("a", "b") for d in (1, 2)])  # fmt: skip
    names = ["CatalogCoverage@3", "Personalization@3"]
    got = pr.evaluate_catalog(recs, names, query=USER, doc=ITEM, by="day")
    assert got.columns == ["day", "system", "CatalogCoverage@3", "Personalization@3"]
    assert got.height == 4
    one = pr.evaluate_catalog(log["recs"], ["CatalogCoverage@3", "Personalization@3"], query=USER,
                              doc=ITEM)  # fmt: skip
    for row in got.iter_rows(named=True):
        assert row["CatalogCoverage@3"] == one["CatalogCoverage@3"].item()
        assert row["Personalization@3"] == pytest.approx(one["Personalization@3"].item())


def test_refusals_name_what_is_missing() -> None:
    recs = pl.DataFrame({"query": ["u"], "doc": ["a"], "score": [1.0]})
    qrels = pl.DataFrame({"query": ["u"], "doc": ["a"], "relevance": [1]})
    with pytest.raises(ValueError, match=r"Novelty@10 needs train="):
        pr.evaluate(recs, qrels, ["AP", "Novelty@10"])
    with pytest.raises(ValueError, match=r"Serendipity@10 needs catalog="):
        pr.evaluate(recs, qrels, ["Serendipity@10"], train=recs)
    with pytest.raises(ValueError, match=r"ILD@10 needs item_features="):
        pr.evaluate(recs, qrels, ["ILD@10"])
    with pytest.raises(ValueError, match=r"Gini@10 needs catalog="):
        pr.evaluate_catalog(recs, ["Gini@10"])
    with pytest.raises(ValueError, match=r"evaluate_catalog"):
        pr.evaluate(recs, qrels, ["CatalogCoverage@10"])
    with pytest.raises(ValueError, match=r"not a measure of a system's recommendations"):
        pr.evaluate_catalog(recs, ["Novelty@10"], train=recs)
    with pytest.raises(ValueError, match=r"train is missing column 'doc'"):
        pr.evaluate(recs, qrels, ["Novelty@10"], train=recs.rename({"doc": "item"}))
    with pytest.raises(ValueError, match=r"item_features has no feature column"):
        pr.evaluate(recs, qrels, ["ILD@10"], item_features=recs.select("doc"))
    with pytest.raises(ValueError, match=r"pr.evaluate scores it"):
        pr.evaluate_judged(pl.DataFrame({"query": ["u"], "rank": [1], "relevance": [1]}),
                           ["SufficientReco@3"])  # fmt: skip


@pytest.mark.parametrize("seed", SEEDS)
def test_rectools_preset_equals_rectools_accuracy(seed: int) -> None:
    """conventions="rectools": RecTools' names and definitions of the accuracy measures."""
    log = random_log(seed)
    reco, test = ranked(log["recs"]), pandas(log["test"])
    recs = pl.DataFrame({c: reco[c].to_numpy() for c in reco})
    qrels = log["test"].with_columns(relevance=pl.lit(1))
    tools = [("MAP", {}), ("MAP(norm=k)", {"divide_by_k": True}), ("NDCG", {}),
             ("NDCG(ideal=qrels)", {"divide_by_achievable": True}), ("MRR", {}),
             ("HitRate", {}), ("Recall", {}), ("Precision", {})]  # fmt: skip
    names = [f"{name}@{k}" for k in CUTOFFS for name, _ in tools]
    with pytest.warns(pr.UnscoredQueriesWarning):
        got = pr.evaluate(recs, qrels, names, query=USER, doc=ITEM, order="rank",
                          conventions="rectools")  # fmt: skip
    got = pandas(got).set_index(USER)
    columns = dict(zip(names, got.columns, strict=True))
    for k in CUTOFFS:
        for name, kw in tools:
            same(
                peer.accuracy(reco, test, name.split("(")[0], k, **kw), got[columns[f"{name}@{k}"]]
            )
    assert columns["NDCG@3"] == "nDCG(gain=binary,ideal=k)@3"
    assert columns["MAP(norm=k)@3"] == "AP(norm=k)@3"
    parsed = parse_measures(["MAP@10", "Hit@10", "NDCG@10"], conventions="recbole")
    assert [str(m) for m in parsed] == ["AP(norm=min)@10", "Success@10", "nDCG(gain=binary)@10"]


RECBOLE_NAMES = ("MAP", "NDCG", "Hit", "MRR", "Recall", "Precision")


@pytest.mark.parametrize("seed", SEEDS)
def test_recbole_preset_equals_recbole_per_user(seed: int) -> None:
    """conventions="recbole" per user against RecBole's metric_info (and AveragePopularity)
    on its full top-k matrices: the users with at least k recommendations and a test
    interaction, test items never recommended, items absent from the training log."""
    log = random_log(seed)
    reco = ranked(log["recs"])
    test = pandas(log["test"])
    truth = test.groupby(USER)[ITEM].apply(set)
    counts = log["train"].group_by(ITEM).len()
    count_items = dict(zip(counts[ITEM].to_list(), counts["len"].to_list(), strict=True))
    names = [f"{n}@{k}" for k in CUTOFFS for n in [*RECBOLE_NAMES, "AveragePopularity"]]
    recs = pl.DataFrame({c: reco[c].to_numpy() for c in reco})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        qrels = log["test"].with_columns(relevance=pl.lit(1))
        got = pr.evaluate(recs, qrels, names, query=USER, doc=ITEM, order="rank",
                          conventions="recbole", train=log["train"])  # fmt: skip
    got = pandas(got).set_index(USER)
    columns = dict(zip(names, got.columns, strict=True))
    compared = 0
    for k in CUTOFFS:
        full = reco[reco.groupby(USER)[R].transform("max") >= k]
        judged = full[full[USER].isin(truth.index)]
        users = sorted(judged[USER].unique())
        matrix = peer.item_matrix(judged, k)
        pos_index = np.array([[item in truth[u] for item in row] for u, row in
                              zip(users, matrix, strict=True)])  # fmt: skip
        pos_len = np.array([len(truth[u]) for u in users])
        for name in RECBOLE_NAMES:
            theirs = peer.recbole_topk(name, pos_index, pos_len)[:, k - 1]
            same(pd.Series(theirs, index=users), got.loc[users, columns[f"{name}@{k}"]])
            compared += len(users)
        pop = peer.recbole_popularity(matrix, count_items)[:, k - 1]
        same(pd.Series(pop, index=users), got.loc[users, columns[f"AveragePopularity@{k}"]])
    assert compared > 100
    assert columns["MAP@3"] == "AP(norm=min)@3" and columns["Hit@3"] == "Success@3"


@pytest.mark.dask
def test_dask_scores_the_auc_measures() -> None:
    """On Dask (its local scheduler), PAP and PartialAUC are engine measures: the same
    values as in process; a measure of lists without its side input is refused by name
    before any task (tests/test_dask_recsys.py scores them on a LocalCluster)."""
    prd = pytest.importorskip("polars_rankeval.dask")
    log = random_log(2)
    qrels = log["test"].with_columns(relevance=pl.lit(1))
    names = ["PAP@3", "PartialAUC(insufficient_handling=exclude)@3", "nDCG(ideal=k)@3"]
    kw = dict(query=USER, doc=ITEM, missing="zero")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        here = pr.evaluate(log["recs"], qrels, names, **kw)
        there = prd.evaluate(log["recs"], qrels, names, npartitions=3, **kw)
    assert there.sort(USER).equals(here.sort(USER))
    with pytest.raises(ValueError, match=r"Novelty@10 needs train="):
        prd.evaluate(log["recs"], qrels, ["Novelty@10"], **kw)


def test_unscored_warning_says_what_each_measure_did() -> None:
    """A user without test interactions: the judged measures leave it out (null), the
    measures of lists score it; the warning says both, and only the judged when alone."""
    log = random_log(1)
    qrels = log["test"].with_columns(relevance=pl.lit(1))
    kw = dict(query=USER, doc=ITEM, train=log["train"])
    with pytest.warns(pr.UnscoredQueriesWarning) as caught:
        got = pr.evaluate(log["recs"], qrels, ["nDCG@3", "Novelty@3"], **kw)
    message = str(caught[0].message)
    assert re.search(r"run queries have no qrels \(.*\), so nDCG@3 did not score them "
                     r"\(null\), as trec_eval does; Novelty@3 did\.", message), message  # fmt: skip
    unscored = got.filter(pl.col("nDCG@3").is_null())
    assert unscored.height and unscored["Novelty@3"].is_not_null().all()
    with pytest.warns(pr.UnscoredQueriesWarning, match=r"have no qrels and were not scored"):
        pr.evaluate(log["recs"], qrels, ["nDCG@3"], **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("error", pr.UnscoredQueriesWarning)  # lists alone score all
        pr.evaluate(log["recs"], qrels, ["Novelty@3"], **kw)
