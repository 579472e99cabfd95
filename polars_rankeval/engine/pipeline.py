"""One in-memory piece through the stages: scope -> rank -> select rows -> aggregate.

:func:`score_piece` is what every way in runs: :func:`polars_rankeval.evaluate`
on a DataFrame (one piece), on a LazyFrame (one piece per query bucket, see
:mod:`polars_rankeval.engine.buckets`), and the Dask and Spark tasks. A piece
must hold, for each of its queries, all of that query's run and qrels rows.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import lru_cache, partial

import polars as pl

from polars_rankeval._typing import Empty, Ties
from polars_rankeval.conventions import Conventions
from polars_rankeval.engine.features import Features, QueryFacts
from polars_rankeval.engine.join import QrelsKeys, qrels_keys
from polars_rankeval.engine.plan import (
    Context,
    Options,
    Scored,
    by_pass,
    check_fractional_grades,
    lowest_grade,
    reads_ties,
)
from polars_rankeval.engine.select import (
    EVERY_ROW,
    QrelsSide,
    Reads,
    judged_from_run,
    qrels_side,
)
from polars_rankeval.engine.shape import FACT, HAS_RUN, SCORED, Judged
from polars_rankeval.validation import check_qrels_values, check_run_values

NO_RELEVANT = "__rk_no_relevant"
"""Per ranking: no relevant judgment (conventions' ``empty_queries`` other than zero)."""


@dataclass(frozen=True)
class Piece:
    """A scored piece: per-ranking values, and what was left out."""

    scores: pl.DataFrame
    """``[system], query`` and one Float64 column per measure, scored rankings only."""
    no_qrels: pl.DataFrame
    """``[system], query`` of the run's rankings whose query has no qrels row."""
    run_rows: int
    qrels_rows: int


def check_run_rows(run: pl.DataFrame, options: Options, offset: int = 0) -> None:
    """Null ids, NaN or null scores, null ranks: raise naming the first bad row
    (``offset``: the frame's first row number in the whole input)."""
    check_run_values(
        run,
        ids=[*options.keys, options.doc],
        score=options.score if options.order == "score" else None,
        rank=options.rank if options.order == "rank" else None,
        offset=offset,
    )


def check_qrels_rows(
    qrels: pl.DataFrame,
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
        qrels, ids=ids, relevance=options.relevance, offset=offset, fractional=fractional
    )


def check_values(
    run: pl.DataFrame,
    qrels: pl.DataFrame,
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


def piece_columns(
    run: pl.DataFrame, qrels: pl.DataFrame, options: Options
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The columns the engine reads, ids aligned (:func:`align_ids`): the run's ranking
    keys in one chunk (:func:`keys_in_one_chunk`), and the qrels in one chunk.

    The qrels are hashed, grouped, filtered and gathered from: read in batches (a
    LazyFrame, a bucket read back) at 1.9M rows in 4 chunks, they cost 30-60 ms
    more to score than in one, and the copy costs 5 ms.
    """
    qrels = qrels.select(options.qrels_columns).rechunk()
    return align_ids(
        keys_in_one_chunk(run.select(options.run_columns), options.keys),
        qrels.with_columns(numeric_grades(qrels[options.relevance])),
        [options.query, options.doc],
    )


def numeric_grades(grades: pl.Series) -> pl.Series:
    """``grades`` as numbers: a Boolean flag (relevant or not) as grade 1 or 0 (Int64);
    numbers pass unchanged.

    Every scored piece (a DataFrame call, a bucket, a Dask or Spark task) reads its
    qrels through :func:`piece_columns`, which applies it, so that no comparison of
    grades in the engine meets a Boolean column.

    Examples
    --------
    >>> numeric_grades(pl.Series("relevance", [True, False])).to_list()
    [1, 0]
    >>> numeric_grades(pl.Series("relevance", [2, 0], dtype=pl.Int8)).dtype
    Int8
    """
    return grades.cast(pl.Int64) if grades.dtype == pl.Boolean else grades


def judged_piece(
    run: pl.DataFrame,
    qrels: pl.DataFrame,
    options: Options,
    *,
    check_duplicates: bool = True,
    systems: pl.Series | None = None,
    reads: Reads = EVERY_ROW,
    tie_spans: bool = False,
    judgment_order: bool = False,
    judged_only: bool = False,
    side: Callable[[], QrelsSide] | None = None,
    concurrent: bool = True,
    join_keys: Callable[[], QrelsKeys] | None = None,
) -> Judged:
    """Scope, rank and select: a piece's run and qrels, as :func:`piece_columns` gives
    them, as the judged shape, with the judged rows and judgments ``reads`` keeps
    (and each row's tie group with ``tie_spans``, its qrels row and the sign of its score
    with ``judgment_order``; without the unjudged rows with ``judged_only``).

    ``side`` and ``join_keys`` give the qrels' parts
    (:func:`~polars_rankeval.engine.select.qrels_side`,
    :func:`~polars_rankeval.engine.join.qrels_keys`) when the caller makes them; else
    they are made here when the engine asks for them (see ``concurrent`` in
    :func:`~polars_rankeval.engine.select.match_and_rank`).
    """
    if side is None:
        side = partial(qrels_side, qrels, options, reads=reads)
    if join_keys is None:
        join_keys = partial(qrels_keys, qrels, options, reads.matched, check=check_duplicates)
    return judged_from_run(
        run,
        qrels,
        options,
        side,
        join_keys,
        order=options.order,
        depth=options.depth,
        missing=options.missing,
        duplicates=options.duplicates,
        check=check_duplicates,
        single_precision=options.single_precision,
        systems=systems,
        tie_spans=tie_spans,
        judgment_order=judgment_order,
        judged_only=judged_only,
        concurrent=concurrent,
    )


def keys_in_one_chunk(frame: pl.DataFrame, keys: Sequence[str]) -> pl.DataFrame:
    """``frame`` with its ``keys`` columns copied into one chunk where they have several.

    A frame read from Parquet has a chunk per row group, and grouping rows into
    rankings on chunked keys took 10% of a whole-catalogue call at 1M rows; the
    keys (short ids) are a small part of the frame, so only they are copied.

    Examples
    --------
    >>> parts = pl.concat([pl.DataFrame({"q": ["a"] * 100, "d": ["x"] * 100})] * 2, rechunk=False)
    >>> parts["q"].n_chunks(), keys_in_one_chunk(parts, ["q"])["q"].n_chunks()
    (2, 1)
    """
    chunked = [frame[k].rechunk() for k in keys if frame[k].n_chunks() > 1]
    return frame.with_columns(chunked) if chunked else frame


def measure_reads(
    measures: Sequence[Scored],
    context: Context,
    conventions: Conventions,
    *,
    fractional: bool = False,
) -> Reads:
    """The judged rows the measures read (:class:`~polars_rankeval.engine.select.Reads`).

    From the lowest grade any of them reads (:func:`lowest_grade`), lowered to the
    relevance level where the conventions tell the queries without a relevant
    document apart, and to 0 for ``fractional`` grades (the gain measures read them
    from 0). The rows under it are counted when a formula reads such counts, but
    not under ``judgments="retrieved"``: each ranking's judgments are then its own
    rows, so every row is kept.

    Examples
    --------
    >>> from polars_rankeval.conventions import get_conventions
    >>> from polars_rankeval.measures import parse
    >>> measure_reads([parse("AP"), parse("Bpref")], Context(), get_conventions(None))
    Reads(rows=1.0, counted=True)
    """
    lowest = lowest_grade(measures, context)
    if conventions.empty_queries != "zero":
        lowest = min(lowest, context.rel_level)
    if fractional:
        lowest = min(lowest, 0.0)
    features, _ = formulas(tuple(measures), context, conventions.empty_queries != "zero")
    if not features.counts_left_out or lowest == -math.inf:
        return Reads(lowest)
    if conventions.judgments == "retrieved":
        return EVERY_ROW
    return Reads(lowest, counted=True)


def aggregate(
    shape: Judged,
    measures: Sequence[Scored],
    context: Context,
    empty: Empty = "zero",
    facts: QueryFacts | None = None,
    *,
    concurrent: bool = False,
    absent_zero: bool = False,
) -> pl.DataFrame:
    """Every measure of every scored ranking: ``keys`` and one Float64 column per measure.

    ``empty`` says what a ranking without a relevant judgment (at the context's
    level) gets: its values (``"zero"``), 1 on every measure but the counts
    (``"one"``), no row (``"skip"``), or an error naming it (``"error"``).
    ``facts``: the per-query features of ``shape.judgments``, when already computed
    (:meth:`~polars_rankeval.engine.features.Features.query_facts`).
    ``concurrent``: see :meth:`~polars_rankeval.engine.features.Features.evaluate`.
    ``absent_zero``: a ranking added for a query the run lacks scores 0 on every
    measure (the conventions' ``absent_values="zero"``).
    """
    features, values = formulas(tuple(measures), context, empty != "zero")
    per_ranking = features.evaluate(shape, values, facts, concurrent=concurrent)
    has_run = shape.rankings[HAS_RUN]
    if absent_zero and not has_run.all():
        names = [str(m) for m in measures]
        per_ranking = per_ranking.with_columns(
            pl.when(has_run).then(pl.col(names)).otherwise(0.0).name.keep()
        )
    scored = shape.keys.hstack(per_ranking).filter(shape.rankings[SCORED])
    keys = shape.keys.columns
    for measure in measures:  # the values a measure refuses, named by their rankings
        # picked eagerly: a select per measure (a query plan each) took 7 ms of all_trec at 1M
        measure.check_values(scored[[*keys, str(measure)]])
    if empty == "zero":
        return scored
    return empty_rankings(scored, [str(m) for m in measures if not m.summed], empty)


def empty_rankings(scored: pl.DataFrame, averaged: Sequence[str], empty: Empty) -> pl.DataFrame:
    """Apply ``empty`` to the rankings whose :data:`NO_RELEVANT` flag is set (and drop it)."""
    flag = pl.col(NO_RELEVANT)
    if empty == "error" and scored[NO_RELEVANT].any():
        where = scored.filter(flag).drop(NO_RELEVANT).drop(averaged).row(0, named=True)
        msg = (
            f"A query has no relevant document ({where}) and empty_queries='error': "
            f"pass empty_queries='zero', 'one' or 'skip' to score it."
        )
        raise ValueError(msg)
    if empty == "skip":
        scored = scored.filter(~flag)
    elif empty == "one":
        scored = scored.with_columns(
            pl.when(flag).then(1.0).otherwise(pl.col(name)).alias(name) for name in averaged
        )
    return scored.drop(NO_RELEVANT)


@lru_cache(maxsize=64)
def formulas(
    measures: tuple[Scored, ...], context: Context, flag_empty: bool = False
) -> tuple[Features, dict[str, pl.Expr]]:
    """The measures' formulas and the features they read, built once per measure set
    (a bucketed run, or a job over many files, scores many pieces with the same set;
    :meth:`Features.evaluate` leaves them unchanged). ``flag_empty`` adds the
    :data:`NO_RELEVANT` flag of each ranking."""
    features = Features(context)
    values = {str(m): m.formula(features) for m in measures}
    if flag_empty:
        values[NO_RELEVANT] = features.nrel(context.rel_level) == 0
    return features, values


def score_piece(
    run: pl.DataFrame,
    qrels: pl.DataFrame,
    measures: Sequence[Scored],
    options: Options,
    *,
    check_duplicates: bool = True,
    systems: pl.Series | None = None,
    concurrent: bool = True,
) -> Piece:
    """Score one piece (see the module docstring): values and the unscored rankings.

    Measures that read equal scores in an order of their own (:attr:`Scored.tie_order`:
    cwl_eval's under ``conventions="ir_measures"``, ``ties=doc_asc`` under conventions
    that keep the row order) or the judged documents only (:attr:`Scored.judged_only`)
    are scored in a pass of their own over the same piece, ranked so
    (:func:`score_in_order`); the values of the passes are put side by side on the
    ranking keys, in the order of ``measures``.
    """
    groups = by_pass(measures, options.conventions.ties, not options.single_precision)
    scoring = partial(score_in_order, run, qrels, check_duplicates=check_duplicates,
                      systems=systems, concurrent=concurrent)  # fmt: skip
    if list(groups) == [(None, False)]:
        return scoring(measures, options)
    pieces = [
        scoring(group, _with_ties(options, order), judged_only=judged_only)
        for (order, judged_only), group in groups.items()
    ]
    names = {str(m) for m in measures}
    keys = [c for c in pieces[0].scores.columns if c not in names]
    scores = pieces[0].scores
    for piece in pieces[1:]:
        scores = scores.join(piece.scores, on=keys, how="left", nulls_equal=True,
                             maintain_order="left")  # fmt: skip
    columns = [*keys, *(str(m) for m in measures)]
    return Piece(scores.select(columns), pieces[0].no_qrels, run.height, qrels.height)


def _with_ties(options: Options, order: Ties | None) -> Options:
    """``options`` whose conventions order equal scores by ``order`` (None: as they do):
    ``"input"`` is a stable sort of the run by its scores as doubles (cwl_eval's),
    ``"doc_desc"`` trec_eval's order of the scores as doubles (which ``ties=doc_asc``
    reads the other way)."""
    if order is None:
        return options
    conventions = replace(options.conventions, ties=order, score_precision="float64")
    return replace(options, conventions=conventions)


def score_in_order(
    run: pl.DataFrame,
    qrels: pl.DataFrame,
    measures: Sequence[Scored],
    options: Options,
    *,
    check_duplicates: bool = True,
    systems: pl.Series | None = None,
    concurrent: bool = True,
    judged_only: bool = False,
) -> Piece:
    """Score one piece with one order of equal scores, the conventions' (see
    :func:`score_piece`); with ``judged_only``, each ranking without its unjudged
    documents (every judged row of grade 0 and up is then selected, none counted).

    Only the judged rows the measures read are selected (:func:`measure_reads`);
    grades with a fraction are read by the measures that take them, from grade 0 up
    (:func:`check_fractional_grades`).

    The qrels' part needs no run. The hashes the join needs
    (:func:`~polars_rankeval.engine.join.qrels_keys`) are made on a second thread
    while the run is ranked (Polars and numpy release the GIL); the query ids and
    judgments (:func:`~polars_rankeval.engine.select.qrels_side`) on this thread
    once the run is ranked, while the join goes on; their per-query features
    (:meth:`~polars_rankeval.engine.features.Features.query_facts`) on the second
    thread again, while this one places the judged rows. Made one after the other
    on the second thread, the qrels' parts kept this one waiting for a third of the
    call at 1M run rows against 1.9M qrels rows (100 a query). Errors are
    raised in the same order as one after the other (the run's duplicates first).
    Without ``concurrent`` everything is done one step after the other, which
    keeps the peak lower: the memory-bounded pieces of a lazy run are scored so.
    """
    ids = [options.query, options.doc]
    fractional = check_fractional_grades(qrels, options.relevance, ids, measures)
    reads = measure_reads(measures, options.context, options.conventions, fractional=fractional)
    if judged_only:  # the judged rows place each other
        reads = Reads(min(reads.rows, 0.0))
    empty = options.conventions.empty_queries
    features, _ = formulas(tuple(measures), options.context, empty != "zero")
    run, qrels = piece_columns(run, qrels, options)
    own_judgments = options.conventions.judgments == "retrieved"  # taken from the run
    shaping = partial(
        judged_piece,
        run,
        qrels,
        options,
        check_duplicates=check_duplicates,
        systems=systems,
        tie_spans=reads_ties(measures),
        judgment_order=features.reads_judgment_order,
        judged_only=judged_only,
        concurrent=concurrent,
    )
    query_facts = None
    if not concurrent:
        shape = shaping(reads=reads)
        if not own_judgments:
            query_facts = features.query_facts(shape.judgments)
    else:
        with ThreadPoolExecutor(max_workers=1) as qrels_thread:
            joined = qrels_thread.submit(
                qrels_keys, qrels, options, reads.matched, check=check_duplicates
            )
            facts: list[Future[QueryFacts]] = []

            def side() -> QrelsSide:
                made = qrels_side(qrels, options, reads=reads)
                if not own_judgments:
                    facts.append(qrels_thread.submit(features.query_facts, made.judgments))
                return made

            shape = shaping(side=side, join_keys=joined.result)
            query_facts = facts[0].result() if facts else None
    run_rankings = shape.rankings[HAS_RUN]
    no_qrels = shape.keys.filter(run_rankings & shape.rankings[FACT].is_null())
    absent_zero = options.conventions.absent_values == "zero"
    scores = aggregate(shape, measures, options.context, empty, query_facts,
                       concurrent=concurrent, absent_zero=absent_zero)  # fmt: skip
    return Piece(scores, no_qrels, run.height, qrels.height)
