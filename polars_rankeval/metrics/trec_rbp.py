"""Rank-biased precision as trec_eval 10.0 computes it (``rbp``, ``rbp_resid``).

trec_eval 10.0 added RBP to ``all_trec`` with its own choices, which differ from
the binary ``RBP(p=0.8)`` of :mod:`polars_rankeval.metrics.err`: graded gains
scaled into [0, 1] by the query's highest grade, a persistence of 0.9, and a
residual that is 0 when every retrieved document is judged. Written after
``m_rbp.c`` and ``m_rbp_resid.c`` (Ian Soboroff, NIST).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from polars_rankeval._typing import IntoExpr
from polars_rankeval.catalogue import (
    Param,
    declare,
    reads_gained,
)
from polars_rankeval.engine.shape import GRADE, NRET, RANK
from polars_rankeval.metrics._common import check_probability, col, judged, retrieved

if TYPE_CHECKING:
    from polars_rankeval.engine.features import Built, Features

TREC_P = 0.9
"""trec_eval's default persistence for rbp and rbp_resid."""


def _power(p: float, exponent: pl.Expr) -> pl.Expr:
    """p to an integer power as trec_eval computes it: 1.0 multiplied by p once per rank.

    The same value as ``p ** n`` to within a few ulps; bit for bit the product
    trec_eval forms (``cur_p = cur_p * p``), so that printed values agree.
    """

    def powers(exponents: pl.Series) -> pl.Series:
        n = exponents.fill_null(0).cast(pl.Int64).to_numpy()
        table = np.cumprod(np.concatenate([[1.0], np.full(int(n.max(initial=0)), p)]))
        return pl.Series(table[n], dtype=pl.Float64)

    return exponent.map_batches(powers, return_dtype=pl.Float64, is_elementwise=True)


def _weight(p: float, rank: IntoExpr) -> pl.Expr:
    """p^(rank - 1): the chance that a user reaches the rank."""
    return _power(p, col(rank).cast(pl.Int64) - 1)


def _sum_in_order(values: pl.Expr) -> pl.Expr:
    """The values added one by one in row (rank) order, as trec_eval adds them; 0 if none."""
    return values.cum_sum().last().fill_null(0.0)


def trec_rbp(
    p: float = TREC_P, *, rank: IntoExpr = "rank", relevance: IntoExpr = "relevance"
) -> pl.Expr:
    r"""Rank-biased precision with graded gains, as trec_eval 10.0's ``rbp`` (``TrecRBP``).

    .. math:: RBP = (1 - p) \sum_{i=1}^{n} g(rel_i) \, p^{i - 1},
              \qquad g(x) = \frac{x}{\max(1, G)}

    where

    - :math:`rel_i` is the grade of the document at rank i (0 when it is not
      in the qrels or has a negative grade),
    - :math:`G` is the highest grade among the query's qrels rows, retrieved
      or not, so that every gain lies in [0, 1] (grades 0 and 1 are used as
      they are),
    - p is the persistence, the chance the user reads on (trec_eval: 0.9),
    - n is the number of documents retrieved.

    The relevance threshold (``rel_level``, trec_eval ``-l``) plays no part.

    Parameters
    ----------
    p
        Persistence in [0, 1]; trec_eval's default 0.9 (``-m rbp.p=0.95``).
    rank, relevance
        Columns of the judged table. Accepts expression input. Strings are
        parsed as column names.

    Returns
    -------
    pl.Expr
        One Float64 per query.

    Notes
    -----
    trec_eval scales the gains with ``(g - min) / (max - min)`` over the gain
    table when a gain lies outside [0, 1]; with grades as gains the table holds
    grade 0, so this is :math:`g / G` when :math:`G > 1`.

    References
    ----------
    Moffat and Zobel, "Rank-biased precision for measurement of retrieval
    effectiveness", ACM TOIS 27(1), article 2, 2008.

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, 3, None], "relevance": [1, None, 2, 4]})
    >>> # gains 1/4 at rank 1 and 2/4 at rank 3; the grade 4 document was missed
    >>> judged.select(trec_rbp(0.5)).item() == 0.5 * (0.25 + 0.5 * 0.5**2)
    True
    """
    check_probability(p, "persistence p", "TrecRBP")
    grade = col(relevance).cast(pl.Float64)
    top = pl.max_horizontal(grade.max().fill_null(1.0), pl.lit(1.0))
    # top as a column: Polars divides a column by a scalar as a product with its
    # reciprocal, an ulp away from trec_eval's quotient
    gain = (grade.clip(lower_bound=0.0) / pl.repeat(top, pl.len())).fill_null(0.0)
    value = _sum_in_order((gain * _weight(p, rank)).filter(retrieved(rank)))
    return ((1.0 - p) * value).cast(pl.Float64)


def trec_rbp_residual(
    p: float = TREC_P, *, rank: IntoExpr = "rank", relevance: IntoExpr = "relevance"
) -> pl.Expr:
    r"""The residual of RBP as trec_eval 10.0's ``rbp_resid`` (``TrecRBPResid``).

    .. math:: RBP_{res} = \begin{cases}
              (1 - p) \sum_{i \in U} p^{i - 1} + p^{n} & U \neq \emptyset \\
              0 & U = \emptyset \end{cases}

    where

    - U are the ranks of the unjudged retrieved documents (not in the qrels,
      or with a negative grade),
    - n is the number of documents retrieved, and :math:`p^n` the weight of
      every rank past the end,
    - p is the persistence (trec_eval: 0.9).

    The value bounds how much RBP could rise were every unjudged document
    (and everything past the end) of the highest gain. Unlike ``RBPResid``
    it is 0 when every retrieved document is judged.

    Parameters
    ----------
    p
        Persistence in [0, 1]; trec_eval's default 0.9 (``-m rbp_resid.p=0.95``).
    rank, relevance
        Columns of the judged table. Accepts expression input. Strings are
        parsed as column names.

    Returns
    -------
    pl.Expr
        One Float64 per query.

    References
    ----------
    Moffat and Zobel, "Rank-biased precision for measurement of retrieval
    effectiveness", ACM TOIS 27(1), article 2, 2008.

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, 3], "relevance": [1, None, -1]})
    >>> # ranks 2 and 3 are unjudged; three documents retrieved
    >>> judged.select(trec_rbp_residual(0.5)).item() == 0.5 * (0.5 + 0.25) + 0.5**3
    True
    >>> pl.DataFrame({"rank": [1, 2], "relevance": [1, 0]}).select(trec_rbp_residual()).item()
    0.0
    """
    check_probability(p, "persistence p", "TrecRBPResid")
    ret = retrieved(rank)
    unjudged = ret & ~judged(relevance)
    weights = _sum_in_order(_weight(p, rank).filter(unjudged))
    tail = _power(p, ret.sum().cast(pl.Int64))
    value = tail + (1.0 - p) * weights
    return pl.when(unjudged.any()).then(value).otherwise(0.0).cast(pl.Float64)


# ---------------------------------------------------------------------- formulas
# The same measures over the engine's features (see polars_rankeval.engine.features).


def _powers_of(f: Features, p: float, exponent: pl.Expr) -> pl.Expr:
    """Row-level: p to an integer power, by trec_eval's repeated products."""
    source = f.row(exponent.cast(pl.Int64)).meta.output_name()

    def powers(built: Built) -> pl.Series:
        return _power_table(p, built.rows[source].to_numpy())

    return f.row_function(f"powers|{p}|{exponent}", powers)


def _power_table(p: float, exponents: np.ndarray) -> pl.Series:
    """p**n for each n, as trec_eval forms it (1.0 times p, n times)."""
    n = np.maximum(exponents.astype(np.int64), 0)
    table = np.cumprod(np.concatenate([[1.0], np.full(int(n.max(initial=0)), p)]))
    return pl.Series(table[n], dtype=pl.Float64)


def trec_rbp_formula(f: Features, p: float) -> pl.Expr:
    """TrecRBP over the engine's features (see :func:`trec_rbp`): gains over the query's
    highest grade (a column, so the quotient is trec_eval's), summed in rank order."""
    check_probability(p, "persistence p", "TrecRBP")
    top = f.judgments(pl.col(GRADE).max().cast(pl.Float64))
    scale = f.on_rows(pl.max_horizontal(top, 1.0))
    gain = f.grade.cast(pl.Float64).clip(lower_bound=0.0) / scale
    weight = _powers_of(f, p, pl.col(RANK).cast(pl.Int64) - 1)
    return ((1.0 - p) * f.sum(gain * weight)).cast(pl.Float64)


def trec_rbp_residual_formula(f: Features, p: float) -> pl.Expr:
    """TrecRBPResid over the engine's features (see :func:`trec_rbp_residual`).

    The unjudged retrieved documents are not among the engine's rows: their
    weights are those of every retrieved rank less those of the judged ones.
    """
    check_probability(p, "persistence p", "TrecRBPResid")
    judged_rows = (f.grade >= 0).cast(pl.Float64)
    judged_weight = f.sum(judged_rows * _powers_of(f, p, pl.col(RANK).cast(pl.Int64) - 1))

    def every_rank(built: Built) -> pl.Series:
        """(1 + p + ... + p^(n-1), p^n) of each ranking's n retrieved, as trec_eval sums."""
        n = built.per_ranking[NRET].to_numpy().astype(np.int64)
        powers = np.cumprod(np.concatenate([[1.0], np.full(int(n.max(initial=0)), p)]))
        sums = np.concatenate([[0.0], np.cumsum(powers[:-1])])
        return pl.Series(sums[n], dtype=pl.Float64)

    weights = f.late(f"rbp-weights|{p}", every_rank)
    tail = f.late(
        f"rbp-tail|{p}", lambda built: _power_table(p, built.per_ranking[NRET].to_numpy())
    )
    unjudged = f.nret - f.sum(judged_rows)
    value = tail + (1.0 - p) * (weights - judged_weight)
    return pl.when(unjudged > 0).then(value).otherwise(0.0).cast(pl.Float64)


# --------------------------------------------------------------------------- declarations

declare(
    "TrecRBP",
    lambda x, c: trec_rbp(x.setting("p"), rank=c.rank, relevance=c.relevance),
    "none",
    Param("p", float, TREC_P),
    summary="rank-biased precision as trec_eval 10 (rbp): graded gains / max grade, p=0.9",
    reads=reads_gained,
    formula=lambda x, f: trec_rbp_formula(f, x.setting("p")),
    aliases=("rbp",),
    order=35,
)
declare(
    "TrecRBPResid",
    lambda x, c: trec_rbp_residual(x.setting("p"), rank=c.rank, relevance=c.relevance),
    "none",
    Param("p", float, TREC_P),
    summary="residual of TrecRBP as trec_eval 10 (rbp_resid): 0 when all retrieved are judged",
    formula=lambda x, f: trec_rbp_residual_formula(f, x.setting("p")),
    aliases=("rbp_resid",),
    better="lower",
    order=36,
)
