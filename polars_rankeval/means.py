"""mean_scores: per-query values -> each measure over queries, the trec_eval ``all`` line."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import overload

import polars as pl

from polars_rankeval._typing import AggregateMode, ArrowStreamExportable, FrameT, IntoFrame
from polars_rankeval.inputs import as_frame, run_keys
from polars_rankeval.measures import MIN_GEO_MEAN, measure_kind
from polars_rankeval.options import segment_columns
from polars_rankeval.validation import check_choice, system_column


@overload
def mean_scores(
    per_query: FrameT,
    measures: Iterable[str] | None = None,
    *,
    system: str | None = "system",
    query: str | Sequence[str] = "query",
    by: str | Sequence[str] | None = None,
    aggregate: AggregateMode = "trec",
) -> FrameT: ...
@overload
def mean_scores(
    per_query: ArrowStreamExportable,
    measures: Iterable[str] | None = None,
    *,
    system: str | None = "system",
    query: str | Sequence[str] = "query",
    by: str | Sequence[str] | None = None,
    aggregate: AggregateMode = "trec",
) -> pl.DataFrame: ...
def mean_scores(
    per_query: IntoFrame,
    measures: Iterable[str] | None = None,
    *,
    system: str | None = "system",
    query: str | Sequence[str] = "query",
    by: str | Sequence[str] | None = None,
    aggregate: AggregateMode = "trec",
) -> pl.DataFrame | pl.LazyFrame:
    r"""Each measure over queries (per system and segment): the trec_eval ``all`` line.

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
        Columns to average; default all but ``system``, ``query`` and ``by``.
    by
        Columns to group by besides ``system``: segments of the per-query frame
        (a day, a country), or per-query attributes joined to it (a query
        category, a user cohort), e.g.
        ``mean_scores(per_query.join(categories, on="query"), by="category")``.
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
    check_choice("aggregate", aggregate, AggregateMode)
    per_query = as_frame(per_query, "per_query")
    schema = per_query.lazy().collect_schema()
    system = system_column(system, schema)
    queries = run_keys(query, None)
    segments = segment_columns(by, schema, taken=[*queries, system])
    groups = [*segments, *([system] if system else [])]
    cols = (
        list(measures)
        if measures is not None
        else [c for c in schema.names() if c not in (*groups, *queries)]
    )

    def combine(c: str) -> pl.Expr:
        kind = measure_kind(c, aggregate)
        if kind == "gmean":
            return pl.col(c).clip(lower_bound=MIN_GEO_MEAN).log().mean().exp()
        return pl.col(c).sum().cast(pl.Float64) if kind == "sum" else pl.col(c).mean()

    aggs = [pl.len().alias("n_queries"), *(combine(c) for c in cols)]
    if not groups:
        return per_query.select(aggs)
    return per_query.group_by(groups).agg(aggs).sort(groups)
