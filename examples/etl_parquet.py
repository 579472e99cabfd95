"""An ETL-style job: TREC files -> Parquet -> lazy evaluation -> Parquet results.

Every step is lazy and runs on Polars' streaming engine, so the same job scales
to runs that do not fit in memory. Run from the repository root (files go to
examples/output/ or the folder given):

    python examples/etl_parquet.py [OUTPUT_DIR]
"""

import sys
from pathlib import Path

import polars as pl

import polars_rankeval as pr

DATA = Path(__file__).parent / "data"
OUT = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "output"
OUT.mkdir(parents=True, exist_ok=True)

# 1. Extract: TREC text files -> Parquet, scanned lazily and streamed to disk.
runs = pl.concat([pr.scan_trec_run(DATA / "bm25.run"), pr.scan_trec_run(DATA / "dense.run")])
runs.sink_parquet(OUT / "runs.parquet")
pr.scan_trec_qrels(DATA / "sample.qrels").sink_parquet(OUT / "qrels.parquet")

# 2. Transform: scan the Parquet files and build one lazy plan for every system.
run = pl.scan_parquet(OUT / "runs.parquet")
qrels = pl.scan_parquet(OUT / "qrels.parquet")
per_query = pr.evaluate(run, qrels, ["AP", "nDCG@10", "P@10", "RR"], missing="zero")
assert isinstance(per_query, pl.LazyFrame)  # lazy in, lazy out

# 3. Load: per-query results and per-system means, on the streaming engine.
per_query.collect(engine="streaming").write_parquet(OUT / "per_query.parquet")
means = pr.mean_scores(pl.scan_parquet(OUT / "per_query.parquet")).collect(engine="streaming")
means.write_parquet(OUT / "means.parquet")

with pl.Config(float_precision=4):
    print(means)
for name in ("runs", "qrels", "per_query", "means"):
    path = OUT / f"{name}.parquet"
    print(f"{path}: {pl.scan_parquet(path).select(pl.len()).collect().item()} rows")
