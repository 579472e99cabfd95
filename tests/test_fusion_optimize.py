"""pr.optimize_fusion against ranx 0.3.21's optimize_fusion: the same best parameters on
the same grid, the same report, and the trained methods' learned parameters.

The runs have every query of the qrels (ranx asserts it) and continuous scores, so no
ranking depends on a tie order; both sides score nDCG@10 over the qrels' queries
(``conventions="ranx"``).
"""

from __future__ import annotations

import math
import random

import numpy as np
import polars as pl
import pytest
from ranx import Qrels, Run
from ranx import optimize_fusion as ranx_optimize

import polars_rankeval as pr


def corpus(seed: int, n_runs: int = 2, n_queries: int = 15, pool: int = 30):
    rng = random.Random(seed)
    runs = {}
    for i in range(n_runs):
        rows = []
        for q in range(n_queries):
            for d in rng.sample(range(pool), rng.randint(5, 25)):
                rows.append((f"q{q:02d}", f"d{d:02d}", rng.uniform(0, 10) + (d % 7) * (i + 1)))
        runs[f"r{i}"] = pl.DataFrame(rows, schema=["query", "doc", "score"], orient="row")
    qrels = pl.DataFrame(
        [
            (f"q{q:02d}", f"d{d:02d}", rng.choice([0, 1, 1, 2]))
            for q in range(n_queries)
            for d in rng.sample(range(pool), 8)
        ],
        schema=["query", "doc", "relevance"],
        orient="row",
    )
    return runs, qrels


def to_ranx(runs, qrels):
    rx = []
    for name, f in runs.items():
        nested: dict = {}
        for q, d, s in f.iter_rows():
            nested.setdefault(q, {})[d] = s
        rx.append(Run.from_dict(nested, name=name))
    nested_q: dict = {}
    for q, d, r in qrels.iter_rows():
        nested_q.setdefault(q, {})[d] = r
    return rx, Qrels.from_dict(nested_q)


SEARCHED = [
    ("wsum", "min-max", {}),
    ("wsum", "zmuv", {}),
    ("wmnz", "sum", {}),
    ("mixed", "max", {}),
    ("w_bordafuse", "min-max", {}),
    ("rrf", None, {}),
    ("rbc", "min-max", {"step": 0.05}),
    ("gmnz", "min-max", {"step": 0.05}),
    ("logn_isr", "min-max", {"max_sigma": 0.5, "step": 0.05}),
    ("probfuse", "min-max", {"max_n_segments": 20}),
    ("slidefuse", "min-max", {"max_w": 20}),
]


def relisted(run: Run) -> Run:
    """The ranx run with each ranking listed score descending, ties by doc id
    descending (trec_eval's order; ranx's own is numba's unstable quicksort)."""
    from numba import types
    from numba.typed import Dict as TypedDict

    out = Run()
    for q in run.run.keys():
        docs = sorted(dict(run.run[q]).items(), key=lambda kv: kv[0], reverse=True)
        inner = TypedDict.empty(key_type=types.unicode_type, value_type=types.float64)
        for d, v in sorted(docs, key=lambda kv: -kv[1]):
            inner[d] = v
        out.run[q] = inner
    out.sorted = True
    return out


def ranx_search(rq, rx, norm, method, grid):
    """ranx.optimize_fusion's loop (ranx/fusion_optimization/optimize_*.py: the same
    trials, ``fusion_switch(method)(norm_runs, ...)``, ``evaluate``, and
    ``if score >= best_score``), each fused run listed in trec_eval's tie order before
    ranx's evaluate scores it: fused scores tie often (rank-based methods, zero
    weights), and ranx's order of equal scores is its quicksort's."""
    from ranx import evaluate
    from ranx.fusion import fusion_switch
    from ranx.fusion.probfuse import estimate_probfuse_probs
    from ranx.fusion.slidefuse import slidefuse_train
    from ranx.fusion_optimization.optimize_weights import get_possible_weights, get_trial_configs
    from ranx.normalization import norm_switch

    normed = rx if norm is None else [norm_switch(norm)(r) for r in rx]
    step = grid.get("step")
    if method in ("wsum", "wmnz", "mixed", "w_bordafuse", "w_condorcet"):
        trials = [
            {"weights": w} for w in get_trial_configs(get_possible_weights(step or 0.1), len(rx))
        ]
        out = lambda c: c  # noqa: E731
    elif method == "rrf":
        trials = [{"k": k} for k in range(10, 101, step or 10)]
        out = lambda c: c  # noqa: E731
    elif method in ("rbc", "gmnz", "logn_isr"):
        name = {"rbc": "phi", "gmnz": "gamma", "logn_isr": "sigma"}[method]
        high = grid.get(f"max_{name}", 1.0)
        digits = str(step)[::-1].find(".")
        trials = [{name: round(x, digits)} for x in np.arange(0.01, high + step, step)]
        out = lambda c: c  # noqa: E731
    elif method == "probfuse":
        trials = [
            {"probs": estimate_probfuse_probs(rq, normed, n)}
            for n in range(1, grid["max_n_segments"] + 1)
        ]
        out = lambda c: c  # noqa: E731
    else:  # slidefuse
        probs = slidefuse_train(rq, normed)
        trials = [{"probs": probs, "w": w} for w in range(1, grid["max_w"] + 1)]
        out = lambda c: c  # noqa: E731
    best, best_score, report = None, 0.0, []
    for config in trials:
        fused = relisted(fusion_switch(method)(normed, **config))
        score = evaluate(rq, fused, "ndcg@10", save_results_in_run=False)
        report.append(score)
        if score >= best_score:
            best, best_score = out(config), score
    return best, report


@pytest.mark.parametrize(
    ("method", "norm", "grid"), SEARCHED, ids=[m + "-" + str(n) for m, n, _ in SEARCHED]
)
def test_best_parameters_and_report_equal_ranx(method, norm, grid):
    runs, qrels = corpus(len(method) + 3, n_runs=3 if method == "wsum" and norm == "zmuv" else 2)
    rx, rq = to_ranx(runs, qrels)
    theirs, their_report = ranx_search(rq, rx, norm, method, dict(grid))
    grid = dict(grid)
    step = grid.pop("step", None)
    mine, report = pr.optimize_fusion(
        runs, qrels, method=method, norm=norm, metric="ndcg@10", step=step, grid=grid,
        show_progress=False,
    )  # fmt: skip
    assert mine.keys() == theirs.keys()
    for key, value in theirs.items():
        if key == "probs":
            for a, b in zip(mine[key], value, strict=True):
                np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
        else:
            assert mine[key] == (tuple(value) if key == "weights" else value), (key, mine, theirs)
    assert report.height == len(their_report)
    for a, b in zip(report["nDCG@10"].to_list(), their_report, strict=True):
        assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def test_ranx_optimize_fusion_itself_where_nothing_ties():
    """ranx.optimize_fusion as a user calls it, wsum with min-max: with every run
    ranking the same documents by continuous scores no fused score ties (zero weights
    included), and the best weights and every configuration's score are ranx's."""
    runs, qrels = corpus(8)
    docs = pl.concat(runs.values()).select("query", "doc").unique(maintain_order=True)
    rng = np.random.default_rng(0)
    runs = {k: docs.with_columns(pl.Series("score", rng.uniform(0, 1, docs.height))) for k in runs}
    rx, rq = to_ranx(runs, qrels)
    theirs, their_report = ranx_optimize(
        rq, rx, norm="min-max", method="wsum", metric="ndcg@10", show_progress=False,
        return_optimization_report=True,
    )  # fmt: skip
    mine, report = pr.optimize_fusion(runs, qrels, metric="ndcg@10", show_progress=False)
    assert mine["weights"] == tuple(theirs["weights"])
    for a, b in zip(report["nDCG@10"].to_list(), their_report.results, strict=True):
        assert math.isclose(a, b, rel_tol=1e-9)


def found_order_runs() -> tuple[dict[str, pl.DataFrame], pl.DataFrame]:
    """``corpus(8)``'s documents in an order one CI run met (tests/data/fusion), with the
    seeded random scores: under weights (0.5, 0.5) two fused scores of q13 tie at 0.5,
    so the tie rule of the conventions decides the configuration's nDCG@10."""
    from pathlib import Path

    runs, qrels = corpus(8)
    docs = pl.read_csv(Path(__file__).parent / "data" / "fusion" / "optimize_fusion_order.csv")
    assert docs.sort("query", "doc").equals(
        pl.concat(runs.values()).select("query", "doc").unique().sort("query", "doc")
    )
    rng = np.random.default_rng(0)
    runs = {k: docs.with_columns(pl.Series("score", rng.uniform(0, 1, docs.height))) for k in runs}
    return runs, qrels


@pytest.mark.parametrize("conventions", [None, "ranx"])
def test_optimize_fusion_scores_a_configuration_as_fuse_then_evaluate(conventions):
    """Every configuration's score is that of fusing the runs with it and evaluating the
    fused run under the same conventions, on an input where fused scores tie (the tie
    rules differ: doc id descending by default, input order under ranx's)."""
    runs, qrels = found_order_runs()
    _, report = pr.optimize_fusion(
        runs, qrels, metric="ndcg@10", show_progress=False, conventions=conventions
    )
    for weights, value in zip(
        report["weights"].to_list(), report["nDCG@10"].to_list(), strict=True
    ):
        fused = pr.fuse(list(runs.values()), method="wsum", norm="min-max", weights=list(weights))
        result = pr.evaluate(fused, qrels, ["nDCG@10"], conventions=conventions)
        assert math.isclose(value, result["nDCG@10"].mean(), rel_tol=1e-9), (weights, value)


def test_ranx_optimize_fusion_itself_where_fused_scores_tie():
    """On the input where two fused scores tie, ranx.optimize_fusion's report and best
    weights are those of optimize_fusion under conventions="ranx" (ties in input order)."""
    runs, qrels = found_order_runs()
    rx, rq = to_ranx(runs, qrels)
    theirs, their_report = ranx_optimize(
        rq, rx, norm="min-max", method="wsum", metric="ndcg@10", show_progress=False,
        return_optimization_report=True,
    )  # fmt: skip
    mine, report = pr.optimize_fusion(
        runs, qrels, metric="ndcg@10", show_progress=False, conventions="ranx"
    )
    assert mine["weights"] == tuple(theirs["weights"])
    for a, b in zip(report["nDCG@10"].to_list(), their_report.results, strict=True):
        assert math.isclose(a, b, rel_tol=1e-9)
    # the tie matters: by doc id (the default) d14 goes before d01, and (0.5, 0.5) scores
    # otherwise than in ranx
    _, by_doc_id = pr.optimize_fusion(runs, qrels, metric="ndcg@10", show_progress=False)
    half = report["weights"].to_list().index([0.5, 0.5])
    assert not math.isclose(by_doc_id["nDCG@10"][half], report["nDCG@10"][half], rel_tol=1e-6)


def test_three_runs_weight_grid_is_ranxs():
    """ranx keeps the products of {0, 0.1, ..., 1} whose float sum is exactly 1.0: with
    three runs that drops some that sum to 1 on paper (0.1 + 0.2 + 0.7 is not 1.0)."""
    from ranx.fusion_optimization.optimize_weights import get_possible_weights, get_trial_configs

    from polars_rankeval.fusion.optimize import weight_grid

    assert weight_grid(0.1, 3) == get_trial_configs(get_possible_weights(0.1), 3)
    assert weight_grid(0.1, 2) == [(round(0.1 * i, 1), round(1 - 0.1 * i, 1)) for i in range(11)]


@pytest.mark.parametrize("method", ["posfuse", "segfuse", "bayesfuse", "mapfuse"])
def test_trained_parameters_equal_ranx(method):
    runs, qrels = corpus(21)
    rx, rq = to_ranx(runs, qrels)
    theirs = ranx_optimize(rq, rx, norm="min-max", method=method)
    mine, report = pr.optimize_fusion(runs, qrels, method=method, show_progress=False)
    (key,) = theirs.keys()
    assert mine.keys() == {key}
    for a, b in zip(mine[key], theirs[key], strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=1e-12)
    assert report.height == 1
    # the learned parameters then fuse as ranx fuses with them
    fused = pr.fuse(runs, method=method, params=mine)
    assert fused.height == pl.concat(runs.values()).select("query", "doc").unique().height


def test_one_pass_scores_equal_evaluating_each_fusion():
    """Each configuration's score is the mean nDCG@10 of that configuration's fused run."""
    runs, qrels = corpus(5)
    best, report = pr.optimize_fusion(runs, qrels, method="wsum", show_progress=False)
    for weights, value in zip(
        report["weights"].to_list(), report["nDCG@10"].to_list(), strict=True
    ):
        fused = pr.fuse(runs, method="wsum", weights=weights)
        alone = pr.evaluate(fused, qrels, "nDCG@10", per_query=False)["nDCG@10"].item()
        assert math.isclose(alone, value, rel_tol=1e-12)
    assert best["weights"] == tuple(
        report.filter(pl.col("nDCG@10") == pl.col("nDCG@10").max())["weights"].to_list()[-1]
    )


def test_a_lower_is_better_metric_is_minimised():
    """FallOut's best configuration is its lowest mean (the last of equal lowest, as ranx
    takes the last of equal highest): not the highest, which maximising would pick."""
    runs, qrels = corpus(5)
    best, report = pr.optimize_fusion(runs, qrels, method="wsum", metric="FallOut@5",
                                      show_progress=False)  # fmt: skip
    values = report["FallOut@5"]
    assert values.min() < values.max()
    lowest = report.filter(pl.col("FallOut@5") == values.min())["weights"].to_list()[-1]
    assert best["weights"] == tuple(lowest)
    for weights, value in zip(report["weights"].to_list(), values.to_list(), strict=True):
        fused = pr.fuse(runs, method="wsum", weights=weights)
        alone = pr.evaluate(fused, qrels, "FallOut@5", per_query=False)["FallOut@5"].item()
        assert math.isclose(alone, value, rel_tol=1e-12)


def test_rank_methods_score_the_runs_pr_fuse_makes():
    """min-max rounds 1.75 and the next double up (over a maximum of 3) to one value; the
    ranks that rrf reads are those of the scores as they are in optimize_fusion as in
    pr.fuse (a ranked before b in r0; ranking the normalised scores would tie a and b
    in the fused run and put b, doc id descending, first: nDCG@10 1/log2(3))."""
    above = float(np.nextafter(1.75, 2.0))
    runs = {
        "r0": pl.DataFrame({"query": ["q"] * 4, "doc": ["a", "b", "c", "z"],
                            "score": [above, 1.75, 3.0, 0.0]}),
        "r1": pl.DataFrame({"query": ["q"] * 3, "doc": ["x", "a", "b"],
                            "score": [0.9, 0.5, 0.1]}),
    }  # fmt: skip
    qrels = pl.DataFrame({"query": ["q"], "doc": ["a"], "relevance": [1]})
    _, report = pr.optimize_fusion(runs, qrels, method="rrf", norm="min-max", show_progress=False)
    for k, value in zip(report["k"].to_list(), report["nDCG@10"].to_list(), strict=True):
        fused = pr.fuse(runs, method="rrf", norm="min-max", params={"k": k})
        alone = pr.evaluate(fused, qrels, "nDCG@10", per_query=False)["nDCG@10"].item()
        assert value == alone == 1.0  # a first: 2/(k + 2) > 2/(k + 3), b's


def test_refusals():
    runs, qrels = corpus(1)
    with pytest.raises(ValueError, match="nothing to optimise"):
        pr.optimize_fusion(runs, qrels, method="sum")
    with pytest.raises(ValueError, match="grid of 'rrf' has no 'max_gamma'"):
        pr.optimize_fusion(runs, qrels, method="rrf", grid={"max_gamma": 2})
    with pytest.raises(ValueError, match="missing column 'relevance'"):
        pr.optimize_fusion(runs, qrels.drop("relevance"), method="rrf")


@pytest.mark.parametrize("metric", ["nDCG@3", "P@5", "RR@2", "AP@4", "recall@5", "map"])
def test_top_k_cut_scores_as_the_whole_run_with_ties(metric):
    """A measure at a cutoff k scores each configuration from the rows that reach the
    query's k-th score (ties kept): equal to evaluating each whole fused run, here with
    scores on a few integer values, so that many ties straddle the cutoff and the doc
    ids order them."""
    rng = random.Random(7)
    runs = {}
    for i in range(2):
        rows = [
            (f"q{q}", f"d{d:02d}", float(rng.randint(0, 3)))
            for q in range(12)
            for d in rng.sample(range(20), rng.randint(1, 15))
        ]
        runs[f"r{i}"] = pl.DataFrame(rows, schema=["query", "doc", "score"], orient="row")
    qrels = pl.DataFrame(
        [(f"q{q}", f"d{d:02d}", rng.choice([0, 1, 2])) for q in range(12) for d in range(0, 20, 3)],
        schema=["query", "doc", "relevance"],
        orient="row",
    )
    _, report = pr.optimize_fusion(runs, qrels, method="wsum", metric=metric, show_progress=False)
    name = report.columns[-1]
    assert report.height == 11
    for weights, value in zip(report["weights"].to_list(), report[name].to_list(), strict=True):
        fused = pr.fuse(runs, method="wsum", weights=weights)
        alone = pr.evaluate(fused, qrels, metric, per_query=False)[name].item()
        assert math.isclose(alone, value, rel_tol=1e-12, abs_tol=1e-15), (weights, alone, value)
