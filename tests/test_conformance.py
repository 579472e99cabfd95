"""Per-query values equal trec_eval's (pytrec-eval-terrier) on random corpora.

The corpora have heavy score ties, string ids of mixed length and case, graded
and negative grades, queries with no relevant document, run queries without
qrels, qrels queries absent from the run, and runs shorter than the cutoffs.
"""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest
from corpus import mismatches, pytrec_reference, random_corpus
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import polars_rankeval as pr

CORE = ["AP", "AP@10", "P@5", "P@10", "R@10", "R@100", "RR", "nDCG", "nDCG@10", "Rprec"]
EXTRA = ["Success@1", "Success@5", "NumRet", "NumRel", "NumRelRet", "AP@3", "nDCG@3", "P@1"]


def scored(run: pl.DataFrame, qrels: pl.DataFrame, measures, **kw) -> pl.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        return pr.evaluate(run, qrels, measures, **kw)


@pytest.mark.parametrize("rel_level", [1, 2])
@pytest.mark.parametrize("seed", range(12))
def test_random_corpora_match_trec_eval(seed, rel_level):
    run, qrels = random_corpus(seed, n_queries=30)
    measures = CORE + EXTRA
    ours = scored(run, qrels, measures, rel_level=rel_level)
    assert ours.height > 0
    assert mismatches(ours, pytrec_reference(run, qrels, measures, rel_level), measures) == []


@pytest.mark.parametrize("seed", [100, 101])
def test_many_systems_match_trec_eval_each(seed):
    run, qrels = random_corpus(seed, n_queries=20, systems=3)
    ours = scored(run, qrels, CORE)
    for (name,), part in run.group_by("system"):
        mine = ours.filter(pl.col("system") == name).drop("system")
        assert mismatches(mine, pytrec_reference(part.drop("system"), qrels, CORE), CORE) == []


def test_integer_ids_match_trec_eval():
    run, qrels = random_corpus(7, n_queries=20)
    codes = {d: i for i, d in enumerate(sorted(set(run["doc"]) | set(qrels["doc"])))}
    to_int = pl.col("doc").replace_strict(codes, return_dtype=pl.Int64)
    run_i, qrels_i = run.with_columns(to_int), qrels.with_columns(to_int)
    ours = scored(run_i, qrels_i, CORE)
    assert mismatches(ours, pytrec_reference(run_i, qrels_i, CORE), CORE) == []


def test_row_order_and_monotone_scores_change_nothing():
    run, qrels = random_corpus(3, n_queries=25)
    expected = scored(run, qrels, CORE)
    shuffled = run.sample(fraction=1.0, shuffle=True, seed=1)
    assert_frame_equal(
        scored(shuffled, qrels.sample(fraction=1.0, shuffle=True, seed=2), CORE), expected
    )
    transformed = run.with_columns(score=pl.col("score") * 3.0 + 7.0)
    assert_frame_equal(scored(transformed, qrels, CORE), expected)
    assert_frame_equal(scored(run.with_columns(score=pl.col("score").exp()), qrels, CORE), expected)


def test_lazy_and_eager_paths_agree():
    run, qrels = random_corpus(4, n_queries=25, systems=2)
    eager = scored(run, qrels, CORE)
    with pytest.warns(pr.UnscoredQueriesWarning):
        lazy = pr.evaluate(run.lazy(), qrels.lazy(), CORE).collect()
    assert_frame_equal(lazy, eager)
    with pytest.warns(pr.UnscoredQueriesWarning):
        streaming = pr.evaluate(run.lazy(), qrels.lazy(), CORE).collect(engine="streaming")
    assert_frame_equal(streaming, eager)


def test_missing_zero_matches_trec_eval_c():
    run, qrels = random_corpus(5, n_queries=30)
    ours = scored(run, qrels, CORE, missing="zero")
    reference = pytrec_reference(run, qrels, CORE)
    absent = set(qrels["query"].unique()) - set(run["query"].unique())
    assert absent, "the corpus should have qrels queries missing from the run"
    for q in absent:  # trec_eval -c: an empty ranking scores 0 on every core measure
        reference[q] = dict.fromkeys(CORE, 0.0)
    assert mismatches(ours, reference, CORE) == []


@st.composite
def tiny_corpus(draw):
    n_docs = draw(st.integers(1, 12))
    docs = draw(
        st.lists(
            st.text("ab1Z-", min_size=1, max_size=4), min_size=n_docs, max_size=n_docs, unique=True
        )
    )
    n_ret = draw(st.integers(1, n_docs))
    scores = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, -2.0]), min_size=n_ret, max_size=n_ret))
    grades = draw(
        st.lists(st.sampled_from([None, -1, 0, 1, 2, 3]), min_size=n_docs, max_size=n_docs)
    )
    run = pl.DataFrame({"query": ["q"] * n_ret, "doc": docs[:n_ret], "score": scores})
    judged = [(d, g) for d, g in zip(docs, grades, strict=True) if g is not None]
    if all(g < 0 for _, g in judged):
        # trec_eval's ndcg_cut loops forever on a query whose qrels are all negative
        # (no judged level >= 0), so such input is outside what the reference accepts.
        judged.append((docs[-1] + "x", 0))
    qrels = pl.DataFrame(
        {
            "query": ["q"] * len(judged),
            "doc": [d for d, _ in judged],
            "relevance": [g for _, g in judged],
        }
    )
    return run, qrels


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpus=tiny_corpus(), rel_level=st.sampled_from([1, 2]))
def test_hypothesis_small_rankings_match_trec_eval(corpus, rel_level):
    run, qrels = corpus
    measures = CORE + EXTRA
    ours = scored(run, qrels, measures, rel_level=rel_level)
    assert mismatches(ours, pytrec_reference(run, qrels, measures, rel_level), measures) == []


def test_values_are_bounded():
    run, qrels = random_corpus(9, n_queries=30)
    out = scored(run, qrels, CORE)
    values = out.select(CORE).to_numpy()
    assert np.all((values >= 0) & (values <= 1))
