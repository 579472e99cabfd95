"""Offline evaluation of two recommenders beyond accuracy, from Parquet logs.

A popularity baseline and a personalised model recommend 10 items to each user of
two devices; the training interactions, the test interactions (what users did next)
and the item features are generated here (seeded), written to Parquet and scanned
lazily, as a nightly job would read them:

    python examples/recsys.py [OUTPUT_DIR]

It prints, per device and system, accuracy (nDCG@10, Recall@10) beside novelty,
popularity, diversity and serendipity (RecTools' definitions, conventions="rectools"),
then the catalogue measures: coverage, Gini index of exposure and personalization.
"""

import sys
from pathlib import Path

import numpy as np
import polars as pl

import polars_rankeval as pr

OUT = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "output"
OUT.mkdir(parents=True, exist_ok=True)
N_USERS, N_ITEMS, K = 600, 120, 10


def logs(seed: int = 11) -> dict[str, pl.DataFrame]:
    """Train, test, item features and the two systems' recommendations."""
    rng = np.random.default_rng(seed)
    pop = 1 / np.arange(1, N_ITEMS + 1) ** 0.8
    pop /= pop.sum()
    taste = rng.integers(0, 6, N_USERS)  # each user likes one of 6 genres
    genre = rng.integers(0, 6, N_ITEMS)
    liked = [np.flatnonzero(genre == t) for t in taste]
    train_items = [rng.choice(items, 8) for items in liked]
    train = pl.DataFrame(
        {"user": np.repeat(np.arange(N_USERS), 8), "item": np.concatenate(train_items)}
    )
    extra = pl.DataFrame({"user": rng.integers(0, N_USERS, 4000),
                          "item": rng.choice(N_ITEMS, 4000, p=pop)})  # fmt: skip
    train = pl.concat([train, extra])
    test = pl.DataFrame(
        {"user": np.repeat(np.arange(N_USERS), 2),
         "item": np.concatenate([rng.choice(items, 2, replace=False) for items in liked])}
    ).unique()  # fmt: skip
    top = train.group_by("item").len().sort(["len", "item"], descending=True)["item"][:K]
    popular = pl.DataFrame({"user": np.repeat(np.arange(N_USERS), K),
                            "item": np.tile(top.to_numpy(), N_USERS),
                            "rank": np.tile(np.arange(1, K + 1), N_USERS)})  # fmt: skip
    personal = pl.DataFrame(
        {"user": np.repeat(np.arange(N_USERS), K),
         "item": np.concatenate([rng.permutation(np.union1d(items, rng.choice(N_ITEMS, 8)))[:K]
                                 for items in liked]),
         "rank": np.tile(np.arange(1, K + 1), N_USERS)}
    )  # fmt: skip
    recs = pl.concat([popular.with_columns(system=pl.lit("popular")),
                      personal.with_columns(system=pl.lit("personal"))])  # fmt: skip
    recs = recs.with_columns(
        device=pl.when(pl.col("user") % 4 == 0).then(pl.lit("tv")).otherwise(pl.lit("mobile"))
    )
    features = pl.DataFrame({"item": np.arange(N_ITEMS), "genre": genre,
                             "decade": rng.integers(0, 4, N_ITEMS)})  # fmt: skip
    return {"recs": recs, "train": train, "test": test, "features": features}


def main() -> None:
    for name, frame in logs().items():
        frame.write_parquet(OUT / f"{name}.parquet")
    recs = pl.scan_parquet(OUT / "recs.parquet")
    train = pl.scan_parquet(OUT / "train.parquet")
    test = pl.read_parquet(OUT / "test.parquet").with_columns(relevance=pl.lit(1))
    features = pl.scan_parquet(OUT / "features.parquet")
    catalog = pl.Series("item", np.arange(N_ITEMS))

    measures = ["NDCG@10", "Recall@10", "MeanInvUserFreq@10", "AvgRecPopularity@10",
                "IntraListDiversity@10", "Serendipity@10"]  # fmt: skip
    per_list = pr.evaluate(
        recs, test, measures, query="user", doc="item", order="rank", by="device",
        train=train, catalog=catalog, item_features=features, conventions="rectools",
        per_query=False, memory_limit="64MiB",
    )  # fmt: skip
    catalogue = pr.evaluate_catalog(
        recs, ["CatalogCoverage(normalize=true)@10", "Gini@10", "Personalization@10"],
        query="user", doc="item", order="rank", by="device", catalog=catalog,
    )  # fmt: skip
    with pl.Config(tbl_cols=-1, tbl_width_chars=160, float_precision=3, fmt_str_lengths=40):
        print("per list, averaged per device and system (RecTools' definitions):")
        print(per_list.collect())
        print("per device and system, the catalogue:")
        print(catalogue.collect())


if __name__ == "__main__":
    main()
