"""Evaluate two TREC runs on Spark (local[2]), with the same numbers as in-process.

Run from the repository root (needs ``pip install polars-rankeval[spark]`` and
Java 17+ on PATH)::

    python examples/spark_evaluate.py

Each Spark bucket (a hash of the query id) is scored by Polars in an Arrow UDF;
``per_query=False`` combines the per-query values in Spark, as
``pr.mean_scores`` does. On a cluster, the executors need polars and
polars-rankeval installed in the Python they run (``PYSPARK_PYTHON``).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import polars as pl
from pyspark.sql import SparkSession

import polars_rankeval as pr
import polars_rankeval.spark as prs

DATA = Path("examples/data")
MEASURES = ["AP", "nDCG@10", "P@10", "RR", "R@100"]


def local_session() -> SparkSession:
    """A two-core Spark on this machine only: no UI, bound to the loopback interface."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers use this Python
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    return (
        SparkSession.builder.master("local[2]")
        .appName("polars_rankeval-example")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )


def main() -> None:
    run = pl.concat([pr.read_trec_run(DATA / "bm25.run"), pr.read_trec_run(DATA / "dense.run")])
    qrels = pr.read_trec_qrels(DATA / "sample.qrels")
    spark = local_session()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            run.write_parquet(f"{tmp}/run.parquet")
            qrels.write_parquet(f"{tmp}/qrels.parquet")
            run_sdf = spark.read.parquet(f"{tmp}/run.parquet")
            qrels_sdf = spark.read.parquet(f"{tmp}/qrels.parquet")

            per_query_sdf = prs.evaluate(run_sdf, qrels_sdf, MEASURES)  # lazy, as Spark is
            prs.evaluate(run_sdf, qrels_sdf, MEASURES, per_query=False).orderBy("system").show()
            per_query = pl.from_arrow(per_query_sdf.toArrow()).sort("system", "query")
    finally:
        spark.stop()
    print(per_query.head(6))

    in_process = pr.evaluate(run, qrels, MEASURES)
    assert per_query.equals(in_process), "Spark and in-process results differ"
    print(f"{per_query.height} (system, query) rows, identical to pr.evaluate.")


if __name__ == "__main__":
    main()
