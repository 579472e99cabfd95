"""Evaluate Spark DataFrames: Polars inside Arrow UDFs over query-hashed buckets.

Both tables get a bucket column, ``pmod(hash(string(query)), num_buckets)``
(Spark's Murmur3 hash, so every executor agrees), and are cogrouped by it:
one call of an Arrow UDF receives all run rows and all qrels rows of a bucket's
queries and scores them with the same Polars plan as
:func:`polars_rankeval.evaluate` (through
:func:`polars_rankeval.dask.evaluate_piece`). Every query lives in exactly one
bucket, so the values equal the in-process ones query by query.

``pyspark`` is imported only when :func:`evaluate` is called
(``pip install polars-rankeval[spark]``); the executors need Polars and
polars_rankeval installed in the Python they run (``PYSPARK_PYTHON``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import polars as pl

from polars_rankeval.dask import check_options, evaluate_piece, needed_columns
from polars_rankeval.evaluate import evaluate as evaluate_in_process
from polars_rankeval.measures import Measure, parse_measures

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame as SparkDataFrame
    from pyspark.sql.types import StructType

BUCKET = "__rankeval_bucket"
"""Name of the bucket column added to both tables (dropped before scoring)."""


def _import_pyspark() -> None:
    try:
        import pyspark  # noqa: F401
    except ImportError as err:
        msg = (
            "polars_rankeval.spark needs pyspark (>= 4). "
            "Install it with: pip install polars-rankeval[spark]"
        )
        raise ImportError(msg) from err


def empty_polars_frame(schema: StructType) -> pl.DataFrame:
    """A zero-row Polars frame with the dtypes the UDF sees for a Spark schema."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return pl.from_arrow(to_arrow_schema(schema).empty_table())


def result_schema(schema: pl.Schema) -> StructType:
    """Spark schema of a per-query Polars frame (ids keep their type, measures double)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    arrow = pl.DataFrame(schema=schema).to_arrow(compat_level=pl.CompatLevel.oldest())
    return from_arrow_schema(arrow.schema)


def score_bucket(
    run: pa.Table,
    qrels: pa.Table,
    *,
    measures: Sequence[str],
    systems: pl.DataFrame | None,
    options: Mapping[str, Any],
    arrow_schema: pa.Schema,
) -> pa.Table:
    """The Arrow UDF: one bucket's run and qrels rows in, its per-query values out."""
    piece = evaluate_piece(
        pl.from_arrow(run).drop(BUCKET),
        pl.from_arrow(qrels).drop(BUCKET),
        measures,
        systems=systems,
        options=options,
    )
    return piece.scores.to_arrow(compat_level=pl.CompatLevel.oldest()).cast(arrow_schema)


def _default_buckets(run_sdf: SparkDataFrame) -> int:
    value = run_sdf.sparkSession.conf.get("spark.sql.shuffle.partitions", "200")
    return int(value) if value and value.isdigit() else 200


def _means(scores: SparkDataFrame, names: Sequence[str], system: str | None) -> SparkDataFrame:
    """Mean over queries per system, with ``n_queries``: the trec_eval ``all`` line."""
    from pyspark.sql import functions as F  # noqa: N812

    aggs = [
        F.count(F.lit(1)).alias("n_queries"),
        *(F.avg(F.col(f"`{c}`")).alias(c) for c in names),
    ]
    if system is None:
        return scores.agg(*aggs)
    return scores.groupBy(system).agg(*aggs)


def evaluate(
    run_sdf: SparkDataFrame,
    qrels_sdf: SparkDataFrame,
    measures: str | Measure | Iterable[str | Measure],
    *,
    num_buckets: int | None = None,
    **evaluate_options: Any,
) -> SparkDataFrame:
    """Score a Spark run against Spark qrels: per-query values as a Spark DataFrame.

    Both tables are bucketed by a hash of the query id and cogrouped; an Arrow
    UDF runs :func:`polars_rankeval.evaluate` on each bucket inside the
    executors. Lazy as Spark is: nothing runs until an action on the result.

    Parameters
    ----------
    run_sdf
        ``query, doc, score`` (optionally ``system``, ``rank``).
    qrels_sdf
        ``query, doc, relevance``.
    measures
        Measure names or objects, as for :func:`polars_rankeval.evaluate`.
    num_buckets
        Number of hash buckets (UDF calls); a bucket's rows must fit in one
        executor's memory. Default: ``spark.sql.shuffle.partitions``.
    **evaluate_options
        Keyword options of :func:`polars_rankeval.evaluate` (``query``, ``doc``,
        ``score``, ``relevance``, ``system``, ``rank``, ``rel_level``, ``order``,
        ``depth``, ``missing``, ``duplicates``, ``per_query``), except
        ``order="presorted"``: a shuffle does not keep row order.

    Returns
    -------
    pyspark.sql.DataFrame
        ``[system], query`` (as typed in the run; as strings when run and qrels
        type them differently) and one double column per measure, named
        canonically, in no particular row order. With ``per_query=False``: per
        system, ``n_queries`` and the mean of each measure over queries.

    Notes
    -----
    Run queries with no qrels row are left out, as by
    :func:`polars_rankeval.evaluate`, but no warning is raised (the scoring runs
    on the executors, later). Count them with an anti join:
    ``run_sdf.select("query").distinct().join(qrels_sdf, "query", "left_anti").count()``.
    Duplicate (query, doc) rows raise in the executor, which fails the job with
    the same message as in-process. With ``missing="zero"`` and a system
    column, the distinct systems are collected to the driver when this function
    is called (one small job), so that every bucket scores every system.

    Examples
    --------
    >>> import polars_rankeval.spark as prs
    >>> from pyspark.sql import SparkSession  # doctest: +SKIP
    >>> spark = SparkSession.builder.master("local[2]").getOrCreate()  # doctest: +SKIP
    >>> run = spark.read.parquet("runs/")  # doctest: +SKIP
    >>> qrels = spark.read.parquet("qrels.parquet")  # doctest: +SKIP
    >>> prs.evaluate(run, qrels, ["AP", "nDCG@10"]).show()  # doctest: +SKIP
    """
    _import_pyspark()
    from pyspark.sql import functions as F  # noqa: N812
    from pyspark.sql.pandas.types import to_arrow_schema

    options = check_options(evaluate_options)
    if options.get("order") == "presorted":
        msg = (
            "order='presorted' cannot be used on Spark: the shuffle that groups each "
            "query's rows does not keep their order. Rank by order='score' or order='rank'."
        )
        raise ValueError(msg)
    names = [str(m) for m in parse_measures(measures)]
    query = options.get("query", "query")
    system = options.get("system", "system")
    system = system if system is not None and system in run_sdf.columns else None
    per_query = options.pop("per_query", True)
    # Validates columns, dtypes and options on the schemas, and gives the output schema.
    out = evaluate_in_process(
        empty_polars_frame(run_sdf.schema).lazy(),
        empty_polars_frame(qrels_sdf.schema).lazy(),
        names,
        **options,
    ).collect_schema()
    spark_schema = result_schema(out)
    systems = None
    if options.get("missing") == "zero" and system is not None:
        systems = pl.from_arrow(run_sdf.select(system).distinct().toArrow())
    n = num_buckets if num_buckets is not None else _default_buckets(run_sdf)
    if n < 1:
        msg = f"num_buckets must be an int >= 1. Got {n!r} instead."
        raise ValueError(msg)
    run_cols, qrels_cols = needed_columns(options, system)
    run_sdf = run_sdf.select(*(F.col(f"`{c}`") for c in run_cols))
    qrels_sdf = qrels_sdf.select(*(F.col(f"`{c}`") for c in qrels_cols))
    bucket = F.pmod(F.hash(F.col(f"`{query}`").cast("string")), F.lit(n)).alias(BUCKET)
    scorer = partial(
        score_bucket,
        measures=names,
        systems=systems,
        options=options,
        arrow_schema=to_arrow_schema(spark_schema),
    )
    scores = (
        run_sdf.withColumn(BUCKET, bucket)
        .groupBy(BUCKET)
        .cogroup(qrels_sdf.withColumn(BUCKET, bucket).groupBy(BUCKET))
        .applyInArrow(scorer, spark_schema)
    )
    return scores if per_query else _means(scores, names, system)
