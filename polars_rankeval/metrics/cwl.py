r"""C/W/L measures as ir_measures gets them from cwl_eval: ``SDCG@k``, ``INSQ``, ``INST``,
``BPM@k``, ``NERR8@k``, ``NERR9@k``, ``NERR10``, ``NERR11``.

In the C/W/L framework (Moffat et al.; Azzopardi, Thomas and Moffat, SIGIR 2019)
a user reads rank 1 and goes on from rank i to rank i+1 with probability C(i).
The chance of reading rank i is :math:`P(i) = \prod_{j<i} C(j)`, and a
measure is the expected gain per document read:

.. math:: EU = \frac{\sum_{i=1}^{N} P(i) \, g_i}{\sum_{i=1}^{N} P(i)}

Conventions of cwl_eval as ir_measures calls it
(``ir_measures/providers/cwl_eval.py``):

* gain of a judged document of grade r: negative grades count as 0, then
  :math:`g = (\mathrm{clip}(r, r_{min}, r_{max}) - r_{min}) / (r_{max} - r_{min})`
  in [0, 1] (``min_rel``, default 0, and ``max_rel``, required); an unjudged
  document has gain 0;
* every document costs 1;
* the ranking is cut or padded with gain-0 documents to N = 1000 ranks
  (``RankingMaker(max_n=1000)``): ranks past 1000 are not read, and the
  sums run to 1000 even for a shorter ranking.

Each measure has a plain aggregation (``build``: the gain of every rank
1..N, the C vector and the sums above, as cwl_eval computes them) and an
engine formula over the judged rows only: the unjudged ranks have gain 0,
so the products and sums over them telescope into closed forms.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from polars_rankeval._typing import IntoExpr
from polars_rankeval.catalogue import (
    INPUT_TIES,
    Context,
    CutoffRule,
    Measure,
    Param,
    declare,
    optional_k,
    required_k,
)
from polars_rankeval.engine.shape import RANK, RANKING
from polars_rankeval.metrics._common import check_cutoff, check_probability, col, log2

if TYPE_CHECKING:
    from polars_rankeval.engine.features import Built, Features

CWL_DEPTH = 1000
"""cwl_eval's ranking length (``max_n``): ranks past it are not read."""
CWL_MIN_REL = 0
"""The default ``min_rel``: the grade of gain 0."""
CWL_GOAL = 1.0
"""The default ``T`` of INSQ, INST, BPM and NERR11: the gain the user wants."""
NERR_P = 0.9
"""The default persistence ``p`` of NERR10."""


def check_cwl(measure: str, min_rel: int, max_rel: int | None, T: float | None = None) -> None:  # noqa: N803
    """Raise unless ``max_rel`` is given and above ``min_rel`` (and T is a number)."""
    if max_rel is None:
        msg = f"{measure} needs max_rel, the highest grade, e.g. {measure}(max_rel=3)."
        raise ValueError(msg)
    for name, value in (("min_rel", min_rel), ("max_rel", max_rel)):
        if isinstance(value, bool) or not isinstance(value, int):
            msg = f"{name} of {measure} must be an int. Got {value!r} instead."
            raise ValueError(msg)
    if min_rel >= max_rel:
        msg = f"min_rel of {measure} must be below max_rel. Got {min_rel} and {max_rel}."
        raise ValueError(msg)
    if T is not None and (isinstance(T, bool) or not isinstance(T, int | float) or T != T):
        msg = f"T of {measure} must be a number. Got {T!r} instead."
        raise ValueError(msg)


def cwl_gain(grade: pl.Expr, min_rel: int, max_rel: int) -> pl.Expr:
    """The gain of a grade in [0, 1], as ir_measures scales it for cwl_eval (0 when null).

    The values are looked up in a table computed by Python, as ir_measures
    divides (Polars divides a column by a scalar as a product with its
    reciprocal, an ulp away, and BPM compares sums of gains with T).

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"g": [None, -2, 0, 1, 3, 5]})
    >>> df.select(cwl_gain(pl.col("g"), 0, 3)).to_series().to_list()
    [0.0, 0.0, 0.0, 0.3333333333333333, 1.0, 1.0]
    """
    table = {r: (r - min_rel) / (max_rel - min_rel) for r in range(min_rel, max_rel + 1)}
    clipped = grade.clip(lower_bound=0).clip(lower_bound=min_rel, upper_bound=max_rel)
    return clipped.replace_strict(table, return_dtype=pl.Float64).fill_null(0.0)


def lowest_gained_grade(min_rel: int) -> float:
    """The lowest grade with a positive gain (``reads``): every judged one when min_rel < 0."""
    return float(min_rel + 1) if min_rel >= 0 else -math.inf


# ---------------------------------------------------------------------- plain aggregations


def _dense_gains(rank: IntoExpr, relevance: IntoExpr, min_rel: int, max_rel: int) -> pl.Expr:
    """The gain at each rank 1..N of the query's ranking (0 where nothing or unjudged)."""
    r = col(rank)
    keep = r.is_not_null() & (r <= CWL_DEPTH)
    gain = cwl_gain(col(relevance), min_rel, max_rel)
    ranks = r.filter(keep).cast(pl.Int64).sort().append(pl.lit(CWL_DEPTH + 1, pl.Int64))
    gains = gain.filter(keep).sort_by(r.filter(keep)).append(pl.lit(0.0))
    at = ranks.search_sorted(_ranks())
    return pl.when(ranks.gather(at) == _ranks()).then(gains.gather(at)).otherwise(0.0)


def _ranks() -> pl.Expr:
    """1, 2, ..., N as Float64."""
    return pl.int_range(1, CWL_DEPTH + 1, dtype=pl.Int64).cast(pl.Float64)


def _expected_utility(continuation: pl.Expr, gains: pl.Expr) -> pl.Expr:
    """EU from the C vector and the gains at ranks 1..N (cwl_eval's ``_do_score``)."""
    reach = continuation.shift(1, fill_value=1.0).cum_prod()
    return ((reach * gains).sum() / reach.sum()).cast(pl.Float64)


def _plain(
    continuation: Callable[[pl.Expr, pl.Expr], pl.Expr],
    rank: IntoExpr,
    relevance: IntoExpr,
    min_rel: int,
    max_rel: int,
) -> pl.Expr:
    """A C/W/L measure whose C vector is ``continuation(i, gains)`` over ranks i = 1..N."""
    gains = _dense_gains(rank, relevance, min_rel, max_rel)
    return _expected_utility(continuation(_ranks(), gains), gains)


def _insq_c(i: pl.Expr, T: float) -> pl.Expr:  # noqa: N803
    return ((i + 2.0 * T - 1.0) / (i + 2.0 * T)).pow(2)


def sdcg(
    k: int,
    *,
    min_rel: int = CWL_MIN_REL,
    max_rel: int | None = None,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
) -> pl.Expr:
    r"""Scaled DCG at k (ir_measures ``SDCG(max_rel=..)@k``, cwl_eval ``NDCG-k@k``).

    .. math:: SDCG@k = \frac{\sum_{i \le k} g_i / \log_2(i+1)}{\sum_{i \le k} 1 / \log_2(i+1)}

    DCG divided by that of k documents of full gain (as if k fully relevant
    documents existed), with the C/W/L gains (see the module).

    References
    ----------
    Järvelin and Kekäläinen, "Cumulated gain-based evaluation of IR techniques",
    ACM TOIS 20(4), 2002; cwl_eval ``cwl/ruler/measures/cwl_dcg.py``.

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2], "relevance": [0, 2]})
    >>> value = judged.select(sdcg(2, max_rel=2)).item()
    >>> abs(value - (1 / math.log2(3)) / (1 + 1 / math.log2(3))) < 1e-15
    True
    """
    check_cutoff(k, "SDCG", allow_none=False)
    check_cwl("SDCG", min_rel, max_rel)
    assert max_rel is not None

    def c(i: pl.Expr, gains: pl.Expr) -> pl.Expr:
        return pl.when(i < k).then(log2(i + 1.0) / log2(i + 2.0)).otherwise(0.0)

    return _plain(c, rank, relevance, min_rel, max_rel)


def insq(
    T: float = CWL_GOAL,  # noqa: N803
    *,
    min_rel: int = CWL_MIN_REL,
    max_rel: int | None = None,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
) -> pl.Expr:
    r"""INSQ (ir_measures ``INSQ(T=..,max_rel=..)``), a C/W/L measure.

    .. math:: C(i) = \left(\frac{i + 2T - 1}{i + 2T}\right)^2, \qquad
              P(i) = \left(\frac{2T}{i - 1 + 2T}\right)^2

    T is the gain the user wants; the chance of going on does not depend on
    the gains found.

    References
    ----------
    Moffat, Scholer and Thomas, "Models and metrics: IR evaluation as a user
    process", ADCS 2012; cwl_eval ``cwl/ruler/measures/cwl_insq.py``.

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1], "relevance": [1]})
    >>> weights = [(2 / (i + 1)) ** 2 for i in range(1, 1001)]  # P(i), T = 1
    >>> abs(judged.select(insq(max_rel=1)).item() - 1 / sum(weights)) < 1e-12
    True
    """
    check_cwl("INSQ", min_rel, max_rel, T)
    check_positive_t("INSQ", T)
    assert max_rel is not None
    return _plain(lambda i, g: _insq_c(i, T), rank, relevance, min_rel, max_rel)


def inst(
    T: float = CWL_GOAL,  # noqa: N803
    *,
    min_rel: int = CWL_MIN_REL,
    max_rel: int | None = None,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
) -> pl.Expr:
    r"""INST (ir_measures ``INST(T=..,max_rel=..)``), an adaptive C/W/L measure.

    .. math:: C(i) = \left(\frac{i + T + T_i - 1}{i + T + T_i}\right)^2, \qquad
              T_i = T - \sum_{j \le i} g_j

    The user wants gain T and is the more likely to stop the more of it the
    ranking has given.

    References
    ----------
    Moffat, Bailey, Scholer and Thomas, "INST: an adaptive metric for
    information retrieval evaluation", ADCS 2015; cwl_eval
    ``cwl/ruler/measures/cwl_inst.py``.

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1], "relevance": [1]})  # then P(i) = 1 / i^2
    >>> value = judged.select(inst(max_rel=1)).item()
    >>> abs(value - 1 / sum(1 / i**2 for i in range(1, 1001))) < 1e-12
    True
    """
    check_cwl("INST", min_rel, max_rel, T)
    check_positive_t("INST", T)
    assert max_rel is not None

    def c(i: pl.Expr, gains: pl.Expr) -> pl.Expr:
        a = i + 2.0 * T - gains.cum_sum()
        return ((a - 1.0) / a).pow(2)

    return _plain(c, rank, relevance, min_rel, max_rel)


def bpm(
    k: int,
    T: float = CWL_GOAL,  # noqa: N803
    *,
    min_rel: int = CWL_MIN_REL,
    max_rel: int | None = None,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
) -> pl.Expr:
    r"""The static Bejeweled Player Model (ir_measures ``BPM(T=..,max_rel=..)@k``).

    .. math:: C(i) = [\, i < k \text{ and } \sum_{j \le i} g_j < T \,]

    The user reads on until k documents are read or gain T is collected, and
    the value is the mean gain of the documents read: :math:`\sum_{i \le s}
    g_i / s` with s the rank where the user stops.

    References
    ----------
    Zhang, Liu, Li, Zhang, Xu and Ma, "Evaluating web search with a bejeweled
    player model", SIGIR 2017; cwl_eval ``cwl/ruler/measures/cwl_bpm.py``
    (``BPMCWLMetric``).

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, 3], "relevance": [0, 1, 1]})
    >>> judged.select(bpm(10, T=1.0, max_rel=1)).item()  # stops at rank 2
    0.5
    """
    check_cutoff(k, "BPM", allow_none=False)
    check_cwl("BPM", min_rel, max_rel, T)
    assert max_rel is not None

    def c(i: pl.Expr, gains: pl.Expr) -> pl.Expr:
        return ((gains.cum_sum() < T) & (i < k)).cast(pl.Float64)

    return _plain(c, rank, relevance, min_rel, max_rel)


def nerr(
    equation: int,
    k: int | None = None,
    *,
    p: float = NERR_P,
    T: float = CWL_GOAL,  # noqa: N803
    min_rel: int = CWL_MIN_REL,
    max_rel: int | None = None,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
) -> pl.Expr:
    r"""Not (but nearly) ERR, equation 8, 9, 10 or 11 (ir_measures ``NERR8@k``, ``NERR9@k``,
    ``NERR10(p=..)``, ``NERR11(T=..)``, each with ``max_rel``).

    C/W/L versions of ERR: the user stops at rank i with probability
    :math:`g_i`, times a truncation or patience factor:

    .. math::
        C_8(i) &= [i < k] (1 - g_i) \\
        C_9(i) &= [i < k] \tfrac{i}{i+1} (1 - g_i) \\
        C_{10}(i) &= p (1 - g_i) \\
        C_{11}(i) &= \left(\tfrac{i + 2T - 1}{i + 2T}\right)^2 (1 - g_i)

    References
    ----------
    Azzopardi, Mackenzie and Moffat, "ERR is not C/W/L: exploring the
    relationship between expected reciprocal rank and other metrics", ICTIR
    2021; cwl_eval ``cwl/ruler/measures/cwl_nerr.py``.

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2], "relevance": [1, 2]})  # gains 1/2, 1
    >>> judged.select(nerr(8, 2, max_rel=2)).item() == (0.5 + 0.5 * 1) / (1 + 0.5)
    True
    """
    check_cwl(f"NERR{equation}", min_rel, max_rel, T)
    check_nerr(equation, k, p, T)
    assert max_rel is not None
    cut = k or 0

    def c(i: pl.Expr, gains: pl.Expr) -> pl.Expr:
        stay = 1.0 - gains
        if equation == 8:
            return pl.when(i < cut).then(stay).otherwise(0.0)
        if equation == 9:
            return pl.when(i < cut).then(i / (i + 1.0) * stay).otherwise(0.0)
        if equation == 10:
            return p * stay
        return _insq_c(i, T) * stay

    return _plain(c, rank, relevance, min_rel, max_rel)


def check_positive_t(measure: str, T: float) -> None:  # noqa: N803
    """Raise unless T > 0 (INSQ, INST, NERR11 divide by sums with 2T)."""
    if not T > 0:
        msg = f"T of {measure} must be > 0. Got {T!r} instead."
        raise ValueError(msg)


def check_nerr(equation: int, k: int | None, p: float, T: float = CWL_GOAL) -> None:  # noqa: N803
    """Raise unless NERR8/9 have a cutoff, NERR10 a persistence in [0, 1], NERR11 a T > 0."""
    if equation not in (8, 9, 10, 11):
        msg = f"NERR is defined by equation 8, 9, 10 or 11. Got {equation!r}."
        raise ValueError(msg)
    if equation in (8, 9):
        check_cutoff(k, f"NERR{equation}", allow_none=False)
    if equation == 10:
        check_probability(p, "persistence p", "NERR10")
    if equation == 11:
        check_positive_t("NERR11", T)


# ---------------------------------------------------------------------- formulas
# The same measures over the engine's features (see polars_rankeval.engine.features):
# only the judged rows of positive gain are read; the ranks between them have gain 0.


def _gain(f: Features, min_rel: int, max_rel: int) -> pl.Expr:
    return f.row(cwl_gain(f.grade, min_rel, max_rel))


def _at_rank(f: Features, key: str, table: np.ndarray) -> pl.Expr:
    """Row-level: ``table[rank]`` (ranks past the table's end read its last value)."""

    def lookup(built: Built) -> pl.Series:
        ranks = np.minimum(built.rows[RANK].to_numpy().astype(np.int64), len(table) - 1)
        return pl.Series(table[ranks], dtype=pl.Float64)

    return f.row_function(key, lookup)


def _weighted(
    f: Features, key: str, gain: pl.Expr, weights: np.ndarray, *, cascade: bool
) -> pl.Expr:
    r"""EU when :math:`P(i) = w_i Q(i)` for i <= K and 0 after, ``weights`` = w_1..w_K.

    Without ``cascade``, Q = 1: EU = sum w_r g_r / S_K (S the partial sums of
    w). With it, :math:`Q(i) = \prod_{j<i} (1 - g_j)` changes only at rows of
    positive gain, and :math:`\sum_i P(i) = S_K - \sum_r Q(r) g_r (S_K - S_r)`.
    """
    depth = len(weights)
    w = np.concatenate([[0.0], weights])
    sums = np.cumsum(w)
    weight = _at_rank(f, f"cwl_w|{key}", w)
    top = f.in_top(depth)
    if not cascade:
        total = f.sum(pl.when(top).then(weight * gain).otherwise(0.0))
        return (total / f.constant(float(sums[-1]))).cast(pl.Float64)
    reach = f.row((1.0 - gain).cum_prod().shift(1, fill_value=1.0).over(RANKING))
    partial = _at_rank(f, f"cwl_s|{key}", sums)
    total = f.sum(pl.when(top).then(weight * reach * gain).otherwise(0.0))
    lost = f.sum(pl.when(top).then(reach * gain * (sums[-1] - partial)).otherwise(0.0))
    return (total / (f.constant(float(sums[-1])) - lost)).cast(pl.Float64)


def _ranks_to(k: int) -> np.ndarray:
    return np.arange(1, min(k, CWL_DEPTH) + 1, dtype=np.float64)


def _reach_of(continuation: np.ndarray) -> np.ndarray:
    """P(i) from a C vector, as cwl_eval multiplies it out."""
    return np.cumprod(np.concatenate([[1.0], continuation[:-1]]))


def sdcg_formula(f: Features, k: int, min_rel: int, max_rel: int) -> pl.Expr:
    """SDCG@k over the engine's features (see :func:`sdcg`)."""
    check_cutoff(k, "SDCG", allow_none=False)
    check_cwl("SDCG", min_rel, max_rel)
    i = _ranks_to(k)
    weights = 1.0 / np.array([math.log2(x + 1.0) for x in i])
    return _weighted(f, f"sdcg|{k}", _gain(f, min_rel, max_rel), weights, cascade=False)


def insq_formula(f: Features, T: float, min_rel: int, max_rel: int) -> pl.Expr:  # noqa: N803
    """INSQ over the engine's features (see :func:`insq`)."""
    check_cwl("INSQ", min_rel, max_rel, T)
    check_positive_t("INSQ", T)
    i = _ranks_to(CWL_DEPTH)
    weights = _reach_of(((i + 2.0 * T - 1.0) / (i + 2.0 * T)) ** 2)
    return _weighted(f, f"insq|{T!r}", _gain(f, min_rel, max_rel), weights, cascade=False)


def nerr_formula(
    f: Features,
    equation: int,
    k: int | None,
    p: float,
    T: float,  # noqa: N803
    min_rel: int,
    max_rel: int,
) -> pl.Expr:
    """NERR8-11 over the engine's features (see :func:`nerr`)."""
    check_cwl(f"NERR{equation}", min_rel, max_rel, T)
    check_nerr(equation, k, p, T)
    i = _ranks_to(k if equation in (8, 9) and k is not None else CWL_DEPTH)
    if equation == 8:
        weights = np.ones_like(i)
    elif equation == 9:
        weights = _reach_of(i / (i + 1.0))
    elif equation == 10:
        weights = _reach_of(np.full_like(i, p))
    else:
        weights = _reach_of(((i + 2.0 * T - 1.0) / (i + 2.0 * T)) ** 2)
    key = f"nerr{equation}|{k}|{p!r}|{T!r}"
    return _weighted(f, key, _gain(f, min_rel, max_rel), weights, cascade=True)


def bpm_formula(f: Features, k: int, T: float, min_rel: int, max_rel: int) -> pl.Expr:  # noqa: N803
    """BPM@k over the engine's features (see :func:`bpm`).

    The user stops at s = min(k, N, the first rank where the gain so far
    reaches T); the value is the gain down to s over s.
    """
    check_cutoff(k, "BPM", allow_none=False)
    check_cwl("BPM", min_rel, max_rel, T)
    last = float(min(k, CWL_DEPTH))
    gain = _gain(f, min_rel, max_rel)
    if T <= 0:  # the gain so far (>= 0) reaches T at rank 1
        return f.sum_to_rank(gain, 1) / f.constant(1.0)
    so_far = f.cum(gain)
    reached = so_far >= T
    stop = -f.max(pl.when(reached).then(-f.rank))
    gain_at_stop = -f.max(pl.when(reached).then(-so_far))
    early = stop.is_not_null() & (stop <= last)
    top = f.sum_to_rank(gain, last)
    value = pl.when(early).then(gain_at_stop / stop).otherwise(top / f.constant(last))
    return value.cast(pl.Float64)


def trigamma(expr: pl.Expr) -> pl.Expr:
    """The trigamma function :math:`\\psi_1(x) = \\sum_{n \\ge 0} 1 / (x + n)^2` (scipy)."""
    from scipy.special import polygamma  # imported when used: it takes a while to import

    return expr.cast(pl.Float64).map_batches(
        lambda s: pl.Series(s.name, polygamma(1, s.to_numpy()), dtype=pl.Float64),
        return_dtype=pl.Float64,
        is_elementwise=True,
    )


def inst_formula(f: Features, T: float, min_rel: int, max_rel: int) -> pl.Expr:  # noqa: N803
    r"""INST over the engine's features (see :func:`inst`).

    Between two rows of positive gain, :math:`c = 2T - G` is constant (G the
    gain so far) and the product telescopes: :math:`\prod_{j=s}^{e}
    \frac{j + c - 1}{j + c} = \frac{s + c - 1}{e + c}`. So after the row at
    rank r, :math:`\sqrt{P(i)} = 2T B / (i - 1 + c)` with B the product over
    the rows down to r of :math:`\frac{r - 1 + c_{after}}{r - 1 + c_{before}}`,
    and the sum of P(i) over the ranks r+1 .. e (e the next row's rank, or N)
    is :math:`(2T B)^2 (\psi_1(r + c) - \psi_1(e + c))`, :math:`\psi_1` the
    trigamma function.
    """
    check_cwl("INST", min_rel, max_rel, T)
    check_positive_t("INST", T)
    start = 2.0 * T
    top = f.in_top(CWL_DEPTH)
    gain = f.row(pl.when(top).then(cwl_gain(f.grade, min_rel, max_rel)).otherwise(0.0))
    after = f.row(start - f.cum(gain))
    before = f.row(after + gain)
    rank = f.rank
    step = f.row((rank - 1.0 + after) / (rank - 1.0 + before))
    scale = f.row(start * step.cum_prod().over(RANKING))
    scale_before = f.row(start * step.cum_prod().shift(1, fill_value=1.0).over(RANKING))
    reach = (scale_before / (rank - 1.0 + before)).pow(2)
    following = pl.col(RANK).shift(-1).over(RANKING).cast(pl.Float64)
    end = f.row(following.fill_null(float(CWL_DEPTH)).clip(upper_bound=float(CWL_DEPTH)))
    tail = scale.pow(2) * (trigamma(rank + after) - trigamma(end + after))
    first = (-f.max(-rank)).fill_null(float(CWL_DEPTH)).clip(upper_bound=float(CWL_DEPTH))
    head = start**2 * (trigamma(f.constant(start)) - trigamma(first + start))
    total = f.sum(pl.when(top).then(reach * gain).otherwise(0.0))
    mass = head + f.sum(pl.when(top).then(tail).otherwise(0.0))
    return (total / mass).cast(pl.Float64)


# --------------------------------------------------------------------------- declarations

# The C/W/L measures ir_measures gets from cwl_eval (metrics/cwl.py): gains are the
# grades scaled from [min_rel, max_rel] to [0, 1]; max_rel has no default, as there.
CWL_PARAMS = (Param("min_rel", int, CWL_MIN_REL), Param("max_rel", int), INPUT_TIES)
GOAL = Param("T", float, CWL_GOAL)


def _cwl(x: Measure) -> dict[str, Any]:
    """min_rel and max_rel of a C/W/L measure."""
    return {"min_rel": x.setting("min_rel"), "max_rel": x.get("max_rel")}


def _cwl_reads(x: Measure, c: Context) -> float:
    """``reads`` of a C/W/L measure: the grades with a positive gain."""
    return lowest_gained_grade(x.setting("min_rel"))


declare(
    "SDCG",
    lambda x, c: sdcg(required_k(x), **_cwl(x), rank=c.rank, relevance=c.relevance),
    "required",
    *CWL_PARAMS,
    summary="scaled DCG: DCG over that of k documents of full gain (cwl_eval, C/W/L)",
    reads=_cwl_reads,
    formula=lambda x, f: sdcg_formula(f, required_k(x), **_cwl(x)),
    order=40,
)
declare(
    "INSQ",
    lambda x, c: insq(x.setting("T"), **_cwl(x), rank=c.rank, relevance=c.relevance),
    "none",
    GOAL,
    *CWL_PARAMS,
    summary="INSQ: C/W/L measure of a user who wants gain T (Moffat et al. 2012; cwl_eval)",
    reads=_cwl_reads,
    formula=lambda x, f: insq_formula(f, x.setting("T"), **_cwl(x)),
    order=41,
)
declare(
    "INST",
    lambda x, c: inst(x.setting("T"), **_cwl(x), rank=c.rank, relevance=c.relevance),
    "none",
    GOAL,
    *CWL_PARAMS,
    summary="INST: INSQ adapting to the gain found so far (Moffat et al. 2015; cwl_eval)",
    reads=_cwl_reads,
    formula=lambda x, f: inst_formula(f, x.setting("T"), **_cwl(x)),
    order=42,
)
declare(
    "BPM",
    lambda x, c: bpm(required_k(x), x.setting("T"), **_cwl(x), rank=c.rank, relevance=c.relevance),
    "required",
    GOAL,
    *CWL_PARAMS,
    summary="static Bejeweled Player Model: read until k documents or gain T (cwl_eval)",
    reads=_cwl_reads,
    formula=lambda x, f: bpm_formula(f, required_k(x), x.setting("T"), **_cwl(x)),
    order=43,
)


def _declare_nerr(equation: int, cutoff: CutoffRule, extra: tuple[Param, ...], what: str) -> None:
    """Register NERR8 .. NERR11 (one C vector each, metrics/cwl.py ``nerr``)."""

    def build(x: Measure, c: Context) -> pl.Expr:
        p, t = x.get("p", NERR_P), x.get("T", CWL_GOAL)
        return nerr(
            equation, optional_k(x), p=p, T=t, **_cwl(x), rank=c.rank, relevance=c.relevance
        )

    def formula(x: Measure, f: Features) -> pl.Expr:
        p, t = x.get("p", NERR_P), x.get("T", CWL_GOAL)
        return nerr_formula(f, equation, optional_k(x), p, t, **_cwl(x))

    summary = f"not (but nearly) ERR, equation {equation}: {what} (cwl_eval)"
    declare(f"NERR{equation}", build, cutoff, *extra, *CWL_PARAMS, summary=summary,
            reads=_cwl_reads, formula=formula, order=36 + equation)  # fmt: skip


_declare_nerr(8, "required", (), "truncated at k")
_declare_nerr(9, "required", (), "truncated at k, discounted")
_declare_nerr(10, "none", (Param("p", float, NERR_P),), "with persistence p")
_declare_nerr(11, "none", (GOAL,), "with INST's goal T")
