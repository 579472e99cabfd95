"""Precision-recall curves as plottable frames.

:func:`precision_recall_curve` returns long frames ``[system], [query], recall,
precision``: either trec_eval's interpolated precision at evenly spaced recall
levels (the standard 11-point curve) or the raw point of every relevant document
retrieved. A plotting helper only has to draw ``precision`` against ``recall``.
"""

from __future__ import annotations

from typing import overload

import polars as pl

from polars_rankeval._typing import (
    ArrowStreamExportable,
    FrameT,
    IntoFrameOrDict,
    Missing,
    NestedDict,
    Rounding,
)
from polars_rankeval.conventions import Conventions, get_conventions
from polars_rankeval.evaluate import evaluate, evaluate_judged
from polars_rankeval.inputs import as_frame, run_keys
from polars_rankeval.measures import Measure, parse
from polars_rankeval.metrics._common import num_relevant, relevant_retrieved
from polars_rankeval.ranking import judge, without_tie_warnings
from polars_rankeval.validation import check_reserved, system_column

MAX_POINTS = 1001
"""The most recall levels a curve may have: every 0.001 from 0 to 1."""


def recall_levels(points: int) -> list[float]:
    """``points`` evenly spaced recall levels from 0 to 1 (11: 0.0, 0.1, ..., 1.0).

    Examples
    --------
    >>> recall_levels(5)
    [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    if isinstance(points, bool) or not isinstance(points, int) or not 2 <= points <= MAX_POINTS:
        msg = (
            f"points must be an int from 2 to {MAX_POINTS} (or None for raw points). "
            f"Got {points!r} instead."
        )
        raise ValueError(msg)
    return [i / (points - 1) for i in range(points)]


@overload
def precision_recall_curve(
    run: FrameT,
    qrels: IntoFrameOrDict | None = None,
    *,
    points: int | None = 11,
    per_query: bool = True,
    rel_level: int | None = None,
    rounding: Rounding | None = None,
    conventions: str | Conventions | None = None,
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    relevance: str = "relevance",
    rank: str = "rank",
    system: str | None = "system",
    depth: int | None = None,
    missing: Missing | None = None,
) -> FrameT: ...
@overload
def precision_recall_curve(
    run: ArrowStreamExportable | NestedDict,
    qrels: IntoFrameOrDict | None = None,
    *,
    points: int | None = 11,
    per_query: bool = True,
    rel_level: int | None = None,
    rounding: Rounding | None = None,
    conventions: str | Conventions | None = None,
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    relevance: str = "relevance",
    rank: str = "rank",
    system: str | None = "system",
    depth: int | None = None,
    missing: Missing | None = None,
) -> pl.DataFrame: ...
def precision_recall_curve(
    run: IntoFrameOrDict,
    qrels: IntoFrameOrDict | None = None,
    *,
    points: int | None = 11,
    per_query: bool = True,
    rel_level: int | None = None,
    rounding: Rounding | None = None,
    conventions: str | Conventions | None = None,
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    relevance: str = "relevance",
    rank: str = "rank",
    system: str | None = "system",
    depth: int | None = None,
    missing: Missing | None = None,
) -> pl.DataFrame | pl.LazyFrame:
    r"""Precision-recall points per query (or averaged per system), ready to plot.

    Parameters
    ----------
    run
        A run (``query, doc, score``, optionally ``system``) to be judged with
        ``qrels``, or, when ``qrels`` is None, a judged table as
        :func:`polars_rankeval.judge` returns (``[system], query, rank,
        relevance`` with retrieved rows first, in rank order).
    qrels
        ``query, doc, relevance``; None when ``run`` is already judged.
    points
        An int n >= 2: interpolated precision (trec_eval ``iprec_at_recall``,
        :math:`\max_{i \ge rank_c} P@i`) at n evenly spaced recall levels from
        0 to 1; 11 gives the standard 11-point curve. None: the raw point
        (R@rank, P@rank) of every relevant document retrieved.
    per_query
        True: one curve per query. False: the mean of the interpolated curves
        over the queries of each system (needs ``points``), the curve TREC
        reports; its ``precision`` at each level equals the mean of
        ``IPrec@level``.
    rel_level
        Minimum grade that counts as relevant (default: the conventions', 1 for every
        preset).
    rounding
        How a recall level becomes a number of relevant documents: ``"v10"``
        (trec_eval 10.0's ``lround(r * |R|)``) or ``"v9"`` (9.x's
        ``(long)(r * |R| + 0.9)``); None (default): as ``conventions`` says.
    conventions
        ``"trec_eval-10"`` (None, the default) or ``"trec_eval-9"``, as in
        :func:`polars_rankeval.evaluate`.
    query, doc, score, relevance, rank, system
        Column names (``system`` is used when present).
    depth, missing
        As in :func:`polars_rankeval.evaluate` (trec_eval ``-M`` and ``-c``; ``missing``
        by default the conventions' choice).

    Returns
    -------
    DataFrame or LazyFrame (a LazyFrame for a LazyFrame run, else a DataFrame)
        ``[system], [query], recall, precision`` (Float64), sorted; ``query`` is
        absent when ``per_query=False``. Queries with no qrels row are left out,
        as in :func:`polars_rankeval.evaluate`.

    Examples
    --------
    >>> import polars as pl
    >>> run = pl.DataFrame({"query": ["q"] * 4, "doc": ["a", "b", "c", "d"],
    ...                     "score": [4.0, 3.0, 2.0, 1.0]})
    >>> qrels = pl.DataFrame({"query": ["q", "q"], "doc": ["b", "d"], "relevance": [1, 1]})
    >>> precision_recall_curve(run, qrels, points=None)
    shape: (2, 3)
    ┌───────┬────────┬───────────┐
    │ query ┆ recall ┆ precision │
    │ ---   ┆ ---    ┆ ---       │
    │ str   ┆ f64    ┆ f64       │
    ╞═══════╪════════╪═══════════╡
    │ q     ┆ 0.5    ┆ 0.5       │
    │ q     ┆ 1.0    ┆ 0.5       │
    └───────┴────────┴───────────┘
    >>> precision_recall_curve(run, qrels, points=3)["precision"].to_list()
    [0.5, 0.5, 0.5]
    """
    frame = as_frame(run, "run", (query, doc, score))
    conv = get_conventions(conventions)
    rel_level = conv.option("rel_level", rel_level)
    missing = conv.option("missing", missing)
    roles = {"query": query, "system": system_column(system, frame.collect_schema().names())}
    check_reserved(roles, ("recall", "precision"), "precision_recall_curve")
    if points is not None:
        levels = recall_levels(points)
        given = "" if rounding is None else f"(rounding={rounding})"
        measures = [parse(f"IPrec{given}@{level!r}") for level in levels]
        if qrels is None:
            scores = evaluate_judged(
                frame, measures, query=query, rank=rank, relevance=relevance, system=system,
                rel_level=rel_level, conventions=conventions,
            )  # fmt: skip
        else:
            scores = evaluate(
                frame, qrels, measures, query=query, doc=doc, score=score, relevance=relevance,
                rank=rank, system=system, rel_level=rel_level, depth=depth, missing=missing,
                conventions=conventions,
            )  # fmt: skip
        curve = _interpolated(scores.lazy(), measures, levels, per_query=per_query)
        return curve.collect() if isinstance(frame, pl.DataFrame) else curve
    if not per_query:
        msg = "per_query=False averages interpolated curves: give points (e.g. 11)."
        raise ValueError(msg)
    if qrels is None:
        judged = frame.lazy()
    else:
        with without_tie_warnings():  # the points read the table's ranks, no measure
            judged = judge(
                frame.lazy(),
                as_frame(qrels, "qrels", (query, doc, relevance)).lazy(),
                query=query,
                doc=doc,
                score=score,
                relevance=relevance,
                rank=rank,
                system=system,
                depth=depth,
                missing=missing,
                conventions=conventions,
            )
    names = judged.collect_schema().names()
    keys = run_keys(query, system_column(system, names))
    scored = pl.col(relevance).is_not_null().any().over(keys)
    if missing != "zero":
        scored = scored & pl.col(rank).is_not_null().any().over(keys)
    curve = _raw_points(judged.filter(scored), keys, rank, relevance, rel_level)
    return curve.collect() if isinstance(frame, pl.DataFrame) else curve


def _raw_points(
    judged: pl.LazyFrame, keys: list[str], rank: str, relevance: str, rel_level: int
) -> pl.LazyFrame:
    hit = relevant_retrieved(rank, relevance, rel_level)
    found = hit.cum_sum().over(keys).cast(pl.Float64)
    n_rel = num_relevant(relevance, rel_level, None).over(keys)
    return (
        judged.with_columns(
            __hit=hit, recall=found / n_rel, precision=found / pl.col(rank).cast(pl.Float64)
        )
        .filter(pl.col("__hit"))
        .select(*keys, "recall", "precision")
        .sort([*keys, "recall"])
    )


def _interpolated(
    scores: pl.LazyFrame, measures: list[Measure], levels: list[float], *, per_query: bool
) -> pl.LazyFrame:
    """The curve of ``IPrec@level`` scores (the ``measures``, one per level): one row per
    ranking and level, or the mean over each system's queries."""
    at = {str(m): level for m, level in zip(measures, levels, strict=True)}
    keys = [k for k in scores.collect_schema().names() if k not in at]
    curve = scores.unpivot(index=keys, variable_name="recall", value_name="precision")
    curve = curve.with_columns(pl.col("recall").replace_strict(at, return_dtype=pl.Float64))
    curve = curve.sort([*keys, "recall"])
    if not per_query:
        group = [*keys[:-1], "recall"]
        curve = curve.group_by(group).agg(pl.col("precision").mean()).sort(group)
    return curve
