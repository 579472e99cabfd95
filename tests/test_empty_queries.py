"""``empty_queries``: a plain option of evaluate and evaluate_judged (issue 37), where
skipping users without a relevant document needed
``dataclasses.replace(get_conventions(...), empty_queries="skip")``."""

from __future__ import annotations

import warnings
from dataclasses import replace

import polars as pl
import pytest
from corpus import random_corpus

import polars_rankeval as pr
from polars_rankeval.conventions import get_conventions

MEASURES = ["AP", "nDCG@10", "RR", "P@5", "NumRet", "NumRel"]


def quietly(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        return function(*args, **kwargs)


@pytest.fixture(scope="module")
def corpus() -> tuple[pl.DataFrame, pl.DataFrame]:
    run, qrels = random_corpus(21, n_queries=60, systems=2)
    return run, qrels


def no_relevant(qrels: pl.DataFrame) -> set[str]:
    has = qrels.group_by("query").agg((pl.col("relevance") >= 1).any().alias("has"))
    return set(has.filter(~pl.col("has"))["query"])


@pytest.mark.parametrize("empty", ["zero", "one", "skip"])
def test_the_option_equals_the_conventions_choice(corpus, empty) -> None:
    run, qrels = corpus
    assert no_relevant(qrels) & set(run["query"])  # the case at hand
    given = quietly(pr.evaluate, run, qrels, MEASURES, empty_queries=empty)
    preset = replace(get_conventions("trec_eval-10"), empty_queries=empty)
    expected = quietly(pr.evaluate, run, qrels, MEASURES, conventions=preset)
    assert given.equals(expected)
    lazy = quietly(
        lambda: pr.evaluate(
            run.lazy(), qrels, MEASURES, empty_queries=empty, memory_limit=20_000
        ).collect()
    )
    assert lazy.equals(expected)


def test_skip_leaves_out_the_queries_without_a_relevant_document(corpus) -> None:
    run, qrels = corpus
    zero = quietly(pr.evaluate, run, qrels, MEASURES)
    skipped = quietly(pr.evaluate, run, qrels, MEASURES, empty_queries="skip")
    assert set(skipped["query"]) == set(zero["query"]) - no_relevant(qrels)
    kept = zero.join(skipped.select("system", "query"), on=["system", "query"])
    assert kept.sort("system", "query").equals(skipped)
    means = quietly(pr.evaluate, run, qrels, ["AP"], empty_queries="skip", per_query=False)
    assert means["AP"].to_list() == pytest.approx(
        skipped.group_by("system").agg(pl.col("AP").mean()).sort("system")["AP"].to_list()
    )


def test_one_scores_them_one_and_keeps_the_counts(corpus) -> None:
    run, qrels = corpus
    zero = quietly(pr.evaluate, run, qrels, MEASURES)
    one = quietly(pr.evaluate, run, qrels, MEASURES, empty_queries="one")
    empty = pl.col("query").is_in(list(no_relevant(qrels)))
    assert (one.filter(empty)["AP"] == 1.0).all()
    assert one.filter(empty)["NumRet"].equals(zero.filter(empty)["NumRet"])
    assert one.filter(~empty).equals(zero.filter(~empty))


def test_error_names_the_query_and_the_option(corpus) -> None:
    run, qrels = corpus
    with pytest.raises(ValueError, match="empty_queries='error': pass empty_queries="):
        quietly(pr.evaluate, run, qrels, MEASURES, empty_queries="error")


def test_a_bad_value_is_refused_before_any_work(corpus) -> None:
    run, qrels = corpus
    with pytest.raises(ValueError, match="empty_queries must be one of 'zero', 'one'"):
        pr.evaluate(run.lazy(), qrels, MEASURES, empty_queries="drop")
    with pytest.raises(ValueError, match="empty_queries must be one of"):
        pr.evaluate_judged(pr.judge(run, qrels), MEASURES, empty_queries="none")


def test_evaluate_judged_takes_it_too(corpus) -> None:
    run, qrels = corpus
    judged = quietly(pr.judge, run, qrels)
    for empty in ("zero", "one", "skip"):
        got = quietly(pr.evaluate_judged, judged, MEASURES, empty_queries=empty)
        expected = quietly(pr.evaluate, run, qrels, MEASURES, empty_queries=empty)
        assert got.select(expected.columns).equals(expected)
