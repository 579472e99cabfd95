"""Interpolated precision at recall levels, its average, and precision at multiples of R."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

import polars as pl

from polars_rankeval._typing import IntoExpr
from polars_rankeval.metrics._common import (
    check_probability,
    col,
    num_relevant,
    relevant_retrieved,
)

Rounding = Literal["v9", "v10"]
ELEVEN_POINTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)

if TYPE_CHECKING:
    from polars_rankeval.engine.features import Features


def recall_cutoff(level: float, n_rel: pl.Expr, rounding: Rounding) -> pl.Expr:
    """Number of relevant documents that reaching recall ``level`` takes, as trec_eval.

    trec_eval 9.x: ``(long)(level * |R| + 0.9)``; trec_eval 10.0:
    ``lround(level * |R|)`` (half away from zero) for ``iprec_at_recall`` and
    ``11pt_avg``, 9.x's for ``Rprec_mult`` (both versions).
    """
    x = pl.lit(level, pl.Float64) * n_rel
    if rounding == "v9":
        return (x + 0.9).floor()
    if rounding == "v10":
        return x.round(0, mode="half_away_from_zero")
    msg = f"rounding must be 'v9' (trec_eval 9.x) or 'v10' (trec_eval 10.0). Got {rounding!r}."
    raise ValueError(msg)


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
    kw = {"rank": rank, "relevance": relevance, "rel_level": rel_level, "n_rel": n_rel}
    parts = [iprec_at_recall(x, rounding=rounding, **kw) for x in levels]
    return (pl.sum_horizontal(parts) / len(levels)).cast(pl.Float64)


def rprec_mult(
    mult: float,
    *,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
    rel_level: int = 1,
    n_rel: IntoExpr | None = None,
) -> pl.Expr:
    r"""Precision at a multiple of |R| (trec_eval ``Rprec_mult``).

    .. math:: P@c, \quad c = \lfloor m \cdot |R| + 0.9 \rfloor

    where m is the multiple; P@c divides by c even past the end of the ranking,
    and is 0 when c = 0. With m = 1 it is R-precision.

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, 3, 4, None], "relevance": [0, 1, 0, 1, 1]})
    >>> judged.select(rprec_mult(2.0)).item() == 2 / 6  # c = 6, past the 4 retrieved
    True
    """
    if isinstance(mult, bool) or not isinstance(mult, int | float) or mult < 0:
        msg = f"The multiple of Rprec must be a number >= 0. Got {mult!r} instead."
        raise ValueError(msg)
    cut = recall_cutoff(mult, num_relevant(relevance, rel_level, n_rel), "v9")
    hits = (
        relevant_retrieved(rank, relevance, rel_level) & (col(rank) <= cut).fill_null(False)
    ).sum()
    return pl.when(cut > 0).then(hits / cut).otherwise(0.0).cast(pl.Float64)


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


def rprec_mult_formula(f: Features, mult: float, rel_level: int) -> pl.Expr:
    """Rprec_mult over the engine's features (see :func:`rprec_mult`)."""
    cut = recall_cutoff(mult, f.nrel(rel_level), "v9")  # 10.0 keeps 9.x's here
    hits = f.hits(rel_level, cut)
    return pl.when(cut > 0).then(hits / cut).otherwise(0.0).cast(pl.Float64)
