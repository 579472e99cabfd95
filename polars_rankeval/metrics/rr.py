"""Reciprocal rank."""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from polars_rankeval._typing import IntoExpr
from polars_rankeval.catalogue import (
    JUDGED_ONLY,
    REL,
    TIE_ORDER,
    UNIT,
    columns,
    declare,
    optional_k,
    reads_relevant,
)
from polars_rankeval.metrics._common import check_cutoff, col, in_top, relevant_retrieved

if TYPE_CHECKING:
    from polars_rankeval.engine.features import Features


def reciprocal_rank(
    k: int | None = None,
    *,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
    rel_level: int = 1,
) -> pl.Expr:
    r"""Reciprocal rank of the first relevant document (trec_eval ``recip_rank``).

    .. math:: RR@k = \frac{1}{\min\{rank(d) : d \in R, rank(d) \le k\}}

    and 0 when no relevant document is retrieved within the cutoff.

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, 3, None], "relevance": [0, 0, 1, 2]})
    >>> judged.select(reciprocal_rank()).item() == 1 / 3
    True
    >>> judged.select(reciprocal_rank(2)).item()
    0.0
    """
    check_cutoff(k, "RR")
    first = col(rank).filter(relevant_retrieved(rank, relevance, rel_level) & in_top(rank, k)).min()
    return (1.0 / first.cast(pl.Float64)).fill_null(0.0)


def reciprocal_rank_formula(
    f: Features, k: int | None, rel_level: int, ties: str = "ranked"
) -> pl.Expr:
    """RR@k over the engine's features: the largest 1/rank of a relevant document in the top
    k (``ties="doc_asc"``: the ranks with each tie group read the other way, doc id
    ascending, as :func:`~polars_rankeval.engine.features.Features.rank_doc_asc`)."""
    rank = f.rank if ties == "ranked" else f.rank_doc_asc()
    top = pl.lit(True) if k is None else rank <= k
    return f.max(pl.when(f.hit(rel_level) & top).then(1.0 / rank)).fill_null(0.0)


# --------------------------------------------------------------------------- declarations

declare(
    "RR",
    lambda x, c: reciprocal_rank(optional_k(x), **columns(x, c)),
    "optional",
    REL,
    TIE_ORDER,
    JUDGED_ONLY,
    summary="reciprocal rank of the first relevant document",
    reads=reads_relevant,
    formula=lambda x, f: reciprocal_rank_formula(
        f, optional_k(x), x.rel_level(f.ctx), x.setting("ties")
    ),
    bounds=UNIT,
    aliases=("recip_rank", "mrr", "rr"),
    order=8,
)
