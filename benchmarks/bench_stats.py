"""Benchmark: significance tests on many systems, measures and queries.

Two parts, on a synthetic long per-query frame (as ``evaluate`` returns:
``system, query`` and one Float64 column per measure; values with the ties and
zeros real measures have):

- ``many`` (issue 16): 50 systems x 10,000 queries, one measure, every pair of
  systems (1,225 comparisons): the paired t-test (Holm), Tukey's HSD, and
  Carterette's randomised Tukey HSD with 1,000 permutations, then with a quarter
  of them, to show that time grows linearly and memory does not grow with the
  number of permutations.
- ``baseline`` (issue 4): 50 systems x 10 measures x 10,000 queries, every system
  against a baseline (490 comparisons): t-test and 10,000-resample
  randomization test, Holm-corrected.
- ``intervals`` (issue 37): ``pr.summarize`` of one system on 100,000 queries and
  3 measures with 1,000 resamples, ``interval="bootstrap"`` and ``"bca"``, side by
  side with ``scipy.stats.bootstrap(method="BCa")`` on the same values (one
  measure at a time, as scipy takes them; its jackknife is O(n^2), so it runs on
  ``--scipy-queries`` queries, 20,000 by default, and the page says so).

Each step prints its wall time, the peak resident set size during the step
(Linux: the ``VmHWM`` counter, reset before each step through
``/proc/self/clear_refs``; elsewhere the process peak so far) and the peak of
Python/numpy allocations traced by ``tracemalloc``.

Run from the repository root::

    python benchmarks/bench_stats.py                      # both parts
    python benchmarks/bench_stats.py --part many          # issue 16 only
    python benchmarks/bench_stats.py --part intervals     # summarize's intervals

Options: ``--systems 50 --queries 10000 --measures 10 --permutations 1000
--resamples 10000 --interval-queries 100000 --scipy-queries 20000
--part many|baseline|intervals|all``. Not a test: no assertion on time.
"""

from __future__ import annotations

import argparse
import os
import resource
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

import polars_rankeval as pr

STATUS = Path("/proc/self/status")
CLEAR_REFS = Path("/proc/self/clear_refs")


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


def measure(label: str, step: Callable[[], Any]) -> Any:
    """Run one step; print its time, peak RSS during it and peak traced allocations."""
    resettable = reset_peak_rss()
    tracemalloc.start()
    start = time.perf_counter()
    result = step()
    elapsed = time.perf_counter() - start
    _, traced = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = f"{peak_rss_mb():.0f} MiB" + ("" if resettable else " (process peak so far)")
    print(
        f"{label}: {elapsed:.2f} s; peak RSS {rss}; peak numpy/Python allocations "
        f"{traced / 2**20:.0f} MiB"
    )
    return result


def many_systems(args: argparse.Namespace) -> None:
    per_query = synthetic_per_query(args.systems, 2, args.queries).select("system", "query", "M1")
    pairs = args.systems * (args.systems - 1) // 2
    print(
        f"\n[many] {args.systems} systems x {args.queries:,} queries, one measure, "
        f"all {pairs:,} pairs"
    )
    out = measure(
        "  t-test, Holm",
        lambda: pr.compare(per_query, test="t", correction="holm"),
    )
    print(f"    {out['significant'].sum()} of {pairs} pairs significant")
    out = measure("  Tukey HSD", lambda: pr.compare(per_query, test="tukey"))
    print(f"    {out['significant'].sum()} of {pairs} pairs significant")
    for permutations in (args.permutations // 4, args.permutations):
        out = measure(
            f"  randomised Tukey HSD, {permutations:,} permutations",
            lambda n=permutations: pr.compare(
                per_query, test="randomized_tukey", n_resamples=n, seed=0
            ),
        )
        print(f"    {out['significant'].sum()} of {pairs} pairs significant")


def against_baseline(args: argparse.Namespace) -> None:
    per_query = synthetic_per_query(args.systems, args.measures, args.queries)
    comparisons = (args.systems - 1) * args.measures
    print(
        f"\n[baseline] {args.systems} systems x {args.measures} measures x "
        f"{args.queries:,} queries against sys00: {comparisons} comparisons"
    )
    for test, options in (("t", {}), ("randomization", {"n_resamples": args.resamples})):
        label = test if test == "t" else f"{test} ({args.resamples:,} resamples)"
        out = measure(
            f"  {label}, Holm",
            lambda t=test, o=options: pr.compare(
                per_query, baseline="sys00", test=t, correction="holm", **o
            ),
        )
        print(f"    {out['significant'].sum()} of {comparisons} significant")


def intervals(args: argparse.Namespace) -> None:
    import scipy.stats as sps

    n = args.interval_queries
    per_query = synthetic_per_query(1, 3, n)
    print(f"\n[intervals] 1 system x 3 measures x {n:,} queries, 1,000 resamples")
    for kind in ("bootstrap", "bca"):
        measure(
            f"  summarize(interval={kind!r})",
            lambda k=kind: pr.summarize(per_query, interval=k, n_resamples=1_000, seed=0),
        )
    k = min(args.scipy_queries, n)
    one = per_query.head(k).select("system", "query", "M1")
    values = one["M1"].to_numpy()
    ours = measure(
        f"  summarize(interval='bca'), one measure, {k:,} queries",
        lambda: pr.summarize(one, interval="bca", n_resamples=1_000, seed=0),
    )
    ref = measure(
        f"  scipy.stats.bootstrap(method='BCa'), one measure, {k:,} queries",
        lambda: sps.bootstrap(
            (values,), np.mean, n_resamples=1_000, method="BCa", rng=np.random.default_rng(0)
        ),
    ).confidence_interval
    print(
        f"    interval ours ({ours['ci_low'][0]:.6f}, {ours['ci_high'][0]:.6f}), "
        f"scipy ({ref.low:.6f}, {ref.high:.6f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", type=int, default=50)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--measures", type=int, default=10)
    parser.add_argument("--permutations", type=int, default=1_000)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--interval-queries", type=int, default=100_000)
    parser.add_argument("--scipy-queries", type=int, default=20_000)
    parser.add_argument("--part", choices=("many", "baseline", "intervals", "all"), default="all")
    args = parser.parse_args()
    import scipy.stats  # noqa: F401  (imported before the clocks start: slow to import)

    print(f"cpus: {os.cpu_count()}; load average before: {os.getloadavg()}")
    if args.part in ("many", "all"):
        many_systems(args)
    if args.part in ("baseline", "all"):
        against_baseline(args)
    if args.part in ("intervals", "all"):
        intervals(args)
    print(f"\nload average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
