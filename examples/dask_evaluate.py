"""Evaluate two TREC runs on a Dask cluster, with the same numbers as in-process.

Run from the repository root (needs ``pip install polars-rankeval[dask]``)::

    python examples/dask_evaluate.py

The TREC files are first written as Parquet, several files per run, as an ETL
job would leave them (a query's rows spread over all the files). Dask then reads
each file once, in a map task that writes its rows to query-bucket files in a
temporary folder, and scores each bucket in a task of its own. On a cluster of
several machines, pass ``spill_dir=`` a folder that every worker can reach.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import polars as pl
from distributed import Client, LocalCluster

import polars_rankeval as pr
import polars_rankeval.dask as prd

DATA = Path("examples/data")
MEASURES = ["AP", "nDCG@10", "P@10", "RR", "R@100"]


def write_parquet_parts(run: pl.DataFrame, directory: Path, n_files: int) -> None:
    """Spread the rows over n_files Parquet files (queries span files: that is fine)."""
    directory.mkdir(parents=True, exist_ok=True)
    for i in range(n_files):
        run.gather_every(n_files, offset=i).write_parquet(directory / f"part-{i}.parquet")


def main() -> None:
    run = pl.concat([pr.read_trec_run(DATA / "bm25.run"), pr.read_trec_run(DATA / "dense.run")])
    qrels = pr.read_trec_qrels(DATA / "sample.qrels")
    with tempfile.TemporaryDirectory() as tmp:
        write_parquet_parts(run, Path(tmp) / "run", n_files=4)
        qrels.write_parquet(Path(tmp) / "qrels.parquet")
        cluster = LocalCluster(
            n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None
        )
        with cluster, Client(cluster) as client:
            per_query = prd.evaluate(
                f"{tmp}/run/*.parquet", f"{tmp}/qrels.parquet", MEASURES, client=client
            )
            means = prd.evaluate(
                f"{tmp}/run/*.parquet",
                f"{tmp}/qrels.parquet",
                MEASURES,
                client=client,
                per_query=False,
            )
    print(per_query.head(6))
    print(means)  # per system: the mean over queries, as pr.mean_scores(per_query)

    in_process = pr.evaluate(run, qrels, MEASURES)
    assert per_query.equals(in_process), "Dask and in-process results differ"
    assert means.equals(pr.mean_scores(in_process)), "Dask and in-process means differ"
    print(f"{per_query.height} (system, query) rows, identical to pr.evaluate.")


if __name__ == "__main__":
    main()
