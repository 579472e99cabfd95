r"""Training the supervised fusion methods on qrels, as ranx does (its ``*_train``).

Each function reads the normalised, ranked rows of the runs (:data:`SYS`, :data:`Q`,
:data:`D`, :data:`R`, :data:`N`) and the qrels, and returns one array (or number) per
run. A document is a hit when its grade is at least 1 (ranx's ``rel_lvl``); a run's
statistics are averaged over its training queries, the queries it ranks that qrels
judge (ranx asserts the run and the qrels have the same queries).

* position probabilities (``posfuse``, ``slidefuse``):
  :math:`p(r)` = the share of hits at rank :math:`r` over the queries ranked that deep;
* ``probfuse``: with :math:`K` segments, a ranking of :math:`n` documents is cut in
  segments of :math:`\lceil n / K \rceil`; :math:`P(k)` = the mean over the queries of
  the share of hits in segment :math:`k` (a query whose ranking has no segment
  :math:`k` adds 0);
* ``segfuse``: :math:`P(k)` = the mean over the queries of the hits in ranks 1-5,
  6-15, 16-35, ... divided by the segment's size;
* ``bayesfuse``: the mean precision :math:`\bar p` in ranks 1-5, 6-10, 11-15, 16-20,
  21-30, 31-100, 101-200, 201-500, 501-1000 gives every rank of the segment the log-odds
  :math:`\ln(\bar p / (1 - \bar p))` (0.001 in place of a zero);
* ``mapfuse``: each run's MAP (its AP averaged over the training queries).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import polars as pl

from polars_rankeval.fusion.methods import BAYES_CUTOFFS, SEGFUSE_BOUNDS
from polars_rankeval.fusion.normalize import SYS, D, N, Q, R

HIT = "__hit"


def hits(rows: pl.LazyFrame, qrels: pl.LazyFrame) -> pl.LazyFrame:
    """The ranked rows of the training queries, with ``__hit`` (1.0 or 0.0) and
    ``__nq``, the number of training queries of the row's run.

    ``qrels`` has :data:`Q`, :data:`D` and ``__rel``.
    """
    judged = qrels.select(Q).unique()
    relevant = qrels.filter(pl.col("__rel") >= 1).select(Q, D, pl.lit(1.0).alias(HIT))
    out = rows.join(judged, on=Q, how="semi").join(
        relevant, on=[Q, D], how="left", maintain_order="left"
    )
    return out.with_columns(
        pl.col(HIT).fill_null(0.0), pl.col(Q).n_unique().over(SYS).alias("__nq")
    )


def _arrays(frame: pl.DataFrame, n_runs: int, length: int | None = None) -> list[np.ndarray]:
    """One array per run from ``(SYS, __i, __v)`` rows (zeros where no row)."""
    out = []
    for i in range(n_runs):
        part = frame.filter(pl.col(SYS) == i)
        size = (
            length
            if length is not None
            else (int(part["__i"].to_numpy().max()) + 1 if part.height else 0)
        )
        array = np.zeros(size)
        if part.height:
            index = part["__i"].to_numpy()
            keep = index < size
            array[index[keep]] = part["__v"].to_numpy()[keep]
        out.append(array)
    return out


def position_probs(hit_rows: pl.LazyFrame, n_runs: int) -> list[np.ndarray]:
    """ranx's ``estimate_probs``: the share of hits at each rank (posfuse, slidefuse)."""
    table = hit_rows.group_by(SYS, (pl.col(R) - 1).alias("__i")).agg(
        pl.col(HIT).mean().alias("__v")
    )
    return _arrays(table.collect(), n_runs)


def probfuse_probs(hit_rows: pl.LazyFrame, n_runs: int, n_segments: int) -> list[np.ndarray]:
    """ranx's ``estimate_probfuse_probs``."""
    size = (pl.col(N).cast(pl.Float64) / n_segments).ceil().cast(pl.Int64)
    per_query = hit_rows.group_by(SYS, Q, ((pl.col(R) - 1) // size).alias("__i")).agg(
        pl.col(HIT).mean().alias("__m"), pl.first("__nq")
    )
    table = per_query.group_by(SYS, "__i").agg(
        (pl.col("__m").sort_by(Q).implode().list.sum() / pl.first("__nq")).alias("__v")
    )
    return _arrays(table.collect(), n_runs, n_segments)


def _segment(bounds: Sequence[int]) -> pl.Expr:
    position = pl.col(R) - 1
    expr = pl.lit(None, pl.Int64)
    for k in range(len(bounds) - 2, -1, -1):
        inside = (position >= bounds[k]) & (position < bounds[k + 1])
        expr = pl.when(inside).then(pl.lit(k, pl.Int64)).otherwise(expr)
    return expr


def segfuse_probs(hit_rows: pl.LazyFrame, n_runs: int) -> list[np.ndarray]:
    """ranx's ``estimate_segfuse_probs``."""
    bounds = SEGFUSE_BOUNDS
    sizes = [bounds[k + 1] - bounds[k] for k in range(len(bounds) - 1)]
    size = pl.col("__i").replace_strict(list(range(len(sizes))), sizes, return_dtype=pl.Float64)
    per_query = (
        hit_rows.with_columns(_segment(bounds).alias("__i"))
        .drop_nulls("__i")
        .group_by(SYS, Q, "__i")
        .agg(pl.col(HIT).sum().alias("__h"), pl.first("__nq"))
        .with_columns((pl.col("__h") / size).alias("__m"))
    )
    table = per_query.group_by(SYS, "__i").agg(
        (pl.col("__m").sort_by(Q).implode().list.sum() / pl.first("__nq")).alias("__v")
    )
    return _arrays(table.collect(), n_runs, len(sizes))


def bayes_log_odds(hit_rows: pl.LazyFrame, n_runs: int) -> list[np.ndarray]:
    """ranx's ``estimate_bayesfuse_log_odds``: one log-odds per rank 1..1000."""
    cuts = BAYES_CUTOFFS
    sizes = [cuts[k + 1] - cuts[k] for k in range(len(cuts) - 1)]
    size = pl.col("__i").replace_strict(list(range(len(sizes))), sizes, return_dtype=pl.Float64)
    per_query = (
        hit_rows.with_columns(_segment(cuts).alias("__i"))
        .drop_nulls("__i")
        .group_by(SYS, Q, "__i")
        .agg(pl.col(HIT).sum().alias("__h"), pl.first("__nq"))
        .with_columns((pl.col("__h") / size / pl.col("__nq")).alias("__m"))
    )
    table = (
        per_query.group_by(SYS, "__i")
        .agg(pl.col("__m").sort_by(Q).implode().list.sum().alias("__v"))
        .collect()
    )
    precision = _arrays(table, n_runs, len(sizes))
    out = []
    for p in precision:
        odds = np.zeros(cuts[-1])
        for k, value in enumerate(p.tolist()):
            ap = value + 0.001 if value == 0 else value
            neg = 1 - ap
            neg = neg + 0.001 if neg == 0 else neg
            odds[cuts[k] : cuts[k + 1]] = math.log(ap / neg)
        out.append(odds)
    return out


def map_scores(hit_rows: pl.LazyFrame, qrels: pl.LazyFrame, n_runs: int) -> list[float]:
    """Each run's MAP over its training queries (ranx's ``mapfuse_train``)."""
    n_rel = qrels.filter(pl.col("__rel") >= 1).group_by(Q).agg(pl.len().alias("__nrel"))
    ap = (
        hit_rows.sort(SYS, Q, R)
        .with_columns(pl.col(HIT).cum_sum().over(SYS, Q).alias("__found"))
        .group_by(SYS, Q)
        .agg(
            (pl.col(HIT) * pl.col("__found") / pl.col(R)).sum().alias("__s"),
            pl.first("__nq"),
        )
        .join(n_rel, on=Q, how="left")
        .with_columns(
            pl.when(pl.col("__nrel") > 0)
            .then(pl.col("__s") / pl.col("__nrel"))
            .otherwise(0.0)
            .alias("__ap")
        )
        .group_by(SYS)
        .agg((pl.col("__ap").sum() / pl.first("__nq")).alias("__v"))
        .collect()
    )
    values = dict(zip(ap[SYS].to_list(), ap["__v"].to_list(), strict=True))
    return [float(values.get(i, 0.0)) for i in range(n_runs)]
