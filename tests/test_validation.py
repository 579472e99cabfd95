"""Bad input gets a clear error before any work; nothing is lost or modified."""

from __future__ import annotations

import math

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_rankeval as pr

RUN = pl.DataFrame({"query": ["q1", "q1", "q2"], "doc": ["a", "b", "c"], "score": [2.0, 1.0, 1.0]})
QRELS = pl.DataFrame({"query": ["q1", "q2"], "doc": ["a", "c"], "relevance": [1, 2]})


def evaluate(run=RUN, qrels=QRELS, measures=("AP",), **kw):
    return pr.evaluate(run, qrels, list(measures), **kw)


@pytest.mark.parametrize(
    ("run", "qrels", "kw", "error", "pattern"),
    [
        (RUN.drop("score"), QRELS, {}, ValueError, r"run is missing column 'score'.*score="),
        (
            RUN,
            QRELS.drop("relevance"),
            {},
            ValueError,
            r"qrels is missing column 'relevance'.*relevance=",
        ),
        (RUN.rename({"doc": "docno"}), QRELS, {}, ValueError, r"missing column 'doc'.*'docno'"),
        (
            RUN.with_columns(pl.col("score").cast(pl.String)),
            QRELS,
            {},
            TypeError,
            r"'score' must be numeric.*Got dtype String",
        ),
        (
            RUN.with_columns(score=pl.Series([1.0, math.nan, 2.0])),
            QRELS,
            {},
            ValueError,
            r"run row 1 \(0-based\) has a NaN score",
        ),
        (
            RUN.with_columns(score=pl.Series([1.0, None, 2.0])),
            QRELS,
            {},
            ValueError,
            r"run row 1 \(0-based\) has a null score",
        ),
        (
            RUN.with_columns(query=pl.Series(["q1", None, "q2"])),
            QRELS,
            {},
            ValueError,
            r"run row 1 \(0-based\) has a null 'query'",
        ),
        (
            RUN,
            QRELS.with_columns(doc=pl.Series([None, "c"])),
            {},
            ValueError,
            r"qrels row 0 \(0-based\) has a null 'doc'",
        ),
        (
            RUN,
            QRELS.with_columns(relevance=pl.Series([1.5, 2.0])),
            {},
            ValueError,
            r"qrels has a grade 'relevance' that is not an integer \(1.5, query='q1', doc='a'\)",
        ),
        (
            RUN,
            QRELS.with_columns(relevance=pl.Series(["1", "2"])),
            {},
            TypeError,
            r"'relevance' must hold integer relevance grades.*String",
        ),
        (
            RUN,
            QRELS.with_columns(relevance=pl.Series([None, 2])),
            {},
            ValueError,
            r"qrels row 0 \(0-based\) has a null grade",
        ),
        (
            pl.concat([RUN, RUN.head(1)]),
            QRELS,
            {},
            ValueError,
            r"run has duplicate rows for \(query='q1', doc='a'\).*duplicates='keep_best'",
        ),
        (
            RUN,
            pl.concat([QRELS, QRELS.head(1)]),
            {},
            ValueError,
            r"qrels has duplicate rows for \(query='q1', doc='a'\)",
        ),
        (
            RUN.with_columns(doc=pl.Series([1.0, 2.0, 3.0])),
            QRELS,
            {},
            TypeError,
            r"Column 'doc' is Float64 in the run and String in qrels",
        ),
        (RUN, QRELS, {"measures": ["APP"]}, ValueError, r"Unknown measure 'APP'.*Did you mean"),
        (RUN, QRELS, {"measures": ["ndcg_cutt_10"]}, ValueError, r"Unknown measure"),
        (RUN, QRELS, {"measures": ["P@0"]}, ValueError, r"cutoff of P must be >= 1"),
        (RUN, QRELS, {"measures": ["P@-3"]}, ValueError, r"cutoff of P must be >= 1"),
        (RUN, QRELS, {"measures": ["RelP"]}, ValueError, r"RelP needs a cutoff"),
        (RUN, QRELS, {"measures": []}, ValueError, r"No measures given"),
        (
            RUN,
            QRELS,
            {"missing": "skip"},
            ValueError,
            r"missing must be one of 'drop', 'zero', 'error'. Got 'skip'",
        ),
        (
            RUN,
            QRELS,
            {"order": "random"},
            ValueError,
            r"order must be one of 'score', 'rank', 'presorted'. Got 'random'",
        ),
        (
            RUN,
            QRELS,
            {"duplicates": "first"},
            ValueError,
            r"duplicates must be one of 'error', 'keep_best'. Got 'first'",
        ),
        (
            {"query": ["q"]},
            QRELS,
            {},
            TypeError,
            r"run as a dict must map each query to a \{doc: value\} dict. Query 'query' maps",
        ),
    ],
)
def test_bad_input_is_named(run, qrels, kw, error, pattern):
    with pytest.raises(error, match=pattern):
        evaluate(run, qrels, **kw)


def test_lazy_inputs_are_checked_as_they_are_read():
    """A LazyFrame's data is checked during its one pass: when the result is collected."""
    bad = pl.concat([RUN, RUN.head(1)]).lazy()
    planned = evaluate(bad, QRELS.lazy())
    with pytest.raises(ValueError, match="duplicate rows"):
        planned.collect()
    null_system = RUN.with_columns(system=pl.Series(["a", None, "a"])).lazy()
    with pytest.raises(ValueError, match=r"run row 1 \(0-based\) has a null 'system'"):
        evaluate(null_system, QRELS).collect()
    assert evaluate(bad, QRELS, validate=False).collect().height == 2  # trusted, unchecked


def test_schema_checked_for_lazy_inputs_without_collecting():
    with pytest.raises(ValueError, match="missing column 'score'"):
        evaluate(RUN.drop("score").lazy(), QRELS.lazy())


def test_duplicates_keep_best_keeps_highest_score():
    dup = pl.concat([RUN, pl.DataFrame({"query": ["q1"], "doc": ["a"], "score": [-5.0]})])
    kept = evaluate(dup, QRELS, ["AP", "NumRet"], duplicates="keep_best")
    assert_frame_equal(kept, evaluate(RUN, QRELS, ["AP", "NumRet"]))


def test_infinite_scores_are_ordered():
    run = RUN.with_columns(score=pl.Series([-math.inf, math.inf, 1.0]))
    out = evaluate(run, QRELS, ["RR"])
    assert out["RR"].to_list() == [0.5, 1.0]  # "a" (relevant) is ranked below "b" (+inf)


def test_integral_float_grades_accepted():
    floats = QRELS.with_columns(pl.col("relevance").cast(pl.Float64))
    assert_frame_equal(evaluate(RUN, floats, ["nDCG", "AP"]), evaluate(RUN, QRELS, ["nDCG", "AP"]))


def test_integer_and_string_ids_are_matched_as_strings():
    run = pl.DataFrame({"query": [1, 1], "doc": [10, 20], "score": [2.0, 1.0]})
    qrels = pl.DataFrame({"query": ["1"], "doc": ["20"], "relevance": [1]})
    assert evaluate(run, qrels, ["RR"])["RR"].to_list() == [0.5]


def test_empty_run_gives_empty_result_with_columns():
    empty = RUN.clear()
    out = evaluate(empty, QRELS, ["AP", "P@5"])
    assert out.height == 0
    assert out.columns == ["query", "AP", "P@5"]
    zero = evaluate(empty, QRELS, ["AP", "NumRel"], missing="zero")
    assert zero.sort("query").rows() == [("q1", 0.0, 1.0), ("q2", 0.0, 1.0)]


def test_inputs_unchanged_after_evaluation_in_every_mode():
    run, qrels = RUN.clone(), QRELS.clone()
    for kw in ({}, {"missing": "zero"}, {"order": "presorted"}, {"duplicates": "keep_best"}):
        evaluate(run, qrels, ["AP", "nDCG@5"], **kw)
    assert_frame_equal(run, RUN)
    assert_frame_equal(qrels, QRELS)


def test_unscored_queries_warning_names_them():
    run = pl.concat([RUN, pl.DataFrame({"query": ["q7"], "doc": ["z"], "score": [1.0]})])
    with pytest.warns(pr.UnscoredQueriesWarning, match=r"1 run queries have no qrels.*q7"):
        evaluate(run, QRELS)
