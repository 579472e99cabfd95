"""The presets on ``conventions=`` against the installed peers, per query, at 1e-9.

Random runs with ties (scores on a few levels), string ids of mixed case and length,
graded and negative grades, run queries without qrels, qrels queries the run lacks and
queries without a relevant document (tests/corpus.py).
"""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest
from corpus import random_corpus
from polars.testing import assert_frame_equal

import polars_rankeval as pr
from polars_rankeval.conventions import CONVENTIONS, get_conventions

TOL = 1e-9


def per_query(run: pl.DataFrame, qrels: pl.DataFrame, measures: list[str], **kw) -> pl.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        return pr.evaluate(run, qrels, measures, **kw)


def nested(frame: pl.DataFrame, value: str) -> dict[str, dict[str, float]]:
    """``{query: {doc: value}}`` in row order (the peers' dict input)."""
    out: dict[str, dict[str, float]] = {}
    for q, d, v in frame.select("query", "doc", value).iter_rows():
        out.setdefault(q, {})[d] = v
    return out


def assert_close(ours: pl.DataFrame, theirs: dict[str, dict[str, float]]) -> int:
    """Every (column, query) value of ``ours`` equals the peer's; the same queries."""
    compared = 0
    for column, values in theirs.items():
        assert set(values) == set(ours["query"]), column
        for q, v in zip(ours["query"], ours[column], strict=True):
            assert v == pytest.approx(values[q], abs=TOL, rel=0), (column, q)
            compared += 1
    return compared


# --------------------------------------------------------------------------- ranx

RANX = ["map", "map@5", "mrr", "mrr@3", "ndcg", "ndcg@5", "precision@5", "recall@5",
        "hit_rate@3", "r-precision", "f1@5"]  # fmt: skip


def ranx_values(run: pl.DataFrame, qrels: pl.DataFrame, metrics: list[str]) -> dict:
    ranx = pytest.importorskip("ranx")
    ranx_run = ranx.Run(nested(run, "score"))
    ranx_qrels = ranx.Qrels(nested(qrels, "relevance"))
    out = {}
    for metric in metrics:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # numba's type-safety warnings
            values = ranx.evaluate(
                ranx_qrels, ranx_run, metric, return_mean=False, make_comparable=True
            )
        out[metric] = dict(zip(ranx_run.get_query_ids(), values, strict=True))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_ranx_with_ties(seed: int) -> None:
    """Ties in input order: ranx sorts with numba's quicksort, an insertion sort (stable)
    for rankings of up to 15 documents, so the runs here have at most 15 per query."""
    run, qrels = random_corpus(seed, n_queries=30, max_docs=16)
    ours = per_query(run, qrels, RANX, conventions="ranx")
    theirs = ranx_values(run, qrels, RANX)
    renamed = {str(pr.parse(m)): v for m, v in theirs.items()}
    assert assert_close(ours, renamed) > 0  # the same queries: the absent ones score 0
    assert set(ours["query"]) == set(qrels["query"])


def test_ranx_long_rankings_without_ties() -> None:
    """Longer rankings, scores without ties (ranx's order of equal scores is unspecified
    beyond 15 documents)."""
    run, qrels = random_corpus(11, n_queries=20, max_docs=80)
    rng = np.random.default_rng(0)
    run = run.with_columns(score=pl.Series(rng.permutation(run.height) / 7.0))
    ours = per_query(run, qrels, RANX, conventions="ranx")
    renamed = {str(pr.parse(m)): v for m, v in ranx_values(run, qrels, RANX).items()}
    assert_close(ours, renamed)


def test_ranx_ties_follow_input_order_not_doc_ids() -> None:
    run = pl.DataFrame({"query": ["q"] * 3, "doc": ["a", "b", "c"], "score": [1.0] * 3})
    qrels = pl.DataFrame({"query": ["q"], "doc": ["a"], "relevance": [1]})
    assert per_query(run, qrels, ["RR"], conventions="ranx")["RR"].item() == 1.0
    assert per_query(run, qrels, ["RR"])["RR"].item() == pytest.approx(1 / 3)  # c, b, a
    assert ranx_values(run, qrels, ["mrr"])["mrr"]["q"] == 1.0


# --------------------------------------------------------------------------- ir_measures

IR_MEASURES = ["AP", "AP@5", "P@5", "nDCG@5", "nDCG", "RR", "R@5", "Rprec", "Success@3",
               "NumRet", "Bpref", "IPrec@0.5", "SetF", "P(rel=2)@10", "infAP"]  # fmt: skip


@pytest.mark.parametrize("seed", range(4))
def test_ir_measures_with_ties(seed: int) -> None:
    ir_measures = pytest.importorskip("ir_measures")
    run, qrels = random_corpus(100 + seed, n_queries=30)
    # scores equal in float32 but not in float64: trec_eval 9.x ties them
    run = run.with_columns(pl.col("score") + pl.Series(np.arange(run.height) % 3) * 1e-9)
    ours = per_query(run, qrels, IR_MEASURES, conventions="ir_measures")
    theirs: dict[str, dict[str, float]] = {m: {} for m in IR_MEASURES}
    parsed = [ir_measures.parse_measure(m) for m in IR_MEASURES]
    for metric in ir_measures.iter_calc(parsed, nested(qrels, "relevance"), nested(run, "score")):
        theirs[str(metric.measure)][metric.query_id] = metric.value
    assert assert_close(ours, theirs) > 0
    absent = set(qrels["query"]) - set(run["query"])
    assert absent and absent <= set(ours["query"])  # scored 0, as ir_measures does


# --------------------------------------------------------------------------- scikit-learn


@pytest.mark.parametrize("seed", range(4))
def test_sklearn_ndcg_and_dcg_ties_averaged(seed: int) -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    run, qrels = random_corpus(200 + seed, n_queries=30, grades=(0, 0, 1, 1, 2, 3))
    ks = [1, 3, 10, None]
    names = [f"{m}@{k}" if k else m for m in ("ndcg", "dcg") for k in ks]
    ours = per_query(run, qrels, names, conventions="sklearn")
    grades = {(q, d): g for q, d, g in qrels.iter_rows()}
    compared = 0
    for row in ours.iter_rows(named=True):
        ranking = run.filter(pl.col("query") == row["query"])
        if ranking.height < 2:
            continue  # ndcg_score refuses a single document
        y_true = np.array([[grades.get((row["query"], d), 0) for d in ranking["doc"]]], float)
        y_score = ranking["score"].to_numpy()[None, :]
        for k in ks:
            at = f"@{k}" if k else ""
            want = metrics.ndcg_score(y_true, y_score, k=k, ignore_ties=False)
            assert row[f"nDCG(ties=average){at}"] == pytest.approx(want, abs=TOL, rel=0)
            want = metrics.dcg_score(y_true, y_score, k=k, ignore_ties=False)
            assert row[f"DCG(ties=average){at}"] == pytest.approx(want, abs=TOL, rel=0)
            compared += 2
    assert compared > 50


def test_sklearn_ideal_is_over_the_retrieved_documents() -> None:
    """A relevant document the run missed lowers trec_eval's nDCG, not scikit-learn's."""
    run = pl.DataFrame({"query": ["q"] * 2, "doc": ["a", "b"], "score": [2.0, 1.0]})
    qrels = pl.DataFrame({"query": ["q"] * 2, "doc": ["a", "missed"], "relevance": [1, 1]})
    assert per_query(run, qrels, ["nDCG"], conventions="sklearn").item(0, 1) == 1.0
    assert per_query(run, qrels, ["nDCG"]).item(0, 1) == pytest.approx(1 / (1 + 1 / np.log2(3)))


# --------------------------------------------------------------------------- torchmetrics
# torch is heavy (about 1 GB): it is its own extra, installed by CI. Expected values from
# torchmetrics' own documentation
# examples (Lightning-AI/torchmetrics src/torchmetrics/retrieval/average_precision.py
# RetrievalMAP: tensor(0.7917), ndcg.py RetrievalNormalizedDCG: tensor(0.8467); the others
# are the same example worked out from their definitions), written out.

TM_INDEXES = [0, 0, 0, 1, 1, 1, 1]
TM_PREDS = [0.2, 0.3, 0.5, 0.1, 0.3, 0.5, 0.2]
TM_TARGET = [False, False, True, False, True, False, True]


def torchmetrics_frames() -> tuple[pl.DataFrame, pl.DataFrame]:
    """The docstring example of torchmetrics' retrieval metrics as a run and qrels."""
    docs = [f"d{i}" for i in range(len(TM_PREDS))]
    run = pl.DataFrame({"query": TM_INDEXES, "doc": docs, "score": TM_PREDS})
    qrels = pl.DataFrame(
        {"query": TM_INDEXES, "doc": docs, "relevance": [int(t) for t in TM_TARGET]}
    )
    return run, qrels


def test_torchmetrics_documented_values() -> None:
    run, qrels = torchmetrics_frames()
    means = pr.evaluate(
        run,
        qrels,
        ["map", "map@2", "mrr", "P@2", "R@2", "ndcg"],
        conventions="torchmetrics",
        per_query=False,
    )
    # RetrievalMAP: tensor(0.7917) = (1/1 + (1/2 + 2/3) / 2) / 2
    assert means["AP(norm=found)"].item() == pytest.approx((1 + (1 / 2 + 2 / 3) / 2) / 2)
    assert round(means["AP(norm=found)"].item(), 4) == 0.7917
    # RetrievalMAP(top_k=2): the relevant documents found in the top 2, (1/1 + 1/2) / 2
    assert means["AP(norm=found)@2"].item() == pytest.approx(0.75)
    # RetrievalMRR: (1 + 1/2) / 2 = 0.75
    assert means["RR"].item() == pytest.approx(0.75)
    # RetrievalPrecision(top_k=2): (1/2 + 1/2) / 2 = 0.5
    assert means["P@2"].item() == pytest.approx(0.5)
    # RetrievalRecall(top_k=2): (1/1 + 1/2) / 2 = 0.75
    assert means["R@2"].item() == pytest.approx(0.75)
    # RetrievalNormalizedDCG: 0.8467 in torchmetrics' docstring
    assert means["nDCG(ties=average)"].item() == pytest.approx(0.8467, abs=5e-5)


@pytest.mark.parametrize("seed", range(4))
def test_torchmetrics_functional_per_query(seed: int) -> None:
    """Against torchmetrics' functional retrieval metrics, query by query (the ``torch``
    extra; CI installs torch 2.13.0+cpu and torchmetrics; skipped without them). Scores
    above 0 (its AP, P,
    R and RR drop relevant documents scored <= 0); equal scores only for nDCG (torch.topk
    orders them in no documented order)."""
    torch = pytest.importorskip("torch")
    retrieval = pytest.importorskip("torchmetrics.functional.retrieval")
    measures = {
        "map": lambda p, g: retrieval.retrieval_average_precision(p, g >= 1),
        "map@5": lambda p, g: retrieval.retrieval_average_precision(p, g >= 1, top_k=5),
        "mrr": lambda p, g: retrieval.retrieval_reciprocal_rank(p, g >= 1),
        "P@5": lambda p, g: retrieval.retrieval_precision(p, g >= 1, top_k=5),
        "R@5": lambda p, g: retrieval.retrieval_recall(p, g >= 1, top_k=5),
        "hit_rate@3": lambda p, g: retrieval.retrieval_hit_rate(p, g >= 1, top_k=3),
        "Rprec": lambda p, g: retrieval.retrieval_r_precision(p, g >= 1),
        "ndcg@5": lambda p, g: retrieval.retrieval_normalized_dcg(p, g, top_k=5),
        "ndcg": lambda p, g: retrieval.retrieval_normalized_dcg(p, g),
    }
    run, qrels = random_corpus(300 + seed, n_queries=30, grades=(0, 0, 1, 1, 2, 3))
    tied = run.with_columns(pl.col("score") + 0.5)
    rng = np.random.default_rng(seed)
    untied = run.with_columns(score=pl.Series(rng.permutation(run.height) + 1.0))
    grades = {(q, d): g for q, d, g in qrels.iter_rows()}
    compared = 0
    for ranked, names in [(untied, list(measures)), (tied, ["ndcg@5", "ndcg"])]:
        ours = per_query(ranked, qrels, names, conventions="torchmetrics")
        for row in ours.iter_rows(named=True):
            part = ranked.filter(pl.col("query") == row["query"])
            preds = torch.tensor(part["score"].to_numpy(), dtype=torch.float32)
            target = torch.tensor([grades.get((row["query"], d), 0) for d in part["doc"]])
            for name, column in zip(names, ours.columns[1:], strict=True):
                want = float(measures[name](preds, target))
                assert row[column] == pytest.approx(want, abs=1e-6), (name, row["query"])
                compared += 1
    assert compared > 200


@pytest.mark.parametrize(
    ("empty", "expected"), [("zero", [1.0, 0.0]), ("one", [1.0, 1.0]), ("skip", [1.0])]
)
def test_empty_queries(empty: str, expected: list[float]) -> None:
    """torchmetrics' empty_target_action neg / pos / skip as the preset's choice."""
    from dataclasses import replace

    run = pl.DataFrame({"query": ["a", "b"], "doc": ["x", "y"], "score": [1.0, 1.0]})
    qrels = pl.DataFrame({"query": ["a", "b"], "doc": ["x", "y"], "relevance": [1, 0]})
    conventions = replace(get_conventions("torchmetrics"), empty_queries=empty)
    out = per_query(run, qrels, ["RR", "NumRet"], conventions=conventions)
    assert out["RR"].to_list() == expected
    assert set(out["NumRet"]) == {1.0}  # counts keep their value


def test_empty_queries_error_names_the_query() -> None:
    from dataclasses import replace

    run = pl.DataFrame({"query": ["a", "b"], "doc": ["x", "y"], "score": [1.0, 1.0]})
    qrels = pl.DataFrame({"query": ["a", "b"], "doc": ["x", "y"], "relevance": [1, 0]})
    conventions = replace(get_conventions("torchmetrics"), empty_queries="error")
    with pytest.raises(ValueError, match=r"no relevant document \(\{'query': 'b'\}\)"):
        per_query(run, qrels, ["RR"], conventions=conventions)


def test_empty_queries_are_told_apart_on_the_relevance_level_on_every_way_in() -> None:
    # P(rel=2) reads grades >= 2 only, but a query is empty when it has no grade >= the
    # relevance level (1): query a is not, on a run and on a pre-judged table alike.
    from dataclasses import replace

    table = pl.DataFrame(
        {"query": ["a", "a", "b", "b"], "doc": ["x", "y", "x", "y"], "rank": [1, 2, 1, 2],
         "relevance": [1, 0, 2, 0]}
    )  # fmt: skip
    run = table.select("query", "doc", score=-pl.col("rank").cast(pl.Float64))
    conventions = replace(get_conventions("trec_eval-10"), empty_queries="skip")
    want = pl.DataFrame({"query": ["a", "b"], "P(rel=2)@2": [0.0, 0.5]})
    assert_frame_equal(
        per_query(run, table.drop("rank"), ["P(rel=2)@2"], conventions=conventions), want
    )
    assert_frame_equal(pr.evaluate_judged(table, ["P(rel=2)@2"], conventions=conventions), want)


# --------------------------------------------------------------------------- every way in


@pytest.mark.filterwarnings("ignore::polars_rankeval.UnscoredQueriesWarning")
@pytest.mark.parametrize("name", sorted(CONVENTIONS))
def test_every_way_in_gives_the_same_values(name: str) -> None:
    run, qrels = random_corpus(7, n_queries=25, systems=2)
    measures = ["AP", "AP@5", "nDCG@5", "nDCG", "P@3", "RR", "R@10"]
    frame = per_query(run, qrels, measures, conventions=name)
    lazy = per_query(run.lazy(), qrels.lazy(), measures, conventions=name)
    assert frame.equals(lazy.collect())
    bucketed = per_query(run.lazy(), qrels.lazy(), measures, conventions=name, memory_limit=4096)
    assert frame.sort("system", "query").equals(bucketed.collect().sort("system", "query"))


def test_tie_spans_in_evaluate_judged() -> None:
    """A judged table's ranks hold no ties: nDCG(ties=average) is the ordered nDCG."""
    run, qrels = random_corpus(3, n_queries=15)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        both = pr.evaluate_judged(pr.judge(run, qrels), ["nDCG@5", "nDCG(ties=average)@5"])
    assert both["nDCG@5"].to_list() == both["nDCG(ties=average)@5"].to_list()


def test_tie_free_runs_average_to_the_ordered_values() -> None:
    run, qrels = random_corpus(4, n_queries=20)
    run = run.with_columns(score=pl.Series(np.random.default_rng(1).permutation(run.height) * 1.0))
    both = per_query(run, qrels, ["nDCG@5", "nDCG(ties=average)@5", "nDCG", "nDCG(ties=average)"])
    assert both["nDCG@5"].to_list() == pytest.approx(both["nDCG(ties=average)@5"].to_list())
    assert both["nDCG"].to_list() == pytest.approx(both["nDCG(ties=average)"].to_list())


# --------------------------------------------------------------------------- docs


def test_docs_table_is_rendered_from_the_declarations() -> None:
    """docs/conventions.md holds conventions_table() as it renders now, and every
    preset's notes (what it does not reproduce)."""
    from pathlib import Path

    from polars_rankeval.conventions import conventions_table

    page = (Path(__file__).resolve().parents[1] / "docs" / "conventions.md").read_text()
    start = (
        "<!-- conventions table: generated by polars_rankeval.conventions.conventions_table() -->"
    )
    table = page.split(start + "\n", 1)[1].split("\n<!-- end of conventions table -->", 1)[0]
    assert table == conventions_table()
    for name, conventions in CONVENTIONS.items():
        assert " ".join(conventions.notes) in page, name
    assert all(f"`{name}`" in table.splitlines()[0] for name in CONVENTIONS)


@pytest.mark.parametrize("name", ["sklearn", "torchmetrics", "ranx"])
def test_evaluate_judged_follows_the_presets(name: str) -> None:
    """A judged table (pr.judge) scored under a preset gives evaluate's values, tie-free."""
    run, qrels = random_corpus(9, n_queries=20, grades=(0, 1, 2, 3))
    run = run.with_columns(score=pl.Series(np.random.default_rng(2).permutation(run.height) * 1.0))
    measures = ["ndcg@5", "ndcg", "R@5", "map@3", "mrr"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        judged = pr.evaluate_judged(pr.judge(run, qrels), measures, conventions=name)
    expected = per_query(run, qrels, measures, conventions=name, missing="drop")
    assert judged.columns == expected.columns
    for column in judged.columns[1:]:
        assert judged[column].to_list() == pytest.approx(expected[column].to_list(), abs=1e-12)


# --------------------------------------------------------------------------- ranx's names


def ranx_metric_names() -> list[str]:
    """Every metric name ranx's ``evaluate`` reads (the cases of ranx.metrics.metric_switch)."""
    import inspect
    import re

    ranx = pytest.importorskip("ranx")
    source = inspect.getsource(ranx.metrics.metric_switch)
    return re.findall(r'metric == "([^"]+)"', source)


RANX_FORMS = {
    # ranx's name -> the forms tested: bare (no cutoff: the whole ranking), @k, -lN
    name: [f"{name}", f"{name}@5", f"{name}-l2", f"{name}@3-l2"]
    for name in ("hits", "hit_rate", "precision", "recall", "f1", "mrr", "map", "dcg",
                 "dcg_burges", "ndcg", "ndcg_burges")
}  # fmt: skip
RANX_FORMS |= {
    "r-precision": ["r-precision", "r-precision-l2"],  # ranx reads no cutoff for these two
    "bpref": ["bpref", "bpref-l2"],
    "rbp": ["rbp.95", "rbp.8-l2", "rbp@5"],  # rbp's number is its persistence
}


def test_every_ranx_metric_name_is_tested() -> None:
    assert sorted(ranx_metric_names()) == sorted(RANX_FORMS)


@pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaTypeSafetyWarning")
@pytest.mark.parametrize("metric", [f for forms in RANX_FORMS.values() for f in forms])
def test_ranx_names_mean_what_ranx_computes(metric: str) -> None:
    """Under conventions="ranx" every ranx name is ranx's measure, query by query, on
    runs with ties (at most 15 documents a query: ranx keeps their input order), or is
    refused where the preset does not reproduce it (ranx's bpref is its own)."""
    if metric.split("-l")[0] in get_conventions("ranx").refused_names:
        run, qrels = random_corpus(400, n_queries=30, max_docs=16)
        assert any(  # it does differ from trec_eval's
            abs(ours - ranx_values(run, qrels, [metric])[metric][q]) > TOL
            for q, ours in per_query(run, qrels, [metric.replace("bpref", "Bpref")]).iter_rows()
        )
        with pytest.raises(ValueError, match="conventions='ranx' does not reproduce it"):
            pr.parse_measures(metric, conventions="ranx")
        return
    compared = 0
    for seed in range(3):
        run, qrels = random_corpus(400 + seed, n_queries=30, max_docs=16)
        [measure] = pr.parse_measures(metric, conventions="ranx")
        ours = per_query(run, qrels, [metric], conventions="ranx")
        theirs = ranx_values(run, qrels, [metric])
        compared += assert_close(ours, {str(measure): theirs[metric]})
    assert compared >= 60


@pytest.mark.parametrize(
    ("name", "canonical"),
    [("precision", "SetP"), ("recall", "R"), ("precision-l2", "SetP(rel=2)"),
     ("recall-l3", "R(rel=3)"), ("precision@5", "P@5"), ("recall@5", "R@5"),
     ("HitRate@5", "Success@5"), ("hit_rate@5", "Success@5"), ("HitRate", "Success")],
)  # fmt: skip
def test_ranx_meanings_win_under_the_ranx_preset(name: str, canonical: str) -> None:
    assert [str(m) for m in pr.parse_measures(name, conventions="ranx")] == [canonical]


def test_trec_eval_meanings_stay_under_the_other_presets() -> None:
    assert len(pr.parse_measures("recall")) == 9  # trec_eval's recall_5 ... recall_1000
    with pytest.raises(ValueError, match="needs a cutoff"):
        pr.parse_measures("precision")
    assert str(pr.parse("HitRate@10")) == "Success@10"
