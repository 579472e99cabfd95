"""Normalised discounted cumulative gain, trec_eval style."""

from __future__ import annotations

import math
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
    rel_level: int | None = None,
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

    ``rel_level`` gives grades below it no gain, in the ranking and in the
    ideal ranking alike: ranx's ``ndcg@k-l2`` (``nDCG(rel=2)@k``; ranx
    ``ranx/metrics/ndcg.py`` ``_dcg`` keeps only the qrels of grade >=
    ``rel_lvl``). The global ``rel_level`` option leaves nDCG alone, as trec_eval.

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
    lowest = gain_floor(rel_level)
    if gains is None and not exponential and rel_level is None:
        return safe_div(dcg(k, rank=rank, gain=relevance), ideal_dcg(k, gain=relevance))
    g = grade_gain(relevance, gains, exponential=exponential, lowest=lowest)
    top = (g / discount(col(rank))).filter(in_top(rank, k)).sum()
    return safe_div(top, ideal_dcg(k, gain=g))


def gain_floor(rel_level: int | None, *, signed: bool = False) -> float:
    """The lowest grade with a gain: 0 (trec_eval), the relevance level (ranx's
    ``-lN``) or -inf (``signed``: negative grades are negative gains)."""
    if signed:
        if rel_level is not None:
            msg = "A relevance level and signed gains exclude each other: give one of them."
            raise ValueError(msg)
        return -math.inf
    if rel_level is None:
        return 0
    if isinstance(rel_level, bool) or not isinstance(rel_level, int) or rel_level < 1:
        msg = f"The relevance level rel must be an int >= 1. Got {rel_level!r} instead."
        raise ValueError(msg)
    return rel_level


def check_log_base(log_base: float) -> float:
    """log2 of a DCG discount's base; raise unless the base is a finite number > 0, not 1."""
    if (
        isinstance(log_base, bool)
        or not isinstance(log_base, int | float)
        or not math.isfinite(log_base)
        or log_base <= 0
        or log_base == 1
    ):
        msg = f"log_base of DCG must be a number > 0 other than 1. Got {log_base!r} instead."
        raise ValueError(msg)
    return math.log2(log_base)


def discounted_cumulative_gain(
    k: int | None = None,
    *,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
    gains: Mapping[int, float] | None = None,
    exponential: bool = False,
    rel_level: int | None = None,
    signed: bool = False,
    log_base: float = 2.0,
) -> pl.Expr:
    r"""Discounted cumulative gain at k, unnormalised (``DCG@k``).

    .. math:: DCG@k = \sum_{i=1}^{k} \frac{g_i}{\log_b(i + 1)}

    over the retrieved documents, where :math:`g_i` is the gain of the document
    at rank i: its grade (linear, ``DCG@k``), :math:`2^{grade} - 1`
    (``exponential``, ``DCG(gain=exp)@k``) or ``gains[grade]``, and b is
    ``log_base`` (2 by default). Unjudged documents have gain 0, and so do
    negative grades, unless ``signed`` (``DCG(gain=signed)@k``) keeps them as
    negative gains; ``rel_level`` gives grades below it no gain.

    Peers: ranx ``dcg@k`` and ``dcg_burges@k`` (``ranx/metrics/ndcg.py``,
    ``_dcg`` with ``jarvelin`` True or False; ``dcg@k-l2`` is
    ``DCG(rel=2)@k``), scikit-learn ``dcg_score(y_true, y_score, k=k,
    log_base=b, ignore_ties=True)`` (``sklearn/metrics/_ranking.py``; its
    negative ``y_true`` values are negative gains: ``DCG(gain=signed)@k``,
    every document judged).

    References
    ----------
    Järvelin and Kekäläinen, "Cumulated gain-based evaluation of IR techniques",
    ACM TOIS 20(4), 2002. Burges et al., "Learning to rank using gradient
    descent", ICML 2005 (exponential gain).

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, 3, None], "relevance": [3, -1, 2, 1]})
    >>> judged.select(discounted_cumulative_gain(2)).item() == 3.0
    True
    >>> got = judged.select(discounted_cumulative_gain(signed=True, log_base=10)).item()
    >>> abs(got - (3 / math.log10(2) - 1 / math.log10(3) + 2 / math.log10(4))) < 1e-12
    True
    """
    check_cutoff(k, "DCG")
    factor = check_log_base(log_base)
    lowest = gain_floor(rel_level, signed=signed)
    g = grade_gain(relevance, gains, exponential=exponential, lowest=lowest)
    terms = g / discount(col(rank))
    total = (terms if factor == 1.0 else terms * factor).filter(in_top(rank, k)).sum()
    return total.cast(pl.Float64)


def ndcg_formula(
    f: Features,
    k: int | None,
    gains: Mapping[int, float] | None = None,
    *,
    exponential: bool = False,
    rel_level: int | None = None,
) -> pl.Expr:
    """nDCG@k over the engine's features: DCG of the top k over the ideal DCG at k."""
    lowest = gain_floor(rel_level)
    gain = grade_gain(f.grade, gains, exponential=exponential, lowest=lowest)
    dcg_k = f.sum_to_rank(gain / discount(f.rank), k)
    ideal = f.ideal(gains, exponential=exponential, lowest=lowest)
    ideal_dcg = f.ideal_sum_to(ideal, f.ideal_gain / discount(f.ideal_position), k)
    return safe_div(dcg_k, ideal_dcg)


def dcg_formula(
    f: Features,
    k: int | None,
    gains: Mapping[int, float] | None = None,
    *,
    exponential: bool = False,
    rel_level: int | None = None,
    signed: bool = False,
    log_base: float = 2.0,
) -> pl.Expr:
    """DCG@k over the engine's features (see :func:`discounted_cumulative_gain`)."""
    factor = check_log_base(log_base)
    lowest = gain_floor(rel_level, signed=signed)
    terms = grade_gain(f.grade, gains, exponential=exponential, lowest=lowest) / discount(f.rank)
    return f.sum_to_rank(terms if factor == 1.0 else terms * factor, k).cast(pl.Float64)
