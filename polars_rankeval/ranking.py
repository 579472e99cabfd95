"""Run + qrels -> judged table: one join, one ordering, ranks, relevance grades.

The judged table is the long format every metric expression reads. For each
(system, query) of the run it holds

* one row per retrieved document, with ``rank`` = 1, 2, ... in trec_eval order
  and ``relevance`` = the qrels grade (null when the document is not in qrels);
* one row per qrels document of that query that the run did *not* retrieve,
  with ``rank`` null and its grade: these rows carry |R| and the ideal gains,
  so every per-query fact a metric needs is an aggregation over the query's rows.

Within a query, retrieved rows come first and in rank order; this is the one
precondition the metric expressions rely on (for cumulative sums).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from polars_rankeval._typing import FrameT, Missing, Order
from polars_rankeval.judged_rows import MAX_ROWS, descending_key, judged_only_rows
from polars_rankeval.validation import prepare_inputs


def run_keys(query: str, system: str | None) -> list[str]:
    """Columns that identify one ranking: ``[system, query]`` or ``[query]``."""
    return [query] if system is None else [system, query]


_RID = "__rid"
_SYS = "__sys"
_KEY = "__key"
_VALUE = "__value"
_TIED = "__tied"
_TOP_KEY = 0xFFFF_FFFE  # the largest high word a retrieved row's key can take


def _descending_high_word(values: pl.Series) -> pl.Series:
    """High 32 bits of a key that sorts float64 values descending.

    The high word of :func:`polars_rankeval.judged_rows.descending_key`.
    Keeping only the high word is monotone: two values with different words
    are in the right order, and values that share a word (true ties, or floats
    closer than about 1e-6 relative) are put in exact order afterwards, by
    value then doc id. -0.0 is taken as 0.0.
    """
    x = values.cast(pl.Float64).fill_null(float("-inf")).to_numpy()
    high = (descending_key(x) >> np.uint64(32)).astype(np.uint32)
    return pl.Series(values.name, np.minimum(high, np.uint32(_TOP_KEY)), dtype=pl.UInt32)


def _code(column: str, categories: pl.Categories) -> pl.Expr:
    """A UInt32 code per distinct id (hashing, no sort); any id dtype."""
    return pl.col(column).cast(pl.String).cast(pl.Categorical(categories)).to_physical()


def _order_value(order: Order, score: str, rank: str) -> pl.Expr:
    """The value that orders a ranking, higher first: the score, or minus the rank."""
    if order == "score":
        return pl.col(score).cast(pl.Float64)
    return -pl.col(rank).cast(pl.Float64)


def _sort_key() -> pl.Expr:
    """u64 sort key: ranking code in the high word, descending value in the low word."""
    high = pl.col(_VALUE).map_batches(
        _descending_high_word, return_dtype=pl.UInt32, is_elementwise=True
    )
    return pl.col(_RID).cast(pl.UInt64) * (1 << 32) + high.cast(pl.UInt64)


def _same_as(offset: int, with_system: bool) -> pl.Expr:
    """Row has the same sort key (and system) as the row ``offset`` away."""
    same = pl.col(_KEY) == pl.col(_KEY).shift(offset)
    if with_system:
        same &= pl.col(_SYS) == pl.col(_SYS).shift(offset)
    return same.fill_null(False)


def _group_starts(with_system: bool) -> pl.Expr:
    """Row starts a run of equal sort keys (a tie group, or a lone row)."""
    return ~_same_as(1, with_system)


def _ranking_starts(with_system: bool) -> pl.Expr:
    """Row is the first of its ranking (rows sorted by key)."""
    first = (pl.col(_RID) != pl.col(_RID).shift(1)).fill_null(True)
    if with_system:
        first |= (pl.col(_SYS) != pl.col(_SYS).shift(1)).fill_null(True)
    return first


def _offset_since(start: pl.Expr) -> pl.Expr:
    """0, 1, 2, ... counted from the last row where ``start`` holds."""
    index = pl.int_range(pl.len(), dtype=pl.UInt32)
    return index - pl.when(start).then(index).forward_fill()


def _trec_ranks(rows: pl.LazyFrame, *, doc: str, rank: str, with_system: bool) -> pl.LazyFrame:
    """Every row with its trec_eval ``rank``; rows come out in no particular order.

    One sort on a single u64 key does almost all the work: a row whose key
    differs from both neighbours' gets its rank from its position. Rows whose
    key ties with a neighbour's (equal scores, mostly) are sorted again, among
    themselves, by value and by doc id compared as strings; each gets the rank
    of its group's first position plus its place in that order.
    """
    ordered = rows.with_columns(_sort_key().alias(_KEY)).sort(_KEY)
    if with_system:
        ordered = ordered.sort(_SYS, maintain_order=True)
    position_rank = _offset_since(_ranking_starts(with_system)) + 1
    ordered = (
        ordered.with_columns(
            (_same_as(1, with_system) | _same_as(-1, with_system)).alias(_TIED),
            position_rank.alias(rank),
        )
        .with_columns(pl.when(_group_starts(with_system)).then(pl.col(rank)).forward_fill())
        .cache()
    )
    plain = ordered.filter(~pl.col(_TIED))
    by = [*([_SYS] if with_system else []), _KEY, _VALUE, pl.col(doc).cast(pl.String)]
    ties = (
        ordered.filter(pl.col(_TIED))
        .sort(by, descending=[False] * (len(by) - 2) + [True, True])
        .with_columns(pl.col(rank) + _offset_since(_group_starts(with_system)))
    )
    return pl.concat([plain, ties]).drop(_TIED, _KEY)


def _ranked_rows(
    rows: pl.LazyFrame,
    *,
    query: str,
    doc: str,
    score: str,
    rank: str,
    system: str | None,
    order: Order,
    depth: int | None,
    in_order: bool = True,
) -> pl.LazyFrame:
    """Rows of a run (any extra columns carried along) with their trec_eval ``rank``.

    With ``in_order`` the rows come sorted by ranking then rank (rankings in no
    particular order) and internal columns are dropped; without it they come
    in no particular order, so that a filter placed later (e.g. keeping only
    judged rows) runs before the final sort instead of after it.
    """
    keys = run_keys(query, system)
    if order == "presorted":
        ranked = rows.with_columns(
            pl.int_range(1, pl.len() + 1, dtype=pl.UInt32).over(keys).alias(rank)
        )
        return ranked if depth is None else ranked.filter(pl.col(rank) <= depth)
    if order not in ("score", "rank"):
        msg = f"order must be 'score', 'rank' or 'presorted'. Got {order!r} instead."
        raise ValueError(msg)
    with_system = system is not None
    codes = [
        _code(query, pl.Categories.random()).alias(_RID),
        _order_value(order, score, rank).alias(_VALUE),
        *([_code(system, pl.Categories.random()).alias(_SYS)] if with_system else []),
    ]
    ranked = _trec_ranks(rows.with_columns(codes), doc=doc, rank=rank, with_system=with_system)
    if depth is not None:
        ranked = ranked.filter(pl.col(rank) <= depth)
    return _in_rank_order(ranked, rank=rank, system=system) if in_order else ranked


def _in_rank_order(ranked: pl.LazyFrame, *, rank: str, system: str | None) -> pl.LazyFrame:
    """Sort rows from ``_ranked_rows(..., in_order=False)`` by ranking then rank.

    Drops the internal columns; one u64 sort key (ranking code, rank), then a
    stable sort by system code when there are systems. Rows without a ranking
    code (none come from the run) are left out by the caller.
    """
    names = ranked.collect_schema().names()
    if _RID not in names:  # presorted: already in order
        return ranked
    key = pl.col(_RID).cast(pl.UInt64) * (1 << 32) + pl.col(rank).cast(pl.UInt64)
    ordered = ranked.sort(key)
    if system is not None:
        ordered = ordered.sort(_SYS, maintain_order=True)
    return ordered.drop(_RID, _VALUE, *([_SYS] if system is not None else []))


def rank_run(
    run: pl.LazyFrame,
    *,
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    rank: str = "rank",
    system: str | None = None,
    order: Order = "score",
    depth: int | None = None,
) -> pl.LazyFrame:
    """Order each ranking and number its rows 1..n in a ``rank`` column.

    Parameters
    ----------
    run
        Retrieved documents, one row each.
    query, doc, score, rank, system
        Column names. ``system`` is None when the run holds one system.
    order
        ``"score"`` (default, trec_eval): score descending, ties broken by
        doc id descending compared as strings byte by byte.
        ``"rank"``: by the run's own ``rank`` column ascending (ties as for score).
        ``"presorted"``: rows are already in rank order; no sort is paid for.
    depth
        Keep only the top ``depth`` documents of each ranking (trec_eval ``-M``).

    Returns
    -------
    pl.LazyFrame
        ``[system], query, doc, rank``: rankings in no particular order, each
        one's rows in rank order.

    Notes
    -----
    The rows are sorted once, on a single 64-bit key (the ranking's code and
    the high half of the score's bits); only rows whose key ties with a
    neighbour's are then sorted by score and doc id, among themselves.

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
    keys = run_keys(query, system)
    extra = {"score": [score], "rank": [rank], "presorted": []}.get(order, [])
    rows = run.select(*keys, doc, *extra)
    ranked = _ranked_rows(
        rows, query=query, doc=doc, score=score, rank=rank, system=system, order=order, depth=depth
    )
    return ranked.select(*keys, doc, rank)


def _align_ids(
    run: pl.LazyFrame, qrels: pl.LazyFrame, columns: Sequence[str]
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """Cast id columns to String on both sides where their dtypes differ."""
    run_schema, qrels_schema = run.collect_schema(), qrels.collect_schema()
    for name in columns:
        if run_schema[name] != qrels_schema[name]:
            run = run.with_columns(pl.col(name).cast(pl.String))
            qrels = qrels.with_columns(pl.col(name).cast(pl.String))
    return run, qrels


def judge(
    run: FrameT,
    qrels: FrameT,
    *,
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    relevance: str = "relevance",
    rank: str = "rank",
    system: str | None = "system",
    order: Order = "score",
    depth: int | None = None,
    missing: Missing = "drop",
    duplicates: str = "error",
    validate: bool | None = None,
) -> FrameT:
    """Join a run with its qrels into the judged table the metrics read.

    Parameters
    ----------
    run
        ``query, doc, score`` (and optionally ``system``, ``rank``).
    qrels
        ``query, doc, relevance`` (integer grades).
    query, doc, score, relevance, rank, system
        Column names. ``system`` is used only when the run has that column.
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
        Check the data before any work (default: for a DataFrame run); see
        :func:`polars_rankeval.validation.prepare_inputs`.

    Returns
    -------
    DataFrame or LazyFrame (as the run)
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
    _, judged = validated_judged_rows(
        run,
        qrels,
        query=query,
        doc=doc,
        score=score,
        relevance=relevance,
        rank=rank,
        system=system,
        order=order,
        depth=depth,
        missing=missing,
        duplicates=duplicates,
        validate=validate,
    )
    return judged.collect() if isinstance(run, pl.DataFrame) else judged


def validated_judged_rows(
    run: FrameT,
    qrels: FrameT,
    *,
    system: str | None,
    validate: bool | None,
    **options: Any,
) -> tuple[str | None, pl.LazyFrame]:
    """Validate the inputs, then plan the judged rows: (system column in use, plan).

    ``options`` are the column names and ``order``, ``depth``, ``missing``,
    ``duplicates`` of :func:`judged_rows`.
    """
    system = validate_inputs(run, qrels, system=system, validate=validate, **options)
    return system, judged_rows(run.lazy(), qrels.lazy(), system=system, **options)


def validate_inputs(
    run: FrameT,
    qrels: FrameT,
    *,
    system: str | None,
    validate: bool | None,
    duplicate_rows: bool = True,
    **options: Any,
) -> str | None:
    """:func:`polars_rankeval.validation.prepare_inputs` with :func:`judged_rows`' options."""
    check = {k: options[k] for k in ("query", "doc", "score", "relevance", "rank", "order")}
    return prepare_inputs(
        run,
        qrels,
        system=system,
        duplicates=options["duplicates"],
        validate=validate,
        duplicate_rows=duplicate_rows,
        **check,
    )


def takes_judged_only_path(
    run: FrameT, min_grade: int | None, order: Order, duplicates: str
) -> bool:
    """Whether evaluate scores through :func:`judged_only_table`.

    It does for a DataFrame run (of at most :data:`MAX_ROWS` rows, not
    presorted, duplicates refused) when every measure has a ``min_grade``.
    """
    return (
        min_grade is not None
        and isinstance(run, pl.DataFrame)
        and 0 < run.height <= MAX_ROWS
        and order != "presorted"
        and duplicates == "error"
    )


def judged_only_table(
    run: pl.DataFrame,
    qrels: FrameT,
    *,
    min_grade: int,
    check_duplicates: bool,
    system: str | None,
    **options: Any,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """:func:`polars_rankeval.judged_rows.judged_only_rows` on validated inputs.

    Takes the columns it needs and aligns the id dtypes of run and qrels first;
    ``options`` are those of :func:`judged_rows`.
    """
    query, doc, score, rank = (options[k] for k in ("query", "doc", "score", "rank"))
    value = score if options["order"] == "score" else rank
    run_lf, qrels_lf = _align_ids(
        run.lazy().select(*run_keys(query, system), doc, value),
        qrels.lazy().select(query, doc, options["relevance"]),
        [query, doc],
    )
    names = ("query", "doc", "score", "relevance", "rank", "order", "depth", "missing")
    return judged_only_rows(
        run_lf.collect(),
        qrels_lf.collect(),
        system=system,
        min_grade=min_grade,
        check_duplicates=check_duplicates,
        **{k: options[k] for k in names},
    )


def judged_rows(
    run: pl.LazyFrame,
    qrels: pl.LazyFrame,
    *,
    query: str,
    doc: str,
    score: str,
    relevance: str,
    rank: str,
    system: str | None,
    order: Order,
    depth: int | None,
    missing: Missing,
    duplicates: str,
) -> pl.LazyFrame:
    """The lazy plan behind :func:`judge`, on inputs already validated.

    One left join of the run with qrels, then one sort (see :func:`rank_run`)
    that carries the grades along; the judged documents each ranking missed
    are found by an anti join against the retrieved *judged* rows only.
    Retrieved rows come first within a ranking, in rank order.
    """
    keys = run_keys(query, system)
    extra = {"score": [score], "rank": [rank], "presorted": []}[order]
    run_lf = run.select(*keys, doc, *extra)
    qrels_lf = qrels.select(query, doc, pl.col(relevance).cast(pl.Int64))
    run_lf, qrels_lf = _align_ids(run_lf, qrels_lf, [query, doc])
    if duplicates == "keep_best" and order == "score":
        run_lf = run_lf.sort(score, descending=True).unique([*keys, doc], keep="first")

    keep = "left" if order == "presorted" else "none"
    joined = run_lf.join(qrels_lf, on=[query, doc], how="left", maintain_order=keep)
    ranked = _ranked_rows(
        joined,
        query=query,
        doc=doc,
        score=score,
        rank=rank,
        system=system,
        order=order,
        depth=depth,
        in_order=False,
    )
    retrieved = _in_rank_order(ranked, rank=rank, system=system).select(*keys, doc, rank, relevance)
    rankings = ranked.filter(pl.col(rank) == 1).select(keys)
    if missing == "zero":
        qrels_queries = qrels_lf.select(query).unique()
        rankings = (
            qrels_queries
            if system is None
            else rankings.select(system).unique().join(qrels_queries, how="cross")
        )
    found = ranked.filter(pl.col(relevance).is_not_null()).select(*keys, doc)
    unretrieved = (
        rankings.join(qrels_lf, on=query)
        .join(found, on=[*keys, doc], how="anti")
        .select(*keys, doc, pl.lit(None, pl.UInt32).alias(rank), relevance)
    )
    return pl.concat([retrieved, unretrieved])
