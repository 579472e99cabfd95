r"""The fusion methods: ranx's 25, each computed across the runs side by side.

The runs' rows are put side by side by (query, document) (:func:`wide_runs`), and each method
is an expression across the runs' columns, added in the runs' order as ranx adds
(so the fused scores have the same bits however the rows came). Each method reads
the normalised rows of :mod:`polars_rankeval.fusion.normalize` (one per run and
retrieved document: score :math:`s_i`, rank :math:`r_i`, the ranking's length
:math:`n_i`) and gives every document of a query one fused score. With
:math:`P` the runs that retrieved the document (:math:`|P|` of them), :math:`w_i` the
runs' weights, :math:`c` the query's candidates and :math:`m` the number of runs:

Methods on scores (they read :math:`s_i`):

* ``min``: :math:`\min_{i \in P} s_i`, and at most :math:`10^9` when a run missed it
  (ranx's stand-in for the missing score); ``max``: :math:`\max_{i \in P} s_i`, at
  least :math:`-10^9` likewise; ``med``: the median of the :math:`s_i, i \in P`.
* ``sum``: :math:`\sum_{i \in P} s_i`; ``anz``: that over :math:`|P|`; ``mnz``: times
  :math:`|P|`; ``gmnz``: times :math:`|P|^\gamma`.
* ``wsum``: :math:`\sum_{i \in P} w_i s_i`; ``wmnz``:
  :math:`\sum_{i \in P} s_i \cdot \sum_{i \in P} w_i`; ``mixed``:
  :math:`\sqrt{|P|} \sum_{i \in P} w_i s_i`.

Methods on ranks (they read :math:`r_i`):

* ``rrf``: :math:`\sum_{i \in P} 1 / (k + r_i)`; ``rbc``:
  :math:`\sum_{i \in P} (1 - \phi)\phi^{r_i - 1}`.
* ``isr``: :math:`|P| \sum_{i \in P} r_i^{-2}`; ``log_isr``: :math:`\ln|P|` in place
  of :math:`|P|`; ``logn_isr``: :math:`\ln(|P| + \sigma)`.
* ``bordafuse``: :math:`\sum_i b_i` over every run, :math:`b_i = c - r_i + 1`, or
  :math:`(c - n_i + 1)/2` when run *i* missed the document; ``w_bordafuse``:
  :math:`\sum_i w_i b_i`.
* ``condorcet``: :math:`c - p + 1`, :math:`p` the document's position by pairwise
  wins; ``w_condorcet``: with weighted votes.
* ``probfuse``: :math:`\sum_{i \in P} P_i(k) / (k + 1)`, :math:`k` the segment of
  :math:`r_i` among :math:`K` of equal size :math:`\lceil n_i / K \rceil`;
  ``segfuse``: :math:`\sum_{i \in P} P_i(k) (s_i + 1)` over the fixed segments
  1-5, 6-15, 16-35, ... (it reads scores too); ``slidefuse``: the mean of
  :math:`p_i` over ranks :math:`r_i - w .. r_i + w` (within 1 .. :math:`n_i`);
  ``posfuse``: :math:`\sum_{i \in P} p_i(r_i)`; ``mapfuse``:
  :math:`\sum_{i \in P} \mathrm{MAP}_i / r_i`; ``bayesfuse``: :math:`\sum_i o_i(r_i)`
  over every run, :math:`o_i = \ln(0.001/0.999)` when run *i* missed the document
  (or ranked it past the trained ranks).

The last six are trained on qrels (:mod:`polars_rankeval.fusion.train`): the
position probabilities :math:`p_i`, segment probabilities :math:`P_i`, log-odds
:math:`o_i` and MAP of each run. Condorcet orders the candidates by the number of
others each beats by (weighted) majority, in which the vote of a run that retrieved
neither goes to the other (ranx's comparison); ties by doc id.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from polars_rankeval.fusion.keys import spread
from polars_rankeval.fusion.normalize import PRESENT, SYS, C, D, DocOrder, N, Q, R, S, expand

F = "__f"
"""Internal column: the fused score."""
MIN_ODD = math.log(0.001 / 0.999)
"""BayesFuse's log-odds of a document a run did not retrieve (ranx's ``min_odd``)."""
SEGFUSE_BOUNDS = (0, *(10 * 2 ** (k - 1) - 5 for k in range(1, 11)))
"""SegFuse's segment boundaries: ranks 1-5, 6-15, 16-35, ... (Shokouhi, 2007)."""
BAYES_CUTOFFS = (0, 5, 10, 15, 20, 30, 100, 200, 500, 1000)
"""BayesFuse's rank segments, over which the precision that gives the log-odds is taken."""


@dataclass(frozen=True)
class Context:
    """What a method needs beside the rows: the number of runs, their weights and the
    method's parameters (defaults filled in)."""

    n_runs: int
    weights: tuple[float, ...]
    params: Mapping[str, Any] = field(default_factory=dict)
    doc_order: DocOrder = "desc"


Combine = Callable[[pl.LazyFrame, Context], pl.LazyFrame]


@dataclass(frozen=True)
class Method:
    """One fusion method: its combination and what it takes."""

    combine: Combine
    needs: str
    """``"scores"``, ``"ranks"`` or ``"both"``: what of the normalised runs it reads."""
    defaults: Mapping[str, Any] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    weighted: bool = False
    trained: bool = False


def wide_runs(frame: pl.LazyFrame, n_runs: int, columns: Sequence[str]) -> pl.LazyFrame:
    """One row per (query, doc), with ``columns`` of each run side by side (``name_i``,
    null where run *i* did not retrieve the doc): each run's values scattered by the
    rows' (query, doc) number (:func:`~polars_rankeval.fusion.keys.spread`)."""
    return spread(frame.collect(), n_runs, list(columns)).lazy()


def _fold_sum(values: Sequence[pl.Expr], missing: float = 0.0) -> pl.Expr:
    """``((0 + v_0) + v_1) + ...``, a missing value counted as ``missing``: ranx's
    ``sum([...])`` over the runs in order, to the bit."""
    total: pl.Expr = pl.lit(0.0)
    for v in values:
        total = total + v.fill_null(missing)
    return total


def _present(n_runs: int, column: str = "__c") -> pl.Expr:
    """|P|: how many runs retrieved the doc."""
    return pl.sum_horizontal(
        *(pl.col(f"{column}_{i}").is_not_null().cast(pl.Float64) for i in range(n_runs))
    )


def _runs_of(column: str, n_runs: int) -> list[pl.Expr]:
    return [pl.col(f"{column}_{i}") for i in range(n_runs)]


def _by_doc(frame: pl.LazyFrame, ctx: Context, fused: pl.Expr, columns: Sequence[str] = ("__c",)
            ) -> pl.LazyFrame:  # fmt: skip
    """The runs side by side (:func:`wide_runs`) and the fused score computed across them."""
    return wide_runs(frame, ctx.n_runs, columns).select(Q, D, fused.alias(F))


def _with(frame: pl.LazyFrame, *columns: pl.Expr) -> pl.LazyFrame:
    """``frame`` with ``columns`` added to its rows collected: a plan's ``with_columns``
    would cut every column into a thread's morsels, which :func:`wide_runs` then copies
    back into one to gather the fused rows' ids."""
    return frame.collect().with_columns(*columns).lazy()


def _per_run(contribution: pl.Expr, fused: Callable[[pl.Expr, pl.Expr], pl.Expr]) -> Combine:
    """A method whose documents get ``fused(sum of contributions, |P|)``."""

    def combine(frame: pl.LazyFrame, ctx: Context) -> pl.LazyFrame:
        rows = _with(frame, contribution.alias("__c"))
        total = _fold_sum(_runs_of("__c", ctx.n_runs))
        return _by_doc(rows, ctx, fused(total, _present(ctx.n_runs)))

    return combine


def _with_weights(frame: pl.LazyFrame, ctx: Context) -> pl.LazyFrame:
    """Add ``__w``, the row's run's weight."""
    return frame.with_columns(_per_system(list(ctx.weights), pl.Float64()).alias("__w"))


def _per_system(values: Sequence[Any], dtype: pl.DataType) -> pl.Expr:
    """One value per run, looked up by the row's run."""
    return pl.col(SYS).replace_strict(list(range(len(values))), values, return_dtype=dtype)


def weighted_expr(method: str, weights: Sequence[float], n_runs: int) -> pl.Expr:
    """The fused score of ``wsum``, ``wmnz`` or ``mixed`` from the runs' normalised
    scores side by side (``__s_0``, ``__s_1``, ...: :func:`wide_runs` of :data:`S`): what
    :func:`polars_rankeval.optimize_fusion` computes for each weight configuration from
    one table."""
    scores = _runs_of(S, n_runs)
    weighted = [w * v for w, v in zip(weights, scores, strict=True)]
    if method == "wsum":
        return _fold_sum(weighted)
    if method == "mixed":
        return _fold_sum(weighted) * _present(n_runs, S).sqrt()
    present_weights = [
        pl.when(v.is_not_null()).then(pl.lit(w)) for w, v in zip(weights, scores, strict=True)
    ]
    return _fold_sum(scores) * _fold_sum(present_weights)


def _by_weights(method: str) -> Combine:
    def combine(frame: pl.LazyFrame, ctx: Context) -> pl.LazyFrame:
        fused = weighted_expr(method, ctx.weights, ctx.n_runs)
        return _by_doc(frame, ctx, fused, columns=(S,))

    return combine


def _comb_min(frame: pl.LazyFrame, ctx: Context) -> pl.LazyFrame:
    values = [v.fill_null(1e9) for v in _runs_of(S, ctx.n_runs)]
    return _by_doc(frame, ctx, pl.min_horizontal(*values), columns=(S,))


def _comb_max(frame: pl.LazyFrame, ctx: Context) -> pl.LazyFrame:
    values = [v.fill_null(-1e9) for v in _runs_of(S, ctx.n_runs)]
    return _by_doc(frame, ctx, pl.max_horizontal(*values), columns=(S,))


def _comb_med(frame: pl.LazyFrame, ctx: Context) -> pl.LazyFrame:
    present = pl.concat_list(_runs_of(S, ctx.n_runs)).list.drop_nulls()
    return _by_doc(frame, ctx, present.list.median(), columns=(S,))


def _gmnz(frame: pl.LazyFrame, ctx: Context) -> pl.LazyFrame:
    gamma = float(ctx.params["gamma"])
    return _per_run(pl.col(S), lambda s, n: s * n.pow(gamma))(frame, ctx)


def _rrf(frame: pl.LazyFrame, ctx: Context) -> pl.LazyFrame:
    k = float(ctx.params["k"])
    return _per_run(1.0 / (k + pl.col(R)), lambda s, n: s)(frame, ctx)


def _isr_term() -> pl.Expr:
    return 1.0 / pl.col(R).cast(pl.Float64).pow(2)


def _logn_isr(frame: pl.LazyFrame, ctx: Context) -> pl.LazyFrame:
    sigma = float(ctx.params["sigma"])
    return _per_run(_isr_term(), lambda s, n: s * (n + sigma).log())(frame, ctx)


def _rbc(frame: pl.LazyFrame, ctx: Context) -> pl.LazyFrame:
    phi = float(ctx.params["phi"])
    term = (1.0 - phi) * pl.lit(phi, pl.Float64).pow(pl.col(R) - 1)
    return _per_run(term, lambda s, n: s)(frame, ctx)


def _borda_points() -> pl.Expr:
    return (
        pl.when(pl.col(PRESENT))
        .then((pl.col(C) - pl.col(R) + 1).cast(pl.Float64))
        .otherwise((pl.col(C) - pl.col(N) + 1) / 2.0)
    )


def _bordafuse(frame: pl.LazyFrame, ctx: Context) -> pl.LazyFrame:
    full = expand(frame, ctx.n_runs).with_columns(_borda_points().alias("__c"))
    return _by_doc(full, ctx, _fold_sum(_runs_of("__c", ctx.n_runs)))


def _w_bordafuse(frame: pl.LazyFrame, ctx: Context) -> pl.LazyFrame:
    full = _with_weights(expand(frame, ctx.n_runs), ctx)
    full = full.with_columns((pl.col("__w") * _borda_points()).alias("__c"))
    return _by_doc(full, ctx, _fold_sum(_runs_of("__c", ctx.n_runs)))


ABSENT_POSITION = 1_000_000
"""Condorcet's position of a document a run did not retrieve (ranx's)."""


def condorcet_order(frame: pl.LazyFrame, ctx: Context) -> pl.LazyFrame:
    """Each candidate's number of pairwise wins ``__wins``: the others ``y`` whose
    (weighted) votes to come before it fall short of half the total, a vote for ``y``
    over ``x`` being a run that ranks ``y`` above ``x`` (a run that retrieved neither
    votes for ``x``, as ranx counts)."""
    full = _with_weights(expand(frame, ctx.n_runs), ctx)
    pos = pl.when(pl.col(PRESENT)).then(pl.col(R) - 1).otherwise(ABSENT_POSITION)
    full = full.select(SYS, Q, D, C, "__w", pos.alias("__pos"))
    other = full.select(SYS, Q, pl.col(D).alias("__y"), pl.col("__pos").alias("__ypos"))
    pairs = full.join(other, on=[SYS, Q], maintain_order="left").filter(pl.col("__y") != pl.col(D))
    votes = (
        pairs.with_columns((pl.col("__ypos") < pl.col("__pos")).cast(pl.Float64).alias("__v"))
        .group_by(Q, D, "__y")
        .agg((pl.col("__v") * pl.col("__w")).sum().alias("__vy"), pl.first(C))
    )
    total = float(sum(ctx.weights))
    wins = votes.group_by(Q, D).agg(
        (2.0 * pl.col("__vy") < total).sum().alias("__wins"), pl.first(C)
    )
    singles = full.group_by(Q, D).agg(pl.first(C)).filter(pl.col(C) == 1)
    return pl.concat(
        [wins, singles.with_columns(pl.lit(0, pl.UInt32).alias("__wins"))], how="diagonal"
    )


def _condorcet(frame: pl.LazyFrame, ctx: Context) -> pl.LazyFrame:
    wins = condorcet_order(frame, ctx)
    doc_desc = ctx.doc_order == "desc"
    ordered = wins.sort(
        [pl.col(Q), pl.col("__wins"), pl.col(D).cast(pl.String)],
        descending=[False, True, doc_desc],
    )
    position = pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over(Q)
    return ordered.select(Q, D, (pl.col(C) - position + 1).cast(pl.Float64).alias(F))


def _table(values: Sequence[Any], name: str) -> pl.LazyFrame:
    """``(run, position, value)`` rows of one array per run."""
    systems: list[int] = []
    positions: list[int] = []
    flat: list[float] = []
    for i, given in enumerate(values):
        array = np.asarray(given, dtype=np.float64).ravel()
        systems += [i] * len(array)
        positions += list(range(len(array)))
        flat += array.tolist()
    return pl.LazyFrame(
        {SYS: systems, "__p": positions, name: flat},
        schema={SYS: pl.UInt32, "__p": pl.Int64, name: pl.Float64},
    )


def _lookup(frame: pl.LazyFrame, table: pl.LazyFrame, index: pl.Expr, name: str) -> pl.LazyFrame:
    """Add ``name``: the value at ``index`` of the row's run's array (null past its end)."""
    return frame.with_columns(index.alias("__p")).join(
        table, on=[SYS, "__p"], how="left", maintain_order="left"
    )


def _sum_of(frame: pl.LazyFrame, term: pl.Expr, ctx: Context) -> pl.LazyFrame:
    rows = _with(frame, term.alias("__c"))
    return _by_doc(rows, ctx, _fold_sum(_runs_of("__c", ctx.n_runs)))


def _probfuse(frame: pl.LazyFrame, ctx: Context) -> pl.LazyFrame:
    probs = ctx.params["probs"]
    rows = frame.with_columns(_per_system([len(p) for p in probs], pl.Int64()).alias("__k"))
    size = (pl.col(N).cast(pl.Float64) / pl.col("__k")).ceil().cast(pl.Int64)
    segment = (pl.col(R) - 1) // size
    rows = _lookup(
        rows.with_columns(segment.alias("__seg")), _table(probs, "__v"), pl.col("__seg"), "__v"
    )
    return _sum_of(rows, pl.col("__v") / (pl.col("__seg") + 1), ctx)


def _segment_of(position: pl.Expr, bounds: Sequence[int]) -> pl.Expr:
    """The segment index of a 0-based position (null past the last boundary)."""
    expr = pl.lit(None, pl.Int64)
    for k in range(len(bounds) - 2, -1, -1):
        expr = pl.when((position >= bounds[k]) & (position < bounds[k + 1])).then(k).otherwise(expr)
    return expr


def _segfuse(frame: pl.LazyFrame, ctx: Context) -> pl.LazyFrame:
    rows = _lookup(
        frame, _table(ctx.params["probs"], "__v"), _segment_of(pl.col(R) - 1, SEGFUSE_BOUNDS), "__v"
    )
    return _sum_of(rows, pl.col("__v").fill_null(0.0) * (pl.col(S) + 1), ctx)


def window_sums(probs: Sequence[float], n: int, w: int) -> np.ndarray:
    """``out[a, k]`` = ``sum(probs[a : a + k + 1])`` for every start ``a < n`` and width
    ``k <= 2w``, added left to right as ranx adds (so equal windows give equal bits);
    positions past ``probs`` add nothing.

    >>> window_sums([0.5, 0.25], 3, 1)[:, :3].tolist()
    [[0.5, 0.75, 0.75], [0.25, 0.25, 0.25], [0.0, 0.0, 0.0]]
    """
    padded = np.zeros(n + 2 * w + 1)
    given = np.asarray(probs, dtype=np.float64)[: len(padded)]
    padded[: len(given)] = given
    out = np.zeros((n, 2 * w + 1))
    running = np.zeros(n)
    for k in range(2 * w + 1):
        running = running + padded[k : k + n]
        out[:, k] = running
    return out


def _slidefuse(frame: pl.LazyFrame, ctx: Context) -> pl.LazyFrame:
    w = int(ctx.params["w"])
    n_max = int(frame.select(pl.col(N).max()).collect().item() or 0)
    systems, starts, widths, values = [], [], [], []
    for i, probs in enumerate(ctx.params["probs"]):
        sums = window_sums(probs, n_max, w)
        start, width = np.indices(sums.shape)
        systems.append(np.full(sums.size, i, dtype=np.uint32))
        starts.append(start.ravel())
        widths.append(width.ravel())
        values.append(sums.ravel())
    table = pl.LazyFrame(
        {
            SYS: np.concatenate(systems),
            "__a": np.concatenate(starts).astype(np.int64),
            "__k": np.concatenate(widths).astype(np.int64),
            "__v": np.concatenate(values),
        }
    )
    p = pl.col(R) - 1
    a = pl.max_horizontal(p - w, pl.lit(0))
    b = pl.min_horizontal(p + w, pl.col(N) - 1)
    rows = frame.with_columns(a.alias("__a"), (b - a).alias("__k")).join(
        table, on=[SYS, "__a", "__k"], how="left", maintain_order="left"
    )
    return _sum_of(rows, pl.col("__v") / (pl.col("__k") + 1), ctx)


def _posfuse(frame: pl.LazyFrame, ctx: Context) -> pl.LazyFrame:
    rows = _lookup(frame, _table(ctx.params["probs"], "__v"), pl.col(R) - 1, "__v")
    return _sum_of(rows, pl.col("__v").fill_null(0.0), ctx)


def _mapfuse(frame: pl.LazyFrame, ctx: Context) -> pl.LazyFrame:
    scores = [[float(m)] for m in ctx.params["map_scores"]]
    rows = _lookup(frame, _table(scores, "__v"), pl.lit(0, pl.Int64), "__v")
    return _sum_of(rows, pl.col("__v") / pl.col(R), ctx)


def _bayesfuse(frame: pl.LazyFrame, ctx: Context) -> pl.LazyFrame:
    rows = _lookup(frame, _table(ctx.params["log_odds"], "__v"), pl.col(R) - 1, "__v")
    rows = rows.with_columns(pl.col("__v").fill_null(MIN_ODD).alias("__c"))
    return _by_doc(rows, ctx, _fold_sum(_runs_of("__c", ctx.n_runs), missing=MIN_ODD))


def _plain(contribution: pl.Expr, fused: Callable[[pl.Expr, pl.Expr], pl.Expr]) -> Combine:
    return _per_run(contribution, fused)


METHODS: dict[str, Method] = {
    "min": Method(_comb_min, "scores"),
    "max": Method(_comb_max, "scores"),
    "med": Method(_comb_med, "scores"),
    "sum": Method(_plain(pl.col(S), lambda s, n: s), "scores"),
    "anz": Method(_plain(pl.col(S), lambda s, n: s / n), "scores"),
    "mnz": Method(_plain(pl.col(S), lambda s, n: s * n), "scores"),
    "gmnz": Method(_gmnz, "scores", required=("gamma",)),
    "wsum": Method(_by_weights("wsum"), "scores", weighted=True),
    "wmnz": Method(_by_weights("wmnz"), "scores", weighted=True),
    "mixed": Method(_by_weights("mixed"), "scores", weighted=True),
    "rrf": Method(_rrf, "ranks", defaults={"k": 60}),
    "isr": Method(_plain(_isr_term(), lambda s, n: s * n), "ranks"),
    "log_isr": Method(_plain(_isr_term(), lambda s, n: s * n.log()), "ranks"),
    "logn_isr": Method(_logn_isr, "ranks", defaults={"sigma": 0.01}),
    "rbc": Method(_rbc, "ranks", required=("phi",)),
    "bordafuse": Method(_bordafuse, "ranks"),
    "w_bordafuse": Method(_w_bordafuse, "ranks", weighted=True),
    "condorcet": Method(_condorcet, "ranks"),
    "w_condorcet": Method(_condorcet, "ranks", weighted=True),
    "probfuse": Method(_probfuse, "ranks", required=("probs",), trained=True),
    "segfuse": Method(_segfuse, "both", required=("probs",), trained=True),
    "slidefuse": Method(_slidefuse, "ranks", required=("probs", "w"), trained=True),
    "posfuse": Method(_posfuse, "ranks", required=("probs",), trained=True),
    "mapfuse": Method(_mapfuse, "ranks", required=("map_scores",), trained=True),
    "bayesfuse": Method(_bayesfuse, "ranks", required=("log_odds",), trained=True),
}
"""Every fusion method by its ranx name (``ranx.fusion.fusion_switch``)."""
