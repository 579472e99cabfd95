"""Benchmark: explain with several measures, and report with intervals (issue 37).

Two parts, each timed side by side in the same process on the same data:

- ``explain``: ``pr.explain`` of K measures between two presets in one call,
  against K calls of one measure each (what a user did before one call took
  several); then ``per="cause"`` (the contributions to the difference of the
  means) against ``per="query"``. The run is ``data.make_corpus`` (scores
  rounded to 3 decimals, so ties decide ranks; 1% of qrels queries absent from
  the run, so ``absent_queries`` is a cause between trec_eval and ranx).
- ``report``: ``pr.report`` against a baseline without intervals, then with
  ``interval="t"`` and ``interval="bootstrap"``, on a synthetic per-query frame
  (``bench_stats.synthetic_per_query``).

Each step prints its wall time (best of ``--repeats``), the peak resident set
size during it and the peak of traced Python/numpy allocations
(``bench_stats.measure``), and each comparison its ratio.

Run from the repository root::

    python benchmarks/bench_extras.py
    python benchmarks/bench_extras.py --rows 400000 --measures 5 --systems 10 \
        --queries 10000 --repeats 3

Not a test: no assertion on time.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

sys.path.insert(0, str(Path(__file__).parent))

from bench_stats import measure, synthetic_per_query
from data import make_corpus

import polars_rankeval as pr

MEASURES = ["AP", "nDCG@10", "P@10", "RR", "R@100", "AP@10", "ERR@10", "Bpref"]
BETWEEN = ("trec_eval-10", "ranx")


def best_of(repeats: int, label: str, step: Callable[[], Any]) -> tuple[float, Any]:
    """The best wall time of ``repeats`` runs of ``step`` (memory from the first)."""
    result = measure(label, step)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    best = min(times)
    print(f"    best of {repeats}: {best:.3f} s")
    return best, result


def explain_part(args: argparse.Namespace) -> None:
    run, qrels = make_corpus(args.rows, depth=100, systems=2, seed=0)
    names = MEASURES[: args.measures]
    print(
        f"\n[explain] {run.height:,} run rows (2 systems, 100 documents per query), "
        f"{len(names)} measures, between {BETWEEN[0]} and {BETWEEN[1]}"
    )
    one, table = best_of(
        args.repeats, "  one call, all measures", lambda: pr.explain(run, qrels, names, BETWEEN)
    )
    each, _ = best_of(
        args.repeats,
        "  one call per measure",
        lambda: [pr.explain(run, qrels, m, BETWEEN) for m in names],
    )
    print(f"  one call / one per measure: {one / each:.2f}x")
    cause, _ = best_of(
        args.repeats,
        "  one call, per='cause'",
        lambda: pr.explain(run, qrels, names, BETWEEN, per="cause"),
    )
    print(f"  per='cause' / per='query': {cause / one:.2f}x")
    differing = table.filter(table["causes"].list.len() > 0).height
    print(f"  {differing:,} of {table.height:,} (measure, system, query) rows differ")


def report_part(args: argparse.Namespace) -> None:
    per_query = synthetic_per_query(args.systems, args.measures, args.queries)
    print(
        f"\n[report] {args.systems} systems x {args.measures} measures x "
        f"{args.queries:,} queries, against a baseline (t-test)"
    )
    plain, _ = best_of(
        args.repeats, "  no interval", lambda: pr.report(per_query, baseline="sys00")
    )
    for kind in ("t", "bootstrap"):
        took, _ = best_of(
            args.repeats,
            f"  interval={kind!r}",
            lambda k=kind: pr.report(
                per_query, baseline="sys00", interval=k, n_resamples=args.resamples
            ),
        )
        print(f"  interval={kind!r} / no interval: {took / plain:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=("explain", "report", "all"), default="all")
    parser.add_argument("--rows", type=int, default=400_000, help="explain: run rows")
    parser.add_argument("--measures", type=int, default=5)
    parser.add_argument("--systems", type=int, default=10, help="report: systems")
    parser.add_argument("--queries", type=int, default=10_000, help="report: queries")
    parser.add_argument("--resamples", type=int, default=1_000, help="report: bootstrap resamples")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"polars {pl.__version__}, polars_rankeval {pr.__version__}; {vars(args)}")
    if args.part in ("explain", "all"):
        explain_part(args)
    if args.part in ("report", "all"):
        report_part(args)


if __name__ == "__main__":
    main()
