"""`optimize_fusion`: ranx's exhaustive search for the best fusion parameters, scored in
one pass of the engine.

Every configuration of the grid is fused from the same normalised runs, the fused runs
are stacked as the systems of one frame, and :func:`polars_rankeval.evaluate` scores
them all at once (in a few pieces when the grid's fused rows are many). For a measure
that reads only each ranking's top ``k`` documents (``nDCG@10``, ``P@5``, ...), each
configuration's rows are first cut to those whose score reaches the query's ``k``-th
(ties kept), which the measure then scores as it scores the whole run. The grids and
the choice of the best are ranx's (``ranx/fusion_optimization/*.py``): configurations
in ranx's order, the best the last one whose score is at least every earlier best
(``score >= best_score``).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator, Mapping, Sequence
from itertools import product
from typing import Any

import numpy as np
import polars as pl

from polars_rankeval.engine.rank import ranking_ids
from polars_rankeval.fusion import train
from polars_rankeval.fusion.fuse import Columns, keyed, prepare, scaled_norm
from polars_rankeval.fusion.methods import METHODS, Context, F, weighted_expr, wide_runs
from polars_rankeval.fusion.normalize import D, G, Q, S, applied_norm, normalize, score_expr
from polars_rankeval.inputs import as_frame
from polars_rankeval.measures import measure_better
from polars_rankeval.validation import check_columns

GRID_DEFAULTS: dict[str, dict[str, Any]] = {
    "gmnz": {"min_gamma": 0.01, "max_gamma": 1.0, "step": 0.01},
    "logn_isr": {"min_sigma": 0.01, "max_sigma": 1.0, "step": 0.01},
    "rbc": {"min_phi": 0.01, "max_phi": 1.0, "step": 0.01},
    "rrf": {"min_k": 10, "max_k": 100, "step": 10},
    "probfuse": {"min_n_segments": 1, "max_n_segments": 100},
    "slidefuse": {"min_w": 1, "max_w": 100},
}
"""Each searched parameter's range and step, as ranx's ``optimize_*`` defaults; the
weighted methods search weights on ``{0, step, ..., 1}`` (step 0.1) summing to 1."""
WEIGHTED = ("wsum", "wmnz", "mixed", "w_bordafuse", "w_condorcet")
TRAINED_ONLY = ("bayesfuse", "mapfuse", "posfuse", "segfuse")
QID = "__qid"
"""Internal column: a query's integer id."""
ROWS_PER_PASS = 8_000_000
"""Fused rows scored by one call of ``evaluate`` at most (configurations are scored in
pieces of whole configurations past that)."""


def float_grid(low: float, high: float, step: float) -> list[float]:
    """ranx's grid: ``np.arange(low, high + step, step)`` rounded to ``step``'s decimals.

    >>> float_grid(0.1, 0.5, 0.1)
    [0.1, 0.2, 0.3, 0.4, 0.5]
    """
    digits = str(step)[::-1].find(".")
    return [round(float(x), digits) for x in np.arange(low, high + step, step)]


def weight_grid(step: float, n_runs: int) -> list[tuple[float, ...]]:
    """ranx's weight configurations: every tuple of values on ``{0, step, ..., 1}`` whose
    float sum is exactly 1.0, in ``itertools.product`` order.

    >>> weight_grid(0.5, 2)
    [(0.0, 1.0), (0.5, 0.5), (1.0, 0.0)]
    """
    values = float_grid(0, 1, step)
    return [seq for seq in product(*[values] * n_runs) if sum(seq) == 1.0]


def configurations(method: str, n_runs: int, grid: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The grid of ``method``: one dict of parameters per configuration, in ranx's order.

    Examples
    --------
    >>> configurations("wsum", 2, {"step": 0.5})
    [{'weights': (0.0, 1.0)}, {'weights': (0.5, 0.5)}, {'weights': (1.0, 0.0)}]
    >>> configurations("wsum", 2, {"step": 0})
    Traceback (most recent call last):
    ...
    ValueError: step must be a number > 0 (and <= 1 for weights). Got 0 instead.
    """
    if "step" in grid:
        step = grid["step"]
        number = isinstance(step, int | float) and not isinstance(step, bool)
        if not number or not math.isfinite(step) or step <= 0 or (method in WEIGHTED and step > 1):
            msg = f"step must be a number > 0 (and <= 1 for weights). Got {step!r} instead."
            raise ValueError(msg)
    if method in WEIGHTED:
        return [{"weights": w} for w in weight_grid(grid.get("step", 0.1), n_runs)]
    if method not in GRID_DEFAULTS:
        return [{}]
    unknown = sorted(set(grid) - set(GRID_DEFAULTS[method]))
    if unknown:
        listed = ", ".join(sorted(GRID_DEFAULTS[method]))
        msg = f"grid of {method!r} has no {unknown[0]!r} (it takes: {listed})."
        raise ValueError(msg)
    g = GRID_DEFAULTS[method] | dict(grid)
    if method == "gmnz":
        return [{"gamma": v} for v in float_grid(g["min_gamma"], g["max_gamma"], g["step"])]
    if method == "logn_isr":
        return [{"sigma": v} for v in float_grid(g["min_sigma"], g["max_sigma"], g["step"])]
    if method == "rbc":
        return [{"phi": v} for v in float_grid(g["min_phi"], g["max_phi"], g["step"])]
    if method == "rrf":
        return [{"k": k} for k in range(g["min_k"], g["max_k"] + 1, int(g["step"]))]
    if method == "probfuse":
        return [{"n_segments": n} for n in range(g["min_n_segments"], g["max_n_segments"] + 1)]
    if method == "slidefuse":
        return [{"w": w} for w in range(g["min_w"], g["max_w"] + 1)]
    return [{}]


class _Bar:
    """A one-line progress bar on stderr, shown only on a terminal."""

    def __init__(self, total: int, label: str, show: bool | None) -> None:
        self.total, self.label, self.done = total, label, 0
        self.shown = sys.stderr.isatty() if show is None else show

    def advance(self, n: int) -> None:
        self.done += n
        if self.shown:
            width = 30
            filled = int(width * self.done / max(self.total, 1))
            bar = "#" * filled + "-" * (width - filled)
            sys.stderr.write(f"\r{self.label} [{bar}] {self.done}/{self.total}")
            if self.done >= self.total:
                sys.stderr.write("\n")
            sys.stderr.flush()


def _label(config: Mapping[str, Any]) -> str:
    """ranx's report key of a configuration: ``str`` of its one value."""
    if not config:
        return "trained"
    (value,) = config.values()
    return str(value)


def optimize_fusion(
    runs: Any,
    qrels: Any,
    *,
    method: str = "wsum",
    norm: str | None = "min-max",
    metric: str = "nDCG@10",
    step: float | int | None = None,
    grid: Mapping[str, Any] | None = None,
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    system: str = "system",
    relevance: str = "relevance",
    conventions: str | None = None,
    show_progress: bool | None = None,
) -> tuple[dict[str, Any], pl.DataFrame]:
    r"""Search the fusion parameters that score best on qrels, as ``ranx.optimize_fusion``.

    The grid of each method is ranx's: weights on :math:`\{0, 0.1, \ldots, 1\}`
    summing to 1 (``wsum``, ``wmnz``, ``mixed``, ``w_bordafuse``, ``w_condorcet``),
    :math:`\gamma`, :math:`\sigma`, :math:`\phi` on :math:`0.01, 0.02, \ldots, 1`
    (``gmnz``, ``logn_isr``, ``rbc``), :math:`k = 10, 20, \ldots, 100` (``rrf``),
    1 to 100 segments (``probfuse``) or window sizes (``slidefuse``). The trained
    methods (``probfuse``, ``slidefuse``, ``posfuse``, ``segfuse``, ``mapfuse``,
    ``bayesfuse``) are trained on ``qrels`` here, and the parameters returned hold
    what was learned, ready for :func:`~polars_rankeval.fuse` on other queries.

    .. math::

        \theta^* = \operatorname*{arg\,max}_{\theta \in \Theta}
        \frac{1}{|Q|} \sum_{q \in Q} \mathrm{metric}_q(\mathrm{fuse}_\theta)

    ties going to the later configuration in ranx's order.

    Parameters
    ----------
    runs
        As :func:`~polars_rankeval.fuse` takes them. A LazyFrame is read into memory:
        the runs are normalised once and reused for every configuration, and the
        trained methods learn from every query at once (see the Fusion guide).
    qrels
        ``query, doc, relevance``.
    method, norm
        As :func:`~polars_rankeval.fuse`.
    metric
        The measure to maximise, in any form :func:`~polars_rankeval.evaluate` reads
        (``"nDCG@10"``, ``"ndcg@10"``, ``"map"``, ...): its mean over the queries; a
        measure declared ``better="lower"`` (FallOut, Unjudged, ...) is minimised.
    step
        The grid's step: of the weights (default 0.1), of :math:`\gamma`,
        :math:`\sigma`, :math:`\phi` (0.01) or of :math:`k` (10).
    grid
        Other bounds of the grid, by ranx's names (``min_k``, ``max_k``,
        ``min_gamma``, ..., ``max_n_segments``, ``max_w``).
    query, doc, score, system, relevance
        Column names.
    conventions
        Passed to :func:`~polars_rankeval.evaluate`: each configuration scores as
        ``fuse`` then ``evaluate`` with them. The default is trec_eval's (equal fused
        scores ordered by doc id, descending); ``"ranx"`` scores as ranx does (every
        qrels query, a missing one as 0; equal fused scores in the fused run's row
        order), which ``ranx.optimize_fusion``'s report equals where fused scores tie.
    show_progress
        A progress bar on stderr; default: when stderr is a terminal.

    Returns
    -------
    tuple of (dict, DataFrame)
        The best parameters (as ``fuse``'s ``params``, with ``weights``), and the
        report: one row per configuration, ``config`` (ranx's label), the searched
        parameter and the metric's mean.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> bm25 = pl.DataFrame({"query": ["q1", "q1", "q2", "q2"], "doc": ["a", "b", "c", "d"],
    ...                      "score": [2.0, 1.0, 2.0, 1.0]})
    >>> dense = pl.DataFrame({"query": ["q1", "q1", "q2", "q2"], "doc": ["b", "a", "c", "d"],
    ...                       "score": [0.9, 0.1, 0.8, 0.7]})
    >>> qrels = pl.DataFrame({"query": ["q1", "q2"], "doc": ["b", "c"], "relevance": [1, 1]})
    >>> best, report = pr.optimize_fusion({"bm25": bm25, "dense": dense}, qrels,
    ...                                   method="wsum", metric="RR", step=0.5)
    >>> best
    {'weights': (0.5, 0.5)}
    >>> for row in report.rows():
    ...     print(row)
    ('(0.0, 1.0)', [0.0, 1.0], 1.0)
    ('(0.5, 0.5)', [0.5, 0.5], 1.0)
    ('(1.0, 0.0)', [1.0, 0.0], 0.75)

    Weights (0.0, 1.0) and (0.5, 0.5) both put the relevant document first (RR 1.0);
    as in ranx, the later of two equal configurations wins.
    """
    from polars_rankeval.evaluate import evaluate

    if method not in METHODS:
        prepare_method_error(method)
    if method not in WEIGHTED and method not in GRID_DEFAULTS and method not in TRAINED_ONLY:
        searchable = ", ".join(repr(m) for m in (*WEIGHTED, *GRID_DEFAULTS, *TRAINED_ONLY))
        msg = f"method {method!r} has nothing to optimise (these do: {searchable})."
        raise ValueError(msg)
    cols = Columns(query, doc, score, system)
    spec, stacked = prepare(
        runs, cols, method="sum", norm=norm, weights=None, params=None,
        depth=None, max_docs=None, doc_order="desc",
    )  # fmt: skip
    n_runs = len(stacked.systems)
    qrels_frame = as_frame(qrels, "qrels", (query, doc, relevance)).lazy()
    check_columns(
        qrels_frame.collect_schema(),
        {"query": query, "doc": doc, "relevance": relevance},
        "qrels",
    )
    settings = dict(grid or {})
    if step is not None:
        settings["step"] = step
    configs = configurations(method, n_runs, settings)
    norm = applied_norm(spec.norm, reads_scores=METHODS[method].needs != "ranks")
    frame = keyed(stacked.frame.collect().rechunk(), stacked.systems, cols, validate=True,
                  scaled=scaled_norm(norm))  # fmt: skip
    if METHODS[method].needs == "scores" and spec.norm not in ("rank", "borda"):
        rows = frame.with_columns(score_expr(spec.norm, [G]))  # no ranks needed
    else:  # ranked as pr.fuse ranks them (applied_norm)
        rows = normalize(frame.lazy(), norm, n_runs, "desc", [G]).collect()
    judged = qrels_frame.select(
        pl.col(query).alias(Q), pl.col(doc).alias(D), pl.col(relevance).alias("__rel")
    )
    qrels_data = qrels_frame.collect()
    checked = _check_qrels(qrels_data, metric, cols, relevance, conventions)
    params = _trained(method, rows, judged, n_runs, configs)
    fused_rows = rows.lazy()
    wide = None
    if method in ("wsum", "wmnz", "mixed"):  # one table of the runs' scores for every weighting
        wide = wide_runs(fused_rows, n_runs, [S]).collect()
        query_ids, _ = ranking_ids(wide, [Q])  # the cut's groups: integers, not strings
        wide = wide.with_columns(pl.Series(QID, query_ids))
    top = top_depth(metric, conventions)
    bar = _Bar(len(configs), f"optimize_fusion {method}", show_progress)
    scores: list[float] = []
    metric_name = metric
    for chunk in _chunks(configs, rows.height):
        if wide is not None:
            frames = _weighted_frames(wide, method, chunk, n_runs, top)
        else:
            frames = []
            for i, config in chunk:
                ctx = Context(
                    n_runs=n_runs,
                    weights=tuple(config.get("weights", [1.0 / n_runs] * n_runs)),
                    params=dict(METHODS[method].defaults) | params[i],
                )
                plan = METHODS[method].combine(fused_rows, ctx)
                if top is not None:
                    plan = plan.filter(_within_top(pl.col(F), top, Q))
                frames.append(plan.with_columns(pl.lit(i, pl.Int64).alias("__cfg")))
        stacked_runs = pl.concat(frames).collect()
        result = evaluate(
            stacked_runs.select(
                pl.col(Q).alias(query), pl.col(D).alias(doc), pl.col(F).alias(score),
                pl.col("__cfg").alias(system),
            ),
            qrels_data,
            metric,
            query=query, doc=doc, score=score, system=system, relevance=relevance,
            conventions=conventions, validate=not checked,
        )  # fmt: skip
        metric_name = result.columns[-1]
        scores += _means(result, system, query, metric_name, [i for i, _ in chunk])
        bar.advance(len(chunk))
    best = _best(scores, lower=measure_better(metric_name) == "lower")
    report = _report(method, configs, scores, metric_name)
    chosen = params[best] if best is not None else {}
    if method in WEIGHTED:
        chosen = {"weights": configs[best]["weights"]} if best is not None else {}
    return chosen, report


TOP_ONLY = ("nDCG", "P", "R", "RR", "AP", "Success")
"""Measure families whose value at a cutoff ``k`` (with no other parameter) reads only a
ranking's top ``k`` documents and the qrels."""


def top_depth(metric: str, conventions: str | None) -> int | None:
    """The cutoff ``k`` of ``metric`` when its value reads only each ranking's top ``k``
    documents (a :data:`TOP_ONLY` family at a cutoff), else None.

    >>> top_depth("nDCG@10", None), top_depth("map", None)
    (10, None)
    """
    from polars_rankeval.measures import parse_measures

    parsed = parse_measures(metric, conventions=conventions)
    if len(parsed) != 1:
        return None
    (measure,) = parsed
    if measure.name not in TOP_ONLY or measure.params or not isinstance(measure.cutoff, int):
        return None
    return measure.cutoff


def _within_top(score: pl.Expr, k: int, query: str) -> pl.Expr:
    """The rows whose fused ``score`` is at least the ``k``-th highest of their query,
    both rounded to single precision: every row that can be among a query's top ``k``
    whatever the tie rule (equal scores ordered by doc id, scores compared as floats or
    as doubles), so a measure that reads only the top ``k`` scores the rows kept as it
    scores them all."""
    kth = score.top_k(k).min().over(query)
    return score.cast(pl.Float32) >= kth.cast(pl.Float32)


def _weighted_frames(wide: pl.DataFrame, method: str, chunk: Sequence[tuple[int, dict[str, Any]]],
                     n_runs: int, top: int | None) -> list[pl.LazyFrame]:  # fmt: skip
    """Each configuration of ``chunk`` (its weights) fused from the runs side by side
    (``wide``): its scores, and its rows within the top ``top`` of their query, all
    computed in one Polars pass (whose windows share the query groups)."""
    fused = {i: weighted_expr(method, tuple(c["weights"]), n_runs) for i, c in chunk}
    table = wide.lazy().with_columns(e.alias(f"__f{i}") for i, e in fused.items())
    if top is not None:
        table = table.with_columns(
            _within_top(pl.col(f"__f{i}"), top, QID).alias(f"__in{i}") for i in fused
        )
    table = table.collect().lazy()
    frames = []
    for i in fused:
        rows = table.filter(pl.col(f"__in{i}")) if top is not None else table
        frames.append(
            rows.select(Q, D, pl.col(f"__f{i}").alias(F), pl.lit(i, pl.Int64).alias("__cfg"))
        )
    return frames


def _check_qrels(qrels: pl.DataFrame, metric: str, cols: Columns, relevance: str,
                 conventions: str | None) -> bool:  # fmt: skip
    """Check the qrels rows (and the metric's name) once, by scoring a one-row run
    against them with ``evaluate``'s checks; False when there is no row to make that
    run of (then every ``evaluate`` call checks). The fused runs made from the checked
    runs need no check."""
    from polars_rankeval.evaluate import evaluate

    if not qrels.height:
        return False
    probe = qrels.head(1).select(
        pl.col(cols.query), pl.col(cols.doc), pl.lit(1.0).alias(cols.score)
    )
    evaluate(probe, qrels, metric, query=cols.query, doc=cols.doc, score=cols.score,
             relevance=relevance, system=None, conventions=conventions)  # fmt: skip
    return True


def _means(result: pl.DataFrame, system: str, query: str, metric: str,
           configs: Sequence[int]) -> list[float]:  # fmt: skip
    """Each configuration's mean over queries, added in query order: configurations
    that rank alike get the same bits, so that ranx's tie rule sees their tie."""
    ordered = result.sort(system, query)
    out = []
    for i in configs:
        values = ordered.filter(pl.col(system) == i)[metric].to_numpy()
        out.append(float(np.mean(values)) if len(values) else float("nan"))
    return out


def prepare_method_error(method: str) -> None:
    listed = ", ".join(repr(m) for m in METHODS)
    msg = f"method must be one of {listed}. Got {method!r} instead."
    raise ValueError(msg)


def _chunks(
    configs: Sequence[dict[str, Any]], rows: int
) -> Iterator[list[tuple[int, dict[str, Any]]]]:
    """Configurations in pieces of about :data:`ROWS_PER_PASS` fused rows."""
    per = max(1, ROWS_PER_PASS // max(rows, 1))
    indexed = list(enumerate(configs))
    for start in range(0, len(indexed), per):
        yield indexed[start : start + per]


def _best(scores: Sequence[float], *, lower: bool = False) -> int | None:
    """ranx's choice: the last configuration whose score is at least the best so far
    (starting from 0); with ``lower`` (a measure declared ``better="lower"``), at most
    the best so far (starting from infinity).

    Examples
    --------
    >>> _best([0.2, 0.5, 0.5, 0.1]), _best([0.2, 0.5, 0.1, 0.1], lower=True)
    (2, 3)
    """
    best, best_score = None, math.inf if lower else 0.0
    for i, value in enumerate(scores):
        if value <= best_score if lower else value >= best_score:
            best, best_score = i, value
    return best


def _trained(method: str, rows: pl.DataFrame, qrels: pl.LazyFrame, n_runs: int,
             configs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:  # fmt: skip
    """Each configuration's parameters as ``fuse`` takes them, trained on ``qrels``."""
    if method not in ("probfuse", "slidefuse", *TRAINED_ONLY):
        return [dict(c) for c in configs]
    hit_rows = train.hits(rows.lazy(), qrels).collect().lazy()
    if method == "probfuse":
        return [{"probs": train.probfuse_probs(hit_rows, n_runs, c["n_segments"])} for c in configs]
    if method == "slidefuse":
        probs = train.position_probs(hit_rows, n_runs)
        return [{"probs": probs, "w": c["w"]} for c in configs]
    if method == "posfuse":
        return [{"probs": train.position_probs(hit_rows, n_runs)}]
    if method == "segfuse":
        return [{"probs": train.segfuse_probs(hit_rows, n_runs)}]
    if method == "bayesfuse":
        return [{"log_odds": train.bayes_log_odds(hit_rows, n_runs)}]
    return [{"map_scores": train.map_scores(hit_rows, qrels, n_runs)}]


def _report(method: str, configs: Sequence[dict[str, Any]], scores: Sequence[float],
            metric: str) -> pl.DataFrame:  # fmt: skip
    """One row per configuration: ranx's label, the parameter searched, the score."""
    columns: dict[str, Any] = {"config": [_label(c) for c in configs]}
    if configs and configs[0]:
        (key,) = configs[0].keys()
        values = [c[key] for c in configs]
        columns[key] = [list(v) for v in values] if key == "weights" else values
    columns[metric] = list(scores)
    return pl.DataFrame(columns)
