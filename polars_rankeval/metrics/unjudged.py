"""Judged and unjudged documents in the top k: ``Judged@k`` (ir_measures) and trec_eval
10.0's ``unj_k`` (``Unjudged@k``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import polars as pl

from polars_rankeval._typing import IntoExpr
from polars_rankeval.catalogue import (
    TIE_ORDER,
    UNIT,
    Param,
    declare,
    optional_k,
    required_k,
)
from polars_rankeval.metrics._common import check_cutoff, col, in_top, judged, safe_div
from polars_rankeval.validation import check_choice

if TYPE_CHECKING:
    from polars_rankeval.engine.features import Features


def judged_at(
    k: int | None = None,
    *,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
    negative: Literal["unjudged", "judged"] = "unjudged",
) -> pl.Expr:
    r"""Fraction of the top k retrieved documents that are judged (``Judged@k``).

    .. math:: Judged@k = \frac{|\{d : rank(d) \le k, d \text{ judged}\}|}{\min(k, |ret|)}

    where a document is judged when it has a qrels row with a grade >= 0
    (negative grades mean "pooled but unjudged", as in trec_eval; with
    ``negative="judged"`` any qrels row counts, as ir_measures' judged provider
    counts it) and :math:`|ret|` is the number of retrieved documents; 0 when
    nothing was retrieved. Not a trec_eval measure: it tells how far a score on an
    incompletely judged collection can be trusted. The engine also takes
    ``ties="doc_asc"`` (``Judged(ties=doc_asc)@k``): equal scores ordered by doc id
    ascending, as that provider orders them; a judged table's ranks hold no ties.

    References
    ----------
    MacAvaney, Macdonald and Ounis, "Streamlining evaluation with ir-measures",
    ECIR 2022 (``Judged@k``).

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, 3, None], "relevance": [0, None, 2, 1]})
    >>> judged.select(judged_at(2)).item()
    0.5
    """
    check_cutoff(k, "Judged")
    check_choice("negative", negative, ("unjudged", "judged"))
    top = in_top(rank, k)
    counted = judged(relevance) if negative == "unjudged" else col(relevance).is_not_null()
    return safe_div((counted & top).sum(), top.sum())


def unjudged_at(k: int, *, rank: IntoExpr = "rank", relevance: IntoExpr = "relevance") -> pl.Expr:
    r"""The fraction of the top k that is unjudged, as trec_eval 10.0's ``unj_k``.

    .. math:: Unj@k = \frac{|\{i \le k : d_i \text{ unjudged}\}|}{k}

    where a document is unjudged when it has no qrels row or a negative grade
    (trec_eval's "not in the pool" and "in the pool but unjudged"). The
    denominator is k even when fewer than k documents were retrieved: the
    missing ranks count as judged, as in trec_eval.

    A "red flag" measure: a high value at a small k says the qrels cover the
    run poorly.

    Parameters
    ----------
    k
        The cutoff, an int >= 1; trec_eval's defaults are 5, 10 and 20.
    rank, relevance
        Columns of the judged table. Accepts expression input. Strings are
        parsed as column names.

    Returns
    -------
    pl.Expr
        One Float64 per query.

    References
    ----------
    trec_eval 10.0, ``m_unjudged.c`` (Ian Soboroff, NIST, 2023).

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, 3, None], "relevance": [None, 0, -1, 1]})
    >>> # ranks 1 (no qrels row) and 3 (negative grade) are unjudged
    >>> judged.select(unjudged_at(2).alias("u2"), unjudged_at(5).alias("u5"))
    shape: (1, 2)
    ┌─────┬─────┐
    │ u2  ┆ u5  │
    │ --- ┆ --- │
    │ f64 ┆ f64 │
    ╞═════╪═════╡
    │ 0.5 ┆ 0.4 │
    └─────┴─────┘
    """
    check_cutoff(k, "Unjudged", allow_none=False)
    count = (in_top(rank, k) & ~judged(relevance)).sum()
    # k as a per-group value: Polars divides by a literal as a product with 1/k,
    # which is 1 ulp off trec_eval's quotient (3 * (1/20) != 3/20)
    return (count.cast(pl.Float64) / pl.repeat(float(k), pl.len()).first()).cast(pl.Float64)


def unjudged_formula(f: Features, k: int) -> pl.Expr:
    """Unjudged@k over the engine's features: the top k less its judged documents, over k."""
    check_cutoff(k, "Unjudged", allow_none=False)
    judged_top = f.sum_to_rank((f.grade >= 0).cast(pl.Float64), k)
    top = pl.min_horizontal(f.nret, pl.lit(float(k)))
    return ((top - judged_top) / f.constant(float(k))).cast(pl.Float64)


def judged_at_formula(
    f: Features, k: int | None, ties: str = "ranked", negative: str = "unjudged"
) -> pl.Expr:
    """Judged@k: judged documents (grade >= 0; any grade with ``negative="judged"``) in the
    top k over min(k, retrieved); ``ties="doc_asc"`` reads each tie group doc id
    ascending (ir_measures' judged provider)."""
    judged = f.grade >= 0 if negative == "unjudged" else f.grade.is_not_null()
    if ties == "ranked":
        judged_top = f.sum_to_rank(judged.cast(pl.Float64), k)
    else:
        top_rows = pl.lit(True) if k is None else f.rank_doc_asc() <= k
        judged_top = f.sum(pl.when(judged & top_rows).then(1.0)).fill_null(0.0)
    top = f.nret if k is None else pl.min_horizontal(f.nret, pl.lit(float(k)))
    return safe_div(judged_top, top)


# --------------------------------------------------------------------------- declarations

NEGATIVE = Param("negative", str, "unjudged", ("unjudged", "judged"))
"""Whether a negative grade counts as judged (ir_measures' judged provider: any qrels row)."""

declare(
    "Judged",
    lambda x, c: judged_at(
        optional_k(x), rank=c.rank, relevance=c.relevance, negative=x.setting("negative")
    ),
    "optional",
    TIE_ORDER,
    NEGATIVE,
    summary="fraction of the top k that is judged",
    formula=lambda x, f: judged_at_formula(
        f, optional_k(x), x.setting("ties"), x.setting("negative")
    ),
    bounds=UNIT,
    aliases=("judged",),
    order=32,
)
declare(
    "Unjudged",
    lambda x, c: unjudged_at(required_k(x), rank=c.rank, relevance=c.relevance),
    "required",
    summary="fraction of the top k that is unjudged (trec_eval 10 unj_k)",
    formula=lambda x, f: unjudged_formula(f, required_k(x)),
    aliases=("unjudged",),
    trec_cutoff={"unj": None},
    better="lower",
    order=37,
)
