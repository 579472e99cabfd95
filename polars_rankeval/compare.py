"""Compare systems query by query on the long per-query output of ``evaluate``.

:func:`compare` runs one paired test per (measure, pair of systems) and corrects
the p-values for multiple comparisons; :func:`summarize` gives each system's
score, standard error and interval per measure; :func:`discriminative_power`
counts, per measure, the pairs of systems a test tells apart. All take the frame
that :func:`polars_rankeval.evaluate` returns for a run with a ``system`` column
(one row per system and query, one column per measure), and combine each measure
over queries as trec_eval's ``all`` line does
(:func:`polars_rankeval.measures.measure_kind`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from itertools import combinations
from typing import Any, Literal, TypeAlias

import numpy as np
import polars as pl

from polars_rankeval._typing import Aggregate, AggregateMode, IntoFrame, Missing
from polars_rankeval.inputs import as_frame, run_keys
from polars_rankeval.means import measure_columns
from polars_rankeval.measures import measure_better, measure_kind, parse
from polars_rankeval.options import segment_columns
from polars_rankeval.stats import (
    Alternative,
    Arrays,
    Correction,
    IntervalKind,
    StatTest,
    Test,
    check_alternative,
    check_correction,
    check_interval,
    check_level,
    check_resamples,
    check_test,
    combine,
    interval_matrix,
    stderr_progress,
    transform,
)
from polars_rankeval.validation import check_choice, system_column

Family: TypeAlias = Literal["measure", "all"]

RESULT_COLUMNS = (
    "measure",
    "aggregate",
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
SUMMARY_COLUMNS = (
    "measure",
    "aggregate",
    "mean",
    "std",
    "stderr",
    "ci_low",
    "ci_high",
    "n",
    "clipped",
)
"""The columns of :func:`summarize` after ``system``."""
COLUMN_BLOCK = 1024
"""Most comparisons tested at once by a pairwise test. A resampling test draws its
resamples once per block, so it takes blocks this large whatever the memory."""
COLUMN_BUDGET = 1 << 20
"""Most values per (queries x comparisons) array of a block of a test that does not
resample (8 MiB of float64): it holds ``min(COLUMN_BLOCK, COLUMN_BUDGET //
n_queries)`` comparisons, which bounds memory at no cost in time."""


def collected(per_query: IntoFrame) -> pl.DataFrame:
    """A per-query table (Polars, pandas, Arrow, ...) as a Polars DataFrame."""
    frame = as_frame(per_query, "per_query")
    return frame.collect() if isinstance(frame, pl.LazyFrame) else frame


def per_segment(
    per_query: IntoFrame,
    by: str | Sequence[str],
    call: Callable[[pl.DataFrame], pl.DataFrame],
    *,
    taken: Sequence[str | Sequence[str] | None],
    outputs: Iterable[str] = (),
    function: str = "compare",
) -> pl.DataFrame:
    """``call`` on each segment of ``per_query`` (its rows with one value of the ``by``
    columns), the segment's columns put first; segments sorted.

    Each segment is a separate experiment: its comparisons form their own family
    for the corrections. A ``by`` column named as one of ``call``'s ``outputs`` is
    refused, and an error in a segment names the segment.
    """
    frame = collected(per_query)
    keys = [k for t in taken if t is not None for k in run_keys(t, None)]
    segments = list(segment_columns(by, frame.schema, taken=keys))
    check_segment_names(segments, outputs, function)
    parts = []
    for key, part in sorted(
        frame.partition_by(segments, as_dict=True, include_key=False).items(),
        key=lambda item: tuple((v is None, v) for v in item[0]),
    ):
        values = [
            pl.lit(v, dtype=frame.schema[c]).alias(c) for c, v in zip(segments, key, strict=True)
        ]
        with in_segment(segments, key):
            parts.append(call(part).select(*values, pl.all()))
    if not parts:
        msg = "per_query has no rows: there is no segment to compare."
        raise ValueError(msg)
    return pl.concat(parts)


def check_segment_names(segments: Sequence[str], outputs: Iterable[str], function: str) -> None:
    """Refuse a ``by`` column named as a column of the function's output.

    Examples
    --------
    >>> check_segment_names(["measure"], ["measure", "mean"], "summarize")
    Traceback (most recent call last):
    ...
    ValueError: summarize: the by column 'measure' has the name of an output column ...
    """
    clash = [c for c in segments if c in set(outputs)]
    if clash:
        msg = (
            f"{function}: the by column {clash[0]!r} has the name of an output column "
            f"({', '.join(outputs)}); rename it first, e.g. "
            f"per_query.rename({{{clash[0]!r}: '{clash[0]}_segment'}})."
        )
        raise ValueError(msg)


@contextmanager
def in_segment(segments: Sequence[str], key: Sequence[Any]) -> Iterator[None]:
    """Re-raise a ValueError of one segment's computation with the segment named."""
    try:
        yield
    except ValueError as error:
        where = ", ".join(f"{c}={v!r}" for c, v in zip(segments, key, strict=True))
        msg = f"in the segment {where}: {error}"
        raise ValueError(msg) from error


def measure_bounds(name: str) -> tuple[float, float] | None:
    """The range of a measure's per-query values, or None when it is not known.

    The ``bounds`` its declaration gives for its parameters
    (:attr:`polars_rankeval.measures.Measure.bounds`: ``(0, 1)`` for the
    proportions, nDCG only when no gain is negative, ``(0, inf)`` for graded
    ``RBP(gain=linear)``), ``(0, inf)`` for the counts (``aggregate="sum"``) that
    declare none; None for other measures and for columns that are not measure
    names.

    Examples
    --------
    >>> measure_bounds("recip_rank"), measure_bounds("NumRet"), measure_bounds("Utility")
    ((0.0, 1.0), (0.0, inf), None)
    >>> measure_bounds("RBP"), measure_bounds("RBP(gain=linear)")  # grades > 1 are gains
    ((0.0, 1.0), (0.0, inf))
    """
    try:
        measure = parse(name)
    except ValueError:
        return None
    bounds = measure.bounds
    if bounds is None and measure.family.aggregate == "sum":
        return (0.0, math.inf)
    return bounds


@dataclass(frozen=True)
class Aligned:
    """Per-query values on one query set: ``values[m][i, s]`` is system s on query i."""

    systems: list[Any]
    queries: pl.Series
    values: dict[str, np.ndarray]


def _check_keys(frame: pl.DataFrame, system: str, query: str | Sequence[str]) -> None:
    for name, what in ((system, "system"), *((q, "query") for q in run_keys(query, None))):
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


def check_values(
    frame: pl.DataFrame,
    measures: list[str],
    *,
    system: str | None,
    query: str | Sequence[str],
) -> None:
    """Raise on a null, NaN or infinite measure value, naming measure, system and query.

    A test or interval on such a value would be meaningless (a NaN made the
    resampling tests report p = 1/(R+1)).

    Examples
    --------
    >>> import polars as pl
    >>> pq = pl.DataFrame({"system": ["a", "b"], "query": ["q1", "q1"],
    ...                    "AP": [0.5, float("nan")]})
    >>> check_values(pq, ["AP"], system="system", query="query")
    Traceback (most recent call last):
    ...
    ValueError: measure 'AP' has 1 NaN or infinite values (first: system='b', query='q1'); ...
    """
    keys = [k for k in run_keys(query, system) if k is not None and k in frame.columns]
    for c in measures:
        column = frame[c]
        for what, bad in (
            ("null", column.is_null()),
            ("NaN or infinite", ~column.cast(pl.Float64).is_finite().fill_null(True)),
        ):
            count = int(bad.sum())
            if not count:
                continue
            row = frame.filter(bad).row(0, named=True)
            where = ", ".join(f"{k}={row[k]!r}" for k in keys) or "row 0"
            msg = (
                f"measure {c!r} has {count} {what} values (first: {where}); tests and "
                f"intervals need a finite value for every system and query: fix the "
                f"measure or drop those rows first."
            )
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
    per_query: IntoFrame,
    measures: str | Iterable[str] | None = None,
    *,
    system: str = "system",
    query: str | Sequence[str] = "query",
    missing: Missing = "error",
) -> Aligned:
    """Pair per-query values by query: one (queries x systems) array per measure.

    Parameters
    ----------
    per_query
        Long per-query frame: ``system, query`` and one column per measure.
    measures
        Measure columns; default every column but ``system`` and ``query``.
    system, query
        Column names; ``query`` a list for a compound query id
        (``["user", "session"]``, as :func:`polars_rankeval.evaluate` takes it):
        its queries are then structs of those columns.
    missing
        What to do when systems do not have the same queries: ``"error"``
        (default; the message names the missing queries), ``"drop"`` (keep the
        queries every system has) or ``"zero"`` (absent queries score 0).
        Null, NaN and infinite values raise in every case, naming the measure,
        system and query (:func:`check_values`).

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
    check_choice("missing", missing, Missing)
    frame = collected(per_query)
    _check_keys(frame, system, query)
    parts = run_keys(query, None)
    cols = measure_columns(frame.schema, measures, [system, *parts], "compare")
    query = parts[0] if len(parts) == 1 else "+".join(parts)
    frame = frame.select(system, pl.struct(parts).alias(query) if len(parts) > 1 else query, *cols)
    check_values(frame, cols, system=system, query=query)
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


def _baselines(systems: list[Any], baseline: Any) -> list[int] | None:
    """Column indices of the baseline(s), in the order given; None for all pairs."""
    if baseline is None:
        return None
    given = list(baseline) if isinstance(baseline, list | tuple) else [baseline]
    if not given:
        msg = "baseline=[] names no system; pass baseline=None to compare every pair."
        raise ValueError(msg)
    out: list[int] = []
    for b in given:
        if b not in systems:
            shown = ", ".join(repr(s) for s in systems[:20])
            msg = f"baseline {b!r} is not a system in per_query (systems: {shown})."
            raise ValueError(msg)
        if systems.index(b) not in out:
            out.append(systems.index(b))
    return out


def _pairs(systems: list[Any], baseline: Any) -> list[tuple[int, int]]:
    """(a, b) column indices: every system against each baseline, or every pair.

    With several baselines, each unordered pair is tested once: the first
    baseline is b against every other system (the later baselines included),
    the second against every system but the first, and so on.
    """
    bases = _baselines(systems, baseline)
    if bases is None:
        return list(combinations(range(len(systems)), 2))
    pairs: list[tuple[int, int]] = []
    seen: set[frozenset[int]] = set()
    for b in bases:
        for a in range(len(systems)):
            if a != b and frozenset((a, b)) not in seen:
                seen.add(frozenset((a, b)))
                pairs.append((a, b))
    return pairs


def _gather(
    values: dict[str, np.ndarray], block: list[tuple[str, int]], idx: np.ndarray
) -> np.ndarray:
    """Columns ``values[m][:, idx[j]]`` for each (m, j) of the block, as one C-ordered array."""
    parts = []
    for m in dict.fromkeys(m for m, _ in block):
        js = [j for mm, j in block if mm == m]
        parts.append(values[m][:, idx[js]])
    return np.ascontiguousarray(np.concatenate(parts, axis=1))


def _concat(results: list[Arrays], keys: Iterable[str]) -> Arrays:
    return {k: np.concatenate([np.asarray(r[k]) for r in results]) for k in keys}


_KEPT = ("statistic", "p_value", "effect_size", "n", "wins", "ties", "losses")


def _pairwise(
    values: dict[str, np.ndarray],
    ia: np.ndarray,
    ib: np.ndarray,
    info: StatTest,
    options: Mapping[str, Any],
) -> Arrays:
    """A pairwise test on every (measure, pair), blocks of comparisons at a time."""
    jobs = [(m, j) for m in values for j in range(len(ia))]
    n = next(iter(values.values())).shape[0]
    step = (
        COLUMN_BLOCK if info.resampling else max(1, min(COLUMN_BLOCK, COLUMN_BUDGET // max(1, n)))
    )
    results = []
    for start in range(0, len(jobs), step):
        block = jobs[start : start + step]
        a = _gather(values, block, ia)
        b = _gather(values, block, ib)
        label = (
            f"{info.name} test, comparisons {start + 1}-{start + len(block)} "
            f"of {len(jobs)}, resamples"
        )
        out = info.run(
            a, b, progress=stderr_progress(label) if info.resampling else None, **options
        )
        counts = {"wins": (a > b).sum(axis=0), "ties": (a == b).sum(axis=0)}
        results.append({**out, **counts, "losses": (a < b).sum(axis=0)})
    return _concat(results, _KEPT)


def _all_systems(
    values: dict[str, np.ndarray],
    ia: np.ndarray,
    ib: np.ndarray,
    info: StatTest,
    options: Mapping[str, Any],
) -> Arrays:
    """A test over all systems of each measure (Tukey), for the requested pairs."""
    pairs = np.column_stack([ia, ib])
    results = []
    for i, (m, x) in enumerate(values.items()):
        label = f"{info.title}, {m} ({i + 1} of {len(values)}), permutations"
        progress = stderr_progress(label) if info.resampling else None
        results.append(info.run(x, pairs, progress=progress, **options))
    return _concat(results, _KEPT)


def _check_compare_options(
    test: str, correction: str, alpha: float, family: str, alternative: str
) -> StatTest:
    info = check_test(test)
    check_correction(correction)
    check_alternative(alternative)
    if not 0.0 < alpha < 1.0:
        msg = f"alpha must be strictly between 0 and 1. Got {alpha!r} instead."
        raise ValueError(msg)
    check_choice("family", family, Family)
    check_choice(f"test={test!r} is two-sided: alternative", alternative, info.alternatives)
    if info.familywise:
        what = f"test={test!r} controls the family-wise error over all pairs itself: correction"
        check_choice(what, correction, ("none",))
    return info


def compare(
    per_query: IntoFrame,
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
    aggregate: AggregateMode = "trec",
    system: str = "system",
    query: str | Sequence[str] = "query",
    missing: Missing = "error",
    test_options: Mapping[str, Any] | None = None,
    by: str | Sequence[str] | None = None,
) -> pl.DataFrame:
    r"""Significance tests between systems, for every measure at once.

    For each measure and each pair (every system against ``baseline``, or every
    pair of systems when it is None), the per-query values are paired by query
    and tested; p-values are then adjusted for the number of comparisons.

    .. math:: \text{diff} = S(a) - S(b)

    where :math:`S` combines a system's per-query values as trec_eval's ``all``
    line does (:func:`polars_rankeval.measures.measure_kind`): the mean
    :math:`\frac1n\sum_q x_q` for most measures, the geometric mean
    :math:`\exp(\frac1n\sum_q \ln\max(x_q, 10^{-5}))` for GMAP and GMBpref,
    the total :math:`\sum_q x_q` for the counts.

    Parameters
    ----------
    per_query
        Output of :func:`polars_rankeval.evaluate` for a run with a ``system``
        column: ``system, query`` and one Float64 column per measure.
    measures
        Measure columns to compare; default all but ``system`` and ``query``.
    baseline
        A system id: compare every other system (``system_a``) against it
        (``system_b``). A list of ids: every system against each baseline, each
        unordered pair once (the first baseline against all, the second against
        all but the first, ...). None: every pair of systems, in sorted order.
    test
        A name in :data:`polars_rankeval.stats.TESTS`: ``"t"``
        (:func:`~polars_rankeval.paired_ttest`, = scipy ``ttest_rel``),
        ``"wilcoxon"`` (= scipy ``wilcoxon``), ``"randomization"`` (Fisher's
        sign-flip test, :func:`~polars_rankeval.randomization_test`),
        ``"bootstrap"`` (:func:`~polars_rankeval.bootstrap_test`), ``"tukey"``
        (Tukey's HSD, :func:`~polars_rankeval.stats.tukey_hsd_matrix`) or
        ``"randomized_tukey"`` (Carterette's randomised Tukey HSD,
        :func:`~polars_rankeval.stats.randomized_tukey_matrix`). The two Tukey
        tests look at all systems of a measure at once (also those outside the
        reported pairs when ``baseline`` is given): their p-values already hold
        family-wise over every pair of systems, so ``p_adjusted`` equals
        ``p_value`` and ``correction`` must be ``"none"``.
    correction
        A name in :data:`polars_rankeval.stats.CORRECTIONS`: ``"none"``,
        ``"bonferroni"``, ``"holm"`` (family-wise error rate), ``"bh"``
        (Benjamini-Hochberg) or ``"by"`` (Benjamini-Yekutieli; false discovery
        rate), applied within each ``family``.
    alpha
        ``significant`` is ``p_adjusted < alpha``.
    alternative
        ``"two-sided"``, ``"greater"`` (a better than b) or ``"less"``; the
        Tukey tests are two-sided only.
    n_resamples, seed
        Resamples (permutations) and seed of the randomization, bootstrap and
        randomised Tukey tests. Every comparison uses the same seeded resamples,
        so a row equals the expression helper on the same two columns with the
        same seed.
    family
        The set of comparisons one correction spans: ``"measure"`` (default; all
        pairs of one measure) or ``"all"`` (every row of the result).
    aggregate
        ``"trec"`` (default): combine and test each measure as above; GMAP and
        GMBpref are tested on :math:`\ln\max(x_q, 10^{-5})` (a difference of
        geometric means is a ratio test on that scale); the counts are tested on
        their per-query values (the mean difference is the total difference over
        n). ``"mean"``: arithmetic means and raw values for every column.
    system, query
        Column names in ``per_query``; ``query`` a list for a compound query id
        (``["user", "session"]``, as :func:`polars_rankeval.evaluate` takes it):
        queries are paired on all of its columns.
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
        One row per measure and pair: ``measure, aggregate`` (``"mean"``,
        ``"gmean"`` or ``"sum"``: what ``mean_a`` and ``mean_b`` are),
        ``system_a, system_b, mean_a, mean_b, diff, statistic, p_value,
        p_adjusted, significant, effect_size`` (Cohen's :math:`d_z`, the mean
        difference over its standard deviation, on the tested scale),
        ``n`` (queries), ``wins`` (queries where a is better than b on the
        tested values: a > b, or a < b for a measure declared ``better="lower"``
        such as FallOut or Unjudged, :func:`measure_better`), ``ties``,
        ``losses``. A LazyFrame input is collected.

    Notes
    -----
    A null, NaN or infinite per-query value raises, naming the measure, system
    and query. Degenerate comparisons (one query; all differences equal for the
    t-test and the bootstrap; all differences zero for Wilcoxon; no residual
    variance for Tukey) give a NaN p-value, a null ``p_adjusted`` and
    ``significant`` False; the permutation tests (randomization, randomised
    Tukey) stay defined for equal differences. The randomization test on Q
    queries costs one (block x Q) @ (Q x comparisons) matrix product per block of
    resamples; progress is printed to stderr when it is a terminal.

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

    Three systems, Tukey's HSD over all of them:

    >>> three = pl.DataFrame({
    ...     "system": ["a"] * 4 + ["b"] * 4 + ["c"] * 4,
    ...     "query": ["q1", "q2", "q3", "q4"] * 3,
    ...     "AP": [0.2, 0.5, 0.1, 0.4, 0.3, 0.4, 0.2, 0.6, 0.5, 0.9, 0.4, 0.8],
    ... })
    >>> pr.compare(three, test="tukey").select("system_a", "system_b", "diff", "significant")
    shape: (3, 4)
    ┌──────────┬──────────┬────────┬─────────────┐
    │ system_a ┆ system_b ┆ diff   ┆ significant │
    │ ---      ┆ ---      ┆ ---    ┆ ---         │
    │ str      ┆ str      ┆ f64    ┆ bool        │
    ╞══════════╪══════════╪════════╪═════════════╡
    │ a        ┆ b        ┆ -0.075 ┆ false       │
    │ a        ┆ c        ┆ -0.35  ┆ true        │
    │ b        ┆ c        ┆ -0.275 ┆ true        │
    └──────────┴──────────┴────────┴─────────────┘
    """
    info = _check_compare_options(test, correction, alpha, family, alternative)
    check_resamples(n_resamples, seed)
    check_choice("aggregate", aggregate, AggregateMode)
    if by is not None:
        call = partial(
            compare, measures=measures, baseline=baseline, test=test, correction=correction,
            alpha=alpha, alternative=alternative, n_resamples=n_resamples, seed=seed,
            family=family, aggregate=aggregate, system=system, query=query, missing=missing,
            test_options=test_options,
        )  # fmt: skip
        return per_segment(
            per_query, by, call, taken=[system, query], outputs=RESULT_COLUMNS, function="compare"
        )
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
    kinds = {m: measure_kind(m, aggregate) for m in names}
    tested = {m: transform(aligned.values[m], kinds[m]) for m in names}
    options = {
        "alternative": alternative,
        "n_resamples": n_resamples,
        "seed": seed,
        **dict(test_options or {}),
    }
    run = _pairwise if info.scope == "pair" else _all_systems
    cat = run(tested, ia, ib, info, options)
    lower = np.repeat([measure_better(m) == "lower" for m in names], len(pairs))
    cat["wins"], cat["losses"] = (
        np.where(lower, cat["losses"], cat["wins"]),
        np.where(lower, cat["wins"], cat["losses"]),
    )
    scores = {m: combine(aligned.values[m], kinds[m]) for m in names}
    mean_a = np.concatenate([scores[m][ia] for m in names])
    mean_b = np.concatenate([scores[m][ib] for m in names])
    sys_dtype = pl.Series(aligned.systems).dtype
    table = pl.DataFrame(
        {
            "measure": [m for m in names for _ in pairs],
            "aggregate": [kinds[m] for m in names for _ in pairs],
            "system_a": pl.Series([aligned.systems[i] for i in ia] * len(names), dtype=sys_dtype),
            "system_b": pl.Series([aligned.systems[i] for i in ib] * len(names), dtype=sys_dtype),
            "mean_a": mean_a,
            "mean_b": mean_b,
            "diff": mean_a - mean_b,
            "statistic": cat["statistic"],
            "p_value": cat["p_value"],
            "effect_size": cat["effect_size"],
            "n": pl.Series(cat["n"], dtype=pl.UInt32),
            "wins": pl.Series(cat["wins"], dtype=pl.UInt32),
            "ties": pl.Series(cat["ties"], dtype=pl.UInt32),
            "losses": pl.Series(cat["losses"], dtype=pl.UInt32),
        }
    )
    adjusted = check_correction(correction).adjust("p_value")
    if family == "measure":
        adjusted = adjusted.over("measure")
    return table.with_columns(
        p_adjusted=adjusted,
        significant=(adjusted < alpha).fill_null(False),
    ).select(RESULT_COLUMNS)


def summarize(
    per_query: IntoFrame,
    measures: str | Iterable[str] | None = None,
    *,
    interval: IntervalKind = "normal",
    level: float = 0.95,
    n_resamples: int = 10_000,
    seed: int | None = 0,
    aggregate: AggregateMode = "trec",
    clip: bool = True,
    system: str | None = "system",
    query: str | Sequence[str] = "query",
    by: str | Sequence[str] | None = None,
) -> pl.DataFrame:
    r"""Score, spread and confidence interval per system and measure.

    .. math:: SE = \frac{s}{\sqrt{n}}, \qquad
              \bar x \pm z_{1-\alpha/2}\,SE \ (\text{normal}), \qquad
              \bar x \pm t_{n-1,1-\alpha/2}\,SE \ (\text{t})

    where :math:`s` is the sample standard deviation (ddof=1) over the system's
    n queries and :math:`\alpha = 1 - level`; ``"bootstrap"`` is the percentile
    interval of ``n_resamples`` means of queries resampled with replacement,
    ``"bca"`` scipy's bias-corrected and accelerated bootstrap interval.

    Each measure is combined as :func:`polars_rankeval.mean_scores` combines it
    (:func:`polars_rankeval.measures.measure_kind`): GMAP and GMBpref as geometric means (``std``,
    ``stderr`` and the interval on :math:`\ln\max(x, 10^{-5})`, the interval
    exponentiated back), the counts as totals (``stderr`` and interval n times
    those of the mean), every other measure as the mean.

    Parameters
    ----------
    per_query
        Output of :func:`polars_rankeval.evaluate`; the ``system`` column is
        optional (without it, one summary per measure).
    measures
        Measure columns; default all but ``system`` and ``query``.
    interval
        ``"normal"``, ``"t"``, ``"bootstrap"`` or ``"bca"``.
    level
        Coverage of the interval, strictly between 0 and 1.
    n_resamples, seed
        Bootstrap resamples and seed (``"bootstrap"`` and ``"bca"`` only).
    aggregate
        ``"trec"`` (default, as above) or ``"mean"`` (arithmetic mean of every
        column, as ``mean_scores(..., aggregate="mean")``).
    clip
        Clip the interval to the measure's range (:func:`measure_bounds`: [0, 1]
        for proportions such as AP or RR, [0, inf) for counts); the ``clipped``
        column says where an end was moved. False: the interval as computed.
    system, query
        Column names; ``query`` a list for a compound query id (``["user",
        "session"]``, as :func:`polars_rankeval.evaluate` takes it).
    by
        Segment columns (a day, a country) or per-query attributes joined to
        ``per_query`` (a query category): one summary per segment, its columns
        first.

    Returns
    -------
    pl.DataFrame
        ``[system], measure, aggregate, mean`` (the combined score: mean,
        geometric mean or total, as ``aggregate`` says), ``std, stderr, ci_low,
        ci_high, n, clipped``, sorted by system, measures in the given order.
        Each system is summarized over its own queries (nothing is paired here;
        :func:`compare` pairs and checks that the query sets match). std, stderr
        and the interval are NaN below two queries. A null, NaN or infinite
        value raises, naming the measure, system and query.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> pq = pl.DataFrame({"system": ["a"] * 4, "query": ["q1", "q2", "q3", "q4"],
    ...                    "AP": [0.2, 0.4, 0.6, 0.8]})
    >>> pr.summarize(pq).select("system", "measure", "mean", "stderr", "ci_low", "ci_high")
    shape: (1, 6)
    ┌────────┬─────────┬──────┬──────────┬─────────┬─────────┐
    │ system ┆ measure ┆ mean ┆ stderr   ┆ ci_low  ┆ ci_high │
    │ ---    ┆ ---     ┆ ---  ┆ ---      ┆ ---     ┆ ---     │
    │ str    ┆ str     ┆ f64  ┆ f64      ┆ f64     ┆ f64     │
    ╞════════╪═════════╪══════╪══════════╪═════════╪═════════╡
    │ a      ┆ AP      ┆ 0.5  ┆ 0.129099 ┆ 0.24697 ┆ 0.75303 │
    └────────┴─────────┴──────┴──────────┴─────────┴─────────┘

    stderr = sd / sqrt(4) = 0.2582 / 2, and the interval is 0.5 -/+ 1.96 stderr.
    >>> gm = pq.rename({"AP": "GMAP"})
    >>> pr.summarize(gm).select("aggregate", "mean").row(0)  # (0.2*0.4*0.6*0.8)^(1/4)
    ('gmean', 0.442673)
    """
    check_level(level)
    check_interval(interval)
    check_choice("aggregate", aggregate, AggregateMode)
    if by is not None:
        call = partial(
            summarize, measures=measures, interval=interval, level=level,
            n_resamples=n_resamples, seed=seed, aggregate=aggregate, clip=clip, system=system,
            query=query,
        )  # fmt: skip
        return per_segment(
            per_query, by, call, taken=[system, query], outputs=SUMMARY_COLUMNS,
            function="summarize",
        )  # fmt: skip
    frame = collected(per_query)
    system = system_column(system, frame.columns)
    keys = [system] if system else []
    cols = measure_columns(frame.schema, measures, [*keys, *run_keys(query, None)], "summarize")
    if system and frame[system].null_count():
        row = int(frame[system].is_null().arg_true()[0])
        msg = (
            f"per_query column {system!r} has {frame[system].null_count()} null system ids "
            f"(first at row {row}); name each system, or drop those rows first."
        )
        raise ValueError(msg)
    check_values(frame, cols, system=system, query=query)
    if system and frame.height == 0:  # no system: no row
        return _empty_summary(frame.schema[system], system)
    groups = frame.partition_by(system, maintain_order=True) if system else [frame]
    parts = []
    for group in sorted(groups, key=lambda g: g[system][0]) if system else groups:
        rows: dict[str, dict[str, object]] = {}
        for (kind, bounds), alike in _alike_columns(cols, aggregate, clip).items():
            # the measures of one kind and range together: they share the resamples
            out = interval_matrix(
                group.select(pl.col(alike).cast(pl.Float64)).to_numpy(),
                interval=interval,
                level=level,
                n_resamples=n_resamples,
                seed=seed,
                aggregate=kind,
                bounds=bounds,
                names=alike,
            )
            for j, c in enumerate(alike):
                rows[c] = {"measure": c, "aggregate": kind, **{k: v[j] for k, v in out.items()}}
        part = pl.DataFrame([rows[c] for c in cols]).with_columns(
            pl.col("n").cast(pl.UInt32), pl.col("clipped").cast(pl.Boolean)
        )
        if system:
            part = part.select(
                pl.lit(group[system][0], dtype=frame.schema[system]).alias(system), pl.all()
            )
        parts.append(part)
    return pl.concat(parts)


def _alike_columns(
    cols: Sequence[str], aggregate: AggregateMode, clip: bool
) -> dict[tuple[Aggregate, tuple[float, float] | None], list[str]]:
    """The measure columns by (aggregate kind, bounds to clip to), in their order."""
    alike: dict[tuple[Aggregate, tuple[float, float] | None], list[str]] = {}
    for c in cols:
        key = (measure_kind(c, aggregate), measure_bounds(c) if clip else None)
        alike.setdefault(key, []).append(c)
    return alike


def _empty_summary(dtype: pl.DataType, system: str) -> pl.DataFrame:
    """:func:`summarize`'s frame without rows (per_query has no system)."""
    types = (pl.String, pl.String, *[pl.Float64] * 5, pl.UInt32, pl.Boolean)
    return pl.DataFrame(schema={system: dtype, **dict(zip(SUMMARY_COLUMNS, types, strict=True))})


def discriminative_power(
    per_query: IntoFrame,
    measures: str | Iterable[str] | None = None,
    *,
    test: Test = "randomized_tukey",
    alpha: float = 0.05,
    correction: Correction = "none",
    n_resamples: int = 10_000,
    seed: int | None = 0,
    aggregate: AggregateMode = "trec",
    system: str = "system",
    query: str | Sequence[str] = "query",
    missing: Missing = "error",
) -> pl.DataFrame:
    r"""Share of system pairs a test finds significantly different, per measure.

    Sakai's discriminative power: with k systems, every one of the
    :math:`k(k-1)/2` pairs is tested (:func:`compare` with ``baseline=None``) and

    .. math:: \text{discriminative power} = \frac{\#\{\text{pairs with } p < \alpha\}}{k(k-1)/2}

    A measure that separates more pairs on the same topics is more discriminative
    (given that it measures what matters). The default test is the randomised
    Tukey HSD, which holds the family-wise error over all pairs as Sakai's later
    work does; Sakai 2006 used paired bootstrap tests (``test="bootstrap"``).

    Parameters
    ----------
    per_query
        Output of :func:`polars_rankeval.evaluate` with at least two systems.
    measures
        Measure columns; default all.
    test, alpha, correction, n_resamples, seed, aggregate, system, query, missing
        As in :func:`compare`.

    Returns
    -------
    pl.DataFrame
        ``measure, pairs, significant, discriminative_power``, one row per measure.

    References
    ----------
    Sakai, "Evaluating evaluation metrics based on the bootstrap", SIGIR 2006;
    Sakai, "Statistical reform in information retrieval?", SIGIR Forum 48(1), 2014.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> pq = pl.DataFrame({
    ...     "system": ["a"] * 4 + ["b"] * 4 + ["c"] * 4,
    ...     "query": ["q1", "q2", "q3", "q4"] * 3,
    ...     "AP": [0.2, 0.5, 0.1, 0.4, 0.3, 0.4, 0.2, 0.6, 0.5, 0.9, 0.4, 0.8],
    ... })
    >>> pr.discriminative_power(pq, test="tukey")  # a-c and b-c differ, a-b does not
    shape: (1, 4)
    ┌─────────┬───────┬─────────────┬──────────────────────┐
    │ measure ┆ pairs ┆ significant ┆ discriminative_power │
    │ ---     ┆ ---   ┆ ---         ┆ ---                  │
    │ str     ┆ u32   ┆ u32         ┆ f64                  │
    ╞═════════╪═══════╪═════════════╪══════════════════════╡
    │ AP      ┆ 3     ┆ 2           ┆ 0.666667             │
    └─────────┴───────┴─────────────┴──────────────────────┘
    """
    result = compare(
        per_query,
        measures,
        baseline=None,
        test=test,
        correction=correction,
        alpha=alpha,
        n_resamples=n_resamples,
        seed=seed,
        aggregate=aggregate,
        system=system,
        query=query,
        missing=missing,
    )
    counts = result.group_by("measure", maintain_order=True).agg(
        pairs=pl.len().cast(pl.UInt32),
        significant=pl.col("significant").sum().cast(pl.UInt32),
    )
    return counts.with_columns(
        discriminative_power=pl.col("significant") / pl.col("pairs").cast(pl.Float64)
    )
