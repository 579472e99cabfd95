"""Precision and recall at a cutoff: precision, recall, R-precision (and at a multiple of
|R|), relative precision, F1, success, counts."""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from polars_rankeval._typing import IntoExpr, Norm
from polars_rankeval.catalogue import (
    JUDGED_ONLY,
    NORM,
    REL,
    UNIT,
    Context,
    Measure,
    Param,
    columns,
    declare,
    optional_k,
    reads_no_rows,
    reads_relevant,
    required_k,
    with_n_rel,
)
from polars_rankeval.metrics._common import (
    check_cutoff,
    col,
    in_top,
    judged,
    normalizer,
    num_relevant,
    recall_cutoff,
    relevant,
    relevant_retrieved,
    retrieved,
    safe_div,
)

if TYPE_CHECKING:
    from polars_rankeval.engine.features import Features


def relevant_in_top(
    k: int | None, *, rank: IntoExpr = "rank", relevance: IntoExpr = "relevance", rel_level: int = 1
) -> pl.Expr:
    """Number of relevant documents retrieved at rank <= k (all retrieved when k is None)."""
    return (relevant_retrieved(rank, relevance, rel_level) & in_top(rank, k)).sum()


def precision(
    k: int,
    *,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
    rel_level: int = 1,
    adaptive_k: bool = False,
) -> pl.Expr:
    r"""Precision at cutoff k (trec_eval ``P_k``).

    .. math:: P@k = \frac{|\{d \in R : rank(d) \le k\}|}{k}

    where :math:`R` is the set of relevant documents (grade >= ``rel_level``).
    The denominator is k even when fewer than k documents were retrieved.

    Parameters
    ----------
    k
        Cutoff, an int >= 1.
    rank, relevance
        Columns of the judged table. Accepts expression input. Strings are
        parsed as column names.
    rel_level
        Minimum grade that counts as relevant.
    adaptive_k
        Divide by min(k, documents retrieved) instead of k, so that a short
        ranking of relevant documents scores 1 (``P(adaptive_k=True)@k``;
        torchmetrics ``RetrievalPrecision(top_k=k, adaptive_k=True)``,
        ``torchmetrics/functional/retrieval/precision.py``). 0 when nothing
        was retrieved.

    Returns
    -------
    pl.Expr
        Aggregation over one query's rows (use in ``group_by(...).agg``), Float64.

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, 3, None], "relevance": [0, 1, None, 2]})
    >>> judged.select(precision(2)).item()  # one relevant in the top 2
    0.5
    >>> judged.select(precision(10)).item()  # still divided by 10
    0.1
    >>> round(judged.select(precision(10, adaptive_k=True)).item(), 4)  # 1 of 3 retrieved
    0.3333
    """
    check_cutoff(k, "P", allow_none=False)
    found = relevant_in_top(k, rank=rank, relevance=relevance, rel_level=rel_level)
    if adaptive_k:
        top = pl.min_horizontal(retrieved(rank).sum(), pl.lit(k)).cast(pl.Float64)
        return safe_div(found.cast(pl.Float64), top)
    return (found / k).cast(pl.Float64)


def precision_judged_only(
    k: int, *, rank: IntoExpr = "rank", relevance: IntoExpr = "relevance", rel_level: int = 1
) -> pl.Expr:
    r"""Precision at k over the judged documents only (``P(judged_only=True)@k``).

    .. math:: P_J@k = \frac{|\{d \in R : rank_J(d) \le k\}|}{k}

    where :math:`rank_J(d)` is the rank of d once every unjudged retrieved
    document (no qrels row, or a negative grade) is removed from the ranking,
    as trec_eval's ``-J`` flag does (``form_res_rels.c``: the judged documents
    keep their order, and num_ret becomes their number). The denominator is
    still k. ir_measures' ``P(judged_only=True)@k`` passes ``-J`` to
    pytrec_eval (``providers/pytrec_eval_provider.py``).

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, 3, None], "relevance": [None, 1, 0, 2]})
    >>> judged.select(precision_judged_only(1)).item()  # the unjudged top document is skipped
    1.0
    >>> judged.select(precision(1)).item()
    0.0
    """
    check_cutoff(k, "P", allow_none=False)
    kept = retrieved(rank) & judged(relevance)
    judged_rank = col(rank).filter(kept).rank("ordinal")
    hits = relevant(relevance, rel_level).filter(kept) & (judged_rank <= k)
    return (hits.sum() / k).cast(pl.Float64)


def recall(
    k: int | None = None,
    *,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
    rel_level: int = 1,
    n_rel: IntoExpr | None = None,
    norm: Norm = "R",
) -> pl.Expr:
    r"""Recall at cutoff k (trec_eval ``recall_k``).

    .. math:: R@k = \frac{|\{d \in R : rank(d) \le k\}|}{|R|}

    where :math:`|R|` counts every relevant document of the query, retrieved or
    not. A query with no relevant document scores 0.

    Parameters
    ----------
    k
        Cutoff, an int >= 1, or None for all retrieved documents.
    rank, relevance
        Columns of the judged table. Accepts expression input. Strings are
        parsed as column names.
    rel_level
        Minimum grade that counts as relevant.
    n_rel
        Per-query |R| column to use instead of counting relevant rows.
    norm
        ``"R"`` (default, trec_eval): divide by |R|. ``"min"``: divide by
        min(k, |R|), so a perfect top k scores 1 even when |R| > k (the
        convention of recommender-system libraries and nearest-neighbour recall;
        ``AP(norm=min)@k``, ``R(norm=min)@k``).

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, 3, None], "relevance": [0, 1, None, 2]})
    >>> judged.select(recall(2)).item()  # 1 of the 2 relevant documents
    0.5
    """
    check_cutoff(k, "R")
    hits = relevant_in_top(k, rank=rank, relevance=relevance, rel_level=rel_level)
    return safe_div(hits, normalizer(k, num_relevant(relevance, rel_level, n_rel), norm))


def r_precision(
    *,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
    rel_level: int = 1,
    n_rel: IntoExpr | None = None,
) -> pl.Expr:
    r"""R-precision: precision at rank |R| (trec_eval ``Rprec``).

    .. math:: Rprec = \frac{|\{d \in R : rank(d) \le |R|\}|}{|R|}

    Equal to P@|R| and to R@|R|. A query with no relevant document scores 0.

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, 3, None], "relevance": [0, 1, None, 2]})
    >>> judged.select(r_precision()).item()  # |R| = 2, one relevant in the top 2
    0.5
    """
    n = num_relevant(relevance, rel_level, n_rel)

    hits = (
        relevant_retrieved(rank, relevance, rel_level) & (col(rank) <= n).fill_null(False)
    ).sum()
    return safe_div(hits, n)


def rprec_mult(
    mult: float,
    *,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
    rel_level: int = 1,
    n_rel: IntoExpr | None = None,
) -> pl.Expr:
    r"""Precision at a multiple of |R| (trec_eval ``Rprec_mult``).

    .. math:: P@c, \quad c = \lfloor m \cdot |R| + 0.9 \rfloor

    where m is the multiple; P@c divides by c even past the end of the ranking,
    and is 0 when c = 0. With m = 1 it is R-precision.

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, 3, 4, None], "relevance": [0, 1, 0, 1, 1]})
    >>> judged.select(rprec_mult(2.0)).item() == 2 / 6  # c = 6, past the 4 retrieved
    True
    """
    if isinstance(mult, bool) or not isinstance(mult, int | float) or mult < 0:
        msg = f"The multiple of Rprec must be a number >= 0. Got {mult!r} instead."
        raise ValueError(msg)
    cut = recall_cutoff(mult, num_relevant(relevance, rel_level, n_rel), "v9")
    hits = (
        relevant_retrieved(rank, relevance, rel_level) & (col(rank) <= cut).fill_null(False)
    ).sum()
    return pl.when(cut > 0).then(hits / cut).otherwise(0.0).cast(pl.Float64)


def relative_precision(
    k: int,
    *,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
    rel_level: int = 1,
    n_rel: IntoExpr | None = None,
) -> pl.Expr:
    r"""Precision at k relative to the best possible (trec_eval ``relative_P_k``).

    .. math:: RelP@k = \frac{|\{d \in R : rank(d) \le k\}|}{\min(k, |R|)}

    Precision up to k = |R|, recall beyond. 0 when the query has no relevant
    document.

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, 3, None], "relevance": [1, 0, None, 2]})
    >>> judged.select(relative_precision(1)).item(), judged.select(relative_precision(5)).item()
    (1.0, 0.5)
    """
    check_cutoff(k, "RelP", allow_none=False)
    hits = relevant_in_top(k, rank=rank, relevance=relevance, rel_level=rel_level)
    n = num_relevant(relevance, rel_level, n_rel)
    return safe_div(hits, pl.min_horizontal(n, pl.lit(float(k))))


def f1(
    k: int | None = None,
    *,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
    rel_level: int = 1,
    n_rel: IntoExpr | None = None,
) -> pl.Expr:
    r"""F1 at cutoff k: harmonic mean of P@k and R@k (``F1@k``; ranx ``f1@k``).

    .. math:: F1@k = \frac{2 \cdot P@k \cdot R@k}{P@k + R@k}
              = \frac{2 \, |\{d \in R : rank(d) \le k\}|}{k + |R|}

    where P@k divides by k (as trec_eval's P@k) and R@k by |R|; 0 when no
    relevant document is in the top k. Without k, the whole retrieved set
    (then equal to trec_eval ``set_F``).

    References
    ----------
    van Rijsbergen, "Information Retrieval", Butterworths, 1979, ch. 7.

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, 3, None], "relevance": [1, 0, None, 2]})
    >>> judged.select(f1(2)).item() == 2 * 1 / (2 + 2)
    True
    """
    check_cutoff(k, "F1")
    hits = relevant_in_top(k, rank=rank, relevance=relevance, rel_level=rel_level)
    size = in_top(rank, k).sum().cast(pl.Float64) if k is None else pl.lit(float(k))
    return safe_div(2.0 * hits.cast(pl.Float64), size + num_relevant(relevance, rel_level, n_rel))


def success(
    k: int | None = None,
    *,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
    rel_level: int = 1,
) -> pl.Expr:
    r"""Success at k: 1 if a relevant document is retrieved at rank <= k, else 0.

    trec_eval ``success_k``; ranx ``hit_rate@k``.

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, 3, None], "relevance": [0, 1, None, 2]})
    >>> judged.select(success(1)).item(), judged.select(success(2)).item()
    (0.0, 1.0)
    """
    check_cutoff(k, "Success")
    hits = relevant_in_top(k, rank=rank, relevance=relevance, rel_level=rel_level)
    return (hits > 0).cast(pl.Float64)


def num_ret(*, rank: IntoExpr = "rank") -> pl.Expr:
    """Number of retrieved documents (trec_eval ``num_ret``).

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, 3, None], "relevance": [0, 1, None, 2]})
    >>> judged.select(num_ret()).item()
    3.0
    """

    return col(rank).count().cast(pl.Float64)


def num_q() -> pl.Expr:
    """One per query (ir_measures ``NumQ``, trec_eval's ``num_q`` line).

    Summed over queries (``aggregate="sum"``), it counts the queries scored.
    ir_measures gets it from pytrec_eval's ``num_q``
    (``ir_measures/measures/numq.py``).

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"query": ["a", "a", "b"], "rank": [1, 2, 1]})
    >>> judged.group_by("query").agg(num_q()).sort("query")["literal"].to_list()
    [1.0, 1.0]
    """
    return pl.lit(1.0, pl.Float64)


def num_rel(
    *, relevance: IntoExpr = "relevance", rel_level: int = 1, n_rel: IntoExpr | None = None
) -> pl.Expr:
    """Number of relevant documents |R|, retrieved or not (trec_eval ``num_rel``).

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, 3, None], "relevance": [0, 1, None, 2]})
    >>> judged.select(num_rel()).item()
    2.0
    """
    return num_relevant(relevance, rel_level, n_rel)


def num_rel_ret(
    *, rank: IntoExpr = "rank", relevance: IntoExpr = "relevance", rel_level: int = 1
) -> pl.Expr:
    """Number of relevant documents retrieved (trec_eval ``num_rel_ret``).

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, 3, None], "relevance": [0, 1, None, 2]})
    >>> judged.select(num_rel_ret()).item()
    1.0
    """
    return relevant_in_top(None, rank=rank, relevance=relevance, rel_level=rel_level).cast(
        pl.Float64
    )


def hits(
    k: int | None = None,
    *,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
    rel_level: int = 1,
) -> pl.Expr:
    r"""Number of relevant documents in the top k (``Hits@k``; ranx ``hits@k``).

    .. math:: Hits@k = |\{d \in R : rank(d) \le k\}|

    where :math:`R` is the set of relevant documents (grade >= ``rel_level``);
    without k, every retrieved document counts (``NumRelRet``). A count per
    query, averaged over queries like the other measures (as ranx does:
    ``ranx/metrics/hits.py``).

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, 3, None], "relevance": [1, 0, 2, 1]})
    >>> judged.select(hits(2)).item(), judged.select(hits(3)).item()
    (1.0, 2.0)
    """
    check_cutoff(k, "Hits")
    return relevant_in_top(k, rank=rank, relevance=relevance, rel_level=rel_level).cast(pl.Float64)


# ---------------------------------------------------------------------- formulas
# The same measures over the engine's features (see polars_rankeval.engine.features):
# per-ranking sums of row columns instead of per-group filters.


def precision_formula(f: Features, k: int, rel_level: int, *, adaptive_k: bool = False) -> pl.Expr:
    """P@k: relevant documents in the top k, divided by k (or by min(k, retrieved))."""
    if adaptive_k:
        return safe_div(f.hits(rel_level, k), pl.min_horizontal(f.nret, f.constant(k)))
    return f.hits(rel_level, k) / f.constant(k)


def precision_judged_only_formula(f: Features, k: int, rel_level: int) -> pl.Expr:
    """P(judged_only=True)@k: relevant documents among the top k judged ones, divided by k."""
    judged_rank = f.count_so_far(f.grade >= 0)
    top = f.hit(rel_level) & (f.grade >= 0) & (judged_rank <= k)
    return f.sum(top.cast(pl.Float64)) / f.constant(k)


def recall_formula(f: Features, k: int | None, rel_level: int, norm: Norm = "R") -> pl.Expr:
    """R@k: relevant documents in the top k, divided by |R| (or min(k, |R|))."""
    return safe_div(f.hits(rel_level, k), normalizer(k, f.nrel(rel_level), norm))


def r_precision_formula(f: Features, rel_level: int) -> pl.Expr:
    """Rprec: relevant documents in the top |R|, divided by |R|."""
    n = f.nrel(rel_level)
    return safe_div(f.hits(rel_level, n), n)


def rprec_mult_formula(f: Features, mult: float, rel_level: int) -> pl.Expr:
    """Rprec_mult over the engine's features (see :func:`rprec_mult`)."""
    cut = recall_cutoff(mult, f.nrel(rel_level), "v9")  # 10.0 keeps 9.x's here
    hits = f.hits(rel_level, cut)
    return pl.when(cut > 0).then(hits / cut).otherwise(0.0).cast(pl.Float64)


def relative_precision_formula(f: Features, k: int, rel_level: int) -> pl.Expr:
    """RelP@k: relevant documents in the top k over min(k, |R|)."""
    n = f.nrel(rel_level)
    return safe_div(f.hits(rel_level, k), pl.min_horizontal(n, pl.lit(float(k))))


def f1_formula(f: Features, k: int | None, rel_level: int) -> pl.Expr:
    """F1@k: 2 |relevant in the top k| / (k + |R|) (k: the retrieved count when None)."""
    size = f.nret if k is None else pl.lit(float(k))
    return safe_div(2.0 * f.hits(rel_level, k), size + f.nrel(rel_level))


def success_formula(f: Features, k: int | None, rel_level: int) -> pl.Expr:
    """Success@k: 1 when a relevant document is in the top k."""
    return (f.hits(rel_level, k) > 0).cast(pl.Float64)


def num_ret_formula(f: Features) -> pl.Expr:
    """NumRet: documents retrieved."""
    return f.nret


def num_q_formula(f: Features) -> pl.Expr:
    """NumQ: one per ranking."""
    return f.constant(1.0)


def num_rel_formula(f: Features, rel_level: int) -> pl.Expr:
    """NumRel: |R|."""
    return f.nrel(rel_level)


def num_rel_ret_formula(f: Features, rel_level: int) -> pl.Expr:
    """NumRelRet: relevant documents retrieved."""
    return f.hits(rel_level)


def hits_formula(f: Features, k: int | None, rel_level: int) -> pl.Expr:
    """Hits@k: relevant documents in the top k."""
    return f.hits(rel_level, k)


# --------------------------------------------------------------------------- declarations


def _precision_variant(x: Measure) -> bool:
    """Whether P@k is adaptive (torchmetrics); refuse it together with judged_only."""
    adaptive = bool(x.get("adaptive_k"))
    if adaptive and x.get("judged_only"):
        msg = f"{x}: judged_only and adaptive_k cannot be combined."
        raise ValueError(msg)
    return adaptive


def _precision_build(x: Measure, c: Context) -> pl.Expr:
    """P@k, over the judged documents only (``judged_only``) or adaptive (``adaptive_k``)."""
    adaptive = _precision_variant(x)
    if x.get("judged_only"):
        return precision_judged_only(required_k(x), **columns(x, c))
    return precision(required_k(x), adaptive_k=adaptive, **columns(x, c))


def _precision_formula(x: Measure, f: Features) -> pl.Expr:
    """The engine formula of :func:`_precision_build`."""
    adaptive = _precision_variant(x)
    if x.get("judged_only"):
        return precision_judged_only_formula(f, required_k(x), x.rel_level(f.ctx))
    return precision_formula(f, required_k(x), x.rel_level(f.ctx), adaptive_k=adaptive)


declare(
    "NumRet",
    lambda x, c: num_ret(rank=c.rank),
    summary="documents retrieved",
    aggregate="sum",
    reads=reads_no_rows,
    formula=lambda x, f: num_ret_formula(f),
    aliases=("num_ret",),
    order=0,
)
declare(
    "NumRel",
    lambda x, c: num_rel(relevance=c.relevance, rel_level=x.rel_level(c), n_rel=c.n_rel),
    "none",
    REL,
    summary="relevant documents, retrieved or not",
    aggregate="sum",
    reads=reads_relevant,
    formula=lambda x, f: num_rel_formula(f, x.rel_level(f.ctx)),
    aliases=("num_rel",),
    order=1,
)
declare(
    "NumRelRet",
    lambda x, c: num_rel_ret(**columns(x, c)),
    "none",
    REL,
    summary="relevant documents retrieved",
    aggregate="sum",
    reads=reads_relevant,
    formula=lambda x, f: num_rel_ret_formula(f, x.rel_level(f.ctx)),
    aliases=("num_rel_ret",),
    order=2,
)
declare(
    "Rprec",
    lambda x, c: (
        r_precision(**with_n_rel(x, c))
        if x.get("mult") is None
        else rprec_mult(x.get("mult"), **with_n_rel(x, c))
    ),
    "none",
    REL,
    Param("mult", float),
    JUDGED_ONLY,
    summary="R-precision: precision at rank |R| (mult: at rank mult*|R|, Rprec_mult)",
    reads=reads_relevant,
    formula=lambda x, f: (
        r_precision_formula(f, x.rel_level(f.ctx))
        if x.get("mult") is None
        else rprec_mult_formula(f, x.get("mult"), x.rel_level(f.ctx))
    ),
    bounds=UNIT,
    aliases=("rprec", "r-precision", "r_precision"),
    trec_cutoff={"Rprec_mult": "mult"},
    trec_dotted={"Rprec_mult": "param:mult"},
    order=5,
)
declare(
    "P",
    _precision_build,
    "required",
    REL,
    Param("judged_only", bool, False),
    Param("adaptive_k", bool, False),
    summary=(
        "precision at k (judged_only=True: over the judged documents only, trec_eval -J; "
        "adaptive_k=True: divided by min(k, retrieved), torchmetrics)"
    ),
    reads=lambda x, c: min(0, x.rel_level(c)) if x.get("judged_only") else x.rel_level(c),
    formula=lambda x, f: _precision_formula(x, f),
    bounds=UNIT,
    aliases=("precision", "p"),
    trec_cutoff={"P": None},
    trec_dotted={"P": "cutoffs"},
    order=11,
)
declare(
    "R",
    lambda x, c: recall(optional_k(x), norm=x.setting("norm"), **with_n_rel(x, c)),
    "optional",
    REL,
    NORM,
    JUDGED_ONLY,
    summary="recall at k (norm=min: divided by min(k, |R|))",
    reads=reads_relevant,
    formula=lambda x, f: recall_formula(f, optional_k(x), x.rel_level(f.ctx), x.setting("norm")),
    bounds=UNIT,
    aliases=("recall", "r"),
    trec_cutoff={"recall": None},
    trec_dotted={"recall": "cutoffs"},
    order=12,
)
declare(
    "RelP",
    lambda x, c: relative_precision(required_k(x), **with_n_rel(x, c)),
    "required",
    REL,
    summary="precision at k relative to min(k, |R|)",
    reads=reads_relevant,
    formula=lambda x, f: relative_precision_formula(f, required_k(x), x.rel_level(f.ctx)),
    bounds=UNIT,
    aliases=("relative_p", "relp"),
    trec_cutoff={"relative_P": None},
    trec_dotted={"relative_P": "cutoffs"},
    order=20,
)
declare(
    "Success",
    lambda x, c: success(optional_k(x), **columns(x, c)),
    "optional",
    REL,
    JUDGED_ONLY,
    summary="1 if a relevant document is in the top k",
    reads=reads_relevant,
    formula=lambda x, f: success_formula(f, optional_k(x), x.rel_level(f.ctx)),
    bounds=UNIT,
    aliases=("hit_rate", "success", "hit"),
    trec_cutoff={"success": None},
    trec_dotted={"success": "cutoffs"},
    order=21,
)
declare(
    "F1",
    lambda x, c: f1(optional_k(x), **with_n_rel(x, c)),
    "optional",
    REL,
    summary="harmonic mean of P@k and R@k",
    reads=reads_relevant,
    formula=lambda x, f: f1_formula(f, optional_k(x), x.rel_level(f.ctx)),
    bounds=UNIT,
    aliases=("f1",),
    order=28,
)
declare(
    "NumQ",
    lambda x, c: num_q(),
    summary="one per query: summed, the number of queries scored (ir_measures NumQ)",
    aggregate="sum",
    reads=reads_no_rows,
    formula=lambda x, f: num_q_formula(f),
    aliases=("numq",),
    order=38,
)
declare(
    "Hits",
    lambda x, c: hits(optional_k(x), **columns(x, c)),
    "optional",
    REL,
    summary="relevant documents in the top k, a count per query (ranx hits@k)",
    reads=reads_relevant,
    formula=lambda x, f: hits_formula(f, optional_k(x), x.rel_level(f.ctx)),
    aliases=("hits",),
    order=48,
)
