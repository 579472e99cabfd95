"""The formula variants of ranx, scikit-learn and torchmetrics (issue 18), against the peers.

ranx and scikit-learn are installed (the ``test`` extra) and run on the same random
runs: string ids, graded and negative grades, queries missing from the run or from
the qrels, per query at 1e-9. Their scores are made distinct first: ranx orders
tied scores by an unstable ``argsort`` (``ranx/utils.py``, ``descending_sort``) and
our ``ignore_ties=True`` calls of scikit-learn by another one, neither of them
trec_eval's doc-id rule (the tie rules are the ``conventions=`` presets' business).
torchmetrics needs torch, so its values come from its own documentation examples and
the reference functions of its unit tests, cited by file. (Offline, torchmetrics 1.9.0
on torch 2.13.0 gave the same AP(norm=found)@k, FallOut@k, AUROC@k and
P(adaptive_k=true)@k as these, 4,301 values on such runs with scores in (0, 1); torch is
no test dependency.)
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import polars as pl
import pytest
import ranx
from corpus import random_corpus
from sklearn import metrics as sklearn_metrics

import polars_rankeval as pr

TOL = 1e-9

RANX_NAMES = [
    "hits@10",
    "hits@3-l2",
    "hits",
    "dcg@10",
    "dcg_burges@10",
    "dcg@5-l2",
    "dcg_burges-l2",
    "ndcg@10",
    "ndcg@10-l2",
    "ndcg_burges@10-l2",
    "ndcg-l3",
    "rbp.95",
    "rbp.8-l2",
    "rbp@5",
    "map@10-l2",
    "map-l2",
    "mrr-l2",
    "mrr@5",
    "precision@5-l2",
    "recall@10-l2",
    "f1@10-l2",
    "hit_rate@5-l2",
    "r-precision-l2",
]
"""Every ranx name with a formula variant or a relevance level; ranx's bpref is left out:
it differs from trec_eval's (its non-relevant count takes every grade below the level,
negative ones too) and is not one of these variants."""


def _distinct_scores(run: pl.DataFrame, seed: int) -> pl.DataFrame:
    """The run with every score distinct (a random permutation of the rows)."""
    rng = np.random.default_rng(seed)
    return run.with_columns(score=pl.Series(rng.permutation(run.height) / 7.0))


def _nested(frame: pl.DataFrame, value: str, cast: type) -> dict[str, dict[str, object]]:
    out: dict[str, dict[str, object]] = {}
    for q, d, v in frame.select("query", "doc", value).iter_rows():
        out.setdefault(str(q), {})[str(d)] = cast(v)
    return out


def _ours(run: pl.DataFrame, qrels: pl.DataFrame, names: list[str], **kw) -> dict[str, dict]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        out = pr.evaluate(run, qrels, names, **kw)
    return {str(r["query"]): r for r in out.iter_rows(named=True)}


@pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaTypeSafetyWarning")
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ranx_names_equal_ranx_per_query(seed: int) -> None:
    run, qrels = random_corpus(seed, n_queries=30)
    run = _distinct_scores(run, seed)
    assert set(qrels["relevance"].unique()) >= {-1, 0, 1, 2, 3}
    ranx_qrels = ranx.Qrels(_nested(qrels, "relevance", int))
    ranx_run = ranx.Run(_nested(run, "score", float)).make_comparable(ranx_qrels)
    ranx.evaluate(ranx_qrels, ranx_run, RANX_NAMES, return_mean=False)
    # make_comparable scores the qrels queries missing from the run as empty rankings,
    # and drops the run queries without qrels: missing="zero" here
    ours = _ours(run, qrels, RANX_NAMES, missing="zero")
    assert set(ours) == set(ranx_qrels.keys())
    assert len(set(qrels["query"]) - set(run["query"])) > 0
    for name in RANX_NAMES:
        column = str(pr.parse(name))
        theirs = ranx_run.scores[name]
        for query, row in ours.items():
            assert row[column] == pytest.approx(theirs[query], abs=TOL), (name, query)


def test_ranx_names_parse_to_canonical_measures() -> None:
    expected = {
        "hits@10": "Hits@10",
        "dcg@10": "DCG@10",
        "dcg_burges@10": "DCG(gain=exp)@10",
        "rbp.95": "RBP(gain=linear,p=0.95)",
        "rbp.5": "RBP(gain=linear,p=0.5)",
        "rbp.95-l2": "RBP(gain=linear,p=0.95,rel=2)",
        "map@10-l2": "AP(rel=2)@10",
        "ndcg@10-l2": "nDCG(rel=2)@10",
        "ndcg_burges@10-l2": "nDCG(gain=exp,rel=2)@10",
        "mrr-l3": "RR(rel=3)",
        "r-precision-l2": "Rprec(rel=2)",
        "hit_rate@5-l2": "Success(rel=2)@5",
    }
    for name, canonical in expected.items():
        measure = pr.parse(name)
        assert str(measure) == canonical
        assert pr.parse(str(measure)) == measure
    # trec_eval 10's rbp keeps its own dotted form
    assert str(pr.parse("rbp.p=0.95")) == "TrecRBP(p=0.95)"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("NumRet-l2", "NumRet has no relevance level for the -l2 suffix to set"),
        ("P(rel=2)@5-l3", "gives the relevance level twice"),
        ("ndcg@10-l0", "must be >= 1"),
    ],
)
def test_ranx_level_suffix_errors(name: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        pr.parse(name)


def test_ndcg_with_a_relevance_level_by_hand() -> None:
    # grades 1, 3, 2 in rank order, one more 2 missed; rel=2 gives grade 1 no gain
    run = pl.DataFrame({"query": "q", "doc": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
    qrels = pl.DataFrame({"query": "q", "doc": ["a", "b", "c", "z"], "relevance": [1, 3, 2, 2]})
    out = pr.evaluate(run, qrels, ["nDCG(rel=2)", "nDCG", "DCG(rel=2)"], rel_level=2)
    dcg = 3 / math.log2(3) + 2 / math.log2(4)
    ideal = 3 + 2 / math.log2(3) + 2 / math.log2(4)
    assert out["nDCG(rel=2)"].item() == pytest.approx(dcg / ideal, abs=1e-12)
    assert out["DCG(rel=2)"].item() == pytest.approx(dcg, abs=1e-12)
    # the global rel_level leaves nDCG alone (trec_eval reads raw grades as gains)
    linear = (1 + dcg) / (ideal + 1 / math.log2(5))
    assert out["nDCG"].item() == pytest.approx(linear, abs=1e-12)


# --------------------------------------------------------------------------- scikit-learn


def _sklearn_frames(seed: int, n_queries: int = 25) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A run whose every document is judged (scikit-learn's y_true covers every document),
    with negative grades, and distinct scores."""
    run, _ = random_corpus(seed, n_queries=n_queries)
    run = _distinct_scores(run, seed)
    rng = np.random.default_rng(seed)
    grades = pl.Series(rng.choice([-2, -1, 0, 0, 1, 2, 3], run.height))
    every = run.select("query", "doc").with_columns(relevance=grades)
    return run, every


@pytest.mark.parametrize("seed", [3, 4])
@pytest.mark.parametrize(
    ("k", "log_base"), [(None, 2.0), (5, 2.0), (3, 10.0), (None, math.e), (1, 1.5)]
)
def test_dcg_equals_sklearn_dcg_score(seed: int, k: int | None, log_base: float) -> None:
    run, qrels = _sklearn_frames(seed)
    name = pr.parse(f"DCG(gain=signed,log_base={log_base!r})" + (f"@{k}" if k else ""))
    clipped = pr.parse(f"DCG(log_base={log_base!r})" + (f"@{k}" if k else ""))
    ours = _ours(run, qrels, [name, clipped])
    assert len(ours) == run["query"].n_unique()
    grades = {(q, d): g for q, d, g in qrels.iter_rows()}
    compared = 0
    for query, group in run.group_by("query"):
        q = str(query[0])
        if group.height < 2:  # scikit-learn takes one document for a binary target
            continue
        compared += 1
        y_true = np.array([grades[(q, d)] for d in group["doc"]], dtype=np.float64)
        y_score = group["score"].to_numpy()[None, :]
        kw = {"k": k, "log_base": log_base, "ignore_ties": True}
        signed = sklearn_metrics.dcg_score(y_true[None, :], y_score, **kw)
        assert ours[q][str(name)] == pytest.approx(signed, abs=TOL)
        positive = sklearn_metrics.dcg_score(np.clip(y_true, 0, None)[None, :], y_score, **kw)
        assert ours[q][str(clipped)] == pytest.approx(positive, abs=TOL)
    assert compared >= 15


def test_sklearn_names() -> None:
    assert str(pr.parse("dcg_score")) == "DCG"
    assert str(pr.parse("DCG(log_base=10)@5")) == "DCG(log_base=10.0)@5"
    assert str(pr.parse("ndcg_score@5")) == "nDCG@5"
    for bad in ("DCG(log_base=1)@3", "DCG(log_base=-2)", "DCG(gain=signed,rel=2)"):
        run = pl.DataFrame({"query": ["q"], "doc": ["a"], "score": [1.0]})
        qrels = pl.DataFrame({"query": ["q"], "doc": ["a"], "relevance": [1]})
        with pytest.raises(ValueError, match=r"log_base|signed"):
            pr.evaluate(run, qrels, [bad])


# --------------------------------------------------------------------------- AP denominators


def test_ap_denominators_by_hand() -> None:
    # relevant at ranks 2 and 4 of 5, |R| = 4: P@2 = 1/2, P@4 = 2/4
    run = pl.DataFrame({"query": "q", "doc": list("abcde"), "score": [5.0, 4, 3, 2, 1]})
    qrels = pl.DataFrame({"query": "q", "doc": list("bdxyz"), "relevance": [1, 1, 1, 1, 0]})
    names = ["AP@3", "AP(norm=min)@3", "AP(norm=found)@3", "AP(norm=found)@5", "AP(norm=found)"]
    out = pr.evaluate(run, qrels, names).row(0, named=True)
    assert out["AP@3"] == pytest.approx((1 / 2) / 4, abs=1e-12)  # trec_eval: |R|
    assert out["AP(norm=min)@3"] == pytest.approx((1 / 2) / 3, abs=1e-12)  # Spark: min(k, |R|)
    assert out["AP(norm=found)@3"] == pytest.approx(1 / 2, abs=1e-12)  # torchmetrics: 1 found
    assert out["AP(norm=found)@5"] == pytest.approx((1 / 2 + 2 / 4) / 2, abs=1e-12)
    assert out["AP(norm=found)"] == out["AP(norm=found)@5"]


def test_ap_found_equals_torchmetrics_doc_example() -> None:
    # torchmetrics src/torchmetrics/functional/retrieval/average_precision.py, docstring:
    # retrieval_average_precision(tensor([0.2, 0.3, 0.5]), tensor([True, False, True]))
    # == tensor(0.8333): the ranking is relevant, non-relevant, relevant: (1 + 2/3) / 2
    run = pl.DataFrame({"query": "q", "doc": ["d0", "d1", "d2"], "score": [0.2, 0.3, 0.5]})
    qrels = pl.DataFrame({"query": "q", "doc": ["d0", "d1", "d2"], "relevance": [1, 0, 1]})
    out = pr.evaluate(run, qrels, ["AP(norm=found)", "AP(norm=found)@2"]).row(0, named=True)
    assert out["AP(norm=found)"] == pytest.approx((1 + 2 / 3) / 2, abs=1e-12)
    assert round(out["AP(norm=found)"], 4) == 0.8333
    assert out["AP(norm=found)@2"] == 1.0  # one relevant found in the top 2, at rank 1


@pytest.mark.parametrize("seed", [5, 6])
def test_ap_denominators_equal_their_definitions(seed: int) -> None:
    run, qrels = random_corpus(seed, n_queries=25)
    names = ["AP(norm=found)@10", "AP(norm=min)@10", "AP@10", "Hits@10", "NumRel"]
    ours = _ours(run, qrels, names)
    for row in ours.values():
        total = row["AP@10"] * row["NumRel"]  # the sum of P@i over the hits in the top 10
        found = row["Hits@10"]
        assert row["AP(norm=found)@10"] == pytest.approx(total / found if found else 0.0, abs=TOL)
        least = min(10, row["NumRel"])
        assert row["AP(norm=min)@10"] == pytest.approx(total / least if least else 0.0, abs=TOL)


# --------------------------------------------------------------------------- torchmetrics


def _torchmetrics_lists(seed: int) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, tuple]]:
    """A run with distinct scores and, per scored query, torchmetrics' (preds, target): the
    retrieved documents' scores and whether each is relevant (unjudged: 0)."""
    run, qrels = random_corpus(seed, n_queries=30)
    run = _distinct_scores(run, seed)
    grades = {(str(q), str(d)): g for q, d, g in qrels.iter_rows()}
    judged = {str(q) for q in qrels["query"]}
    lists = {}
    for query, group in run.group_by("query"):
        q = str(query[0])
        if q in judged:
            target = np.array([grades.get((q, str(d)), 0) >= 1 for d in group["doc"]], dtype=int)
            lists[q] = (group["score"].to_numpy(), target)
    return run, qrels, lists


def _top(preds: np.ndarray, target: np.ndarray, k: int | None) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(preds)[::-1][: len(preds) if k is None else k]
    return preds[order], target[order]


@pytest.mark.parametrize("seed", [7, 8])
@pytest.mark.parametrize("k", [None, 1, 4, 10])
def test_fallout_auroc_and_adaptive_precision_equal_torchmetrics_references(seed, k) -> None:
    """The references of torchmetrics' own unit tests (tests/unittests/retrieval/):
    test_auroc.py ``_auroc_at_k`` (scikit-learn's ``roc_auc_score`` of the top k, 0 when
    the top k lacks a positive or a negative), test_fallout.py ``_fallout_at_k`` (the
    functional metric gives 0 where that reference gives NaN), and
    functional/retrieval/precision.py with ``adaptive_k=True`` (min(k, documents))."""
    run, qrels, lists = _torchmetrics_lists(seed)
    at = "" if k is None else f"@{k}"
    names = [f"FallOut{at}", f"AUROC{at}"] + ([f"P(adaptive_k=true){at}"] if k else [])
    ours = _ours(run, qrels, names)
    assert set(ours) == set(lists)
    for q, (preds, target) in lists.items():
        top_preds, top_target = _top(preds, target, k)
        negatives = (1 - target).sum()
        fall_out = (1 - top_target).sum() / negatives if negatives else 0.0
        assert ours[q][f"FallOut{at}"] == pytest.approx(fall_out, abs=TOL)
        if 0 in top_target and 1 in top_target:
            auroc = sklearn_metrics.roc_auc_score(top_target, top_preds)
        else:
            auroc = 0.0
        assert ours[q][f"AUROC{at}"] == pytest.approx(auroc, abs=TOL)
        if k:
            precision = top_target.sum() / min(k, len(preds))
            assert ours[q][f"P(adaptive_k=true){at}"] == pytest.approx(precision, abs=TOL)


def test_torchmetrics_doc_examples() -> None:
    # preds [0.2, 0.3, 0.5], target [True, False, True] in the docstrings of
    # torchmetrics/functional/retrieval/{fall_out,auroc,precision}.py:
    # retrieval_fall_out(top_k=2) == 1.0, retrieval_auroc == 0.5,
    # retrieval_precision(top_k=2) == 0.5
    run = pl.DataFrame({"query": "q", "doc": ["d0", "d1", "d2"], "score": [0.2, 0.3, 0.5]})
    qrels = pl.DataFrame({"query": "q", "doc": ["d0", "d1", "d2"], "relevance": [1, 0, 1]})
    names = ["RetrievalFallOut@2", "RetrievalAUROC", "P@2", "P(adaptive_k=true)@4", "P@4"]
    out = pr.evaluate(run, qrels, names).row(0, named=True)
    assert out["FallOut@2"] == 1.0
    assert out["AUROC"] == 0.5
    assert out["P@2"] == 0.5
    assert out["P(adaptive_k=true)@4"] == pytest.approx(2 / 3, abs=1e-12)  # k -> 3 documents
    assert out["P@4"] == 0.5
    assert str(pr.parse("RetrievalMAP@10")) == "AP(norm=found)@10"


# --------------------------------------------------------------------------- fractional grades


def _real_valued(seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """scikit-learn's setting: every retrieved document judged, with a real-valued grade."""
    run, _ = random_corpus(seed, n_queries=25)
    run = _distinct_scores(run, seed)
    rng = np.random.default_rng(seed)
    grades = np.round(rng.choice([0.0, 0.0, 0.25, 0.5, 1.0, 1.7, 3.2], run.height), 2)
    return run, run.select("query", "doc").with_columns(relevance=pl.Series(grades))


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("k", [None, 3, 10])
def test_fractional_grades_equal_sklearn_ndcg_and_dcg(lazy: bool, k: int | None) -> None:
    run, qrels = _real_valued(9)
    at = "" if k is None else f"@{k}"
    names = [f"nDCG{at}", f"DCG{at}", f"DCG(log_base=10.0){at}"]
    if lazy:  # the bucketed path reads the grades batch by batch
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
            frame = pr.evaluate(run.lazy(), qrels.lazy(), names).collect()
        ours = {str(r["query"]): r for r in frame.iter_rows(named=True)}
    else:
        ours = _ours(run, qrels, names)
    grades = {(q, d): g for q, d, g in qrels.iter_rows()}
    compared = 0
    for query, group in run.group_by("query"):
        q = str(query[0])
        if group.height < 2:  # scikit-learn takes one document for a binary target
            continue
        compared += 1
        y_true = np.array([[grades[(q, d)] for d in group["doc"]]])
        y_score = group["score"].to_numpy()[None, :]
        ndcg = sklearn_metrics.ndcg_score(y_true, y_score, k=k, ignore_ties=True)
        assert ours[q][f"nDCG{at}"] == pytest.approx(ndcg, abs=TOL)
        dcg = sklearn_metrics.dcg_score(y_true, y_score, k=k, ignore_ties=True)
        assert ours[q][f"DCG{at}"] == pytest.approx(dcg, abs=TOL)
        dcg10 = sklearn_metrics.dcg_score(y_true, y_score, k=k, log_base=10, ignore_ties=True)
        assert ours[q][f"DCG(log_base=10.0){at}"] == pytest.approx(dcg10, abs=TOL)
    assert compared >= 15


def test_fractional_grades_are_refused_where_grades_are_integers() -> None:
    run, qrels = _real_valued(10)
    with pytest.raises(ValueError, match=r"not an integer \(.*AP, P@5 read integer grades"):
        pr.evaluate(run, qrels, ["nDCG@5", "AP", "P@5"])
    with pytest.raises(ValueError, match="not an integer"):
        pr.judge(run, qrels)
    bad = qrels.with_columns(relevance=pl.lit(float("nan")))
    with pytest.raises(ValueError, match="not a finite number"):
        pr.evaluate(run, bad, ["nDCG@5"])
    # whole grades in a float column stay integer grades: every measure takes them
    whole = qrels.with_columns(pl.col("relevance").round(0))
    assert pr.evaluate(run, whole, ["AP", "nDCG@5"]).height > 0


def test_graded_rbp_reads_fractional_grades_by_hand() -> None:
    run = pl.DataFrame({"query": "q", "doc": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
    qrels = pl.DataFrame({"query": "q", "doc": ["a", "b", "c"], "relevance": [0.5, 2.5, 1.0]})
    out = pr.evaluate(run, qrels, ["RBP(gain=linear,p=0.5)"]).item(0, 1)
    assert out == pytest.approx(0.5 * (2.5 * 0.5 + 1.0 * 0.25), abs=1e-12)  # 0.5 < rel 1


def test_fractional_grades_engine_equals_the_plain_expressions() -> None:
    """The engine's formulas and the measures' own aggregation expressions (for users'
    group_by) agree on grades with a fraction: one query, judged by hand."""
    run = pl.DataFrame(
        {"query": "q", "doc": ["a", "b", "x", "c", "d"], "score": [5.0, 4.0, 3.0, 2.0, 1.0]}
    )
    qrels = pl.DataFrame(
        {"query": "q", "doc": ["a", "b", "c", "d", "z"], "relevance": [0.5, 2.7, 0.0, 1.2, 3.1]}
    )
    judged = pl.DataFrame(
        {
            "rank": [1, 2, 3, 4, 5, None],
            "relevance": [0.5, 2.7, None, 0.0, 1.2, 3.1],  # x unjudged, z not retrieved
        },
        schema={"rank": pl.UInt32, "relevance": pl.Float64},
    )
    names = ["nDCG", "nDCG@3", "nDCG(gain=exp)@4", "DCG", "DCG(rel=2)@5", "RBP(gain=linear)"]
    ours = pr.evaluate(run, qrels, names).row(0, named=True)
    for name in names:
        plain = judged.select(pr.parse(name).expr()).item()
        assert ours[name] == pytest.approx(plain, abs=1e-12), name
    dcg = 0.5 + 2.7 / math.log2(3) + 1.2 / math.log2(6)
    assert ours["DCG"] == pytest.approx(dcg, abs=1e-12)
