"""Benchmark: compare 50 systems with a baseline on 10 measures over 10,000 queries.

Builds a synthetic long per-query frame (as ``evaluate`` returns: ``system, query``
and one Float64 column per measure; values with the ties and zeros real measures
have), then times ``pr.compare(..., baseline=...)`` with the paired t-test and with
the 10,000-resample randomization test: 49 systems x 10 measures = 490 comparisons.
Prints wall time per step and the peak resident set size of the process.

Run from the repository root::

    python benchmarks/bench_stats.py

Options: ``--systems 50 --measures 10 --queries 10000 --resamples 10000``.
Not a test: no assertion on time.
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np
import polars as pl

import polars_rankeval as pr


def synthetic_per_query(
    n_systems: int, n_measures: int, n_queries: int, seed: int = 0
) -> pl.DataFrame:
    """Per-query scores: a query difficulty shared by all systems, plus system noise.

    Even measures are rounded to tenths (like P@10: many exact ties); odd ones are
    continuous with zeros (like AP on queries with no relevant document retrieved).
    """
    rng = np.random.default_rng(seed)
    difficulty = rng.beta(2.0, 3.0, size=n_queries)
    columns: dict[str, np.ndarray] = {}
    for m in range(n_measures):
        skill = rng.normal(0.0, 0.02, size=(n_systems, 1))
        noise = rng.normal(0.0, 0.15, size=(n_systems, n_queries))
        values = np.clip(difficulty[None, :] + skill + noise, 0.0, 1.0)
        if m % 2 == 0:
            values = np.round(values * 10) / 10
        columns[f"M{m}"] = values.ravel()
    return pl.DataFrame(
        {
            "system": np.repeat([f"sys{s:02d}" for s in range(n_systems)], n_queries),
            "query": np.tile([f"q{q}" for q in range(n_queries)], n_systems),
            **columns,
        }
    )


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", type=int, default=50)
    parser.add_argument("--measures", type=int, default=10)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--resamples", type=int, default=10_000)
    args = parser.parse_args()

    start = time.perf_counter()
    per_query = synthetic_per_query(args.systems, args.measures, args.queries)
    print(
        f"per-query frame: {per_query.height:,} rows x {args.measures} measures "
        f"({time.perf_counter() - start:.2f} s to build)"
    )
    comparisons = (args.systems - 1) * args.measures
    for test, options in (("t", {}), ("randomization", {"n_resamples": args.resamples})):
        start = time.perf_counter()
        result = pr.compare(per_query, baseline="sys00", test=test, correction="holm", **options)
        elapsed = time.perf_counter() - start
        label = test if test == "t" else f"{test} ({args.resamples:,} resamples)"
        print(
            f"compare {label}: {comparisons} comparisons x {args.queries:,} queries "
            f"in {elapsed:.2f} s; {result['significant'].sum()} significant after Holm"
        )
    print(f"peak RSS: {peak_rss_mb():.0f} MiB")


if __name__ == "__main__":
    main()
