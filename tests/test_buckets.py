"""Lazy runs in bounded memory (:mod:`polars_rankeval.engine.buckets`).

A LazyFrame run is read once, in batches; past an eighth of ``memory_limit``
it is spilled to bucket files by a hash of the query and scored bucket by
bucket. A tiny ``memory_limit`` forces every path here on small real Parquet
files: the values must equal the in-memory ones exactly, and checks must name
the row of the whole input.
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import threading
import warnings
from datetime import date
from pathlib import Path

import polars as pl
import pytest
from corpus import random_corpus
from polars.testing import assert_frame_equal

import polars_rankeval as pr
from polars_rankeval.engine import buckets

MEASURES = ["AP", "nDCG@5", "P@3", "RR", "Bpref", "IPrec@0.5", "NumRet", "GMAP", "Rndcg"]


def in_memory(run: pl.DataFrame, qrels: pl.DataFrame, **kw) -> pl.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        return pr.evaluate(run, qrels, MEASURES, **kw)


def spilled(path: Path, qrels: pl.DataFrame, **kw) -> pl.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        return pr.evaluate(pl.scan_parquet(path), qrels, MEASURES, **kw).collect()


@pytest.fixture
def corpus(tmp_path: Path) -> tuple[pl.DataFrame, pl.DataFrame, Path]:
    run, qrels = random_corpus(31, n_queries=60, systems=3)
    run = run.sample(fraction=1.0, shuffle=True, seed=3)
    path = tmp_path / "run.parquet"
    run.write_parquet(path, row_group_size=500)
    return run, qrels, path


@pytest.mark.parametrize(
    "options",
    [{}, {"missing": "zero"}, {"depth": 5}, {"per_query": False}, {"conventions": "trec_eval-9"}],
    ids=["plain", "missing-zero", "depth", "means", "trec_eval-9"],
)
def test_spilled_buckets_equal_the_in_memory_values(corpus, monkeypatch, options):
    run, qrels, path = corpus
    monkeypatch.setattr(buckets, "BATCH_ROWS", 700)  # several batches
    want = in_memory(run, qrels, **options)
    assert_frame_equal(spilled(path, qrels, memory_limit=64 * 1024, **options), want)
    assert_frame_equal(spilled(path, qrels, **options), want)  # held in memory


def test_spilled_columns_keep_their_types(tmp_path, monkeypatch):
    """Spill files hold the run's columns as they are: a Categorical system, integer
    query ids, Float32 scores and a Date segment come back unchanged (their values
    equal the in-memory ones, by segment)."""
    run, qrels = random_corpus(37, n_queries=50, systems=2)
    day = pl.when(pl.int_range(pl.len()) % 2 == 0).then(date(2026, 11, 30))
    run = run.with_columns(
        pl.col("system").cast(pl.Categorical),
        pl.col("query").str.extract(r"(\d+)").cast(pl.Int32),
        pl.col("score").cast(pl.Float32),
        day.otherwise(date(2026, 12, 1)).alias("day"),
    ).sample(fraction=1.0, shuffle=True, seed=5)
    qrels = qrels.with_columns(pl.col("query").str.extract(r"(\d+)").cast(pl.Int32))
    qrels = qrels.unique(["query", "doc"], keep="first", maintain_order=True)
    path = tmp_path / "typed.parquet"
    run.write_parquet(path, row_group_size=400)
    monkeypatch.setattr(buckets, "BATCH_ROWS", 500)
    spills = count_calls(monkeypatch, buckets._Input, "spill_all")
    want = in_memory(run, qrels, system="system", by=["day"])
    got = spilled(path, qrels, system="system", by=["day"], memory_limit=64 * 1024)
    assert spills[0] >= 1
    assert_frame_equal(got, want)
    assert got.schema["system"] == pl.Categorical
    assert got.schema["day"] == pl.Date


def test_a_bucket_too_large_is_split_again(corpus, monkeypatch, tmp_path):
    run, qrels, path = corpus
    monkeypatch.setattr(buckets, "BATCH_ROWS", 500)
    monkeypatch.setattr(buckets, "BUCKETS", 2)  # few buckets: each over the budget
    seeds = []
    original = buckets.Spill.__post_init__

    def record(self):
        seeds.append(self.seed)
        original(self)

    monkeypatch.setattr(buckets.Spill, "__post_init__", record)
    got = spilled(path, qrels, memory_limit=32 * 1024)
    assert len(set(seeds)) >= 2, "no bucket was split a second time"
    assert_frame_equal(got, in_memory(run, qrels))


def test_small_pieces_take_threads_and_large_ones_do_not(corpus, monkeypatch):
    """Buckets grouped up to half the budget are scored with the engine's threads, a
    bucket past half alone without them; the values are the in-memory ones either way."""
    run, qrels, path = corpus
    monkeypatch.setattr(buckets, "BATCH_ROWS", 500)
    monkeypatch.setattr(buckets, "BUCKETS", 8)
    threads: list[bool] = []
    original = buckets.score_piece

    def record(*args, **kwargs):
        threads.append(kwargs["concurrent"])
        return original(*args, **kwargs)

    monkeypatch.setattr(buckets, "score_piece", record)
    got = spilled(path, qrels, memory_limit=64 * 1024)
    assert set(threads) == {True, False}
    assert_frame_equal(got, in_memory(run, qrels))


@pytest.mark.parametrize("qrels_kind", ["scan", "frame"])
@pytest.mark.parametrize("run_rows", [None, 400], ids=["both-spilled", "only-qrels-spilled"])
def test_qrels_past_the_budget_are_spilled_too(corpus, monkeypatch, tmp_path, run_rows, qrels_kind):
    """A run taken bucket by bucket (shuffled: not read as it comes) takes its qrels by
    bucket too: spilled past the budget, a qrels DataFrame as well (held where it is
    while the run is read, then written by bucket)."""
    run, qrels, path = corpus
    if run_rows is not None:  # a small run, held in memory, against large qrels
        run = run.head(run_rows)
        path = tmp_path / "small.parquet"
        run.write_parquet(path)
    qrels_path = tmp_path / "qrels.parquet"
    qrels.write_parquet(qrels_path, row_group_size=300)
    monkeypatch.setattr(buckets, "BATCH_ROWS", 300)
    spilled_tables = []
    original = buckets._Input.spill_all

    def record(self):
        spilled_tables.append(self.name)
        original(self)

    monkeypatch.setattr(buckets._Input, "spill_all", record)
    limit = buckets.PIECE_SHARE * (run.estimated_size() + 1 if run_rows else 16 * 1024)
    assert qrels.estimated_size() > limit // buckets.PIECE_SHARE  # the qrels do not fit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        given = pl.scan_parquet(qrels_path) if qrels_kind == "scan" else qrels
        got = pr.evaluate(pl.scan_parquet(path), given, MEASURES, memory_limit=limit).collect()
    assert "qrels" in spilled_tables
    assert ("run" in spilled_tables) == (run_rows is None)
    assert got.height > 0
    assert_frame_equal(got, in_memory(run, qrels))


def test_qrels_checks_name_the_row_of_the_whole_input(tmp_path, monkeypatch):
    monkeypatch.setattr(buckets, "BATCH_ROWS", 10)
    run = pl.DataFrame({"query": ["q"], "doc": ["d1"], "score": [1.0]})
    qrels = pl.DataFrame(
        {"query": ["q"] * 30, "doc": [f"d{i}" for i in range(30)], "relevance": [1] * 30}
    ).with_columns(relevance=pl.when(pl.int_range(30) == 27).then(None).otherwise(1))
    path = tmp_path / "qrels.parquet"
    qrels.write_parquet(path)
    with pytest.raises(ValueError, match=r"qrels row 27 \(0-based\)"):
        pr.evaluate(run.lazy(), pl.scan_parquet(path), ["AP"], memory_limit=1024).collect()


def test_spill_files_are_removed(corpus, monkeypatch, tmp_path):
    _, qrels, path = corpus
    spill_root = tmp_path / "spill"
    spill_root.mkdir()
    monkeypatch.setenv("TMPDIR", str(spill_root))
    monkeypatch.setattr(buckets.tempfile, "tempdir", None)
    spilled(path, qrels, memory_limit=64 * 1024)
    assert list(spill_root.iterdir()) == []


def test_checks_name_the_row_of_the_whole_input(tmp_path, monkeypatch):
    monkeypatch.setattr(buckets, "BATCH_ROWS", 10)
    run = pl.DataFrame(
        {"query": ["q"] * 30, "doc": [f"d{i}" for i in range(30)], "score": [1.0] * 30}
    ).with_columns(score=pl.when(pl.int_range(30) == 23).then(float("nan")).otherwise(1.0))
    qrels = pl.DataFrame({"query": ["q"], "doc": ["d1"], "relevance": [1]})
    path = tmp_path / "run.parquet"
    run.write_parquet(path)
    with pytest.raises(ValueError, match=r"run row 23 \(0-based\) has a NaN score"):
        pr.evaluate(pl.scan_parquet(path), qrels, ["AP"], memory_limit=1024).collect()


def test_duplicates_in_different_batches_are_found(tmp_path, monkeypatch):
    monkeypatch.setattr(buckets, "BATCH_ROWS", 4)
    run = pl.DataFrame(
        {"query": ["q"] * 9, "doc": [*"abcdefgh", "a"], "score": [float(i) for i in range(9)]}
    )
    qrels = pl.DataFrame({"query": ["q"], "doc": ["a"], "relevance": [1]})
    path = tmp_path / "run.parquet"
    run.write_parquet(path)
    for limit in (64, None):
        planned = pr.evaluate(pl.scan_parquet(path), qrels, ["AP"], memory_limit=limit)
        with pytest.raises(ValueError, match=r"run has duplicate rows for \(query='q', doc='a'\)"):
            planned.collect()


def test_unscored_queries_are_reported_once_and_missing_error_raises(corpus, monkeypatch):
    _, qrels, path = corpus
    monkeypatch.setattr(buckets, "BATCH_ROWS", 700)
    with pytest.warns(pr.UnscoredQueriesWarning) as caught:
        pr.evaluate(pl.scan_parquet(path), qrels, ["AP"], memory_limit=64 * 1024).collect()
    assert len(caught) == 1
    with pytest.raises(ValueError, match="qrels queries are not in the run"):
        spilled(path, qrels, memory_limit=64 * 1024, missing="error")


@pytest.mark.parametrize(
    ("limit", "expected"),
    [("512MiB", 512 * 2**20), ("2GB", 2 * 10**9), (10**6, 10**6), ("1.5 GiB", 3 * 2**29)],
)
def test_memory_limit_forms(limit, expected):
    assert buckets.memory_bytes(limit) == expected


@pytest.mark.parametrize("bad", [0, -5, "lots", "12 parsecs", True])
def test_bad_memory_limit_is_refused(bad):
    run = pl.LazyFrame({"query": ["q"], "doc": ["a"], "score": [1.0]})
    qrels = pl.DataFrame({"query": ["q"], "doc": ["a"], "relevance": [1]})
    with pytest.raises(ValueError, match="memory_limit must be a positive number of bytes"):
        pr.evaluate(run, qrels, ["AP"], memory_limit=bad)


@pytest.mark.filterwarnings("ignore::polars_rankeval.UnscoredQueriesWarning")
def test_lazy_in_lazy_out_composes_with_later_steps(corpus):
    run, qrels, path = corpus
    planned = pr.evaluate(pl.scan_parquet(path), qrels, MEASURES)
    assert isinstance(planned, pl.LazyFrame)
    assert planned.collect_schema()["AP"] == pl.Float64
    top = planned.filter(pl.col("AP") > 0.5).select("system", "query", "AP").collect()
    want = in_memory(run, qrels).filter(pl.col("AP") > 0.5).select("system", "query", "AP")
    assert_frame_equal(top, want)


@pytest.fixture
def sorted_corpus(tmp_path: Path) -> tuple[pl.DataFrame, pl.DataFrame, Path]:
    """A run with each ranking's rows in one stretch (system, then query, as runs are
    written), the rows of a ranking in their own shuffled order."""
    run, qrels = random_corpus(32, n_queries=60, systems=3)
    shuffled = run.sample(fraction=1.0, shuffle=True, seed=4)
    run = shuffled.sort("system", "query", maintain_order=True)
    path = tmp_path / "sorted.parquet"
    run.write_parquet(path, row_group_size=400)
    return run, qrels, path


def count_calls(monkeypatch, owner, name: str) -> list[int]:
    """Count the calls of ``owner.name`` (a one-element list, for the test to read)."""
    calls = [0]
    original = getattr(owner, name)

    def counted(*args, **kwargs):
        calls[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


@pytest.mark.parametrize("qrels_kind", ["lazy", "frame"])
def test_the_run_and_the_qrels_held_share_one_budget(corpus, monkeypatch, qrels_kind):
    """Each table fits the budget alone, not both together. Lazy qrels are read first
    and held, and the run, left the rest, is spilled; a qrels DataFrame is in memory
    already and leaves the run the whole budget, so the run is held and the qrels are
    spilled to be taken by bucket with it (the run is shuffled)."""
    run, qrels, path = corpus
    run_bytes, qrels_bytes = run.estimated_size(), qrels.estimated_size()
    budget = max(run_bytes, qrels_bytes) + min(run_bytes, qrels_bytes) // 2
    spilled_tables: list[str] = []
    original = buckets._Input.spill_all

    def record(self):
        spilled_tables.append(self.name)
        original(self)

    monkeypatch.setattr(buckets._Input, "spill_all", record)
    given = qrels.lazy() if qrels_kind == "lazy" else qrels
    got = spilled(path, given, memory_limit=buckets.PIECE_SHARE * budget)
    assert spilled_tables == (["run"] if qrels_kind == "lazy" else ["qrels"])
    assert_frame_equal(got, in_memory(run, qrels))


@pytest.mark.parametrize("max_stretches", [1024, 1], ids=["slices", "filtered"])
@pytest.mark.parametrize("qrels_order", ["by-query", "shuffled"])
def test_a_qrels_frame_past_the_budget_is_not_spilled_for_a_run_read_as_it_comes(
    sorted_corpus, monkeypatch, qrels_order, max_stretches
):
    """A qrels DataFrame larger than the budget is already in memory: with a run whose
    rankings come in one stretch each, it is neither spilled nor copied whole; each
    piece takes its queries' rows as slices of it (or filtered, past
    ``MAX_STRETCHES`` stretches), and the values equal the in-memory ones."""
    run, qrels, path = sorted_corpus
    if qrels_order == "by-query":
        qrels = qrels.sort("query")
    else:
        qrels = qrels.sample(fraction=1.0, shuffle=True, seed=6)
    monkeypatch.setattr(buckets, "BATCH_ROWS", 300)
    monkeypatch.setattr(buckets, "MAX_STRETCHES", max_stretches)
    streamed = count_calls(monkeypatch, buckets._Streamed, "score")
    spills = count_calls(monkeypatch, buckets._Input, "spill_all")
    limit = buckets.PIECE_SHARE * (qrels.estimated_size() // 2)
    got = spilled(path, qrels, memory_limit=limit)
    assert streamed[0] > 2 and spills[0] == 0
    assert_frame_equal(got, in_memory(run, qrels))


@pytest.mark.parametrize("missing", ["drop", "zero"])
def test_a_small_run_takes_only_its_queries_rows_of_a_large_qrels_frame(
    corpus, monkeypatch, tmp_path, missing
):
    """A lazy run held whole against a qrels DataFrame past the budget: scored in one
    piece with its queries' qrels rows, nothing spilled; ``missing="zero"`` scores the
    qrels queries the run lacks, so it takes every qrels row, by bucket."""
    run, qrels, _ = corpus
    few = run["query"].unique().sort().head(3).implode()
    run = run.filter(pl.col("query").is_in(few))
    path = tmp_path / "few_queries.parquet"
    run.write_parquet(path)
    spills = count_calls(monkeypatch, buckets._Input, "spill_all")
    scored = count_calls(monkeypatch, buckets._Scorer, "score")
    budget = qrels.estimated_size() // 2  # the qrels do not fit; the run and its rows do
    own = qrels.filter(pl.col("query").is_in(few))
    assert run.estimated_size() + own.estimated_size() < budget
    limit = buckets.PIECE_SHARE * budget
    got = spilled(path, qrels, memory_limit=limit, missing=missing)
    assert_frame_equal(got, in_memory(run, qrels, missing=missing))
    if missing == "zero":
        assert spills[0] == 1  # the qrels
        assert got["query"].n_unique() == qrels["query"].n_unique()
    else:
        assert spills[0] == 0 and scored[0] == 1
        assert got["query"].n_unique() == 3


@pytest.mark.parametrize("missing", ["drop", "zero", "error"])
@pytest.mark.parametrize("limit", [20_000, 100_000, None], ids=["tiny", "between", "default"])
@pytest.mark.parametrize("run_order", ["sorted", "shuffled"])
@pytest.mark.parametrize("qrels_kind", ["frame", "lazy"])
def test_every_path_of_a_lazy_run_gives_the_in_memory_values(
    sorted_corpus, monkeypatch, tmp_path, qrels_kind, run_order, limit, missing
):
    """Whichever way a lazy run is taken (held whole, read as it comes, by bucket; its
    qrels a DataFrame held where it is or a lazy frame held or spilled), its values
    equal the DataFrame path's, for every ``missing``."""
    run, qrels, path = sorted_corpus
    if run_order == "shuffled":
        run = run.sample(fraction=1.0, shuffle=True, seed=8)
        path = tmp_path / "shuffled.parquet"
        run.write_parquet(path, row_group_size=400)
    if missing == "error":  # every qrels query must have rankings
        qrels = qrels.filter(pl.col("query").is_in(run["query"].unique().implode()))
    monkeypatch.setattr(buckets, "BATCH_ROWS", 300)
    given = qrels if qrels_kind == "frame" else qrels.lazy()
    kw = {} if limit is None else {"memory_limit": buckets.PIECE_SHARE * limit}
    got = spilled(path, given, missing=missing, **kw)
    assert_frame_equal(got, in_memory(run, qrels, missing=missing))


@pytest.mark.parametrize("limit", [20_000, 100_000, None], ids=["tiny", "between", "default"])
@pytest.mark.parametrize("run_order", ["sorted", "shuffled"])
@pytest.mark.parametrize("qrels_kind", ["frame", "lazy"])
def test_every_path_of_a_lazy_run_refuses_duplicate_qrels_rows_of_any_query(
    sorted_corpus, monkeypatch, tmp_path, qrels_kind, run_order, limit
):
    """As the DataFrame path does, even for a query the run lacks, whose qrels no piece
    takes (its bucket has no run rows; a piece takes only its queries' rows)."""
    run, qrels, path = sorted_corpus
    if run_order == "shuffled":
        path = tmp_path / "shuffled.parquet"
        run.sample(fraction=1.0, shuffle=True, seed=8).write_parquet(path, row_group_size=400)
    bucket = buckets.query_bucket("query", buckets.BUCKETS)
    taken = set(run.select(bucket)["query"].to_list())
    names = pl.DataFrame({"query": [f"zz{i}" for i in range(200)]})
    names = names.filter(~names.select(bucket)["query"].is_in(list(taken)))
    lacking = names["query"][0]  # a query whose bucket holds no run rows
    twice = pl.DataFrame({"query": [lacking] * 2, "doc": ["d1", "d1"], "relevance": [1, 0]})
    qrels = pl.concat([qrels, twice.cast(qrels.schema)])  # type: ignore[arg-type]
    monkeypatch.setattr(buckets, "BATCH_ROWS", 300)
    refused = rf"qrels has duplicate rows for \(query='{lacking}', doc='d1'\)"
    with pytest.raises(ValueError, match=refused):
        in_memory(run, qrels)
    given = qrels if qrels_kind == "frame" else qrels.lazy()
    kw = {} if limit is None else {"memory_limit": buckets.PIECE_SHARE * limit}
    with pytest.raises(ValueError, match=refused):
        spilled(path, given, **kw)


def test_rows_of_queries_are_the_filtered_rows_in_order(monkeypatch):
    """Slices of the stretches and the filter give the same rows, in the frame's order,
    whatever the order of the frame's query ids."""
    ids = [q for q in "abcacdabcacd" for _ in range(20)]  # 12 stretches of 20 rows
    frame = pl.DataFrame({"q": ids, "row": range(len(ids))})
    stretches = buckets._stretches(frame, "q")
    assert stretches is not None
    assert stretches.height == 12
    for wanted in (["a"], ["b", "a"], ["d", "c"], ["z"], []):
        queries = pl.Series(wanted, dtype=pl.String)
        want = frame.filter(pl.col("q").is_in(wanted))
        assert_frame_equal(buckets._rows_of(frame, stretches, "q", queries), want)
        assert_frame_equal(buckets._rows_of(frame, None, "q", queries), want)
        monkeypatch.setattr(buckets, "MAX_STRETCHES", 0)
        assert_frame_equal(buckets._rows_of(frame, stretches, "q", queries), want)
        monkeypatch.setattr(buckets, "MAX_STRETCHES", 1024)
    with_ints = frame.with_columns(pl.col("row").alias("q"))  # one stretch a row: none kept
    assert buckets._stretches(with_ints, "q") is None
    got = buckets._rows_of(with_ints, None, "q", pl.Series(["3", "140"]))  # compared as strings
    assert got["row"].to_list() == [3, 140]


@pytest.mark.parametrize(
    "options",
    [{}, {"depth": 5}, {"per_query": False}, {"conventions": "trec_eval-9"}, {"missing": "zero"}],
    ids=["plain", "depth", "means", "trec_eval-9", "missing-zero"],
)
def test_contiguous_rankings_are_scored_as_they_are_read(sorted_corpus, monkeypatch, options):
    run, qrels, path = sorted_corpus
    monkeypatch.setattr(buckets, "BATCH_ROWS", 300)
    streamed = count_calls(monkeypatch, buckets._Streamed, "score")
    spills = count_calls(monkeypatch, buckets._Input, "spill_all")
    limit = buckets.PIECE_SHARE * 40_000  # the qrels (31 kB) fit the share, the run (91 kB) not
    got = spilled(path, qrels, memory_limit=limit, **options)
    assert_frame_equal(got, in_memory(run, qrels, **options))
    if options.get("missing") == "zero":  # needs every system first: bucket by bucket
        assert streamed[0] == 0 and spills[0] > 0
    else:
        assert streamed[0] > 1 and spills[0] == 0


def test_a_ranking_that_comes_back_is_read_again_bucket_by_bucket(
    sorted_corpus, monkeypatch, tmp_path
):
    run, qrels, _ = sorted_corpus
    first = run.filter(pl.col("system") == run["system"][0])
    late = first.filter(pl.col("query") == first["query"][0]).head(2)  # its first ranking
    rest = run.join(late, on=["system", "query", "doc"], how="anti", maintain_order="left")
    path = tmp_path / "late.parquet"
    pl.concat([rest, late]).write_parquet(path, row_group_size=400)
    monkeypatch.setattr(buckets, "BATCH_ROWS", 300)
    passes = count_calls(monkeypatch, buckets, "_score_pass")
    streamed = count_calls(monkeypatch, buckets._Streamed, "score")
    got = spilled(path, qrels, memory_limit=buckets.PIECE_SHARE * 40_000)
    assert_frame_equal(got, in_memory(run, qrels))
    assert passes[0] == 2 and streamed[0] > 0  # scored as it came, then again


def test_pieces_read_as_they_come_hold_whole_rankings_and_only_their_queries_qrels(
    sorted_corpus, monkeypatch
):
    """Each piece scored as the run is read (the rows left at the end too) holds whole
    rankings, none of them in two pieces, and only its own queries' qrels rows."""
    run, qrels, path = sorted_corpus
    monkeypatch.setattr(buckets, "BATCH_ROWS", 300)
    seen: list[tuple[pl.DataFrame, pl.DataFrame]] = []
    original = buckets.score_piece

    def recorded(piece_run, piece_qrels, *args, **kwargs):
        seen.append((piece_run, piece_qrels))
        return original(piece_run, piece_qrels, *args, **kwargs)

    monkeypatch.setattr(buckets, "score_piece", recorded)
    got = spilled(path, qrels, memory_limit=buckets.PIECE_SHARE * 40_000)
    assert_frame_equal(got, in_memory(run, qrels))
    assert len(seen) > 2
    rankings = [piece.select("system", "query").unique() for piece, _ in seen]
    every = pl.concat(rankings)
    assert every.height == run.select("system", "query").unique().height  # none in two pieces
    for piece, piece_qrels in seen:
        queries = set(piece["query"])
        assert set(piece_qrels["query"]) <= queries
        assert piece_qrels.height == qrels.filter(pl.col("query").is_in(queries)).height


def test_pieces_read_as_they_come_take_their_qrels_across_id_types(tmp_path, monkeypatch):
    """Integer query ids in the run, strings in the qrels: each piece scored as the run
    is read finds its queries' qrels rows (ids compared as strings), and the values
    equal the in-memory ones."""
    run, qrels = random_corpus(33, n_queries=60, systems=2)
    run = run.filter(pl.col("query").str.contains(r"^\d+$"))
    qrels = qrels.filter(pl.col("query").str.contains(r"^\d+$"))
    run = run.with_columns(pl.col("query").cast(pl.Int64)).sort("system", "query")
    path = tmp_path / "int_queries.parquet"
    run.write_parquet(path, row_group_size=200)
    monkeypatch.setattr(buckets, "BATCH_ROWS", 150)
    streamed = count_calls(monkeypatch, buckets._Streamed, "score")
    limit = buckets.PIECE_SHARE * (qrels.estimated_size() + run.estimated_size() // 3)
    got = spilled(path, qrels, memory_limit=limit)
    assert streamed[0] > 2
    assert_frame_equal(got, in_memory(run, qrels))


def test_rows_held_are_cut_into_pieces_of_whole_rankings():
    """take_complete cuts the rows held into shares of about ``piece_bytes``, each
    moved back to the start of the ranking it falls in (which goes to the next
    piece); a ranking longer than a piece stays whole; the last ranking stays held."""
    budget = buckets.Budget(buckets.PIECE_SHARE << 30)  # room for 1 GiB
    held = buckets._Input("run", "query", budget=budget, folder=Path("unused"))
    queries = ["a"] * 3 + ["b"] * 5 + ["c"] * 12 + ["d"] * 2 + ["e"] * 4
    held.add(pl.DataFrame({"query": queries, "doc": [str(i) for i in range(len(queries))]}))
    total = held.held_bytes
    parts = held.take_complete(["query"], piece_bytes=total // 4 + 1)  # cuts: 6, 13, 19, 26
    assert [p.rows["query"].to_list() for p in parts] == [
        ["a"] * 3,  # the cut at 6 falls in b
        ["b"] * 5,  # at 13, in c
        ["c"] * 12 + ["d"] * 2,  # none at 19 (still c); at 26, in e
    ]
    assert [p.nbytes for p in parts] == [total * 3 // 26, total * 5 // 26, total * 14 // 26]
    assert held.held[0]["query"].to_list() == ["e"] * 4
    assert held.take_complete(["query"], piece_bytes=1) == []  # one ranking held: none


def test_the_last_ranking_is_counted_past_the_window():
    frame = pl.DataFrame({"s": ["x", "x", "y", "y", "y", "y"], "q": ["1", "2", "2", "2", "2", "2"]})
    assert buckets._last_ranking_rows(frame, ["s", "q"], window=2) == 4
    assert buckets._last_ranking_rows(frame, ["q"], window=2) == 5
    assert buckets._last_ranking_rows(frame, ["s", "q"], window=10) == 4


def test_contiguity_is_judged_on_every_ranking_key():
    order = buckets._Contiguity(["system", "query"], limit=1 << 20)
    batch = pl.DataFrame({"system": ["a", "a", "b", "b"], "query": ["1", "1", "1", "2"]})
    assert order.add(batch)
    assert order.add(pl.DataFrame({"system": ["b", "c"], "query": ["2", "1"]}))  # goes on
    assert not order.add(pl.DataFrame({"system": ["a"], "query": ["1"]}))  # comes back
    within = buckets._Contiguity(["query"], limit=1 << 20)
    assert not within.add(pl.DataFrame({"query": ["1", "2", "1"]}))


def test_the_environment_is_left_alone_while_a_lazy_run_is_scored(corpus, monkeypatch):
    """No variable of the process environment is set or removed while a lazy run is
    read, spilled and scored: changing it while Polars runs on another thread (the
    spill written behind, the user's own threads) is not thread-safe, and crashed
    the process (setting Polars' Parquet read-ahead variables did)."""
    _, qrels, path = corpus
    before = dict(os.environ)
    seen: list[dict[str, str]] = []
    for name in ("check_run_rows", "score_piece"):
        original = getattr(buckets, name)

        def record(*args, _original=original, **kwargs):
            seen.append(dict(os.environ))
            return _original(*args, **kwargs)

        monkeypatch.setattr(buckets, name, record)
    spilled(path, qrels, memory_limit=64 * 1024)  # spilled: qrels and run written behind
    spilled(path, qrels)  # held in memory
    assert len(seen) > 4
    assert all(environment == before for environment in seen)
    assert dict(os.environ) == before


def test_a_run_read_from_memory_is_scored_two_pieces_at_once(sorted_corpus, monkeypatch):
    """Pieces of a run read from frames in memory (no reader decoding ahead) are scored
    on the evaluation's worker threads, never more than two at once; a file scan's
    pieces are scored one after the other on the thread that reads it (the one Polars
    runs the deferred evaluation on). The values are the in-memory ones."""
    run, qrels, path = sorted_corpus
    monkeypatch.setattr(buckets, "BATCH_ROWS", 300)
    lock = threading.Lock()
    running, most, threads = [0], [0], []
    original = buckets.score_piece

    def watched(*args, **kwargs):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
            threads.append(threading.current_thread())
        try:
            return original(*args, **kwargs)
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(buckets, "score_piece", watched)
    limit = buckets.PIECE_SHARE * 40_000
    want = in_memory(run, qrels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        got = pr.evaluate(run.lazy(), qrels, MEASURES, memory_limit=limit).collect()
    assert_frame_equal(got, want)
    assert len(threads) > 2 and most[0] <= 2
    assert all(thread.name.startswith("ThreadPoolExecutor") for thread in threads)
    threads.clear()
    most[0] = 0
    assert_frame_equal(spilled(path, qrels, memory_limit=limit), want)
    assert len(threads) > 2 and most[0] == 1 and len(set(threads)) == 1
    assert not threads[0].name.startswith("ThreadPoolExecutor")


def test_an_error_in_a_piece_scored_on_a_worker_thread_is_raised(sorted_corpus, monkeypatch):
    """A duplicate row in the first ranking of a run read from memory: its piece is
    scored on a worker thread while the rest is read, and the error reaches the caller."""
    run, qrels, _ = sorted_corpus
    monkeypatch.setattr(buckets, "BATCH_ROWS", 300)
    doubled = pl.concat([run.head(1), run])
    key = doubled.row(0, named=True)
    planned = pr.evaluate(
        doubled.lazy(), qrels, MEASURES, memory_limit=buckets.PIECE_SHARE * 40_000
    )
    with pytest.raises(ValueError, match=rf"run has duplicate rows for .*query='{key['query']}'"):
        planned.collect()


def test_plans_that_scan_are_read_ahead(tmp_path):
    frame = pl.DataFrame({"query": ["1"], "doc": ["a"], "score": [1.0]})
    frame.write_parquet(tmp_path / "run.parquet")
    frame.write_csv(tmp_path / "run.csv")
    scans = [
        pl.scan_parquet(tmp_path / "run.parquet"),
        pl.scan_csv(tmp_path / "run.csv"),
        pl.defer(lambda: frame, schema=frame.schema),
        pl.concat([frame.lazy(), pl.scan_parquet(tmp_path / "run.parquet")]),
    ]
    assert all(buckets._reads_ahead(plan) for plan in scans)
    in_memory_plans = [
        frame.lazy(),
        frame.lazy().join(frame.lazy(), on="doc").filter(pl.col("score") > 0),
    ]
    assert not any(buckets._reads_ahead(plan) for plan in in_memory_plans)


def judged_log(seed: int) -> pl.DataFrame:
    """``pr.judge``'s table of a random run of 3 systems, with a day segment, a per-query
    |R| and queries without qrels (null grades), shuffled across rankings."""
    run, qrels = random_corpus(seed, n_queries=60, systems=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        table = pr.judge(run, qrels)
    n_rel = qrels.group_by("query").agg(n_rel=(pl.col("relevance") >= 1).sum())
    table = table.join(n_rel, on="query", how="left", maintain_order="left")
    table = table.with_columns(day=pl.col("query").str.len_bytes() % 2)
    return table.sample(fraction=1.0, shuffle=True, seed=seed)


@pytest.mark.parametrize(
    ("order", "limit", "way"),
    [("shuffled", 5_000, "split"), ("shuffled", 100_000, "buckets"), ("shuffled", None, "held"),
     ("by ranking", 100_000, "as it comes"), ("by ranking", None, "held")],
    ids=lambda v: str(v),
)  # fmt: skip
def test_a_lazy_judged_table_is_scored_as_in_memory(tmp_path, monkeypatch, order, limit, way):
    """Held whole, by bucket (a bucket split again), or as it comes (each ranking in one
    stretch), read once."""
    table = judged_log(41)
    if order == "by ranking":
        table = table.sort("day", "system", "query", maintain_order=True)
    path = tmp_path / "judged.parquet"
    table.write_parquet(path, row_group_size=500)
    monkeypatch.setattr(buckets, "BATCH_ROWS", 700)
    kw = {"by": "day", "n_rel": "n_rel"}
    with pytest.warns(pr.UnscoredQueriesWarning) as in_memory_warnings:
        want = pr.evaluate_judged(table, MEASURES, **kw)
    scored = count_calls(monkeypatch, buckets, "_batches")
    bucketed = count_calls(monkeypatch, buckets._Scorer, "score_buckets")
    split = count_calls(monkeypatch, buckets._Scorer, "_split")
    taken = count_calls(monkeypatch, buckets._Input, "take_complete")
    limit_kw = {} if limit is None else {"memory_limit": buckets.PIECE_SHARE * limit}
    with pytest.warns(pr.UnscoredQueriesWarning) as lazy_warnings:
        got = pr.evaluate_judged(pl.scan_parquet(path), MEASURES, **kw, **limit_kw).collect()
    assert_frame_equal(got, want)
    assert scored == [1]  # read once
    assert (bucketed[0] > 0) == (way in ("split", "buckets"))
    assert (split[0] > 0) == (way == "split")
    assert (taken[0] > 0) == (way == "as it comes")
    assert len(lazy_warnings) == len(in_memory_warnings) == 1
    counted = str(lazy_warnings[0].message).split()[0]
    assert counted == str(in_memory_warnings[0].message).split()[0]


def test_a_judged_ranking_that_comes_back_is_read_again_bucket_by_bucket(tmp_path, monkeypatch):
    """A pre-judged table goes through the run's driver: scored as it comes until a
    ranking comes back, then read a second time and taken bucket by bucket."""
    table = judged_log(41).sort("day", "system", "query", maintain_order=True)
    first = table.filter(
        (pl.col("day") == table["day"][0]) & (pl.col("system") == table["system"][0])
    )
    late = first.filter(pl.col("query") == first["query"][0]).head(2)  # its first ranking
    keys = ["day", "system", "query", "doc"]
    table = pl.concat([table.join(late, on=keys, how="anti", maintain_order="left"), late])
    path = tmp_path / "late.parquet"
    table.write_parquet(path, row_group_size=500)
    monkeypatch.setattr(buckets, "BATCH_ROWS", 700)
    kw = {"by": "day", "n_rel": "n_rel"}
    with pytest.warns(pr.UnscoredQueriesWarning):
        want = pr.evaluate_judged(table, MEASURES, **kw)
    passes = count_calls(monkeypatch, buckets, "_score_pass")
    taken = count_calls(monkeypatch, buckets._Input, "take_complete")
    bucketed = count_calls(monkeypatch, buckets._Scorer, "score_buckets")
    limit = buckets.PIECE_SHARE * 100_000
    with pytest.warns(pr.UnscoredQueriesWarning):
        got = pr.evaluate_judged(pl.scan_parquet(path), MEASURES, **kw, memory_limit=limit)
        got = got.collect()
    assert_frame_equal(got, want)
    assert passes == [2] and taken[0] > 0 and bucketed[0] > 0


def test_a_lazy_judged_table_is_checked_as_it_is_read(tmp_path, monkeypatch):
    table = judged_log(42).with_row_index("i")
    table = table.with_columns(rank=pl.when(pl.col("i") == 1234).then(0).otherwise(pl.col("rank")))
    path = tmp_path / "judged.parquet"
    table.drop("i").write_parquet(path, row_group_size=500)
    monkeypatch.setattr(buckets, "BATCH_ROWS", 700)
    refused = r"judged row 1234 \(0-based\) has a rank 'rank' below 1"
    for limit in (buckets.PIECE_SHARE * 20_000, None):
        planned = pr.evaluate_judged(pl.scan_parquet(path), ["AP"], memory_limit=limit)
        with pytest.raises(ValueError, match=refused):
            planned.collect()


PROGRESS = """
import sys, warnings
import polars as pl
import polars_rankeval as pr
from polars_rankeval.engine import buckets
buckets.BATCH_ROWS = 300
warnings.simplefilter("ignore")
qrels = pl.read_parquet(sys.argv[2])
pr.evaluate(pl.scan_parquet(sys.argv[1]), qrels, ["AP"], memory_limit=8 * 20_000).collect()
"""


@pytest.mark.parametrize("terminal", [True, False])
def test_progress_is_shown_on_a_terminal_only(corpus, tmp_path, terminal):
    """A lazy run scored bucket by bucket reports its reading and buckets on stderr
    when it is a terminal, and writes nothing there otherwise."""
    _, qrels, path = corpus
    qrels_path = tmp_path / "qrels.parquet"
    qrels.write_parquet(qrels_path)
    command = [sys.executable, "-c", PROGRESS, str(path), str(qrels_path)]
    if not terminal:
        done = subprocess.run(command, capture_output=True, check=True, timeout=120)
        assert done.stderr == b""
        return
    leader, follower = pty.openpty()
    try:
        subprocess.run(command, stderr=follower, check=True, timeout=120)
        text = os.read(leader, 1 << 16).decode()
    finally:
        os.close(leader)
        os.close(follower)
    assert "polars_rankeval: read " in text
    assert "polars_rankeval: scoring bucket 64/64" in text
