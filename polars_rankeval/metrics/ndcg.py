"""Normalised discounted cumulative gain, trec_eval style."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import polars as pl

from polars_rankeval._typing import IntoExpr
from polars_rankeval.metrics._common import check_cutoff, col, in_top, row_position, safe_div
from polars_rankeval.metrics.gain import discount, grade_gain, ideal_gains

if TYPE_CHECKING:
    from polars_rankeval.engine.features import Features


def dcg(k: int | None = None, *, rank: IntoExpr = "rank", gain: IntoExpr = "relevance") -> pl.Expr:
    r"""Discounted cumulative gain of the ranking, cut at k.

    .. math:: DCG@k = \sum_{i=1}^{k} \frac{g_i}{\log_2(i + 1)}

    where :math:`g_i` is the gain of the document at rank i; negative and missing
    gains count as 0.
    """
    g = col(gain).cast(pl.Float64).clip(lower_bound=0.0).fill_null(0.0)
    return (g / discount(col(rank))).filter(in_top(rank, k)).sum()


def ideal_dcg(k: int | None = None, *, gain: IntoExpr = "relevance") -> pl.Expr:
    r"""DCG of the ideal ranking: every positive gain of the query, sorted descending.

    The query's rows include judged documents that were not retrieved, so the
    ideal ranking is built from all qrels grades of the query, cut at k. The
    gains that are not positive sort last, as 0, so each position's discount
    is its row number in the group (no per-group count is needed).
    """
    ideal = ideal_gains(col(gain).cast(pl.Float64)) / discount(row_position())
    return (ideal if k is None else ideal.head(k)).sum()


def ndcg(
    k: int | None = None,
    *,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
    gains: Mapping[int, float] | None = None,
    exponential: bool = False,
) -> pl.Expr:
    r"""Normalised DCG (trec_eval ``ndcg``; with k, ``ndcg_cut_k``).

    .. math:: nDCG@k = \frac{DCG@k}{IDCG@k}, \quad
              DCG@k = \sum_{i=1}^{k} \frac{g_i}{\log_2(i + 1)}

    where the gain :math:`g_i` is the relevance grade itself (linear gain, as
    trec_eval; grades <= 0 and unjudged documents give 0) and IDCG@k is the DCG of
    all the query's qrels grades sorted descending, cut at k. ``rel_level`` plays
    no part (as in trec_eval). A query whose IDCG is 0 scores 0.

    ``gains`` maps grades to other gains (trec_eval ``ndcg.1=3,2=9``; grades not
    listed keep their own value; gains may be 0 or negative) and
    ``exponential=True`` uses :math:`g_i = 2^{grade} - 1` (Burges et al.), the
    convention of most learning-to-rank libraries (``nDCG(gain=exp)@k``); the
    ideal ranking uses the same gains.

    References
    ----------
    Järvelin and Kekäläinen, "Cumulated gain-based evaluation of IR techniques",
    ACM TOIS 20(4), 2002. Burges et al., "Learning to rank using gradient
    descent", ICML 2005 (exponential gain).

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, None], "relevance": [1, 0, 2]})
    >>> import math
    >>> ideal = 2 + 1 / math.log2(3)
    >>> abs(judged.select(ndcg()).item() - 1 / ideal) < 1e-12
    True
    """
    check_cutoff(k, "nDCG")
    if gains is None and not exponential:
        return safe_div(dcg(k, rank=rank, gain=relevance), ideal_dcg(k, gain=relevance))
    g = grade_gain(relevance, gains, exponential=exponential)
    top = (g / discount(col(rank))).filter(in_top(rank, k)).sum()
    return safe_div(top, ideal_dcg(k, gain=g))


def ndcg_formula(
    f: Features,
    k: int | None,
    gains: Mapping[int, float] | None = None,
    *,
    exponential: bool = False,
) -> pl.Expr:
    """nDCG@k over the engine's features: DCG of the top k over the ideal DCG at k."""
    discounted = grade_gain(f.grade, gains, exponential=exponential) / discount(f.rank)
    dcg_k = f.sum_to_rank(discounted, k)
    ideal = f.ideal(gains, exponential=exponential)
    ideal_dcg = f.ideal_sum_to(ideal, f.ideal_gain / discount(f.ideal_position), k)
    return safe_div(dcg_k, ideal_dcg)
