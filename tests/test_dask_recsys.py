"""The recommendation measures on a real Dask LocalCluster: the values of pr.evaluate and
pr.evaluate_catalog, user by user (system by system), at 1e-12.

Random logs (tests/test_recsys.py's ``random_log``): equal scores, users without test
interactions, items absent from the training log, repeated items; the run, qrels and
side inputs as DataFrames, LazyFrames and Parquet files written to tmp_path, cut into
several buckets.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal
from test_dask import write_parts
from test_recsys import ITEM, USER, random_log

import polars_rankeval as pr

pytestmark = pytest.mark.dask
prd = pytest.importorskip("polars_rankeval.dask")

LISTS = [
    "Novelty@5",
    "Novelty",
    "ARP@3",
    "ARP(normalize=true)@5",
    "TailShare@5",
    "TailShare(tail_ratio=3)@3",
    "APLT@5",
    "ACLT@3",
    "ILD@5",
    "ILD(distance=cosine)@5",
    "ILD(distance=jaccard)@3",
    "Serendipity@5",
    "SufficientReco@5",
    "SufficientReco(deep=true)@3",
    "UnrepeatedReco@5",
    "UnrepeatedReco(deep=true)@3",
    "CoocDiversity@5",
    "CoocSerendipity(relevant=qrels)@3",
]
"""Every measure of lists, with its parameters (ILD(distance=table): its own test)."""
JUDGED = ["nDCG@5", "PAP@3", "PartialAUC(insufficient_handling=exclude)@3", "R@5"]
CATALOGUE = [
    "CatalogCoverage@1",
    "CatalogCoverage(normalize=true)@5",
    "CatalogCoverage",
    "Entropy@3",
    "Entropy(log=e,per_item=true)@5",
    "Gini@5",
    "Gini",
    "Personalization@3",
    "Personalization",
    "UserCoverage@5",
    "UserCoverage(normalize=false)@1",
    "ChoiceNovelty@3",
]


def with_systems(frame: pl.DataFrame) -> pl.DataFrame:
    """Two systems and two days: the same lists scored four times, the second system's
    lists cut at their first 4 rows (a different set of lists)."""
    parts = []
    for system in ("a", "b"):
        for day in (1, 2):
            part = frame if system == "a" else frame.filter(pl.int_range(pl.len()).over(USER) < 4)
            parts.append(part.with_columns(system=pl.lit(system), day=pl.lit(day)))
    return pl.concat(parts)


def quietly(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        return fn(*args, **kw)


def assert_same(got: pl.DataFrame, expected: pl.DataFrame) -> None:
    """Same columns, keys, order and dtypes; values at 1e-12, nulls where expected."""
    assert expected.height > 0
    values = [c for c in expected.columns if expected.schema[c] == pl.Float64]
    keys = [c for c in expected.columns if c not in values]
    assert got.columns == expected.columns
    assert_frame_equal(got.select(keys), expected.select(keys), check_exact=True)
    assert_frame_equal(got, expected, check_exact=False, rel_tol=1e-12, abs_tol=1e-12)


def worded(message: Warning) -> str:
    """A warning's text but for the ids it names (Dask names the first in sorted order,
    a DataFrame in the run's order)."""
    return re.sub(r"no qrels \(.*?\), so", "no qrels (...), so", str(message))


def side_inputs(log: dict, tmp_path: Path, form: str) -> dict:
    """train, catalog and item_features as frames, LazyFrames or Parquet files."""
    if form == "frame":
        return {"train": log["train"], "catalog": log["catalog"], "item_features": log["features"]}
    if form == "lazy":
        return {"train": log["train"].lazy(), "catalog": pl.Series(log["catalog"]),
                "item_features": log["features"].lazy()}  # fmt: skip
    train = write_parts(log["train"], tmp_path / "train", 3)
    catalog = tmp_path / "catalog.parquet"
    pl.DataFrame({ITEM: log["catalog"]}).write_parquet(catalog)
    features = tmp_path / "features.parquet"
    log["features"].write_parquet(features)
    return {"train": train, "catalog": str(catalog), "item_features": features}


def inputs(run: pl.DataFrame, qrels: pl.DataFrame, tmp_path: Path, form: str) -> tuple:
    if form == "frame":
        return run, qrels
    if form == "lazy":
        return run.lazy(), qrels.lazy()
    return write_parts(run, tmp_path / "run", 3), write_parts(qrels, tmp_path / "qrels", 2)


@pytest.mark.parametrize(
    ("form", "seed", "npartitions"), [("frame", 0, 3), ("parquet", 1, 4), ("lazy", 2, 2)]
)
def test_lists_and_accuracy_equal_in_process(client, tmp_path, form, seed, npartitions):
    """Every measure of lists beside the judged ones, missing="zero": the same frame as
    pr.evaluate (users without qrels scored by the lists, null for the judged; qrels
    users without recommendations null for the lists), and the same warning."""
    log = random_log(seed)
    qrels = log["test"].with_columns(relevance=pl.lit(1))
    names = LISTS + JUDGED
    kw = dict(query=USER, doc=ITEM, missing="zero")
    with pytest.warns(pr.UnscoredQueriesWarning) as here:
        side = side_inputs(log, tmp_path, "frame")
        expected = pr.evaluate(log["recs"], qrels, names, **kw, **side)
    assert expected.filter(pl.col("nDCG@5").is_null())["Novelty@5"].is_not_null().all()
    assert expected["Novelty@5"].is_null().any()  # a qrels user without recommendations
    run, judged = inputs(log["recs"], qrels, tmp_path, form)
    with pytest.warns(pr.UnscoredQueriesWarning) as there:
        got = prd.evaluate(run, judged, names, **kw, **side_inputs(log, tmp_path, form),
                           client=client, npartitions=npartitions)  # fmt: skip
    assert_same(got, expected)
    assert [worded(w.message) for w in there] == [worded(w.message) for w in here]
    assert re.search(r"so nDCG@5, PAP@3, .* did not score them \(null\), as trec_eval does; "
                     r"Novelty@5, Novelty, ARP@3, \.\.\. did\.", str(there[0].message))  # fmt: skip


def test_repeated_items_and_lists_alone(client, tmp_path):
    """Lists that repeat items (ranked by a rank column), measures of lists only: every
    list scored, no warning, as in process; the means too."""
    log = random_log(4, repeats=True)
    recs = log["recs"].with_columns(pl.col("__order").rank("ordinal").over(USER).alias("rank"))
    recs = recs.drop("__order", "score")
    assert recs.select(USER, ITEM).is_duplicated().any()
    qrels = log["test"].with_columns(relevance=pl.lit(1))
    kw = dict(query=USER, doc=ITEM, order="rank", **side_inputs(log, tmp_path, "frame"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", pr.UnscoredQueriesWarning)  # lists score every user
        expected = pr.evaluate(recs, qrels, LISTS, **kw)
        run, judged = inputs(recs, qrels, tmp_path, "parquet")
        got = prd.evaluate(run, judged, LISTS, **kw, client=client, npartitions=3)
    assert expected.height == recs[USER].n_unique()
    assert_same(got, expected)
    means = pr.evaluate(recs, qrels, LISTS, **kw, per_query=False)
    assert_same(prd.evaluate(recs, qrels, LISTS, **kw, per_query=False, client=client), means)


def test_systems_segments_and_means(client, tmp_path):
    """by= and a system column, per user and per_query=False."""
    log = random_log(5)
    recs = with_systems(log["recs"])
    qrels = log["test"].with_columns(relevance=pl.lit(1))
    names = ["Novelty@3", "ILD@3", "Serendipity@3", "nDCG@3"]
    kw = dict(query=USER, doc=ITEM, by="day", **side_inputs(log, tmp_path, "frame"))
    for per_query in (True, False):
        expected = quietly(pr.evaluate, recs, qrels, names, **kw, per_query=per_query)
        got = quietly(prd.evaluate, recs.lazy(), qrels, names, **kw, per_query=per_query,
                      client=client, npartitions=5)  # fmt: skip
        assert_same(got, expected)


def test_distance_table_and_local_scheduler(tmp_path):
    """ILD over a table of pairwise distances given as a Parquet file, on dask's local
    scheduler (no client: the reduced side inputs go with the tasks)."""
    log = random_log(3)
    items = sorted(set(log["recs"][ITEM].to_list()))
    pairs = pl.DataFrame(
        [(a, b, (a * 7 + b * 3) % 11 / 10) for a in items for b in items if a < b and (a + b) % 5],
        schema={"item_a": pl.Int64, "item_b": pl.Int64, "distance": pl.Float64},
        orient="row",
    )  # some pairs absent: unknown distances
    path = tmp_path / "pairs.parquet"
    pairs.write_parquet(path)
    qrels = log["test"].with_columns(relevance=pl.lit(1))
    names = ["ILD(distance=table)@5", "ILD(distance=table)@2"]
    kw = dict(query=USER, doc=ITEM)
    expected = pr.evaluate(log["recs"], qrels, names, **kw, item_features=pairs)
    got = prd.evaluate(log["recs"], qrels, names, **kw, item_features=str(path), npartitions=3)
    assert_same(got, expected)


@pytest.mark.parametrize(("form", "npartitions"), [("frame", 3), ("parquet", 4), ("lazy", 1)])
def test_catalogue_equals_in_process(client, tmp_path, form, npartitions):
    """Every catalogue measure, per system and day: the buckets' sums added on the
    driver give pr.evaluate_catalog's values."""
    log = random_log(6)
    recs = with_systems(log["recs"])
    kw = dict(query=USER, doc=ITEM, by="day")
    expected = pr.evaluate_catalog(recs, CATALOGUE, **kw, train=log["train"],
                                   catalog=log["catalog"])  # fmt: skip
    assert expected.height == 4
    side = side_inputs(log, tmp_path, form)
    run = inputs(recs, recs, tmp_path, form)[0]
    got = prd.evaluate_catalog(run, CATALOGUE, **kw, train=side["train"], catalog=side["catalog"],
                               client=client, npartitions=npartitions)  # fmt: skip
    assert_same(got, expected)


def test_catalogue_without_groups_and_ranks(client):
    """One system, no segment: one row; a list ranked by its rank column."""
    log = random_log(2)
    recs = log["recs"].sort(USER, "score", descending=[False, True])
    recs = recs.with_columns(pl.int_range(1, pl.len() + 1).over(USER).alias("rank"))
    kw = dict(query=USER, doc=ITEM, order="rank", train=log["train"], catalog=log["catalog"])
    expected = pr.evaluate_catalog(recs, CATALOGUE, **kw)
    got = prd.evaluate_catalog(recs, CATALOGUE, **kw, client=client, npartitions=6)
    assert expected.height == 1
    assert_same(got, expected)


def test_refused_by_name_before_any_work(client, tmp_path):
    """A measure whose side input is not given, on Dask: refused naming it and the
    input, before any task (the spill folder is never made)."""
    log = random_log(1)
    qrels = log["test"].with_columns(relevance=pl.lit(1))
    run = write_parts(log["recs"], tmp_path / "run", 2)
    spill = tmp_path / "spill"
    kw = dict(query=USER, doc=ITEM, client=client, spill_dir=spill)
    with pytest.raises(ValueError, match=r"Novelty@10 needs train="):
        prd.evaluate(run, qrels, ["AP", "Novelty@10"], **kw)
    with pytest.raises(ValueError, match=r"Serendipity@10 needs catalog="):
        prd.evaluate(run, qrels, ["Serendipity@10"], train=log["train"], **kw)
    with pytest.raises(ValueError, match=r"ILD@10 needs item_features="):
        prd.evaluate(run, qrels, ["ILD@10"], **kw)
    with pytest.raises(ValueError, match=r"Gini@10 needs catalog="):
        prd.evaluate_catalog(run, ["Gini@10"], **kw)
    with pytest.raises(ValueError, match=r"UserCoverage@10 needs train="):
        prd.evaluate_catalog(run, ["UserCoverage@10"], **kw)
    with pytest.raises(ValueError, match=r"evaluate_catalog"):
        prd.evaluate(run, qrels, ["CatalogCoverage@10"], **kw)
    with pytest.raises(ValueError, match=r"Novelty@10 is not a measure of a system's"):
        prd.evaluate_catalog(run, ["Novelty@10"], train=log["train"], **kw)
    with pytest.raises(ValueError, match=r"train is missing column 'user_id'"):
        prd.evaluate(run, qrels, ["Novelty@10"], train=log["train"].rename({USER: "u"}), **kw)
    assert not spill.exists()


def test_cooccurrence_measures_on_dask_equal_in_process(client) -> None:
    """Microsoft Recommenders' co-occurrence measures (each user's training items shipped
    to the tasks only for them) and ChoiceNovelty's per-bucket exposure, on Dask."""
    rng = np.random.default_rng(3)
    recs = pl.DataFrame({"query": rng.integers(0, 40, 400), "doc": rng.integers(0, 30, 400),
                         "score": rng.random(400)}).unique(["query", "doc"])  # fmt: skip
    train = pl.DataFrame({"query": rng.integers(0, 50, 600), "doc": rng.integers(0, 25, 600)})
    qrels = pl.DataFrame({"query": rng.integers(0, 40, 80), "doc": rng.integers(0, 30, 80),
                          "relevance": 1}).unique(["query", "doc"])  # fmt: skip
    names = ["CoocDiversity@5", "CoocSerendipity(relevant=qrels)", "nDCG@5"]
    kw = {"train": train, "missing": "zero"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        expected = pr.evaluate(recs, qrels, names, **kw)
        got = prd.evaluate(recs, qrels, names, client=client, npartitions=3, **kw)
    assert_frame_equal(got, expected, check_exact=False, rel_tol=0, abs_tol=1e-12)
    assert got["CoocDiversity@5"].drop_nulls().len() > 20
    catalog = ["ChoiceNovelty", "ChoiceNovelty@3"]
    assert_frame_equal(prd.evaluate_catalog(recs, catalog, train=train, client=client,
                                            npartitions=3),
                       pr.evaluate_catalog(recs, catalog, train=train),
                       check_exact=False, rel_tol=0, abs_tol=1e-12)  # fmt: skip
