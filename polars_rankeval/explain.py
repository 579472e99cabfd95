"""explain(): why one tool's number differs from another's, query by query.

:func:`explain` scores a run under two conventions (two presets, e.g.
``"trec_eval-10"`` and ``"ranx"``), and for each query whose values differ names
the choice or choices that cause it. It finds them by switching the first
conventions' choices to the second's one at a time (:func:`choices_between`,
:func:`switched`) and scoring again: a choice causes a query's difference when
switching it alone changes that query's value. Where no single switch does, the
difference comes from several choices together, and all of them are named.

:func:`cause_contributions` (or ``explain(..., per="cause")``) adds the
per-query differences up by cause: how much of the difference of the two means
each choice accounts for, the contributions adding up to that difference.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import polars as pl

from polars_rankeval._typing import IntoFrameOrDict
from polars_rankeval.conventions import CHOICES, Conventions, get_conventions
from polars_rankeval.engine.outcome import UnscoredQueriesWarning
from polars_rankeval.evaluate import evaluate
from polars_rankeval.inputs import as_frame, dict_columns
from polars_rankeval.measures import Measure, parse_measures
from polars_rankeval.validation import check_reserved, system_column

DIFFERENCE = "difference"
CAUSES = "causes"
MEASURE = "measure"
CONTRIBUTION = "contribution"
N_QUERIES = "n_queries"
MEAN_DIFFERENCE = "mean_difference"
_ROW = "__explain_row"
_VALUE, _OTHER = "__explain_value", "__explain_value_other"
TOLERANCE = 1e-12
"""Values closer than this are the same (float summation order)."""


@dataclass(frozen=True)
class Choice:
    """One choice on which two conventions differ: a field, or one measure parameter."""

    name: str
    """``"ties"``, ``"judgments"``, ... or ``"AP.norm"`` for a measure parameter."""
    first: Any
    second: Any

    def __str__(self) -> str:
        return f"{self.name}: {_shown(self.first)} -> {_shown(self.second)}"


def _shown(value: Any) -> str:
    return "(not set)" if value is None else str(value)


def choices_between(first: Conventions, second: Conventions) -> list[Choice]:
    """Every choice (:data:`~polars_rankeval.conventions.CHOICES`, and each measure
    parameter of ``measure_params``) on which two conventions differ.

    Examples
    --------
    >>> [str(c) for c in choices_between(get_conventions(), get_conventions("ranx"))]
    ['ties: doc_desc -> input', 'absent_queries: drop -> zero']
    """
    found = [
        Choice(name, getattr(first, name), getattr(second, name))
        for name in CHOICES
        if name != "measure_params" and getattr(first, name) != getattr(second, name)
    ]
    families = dict.fromkeys([*first.measure_params, *second.measure_params])
    for family in families:
        one, two = first.measure_params.get(family, {}), second.measure_params.get(family, {})
        for param in dict.fromkeys([*one, *two]):
            if one.get(param) != two.get(param):
                found.append(Choice(f"{family}.{param}", one.get(param), two.get(param)))
    return found


def switched(conventions: Conventions, choice: Choice) -> Conventions:
    """``conventions`` with one choice set to its second value."""
    name = f"{conventions.name}+{choice.name}"
    if "." not in choice.name:
        return replace(conventions, name=name, **{choice.name: choice.second})
    family, param = choice.name.split(".", 1)
    params = {k: dict(v) for k, v in conventions.measure_params.items()}
    params.setdefault(family, {}).pop(param, None)
    if choice.second is not None:
        params[family][param] = choice.second
    return replace(conventions, name=name, measure_params=params)


def _scores(
    run: pl.DataFrame,
    qrels: pl.DataFrame,
    names: list[str],
    conventions: Conventions,
    keys: list[str],
    **kw: Any,
) -> pl.DataFrame:
    """Per-query values of the measures under ``conventions``, long:
    ``measure, keys, value`` (``measure`` as the caller named it)."""
    parsed = {name: _one_measure(name, conventions) for name in names}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnscoredQueriesWarning)
        out = evaluate(
            run, qrels, list(dict.fromkeys(parsed.values())), conventions=conventions, **kw
        )
    wide = out.select(*keys, *(pl.col(str(m)).alias(name) for name, m in parsed.items()))
    long = wide.unpivot(on=names, index=keys, variable_name=MEASURE, value_name=_VALUE)
    return long.select(MEASURE, *keys, _VALUE)


def _one_measure(measure: str, conventions: Conventions) -> Measure:
    parsed = parse_measures(measure, conventions=conventions)
    if len(parsed) != 1:
        msg = (
            f"explain takes one measure per name; {measure!r} stands for {len(parsed)} "
            f"({', '.join(map(str, parsed))}): list them, e.g. "
            f"{[str(m) for m in parsed[:2]]}."
        )
        raise ValueError(msg)
    return parsed[0]


def _measure_names(measure: str | Measure | Sequence[str | Measure]) -> tuple[list[str], bool]:
    """The measure names, and whether one was given alone (no ``measure`` column)."""
    if isinstance(measure, str | Measure):
        return [str(measure)], True
    names = [str(m) for m in measure]
    if not names:
        msg = "explain needs at least one measure; got an empty list."
        raise ValueError(msg)
    return list(dict.fromkeys(names)), False


def _check_names(keys: list[str], names: tuple[str, str]) -> None:
    """An id column named like an output column would be overwritten: refuse it."""
    taken = {MEASURE: "the measure column", DIFFERENCE: "the difference", CAUSES: "the causes"}
    taken |= {name: "a conventions' values" for name in names}
    for key in keys:
        if key in taken or key in (_VALUE, _OTHER):
            what = taken.get(key, "an internal column")
            msg = (
                f"explain: the id column {key!r} has the name of {what} in explain's "
                "output; rename it first (e.g. df.rename({...}))."
            )
            raise ValueError(msg)


def _changed(base: pl.DataFrame, other: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Keys (with ``measure``) of the queries whose value differs (or that one side
    scores and not the other)."""
    keys = [MEASURE, *keys]
    joined = base.join(other.rename({_VALUE: _OTHER}), on=keys, how="full", coalesce=True)
    a, b = pl.col(_VALUE), pl.col(_OTHER)
    differs = (a.is_null() != b.is_null()) | ((a - b).abs() > TOLERANCE)
    return joined.filter(differs.fill_null(False)).select(keys)


def explain(
    run: IntoFrameOrDict,
    qrels: IntoFrameOrDict,
    measure: str | Measure | Sequence[str | Measure],
    between: Sequence[str | Conventions] = ("trec_eval-10", "ranx"),
    *,
    per: Literal["query", "cause"] = "query",
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    relevance: str = "relevance",
    system: str | None = "system",
) -> pl.DataFrame:
    """Per-query values of measures under two conventions, and why they differ.

    Parameters
    ----------
    run, qrels
        As for :func:`polars_rankeval.evaluate` (in memory).
    measure
        One measure name in any dialect (``"ndcg@10"``), or a list of them
        (``["AP", "ndcg@10"]``), each standing for one measure. Each conventions
        may name a measure differently (``nDCG(ties=average)@10`` under
        ``"sklearn"``).
    between
        Two conventions: preset names (``"trec_eval-10"``, ``"trec_eval-9"``,
        ``"ranx"``, ``"ir_measures"``, ``"sklearn"``, ``"torchmetrics"``,
        ``"spark"``) or :class:`~polars_rankeval.conventions.Conventions`.
    per
        ``"query"`` (default): one row per query, as below. ``"cause"``: the
        contribution of each cause to the difference of the means,
        :func:`cause_contributions` of that table.
    query, doc, score, relevance, system
        Column names.

    Returns
    -------
    pl.DataFrame
        ``[measure], [system], query``, the value under each conventions (columns
        named after them; null where one does not score the query),
        ``difference`` (second minus first), and ``causes``: for a query whose
        values differ, the choices that cause it (``"ties: doc_desc -> input"``),
        each found by switching that choice alone from the first conventions to
        the second's; empty for the others. Every query either scores, sorted
        by measure (in the order given), system and query. ``measure`` (the name
        as given) is there when ``measure`` is a list, even of one name; a
        single name (a string or a :class:`~polars_rankeval.measures.Measure`)
        gives the table without it.

    Examples
    --------
    >>> import polars as pl
    >>> run = pl.DataFrame({"query": ["q1", "q1", "q2"], "doc": ["a", "b", "c"],
    ...                     "score": [1.0, 1.0, 1.0]})
    >>> qrels = pl.DataFrame({"query": ["q1", "q2", "q3"], "doc": ["a", "c", "d"],
    ...                       "relevance": [1, 1, 1]})
    >>> out = explain(run, qrels, "mrr", between=("trec_eval-10", "ranx"))
    >>> out.select("query", "trec_eval-10", "ranx", "causes").to_dicts()[0]
    {'query': 'q1', 'trec_eval-10': 0.5, 'ranx': 1.0, 'causes': ['ties: doc_desc -> input']}
    >>> out["causes"].to_list()[1:]
    [[], ['absent_queries: drop -> zero']]

    Several measures at once, and what each cause adds to the difference of the means:

    >>> by_cause = explain(run, qrels, ["mrr", "P@1"], per="cause")
    >>> by_cause.select("measure", "causes", "n_queries", "contribution")
    shape: (6, 4)
    ┌─────────┬─────────────────────────────────┬───────────┬──────────────┐
    │ measure ┆ causes                          ┆ n_queries ┆ contribution │
    │ ---     ┆ ---                             ┆ ---       ┆ ---          │
    │ str     ┆ list[str]                       ┆ u32       ┆ f64          │
    ╞═════════╪═════════════════════════════════╪═══════════╪══════════════╡
    │ mrr     ┆ ["absent_queries: drop -> zero… ┆ 1         ┆ -0.25        │
    │ mrr     ┆ ["ties: doc_desc -> input"]     ┆ 1         ┆ 0.166667     │
    │ mrr     ┆ []                              ┆ 1         ┆ 0.0          │
    │ P@1     ┆ ["ties: doc_desc -> input"]     ┆ 1         ┆ 0.333333     │
    │ P@1     ┆ ["absent_queries: drop -> zero… ┆ 1         ┆ -0.166667    │
    │ P@1     ┆ []                              ┆ 1         ┆ 0.0          │
    └─────────┴─────────────────────────────────┴───────────┴──────────────┘
    """
    if isinstance(between, str) or len(between) != 2:
        msg = f"between must name two conventions, e.g. ('trec_eval-10', 'ranx'). Got {between!r}."
        raise ValueError(msg)
    if per not in ("query", "cause"):
        msg = f"per must be 'query' or 'cause'. Got {per!r}."
        raise ValueError(msg)
    first, second = (get_conventions(c) for c in between)
    names, alone = _measure_names(measure)  # names: each conventions give them their parameters
    if first.name == second.name:
        msg = f"between names the same conventions twice ({first.name!r})."
        raise ValueError(msg)
    run = as_frame(run, "run", dict_columns(query, doc, score)).lazy().collect()
    qrels = as_frame(qrels, "qrels", dict_columns(query, doc, relevance)).lazy().collect()
    system = system_column(system, run.collect_schema())
    keys = [*([system] if system else []), query]
    _check_names(keys, (first.name, second.name))
    kw: dict[str, Any] = dict(query=query, doc=doc, score=score, relevance=relevance, system=system)

    def scores(conventions: Conventions) -> pl.DataFrame:
        return _scores(run, qrels, names, conventions, keys, **kw)

    base, other = scores(first), scores(second)
    differing = _changed(base, other, keys)
    choices = choices_between(first, second)
    found = [
        _changed(base, scores(switched(first, choice)), keys).with_columns(
            pl.lit(str(choice)).alias(CAUSES)
        )
        for choice in choices
    ]
    explained = _named_causes(differing, found, [str(c) for c in choices])
    out = _side_by_side(base, other, explained, keys, (first.name, second.name), names)
    if per == "cause":
        out = cause_contributions(out)
    return out.drop(MEASURE) if alone else out


def _named_causes(
    differing: pl.DataFrame, found: list[pl.DataFrame], choices: list[str]
) -> pl.DataFrame:
    """``differing`` with ``causes``: the choices whose switch alone changed the row
    (``found``: one frame of changed rows per choice, in the order of ``choices``),
    or every choice where no single switch did (they cause it together)."""
    keys = differing.columns
    together = pl.lit(pl.Series([choices], dtype=pl.List(pl.String)))
    if not found:
        return differing.with_columns(together.first().alias(CAUSES))
    named = pl.concat(found).group_by(keys, maintain_order=True).agg(pl.col(CAUSES))
    joined = differing.join(named, on=keys, how="left", maintain_order="left")
    return joined.with_columns(pl.col(CAUSES).fill_null(together.first()))


def _side_by_side(
    base: pl.DataFrame,
    other: pl.DataFrame,
    explained: pl.DataFrame,
    keys: list[str],
    conventions: tuple[str, str],
    names: list[str],
) -> pl.DataFrame:
    """``measure, keys``, both values, their difference and the causes (empty where
    none), sorted by measure (in the order of ``names``) and keys."""
    first, second = conventions
    keys = [MEASURE, *keys]
    values = base.join(other.rename({_VALUE: _OTHER}), on=keys, how="full", coalesce=True)
    out = values.rename({_VALUE: first, _OTHER: second}).with_columns(
        (pl.col(second) - pl.col(first)).alias(DIFFERENCE)
    )
    out = out.join(explained, on=keys, how="left").with_columns(
        pl.col(CAUSES).fill_null(pl.lit([], dtype=pl.List(pl.String)))
    )
    order = pl.col(MEASURE).replace_strict(
        {name: i for i, name in enumerate(names)}, return_dtype=pl.UInt32
    )
    return out.sort(order, *keys[1:]).select(*keys, first, second, DIFFERENCE, CAUSES)


def cause_contributions(explained: pl.DataFrame) -> pl.DataFrame:
    r"""How much of the difference of the means each cause accounts for.

    Takes :func:`explain`'s per-query table and adds the per-query differences up
    by cause (the ``causes`` list of each query), per measure and system.
    Conventions 1 scores :math:`n_1` queries, conventions 2 :math:`n_2`, both
    score the queries :math:`C`; :math:`S_1 = \sum_{q \in C} x_{1q}`. A query's
    contribution is

    .. math::
        c_q = \begin{cases}
        (x_{2q} - x_{1q}) / n_2 & q \in C \text{ (both score it)} \\
        (x_{2q} - S_1 / n_1) / n_2 & \text{only conventions 2 scores it} \\
        -(x_{1q} - S_1 / n_2) / n_1 & \text{only conventions 1 scores it}
        \end{cases}

    so that :math:`\sum_q c_q = \bar x_2 - \bar x_1` exactly, the difference of
    the arithmetic means over each conventions' own queries. When both score the
    same queries (:math:`n_1 = n_2 = n`) this is the per-query difference over
    n; a query only one side scores also carries what it does to the mean of the
    others (a query scored 0 under ``missing="zero"`` lowers the mean by
    :math:`\bar x_1 / n_2`). The queries whose values agree form the group with
    no cause, which contributes 0 (up to rounding). The arithmetic mean is
    decomposed for every measure, also for GMAP and the counts (whose
    trec_eval summary is a geometric mean or a total).

    Parameters
    ----------
    explained
        :func:`explain`'s per-query table: ``[measure], [system], query``, the
        two conventions' values, ``difference, causes``.

    Returns
    -------
    pl.DataFrame
        ``[measure], [system], causes, n_queries`` (queries with these causes),
        ``contribution``, ``mean_difference`` (the difference of the means the
        contributions add up to, repeated on each row of a measure and system);
        sorted by measure, system and contribution, largest in size first, the
        group with no cause last. Null contributions where one conventions
        scores no query (there is no mean).

    Examples
    --------
    >>> import polars as pl
    >>> table = pl.DataFrame({"query": ["q1", "q2", "q3"], "trec_eval-10": [0.5, 1.0, None],
    ...                       "ranx": [1.0, 1.0, 0.0], "difference": [0.5, 0.0, None],
    ...                       "causes": [["ties: doc_desc -> input"], [],
    ...                                  ["absent_queries: drop -> zero"]]})
    >>> cause_contributions(table).select("causes", "contribution", "mean_difference")
    shape: (3, 3)
    ┌─────────────────────────────────┬──────────────┬─────────────────┐
    │ causes                          ┆ contribution ┆ mean_difference │
    │ ---                             ┆ ---          ┆ ---             │
    │ list[str]                       ┆ f64          ┆ f64             │
    ╞═════════════════════════════════╪══════════════╪═════════════════╡
    │ ["absent_queries: drop -> zero… ┆ -0.25        ┆ -0.083333       │
    │ ["ties: doc_desc -> input"]     ┆ 0.166667     ┆ -0.083333       │
    │ []                              ┆ 0.0          ┆ -0.083333       │
    └─────────────────────────────────┴──────────────┴─────────────────┘
    """
    first, second, groups = _explained_columns(explained)
    x1, x2 = pl.col(first), pl.col(second)

    def per_group(expr: pl.Expr) -> pl.Expr:
        return expr.over(groups) if groups else expr

    both = x1.is_not_null() & x2.is_not_null()
    n1, n2 = per_group(x1.count()), per_group(x2.count())
    s1 = per_group(pl.when(both).then(x1).otherwise(0.0).sum())
    share = (
        pl.when(both)
        .then((x2 - x1) / n2)
        .when(x2.is_not_null())
        .then((x2 - s1 / n1) / n2)
        .when(x1.is_not_null())
        .then(-(x1 - s1 / n2) / n1)
        .otherwise(0.0)
    )
    per_query = explained.with_row_index(_ROW).with_columns(
        share.alias(CONTRIBUTION),
        per_group(x2.mean() - x1.mean()).alias(MEAN_DIFFERENCE),
        per_group(pl.col(_ROW).min()),
    )
    by_cause = per_query.group_by(*groups, CAUSES).agg(
        pl.len().alias(N_QUERIES),
        pl.col(CONTRIBUTION).sum(),
        pl.col(MEAN_DIFFERENCE).first(),
        pl.col(_ROW).first(),
    )
    undefined = pl.col(MEAN_DIFFERENCE).is_null()  # one side scores no query: no mean
    none = pl.col(CAUSES).list.len() == 0
    return (
        by_cause.with_columns(pl.when(~undefined).then(pl.col(CONTRIBUTION)).alias(CONTRIBUTION))
        .sort(
            _ROW,
            none,
            pl.col(CONTRIBUTION).abs(),
            pl.col(CAUSES).list.join("; "),
            descending=[False, False, True, False],
            nulls_last=True,
        )
        .select(*groups, CAUSES, N_QUERIES, CONTRIBUTION, MEAN_DIFFERENCE)
    )


def _explained_columns(explained: pl.DataFrame) -> tuple[str, str, list[str]]:
    """The two conventions' value columns of an :func:`explain` table, and the
    columns before its query column (``[measure], [system]``)."""
    columns = explained.columns
    for name in (DIFFERENCE, CAUSES):
        if name not in columns:
            msg = (
                f"cause_contributions takes explain()'s per-query table; this one has no "
                f"{name!r} column (it has: {', '.join(map(repr, columns))})."
            )
            raise ValueError(msg)
    at = columns.index(DIFFERENCE)
    if at < 3:
        msg = (
            "cause_contributions takes explain()'s per-query table: "
            "[measure], [system], query, the two conventions' values, difference, causes. "
            f"Got columns {columns}."
        )
        raise ValueError(msg)
    first, second = columns[at - 2], columns[at - 1]
    for name in (first, second):
        if not explained.schema[name].is_numeric():
            msg = (
                f"cause_contributions: column {name!r} (before 'difference') should hold a "
                f"conventions' values; it is {explained.schema[name]}."
            )
            raise ValueError(msg)
    groups = columns[: at - 3]
    made = (CONTRIBUTION, N_QUERIES, MEAN_DIFFERENCE, _ROW)
    check_reserved({"system": [g for g in groups if g != MEASURE]}, made, "cause_contributions")
    return first, second, groups


__all__ = ["Choice", "cause_contributions", "choices_between", "explain", "switched"]
