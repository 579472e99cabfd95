"""Compare systems query by query on the long per-query output of ``evaluate``.

:func:`compare` runs one paired test per (measure, pair of systems) and corrects
the p-values for multiple comparisons; :func:`summarize` gives each system's mean,
standard error and interval per measure. Both take the frame that
:func:`polars_rankeval.evaluate` returns for a run with a ``system`` column
(one row per system and query, one column per measure).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import combinations
from typing import Any, Literal, TypeAlias

import numpy as np
import polars as pl

from polars_rankeval._typing import FrameT, Missing
from polars_rankeval.stats import (
    Alternative,
    Arrays,
    Correction,
    IntervalKind,
    adjust_pvalues,
    bootstrap_matrix,
    check_alternative,
    check_level,
    check_resamples,
    interval_matrix,
    randomization_matrix,
    stderr_progress,
    ttest_matrix,
    wilcoxon_matrix,
)

Test: TypeAlias = Literal["t", "wilcoxon", "randomization", "bootstrap"]
Family: TypeAlias = Literal["measure", "all"]

RESULT_COLUMNS = (
    "measure",
    "system_a",
    "system_b",
    "mean_a",
    "mean_b",
    "diff",
    "statistic",
    "p_value",
    "p_adjusted",
    "significant",
    "effect_size",
    "n",
    "wins",
    "ties",
    "losses",
)
COLUMN_BLOCK = 1024
"""Comparisons tested at once (bounds memory: three (queries x block) float arrays)."""


@dataclass(frozen=True)
class Aligned:
    """Per-query values on one query set: ``values[m][i, s]`` is system s on query i."""

    systems: list[Any]
    queries: pl.Series
    values: dict[str, np.ndarray]


def _measure_columns(
    schema: pl.Schema, measures: str | Iterable[str] | None, keys: list[str]
) -> list[str]:
    """The measure columns to use: given ones (checked) or every column but the keys."""
    if measures is None:
        cols = [c for c in schema.names() if c not in keys]
    else:
        cols = [measures] if isinstance(measures, str) else [str(m) for m in measures]
    for c in cols:
        if c not in schema:
            have = ", ".join(repr(x) for x in schema.names() if x not in keys)
            msg = f"per_query has no measure column {c!r} (it has: {have})."
            raise ValueError(msg)
        if not schema[c].is_numeric():
            msg = f"measure column {c!r} must be numeric. Got dtype {schema[c]}."
            raise TypeError(msg)
    if not cols:
        msg = "per_query has no measure columns to compare (only the key columns)."
        raise ValueError(msg)
    return cols


def _check_keys(frame: pl.DataFrame, system: str, query: str) -> None:
    for name, what in ((system, "system"), (query, "query")):
        if name not in frame.columns:
            msg = (
                f"per_query has no {what} column {name!r} (it has: "
                f"{', '.join(repr(c) for c in frame.columns)}). Pass {what}=<column name>; "
                f"evaluate() keeps a 'system' column when the run has one."
            )
            raise ValueError(msg)
        if frame[name].null_count():
            msg = f"per_query column {name!r} has {frame[name].null_count()} null ids."
            raise ValueError(msg)


def _raise_duplicate(frame: pl.DataFrame, system: str, query: str) -> None:
    dup = frame.group_by(system, query).len().filter(pl.col("len") > 1).sort(system, query)
    row = dup.row(0, named=True)
    msg = (
        f"per_query has {row['len']} rows for {system}={row[system]!r}, "
        f"{query}={row[query]!r}; expected one row per system and query."
    )
    raise ValueError(msg)


def _lacking(
    present: np.ndarray, systems: pl.Series, queries: pl.Series, system: str, query: str
) -> pl.DataFrame:
    """``system, query`` (a list): the queries each incomplete system lacks."""
    rows = [
        (systems[s], queries.gather(np.flatnonzero(~present[:, s])).to_list())
        for s in range(systems.len())
        if not present[:, s].all()
    ]
    return pl.DataFrame(
        {system: pl.Series([r[0] for r in rows], dtype=systems.dtype), query: [r[1] for r in rows]}
    )


def _missing_message(lacking: pl.DataFrame, system: str, query: str, n_common: int) -> str:
    parts = []
    for row in lacking.head(5).iter_rows(named=True):
        shown = ", ".join(str(q) for q in row[query][:10])
        more = ", ..." if len(row[query]) > 10 else ""
        parts.append(f"system {row[system]!r} lacks {len(row[query])} ({shown}{more})")
    more_systems = f"; and {lacking.height - 5} more systems" if lacking.height > 5 else ""
    return (
        "Systems do not share the same queries, so they cannot be paired by query: "
        f"{'; '.join(parts)}{more_systems}. Pass missing='drop' to keep only the "
        f"{n_common} queries every system has, or missing='zero' to score absent "
        "queries 0 (as evaluate(..., missing='zero') does for unretrieved queries)."
    )


def align(
    per_query: FrameT,
    measures: str | Iterable[str] | None = None,
    *,
    system: str = "system",
    query: str = "query",
    missing: Missing = "error",
) -> Aligned:
    """Pair per-query values by query: one (queries x systems) array per measure.

    Parameters
    ----------
    per_query
        Long per-query frame: ``system, query`` and one column per measure.
    measures
        Measure columns; default every column but ``system`` and ``query``.
    missing
        What to do when systems do not have the same queries: ``"error"``
        (default; the message names the missing queries), ``"drop"`` (keep the
        queries every system has) or ``"zero"`` (absent queries score 0).

    Returns
    -------
    Aligned
        Systems and queries sorted, and ``values[measure]`` of shape
        ``(n_queries, n_systems)``.

    Examples
    --------
    >>> import polars as pl
    >>> pq = pl.DataFrame({"system": ["a", "a", "b"], "query": ["q1", "q2", "q1"],
    ...                    "AP": [0.5, 0.25, 1.0]})
    >>> align(pq, missing="zero").values["AP"]  # rows q1, q2; columns a, b
    array([[0.5 , 1.  ],
           [0.25, 0.  ]])
    >>> align(pq)
    Traceback (most recent call last):
    ...
    ValueError: Systems do not share the same queries, ... system 'b' lacks 1 (q2). ...
    """
    if missing not in ("drop", "zero", "error"):
        msg = f"missing must be 'error', 'drop' or 'zero'. Got {missing!r} instead."
        raise ValueError(msg)
    frame = per_query.lazy().collect() if isinstance(per_query, pl.LazyFrame) else per_query
    _check_keys(frame, system, query)
    cols = _measure_columns(frame.schema, measures, [system, query])
    frame = frame.select(system, query, *cols)
    for c in cols:
        if frame[c].null_count():
            bad = frame.filter(pl.col(c).is_null()).row(0, named=True)
            msg = (
                f"measure column {c!r} has {frame[c].null_count()} null values (first: "
                f"{system}={bad[system]!r}, {query}={bad[query]!r}); fill or drop them first."
            )
            raise ValueError(msg)
    systems = frame[system].unique().sort()
    queries = frame[query].unique().sort()
    s_idx = systems.search_sorted(frame[system]).to_numpy()
    q_idx = queries.search_sorted(frame[query]).to_numpy()
    present = np.zeros((queries.len(), systems.len()), dtype=bool)
    present[q_idx, s_idx] = True
    if present.sum() < frame.height:
        _raise_duplicate(frame, system, query)
    keep = np.arange(queries.len())
    if not present.all():
        lacking = _lacking(present, systems, queries, system, query)
        common = present.all(axis=1)
        if missing == "error":
            raise ValueError(_missing_message(lacking, system, query, int(common.sum())))
        if missing == "drop":
            keep = np.flatnonzero(common)
            queries = queries.gather(keep)
    values = {}
    for c in cols:
        grid = np.zeros(present.shape)  # missing="zero": absent queries score 0
        grid[q_idx, s_idx] = frame[c].cast(pl.Float64).to_numpy()
        values[c] = np.asfortranarray(grid[keep])
    return Aligned(systems=systems.to_list(), queries=queries, values=values)


def _pairs(systems: list[Any], baseline: Any) -> list[tuple[int, int]]:
    """(a, b) column indices: every system against the baseline, or every pair."""
    if baseline is None:
        return list(combinations(range(len(systems)), 2))
    if baseline not in systems:
        shown = ", ".join(repr(s) for s in systems[:20])
        msg = f"baseline {baseline!r} is not a system in per_query (systems: {shown})."
        raise ValueError(msg)
    b = systems.index(baseline)
    return [(a, b) for a in range(len(systems)) if a != b]


def _gather(
    values: dict[str, np.ndarray], block: list[tuple[str, int]], idx: np.ndarray
) -> np.ndarray:
    """Columns ``values[m][:, idx[j]]`` for each (m, j) of the block, as one C-ordered array."""
    parts = []
    for m in dict.fromkeys(m for m, _ in block):
        js = [j for mm, j in block if mm == m]
        parts.append(values[m][:, idx[js]])
    return np.ascontiguousarray(np.concatenate(parts, axis=1))


def _run_test(
    a: np.ndarray,
    b: np.ndarray,
    *,
    test: Test,
    alternative: Alternative,
    n_resamples: int,
    seed: int | None,
    options: Mapping[str, Any],
    progress_label: str,
) -> Arrays:
    """One test over every column of a and b (the matrix cores of :mod:`stats`)."""
    if test == "t":
        return ttest_matrix(a, b, alternative=alternative, **options)
    if test == "wilcoxon":
        return wilcoxon_matrix(a, b, alternative=alternative, **options)
    progress = stderr_progress(progress_label)
    if test == "randomization":
        return randomization_matrix(
            a,
            b,
            n_resamples=n_resamples,
            seed=seed,
            alternative=alternative,
            progress=progress,
            **options,
        )
    return bootstrap_matrix(
        a,
        b,
        n_resamples=n_resamples,
        seed=seed,
        alternative=alternative,
        progress=progress,
        **options,
    )


def _check_compare_options(test: str, correction: str, alpha: float, family: str) -> None:
    if test not in ("t", "wilcoxon", "randomization", "bootstrap"):
        msg = f"test must be 't', 'wilcoxon', 'randomization' or 'bootstrap'. Got {test!r}."
        raise ValueError(msg)
    if correction not in ("none", "bonferroni", "holm"):
        msg = f"correction must be 'none', 'bonferroni' or 'holm'. Got {correction!r} instead."
        raise ValueError(msg)
    if not 0.0 < alpha < 1.0:
        msg = f"alpha must be strictly between 0 and 1. Got {alpha!r} instead."
        raise ValueError(msg)
    if family not in ("measure", "all"):
        msg = f"family must be 'measure' or 'all'. Got {family!r} instead."
        raise ValueError(msg)


def compare(
    per_query: FrameT,
    measures: str | Iterable[str] | None = None,
    *,
    baseline: Any = None,
    test: Test = "t",
    correction: Correction = "none",
    alpha: float = 0.05,
    alternative: Alternative = "two-sided",
    n_resamples: int = 10_000,
    seed: int | None = 0,
    family: Family = "measure",
    system: str = "system",
    query: str = "query",
    missing: Missing = "error",
    test_options: Mapping[str, Any] | None = None,
) -> pl.DataFrame:
    r"""Paired significance tests between systems, for every measure at once.

    For each measure and each pair (every system against ``baseline``, or every
    pair of systems when it is None), the per-query values are paired by query
    and tested; p-values are then adjusted for the number of comparisons.

    .. math:: \text{diff} = \bar a - \bar b = \frac{1}{n}\sum_q (a_q - b_q)

    Parameters
    ----------
    per_query
        Output of :func:`polars_rankeval.evaluate` for a run with a ``system``
        column: ``system, query`` and one Float64 column per measure.
    measures
        Measure columns to compare; default all but ``system`` and ``query``.
    baseline
        A system id: compare every other system (``system_a``) against it
        (``system_b``). None: every pair of systems, in sorted order.
    test
        ``"t"`` (:func:`~polars_rankeval.paired_ttest`, = scipy ``ttest_rel``),
        ``"wilcoxon"`` (= scipy ``wilcoxon``), ``"randomization"`` (Fisher's
        sign-flip test, :func:`~polars_rankeval.randomization_test`) or
        ``"bootstrap"`` (:func:`~polars_rankeval.bootstrap_test`).
    correction
        ``"none"``, ``"bonferroni"`` or ``"holm"``: multiple-comparison
        adjustment of the p-values within each ``family``.
    alpha
        ``significant`` is ``p_adjusted < alpha``.
    alternative
        ``"two-sided"``, ``"greater"`` (a better than b) or ``"less"``.
    n_resamples, seed
        Resamples and seed of the randomization and bootstrap tests. Every
        comparison uses the same seeded resamples, so a row equals the
        expression helper on the same two columns with the same seed.
    family
        The set of comparisons one correction spans: ``"measure"`` (default; all
        pairs of one measure) or ``"all"`` (every row of the result).
    system, query
        Column names in ``per_query``.
    missing
        Systems with different query sets: ``"error"`` (default; the message
        names the missing queries), ``"drop"`` (test on the queries every system
        has) or ``"zero"`` (absent queries score 0).
    test_options
        Extra keyword arguments of the test, e.g. ``{"zero_method": "pratt"}``
        for Wilcoxon or ``{"level": 0.9}`` for the bootstrap.

    Returns
    -------
    pl.DataFrame
        One row per measure and pair: ``measure, system_a, system_b, mean_a,
        mean_b, diff, statistic, p_value, p_adjusted, significant, effect_size``
        (Cohen's :math:`d_z`, the mean difference over its standard deviation),
        ``n`` (queries), ``wins`` (queries where a > b), ``ties``, ``losses``.
        A LazyFrame input is collected.

    Notes
    -----
    The randomization test on Q queries costs one (block x Q) @ (Q x comparisons)
    matrix product per block of resamples; progress is printed to stderr when it
    is a terminal. With all per-query differences equal (e.g. a system compared
    with a copy of itself), t and Wilcoxon are undefined: scipy gives NaN, the
    p-value stays NaN, ``p_adjusted`` null and ``significant`` False.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> pq = pl.DataFrame({
    ...     "system": ["bm25"] * 4 + ["dense"] * 4,
    ...     "query": ["q1", "q2", "q3", "q4"] * 2,
    ...     "AP": [0.2, 0.5, 0.1, 0.4, 0.3, 0.7, 0.1, 0.6],
    ... })
    >>> pr.compare(pq, baseline="bm25").select(
    ...     "system_a", "system_b", "diff", "p_value", "n", "wins", "ties", "losses")
    shape: (1, 8)
    ┌──────────┬──────────┬───────┬──────────┬─────┬──────┬──────┬────────┐
    │ system_a ┆ system_b ┆ diff  ┆ p_value  ┆ n   ┆ wins ┆ ties ┆ losses │
    │ ---      ┆ ---      ┆ ---   ┆ ---      ┆ --- ┆ ---  ┆ ---  ┆ ---    │
    │ str      ┆ str      ┆ f64   ┆ f64      ┆ u32 ┆ u32  ┆ u32  ┆ u32    │
    ╞══════════╪══════════╪═══════╪══════════╪═════╪══════╪══════╪════════╡
    │ dense    ┆ bm25     ┆ 0.125 ┆ 0.079605 ┆ 4   ┆ 3    ┆ 1    ┆ 0      │
    └──────────┴──────────┴───────┴──────────┴─────┴──────┴──────┴────────┘
    """
    _check_compare_options(test, correction, alpha, family)
    check_alternative(alternative)
    check_resamples(n_resamples)
    aligned = align(per_query, measures, system=system, query=query, missing=missing)
    pairs = _pairs(aligned.systems, baseline)
    if not pairs:
        msg = f"compare needs at least two systems; per_query has {len(aligned.systems)}."
        raise ValueError(msg)
    if seed is None:  # one seed for every block of columns, so all share the resamples
        seed = int(np.random.default_rng().integers(2**63))
    ia = np.array([p[0] for p in pairs])
    ib = np.array([p[1] for p in pairs])
    names = list(aligned.values)
    jobs = [(m, j) for m in names for j in range(len(pairs))]
    results: list[Arrays] = []
    for start in range(0, len(jobs), COLUMN_BLOCK):
        block = jobs[start : start + COLUMN_BLOCK]
        a = _gather(aligned.values, block, ia)
        b = _gather(aligned.values, block, ib)
        out = _run_test(
            a,
            b,
            test=test,
            alternative=alternative,
            n_resamples=n_resamples,
            seed=seed,
            options=dict(test_options or {}),
            progress_label=f"{test} test, comparisons {start + 1}-{start + len(block)} "
            f"of {len(jobs)}, resamples",
        )
        out = {
            **out,
            "mean_a": a.mean(axis=0) if a.shape[0] else np.full(a.shape[1], np.nan),
            "mean_b": b.mean(axis=0) if b.shape[0] else np.full(a.shape[1], np.nan),
            "wins": (a > b).sum(axis=0),
            "ties": (a == b).sum(axis=0),
            "losses": (a < b).sum(axis=0),
        }
        results.append(out)
    cat = {k: np.concatenate([r[k] for r in results]) for k in results[0]}
    sys_dtype = pl.Series(aligned.systems).dtype
    table = pl.DataFrame(
        {
            "measure": [m for m, _ in jobs],
            "system_a": pl.Series([aligned.systems[ia[j]] for _, j in jobs], dtype=sys_dtype),
            "system_b": pl.Series([aligned.systems[ib[j]] for _, j in jobs], dtype=sys_dtype),
            "mean_a": cat["mean_a"],
            "mean_b": cat["mean_b"],
            "diff": cat["mean_a"] - cat["mean_b"],
            "statistic": cat["statistic"],
            "p_value": cat["p_value"],
            "effect_size": cat["effect_size"],
            "n": pl.Series(cat["n"], dtype=pl.UInt32),
            "wins": pl.Series(cat["wins"], dtype=pl.UInt32),
            "ties": pl.Series(cat["ties"], dtype=pl.UInt32),
            "losses": pl.Series(cat["losses"], dtype=pl.UInt32),
        }
    )
    adjusted = adjust_pvalues("p_value", method=correction)
    if family == "measure":
        adjusted = adjusted.over("measure")
    return table.with_columns(
        p_adjusted=adjusted,
        significant=(adjusted < alpha).fill_null(False),
    ).select(RESULT_COLUMNS)


def summarize(
    per_query: FrameT,
    measures: str | Iterable[str] | None = None,
    *,
    interval: IntervalKind = "normal",
    level: float = 0.95,
    n_resamples: int = 10_000,
    seed: int | None = 0,
    system: str | None = "system",
    query: str = "query",
) -> pl.DataFrame:
    r"""Mean, spread and confidence interval per system and measure.

    .. math:: SE = \frac{s}{\sqrt{n}}, \qquad
              \bar x \pm z_{1-\alpha/2}\,SE \ (\text{normal}), \qquad
              \bar x \pm t_{n-1,1-\alpha/2}\,SE \ (\text{t})

    where :math:`s` is the sample standard deviation (ddof=1) over the system's
    n queries and :math:`\alpha = 1 - level`; ``"bootstrap"`` is the percentile
    interval of ``n_resamples`` means of queries resampled with replacement.

    Parameters
    ----------
    per_query
        Output of :func:`polars_rankeval.evaluate`; the ``system`` column is
        optional (without it, one summary per measure).
    measures
        Measure columns; default all but ``system`` and ``query``.
    interval
        ``"normal"``, ``"t"`` or ``"bootstrap"``.
    level
        Coverage of the interval, strictly between 0 and 1.
    n_resamples, seed
        Bootstrap resamples and seed (``interval="bootstrap"`` only).
    system, query
        Column names.

    Returns
    -------
    pl.DataFrame
        ``[system], measure, mean, std, stderr, ci_low, ci_high, n``, sorted by
        system, measures in the given order. Each system is summarized over its
        own queries (nothing is paired here; :func:`compare` pairs and checks
        that the query sets match). std, stderr and the interval are NaN below
        two queries.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> pq = pl.DataFrame({"system": ["a"] * 4, "query": ["q1", "q2", "q3", "q4"],
    ...                    "AP": [0.2, 0.4, 0.6, 0.8]})
    >>> pr.summarize(pq)  # stderr = sd / sqrt(4); ci = mean -/+ 1.96 * stderr
    shape: (1, 8)
    ┌────────┬─────────┬──────┬──────────┬──────────┬─────────┬─────────┬─────┐
    │ system ┆ measure ┆ mean ┆ std      ┆ stderr   ┆ ci_low  ┆ ci_high ┆ n   │
    │ ---    ┆ ---     ┆ ---  ┆ ---      ┆ ---      ┆ ---     ┆ ---     ┆ --- │
    │ str    ┆ str     ┆ f64  ┆ f64      ┆ f64      ┆ f64     ┆ f64     ┆ u32 │
    ╞════════╪═════════╪══════╪══════════╪══════════╪═════════╪═════════╪═════╡
    │ a      ┆ AP      ┆ 0.5  ┆ 0.258199 ┆ 0.129099 ┆ 0.24697 ┆ 0.75303 ┆ 4   │
    └────────┴─────────┴──────┴──────────┴──────────┴─────────┴─────────┴─────┘
    """
    check_level(level)
    if interval not in ("normal", "t", "bootstrap"):
        msg = f"interval must be 'normal', 't' or 'bootstrap'. Got {interval!r} instead."
        raise ValueError(msg)
    frame = per_query.lazy().collect() if isinstance(per_query, pl.LazyFrame) else per_query
    system = system if system is not None and system in frame.columns else None
    keys = [system] if system else []
    cols = _measure_columns(frame.schema, measures, [*keys, query])
    groups = frame.partition_by(system, maintain_order=True) if system else [frame]
    parts = []
    for group in sorted(groups, key=lambda g: g[system][0]) if system else groups:
        values = []
        for c in cols:
            if group[c].null_count():
                msg = f"measure column {c!r} has null values; fill or drop them first."
                raise ValueError(msg)
            values.append(group[c].cast(pl.Float64).to_numpy())
        out = interval_matrix(
            np.column_stack(values),
            interval=interval,
            level=level,
            n_resamples=n_resamples,
            seed=seed,
        )
        part = pl.DataFrame({"measure": cols, **out}).with_columns(pl.col("n").cast(pl.UInt32))
        if system:
            part = part.select(
                pl.lit(group[system][0], dtype=frame.schema[system]).alias(system), pl.all()
            )
        parts.append(part)
    return pl.concat(parts)
