"""Compatibility (``Compat``): rank-biased overlap with an ideal ranking (Clarke et al.)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from polars_rankeval._typing import IntoExpr
from polars_rankeval.catalogue import (
    TIE_ORDER,
    Param,
    declare,
)
from polars_rankeval.engine.shape import (
    FACT,
    GRADE,
    IDEAL_GAIN,
    JUDGMENT_ROW,
    RANK,
    RANKING,
    SCORE_SIGN,
    TIE_FIRST,
)
from polars_rankeval.metrics._common import check_probability, col

if TYPE_CHECKING:
    from polars_rankeval.engine.features import Built, Features, RowFunction

COMPAT_P = 0.95
"""ir_measures' default persistence of ``Compat``."""


def compat(
    p: float = COMPAT_P,
    *,
    normalize: bool = True,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
) -> pl.Expr:
    r"""Compatibility with an ideal ranking (ir_measures ``Compat(p=..,normalize=..)``).

    .. math:: RBO(a, b) = \frac{\sum_{i=1}^{D} p^{i-1} |a_{:i} \cap b_{:i}| / i}
                               {\sum_{i=1}^{D} p^{i-1}}, \qquad
              Compat = \frac{RBO(run, ideal)}{RBO(ideal, ideal)}

    the rank-biased overlap of the ranking with an ideal ranking, truncated at
    depth :math:`D = \max(|run|, |ideal|)`. The ideal ranking holds the
    query's documents of positive grade, by grade descending; within a grade,
    those the run retrieved come first, in the run's order (the ideal closest
    to the run). ``normalize=False`` gives the RBO itself, which is below 1
    even for a perfect run when the ideal is short; with ``normalize`` (the
    default) it is divided by the RBO of the ideal with itself (when that is
    0, no relevant document, the value is 0). Every positive grade is
    relevant: ``rel`` does not apply, as in ir_measures.

    References
    ----------
    Clarke, Vtyurina and Smucker, "Assessing top-k preferences", ACM TOIS
    39(3), 2021. ir_measures' ``compat`` provider
    (``ir_measures/providers/compat_provider.py``: ``rbo``, ``compatibility``).

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, None], "relevance": [0, 1, 2]})
    >>> ideal = 1 + 0.5 * 2 / 2  # ideal = [grade 2, grade 1]: overlaps 1, 2 at depths 1, 2
    >>> judged.select(compat(0.5)).item() == (0.5 * 1 / 2) / ideal
    True
    >>> judged.select(compat(0.5, normalize=False)).item() == (0.5 * 1 / 2) / (1 + 0.5)
    True
    """
    check_probability(p, "persistence p", "Compat")
    g = col(relevance)
    r = col(rank)
    rel = (g >= 1).fill_null(False)
    ideal_len = rel.sum()
    depth = pl.max_horizontal(r.count(), ideal_len)
    # position in the ideal ranking: grade descending, then the retrieved in rank order
    key = (-g).cast(pl.Int64) * (1 << 32) + r.cast(pl.Int64).fill_null((1 << 32) - 1)
    position = key.filter(rel).rank("ordinal")
    rel_rank = r.filter(rel)
    # depth from which a relevant retrieved document is in both prefixes
    both_from = pl.when(rel_rank.is_not_null()).then(pl.max_horizontal(position, rel_rank))
    i = pl.int_range(1, depth + 1, dtype=pl.Int64)
    weight = pl.lit(p, pl.Float64).pow(i - 1)
    overlap = both_from.drop_nulls().sort().search_sorted(i, side="right").cast(pl.Float64)
    score = (weight * overlap / i).sum()
    if normalize:
        best = (weight * pl.min_horizontal(i, ideal_len) / i).sum()
    else:
        best = weight.sum()
    return pl.when(best > 0).then(score / best).otherwise(0.0).cast(pl.Float64)


# ---------------------------------------------------------------------- formulas
# The same measure over the engine's features (see polars_rankeval.engine.features).


def _partial_sums(p: float, top: int) -> tuple[np.ndarray, np.ndarray]:
    """``H[n] = sum_{i<=n} p^(i-1)/i`` and ``W[n] = sum_{i<=n} p^(i-1)`` for n = 0..top."""
    i = np.arange(1, top + 1, dtype=np.float64)
    weight = np.power(p, i - 1.0)
    h = np.concatenate([[0.0], np.cumsum(weight / i)])
    w = np.concatenate([[0.0], np.cumsum(weight)])
    return h, w


def _lookup(table: str, p: float, column: str, *, rows: bool = False) -> RowFunction:
    """A function of the built features: H (``table="h"``) or W at each value of
    ``column``, a column of the rows (``rows``) or of the rankings."""

    def at(built: Built) -> pl.Series:
        frame = built.rows if rows else built.per_ranking
        n = np.nan_to_num(frame[column].to_numpy().astype(np.float64), nan=0.0).astype(np.int64)
        h, w = _partial_sums(p, int(n.max()) if len(n) else 0)
        return pl.Series((h if table == "h" else w)[np.maximum(n, 0)], dtype=pl.Float64)

    return at


def _places_by_score(fact: str, higher: str) -> RowFunction:
    """A row function: each row's position in its query's ideal ranking as ir_measures'
    compat provider orders it (the rows' ``higher`` column: the query's documents of a
    higher positive grade; ``fact``: the row's query id).

    Within a grade the provider sorts the documents by the run's score, descending, an
    unretrieved one scoring 0, then keeps the qrels' row order. Before a row of grade
    g come the query's documents of a higher grade; the retrieved ones of grade g that
    score higher (an earlier tie group) or as high and come earlier in the qrels; and
    the unretrieved ones of grade g when the row scores below 0 (all of them) or 0
    (those earlier in the qrels). The rows carry their qrels row and the sign of their
    score (:meth:`~polars_rankeval.engine.features.Features.judgment_order`); a shape
    without them (a pre-judged table) is read by rank, its scores as positive.
    """

    def places(built: Built) -> pl.Series:
        rows = built.rows
        by_score = JUDGMENT_ROW in rows.columns
        tie = TIE_FIRST if TIE_FIRST in rows.columns else RANK
        table = rows.select(
            RANKING,
            GRADE,
            pl.col(fact).cast(pl.UInt32).alias(FACT),
            pl.col(JUDGMENT_ROW if by_score else RANK).cast(pl.Int64).alias(JUDGMENT_ROW),
            (pl.col(SCORE_SIGN) if by_score else pl.lit(1, pl.Int8)).alias(SCORE_SIGN),
            (pl.col(tie).cast(pl.Int64) * (1 << 32) + pl.col(JUDGMENT_ROW if by_score else RANK))
            .rank("ordinal")
            .over(RANKING, GRADE)
            .alias("ahead"),
            pl.col(higher),
        )
        unretrieved = pl.lit(0, pl.Int64)
        judgments = built.judgments
        if (
            by_score
            and judgments is not None
            and JUDGMENT_ROW in judgments.columns  # else every judgment is retrieved
            and bool((table[SCORE_SIGN] <= 0).any())
        ):
            unretrieved = _unretrieved_ahead(table, judgments)
        place = pl.col(higher) + pl.col("ahead") + unretrieved
        return table.select(place.cast(pl.Float64)).to_series()

    return places


def _unretrieved_ahead(table: pl.DataFrame, judgments: pl.DataFrame) -> pl.Expr:
    """Per row of ``table`` (``RANKING, GRADE, FACT, JUDGMENT_ROW, SCORE_SIGN``): the
    judgments of its query and grade that the ranking did not retrieve and that the
    provider's ideal puts before it (all of them under a negative score; those of an
    earlier qrels row under a score of 0; none under a positive one), as a column."""
    of_grade = judgments.select(FACT, GRADE, pl.col(JUDGMENT_ROW).cast(pl.Int64)).sort(JUDGMENT_ROW)
    counted = of_grade.with_columns(
        pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over(FACT, GRADE).alias("upto")
    )
    rows = table.with_row_index("__row").with_columns(
        (pl.col(JUDGMENT_ROW) - 1).alias("__before"),
        pl.col(JUDGMENT_ROW).rank("ordinal").over(RANKING, GRADE).cast(pl.Int64).alias("ret_upto"),
        pl.len().over(RANKING, GRADE).cast(pl.Int64).alias("ret_all"),
    )
    totals = of_grade.group_by(FACT, GRADE).agg(pl.len().cast(pl.Int64).alias("all"))
    found = (
        rows.sort("__before")
        .join_asof(
            counted.select(FACT, GRADE, pl.col(JUDGMENT_ROW).alias("__before"), "upto"),
            on="__before",
            by=[FACT, GRADE],
            strategy="backward",
            check_sortedness=False,  # sorted above
        )
        .join(totals, on=[FACT, GRADE], how="left")
        .sort("__row")
    )
    zero = found["upto"].fill_null(0) - (found["ret_upto"] - 1)
    negative = found["all"].fill_null(0) - found["ret_all"]
    sign = found[SCORE_SIGN]
    ahead = pl.select(
        pl.when(sign < 0).then(negative).when(sign == 0).then(zero).otherwise(0)
    ).to_series()
    return pl.lit(ahead)


def compat_formula(f: Features, p: float, normalize: bool, ties: str = "ranked") -> pl.Expr:
    """Compat over the engine's features (see :func:`compat`).

    A relevant retrieved document at rank r and ideal position q is in both
    prefixes from depth m = max(r, q) on, so the overlap sum is
    :math:`\\sum_d (H(D) - H(m_d - 1))` with :math:`H(n) = \\sum_{i \\le n}
    p^{i-1}/i`; the ideal's own sum is :math:`W(L) + L (H(D) - H(L))` with
    :math:`W(n) = \\sum_{i \\le n} p^{i-1}` and L its length. With
    ``ties="doc_asc"`` (ir_measures' compat provider), r reads each tie group doc
    id ascending and q is the place the provider gives (:func:`_places_by_score`).
    """
    check_probability(p, "persistence p", "Compat")
    ideal = f.ideal()
    length = f.ideal_length(ideal)
    depth = f.ranking(pl.max_horizontal(f.nret, length)).meta.output_name()
    fact = f.on_rows(pl.col(FACT)).meta.output_name()
    relevant = f.grade >= 1

    def higher_grades(built: Built) -> pl.Series:
        """Per row: the query's documents of a higher positive grade."""
        counts = (
            built.ideals[ideal.key]
            .group_by(FACT, IDEAL_GAIN)
            .agg(n=pl.len())
            .sort([FACT, IDEAL_GAIN], descending=[False, True])
            .select(FACT, IDEAL_GAIN, higher=(pl.col("n").cum_sum() - pl.col("n")).over(FACT))
        )
        keys = built.rows.select(pl.col(fact).cast(pl.UInt32).alias(FACT),
                                 pl.col(GRADE).cast(pl.Float64).alias(IDEAL_GAIN))  # fmt: skip
        found = keys.join(counts, on=[FACT, IDEAL_GAIN], how="left", maintain_order="left")
        return found["higher"].fill_null(0).cast(pl.Float64)

    higher = f.row_function(f"compat_higher|{ideal.key}", higher_grades)
    if ties == "doc_asc":
        f.judgment_order()
        rank = f.rank_doc_asc()
        place = f.row_function(
            f"compat_place|{ideal.key}", _places_by_score(fact, higher.meta.output_name())
        )
    else:
        rank = f.rank
        place = higher + f.row(pl.col(RANK).rank("ordinal").over([RANKING, GRADE]).cast(pl.Float64))
    both_from = f.row(pl.max_horizontal(place, rank) - 1.0).meta.output_name()
    before = f.row_function(f"compat_h|{p}|{both_from}", _lookup("h", p, both_from, rows=True))
    h_depth = f.late(f"compat_h|{p}|{depth}", _lookup("h", p, depth))
    overlap = f.hits(1) * h_depth - f.sum(pl.when(relevant).then(before).otherwise(0.0))
    if normalize:
        ideal_len = f.ranking(length).meta.output_name()
        h_len = f.late(f"compat_h|{p}|{ideal_len}", _lookup("h", p, ideal_len))
        w_len = f.late(f"compat_w|{p}|{ideal_len}", _lookup("w", p, ideal_len))
        best = w_len + pl.col(ideal_len) * (h_depth - h_len)
    else:
        best = f.late(f"compat_w|{p}|{depth}", _lookup("w", p, depth))
    return pl.when(best > 0).then(overlap / best).otherwise(0.0).cast(pl.Float64)


# --------------------------------------------------------------------------- declarations

declare(
    "Compat",
    lambda x, c: compat(
        x.setting("p"), normalize=x.setting("normalize"), rank=c.rank, relevance=c.relevance
    ),
    "none",
    Param("p", float, COMPAT_P),
    Param("normalize", bool, True),
    TIE_ORDER,
    summary="compatibility: rank-biased overlap with the ideal ranking (Clarke et al. 2021)",
    reads=lambda x, c: 1.0,
    formula=lambda x, f: compat_formula(
        f, x.setting("p"), x.setting("normalize"), x.setting("ties")
    ),
    aliases=("compat",),
    order=39,
)
