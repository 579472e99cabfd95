"""Normalised discounted cumulative gain, trec_eval style."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import polars as pl

from polars_rankeval._typing import IntoExpr
from polars_rankeval.catalogue import (
    GAINS,
    JUDGED_ONLY,
    Context,
    Measure,
    Param,
    declare,
    gain_map,
    optional_k,
    reads_gained,
    unit_unless_negative_gains,
)
from polars_rankeval.metrics._common import (
    c_log2,
    check_cutoff,
    col,
    in_top,
    row_position,
    safe_div,
)
from polars_rankeval.metrics.gain import DISCOUNTS, discount, grade_gain, ideal_gains
from polars_rankeval.validation import check_choice

if TYPE_CHECKING:
    from polars_rankeval.engine.features import Built, Features


def dcg(
    k: int | None = None,
    *,
    rank: IntoExpr = "rank",
    gain: IntoExpr = "relevance",
    discount_kind: str = "plus_one",
) -> pl.Expr:
    r"""Discounted cumulative gain of the ranking, cut at k.

    .. math:: DCG@k = \sum_{i=1}^{k} \frac{g_i}{\log_2(i + 1)}

    where :math:`g_i` is the gain of the document at rank i; negative and missing
    gains count as 0.
    """
    g = col(gain).cast(pl.Float64).clip(lower_bound=0.0).fill_null(0.0)
    return (g / discount(col(rank), discount_kind)).filter(in_top(rank, k)).sum()


def ideal_dcg(
    k: int | None = None, *, gain: IntoExpr = "relevance", discount_kind: str = "plus_one"
) -> pl.Expr:
    r"""DCG of the ideal ranking: every positive gain of the query, sorted descending.

    The query's rows include judged documents that were not retrieved, so the
    ideal ranking is built from all qrels grades of the query, cut at k. The
    gains that are not positive sort last, as 0, so each position's discount
    is its row number in the group (no per-group count is needed).
    """
    ideal = ideal_gains(col(gain).cast(pl.Float64)) / discount(row_position(), discount_kind)
    return (ideal if k is None else ideal.head(k)).sum()


def ndcg(
    k: int | None = None,
    *,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
    gains: Mapping[int, float] | None = None,
    exponential: bool = False,
    ties: Literal["ordered", "average"] = "ordered",
    binary_level: int | None = None,
    rel_level: int | None = None,
    ideal: Literal["qrels", "k"] = "qrels",
    discount_kind: Literal["plus_one", "clipped"] = "plus_one",
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
    ideal ranking uses the same gains. ``binary_level=l`` gives gain 1 to the
    grades >= l and 0 to the others (``nDCG(gain=binary)@k`` at the relevance level:
    PySpark's ``RankingMetrics.ndcgAt``, which sees only the relevant documents).

    ``ties="average"`` (``nDCG(ties=average)@k``, scikit-learn's ``ndcg_score`` with
    ``ignore_ties=False``, torchmetrics' ``RetrievalNormalizedDCG``) gives each
    document of a group of equal scores the mean discount of the group's positions:

    .. math:: DCG@k = \sum_{T} \bar g_T \sum_{i \in T, i \le k} \frac{1}{\log_2(i + 1)}

    where T runs over the tie groups (the positions i they span) and
    :math:`\bar g_T` is the mean gain of T's documents. :func:`polars_rankeval.evaluate`
    finds the groups from the run's scores; a judged table's ranks hold no ties, so
    here each rank is a group of one and the value is the ordered one.

    ``discount_kind="clipped"`` (``nDCG(discount=clipped)@k``) discounts position i by
    :math:`\log_2 \max(i, 2)`, Järvelin and Kekäläinen's original discount (the first
    two positions undiscounted), in the ranking and in the ideal ranking: LensKit's
    ``NDCG`` (``lenskit/metrics/ranking/_dcg.py`` with ``_weighting.py``
    ``LogRankWeight``, whose default clips the rank at 2); with ``ties="average"`` a tie
    group's positions are averaged over these discounts.

    ``rel_level`` gives grades below it no gain, in the ranking and in the
    ideal ranking alike: ranx's ``ndcg@k-l2`` (``nDCG(rel=2)@k``; ranx
    ``ranx/metrics/ndcg.py`` ``_dcg`` keeps only the qrels of grade >=
    ``rel_lvl``). The global ``rel_level`` option leaves nDCG alone, as trec_eval.

    References
    ----------
    Järvelin and Kekäläinen, "Cumulated gain-based evaluation of IR techniques",
    ACM TOIS 20(4), 2002. Burges et al., "Learning to rank using gradient
    descent", ICML 2005 (exponential gain). McSherry and Najork, "Computing
    information retrieval performance measures efficiently in the presence of tied
    scores", ECIR 2008 (ties averaged; scikit-learn ``sklearn/metrics/_ranking.py``
    ``_tie_averaged_dcg``).

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
    check_choice("ties", ties, ("ordered", "average"))
    check_choice("ideal", ideal, IDEALS)
    check_choice("discount", discount_kind, DISCOUNTS)
    d = discount_kind
    if binary_level is not None:
        g = (col(relevance) >= binary_level).fill_null(False).cast(pl.Float64)
        top = (g / discount(col(rank), d)).filter(in_top(rank, k)).sum()
        if ideal == "k" and k is not None:
            return safe_div(top, pl.lit(ideal_of_k(k, d)))
        return safe_div(top, ideal_dcg(k, gain=g, discount_kind=d))
    lowest = gain_floor(rel_level)
    if gains is None and not exponential and rel_level is None:
        return safe_div(
            dcg(k, rank=rank, gain=relevance, discount_kind=d),
            ideal_dcg(k, gain=relevance, discount_kind=d),
        )
    g = grade_gain(relevance, gains, exponential=exponential, lowest=lowest)
    top = (g / discount(col(rank), d)).filter(in_top(rank, k)).sum()
    if ideal == "k" and k is not None:
        return safe_div(top, pl.lit(ideal_of_k(k, d)))
    return safe_div(top, ideal_dcg(k, gain=g, discount_kind=d))


IDEALS = ("qrels", "k")
"""nDCG's ideal: ``"qrels"``, the query's judgments sorted by gain (trec_eval), or
``"k"``, k documents of gain 1 whatever |R| (RecTools' ``NDCG`` default; its
``divide_by_achievable=True`` is the binary nDCG with the ideal of the qrels). Without a
cutoff there is no k, and ``"k"`` takes the ideal of the qrels."""


def ideal_of_k(k: int, discount_kind: str = "plus_one") -> float:
    r"""The ideal DCG of ``ideal="k"``: :math:`\sum_{i=1}^{k} 1 / \log_2(i + 1)` (with
    ``discount_kind="clipped"``: :math:`1 / \log_2 \max(i, 2)`).

    >>> ideal_of_k(2) == 1 + 1 / math.log2(3), ideal_of_k(2, "clipped") == 2.0
    (True, True)
    """
    if discount_kind == "clipped":
        return float(sum(1.0 / math.log2(max(i, 2)) for i in range(1, k + 1)))
    return float(sum(1.0 / math.log2(i + 1) for i in range(1, k + 1)))


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
    ties: Literal["ordered", "average"] = "ordered",
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
    every document judged). ``ties="average"`` (``DCG(ties=average)@k``,
    ``dcg_score(..., ignore_ties=False)``): the gains of equal scores averaged
    over their positions, as in :func:`ndcg`; a judged table's ranks hold no ties.

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
    check_choice("ties", ties, ("ordered", "average"))
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
    ties: Literal["ordered", "average"] = "ordered",
    binary_level: int | None = None,
    rel_level: int | None = None,
    ideal_k: bool = False,
    discount_kind: str = "plus_one",
) -> pl.Expr:
    """nDCG@k over the engine's features: DCG of the top k over the ideal DCG at k
    (``ties="average"``: the DCG of :func:`tie_averaged_dcg_formula`; ``binary_level``:
    gain 1 from that grade up; ``discount_kind``: see :func:`ndcg`)."""
    check_choice("discount", discount_kind, DISCOUNTS)
    d = discount_kind
    lowest = gain_floor(rel_level)
    if binary_level is not None:
        gain = f.row((f.grade >= binary_level).cast(pl.Float64))
    else:  # a row column, as G, nDCGRel and Rndcg read it: their DCG terms are this one's
        gain = f.row(grade_gain(f.grade, gains, exponential=exponential, lowest=lowest))
    if ties == "average":
        dcg_k = tie_averaged_dcg_formula(f, k, gain, d)
    else:
        dcg_k = f.sum_to_rank(gain / discount(f.rank, d), k)
    if ideal_k and k is not None:  # k documents of gain 1 (RecTools)
        return safe_div(dcg_k, f.constant(ideal_of_k(k, d)))
    ideal = f.ideal(gains, exponential=exponential, binary_level=binary_level, lowest=lowest)
    ideal_dcg = f.ideal_sum_to(ideal, f.ideal_gain / discount(f.ideal_position, d), k)
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
    ties: Literal["ordered", "average"] = "ordered",
) -> pl.Expr:
    """DCG@k over the engine's features (see :func:`discounted_cumulative_gain`;
    ``ties="average"``: :func:`tie_averaged_dcg_formula`)."""
    factor = check_log_base(log_base)
    lowest = gain_floor(rel_level, signed=signed)
    gain = grade_gain(f.grade, gains, exponential=exponential, lowest=lowest)
    if ties == "average":
        total = tie_averaged_dcg_formula(f, k, gain)
        return (total if factor == 1.0 else total * factor).cast(pl.Float64)
    terms = gain / discount(f.rank)
    return f.sum_to_rank(terms if factor == 1.0 else terms * factor, k).cast(pl.Float64)


def _log_discounts(positions: np.ndarray, discount_kind: str = "plus_one") -> np.ndarray:
    """The discounts of :data:`~polars_rankeval.metrics.gain.DISCOUNTS` at ``positions``."""
    if discount_kind == "clipped":
        return c_log2(np.maximum(positions, 2.0))
    return c_log2(positions + 1.0)


def cumulative_discounts(last: int, discount_kind: str = "plus_one") -> np.ndarray:
    """``D[n]``, the sum of the discounts ``1 / log2(i + 1)`` (``discount_kind="clipped"``:
    ``1 / log2(max(i, 2))``) of positions 1 .. n, for n = 0 .. ``last``.

    Examples
    --------
    >>> cumulative_discounts(3).round(4).tolist()
    [0.0, 1.0, 1.6309, 2.1309]
    >>> cumulative_discounts(3, "clipped").round(4).tolist()
    [0.0, 1.0, 2.0, 2.6309]
    """
    positions = np.arange(1, last + 1, dtype=np.float64)
    return np.concatenate([[0.0], np.cumsum(1.0 / _log_discounts(positions, discount_kind))])


def tie_averaged_dcg_formula(
    f: Features, k: int | None, gain: pl.Expr, discount_kind: str = "plus_one"
) -> pl.Expr:
    r"""DCG@k with the gains of each tie group averaged over its positions (engine form).

    A row of a tie group spanning ranks a .. b adds its gain times the mean
    discount of those positions, the positions beyond k discounted by 0:

    .. math:: g \, \frac{D[\min(b, k)] - D[a - 1]}{b - a + 1}

    (0 when a > k), :math:`D` from :func:`cumulative_discounts`: summed over a
    group, the group's mean gain times its discounts (scikit-learn's
    ``_tie_averaged_dcg``).
    """
    gain_name = f.row(gain).meta.output_name()
    first, last = (x.meta.output_name() for x in f.tie_span())

    def averaged(built: Built) -> pl.Series:
        rows = built.rows
        lo = rows[first].to_numpy().astype(np.int64)
        hi = rows[last].to_numpy().astype(np.int64)
        if not len(lo):
            return pl.Series([], dtype=pl.Float64)
        top = hi if k is None else np.minimum(hi, k)
        table = cumulative_discounts(int(hi.max()), discount_kind)
        gain = rows[gain_name].to_numpy()
        summed = np.where(lo <= top, table[top] - table[np.minimum(lo, top) - 1], 0.0)
        alone = gain / _log_discounts(lo.astype(np.float64), discount_kind)  # a group of one
        value = np.where(lo == hi, alone, gain * summed / (hi - lo + 1))
        return pl.Series(np.where(lo <= top, value, 0.0), dtype=pl.Float64)

    key = f"tie_dcg|{gain_name}|{first}|{last}|{k}|{discount_kind}"
    return f.sum(f.row_function(key, averaged))


# --------------------------------------------------------------------------- declarations

TIES = Param("ties", str, "ordered", ("ordered", "average"))
"""Equal scores: in the ranking's order, or averaged over the tie group (scikit-learn)."""
GAIN_REL = Param("rel", int)
"""The relevance level of a gain measure (nDCG, DCG): grades below it have no gain (ranx's
``-lN``). Unlike the other measures' ``rel``, the global ``rel_level`` leaves it unset, as
trec_eval reads raw grades as gains whatever the level."""


def _dcg_options(measure: Measure) -> dict[str, Any]:
    """The keyword arguments of DCG (metric and formula) from its parameters."""
    gain = measure.setting("gain")
    return {
        "gains": gain_map(measure),
        "exponential": gain == "exp",
        "signed": gain == "signed",
        "rel_level": measure.get("rel"),
        "log_base": measure.setting("log_base"),
        "ties": measure.setting("ties"),
    }


def _binary_level(measure: Measure, ctx: Context) -> int | None:
    """The grade from which ``gain=binary`` gives gain 1 (the measure's ``rel``, else the
    relevance level), or None."""
    return measure.get("rel", ctx.rel_level) if measure.get("gain") == "binary" else None


def _gained_from_rel(measure: Measure, ctx: Context) -> float:
    """``reads`` of nDCG and DCG: their relevance level when given (grades below it have
    no gain), every grade for signed gains, else as
    :func:`~polars_rankeval.catalogue.reads_gained`."""
    if measure.get("gain") == "signed":
        return -math.inf
    rel = measure.get("rel")
    return reads_gained(measure, ctx) if rel is None else float(rel)


declare(
    "nDCG",
    lambda x, c: ndcg(
        optional_k(x),
        rank=c.rank,
        relevance=c.relevance,
        gains=gain_map(x),
        exponential=x.get("gain") == "exp",
        ties=x.setting("ties"),
        binary_level=_binary_level(x, c),
        rel_level=x.get("rel"),
        ideal=x.setting("ideal"),
        discount_kind=x.setting("discount"),
    ),
    "optional",
    GAINS,
    Param("gain", str, "linear", ("linear", "exp", "binary")),
    GAIN_REL,
    TIES,
    Param("ideal", str, "qrels", IDEALS),
    Param("discount", str, "plus_one", DISCOUNTS),
    JUDGED_ONLY,
    summary=(
        "normalised DCG: linear gain and trec_eval ideal; gains=g:v;..., gain=exp|binary; "
        "discount=clipped: log2(max(i, 2)) (LensKit)"
    ),
    reads=lambda x, c: (
        float(_binary_level(x, c) or 0) if x.get("gain") == "binary" else _gained_from_rel(x, c)
    ),
    formula=lambda x, f: ndcg_formula(
        f,
        optional_k(x),
        gain_map(x),
        exponential=x.get("gain") == "exp",
        ties=x.setting("ties"),
        binary_level=_binary_level(x, f.ctx),
        rel_level=x.get("rel"),
        ideal_k=x.setting("ideal") == "k",
        discount_kind=x.setting("discount"),
    ),
    bounds=unit_unless_negative_gains,
    fractional=True,
    aliases=("ndcg", "ndcg_score"),
    presets={"ndcg_burges": "nDCG(gain=exp)"},
    trec_cutoff={"ndcg_cut": None},
    trec_dotted={"ndcg_cut": "cutoffs", "ndcg": "gains"},
    order=17,
)
declare(
    "DCG",
    lambda x, c: discounted_cumulative_gain(
        optional_k(x), rank=c.rank, relevance=c.relevance, **_dcg_options(x)
    ),
    "optional",
    GAINS,
    Param("gain", str, "linear", ("linear", "exp", "signed")),
    GAIN_REL,
    Param("log_base", float, 2.0),
    TIES,
    summary="unnormalised DCG (ranx dcg@k, dcg_burges@k; scikit-learn dcg_score, log_base)",
    reads=_gained_from_rel,
    formula=lambda x, f: dcg_formula(f, optional_k(x), **_dcg_options(x)),
    fractional=True,
    aliases=("dcg", "dcg_score"),
    presets={"dcg_burges": "DCG(gain=exp)"},
    order=49,
)
