"""Graded gains, and trec_eval's experimental gain measures: G, binG, Rndcg, ndcg_rel.

Gains follow trec_eval: a judged document's gain is its grade, unless a
``gains`` mapping gives another value for that grade; documents without a qrels
row and negative grades (pooled but unjudged) have gain 0. The ideal ranking
holds every judged document of the query with a positive gain, sorted by gain.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from polars_rankeval._typing import IntoExpr
from polars_rankeval.catalogue import (
    GAINS,
    REL,
    declare,
    declare_relevant,
    gain_map,
    reads_gained,
    unit_unless_negative_gains,
    with_n_rel,
)
from polars_rankeval.engine.features import grade_gain
from polars_rankeval.engine.shape import FACT, IDEAL_POS, RANK, RANKING
from polars_rankeval.metrics._common import (
    col,
    log2,
    num_relevant,
    relevant_retrieved,
    retrieved,
    row_position,
    safe_div,
)

if TYPE_CHECKING:
    from polars_rankeval.engine.features import Built, Features, Ideal

Gains = Mapping[int, float]


DISCOUNTS = ("plus_one", "clipped")
"""DCG's discounts: ``"plus_one"``, :math:`\\log_2(i + 1)` (trec_eval, Burges et al.), or
``"clipped"``, :math:`\\log_2 \\max(i, 2)` (Järvelin and Kekäläinen's, the first two
positions both discounted by :math:`\\log_2 2 = 1`; LensKit's ``LogRankWeight``)."""


def discount(position: pl.Expr, kind: str = "plus_one") -> pl.Expr:
    """log2(position + 1), the standard DCG discount (C's ``log2``, as trec_eval), or with
    ``kind="clipped"`` log2(max(position, 2)) (see :data:`DISCOUNTS`)."""
    if kind == "clipped":
        return log2(position.cast(pl.Float64).clip(lower_bound=2.0))
    return log2(position.cast(pl.Float64) + 1.0)


def results_gain(rank: IntoExpr, gain: pl.Expr) -> pl.Expr:
    """The gain of retrieved rows, 0 on judged rows that were not retrieved."""
    return pl.when(retrieved(rank)).then(gain).otherwise(0.0)


def ideal_gains(gain: pl.Expr) -> pl.Expr:
    """Positive gains sorted descending, padded with 0 to the query's row count.

    Row i (1-based) holds the gain of the i-th document of the ideal ranking.
    """
    return pl.when(gain > 0).then(gain).otherwise(0.0).sort(descending=True)


def cumulative_dcg(rank: IntoExpr, gain: pl.Expr) -> pl.Expr:
    """DCG of the top i documents, on row i (rows beyond the ranking repeat the total)."""
    return (results_gain(rank, gain) / discount(row_position())).cum_sum()


def cumulative_ideal_dcg(gain: pl.Expr) -> pl.Expr:
    """Ideal DCG of the top i positions, on row i."""
    return (ideal_gains(gain) / discount(row_position())).cum_sum()


def g_measure(
    *, rank: IntoExpr = "rank", relevance: IntoExpr = "relevance", gains: Gains | None = None
) -> pl.Expr:
    r"""Normalised gain G (trec_eval ``G``, experimental).

    .. math:: G = \frac{1}{\sum_d g^*_d} \sum_{i : g_i \ne 0}
              \frac{g_i}{\log_2(2 + C_i - S_i)}

    where :math:`g_i` is the gain at rank i, :math:`S_i = \sum_{j \le i} g_j`,
    :math:`C_i = \sum_{j \le i} \max(g^*_j, 1)` with :math:`g^*_j` the gain at
    position j of the ideal ranking, and the normaliser sums all positive ideal
    gains.

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2], "relevance": [1, 1]})
    >>> judged.select(g_measure()).item()  # ideal ranking
    1.0
    """
    g = grade_gain(relevance, gains)
    rg = results_gain(rank, g)
    cost = pl.max_horizontal(ideal_gains(g), pl.lit(1.0)).cum_sum()
    term = rg / log2(2.0 + cost - rg.cum_sum())
    total = term.filter(retrieved(rank) & (rg != 0)).sum()
    return safe_div(total, ideal_gains(g).sum())


def bin_g(
    *,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
    rel_level: int = 1,
    n_rel: IntoExpr | None = None,
) -> pl.Expr:
    r"""Binary G (trec_eval ``binG``, experimental).

    .. math:: binG = \frac{1}{|R|} \sum_{r \in R_{ret}} \frac{1}{\log_2(2 + n_r)}

    where :math:`n_r` is the number of non-relevant (or unjudged) documents
    retrieved above the relevant document r.

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, 3], "relevance": [0, 1, 1]})
    >>> import math
    >>> abs(judged.select(bin_g()).item() - 2 / math.log2(3) / 2) < 1e-12
    True
    """
    hit = relevant_retrieved(rank, relevance, rel_level)
    above = col(rank).cast(pl.Float64) - hit.cum_sum().cast(pl.Float64)
    total = (1.0 / log2(2.0 + above)).filter(hit).sum()
    return safe_div(total, num_relevant(relevance, rel_level, n_rel))


def ndcg_rel(
    *, rank: IntoExpr = "rank", relevance: IntoExpr = "relevance", gains: Gains | None = None
) -> pl.Expr:
    r"""nDCG averaged over the relevant documents (trec_eval ``ndcg_rel``, experimental).

    .. math:: nDCG_{rel} = \frac{1}{|R_g|} \left( \sum_{i : g_i > 0}
              \frac{DCG@i}{IDCG@i} + (|R_g| - |R_g \cap ret|)
              \frac{DCG}{IDCG} \right)

    where :math:`R_g` are the judged documents with a positive gain, DCG@i and
    IDCG@i the DCG of the ranking and of the ideal ranking at i, and DCG, IDCG
    their totals; 0 when the sum is not positive.

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2], "relevance": [1, 1]})
    >>> judged.select(ndcg_rel()).item()
    1.0
    """
    g = grade_gain(relevance, gains)
    rg = results_gain(rank, g)
    ratio = cumulative_dcg(rank, g) / cumulative_ideal_dcg(g)
    n_pos = (g > 0).sum().cast(pl.Float64)
    pos_ret = (rg > 0).sum().cast(pl.Float64)
    final = cumulative_dcg(rank, g).last() / cumulative_ideal_dcg(g).last()
    total = (ratio.filter(rg > 0).sum() + (n_pos - pos_ret) * final).fill_nan(0.0)
    return pl.when(total > 0).then(total / n_pos).otherwise(0.0).cast(pl.Float64)


def rndcg(
    *,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
    rel_level: int = 1,
    n_rel: IntoExpr | None = None,
    gains: Gains | None = None,
) -> pl.Expr:
    r"""nDCG averaged at the R levels of the gain grades (trec_eval ``Rndcg``, experimental).

    .. math:: Rndcg = \frac{1}{|T| + e} \left( \sum_{t \in T} \frac{DCG@t}{IDCG@t}
              + e \cdot \frac{DCG}{IDCG} \right)

    where T are the positions t at which the gain of the ideal ranking changes
    between t and t + 1 (its last positive position included), and e = 1 when
    the ranking is at least two documents longer than the positive part of the
    ideal ranking (trec_eval's final point), else 0. 0 when the query has no
    relevant document.

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, 3, 4], "relevance": [2, 1, 0, 0]})
    >>> judged.select(rndcg()).item()  # ideal: ndcg is 1 at every point
    1.0
    """
    g = grade_gain(relevance, gains)
    ideal = ideal_gains(g)
    change = (ideal > 0) & (ideal != ideal.shift(-1).fill_null(0.0))
    ratio = cumulative_dcg(rank, g) / cumulative_ideal_dcg(g)
    n_pos = (ideal > 0).sum()
    n_ret = retrieved(rank).sum()
    final = ((n_ret >= n_pos + 2) & (n_pos > 0)).cast(pl.Float64)
    last = cumulative_dcg(rank, g).last() / cumulative_ideal_dcg(g).last()
    total = ratio.filter(change).sum() + final * last.fill_nan(0.0)
    count = change.sum().cast(pl.Float64) + final
    has_rel = num_relevant(relevance, rel_level, n_rel) > 0
    return pl.when(has_rel & (count > 0)).then(total / count).otherwise(0.0).cast(pl.Float64)


# ---------------------------------------------------------------------- formulas
# The same measures over the engine's features (see polars_rankeval.engine.features).


def _ranking_dcg(f: Features, gain: pl.Expr) -> pl.Expr:
    """Row-level: the DCG of the ranking down to this row's rank."""
    return f.cum(gain / discount(f.rank))


def g_measure_formula(f: Features, gains: Gains | None = None) -> pl.Expr:
    """G over the engine's features (see :func:`g_measure`).

    The cost at rank r is the sum of max(ideal gain, 1) over ideal positions
    1..r, where positions past the query's positive gains count 1 each.
    """
    gain = f.row(grade_gain(f.grade, gains))
    ideal = f.ideal(gains)
    length = f.on_rows(f.ideal_length(ideal))
    cost = f.ideal_prefix(ideal, pl.max_horizontal(f.ideal_gain, pl.lit(1.0)), f.rank)
    cost = cost + (f.rank - length).clip(lower_bound=0.0)
    term = gain / log2(2.0 + cost - f.cum(gain))
    total = f.sum(pl.when(gain != 0).then(term).otherwise(0.0))
    return safe_div(total, f.ideal_sum(ideal, f.ideal_gain))


def bin_g_formula(f: Features, rel_level: int) -> pl.Expr:
    """binG over the engine's features (see :func:`bin_g`)."""
    above = f.rank - f.hits_so_far(rel_level)
    total = f.sum(pl.when(f.hit(rel_level)).then(1.0 / log2(2.0 + above)).otherwise(0.0))
    return safe_div(total, f.nrel(rel_level))


def _ratios(f: Features, gains: Gains | None) -> tuple[pl.Expr, pl.Expr, Ideal, pl.Expr]:
    """(row gain, row DCG so far, the ideal ranking, final DCG / ideal DCG)."""
    gain = f.row(grade_gain(f.grade, gains))
    ideal = f.ideal(gains)
    dcg_total = f.sum(gain / discount(f.rank))
    final = dcg_total / f.ideal_sum(ideal, f.ideal_gain / discount(f.ideal_position))
    return gain, _ranking_dcg(f, gain), ideal, final


def ndcg_rel_formula(f: Features, gains: Gains | None = None) -> pl.Expr:
    """nDCGRel over the engine's features (see :func:`ndcg_rel`)."""
    gain, dcg_here, ideal, final = _ratios(f, gains)
    ideal_here = f.ideal_prefix(ideal, f.ideal_gain / discount(f.ideal_position), f.rank)
    ratio = f.sum(pl.when(gain > 0).then(dcg_here / ideal_here).otherwise(0.0))
    n_pos = f.ideal_length(ideal)
    pos_ret = f.sum((gain > 0).cast(pl.Float64))
    total = (ratio + (n_pos - pos_ret) * final).fill_nan(0.0)
    return pl.when(total > 0).then(total / n_pos).otherwise(0.0).cast(pl.Float64)


def rndcg_formula(f: Features, rel_level: int, gains: Gains | None = None) -> pl.Expr:
    """Rndcg over the engine's features (see :func:`rndcg`).

    The ranking's DCG at each position t where the ideal gain changes is
    looked up in its rows (the last row at rank <= t) by one binary search.
    """
    _, dcg_here, ideal, final_ratio = _ratios(f, gains)
    following = f.ideal_gain.shift(-1).over(FACT).fill_null(0.0)
    change = f.ideal_column(ideal, f.ideal_gain != following)
    ideal_dcg = f.ideal_running_sum(ideal, f.ideal_gain / discount(f.ideal_position))
    lookup = partial(
        _dcg_at_changes, ideal=ideal, change=change, ideal_dcg=ideal_dcg, dcg_here=dcg_here
    )
    at_changes = f.late(f"rndcg|{ideal.key}|{dcg_here}", lookup)
    n_pos = f.ideal_length(ideal)
    final = ((f.nret >= n_pos + 2) & (n_pos > 0)).cast(pl.Float64)
    total = at_changes + final * final_ratio.fill_nan(0.0)
    count = f.ideal_sum(ideal, change.cast(pl.Float64)) + final
    has_rel = f.nrel(rel_level) > 0
    return pl.when(has_rel & (count > 0)).then(total / count).otherwise(0.0).cast(pl.Float64)


def _dcg_at_changes(
    built: Built, *, ideal: Ideal, change: pl.Expr, ideal_dcg: pl.Expr, dcg_here: pl.Expr
) -> pl.Series:
    """Per ranking: the sum over its query's change positions t of DCG@t / IDCG@t.

    DCG@t is the ranking's DCG at its last judged row of rank <= t (0 if none),
    found by a binary search of (ranking, t) among the rows' (ranking, rank).
    """
    points = built.ideals[ideal.key].filter(change)
    points = points.select(FACT, idcg=ideal_dcg, t=pl.col(IDEAL_POS))
    pairs = built.per_ranking.select(RANKING, FACT).join(points, on=FACT)
    rows = built.rows
    row_key = _ranking_rank_key(rows[RANKING], rows[RANK])
    at = np.searchsorted(row_key, _ranking_rank_key(pairs[RANKING], pairs["t"]), side="right") - 1
    ranking = pairs[RANKING].to_numpy().astype(np.int64)
    found = (
        (at >= 0) & (rows[RANKING].to_numpy()[np.maximum(at, 0)] == ranking)
        if rows.height
        else at >= 0
    )
    cumulative = rows[dcg_here.meta.output_name()].to_numpy()
    dcg_t = (
        np.where(found, cumulative[np.maximum(at, 0)], 0.0) if rows.height else np.zeros(len(at))
    )
    ratio = dcg_t / pairs["idcg"].to_numpy()
    sums = np.bincount(ranking, weights=ratio, minlength=built.per_ranking.height)
    return pl.Series(sums, dtype=pl.Float64)


def _ranking_rank_key(ranking: pl.Series, rank: pl.Series) -> np.ndarray:
    """uint64 (ranking, rank) keys, in the order of rows sorted by ranking then rank."""
    return (ranking.cast(pl.UInt64) * (1 << 32) + rank.cast(pl.UInt64)).to_numpy()


# --------------------------------------------------------------------------- declarations

declare_relevant(
    "binG",
    bin_g,
    bin_g_formula,
    summary="binary G (trec_eval experimental)",
    aliases=("bing",),
    order=15,
)
declare(
    "G",
    lambda x, c: g_measure(rank=c.rank, relevance=c.relevance, gains=gain_map(x)),
    "none",
    GAINS,
    summary="normalised gain G (trec_eval experimental)",
    reads=reads_gained,
    formula=lambda x, f: g_measure_formula(f, gain_map(x)),
    aliases=("g",),
    trec_dotted={"G": "gains"},
    order=16,
)
declare(
    "nDCGRel",
    lambda x, c: ndcg_rel(rank=c.rank, relevance=c.relevance, gains=gain_map(x)),
    "none",
    GAINS,
    summary="nDCG averaged over the relevant documents (trec_eval ndcg_rel)",
    reads=reads_gained,
    formula=lambda x, f: ndcg_rel_formula(f, gain_map(x)),
    bounds=unit_unless_negative_gains,
    aliases=("ndcg_rel", "ndcgrel"),
    trec_dotted={"ndcg_rel": "gains"},
    order=18,
)
declare(
    "Rndcg",
    lambda x, c: rndcg(gains=gain_map(x), **with_n_rel(x, c)),
    "none",
    REL,
    GAINS,
    summary="nDCG averaged at the R levels of the grades (trec_eval Rndcg)",
    reads=reads_gained,
    formula=lambda x, f: rndcg_formula(f, x.rel_level(f.ctx), gain_map(x)),
    bounds=unit_unless_negative_gains,
    aliases=("rndcg",),
    trec_dotted={"Rndcg": "gains"},
    order=19,
)
