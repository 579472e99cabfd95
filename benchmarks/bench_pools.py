"""Benchmark: pools (issue 36) and assessor agreement, side by side with their peers.

Two parts, on synthetic data:

- ``pools``: ``pr.make_pool`` against trectools 0.0.50 ``TrecPoolMaker.make_pool``
  (topX, rbp, rrf) on S runs x Q queries x D documents each (default 20 x 50 x
  1,000 = 1M rows), and ``pr.pool_coverage`` against trectools'
  ``TrecRun.check_qrel_coverage`` for every run. The trectools runs are built
  before the clock starts (``TrecRun.load_run_from_dataframe``, rows in rank
  order), so only the pooling is timed; each pool is checked equal, per query.
- ``agreement``: ``pr.agreement`` (from the assessors' qrels frames: the join to
  the shared pairs is timed) against scikit-learn ``cohen_kappa_score``
  (quadratic weights), statsmodels ``fleiss_kappa`` (with ``aggregate_raters``)
  and ``krippendorff.alpha`` (ordinal), given the aligned grade arrays they take
  (the alignment is not timed for them); overall, and per query (the peers in a
  Python loop over the queries). Each value is checked equal at 1e-9.

Each step prints its wall time (best of ``--repeats``), the peak resident set size
during it (Linux ``VmHWM``, reset before each step) and the ratio peer / this.

Run from the repository root::

    python benchmarks/bench_pools.py                      # both parts
    python benchmarks/bench_pools.py --part pools --systems 20 --queries 50 --docs 1000

Options: ``--systems --queries --docs --depth --assessors --pairs --repeats``.
Not a test: no assertion on time.
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

import polars_rankeval as pr

STATUS = Path("/proc/self/status")
CLEAR_REFS = Path("/proc/self/clear_refs")


def peak_rss_mb() -> float:
    """Peak resident set size in MiB since the last reset (Linux), else NaN."""
    if STATUS.exists():
        for line in STATUS.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def timed(step: Callable[[], Any], repeats: int) -> tuple[float, float, Any]:
    """Best wall time of ``repeats`` runs, the peak RSS during them, the last result."""
    try:
        CLEAR_REFS.write_text("5")
    except OSError:
        pass
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = step()
        best = min(best, time.perf_counter() - start)
    return best, peak_rss_mb(), result


def report(label: str, ours: tuple[float, float, Any], theirs: tuple[float, float, Any]) -> None:
    print(
        f"  {label:<42} polars_rankeval {ours[0]:8.3f} s ({ours[1]:5.0f} MiB)   "
        f"peer {theirs[0]:8.3f} s ({theirs[1]:5.0f} MiB)   peer/this {theirs[0] / ours[0]:6.1f}x"
    )


def synthetic_runs(systems: int, queries: int, docs: int, seed: int = 0) -> pl.DataFrame:
    """S runs of D documents per query out of 5 D candidates, distinct scores."""
    rng = np.random.default_rng(seed)
    n = systems * queries * docs
    picked = np.concatenate(
        [rng.choice(5 * docs, size=docs, replace=False) for _ in range(systems * queries)]
    )
    return pl.DataFrame(
        {
            "system": np.repeat([f"run{s:02d}" for s in range(systems)], queries * docs),
            "query": np.tile(np.repeat(np.arange(1, queries + 1), docs), systems),
            "doc": pl.Series(picked).cast(pl.String).str.pad_start(6, "0"),
            "score": rng.random(n),
        }
    )


def pools(args: argparse.Namespace) -> None:
    import pandas as pd
    from trectools import TrecPoolMaker, TrecQrel, TrecRun

    runs = synthetic_runs(args.systems, args.queries, args.docs)
    print(
        f"\n[pools] {args.systems} runs x {args.queries} queries x {args.docs} documents "
        f"= {runs.height:,} rows, depth {args.depth}"
    )
    ranked = (
        pr.rank_run(runs).join(runs, on=["system", "query", "doc"]).sort("system", "query", "rank")
    )
    trec_runs = []
    for _, part in ranked.group_by("system", maintain_order=True):
        frame = part.select(
            pl.col("query").cast(pl.String),
            pl.lit("Q0").alias("q0"),
            pl.col("doc").alias("docid"),
            "rank",
            "score",
            "system",
        ).to_pandas()
        run = TrecRun()
        run.load_run_from_dataframe(frame)
        trec_runs.append(run)

    def sets(pool: pl.DataFrame) -> dict[str, set[str]]:
        grouped = pool.group_by(pl.col("query").cast(pl.String)).agg("doc")
        return {q: set(d) for q, d in grouped.iter_rows()}

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # trectools' concat onto an empty frame
        for strategy, theirs in (("top_k", "topX"), ("rbp", "rbp"), ("rrf", "rrf")):
            ours = timed(
                lambda s=strategy: pr.make_pool(runs, strategy=s, depth=args.depth),  # type: ignore[misc]
                args.repeats,
            )
            peer = timed(
                lambda t=theirs: TrecPoolMaker().make_pool(trec_runs, strategy=t, topX=args.depth),
                args.repeats,
            )
            same = sets(ours[2]) == {str(q): d for q, d in peer[2].pool.items()}
            report(f"make_pool {strategy} (same: {same})", ours, peer)

    pool = pr.make_pool(runs, depth=args.depth)
    qrels_frame = pool.select("query", "doc", relevance=pl.lit(1))
    qrels = TrecQrel()
    qrels.qrels_data = pd.DataFrame(
        {
            "query": qrels_frame["query"].cast(pl.String).to_numpy(),
            "q0": "0",
            "docid": qrels_frame["doc"].to_numpy(),
            "rel": 1,
        }
    )
    depth = 2 * args.depth
    ours = timed(
        lambda: pr.pool_coverage(runs, qrels_frame, depth=depth, per_query=True), args.repeats
    )
    peer = timed(
        lambda: [r.check_qrel_coverage(qrels, topX=depth) for r in trec_runs], args.repeats
    )
    mine = ours[2].sort("system", pl.col("query").cast(pl.String))
    same = mine["judged"].to_list() == [c for counts in peer[2] for c in counts]
    report(f"pool_coverage depth {depth} (same: {same})", ours, peer)


def synthetic_assessors(m: int, queries: int, pairs: int, seed: int = 0) -> dict[str, pl.DataFrame]:
    """m assessors grading (0..3) the same queries x pairs, near a latent grade."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 4, size=queries * pairs)
    frames = {}
    for a in range(m):
        grades = np.clip(truth + rng.choice([-1, 0, 0, 0, 1], size=truth.size), 0, 3)
        frames[f"a{a}"] = pl.DataFrame(
            {
                "query": np.repeat(np.arange(queries), pairs),
                "doc": np.tile(np.arange(pairs), queries),
                "relevance": grades,
            }
        )
    return frames


def agreement(args: argparse.Namespace) -> None:
    import krippendorff
    from sklearn.metrics import cohen_kappa_score
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    qrels = synthetic_assessors(args.assessors, args.queries, args.pairs)
    n = args.queries * args.pairs
    print(f"\n[agreement] {args.assessors} assessors x {n:,} shared (query, doc) pairs")
    matrix = np.stack([f.sort("query", "doc")["relevance"].to_numpy() for f in qrels.values()])
    query = next(iter(qrels.values())).sort("query", "doc")["query"].to_numpy()
    bounds = np.flatnonzero(np.diff(query)) + 1
    per_query = np.split(np.arange(n), bounds)
    two = dict(list(qrels.items())[:2])

    def fleiss(grades: np.ndarray) -> float:
        return float(fleiss_kappa(aggregate_raters(grades.T)[0]))

    def alpha(grades: np.ndarray) -> float:
        return float(krippendorff.alpha(grades.astype(float), level_of_measurement="ordinal"))

    cases: list[tuple[str, Callable[[np.ndarray], float], dict[str, Any]]] = [
        (
            "cohen_kappa quadratic",
            lambda g: float(cohen_kappa_score(g[0], g[1], weights="quadratic")),
            {"qrels": two, "measures": "cohen_kappa", "weights": "quadratic"},
        ),
        ("fleiss_kappa", fleiss, {"qrels": qrels, "measures": "fleiss_kappa"}),
        (
            "krippendorff_alpha ordinal",
            alpha,
            {"qrels": qrels, "measures": "krippendorff_alpha", "level": "ordinal"},
        ),
    ]
    for label, peer_fn, kwargs in cases:
        grades = matrix[:2] if kwargs["qrels"] is two else matrix
        measure = kwargs["measures"]
        ours = timed(lambda kw=kwargs: pr.agreement(**kw), args.repeats)
        peer = timed(lambda g=grades, f=peer_fn: f(g), args.repeats)
        same = abs(ours[2][measure].item() - peer[2]) <= 1e-9
        report(f"{label} (same: {same})", ours, peer)
        ours = timed(lambda kw=kwargs: pr.agreement(**kw, per_query=True), args.repeats)
        peer = timed(
            lambda g=grades, f=peer_fn: [f(g[:, rows]) for rows in per_query], args.repeats
        )
        diff = np.abs(ours[2].sort("query")[measure].to_numpy() - np.array(peer[2])).max()
        report(f"  per query, {args.queries} (same: {diff <= 1e-9})", ours, peer)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=["pools", "agreement", "all"], default="all")
    parser.add_argument("--systems", type=int, default=20)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--assessors", type=int, default=3)
    parser.add_argument("--pairs", type=int, default=2000, help="shared pairs per query")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"polars {pl.__version__}, polars_rankeval {pr.__version__}")
    if args.part in ("pools", "all"):
        pools(args)
    if args.part in ("agreement", "all"):
        agreement(args)


if __name__ == "__main__":
    main()
