"""A quick, one-process look at the frames workload: ``python benchmarks/quick.py 2M``.

Times, in this process, on ``data.make_corpus(rows)`` (one-chunk frames built in
memory, unlike ``run.py``, which reads Parquet in a fresh process per tool):
``pr.evaluate`` on DataFrames (validation included), the same with
``validate=False``, the bare join + sort, and, with ``--pytrec``, pytrec_eval
end to end (dicts from the frame + evaluate). Medians of ``--repeats`` calls.
Use it to compare engine changes quickly; ``run.py`` is the benchmark of record.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any

from data import make_corpus
from run import parse_size
from workers import MEASURES, ceiling_frames, pytrec_frames

import polars_rankeval as pr


def median_time(call: Callable[[], Any], repeats: int) -> float:
    """Median wall time of ``repeats`` calls."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("rows", help="run size, e.g. 2M")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--pytrec", action="store_true", help="also time pytrec_eval")
    args = parser.parse_args()
    warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
    run, qrels = make_corpus(parse_size(args.rows))
    pr.evaluate(run.head(1000), qrels, MEASURES)  # imports, thread pool
    calls = {
        "evaluate": lambda: pr.evaluate(run, qrels, MEASURES),
        "evaluate, validate=False": lambda: pr.evaluate(run, qrels, MEASURES, validate=False),
        "join+sort": lambda: ceiling_frames(run, qrels),
    }
    if args.pytrec:
        calls["pytrec_eval"] = lambda: pytrec_frames(run, qrels)
    print(f"{run.height:,} run rows, {qrels.height:,} qrels rows, {len(MEASURES)} measures")
    times = {name: median_time(call, args.repeats) for name, call in calls.items()}
    for name, seconds in times.items():
        ratio = seconds / times["evaluate"]
        print(f"{name:26s} {seconds:7.3f} s  {ratio:5.1f}x evaluate's time")


if __name__ == "__main__":
    main()
