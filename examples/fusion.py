"""Hybrid search: fuse a BM25 run and a dense run, tune the fusion, compare the three.

Run from the repository root:

    python examples/fusion.py
"""

from pathlib import Path

import polars as pl

import polars_rankeval as pr

DATA = Path(__file__).parent / "data"
qrels = pr.read_trec_qrels(DATA / "sample.qrels")
runs = {
    "bm25": pr.read_trec_run(DATA / "bm25.run").select("query", "doc", "score"),
    "dense": pr.read_trec_run(DATA / "dense.run").select("query", "doc", "score"),
}

# Reciprocal rank fusion needs no scores and no tuning: 1 / (60 + rank), summed.
rrf = pr.fuse(runs, method="rrf", norm=None, name="rrf")

# A weighted sum of min-max normalised scores, its weights searched on the qrels
# (ranx's grid: 0, 0.1, ..., 1 summing to 1; all 11 scored in one pass). Tuned and
# scored on the same queries here, which flatters it: tune on other queries in practice.
best, grid = pr.optimize_fusion(runs, qrels, method="wsum", norm="min-max", metric="nDCG@10")
print("best weights (bm25, dense):", best["weights"])
with pl.Config(float_precision=4, tbl_rows=-1):
    print(grid)
wsum = pr.fuse(runs, method="wsum", norm="min-max", weights=best["weights"], name="wsum")

# The two runs and the two fusions, query by query, against BM25.
run = pl.concat([*(f.with_columns(system=pl.lit(k)) for k, f in runs.items()), rrf, wsum])
per_query = pr.evaluate(run, qrels, ["nDCG@10", "AP"], missing="zero")
print(pr.summarize(per_query, ["nDCG@10"]).select("system", "mean", "ci_low", "ci_high"))
table = pr.compare(per_query, ["nDCG@10"], baseline="bm25", test="t", correction="holm")
with pl.Config(float_precision=4, tbl_cols=-1):
    print(table.select("system_a", "system_b", "diff", "p_adjusted", "significant"))
