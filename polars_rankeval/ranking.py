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

import polars as pl

from polars_rankeval._typing import FrameT, Missing, Order
from polars_rankeval.validation import prepare_inputs


def run_keys(query: str, system: str | None) -> list[str]:
    """Columns that identify one ranking: ``[system, query]`` or ``[query]``."""
    return [query] if system is None else [system, query]


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
        ``[system], query, doc, rank`` sorted by ranking then rank.

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
    doc_key = pl.col(doc).cast(pl.String)
    if order == "score":
        run = run.sort([*keys, score, doc_key], descending=[False] * len(keys) + [True, True])
    elif order == "rank":
        run = run.sort([*keys, rank, doc_key], descending=[False] * len(keys) + [False, True])
    elif order != "presorted":
        msg = f"order must be 'score', 'rank' or 'presorted'. Got {order!r} instead."
        raise ValueError(msg)
    ranked = run.select(
        *keys, doc, (pl.int_range(1, pl.len() + 1, dtype=pl.UInt32).over(keys)).alias(rank)
    )
    if depth is not None:
        ranked = ranked.filter(pl.col(rank) <= depth)
    return ranked


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
    system = prepare_inputs(
        run,
        qrels,
        query=query,
        doc=doc,
        score=score,
        relevance=relevance,
        rank=rank,
        system=system,
        order=order,
        duplicates=duplicates,
    )
    judged = judged_rows(
        run.lazy(),
        qrels.lazy(),
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
    )
    return judged.collect() if isinstance(run, pl.DataFrame) else judged


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
    """The lazy plan behind :func:`judge`, on inputs already validated."""
    keys = run_keys(query, system)
    extra = {"score": [score], "rank": [rank], "presorted": []}[order]
    run_lf = run.select(*keys, doc, *extra)
    qrels_lf = qrels.select(query, doc, pl.col(relevance).cast(pl.Int64))
    run_lf, qrels_lf = _align_ids(run_lf, qrels_lf, [query, doc])
    if duplicates == "keep_best" and order == "score":
        run_lf = run_lf.sort(score, descending=True).unique([*keys, doc], keep="first")

    ranked = rank_run(
        run_lf,
        query=query,
        doc=doc,
        score=score,
        rank=rank,
        system=system,
        order=order,
        depth=depth,
    )
    retrieved = ranked.join(qrels_lf, on=[query, doc], how="left", maintain_order="left")
    rankings = ranked.select(keys).unique()
    if missing == "zero":
        qrels_queries = qrels_lf.select(query).unique()
        rankings = (
            qrels_queries
            if system is None
            else rankings.select(system).unique().join(qrels_queries, how="cross")
        )
    unretrieved = (
        rankings.join(qrels_lf, on=query)
        .join(ranked.select(*keys, doc), on=[*keys, doc], how="anti")
        .select(*keys, doc, pl.lit(None, pl.UInt32).alias(rank), relevance)
    )
    return pl.concat([retrieved, unretrieved])
