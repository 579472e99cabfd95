"""Input checks that run before any work, with errors that name what is wrong."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from polars_rankeval._typing import FrameT, Order


def check_columns(schema: pl.Schema, required: Sequence[str], table: str) -> None:
    """Raise if any required column is missing from ``schema``.

    Examples
    --------
    >>> check_columns(pl.Schema({"query": pl.String}), ["query", "doc"], "run")
    Traceback (most recent call last):
    ...
    ValueError: run is missing column 'doc' (it has: 'query'). Pass the column name ...
    """
    for name in required:
        if name not in schema:
            have = ", ".join(repr(c) for c in schema.names())
            msg = (
                f"{table} is missing column {name!r} (it has: {have}). "
                f'Pass the column name as a keyword, e.g. doc="docno".'
            )
            raise ValueError(msg)


def check_score_dtype(schema: pl.Schema, score: str) -> None:
    """Raise if the score column is not numeric."""
    dtype = schema[score]
    if not dtype.is_numeric():
        msg = (
            f"run column {score!r} must be numeric (higher is better). Got dtype {dtype}. "
            f"Cast it first, e.g. pl.col({score!r}).cast(pl.Float64)."
        )
        raise TypeError(msg)


def check_grade_dtype(schema: pl.Schema, relevance: str) -> None:
    """Raise if the relevance column cannot hold integer grades."""
    dtype = schema[relevance]
    if not (dtype.is_integer() or dtype.is_float() or dtype == pl.Boolean):
        msg = f"qrels column {relevance!r} must hold integer relevance grades. Got dtype {dtype}."
        raise TypeError(msg)


def check_duplicates(
    frame: pl.LazyFrame,
    keys: Sequence[str],
    table: str,
    *,
    keep_best: str = "error",
    score: str | None = None,
) -> None:
    """Raise if ``keys`` are not unique in ``frame`` (unless ``keep_best``)."""
    if keep_best == "keep_best":
        return
    dup = frame.group_by(keys).agg(pl.len().alias("_n")).filter(pl.col("_n") > 1).head(3).collect()
    if dup.height:
        first = dup.row(0, named=True)
        where = ", ".join(f"{k}={first[k]!r}" for k in keys)
        msg = f"{table} has duplicate rows for ({where}) ({first['_n']} rows)."
        if table == "run":
            msg += (
                " trec_eval refuses such runs; pass duplicates='keep_best'"
                " to keep the best-scored row."
            )
        raise ValueError(msg)


def prepare_inputs(
    run: FrameT,
    qrels: FrameT,
    *,
    query: str,
    doc: str,
    score: str,
    relevance: str,
    rank: str,
    system: str | None,
    order: Order,
    duplicates: str,
) -> str | None:
    """Validate run and qrels before any work; return the system column in use (or None).

    Columns, dtypes and options are checked on the schemas (free for a
    LazyFrame); duplicate (query, doc) rows are checked when the run is a
    DataFrame, since that needs a pass over the data.
    """
    if order not in ("score", "rank", "presorted"):
        msg = f"order must be 'score', 'rank' or 'presorted'. Got {order!r} instead."
        raise ValueError(msg)
    if duplicates not in ("error", "keep_best"):
        msg = f"duplicates must be 'error' or 'keep_best'. Got {duplicates!r} instead."
        raise ValueError(msg)
    run_schema = run.lazy().collect_schema()
    qrels_schema = qrels.lazy().collect_schema()
    system = system if system is not None and system in run_schema else None
    needed = [query, doc, *{"score": [score], "rank": [rank], "presorted": []}[order]]
    check_columns(run_schema, needed, "run")
    check_columns(qrels_schema, [query, doc, relevance], "qrels")
    if order == "score":
        check_score_dtype(run_schema, score)
    check_grade_dtype(qrels_schema, relevance)
    if isinstance(run, pl.DataFrame):
        keys = [query, doc] if system is None else [system, query, doc]
        check_duplicates(run.lazy(), keys, "run", keep_best=duplicates, score=score)
        check_duplicates(qrels.lazy(), [query, doc], "qrels")
    return system
