"""Input checks that run before any work, with errors that name what is wrong."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl


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
