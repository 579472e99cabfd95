"""evaluate(): run + qrels -> one row per scored query, one column per measure."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import polars as pl

from polars_rankeval._typing import FrameT, Missing, Order
from polars_rankeval.conventions import Conventions, get_conventions
from polars_rankeval.judged_rows import HAS_QRELS, RANKING
from polars_rankeval.measures import Context, Measure, parse_measures
from polars_rankeval.ranking import (
    judged_only_table,
    judged_rows,
    run_keys,
    takes_judged_only_path,
    validate_inputs,
)
from polars_rankeval.validation import check_columns, check_grade_dtype, checks_data

_HAS_RUN = "__has_run"


class UnscoredQueriesWarning(UserWarning):
    """Some queries were left out of the evaluation; the message says which and why."""


def _aggregate(
    judged: pl.LazyFrame, measures: list[Measure], keys: list[str], ctx: Context
) -> pl.LazyFrame:
    """group_by(ranking).agg(every measure), plus the flags that decide what is scored.

    When every measure has a ``min_grade`` (P, R, AP, RR, Rprec, nDCG, ...),
    the unjudged retrieved rows are dropped first, keeping each ranking's top
    row so that the ranking still shows as retrieved: the aggregation, whose
    per-group expressions cost far more than a filter, then runs on the judged
    rows only (typically a tenth of a run). Ranks are already numbered, so the
    values are unchanged.
    """
    if _min_grade(measures, ctx) is not None:
        judged = judged.filter(pl.col(ctx.relevance).is_not_null() | (pl.col(ctx.rank) == 1))
    return judged.group_by(keys).agg(
        *(x.expr(ctx) for x in measures),
        pl.col(ctx.relevance).is_not_null().any().alias(HAS_QRELS),
        _has_run(ctx),
    )


def _aggregate_judged_only(
    rows: pl.DataFrame,
    rankings: pl.DataFrame,
    measures: list[Measure],
    keys: list[str],
    ctx: Context,
) -> pl.LazyFrame:
    """The same from :func:`polars_rankeval.judged_rows.judged_only_rows`' output.

    Its rows come sorted by ranking: flagged so, the group_by takes each group as
    a slice of the frame instead of gathering its rows (10M-row runs: 0.26 s ->
    0.16 s for ten measures over 10,000 rankings).
    """
    by_ranking = rows.with_columns(pl.col(RANKING).set_sorted()).group_by(RANKING)
    per_ranking = by_ranking.agg(*(x.expr(ctx) for x in measures), _has_run(ctx))
    columns = [*keys, *(str(x) for x in measures), HAS_QRELS, _HAS_RUN]
    return per_ranking.join(rankings, on=RANKING).select(columns).lazy()


def _has_run(ctx: Context) -> pl.Expr:
    return pl.col(ctx.rank).is_not_null().any().alias(_HAS_RUN)


def _min_grade(measures: list[Measure], ctx: Context) -> int | None:
    """The lowest grade any of the measures reads; None if one reads every row."""
    grades = [x.min_grade(ctx) for x in measures]
    return None if any(g is None for g in grades) else min(grades)  # type: ignore[type-var]


def raise_absent_queries(absent: pl.Series) -> None:
    """missing='error': raise naming the qrels queries absent from the run (if any)."""
    if absent.len():
        shown = ", ".join(str(q) for q in absent.head(10).to_list())
        msg = (
            f"{absent.len()} qrels queries are not in the run ({shown}"
            f"{', ...' if absent.len() > 10 else ''}). Pass missing='drop' to leave them out "
            f"or missing='zero' to score them as empty rankings (trec_eval -c)."
        )
        raise ValueError(msg)


def warn_unscored_queries(no_qrels: pl.Series) -> None:
    """Warn naming the run queries (one entry per ranking) that have no qrels, if any."""
    if no_qrels.len():
        shown = ", ".join(str(q) for q in no_qrels.unique(maintain_order=True).head(5).to_list())
        msg = (
            f"{no_qrels.len()} run queries have no qrels and were not scored "
            f"({shown}{', ...' if no_qrels.len() > 5 else ''}), as trec_eval does. "
            f"pr.coverage(run, qrels) lists them."
        )
        warnings.warn(msg, UnscoredQueriesWarning, stacklevel=4)


def _require_all_queries(run: FrameT, qrels: FrameT, query: str) -> None:
    """missing='error': every qrels query must be in the run."""
    run_q = run.lazy().select(pl.col(query).cast(pl.String)).unique()
    raise_absent_queries(
        qrels.lazy()
        .select(pl.col(query).cast(pl.String))
        .unique()
        .join(run_q, on=query, how="anti")
        .sort(query)
        .collect()[query]
    )


_QUIET = ContextVar("polars_rankeval_unscored_not_warned", default=False)


@contextmanager
def unscored_not_warned() -> Iterator[None]:
    """Within this block, :func:`evaluate` does not warn about unscored queries.

    For callers that count and report them once themselves (the Dask and Spark
    drivers score many pieces). A context variable, unlike
    ``warnings.catch_warnings``, holds only for the current thread or task, so
    pieces scored in threads leave a caller's own warnings alone.
    """
    token = _QUIET.set(True)
    try:
        yield
    finally:
        _QUIET.reset(token)


def _warn_unscored(agg: pl.DataFrame, keys: list[str]) -> None:
    if not _QUIET.get():
        warn_unscored_queries(agg.filter(~pl.col(HAS_QRELS))[keys[-1]])


def evaluate(
    run: FrameT,
    qrels: FrameT,
    measures: str | Measure | Iterable[str | Measure],
    *,
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    relevance: str = "relevance",
    system: str | None = "system",
    rank: str = "rank",
    rel_level: int = 1,
    order: Order = "score",
    depth: int | None = None,
    missing: Missing = "drop",
    duplicates: str = "error",
    per_query: bool = True,
    validate: bool | None = None,
    conventions: str | Conventions | None = None,
) -> FrameT:
    r"""Score a run against qrels: one row per scored query, one column per measure.

    The run and qrels are joined once, each ranking is ordered once (trec_eval
    order: score descending, ties by doc id descending as strings) and every
    measure is an aggregation over the ranked rows of a query, so all queries,
    measures and systems are computed in one Polars plan. For a DataFrame run
    whose measures all have a ``min_grade`` (AP, P, R, RR, nDCG, Rprec, ...),
    only the rows of that grade are built, ranked from one sort of packed
    integers (:mod:`polars_rankeval.judged_rows`); the values are the same.

    Parameters
    ----------
    run
        ``query, doc, score`` (optionally ``system``, ``rank``); DataFrame or
        LazyFrame. Lazy in, lazy out.
    qrels
        ``query, doc, relevance``: integer grades; grade >= ``rel_level`` is relevant.
    measures
        Names in canonical (``AP@10``), trec_eval (``map_cut_10``) or ranx
        (``map@10``) form, or :class:`Measure` objects.
    query, doc, score, relevance, system, rank
        Column names. ``system`` is used when the run has that column: every
        system is scored in the same plan and the result keeps the column.
    rel_level
        Minimum grade that counts as relevant (trec_eval ``-l``).
    order
        ``"score"`` (trec_eval), ``"rank"`` (the run's rank column) or
        ``"presorted"`` (rows already in rank order: no sort).
    depth
        Keep only the top ``depth`` documents per ranking (trec_eval ``-M``).
    missing
        Queries in qrels but not in the run: ``"drop"`` (default, trec_eval),
        ``"zero"`` (score them as empty rankings, trec_eval ``-c``) or ``"error"``.
        Run queries with no qrels row are never scored; for a DataFrame run an
        :class:`UnscoredQueriesWarning` says how many.
    duplicates
        Duplicate (query, doc) rows in the run: ``"error"`` or ``"keep_best"``.
    per_query
        True (default): per-query values. False: the mean over queries per
        system and measure, with the number of queries in ``n_queries``.
    validate
        Check the data (null ids, NaN scores, non-integer grades, duplicate
        rows) before any work. Default: True for a DataFrame run, False for a
        LazyFrame (its schema is always checked; the data only on request, so a
        large lazy scan is not read twice).
    conventions
        Which trec_eval to reproduce: ``"trec_eval-10"`` (default, the current
        release) or ``"trec_eval-9"`` (as pytrec_eval and ir_measures): scores
        compared as float32 in 9.x, IPrec rounding, the ``all_trec`` set. See
        :mod:`polars_rankeval.conventions`.

    Returns
    -------
    DataFrame or LazyFrame (as the run)
        ``[system], query``, then one Float64 column per measure named by its
        canonical name, sorted by system and query.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> run = pl.DataFrame({"query": ["q1"] * 3 + ["q2"] * 2,
    ...                     "doc": ["a", "b", "c", "a", "d"],
    ...                     "score": [3.0, 2.0, 1.0, 2.0, 1.0]})
    >>> qrels = pl.DataFrame({"query": ["q1", "q1", "q2"], "doc": ["b", "x", "d"],
    ...                       "relevance": [1, 1, 2]})
    >>> pr.evaluate(run, qrels, ["AP", "P@2", "map_cut_1"])
    shape: (2, 4)
    ┌───────┬──────┬─────┬──────┐
    │ query ┆ AP   ┆ P@2 ┆ AP@1 │
    │ ---   ┆ ---  ┆ --- ┆ ---  │
    │ str   ┆ f64  ┆ f64 ┆ f64  │
    ╞═══════╪══════╪═════╪══════╡
    │ q1    ┆ 0.25 ┆ 0.5 ┆ 0.0  │
    │ q2    ┆ 0.5  ┆ 0.5 ┆ 0.0  │
    └───────┴──────┴─────┴──────┘
    """
    conv = get_conventions(conventions)  # issue 13: measure set, IPrec rounding, score precision
    parsed = parse_measures(measures, conventions=conv)
    if missing not in ("drop", "zero", "error"):
        msg = f"missing must be 'drop', 'zero' or 'error'. Got {missing!r} instead."
        raise ValueError(msg)
    options = {"query": query, "doc": doc, "score": score, "relevance": relevance, "rank": rank}
    options |= {"order": order, "depth": depth, "missing": missing, "duplicates": duplicates}
    ctx = Context(
        rank=rank, relevance=relevance, rel_level=rel_level, iprec_rounding=conv.iprec_rounding
    )
    min_grade = _min_grade(parsed, ctx)
    judged_only = takes_judged_only_path(run, min_grade, order, duplicates)
    validate = checks_data(run, validate)
    system = validate_inputs(  # the judged-only path checks duplicate rows on its hashes
        run, qrels, system=system, validate=validate, duplicate_rows=not judged_only, **options
    )
    if missing == "error":  # after validation, before any work
        _require_all_queries(run, qrels, query)
    if conv.score_precision == "float32" and order == "score":  # trec_eval 9.x holds floats
        run = run.with_columns(pl.col(score).cast(pl.Float32).cast(pl.Float64))
    keys = run_keys(query, system)
    if judged_only:
        rows, rankings = judged_only_table(
            run,
            qrels,
            min_grade=min_grade,  # type: ignore[arg-type]
            check_duplicates=validate,
            system=system,
            **options,
        )
        agg = _aggregate_judged_only(rows, rankings, parsed, keys, ctx)
    else:
        judged = judged_rows(run.lazy(), qrels.lazy(), system=system, **options)
        agg = _aggregate(judged, parsed, keys, ctx)
    if isinstance(run, pl.DataFrame):
        collected = agg.collect()
        _warn_unscored(collected, keys)
        agg = collected.lazy()
    scored = (
        agg.filter(pl.col(HAS_QRELS) & (pl.col(_HAS_RUN) | (missing == "zero")))
        .drop(HAS_QRELS, _HAS_RUN)
        .sort(keys)
    )
    if not per_query:
        scored = mean_scores(scored, [str(x) for x in parsed], system=system)
    return scored.collect() if isinstance(run, pl.DataFrame) else scored


def evaluate_judged(
    judged: FrameT,
    measures: str | Measure | Iterable[str | Measure],
    *,
    query: str = "query",
    rank: str = "rank",
    relevance: str = "relevance",
    system: str | None = "system",
    n_rel: str | None = None,
    rel_level: int = 1,
    presorted: bool = False,
) -> FrameT:
    r"""Score a table that already carries relevance and order: no qrels needed.

    The shape of logged impressions and clicks, or of a judged table built
    elsewhere: one row per shown item with its ``rank`` (1 = top) and its
    ``relevance`` (an integer grade, or a Boolean ``relevant`` flag). Rows with a
    null rank are items known to be relevant (or judged) but not shown; they
    count toward |R| and the ideal DCG only.

    |R| for a query is taken from the per-query column ``n_rel`` when given
    (its first value in the query), else it is the number of rows with grade
    >= ``rel_level``, shown or not. The ideal ranking for nDCG is built from the
    grades present in the table. Every query in the table is scored.

    Parameters
    ----------
    judged
        ``[system], query, rank, relevance`` (+ ``n_rel``). Lazy in, lazy out.
    measures
        Measure names in any dialect, or :class:`Measure` objects.
    query, rank, relevance, system, n_rel
        Column names; ``system`` is used when present.
    rel_level
        Minimum grade that counts as relevant.
    presorted
        True when the rows of each query are already in rank order (no sort).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> clicks = pl.DataFrame({"query": ["u1"] * 4 + ["u2"] * 2,
    ...                        "rank": [1, 2, 3, 4, 1, 2],
    ...                        "clicked": [False, True, False, True, True, False]})
    >>> pr.evaluate_judged(clicks, ["AP", "RR", "P@2"], relevance="clicked")
    shape: (2, 4)
    ┌───────┬─────┬─────┬─────┐
    │ query ┆ AP  ┆ RR  ┆ P@2 │
    │ ---   ┆ --- ┆ --- ┆ --- │
    │ str   ┆ f64 ┆ f64 ┆ f64 │
    ╞═══════╪═════╪═════╪═════╡
    │ u1    ┆ 0.5 ┆ 0.5 ┆ 0.5 │
    │ u2    ┆ 1.0 ┆ 1.0 ┆ 0.5 │
    └───────┴─────┴─────┴─────┘
    """
    parsed = parse_measures(measures)
    schema = judged.lazy().collect_schema()
    system = system if system is not None and system in schema else None
    keys = run_keys(query, system)
    required = {"query": query, "rank": rank, "relevance": relevance}
    check_columns(schema, required | ({"n_rel": n_rel} if n_rel else {}), "judged")
    check_grade_dtype(schema, relevance)
    lf = judged.lazy().select(
        *keys,
        pl.col(rank).cast(pl.UInt32),
        pl.col(relevance).cast(pl.Int64),
        *([pl.col(n_rel)] if n_rel else []),
    )
    if not presorted:
        lf = lf.sort([*keys, rank], nulls_last=True)
    ctx = Context(rank=rank, relevance=relevance, rel_level=rel_level, n_rel=n_rel)
    out = lf.group_by(keys).agg(x.expr(ctx) for x in parsed).sort(keys)
    return out.collect() if isinstance(judged, pl.DataFrame) else out


def coverage(
    run: FrameT,
    qrels: FrameT,
    *,
    query: str = "query",
    system: str | None = "system",
    missing: Missing = "drop",
) -> pl.DataFrame:
    """Which queries :func:`evaluate` scores, and why the others are left out.

    Returns
    -------
    pl.DataFrame
        ``[system], query, status`` with status ``"scored"``, ``"no_qrels"`` (a run
        query with no qrels row: never scored, as in trec_eval), ``"not_in_run"``
        (a qrels query the system did not retrieve for: scored as an empty ranking
        only with ``missing="zero"``) or ``"scored_empty"`` (such a query under
        ``missing="zero"``). Query ids are compared as strings.

    Examples
    --------
    >>> import polars as pl
    >>> run = pl.DataFrame({"query": ["a", "b"], "doc": ["x", "y"], "score": [1.0, 1.0]})
    >>> qrels = pl.DataFrame({"query": ["a", "c"], "doc": ["x", "z"], "relevance": [1, 1]})
    >>> coverage(run, qrels).sort("query")
    shape: (3, 2)
    ┌───────┬────────────┐
    │ query ┆ status     │
    │ ---   ┆ ---        │
    │ str   ┆ str        │
    ╞═══════╪════════════╡
    │ a     ┆ scored     │
    │ b     ┆ no_qrels   │
    │ c     ┆ not_in_run │
    └───────┴────────────┘
    """
    names = run.lazy().collect_schema().names()
    system = system if system in names else None
    keys = run_keys(query, system)
    in_run = run.lazy().select(*keys).unique().with_columns(pl.col(query).cast(pl.String))
    judged_q = qrels.lazy().select(pl.col(query).cast(pl.String)).unique()
    systems = in_run.select(system).unique() if system else None
    all_q = judged_q if systems is None else systems.join(judged_q, how="cross")
    scored = in_run.join(judged_q, on=query, how="semi").with_columns(status=pl.lit("scored"))
    no_qrels = in_run.join(judged_q, on=query, how="anti").with_columns(status=pl.lit("no_qrels"))
    absent = all_q.join(in_run, on=keys, how="anti").with_columns(
        status=pl.lit("scored_empty" if missing == "zero" else "not_in_run")
    )
    return pl.concat([scored, no_qrels, absent]).sort(keys).collect()


def mean_scores(
    per_query: FrameT,
    measures: Iterable[str] | None = None,
    *,
    system: str | None = "system",
    query: str = "query",
    aggregate: str = "trec",
) -> FrameT:
    r"""Each measure over queries (per system): the trec_eval ``all`` line.

    With ``aggregate="trec"`` (default) each measure is combined as trec_eval
    does: the arithmetic mean of the per-query values, except the geometric
    mean for ``GMAP`` and ``GMBpref`` (trec_eval ``gm_map``, ``gm_bpref``)

    .. math:: GM = \exp\Big(\frac{1}{Q} \sum_q \ln \max(x_q, 10^{-5})\Big)

    and the sum for the counts ``NumRet``, ``NumRel``, ``NumRelRet`` and
    ``NumNonRelJudgedRet``. ``aggregate="mean"`` takes the arithmetic mean of
    every column.

    Parameters
    ----------
    per_query
        Output of :func:`evaluate`.
    measures
        Columns to average; default all but ``system`` and ``query``.
    aggregate
        ``"trec"`` or ``"mean"``, as above.

    Examples
    --------
    >>> import polars as pl
    >>> per_query = pl.DataFrame({"query": ["a", "b"], "AP": [0.5, 1.0]})
    >>> mean_scores(per_query)
    shape: (1, 2)
    ┌───────────┬──────┐
    │ n_queries ┆ AP   │
    │ ---       ┆ ---  │
    │ u32       ┆ f64  │
    ╞═══════════╪══════╡
    │ 2         ┆ 0.75 │
    └───────────┴──────┘
    >>> per_query = pl.DataFrame({"query": ["a", "b"], "GMAP": [0.25, 1.0]})
    >>> mean_scores(per_query)["GMAP"].item()  # sqrt(0.25 * 1.0)
    0.5
    """
    from polars_rankeval.measures import MIN_GEO_MEAN, aggregate_kind

    if aggregate not in ("trec", "mean"):
        msg = f"aggregate must be 'trec' or 'mean'. Got {aggregate!r} instead."
        raise ValueError(msg)
    names = per_query.lazy().collect_schema().names()
    system = system if system in names else None
    cols = (
        list(measures) if measures is not None else [c for c in names if c not in (system, query)]
    )

    def combine(c: str) -> pl.Expr:
        kind = aggregate_kind(c) if aggregate == "trec" else "mean"
        if kind == "gmean":
            return pl.col(c).clip(lower_bound=MIN_GEO_MEAN).log().mean().exp()
        return pl.col(c).sum().cast(pl.Float64) if kind == "sum" else pl.col(c).mean()

    aggs = [pl.len().alias("n_queries"), *(combine(c) for c in cols)]
    if system is None:
        return per_query.select(aggs)
    return per_query.group_by(system).agg(aggs).sort(system)
