"""A ranking read as a binary classifier: fall-out and the area under the ROC curve.

torchmetrics scores a query's list of documents, each with a prediction and a target;
here that list is the ranking, and a retrieved document without a relevant grade
(judged non-relevant or unjudged) is a negative, as a target of 0 is there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from polars_rankeval._typing import IntoExpr
from polars_rankeval.catalogue import (
    INPUT_TIES,
    REL,
    UNIT,
    Param,
    columns,
    declare,
    optional_k,
    reads_relevant,
)
from polars_rankeval.metrics._common import (
    check_cutoff,
    col,
    in_top,
    relevant,
    relevant_retrieved,
    retrieved,
    safe_div,
)

if TYPE_CHECKING:
    from polars_rankeval.engine.features import Features


def fall_out(
    k: int | None = None,
    *,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
    rel_level: int = 1,
) -> pl.Expr:
    r"""Fall-out at k: the share of the ranking's non-relevant documents that are in its top k.

    .. math:: FallOut@k = \frac{|\{d \in ret \setminus R : rank(d) \le k\}|}{|ret \setminus R|}

    where ret are the retrieved documents and R the relevant ones (grade >=
    ``rel_level``): a retrieved document without a relevant grade, unjudged
    included, is non-relevant. 0 when every retrieved document is relevant. Lower
    is better.

    torchmetrics ``RetrievalFallOut(top_k=k)`` / ``retrieval_fall_out``
    (``torchmetrics/functional/retrieval/fall_out.py``: the non-relevant targets in
    the top k over all non-relevant targets of the query's list).

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, 3, 4, None], "relevance": [1, 0, None, 1, 0]})
    >>> judged.select(fall_out(2)).item()  # 1 of the 2 non-relevant retrieved
    0.5
    """
    check_cutoff(k, "FallOut")
    negative = retrieved(rank) & ~relevant(relevance, rel_level)
    top = (negative & in_top(rank, k)).sum().cast(pl.Float64)
    return safe_div(top, negative.sum().cast(pl.Float64))


def auroc(
    k: int | None = None,
    *,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
    rel_level: int = 1,
    no_pairs: str = "zero",
) -> pl.Expr:
    r"""Area under the ROC curve of the top k (``AUROC@k``).

    .. math:: AUROC@k = \frac{1}{|P|\,|N|} \sum_{p \in P} |\{n \in N : rank(n) > rank(p)\}|
              = \frac{|P| k' - \sum_{p \in P} rank(p) - |P|(|P| - 1)/2}{|P|\,|N|}

    where k' = min(k, documents retrieved), P are the relevant documents (grade >=
    ``rel_level``) in the top k' and N the others there, unjudged included: the
    share of (relevant, non-relevant) pairs that the ranking orders right. When P
    or N is empty (no pair): 0 (``no_pairs="zero"``), or null, the query left out of
    the mean (``no_pairs="skip"``).

    torchmetrics ``RetrievalAUROC(top_k=k)`` / ``retrieval_auroc``
    (``torchmetrics/functional/retrieval/auroc.py``: ``binary_auroc`` of the top k;
    0 when no target there is positive, and 0 when none is negative, as its ROC then
    has no false positive rate). Its ``max_fpr`` is not offered. The ranking here has
    no ties (trec_eval's order): tied predictions, which torchmetrics' ROC counts
    half, are ordered first. torchmetrics passes predictions outside [0, 1] through a
    sigmoid first, which in single precision ties large scores (all of them 1.0):
    there its values differ unless the scores are probabilities.

    ir_measures' ``Accuracy@k`` (its accuracy provider: 1 - the non-relevant
    documents above each relevant one of the top k, summed, over |P| |N|) is the
    same share: ``AUROC(no_pairs=skip)@k``, the name ``Accuracy@k`` here. That
    provider reports no query without a relevant document in the top k, and fails
    (a division by zero) on one whose top k is all relevant: both are left out here.

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, 3, None], "relevance": [1, 0, 1, 1]})
    >>> judged.select(auroc()).item()  # pairs (1, 2) right, (3, 2) wrong
    0.5
    """
    check_cutoff(k, "AUROC")
    hit = relevant_retrieved(rank, relevance, rel_level) & in_top(rank, k)
    n_pos = hit.sum().cast(pl.Float64)
    n_ret = retrieved(rank).sum().cast(pl.Float64)
    top = n_ret if k is None else pl.min_horizontal(n_ret, pl.lit(float(k)))
    rank_sum = col(rank).cast(pl.Float64).filter(hit).sum()
    return _auroc(n_pos, top, rank_sum, no_pairs)


def _auroc(n_pos: pl.Expr, top: pl.Expr, rank_sum: pl.Expr, no_pairs: str = "zero") -> pl.Expr:
    """AUROC from the relevant count in the top k', k' and the sum of their ranks (0 or
    null without a pair, as ``no_pairs`` says)."""
    right_pairs = n_pos * top - rank_sum - n_pos * (n_pos - 1.0) / 2.0
    pairs = n_pos * (top - n_pos)
    if no_pairs == "skip":
        return pl.when(pairs > 0).then(right_pairs / pairs).cast(pl.Float64)
    return safe_div(right_pairs, pairs)


# ---------------------------------------------------------------------- formulas
# The same measures over the engine's features (see polars_rankeval.engine.features).


def _top(f: Features, k: int | None) -> pl.Expr:
    """min(k, documents retrieved)."""
    return f.nret if k is None else pl.min_horizontal(f.nret, f.constant(k))


def fall_out_formula(f: Features, k: int | None, rel_level: int) -> pl.Expr:
    """FallOut@k: the non-relevant in the top k over the non-relevant retrieved."""
    check_cutoff(k, "FallOut")
    top = _top(f, k) - f.hits(rel_level, k)
    return safe_div(top, f.nret - f.hits(rel_level))


def auroc_formula(f: Features, k: int | None, rel_level: int, no_pairs: str = "zero") -> pl.Expr:
    """AUROC@k from the relevant documents in the top k and the sum of their ranks."""
    check_cutoff(k, "AUROC")
    rank_sum = f.sum_to_rank(pl.when(f.hit(rel_level)).then(f.rank).otherwise(0.0), k)
    return _auroc(f.hits(rel_level, k), _top(f, k), rank_sum, no_pairs)


# --------------------------------------------------------------------------- declarations

declare(
    "FallOut",
    lambda x, c: fall_out(optional_k(x), **columns(x, c)),
    "optional",
    REL,
    summary="share of the retrieved non-relevant documents in the top k (torchmetrics)",
    reads=reads_relevant,
    formula=lambda x, f: fall_out_formula(f, optional_k(x), x.rel_level(f.ctx)),
    aliases=("fallout", "fall_out", "retrievalfallout", "retrieval_fall_out"),
    better="lower",
    order=50,
)
NO_PAIRS = Param("no_pairs", str, "zero", ("zero", "skip"))
"""AUROC of a ranking with no (relevant, non-relevant) pair in its top k: 0
(torchmetrics) or null, left out of the mean (ir_measures' Accuracy)."""

declare(
    "AUROC",
    lambda x, c: auroc(optional_k(x), no_pairs=x.setting("no_pairs"), **columns(x, c)),
    "optional",
    REL,
    NO_PAIRS,
    INPUT_TIES,
    summary="area under the ROC curve of the top k (torchmetrics RetrievalAUROC; "
    "ir_measures Accuracy)",
    reads=reads_relevant,
    formula=lambda x, f: auroc_formula(f, optional_k(x), x.rel_level(f.ctx), x.setting("no_pairs")),
    aliases=("auroc", "retrievalauroc", "retrieval_auroc"),
    presets={"accuracy": "AUROC(no_pairs=skip)"},
    bounds=UNIT,
    order=51,
)
