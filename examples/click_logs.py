"""Click logs: position bias by EM, COEC judgments, an off-policy estimate and
interleaving, on a simulated log whose truth is known.

Run from the repository root: ``python examples/click_logs.py``.
"""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl

import polars_rankeval as pr

rng = np.random.default_rng(0)
n_lists, n_queries, n_docs = 50_000, 40, 10
theta = 1 / np.arange(1, n_docs + 1) ** 0.8  # examination by position
gamma = rng.uniform(0.02, 0.9, size=(n_queries, n_docs))  # relevance by (query, doc)

# 1. An impression log: noisy rankings, clicks from the position-based model.
query = rng.integers(n_queries, size=n_lists)
noise = rng.gumbel(size=(n_lists, n_docs))
position = np.argsort(np.argsort(-(np.log(gamma[query]) + noise), axis=1), axis=1) + 1
clicked = rng.random((n_lists, n_docs)) < theta[position - 1] * gamma[query]
log = pl.DataFrame(
    {
        "session": np.repeat(np.arange(n_lists), n_docs),
        "query": np.repeat(query, n_docs),
        "doc": np.tile(np.arange(n_docs), n_lists),
        "position": position.ravel(),
        "clicked": clicked.ravel(),
    }
)
print(f"{log.height} impressions, {log['clicked'].sum()} clicks")

# 2. Position bias by EM (theta_1 = 1) against the simulated curve.
fit = pr.fit_pbm(log)
error = np.abs(fit.examination["examination"].to_numpy() - theta).max()
print(f"EM examination: largest error {error:.4f} after {fit.n_iter} iterations")

# 3. COEC judgments -> qrels -> evaluate two rankers.
judgments = pr.coec(log)
qrels = pr.qrels_from_clicks(judgments, thresholds=[0.75, 1.25], min_impressions=50)
docs = {
    "query": np.repeat(np.arange(n_queries), n_docs),
    "doc": np.tile(np.arange(n_docs), n_queries),
}
runs = pl.concat(
    [
        pl.DataFrame(docs | {"system": "by_relevance", "score": gamma.ravel()}),
        pl.DataFrame(docs | {"system": "random", "score": rng.random(n_queries * n_docs)}),
    ]
)
means = pr.evaluate(runs, qrels.select("query", "doc", "relevance"), ["nDCG@5"])
print(means.group_by("system").agg(pl.col("nDCG@5").mean().round(3)).sort("system"))

# 4. Off-policy: a uniform logging policy over 2-of-4 slates; the new policy shows 0, 1.
items_rel, slot_exam = np.array([0.8, 0.5, 0.3, 0.1]), np.array([1.0, 0.6])
slates = np.array(list(itertools.permutations(range(4), 2)))
n_slates = 20_000
shown = slates[rng.integers(len(slates), size=n_slates)]
reward = rng.random((n_slates, 2)) < items_rel[shown] * slot_exam
first_ok = shown[:, 0] == 0
both_ok = first_ok & (shown[:, 1] == 1)
slate_log = pl.DataFrame(
    {
        "slate_id": np.repeat(np.arange(n_slates), 2),
        "position": np.tile([0, 1], n_slates),
        "reward": reward.ravel().astype(float),
        "pscore": 1 / 12,
        "evaluation_policy_pscore": np.repeat(both_ok, 2).astype(float),
        "pscore_item_position": 1 / 4,
        "evaluation_policy_pscore_item_position": (shown == [0, 1]).ravel().astype(float),
        "pscore_cascade": np.tile([1 / 4, 1 / 12], n_slates),
        "evaluation_policy_pscore_cascade": np.c_[first_ok, both_ok].ravel().astype(float),
    }
)
estimates = pr.off_policy(slate_log, n_bootstrap=1000, seed=0)
print(estimates.with_columns(pl.col("estimate", "lower", "upper").round(3)))
print("simulated value of the new policy: 1.1")

# 5. Team-draft interleaving of the two rankers, clicks from the same model.
run_a = runs.filter(pl.col("system") == "by_relevance").drop("system")
run_b = runs.filter(pl.col("system") == "random").drop("system")
served = pl.concat(
    pr.interleave(run_a, run_b, seed=day).with_columns(impression=pl.col("query") * 100 + day)
    for day in range(20)
)
q, d, k = (served[c].to_numpy() for c in ("query", "doc", "position"))
served = served.with_columns(
    clicked=pl.Series(rng.random(served.height) < theta[k - 1] * gamma[q, d])
)
result = pr.interleaving_test(pr.interleaving_outcomes(served), seed=0)
row = result.row(0, named=True)
print(
    f"interleaving: A wins {row['wins_a']}, B wins {row['wins_b']}, ties {row['ties']}, "
    f"preference {row['preference']:.3f}, binomial p {row['p_value']:.1e}"
)
