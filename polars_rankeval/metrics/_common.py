"""Building blocks shared by the metric expressions.

Every metric reduces the rows of one query of a judged table (see
:mod:`polars_rankeval.ranking`): retrieved rows carry ``rank`` 1..n in order,
judged documents that were not retrieved carry a null ``rank``; ``relevance`` is
the qrels grade, null for unjudged documents.
"""

from __future__ import annotations

import math
import threading

import numpy as np
import polars as pl

from polars_rankeval._typing import IntoExpr, Norm, Rounding
from polars_rankeval.validation import check_choice

_LOG2_TABLE = np.zeros(2)
_LOG2_TABLE_MAX = 1 << 22
"""Whole numbers up to this (ranks, in practice) are looked up; the table takes 32 MiB then."""
_LOG2_LOCK = threading.Lock()


def _log2_of_ints(top: int) -> np.ndarray:
    """C's ``log2`` of 0, 1, ..., at least ``top``: a table grown as needed (by doubling)."""
    global _LOG2_TABLE
    table = _LOG2_TABLE
    if len(table) > top:
        return table
    with _LOG2_LOCK:
        if len(_LOG2_TABLE) <= top:
            size = max(2 * len(_LOG2_TABLE), top + 1)
            values = np.fromiter(map(math.log2, range(1, size)), np.float64, size - 1)
            _LOG2_TABLE = np.concatenate([[-np.inf], values])
        return _LOG2_TABLE


def c_log2(values: np.ndarray) -> np.ndarray:
    """``log2`` of each value as C's ``log2`` gives it (trec_eval's discounts).

    Polars' ``log(2)`` is ln(x) / ln(2), one unit in the last place away from C's
    ``log2`` for about a third of the integers, and numpy's ``log2`` differs from it
    for a few in 10,000. Whole numbers up to 4,194,304 (ranks, the usual case) are
    looked up in a table of :func:`math.log2` (C's); other positive finite values
    use :func:`math.log2` one by one; NaN, 0, negatives and infinities follow IEEE
    (``log2(0) = -inf``, ``log2(-1) = nan``), as C's ``log2`` does.

    Examples
    --------
    >>> c_log2(np.array([1.0, 3.0, 8.0, 2.5]))
    array([0.        , 1.5849625 , 3.        , 1.32192809])
    >>> c_log2(np.array([0.0, -1.0, np.nan, np.inf]))
    array([-inf,  nan,  nan,  inf])
    """
    values = np.asarray(values, dtype=np.float64)
    whole = (values >= 1) & (values <= _LOG2_TABLE_MAX) & (values == np.trunc(values))
    if whole.all():
        return _log2_of_ints(int(values.max(initial=1)))[values.astype(np.int64)]
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log2(values)  # NaN (a null inside when/then), 0, negatives, infinities
    at = np.flatnonzero(whole)
    if len(at):
        ints = values[at].astype(np.int64)
        out[at] = _log2_of_ints(int(ints.max()))[ints]
    if len(at) < len(values):
        fractional = np.flatnonzero(~whole & np.isfinite(values) & (values > 0))
        out[fractional] = list(map(math.log2, values[fractional].tolist()))
    return out


def log2(expr: pl.Expr) -> pl.Expr:
    """``log2`` of an expression, as C (and trec_eval) computes it: see :func:`c_log2`."""
    return expr.cast(pl.Float64).map_batches(
        lambda s: pl.Series(s.name, c_log2(s.to_numpy()), dtype=pl.Float64),
        return_dtype=pl.Float64,
        is_elementwise=True,
    )


def col(expr: IntoExpr) -> pl.Expr:
    """Column name or expression -> expression."""
    return pl.col(expr) if isinstance(expr, str) else expr


def relevant(relevance: IntoExpr, rel_level: int) -> pl.Expr:
    """Row is a relevant document (grade >= rel_level); unjudged rows are not."""
    return (col(relevance) >= rel_level).fill_null(False)


def relevant_retrieved(rank: IntoExpr, relevance: IntoExpr, rel_level: int) -> pl.Expr:
    """Row is a retrieved relevant document."""
    return relevant(relevance, rel_level) & retrieved(rank)


def in_top(rank: IntoExpr, k: int | None) -> pl.Expr:
    """Row is retrieved at rank <= k (any retrieved row when k is None)."""
    return retrieved(rank) if k is None else (col(rank) <= k).fill_null(False)


def num_relevant(relevance: IntoExpr, rel_level: int, n_rel: IntoExpr | None) -> pl.Expr:
    """|R|: the relevant rows of the query, retrieved or not, or an explicit count."""
    if n_rel is not None:
        return col(n_rel).first().cast(pl.Float64)
    return relevant(relevance, rel_level).sum().cast(pl.Float64)


def safe_div(numerator: pl.Expr, denominator: pl.Expr) -> pl.Expr:
    """numerator / denominator, and 0.0 where the denominator is 0."""
    return (pl.when(denominator > 0).then(numerator / denominator).otherwise(pl.lit(0.0))).cast(
        pl.Float64
    )


def check_cutoff(k: int | None, measure: str, *, allow_none: bool = True) -> None:
    """Raise unless ``k`` is an int >= 1 (or None when allowed)."""
    if k is None and allow_none:
        return
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        msg = f"The cutoff k of {measure} must be an int >= 1. Got {k!r} instead."
        raise ValueError(msg)


def retrieved(rank: IntoExpr) -> pl.Expr:
    """Row is a retrieved document (it has a rank)."""
    return col(rank).is_not_null()


def judged_nonrelevant(relevance: IntoExpr, rel_level: int) -> pl.Expr:
    """Row is judged non-relevant: 0 <= grade < rel_level.

    Negative grades are "in the pool but unjudged" (trec_eval's
    ``RELVALUE_UNJUDGED``), not judged non-relevant.
    """
    g = col(relevance)
    return ((g >= 0) & (g < rel_level)).fill_null(False)


def judged(relevance: IntoExpr) -> pl.Expr:
    """Row carries a judgment: a qrels grade >= 0 (negative grades are unjudged)."""
    return (col(relevance) >= 0).fill_null(False)


def row_position() -> pl.Expr:
    """1, 2, ... over the rows of the group: equals ``rank`` on the retrieved rows,
    which come first and in rank order."""
    return pl.int_range(1, pl.len() + 1, dtype=pl.Int64)


def check_probability(p: float, name: str, measure: str) -> None:
    """Raise unless 0 <= p <= 1 (a recall level, a persistence, ...)."""
    if isinstance(p, bool) or not isinstance(p, int | float) or not 0.0 <= p <= 1.0:
        msg = f"The {name} of {measure} must be a number in [0, 1]. Got {p!r} instead."
        raise ValueError(msg)


def normalizer(k: int | None, n_rel: pl.Expr, norm: Norm) -> pl.Expr:
    """The denominator of AP@k / R@k: |R| (``norm="R"``) or min(k, |R|) (``"min"``)."""
    check_choice("norm", norm, Norm)
    if norm == "R" or k is None:
        return n_rel
    return pl.min_horizontal(n_rel, pl.lit(float(k)))


def recall_cutoff(level: float, n_rel: pl.Expr, rounding: Rounding) -> pl.Expr:
    """Number of relevant documents that reaching recall ``level`` takes, as trec_eval.

    trec_eval 9.x: ``(long)(level * |R| + 0.9)``; trec_eval 10.0:
    ``lround(level * |R|)`` (half away from zero) for ``iprec_at_recall`` and
    ``11pt_avg``, 9.x's for ``Rprec_mult`` (both versions).
    """
    check_choice("rounding", rounding, Rounding)
    x = pl.lit(level, pl.Float64) * n_rel
    return (x + 0.9).floor() if rounding == "v9" else x.round(0, mode="half_away_from_zero")
