"""mean_scores: per-query values -> each measure over queries, the trec_eval ``all`` line."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import overload

import polars as pl

from polars_rankeval._typing import AggregateMode, ArrowStreamExportable, FrameT, IntoFrame
from polars_rankeval.inputs import as_frame, run_keys
from polars_rankeval.measures import MIN_GEO_MEAN, measure_kind, parse
from polars_rankeval.options import segment_columns
from polars_rankeval.validation import check_choice, system_column


def is_measure_name(name: str) -> bool:
    """Whether a column name parses as a measure (``AP``, ``ndcg_cut_10``, ``P@5``).

    Examples
    --------
    >>> is_measure_name("ndcg_cut_10"), is_measure_name("user_id")
    (True, False)
    """
    try:
        parse(name)
    except ValueError:
        return False
    return True


def measure_columns(
    schema: pl.Schema,
    measures: str | Iterable[str] | None,
    keys: Iterable[str | None],
    function: str,
) -> list[str]:
    """The measure columns of a per-query frame: the given ones (checked), or every
    column but the keys.

    By default a column is taken as a measure when its name is a measure's, or when
    it holds floats (a measure under a name of your own). Any other column (an
    integer or string id such as ``user_id``, a segment column such as ``device``)
    is refused with an error naming it, so that an id is never averaged: pass it as
    ``query=`` or ``by=``, or name the measure columns (``measures=``). Given
    columns must exist and be numeric.

    Examples
    --------
    >>> schema = pl.Schema({"user_id": pl.Int64, "AP": pl.Float64, "NumRet": pl.Int64})
    >>> measure_columns(schema, None, ["user_id"], "mean_scores")
    ['AP', 'NumRet']
    >>> measure_columns(schema, None, ["query"], "mean_scores")
    Traceback (most recent call last):
    ...
    ValueError: mean_scores: column 'user_id' (Int64) is not a measure ...
    """
    taken = [k for k in keys if k is not None]
    if measures is not None:
        cols = [measures] if isinstance(measures, str) else [str(m) for m in measures]
        for c in cols:
            if c not in schema:
                have = ", ".join(repr(x) for x in schema.names() if x not in taken)
                msg = f"per_query has no measure column {c!r} (it has: {have})."
                raise ValueError(msg)
            if not schema[c].is_numeric():
                msg = f"measure column {c!r} must be numeric. Got dtype {schema[c]}."
                raise TypeError(msg)
        return cols
    cols = []
    for c in schema.names():
        if c in taken:
            continue
        if not (schema[c].is_float() or is_measure_name(c)):
            msg = (
                f"{function}: column {c!r} ({schema[c]}) is not a measure (its name is not "
                f"a measure's and it does not hold floats), so it is not averaged: an id is "
                f"never a measure. Pass query={c!r} if it is the query id (a list for a "
                f"compound id), by={c!r} if it is a segment, drop it, or name the measure "
                f"columns with measures=[...]. Keys now: {', '.join(map(repr, taken))}."
            )
            raise ValueError(msg)
        if not (schema[c].is_numeric() or schema[c] == pl.Boolean):
            msg = (
                f"{function}: column {c!r} has a measure's name but holds {schema[c]}, not "
                f"numbers: cast it first, e.g. pl.col({c!r}).cast(pl.Float64), or name the "
                f"measure columns with measures=[...]."
            )
            raise TypeError(msg)
        cols.append(c)
    if not cols:
        msg = f"{function}: per_query has no measure columns (only the key columns)."
        raise ValueError(msg)
    return cols


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
        Columns to average. Default: every column but ``system``, ``query`` and
        ``by``, each of which must be a measure (its name parses as one, or it holds
        floats): a column that is neither, such as an integer ``user_id`` or a string
        ``device``, raises, naming it, rather than being averaged (pass it as
        ``query=`` or ``by=``; :func:`measure_columns`).
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
    cols = measure_columns(schema, measures, [*groups, *queries], "mean_scores")
    clash = [c for c in segments if c in ("n_queries", *cols)]
    if clash:
        msg = (
            f"mean_scores: the by column {clash[0]!r} has the name of an output column "
            f"(n_queries and the measures); rename it first, e.g. "
            f"per_query.rename({{{clash[0]!r}: '{clash[0]}_segment'}})."
        )
        raise ValueError(msg)

    def combine(c: str) -> pl.Expr:
        kind = measure_kind(c, aggregate)
        if kind == "gmean":
            return pl.col(c).clip(lower_bound=MIN_GEO_MEAN).log().mean().exp()
        return pl.col(c).sum().cast(pl.Float64) if kind == "sum" else pl.col(c).mean()

    aggs = [pl.len().alias("n_queries"), *(combine(c) for c in cols)]
    if not groups:
        return per_query.select(aggs)
    return per_query.group_by(groups).agg(aggs).sort(groups)
