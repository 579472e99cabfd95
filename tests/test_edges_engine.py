"""Engine edges of issue 37 ("nothing silently wrong"): grade dtypes, the system
column's default, per-system ``missing="error"``, and ``n_rel`` checks."""

from __future__ import annotations

import polars as pl
import pytest
from corpus import random_corpus
from polars.testing import assert_frame_equal
from test_engine import SAMPLES

import polars_rankeval as pr
from polars_rankeval.measures import REGISTRY, parse

ONE_PER_FAMILY = list({parse(name).family.name: name for name in reversed(SAMPLES)}.values())
"""The first sample name of each measure family."""

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

GRADE_DTYPES = [pl.Boolean, pl.Int8, pl.UInt8, pl.Float64]


def binary_corpus(systems: int = 2) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A run and qrels of grades 0 and 1 (Int64), several systems."""
    return random_corpus(3, n_queries=12, grades=(0, 0, 1), systems=systems)


def test_one_sample_per_family():
    engine = {name for name, f in REGISTRY.items() if not (f.over_lists or f.over_catalog)}
    assert {parse(name).family.name for name in ONE_PER_FAMILY} == engine


@pytest.mark.parametrize("lazy", [False, True], ids=["frame", "lazy-buckets"])
@pytest.mark.parametrize("dtype", GRADE_DTYPES, ids=str)
@pytest.mark.parametrize("measure", ONE_PER_FAMILY)
def test_grade_dtypes_score_as_int64(measure, dtype, lazy):
    run, qrels = binary_corpus()
    cast = qrels.with_columns(pl.col("relevance").cast(dtype))
    want = pr.evaluate(run, qrels, [measure])
    if lazy:
        got = pr.evaluate(run.lazy(), cast, [measure], memory_limit=1).collect()
    else:
        got = pr.evaluate(run, cast, [measure])
    assert_frame_equal(got, want)


@pytest.mark.parametrize("dtype", GRADE_DTYPES, ids=str)
def test_grade_dtypes_judge_and_judged(dtype):
    run, qrels = binary_corpus()
    cast = qrels.with_columns(pl.col("relevance").cast(dtype))
    measures = ["AP", "P@5", "nDCG", "RR"]
    want = pr.evaluate(run, qrels, measures)
    judged = pr.judge(run, cast)
    got = pr.evaluate_judged(judged, measures)
    assert_frame_equal(got.select(want.columns), want, check_dtypes=False)
    lazy = pr.evaluate_judged(pr.judge(run.lazy(), cast.lazy()), measures).collect()
    assert_frame_equal(lazy.select(want.columns), want, check_dtypes=False)


@pytest.mark.parametrize("lazy", [False, True], ids=["frame", "lazy"])
def test_rank_run_ranks_each_system_by_default(lazy):
    run, _ = binary_corpus(systems=3)
    ranked = pr.rank_run(run.lazy() if lazy else run)
    ranked = ranked.collect() if lazy else ranked
    want = pr.rank_run(run, system="system")
    assert_frame_equal(ranked, want, check_row_order=False)
    assert ranked.select(pl.struct("system", "query", "doc").is_duplicated().any()).item() is False
    longest = run.group_by("system", "query").len()["len"].max()
    assert ranked["rank"].max() == longest


def test_rank_run_without_a_system_column_is_one_system():
    run = pl.DataFrame({"query": ["q", "q"], "doc": ["a", "b"], "score": [1.0, 2.0]})
    ranked = pr.rank_run(run)
    assert ranked.columns == ["query", "doc", "rank"]
    assert ranked.sort("rank")["doc"].to_list() == ["b", "a"]


def _lacking_run() -> tuple[pl.DataFrame, pl.DataFrame]:
    """System b lacks query q2, which system a has; both have q1."""
    run = pl.DataFrame(
        {
            "system": ["a", "a", "b"],
            "day": ["mon", "mon", "mon"],
            "query": ["q1", "q2", "q1"],
            "doc": ["x", "y", "x"],
            "score": [1.0, 1.0, 1.0],
        }
    )
    qrels = pl.DataFrame({"query": ["q1", "q2"], "doc": ["x", "y"], "relevance": [1, 1]})
    return run, qrels


@pytest.mark.parametrize("by", [None, "day"])
@pytest.mark.parametrize("way", ["frame", "lazy-buckets", "pieces"])
def test_missing_error_is_per_system(way, by):
    run, qrels = _lacking_run()
    with pytest.raises(ValueError, match=r"(?s)system.*'b'.*q2") as raised:
        if way == "frame":
            pr.evaluate(run, qrels, ["AP"], missing="error", by=by)
        elif way == "lazy-buckets":
            pr.evaluate(run.lazy(), qrels, ["AP"], missing="error", by=by, memory_limit=1).collect()
        else:
            from polars_rankeval import pieces

            options = {"missing": "error", "by": by}
            job = pieces.prepare(run.schema, qrels.schema, ["AP"], options)
            job = job.with_systems([run["system"]])
            scored = [pieces.score(run, qrels, job)]
            pieces.combine(scored, job, run_rows=run.height, qrels_rows=qrels.height)
    assert "'a'" not in str(raised.value)


def test_missing_error_per_segment_as_zero_scores():
    run, qrels = _lacking_run()
    run = run.with_columns(day=pl.Series(["mon", "tue", "mon"]))  # q2 asked on tuesday only
    zero = pr.evaluate(run, qrels, ["AP"], missing="zero", by="day")
    keys = ["day", "system", "query"]
    added = zero.join(run.select(keys), on=keys, how="anti")
    assert added.select(keys).rows() == [("tue", "b", "q2")]
    with pytest.raises(ValueError, match=r"(?s)'tue'.*'b'.*q2"):
        pr.evaluate(run, qrels, ["AP"], missing="error", by="day")
    complete = run.vstack(pl.DataFrame([{"system": "b", "day": "tue", "query": "q2",
                                         "doc": "y", "score": 1.0}]))  # fmt: skip
    assert pr.evaluate(complete, qrels, ["AP"], missing="error", by="day").height == 4


def _judged(n_rel: list[int | None]) -> pl.DataFrame:
    """Ranking (s, q1): three relevant rows shown; ranking (s, q2): one."""
    return pl.DataFrame(
        {
            "system": ["s"] * 5,
            "query": ["q1", "q1", "q1", "q2", "q2"],
            "rank": [1, 2, 3, 1, 2],
            "relevance": [1, 1, 1, 1, 0],
            "n_rel": n_rel,
        }
    )


@pytest.mark.parametrize("lazy", [False, True], ids=["frame", "lazy"])
@pytest.mark.parametrize(
    ("n_rel", "match"),
    [
        ([1, 1, 1, 5, 5], r"(?s)'n_rel' is 1 .*'q1'.*3 relevant"),
        ([3, 3, 3, -1, -1], r"(?s)'n_rel' is -1 .*'q2'"),
        ([3, 4, 3, 5, 5], r"(?s)'n_rel'.*q1.*3.*4"),
    ],
    ids=["below-shown", "negative", "varying"],
)
def test_evaluate_judged_refuses_impossible_n_rel(n_rel, match, lazy):
    judged = _judged(n_rel)
    with pytest.raises(ValueError, match=match):
        if lazy:
            pr.evaluate_judged(judged.lazy(), ["AP", "NumRel"], n_rel="n_rel").collect()
        else:
            pr.evaluate_judged(judged, ["AP", "NumRel"], n_rel="n_rel")


def test_evaluate_judged_takes_possible_n_rel():
    got = pr.evaluate_judged(_judged([3, 3, 3, 4, 4]), ["NumRel", "R@3"], n_rel="n_rel")
    assert got.rows() == [("s", "q1", 3.0, 1.0), ("s", "q2", 4.0, 0.25)]
    nulls = pr.evaluate_judged(_judged([None] * 5), ["NumRel"], n_rel="n_rel")
    assert nulls["NumRel"].to_list() == [3.0, 1.0]
    higher = pr.evaluate_judged(_judged([1, 1, 1, 1, 1]), ["NumRel"], n_rel="n_rel", rel_level=2)
    assert higher["NumRel"].to_list() == [1.0, 1.0]  # no row is relevant at level 2
