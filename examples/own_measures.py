"""Declare your own measures as Polars expressions and score them like the built-ins.

Run from the repository root:

    python examples/own_measures.py

A declared measure reads one ranking of pr.judge's table: ``rank`` (1 = top, null
for a judged document the run did not retrieve) and ``relevance`` (the grade, null
for a retrieved document without a judgment), and reduces it to one number.
"""

from pathlib import Path

import polars as pl

import polars_rankeval as pr

DATA = Path(__file__).parent / "data"


def discounted_precision(k: int) -> pl.Expr:
    """DP@k = (1/k) * sum over the relevant documents at ranks i <= k of 1 / log2(i + 1)."""
    hit = (pl.col("relevance") >= 1) & (pl.col("rank") <= k)
    return (hit.cast(pl.Float64) / (pl.col("rank") + 1).log(2)).sum() / k


def graded_precision(k: int, grade: int) -> pl.Expr:
    """GP@k: the share of the top k whose grade is at least ``grade`` (2 by default)."""
    return ((pl.col("relevance") >= grade) & (pl.col("rank") <= k)).sum() / k


pr.define_measure("DP", discounted_precision, cutoff="required", bounds=(0, 1))
pr.define_measure("GP", graded_precision, cutoff="required", params={"grade": 2}, bounds=(0, 1))

qrels = pr.read_trec_qrels(DATA / "sample.qrels")
run = pl.concat([pr.read_trec_run(DATA / "bm25.run"), pr.read_trec_run(DATA / "dense.run")])
measures = ["DP@10", "GP@10", "GP(grade=1)@10", "P@10"]
per_query = pr.evaluate(run, qrels, measures, missing="zero")

with pl.Config(float_precision=4, tbl_cols=-1):
    print(pr.mean_scores(per_query))
    # GP(grade=1)@10 counts what P@10 counts: the two columns agree query by query.
    gap = per_query.select((pl.col("GP(grade=1)@10") - pl.col("P@10")).abs().max()).item()
    print(f"GP(grade=1)@10 equals P@10 on every query: {gap < 1e-12}")
    compared = pr.compare(per_query, ["DP@10", "GP@10"], baseline="bm25", test="t")
    print(compared.select("measure", "system_a", "system_b", "diff", "p_value"))
