"""User-model measures beyond trec_eval: expected reciprocal rank, rank-biased precision."""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from polars_rankeval._typing import IntoExpr
from polars_rankeval.catalogue import (
    INPUT_TIES,
    NON_NEGATIVE,
    REL,
    UNIT,
    Param,
    columns,
    declare,
    optional_k,
    reads_gained,
    reads_relevant,
)
from polars_rankeval.engine.shape import GRADE, RANKING, SCORED
from polars_rankeval.metrics._common import (
    check_cutoff,
    check_probability,
    col,
    in_top,
    judged,
    relevant_retrieved,
    retrieved,
)
from polars_rankeval.metrics.cwl import CWL_DEPTH

if TYPE_CHECKING:
    from polars_rankeval.catalogue import Measure
    from polars_rankeval.engine.features import Built, Features


RBP_P = 0.8
"""The default persistence ``p`` of RBP and its residual (Moffat and Zobel's example)."""


def err(
    k: int | None = None,
    *,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
    max_grade: int | None = None,
) -> pl.Expr:
    r"""Expected reciprocal rank at k (``ERR@k``).

    .. math:: ERR@k = \sum_{i=1}^{k} \frac{1}{i} R_i \prod_{j<i} (1 - R_j), \quad
              R_i = \frac{2^{g_i} - 1}{2^{g_{max}}}

    where :math:`g_i` is the grade at rank i (0 when unjudged or negative) and
    :math:`g_{max}` is ``max_grade``, by default the highest grade in the
    query's qrels. A cascade model: the user stops at rank i with probability
    :math:`R_i`.

    References
    ----------
    Chapelle, Metzler, Zhang and Grinspan, "Expected reciprocal rank for graded
    relevance", CIKM 2009.

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, None], "relevance": [1, 2, 2]})
    >>> r1, r2 = 1 / 4, 3 / 4
    >>> judged.select(err(2)).item() == r1 + (1 - r1) * r2 / 2
    True
    """
    check_cutoff(k, "ERR")
    check_max_grade(max_grade)
    g = col(relevance).cast(pl.Float64).clip(lower_bound=0.0).fill_null(0.0)
    top = pl.lit(float(max_grade)) if max_grade is not None else g.max()
    gain = (pl.lit(2.0).pow(g) - 1.0) / pl.lit(2.0).pow(top)
    stop = pl.when(in_top(rank, k)).then(gain).otherwise(0.0)
    reach = (1.0 - stop).cum_prod().shift(1, fill_value=1.0)
    value = (stop * reach / col(rank).cast(pl.Float64)).filter(in_top(rank, k)).sum()
    return value.fill_nan(0.0).cast(pl.Float64)


def rbp(
    p: float = RBP_P,
    *,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
    rel_level: int = 1,
    graded: bool = False,
    depth: int | None = None,
) -> pl.Expr:
    r"""Rank-biased precision (``RBP(p=...)``), binary relevance or graded.

    .. math:: RBP = (1 - p) \sum_{i} rel_i \, p^{i - 1}

    where :math:`rel_i` is 1 when the document at rank i has grade >=
    ``rel_level`` and p is the persistence (the chance the user reads on).
    Unjudged documents count as non-relevant; :func:`rbp_residual` bounds what
    they could add.

    ``graded=True`` (``RBP(gain=linear)``) takes :math:`rel_i` = the grade
    itself for grades >= ``rel_level`` (0 below), as ranx's ``rbp.95``
    (``ranx/metrics/rank_biased_precision.py``: its docstring says 0 or 1, its
    code weighs each hit by its qrels grade). Grades are not divided by the
    highest grade, unlike trec_eval 10's ``rbp`` (:func:`trec_rbp`), so the
    value can exceed 1.

    ``depth`` (D): a user who reads at most D ranks, as cwl_eval models one (its
    ``RankingMaker(max_n=1000)`` and the C/W/L weights, which sum to 1 over the D
    ranks): :math:`RBP = \frac{1 - p}{1 - p^D} \sum_{i \le D} rel_i \, p^{i-1}`.
    ``RBP(ties=input)`` reads the run as cwl_eval does, which serves RBP in
    ir_measures (the preset ``conventions="ir_measures"`` sets it): equal scores in
    the run's row order, D = 1,000.

    References
    ----------
    Moffat and Zobel, "Rank-biased precision for measurement of retrieval
    effectiveness", ACM TOIS 27(1), 2008.

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, 3], "relevance": [1, 0, 1]})
    >>> judged.select(rbp(0.5)).item() == 0.5 * (1 + 0.25)
    True
    >>> graded = pl.DataFrame({"rank": [1, 2, 3], "relevance": [2, 0, 3]})
    >>> graded.select(rbp(0.5, graded=True)).item() == 0.5 * (2 + 3 * 0.25)
    True
    """
    check_probability(p, "persistence p", "RBP")
    weight = pl.lit(p, pl.Float64).pow(col(rank).cast(pl.Float64) - 1.0)
    if graded:
        weight = weight * col(relevance).cast(pl.Float64)
    read = relevant_retrieved(rank, relevance, rel_level) & in_top(rank, depth)
    value = weight.filter(read).sum()
    return (_rbp_scale(p, depth) * value).cast(pl.Float64)


def _rbp_scale(p: float, depth: int | None) -> float:
    """``1 - p``, over the weight of the first ``depth`` ranks when the user reads no
    further (cwl_eval's weights, which sum to 1 over them).

    >>> _rbp_scale(0.5, None), _rbp_scale(0.5, 2)
    (0.5, 0.6666666666666666)
    """
    if depth is None:
        return 1.0 - p
    return 1.0 / depth if p == 1.0 else (1.0 - p) / (1.0 - p**depth)


def rbp_residual(
    p: float = RBP_P, *, rank: IntoExpr = "rank", relevance: IntoExpr = "relevance"
) -> pl.Expr:
    r"""The residual of RBP: the most that unjudged documents could add (``RBPResid``).

    .. math:: RBP_{res} = (1 - p) \sum_{i \in U} p^{i - 1} + p^{n}

    where U are the ranks of the unjudged retrieved documents (no qrels row, or
    a negative grade) and n is the length of the ranking: the weight of the
    unjudged documents plus that of every rank past the end. RBP lies in
    :math:`[RBP, RBP + RBP_{res}]`.

    References
    ----------
    Moffat and Zobel, "Rank-biased precision for measurement of retrieval
    effectiveness", ACM TOIS 27(1), 2008.

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, 3], "relevance": [1, None, 0]})
    >>> judged.select(rbp_residual(0.5)).item() == 0.5 * 0.5 + 0.5**3
    True
    """
    check_probability(p, "persistence p", "RBP")
    ret = retrieved(rank)
    weight = pl.lit(p, pl.Float64).pow(col(rank).cast(pl.Float64) - 1.0)
    unjudged = weight.filter(ret & ~judged(relevance)).sum()
    tail = pl.lit(p, pl.Float64).pow(ret.sum().cast(pl.Float64))
    return ((1.0 - p) * unjudged + tail).cast(pl.Float64)


# ---------------------------------------------------------------------- formulas
# The same measures over the engine's features (see polars_rankeval.engine.features).


def check_max_grade(max_grade: int | None) -> None:
    """Raise unless ``max_grade`` is None or an int >= 1."""
    if max_grade is not None and (
        isinstance(max_grade, bool) or not isinstance(max_grade, int) or max_grade < 1
    ):
        msg = f"max_grade of ERR must be an int >= 1 (the highest grade). Got {max_grade!r}."
        raise ValueError(msg)


def err_formula(f: Features, k: int | None, max_grade: int | None) -> pl.Expr:
    """ERR@k over the engine's features (see :func:`err`).

    With ``max_grade``, a query whose qrels hold a higher grade is an error: its
    stopping probabilities would exceed 1.
    """
    check_max_grade(max_grade)
    g = f.grade.cast(pl.Float64).clip(lower_bound=0.0)
    if max_grade is not None:
        top = f.on_rows(f.constant(float(max_grade)))
        highest = f.judgments(pl.col(GRADE).max()).meta.output_name()

        def refuse_higher_grades(built: Built) -> pl.Series:
            grade = built.per_ranking.filter(SCORED)[highest].max()
            if isinstance(grade, int | float) and grade > max_grade:
                msg = (
                    f"ERR(max_grade={max_grade}) but the qrels hold grade {grade}: "
                    f"pass a max_grade of at least {grade}."
                )
                raise ValueError(msg)
            return pl.Series([0.0] * built.per_ranking.height)

        f.late(f"max_grade|{max_grade}", refuse_higher_grades)
    else:
        top = f.on_rows(f.judgments(pl.col(GRADE).max()).cast(pl.Float64).clip(lower_bound=0.0))
    stop = f.row(
        pl.when(f.in_top(k)).then((pl.lit(2.0).pow(g) - 1.0) / pl.lit(2.0).pow(top)).otherwise(0.0)
    )
    reach = f.row((1.0 - stop).cum_prod().shift(1, fill_value=1.0).over(RANKING))
    value = f.sum(pl.when(f.in_top(k)).then(stop * reach / f.rank).otherwise(0.0))
    return value.fill_nan(0.0).cast(pl.Float64)


def rbp_formula(f: Features, p: float, rel_level: int, *, graded: bool = False,
                depth: int | None = None) -> pl.Expr:  # fmt: skip
    """RBP over the engine's features (see :func:`rbp`)."""
    check_probability(p, "persistence p", "RBP")
    weight = pl.lit(p, pl.Float64).pow(f.rank - 1.0)
    if graded:
        weight = weight * f.grade.cast(pl.Float64)
    value = f.sum(pl.when(f.hit(rel_level) & f.in_top(depth)).then(weight).otherwise(0.0))
    return (_rbp_scale(p, depth) * value).cast(pl.Float64)


def rbp_residual_formula(f: Features, p: float) -> pl.Expr:
    """RBPResid over the engine's features (see :func:`rbp_residual`).

    The weight of every retrieved rank plus that past the end is 1, so the
    residual is 1 less the weight of the judged documents retrieved.
    """
    check_probability(p, "persistence p", "RBP")
    weight = pl.lit(p, pl.Float64).pow(f.rank - 1.0)
    judged_weight = f.sum(pl.when(f.grade >= 0).then(weight).otherwise(0.0))
    return (1.0 - (1.0 - p) * judged_weight).cast(pl.Float64)


# --------------------------------------------------------------------------- declarations

declare(
    "ERR",
    lambda x, c: err(
        optional_k(x), rank=c.rank, relevance=c.relevance, max_grade=x.get("max_grade")
    ),
    "optional",
    Param("max_grade", int),
    summary="expected reciprocal rank (Chapelle et al. 2009)",
    reads=reads_gained,
    formula=lambda x, f: err_formula(f, optional_k(x), x.get("max_grade")),
    bounds=UNIT,
    aliases=("err",),
    order=29,
)


def _rbp_depth(measure: Measure) -> int | None:
    """The ranks RBP reads: cwl_eval's first 1,000 under ``ties=input``, else all."""
    return CWL_DEPTH if measure.get("ties") == "input" else None


declare(
    "RBP",
    lambda x, c: rbp(
        x.setting("p"), graded=x.get("gain") == "linear", depth=_rbp_depth(x), **columns(x, c)
    ),
    "none",
    REL,
    Param("p", float, RBP_P),
    Param("gain", str, "binary", ("binary", "linear")),
    INPUT_TIES,
    summary="rank-biased precision (Moffat and Zobel 2008); gain=linear: graded (ranx rbp.p)",
    reads=reads_relevant,
    formula=lambda x, f: rbp_formula(
        f,
        x.setting("p"),
        x.rel_level(f.ctx),
        graded=x.get("gain") == "linear",
        depth=_rbp_depth(x),
    ),
    bounds=lambda x: NON_NEGATIVE if x.get("gain") == "linear" else UNIT,
    fractional=lambda x: x.get("gain") == "linear",
    order=30,
)
declare(
    "RBPResid",
    lambda x, c: rbp_residual(x.setting("p"), rank=c.rank, relevance=c.relevance),
    "none",
    Param("p", float, RBP_P),
    summary="the residual of RBP: weight of unjudged and unretrieved ranks",
    formula=lambda x, f: rbp_residual_formula(f, x.setting("p")),
    bounds=UNIT,
    better="lower",
    order=31,
)
