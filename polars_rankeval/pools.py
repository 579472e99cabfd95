"""Pools: which documents of many runs go to the assessors, and how much of a run is judged.

:func:`make_pool` builds a TREC-style pool from many runs (the top k of each, or
the documents the runs rank highest together by RBP or reciprocal-rank weight),
as trectools' ``TrecPoolMaker`` does; :func:`pool_coverage` tells how much of each
run's top k a pool or a qrels file holds (trectools' ``check_coverage`` and
``get_pool_coverage``); :func:`unjudged` lists the documents of the runs' top k
that have no judgment yet, and :func:`write_pool` writes a pool for the assessors
(trectools' ``export_document_list``). Everything is a Polars plan: a LazyFrame
in gives a LazyFrame out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Literal, TypeAlias, overload

import numpy as np
import polars as pl

from polars_rankeval._typing import ArrowStreamExportable, IntoFrame, PolarsFrame
from polars_rankeval.inputs import as_frame
from polars_rankeval.io import check_writable_ids
from polars_rankeval.validation import (
    check_choice,
    check_columns,
    check_int,
    check_reserved,
    check_score_dtype,
    key_hash,
)

PoolStrategy: TypeAlias = Literal["top_k", "rbp", "rrf"]
RBPMerge: TypeAlias = Literal["sum", "max"]
PoolFormat: TypeAlias = Literal["relevation", "filelist"]
PoolOrder: TypeAlias = Literal["score", "rank"]

POOL_DEPTH = 10
"""Documents per query (top_k: per run and query), trectools' ``topX``."""
RBP_P = 0.8
"""RBP's persistence p, trectools' ``rbp_p``."""
RRF_DEN = 60
"""The reciprocal-rank constant, trectools' ``rrf_den`` (Cormack et al. 2009)."""

IntoRuns: TypeAlias = IntoFrame | Sequence[IntoFrame] | Mapping[str, IntoFrame]
Eager: TypeAlias = pl.DataFrame | ArrowStreamExportable
LazyRuns: TypeAlias = pl.LazyFrame | Sequence[pl.LazyFrame] | Mapping[str, pl.LazyFrame]
EagerRuns: TypeAlias = Eager | Sequence[Eager] | Mapping[str, Eager]

# Internal column names: the output never carries them.
_SYSTEM, _RANK, _DOC_TEXT, _WEIGHT = "__pool_system", "__pool_rank", "__pool_doc", "__pool_w"


def _one_run(
    frame: PolarsFrame, name: str, *, query: str, doc: str, score: str, by_rank: str | None
) -> None:
    schema = frame.lazy().collect_schema()
    check_reserved(
        {"query": query, "doc": doc},
        ("systems", "ranks", "best_rank", "weight"),
        "the pool functions (make_pool, unjudged, pool_coverage)",
        prefix="__pool_",
    )
    if by_rank is None:
        check_columns(schema, {"query": query, "doc": doc, "score": score}, name)
        check_score_dtype(schema, score)
    else:
        check_columns(schema, {"query": query, "doc": doc, "rank": by_rank}, name)
        if not schema[by_rank].is_integer():
            msg = (
                f"{name} column {by_rank!r} must hold integer ranks (1 = top) for "
                f"order='rank'. Got dtype {schema[by_rank]}."
            )
            raise TypeError(msg)
    for column in (query, doc):
        dtype = schema[column]
        if not (dtype.is_integer() or dtype in (pl.String, pl.Categorical)):
            msg = (
                f"{name} column {column!r} must hold integer or string ids. Got dtype {dtype}; "
                f"cast it first, e.g. pl.col({column!r}).cast(pl.String)."
            )
            raise TypeError(msg)


def _as_runs(
    runs: IntoRuns, *, query: str, doc: str, score: str, system: str | None, by_rank: str | None
) -> tuple[pl.LazyFrame, bool]:
    """Runs as one lazy long frame ``_SYSTEM (String), query, doc, score`` and whether
    any input was lazy. A dict's keys name its runs; a frame of a list keeps its own
    system column, or is named ``run1``, ``run2``, ... by its place."""
    if isinstance(runs, Mapping):
        items = [(str(k), v) for k, v in runs.items()]
        named = True
    elif isinstance(runs, Sequence) and not isinstance(runs, str | bytes):
        items = [(f"run{i + 1}", v) for i, v in enumerate(runs)]
        named = False
    else:
        items, named = [("run1", runs)], False
    if not items:
        msg = "runs is empty: pass one frame with a system column, or a list or dict of runs."
        raise ValueError(msg)
    parts, lazy = [], False
    for label, obj in items:
        where = f"runs[{label!r}]" if named else "run" if len(items) == 1 else f"runs[{label}]"
        frame = as_frame(obj, where, (query, doc, score))
        lazy = lazy or isinstance(frame, pl.LazyFrame)
        _one_run(frame, where, query=query, doc=doc, score=score, by_rank=by_rank)
        names = frame.lazy().collect_schema().names()
        name = pl.lit(label)
        if not named and system is not None and system in names:
            name = pl.col(system).cast(pl.String)
        # by a rank column: its negation is the score (rank ascending, ties by doc id)
        key = pl.col(score) if by_rank is None else -pl.col(by_rank).cast(pl.Float64)
        parts.append(frame.lazy().select(name.alias(_SYSTEM), query, doc, key.alias(score)))
    return _concat(parts, (query, doc)), lazy


def _concat(parts: list[pl.LazyFrame], ids: Sequence[str]) -> pl.LazyFrame:
    """One frame; ids of different integer and string dtypes become strings."""
    schemas = [p.collect_schema() for p in parts]
    for column in ids:
        if len({s[column] for s in schemas}) > 1:
            parts = [p.with_columns(pl.col(column).cast(pl.String)) for p in parts]
    return pl.concat(parts, how="vertical_relaxed")


def _check_values(
    frame: pl.LazyFrame, *, query: str, doc: str, score: str, label: str | None = None
) -> None:
    """Null ids, null or NaN scores: raise naming the first bad row (one streaming pass).
    ``label``: the rank column the score column was made of, if any."""
    key = f"rank {label!r}" if label else f"score {score!r}"
    problems = [
        (pl.col(query).is_null(), f"has a null {query!r}"),
        (pl.col(doc).is_null(), f"has a null {doc!r}"),
        (pl.col(score).is_null(), f"has a null {key}"),
    ]
    if frame.collect_schema()[score].is_float():
        problems.append(
            (pl.col(score).is_nan(), f"has a NaN score {score!r} (it cannot be ranked)")
        )
    counts = frame.select(c.sum().alias(str(i)) for i, (c, _) in enumerate(problems))
    for (condition, problem), count in zip(
        problems, counts.collect(engine="streaming").row(0), strict=True
    ):
        if count:
            row = frame.filter(condition).head(1).collect().row(0, named=True)
            system = row.pop(_SYSTEM)
            msg = f"run {system!r} {problem} ({count} such rows): {row}."
            raise ValueError(msg)


def _check_duplicates(frame: pl.LazyFrame, *, query: str, doc: str) -> None:
    """A document twice in one run's ranking: raise naming the run, query and doc.

    Distinct 64-bit hashes of the keys prove there is none (one pass over a u64
    column); only a collision or a duplicate pays the group_by on the ids."""
    keys = key_hash([_SYSTEM, query, doc])
    if frame.select(keys.n_unique() == pl.len()).collect(engine="streaming").item():
        return
    counts = frame.group_by(_SYSTEM, query, doc).agg(pl.len().alias("__n"))
    twice = counts.filter(pl.col("__n") > 1).head(1).collect(engine="streaming")
    if twice.height:
        system, q, d, n = twice.row(0)
        msg = (
            f"run {system!r} has {n} rows for ({query}={q!r}, {doc}={d!r}): a document can "
            f"be ranked once per query. Keep one row per (query, doc) first."
        )
        raise ValueError(msg)


def _ranked(
    runs: IntoRuns,
    *,
    query: str,
    doc: str,
    score: str,
    system: str | None,
    validate: bool,
    by_rank: str | None = None,
) -> tuple[pl.LazyFrame, bool]:
    """Each run's rows with their rank: score descending, ties by doc id descending as
    strings (trec_eval's order), numbered 1..n per (run, query)."""
    frame, lazy = _as_runs(runs, query=query, doc=doc, score=score, system=system, by_rank=by_rank)
    if validate:
        _check_values(frame, query=query, doc=doc, score=score, label=by_rank)
        _check_duplicates(frame, query=query, doc=doc)
    order = [pl.col(score), pl.col(doc).cast(pl.String)]
    rank = pl.int_range(1, pl.len() + 1, dtype=pl.UInt32).over(
        [_SYSTEM, query], order_by=order, descending=True
    )
    return frame.with_columns(rank.alias(_RANK)), lazy


def _contributors(rank: str = _RANK) -> list[pl.Expr]:
    return [
        pl.col(_SYSTEM).sort_by(_SYSTEM).alias("systems"),
        pl.col(rank).sort_by(_SYSTEM).alias("ranks"),
        pl.col(rank).min().alias("best_rank"),
    ]


def _check_pool_options(
    strategy: str, depth: int, p: float, rbp_strategy: str, rrf_den: float
) -> None:
    check_choice("strategy", strategy, PoolStrategy)
    check_int("depth", depth, minimum=1)
    check_choice("rbp_strategy", rbp_strategy, RBPMerge)
    if isinstance(p, bool) or not isinstance(p, int | float) or not 0.0 < p < 1.0:
        msg = f"p (RBP's persistence) must be a number strictly between 0 and 1. Got {p!r} instead."
        raise ValueError(msg)
    if isinstance(rrf_den, bool) or not isinstance(rrf_den, int | float) or not rrf_den >= 0:
        msg = f"rrf_den must be a number >= 0. Got {rrf_den!r} instead."
        raise ValueError(msg)


EXACT_SCALE = 2.0**100
"""Weights are summed as integers in units of 2^-100: every term, a double <= 1,
becomes an exact integer (bits below 2^-100 aside), and an integer sum is the same
in any order, so documents whose weights are equal tie exactly (a floating-point
sum's last digit follows the order Polars' threads add in)."""


def _weights(
    ranked: pl.LazyFrame,
    *,
    query: str,
    doc: str,
    strategy: str,
    p: float,
    rbp_strategy: str,
    rrf_den: float,
) -> pl.LazyFrame:
    """``query, doc, weight``: each retrieved document's RBP or RRF weight over the runs."""
    rank = pl.col(_RANK).cast(pl.Float64)
    if strategy == "rbp":
        term = (1.0 - p) * pl.lit(p, dtype=pl.Float64).pow(rank - 1.0)
    else:
        term = 1.0 / (pl.lit(rrf_den, dtype=pl.Float64) + rank)
    if strategy == "rbp" and rbp_strategy == "max":
        return ranked.group_by(query, doc).agg(term.max().alias("weight"))
    exact = (term * EXACT_SCALE).cast(pl.Int128).sum()
    return ranked.group_by(query, doc).agg(
        (exact.cast(pl.Float64) * (1.0 / EXACT_SCALE)).alias("weight")
    )


def _pool(
    ranked: pl.LazyFrame,
    *,
    query: str,
    doc: str,
    strategy: str,
    depth: int,
    p: float,
    rbp_strategy: str,
    rrf_den: float,
) -> pl.LazyFrame:
    text = pl.col(doc).cast(pl.String)
    if strategy == "top_k":
        top = ranked.filter(pl.col(_RANK) <= depth)
        pooled = top.group_by(query, doc).agg(_contributors())
        return pooled.sort(query, "best_rank", text)
    ranked = ranked.cache()  # read twice below: ranked once
    weights = _weights(
        ranked,
        query=query,
        doc=doc,
        strategy=strategy,
        p=p,
        rbp_strategy=rbp_strategy,
        rrf_den=rrf_den,
    )
    # weight descending, ties by doc id ascending: trectools' order
    order = weights.sort([query, "weight", text], descending=[False, True, False])
    top = order.filter(pl.int_range(pl.len()).over(query) < depth)
    pooled = ranked.join(top.select(query, doc), on=[query, doc], how="semi")
    contributors = pooled.group_by(query, doc).agg(_contributors())
    return top.join(contributors, on=[query, doc], how="left", maintain_order="left")


def _out(frame: pl.LazyFrame, lazy: bool) -> pl.DataFrame | pl.LazyFrame:
    return frame if lazy else frame.collect()


@overload
def make_pool(
    runs: LazyRuns,
    *,
    strategy: PoolStrategy = "top_k",
    depth: int = POOL_DEPTH,
    p: float = RBP_P,
    rbp_strategy: RBPMerge = "sum",
    rrf_den: float = RRF_DEN,
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    rank: str = "rank",
    order: PoolOrder = "score",
    system: str | None = "system",
    validate: bool = True,
) -> pl.LazyFrame: ...
@overload
def make_pool(
    runs: EagerRuns,
    *,
    strategy: PoolStrategy = "top_k",
    depth: int = POOL_DEPTH,
    p: float = RBP_P,
    rbp_strategy: RBPMerge = "sum",
    rrf_den: float = RRF_DEN,
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    rank: str = "rank",
    order: PoolOrder = "score",
    system: str | None = "system",
    validate: bool = True,
) -> pl.DataFrame: ...
@overload
def make_pool(
    runs: IntoRuns,
    *,
    strategy: PoolStrategy = "top_k",
    depth: int = POOL_DEPTH,
    p: float = RBP_P,
    rbp_strategy: RBPMerge = "sum",
    rrf_den: float = RRF_DEN,
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    rank: str = "rank",
    order: PoolOrder = "score",
    system: str | None = "system",
    validate: bool = True,
) -> pl.DataFrame | pl.LazyFrame: ...
def make_pool(
    runs: IntoRuns,
    *,
    strategy: PoolStrategy = "top_k",
    depth: int = POOL_DEPTH,
    p: float = RBP_P,
    rbp_strategy: RBPMerge = "sum",
    rrf_den: float = RRF_DEN,
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    rank: str = "rank",
    order: PoolOrder = "score",
    system: str | None = "system",
    validate: bool = True,
) -> pl.DataFrame | pl.LazyFrame:
    r"""The (query, doc) pairs to judge: a pool of many runs, per query.

    Each run is ranked as :func:`~polars_rankeval.evaluate` ranks it (score
    descending, ties broken by doc id descending, compared as strings), then:

    - ``"top_k"`` (trectools ``topX``): the union of every run's top ``depth``
      documents.
    - ``"rbp"``: each retrieved document weighs its RBP contribution
      :math:`(1 - p)\, p^{r - 1}` at rank r of a run; the weights of a document
      over the runs are summed (``rbp_strategy="sum"``) or their maximum taken
      (``"max"``); the ``depth`` documents of highest weight are pooled.
    - ``"rrf"``: as ``"rbp"`` with the reciprocal-rank weight summed over runs

    .. math:: w(d) = \sum_{s} \frac{1}{\mathit{rrf\_den} + r_s(d)}

    For ``"rbp"`` and ``"rrf"``, ties in weight at the cut are broken by doc id
    ascending (compared as strings), which is the order trectools' stable sort
    leaves them in; ``depth`` documents per query exactly (fewer when fewer were
    retrieved). Weights are summed exactly (as integers in units of
    :math:`2^{-100}`), so documents of equal weight tie whatever order the rows
    come in.

    Parameters
    ----------
    runs
        One frame with a ``system`` column (or one run without it), a list of
        frames (each keeps its own ``system`` column; one without is named
        ``run1``, ``run2``, ... by its place), or a dict ``{name: run}``. Polars
        (lazy or not), pandas or Arrow frames.
    strategy
        ``"top_k"`` (default), ``"rbp"`` or ``"rrf"``.
    depth
        ``"top_k"``: documents per run and query; ``"rbp"``, ``"rrf"``:
        documents per query (trectools ``topX``; default 10).
    p
        RBP's persistence, strictly between 0 and 1 (default 0.8).
    rbp_strategy
        ``"sum"`` (default) or ``"max"``: how a document's RBP weights over runs
        combine.
    rrf_den
        The constant of reciprocal-rank fusion (default 60).
    query, doc, score, rank, system
        Column names.
    order
        ``"score"`` (default): score descending, ties by doc id descending;
        ``"rank"``: by the run's ``rank`` column ascending (ties by doc id
        descending), renumbered 1..n (trectools' RBP and RRF pools read a run
        file's rank column).
    validate
        Refuse null ids, null or NaN scores and a (system, query, doc) given
        twice (default True); on a LazyFrame each check is one streaming pass.

    Returns
    -------
    DataFrame or LazyFrame (a LazyFrame when any run is one)
        ``query, doc, [weight], systems, ranks, best_rank``: one row per pooled
        document, by query and then in pool order (``best_rank`` for
        ``"top_k"``, ``weight`` descending otherwise). ``systems`` lists the runs
        that contributed the document (for ``"top_k"`` those that have it in
        their top ``depth``; otherwise every run that retrieved it), ``ranks``
        its rank in each of them, and ``best_rank`` the best of these.

    References
    ----------
    Spärck Jones and van Rijsbergen, "Report on the need for and provision of an
    ideal information retrieval test collection", 1975 (pooling). Moffat and
    Zobel, "Rank-biased precision for measurement of retrieval effectiveness",
    TOIS 2008. Cormack, Clarke and Büttcher, "Reciprocal rank fusion outperforms
    Condorcet and individual rank learning methods", SIGIR 2009.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> runs = pl.DataFrame({"system": ["bm25"] * 3 + ["dense"] * 3, "query": 1,
    ...                      "doc": ["a", "b", "c", "b", "d", "a"],
    ...                      "score": [3.0, 2.0, 1.0, 3.0, 2.0, 1.0]})
    >>> pr.make_pool(runs, depth=2)
    shape: (3, 5)
    ┌───────┬─────┬───────────────────┬───────────┬───────────┐
    │ query ┆ doc ┆ systems           ┆ ranks     ┆ best_rank │
    │ ---   ┆ --- ┆ ---               ┆ ---       ┆ ---       │
    │ i32   ┆ str ┆ list[str]         ┆ list[u32] ┆ u32       │
    ╞═══════╪═════╪═══════════════════╪═══════════╪═══════════╡
    │ 1     ┆ a   ┆ ["bm25"]          ┆ [1]       ┆ 1         │
    │ 1     ┆ b   ┆ ["bm25", "dense"] ┆ [2, 1]    ┆ 1         │
    │ 1     ┆ d   ┆ ["dense"]         ┆ [2]       ┆ 2         │
    └───────┴─────┴───────────────────┴───────────┴───────────┘

    With RRF, b (ranks 2 and 1: 1/62 + 1/61) outweighs a (1/61 + 1/63):

    >>> pr.make_pool(runs, strategy="rrf", depth=2).select("doc", "weight")
    shape: (2, 2)
    ┌─────┬──────────┐
    │ doc ┆ weight   │
    │ --- ┆ ---      │
    │ str ┆ f64      │
    ╞═════╪══════════╡
    │ b   ┆ 0.032522 │
    │ a   ┆ 0.032266 │
    └─────┴──────────┘
    """
    _check_pool_options(strategy, depth, p, rbp_strategy, rrf_den)
    check_choice("order", order, PoolOrder)
    by_rank = rank if order == "rank" else None
    ranked, lazy = _ranked(
        runs, query=query, doc=doc, score=score, system=system, validate=validate, by_rank=by_rank
    )
    pool = _pool(
        ranked,
        query=query,
        doc=doc,
        strategy=strategy,
        depth=depth,
        p=p,
        rbp_strategy=rbp_strategy,
        rrf_den=rrf_den,
    )
    return _out(pool, lazy)


def _judged_pairs(judged: IntoFrame, *, query: str, doc: str) -> tuple[pl.LazyFrame, bool]:
    frame = as_frame(judged, "judged")
    schema = frame.lazy().collect_schema()
    check_columns(schema, {"query": query, "doc": doc}, "judged")
    pairs = frame.lazy().select(query, doc).unique()
    return pairs, isinstance(frame, pl.LazyFrame)


def _matching_ids(
    left: pl.LazyFrame, right: pl.LazyFrame, ids: Sequence[str]
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """Both frames with ids of one dtype: an integer and a string id become strings."""
    a, b = left.collect_schema(), right.collect_schema()
    for column in ids:
        if a[column] != b[column]:
            for dtype in (a[column], b[column]):
                if dtype.is_float():
                    msg = (
                        f"Column {column!r} is {a[column]} in the runs and {b[column]} in "
                        f"judged; floating-point ids cannot be matched safely. Cast both "
                        f"to pl.String or pl.Int64 first."
                    )
                    raise TypeError(msg)
            left = left.with_columns(pl.col(column).cast(pl.String))
            right = right.with_columns(pl.col(column).cast(pl.String))
    return left, right


@overload
def pool_coverage(
    runs: LazyRuns,
    judged: IntoFrame,
    *,
    depth: int = POOL_DEPTH,
    per_query: bool = False,
    level: float = 0.95,
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    rank: str = "rank",
    order: PoolOrder = "score",
    system: str | None = "system",
    validate: bool = True,
) -> pl.LazyFrame: ...
@overload
def pool_coverage(
    runs: EagerRuns,
    judged: Eager,
    *,
    depth: int = POOL_DEPTH,
    per_query: bool = False,
    level: float = 0.95,
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    rank: str = "rank",
    order: PoolOrder = "score",
    system: str | None = "system",
    validate: bool = True,
) -> pl.DataFrame: ...
@overload
def pool_coverage(
    runs: IntoRuns,
    judged: IntoFrame,
    *,
    depth: int = POOL_DEPTH,
    per_query: bool = False,
    level: float = 0.95,
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    rank: str = "rank",
    order: PoolOrder = "score",
    system: str | None = "system",
    validate: bool = True,
) -> pl.DataFrame | pl.LazyFrame: ...
def pool_coverage(
    runs: IntoRuns,
    judged: IntoFrame,
    *,
    depth: int = POOL_DEPTH,
    per_query: bool = False,
    level: float = 0.95,
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    rank: str = "rank",
    order: PoolOrder = "score",
    system: str | None = "system",
    validate: bool = True,
) -> pl.DataFrame | pl.LazyFrame:
    r"""How much of each run's top ``depth`` is judged (or in a pool), per query.

    For a run and a query with top-k documents :math:`D_k` (ranked as
    :func:`~polars_rankeval.evaluate` ranks them) and judged pairs J:

    .. math:: \mathit{judged} = |D_k \cap J|, \qquad
              \mathit{coverage} = \frac{|D_k \cap J|}{|D_k|}

    (``coverage`` is :math:`\mathit{Judged@k}`; ``judged`` is trectools'
    ``check_qrel_coverage`` count). Over the queries of a system, the mean and its
    t interval :math:`\bar x \pm t_{n-1,\,(1+level)/2}\, s/\sqrt{n}`, as
    trectools' ``get_pool_coverage`` gives it.

    Parameters
    ----------
    runs
        As :func:`make_pool` takes them.
    judged
        Frame with ``query`` and ``doc`` columns: qrels (a row of any grade
        counts as judged) or a pool from :func:`make_pool`.
    depth
        The top k looked at (default 10).
    per_query
        One row per system and query (True) or per system (False, default).
    level
        Coverage of the interval (default 0.95).
    query, doc, score, rank, system, order, validate
        As for :func:`make_pool`.

    Returns
    -------
    DataFrame or LazyFrame (a LazyFrame when any input is one)
        ``per_query=True``: ``system, query, retrieved, judged, coverage``, the
        run's queries (a query of ``judged`` that a run lacks has no row).
        ``per_query=False``: ``system, queries, judged, judged_ci, coverage,
        coverage_low, coverage_high``: the mean count and the half-width of its
        interval (trectools' pair), the mean share and its interval. The
        interval is NaN for a single query.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> run = pl.DataFrame({"query": [1, 1, 1, 2, 2], "doc": ["a", "b", "c", "a", "d"],
    ...                     "score": [3.0, 2.0, 1.0, 2.0, 1.0]})
    >>> qrels = pl.DataFrame({"query": [1, 1, 2], "doc": ["a", "c", "a"], "relevance": [1, 0, 1]})
    >>> pr.pool_coverage(run, qrels, depth=2, per_query=True)
    shape: (2, 5)
    ┌────────┬───────┬───────────┬────────┬──────────┐
    │ system ┆ query ┆ retrieved ┆ judged ┆ coverage │
    │ ---    ┆ ---   ┆ ---       ┆ ---    ┆ ---      │
    │ str    ┆ i64   ┆ u32       ┆ u32    ┆ f64      │
    ╞════════╪═══════╪═══════════╪════════╪══════════╡
    │ run1   ┆ 1     ┆ 2         ┆ 1      ┆ 0.5      │
    │ run1   ┆ 2     ┆ 2         ┆ 1      ┆ 0.5      │
    └────────┴───────┴───────────┴────────┴──────────┘

    The top 2 of query 1 are a (judged) and b (not); of query 2, a and d.
    """
    check_int("depth", depth, minimum=1)
    if isinstance(level, bool) or not isinstance(level, float) or not 0.0 < level < 1.0:
        msg = f"level must be a float strictly between 0 and 1. Got {level!r} instead."
        raise ValueError(msg)
    check_choice("order", order, PoolOrder)
    by_rank = rank if order == "rank" else None
    ranked, lazy_runs = _ranked(
        runs, query=query, doc=doc, score=score, system=system, validate=validate, by_rank=by_rank
    )
    pairs, lazy_judged = _judged_pairs(judged, query=query, doc=doc)
    top = ranked.filter(pl.col(_RANK) <= depth).select(_SYSTEM, query, doc)
    top, pairs = _matching_ids(top, pairs, (query, doc))
    flag = "__pool_judged"
    marked = top.join(pairs.with_columns(pl.lit(True).alias(flag)), on=[query, doc], how="left")
    counts = marked.group_by(_SYSTEM, query).agg(
        pl.len().cast(pl.UInt32).alias("retrieved"),
        pl.col(flag).count().cast(pl.UInt32).alias("judged"),
    )
    counts = counts.with_columns((pl.col("judged") / pl.col("retrieved")).alias("coverage"))
    counts = counts.rename({_SYSTEM: "system"}).sort("system", query)
    if not per_query:
        counts = _summary(counts, level)
    return _out(counts, lazy_runs or lazy_judged)


def _t_quantile(level: float) -> pl.Expr:
    """:math:`t_{n-1,(1+level)/2}` for the ``queries`` column (NaN for one query)."""
    from scipy import stats

    def quantile(n: pl.Series) -> pl.Series:
        df = n.to_numpy().astype(np.float64) - 1.0
        with np.errstate(invalid="ignore"):
            values = stats.t.ppf((1.0 + level) / 2.0, np.where(df > 0, df, np.nan))
        return pl.Series(values, dtype=pl.Float64)

    return pl.col("queries").map_batches(quantile, return_dtype=pl.Float64)


def _ordered_sum(values: pl.Expr) -> pl.Expr:
    """The sum of a group's values added smallest first: one order whatever the rows'
    order, so equal inputs give equal sums (a plain sum's order follows the threads)."""
    return values.sort().cum_sum().last()


def _mean_sd(values: pl.Expr, name: str) -> list[pl.Expr]:
    n = pl.len().cast(pl.Float64)
    mean = _ordered_sum(values) / n
    squares = _ordered_sum((values - mean) ** 2)
    sd = (squares / (n - 1.0)).sqrt()
    return [mean.alias(name), pl.when(n > 1).then(sd).otherwise(float("nan")).alias(f"__sd_{name}")]


def _summary(counts: pl.LazyFrame, level: float) -> pl.LazyFrame:
    summary = counts.group_by("system").agg(
        pl.len().cast(pl.UInt32).alias("queries"),
        *_mean_sd(pl.col("judged").cast(pl.Float64), "judged"),
        *_mean_sd(pl.col("coverage"), "coverage"),
    )
    half = _t_quantile(level) / pl.col("queries").cast(pl.Float64).sqrt()
    spread = pl.col("__sd_coverage") * half
    return (
        summary.with_columns(
            (pl.col("__sd_judged") * half).alias("judged_ci"),
            (pl.col("coverage") - spread).alias("coverage_low"),
            (pl.col("coverage") + spread).alias("coverage_high"),
        )
        .select(
            "system",
            "queries",
            "judged",
            "judged_ci",
            "coverage",
            "coverage_low",
            "coverage_high",
        )
        .sort("system")
    )


@overload
def unjudged(
    runs: LazyRuns,
    judged: IntoFrame,
    *,
    strategy: PoolStrategy = "top_k",
    depth: int = POOL_DEPTH,
    p: float = RBP_P,
    rbp_strategy: RBPMerge = "sum",
    rrf_den: float = RRF_DEN,
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    rank: str = "rank",
    order: PoolOrder = "score",
    system: str | None = "system",
    validate: bool = True,
) -> pl.LazyFrame: ...
@overload
def unjudged(
    runs: EagerRuns,
    judged: Eager,
    *,
    strategy: PoolStrategy = "top_k",
    depth: int = POOL_DEPTH,
    p: float = RBP_P,
    rbp_strategy: RBPMerge = "sum",
    rrf_den: float = RRF_DEN,
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    rank: str = "rank",
    order: PoolOrder = "score",
    system: str | None = "system",
    validate: bool = True,
) -> pl.DataFrame: ...
@overload
def unjudged(
    runs: IntoRuns,
    judged: IntoFrame,
    *,
    strategy: PoolStrategy = "top_k",
    depth: int = POOL_DEPTH,
    p: float = RBP_P,
    rbp_strategy: RBPMerge = "sum",
    rrf_den: float = RRF_DEN,
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    rank: str = "rank",
    order: PoolOrder = "score",
    system: str | None = "system",
    validate: bool = True,
) -> pl.DataFrame | pl.LazyFrame: ...
def unjudged(
    runs: IntoRuns,
    judged: IntoFrame,
    *,
    strategy: PoolStrategy = "top_k",
    depth: int = POOL_DEPTH,
    p: float = RBP_P,
    rbp_strategy: RBPMerge = "sum",
    rrf_den: float = RRF_DEN,
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    rank: str = "rank",
    order: PoolOrder = "score",
    system: str | None = "system",
    validate: bool = True,
) -> pl.DataFrame | pl.LazyFrame:
    """The pooled documents that have no judgment yet: what to send to the assessors next.

    The pool of :func:`make_pool` (same options) without the (query, doc) pairs
    that ``judged`` (qrels of any grade, or an earlier pool) holds. With
    ``strategy="top_k"`` these are exactly the documents that make a run's
    ``Judged@depth`` fall short of 1.

    Returns
    -------
    DataFrame or LazyFrame (a LazyFrame when any input is one)
        The columns of :func:`make_pool`, in its order.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> run = pl.DataFrame({"query": [1, 1, 1], "doc": ["a", "b", "c"],
    ...                     "score": [3.0, 2.0, 1.0]})
    >>> qrels = pl.DataFrame({"query": [1], "doc": ["a"], "relevance": [1]})
    >>> pr.unjudged(run, qrels, depth=2).select("query", "doc", "best_rank")
    shape: (1, 3)
    ┌───────┬─────┬───────────┐
    │ query ┆ doc ┆ best_rank │
    │ ---   ┆ --- ┆ ---       │
    │ i64   ┆ str ┆ u32       │
    ╞═══════╪═════╪═══════════╡
    │ 1     ┆ b   ┆ 2         │
    └───────┴─────┴───────────┘
    """
    pool = make_pool(
        runs,
        strategy=strategy,
        depth=depth,
        p=p,
        rbp_strategy=rbp_strategy,
        rrf_den=rrf_den,
        query=query,
        doc=doc,
        score=score,
        rank=rank,
        order=order,
        system=system,
        validate=validate,
    )
    pairs, lazy_judged = _judged_pairs(judged, query=query, doc=doc)
    pooled, pairs = _matching_ids(pool.lazy(), pairs, (query, doc))
    left = pooled.join(pairs, on=[query, doc], how="anti", maintain_order="left")
    return _out(left, isinstance(pool, pl.LazyFrame) or lazy_judged)


def write_pool(
    pool: IntoFrame,
    path: str | PathLike[str],
    *,
    format: PoolFormat = "relevation",
    tag: str = "polars_rankeval",
    query: str = "query",
    doc: str = "doc",
) -> None:
    """Write a pool (or any query, doc frame) for the assessors, as trectools exports it.

    ``"relevation"`` (trectools ``export_document_list``'s default, read by the
    Relevation! judging tool): one line per pair, ``query Q0 doc 0 0 tag``,
    tab-separated, queries in order (numbers as numbers, strings as strings),
    each query's documents sorted as strings. ``"filelist"``: the distinct
    documents of the whole pool, sorted, one per line (to fetch their text).

    Parameters
    ----------
    pool
        Frame with ``query`` and ``doc`` columns (other columns are not written),
        e.g. from :func:`make_pool` or :func:`unjudged`.
    path
        File to write (replaced if it exists).
    format
        ``"relevation"`` (default) or ``"filelist"``.
    tag
        Last field of a relevation line (trectools writes ``trectools``).
    query, doc
        Column names.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> pool = pl.DataFrame({"query": [2, 1, 1], "doc": ["d9", "d2", "d10"]})
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "pool.txt"
    >>> pr.write_pool(pool, path)
    >>> print(path.read_text(), end="")
    1	Q0	d10	0	0	polars_rankeval
    1	Q0	d2	0	0	polars_rankeval
    2	Q0	d9	0	0	polars_rankeval
    """
    check_choice("format", format, PoolFormat)
    frame = as_frame(pool, "pool").lazy()
    check_columns(frame.collect_schema(), {"query": query, "doc": doc}, "pool")
    text = pl.col(doc).cast(pl.String)
    check_writable_ids(pl.DataFrame({"tag": [tag]}), {"tag": "tag"}, "pool")
    if format == "filelist":
        lines = frame.select(text.unique().sort()).collect()
        check_writable_ids(lines, {"doc": doc}, "pool")
    else:
        pairs = frame.select(query, text.alias(doc)).unique().sort(query, doc).collect()
        check_writable_ids(pairs, {"query": query, "doc": doc}, "pool")
        lines = (
            pairs.lazy()
            .select(
                pl.concat_str(
                    pl.col(query).cast(pl.String),
                    pl.lit("Q0"),
                    doc,
                    pl.lit("0"),
                    pl.lit("0"),
                    pl.lit(tag),
                    separator="\t",
                )
            )
            .collect()
        )
    lines.write_csv(Path(path), include_header=False, quote_style="never")
