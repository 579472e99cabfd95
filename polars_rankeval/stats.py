r"""Paired significance tests, multiple-testing corrections and intervals.

Two layers, one computation:

- **Expressions** (:func:`paired_ttest`, :func:`wilcoxon`, :func:`randomization_test`,
  :func:`bootstrap_test`, :func:`mean_interval`, :func:`holm`, :func:`bonferroni`)
  over the columns of a wide per-query frame (one column per system). Each test
  returns a struct (``statistic``, ``p_value``, ``mean_diff``, ``effect_size``,
  ``n``) and works in ``select`` and in ``group_by(...).agg(...)``.
- **Matrix cores** (:func:`ttest_matrix`, :func:`wilcoxon_matrix`,
  :func:`randomization_matrix`, :func:`bootstrap_matrix`, :func:`interval_matrix`):
  numpy arrays of shape ``(n_queries, n_comparisons)``, one comparison per column.
  The expressions call them with one column; :func:`polars_rankeval.compare` calls
  them with every comparison at once, so resampling tests cost one matrix product
  per block of resamples, whatever the number of systems and measures.

Pairs are rows: row i of ``a`` and row i of ``b`` are the same query. Differences
are ``d = a - b``, so a positive ``mean_diff`` means ``a`` scored higher.

Resampling is seeded: the sign flips (randomization) and query resamples
(bootstrap) depend only on ``seed``, the number of queries and ``n_resamples``,
so an expression and a :func:`~polars_rankeval.compare` row with the same seed
give the same p-value.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import Any, Literal, TypeAlias

import numpy as np
import polars as pl

from polars_rankeval._typing import IntoExpr

Alternative: TypeAlias = Literal["two-sided", "greater", "less"]
IntervalKind: TypeAlias = Literal["normal", "t", "bootstrap"]
Correction: TypeAlias = Literal["none", "bonferroni", "holm"]
Progress: TypeAlias = Callable[[int, int], None]
Arrays: TypeAlias = dict[str, np.ndarray]

RESAMPLE_BLOCK = 512
"""Resamples drawn per block (one matrix product each); fixed, so results do not
depend on how many comparisons share the work."""

TIE_TOLERANCE = 1e-10
"""A resampled statistic within ``TIE_TOLERANCE * sum(|d|)`` of the observed one
counts as equally extreme (floating-point sums of the same values in another order)."""

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
    }
)
_ALTERNATIVES = ("two-sided", "greater", "less")


# --------------------------------------------------------------------- checks


def check_alternative(alternative: str) -> None:
    """Raise unless ``alternative`` is one of scipy's three."""
    if alternative not in _ALTERNATIVES:
        msg = f"alternative must be 'two-sided', 'greater' or 'less'. Got {alternative!r} instead."
        raise ValueError(msg)


def check_level(level: float) -> None:
    """Raise unless ``0 < level < 1``."""
    if not 0.0 < level < 1.0:
        msg = f"level must be strictly between 0 and 1 (e.g. 0.95). Got {level!r} instead."
        raise ValueError(msg)


def check_resamples(n_resamples: int) -> None:
    """Raise unless ``n_resamples`` is an int >= 1."""
    if not isinstance(n_resamples, int) or isinstance(n_resamples, bool) or n_resamples < 1:
        msg = f"n_resamples must be an int >= 1. Got {n_resamples!r} instead."
        raise ValueError(msg)


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


def diff_summary(a: np.ndarray, b: np.ndarray) -> Arrays:
    r"""Mean difference, Cohen's :math:`d_z` and n of paired columns.

    .. math:: d_z = \bar d / s_d

    where :math:`s_d` is the sample standard deviation (ddof=1) of the
    differences; NaN when :math:`s_d = 0` or n < 2.
    """
    d = _as_matrix(a) - _as_matrix(b)
    n = d.shape[0]
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = d.sum(axis=0) / n if n else np.full(d.shape[1], np.nan)
        sd = d.std(axis=0, ddof=1) if n > 1 else np.full(d.shape[1], np.nan)
        effect = np.where(sd > 0, mean / np.where(sd > 0, sd, 1.0), np.nan)
    return {"mean_diff": mean, "effect_size": effect, "n": np.full(d.shape[1], n)}


def ttest_matrix(a: np.ndarray, b: np.ndarray, *, alternative: Alternative = "two-sided") -> Arrays:
    """Paired t-test per column: ``scipy.stats.ttest_rel(a, b, axis=0)`` plus summaries."""
    check_alternative(alternative)
    a, b = _as_matrix(a), _as_matrix(b)
    from scipy import stats as sps  # imported on use: it is slow to import

    res = sps.ttest_rel(a, b, axis=0, alternative=alternative)
    return {
        "statistic": np.atleast_1d(np.asarray(res.statistic, dtype=np.float64)),
        "p_value": np.atleast_1d(np.asarray(res.pvalue, dtype=np.float64)),
        **diff_summary(a, b),
    }


def wilcoxon_matrix(
    a: np.ndarray,
    b: np.ndarray,
    *,
    zero_method: Literal["wilcox", "pratt", "zsplit"] = "wilcox",
    correction: bool = False,
    alternative: Alternative = "two-sided",
    method: Literal["auto", "exact", "asymptotic"] = "auto",
) -> Arrays:
    """Wilcoxon signed-rank test per column: ``scipy.stats.wilcoxon`` on each column."""
    check_alternative(alternative)
    a, b = _as_matrix(a), _as_matrix(b)
    from scipy import stats as sps

    stat = np.empty(a.shape[1])
    pval = np.empty(a.shape[1])
    for j in range(a.shape[1]):  # one call per column: scipy's 'auto' decides per sample
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

    Yields float arrays of shape ``(block, n)`` whose row r counts how often each
    query was drawn (n draws with replacement), so ``counts @ x / n`` is the
    resampled mean. Depends only on ``(n, n_resamples, seed)``.
    """
    rng = np.random.default_rng(seed)
    for start in range(0, n_resamples, RESAMPLE_BLOCK):
        rows = min(RESAMPLE_BLOCK, n_resamples - start)
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
    """
    check_alternative(alternative)
    check_resamples(n_resamples)
    d = _as_matrix(a) - _as_matrix(b)
    n, m = d.shape
    if n == 0:
        return _empty_test(m)
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
    ``ci_low, ci_high`` of the mean difference.
    """
    check_alternative(alternative)
    check_resamples(n_resamples)
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
    return {
        "statistic": mean,
        "p_value": (1.0 + hits) / (1.0 + n_resamples),
        **diff_summary(d, 0.0),
        "ci_low": mean + low,
        "ci_high": mean + high,
    }


def interval_matrix(
    x: np.ndarray,
    *,
    interval: IntervalKind = "normal",
    level: float = 0.95,
    n_resamples: int = 10_000,
    seed: int | None = 0,
) -> Arrays:
    r"""Mean, standard deviation, standard error and interval of each column.

    .. math:: SE = s / \sqrt{n}, \qquad
              \text{normal: } \bar x \pm z_{1-\alpha/2} SE, \quad
              \text{t: } \bar x \pm t_{n-1, 1-\alpha/2} SE

    with :math:`s` the sample standard deviation (ddof=1) and
    :math:`\alpha = 1 - level`; ``bootstrap`` is the percentile interval of
    ``n_resamples`` resampled means. std, stderr and the interval are NaN when n < 2.
    """
    check_level(level)
    if interval not in ("normal", "t", "bootstrap"):
        msg = f"interval must be 'normal', 't' or 'bootstrap'. Got {interval!r} instead."
        raise ValueError(msg)
    x = _as_matrix(x)
    n, m = x.shape
    nan = np.full(m, np.nan)
    mean = x.mean(axis=0) if n else nan
    std = x.std(axis=0, ddof=1) if n > 1 else nan
    stderr = std / np.sqrt(n) if n > 1 else nan
    tail = (1.0 - level) / 2.0
    if n < 2:
        low, high = nan, nan
    elif interval == "bootstrap":
        check_resamples(n_resamples)
        means = bootstrap_means(x, n_resamples=n_resamples, seed=seed)
        low, high = np.quantile(means, [tail, 1.0 - tail], axis=0)
    else:
        from scipy import stats as sps

        dist = sps.norm() if interval == "normal" else sps.t(n - 1)
        half = dist.ppf(1.0 - tail) * stderr
        low, high = mean - half, mean + half
    return {
        "mean": mean,
        "std": std,
        "stderr": stderr,
        "ci_low": low,
        "ci_high": high,
        "n": np.full(m, n),
    }


# ------------------------------------------------------------- expressions


def _col(expr: IntoExpr) -> pl.Expr:
    return pl.col(expr) if isinstance(expr, str) else expr


def _values(series: pl.Series, what: str, function: str) -> np.ndarray:
    """A Series as float64 numpy, refusing nulls (a query without a value cannot be paired)."""
    if series.null_count():
        msg = (
            f"{function}: {what} ({series.name!r}) has {series.null_count()} null values. "
            f"Pairing by query needs a value on both sides: drop those rows first "
            f"(.drop_nulls()) or score them 0 (.fill_null(0.0))."
        )
        raise ValueError(msg)
    return series.cast(pl.Float64).to_numpy()


def _struct_row(arrays: Arrays, dtype: pl.Struct, name: str) -> pl.Series:
    row: dict[str, Any] = {}
    for field in dtype.fields:
        value = arrays[field.name][0]
        row[field.name] = int(value) if field.dtype == pl.UInt32 else float(value)
    return pl.Series(name, [row], dtype=dtype)


def _paired_expr(
    a: IntoExpr,
    b: IntoExpr,
    core: Callable[..., Arrays],
    function: str,
    dtype: pl.Struct = TEST_DTYPE,
) -> pl.Expr:
    """Wrap a matrix core as a scalar struct expression over two columns."""

    def run(series: list[pl.Series]) -> pl.Series:
        x = _values(series[0], "a", function)
        y = _values(series[1], "b", function)
        return _struct_row(core(x, y), dtype, series[0].name)

    return pl.map_groups([_col(a), _col(b)], run, return_dtype=dtype, returns_scalar=True)


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
    A null in either column raises: drop or fill those rows first. When every
    difference is equal, t is undefined and scipy (hence this) gives NaN.

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
        zero differences included). Named after ``a``.

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
    ``TIE_TOLERANCE`` times :math:`\sum |d_i|` count as equal.

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
    check_resamples(n_resamples)

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
    (:math:`\bar d + \bar d^*` at :math:`(1 \mp level)/2`).

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
    check_resamples(n_resamples)
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
) -> pl.Expr:
    r"""Mean of a column with its standard error and a confidence interval.

    .. math:: SE = \frac{s}{\sqrt{n}}, \qquad
              \bar x \pm z_{1-\alpha/2}\, SE \ (\text{normal}), \qquad
              \bar x \pm t_{n-1,\,1-\alpha/2}\, SE \ (\text{t})

    where :math:`s` is the sample standard deviation (ddof=1) and
    :math:`\alpha = 1 - level` (z = 1.96 at 95%). ``"bootstrap"`` gives the
    percentile interval of ``n_resamples`` means of queries drawn with replacement.

    Parameters
    ----------
    x
        Per-query values. Accepts expression input. Strings are parsed as column names.
    interval
        ``"normal"``, ``"t"`` or ``"bootstrap"``.
    level
        Coverage, strictly between 0 and 1.
    n_resamples, seed
        Bootstrap resamples and seed (``interval="bootstrap"`` only).

    Returns
    -------
    pl.Expr
        A struct ``mean, std, stderr, ci_low, ci_high, n``; std, stderr and the
        interval are NaN for fewer than two values. A null value raises.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> per_query = pl.DataFrame({"AP": [0.2, 0.4, 0.6, 0.8]})
    >>> per_query.select(pr.mean_interval("AP", interval="t")).unnest("AP")
    shape: (1, 6)
    ┌──────┬──────────┬──────────┬──────────┬──────────┬─────┐
    │ mean ┆ std      ┆ stderr   ┆ ci_low   ┆ ci_high  ┆ n   │
    │ ---  ┆ ---      ┆ ---      ┆ ---      ┆ ---      ┆ --- │
    │ f64  ┆ f64      ┆ f64      ┆ f64      ┆ f64      ┆ u32 │
    ╞══════╪══════════╪══════════╪══════════╪══════════╪═════╡
    │ 0.5  ┆ 0.258199 ┆ 0.129099 ┆ 0.089148 ┆ 0.910852 ┆ 4   │
    └──────┴──────────┴──────────┴──────────┴──────────┴─────┘

    stderr = 0.2582 / sqrt(4); the half-width is t(3, 0.975) = 3.182 times it.
    """
    check_level(level)
    if interval not in ("normal", "t", "bootstrap"):
        msg = f"interval must be 'normal', 't' or 'bootstrap'. Got {interval!r} instead."
        raise ValueError(msg)

    def run(series: list[pl.Series]) -> pl.Series:
        values = _values(series[0], "x", "mean_interval")
        out = interval_matrix(
            values, interval=interval, level=level, n_resamples=n_resamples, seed=seed
        )
        return _struct_row(out, INTERVAL_DTYPE, series[0].name)

    return pl.map_groups([_col(x)], run, return_dtype=INTERVAL_DTYPE, returns_scalar=True)


# ------------------------------------------------------------- corrections


def bonferroni(p: IntoExpr) -> pl.Expr:
    r"""Bonferroni-adjusted p-values: :math:`\min(1, m\,p_i)` over the m p-values.

    m counts the non-null, non-NaN p-values of the column (or of the group in
    ``group_by(...).agg`` / ``.over(...)``); null and NaN stay null.

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
    clean = _col(p).fill_nan(None)
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
    clean = _col(p).fill_nan(None)
    ordered = clean.sort(nulls_last=True)
    factor = clean.count().cast(pl.Float64) - pl.int_range(pl.len())
    adjusted = (ordered * factor).cum_max().clip(upper_bound=1.0)
    return adjusted.gather(clean.arg_sort(nulls_last=True).arg_sort())


def adjust_pvalues(p: IntoExpr, *, method: Correction = "holm") -> pl.Expr:
    """Adjusted p-values by ``method``: ``"holm"``, ``"bonferroni"`` or ``"none"`` (unchanged).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> df = pl.DataFrame({"p": [0.01, 0.02]})
    >>> df.select(pr.adjust_pvalues("p", method="bonferroni"))["p"].to_list()
    [0.02, 0.04]
    """
    if method == "holm":
        return holm(p)
    if method == "bonferroni":
        return bonferroni(p)
    if method == "none":
        return _col(p).fill_nan(None)
    msg = f"correction must be 'none', 'bonferroni' or 'holm'. Got {method!r} instead."
    raise ValueError(msg)
