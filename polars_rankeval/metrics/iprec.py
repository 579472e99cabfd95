"""Interpolated precision at recall levels and its average (trec_eval ``iprec_at_recall``,
``11pt_avg``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, get_args

import polars as pl

from polars_rankeval._typing import IntoExpr, Rounding
from polars_rankeval.catalogue import (
    JUDGED_ONLY,
    REL,
    UNIT,
    Levels,
    Measure,
    Param,
    declare,
    reads_relevant,
    with_n_rel,
)
from polars_rankeval.metrics._common import (
    check_probability,
    col,
    num_relevant,
    recall_cutoff,
    relevant_retrieved,
)

ELEVEN_POINTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


if TYPE_CHECKING:
    from polars_rankeval.engine.features import Features


def iprec_at_recall(
    level: float,
    *,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
    rel_level: int = 1,
    n_rel: IntoExpr | None = None,
    rounding: Rounding = "v10",
) -> pl.Expr:
    r"""Interpolated precision at a recall level (trec_eval ``iprec_at_recall``).

    .. math:: IPrec@r = \max \{ P@i : i \ge rank_{c} \}, \quad
              c = round(r \cdot |R|)

    where :math:`rank_c` is the rank of the c-th relevant document retrieved
    (the first one when c = 0) and the maximum runs over the retrieved ranks.
    The value is 0 when fewer than c relevant documents are retrieved. ``round``
    is trec_eval 10.0's ``lround`` (half away from zero, the default
    ``rounding="v10"``); ``rounding="v9"`` uses trec_eval 9.x's
    :math:`c = \lfloor r \cdot |R| + 0.9 \rfloor`.

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, 3, 4, None], "relevance": [0, 1, 0, 1, 1]})
    >>> judged.select(iprec_at_recall(0.5)).item()  # c = 2: max(P@4) = 2/4
    0.5
    >>> judged.select(iprec_at_recall(0.1)).item()  # c = round(0.3) = 0: max(P@2, P@4)
    0.5
    >>> judged.select(iprec_at_recall(0.9, rounding="v9")).item()  # c = floor(3.6) = 3
    0.0
    >>> judged.select(iprec_at_recall(1.0)).item()  # 3 relevant, 2 retrieved
    0.0
    """
    check_probability(level, "recall level", "IPrec")
    hit = relevant_retrieved(rank, relevance, rel_level)
    found = hit.cum_sum()
    cut = recall_cutoff(level, num_relevant(relevance, rel_level, n_rel), rounding)
    precision_at = found.cast(pl.Float64) / col(rank).cast(pl.Float64)
    keep = hit & (found >= pl.max_horizontal(cut, pl.lit(1.0)))
    return precision_at.filter(keep).max().fill_null(0.0).cast(pl.Float64)


def iprec_average(
    levels: Sequence[float] = ELEVEN_POINTS,
    *,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
    rel_level: int = 1,
    n_rel: IntoExpr | None = None,
    rounding: Rounding = "v10",
) -> pl.Expr:
    r"""Interpolated precision averaged over recall levels (trec_eval ``11pt_avg``).

    .. math:: IPrecAvg = \frac{1}{|L|} \sum_{r \in L} IPrec@r

    where L are the recall levels, by default the 11 points 0.0, 0.1, ..., 1.0
    (trec_eval ``-m 11pt_avg..25,.5,.75`` sets ``levels=(0.25, 0.5, 0.75)``).

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2], "relevance": [1, 0]})
    >>> judged.select(iprec_average()).item()  # IPrec is 1 at every level
    1.0
    """
    if not levels:
        msg = "iprec_average needs at least one recall level."
        raise ValueError(msg)
    parts = [
        iprec_at_recall(
            x, rank=rank, relevance=relevance, rel_level=rel_level, n_rel=n_rel, rounding=rounding
        )
        for x in levels
    ]
    return (pl.sum_horizontal(parts) / len(levels)).cast(pl.Float64)


# ---------------------------------------------------------------------- formulas
# The same measures over the engine's features (see polars_rankeval.engine.features).


def iprec_at_recall_formula(
    f: Features, level: float, rel_level: int, rounding: Rounding = "v10"
) -> pl.Expr:
    """IPrec@level over the engine's features (see :func:`iprec_at_recall`)."""
    check_probability(level, "recall level", "IPrec")
    cut = pl.max_horizontal(recall_cutoff(level, f.nrel(rel_level), rounding), 1.0)
    best = f.max_from_hit(rel_level, f.hits_so_far(rel_level) / f.rank, cut)
    return best.fill_null(0.0).cast(pl.Float64)


def iprec_average_formula(
    f: Features, levels: Sequence[float], rel_level: int, rounding: Rounding = "v10"
) -> pl.Expr:
    """IPrecAvg over the engine's features: the mean of IPrec at ``levels``."""
    parts = [iprec_at_recall_formula(f, x, rel_level, rounding) for x in levels]
    return (pl.sum_horizontal(parts) / f.constant(len(levels))).cast(pl.Float64)


# --------------------------------------------------------------------------- declarations

ROUNDING = Param("rounding", str, None, get_args(Rounding))  # None: the conventions decide
ELEVEN = Levels(ELEVEN_POINTS)


def _level(measure: Measure) -> float:
    """The cutoff of a measure cut at a recall level (IPrec)."""
    if measure.cutoff is None:
        msg = f"Measure {measure.name} needs a recall level, e.g. {measure.name}@0.5."
        raise ValueError(msg)
    return measure.cutoff


declare(
    "IPrec",
    lambda x, c: iprec_at_recall(
        _level(x), rounding=x.get("rounding", c.iprec_rounding), **with_n_rel(x, c)
    ),
    "required",
    REL,
    ROUNDING,
    JUDGED_ONLY,
    summary="interpolated precision at a recall level (rounding=v9|v10; default: conventions)",
    cutoff_kind=float,
    reads=reads_relevant,
    formula=lambda x, f: iprec_at_recall_formula(
        f, _level(x), x.rel_level(f.ctx), x.get("rounding", f.ctx.iprec_rounding)
    ),
    bounds=UNIT,
    aliases=("iprec",),
    trec_cutoff={"iprec_at_recall": None},
    trec_dotted={"iprec_at_recall": "cutoffs"},
    order=9,
)
declare(
    "IPrecAvg",
    lambda x, c: iprec_average(
        x.setting("levels"), rounding=x.get("rounding", c.iprec_rounding), **with_n_rel(x, c)
    ),
    "none",
    REL,
    ROUNDING,
    Param("levels", Levels, ELEVEN),
    summary="interpolated precision averaged over recall levels (11pt_avg)",
    reads=reads_relevant,
    formula=lambda x, f: iprec_average_formula(
        f, x.setting("levels"), x.rel_level(f.ctx), x.get("rounding", f.ctx.iprec_rounding)
    ),
    bounds=UNIT,
    aliases=("11pt_avg",),
    trec_dotted={"11pt_avg": "levels"},
    order=10,
)
