"""Elliot's APLT and ACLT, per user, against a line-by-line transcription of Elliot.

Elliot (sisinflab/elliot) pulls TensorFlow and pins old libraries; its definitions are
transcribed from ``elliot/evaluation/popularity.py`` (``Popularity.get_pop_items``,
``get_sorted_pop_items``, ``get_short_head``, ``get_long_tail``) and
``elliot/evaluation/metrics/bias/aplt/aplt.py`` (``APLT.__user_aplt``),
``bias/aclt/aclt.py`` (``ACLT.__user_aclt``). Elliot's internal item order, which
decides equal popularities, is taken as item id ascending, as the library documents.
Random logs of tests/test_recsys.py (items absent from the training log, users without
test interactions); values at 1e-9.
"""

from __future__ import annotations

import operator

import numpy as np
import pandas as pd
import polars as pl
import pytest
from test_recsys import CUTOFFS, ITEM, SEEDS, USER, pandas, random_log, ranked, same

import polars_rankeval as pr


def elliot_long_tail(train: pd.DataFrame, pop_ratio: float) -> list:
    """Popularity.get_long_tail over the binary user x item training matrix."""
    binary = train[[USER, ITEM]].drop_duplicates()
    pop_items = binary.groupby(ITEM)[USER].size().sort_index().to_dict()  # astype(bool).sum
    sorted_pop_items = dict(sorted(pop_items.items(), key=operator.itemgetter(1), reverse=True))
    short_head_limit = len(binary) * pop_ratio  # transactions * pop_ratio
    short_head = []
    for i, pop in sorted_pop_items.items():
        short_head.append(i)
        short_head_limit -= pop
        if short_head_limit <= 0:
            break
    return [i for i in sorted_pop_items if i not in short_head]


def elliot_per_user(reco: pd.DataFrame, long_tail: list, cutoff: int, share: bool) -> pd.Series:
    """APLT.__user_aplt / ACLT.__user_aclt over each user's ranked list."""
    out = {}
    for user, rows in reco.sort_values([USER, "rank"]).groupby(USER):
        items = rows[ITEM].tolist()[:cutoff]
        found = len(set(items) & set(long_tail))
        out[user] = found / len(items) if share else float(found)
    return pd.Series(out, dtype=float)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("ratio", [0.8, 0.5])
def test_aplt_aclt_equal_elliot(seed: int, ratio: float) -> None:
    log = random_log(seed)
    reco, train = ranked(log["recs"]), pandas(log["train"])
    names = [f"{m}(pop_ratio={ratio})@{k}" for k in CUTOFFS for m in ("APLT", "ACLT")]
    got = pr.evaluate(log["recs"], log["test"].with_columns(relevance=pl.lit(1)), names,
                      query=USER, doc=ITEM, train=log["train"])  # fmt: skip
    got = pandas(got).set_index(USER)
    tail = elliot_long_tail(train, ratio)
    assert 0 < len(tail) < train[ITEM].nunique()
    for k in CUTOFFS:
        for name, share in (("APLT", True), ("ACLT", False)):
            column = str(pr.parse(f"{name}(pop_ratio={ratio})@{k}"))
            same(elliot_per_user(reco, tail, k, share), got[column])


def test_aplt_known_values() -> None:
    """Train: a by 3 users, b by 1, c by 1 (5 pairs; the head takes 0.8 x 5 = 4: a, then
    b, with ties by item id); the tail is c. A list c, a, c, z counts c once over 4 rows."""
    train = pl.DataFrame({"query": ["u1", "u2", "u3", "u1", "u2"], "doc": list("aaabc")})
    recs = pl.DataFrame({"query": ["v"] * 4, "doc": ["c", "a", "c", "z"], "rank": [1, 2, 3, 4]})
    qrels = pl.DataFrame({"query": ["v"], "doc": ["a"], "relevance": [1]})
    got = pr.evaluate(recs, qrels, ["APLT@4", "ACLT@4", "APLT@1"], order="rank", train=train,
                      duplicates="keep_best")  # fmt: skip
    np.testing.assert_allclose(got.row(0)[1:], [1 / 4, 1.0, 1.0], rtol=0, atol=1e-12)
