"""Measures of the retrieved set (no order): set precision, recall, F, AP, relative
precision, and utility."""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from polars_rankeval._typing import IntoExpr
from polars_rankeval.catalogue import (
    JUDGED_ONLY,
    REL,
    UNIT,
    Param,
    declare,
    declare_relevant,
    reads_relevant,
    with_n_rel,
)
from polars_rankeval.metrics._common import (
    num_relevant,
    relevant_retrieved,
    retrieved,
    safe_div,
)

if TYPE_CHECKING:
    from polars_rankeval.engine.features import Features


def _counts(
    rank: IntoExpr, relevance: IntoExpr, rel_level: int, n_rel: IntoExpr | None
) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """(relevant retrieved, retrieved, |R|) as Float64 aggregations."""
    hits = relevant_retrieved(rank, relevance, rel_level).sum().cast(pl.Float64)
    ret = retrieved(rank).sum().cast(pl.Float64)
    return hits, ret, num_relevant(relevance, rel_level, n_rel)


def set_precision(
    *,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
    rel_level: int = 1,
    n_rel: IntoExpr | None = None,
) -> pl.Expr:
    r"""Precision of the whole retrieved set (trec_eval ``set_P``).

    .. math:: SetP = \frac{|R \cap ret|}{|ret|}

    where :math:`ret` is the set of retrieved documents; 0 when it is empty.

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, 3, None], "relevance": [1, 0, None, 2]})
    >>> judged.select(set_precision()).item() == 1 / 3
    True
    """
    hits, ret, _ = _counts(rank, relevance, rel_level, n_rel)
    return safe_div(hits, ret)


def set_recall(
    *,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
    rel_level: int = 1,
    n_rel: IntoExpr | None = None,
) -> pl.Expr:
    r"""Recall of the whole retrieved set (trec_eval ``set_recall``).

    .. math:: SetR = \frac{|R \cap ret|}{|R|}

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, 3, None], "relevance": [1, 0, None, 2]})
    >>> judged.select(set_recall()).item()
    0.5
    """
    hits, _, n = _counts(rank, relevance, rel_level, n_rel)
    return safe_div(hits, n)


def set_f(
    beta: float = 1.0,
    *,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
    rel_level: int = 1,
    n_rel: IntoExpr | None = None,
) -> pl.Expr:
    r"""Weighted harmonic mean of set precision and set recall (trec_eval ``set_F``).

    .. math:: SetF = \frac{(x + 1) \cdot P \cdot R}{x \cdot P + R}

    where P and R are :func:`set_precision` and :func:`set_recall` and x is
    ``beta``, trec_eval's parameter (the relative importance of recall; x = 1
    gives F1). 0 when no relevant document is retrieved.

    References
    ----------
    van Rijsbergen, "Information Retrieval", Butterworths, 1979 (the E measure).

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, 3, None], "relevance": [1, 0, None, 2]})
    >>> p, r = 1 / 3, 1 / 2
    >>> abs(judged.select(set_f()).item() - 2 * p * r / (p + r)) < 1e-12
    True
    """
    hits, ret, n = _counts(rank, relevance, rel_level, n_rel)
    p, r = hits / ret, hits / n
    return pl.when(hits > 0).then((beta + 1.0) * p * r / (beta * p + r)).otherwise(0.0)


def set_ap(
    *,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
    rel_level: int = 1,
    n_rel: IntoExpr | None = None,
) -> pl.Expr:
    r"""Unranked set AP: set precision times set recall (trec_eval ``set_map``).

    .. math:: SetAP = \frac{|R \cap ret|^2}{|ret| \cdot |R|}

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, 3, None], "relevance": [1, 0, None, 2]})
    >>> judged.select(set_ap()).item() == 1 / (3 * 2)
    True
    """
    hits, ret, n = _counts(rank, relevance, rel_level, n_rel)
    return safe_div(hits * hits, ret * n)


def set_relative_precision(
    *,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
    rel_level: int = 1,
    n_rel: IntoExpr | None = None,
) -> pl.Expr:
    r"""Set precision relative to the best possible (trec_eval ``set_relative_P``).

    .. math:: SetRelP = \frac{|R \cap ret|}{\min(|ret|, |R|)}

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, 3, None], "relevance": [1, 0, None, 2]})
    >>> judged.select(set_relative_precision()).item()
    0.5
    """
    hits, ret, n = _counts(rank, relevance, rel_level, n_rel)
    return safe_div(hits, pl.min_horizontal(ret, n))


def utility(
    a: float = 1.0,
    b: float = -1.0,
    c: float = 0.0,
    d: float = 0.0,
    *,
    n_docs: int = 0,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
    rel_level: int = 1,
    n_rel: IntoExpr | None = None,
) -> pl.Expr:
    r"""Set utility from the contingency table (trec_eval ``utility``).

    .. math:: U = a \cdot |R \cap ret| + b \cdot |\bar R \cap ret|
              + c \cdot |R \setminus ret| + d \cdot (N - |ret \cup R|)

    where :math:`\bar R` are the retrieved documents that are not relevant and N
    is ``n_docs``, the collection size (trec_eval ``-N``, default 0).

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, 3, None], "relevance": [1, 0, None, 2]})
    >>> judged.select(utility()).item()  # 1 relevant retrieved - 2 others
    -1.0
    """
    hits, ret, n = _counts(rank, relevance, rel_level, n_rel)
    return (a * hits + b * (ret - hits) + c * (n - hits) + d * (n_docs + hits - ret - n)).cast(
        pl.Float64
    )


# ---------------------------------------------------------------------- formulas
# The same measures over the engine's features (see polars_rankeval.engine.features).


def set_counts(f: Features, rel_level: int) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """(relevant retrieved, retrieved, |R|) per ranking, Float64."""
    return f.hits(rel_level), f.nret, f.nrel(rel_level)


def set_precision_formula(f: Features, rel_level: int) -> pl.Expr:
    """SetP: relevant retrieved over retrieved."""
    hits, ret, _ = set_counts(f, rel_level)
    return safe_div(hits, ret)


def set_recall_formula(f: Features, rel_level: int) -> pl.Expr:
    """SetR: relevant retrieved over |R|."""
    hits, _, n = set_counts(f, rel_level)
    return safe_div(hits, n)


def set_f_formula(f: Features, beta: float, rel_level: int) -> pl.Expr:
    """SetF: the weighted harmonic mean of SetP and SetR (see :func:`set_f`)."""
    hits, ret, n = set_counts(f, rel_level)
    p, r = hits / ret, hits / n
    return pl.when(hits > 0).then((beta + 1.0) * p * r / (beta * p + r)).otherwise(0.0)


def set_ap_formula(f: Features, rel_level: int) -> pl.Expr:
    """SetAP: SetP times SetR."""
    hits, ret, n = set_counts(f, rel_level)
    return safe_div(hits * hits, ret * n)


def set_relative_precision_formula(f: Features, rel_level: int) -> pl.Expr:
    """SetRelP: relevant retrieved over min(retrieved, |R|)."""
    hits, ret, n = set_counts(f, rel_level)
    return safe_div(hits, pl.min_horizontal(ret, n))


def utility_formula(
    f: Features, a: float, b: float, c: float, d: float, n_docs: int, rel_level: int
) -> pl.Expr:
    """Utility: a*rel_ret + b*nonrel_ret + c*rel_missed + d*nonrel_missed (see :func:`utility`)."""
    hits, ret, n = set_counts(f, rel_level)
    value = a * hits + b * (ret - hits) + c * (n - hits) + d * (n_docs + hits - ret - n)
    return value.cast(pl.Float64)


# --------------------------------------------------------------------------- declarations

declare(
    "Utility",
    lambda x, c: utility(
        x.setting("a"),
        x.setting("b"),
        x.setting("c"),
        x.setting("d"),
        n_docs=x.setting("n_docs"),
        **with_n_rel(x, c),
    ),
    "none",
    REL,
    Param("a", float, 1.0),
    Param("b", float, -1.0),
    Param("c", float, 0.0),
    Param("d", float, 0.0),
    Param("n_docs", int, 0),
    summary="set utility a*rel_ret + b*nonrel_ret + c*rel_missed + d*nonrel_missed",
    reads=reads_relevant,
    formula=lambda x, f: utility_formula(
        f,
        x.setting("a"),
        x.setting("b"),
        x.setting("c"),
        x.setting("d"),
        x.setting("n_docs"),
        x.rel_level(f.ctx),
    ),
    aliases=("utility",),
    trec_dotted={"utility": "utility"},
    order=14,
)
declare_relevant(
    "SetP",
    set_precision,
    set_precision_formula,
    params=(JUDGED_ONLY,),
    summary="set precision",
    bounds=UNIT,
    aliases=("set_p", "setp"),
    order=22,
)
declare_relevant(
    "SetRelP",
    set_relative_precision,
    set_relative_precision_formula,
    summary="set precision relative to min(|ret|, |R|)",
    bounds=UNIT,
    aliases=("set_relative_p", "setrelp"),
    order=23,
)
declare_relevant(
    "SetR",
    set_recall,
    set_recall_formula,
    summary="set recall",
    bounds=UNIT,
    aliases=("set_recall", "setr"),
    order=24,
)
declare_relevant(
    "SetAP",
    set_ap,
    set_ap_formula,
    params=(JUDGED_ONLY,),
    summary="set precision times set recall (set_map)",
    bounds=UNIT,
    aliases=("set_map", "setap"),
    order=25,
)
declare(
    "SetF",
    lambda x, c: set_f(x.setting("beta"), **with_n_rel(x, c)),
    "none",
    REL,
    Param("beta", float, 1.0),
    JUDGED_ONLY,
    summary="weighted harmonic mean of set precision and recall",
    reads=reads_relevant,
    formula=lambda x, f: set_f_formula(f, x.setting("beta"), x.rel_level(f.ctx)),
    bounds=UNIT,
    aliases=("set_f", "setf"),
    trec_dotted={"set_F": "param:beta"},
    order=26,
)
