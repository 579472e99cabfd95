"""explain(): why one tool's number differs from another's, query by query.

:func:`explain` scores a run under two conventions (two presets, e.g.
``"trec_eval-10"`` and ``"ranx"``), and for each query whose values differ names
the choice or choices that cause it. It finds them by switching the first
conventions' choices to the second's one at a time (:func:`choices_between`,
:func:`switched`) and scoring again: a choice causes a query's difference when
switching it alone changes that query's value. Where no single switch does, the
difference comes from several choices together, and all of them are named.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import polars as pl

from polars_rankeval._typing import IntoFrameOrDict
from polars_rankeval.conventions import CHOICES, Conventions, get_conventions
from polars_rankeval.engine.outcome import UnscoredQueriesWarning
from polars_rankeval.evaluate import evaluate
from polars_rankeval.inputs import as_frame, dict_columns
from polars_rankeval.measures import Measure, parse_measures
from polars_rankeval.validation import system_column

DIFFERENCE = "difference"
CAUSES = "causes"
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
    run: pl.DataFrame, qrels: pl.DataFrame, measure: str, conventions: Conventions, **kw: Any
) -> pl.DataFrame:
    """Per-query values of one measure under ``conventions``: ``keys, value``."""
    parsed = _one_measure(measure, conventions)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnscoredQueriesWarning)
        out = evaluate(run, qrels, [parsed], conventions=conventions, **kw)
    return out.rename({str(parsed): "value"})


def _one_measure(measure: str, conventions: Conventions) -> Measure:
    parsed = parse_measures(measure, conventions=conventions)
    if len(parsed) != 1:
        msg = (
            f"explain takes one measure; {measure!r} stands for {len(parsed)} "
            f"({', '.join(map(str, parsed))})."
        )
        raise ValueError(msg)
    return parsed[0]


def _changed(base: pl.DataFrame, other: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Keys of the queries whose value differs (or that one side scores and not the other)."""
    joined = base.join(other, on=keys, how="full", coalesce=True, suffix="_other")
    a, b = pl.col("value"), pl.col("value_other")
    differs = (a.is_null() != b.is_null()) | ((a - b).abs() > TOLERANCE)
    return joined.filter(differs.fill_null(False)).select(keys)


def explain(
    run: IntoFrameOrDict,
    qrels: IntoFrameOrDict,
    measure: str | Measure,
    between: Sequence[str | Conventions] = ("trec_eval-10", "ranx"),
    *,
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    relevance: str = "relevance",
    system: str | None = "system",
) -> pl.DataFrame:
    """Per-query values of a measure under two conventions, and why they differ.

    Parameters
    ----------
    run, qrels
        As for :func:`polars_rankeval.evaluate` (in memory).
    measure
        One measure name in any dialect (``"ndcg@10"``). Each conventions may name
        it differently (``nDCG(ties=average)@10`` under ``"sklearn"``).
    between
        Two conventions: preset names (``"trec_eval-10"``, ``"trec_eval-9"``,
        ``"ranx"``, ``"ir_measures"``, ``"sklearn"``, ``"torchmetrics"``,
        ``"spark"``) or :class:`~polars_rankeval.conventions.Conventions`.
    query, doc, score, relevance, system
        Column names.

    Returns
    -------
    pl.DataFrame
        ``[system], query``, the value under each conventions (columns named after
        them; null where one does not score the query), ``difference`` (second
        minus first), and ``causes``: for a query whose values differ, the choices
        that cause it (``"ties: doc_desc -> input"``), each found by switching that
        choice alone from the first conventions to the second's; empty for the
        others. Every query either scores, sorted.

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
    """
    if isinstance(between, str) or len(between) != 2:
        msg = f"between must name two conventions, e.g. ('trec_eval-10', 'ranx'). Got {between!r}."
        raise ValueError(msg)
    first, second = (get_conventions(c) for c in between)
    measure = str(measure)  # a name: each conventions give it their parameters
    if first.name == second.name:
        msg = f"between names the same conventions twice ({first.name!r})."
        raise ValueError(msg)
    run = as_frame(run, "run", dict_columns(query, doc, score)).lazy().collect()
    qrels = as_frame(qrels, "qrels", dict_columns(query, doc, relevance)).lazy().collect()
    system = system_column(system, run.collect_schema())
    keys = [*([system] if system else []), query]
    kw: dict[str, Any] = dict(query=query, doc=doc, score=score, relevance=relevance, system=system)

    def scores(conventions: Conventions) -> pl.DataFrame:
        return _scores(run, qrels, measure, conventions, **kw)

    base, other = scores(first), scores(second)
    differing = _changed(base, other, keys)
    causes: dict[tuple[Any, ...], list[str]] = {}
    choices = choices_between(first, second)
    for choice in choices:
        for row in _changed(base, scores(switched(first, choice)), keys).iter_rows():
            causes.setdefault(row, []).append(str(choice))
    together = [str(c) for c in choices]  # no single switch changes it: all of them
    listed = [causes.get(row, together) for row in differing.iter_rows()]
    explained = differing.with_columns(pl.Series(CAUSES, listed, dtype=pl.List(pl.String)))
    return _side_by_side(base, other, explained, keys, (first.name, second.name))


def _side_by_side(
    base: pl.DataFrame,
    other: pl.DataFrame,
    explained: pl.DataFrame,
    keys: list[str],
    names: tuple[str, str],
) -> pl.DataFrame:
    """``keys``, both values, their difference and the causes (empty where none), sorted."""
    first, second = names
    values = base.join(other, on=keys, how="full", coalesce=True, suffix="_other")
    out = values.rename({"value": first, "value_other": second}).with_columns(
        (pl.col(second) - pl.col(first)).alias(DIFFERENCE)
    )
    out = out.join(explained, on=keys, how="left").with_columns(
        pl.col(CAUSES).fill_null(pl.lit([], dtype=pl.List(pl.String)))
    )
    return out.sort(keys).select(*keys, first, second, DIFFERENCE, CAUSES)


__all__ = ["Choice", "choices_between", "explain", "switched"]
