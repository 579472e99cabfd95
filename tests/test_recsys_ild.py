"""ILD with the Jaccard distance and with a table of pairwise distances, per user.

Jaccard against its definition, pair by pair in Python (Jaccard 1912: one minus the
shared (feature, value) pairs over the pairs either item has); the table against
RecTools' Hamming ILD (tests/recsys_peers.py), fed the Hamming distance of every pair
as a table. Random logs from tests/test_recsys.py; values at 1e-9.
"""

from __future__ import annotations

import math
import warnings
from itertools import combinations

import numpy as np
import pandas as pd
import polars as pl
import pytest
import recsys_peers as peer
from test_recsys import CUTOFFS, ITEM, SEEDS, USER, pandas, random_log, ranked, same

import polars_rankeval as pr


def ild(log: dict, names: list[str], features: pl.DataFrame) -> pd.DataFrame:
    qrels = log["test"].with_columns(relevance=pl.lit(1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        got = pr.evaluate(log["recs"], qrels, names, query=USER, doc=ITEM,
                          item_features=features)  # fmt: skip
    return pandas(got).set_index(USER)


def jaccard_ild(reco: pd.DataFrame, tokens: dict, k: int) -> pd.Series:
    """Per list: the mean over its pairs of items with known features of 1 - |A & B| /
    |A | B| (0 when both sets are empty); 0 for a list of one item, NaN without pairs."""
    out = {}
    for user, rows in reco.loc[reco["rank"] <= k].sort_values("rank").groupby(USER):
        items = rows[ITEM].tolist()
        if len(items) < 2:
            out[user] = 0.0
            continue
        known = [i for i in items if i in tokens]
        d = [1 - len(tokens[a] & tokens[b]) / len(tokens[a] | tokens[b])
             if tokens[a] | tokens[b] else 0.0
             for a, b in combinations(known, 2)]  # fmt: skip
        out[user] = float(np.mean(d)) if d else math.nan
    return pd.Series(out, dtype=float)


@pytest.mark.parametrize("seed", SEEDS)
def test_jaccard_equals_its_definition_wide_and_long(seed: int) -> None:
    log = random_log(seed)
    reco = ranked(log["recs"])
    wide = log["features"]
    tokens = {row[ITEM]: {(c, row[c]) for c in ("genre", "year")}
              for row in wide.iter_rows(named=True) if row["year"] is not None}  # fmt: skip
    names = [f"ILD(distance=jaccard)@{k}" for k in CUTOFFS]
    got = ild(log, names, wide)
    for k, name in zip(CUTOFFS, names, strict=True):
        same(jaccard_ild(reco, tokens, k), got[name])
    rng = np.random.default_rng(seed)  # multi-hot genres in the long shape
    rows = [(item, "genre", g) for item in range(24) for g in rng.choice(6, rng.integers(0, 4),
                                                                        replace=False)]  # fmt: skip
    rows += [(24, "genre", 0)]
    long = pl.DataFrame(rows, schema={ITEM: pl.Int64, "feature": pl.String, "value": pl.Int64},
                        orient="row")  # fmt: skip
    tokens = {}
    for item, feature, value in rows:
        tokens.setdefault(item, set()).add((feature, value))
    got = ild(log, names, long)
    for k, name in zip(CUTOFFS, names, strict=True):
        same(jaccard_ild(reco, tokens, k), got[name])


@pytest.mark.parametrize("seed", SEEDS)
def test_table_of_hamming_distances_equals_rectools_hamming(seed: int) -> None:
    log = random_log(seed)
    reco = ranked(log["recs"])
    feats = pandas(log["features"]).set_index(ITEM)
    known = feats.dropna()
    pairs = [(a, b, float((known.loc[a] != known.loc[b]).sum()))
             for a, b in combinations(known.index.tolist(), 2)]  # fmt: skip
    table = pl.DataFrame(pairs, schema=["item_a", "item_b", "distance"], orient="row")
    names = [f"ILD(distance=table)@{k}" for k in CUTOFFS]
    got = ild(log, names, table)
    hamming = ild(log, [f"ILD@{k}" for k in CUTOFFS], log["features"])
    for k, name in zip(CUTOFFS, names, strict=True):
        same(peer.ild_hamming(reco, feats, k), got[name])
        same(hamming[f"ILD@{k}"], got[name])


def test_table_known_values_and_refusals() -> None:
    recs = pl.DataFrame({"query": ["u"] * 4 + ["v"] * 2, "doc": ["a", "b", "c", "a", "x", "y"],
                         "score": [4.0, 3.0, 2.0, 1.0, 2.0, 1.0]})  # fmt: skip
    qrels = pl.DataFrame({"query": ["u"], "doc": ["a"], "relevance": [1]})
    table = pl.DataFrame({"item_a": ["b", "a"], "item_b": ["a", "c"], "distance": [0.5, 1.0]})
    got = pr.evaluate(recs, qrels, ["ILD(distance=table)@3", "ILD(distance=table)"],
                      item_features=table, duplicates="keep_best")  # fmt: skip
    values = dict(zip(got["query"], got.rows(), strict=True))
    # u@3: a-b 0.5, a-c 1.0, b-c unknown; the whole list adds a's repeat (a list measure
    # reads every row): a-a 0, b-a 0.5, c-a 1.0; v: x-y unknown
    assert values["u"][1:] == pytest.approx(((0.5 + 1.0) / 2, (0.5 + 1.0 + 0 + 0.5 + 1.0) / 5))
    assert values["v"][1:] == (None, None)
    with pytest.raises(ValueError, match=r"ILD@3 reads the items' features .* given a table"):
        pr.evaluate(recs, qrels, ["ILD@3"], item_features=table)
    features = pl.DataFrame({"doc": ["a", "b"], "genre": [1, 2]})
    with pytest.raises(ValueError, match=r"reads a table of pairs \('item_a', 'item_b'"):
        pr.evaluate(recs, qrels, ["ILD(distance=table)@3"], item_features=features)
    clash = pl.DataFrame({"item_a": ["a", "b"], "item_b": ["b", "a"], "distance": [0.5, 0.7]})
    with pytest.raises(ValueError, match=r"gives the pair \('a', 'b'\) two distances"):
        pr.evaluate(recs, qrels, ["ILD(distance=table)@3"], item_features=clash)
