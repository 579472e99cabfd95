"""Diversity measures with what ``evaluate`` has (issue 36): many systems, segments
(``by=``), ``depth``, ``missing`` per system, the same data checks, lazy input, and
cutoffs that cost nothing beyond a ranking's length; the values stay ndeval's."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal
from test_diversity import NAMES, ndeval_values, subtopic_corpus
from test_ir_measures import ranked_scores

import polars_rankeval as pr
from polars_rankeval.diversity import ideal_ideal, parse_diversity


def systems_corpus(seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Three systems (ties within each), two segments, one system lacking a query."""
    run, qrels = subtopic_corpus(seed)
    rng = np.random.default_rng(seed)
    parts = []
    for s in range(3):
        noisy = run.with_columns(
            score=(pl.col("score") + pl.Series(rng.integers(0, 3, run.height) / 2)),
            system=pl.lit(f"sys{s}"),
        )
        parts.append(noisy)
    many = pl.concat(parts).with_columns(
        day=pl.when(pl.col("query").str.slice(1).cast(pl.Int64) % 2 == 0)
        .then(pl.lit("mon"))
        .otherwise(pl.lit("tue"))
    )
    lacking = sorted(set(run["query"]) & set(qrels["query"]))[0]
    many = many.filter(~((pl.col("system") == "sys2") & (pl.col("query") == lacking)))
    return many, qrels


def by_ranking(frame: pl.DataFrame, keys: list[str]) -> dict[tuple, dict[str, float]]:
    return {
        tuple(r[k] for k in keys): {n: r[n] for n in frame.columns if n not in keys}
        for r in frame.iter_rows(named=True)
    }


@pytest.mark.parametrize("by", [None, "day"])
def test_each_system_and_segment_equals_its_own_run_and_ndeval(by) -> None:
    run, qrels = systems_corpus(4)
    keys = [*([by] if by else []), "system", "query"]
    got = by_ranking(pr.evaluate_diversity(run, qrels, NAMES, by=by, missing="zero"), keys)
    for (system,), part in run.partition_by("system", as_dict=True).items():
        alone = pr.evaluate_diversity(part.drop("system", "day"), qrels, NAMES, missing="zero")
        for r in alone.iter_rows(named=True):
            segments = [] if by is None else part.filter(pl.col("query") == r["query"])[by]
            if by and not len(segments):  # a qrels query absent from the run: scored in
                continue  # no segment, as missing="zero" has it with by= (scope's rule)
            key = (*([segments[0]] if by else []), system, r["query"])
            for name in NAMES:
                column = str(parse_diversity(name))
                assert got[key][column] == pytest.approx(r[column], abs=1e-12), (key, name)
        theirs = ndeval_values(ranked_scores(part.drop("system", "day")), qrels)
        for (query, name), value in theirs.items():
            key = (*([None] if by else []), system, query)
            if by:
                rows = part.filter(pl.col("query") == query)
                if not rows.height:
                    continue
                key = (rows[by][0], system, query)
            expected = 0.0 if math.isnan(value) else value
            assert got[key][str(parse_diversity(name))] == pytest.approx(expected, abs=1e-9)


def test_missing_is_decided_per_system() -> None:
    run, qrels = systems_corpus(5)
    lacking = sorted(set(run["query"]) & set(qrels["query"]))[0]
    zero = pr.evaluate_diversity(run, qrels, ["alpha_nDCG@10"], missing="zero")
    row = zero.filter((pl.col("system") == "sys2") & (pl.col("query") == lacking))
    assert row["alpha_nDCG@10"].to_list() == [0.0]
    drop = pr.evaluate_diversity(run, qrels, ["alpha_nDCG@10"])
    assert drop.filter((pl.col("system") == "sys2") & (pl.col("query") == lacking)).height == 0
    with pytest.raises(ValueError, match=f"system='sys2': .*{lacking}"):
        pr.evaluate_diversity(
            run.filter(pl.col("query").is_in(list(set(qrels["query"])))),
            qrels.filter(pl.col("query").is_in(list(set(run["query"])))),
            ["alpha_nDCG@10"],
            missing="error",
        )


def test_depth_equals_the_truncated_run_and_ndeval() -> None:
    run, qrels = subtopic_corpus(6)
    ranked = ranked_scores(run)
    top = ranked.filter(pl.col("score") > pl.len().over("query") - 5)  # each query's top 5
    got = pr.evaluate_diversity(ranked, qrels, NAMES, depth=5, missing="zero")
    expected = pr.evaluate_diversity(top, qrels, NAMES, missing="zero")
    assert_frame_equal(got, expected, abs_tol=1e-12)  # the same sums in another order
    theirs = ndeval_values(top, qrels)
    ours = by_ranking(got, ["query"])
    for (query, name), value in theirs.items():
        want = 0.0 if math.isnan(value) else value
        assert ours[(query,)][str(parse_diversity(name))] == pytest.approx(want, abs=1e-9)


def test_lazy_and_pandas_inputs_equal_the_dataframe() -> None:
    run, qrels = systems_corpus(7)
    expected = pr.evaluate_diversity(run, qrels, NAMES[:6], by="day")
    lazy = pr.evaluate_diversity(run.lazy(), qrels.lazy(), NAMES[:6], by="day")
    assert isinstance(lazy, pl.LazyFrame)  # lazy in, lazy out
    assert lazy.collect().equals(expected)
    assert pr.evaluate_diversity(run.to_pandas(), qrels, NAMES[:6], by="day").equals(expected)


def test_compare_and_summarize_take_the_output() -> None:
    run, qrels = systems_corpus(8)
    per_query = pr.evaluate_diversity(run, qrels, ["alpha_nDCG@10", "ERR_IA@10"], missing="zero")
    table = pr.compare(per_query, "alpha_nDCG@10", baseline="sys0", test="t")
    assert table.height == 2 and table["p_value"].is_not_null().all()
    summary = pr.summarize(per_query)
    assert set(summary["measure"]) == {"alpha_nDCG@10", "ERR_IA@10"}


BASE = {"query": ["q", "q", "q"], "doc": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]}
SUBTOPICS = pl.DataFrame(
    {"query": ["q"] * 3, "subtopic": [1, 1, 2], "doc": ["a", "b", "c"], "relevance": [1, 1, 1]}
)


@pytest.mark.parametrize(
    ("run", "qrels", "error", "message"),
    [
        (BASE | {"score": [3.0, float("nan"), 1.0]}, SUBTOPICS, ValueError, "row 1 .* NaN score"),
        (BASE | {"score": [3.0, None, 1.0]}, SUBTOPICS, ValueError, "row 1 .* null score"),
        (BASE | {"doc": ["a", None, "c"]}, SUBTOPICS, ValueError, "row 1 .* null 'doc'"),
        (BASE, SUBTOPICS.with_columns(relevance=pl.lit("1")), TypeError, "integer relevance"),
        (BASE, SUBTOPICS.with_columns(relevance=pl.lit(0.5)), ValueError, "not an integer"),
        (BASE, pl.concat([SUBTOPICS, SUBTOPICS.head(1)]), ValueError, "qrels has duplicate"),
    ],
)
def test_bad_values_are_refused_as_evaluate_refuses_them(run, qrels, error, message) -> None:
    """They were ranked or read silently (a NaN score ranked first, a 0.5 grade read as
    relevant) or ended in a raw ComputeError (a string grade)."""
    with pytest.raises(error, match=message):
        pr.evaluate_diversity(pl.DataFrame(run), qrels, ["alpha_nDCG@3"])


def test_cutoffs_cost_nothing_past_the_ranking() -> None:
    """alpha_nDCG@1e8 took 58 s on 4 rows and @1e11 did not end: the normaliser's sum
    stops once its terms no longer change it."""
    run, qrels = pl.DataFrame(BASE), SUBTOPICS
    far = pr.evaluate_diversity(run, qrels, ["alpha_nDCG@100000000000", "ERR_IA@10000000000"])
    near = pr.evaluate_diversity(run, qrels, ["alpha_nDCG@3000", "ERR_IA@3000"])
    assert far.row(0)[1:] == pytest.approx(near.row(0)[1:], rel=1e-15)
    big = pr.evaluate_diversity(run, qrels, ["alpha_DCG(alpha=0)@100000000000"])
    expected = (1 + 1 / math.log2(3) + 1 / math.log2(4)) / (2 * ideal_ideal(0.0, 10**11, "log"))
    assert big.row(0)[1] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("k", [1, 7, 1 << 20, 3_000_000])
def test_the_normaliser_equals_its_sum_term_by_term(k) -> None:
    i = np.arange(1, k + 1, dtype=np.float64)
    for alpha in (0.0, 0.25, 0.5):
        weights = (1.0 - alpha) ** (i - 1)
        log = float(np.sum(weights / np.log2(i + 1)))
        reciprocal = float(np.sum(weights / i))
        assert ideal_ideal(alpha, k, "log") == pytest.approx(log, rel=1e-12)
        assert ideal_ideal(alpha, k, "reciprocal") == pytest.approx(reciprocal, rel=1e-12)


def test_the_ideal_as_joins_equals_the_dense_steps(monkeypatch) -> None:
    """Past its cells budget the greedy ideal runs as Polars joins: the same values."""
    from polars_rankeval import subtopics

    run, qrels = systems_corpus(9)
    dense = pr.evaluate_diversity(run, qrels, NAMES, missing="zero")
    monkeypatch.setattr(subtopics, "_IDEAL_CELLS", 0)
    joined = pr.evaluate_diversity(run, qrels, NAMES, missing="zero")
    assert_frame_equal(joined, dense, abs_tol=1e-12)
