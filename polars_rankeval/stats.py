r"""Significance tests, multiple-testing corrections, intervals and meta-evaluation.

Two layers, one computation:

- **Expressions** (:func:`paired_ttest`, :func:`wilcoxon`, :func:`randomization_test`,
  :func:`bootstrap_test`, :func:`mean_interval`, :func:`holm`, :func:`bonferroni`,
  :func:`benjamini_hochberg`, :func:`benjamini_yekutieli`, :func:`rank_correlation`)
  over the columns of a wide frame (one column per system). Each test returns a
  struct (``statistic``, ``p_value``, ``mean_diff``, ``effect_size``, ``n``) and
  works in ``select`` and in ``group_by(...).agg(...)``.
- **Matrix cores** (:func:`ttest_matrix`, :func:`wilcoxon_matrix`,
  :func:`randomization_matrix`, :func:`bootstrap_matrix`, :func:`tukey_hsd_matrix`,
  :func:`randomized_tukey_matrix`, :func:`interval_matrix`): numpy arrays of shape
  ``(n_queries, n_comparisons)`` (pairwise tests) or ``(n_queries, n_systems)``
  (the Tukey tests, which look at every system at once). The expressions call
  them with one column; :func:`polars_rankeval.compare` calls them with every
  comparison at once, so resampling tests cost one matrix product per block of
  resamples, whatever the number of systems and measures.

:data:`TESTS` and :data:`CORRECTIONS` are the one registry of tests and
corrections: :func:`~polars_rankeval.compare`, :func:`~polars_rankeval.report`
and the command line take their names and titles from there.

Pairs are rows: row i of ``a`` and row i of ``b`` are the same query. Differences
are ``d = a - b``, so a positive ``mean_diff`` means ``a`` scored higher.

Resampling is seeded: the sign flips (randomization), query resamples
(bootstrap) and per-query permutations (randomised Tukey) depend only on
``seed``, the shape of the data and ``n_resamples``, so an expression and a
:func:`~polars_rankeval.compare` row with the same seed give the same p-value.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, get_args

import numpy as np
import polars as pl

from polars_rankeval._typing import Aggregate, IntoExpr
from polars_rankeval.measures import MIN_GEO_MEAN, measure_better
from polars_rankeval.metrics._common import col
from polars_rankeval.validation import check_choice, check_int

Alternative: TypeAlias = Literal["two-sided", "greater", "less"]
IntervalKind: TypeAlias = Literal["normal", "t", "bootstrap", "bca"]
Test: TypeAlias = Literal[
    "t", "wilcoxon", "randomization", "bootstrap", "tukey", "randomized_tukey"
]
Correction: TypeAlias = Literal["none", "bonferroni", "holm", "bh", "by"]
RankMethod: TypeAlias = Literal["kendall", "tau_ap"]
Progress: TypeAlias = Callable[[int, int], None]
Arrays: TypeAlias = dict[str, np.ndarray]

RESAMPLE_BLOCK = 512
"""Resamples drawn per block (one matrix product each); fixed, so results do not
depend on how many comparisons share the work."""

RESAMPLE_BUDGET = 1 << 23
"""Values held per block of bootstrap resamples (64 MiB of float64 counts, as many draws):
``min(RESAMPLE_BLOCK, RESAMPLE_BUDGET // queries)`` resamples at a time."""

PERMUTE_BUDGET = 1 << 20
"""Values held per block of randomised Tukey permutations (8 MiB of float64):
``min(RESAMPLE_BLOCK, PERMUTE_BUDGET // (queries * systems))`` permutations at a
time, so memory does not grow with the number of permutations."""

TIE_TOLERANCE = 1e-10
"""A resampled statistic within ``TIE_TOLERANCE`` times the data's scale of the
observed one counts as equally extreme (floating-point sums of the same values in
another order); differences that agree to this relative tolerance count as equal."""

TEST_DTYPE = pl.Struct(
    {
        "statistic": pl.Float64,
        "p_value": pl.Float64,
        "mean_diff": pl.Float64,
        "effect_size": pl.Float64,
        "n": pl.UInt32,
    }
)
BOOTSTRAP_DTYPE = pl.Struct({**TEST_DTYPE.to_schema(), "ci_low": pl.Float64, "ci_high": pl.Float64})
INTERVAL_DTYPE = pl.Struct(
    {
        "mean": pl.Float64,
        "std": pl.Float64,
        "stderr": pl.Float64,
        "ci_low": pl.Float64,
        "ci_high": pl.Float64,
        "n": pl.UInt32,
        "clipped": pl.Boolean,
    }
)
_ALTERNATIVES: tuple[str, ...] = get_args(Alternative)


# --------------------------------------------------------------------- checks


def check_alternative(alternative: str) -> None:
    """Raise unless ``alternative`` is one of scipy's three."""
    check_choice("alternative", alternative, Alternative)


def check_level(level: float) -> None:
    """Raise unless ``0 < level < 1``."""
    if not 0.0 < level < 1.0:
        msg = f"level must be strictly between 0 and 1 (e.g. 0.95). Got {level!r} instead."
        raise ValueError(msg)


def check_resamples(n_resamples: int, seed: int | None = None) -> None:
    """Raise unless ``n_resamples`` is an int >= 1 and ``seed`` None or an int >= 0."""
    check_int("n_resamples", n_resamples, minimum=1)
    check_int("seed", seed, minimum=0, allow_none=True)


def check_interval(interval: str) -> None:
    """Raise unless ``interval`` is ``"normal"``, ``"t"``, ``"bootstrap"`` or ``"bca"``."""
    check_choice("interval", interval, IntervalKind)


def check_aggregate(aggregate: str) -> None:
    """Raise unless ``aggregate`` is ``"mean"``, ``"gmean"`` or ``"sum"``."""
    check_choice("aggregate", aggregate, Aggregate)


def check_test(test: str) -> StatTest:
    """The registered test called ``test`` (a ValueError listing the names otherwise)."""
    check_choice("test", test, TESTS)
    return TESTS[test]


def check_correction(correction: str) -> CorrectionMethod:
    """The registered correction called ``correction`` (a ValueError listing the names)."""
    check_choice("correction", correction, CORRECTIONS)
    return CORRECTIONS[correction]


def stderr_progress(label: str) -> Progress | None:
    """A progress printer on stderr when it is a terminal, else None (silent)."""
    if not sys.stderr.isatty():
        return None

    def report(done: int, total: int) -> None:
        end = "\n" if done >= total else ""
        print(f"\r{label}: {done}/{total}", end=end, file=sys.stderr, flush=True)

    return report


# ------------------------------------------------------------ matrix cores


def _as_matrix(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x[:, None] if x.ndim == 1 else x


def _scipy_stats() -> Any:
    from scipy import stats as sps  # imported on use: it is slow to import

    return sps


def transform(x: np.ndarray, aggregate: Aggregate) -> np.ndarray:
    r"""Per-query values on the scale a measure is tested on.

    ``"gmean"`` (GMAP, GMBpref): :math:`\ln \max(x, 10^{-5})`, since the geometric
    mean is the exponential of the mean log (trec_eval's floor of
    :data:`~polars_rankeval.measures.MIN_GEO_MEAN`); ``"mean"`` and ``"sum"``
    (a total is n times the mean): unchanged.

    Examples
    --------
    >>> transform(np.array([1.0, 0.0]), "gmean").round(4).tolist()  # ln 1, ln 1e-5
    [0.0, -11.5129]
    """
    check_aggregate(aggregate)
    x = np.asarray(x, dtype=np.float64)
    return np.log(np.maximum(x, MIN_GEO_MEAN)) if aggregate == "gmean" else x


def combine(x: np.ndarray, aggregate: Aggregate) -> np.ndarray:
    r"""Each column combined over its rows as trec_eval's ``all`` line does.

    ``"mean"``: :math:`\frac1n\sum_q x_q`; ``"gmean"``:
    :math:`\exp\big(\frac1n\sum_q \ln\max(x_q, 10^{-5})\big)`; ``"sum"``:
    :math:`\sum_q x_q`. NaN for a column without rows (except the sum, 0).

    Examples
    --------
    >>> combine(np.array([[0.25], [1.0]]), "gmean").tolist()  # sqrt(0.25 * 1)
    [0.5]
    """
    x = _as_matrix(x)
    if aggregate == "sum":
        return x.sum(axis=0)
    if x.shape[0] == 0:
        return np.full(x.shape[1], np.nan)
    mean = transform(x, aggregate).mean(axis=0)
    return np.exp(mean) if aggregate == "gmean" else mean


def diff_summary(a: np.ndarray, b: np.ndarray | float) -> Arrays:
    r"""Mean difference, Cohen's :math:`d_z` and n of paired columns.

    .. math:: d_z = \bar d / s_d

    where :math:`s_d` is the sample standard deviation (ddof=1) of the
    differences; NaN when the differences are all equal or n < 2.
    """
    d = _as_matrix(a) - (_as_matrix(b) if isinstance(b, np.ndarray) else b)
    n = d.shape[0]
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = d.sum(axis=0) / n if n else np.full(d.shape[1], np.nan)
        sd = d.std(axis=0, ddof=1) if n > 1 else np.full(d.shape[1], np.nan)
        effect = np.where(constant_columns(d), np.nan, mean / np.where(sd > 0, sd, 1.0))
    return {"mean_diff": mean, "effect_size": effect, "n": np.full(d.shape[1], n)}


def pair_summary(x: np.ndarray, ia: np.ndarray, ib: np.ndarray) -> Arrays:
    """:func:`diff_summary` of columns ``ia`` against ``ib`` of x, plus ``wins``
    (rows where a > b), ``ties`` and ``losses``; pairs taken a block at a time
    (at most ``PERMUTE_BUDGET`` values per array), so memory stays bounded
    whatever the number of pairs.

    Examples
    --------
    >>> x = np.array([[0.1, 0.3], [0.5, 0.5], [0.2, 0.6]])
    >>> out = pair_summary(x, np.array([1]), np.array([0]))
    >>> out["mean_diff"].round(4).tolist(), out["wins"].tolist(), out["ties"].tolist()
    ([0.2], [2], [1])
    """
    x = _as_matrix(x)
    n = x.shape[0]
    step = max(1, PERMUTE_BUDGET // max(1, n))
    parts = []
    for start in range(0, len(ia), step):
        a, b = x[:, ia[start : start + step]], x[:, ib[start : start + step]]
        counts = {"wins": (a > b).sum(axis=0), "ties": (a == b).sum(axis=0)}
        parts.append({**diff_summary(a, b), **counts, "losses": (a < b).sum(axis=0)})
    if not parts:
        empty = np.empty(0)
        keys = ("mean_diff", "effect_size", "n", "wins", "ties", "losses")
        return {key: empty.copy() for key in keys}
    return {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}


def constant_columns(d: np.ndarray) -> np.ndarray:
    """Columns that no variance-based test can judge: fewer than two rows, or all
    values equal up to ``TIE_TOLERANCE`` of their magnitude (rounding in ``a - b``).

    Examples
    --------
    >>> constant_columns(np.array([[0.3 - 0.2, 0.0], [0.2 - 0.1, 0.5]])).tolist()
    [True, False]
    """
    d = _as_matrix(d)
    if d.shape[0] < 2:
        return np.ones(d.shape[1], dtype=bool)
    spread = d.max(axis=0) - d.min(axis=0)
    return spread <= TIE_TOLERANCE * np.abs(d).max(axis=0)


def ttest_matrix(a: np.ndarray, b: np.ndarray, *, alternative: Alternative = "two-sided") -> Arrays:
    """Paired t-test per column: ``scipy.stats.ttest_rel(a, b, axis=0)`` plus summaries.

    Where the differences of a column are all equal (or n < 2), t is undefined
    (:math:`s_d = 0`): statistic and p-value are NaN, where scipy would give
    NaN for equal columns but t = inf, p = 0 for a constant non-zero difference.
    """
    check_alternative(alternative)
    a, b = _as_matrix(a), _as_matrix(b)
    m = a.shape[1]
    degenerate = constant_columns(a - b)
    stat, pval = np.full(m, np.nan), np.full(m, np.nan)
    ok = ~degenerate
    if ok.any():
        a_ok, b_ok = (a, b) if ok.all() else (a[:, ok], b[:, ok])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            res = _scipy_stats().ttest_rel(a_ok, b_ok, axis=0, alternative=alternative)
        stat[ok] = np.asarray(res.statistic, dtype=np.float64)
        pval[ok] = np.asarray(res.pvalue, dtype=np.float64)
    return {"statistic": stat, "p_value": pval, **diff_summary(a, b)}


def wilcoxon_matrix(
    a: np.ndarray,
    b: np.ndarray,
    *,
    zero_method: Literal["wilcox", "pratt", "zsplit"] = "wilcox",
    correction: bool = False,
    alternative: Alternative = "two-sided",
    method: Literal["auto", "exact", "asymptotic"] = "auto",
) -> Arrays:
    """Wilcoxon signed-rank test per column: ``scipy.stats.wilcoxon`` on each column.

    Statistic and p-value are NaN for fewer than two rows or when every
    difference is zero (nothing to rank), where scipy warns and gives p = 1.
    """
    check_alternative(alternative)
    a, b = _as_matrix(a), _as_matrix(b)
    sps = _scipy_stats()
    m = a.shape[1]
    stat, pval = np.full(m, np.nan), np.full(m, np.nan)
    skip = np.all(a == b, axis=0) | (a.shape[0] < 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for j in np.flatnonzero(~skip):  # one call per column: scipy's 'auto' decides per sample
            res = sps.wilcoxon(
                a[:, j],
                b[:, j],
                zero_method=zero_method,
                correction=correction,
                alternative=alternative,
                method=method,
            )
            stat[j], pval[j] = res.statistic, res.pvalue
    return {"statistic": stat, "p_value": pval, **diff_summary(a, b)}


def flip_blocks(n: int, n_resamples: int, seed: int | None) -> Iterator[np.ndarray]:
    """Random sign flips, ``RESAMPLE_BLOCK`` resamples at a time.

    Yields float arrays of shape ``(block, n)`` holding 1 where query i is
    flipped (a and b swapped) and 0 where it is kept, each with probability 1/2.
    Depends only on ``(n, n_resamples, seed)``.
    """
    rng = np.random.default_rng(seed)
    n_bytes = (n + 7) // 8
    for start in range(0, n_resamples, RESAMPLE_BLOCK):
        rows = min(RESAMPLE_BLOCK, n_resamples - start)
        packed = rng.integers(0, 256, size=(rows, n_bytes), dtype=np.uint8)
        yield np.unpackbits(packed, axis=1, count=n).astype(np.float64)


def count_blocks(n: int, n_resamples: int, seed: int | None) -> Iterator[np.ndarray]:
    """Bootstrap resamples of n queries as count vectors, ``RESAMPLE_BLOCK`` at a time.

    Yields float arrays of shape ``(block, n)`` (``block * n`` at most
    ``RESAMPLE_BUDGET`` unless n is larger) whose row r counts how often each
    query was drawn (n draws with replacement), so ``counts @ x / n`` is the
    resampled mean. Depends only on ``(n, n_resamples, seed)``.
    """
    rng = np.random.default_rng(seed)  # its draws do not depend on the block size
    block = max(1, min(RESAMPLE_BLOCK, RESAMPLE_BUDGET // max(1, n)))
    for start in range(0, n_resamples, block):
        rows = min(block, n_resamples - start)
        draws = rng.integers(0, n, size=(rows, n)) + (np.arange(rows) * n)[:, None]
        yield np.bincount(draws.ravel(), minlength=rows * n).reshape(rows, n).astype(np.float64)


def _as_extreme(
    null: np.ndarray, observed: np.ndarray, tol: np.ndarray, alternative: str
) -> np.ndarray:
    """Resampled statistics at least as extreme as the observed one (per column)."""
    if alternative == "greater":
        return null >= observed - tol
    if alternative == "less":
        return null <= observed + tol
    return np.abs(null) >= np.abs(observed) - tol


def _empty_test(m: int) -> Arrays:
    nan = np.full(m, np.nan)
    return {"statistic": nan, "p_value": nan.copy(), **diff_summary(np.empty((0, m)), 0.0)}


def randomization_matrix(
    a: np.ndarray,
    b: np.ndarray,
    *,
    n_resamples: int = 10_000,
    seed: int | None = 0,
    alternative: Alternative = "two-sided",
    progress: Progress | None = None,
) -> Arrays:
    r"""Fisher's paired randomization (sign-flip permutation) test per column.

    Under the null hypothesis the labels a/b of each query are exchangeable, so
    each difference keeps or flips its sign with probability 1/2. The statistic is
    the mean difference; every block of resamples is one matrix product
    ``flips @ d`` for all columns at once:

    .. math:: T^* = \sum_i d_i - 2 \sum_i f_i d_i, \qquad
              p = \frac{1 + \#\{|T^*| \ge |T|\}}{1 + R}

    (two-sided; ``greater`` counts :math:`T^* \ge T`, ``less`` :math:`T^* \le T`).
    The p-value is NaN below two queries. Equal differences are a valid input
    here: the permutation distribution is then exact (identical columns give p = 1).
    """
    check_alternative(alternative)
    check_resamples(n_resamples, seed)
    d = _as_matrix(a) - _as_matrix(b)
    n, m = d.shape
    if n < 2:
        summary = diff_summary(d, 0.0)
        return {"statistic": summary["mean_diff"], "p_value": np.full(m, np.nan), **summary}
    total = d.sum(axis=0)
    tol = TIE_TOLERANCE * np.abs(d).sum(axis=0)
    hits = np.zeros(m, dtype=np.int64)
    done = 0
    for flips in flip_blocks(n, n_resamples, seed):
        null = total - 2.0 * (flips @ d)
        hits += _as_extreme(null, total, tol, alternative).sum(axis=0)
        done += flips.shape[0]
        if progress is not None:
            progress(done, n_resamples)
    summary = diff_summary(d, 0.0)
    return {
        "statistic": summary["mean_diff"],
        "p_value": (1.0 + hits) / (1.0 + n_resamples),
        **summary,
    }


def bootstrap_means(
    x: np.ndarray, *, n_resamples: int, seed: int | None, progress: Progress | None = None
) -> np.ndarray:
    """Means of ``n_resamples`` bootstrap resamples of the rows: shape ``(R, m)``."""
    x = _as_matrix(x)
    out = np.empty((n_resamples, x.shape[1]))
    start = 0
    for counts in count_blocks(x.shape[0], n_resamples, seed):
        out[start : start + counts.shape[0]] = counts @ x / x.shape[0]
        start += counts.shape[0]
        if progress is not None:
            progress(start, n_resamples)
    return out


def bootstrap_matrix(
    a: np.ndarray,
    b: np.ndarray,
    *,
    n_resamples: int = 10_000,
    seed: int | None = 0,
    alternative: Alternative = "two-sided",
    level: float = 0.95,
    progress: Progress | None = None,
) -> Arrays:
    r"""Paired bootstrap test per column, with a percentile interval of the mean difference.

    The differences are shifted to mean zero (the null hypothesis) and resampled
    with replacement (Efron and Tibshirani 1993, section 16.4):

    .. math:: \bar d^*_r = \frac{1}{n} \sum_i c_{ri} (d_i - \bar d), \qquad
              p = \frac{1 + \#\{|\bar d^*_r| \ge |\bar d|\}}{1 + R}

    where :math:`c_{ri}` counts how often query i is drawn in resample r. The same
    resamples, shifted back by :math:`\bar d`, give the percentile interval
    ``ci_low, ci_high`` of the mean difference. When the differences are all
    equal (or n < 2) the shifted differences are all 0, the null distribution is
    a point and the p-value is NaN (it would otherwise be 1/(R+1) for any
    non-zero difference); the interval is then the point :math:`\bar d`.
    """
    check_alternative(alternative)
    check_resamples(n_resamples, seed)
    check_level(level)
    d = _as_matrix(a) - _as_matrix(b)
    n, m = d.shape
    if n == 0:
        return {**_empty_test(m), "ci_low": np.full(m, np.nan), "ci_high": np.full(m, np.nan)}
    mean = d.mean(axis=0)
    null = bootstrap_means(d - mean, n_resamples=n_resamples, seed=seed, progress=progress)
    tol = TIE_TOLERANCE * np.abs(d).sum(axis=0) / n
    hits = _as_extreme(null, mean, tol, alternative).sum(axis=0)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(null, [tail, 1.0 - tail], axis=0)
    p_value = np.where(constant_columns(d), np.nan, (1.0 + hits) / (1.0 + n_resamples))
    return {
        "statistic": mean,
        "p_value": p_value,
        **diff_summary(d, 0.0),
        "ci_low": mean + low,
        "ci_high": mean + high,
    }


def _pair_index(pairs: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if pairs.size and (pairs.min() < 0 or pairs.max() >= k):
        msg = f"pairs must index the {k} systems (columns 0 to {k - 1}). Got {pairs.tolist()}."
        raise ValueError(msg)
    return pairs[:, 0], pairs[:, 1]


def anova_residual(x: np.ndarray) -> tuple[float, int]:
    r"""Residual mean square and its degrees of freedom in the two-way ANOVA without
    replication (topics as blocks, systems as treatments).

    .. math:: MSE = \frac{\sum_{i,j} (x_{ij} - \bar x_{i\cdot} - \bar x_{\cdot j}
              + \bar x_{\cdot\cdot})^2}{(n-1)(k-1)}

    for n topics (rows) and k systems (columns); NaN when (n-1)(k-1) = 0.

    Examples
    --------
    >>> x = np.array([[0.1, 0.3], [0.5, 0.6], [0.2, 0.6]])
    >>> anova_residual(x)  # k = 2: half the variance of the differences 0.2, 0.1, 0.4
    (0.011666666666666665, 2)

    The differences have mean 0.7/3 and variance (0.0333^2 + 0.1333^2 +
    0.1667^2) / 2 = 0.02333, half of which is 0.011667.
    """
    x = _as_matrix(x)
    n, k = x.shape
    df = (n - 1) * (k - 1)
    if df <= 0:
        return float("nan"), max(df, 0)
    resid = x - x.mean(axis=1, keepdims=True) - x.mean(axis=0) + x.mean()
    return float(np.square(resid).sum() / df), df


def tukey_hsd_matrix(x: np.ndarray, pairs: Any) -> Arrays:
    r"""Tukey's HSD on a (topics x systems) matrix, for the given pairs of systems.

    The two-way ANOVA without replication (topics as blocks) gives the residual
    mean square MSE with :math:`\nu = (n-1)(k-1)` degrees of freedom
    (:func:`anova_residual`); each pair (a, b) is judged by the studentized range

    .. math:: q = \frac{|\bar x_{\cdot a} - \bar x_{\cdot b}|}{\sqrt{MSE / n}}, \qquad
              p = P(Q_{k,\nu} \ge q)

    from ``scipy.stats.studentized_range``. The p-values hold family-wise over
    all :math:`k(k-1)/2` pairs of the k systems, whichever pairs are asked for.
    Statistic and p-value are NaN when n < 2, k < 2 or MSE = 0 (no residual
    variation: every pair's differences are constant).

    Parameters
    ----------
    x
        Values, shape ``(n_topics, k_systems)``.
    pairs
        ``(a, b)`` column indices, shape ``(P, 2)``.

    Returns
    -------
    dict
        ``statistic`` (q), ``p_value``, ``mean_diff``, ``effect_size`` (Cohen's
        :math:`d_z` of the pair's differences), ``n``, ``wins``, ``ties``,
        ``losses`` (:func:`pair_summary`), each of length P.
    """
    x = _as_matrix(x)
    n, k = x.shape
    ia, ib = _pair_index(pairs, k)
    summary = pair_summary(x, ia, ib)
    mse, df = anova_residual(x)
    nan = np.full(ia.size, np.nan)
    scale = np.abs(x - x.mean(axis=1, keepdims=True)).max() if x.size else 0.0
    if n < 2 or k < 2 or not np.sqrt(mse) > TIE_TOLERANCE * scale:
        return {"statistic": nan, "p_value": nan.copy(), **summary}
    means = x.mean(axis=0)
    q = np.abs(means[ia] - means[ib]) / np.sqrt(mse / n)
    unique, inverse = np.unique(q, return_inverse=True)  # each value integrated once
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # quad's IntegrationWarning where p is ~1
        p_unique = _scipy_stats().studentized_range.sf(unique, k, df)
    p = np.clip(np.asarray(p_unique, dtype=np.float64)[inverse], 0.0, 1.0)
    return {"statistic": q, "p_value": p, **summary}


def permuted_means(
    x: np.ndarray, n_resamples: int, seed: int | None, progress: Progress | None = None
) -> Iterator[np.ndarray]:
    """Column means of ``x`` after shuffling every row independently, block by block.

    Yields arrays of shape ``(block, k)``: for each permutation, the k system
    means after each topic's k values were randomly reassigned to the systems.
    A block holds at most ``PERMUTE_BUDGET`` values, so memory is bounded
    whatever ``n_resamples``; the permutations depend only on
    ``(x.shape, n_resamples, seed)`` (numpy shuffles the rows in order from one
    stream, whatever the block size).
    """
    x = _as_matrix(x)
    n, k = x.shape
    rng = np.random.default_rng(seed)
    block = max(1, min(RESAMPLE_BLOCK, PERMUTE_BUDGET // max(1, n * k)))
    buffer = np.empty((min(block, n_resamples), n, k))
    done = 0
    while done < n_resamples:
        tile = buffer[: min(block, n_resamples - done)]
        tile[...] = x
        rng.permuted(tile, axis=2, out=tile)
        done += tile.shape[0]
        if progress is not None:
            progress(done, n_resamples)
        yield tile.sum(axis=1) / n


def randomized_tukey_matrix(
    x: np.ndarray,
    pairs: Any,
    *,
    n_resamples: int = 10_000,
    seed: int | None = 0,
    progress: Progress | None = None,
) -> Arrays:
    r"""Carterette's randomised Tukey HSD on a (topics x systems) matrix.

    Under the null hypothesis that all k systems are equivalent, each topic's k
    scores are exchangeable among the systems. Each of R permutations shuffles
    every topic's row independently; the statistic of a permutation is the range
    of the system means, and a pair's p-value is the share of permutations
    whose range reaches the pair's observed difference:

    .. math:: p_{ab} = \frac{1 + \#\{r : \max_j \bar x^{*r}_{\cdot j}
              - \min_j \bar x^{*r}_{\cdot j} \ge |\bar x_{\cdot a} - \bar x_{\cdot b}|\}}{1 + R}

    Comparing every pair with the null distribution of the largest difference
    controls the family-wise error over all pairs of the k systems. The
    permutations are drawn in blocks (:func:`permuted_means`): time grows
    linearly with R and n, memory does not grow with R.

    Returns
    -------
    dict
        ``statistic`` (the mean difference :math:`\bar x_{\cdot a} - \bar x_{\cdot b}`),
        ``p_value``, ``mean_diff``, ``effect_size`` (Cohen's :math:`d_z`), ``n``,
        ``wins``, ``ties``, ``losses``; the p-value is NaN below two topics or two
        systems.

    References
    ----------
    Carterette, "Multiple testing in statistical analysis of systems-based
    information retrieval experiments", ACM TOIS 30(1), 2012.
    """
    check_resamples(n_resamples, seed)
    x = _as_matrix(x)
    n, k = x.shape
    ia, ib = _pair_index(pairs, k)
    summary = pair_summary(x, ia, ib)
    if n < 2 or k < 2:
        return {"statistic": summary["mean_diff"], "p_value": np.full(ia.size, np.nan), **summary}
    means = x.mean(axis=0)
    observed = np.abs(means[ia] - means[ib])
    tol = TIE_TOLERANCE * max(float(np.abs(x).max()), np.finfo(float).tiny)
    hits = np.zeros(ia.size, dtype=np.int64)
    for block in permuted_means(x, n_resamples, seed, progress):
        spread = block.max(axis=1) - block.min(axis=1)
        hits += (spread[:, None] >= observed[None, :] - tol).sum(axis=0)
    return {
        "statistic": summary["mean_diff"],
        "p_value": (1.0 + hits) / (1.0 + n_resamples),
        **summary,
    }


def _half_widths(
    x: np.ndarray, interval: str, level: float, n_resamples: int, seed: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) of the mean of each column of x (n >= 2), on x's scale."""
    n = x.shape[0]
    tail = (1.0 - level) / 2.0
    mean = x.mean(axis=0)
    if interval == "bootstrap":
        means = bootstrap_means(x, n_resamples=n_resamples, seed=seed)
        low, high = np.quantile(means, [tail, 1.0 - tail], axis=0)
        return low, high
    if interval == "bca":
        means = bootstrap_means(x, n_resamples=n_resamples, seed=seed)
        return bca_interval(x, means, level)
    sps = _scipy_stats()
    stderr = x.std(axis=0, ddof=1) / np.sqrt(n)
    dist = sps.norm() if interval == "normal" else sps.t(n - 1)
    half = dist.ppf(1.0 - tail) * stderr
    return mean - half, mean + half


def bca_interval(x: np.ndarray, means: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    r"""Bias-corrected and accelerated (BCa) bootstrap interval of each column's mean.

    From the bootstrap means :math:`\bar x^*_r` (``means``, shape ``(R, m)``), as
    ``scipy.stats.bootstrap(method="BCa")`` computes it (Efron and Tibshirani 1993,
    14.3 and eq. 14.15):

    .. math:: \hat z_0 = \Phi^{-1}\Big(\frac{\#\{\bar x^*_r < \bar x\}
              + \#\{\bar x^*_r \le \bar x\}}{2R}\Big), \qquad
              \hat a = \frac{\sum_i u_i^3}{6 (\sum_i u_i^2)^{3/2}}, \qquad
              \alpha_{1,2} = \Phi\Big(\hat z_0 + \frac{\hat z_0 \mp z}
              {1 - \hat a (\hat z_0 \mp z)}\Big)

    with :math:`z = \Phi^{-1}(1 - (1 - level)/2)`; the interval is the
    :math:`\alpha_1` and :math:`\alpha_2` percentiles of the bootstrap means. The
    jackknife values of the mean are :math:`\bar x_{(i)} = (n \bar x - x_i)/(n - 1)`,
    so the jackknife influence :math:`u_i = (n - 1)(\bar x_{(\cdot)} - \bar x_{(i)})`
    is :math:`x_i - \bar x`: O(n), where a jackknife by recomputation is O(n^2)
    (67 s at 100,000 queries). NaN when every value is equal, as scipy.

    A resampled mean within ``TIE_TOLERANCE`` of the data's scale of :math:`\bar x`
    counts as equal to it (half below), as it is in exact arithmetic: with values
    on a grid (P@10's tenths) some resamples sum to the same total in another
    order, and which of them scipy's float sums put below decides its interval.

    Examples
    --------
    >>> x = np.array([[0.1], [0.4], [0.35], [0.8], [0.55]])
    >>> low, high = bca_interval(x, bootstrap_means(x, n_resamples=2000, seed=0), 0.95)
    >>> bool(low[0] < x.mean() < high[0])
    True
    """
    from scipy.special import ndtr, ndtri

    theta = x.mean(axis=0)
    tol = TIE_TOLERANCE * np.maximum(np.abs(x).max(axis=0), np.finfo(float).tiny)
    below, tied = means < theta - tol, np.abs(means - theta) <= tol
    share = (2 * below.sum(axis=0) + tied.sum(axis=0)) / (2 * len(means))
    u = x - theta
    with np.errstate(divide="ignore", invalid="ignore"):
        z0 = ndtri(share)
        accel = (u**3).sum(axis=0) / (6.0 * ((u**2).sum(axis=0)) ** 1.5)
        z = ndtri(1.0 - (1.0 - level) / 2.0)
        ends = [ndtr(z0 + (z0 + s) / (1.0 - accel * (z0 + s))) for s in (-z, z)]
    low, high = (np.full(x.shape[1], np.nan) for _ in range(2))
    for j in range(x.shape[1]):
        if np.isfinite(ends[0][j]) and np.isfinite(ends[1][j]):
            low[j], high[j] = np.percentile(means[:, j], [100 * ends[0][j], 100 * ends[1][j]])
    return low, high


BOUNDS_SLACK = 1e-9
"""How far (a share of the range) a value may lie past a bound of :func:`check_bounds`:
a ratio equal to 1 in exact arithmetic can round to 1 + 2e-16."""


def check_bounds(
    x: np.ndarray, bounds: tuple[float, float], names: Sequence[str] | None = None
) -> None:
    """Raise unless ``bounds`` is ``(low, high)`` with ``low < high`` and every value of
    the matrix ``x`` (one column per measure, ``names``) lies within (up to
    :data:`BOUNDS_SLACK` of the range, for rounding): an interval clipped to a range its
    values leave can exclude its own mean.

    Examples
    --------
    >>> check_bounds(np.array([[0.5], [1.2]]), (0.0, 1.0), ["RBP"])
    Traceback (most recent call last):
    ...
    ValueError: 'RBP' has values outside its bounds (0.0, 1.0), e.g. 1.2: clipping ...
    """
    try:
        low, high = (float(b) for b in bounds)
    except (TypeError, ValueError):
        msg = f"bounds must be (low, high), two numbers. Got {bounds!r}."
        raise ValueError(msg) from None
    if not low < high:  # NaN too
        msg = f"bounds must be (low, high) with low < high. Got {bounds!r}."
        raise ValueError(msg)
    slack = BOUNDS_SLACK * (high - low)  # a value's last bits of rounding pass
    outside = (x < low - slack) | (x > high + slack)
    if outside.any():
        i, j = (int(v[0]) for v in np.nonzero(outside))
        label = repr(names[j]) if names is not None else f"column {j}"
        msg = (
            f"{label} has values outside its bounds ({low}, {high}), e.g. {x[i, j]}: "
            f"clipping its interval to them could leave out its mean. Give its true range, "
            f"or do not clip (bounds=None; clip=False in summarize)."
        )
        raise ValueError(msg)


def interval_matrix(
    x: np.ndarray,
    *,
    interval: IntervalKind = "normal",
    level: float = 0.95,
    n_resamples: int = 10_000,
    seed: int | None = 0,
    aggregate: Aggregate = "mean",
    bounds: tuple[float, float] | None = None,
    names: Sequence[str] | None = None,
) -> Arrays:
    r"""Combined value, spread and interval of each column.

    With ``aggregate="mean"``:

    .. math:: SE = s / \sqrt{n}, \qquad
              \text{normal: } \bar x \pm z_{1-\alpha/2} SE, \quad
              \text{t: } \bar x \pm t_{n-1, 1-\alpha/2} SE

    with :math:`s` the sample standard deviation (ddof=1) and
    :math:`\alpha = 1 - level`; ``bootstrap`` is the percentile interval of
    ``n_resamples`` resampled means and ``bca`` scipy's bias-corrected and
    accelerated bootstrap (``scipy.stats.bootstrap(method="BCa")``).

    ``aggregate="gmean"`` works on :math:`y = \ln\max(x, 10^{-5})`: ``mean`` is
    :math:`e^{\bar y}` (the geometric mean), ``std`` and ``stderr`` are those of
    y, and the interval is the exponential of y's interval. ``aggregate="sum"``
    reports the total :math:`n \bar x`, its standard error :math:`\sqrt n\, s`
    and n times the interval of the mean (``std`` stays per query).

    With ``bounds=(lo, hi)`` the interval is clipped to the measure's range and
    ``clipped`` says where that moved an end. std, stderr and the interval are
    NaN when n < 2; the BCa interval is NaN when every value is equal (scipy).
    Bounds that are not ``low < high``, or values outside them (the interval clipped
    to them could leave out the mean), raise, naming the column (``names``).
    """
    check_level(level)
    check_interval(interval)
    check_aggregate(aggregate)
    x = _as_matrix(x)
    if bounds is not None:
        check_bounds(x, bounds, names)
    n, m = x.shape
    nan = np.full(m, np.nan)
    y = transform(x, aggregate)
    mean = y.mean(axis=0) if n else nan
    std = y.std(axis=0, ddof=1) if n > 1 else nan
    stderr = std / np.sqrt(n) if n > 1 else nan
    if n < 2:
        low, high = nan, nan.copy()
    else:
        if interval in ("bootstrap", "bca"):
            check_resamples(n_resamples, seed)
        low, high = _half_widths(y, interval, level, n_resamples, seed)
    if aggregate == "gmean":
        mean, low, high = np.exp(mean), np.exp(low), np.exp(high)
    elif aggregate == "sum":
        mean, stderr, low, high = n * mean if n else np.zeros(m), n * stderr, n * low, n * high
    clipped = np.zeros(m, dtype=bool)
    if bounds is not None:
        lo, hi = bounds
        new_low, new_high = np.clip(low, lo, hi), np.clip(high, lo, hi)
        with np.errstate(invalid="ignore"):
            clipped = (new_low != low) | (new_high != high)
        clipped &= ~(np.isnan(low) | np.isnan(high))
        low, high = new_low, new_high
    return {
        "mean": mean,
        "std": std,
        "stderr": stderr,
        "ci_low": low,
        "ci_high": high,
        "n": np.full(m, n),
        "clipped": clipped,
    }


# ------------------------------------------------------------- expressions


def _values(series: pl.Series, what: str, function: str) -> np.ndarray:
    """A Series as float64 numpy, refusing nulls, NaN and infinities (untestable values)."""
    if series.null_count():
        msg = (
            f"{function}: {what} ({series.name!r}) has {series.null_count()} null values. "
            f"Pairing by query needs a value on both sides: drop those rows first "
            f"(.drop_nulls()) or score them 0 (.fill_null(0.0))."
        )
        raise ValueError(msg)
    values = series.cast(pl.Float64).to_numpy()
    bad = ~np.isfinite(values)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        msg = (
            f"{function}: {what} ({series.name!r}) has {int(bad.sum())} NaN or infinite "
            f"values (first: {values[first]} at row {first}). A test needs a finite value "
            f"per query: fix the measure or drop those rows first."
        )
        raise ValueError(msg)
    return values


def _struct_row(arrays: Arrays, dtype: pl.Struct, name: str) -> pl.Series:
    row: dict[str, Any] = {}
    for field in dtype.fields:
        value = arrays[field.name][0]
        if field.dtype == pl.UInt32:
            row[field.name] = int(value)
        elif field.dtype == pl.Boolean:
            row[field.name] = bool(value)
        else:
            row[field.name] = float(value)
    return pl.Series(name, [row], dtype=dtype)


def _paired_expr(
    a: IntoExpr,
    b: IntoExpr,
    core: Callable[..., Arrays],
    function: str,
    dtype: pl.Struct = TEST_DTYPE,
) -> pl.Expr:
    """Wrap a matrix core as a scalar struct expression over two columns."""

    def run(series: Sequence[pl.Series]) -> pl.Series:
        x = _values(series[0], "a", function)
        y = _values(series[1], "b", function)
        return _struct_row(core(x, y), dtype, series[0].name)

    return pl.map_groups([col(a), col(b)], run, return_dtype=dtype, returns_scalar=True)


def paired_ttest(a: IntoExpr, b: IntoExpr, *, alternative: Alternative = "two-sided") -> pl.Expr:
    r"""Paired t-test of two columns, equal to ``scipy.stats.ttest_rel(a, b)``.

    .. math:: t = \frac{\bar d}{s_d / \sqrt{n}}, \qquad df = n - 1

    where :math:`d_i = a_i - b_i` over the n rows (queries), :math:`\bar d` their
    mean and :math:`s_d` their sample standard deviation (ddof=1).

    Parameters
    ----------
    a, b
        Paired per-query values, one row per query.
        Accepts expression input. Strings are parsed as column names.
    alternative
        ``"two-sided"``, ``"greater"`` (mean of a - b > 0) or ``"less"``; as scipy.

    Returns
    -------
    pl.Expr
        A struct: ``statistic`` (t), ``p_value``, ``mean_diff`` (:math:`\bar d`),
        ``effect_size`` (Cohen's :math:`d_z = \bar d / s_d`) and ``n``; one value
        per group in ``group_by(...).agg(...)``. Named after ``a``.

    Notes
    -----
    A null, NaN or infinite value in either column raises: drop or fill those
    rows first. When every difference is equal (or n < 2), t is undefined
    (:math:`s_d = 0`) and statistic and p-value are NaN; scipy gives NaN for
    equal columns but t = inf, p = 0 for a constant non-zero difference.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> wide = pl.DataFrame({"bm25": [0.2, 0.5, 0.1, 0.4], "dense": [0.3, 0.7, 0.1, 0.6]})
    >>> wide.select(pr.paired_ttest("dense", "bm25")).unnest("dense")
    shape: (1, 5)
    ┌───────────┬──────────┬───────────┬─────────────┬─────┐
    │ statistic ┆ p_value  ┆ mean_diff ┆ effect_size ┆ n   │
    │ ---       ┆ ---      ┆ ---       ┆ ---         ┆ --- │
    │ f64       ┆ f64      ┆ f64       ┆ f64         ┆ u32 │
    ╞═══════════╪══════════╪═══════════╪═════════════╪═════╡
    │ 2.611165  ┆ 0.079605 ┆ 0.125     ┆ 1.305582    ┆ 4   │
    └───────────┴──────────┴───────────┴─────────────┴─────┘

    The differences are 0.1, 0.2, 0, 0.2: mean 0.125, sd 0.0957, so
    t = 0.125 / (0.0957 / 2) = 2.61 with 3 degrees of freedom.
    """
    check_alternative(alternative)

    def core(x: np.ndarray, y: np.ndarray) -> Arrays:
        return ttest_matrix(x, y, alternative=alternative)

    return _paired_expr(a, b, core, "paired_ttest")


def wilcoxon(
    a: IntoExpr,
    b: IntoExpr,
    *,
    zero_method: Literal["wilcox", "pratt", "zsplit"] = "wilcox",
    correction: bool = False,
    alternative: Alternative = "two-sided",
    method: Literal["auto", "exact", "asymptotic"] = "auto",
) -> pl.Expr:
    r"""Wilcoxon signed-rank test of two columns, equal to ``scipy.stats.wilcoxon(a, b)``.

    .. math:: W^+ = \sum_{i: d_i > 0} \operatorname{rank}(|d_i|)

    over the non-zero differences :math:`d_i = a_i - b_i` (``zero_method="wilcox"``;
    ties get average ranks). The statistic is scipy's: :math:`\min(W^+, W^-)` for
    the two-sided test, :math:`W^+` otherwise.

    Parameters
    ----------
    a, b
        Paired per-query values. Accepts expression input. Strings are parsed as
        column names.
    zero_method, correction, alternative, method
        Passed to ``scipy.stats.wilcoxon`` unchanged (same defaults).

    Returns
    -------
    pl.Expr
        A struct: ``statistic``, ``p_value``, ``mean_diff``, ``effect_size``
        (Cohen's :math:`d_z`, as in :func:`paired_ttest`) and ``n`` (all rows,
        zero differences included). Named after ``a``. Statistic and p-value are
        NaN below two rows or when every difference is 0.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> wide = pl.DataFrame({"bm25": [0.2, 0.5, 0.1, 0.4, 0.3, 0.9],
    ...                      "dense": [0.3, 0.8, 0.5, 0.6, 0.8, 0.85]})
    >>> t = wide.select(pr.wilcoxon("dense", "bm25")).unnest("dense")
    >>> t["statistic"].item(), round(t["p_value"].item(), 4)
    (1.0, 0.0625)

    The differences are 0.1, 0.3, 0.4, 0.2, 0.5, -0.05: only the smallest is
    negative, so W- = 1; W- <= 1 happens for 2 of the 2^6 sign patterns, and the
    exact two-sided p-value is 2 * 2 / 64 = 0.0625.
    """
    check_alternative(alternative)

    def core(x: np.ndarray, y: np.ndarray) -> Arrays:
        return wilcoxon_matrix(
            x,
            y,
            zero_method=zero_method,
            correction=correction,
            alternative=alternative,
            method=method,
        )

    return _paired_expr(a, b, core, "wilcoxon")


def randomization_test(
    a: IntoExpr,
    b: IntoExpr,
    *,
    n_resamples: int = 10_000,
    seed: int | None = 0,
    alternative: Alternative = "two-sided",
) -> pl.Expr:
    r"""Fisher's paired randomization test (sign-flip permutation test) of two columns.

    Under the null hypothesis the two systems are exchangeable on every query, so
    each difference :math:`d_i = a_i - b_i` keeps or flips its sign with
    probability 1/2. With :math:`R` random flip vectors :math:`f_r \in \{0,1\}^n`:

    .. math:: T = \bar d, \qquad T^*_r = \frac{1}{n}\sum_i (1 - 2 f_{ri}) d_i, \qquad
              p = \frac{1 + \#\{r : |T^*_r| \ge |T|\}}{1 + R}

    (``"greater"`` counts :math:`T^*_r \ge T`, ``"less"`` :math:`T^*_r \le T`).
    The +1 counts the observed assignment, so p is never 0 (Phipson and Smyth 2010).
    The flips are drawn in blocks of ``RESAMPLE_BLOCK`` rows and applied to all
    queries at once as one matrix product.

    Parameters
    ----------
    a, b
        Paired per-query values. Accepts expression input. Strings are parsed as
        column names.
    n_resamples
        Number of random sign-flip vectors R.
    seed
        Seed of numpy's default generator; the flips depend only on the seed,
        the number of rows and ``n_resamples``. None draws fresh entropy.
    alternative
        ``"two-sided"``, ``"greater"`` or ``"less"``.

    Returns
    -------
    pl.Expr
        A struct: ``statistic`` (the mean difference T), ``p_value``,
        ``mean_diff``, ``effect_size`` (Cohen's :math:`d_z`) and ``n``.

    Notes
    -----
    The Monte Carlo standard error of p is about :math:`\sqrt{p(1-p)/R}`
    (0.002 at p = 0.05 with R = 10,000). Sums that differ by less than
    ``TIE_TOLERANCE`` times :math:`\sum |d_i|` count as equal. The p-value is
    NaN below two rows; equal differences are tested exactly as they are.

    References
    ----------
    Smucker, Allan and Carterette, "A comparison of statistical significance tests
    for information retrieval evaluation", CIKM 2007.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> wide = pl.DataFrame({"bm25": [0.2, 0.5, 0.1, 0.4], "dense": [0.3, 0.7, 0.1, 0.6]})
    >>> t = wide.select(pr.randomization_test("dense", "bm25", seed=1)).unnest("dense")
    >>> t["statistic"].item()  # mean difference (0.1 + 0.2 + 0 + 0.2) / 4
    0.125
    >>> abs(t["p_value"].item() - 4 / 16) < 0.02  # exactly: 4 of the 16 flips are as extreme
    True
    """
    check_alternative(alternative)
    check_resamples(n_resamples, seed)

    def core(x: np.ndarray, y: np.ndarray) -> Arrays:
        return randomization_matrix(
            x, y, n_resamples=n_resamples, seed=seed, alternative=alternative
        )

    return _paired_expr(a, b, core, "randomization_test")


def bootstrap_test(
    a: IntoExpr,
    b: IntoExpr,
    *,
    n_resamples: int = 10_000,
    seed: int | None = 0,
    alternative: Alternative = "two-sided",
    level: float = 0.95,
) -> pl.Expr:
    r"""Paired bootstrap test of two columns, with an interval of the mean difference.

    The differences :math:`d_i = a_i - b_i` are shifted to mean 0 (the null
    hypothesis) and resampled with replacement R times:

    .. math:: \bar d^*_r = \frac{1}{n} \sum_{i} c_{ri}\,(d_i - \bar d), \qquad
              p = \frac{1 + \#\{r : |\bar d^*_r| \ge |\bar d|\}}{1 + R}

    where :math:`c_{ri}` counts the draws of query i in resample r.
    ``ci_low, ci_high`` is the percentile interval of the mean difference
    (:math:`\bar d + \bar d^*` at :math:`(1 \mp level)/2`). When every
    difference is equal (or n < 2) the null distribution is a single point and
    the p-value is NaN.

    Parameters
    ----------
    a, b
        Paired per-query values. Accepts expression input. Strings are parsed as
        column names.
    n_resamples
        Number of bootstrap resamples R.
    seed
        Seed of numpy's default generator (None: fresh entropy).
    alternative
        ``"two-sided"``, ``"greater"`` or ``"less"``.
    level
        Coverage of the percentile interval.

    Returns
    -------
    pl.Expr
        A struct: ``statistic`` (the mean difference), ``p_value``, ``mean_diff``,
        ``effect_size`` (Cohen's :math:`d_z`), ``n``, ``ci_low``, ``ci_high``.

    References
    ----------
    Efron and Tibshirani, "An Introduction to the Bootstrap", 1993, section 16.4;
    Sakai, "Evaluating evaluation metrics based on the bootstrap", SIGIR 2006.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> wide = pl.DataFrame({"bm25": [0.2, 0.5, 0.1, 0.4, 0.3, 0.9],
    ...                      "dense": [0.3, 0.7, 0.1, 0.6, 0.6, 0.8]})
    >>> t = wide.select(pr.bootstrap_test("dense", "bm25", seed=7)).unnest("dense")
    >>> t.select("statistic", "n")  # mean of 0.1, 0.2, 0, 0.2, 0.3, -0.1
    shape: (1, 2)
    ┌───────────┬─────┐
    │ statistic ┆ n   │
    │ ---       ┆ --- │
    │ f64       ┆ u32 │
    ╞═══════════╪═════╡
    │ 0.116667  ┆ 6   │
    └───────────┴─────┘
    >>> t["ci_low"].item() < 0.116667 < t["ci_high"].item()
    True
    """
    check_alternative(alternative)
    check_resamples(n_resamples, seed)
    check_level(level)

    def core(x: np.ndarray, y: np.ndarray) -> Arrays:
        return bootstrap_matrix(
            x, y, n_resamples=n_resamples, seed=seed, alternative=alternative, level=level
        )

    return _paired_expr(a, b, core, "bootstrap_test", BOOTSTRAP_DTYPE)


def mean_interval(
    x: IntoExpr,
    *,
    interval: IntervalKind = "normal",
    level: float = 0.95,
    n_resamples: int = 10_000,
    seed: int | None = 0,
    aggregate: Aggregate = "mean",
    bounds: tuple[float, float] | None = None,
) -> pl.Expr:
    r"""Mean of a column with its standard error and a confidence interval.

    .. math:: SE = \frac{s}{\sqrt{n}}, \qquad
              \bar x \pm z_{1-\alpha/2}\, SE \ (\text{normal}), \qquad
              \bar x \pm t_{n-1,\,1-\alpha/2}\, SE \ (\text{t})

    where :math:`s` is the sample standard deviation (ddof=1) and
    :math:`\alpha = 1 - level` (z = 1.96 at 95%). ``"bootstrap"`` gives the
    percentile interval of ``n_resamples`` means of queries drawn with
    replacement, ``"bca"`` the bias-corrected and accelerated interval of
    ``scipy.stats.bootstrap`` (Efron and Tibshirani 1993, ch. 14).

    Parameters
    ----------
    x
        Per-query values. Accepts expression input. Strings are parsed as column names.
    interval
        ``"normal"``, ``"t"``, ``"bootstrap"`` or ``"bca"``.
    level
        Coverage, strictly between 0 and 1.
    n_resamples, seed
        Bootstrap resamples and seed (``"bootstrap"`` and ``"bca"`` only).
    aggregate
        How the values combine: ``"mean"``, ``"gmean"`` (geometric mean with
        trec_eval's floor 1e-5; interval on the log scale, then exponentiated)
        or ``"sum"`` (total, and n times the interval of the mean); see
        :func:`interval_matrix`.
    bounds
        ``(low, high)`` range of the measure: the interval is clipped to it and
        ``clipped`` says so. None (default): no clipping.

    Returns
    -------
    pl.Expr
        A struct ``mean, std, stderr, ci_low, ci_high, n, clipped``; std, stderr
        and the interval are NaN for fewer than two values. A null, NaN or
        infinite value raises.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> per_query = pl.DataFrame({"AP": [0.2, 0.4, 0.6, 0.8]})
    >>> per_query.select(pr.mean_interval("AP", interval="t")).unnest("AP")
    shape: (1, 7)
    ┌──────┬──────────┬──────────┬──────────┬──────────┬─────┬─────────┐
    │ mean ┆ std      ┆ stderr   ┆ ci_low   ┆ ci_high  ┆ n   ┆ clipped │
    │ ---  ┆ ---      ┆ ---      ┆ ---      ┆ ---      ┆ --- ┆ ---     │
    │ f64  ┆ f64      ┆ f64      ┆ f64      ┆ f64      ┆ u32 ┆ bool    │
    ╞══════╪══════════╪══════════╪══════════╪══════════╪═════╪═════════╡
    │ 0.5  ┆ 0.258199 ┆ 0.129099 ┆ 0.089148 ┆ 0.910852 ┆ 4   ┆ false   │
    └──────┴──────────┴──────────┴──────────┴──────────┴─────┴─────────┘

    stderr = 0.2582 / sqrt(4); the half-width is t(3, 0.975) = 3.182 times it.
    Reciprocal ranks near 1 give a normal interval above 1, which ``bounds`` clips:

    >>> rr = pl.DataFrame({"RR": [1.0, 1.0, 0.5, 1.0]})
    >>> out = rr.select(pr.mean_interval("RR", bounds=(0.0, 1.0))).unnest("RR")
    >>> out.select("mean", "ci_high", "clipped").row(0)  # 0.875 + 1.96 * 0.125 > 1
    (0.875, 1.0, True)
    """
    check_level(level)
    check_interval(interval)
    check_aggregate(aggregate)

    def run(series: Sequence[pl.Series]) -> pl.Series:
        values = _values(series[0], "x", "mean_interval")
        out = interval_matrix(
            values,
            interval=interval,
            level=level,
            n_resamples=n_resamples,
            seed=seed,
            aggregate=aggregate,
            bounds=bounds,
            names=[series[0].name],
        )
        return _struct_row(out, INTERVAL_DTYPE, series[0].name)

    return pl.map_groups([col(x)], run, return_dtype=INTERVAL_DTYPE, returns_scalar=True)


# ------------------------------------------------------------- corrections


def _in_unit_range(p: IntoExpr) -> pl.Expr:
    """The p-values, NaN as null, after a check that every other value lies in [0, 1].

    A value outside [0, 1] (or infinite) raises a ValueError naming it and its row
    (in the column, or in its group under ``over`` / ``group_by``), as
    ``scipy.stats.false_discovery_control`` refuses such input: a correction of it
    would give adjusted p-values outside [0, 1] without a word.
    """

    def check(series: pl.Series) -> pl.Series:
        values = series.cast(pl.Float64).fill_nan(None)
        bad = (values < 0.0) | (values > 1.0)
        if bad.any():
            row = int(bad.arg_true()[0])
            msg = (
                f"p-values must lie in [0, 1]. Got {values[row]!r} at row {row} of "
                f"{series.name!r} ({int(bad.sum())} values outside [0, 1]); NaN and null "
                f"are allowed (no test) and stay null."
            )
            raise ValueError(msg)
        return values

    return col(p).map_batches(check, return_dtype=pl.Float64)


def bonferroni(p: IntoExpr) -> pl.Expr:
    r"""Bonferroni-adjusted p-values: :math:`\min(1, m\,p_i)` over the m p-values.

    m counts the non-null, non-NaN p-values of the column (or of the group in
    ``group_by(...).agg`` / ``.over(...)``); null and NaN stay null. A value outside
    [0, 1] raises, naming it and its row (as for every correction,
    :func:`adjust_pvalues`).

    Parameters
    ----------
    p
        p-values. Accepts expression input. Strings are parsed as column names.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> pl.DataFrame({"p": [0.01, 0.04, 0.3]}).select(pr.bonferroni("p"))["p"].to_list()
    [0.03, 0.12, 0.9]
    """
    clean = _in_unit_range(p)
    return (clean * clean.count()).clip(upper_bound=1.0)


def holm(p: IntoExpr) -> pl.Expr:
    r"""Holm's step-down adjusted p-values.

    With the m p-values sorted ascending, :math:`p_{(1)} \le \dots \le p_{(m)}`:

    .. math:: \tilde p_{(i)} = \min\Big(1, \max_{j \le i} (m - j + 1)\, p_{(j)}\Big)

    returned in the original row order. Rejecting where :math:`\tilde p < \alpha`
    controls the family-wise error rate at :math:`\alpha`, and is never less
    powerful than Bonferroni. Null and NaN p-values are left out of m and stay null.

    Parameters
    ----------
    p
        p-values. Accepts expression input. Strings are parsed as column names.

    References
    ----------
    Holm, "A simple sequentially rejective multiple test procedure",
    Scandinavian Journal of Statistics 6(2), 1979.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> p = pl.DataFrame({"p": [0.04, 0.01, 0.03]})
    >>> p.select(pr.holm("p"))["p"].round(6).to_list()  # 3*0.01, max(2*0.03, .03), max(.04, .06)
    [0.06, 0.03, 0.06]
    """
    clean = _in_unit_range(p)
    ordered = clean.sort(nulls_last=True)
    factor = clean.count().cast(pl.Float64) - pl.int_range(pl.len())
    adjusted = (ordered * factor).cum_max().clip(upper_bound=1.0)
    return adjusted.gather(clean.arg_sort(nulls_last=True).arg_sort())


def _step_up(p: IntoExpr, *, harmonic: bool) -> pl.Expr:
    """Benjamini-Hochberg (harmonic=False) or -Yekutieli step-up adjustment, nulls kept."""
    clean = _in_unit_range(p)
    m = clean.count().cast(pl.Float64)
    ordered = clean.sort(nulls_last=True)
    factor = m / pl.int_range(1, pl.len() + 1).cast(pl.Float64)
    if harmonic:
        factor = factor * (1.0 / pl.int_range(1, clean.count() + 1).cast(pl.Float64)).sum()
    adjusted = (ordered * factor).reverse().cum_min().reverse().clip(upper_bound=1.0)
    return adjusted.gather(clean.arg_sort(nulls_last=True).arg_sort())


def benjamini_hochberg(p: IntoExpr) -> pl.Expr:
    r"""Benjamini-Hochberg adjusted p-values, as ``scipy.stats.false_discovery_control``.

    With the m p-values sorted ascending, :math:`p_{(1)} \le \dots \le p_{(m)}`:

    .. math:: \tilde p_{(i)} = \min\Big(1, \min_{j \ge i} \frac{m}{j}\, p_{(j)}\Big)

    returned in the original row order. Rejecting where :math:`\tilde p < \alpha`
    controls the false discovery rate (the expected share of false positives
    among the rejections) at :math:`\alpha` when the tests are independent or
    positively dependent; it does not control the family-wise error rate. Null
    and NaN p-values are left out of m and stay null.

    Parameters
    ----------
    p
        p-values. Accepts expression input. Strings are parsed as column names.

    References
    ----------
    Benjamini and Hochberg, "Controlling the false discovery rate: a practical and
    powerful approach to multiple testing", JRSS B 57(1), 1995.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> p = pl.DataFrame({"p": [0.01, 0.04, 0.03, 0.5]})
    >>> p.select(pr.benjamini_hochberg("p"))["p"].round(6).to_list()
    [0.04, 0.053333, 0.053333, 0.5]

    Sorted: 0.01 x 4/1 = 0.04; 0.03 x 4/2 = 0.06; 0.04 x 4/3 = 0.0533; 0.5 x 4/4;
    each is then the smallest value at or after it, so 0.06 becomes 0.0533.
    """
    return _step_up(p, harmonic=False)


def benjamini_yekutieli(p: IntoExpr) -> pl.Expr:
    r"""Benjamini-Yekutieli adjusted p-values, as ``false_discovery_control(p, method="by")``.

    .. math:: \tilde p_{(i)} = \min\Big(1, \min_{j \ge i} \frac{m\, c(m)}{j}\, p_{(j)}\Big),
              \qquad c(m) = \sum_{i=1}^{m} \frac{1}{i}

    Benjamini-Hochberg times :math:`c(m)`: it controls the false discovery rate
    under any dependence between the tests (comparisons of systems on the same
    queries are dependent), at the price of power. Null and NaN p-values are left
    out of m and stay null.

    Parameters
    ----------
    p
        p-values. Accepts expression input. Strings are parsed as column names.

    References
    ----------
    Benjamini and Yekutieli, "The control of the false discovery rate in multiple
    testing under dependency", Annals of Statistics 29(4), 2001.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> p = pl.DataFrame({"p": [0.01, 0.02]})
    >>> p.select(pr.benjamini_yekutieli("p"))["p"].round(6).to_list()  # c(2) = 1.5
    [0.03, 0.03]

    0.01 x 2/1 x 1.5 = 0.03 and 0.02 x 2/2 x 1.5 = 0.03.
    """
    return _step_up(p, harmonic=True)


def _unadjusted(p: IntoExpr) -> pl.Expr:
    return _in_unit_range(p)


def adjust_pvalues(p: IntoExpr, *, method: Correction = "holm") -> pl.Expr:
    """Adjusted p-values by ``method``, a name in :data:`CORRECTIONS`.

    ``"holm"``, ``"bonferroni"`` (family-wise error), ``"bh"``, ``"by"`` (false
    discovery rate) or ``"none"`` (unchanged; NaN becomes null).

    Every method refuses a p-value outside [0, 1] (infinities included) with a
    ValueError naming the value and its row, as
    ``scipy.stats.false_discovery_control`` does; null and NaN p-values (a test
    that could not be computed) are left out of the count m and stay null.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> df = pl.DataFrame({"p": [0.01, 0.02]})
    >>> df.select(pr.adjust_pvalues("p", method="bonferroni"))["p"].to_list()
    [0.02, 0.04]
    """
    return check_correction(method).adjust(p)


# ----------------------------------------------------------------- registry


@dataclass(frozen=True)
class StatTest:
    """A significance test of the registry :data:`TESTS`.

    Attributes
    ----------
    name
        The name ``compare(test=...)`` and the command line take.
    title
        How reports name it ("paired t-test").
    scope
        ``"pair"``: run on two paired columns at a time (``run(a, b, ...)``);
        ``"systems"``: run on every system of a measure at once
        (``run(x, pairs, ...)``), its p-values already family-wise over them.
    resampling
        Whether ``n_resamples`` and ``seed`` apply.
    alternatives
        The alternatives it can test.
    run
        The matrix core, called with keyword arguments ``alternative``,
        ``n_resamples``, ``seed``, ``progress`` and the test's own options.
    reference
        Where it is defined.
    """

    name: str
    title: str
    scope: Literal["pair", "systems"]
    resampling: bool
    alternatives: tuple[str, ...]
    run: Callable[..., Arrays]
    reference: str

    @property
    def familywise(self) -> bool:
        """True when the p-values already control the family-wise error (Tukey)."""
        return self.scope == "systems"


@dataclass(frozen=True)
class CorrectionMethod:
    """A multiple-comparison correction of the registry :data:`CORRECTIONS`.

    ``controls`` is ``"FWER"`` (family-wise error rate), ``"FDR"`` (false
    discovery rate) or ``"none"``; ``adjust`` maps a p-value column to the
    adjusted one (an expression, usable with ``.over(...)``).
    """

    name: str
    title: str
    controls: Literal["none", "FWER", "FDR"]
    adjust: Callable[[IntoExpr], pl.Expr]
    reference: str


def _t(a: np.ndarray, b: np.ndarray, *, alternative: Alternative, **kw: Any) -> Arrays:
    return ttest_matrix(a, b, alternative=alternative, **_options(kw))


def _wilcoxon(a: np.ndarray, b: np.ndarray, *, alternative: Alternative, **kw: Any) -> Arrays:
    return wilcoxon_matrix(a, b, alternative=alternative, **_options(kw))


def _randomization(a: np.ndarray, b: np.ndarray, **kw: Any) -> Arrays:
    return randomization_matrix(a, b, **kw)


def _bootstrap(a: np.ndarray, b: np.ndarray, **kw: Any) -> Arrays:
    return bootstrap_matrix(a, b, **kw)


def _tukey(x: np.ndarray, pairs: Any, **kw: Any) -> Arrays:
    kw.pop("alternative", None)
    return tukey_hsd_matrix(x, pairs, **_options(kw))


def _randomized_tukey(x: np.ndarray, pairs: Any, **kw: Any) -> Arrays:
    kw.pop("alternative", None)
    return randomized_tukey_matrix(x, pairs, **kw)


def _options(kw: dict[str, Any]) -> dict[str, Any]:
    """Keyword arguments without the resampling ones a test does not take."""
    return {k: v for k, v in kw.items() if k not in ("n_resamples", "seed", "progress")}


TESTS: dict[str, StatTest] = {
    t.name: t
    for t in (
        StatTest(
            "t",
            "paired t-test",
            "pair",
            False,
            _ALTERNATIVES,
            _t,
            "Student 1908; scipy.stats.ttest_rel",
        ),
        StatTest(
            "wilcoxon",
            "Wilcoxon signed-rank test",
            "pair",
            False,
            _ALTERNATIVES,
            _wilcoxon,
            "Wilcoxon 1945; scipy.stats.wilcoxon",
        ),
        StatTest(
            "randomization",
            "randomization test",
            "pair",
            True,
            _ALTERNATIVES,
            _randomization,
            "Fisher 1935; Smucker, Allan and Carterette, CIKM 2007",
        ),
        StatTest(
            "bootstrap",
            "paired bootstrap test",
            "pair",
            True,
            _ALTERNATIVES,
            _bootstrap,
            "Efron and Tibshirani 1993, section 16.4; Sakai, SIGIR 2006",
        ),
        StatTest(
            "tukey",
            "Tukey's HSD test",
            "systems",
            False,
            ("two-sided",),
            _tukey,
            "Tukey 1949; two-way ANOVA without replication, scipy.stats.studentized_range",
        ),
        StatTest(
            "randomized_tukey",
            "randomised Tukey HSD test",
            "systems",
            True,
            ("two-sided",),
            _randomized_tukey,
            "Carterette, ACM TOIS 30(1), 2012",
        ),
    )
}
"""Every significance test, by name: the one list ``compare``, ``report`` and the
command line offer (``typing.get_args(Test)`` names the same tests)."""

CORRECTIONS: dict[str, CorrectionMethod] = {
    c.name: c
    for c in (
        CorrectionMethod("none", "no correction", "none", _unadjusted, ""),
        CorrectionMethod("bonferroni", "Bonferroni correction", "FWER", bonferroni, "Dunn 1961"),
        CorrectionMethod("holm", "Holm correction", "FWER", holm, "Holm 1979"),
        CorrectionMethod(
            "bh",
            "Benjamini-Hochberg correction",
            "FDR",
            benjamini_hochberg,
            "Benjamini and Hochberg 1995",
        ),
        CorrectionMethod(
            "by",
            "Benjamini-Yekutieli correction",
            "FDR",
            benjamini_yekutieli,
            "Benjamini and Yekutieli 2001",
        ),
    )
}
"""Every p-value correction, by name (``typing.get_args(Correction)`` names the same)."""


# ----------------------------------------------------------- meta-evaluation


def _check_orderings(x: np.ndarray, y: np.ndarray) -> None:
    if x.shape != y.shape:
        msg = (
            f"rank_correlation needs two orderings of the same systems. Got {x.size} and {y.size}."
        )
        raise ValueError(msg)


def kendall_tau(x: np.ndarray, y: np.ndarray) -> float:
    r"""Kendall's :math:`\tau_b` of two score vectors, ``scipy.stats.kendalltau(x, y)``.

    .. math:: \tau_b = \frac{C - D}{\sqrt{(C + D + T_x)(C + D + T_y)}}

    over the :math:`\binom{N}{2}` pairs of items: C concordant, D discordant,
    :math:`T_x` tied in x only, :math:`T_y` tied in y only (without ties,
    :math:`(C - D) / \binom{N}{2}`). NaN below two items or for a constant vector.
    """
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    _check_orderings(x, y)
    if x.size < 2:
        return float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a constant input: scipy warns and gives NaN
        return float(_scipy_stats().kendalltau(x, y).statistic)


def tau_ap(reference: np.ndarray, estimate: np.ndarray) -> float:
    r"""AP rank correlation :math:`\tau_{ap}` of ``estimate`` against ``reference``.

    Sort the items by ``estimate``, best (highest) first. For the item at rank
    i, :math:`C(i)` counts the items above it that ``reference`` also ranks
    above it:

    .. math:: \tau_{ap} = \frac{2}{N - 1} \sum_{i=2}^{N} \frac{C(i)}{i - 1} - 1

    It is 1 for the same order and -1 for the reversed one, and weighs a swap
    near the top of ``estimate`` more than one near the bottom. It is not
    symmetric. Ties in either vector raise (the rank i would be arbitrary).

    References
    ----------
    Yilmaz, Aslam and Robertson, "A new rank correlation coefficient for
    information retrieval", SIGIR 2008.
    """
    x = np.asarray(reference, dtype=np.float64)
    y = np.asarray(estimate, dtype=np.float64)
    _check_orderings(x, y)
    n = x.size
    if n < 2:
        return float("nan")
    order = np.argsort(-y, kind="stable")
    xs = x[order]
    above = np.tril(xs[None, :] > xs[:, None], k=-1)  # above[i, j]: j < i and x_j > x_i
    correct = above.sum(axis=1)[1:]
    return float(2.0 / (n - 1) * np.sum(correct / np.arange(1, n)) - 1.0)


def _refuse_ties(values: np.ndarray, what: str, name: str) -> None:
    unique, counts = np.unique(values, return_counts=True)
    if (counts > 1).any():
        tied = unique[counts > 1][0]
        rows = np.flatnonzero(values == tied).tolist()
        msg = (
            f"rank_correlation(method='tau_ap'): {what} ({name!r}) has tied values "
            f"({tied} at rows {rows}); tau_ap is defined for orderings without ties. "
            f"Use method='kendall' (tau-b counts ties) or break the ties first."
        )
        raise ValueError(msg)


def rank_correlation(a: IntoExpr, b: IntoExpr, *, method: RankMethod = "kendall") -> pl.Expr:
    r"""Rank correlation between two orderings of the same systems, one row per system.

    ``"kendall"``: Kendall's :math:`\tau_b` (``scipy.stats.kendalltau``),

    .. math:: \tau_b = \frac{C - D}{\sqrt{(C + D + T_a)(C + D + T_b)}}

    with C concordant and D discordant pairs of systems, :math:`T_a`, :math:`T_b`
    pairs tied in one column only. ``"tau_ap"``: the AP correlation of Yilmaz,
    Aslam and Robertson, with ``a`` the reference ordering and ``b`` the one
    judged (systems sorted by b, best first; :math:`C(i)` of the i-1 systems above
    the i-th are also above it in a):

    .. math:: \tau_{ap} = \frac{2}{N - 1} \sum_{i=2}^{N} \frac{C(i)}{i - 1} - 1

    Both are 1 for the same order and -1 for the reversed one; :math:`\tau_{ap}`
    weighs swaps among the top systems more, and is not symmetric.

    Parameters
    ----------
    a, b
        Scores of the same systems (e.g. two measure columns of
        :func:`~polars_rankeval.mean_scores`, or one measure under two qrels
        versions or two topic subsets, joined on ``system``), higher better; a
        column named by a measure declared ``better="lower"`` (FallOut, Unjudged,
        RBPResid, ...) is read lowest first, so that both orderings put the best
        systems first.
        Accepts expression input. Strings are parsed as column names.
    method
        ``"kendall"`` or ``"tau_ap"``.

    Returns
    -------
    pl.Expr
        A Float64 scalar (per group in ``group_by(...).agg(...)``); NaN below two
        systems. ``tau_ap`` refuses ties; nulls, NaN and infinities raise.

    References
    ----------
    Kendall, "A new measure of rank correlation", Biometrika 30, 1938.
    Yilmaz, Aslam and Robertson, "A new rank correlation coefficient for
    information retrieval", SIGIR 2008.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> means = pl.DataFrame({"system": ["s1", "s2", "s3", "s4"],
    ...                       "AP": [0.40, 0.30, 0.20, 0.10],
    ...                       "P@10": [0.50, 0.60, 0.30, 0.20]})
    >>> means.select(kendall=pr.rank_correlation("AP", "P@10"),
    ...              tau_ap=pr.rank_correlation("AP", "P@10", method="tau_ap"))
    shape: (1, 2)
    ┌──────────┬──────────┐
    │ kendall  ┆ tau_ap   │
    │ ---      ┆ ---      │
    │ f64      ┆ f64      │
    ╞══════════╪══════════╡
    │ 0.666667 ┆ 0.333333 │
    └──────────┴──────────┘

    One of the 6 pairs is swapped: Kendall (5 - 1) / 6. P@10 orders s2, s1, s3,
    s4; by AP, s1 is not below s2 (0/1), while s3 and s4 sit below everything
    above them (2/2, 3/3): 2/3 * (0 + 1 + 1) - 1 = 1/3. The swap is at the top.
    """
    check_choice("method", method, RankMethod)

    def run(series: Sequence[pl.Series]) -> pl.Series:
        x = _best_first(_values(series[0], "a", "rank_correlation"), series[0].name)
        y = _best_first(_values(series[1], "b", "rank_correlation"), series[1].name)
        if method == "kendall":
            value = kendall_tau(x, y)
        else:
            _refuse_ties(x, "a", series[0].name)
            _refuse_ties(y, "b", series[1].name)
            value = tau_ap(x, y)
        return pl.Series(series[0].name, [value], dtype=pl.Float64)

    return pl.map_groups([col(a), col(b)], run, return_dtype=pl.Float64, returns_scalar=True)


def _best_first(values: np.ndarray, name: str) -> np.ndarray:
    """``values`` with higher better: negated for a measure declared ``better="lower"``
    (FallOut, Unjudged, ...; :func:`~polars_rankeval.measures.measure_better`)."""
    return -values if measure_better(name) == "lower" else values


def paired_t_power(
    n: int, diff: float, std: float, *, alpha: float = 0.05, alternative: Alternative = "two-sided"
) -> float:
    r"""Power of the paired t-test on n topics to detect a true mean difference ``diff``.

    Under the alternative, :math:`t = \bar d / (s_d/\sqrt n)` follows a noncentral
    t distribution with :math:`n - 1` degrees of freedom and noncentrality
    :math:`\lambda = \sqrt{n}\, \delta / \sigma_d` (``scipy.stats.nct``):

    .. math:: 1 - \beta = P(T'_{n-1,\lambda} \ge t_{n-1,1-\alpha/2})
              + P(T'_{n-1,\lambda} \le -t_{n-1,1-\alpha/2})

    (one-sided, ``"greater"`` or ``"less"``: :math:`P(T' \ge t_{n-1,1-\alpha})`
    with :math:`\lambda` from :math:`|\delta|`). The lower tail is computed as
    :math:`P(T'_{n-1,-\lambda} \ge t_{n-1,1-\alpha/2})` (:math:`T'_{-\lambda}` is
    distributed as :math:`-T'_{\lambda}`), which stays defined for any n >= 2 and
    :math:`\lambda`.

    Parameters
    ----------
    n
        Number of topics, >= 2.
    diff
        The true difference in means :math:`\delta`.
    std
        Standard deviation :math:`\sigma_d` of the per-topic differences.
    alpha, alternative
        Significance level and alternative of the test.

    Examples
    --------
    >>> round(paired_t_power(50, 0.05, 0.2), 4)  # lambda = sqrt(50) * 0.25 = 1.77
    0.4104
    >>> round(paired_t_power(2, 5.0, 0.2), 4)  # 2 topics, lambda = sqrt(2) * 25 = 35.4
    0.9945
    """
    check_alternative(alternative)
    _check_design(diff, std, alpha, 0.5)
    if not isinstance(n, int | np.integer) or n < 2:
        msg = f"n must be an int >= 2 (topics). Got {n!r} instead."
        raise ValueError(msg)
    sps = _scipy_stats()
    df = n - 1
    nc = np.sqrt(n) * abs(diff) / std
    if alternative == "two-sided":
        crit = sps.t.ppf(1.0 - alpha / 2.0, df)
        # the lower tail P(T'_lambda <= -c) as the upper tail P(T'_-lambda >= c):
        # scipy's nct.cdf far in the lower tail is NaN for a large lambda on few df
        return float(sps.nct.sf(crit, df, nc) + sps.nct.sf(crit, df, -nc))
    return float(sps.nct.sf(sps.t.ppf(1.0 - alpha, df), df, nc))


def _check_design(diff: float, std: float, alpha: float, power: float) -> None:
    if not (np.isfinite(diff) and diff != 0):
        msg = (
            f"diff (the smallest difference to detect) must be non-zero and finite. "
            f"Got {diff!r} instead."
        )
        raise ValueError(msg)
    if not (np.isfinite(std) and std > 0):
        msg = f"std (of the per-topic differences) must be > 0. Got {std!r} instead."
        raise ValueError(msg)
    if not 0.0 < alpha < 1.0:
        msg = f"alpha must be strictly between 0 and 1. Got {alpha!r} instead."
        raise ValueError(msg)
    if not 0.0 < power < 1.0:
        msg = f"power must be strictly between 0 and 1 (e.g. 0.8). Got {power!r} instead."
        raise ValueError(msg)


def topic_set_size(
    diff: float,
    std: float,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    alternative: Alternative = "two-sided",
    max_topics: int = 1_000_000,
) -> int:
    r"""Topics needed for a paired t-test to detect a difference ``diff`` with ``power``.

    Sakai's topic set size design: the smallest n with

    .. math:: P(T'_{n-1,\lambda} \ge t_{n-1,1-\alpha/2})
              + P(T'_{n-1,\lambda} \le -t_{n-1,1-\alpha/2}) \ge 1 - \beta,
              \qquad \lambda = \sqrt{n}\,\frac{\delta}{\sigma_d}

    (:func:`paired_t_power`, the noncentral t of ``scipy.stats.nct``), found by
    bisection. :math:`\sigma_d` is the standard deviation of the per-topic
    differences between two systems, estimated from pilot data: the sample
    standard deviation of the differences of a pair, or :math:`\sqrt{2\,MSE}`
    with MSE the residual variance of a topic-by-system matrix
    (:func:`anova_residual`), as Sakai recommends.

    Parameters
    ----------
    diff
        Minimum detectable difference :math:`\delta` in mean (e.g. 0.05 of AP).
    std
        :math:`\sigma_d`, > 0.
    alpha
        Significance level (Type I error).
    power
        :math:`1 - \beta` (Type II error :math:`\beta`), e.g. 0.8.
    alternative
        ``"two-sided"`` (default) or one-sided (``"greater"`` / ``"less"``).
    max_topics
        Give up (ValueError) beyond this many topics.

    Returns
    -------
    int
        The number of topics, at least 2.

    References
    ----------
    Sakai, "Topic set size design", Information Retrieval Journal 19(3), 2016;
    Sakai, *Laboratory Experiments in Information Retrieval*, Springer 2018, ch. 6.
    Sakai's Excel tools approximate the noncentral t (Nagata 2003), so their
    answers can differ from this exact one by a topic or so.

    Examples
    --------
    >>> topic_set_size(0.05, 0.2)  # detect 0.05 when differences vary by 0.2
    128

    The normal approximation :math:`((z_{.975} + z_{.8})\, \sigma/\delta)^2 +
    z_{.975}^2/2 = (2.8016 \times 4)^2 + 1.92 = 127.5` agrees.
    """
    check_alternative(alternative)
    _check_design(diff, std, alpha, power)
    check_int("max_topics", max_topics, minimum=2)

    def enough(n: int) -> bool:
        return paired_t_power(n, diff, std, alpha=alpha, alternative=alternative) >= power

    high = 2
    while not enough(high):
        if high >= max_topics:
            msg = (
                f"topic_set_size: more than max_topics={max_topics} topics are needed to "
                f"detect diff={diff} with std={std} at power {power}."
            )
            raise ValueError(msg)
        high = min(2 * high, max_topics)
    low = max(2, high // 2)  # not enough at low, unless low == 2 == high
    if enough(low):
        return low
    while high - low > 1:  # invariant: not enough(low), enough(high)
        mid = (low + high) // 2
        low, high = (low, mid) if enough(mid) else (mid, high)
    return high
