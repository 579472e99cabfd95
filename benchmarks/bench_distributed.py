"""Benchmark: one Parquet dataset on Dask and on Spark, beside in-process ``pr.evaluate``.

Writes a synthetic run (``benchmarks/data.py``: TREC-like docnos, tied scores,
1000 documents per query, two systems), shuffled across queries, as several
Parquet files plus a qrels file, then scores AP, nDCG@10, P@10, RR and R@100
for every query

* in-process, lazy: ``pr.evaluate(pl.scan_parquet(...), ...).collect()`` (the
  files read once, in batches; scored in memory, or bucket by bucket past the
  memory limit);
* in-process, in memory: the files read into a DataFrame, then ``pr.evaluate``;
* on Dask: ``polars_rankeval.dask.evaluate`` on a ``LocalCluster`` of 2 worker
  processes with 1 thread each: one map task per Parquet file writes its rows to
  query-bucket files, one reduce task per bucket scores them (the number of
  tasks of each kind is reported);
* on Spark: ``polars_rankeval.spark.evaluate`` on ``local[2]``, reading the same
  files, results collected to the driver as Arrow.

Each engine runs in its own child process. Reported per engine: wall time of the
evaluation (reading included; session/cluster start-up reported apart), and the
peak resident memory of that child's whole process tree (driver, Dask workers,
Spark JVM and Python workers), sampled every 0.1 s. Every engine's per-query
frame is compared with the in-process lazy one (largest absolute difference).
The load average of the machine is printed before and after.

Run from the repository root::

    python benchmarks/bench_distributed.py --rows 5000000

Options: ``--rows`` (default 5,000,000), ``--files`` (Parquet files of the run,
8), ``--npartitions`` (Dask buckets; default: the library's), ``--buckets``
(Spark buckets, 8), ``--engines`` (default ``inprocess,inmemory,dask,spark``),
``--data-dir``. Not a test: nothing is asserted on time. Spark needs Java 17+ on
PATH.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import polars as pl

import polars_rankeval as pr

MEASURES = ["AP", "nDCG@10", "P@10", "RR", "R@100"]
KEYS = ["system", "query"]


class PeakRSS:
    """Peak resident memory of this process and all its descendants, sampled."""

    def __init__(self, interval: float = 0.1) -> None:
        import psutil

        self._proc = psutil.Process()
        self._interval = interval
        self._stop = threading.Event()
        self.peak = 0
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _tree_rss(self) -> int:
        total = 0
        for p in [self._proc, *self._proc.children(recursive=True)]:
            try:
                total += p.memory_info().rss
            except Exception:  # a child that just exited
                continue
        return total

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._tree_rss())
            self._stop.wait(self._interval)

    def __enter__(self) -> PeakRSS:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._tree_rss())


def write_data(rows: int, files: int, directory: Path) -> tuple[str, str]:
    """Write the run as ``files`` Parquet files (rows of a query spread over them)."""
    sys.path.insert(0, str(Path(__file__).parent))
    from data import make_corpus

    run_dir, qrels_path = directory / "run", directory / "qrels.parquet"
    if not run_dir.exists():
        run, qrels = make_corpus(rows, systems=2, seed=0)
        run_dir.mkdir(parents=True)
        run = run.sample(fraction=1.0, shuffle=True, seed=0)  # no file holds whole queries
        size = -(-run.height // files)
        for i in range(files):
            run.slice(i * size, size).write_parquet(run_dir / f"part-{i:03d}.parquet")
        qrels.write_parquet(qrels_path)
    return str(run_dir / "*.parquet"), str(qrels_path)


def in_process(run_glob: str, qrels_path: str) -> Callable[[], pl.DataFrame]:
    def go() -> pl.DataFrame:
        lf = pr.evaluate(pl.scan_parquet(run_glob), pl.scan_parquet(qrels_path), MEASURES)
        return lf.collect()

    return go


def in_memory(run_glob: str, qrels_path: str) -> Callable[[], pl.DataFrame]:
    def go() -> pl.DataFrame:
        return pr.evaluate(pl.read_parquet(run_glob), pl.read_parquet(qrels_path), MEASURES)

    return go


TASKS: dict[str, int] = {}
"""Dask tasks run, by kind (map, reduce), filled by the Dask child."""


def on_dask(run_glob: str, qrels_path: str, npartitions: int | None) -> tuple[Callable, Callable]:
    from distributed import Client, LocalCluster, get_task_stream

    import polars_rankeval.dask as prd

    cluster = LocalCluster(
        n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None
    )
    client = Client(cluster)

    def go() -> pl.DataFrame:
        with get_task_stream(client=client) as stream:
            result = prd.evaluate(
                run_glob, qrels_path, MEASURES, client=client, npartitions=npartitions
            )
        for kind in ("map-run", "map-qrels", "reduce"):
            TASKS[kind] = len({t["key"] for t in stream.data if f"rankeval-{kind}-" in t["key"]})
        return result

    def close() -> None:
        client.close()
        cluster.close()

    return go, close


def on_spark(run_glob: str, qrels_path: str, buckets: int) -> tuple[Callable, Callable]:
    from pyspark.sql import SparkSession

    import polars_rankeval.spark as prs

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.memory", "4g")
        .config("spark.sql.shuffle.partitions", str(buckets))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")

    def go() -> pl.DataFrame:
        run = spark.read.parquet(str(Path(run_glob).parent))
        qrels = spark.read.parquet(qrels_path)
        scores = prs.evaluate(run, qrels, MEASURES, num_buckets=buckets)
        return pl.from_arrow(scores.toArrow()).sort(KEYS)

    return go, spark.stop


def child(args: argparse.Namespace) -> None:
    """Time one engine; print one JSON line; write its result for the comparison."""
    run_glob, qrels_path = args.run_glob, args.qrels
    t0 = time.perf_counter()
    close: Callable[[], None] = lambda: None  # noqa: E731
    with PeakRSS() as mem:
        if args.child == "inprocess":
            go = in_process(run_glob, qrels_path)
        elif args.child == "inmemory":
            go = in_memory(run_glob, qrels_path)
        elif args.child == "dask":
            go, close = on_dask(run_glob, qrels_path, args.npartitions)
        else:
            go, close = on_spark(run_glob, qrels_path, args.buckets)
        t1 = time.perf_counter()
        result = go()
        t2 = time.perf_counter()
    close()
    result.write_parquet(Path(args.data_dir) / f"result-{args.child}.parquet")
    record = {
        "engine": args.child,
        "startup_s": round(t1 - t0, 1),
        "evaluate_s": round(t2 - t1, 1),
        "peak_rss_gib": round(mem.peak / 2**30, 2),
        "rows_out": result.height,
        "tasks": ", ".join(f"{k} {v}" for k, v in TASKS.items()) or None,
    }
    print(json.dumps(record), flush=True)


def max_abs_difference(got: pl.DataFrame, expected: pl.DataFrame) -> float:
    """Largest absolute difference of any measure of any query (inf if the query sets
    differ)."""
    keys = [c for c in ("system", "query") if c in expected.columns]
    both = expected.join(got, on=keys, suffix="__got")
    if both.height != expected.height or got.height != expected.height:
        return float("inf")
    measures = [c for c in expected.columns if c not in keys]
    return max(float((both[c] - both[f"{c}__got"]).abs().max()) for c in measures)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--npartitions", type=int, default=None)
    parser.add_argument("--buckets", type=int, default=8)
    parser.add_argument("--engines", default="inprocess,inmemory,dask,spark")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--run-glob", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--qrels", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return

    data_dir = Path(args.data_dir or tempfile.mkdtemp(prefix="rankeval-bench-"))
    t0 = time.perf_counter()
    run_glob, qrels_path = write_data(args.rows, args.files, data_dir)
    n_run = pl.scan_parquet(run_glob).select(pl.len()).collect().item()
    n_qrels = pl.scan_parquet(qrels_path).select(pl.len()).collect().item()
    print(
        f"data: {n_run:,} run rows in {args.files} files, {n_qrels:,} qrels rows "
        f"({time.perf_counter() - t0:.0f} s to write) in {data_dir}"
    )
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    records = []
    for engine in args.engines.split(","):
        cmd = [
            sys.executable,
            __file__,
            f"--child={engine}",
            f"--run-glob={run_glob}",
            f"--qrels={qrels_path}",
            f"--data-dir={data_dir}",
            f"--buckets={args.buckets}",
            *([f"--npartitions={args.npartitions}"] if args.npartitions else []),
        ]
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
        lines = [x for x in out.stdout.splitlines() if x.startswith("{")]
        if out.returncode or not lines:
            print(f"{engine}: failed\n{out.stderr[-3000:]}")
            continue
        records.append(json.loads(lines[-1]))
        print(records[-1], flush=True)

    reference = data_dir / "result-inprocess.parquet"
    for r in records:
        got = pl.read_parquet(data_dir / f"result-{r['engine']}.parquet")
        r["max_abs_diff_vs_inprocess"] = (
            max_abs_difference(got, pl.read_parquet(reference)) if reference.exists() else None
        )
    table = pl.DataFrame(records)
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=200, fmt_str_lengths=60):
        print(table)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
