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
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar, overload

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
from polars_rankeval.engine import buckets
from polars_rankeval.engine.buckets import memory_bytes
from polars_rankeval.engine.join import qrels_keys
from polars_rankeval.engine.pipeline import Piece, check_values, piece_columns
from polars_rankeval.engine.rank import Groups, Ordered, RankOrder
from polars_rankeval.engine.select import (
    JUDGMENT,
    Matched,
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
    check_run_values,
    system_column,
)

T = TypeVar("T")


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
    validate: bool = True,
    memory_limit: int | str | None = None,
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
    validate: bool = True,
    memory_limit: int | str | None = None,
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
    validate: bool = True,
    memory_limit: int | str | None = None,
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
    validate
        Check the rows first (default True), as :func:`~polars_rankeval.evaluate`
        does: a null id, a null or NaN score (a NaN would rank first), or a null rank
        under ``order="rank"`` raises naming the row.
    memory_limit
        LazyFrame runs only: the most memory (bytes, or a string such as ``"2GiB"``)
        the ranking should take beyond its result, as for
        :func:`~polars_rankeval.evaluate`. Default ``"1GiB"``.

    Returns
    -------
    DataFrame or LazyFrame (a LazyFrame for a LazyFrame run, else a DataFrame)
        ``[system], query, doc, rank``: rankings in no particular order, each
        one's rows together and in rank order.

    Notes
    -----
    The rows are sorted once, on packed 64-bit integers (the ranking's id, the
    score's order-preserving bits and the row number); only rows whose packed
    key ties with a neighbour's are then ordered by exact score and doc id,
    among themselves (:mod:`polars_rankeval.engine.rank`). A LazyFrame run is
    read when the result is collected (``pl.defer``), in batches, as
    :func:`~polars_rankeval.evaluate` reads one: past an eighth of
    ``memory_limit`` it is ranked piece by piece of whole rankings (as it comes
    when each ranking's rows come together, else bucket by bucket of a hash of
    the query id, spilled to disk), so that only the result and one piece are
    held at once, never the whole run beside it.

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
    limit = memory_bytes(memory_limit)
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

    def check(rows: pl.DataFrame, offset: int = 0) -> None:
        check_run_values(rows, ids=[*keys, doc], score=score if order == "score" else None,
                         rank=rank if order == "rank" else None, offset=offset)  # fmt: skip

    def ranked(frame: pl.DataFrame) -> pl.DataFrame:
        rows = frame.select(*keys, doc, *([value] if value else []))
        by_rank, ranks = rank_rows(rows, options, depth)
        out = rows.select(*keys, doc).rechunk()[by_rank]  # one chunk: a gather from many copies
        return out.with_columns(pl.Series(rank, ranks, dtype=pl.UInt32))

    if isinstance(run, pl.DataFrame):
        if validate:
            check(run)
        return ranked(run)
    out_schema = pl.Schema({k: schema[k] for k in [*keys, doc]} | {rank: pl.UInt32()})
    lazy_run = run

    def piece(rows: pl.DataFrame) -> Piece:
        return Piece(ranked(rows), pl.DataFrame(), rows.height, 0)

    def pieces() -> pl.DataFrame:
        columns = [*keys, doc, *([value] if value else [])]
        made = buckets.score_judged_lazy(lazy_run, columns, keys, piece,
                                         check if validate else None, limit)  # fmt: skip
        return _stacked([p.scores for p in made], out_schema)

    return pl.defer(pieces, schema=out_schema)


def rank_rows(
    frame: pl.DataFrame, options: Options, depth: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(the rows of ``frame`` ranking by ranking in rank order, their ranks 1..n), as
    :func:`rank_run` orders them; rows past ``depth`` are left out."""
    groups = Groups.of(frame, options.keys)
    order = rank_order_of(frame, options, groups, options.order, options.single_precision)
    _, by_rank = order.in_rank_order()
    ranks = order.sorted_ranks()
    if depth is not None:
        kept = ranks <= depth
        by_rank, ranks = by_rank[kept], ranks[kept]
    return by_rank, ranks


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
    missing: Missing | None = None,
    duplicates: Duplicates = "error",
    validate: bool = True,
    conventions: str | Conventions | None = None,
    memory_limit: int | str | None = None,
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
    missing: Missing | None = None,
    duplicates: Duplicates = "error",
    validate: bool = True,
    conventions: str | Conventions | None = None,
    memory_limit: int | str | None = None,
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
    missing: Missing | None = None,
    duplicates: Duplicates = "error",
    validate: bool = True,
    conventions: str | Conventions | None = None,
    memory_limit: int | str | None = None,
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
        Default: the conventions' choice, as for :func:`polars_rankeval.evaluate`
        (``"drop"`` for trec_eval, ``"zero"`` for ranx and ir_measures), so that
        :func:`~polars_rankeval.evaluate_judged` of the table scores the queries
        ``evaluate`` scores under the same conventions.
    duplicates
        ``"error"`` (default) or ``"keep_best"`` (keep the best-scored run row of
        a duplicated (query, doc)).
    validate
        Check the data first (default True), as :func:`polars_rankeval.evaluate` does.
    by, conventions
        As for :func:`polars_rankeval.evaluate`: segment columns (kept in the
        table), and the trec_eval version whose score precision orders rankings.
    memory_limit
        LazyFrame runs only, as for :func:`polars_rankeval.evaluate`: past an eighth of
        it, the run is read and joined piece by piece of whole rankings, each piece with
        its queries' qrels rows (as it comes, or bucket by bucket), so that only the
        table and one piece are held at once. Default ``"1GiB"``.

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
    limit = memory_bytes(memory_limit)
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

    tie_warnings = _TIE_WARNINGS.get()  # as at the call: a lazy table is made later

    def judged(run_df: pl.DataFrame, qrels_df: pl.DataFrame) -> pl.DataFrame:
        if validate:
            check_values(run_df, qrels_df, options, fractional=False)
        if tie_warnings:
            warn_tied_scores(run_df, options)
        return judged_table(run_df, qrels_df, options, check_duplicates=validate)

    if isinstance(run, pl.DataFrame):
        return judged(run, qrels.lazy().collect())
    schema = judged_schema(run.collect_schema(), qrels.lazy().collect_schema(), options)
    lazy_run = run

    def piece(
        rows: pl.DataFrame, qrels_rows: pl.DataFrame, systems: pl.Series | None, concurrent: bool
    ) -> Piece:
        if tie_warnings:
            warn_tied_scores(rows, options)
        table = judged_table(rows, qrels_rows, options, check_duplicates=validate,
                             systems=systems, concurrent=concurrent)  # fmt: skip
        return Piece(table, pl.DataFrame(), rows.height, qrels_rows.height)

    def pieces() -> pl.DataFrame:
        made = buckets.pieces_lazy(lazy_run, qrels, piece, options, validate=validate,
                                   limit=limit, fractional=False)  # fmt: skip
        return _stacked([p.scores for p in made], schema)

    return pl.defer(pieces, schema=schema)


_TIE_WARNINGS: ContextVar[bool] = ContextVar("tie_warnings", default=True)
"""Whether :func:`judge` warns of equal scores (:func:`warn_tied_scores`); off within
:func:`without_tie_warnings`."""


@contextmanager
def without_tie_warnings() -> Iterator[None]:
    """Within it, :func:`judge` does not warn of equal scores: for a caller that reads
    only the table's ranks, not a measure's own tie rule (the raw precision-recall
    points)."""
    token = _TIE_WARNINGS.set(False)
    try:
        yield
    finally:
        _TIE_WARNINGS.reset(token)


def warn_tied_scores(run: pl.DataFrame, options: Options) -> None:
    """Under conventions with measures that order or average equal scores their own way
    (``ties="average"``: scikit-learn's and torchmetrics' nDCG; ir_measures' Judged@k,
    RR@k, RBP, ... from providers with other tie rules), warn when a ranking of ``run``
    has equal scores: :func:`judge`'s table ranks them one after the other in the
    conventions' order, and such a measure read from it
    (:func:`~polars_rankeval.evaluate_judged`) scores that order. A log's distinct
    ranks have no equal scores to order.

    Examples
    --------
    >>> import warnings
    >>> from polars_rankeval.conventions import get_conventions
    >>> run = pl.DataFrame({"query": ["q", "q"], "doc": ["a", "b"], "score": [1.0, 1.0]})
    >>> sklearn = Options(query="query", doc="doc", conventions=get_conventions("sklearn"))
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     warn_tied_scores(run, sklearn)
    >>> print(str(seen[0].message).split(":")[0])
    The run has equal scores within a ranking (1 rankings)
    """
    conventions = options.conventions
    params = conventions.measure_params
    own = [f"{f}k" if f.endswith("@") else f for f in params if "ties" in params[f]]
    if conventions.ties == "average":
        own.insert(0, "nDCG (ties='average')")
    if not own or options.order != "score" or run.height < 2:
        return
    keys = [*options.keys, options.score]
    tied = run.select(keys).filter(pl.struct(keys).is_duplicated()).select(options.keys)
    if tied.height:
        rankings = tied.unique().height
        shown = ", ".join(own[:4]) + (", ..." if len(own) > 4 else "")
        msg = (
            f"The run has equal scores within a ranking ({rankings} rankings): judge's "
            f"table ranks them one after the other, so the measures of conventions "
            f"{conventions.name!r} that order or average equal scores their own way "
            f"({shown}) read the table's order instead. pr.evaluate(run, qrels, measures, "
            f"conventions={conventions.name!r}) gives each its own."
        )
        warnings.warn(msg, UserWarning, stacklevel=4)


def _stacked(tables: list[pl.DataFrame], schema: pl.Schema) -> pl.DataFrame:
    """The pieces' tables one after the other, in the dtypes of ``schema``."""
    if not tables:
        return pl.DataFrame(schema=schema)
    return pl.concat(tables, how="vertical_relaxed").cast(schema)


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
    run: pl.DataFrame,
    qrels: pl.DataFrame,
    options: Options,
    *,
    check_duplicates: bool,
    systems: pl.Series | None = None,
    concurrent: bool = True,
) -> pl.DataFrame:
    """Every retrieved row with its rank and grade, then each ranking's unretrieved judgments.

    The run and qrels are taken as :func:`~polars_rankeval.engine.pipeline.piece_columns`
    gives them to the engine (the ranking keys and the qrels in one chunk). The run is
    matched with every qrels row and every row put in rank order while the join goes
    on (:func:`_matched_in_order`). The rows come out in the order of the engine's
    sorted keys, ranking by ranking
    (:meth:`~polars_rankeval.engine.rank.RankOrder.ordered`), each ranking's
    unretrieved judgments after its retrieved rows (:func:`table_layout`). Each column
    is made in one pass over the table: the doc ids are gathered by where each row
    comes from (a run row or a qrels row), from the two stacked on a second thread
    while this one lists the unretrieved judgments; the ranks are each place's index
    in its ranking, null at the unretrieved judgments; the grades are scattered to the
    places of the judged rows only (a few in ten of the table), null elsewhere; the key
    columns are gathered by each place's ranking.
    ``systems``: those of the whole run, when this is one piece of it (``missing="zero"``);
    without ``concurrent``, one step after the other (a lazy run's larger pieces).
    """
    run, qrels = piece_columns(run, qrels, options)
    matched, ordered = _matched_in_order(run, qrels, options, check_duplicates, concurrent)
    n = matched.run.height
    decided = ranking_scope(matched, options, options.missing, systems)
    wanted = decided.flags.filter((pl.col(HAS_RUN) | pl.col(SCORED)) & pl.col(FACT).is_not_null())
    counts, starts = matched.groups.counts, matched.groups.starts
    doc_columns = _doc_columns(options)
    with ThreadPoolExecutor(max_workers=1) if concurrent else nullcontext() as second:
        # the run's doc ids, then the qrels', in one chunk: made beside the layout below
        run_docs, qrels_docs = matched.run.select(doc_columns), qrels.select(doc_columns)
        stacked = _submit(second, _docs_stacked, run_docs, qrels_docs)
        by_rank = ordered.by_rank
        judged_ranking = matched.groups.ids[matched.run_rows].astype(np.int64)
        judged_rank = ordered.places_of(matched.run_rows) - starts[judged_ranking]  # 0: first
        found = np.ones(len(judged_rank), bool)
        if options.depth is not None:
            by_rank = by_rank[matched.order.sorted_ranks() <= options.depth]
            counts = np.minimum(counts, options.depth)
            found = judged_rank < options.depth
        missed_ranking, at = unretrieved_judgments(
            wanted[RANKING].to_numpy().astype(np.int64),
            wanted[FACT].to_numpy().astype(np.int64),
            matched.side.judgments[FACT].to_numpy().astype(np.int64),
            matched.side.judgments[JUDGMENT].to_numpy().astype(np.int64),
            judged_ranking[found],
            matched.judgments[found],
        )
        layout = table_layout(counts, missed_ranking, decided.keys.height)
        total = len(by_rank) + len(at)
        retrieved = np.ones(total, bool)
        retrieved[layout.missed] = False
        source = np.empty(total, np.uint32)  # run row, or n + qrels row
        source[retrieved] = by_rank  # uint32, Polars' index type: gathered without a copy
        source[layout.missed] = n + at
        docs = _submit(second, lambda: stacked.result()[source])  # beside the columns below
        # the key columns after the doc ids on the second thread, unless the unretrieved
        # judgments outnumber the run's rows (the doc ids then keep it busy for longer)
        keys_thread = second if len(at) <= n else None
        keys = _submit(keys_thread, decided.keys.select(options.output_keys).__getitem__,
                       layout.rankings)  # fmt: skip
        rank = np.arange(1, total + 1, dtype=np.uint32)  # a place's rank: its place in its ranking
        rank -= np.repeat(layout.starts.astype(np.uint32), layout.sizes)
        graded = layout.starts[judged_ranking[found]] + judged_rank[found]  # judged rows' places
        columns = [
            _where(retrieved, pl.Series(options.rank, rank, dtype=pl.UInt32)),
            _grades_at(
                qrels[options.relevance].cast(pl.Int64).alias(options.relevance),
                total,
                np.concatenate([graded, layout.missed]),
                np.concatenate([matched.judgments[found], at]),
            ),
        ]
        return keys.result().hstack([*docs.result().get_columns(), *columns])


def _matched_in_order(
    run: pl.DataFrame, qrels: pl.DataFrame, options: Options, check: bool, concurrent: bool
) -> tuple[Matched, Ordered]:
    """The run matched with every qrels row (:func:`~polars_rankeval.engine.select.match_and_rank`),
    and every row of it in rank order, put so while the join goes on (on its own when
    ``duplicates="keep_best"`` ranks the run anew). With ``concurrent``, the qrels' two
    parts (the join's keys and the judgments) are made on a thread of their own from
    the start."""
    join_keys = partial(qrels_keys, qrels, options, -math.inf, check=check)
    side = partial(qrels_side, qrels, options)
    early: list[tuple[RankOrder, Ordered]] = []
    match = partial(
        match_and_rank,
        run,
        options,
        order=options.order,
        duplicates=options.duplicates,
        check=check,
        single_precision=options.single_precision,
        concurrent=concurrent,
        beside=lambda ranked: early.append((ranked, ranked.ordered())),
    )
    if concurrent:
        with ThreadPoolExecutor(max_workers=1) as qrels_thread:
            keys_made, side_made = qrels_thread.submit(join_keys), qrels_thread.submit(side)
            matched = match(side_made.result, keys_made.result)
    else:
        matched = match(side, join_keys)
    ordered = next((o for r, o in early if r is matched.order), None)
    return matched, ordered if ordered is not None else matched.order.ordered()


def _submit(pool: ThreadPoolExecutor | None, work: Callable[..., T], *args: Any) -> Future[T]:
    """``work(*args)`` on ``pool``'s thread, or done now without a pool."""
    if pool is not None:
        return pool.submit(work, *args)
    done: Future[T] = Future()
    done.set_result(work(*args))
    return done


def _docs_stacked(run_docs: pl.DataFrame, qrels_docs: pl.DataFrame) -> pl.DataFrame:
    """The run's doc columns, then the qrels', in one chunk (a gather from many chunks
    copies them first)."""
    return pl.concat([run_docs, qrels_docs], how="vertical_relaxed", rechunk=True)


def _unretrieved_by_query(
    rankings: np.ndarray,
    facts: np.ndarray,
    judgment_facts: np.ndarray,
    judgments: np.ndarray,
    found_judgments: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`unretrieved_judgments` when each query has one ranking (``facts`` distinct):
    the judgments of the rankings' queries that none retrieved, in their order."""
    n_facts = int(max(facts.max(initial=-1), judgment_facts.max(initial=-1))) + 1
    ranking_of = np.full(n_facts, -1, np.int64)
    ranking_of[facts] = rankings
    found = np.zeros(int(judgments.max(initial=-1)) + 1, bool)
    found[found_judgments[found_judgments < len(found)]] = True
    # every qrels row, in order (the usual case): a judgment is its own row number
    every = len(found) == len(judgments) and np.array_equal(judgments, np.arange(len(found)))
    kept = np.flatnonzero(
        (ranking_of[judgment_facts] >= 0) & ~(found if every else found[judgments])
    )
    missed_ranking = ranking_of[judgment_facts[kept]]
    by_ranking = np.argsort(missed_ranking, kind="stable")
    return missed_ranking[by_ranking], (kept if every else judgments[kept])[by_ranking]


@dataclass(frozen=True)
class TableLayout:
    """Where the rows of :func:`judge`'s table go (see :func:`table_layout`)."""

    starts: np.ndarray
    """Each ranking's first place (int64): its retrieved row of rank r is at ``start + r - 1``."""
    sizes: np.ndarray
    """Each ranking's places (int64): its retrieved rows, then its unretrieved judgments."""
    missed: np.ndarray
    """The place of each unretrieved judgment (in the order given)."""
    rankings: np.ndarray
    """The ranking of each place of the table (uint32)."""


def table_layout(counts: np.ndarray, missed: np.ndarray, n_rankings: int) -> TableLayout:
    """The table's places: ranking by ranking, its ``counts`` retrieved rows, then its
    unretrieved judgments (``missed``: the ranking of each, in their order).

    Examples
    --------
    >>> layout = table_layout(np.array([2, 1]), np.array([1, 0, 1]), 2)
    >>> layout.starts.tolist(), layout.missed.tolist(), layout.rankings.tolist()
    ([0, 3], [4, 2, 5], [0, 0, 0, 1, 1, 1])
    """
    retrieved_n = np.zeros(n_rankings, np.int64)
    retrieved_n[: len(counts)] = counts
    missed_n = np.bincount(missed, minlength=n_rankings)
    missed_before = np.cumsum(missed_n) - missed_n
    sizes = retrieved_n + missed_n
    starts = np.cumsum(sizes) - sizes
    # a missed judgment's place: its ranking's first place after the retrieved rows, plus
    # its index among the missed less the missed of the rankings before
    shift = starts + retrieved_n - missed_before
    if len(missed) > 1 and not bool(np.all(missed[1:] >= missed[:-1])):
        by_ranking = np.argsort(missed, kind="stable")
        places = np.empty(len(missed), np.int64)
        places[by_ranking] = shift[missed[by_ranking]] + np.arange(len(missed))
    else:  # already ranking by ranking (judge's)
        places = shift[missed] + np.arange(len(missed))
    rankings = np.repeat(np.arange(n_rankings, dtype=np.uint32), sizes)
    return TableLayout(starts, sizes, places, rankings)


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
    if len(np.unique(facts)) == len(facts):  # a ranking per query (one system): no pairs
        return _unretrieved_by_query(rankings, facts, judgment_facts, judgments, found_judgments)
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


def _grades_at(grades: pl.Series, total: int, places: np.ndarray, rows: np.ndarray) -> pl.Series:
    """A column of ``total`` rows: ``grades[rows]`` at ``places``, null elsewhere.

    Examples
    --------
    >>> _grades_at(pl.Series("g", [3, 1]), 4, np.array([2, 0]), np.array([0, 1])).to_list()
    [1, None, 3, None]
    """
    values = np.zeros(total, np.int64)
    kept = np.zeros(total, bool)
    if len(rows):  # none when the qrels have no row for these rankings
        values[places] = grades.fill_null(0).to_numpy()[rows]
        kept[places] = grades.is_not_null().to_numpy()[rows] if grades.has_nulls() else True
    return _where(kept, pl.Series(grades.name, values, dtype=pl.Int64))


def _where(keep: np.ndarray, values: pl.Series) -> pl.Series:
    """``values``, null where ``keep`` is False."""
    return pl.select(pl.when(pl.Series(keep)).then(values)).to_series().alias(values.name)
