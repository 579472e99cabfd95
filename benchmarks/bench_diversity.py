"""Benchmark: diversity measures (ndeval's) on many systems, against pyndeval.

A synthetic run of ``--systems`` systems x ``--queries`` queries x ``--depth`` documents
(distinct scores: ndeval and the library order ties differently) and subtopic qrels
(3 to 6 subtopics a query, 40 judged documents each, graded 0-2). Each side runs in a
fresh process that reads the same Parquet files and returns the 21 measures of
pyndeval's ``DEFAULT_MEASURES`` for every (system, query):

- polars_rankeval: one ``pr.evaluate_diversity`` call over every system;
- polars_rankeval, lazy: the same call on ``pl.scan_parquet`` with ``memory_limit="64MiB"``
  (read in batches, scored bucket by bucket on disk);
- pyndeval: its ``RelevanceEvaluator`` built once from the qrels (tuples), then
  ``evaluate`` per system, the run given as tuples from the Polars frame.

Wall time and peak RSS (``ru_maxrss``) of each process; the values are compared after
timing (largest absolute difference). Run from the repository root::

    python benchmarks/bench_diversity.py                 # 10 systems x 1,000 x 100 = 1M rows
    python benchmarks/bench_diversity.py --queries 200   # a quick check

Not a test: no assertion on time.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

NDEVAL = [
    "ERR-IA@5", "ERR-IA@10", "ERR-IA@20", "nERR-IA@5", "nERR-IA@10", "nERR-IA@20",
    "alpha-DCG@5", "alpha-DCG@10", "alpha-DCG@20", "alpha-nDCG@5", "alpha-nDCG@10",
    "alpha-nDCG@20", "NRBP", "nNRBP", "MAP-IA", "P-IA@5", "P-IA@10", "P-IA@20",
    "strec@5", "strec@10", "strec@20",
]  # fmt: skip


def make_data(directory: Path, systems: int, queries: int, depth: int, seed: int = 0) -> None:
    """``run.parquet`` (system, query, doc, score) and ``qrels.parquet`` (query, subtopic,
    doc, relevance)."""
    rng = np.random.default_rng(seed)
    pool = 4 * depth
    parts = []
    for s in range(systems):
        keys = rng.random((queries, pool)).argsort(axis=1)[:, :depth]
        docs = keys.ravel()
        qs = np.repeat(np.arange(queries), depth)
        score = (depth - np.tile(np.arange(depth), queries)).astype(np.float64)
        parts.append(pl.DataFrame({"system": f"sys{s}", "query": qs, "doc": docs, "score": score}))
    run = pl.concat(parts).with_columns(
        pl.col("query").cast(pl.String), ("d" + pl.col("doc").cast(pl.String)).alias("doc")
    )
    n_sub = rng.integers(3, 7, queries)
    rows = []
    for qi in range(queries):
        for s in range(int(n_sub[qi])):
            judged = rng.choice(pool, 40, replace=False)
            grades = rng.choice([0, 1, 1, 2], 40)
            docs = [f"d{j}" for j in judged]
            rows.append(
                pl.DataFrame(
                    {"query": str(qi), "subtopic": str(s + 1), "doc": docs, "relevance": grades}
                )
            )
    run.write_parquet(directory / "run.parquet")
    pl.concat(rows).write_parquet(directory / "qrels.parquet")


def ours(directory: Path, lazy: bool = False) -> dict[str, dict[str, float]]:
    import polars_rankeval as pr
    from polars_rankeval.diversity import parse_diversity

    qrels = pl.read_parquet(directory / "qrels.parquet")
    names = {n: str(parse_diversity(n)) for n in NDEVAL}
    if lazy:
        run = pl.scan_parquet(directory / "run.parquet")
        out = pr.evaluate_diversity(run, qrels, list(names.values()), memory_limit="64MiB")
        out = out.collect()
    else:
        run = pl.read_parquet(directory / "run.parquet")
        out = pr.evaluate_diversity(run, qrels, list(names.values()))
    return {f"{r['system']} {r['query']}": {n: r[c] for n, c in names.items()}
            for r in out.iter_rows(named=True)}  # fmt: skip


def peer(directory: Path) -> dict[str, dict[str, float]]:
    import pyndeval

    run = pl.read_parquet(directory / "run.parquet")
    qrels = pl.read_parquet(directory / "qrels.parquet")
    evaluator = pyndeval.RelevanceEvaluator(list(qrels.iter_rows()), NDEVAL)
    out = {}
    for (system,), part in run.partition_by("system", as_dict=True, maintain_order=True).items():
        values = evaluator.evaluate(part.select("query", "doc", "score").iter_rows())
        out |= {f"{system} {q}": v for q, v in values.items()}
    return out


def worker(tool: str, directory: Path) -> None:
    start = time.perf_counter()
    values = peer(directory) if tool == "pyndeval" else ours(directory, lazy=tool.endswith("lazy"))
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    (directory / f"{tool}.json").write_text(json.dumps({"seconds": seconds, "values": values}))
    print(f"{tool}: {seconds:.2f} s, peak RSS {peak:.0f} MiB", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--systems", type=int, default=10)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker[0], Path(args.worker[1]))
        return
    print(f"cpus: {os.cpu_count()}; load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        make_data(directory, args.systems, args.queries, args.depth)
        n = pl.scan_parquet(directory / "run.parquet").select(pl.len()).collect().item()
        print(f"{args.systems} systems x {args.queries:,} queries x {args.depth} docs: {n:,} rows")
        times = {}
        for tool in ("polars_rankeval", "polars_rankeval-lazy", "pyndeval"):
            cmd = [sys.executable, __file__, "--worker", tool, str(directory)]
            subprocess.run(cmd, check=True)
            times[tool] = json.loads((directory / f"{tool}.json").read_text())
        b = times["pyndeval"]["values"]
        for tool in ("polars_rankeval", "polars_rankeval-lazy"):
            a = times[tool]["values"]
            diff = max(abs(a[k][m] - b[k][m]) for k in b for m in NDEVAL if b[k][m] == b[k][m])
            ratio = times["pyndeval"]["seconds"] / times[tool]["seconds"]
            print(
                f"{tool}: rankings compared {len(b):,} (ours {len(a):,}), largest "
                f"difference {diff:.1e}; pyndeval / {tool}: {ratio:.1f}x"
            )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
