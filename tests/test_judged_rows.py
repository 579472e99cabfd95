"""The judged-only path (:mod:`polars_rankeval.judged_rows`) equals the general one.

``evaluate`` takes that path for a DataFrame run when every measure has a
``min_grade``; a LazyFrame run always takes the general path (one sort of the
whole run). The two must agree exactly whatever the layout of the run: rows
shuffled so rankings are not contiguous, several systems, cutoffs by depth,
missing queries, special floats, and scores so close that only the exact tie
stage can order them.
"""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest
from corpus import mismatches, pytrec_reference, random_corpus
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import polars_rankeval as pr
from polars_rankeval import judged_rows

MEASURES = ["AP", "AP@5", "P@3", "R@5", "RR", "nDCG", "nDCG@3", "Rprec", "NumRel", "NumRelRet"]


def assert_same(fast: pl.DataFrame, general: pl.DataFrame) -> None:
    """Equal ids and ranks; values equal up to float summation order (the general path
    also sums the zero terms of the rows it keeps)."""
    assert_frame_equal(fast, general, check_exact=False, rel_tol=0.0, abs_tol=1e-14)


def both_paths(run: pl.DataFrame, qrels: pl.DataFrame, measures=MEASURES, **kw):
    """(judged-only path, general path) per-query values."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        fast = pr.evaluate(run, qrels, measures, **kw)
    general = pr.evaluate(run.lazy(), qrels.lazy(), measures, **kw).collect()
    return fast, general


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("systems", [1, 3])
@pytest.mark.parametrize(
    "options",
    [{}, {"depth": 4}, {"missing": "zero"}, {"rel_level": 2}, {"order": "rank"}],
    ids=["plain", "depth", "missing-zero", "rel2", "by-rank"],
)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_judged_only_path_equals_general_path(seed, options, systems, shuffle):
    run, qrels = random_corpus(seed, n_queries=25, systems=systems)
    if options.get("order") == "rank":  # ranks that disagree with the scores, with ties
        run = run.with_columns(rank=(pl.col("score") * 7 + pl.col("doc").str.len_bytes()) % 5)
    if shuffle:  # rankings no longer contiguous: ids come from categorical codes
        run = run.sample(fraction=1.0, shuffle=True, seed=seed)
    fast, general = both_paths(run, qrels, **options)
    assert fast.height > 0
    assert_same(fast, general)


def test_judged_only_path_matches_trec_eval():
    for seed in range(4):
        run, qrels = random_corpus(seed + 40, n_queries=30)
        measures = ["AP", "AP@10", "P@5", "P@10", "R@10", "R@100", "RR", "nDCG", "nDCG@10"]
        ours, _ = both_paths(run.sample(fraction=1.0, shuffle=True, seed=seed), qrels, measures)
        assert mismatches(ours, pytrec_reference(run, qrels, measures), measures) == []


@pytest.mark.parametrize("key_bits", [64, 30, 24])
def test_few_bits_for_the_score_are_still_exact(monkeypatch, key_bits):
    """With few bits left for the score most rows share a packed key: the tie stage
    alone orders them, by exact score then doc id, and nothing changes."""
    run, qrels = random_corpus(5, n_queries=30, systems=2, tie_levels=40)
    run = run.with_columns(pl.col("score") * 1e-3 + pl.col("doc").str.len_bytes() * 1e-12)
    expected = both_paths(run, qrels)[1]
    monkeypatch.setattr(judged_rows, "_KEY_BITS", key_bits)
    fast = both_paths(run, qrels)[0]
    assert_same(fast, expected)


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("slice_rows", [1, 37, 500])
def test_work_split_in_slices_changes_nothing(monkeypatch, slice_rows, shuffle):
    """Large runs are packed, sorted and placed slice by slice on several threads
    (whole rankings per slice when they are contiguous): force that on a small run."""
    run, qrels = random_corpus(8, n_queries=40, systems=2)
    if shuffle:
        run = run.sample(fraction=1.0, shuffle=True, seed=3)
    expected = both_paths(run, qrels)[1]
    monkeypatch.setattr(judged_rows, "_SLICE_ROWS", slice_rows)
    assert_same(both_paths(run, qrels)[0], expected)


SPECIAL = [float("inf"), float("-inf"), 0.0, -0.0, 5e-324, -5e-324, 1e308, -1e308, 1.0]


@settings(max_examples=60, deadline=None)
@given(
    scores=st.lists(
        st.one_of(st.sampled_from(SPECIAL), st.floats(allow_nan=False, width=64)),
        min_size=1,
        max_size=40,
    ),
    grades=st.lists(st.integers(-1, 3), min_size=1, max_size=40),
    n_queries=st.integers(1, 3),
)
def test_special_scores_rank_as_on_the_general_path(scores, grades, n_queries):
    n = len(scores)
    run = pl.DataFrame(
        {
            "query": [f"q{i % n_queries}" for i in range(n)],
            "doc": [f"d{i % 7}{i}" for i in range(n)],
            "score": scores,
        }
    )
    qrels = pl.DataFrame(
        {
            "query": [f"q{i % n_queries}" for i in range(len(grades))],
            "doc": [f"d{i % 7}{i}" for i in range(len(grades))],
            "relevance": grades,
        }
    )
    if (qrels["relevance"] < 0).all():  # trec_eval's degenerate case, kept out elsewhere too
        qrels = qrels.with_columns(relevance=pl.lit(0))
    fast, general = both_paths(run, qrels, ["AP", "P@2", "RR", "nDCG@3", "NumRelRet"])
    assert_same(fast, general)


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(st.floats(allow_nan=False, width=64), min_size=1, max_size=50),
    bits=st.integers(0, 62),
)
def test_score_bits_never_swap_two_scores(values, bits):
    """The packed score: descending_key keys, less their minimum, shifted by _fit."""
    x = np.array(values, dtype=np.float64)
    full = judged_rows.descending_key(x.copy())
    low = int(full.min())
    keys = (full - np.uint64(low)) >> np.uint64(judged_rows._fit(low, int(full.max()), bits))
    assert int(keys.max()) < 2**bits or (bits == 0 and int(keys.max()) == 0)
    order = np.argsort(-x, kind="stable")  # descending scores
    assert np.all(np.diff(keys[order].astype(np.float64)) >= 0)
    # all 64 bits: distinct scores, distinct keys (-0.0 is 0.0)
    same = full[:, None] == full[None, :]
    assert np.array_equal(same, x[:, None] == x[None, :])


def test_a_hash_collision_cannot_match_different_documents():
    """Every run row hashes alike here: only the id check tells the true matches."""
    run = pl.DataFrame({"query": ["q", "q", "r"], "doc": ["a", "b", "a"]})
    qrels = pl.DataFrame({"query": ["q", "r", "r"], "doc": ["b", "a", "c"]})
    same_hash = pl.Series([7, 7, 7], dtype=pl.UInt64)
    rows, judgments = judged_rows._matches(run, qrels, same_hash, same_hash, ["query", "doc"])
    assert sorted(zip(rows.tolist(), judgments.tolist(), strict=True)) == [(1, 0), (2, 1)]


@pytest.mark.parametrize("order", [[0, 1, 2, 3], [0, 2, 1, 3]], ids=["contiguous", "interleaved"])
def test_duplicate_rows_are_refused_on_the_judged_only_path(order):
    run = pl.DataFrame(
        {
            "system": ["s", "s", "t", "t"],
            "query": ["q"] * 4,
            "doc": ["a", "a", "a", "b"],
            "score": [1.0, 2.0, 1.0, 0.5],
        }
    )[order]
    qrels = pl.DataFrame({"query": ["q"], "doc": ["a"], "relevance": [1]})
    with pytest.raises(ValueError, match=r"run has duplicate rows for \(system='s', query='q'"):
        pr.evaluate(run, qrels, ["AP"])
    # the same doc in two systems is no duplicate
    fine = run.filter(~((pl.col("system") == "s") & (pl.col("score") == 2.0)))
    assert pr.evaluate(fine, qrels, ["AP"])["AP"].to_list() == [1.0, 1.0]


@pytest.mark.filterwarnings("ignore::polars_rankeval.UnscoredQueriesWarning")
def test_many_chunk_frames_score_as_one_chunk():
    """A frame read from Parquet comes in many chunks; gathers go chunk by chunk."""
    run, qrels = random_corpus(11, n_queries=30, systems=2)
    pieces = [run[i : i + 97] for i in range(0, run.height, 97)]
    chunked = pl.concat(pieces, rechunk=False)
    assert chunked.n_chunks() > 5
    assert_frame_equal(pr.evaluate(chunked, qrels, MEASURES), pr.evaluate(run, qrels, MEASURES))


@settings(max_examples=100, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 6), min_size=1, max_size=6),
    picks=st.lists(st.integers(0, 10_000), max_size=20),
)
def test_gather_sorted_equals_gather(sizes, picks):
    parts = [
        pl.Series([f"v{i}-{j}" for j in range(n)], dtype=pl.String) for i, n in enumerate(sizes)
    ]
    column = pl.concat(parts, rechunk=False)
    if column.len() == 0:
        return
    rows = np.array(sorted({p % column.len() for p in picks}), dtype=np.int64)
    got = judged_rows.gather_sorted(column, rows)
    assert got.to_list() == column.gather(rows).to_list()


@pytest.mark.filterwarnings("ignore::polars_rankeval.UnscoredQueriesWarning")
@pytest.mark.parametrize("shared", [True, False], ids=["same-categories", "own-categories"])
def test_categorical_ids_score_as_strings(shared):
    run, qrels = random_corpus(12, n_queries=20)
    categories = [pl.Categories.random() for _ in range(2)]
    run_c = run.with_columns(pl.col("query", "doc").cast(pl.Categorical(categories[0])))
    qrels_c = qrels.with_columns(
        pl.col("query", "doc").cast(pl.Categorical(categories[0 if shared else 1]))
    )
    got = pr.evaluate(run_c, qrels_c, MEASURES).with_columns(pl.col("query").cast(pl.String))
    assert_frame_equal(got, pr.evaluate(run, qrels, MEASURES))


def _qrels(rows: list[tuple[str, str, int]]) -> pl.DataFrame:
    schema = {"query": pl.String, "doc": pl.String, "relevance": pl.Int64}
    return pl.DataFrame(rows, schema=schema, orient="row")


EDGE_QRELS = {
    "empty": _qrels([]),
    "only-grade-0": _qrels([("q1", "a", 0), ("q3", "z", 0)]),
    "negative-and-missed": _qrels([("q1", "a", -1), ("q1", "x", 2), ("q2", "c", 1)]),
}


@pytest.mark.filterwarnings("ignore::polars_rankeval.UnscoredQueriesWarning")
@pytest.mark.parametrize("missing", ["drop", "zero"])
@pytest.mark.parametrize("case", list(EDGE_QRELS))
def test_edge_qrels_score_as_on_the_general_path(case, missing):
    run = pl.DataFrame({"query": ["q1", "q1", "q2"], "doc": ["a", "b", "c"], "score": [1.0, 2, 3]})
    fast, general = both_paths(run, EDGE_QRELS[case], missing=missing)
    assert_same(fast, general)
    assert_same(*both_paths(run.head(1), EDGE_QRELS[case], missing=missing))


@pytest.mark.filterwarnings("ignore::polars_rankeval.UnscoredQueriesWarning")
def test_one_document_per_ranking():
    run = pl.DataFrame({"query": [f"q{i}" for i in range(300)], "doc": "d", "score": 1.0})
    qrels = _qrels([(f"q{i}", "d", 1) for i in range(0, 300, 3)])
    fast, general = both_paths(run, qrels)
    assert fast.height == 100
    assert_same(fast, general)
