"""Quickstart: score two TREC runs against qrels, per query and on average.

Run from the repository root:

    python examples/quickstart.py
"""

from pathlib import Path

import polars as pl

import polars_rankeval as pr

DATA = Path(__file__).parent / "data"

# TREC files -> Polars frames. Ids stay strings; the run tag becomes `system`.
qrels = pr.read_trec_qrels(DATA / "sample.qrels")
run = pl.concat([pr.read_trec_run(DATA / "bm25.run"), pr.read_trec_run(DATA / "dense.run")])
print(f"{run.height} retrieved rows, {run['system'].n_unique()} systems, {qrels.height} judgements")

# Measure names in canonical, trec_eval (map, P_10, ndcg_cut_10) or ranx form.
measures = ["AP", "P@10", "nDCG@10", "RR", "R@100"]
per_query = pr.evaluate(run, qrels, measures)  # one row per system and query
print(per_query.head(5))

# The trec_eval `all` line: the mean over queries, per system.
means = pr.mean_scores(per_query)
with pl.Config(float_precision=4):
    print(means)

# Which queries were scored, and why others were not.
print(pr.coverage(run, qrels)["status"].value_counts())
