"""Evaluate Spark DataFrames: Polars inside Arrow UDFs over query-hashed buckets.

Both tables get a bucket column, ``pmod(hash(string(query)), num_buckets)``
(Spark's Murmur3 hash, computed by the executors, so every one agrees), and
are cogrouped by it: one call of an Arrow UDF receives all run rows and all
qrels rows of a bucket's queries and scores them with
:func:`polars_rankeval.pieces.score`, the piece scoring Dask runs too.
Every query lives in exactly one bucket, so the values equal the in-process
ones query by query. ``per_query=False`` combines the per-query values in
Spark, lazily, as :func:`polars_rankeval.mean_scores` does.

The measures of lists (``train=``, ``catalog=``, ``item_features=``) are scored in the
same UDF, with the side inputs reduced once on the driver; :func:`evaluate_catalog`
brings each bucket's sums of the catalogue measures to the driver, which adds them.
:func:`evaluate` and :func:`evaluate_diversity` share one driver (:func:`_cogrouped`).

``pyspark`` is imported only when :func:`evaluate` is called
(``pip install polars-rankeval[spark]``); the executors need Polars and
polars_rankeval installed in the Python they run (``PYSPARK_PYTHON``).
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import polars as pl

from polars_rankeval import diversity, pieces
from polars_rankeval._typing import Order
from polars_rankeval.call import check_needs
from polars_rankeval.diversity import DiversityMeasure
from polars_rankeval.engine.outcome import raise_absent_queries
from polars_rankeval.engine.scope import absent_rankings
from polars_rankeval.evaluate import options_query
from polars_rankeval.measures import MIN_GEO_MEAN, Measure
from polars_rankeval.recsys import (
    CatalogJob,
    catalog_piece,
    catalog_values,
    prepare_catalog,
    splittable,
)
from polars_rankeval.side import Side, check_side
from polars_rankeval.validation import check_int

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column
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


def _from_arrow(table: pa.Table) -> pl.DataFrame:
    """An Arrow table as a Polars DataFrame, without a copy."""
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)  # a table gives a frame (a Series comes of an array)
    return frame


def polars_schema(schema: StructType) -> pl.Schema:
    """The Polars dtypes the UDF sees for a Spark schema."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return _from_arrow(to_arrow_schema(schema).empty_table()).schema


def result_schema(schema: pl.Schema) -> StructType:
    """Spark schema of a per-query Polars frame (ids keep their type, measures double)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    arrow = pl.DataFrame(schema=schema).to_arrow(compat_level=pl.CompatLevel.oldest())
    return from_arrow_schema(arrow.schema)


def score_bucket(
    key: tuple[Any, ...],
    run: pa.Table,
    qrels: pa.Table,
    *,
    job: pieces.Job,
    out: pa.Schema,
    side: Side | None = None,
) -> pa.Table:
    """The Arrow UDF: one bucket's run and qrels rows in, its per-query values out (the
    measures of lists over every list of the bucket, with the reduced ``side``)."""
    run_df, qrels_df = _from_arrow(run).drop(BUCKET), _from_arrow(qrels).drop(BUCKET)
    where = f"Spark bucket {key[0].as_py()}, whose rows are numbered from 0"
    pieces.check_rows(run_df, job, "run", where=where)
    pieces.check_rows(qrels_df, job, "qrels", where=where)
    piece = pieces.score(run_df, qrels_df, job, side)
    # missing="error", checked on the driver: absent only if the data changed
    raise_absent_queries(piece.absent)
    scores = pieces.values(piece, job)
    return scores.to_arrow(compat_level=pl.CompatLevel.oldest()).cast(out)


def _polars(source: Any, *, ids: bool = False) -> Any:
    """A side input as Polars reads it: a Spark DataFrame collected to the driver (when a
    measure reads it: lazily, by :func:`polars.defer`), a Parquet path scanned; anything
    else (a frame; for ``ids``, a list of item ids) as given."""
    from pyspark.sql import DataFrame as SparkDataFrame

    if isinstance(source, SparkDataFrame):
        sdf = source
        return pl.defer(lambda: _from_arrow(sdf.toArrow()), schema=polars_schema(sdf.schema))
    if isinstance(source, str | os.PathLike):
        return pl.scan_parquet(os.fspath(source))
    if not ids and isinstance(source, list) and source and all(isinstance(p, str) for p in source):
        return pl.scan_parquet(source)
    return source


def _default_buckets(run_sdf: SparkDataFrame) -> int:
    value = run_sdf.sparkSession.conf.get("spark.sql.shuffle.partitions", "200")
    return int(value) if value and value.isdigit() else 200


def _combined(name: str, kind: str) -> Column:
    """One measure over queries, as :func:`polars_rankeval.mean_scores` combines it."""
    from pyspark.sql import functions as F  # noqa: N812

    value = F.col(f"`{name}`")
    if kind == "gmean":
        return F.exp(F.avg(F.log(F.greatest(value, F.lit(MIN_GEO_MEAN))))).alias(name)
    if kind == "sum":
        return F.sum(value).cast("double").alias(name)
    return F.avg(value).alias(name)


def _means(scores: SparkDataFrame, job: pieces.Job) -> SparkDataFrame:
    """Per segment and system, ``n_queries`` and every measure over queries: the trec_eval
    ``all`` line."""
    from pyspark.sql import functions as F  # noqa: N812

    aggs = [F.count(F.lit(1)).alias("n_queries")]
    aggs += [_combined(name, kind) for name, kind in pieces.mean_kinds(job)]
    groups = [F.col(f"`{c}`") for c in job.options.keys if c != job.options.query]
    return scores.groupBy(*groups).agg(*aggs) if groups else scores.agg(*aggs)


def _buckets(run_sdf: SparkDataFrame, num_buckets: int | None) -> int:
    """The number of buckets, checked (default: ``spark.sql.shuffle.partitions``)."""
    n = num_buckets if num_buckets is not None else _default_buckets(run_sdf)
    check_int("num_buckets", n, minimum=1)
    return n


def _columns(sdf: SparkDataFrame, columns: list[str]) -> SparkDataFrame:
    """Only the columns the tasks read, before the rows move."""
    from pyspark.sql import functions as F  # noqa: N812

    return sdf.select(*(F.col(f"`{c}`") for c in columns))


def _bucket(query: str, n: int) -> Column:
    """Each row's bucket: ``pmod(hash(string(query)), n)``, Spark's own Murmur3."""
    from pyspark.sql import functions as F  # noqa: N812

    return F.pmod(F.hash(F.col(f"`{query}`").cast("string")), F.lit(n)).alias(BUCKET)


def _arrow(schema: StructType) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema)


def _cogrouped(
    run_sdf: SparkDataFrame,
    qrels_sdf: SparkDataFrame,
    query: str,
    n: int,
    schema: StructType,
    udf: Callable[..., pa.Table],
) -> SparkDataFrame:
    """The one driver of :func:`evaluate` and :func:`evaluate_diversity`: both tables
    bucketed by query and cogrouped; ``udf(key, run, qrels, out=)`` scores each bucket
    (``out``: the Arrow schema of ``schema``, the rows it returns). Lazy."""
    out = _arrow(schema)

    def scorer(key: tuple[Any, ...], run: pa.Table, qrels: pa.Table) -> pa.Table:
        return udf(key, run, qrels, out=out)

    bucket = _bucket(query, n)
    return (
        run_sdf.withColumn(BUCKET, bucket)
        .groupBy(BUCKET)
        .cogroup(qrels_sdf.withColumn(BUCKET, bucket).groupBy(BUCKET))
        .applyInArrow(scorer, schema)
    )


def _absent(
    run_sdf: SparkDataFrame,
    qrels_sdf: SparkDataFrame,
    keys: list[str],
    *,
    query: str,
    system: str | None,
    by: Sequence[str],
) -> pl.DataFrame:
    """The rankings the run lacks (:func:`~polars_rankeval.engine.scope.absent_rankings`),
    from the run's distinct ranking keys and the qrels' queries brought to the driver
    (one small job, now)."""
    from pyspark.sql import functions as F  # noqa: N812

    run_keys = run_sdf.select(*(F.col(f"`{k}`") for k in keys)).distinct()
    queries = qrels_sdf.select(F.col(f"`{query}`").cast("string").alias(query)).distinct()
    return absent_rankings(
        _from_arrow(run_keys.toArrow()),
        _from_arrow(queries.toArrow()).to_series(),
        query=query,
        system=system,
        by=by,
    )


def evaluate(
    run_sdf: SparkDataFrame,
    qrels_sdf: SparkDataFrame,
    measures: str | Measure | Iterable[str | Measure],
    *,
    num_buckets: int | None = None,
    train: Any = None,
    catalog: Any = None,
    item_features: Any = None,
    **evaluate_options: Any,
) -> SparkDataFrame:
    """Score a Spark run against Spark qrels: per-query values as a Spark DataFrame.

    Both tables are bucketed by a hash of the query id and cogrouped; an Arrow
    UDF scores each bucket with Polars inside the executors, as
    :func:`polars_rankeval.evaluate` scores a DataFrame. Lazy as Spark is:
    nothing is scored until an action on the result.

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
        executor's memory (about 4x their size while they are scored).
        Default: ``spark.sql.shuffle.partitions``.
    train, catalog, item_features
        The side inputs of the measures of lists (``Novelty``, ``ARP``, ``ILD``,
        ``Serendipity``, ...), as for :func:`polars_rankeval.evaluate`: a Spark
        DataFrame, a Polars, pandas or Arrow frame, a LazyFrame or a Parquet path
        (``catalog``: also a list of item ids). Each that a measure reads is
        reduced once on the driver (a Spark DataFrame is collected to it, as Arrow,
        to be reduced: the training log's user and item columns) to the per-item
        table and the numbers the measures read; these travel with the UDF, and
        each bucket scores its lists with them, as in process.
    **evaluate_options
        Keyword options of :func:`polars_rankeval.evaluate` (``query``, ``doc``,
        ``score``, ``relevance``, ``system``, ``rank``, ``rel_level``, ``order``,
        ``depth``, ``missing``, ``duplicates``, ``per_query``, ``validate``,
        ``conventions``), except ``order="presorted"`` and conventions that order
        equal scores by input order (``"ranx"``, ``"spark"``; ``"sklearn"`` and
        ``"torchmetrics"`` but for tie-averaged measures): a shuffle does not keep
        row order.

    Returns
    -------
    pyspark.sql.DataFrame
        ``[system], query`` (as typed in the run; as strings when run and qrels
        type them differently) and one double column per measure, named
        canonically, in no particular row order. With ``per_query=False``: per
        system, ``n_queries`` (a long) and each measure combined over queries as
        :func:`polars_rankeval.mean_scores` does (geometric mean for ``GMAP`` and
        ``GMBpref``, sums for the counts, arithmetic means otherwise), in Spark.

    Notes
    -----
    Run queries with no qrels row are left out, as by
    :func:`polars_rankeval.evaluate`, but no warning is raised (the scoring runs
    on the executors, later). Count them with an anti join:
    ``run_sdf.select("query").distinct().join(qrels_sdf, "query", "left_anti").count()``.
    Duplicate (query, doc) rows, null ids and NaN scores raise in the executor,
    which fails the job with the in-process message (row numbers count within
    the bucket). Two options run one small Spark job when this function is
    called: ``missing="zero"`` with a system column collects the distinct
    systems (so that every bucket scores every system), and ``missing="error"``
    looks for qrels queries absent from the run, raising as in-process.

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

    run_schema, qrels_schema = polars_schema(run_sdf.schema), polars_schema(qrels_sdf.schema)
    query = options_query(evaluate_options.get("query", "query"))
    doc = options_query(evaluate_options.get("doc", "doc"))
    given = check_side(train=_polars(train), catalog=_polars(catalog, ids=True),
                       item_features=_polars(item_features), query=query, doc=doc)  # fmt: skip
    job = pieces.prepare(run_schema, qrels_schema, measures, evaluate_options,
                         given=frozenset(given))  # fmt: skip
    if job.options.order == "presorted":
        msg = (
            "order='presorted' cannot be used on Spark: the shuffle that groups each "
            "query's rows does not keep their order. Rank by order='score' or order='rank'."
        )
        raise ValueError(msg)
    conventions = job.options.conventions
    averaged = all(m.get("ties") == "average" for m in job.parsed)
    if conventions.order_ties == "input" and job.options.order != "presorted" and not averaged:
        msg = (
            f"conventions {conventions.name!r} order equal scores by input order, which the "
            "shuffle that groups each query's rows does not keep: score with "
            "polars_rankeval.evaluate, or break ties by doc id "
            "(dataclasses.replace(conventions, ties='doc_desc'))."
        )
        raise ValueError(msg)
    n = _buckets(run_sdf, num_buckets)
    spark_schema = result_schema(pieces.output_columns(job, run_schema, qrels_schema))
    run_sdf = _columns(run_sdf, pieces.columns(job, "run"))
    qrels_sdf = _columns(qrels_sdf, pieces.columns(job, "qrels"))
    if job.needs_systems:
        systems = _from_arrow(run_sdf.select(f"`{job.options.system}`").distinct().toArrow())
        job = job.with_systems([systems.to_series()])
    o = job.options
    if o.missing == "error":
        keys = [*o.by, *([o.system] if o.system else []), o.query]
        raise_absent_queries(_absent(run_sdf, qrels_sdf, keys, query=o.query, system=o.system,
                                     by=o.by))  # fmt: skip
    lists = [m for m in job.parsed if m.of_lists]
    side = pieces.reduce_side_inputs(lists, given, query=o.query, doc=o.doc) if lists else None
    udf = partial(score_bucket, job=job, side=side)
    scores = _cogrouped(run_sdf, qrels_sdf, o.query, n, spark_schema, udf)
    return scores if job.per_query else _means(scores, job)


def evaluate_diversity(
    run_sdf: SparkDataFrame,
    qrels_sdf: SparkDataFrame,
    measures: str | DiversityMeasure | Iterable[str | DiversityMeasure],
    *,
    num_buckets: int | None = None,
    **options: Any,
) -> SparkDataFrame:
    """Diversity measures of a Spark run against Spark subtopic qrels, per ranking, as a
    Spark DataFrame: :func:`polars_rankeval.evaluate_diversity` in Arrow UDFs over
    query-hashed buckets, as :func:`evaluate` scores the other measures.

    Parameters
    ----------
    run_sdf
        ``query, doc, score`` (optionally ``system`` and segment columns).
    qrels_sdf
        ``query, subtopic, doc, relevance``.
    measures
        Diversity measure names, as for :func:`polars_rankeval.evaluate_diversity`.
    num_buckets
        As for :func:`evaluate`.
    **options
        Keyword options of :func:`polars_rankeval.evaluate_diversity`: ``query``,
        ``doc``, ``score``, ``subtopic``, ``relevance``, ``system``, ``by``, ``depth``,
        ``missing``, ``validate``.

    Returns
    -------
    SparkDataFrame
        ``[by], [system], query`` and one double column per measure, in no particular
        row order. Lazy, but for ``missing="zero"`` or ``"error"``: the run's distinct
        ranking keys and the qrels' queries are brought to the driver first (one small
        job), to find the rankings the run lacks; ``"zero"`` adds them, scored 0, and
        ``"error"`` raises naming them. Run queries without qrels are left out, with no
        warning (nothing is computed until an action).

    Examples
    --------
    >>> import polars_rankeval.spark as prs
    >>> prs.evaluate_diversity(run, subtopic_qrels, ["alpha_nDCG@20"]).show()  # doctest: +SKIP
    """
    _import_pyspark()

    run_schema, qrels_schema = polars_schema(run_sdf.schema), polars_schema(qrels_sdf.schema)
    job = diversity.prepare(run_schema, qrels_schema, measures, options)
    n = _buckets(run_sdf, num_buckets)
    output = job.output_schema(run_schema)
    spark_schema = result_schema(output)
    run_sdf = _columns(run_sdf, job.run_columns)
    qrels_sdf = _columns(qrels_sdf, job.qrels_columns)
    absent = None
    if job.missing != "drop":
        absent = _absent(run_sdf, qrels_sdf, job.keys, query=job.query, system=job.system,
                         by=job.by)  # fmt: skip
    udf = partial(score_diversity_bucket, job=job)
    scores = _cogrouped(run_sdf, qrels_sdf, job.query, n, spark_schema, udf)
    if absent is None:
        return scores
    if job.missing == "error":
        raise_absent_queries(absent)
        return scores
    zeros = absent.with_columns(pl.lit(0.0).alias(str(m)) for m in job.measures)
    zeros = zeros.select(pl.col(c).cast(t) for c, t in output.items())
    arrow = zeros.to_arrow(compat_level=pl.CompatLevel.oldest()).cast(_arrow(spark_schema))
    return scores.unionByName(run_sdf.sparkSession.createDataFrame(arrow, schema=spark_schema))


def score_diversity_bucket(
    key: tuple[Any, ...], run: pa.Table, qrels: pa.Table, *, job: diversity.Job, out: pa.Schema
) -> pa.Table:
    """The Arrow UDF of :func:`evaluate_diversity`: one bucket's rows in, its values out."""
    run_df, qrels_df = _from_arrow(run).drop(BUCKET), _from_arrow(qrels).drop(BUCKET)
    where = f"Spark bucket {key[0].as_py()}, whose rows are numbered from 0"
    diversity.check_run(run_df, job, where=where)
    diversity.check_qrels(qrels_df, job, where=where)
    scores = diversity.score(run_df, qrels_df, job).scores
    return scores.to_arrow(compat_level=pl.CompatLevel.oldest()).cast(out)


def evaluate_catalog(
    recs_sdf: SparkDataFrame,
    measures: str | Measure | Iterable[str | Measure],
    *,
    train: Any = None,
    catalog: Any = None,
    item_features: Any = None,
    by: str | Sequence[str] | None = None,
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    rank: str = "rank",
    system: str | None = "system",
    order: Order = "score",
    conventions: str | None = None,
    num_buckets: int | None = None,
) -> pl.DataFrame:
    """The measures of a system's recommendations as a whole from a Spark DataFrame:
    :func:`polars_rankeval.evaluate_catalog`, user-partitioned as
    :func:`polars_rankeval.dask.evaluate_catalog` is.

    The recommendations are bucketed by a hash of the user id; an Arrow UDF takes, over
    each bucket's lists, each measure's sums
    (:class:`~polars_rankeval.metrics.exposure.Split`: the items' exposure, the
    per-item sums of personalization's user weights, the users shown an item), which
    come back to the driver (one row per bucket, a small table per measure); the
    driver adds them and computes the values, as in process.

    Parameters
    ----------
    recs_sdf
        ``[system], query, doc, score`` (or ``rank``).
    measures
        Catalogue measures, as for :func:`polars_rankeval.evaluate_catalog`.
    train, catalog, item_features
        As for :func:`evaluate`: reduced once on the driver (``train`` to its users and
        their number, ``catalog`` to its number of items).
    by, query, doc, score, rank, system, order, conventions
        As for :func:`polars_rankeval.evaluate_catalog` (but ``order="presorted"``: the
        shuffle does not keep row order).
    num_buckets
        As for :func:`evaluate`.

    Returns
    -------
    pl.DataFrame
        ``[*by], [system]`` and one Float64 column per measure, sorted by the keys: a
        Polars frame, computed when called (one row per system and segment).

    Examples
    --------
    >>> import polars_rankeval.spark as prs
    >>> prs.evaluate_catalog(recs, ["CatalogCoverage@10", "Gini@10"],
    ...                      catalog=items, order="rank")  # doctest: +SKIP
    """
    _import_pyspark()
    job = prepare_catalog(polars_schema(recs_sdf.schema), measures, by=by, query=query, doc=doc,
                          score=score, rank=rank, system=system, order=order,
                          conventions=conventions)  # fmt: skip
    if order == "presorted":
        msg = (
            "order='presorted' cannot be used on Spark: the shuffle that groups each "
            "user's rows does not keep their order. Rank by order='score' or order='rank'."
        )
        raise ValueError(msg)
    parsed = job.parsed
    given = check_side(train=_polars(train), catalog=_polars(catalog, ids=True),
                       item_features=_polars(item_features), query=query, doc=doc)  # fmt: skip
    check_needs(parsed, frozenset(given))
    splittable(parsed)
    n = _buckets(recs_sdf, num_buckets)
    side = pieces.reduce_side_inputs(parsed, given, query=query, doc=doc)

    def udf(key: tuple[Any, ...], recs: pa.Table) -> pa.Table:
        return catalog_bucket(key, recs, job=job, side=side)

    parts = (
        _columns(recs_sdf, job.columns)
        .withColumn(BUCKET, _bucket(query, n))
        .groupBy(BUCKET)
        .applyInArrow(udf, "piece binary")
    )
    found = [pickle.loads(p) for p in parts.toArrow().column("piece").to_pylist()]
    if not found:  # no row at all: score the empty recommendations in one piece
        empty = pl.DataFrame(schema={c: polars_schema(recs_sdf.schema)[c] for c in job.columns})
        found = [catalog_piece(empty, job, side)]
    return catalog_values(found, job, side)


def catalog_bucket(
    key: tuple[Any, ...], recs: pa.Table, *, job: CatalogJob, side: Side
) -> pa.Table:
    """The Arrow UDF of :func:`evaluate_catalog`: one bucket's recommendations in, their
    :class:`~polars_rankeval.recsys.CatalogPiece` out, pickled (one row)."""
    import pyarrow as pa

    piece = catalog_piece(_from_arrow(recs).drop(BUCKET), job, side)
    return pa.table({"piece": pa.array([pickle.dumps(piece)], type=pa.binary())})
