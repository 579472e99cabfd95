"""Benchmark: rank fusion and the search for fusion weights, against ranx (issue 34).

Two runs of ``--rows`` rows each (default 1M: 2,000 queries x 500 documents, drawn
from 750 candidates a query, so the runs overlap in part), as Polars DataFrames, and
qrels of 50 judged documents a query. Side by side in one process:

- ``fuse``: ``pr.fuse`` against ranx end to end (its ``Run`` built from the frames
  with ``Run.from_df`` after ``to_pandas``, then ``ranx.fuse``), for ``rrf`` and
  ``wsum`` with ``min-max``; the fused scores are checked equal at 1e-9 on the
  documents of 50 queries.
- ``optimize``: ``pr.optimize_fusion`` against ``ranx.optimize_fusion`` (its ``Run``
  and ``Qrels`` built from the frames), ``wsum`` with ``min-max`` on 2 runs: ranx's 11
  weight configurations, nDCG@10; the best weights are checked equal.

ranx's numba functions are compiled on small data before the timings. Each step
prints its wall time and the peak resident set size during it (Linux ``VmHWM``,
reset before the step through ``/proc/self/clear_refs``; the process peak where that
cannot be reset).

Run from the repository root::

    python benchmarks/bench_fusion.py                  # 1M rows a run
    python benchmarks/bench_fusion.py --rows 200000    # a quick look

Not a test: no assertion on time.
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

import polars_rankeval as pr

STATUS = Path("/proc/self/status")
CLEAR_REFS = Path("/proc/self/clear_refs")


def reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS counter of this process (Linux); False if not possible."""
    try:
        CLEAR_REFS.write_text("5")
    except OSError:
        return False
    return True


def peak_rss_mb() -> float:
    """Peak resident set size in MiB: since the last reset (VmHWM) or of the process."""
    if STATUS.exists():
        for line in STATUS.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(label: str, step: Callable[[], Any]) -> tuple[Any, float]:
    """Run one step; print its time and peak RSS; return its result and time."""
    resettable = reset_peak_rss()
    start = time.perf_counter()
    result = step()
    elapsed = time.perf_counter() - start
    rss = f"{peak_rss_mb():.0f} MiB" + ("" if resettable else " (process peak so far)")
    print(f"  {label}: {elapsed:.2f} s; peak RSS {rss}", flush=True)
    return result, elapsed


def load_average() -> str:
    """The machine's load average (1, 5, 15 min): the benchmark shares its cores."""
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "load average unknown"
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} cores"


def make_runs(rows: int, seed: int = 0) -> tuple[dict[str, pl.DataFrame], pl.DataFrame]:
    """Two runs (a lexical and a dense one) and their qrels."""
    rng = np.random.default_rng(seed)
    depth = 500
    n_queries = max(1, rows // depth)
    queries = np.repeat(np.arange(n_queries), depth)
    runs = {}
    for name, scale in (("bm25", 20.0), ("dense", 1.0)):
        docs = np.concatenate([rng.choice(750, depth, replace=False) for _ in range(n_queries)])
        scores = rng.gamma(2.0, scale / 4, queries.size)
        runs[name] = pl.DataFrame(
            {
                "query": pl.Series(queries).cast(pl.String),
                "doc": pl.Series(docs).cast(pl.String).str.pad_start(4, "d"),
                "score": scores,
            }
        )
    judged = np.concatenate([rng.choice(750, 50, replace=False) for _ in range(n_queries)])
    qrels = pl.DataFrame(
        {
            "query": pl.Series(np.repeat(np.arange(n_queries), 50)).cast(pl.String),
            "doc": pl.Series(judged).cast(pl.String).str.pad_start(4, "d"),
            "relevance": rng.choice([0, 0, 1, 2], judged.size),
        }
    )
    return runs, qrels


def ranx_runs(runs: dict[str, pl.DataFrame]) -> list[Any]:
    from ranx import Run

    return [
        Run.from_df(f.to_pandas(), q_id_col="query", doc_id_col="doc", score_col="score", name=k)
        for k, f in runs.items()
    ]


def ranx_qrels(qrels: pl.DataFrame) -> Any:
    from ranx import Qrels

    return Qrels.from_df(
        qrels.to_pandas(), q_id_col="query", doc_id_col="doc", score_col="relevance"
    )


def check_fused(ours: pl.DataFrame, theirs: Any, n_queries: int = 50) -> None:
    """The fused scores of the first ``n_queries`` queries, equal at 1e-9."""
    queries = list(theirs.run.keys())[:n_queries]
    mine = {
        (q, d): s
        for q, d, s in ours.filter(pl.col("query").is_in(queries))
        .select("query", "doc", "score")
        .iter_rows()
    }
    count = 0
    for q in queries:
        for d, s in theirs.run[q].items():
            assert math.isclose(mine[(q, d)], s, rel_tol=1e-9, abs_tol=1e-9), (q, d)
            count += 1
    assert count == len(mine)


def warm_up() -> None:
    """Compile ranx's numba functions (and warm Polars) on small data."""
    from ranx import fuse, optimize_fusion

    runs, qrels = make_runs(2000, seed=1)
    rx, rq = ranx_runs(runs), ranx_qrels(qrels)
    for method, params in (("rrf", {}), ("wsum", {"weights": [0.5, 0.5]})):
        fuse(rx, norm="min-max", method=method, params=params)
        pr.fuse(runs, method=method)
    optimize_fusion(rq, rx, norm="min-max", method="wsum", metric="ndcg@10", show_progress=False)
    pr.optimize_fusion(runs, qrels, show_progress=False)


def bench_fuse(runs: dict[str, pl.DataFrame]) -> None:
    from ranx import fuse

    for method, params in (("rrf", {}), ("wsum", {"weights": [0.5, 0.5]})):
        print(f"fuse {method}, min-max:")

        def with_ranx(method: str = method, params: dict = params) -> Any:
            return fuse(ranx_runs(runs), norm="min-max", method=method, params=params)

        def with_pr(method: str = method, params: dict = params) -> pl.DataFrame:
            return pr.fuse(runs, method=method, norm="min-max", weights=params.get("weights"))

        theirs, t_ranx = measure("ranx (Run.from_df + fuse)", with_ranx)
        ours, t_ours = measure("pr.fuse", with_pr)
        check_fused(ours, theirs)
        print(f"  ratio ranx / pr: {t_ranx / t_ours:.1f}x ({ours.height:,} fused rows)")


def bench_optimize(runs: dict[str, pl.DataFrame], qrels: pl.DataFrame) -> None:
    from ranx import optimize_fusion

    print("optimize_fusion wsum, min-max, nDCG@10 (11 configurations):")
    theirs, t_ranx = measure(
        "ranx (Run/Qrels.from_df + optimize_fusion)",
        lambda: optimize_fusion(
            ranx_qrels(qrels), ranx_runs(runs), norm="min-max", method="wsum",
            metric="ndcg@10", show_progress=False,
        ),
    )  # fmt: skip
    (best, report), t_ours = measure(
        "pr.optimize_fusion",
        lambda: pr.optimize_fusion(
            runs, qrels, method="wsum", norm="min-max", metric="nDCG@10", show_progress=False
        ),
    )
    print(
        f"  best weights: ranx {tuple(float(w) for w in theirs['weights'])}, pr {best['weights']}"
    )
    print(f"  ratio ranx / pr: {t_ranx / t_ours:.1f}x ({report.height} configurations)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of each run")
    parser.add_argument("--part", choices=("fuse", "optimize", "all"), default="all")
    args = parser.parse_args()
    runs, qrels = make_runs(args.rows)
    sizes = f"{runs['bm25'].height:,} rows, {qrels.height:,} qrels rows"
    print(f"2 runs of {sizes}; Polars {pl.__version__}; {load_average()}")
    warm_up()
    if args.part in ("fuse", "all"):
        bench_fuse(runs)
    if args.part in ("optimize", "all"):
        bench_optimize(runs, qrels)
    print(f"at the end: {load_average()}")


if __name__ == "__main__":
    main()
