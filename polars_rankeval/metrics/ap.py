"""Average precision, with and without a cutoff."""

from __future__ import annotations

from typing import TYPE_CHECKING, get_args

import polars as pl

from polars_rankeval._typing import APNorm, IntoExpr
from polars_rankeval.catalogue import (
    JUDGED_ONLY,
    REL,
    UNIT,
    Param,
    declare,
    optional_k,
    reads_relevant,
    with_n_rel,
)
from polars_rankeval.metrics._common import (
    check_cutoff,
    col,
    in_top,
    normalizer,
    num_relevant,
    relevant_retrieved,
    safe_div,
)
from polars_rankeval.validation import check_choice

if TYPE_CHECKING:
    from polars_rankeval.engine.features import Features


def average_precision(
    k: int | None = None,
    *,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
    rel_level: int = 1,
    n_rel: IntoExpr | None = None,
    norm: APNorm = "R",
) -> pl.Expr:
    r"""Average precision (trec_eval ``map``; with k, ``map_cut_k``).

    .. math:: AP@k = \frac{1}{|R|} \sum_{i=1}^{k} rel_i \cdot P@i

    where :math:`rel_i` is 1 when the document at rank i is relevant and
    :math:`|R|` counts every relevant document of the query, retrieved or not
    (the cutoff does not change the denominator). A query with no relevant
    document scores 0.

    Parameters
    ----------
    k
        Cutoff, an int >= 1, or None for the whole ranking.
    rank, relevance
        Columns of the judged table; retrieved rows must come in rank order
        within the query, as :func:`polars_rankeval.judge` leaves them.
        Accepts expression input. Strings are parsed as column names.
    rel_level
        Minimum grade that counts as relevant.
    n_rel
        Per-query |R| column to use instead of counting relevant rows.
    norm
        ``"R"`` (default, trec_eval): divide by |R|. ``"min"``: divide by
        min(k, |R|), so a perfect top k scores 1 even when |R| > k (the
        convention of recommender-system libraries and nearest-neighbour recall;
        ``AP(norm=min)@k``, ``R(norm=min)@k``; Spark's
        ``RankingMetrics.meanAveragePrecisionAt``). ``"found"``: divide by the
        relevant documents found in the top k, the mean of P@i over the ranks i
        <= k that hold one (``AP(norm=found)@k``; torchmetrics
        ``RetrievalMAP(top_k=k)``, ``torchmetrics/functional/retrieval/
        average_precision.py``), 0 when none is found. ``"k"``: divide by k
        (RecTools ``MAP(k, divide_by_k=True)``; the whole ranking needs a cutoff).
        ``"retrieved"``: divide by min(|R|, n) where n is the number of documents
        retrieved within the top k (the whole ranking without k): LensKit's
        ``AveragePrecision`` (``lenskit/metrics/ranking/_map.py``, ``denom =
        min(len(test), len(recs))`` over the truncated list).

    References
    ----------
    Buckley and Voorhees, "Evaluating evaluation measure stability", SIGIR 2000.

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, 3, 4, 5], "relevance": [0, 1, 0, 1, 0]})
    >>> judged.select(average_precision()).item() == (1 / 2 + 2 / 4) / 2
    True
    >>> judged.select(average_precision(3)).item() == (1 / 2) / 2  # |R| stays 2
    True
    >>> judged.select(average_precision(3, norm="found")).item() == 1 / 2  # 1 found
    True
    >>> judged.head(1).select(average_precision(3, norm="retrieved")).item()  # min(|R|, 1)
    0.0
    """
    check_cutoff(k, "AP")
    check_choice("norm", norm, APNorm)
    hit = relevant_retrieved(rank, relevance, rel_level)
    precision_at_hit = hit.cum_sum() / col(rank)
    total = precision_at_hit.filter(hit & in_top(rank, k)).sum()
    if norm == "found":
        return safe_div(total, (hit & in_top(rank, k)).sum().cast(pl.Float64))
    if norm == "k":
        return safe_div(total, pl.lit(float(_cutoff_of_norm_k(k))))
    n_relevant = num_relevant(relevance, rel_level, n_rel)
    if norm == "retrieved":
        listed = in_top(rank, k).sum().cast(pl.Float64)
        return safe_div(total, pl.min_horizontal(n_relevant, listed))
    return safe_div(total, normalizer(k, n_relevant, norm))


def _cutoff_of_norm_k(k: int | None) -> int:
    if k is None:
        msg = "AP(norm=k) divides by the cutoff: give one, e.g. AP(norm=k)@10."
        raise ValueError(msg)
    return k


def average_precision_formula(
    f: Features, k: int | None, rel_level: int, norm: APNorm = "R"
) -> pl.Expr:
    """AP@k over the engine's features: the sum of precision at each relevant rank <= k."""
    check_choice("norm", norm, APNorm)
    at_hits = pl.when(f.hit(rel_level)).then(f.hits_so_far(rel_level) / f.rank).otherwise(0.0)
    total = f.sum_to_rank(at_hits, k)
    if norm == "found":
        return safe_div(total, f.hits(rel_level, k))
    if norm == "k":
        return safe_div(total, f.constant(_cutoff_of_norm_k(k)))
    if norm == "retrieved":
        listed = f.nret if k is None else pl.min_horizontal(f.nret, f.constant(k))
        return safe_div(total, pl.min_horizontal(f.nrel(rel_level), listed))
    return safe_div(total, normalizer(k, f.nrel(rel_level), norm))


# --------------------------------------------------------------------------- declarations

AP_NORM = Param("norm", str, "R", get_args(APNorm))

declare(
    "AP",
    lambda x, c: average_precision(optional_k(x), norm=x.setting("norm"), **with_n_rel(x, c)),
    "optional",
    REL,
    AP_NORM,
    JUDGED_ONLY,
    summary="average precision (at k: |R| stays the denominator unless norm=min|found|k|retrieved)",
    reads=reads_relevant,
    formula=lambda x, f: average_precision_formula(
        f, optional_k(x), x.rel_level(f.ctx), x.setting("norm")
    ),
    bounds=UNIT,
    aliases=("map", "ap"),
    presets={
        "retrievalmap": "AP(norm=found)",
        "retrieval_map": "AP(norm=found)",
        "retrieval_average_precision": "AP(norm=found)",
    },
    trec_cutoff={"map_cut": None},
    trec_dotted={"map_cut": "cutoffs"},
    order=3,
)
declare(
    "GMAP",
    lambda x, c: average_precision(**with_n_rel(x, c)),
    "none",
    REL,
    summary="AP per query, geometric mean over queries (floor 1e-5)",
    aggregate="gmean",
    reads=reads_relevant,
    formula=lambda x, f: average_precision_formula(f, None, x.rel_level(f.ctx)),
    bounds=UNIT,
    aliases=("gm_map", "gmap"),
    order=4,
)
