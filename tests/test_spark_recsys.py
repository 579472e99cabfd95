"""The measures of lists on a real Spark local[2] session: the values of pr.evaluate,
user by user, at 1e-12 (tests/test_dask_recsys.py does the same on Dask)."""

from __future__ import annotations

import shutil
import warnings

import polars as pl
import pytest
from test_dask_recsys import CATALOGUE, JUDGED, LISTS, assert_same
from test_recsys import ITEM, USER, random_log

import polars_rankeval as pr

pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(
        shutil.which("java") is None,
        reason="Spark needs Java 17+ on PATH (CI installs openjdk-17-jre-headless)",
    ),
]
pytest.importorskip(
    "pyspark", reason="pyspark is not installed (pip install polars-rankeval[spark])"
)
prs = pytest.importorskip("polars_rankeval.spark")
from test_spark import local_spark, to_spark  # noqa: E402  (after the skips: imports pyspark)


@pytest.fixture(scope="module")
def spark():
    yield from local_spark()


def collected(sdf, keys: list[str]) -> pl.DataFrame:
    frame = pl.from_arrow(sdf.toArrow())
    assert isinstance(frame, pl.DataFrame)
    return frame.sort(keys)


def quietly(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        return fn(*args, **kw)


def test_lists_and_accuracy_equal_in_process(spark, tmp_path):
    """Every measure of lists beside the judged ones, with systems and days, the side
    inputs as a Spark DataFrame (train), a list of ids (catalog) and a Parquet file
    (item_features); per user and per_query=False."""
    log = random_log(7)
    recs = pl.concat(
        [log["recs"].with_columns(system=pl.lit(s), day=pl.lit(d)) for s in "ab" for d in (1, 2)]
    ).filter(~((pl.col("system") == "b") & (pl.col(USER) % 3 == 0)))
    qrels = log["test"].with_columns(relevance=pl.lit(1))
    features = tmp_path / "features.parquet"
    log["features"].write_parquet(features)
    names = LISTS + JUDGED
    kw = dict(query=USER, doc=ITEM, by="day", missing="zero", catalog=log["catalog"])
    keys = ["day", "system", USER]
    for per_query in (True, False):
        expected = quietly(pr.evaluate, recs, qrels, names, **kw, train=log["train"],
                           item_features=log["features"], per_query=per_query)  # fmt: skip
        got = prs.evaluate(to_spark(spark, recs), to_spark(spark, qrels), names, **kw,
                           train=to_spark(spark, log["train"]), item_features=str(features),
                           per_query=per_query, num_buckets=3)  # fmt: skip
        got = collected(got, keys if per_query else keys[:2]).select(expected.columns)
        if not per_query:
            got = got.with_columns(pl.col("n_queries").cast(expected.schema["n_queries"]))
        assert_same(got, expected)


def test_refused_by_name_before_any_job(spark):
    log = random_log(1)
    recs, qrels = (
        to_spark(spark, log["recs"]),
        to_spark(spark, log["test"].with_columns(relevance=pl.lit(1))),
    )
    with pytest.raises(ValueError, match=r"Novelty@10 needs train="):
        prs.evaluate(recs, qrels, ["AP", "Novelty@10"], query=USER, doc=ITEM)
    with pytest.raises(ValueError, match=r"train is missing column 'item_id'"):
        prs.evaluate(recs, qrels, ["Novelty@10"], query=USER, doc=ITEM,
                     train=to_spark(spark, log["train"].rename({ITEM: "i"})))  # fmt: skip


def test_catalogue_equals_in_process(spark, tmp_path):
    """Every catalogue measure per system and day, train as a Spark DataFrame and the
    catalogue as a Parquet file: the buckets' sums added on the driver."""
    log = random_log(8)
    recs = pl.concat(
        [log["recs"].with_columns(system=pl.lit(s), day=pl.lit(d)) for s in "ab" for d in (1, 2)]
    ).filter(~((pl.col("system") == "b") & (pl.col(USER) % 3 == 0)))
    catalog = tmp_path / "catalog.parquet"
    pl.DataFrame({ITEM: log["catalog"]}).write_parquet(catalog)
    kw = dict(query=USER, doc=ITEM, by="day")
    expected = pr.evaluate_catalog(recs, CATALOGUE, **kw, train=log["train"],
                                   catalog=log["catalog"])  # fmt: skip
    train = to_spark(spark, log["train"])
    got = prs.evaluate_catalog(to_spark(spark, recs), CATALOGUE, **kw, num_buckets=3,
                               train=train, catalog=str(catalog))  # fmt: skip
    assert expected.height == 4
    assert_same(got, expected)
