"""Select: an in-memory run and qrels (or a pre-judged table) -> the judged shape.

For a run, the retrieved documents that have a qrels row are found by one
join on (query, doc) hashes, each match checked on the ids themselves
(:mod:`polars_rankeval.engine.join`); only those rows are ranked
(:mod:`polars_rankeval.engine.rank`), and those a measure reads only as counts
are placed without a rank of their own (:class:`Reads`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import polars as pl

from polars_rankeval import validation
from polars_rankeval._typing import Missing, Order
from polars_rankeval.engine.join import JUDGMENT, ROW, QrelsKeys, pairs
from polars_rankeval.engine.plan import Options
from polars_rankeval.engine.rank import (
    Groups,
    RankOrder,
    Spans,
    TieBreak,
    gather_rows,
    order_values,
    rank_order,
    sort_order,
)
from polars_rankeval.engine.scope import Scope, scope
from polars_rankeval.engine.shape import (
    FACT,
    GRADE,
    HAS_RUN,
    JUDGMENT_ROW,
    JUDGMENT_SCHEMA,
    LEFT_NONREL_ABOVE,
    LEFT_NONREL_JUDGED,
    LEFT_NONREL_RET,
    LEFT_UNJUDGED_ABOVE,
    N_REL,
    NRET,
    RANK,
    RANKING,
    ROW_SCHEMA,
    SCORE_SIGN,
    TIE_FIRST,
    TIE_LAST,
    Judged,
)
from polars_rankeval.validation import fresh_name


@dataclass(frozen=True)
class Reads:
    """Which judged rows the measures read: the rows of grade :attr:`rows` and up, each
    with its rank; with :attr:`counted`, the rows of a lower grade only as counts.

    Counted rows are matched like the others and placed against them (exactly, at less
    cost than a rank: :meth:`~polars_rankeval.engine.rank.RankOrder.ranks_beside`),
    then left out of the shape (:func:`count_left_out`): each row kept says how many of
    them lie above it, each ranking how many it retrieved and how many of its query's
    judgments were left out.
    Bpref and infAP read the judged non-relevant documents only so, so a call with
    them carries the relevant rows and judgments alone through the aggregation.
    The judgments kept are those of grade :attr:`rows` and up either way.

    Examples
    --------
    >>> Reads(1.0, counted=True).matched, Reads(2.0).matched
    (-inf, 2.0)
    """

    rows: float = -math.inf
    """The lowest grade of the judged rows and judgments kept (-inf: every one)."""
    counted: bool = False
    """Whether the judged rows of a lower grade are counted (see above)."""

    @property
    def matched(self) -> float:
        """The lowest grade of the qrels rows the run is matched against."""
        return -math.inf if self.counted else self.rows


EVERY_ROW = Reads()
"""Every judged row kept, none counted."""


@dataclass(frozen=True)
class QrelsSide:
    """What a piece's qrels give without its run, but for the join's keys (see
    :func:`qrels_side`)."""

    facts: pl.DataFrame
    """``[query parts], query, FACT``: one row per qrels query."""
    judgments: pl.DataFrame
    """``FACT, GRADE, JUDGMENT`` of the qrels rows of grade ``reads.rows`` or more."""
    query_ids: np.ndarray
    """The ``FACT`` of every qrels row (int64)."""
    reads: Reads
    """The grades the measures read, as the side was made for."""
    left_judged: np.ndarray | None = None
    """With ``reads.counted``: per ``FACT``, its judgments of grade 0 up to ``reads.rows``
    (left out of ``judgments``)."""


@dataclass(frozen=True)
class Matched:
    """A run ranked, with its rows that have a qrels row."""

    run: pl.DataFrame
    """The run's columns (without the rows ``duplicates="keep_best"`` drops)."""
    groups: Groups
    order: RankOrder
    run_rows: np.ndarray
    """Run rows that have a qrels row (increasing)."""
    judgments: np.ndarray
    """The qrels row of each of ``run_rows``."""
    side: QrelsSide
    """The qrels' part."""
    keys: pl.DataFrame
    """The key columns of each ranking (row i: ranking i)."""
    facts: pl.Series
    """``FACT`` of each ranking: its query's id in the qrels, null when it has none."""


def qrels_side(qrels: pl.DataFrame, columns: Options, *, reads: Reads = EVERY_ROW) -> QrelsSide:
    """The qrels' part of a piece but for the join's keys (made apart, and checked for
    duplicate rows, by :func:`~polars_rankeval.engine.join.qrels_keys`): one id per
    query, the judgments.

    Which queries exist is decided on every qrels row; the judgments keep the grades
    ``reads.rows`` and up (the grades the measures read), those of grade 0 up to it
    counted per query with ``reads.counted``.
    """
    facts, judgments = _facts(qrels, columns)
    query_ids = judgments[FACT].to_numpy().astype(np.int64)
    left = None
    if reads.counted:
        grades = judgments[GRADE].to_numpy()
        below = query_ids[(grades >= 0) & (grades < reads.rows)]
        left = np.bincount(below, minlength=facts.height)
    if reads.rows != -math.inf:
        judgments = judgments.filter(pl.col(GRADE) >= reads.rows)
    return QrelsSide(facts, judgments, query_ids, reads, left)


def match_and_rank(
    run: pl.DataFrame,
    columns: Options,
    side: Callable[[], QrelsSide],
    join_keys: Callable[[], QrelsKeys],
    *,
    order: Order,
    duplicates: str,
    check: bool,
    single_precision: bool = False,
    concurrent: bool = True,
    beside: Callable[[RankOrder], object] | None = None,
) -> Matched:
    """Rank every row of a run and find those that have one of the wanted qrels rows.

    Two threads (one without ``concurrent``): this one groups the rows into
    rankings and sorts them, then asks for the :func:`qrels_side`; the second
    hashes (query, doc), checks (with ``check``) that no (ranking, doc) appears
    twice, then asks ``join_keys`` for the
    :func:`~polars_rankeval.engine.join.qrels_keys` (which the caller may be making
    meanwhile) and joins (:func:`~polars_rankeval.engine.join.pairs`). A run that
    may hold duplicates is checked exactly, and joined, once it is ranked: an error
    names the run's duplicates before anything of the qrels.

    ``beside``: the caller's work on the rank order, done on this thread once the rows
    are ranked, while the join goes on (:func:`polars_rankeval.judge` puts every row in
    rank order there); it is not done again when ``duplicates="keep_best"`` ranks the
    run anew.
    """
    doc = columns.doc
    look = check or duplicates == "keep_best"
    if concurrent:
        with ThreadPoolExecutor(max_workers=1) as second:
            paired = second.submit(pairs, run, columns, join_keys, look)
            groups = Groups.of(run, columns.keys)
            ranked = rank_order_of(  # its slices one after the other: the join has the other core
                run, columns, groups, order, single_precision, parallel=False
            )
            judged = side()  # while the join goes on
            keys, facts = _ranking_facts(run, columns, ranked, judged)
            if beside is not None:
                beside(ranked)
            found = paired.result()
    else:
        found = pairs(run, columns, join_keys, look)
        groups = Groups.of(run, columns.keys)
        ranked = rank_order_of(run, columns, groups, order, single_precision)
        judged = side()
        keys, facts = _ranking_facts(run, columns, ranked, judged)
        if beside is not None:
            beside(ranked)
    if found is None:  # equal (keys, doc) hashes: a duplicate, or a collision
        if duplicates != "keep_best":
            validation.check_duplicates(run.lazy(), [*columns.keys, doc], "run")
        else:
            run = _keep_best(run, columns, order)
            groups = Groups.of(run, columns.keys)
            ranked = rank_order_of(run, columns, groups, order, single_precision)
            keys, facts = _ranking_facts(run, columns, ranked, judged)
        found = pairs(run, columns, join_keys, False)
    assert found is not None
    rows, judgments = found
    ranking_query = facts.fill_null(-1).to_numpy().astype(np.int64)  # -1: no qrels
    same = _same_query(judgments, ranking_query[groups.ids[rows]], judged)
    return Matched(run, groups, ranked, rows[same], judgments[same], judged, keys, facts)


def _ranking_facts(
    run: pl.DataFrame, columns: Options, ranked: RankOrder, side: QrelsSide
) -> tuple[pl.DataFrame, pl.Series]:
    """The key columns of each ranking (row i: ranking i), and its query's ``FACT`` in the
    qrels (null when it has none)."""
    keys = gather_rows(run.select(columns.keys), ranked.first_rows())
    facts = keys.select(columns.query).join(
        side.facts, on=columns.query, how="left", maintain_order="left"
    )[FACT]
    return keys, facts


def judged_from_run(
    run: pl.DataFrame,
    qrels: pl.DataFrame,
    columns: Options,
    side: Callable[[], QrelsSide],
    join_keys: Callable[[], QrelsKeys],
    *,
    order: Order,
    depth: int | None,
    missing: Missing,
    duplicates: str,
    check: bool,
    single_precision: bool = False,
    systems: pl.Series | None = None,
    tie_spans: bool = False,
    judgment_order: bool = False,
    judged_only: bool = False,
    concurrent: bool = True,
) -> Judged:
    """The judged shape of a run (validated but for duplicates, ids aligned) and its qrels
    (``side`` and ``join_keys``: their :func:`qrels_side` and
    :func:`~polars_rankeval.engine.join.qrels_keys`, see :func:`match_and_rank`).

    ``tie_spans`` adds each row's tie group (``TIE_FIRST, TIE_LAST``) for the measures
    that average over ties; ``judgment_order`` each row's qrels row and the sign of its
    score (``JUDGMENT_ROW, SCORE_SIGN``) for those that read the qrels' row order.
    ``judged_only`` takes the unjudged rows out (no qrels row, or a negative grade),
    after the ``depth`` cut as trec_eval's ``-J`` after ``-M``: the judged rows are
    ranked 1, 2, ... in their order and a ranking retrieves only them. Under
    the conventions' ``judgments="retrieved"`` each
    ranking is scored against its own retrieved judged rows (scikit-learn,
    torchmetrics), not its query's qrels.

    ``systems``, the systems of the whole run when this is one piece of it,
    decides which systems get empty rankings under ``missing="zero"``.
    Only the side's judgments are kept, retrieved or not, and the rows of the
    grades its :class:`Reads` keeps (the grades the measures read: see
    :meth:`polars_rankeval.measures.Measure.lowest_grade`), the others counted
    when it says so; the queries scored are decided on every qrels row.
    """
    matched = match_and_rank(
        run,
        columns,
        side,
        join_keys,
        order=order,
        duplicates=duplicates,
        check=check,
        single_precision=single_precision,
        concurrent=concurrent,
    )
    reads, placed = matched.side.reads, matched.order
    run_rows, grades = matched.run_rows, grade_column(qrels[columns.relevance])
    grades, judgments = grades.gather(matched.judgments), matched.judgments
    counted = None
    if reads.counted:  # the rows under reads.rows: counted, not ranked one by one
        below = (grades < reads.rows).fill_null(False).to_numpy()
        counted = run_rows[below], grades.filter(below).to_numpy()
        run_rows, grades, judgments = run_rows[~below], grades.filter(~below), judgments[~below]
    ranks, ties = placed.ranked(run_rows)
    of = matched.groups.ids[run_rows].astype(np.int64)
    spans = placed.tie_spans(run_rows) if tie_spans else None
    in_qrels = None
    if judgment_order:
        in_qrels = (judgments, score_signs(matched.run, columns, order, run_rows))
    if depth is not None:
        kept = ranks <= depth
        of, ranks, grades = of[kept], ranks[kept], grades.filter(kept)
        if spans is not None:
            spans = (spans[0][kept], np.minimum(spans[1][kept], depth))
        if in_qrels is not None:
            in_qrels = (in_qrels[0][kept], in_qrels[1][kept])
    counts = matched.groups.counts
    nret = counts if depth is None else np.minimum(counts, depth)
    if judged_only:
        kept = (grades >= 0).fill_null(False).to_numpy()
        of, grades = of[kept], grades.filter(kept)
        ranks, spans = judged_ranks(of, ranks[kept], spans and (spans[0][kept], spans[1][kept]))
        if in_qrels is not None:
            in_qrels = (in_qrels[0][kept], in_qrels[1][kept])
        nret = np.bincount(of, minlength=len(counts)).astype(np.int64)
    in_scope = ranking_scope(matched, columns, missing, systems)
    left = None
    if counted is not None:
        left = _left_out(matched, counted, (of, ranks, ties), depth, in_scope.keys.height)
    rows = _sorted_rows(of, ranks, grades, spans, left, in_qrels)
    judgment_rows = matched.side.judgments
    n_extra = in_scope.keys.height - len(nret)
    rankings = in_scope.flags.with_columns(
        pl.Series(NRET, np.concatenate([nret, np.zeros(n_extra, np.int64)]), dtype=pl.Int64)
    )
    if left is not None:
        judged = matched.side.left_judged
        assert judged is not None  # a counted side counts its judgments
        facts = rankings[FACT]  # null: a query without qrels, none left out
        at = facts.fill_null(0).to_numpy().astype(np.intp)
        per_ranking = np.where(facts.is_null().to_numpy(), 0, judged[at] if len(judged) else 0)
        rankings = rankings.hstack(
            [left.retrieved, pl.Series(LEFT_NONREL_JUDGED, per_ranking, dtype=pl.Int64)]
        )
    if columns.conventions.judgments == "retrieved":
        rankings, judgment_rows = retrieved_judgments(rankings, rows)
    return Judged(in_scope.keys, rankings, rows, judgment_rows)


@dataclass(frozen=True)
class LeftOut:
    """The judged rows under the lowest grade read, counted (:func:`count_left_out`)."""

    above: list[pl.Series]
    """Per row kept: ``LEFT_NONREL_ABOVE``, ``LEFT_UNJUDGED_ABOVE``."""
    retrieved: pl.Series
    """Per ranking: ``LEFT_NONREL_RET``."""


def _left_out(
    matched: Matched,
    counted: tuple[np.ndarray, np.ndarray],
    ranked: tuple[np.ndarray, np.ndarray, Spans],
    depth: int | None,
    n_rankings: int,
) -> LeftOut:
    """:func:`count_left_out` for a run: the ``counted`` rows (run rows and grades) placed
    by :meth:`~polars_rankeval.engine.rank.RankOrder.ranks_beside` against the rows
    ``ranked`` (their rankings, ranks and tie groups), cut at ``depth``."""
    rows, grades = counted
    of, ranks, ties = ranked
    placed = matched.order.ranks_beside(rows, ties, depth)
    rankings = matched.groups.ids[rows].astype(np.int64)
    if depth is not None:
        within = placed <= depth
        placed, rankings, grades = placed[within], rankings[within], grades[within]
    starts = matched.groups.starts  # a row's key: its place in the sorted rows
    return count_left_out(
        starts[of] + ranks - 1,
        starts[of],
        starts[rankings] + placed - 1,
        grades,
        rankings,
        n_rankings,
    )


def count_left_out(
    keys: np.ndarray,
    tops: np.ndarray,
    left_keys: np.ndarray,
    left_grades: np.ndarray,
    left_rankings: np.ndarray,
    n_rankings: int,
) -> LeftOut:
    """How many of the rows left out (grade under the lowest read) lie above each row kept,
    judged non-relevant (grade 0 or more) and unjudged (negative) apart; and per ranking,
    how many judged non-relevant rows it retrieved (the
    :data:`~polars_rankeval.engine.shape.LEFT_NONREL_ABOVE` columns).

    ``keys`` (rows kept) and ``left_keys`` (rows left out, with their grades and
    rankings) order the rows of a ranking by rank, and a ranking's keys lie in
    ``[top, next ranking's top)``, ``tops`` being that of each kept row's ranking. A
    kept row's count is ``#{left: top <= left key < key}``: two binary searches in
    the sorted left keys.

    Examples
    --------
    >>> left = count_left_out(np.array([2, 13]), np.array([0, 10]),
    ...                       np.array([0, 1, 11]), np.array([0, -1, 0]), np.array([0, 0, 1]), 2)
    >>> [c.to_list() for c in left.above], left.retrieved.to_list()
    ([[1, 1], [1, 0]], [1, 1])
    """
    above = []
    judged = left_grades >= 0
    for name, flag in zip((LEFT_NONREL_ABOVE, LEFT_UNJUDGED_ABOVE), (judged, ~judged), strict=True):
        ordered = np.sort(left_keys[flag])
        count = np.searchsorted(ordered, keys) - np.searchsorted(ordered, tops)
        above.append(pl.Series(name, count, dtype=pl.UInt32))
    retrieved = np.bincount(left_rankings[judged], minlength=n_rankings)
    return LeftOut(above, pl.Series(LEFT_NONREL_RET, retrieved, dtype=pl.Int64))


def retrieved_judgments(
    rankings: pl.DataFrame, rows: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Each ranking's judgments as its own judged retrieved rows (``judgments="retrieved"``):
    the rankings with ``FACT`` = their ranking id (null where the query has no qrels
    row), and the judgments ``FACT, GRADE``."""
    own = pl.when(pl.col(FACT).is_not_null()).then(pl.col(RANKING)).cast(pl.UInt32).alias(FACT)
    judgments = rows.select(pl.col(RANKING).cast(pl.UInt32).alias(FACT), GRADE)
    return rankings.with_columns(own), judgments


def ranking_scope(
    matched: Matched,
    columns: Options,
    missing: Missing,
    systems: pl.Series | None,
    *,
    absent: bool | None = None,
) -> Scope:
    """The rankings to score (see :mod:`polars_rankeval.engine.scope`)."""
    return scope(
        matched.keys,
        matched.side.facts,
        run_facts=matched.facts,
        query=columns.query,
        system=columns.system,
        missing=missing,
        by=columns.by,
        systems=systems,
        absent=absent,
    )


def rank_order_of(
    run: pl.DataFrame,
    columns: Options,
    groups: Groups,
    order: Order,
    single_precision: bool,
    *,
    parallel: bool = True,
) -> RankOrder:
    """Every row's place: by value (score or rank) then doc id (or row order, as the
    conventions' tie rule says), or the row order as given (``parallel``: see
    :func:`~polars_rankeval.engine.rank.rank_order`)."""
    if order == "presorted" or columns.value is None:
        return rank_order(groups, None, None, descending=False, parallel=parallel)
    by_rank = order == "rank"
    values = order_values(run[columns.value], by_rank=by_rank, single_precision=single_precision)
    by_doc = columns.conventions.order_ties == "doc_desc"
    tie_break = TieBreak(values, descending=not by_rank, doc=run[columns.doc], by_doc=by_doc)
    return rank_order(groups, values, tie_break, descending=not by_rank, parallel=parallel)


def _facts(qrels: pl.DataFrame, options: Options) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(``[query parts], query, FACT``: one row per qrels query) and the judgments ``FACT,
    GRADE, JUDGMENT`` (the qrels row), in qrels order."""
    query, relevance = options.query, options.relevance
    groups = Groups.of(qrels, [query])
    ids = pl.Series(FACT, groups.ids, dtype=pl.UInt32)
    judgments = pl.DataFrame(
        [
            ids,
            grade_column(qrels[relevance]).alias(GRADE),
            pl.Series(JUDGMENT, np.arange(qrels.height), dtype=pl.UInt32),
        ]
    )
    first = ids.arg_unique().to_numpy()  # dense ids in order of appearance
    facts = qrels.select(*options.query_parts, query)[first].with_columns(ids.gather(first))
    return facts, judgments


def grade_column(grades: pl.Series) -> pl.Series:
    """The qrels grades as the engine holds them: Int64, or Float64 when a grade has a
    fraction (scikit-learn's real-valued relevance; only the measures that read grades
    as gains take them, see :func:`polars_rankeval.engine.plan.check_fractional_grades`).

    Examples
    --------
    >>> grade_column(pl.Series([1.0, 2.0])).dtype, grade_column(pl.Series([0.5, 2.0])).dtype
    (Int64, Float64)
    """
    if grades.dtype.is_float() and bool((grades != grades.round(0)).any()):
        return grades.cast(pl.Float64)
    return grades.cast(pl.Int64)


def _sorted_rows(
    ranking: np.ndarray,
    rank: np.ndarray,
    grade: pl.Series,
    spans: tuple[np.ndarray, np.ndarray] | None = None,
    left: LeftOut | None = None,
    in_qrels: tuple[np.ndarray, np.ndarray] | None = None,
) -> pl.DataFrame:
    """``RANKING, RANK, GRADE`` (and ``TIE_FIRST, TIE_LAST`` from ``spans``, the
    ``left.above`` counts, ``JUDGMENT_ROW, SCORE_SIGN`` from ``in_qrels``) sorted by
    ranking then rank.

    A ranking holds one row at each rank, so the (ranking, rank) keys are distinct and
    any sort gives the one order (:func:`~polars_rankeval.engine.rank.sort_order`).
    """
    key = _rank_keys(ranking, rank, _rank_width(rank))
    order = sort_order(key)  # with the row number in 64 bits: one numpy sort
    rows = pl.DataFrame(
        {
            RANKING: pl.Series(ranking[order], dtype=pl.UInt32),
            RANK: pl.Series(rank[order], dtype=pl.UInt32),
            GRADE: grade.gather(order),
        },
        schema={**ROW_SCHEMA, GRADE: grade.dtype},
    )
    if spans is not None:
        first, last = spans
        rows = rows.hstack(
            [
                pl.Series(TIE_FIRST, first[order], dtype=pl.UInt32),
                pl.Series(TIE_LAST, last[order], dtype=pl.UInt32),
            ]
        )
    if in_qrels is not None:
        judgment, sign = in_qrels
        rows = rows.hstack(
            [
                pl.Series(JUDGMENT_ROW, judgment[order], dtype=pl.UInt32),
                pl.Series(SCORE_SIGN, sign[order], dtype=pl.Int8),
            ]
        )
    return rows if left is None else rows.hstack([count.gather(order) for count in left.above])


def judged_ranks(
    ranking: np.ndarray, rank: np.ndarray, spans: tuple[np.ndarray, np.ndarray] | None
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
    """The ranks of rows (``ranking``, ``rank``: distinct within a ranking) among their
    ranking's rows, 1, 2, ... in rank order, and their tie groups (``spans``: first and
    last rank) as the rows kept place them.

    Examples
    --------
    >>> ranks, spans = judged_ranks(np.array([0, 0, 1, 0]), np.array([7, 2, 4, 5]),
    ...                             (np.array([5, 1, 4, 5]), np.array([7, 3, 4, 7])))
    >>> ranks.tolist(), spans[0].tolist(), spans[1].tolist()
    ([3, 1, 1, 2], [2, 1, 1, 2], [3, 1, 1, 3])
    """
    top = ranking.astype(np.uint64) << np.uint64(32)
    key = top | rank.astype(np.uint64)
    ordered = np.sort(key)
    start = np.searchsorted(ordered, top)
    ranks = (np.searchsorted(ordered, key) - start + 1).astype(np.int64)
    if spans is None:
        return ranks, None
    first = np.searchsorted(ordered, top | spans[0].astype(np.uint64)) - start + 1
    last = np.searchsorted(ordered, top | spans[1].astype(np.uint64), side="right") - start
    return ranks, (first.astype(np.int64), last.astype(np.int64))


def score_signs(run: pl.DataFrame, columns: Options, order: Order, rows: np.ndarray
                ) -> np.ndarray:  # fmt: skip
    """The sign (-1, 0 or 1, int8) of the score of each of ``rows`` of ``run``; 1 for every
    row of a run ranked by its ranks or row order (no score to compare with 0).

    Examples
    --------
    >>> from polars_rankeval.engine.plan import Options
    >>> run = pl.DataFrame({"score": [2.5, 0.0, -1.0]})
    >>> score_signs(run, Options(), "score", np.array([0, 1, 2])).tolist()
    [1, 0, -1]
    """
    if order != "score" or columns.value is None:
        return np.ones(len(rows), np.int8)
    scores = run[columns.value].gather(rows).cast(pl.Float64).to_numpy()
    return np.sign(scores).astype(np.int8)


def _same_query(judgments: np.ndarray, pair_query: np.ndarray, side: QrelsSide) -> np.ndarray:
    """Whether each pair's run row and qrels row have the same query: ``pair_query``, the
    ``FACT`` of each pair's run row's query (-1 for a query without qrels), against the
    side's query id of the qrels row."""
    return pair_query == side.query_ids[judgments]


def _keep_best(run: pl.DataFrame, columns: Options, order: Order) -> pl.DataFrame:
    """The run with only the best row of each duplicated (ranking, doc).

    Best: the highest score (``order="score"``), the lowest rank
    (``order="rank"``) or the first row (``order="presorted"``); among equal
    ones, the first row. Row order is kept.
    """
    ids = [*columns.keys, columns.doc]
    row = fresh_name(ROW, run.columns)
    ranked = run.with_row_index(row)
    if order != "presorted" and columns.value is not None:
        ranked = ranked.sort([columns.value, row], descending=[order == "score", False])
    kept = ranked.unique(ids, keep="first")[row].sort().to_numpy()
    return gather_rows(run, kept)


def judged_from_table(
    table: pl.DataFrame,
    *,
    keys: Sequence[str],
    rank: str,
    relevance: str,
    n_rel: str | None,
    check: bool = True,
    reads: Reads = EVERY_ROW,
    retrieved_only: bool = False,
) -> Judged:
    """The judged shape of a pre-judged table (logs): ranks given, no qrels.

    ``retrieved_only`` (the conventions' ``judgments="retrieved"``) keeps only the
    shown rows as judgments; which rankings are scored is decided on every row.

    Each ranking's judgments are its own rows with a grade (shown or not) of
    ``reads.rows`` or more; its retrieved documents are its rows with a rank, of
    which those of grade ``reads.rows`` or more are kept (the others counted, with
    ``reads.counted``: see :func:`count_left_out`). A ranking is
    scored when it has a judgment (a row with a grade, any grade), as a run
    query is scored when it has a qrels row (:func:`~polars_rankeval.engine.scope.scope`
    decides, each ranking its own query). Rows already in rank order within
    contiguous rankings (the usual layout of logs) are taken as they are; otherwise
    only the rows kept are sorted, and ``check`` refuses two rows at one rank
    (:func:`_check_one_row_a_rank`, without a sort when each ranking's ranks are 1 to
    its number of shown rows).
    """
    with ThreadPoolExecutor(max_workers=1) as second:  # the ids beside what needs none
        grouped = second.submit(Groups.of, table, list(keys))
        ranks = table[rank].cast(pl.Int64)
        grades = table[relevance].cast(pl.Int64)
        is_shown = ranks.is_not_null()
        rank_of = ranks.fill_null(0).to_numpy()
        shown = np.flatnonzero(is_shown.to_numpy())
        shown_ranks = rank_of[shown]
        graded_any = grades.is_not_null()
        read = graded_any & (grades >= reads.rows)
        if retrieved_only:
            read = read & is_shown
        matched = (graded_any & (grades >= reads.matched)).to_numpy()
        kept = np.flatnonzero(matched & is_shown.to_numpy())  # the rows ranked, if sorted
        graded_rows = graded_any.to_numpy()
        graded = np.flatnonzero(read.to_numpy())  # the judgments: in any order
        judgment_grades = grades.gather(graded)
        groups = grouped.result()
    ids = groups.ids.astype(np.int64)
    shown_ids = ids[shown]
    nret = np.bincount(shown_ids, minlength=groups.n)
    has_judgment = np.bincount(ids[graded_rows], minlength=groups.n) > 0
    width = _rank_width(rank_of)
    key = _rank_keys(shown_ids, shown_ranks, width) if groups.contiguous else None
    if key is None or (len(key) > 1 and not bool(np.all(key[1:] >= key[:-1]))):  # out of order
        if check:
            _check_one_row_a_rank(table, keys, rank, shown, shown_ids, shown_ranks, nret)
        key = _rank_keys(ids[kept], rank_of[kept], width)  # only these are put in order
        order = sort_order(key)
        picked, key = kept[order], key[order]
    else:  # in rank order: taken as they are
        if check and len(key) > 1 and bool(np.any(key[1:] == key[:-1])):
            _two_rows_at_a_rank(table, keys, rank, shown[np.flatnonzero(key[1:] == key[:-1])[0]])
        wanted = matched[shown]
        picked, key = shown[wanted], key[wanted]
    left = None
    if reads.counted:
        grade = grades.gather(picked).to_numpy()
        below = grade < reads.rows
        tops = ids[picked[~below]].astype(np.uint64) << np.uint64(width)  # a ranking's rank 0
        left_out = (key[below], grade[below], ids[picked[below]])
        left = count_left_out(key[~below], tops, *left_out, groups.n)
        picked = picked[~below]
    rows = pl.DataFrame(
        {
            RANKING: pl.Series(ids[picked], dtype=pl.UInt32),
            RANK: pl.Series(rank_of[picked], dtype=pl.UInt32),
            GRADE: grades.gather(picked),
        },
        schema=ROW_SCHEMA,
    )
    if left is not None:
        rows = rows.hstack(left.above)
    judgments = pl.DataFrame(
        {FACT: pl.Series(ids[graded], dtype=pl.UInt32), GRADE: judgment_grades},
        schema=JUDGMENT_SCHEMA,
    )
    first = groups.starts if groups.contiguous else _first_rows(ids, groups.n)
    ranking_keys = table.select(keys)[first]
    # each ranking is its own query, whose judgments are its graded rows (FACT: its id)
    own = pl.Series(FACT, np.arange(groups.n), dtype=pl.UInt32)
    decided = scope(
        ranking_keys,
        own.clear().to_frame(),
        query=keys[-1],
        system=None,
        missing="drop",
        run_facts=own.to_frame().select(pl.when(pl.Series(has_judgment)).then(FACT)).to_series(),
    )
    # a ranking without a shown row is a query the run lacks (its rows: judgments only)
    rankings = decided.flags.with_columns(
        pl.Series(NRET, nret, dtype=pl.Int64), pl.Series(HAS_RUN, nret > 0, dtype=pl.Boolean)
    )
    if n_rel is not None:
        rankings = rankings.with_columns(table[n_rel].gather(first).cast(pl.Float64).alias(N_REL))
    if left is not None:
        judged_nonrel = (graded_any & (grades >= 0) & (grades < reads.rows)).to_numpy()
        per_ranking = np.bincount(ids[judged_nonrel], minlength=groups.n)
        rankings = rankings.hstack(
            [left.retrieved, pl.Series(LEFT_NONREL_JUDGED, per_ranking, dtype=pl.Int64)]
        )
    return Judged(decided.keys, rankings, rows, judgments)


def _rank_keys(ids: np.ndarray, ranks: np.ndarray, width: int) -> np.ndarray:
    """One integer per row, ordering rows by ranking then rank: ``id << width | rank``
    (ranks under ``2**width``, :func:`_rank_width`)."""
    return (ids.astype(np.uint64) << np.uint64(width)) | ranks.astype(np.uint64)


def _rank_width(ranks: np.ndarray) -> int:
    """The bits the largest of ``ranks`` needs: keys as narrow as that leave room for a
    row number beside them in one numpy sort (:func:`~polars_rankeval.engine.rank.sort_order`).
    """
    return max(1, int(ranks.max(initial=0)).bit_length())


def _check_one_row_a_rank(
    table: pl.DataFrame,
    keys: Sequence[str],
    rank: str,
    shown: np.ndarray,
    ids: np.ndarray,
    ranks: np.ndarray,
    counts: np.ndarray,
) -> None:
    """Refuse two ``shown`` rows (their ranking ``ids`` and ``ranks``) at one rank of a
    ranking, without a sort when each ranking's ranks are 1 to its number of shown rows
    (``counts``): each row marks the place its rank gives it among the rows sorted by
    (ranking, rank), and when every place is marked, no two rows share one (ranks
    that fall in another ranking's places then do so one a place too). Otherwise the
    (ranking, rank) keys are sorted and compared.

    Examples
    --------
    >>> table = pl.DataFrame({"q": ["a", "a", "b"], "r": [1, 1, 1]})
    >>> _check_one_row_a_rank(table, ["q"], "r", np.arange(3), np.array([0, 0, 1]),
    ...                       np.array([1, 1, 1]), np.array([2, 1]))
    Traceback (most recent call last):
    ...
    ValueError: judged has two rows at the same rank (q='a', r=1): each rank holds one document.
    """
    if not len(ids):
        return
    places = (np.cumsum(counts) - counts)[ids]
    places += ranks
    places -= 1
    if int(places.min()) >= 0 and int(places.max()) < len(places):
        marked = np.zeros(len(places), bool)  # two rows at one rank mark one place
        marked[places] = True
        if bool(marked.all()):
            return
    key = _rank_keys(ids, ranks, _rank_width(ranks))
    ordered = np.sort(key)
    twice = np.flatnonzero(ordered[1:] == ordered[:-1])
    if len(twice):
        _two_rows_at_a_rank(table, keys, rank, shown[np.flatnonzero(key == ordered[twice[0]])[0]])


def _two_rows_at_a_rank(table: pl.DataFrame, keys: Sequence[str], rank: str, at: int) -> None:
    """Refuse a table whose row ``at`` shares its rank with another row of its ranking."""
    where = ", ".join(f"{k}={table[k][int(at)]!r}" for k in [*keys, rank])
    msg = f"judged has two rows at the same rank ({where}): each rank holds one document."
    raise ValueError(msg)


def _first_rows(ids: np.ndarray, n: int) -> np.ndarray:
    """The first row of each id 0..n-1 (each id has a row).

    Ids numbered in order of first appearance (as
    :func:`~polars_rankeval.engine.rank.hashed_codes` numbers them) first appear where
    their running maximum grows: one pass, where a minimum per id takes several.

    Examples
    --------
    >>> _first_rows(np.array([0, 1, 0, 2, 1]), 3).tolist()
    [0, 1, 3]
    >>> _first_rows(np.array([1, 0, 1]), 2).tolist()  # another numbering
    [1, 0]
    """
    if len(ids):
        grows = np.ones(len(ids), bool)
        grows[1:] = ids[1:] > np.maximum.accumulate(ids)[:-1]
        first = np.flatnonzero(grows)
        if len(first) == n and bool(np.all(ids[first] == np.arange(n))):
            return first
    first = np.full(n, len(ids), dtype=np.int64)
    np.minimum.at(first, ids, np.arange(len(ids)))
    return first
