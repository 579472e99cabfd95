"""Benchmark: segments (``by=``) cost what the same rankings cost as systems.

A segment column (a day, a country) and a system column both split a query's
rows into rankings of their own. Scoring the same rows with the column given
as ``by="day"`` or as ``system="day"`` must cost the same: the engine treats
both as ranking keys. This script times the two calls in alternation in one
process (so that load on the machine hits both alike), for DataFrames and for
the pre-judged table of ``evaluate_judged``, and prints the median of the
per-round ratios ``by / system`` with the values checked equal.

Run from the repository root::

    python benchmarks/bench_segments.py                   # 1M rows, 7 segments
    python benchmarks/bench_segments.py --rows 5M --segments 30 --rounds 9

Not a test: no assertion on time.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))

from data import make_corpus

import polars_rankeval as pr

MEASURES = ["AP", "AP@10", "P@5", "P@10", "R@10", "R@100", "RR", "nDCG", "nDCG@10", "Rprec"]


def _rows(text: str) -> int:
    scale = {"k": 10**3, "M": 10**6}
    return int(float(text[:-1]) * scale[text[-1]]) if text[-1] in scale else int(text)


def segmented(rows: int, segments: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The benchmark corpus with each query's ranking cut into ``segments`` days
    (every row gets the day of its position modulo ``segments``)."""
    run, qrels = make_corpus(rows)
    day = (pl.int_range(pl.len()).over("query") % segments).cast(pl.String)
    return run.with_columns(day=pl.lit("d") + day), qrels


def timed(call) -> tuple[float, pl.DataFrame]:
    start = time.perf_counter()
    out = call()
    return time.perf_counter() - start, out


def compare_calls(name: str, by_call, system_call, rounds: int) -> None:
    ratios, by_times, system_times = [], [], []
    for i in range(rounds):
        order = [("by", by_call), ("system", system_call)]
        if i % 2:
            order.reverse()
        got = {}
        for label, call in order:
            got[label] = timed(call)
        by_times.append(got["by"][0])
        system_times.append(got["system"][0])
        ratios.append(got["by"][0] / got["system"][0])
    by_values = got["by"][1].sort("day", "query")
    system_values = got["system"][1].sort("day", "query")
    same = by_values.equals(system_values.select(by_values.columns))
    print(
        f"{name:10s} by='day' {statistics.median(by_times):.3f} s   system='day' "
        f"{statistics.median(system_times):.3f} s   ratio {statistics.median(ratios):.2f}x   "
        f"values equal: {same}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="1M")
    ap.add_argument("--segments", type=int, default=7)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
    run, qrels = segmented(_rows(args.rows), args.segments)
    print(f"{run.height:,} run rows, {args.segments} segments, {qrels.height:,} qrels rows")
    compare_calls(
        "DataFrame",
        lambda: pr.evaluate(run, qrels, MEASURES, by="day"),
        lambda: pr.evaluate(run, qrels, MEASURES, system="day"),
        args.rounds,
    )
    judged = pr.judge(run, qrels, system="day")
    compare_calls(
        "judged",
        lambda: pr.evaluate_judged(judged, MEASURES, by="day", system=None),
        lambda: pr.evaluate_judged(judged, MEASURES, system="day"),
        args.rounds,
    )


if __name__ == "__main__":
    main()
