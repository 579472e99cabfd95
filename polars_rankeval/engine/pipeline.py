"""One in-memory piece through the stages: scope -> rank -> select rows -> aggregate.

:func:`score_piece` is what every way in runs: :func:`polars_rankeval.evaluate`
on a DataFrame (one piece), on a LazyFrame (one piece per query bucket, see
:mod:`polars_rankeval.engine.buckets`), and the Dask and Spark tasks. A piece
must hold, for each of its queries, all of that query's run and qrels rows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import polars as pl

from polars_rankeval.engine.features import Features
from polars_rankeval.engine.select import judged_from_run
from polars_rankeval.engine.shape import FACT, HAS_RUN, SCORED, Judged
from polars_rankeval.measures import Context, Measure, check_fractional_grades, lowest_grade
from polars_rankeval.options import Options
from polars_rankeval.validation import check_qrels_values, check_run_values


@dataclass(frozen=True)
class Piece:
    """A scored piece: per-ranking values, and what was left out."""

    scores: pl.DataFrame
    """``[system], query`` and one Float64 column per measure, scored rankings only."""
    no_qrels: pl.DataFrame
    """``[system], query`` of the run's rankings whose query has no qrels row."""
    run_rows: int
    qrels_rows: int


def check_run_rows(run: pl.DataFrame | pl.LazyFrame, options: Options, offset: int = 0) -> None:
    """Null ids, NaN or null scores, null ranks: raise naming the first bad row
    (``offset``: the frame's first row number in the whole input)."""
    check_run_values(
        run.lazy(),
        ids=[*options.keys, options.doc],
        score=options.score if options.order == "score" else None,
        rank=options.rank if options.order == "rank" else None,
        offset=offset,
    )


def check_qrels_rows(
    qrels: pl.DataFrame | pl.LazyFrame,
    options: Options,
    offset: int = 0,
    *,
    fractional: bool = True,
) -> None:
    """Null ids or grades, grades that are not finite: raise naming the first bad row.

    Grades with a fraction pass when ``fractional`` (scoring: :func:`score_piece`
    refuses them for the measures that cannot read them); :func:`polars_rankeval.judge`
    refuses them.
    """
    ids = [options.query, options.doc]
    check_qrels_values(
        qrels.lazy(), ids=ids, relevance=options.relevance, offset=offset, fractional=fractional
    )


def check_values(
    run: pl.DataFrame | pl.LazyFrame,
    qrels: pl.DataFrame | pl.LazyFrame,
    options: Options,
    *,
    fractional: bool = True,
) -> None:
    """Both tables' rows (duplicates are found while the piece is selected)."""
    check_run_rows(run, options)
    check_qrels_rows(qrels, options, fractional=fractional)


def align_ids(
    run: pl.DataFrame, qrels: pl.DataFrame, columns: Sequence[str]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Cast id columns to String on both sides where their dtypes differ."""
    for name in columns:
        if run.schema[name] != qrels.schema[name]:
            run = run.with_columns(pl.col(name).cast(pl.String))
            qrels = qrels.with_columns(pl.col(name).cast(pl.String))
    return run, qrels


def judged_piece(
    run: pl.DataFrame,
    qrels: pl.DataFrame,
    options: Options,
    *,
    check_duplicates: bool = True,
    systems: pl.Series | None = None,
    lowest_grade: float = -math.inf,
) -> Judged:
    """Scope, rank and select: a piece's run and qrels as the judged shape, with the
    judgments of grade ``lowest_grade`` or more."""
    run, qrels = align_ids(
        run.select(options.run_columns),
        qrels.select(options.qrels_columns),
        [options.query, options.doc],
    )
    return judged_from_run(
        run,
        qrels,
        options,
        order=options.order,
        depth=options.depth,
        missing=options.missing,
        duplicates=options.duplicates,
        check=check_duplicates,
        single_precision=options.single_precision,
        systems=systems,
        lowest_grade=lowest_grade,
    )


def aggregate(shape: Judged, measures: Sequence[Measure], context: Context) -> pl.DataFrame:
    """Every measure of every scored ranking: ``keys`` and one Float64 column per measure."""
    features, values = formulas(tuple(measures), context)
    per_ranking = features.evaluate(shape, values)
    return shape.keys.hstack(per_ranking).filter(shape.rankings[SCORED])


@lru_cache(maxsize=64)
def formulas(
    measures: tuple[Measure, ...], context: Context
) -> tuple[Features, dict[str, pl.Expr]]:
    """The measures' formulas and the features they read, built once per measure set
    (a bucketed run, or a job over many files, scores many pieces with the same set;
    :meth:`Features.evaluate` leaves them unchanged)."""
    features = Features(context)
    return features, {str(m): m.formula(features) for m in measures}


def score_piece(
    run: pl.DataFrame,
    qrels: pl.DataFrame,
    measures: Sequence[Measure],
    options: Options,
    *,
    check_duplicates: bool = True,
    systems: pl.Series | None = None,
) -> Piece:
    """Score one piece (see the module docstring): values and the unscored rankings.

    Only the judged rows the measures read are selected (:func:`lowest_grade`);
    grades with a fraction are read by the measures that take them, from grade 0 up
    (:func:`check_fractional_grades`).
    """
    lowest = lowest_grade(measures, options.context)
    if check_fractional_grades(qrels, options.relevance, [options.query, options.doc], measures):
        lowest = min(lowest, 0.0)
    shape = judged_piece(
        run,
        qrels,
        options,
        check_duplicates=check_duplicates,
        systems=systems,
        lowest_grade=lowest,
    )
    run_rankings = shape.rankings[HAS_RUN]
    no_qrels = shape.keys.filter(run_rankings & shape.rankings[FACT].is_null())
    scores = aggregate(shape, measures, options.context)
    return Piece(scores, no_qrels, run.height, qrels.height)
