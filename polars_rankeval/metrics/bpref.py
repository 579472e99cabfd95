"""Measures for incomplete judgments: bpref, inferred AP, judged non-relevant documents
retrieved."""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from polars_rankeval._typing import IntoExpr
from polars_rankeval.catalogue import (
    REL,
    UNIT,
    columns,
    declare,
    declare_relevant,
    reads_relevant,
)
from polars_rankeval.metrics._common import (
    col,
    judged_nonrelevant,
    num_relevant,
    relevant_retrieved,
    retrieved,
    safe_div,
)

INFAP_EPSILON = 0.00001
"""trec_eval's smoothing constant in inferred AP."""


if TYPE_CHECKING:
    from polars_rankeval.engine.features import Features


def bpref(
    *,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
    rel_level: int = 1,
    n_rel: IntoExpr | None = None,
) -> pl.Expr:
    r"""Binary preference (trec_eval ``bpref``).

    .. math:: bpref = \frac{1}{|R|} \sum_{r \in R_{ret}}
              \left(1 - \frac{\min(n_r, |R|)}{\min(|N|, |R|)}\right)

    where :math:`R_{ret}` are the retrieved relevant documents, :math:`n_r` the
    number of judged non-relevant documents retrieved above r (a term is 1 when
    :math:`n_r = 0`), :math:`|N|` the number of judged non-relevant documents of
    the query (grade 0 .. rel_level - 1) and :math:`|R|` the number of relevant
    ones. Unjudged documents (no qrels row, or a negative grade) are skipped.

    References
    ----------
    Buckley and Voorhees, "Retrieval evaluation with incomplete information",
    SIGIR 2004.

    Examples
    --------
    >>> import polars as pl
    >>> # ranks: rel, nonrel, unjudged, rel; one more nonrel not retrieved
    >>> judged = pl.DataFrame({"rank": [1, 2, 3, 4, None],
    ...                        "relevance": [1, 0, None, 1, 0]})
    >>> judged.select(bpref()).item() == (1 + (1 - 1 / 2)) / 2
    True
    """
    n = num_relevant(relevance, rel_level, n_rel)
    nonrel = judged_nonrelevant(relevance, rel_level)
    n_nonrel = nonrel.sum().cast(pl.Float64)
    above = (nonrel & retrieved(rank)).cum_sum().cast(pl.Float64)
    term = (
        pl.when(above > 0)
        .then(1.0 - pl.min_horizontal(above, n) / pl.min_horizontal(n_nonrel, n))
        .otherwise(1.0)
    )
    return safe_div(term.filter(relevant_retrieved(rank, relevance, rel_level)).sum(), n)


def inferred_ap(
    *,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
    rel_level: int = 1,
    n_rel: IntoExpr | None = None,
) -> pl.Expr:
    r"""Inferred average precision (trec_eval ``infAP``).

    .. math:: infAP = \frac{1}{|R|} \sum_{r \in R_{ret}} \left(\frac{1}{k} +
              \frac{k-1}{k} \cdot \frac{|d_{k-1}|}{k-1} \cdot
              \frac{|rel_{k-1}| + \epsilon}{|rel_{k-1}| + |nonrel_{k-1}| + 2\epsilon}\right)

    where k is the rank of the relevant document r (the term is 1 at k = 1),
    :math:`|d_{k-1}|` the pooled documents above it (judged or in the pool with a
    negative grade), :math:`|rel_{k-1}|` and :math:`|nonrel_{k-1}|` the judged
    relevant and non-relevant documents above it, and :math:`\epsilon = 10^{-5}`.
    Documents outside the pool (no qrels row) count as non-relevant.

    References
    ----------
    Yilmaz and Aslam, "Estimating average precision with incomplete and
    imperfect judgments", CIKM 2006.

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2], "relevance": [1, 1]})
    >>> judged.select(inferred_ap()).item()  # complete judgments: AP
    1.0
    """
    n = num_relevant(relevance, rel_level, n_rel)
    ret = retrieved(rank)
    hit = relevant_retrieved(rank, relevance, rel_level)
    nonrel = judged_nonrelevant(relevance, rel_level) & ret
    pooled_unjudged = (col(relevance) < 0).fill_null(False) & ret
    rel_above = hit.cum_sum().cast(pl.Float64) - 1.0
    nonrel_above = nonrel.cum_sum().cast(pl.Float64)
    unjudged_above = pooled_unjudged.cum_sum().cast(pl.Float64)
    j = col(rank).cast(pl.Float64) - 1.0
    term = (
        pl.when(j == 0)
        .then(1.0)
        .otherwise(
            1.0 / (j + 1.0)
            + (j / (j + 1.0))
            * ((rel_above + nonrel_above + unjudged_above) / j)
            * ((rel_above + INFAP_EPSILON) / (rel_above + nonrel_above + 2 * INFAP_EPSILON))
        )
    )
    return safe_div(term.filter(hit).sum(), n)


def num_nonrel_judged_ret(
    *, rank: IntoExpr = "rank", relevance: IntoExpr = "relevance", rel_level: int = 1
) -> pl.Expr:
    """Judged non-relevant documents retrieved (trec_eval ``num_nonrel_judged_ret``).

    Grades 0 .. rel_level - 1; negative grades (pooled but unjudged) and
    documents without a qrels row are not counted.

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, 3, None], "relevance": [0, -1, None, 0]})
    >>> judged.select(num_nonrel_judged_ret()).item()
    1.0
    """
    return (judged_nonrelevant(relevance, rel_level) & retrieved(rank)).sum().cast(pl.Float64)


# ---------------------------------------------------------------------- formulas
# The same measures over the engine's features (see polars_rankeval.engine.features).


def bpref_formula(f: Features, rel_level: int) -> pl.Expr:
    """Bpref over the engine's features (see :func:`bpref`)."""
    n = f.nrel(rel_level)
    above = f.row(f.nonrelevant_above(rel_level))
    n_rows, nonrel_rows = f.on_rows(n), f.on_rows(f.nnonrel(rel_level))
    penalty = pl.min_horizontal(above, n_rows) / pl.min_horizontal(nonrel_rows, n_rows)
    term = pl.when(above > 0).then(1.0 - penalty).otherwise(1.0)
    return safe_div(f.sum(pl.when(f.hit(rel_level)).then(term).otherwise(0.0)), n)


def inferred_ap_formula(f: Features, rel_level: int) -> pl.Expr:
    """infAP over the engine's features (see :func:`inferred_ap`)."""
    rel_above = f.hits_so_far(rel_level) - 1.0
    nonrel_above = f.row(f.nonrelevant_above(rel_level))
    unjudged_above = f.unjudged_above()
    j = f.rank - 1.0
    term = (
        pl.when(j == 0)
        .then(1.0)
        .otherwise(
            1.0 / (j + 1.0)
            + (j / (j + 1.0))
            * ((rel_above + nonrel_above + unjudged_above) / j)
            * ((rel_above + INFAP_EPSILON) / (rel_above + nonrel_above + 2 * INFAP_EPSILON))
        )
    )
    total = f.sum(pl.when(f.hit(rel_level)).then(term).otherwise(0.0))
    return safe_div(total, f.nrel(rel_level))


def num_nonrel_judged_ret_formula(f: Features, rel_level: int) -> pl.Expr:
    """NumNonRelJudgedRet: judged non-relevant documents retrieved."""
    return f.nonrelevant_retrieved(rel_level)


# --------------------------------------------------------------------------- declarations

declare_relevant(
    "Bpref",
    bpref,
    bpref_formula,
    summary="binary preference",
    bounds=UNIT,
    aliases=("bpref",),
    order=6,
)
declare_relevant(
    "GMBpref",
    bpref,
    bpref_formula,
    summary="bpref per query, geometric mean over queries (floor 1e-5)",
    aggregate="gmean",
    bounds=UNIT,
    aliases=("gm_bpref",),
    order=7,
)
declare_relevant(
    "infAP",
    inferred_ap,
    inferred_ap_formula,
    summary="inferred AP for sampled judgments",
    aliases=("infap",),
    order=13,
)
declare(
    "NumNonRelJudgedRet",
    lambda x, c: num_nonrel_judged_ret(**columns(x, c)),
    "none",
    REL,
    summary="judged non-relevant documents retrieved",
    aggregate="sum",
    reads=reads_relevant,
    formula=lambda x, f: num_nonrel_judged_ret_formula(f, x.rel_level(f.ctx)),
    aliases=("num_nonrel_judged_ret",),
    better="lower",
    order=27,
)
