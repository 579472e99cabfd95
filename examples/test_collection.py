"""Build a test collection: pool two runs, export the pool, check coverage and
assessor agreement, and score with measures that know about unjudged documents.

Run from the repository root (writes the pool files into OUT, default a temporary
folder):

    python examples/test_collection.py [OUT]
"""

import sys
import tempfile
from pathlib import Path

import numpy as np
import polars as pl

import polars_rankeval as pr

DATA = Path(__file__).parent / "data"
out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp())

runs = pl.concat([pr.read_trec_run(DATA / "bm25.run"), pr.read_trec_run(DATA / "dense.run")])
qrels = pr.read_trec_qrels(DATA / "sample.qrels")

# 1. The pool: every run's top 10, and a fixed-size RBP pool; exported for the assessors.
pool = pr.make_pool(runs, depth=10)
rbp = pr.make_pool(runs, strategy="rbp", depth=10)
pr.write_pool(pool, out / "pool.txt")
pr.write_pool(pool, out / "docs.txt", format="filelist")
print(f"top-10 pool: {pool.height} pairs; RBP pool: {rbp.height} pairs")
print(f"wrote {out / 'pool.txt'} and {out / 'docs.txt'}")

# 2. How much of each run's top 10 a shallow pool (bm25's top 5) reaches.
shallow = pr.make_pool(runs.filter(pl.col("system") == "bm25"), depth=5)
with pl.Config(float_precision=3):
    print(pr.pool_coverage(runs, shallow, depth=10))
todo = pr.unjudged(runs, qrels, depth=20)
print(f"{todo.height} pooled pairs at depth 20 have no judgment yet")

# 3. A second assessor (simulated: 15% of the grades redrawn) and their agreement.
rng = np.random.default_rng(7)
changed = pl.Series(rng.random(qrels.height) < 0.15)
second = qrels.with_columns(
    relevance=pl.when(changed)
    .then(pl.Series(rng.integers(0, 3, qrels.height)))
    .otherwise(pl.col("relevance"))
)
assessors = {"primary": qrels, "second": second}
with pl.Config(float_precision=4):
    print(pr.agreement(assessors))
    print(pr.agreement(assessors, weights="quadratic", level="ordinal", per_query=True).head(3))

# 4. Do the systems keep their order under the second assessor?
print(pr.ranking_agreement(runs, assessors, measure="AP"))

# 5. infAP on a 30% sample of the depth-20 pool (the rest marked -1) against AP.
pooled = qrels.join(pr.make_pool(runs, depth=20), on=["query", "doc"], how="semi")
sampled = pl.Series(np.random.default_rng(1).random(pooled.height) < 0.3)
sample = pooled.with_columns(relevance=pl.when(sampled).then(pl.col("relevance")).otherwise(-1))
whole = pr.mean_scores(pr.evaluate(runs, pooled, ["AP"]))
estimated = pr.mean_scores(pr.evaluate(runs, sample, ["AP", "infAP"]))
estimated = estimated.select(
    "system", pl.col("AP").alias("AP sample"), pl.col("infAP").alias("infAP sample")
)
both = whole.select("system", pl.col("AP").alias("AP whole pool")).join(estimated, on="system")
with pl.Config(float_precision=4):
    print(both)
