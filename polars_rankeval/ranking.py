"""Run + qrels -> ranked tables: :func:`rank_run` and :func:`judge`.

Both go through the engine's ranking (:mod:`polars_rankeval.engine.rank`):
one sort of packed integers orders every ranking in trec_eval order. The
judged table :func:`judge` returns is the long format the metric
expressions of :mod:`polars_rankeval.metrics` read: for each (system, query)
of the run,

* one row per retrieved document, with ``rank`` = 1, 2, ... in trec_eval order
  and ``relevance`` = the qrels grade (null when the document is not in qrels);
* one row per qrels document of that query that the run did *not* retrieve,
  with ``rank`` null and its grade: these rows carry |R| and the ideal gains,
  so every per-query fact a metric needs is an aggregation over the query's rows.

Within a query, retrieved rows come first and in rank order; this is the one
precondition the metric expressions rely on (for cumulative sums).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial
from typing import overload

import numpy as np
import polars as pl

from polars_rankeval._typing import (
    ArrowStreamExportable,
    Duplicates,
    FrameT,
    IntoFrameOrDict,
    Missing,
    NestedDict,
    Order,
)
from polars_rankeval.call import prepare
from polars_rankeval.conventions import Conventions
from polars_rankeval.engine.join import qrels_keys
from polars_rankeval.engine.pipeline import align_ids, check_values
from polars_rankeval.engine.rank import Groups, gather_rows
from polars_rankeval.engine.select import (
    JUDGMENT,
    match_and_rank,
    qrels_side,
    rank_order_of,
    ranking_scope,
)
from polars_rankeval.engine.shape import FACT, HAS_RUN, RANKING, SCORED
from polars_rankeval.inputs import as_frame, dict_columns, run_keys, with_joined_ids
from polars_rankeval.options import Options
from polars_rankeval.validation import (
    check_choice,
    check_columns,
    check_int,
    fresh_name,
    system_column,
)


@overload
def rank_run(
    run: FrameT,
    *,
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    rank: str = "rank",
    system: str | None = "system",
    order: Order = "score",
    depth: int | None = None,
) -> FrameT: ...
@overload
def rank_run(
    run: ArrowStreamExportable | NestedDict,
    *,
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    rank: str = "rank",
    system: str | None = "system",
    order: Order = "score",
    depth: int | None = None,
) -> pl.DataFrame: ...
def rank_run(
    run: IntoFrameOrDict,
    *,
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    rank: str = "rank",
    system: str | None = "system",
    order: Order = "score",
    depth: int | None = None,
) -> pl.DataFrame | pl.LazyFrame:
    """Order each ranking and number its rows 1..n in a ``rank`` column.

    Parameters
    ----------
    run
        Retrieved documents, one row each.
    query, doc, score, rank, system
        Column names. ``system`` (``"system"``, as :func:`~polars_rankeval.evaluate`
        has it) is used when the run has that column: each system's rankings are
        ranked apart; a run without it, or ``system=None``, holds one system.
    order
        ``"score"`` (default, trec_eval): score descending, ties broken by
        doc id descending compared as strings byte by byte.
        ``"rank"``: by the run's own ``rank`` column ascending (ties as for score).
        ``"presorted"``: rows are already in rank order; no sort is paid for.
    depth
        Keep only the top ``depth`` documents of each ranking (trec_eval ``-M``).

    Returns
    -------
    DataFrame or LazyFrame (a LazyFrame for a LazyFrame run, else a DataFrame)
        ``[system], query, doc, rank``: rankings in no particular order, each
        one's rows in rank order.

    Notes
    -----
    The rows are sorted once, on packed 64-bit integers (the ranking's id, the
    score's order-preserving bits and the row number); only rows whose packed
    key ties with a neighbour's are then ordered by exact score and doc id,
    among themselves (:mod:`polars_rankeval.engine.rank`). A LazyFrame is
    collected when the result is (``pl.defer``).

    Examples
    --------
    >>> import polars as pl
    >>> run = pl.LazyFrame({"query": ["q", "q", "q"], "doc": ["a", "b", "c"],
    ...                     "score": [1.0, 2.0, 2.0]})
    >>> rank_run(run).collect()
    shape: (3, 3)
    ┌───────┬─────┬──────┐
    │ query ┆ doc ┆ rank │
    │ ---   ┆ --- ┆ ---  │
    │ str   ┆ str ┆ u32  │
    ╞═══════╪═════╪══════╡
    │ q     ┆ c   ┆ 1    │
    │ q     ┆ b   ┆ 2    │
    │ q     ┆ a   ┆ 3    │
    └───────┴─────┴──────┘
    """
    run = as_frame(run, "run", (query, doc, score))
    check_choice("order", order, Order)
    check_int("depth", depth, minimum=0, allow_none=True)
    schema = run.lazy().collect_schema()
    system = system_column(system, schema.names())
    keys = run_keys(query, system)
    value = {"score": score, "rank": rank}.get(order)
    check_columns(
        schema,
        {"query": query, "doc": doc} | ({order: value} if value else {}),
        "run",
    )
    options = Options(query=query, doc=doc, score=score, rank=rank, system=system, order=order)

    def ranked(frame: pl.DataFrame) -> pl.DataFrame:
        rows = frame.select(*keys, doc, *([value] if value else []))
        by_rank, ranks = rank_rows(rows, options, depth)
        out = gather_rows(rows.select(*keys, doc), by_rank)
        return out.with_columns(pl.Series(rank, ranks, dtype=pl.UInt32))

    if isinstance(run, pl.DataFrame):
        return ranked(run)
    out_schema = {k: schema[k] for k in [*keys, doc]} | {rank: pl.UInt32}
    return pl.defer(lambda: ranked(run.collect()), schema=out_schema)


def rank_rows(
    frame: pl.DataFrame, options: Options, depth: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(the rows of ``frame`` ranking by ranking in rank order, their ranks 1..n), as
    :func:`rank_run` orders them; rows past ``depth`` are left out."""
    groups = Groups.of(frame, options.keys)
    order = rank_order_of(frame, options, groups, options.order, options.single_precision)
    ranks = order.ranks(np.arange(frame.height))
    by_rank = np.lexsort((ranks, groups.ids))
    if depth is not None:
        by_rank = by_rank[ranks[by_rank] <= depth]
    return by_rank, ranks[by_rank]


@overload
def judge(
    run: FrameT,
    qrels: IntoFrameOrDict,
    *,
    query: str | Sequence[str] = "query",
    doc: str | Sequence[str] = "doc",
    score: str = "score",
    relevance: str = "relevance",
    rank: str = "rank",
    system: str | None = "system",
    by: str | Sequence[str] | None = None,
    order: Order = "score",
    depth: int | None = None,
    missing: Missing = "drop",
    duplicates: Duplicates = "error",
    validate: bool = True,
    conventions: str | Conventions | None = None,
) -> FrameT: ...
@overload
def judge(
    run: ArrowStreamExportable | NestedDict,
    qrels: IntoFrameOrDict,
    *,
    query: str | Sequence[str] = "query",
    doc: str | Sequence[str] = "doc",
    score: str = "score",
    relevance: str = "relevance",
    rank: str = "rank",
    system: str | None = "system",
    by: str | Sequence[str] | None = None,
    order: Order = "score",
    depth: int | None = None,
    missing: Missing = "drop",
    duplicates: Duplicates = "error",
    validate: bool = True,
    conventions: str | Conventions | None = None,
) -> pl.DataFrame: ...
def judge(
    run: IntoFrameOrDict,
    qrels: IntoFrameOrDict,
    *,
    query: str | Sequence[str] = "query",
    doc: str | Sequence[str] = "doc",
    score: str = "score",
    relevance: str = "relevance",
    rank: str = "rank",
    system: str | None = "system",
    by: str | Sequence[str] | None = None,
    order: Order = "score",
    depth: int | None = None,
    missing: Missing = "drop",
    duplicates: Duplicates = "error",
    validate: bool = True,
    conventions: str | Conventions | None = None,
) -> pl.DataFrame | pl.LazyFrame:
    """Join a run with its qrels into the judged table the metrics read.

    Parameters
    ----------
    run
        ``query, doc, score`` (and optionally ``system``, ``rank``).
    qrels
        ``query, doc, relevance`` (integer grades).
    query, doc, score, relevance, rank, system
        Column names. ``system`` is used only when the run has that column;
        ``query`` and ``doc`` may be lists of columns (a compound id).
    order
        How each ranking is ordered; see :func:`rank_run`.
    depth
        Keep only the top ``depth`` documents per ranking (trec_eval ``-M``).
    missing
        ``"drop"``: only queries the run retrieved for get rows.
        ``"zero"``: qrels queries absent from a system's run get their qrels rows
        (an empty ranking, trec_eval ``-c``). ``"error"`` behaves as ``"drop"``
        here; :func:`polars_rankeval.evaluate` raises before this is reached.
    duplicates
        ``"error"`` (default) or ``"keep_best"`` (keep the best-scored run row of
        a duplicated (query, doc)).
    validate
        Check the data first (default True), as :func:`polars_rankeval.evaluate` does.
    by, conventions
        As for :func:`polars_rankeval.evaluate`: segment columns (kept in the
        table), and the trec_eval version whose score precision orders rankings.

    Returns
    -------
    DataFrame or LazyFrame (a LazyFrame for a LazyFrame run, else a DataFrame)
        ``[system], query, doc, rank, relevance``; ``rank`` is null for judged
        documents the run did not retrieve, ``relevance`` is null for retrieved
        documents with no qrels row.

    Examples
    --------
    >>> import polars as pl
    >>> run = pl.DataFrame({"query": ["q"] * 3, "doc": ["a", "b", "c"],
    ...                     "score": [3.0, 2.0, 1.0]})
    >>> qrels = pl.DataFrame({"query": ["q", "q"], "doc": ["b", "z"], "relevance": [1, 2]})
    >>> judge(run, qrels)
    shape: (4, 4)
    ┌───────┬─────┬──────┬───────────┐
    │ query ┆ doc ┆ rank ┆ relevance │
    │ ---   ┆ --- ┆ ---  ┆ ---       │
    │ str   ┆ str ┆ u32  ┆ i64       │
    ╞═══════╪═════╪══════╪═══════════╡
    │ q     ┆ a   ┆ 1    ┆ null      │
    │ q     ┆ b   ┆ 2    ┆ 1         │
    │ q     ┆ c   ┆ 3    ┆ null      │
    │ q     ┆ z   ┆ null ┆ 2         │
    └───────┴─────┴──────┴───────────┘
    """
    run = as_frame(run, "run", dict_columns(query, doc, score))
    qrels = as_frame(qrels, "qrels", dict_columns(query, doc, relevance))
    given = {
        "query": query,
        "doc": doc,
        "score": score,
        "relevance": relevance,
        "rank": rank,
        "system": system,
        "by": by,
        "order": order,
        "depth": depth,
        "missing": missing,
        "duplicates": duplicates,
        "conventions": conventions,
        "validate": validate,
    }
    schemas = run.lazy().collect_schema(), qrels.lazy().collect_schema()
    options = prepare(*schemas, (), given, scores=False).options
    run = with_joined_ids(run, options.joined_ids)
    qrels = with_joined_ids(qrels, options.joined_ids)
    named = [*options.output_keys, *_doc_columns(options)]
    for role, name in (("rank", options.rank), ("relevance", options.relevance)):
        if name in named:
            msg = (
                f"The run's column {name!r} has the name judge gives its {role} column; "
                f"pass {role}='<another name>' for the output."
            )
            raise ValueError(msg)

    def judged(run_df: pl.DataFrame, qrels_df: pl.DataFrame) -> pl.DataFrame:
        if validate:
            check_values(run_df, qrels_df, options, fractional=False)
        return judged_table(run_df, qrels_df, options, check_duplicates=validate)

    if isinstance(run, pl.DataFrame):
        return judged(run, qrels.lazy().collect())
    schema = judged_schema(run.collect_schema(), qrels.lazy().collect_schema(), options)
    return pl.defer(lambda: judged(run.collect(), qrels.lazy().collect()), schema=schema)


def judged_schema(run: pl.Schema, qrels: pl.Schema, options: Options) -> pl.Schema:
    """The schema of :func:`judge`'s table."""
    out = {k: run[k] for k in [*options.output_keys, *_doc_columns(options)]}
    for k in (options.query, options.doc):
        if k in out and run[k] != qrels[k]:
            out[k] = pl.String()
    return pl.Schema(out | {options.rank: pl.UInt32(), options.relevance: pl.Int64()})


def _doc_columns(options: Options) -> list[str]:
    """The doc id columns of the judged table: the doc, or a compound doc's parts."""
    return list(options.doc_parts) or [options.doc]


def judged_table(
    run: pl.DataFrame, qrels: pl.DataFrame, options: Options, *, check_duplicates: bool
) -> pl.DataFrame:
    """Every retrieved row with its rank and grade, then each ranking's unretrieved judgments."""
    run, qrels = align_ids(
        run.select(options.run_columns),
        qrels.select(options.qrels_columns),
        [options.query, options.doc],
    )
    matched = match_and_rank(
        run,
        options,
        partial(qrels_side, qrels, options),
        partial(qrels_keys, qrels, options, -math.inf, check=check_duplicates),
        order=options.order,
        duplicates=options.duplicates,
        check=check_duplicates,
        single_precision=options.single_precision,
    )
    n = matched.run.height
    ranks = matched.order.all_ranks()
    grade_row = np.full(n, -1, np.int64)
    grade_row[matched.run_rows] = matched.judgments
    ids = matched.groups.ids
    if options.depth is None:
        kept, docs = None, {d: matched.run[d] for d in _doc_columns(options)}
    else:
        kept = np.flatnonzero(ranks <= options.depth)
        ids, ranks, grade_row = ids[kept], ranks[kept], grade_row[kept]
        docs = {d: matched.run[d].gather(kept) for d in _doc_columns(options)}
    grades = qrels[options.relevance].cast(pl.Int64)
    ranking = fresh_name(RANKING, _doc_columns(options))  # a doc column may be named so
    retrieved = pl.DataFrame(
        {
            ranking: pl.Series(ids, dtype=pl.UInt32),
            **docs,
            options.rank: pl.Series(ranks, dtype=pl.UInt32),
            options.relevance: _gather_or_null(grades, grade_row),
        }
    )
    judged = grade_row >= 0
    decided = ranking_scope(matched, options, options.missing, None)
    wanted = decided.flags.filter((pl.col(HAS_RUN) | pl.col(SCORED)) & pl.col(FACT).is_not_null())
    missed_ranking, at = unretrieved_judgments(
        wanted[RANKING].to_numpy().astype(np.int64),
        wanted[FACT].to_numpy().astype(np.int64),
        matched.side.judgments[FACT].to_numpy().astype(np.int64),
        matched.side.judgments[JUDGMENT].to_numpy().astype(np.int64),
        ids[judged].astype(np.int64),
        grade_row[judged],
    )
    missed = pl.DataFrame(
        {
            ranking: pl.Series(missed_ranking, dtype=pl.UInt32),
            **{d: qrels[d].gather(at) for d in _doc_columns(options)},
            options.rank: pl.Series([None] * len(at), dtype=pl.UInt32),
            options.relevance: grades.gather(at),
        }
    )
    placed = ranking_order(ids, ranks, missed_ranking, decided.keys.height)
    # one chunk first: a gather from the run's chunks (one a Parquet row group) costs 5x
    table = pl.concat([retrieved, missed], how="vertical_relaxed", rechunk=True)[placed]
    keys = decided.keys.select(options.output_keys)[table[ranking].to_numpy()]
    return keys.hstack(table.drop(ranking))


def unretrieved_judgments(
    rankings: np.ndarray,
    facts: np.ndarray,
    judgment_facts: np.ndarray,
    judgments: np.ndarray,
    found_rankings: np.ndarray,
    found_judgments: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The (ranking, judgment) pairs of each ranking's query judgments it did not retrieve:
    ranking by ranking (in the order of ``rankings``), its judgments in their order.

    ``rankings`` and their query ids ``facts``; ``judgment_facts`` and ``judgments``
    (each judgment's query id and qrels row); the judgment each ranking retrieved
    (``found_rankings``, ``found_judgments``). Every pair of a ranking and one of its
    query's judgments has a place (the ranking's first place plus the judgment's
    place among its query's), so the retrieved ones are struck out by a scatter: no
    join of the pairs (120 ms at 2M run rows).

    Examples
    --------
    >>> ranking, judgment = unretrieved_judgments(
    ...     np.array([0, 1]), np.array([0, 0]), np.array([0, 1, 0]), np.array([10, 11, 12]),
    ...     np.array([1]), np.array([12]))
    >>> ranking.tolist(), judgment.tolist()
    ([0, 0, 1], [10, 12, 10])
    """
    n_facts = int(max(facts.max(initial=-1), judgment_facts.max(initial=-1))) + 1
    by_fact = np.arange(len(judgment_facts))
    if len(by_fact) > 1 and not bool(np.all(judgment_facts[1:] >= judgment_facts[:-1])):
        by_fact = np.argsort(judgment_facts, kind="stable")
    counts = np.bincount(judgment_facts, minlength=n_facts)
    starts = np.cumsum(counts) - counts
    within = np.empty(len(by_fact), np.int64)  # each judgment's place among its query's
    within[by_fact] = np.arange(len(by_fact)) - starts[judgment_facts[by_fact]]
    sizes = counts[facts]
    first = np.cumsum(sizes) - sizes  # each ranking's first pair
    slot = np.full(int(rankings.max(initial=-1)) + 1, -1, np.int64)
    slot[rankings] = np.arange(len(rankings))
    retrieved = np.zeros(int(sizes.sum()), bool)
    ranking_of = slot[found_rankings] if len(slot) else found_rankings
    position = np.full(int(judgments.max(initial=-1)) + 1, -1, np.int64)
    position[judgments] = np.arange(len(judgments))  # each qrels row's judgment
    found = position[found_judgments] if len(position) else found_judgments
    listed = (ranking_of >= 0) & (found >= 0)
    place = first[ranking_of[listed]] + within[found[listed]]
    retrieved[place] = True
    pair = np.arange(len(retrieved)) - np.repeat(first - starts[facts], sizes)
    kept = ~retrieved
    return np.repeat(rankings, sizes)[kept], judgments[by_fact[pair[kept]]]


def ranking_order(
    ranked: np.ndarray, ranks: np.ndarray, unranked: np.ndarray, n_rankings: int
) -> np.ndarray:
    """The rows of ``ranked`` then ``unranked`` (their rankings' ids) in table order: ranking
    by ranking, its rows by rank, then its unranked rows in their order.

    Each ranking's ranks are 1, 2, ..., so a ranked row's place is where its ranking
    starts plus its rank minus one: a scatter, where a sort of the table (string ids
    carried along) took most of :func:`judge`'s time.

    Examples
    --------
    >>> ranking_order(np.array([1, 0, 1]), np.array([2, 1, 1]), np.array([0, 1, 0]), 2).tolist()
    [1, 3, 5, 2, 0, 4]
    """
    ranked_n = np.bincount(ranked, minlength=n_rankings)
    by_ranking = np.arange(len(unranked))  # already ranking by ranking (judge's)
    if len(unranked) > 1 and not bool(np.all(unranked[1:] >= unranked[:-1])):
        by_ranking = np.argsort(unranked, kind="stable")
    unranked_n = np.bincount(unranked, minlength=n_rankings)
    start = np.cumsum(ranked_n + unranked_n) - (ranked_n + unranked_n)
    sorted_ids = unranked[by_ranking]
    within = np.arange(len(unranked)) - (np.cumsum(unranked_n) - unranked_n)[sorted_ids]
    target = np.empty(len(ranked) + len(unranked), np.int64)
    target[: len(ranked)] = start[ranked] + ranks - 1
    target[len(ranked) + by_ranking] = start[sorted_ids] + ranked_n[sorted_ids] + within
    order = np.empty_like(target)
    order[target] = np.arange(len(target))
    return order


def _gather_or_null(values: pl.Series, at: np.ndarray) -> pl.Series:
    """``values[at]``, null where ``at`` is negative."""
    picked = values.gather(np.maximum(at, 0))
    return pl.select(pl.when(pl.Series(at >= 0)).then(picked)).to_series().alias(values.name)
