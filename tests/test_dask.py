"""polars_rankeval.dask on a real LocalCluster: the same per-query values as pr.evaluate."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import polars as pl
import pytest
from corpus import mismatches, pytrec_reference, random_corpus
from polars.testing import assert_frame_equal

import polars_rankeval as pr

pytestmark = pytest.mark.dask
distributed = pytest.importorskip(
    "distributed", reason="dask[distributed] is not installed (pip install polars-rankeval[dask])"
)
prd = pytest.importorskip("polars_rankeval.dask")

MEASURES = ["AP", "nDCG@10", "P@10", "RR", "R@100"]


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        memory_limit="1GiB",
    )
    # Not the default client, so that client=None below really means "no client".
    with distributed.Client(cluster, set_as_default=False) as c:
        yield c
    cluster.close()


def write_parts(frame: pl.DataFrame, directory: Path, n_files: int) -> str:
    """Write rows round-robin into n_files Parquet files: queries span files."""
    directory.mkdir()
    parts = frame.with_row_index("_i").with_columns(pl.col("_i") % n_files)
    for (i,), part in parts.partition_by("_i", as_dict=True, include_key=False).items():
        part.write_parquet(directory / f"part-{i}.parquet")
    return str(directory / "*.parquet")


def evaluate_quietly(run, qrels, measures, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        return pr.evaluate(run, qrels, measures, **options)


@pytest.mark.parametrize(("systems", "npartitions"), [(1, 2), (3, 5), (3, 1)])
def test_parquet_files_equal_in_process(client, tmp_path, systems, npartitions):
    run, qrels = random_corpus(7 + systems, n_queries=60, systems=systems)
    run_glob = write_parts(run, tmp_path / "run", 3)
    qrels_glob = write_parts(qrels, tmp_path / "qrels", 2)
    expected = evaluate_quietly(run, qrels, MEASURES)
    with pytest.warns(pr.UnscoredQueriesWarning):
        got = prd.evaluate(run_glob, qrels_glob, MEASURES, client=client, npartitions=npartitions)
    assert got.height > 40 * systems
    assert_frame_equal(got, expected, check_exact=True)


def test_list_of_paths_matches_trec_eval(client, tmp_path):
    run, qrels = random_corpus(3, n_queries=50)
    run_dir = tmp_path / "run"
    write_parts(run, run_dir, 4)
    qrels.write_parquet(tmp_path / "qrels.parquet")
    paths = sorted(run_dir.glob("*.parquet"))
    with pytest.warns(pr.UnscoredQueriesWarning):
        got = prd.evaluate(paths, tmp_path / "qrels.parquet", MEASURES, client=client)
    assert mismatches(got, pytrec_reference(run, qrels, MEASURES), MEASURES) == []


@pytest.mark.parametrize("lazy", [False, True])
def test_polars_frames_equal_in_process(client, lazy):
    run, qrels = random_corpus(11, n_queries=50, systems=2)
    expected = evaluate_quietly(run, qrels, MEASURES)
    run_in, qrels_in = (run.lazy(), qrels.lazy()) if lazy else (run, qrels)
    with pytest.warns(pr.UnscoredQueriesWarning):
        got = prd.evaluate(run_in, qrels_in, MEASURES, client=client, npartitions=3)
    assert_frame_equal(got, expected, check_exact=True)


def test_integer_query_ids_and_renamed_columns(client, tmp_path):
    run, qrels = random_corpus(5, n_queries=30)
    run = run.filter(pl.col("query").str.contains("^[0-9]+$")).with_columns(
        pl.col("query").cast(pl.Int64)
    )
    run = run.rename({"query": "qid", "doc": "docno", "score": "sim"})
    qrels = qrels.rename({"query": "qid", "doc": "docno", "relevance": "rel"})
    run.write_parquet(tmp_path / "run.parquet")
    options = {"query": "qid", "doc": "docno", "score": "sim", "relevance": "rel"}
    expected = evaluate_quietly(run, qrels, MEASURES, **options)
    got = prd.evaluate(tmp_path / "run.parquet", qrels, MEASURES, client=client, **options)
    assert expected.height > 0
    assert_frame_equal(got, expected, check_exact=True)


def test_missing_zero_scores_systems_absent_from_a_piece(client):
    """sys2 retrieves for one query only: most pieces hold no sys2 row at all."""
    run, qrels = random_corpus(13, n_queries=40, systems=2)
    lone = run.filter(pl.col("system") == "sys1").filter(pl.col("query") == pl.first("query"))
    run = pl.concat([run, lone.with_columns(system=pl.lit("sys2"))])
    options = {"missing": "zero", "rel_level": 2, "depth": 20}
    expected = evaluate_quietly(run, qrels, [*MEASURES, "NumRel"], **options)
    with pytest.warns(pr.UnscoredQueriesWarning):
        got = prd.evaluate(
            run, qrels, [*MEASURES, "NumRel"], client=client, npartitions=4, **options
        )
    assert got.filter(system="sys2").height == qrels["query"].n_unique()
    assert_frame_equal(got, expected, check_exact=True)


def test_means_are_over_queries(client):
    run, qrels = random_corpus(17, n_queries=45, systems=2)
    expected = evaluate_quietly(run, qrels, MEASURES, per_query=False)
    with pytest.warns(pr.UnscoredQueriesWarning):
        got = prd.evaluate(run, qrels, MEASURES, client=client, npartitions=4, per_query=False)
    assert_frame_equal(got, expected, check_exact=False, rel_tol=1e-12, abs_tol=1e-15)


def test_unscored_queries_are_counted(client, tmp_path):
    run = pl.DataFrame({"query": ["a", "b", "c"], "doc": ["x", "y", "z"], "score": [1.0] * 3})
    qrels = pl.DataFrame({"query": ["a", "d"], "doc": ["x", "w"], "relevance": [1, 1]})
    run.write_parquet(tmp_path / "run.parquet")
    with pytest.warns(pr.UnscoredQueriesWarning, match="^2 run queries have no qrels"):
        got = prd.evaluate(tmp_path / "run.parquet", qrels, ["RR"], client=client)
    assert got.to_dict(as_series=False) == {"query": ["a"], "RR": [1.0]}
    with pytest.raises(ValueError, match="1 qrels queries are not in the run"):
        prd.evaluate(run, qrels, ["RR"], client=client, missing="error")


def test_without_a_client_uses_the_local_scheduler():
    run, qrels = random_corpus(19, n_queries=20)
    expected = evaluate_quietly(run, qrels, MEASURES)
    with pytest.warns(pr.UnscoredQueriesWarning):
        got = prd.evaluate(run, qrels, MEASURES, npartitions=3)
    assert_frame_equal(got, expected, check_exact=True)


def test_bad_inputs_fail_before_any_task(client):
    run, qrels = random_corpus(1, n_queries=5)
    with pytest.raises(ValueError, match="missing column 'docno'"):
        prd.evaluate(run, qrels, ["AP"], client=client, doc="docno")
    with pytest.raises(TypeError, match="Unknown option"):
        prd.evaluate(run, qrels, ["AP"], client=client, rel_levle=2)
    with pytest.raises(TypeError, match="Parquet path"):
        prd.evaluate(42, qrels, ["AP"], client=client)
    with pytest.raises(ValueError, match="int >= 1"):
        prd.evaluate(run, qrels, ["AP"], client=client, npartitions=0)


def test_duplicates_raise_as_in_process(client):
    run = pl.DataFrame({"query": ["a", "a"], "doc": ["x", "x"], "score": [1.0, 2.0]})
    qrels = pl.DataFrame({"query": ["a"], "doc": ["x"], "relevance": [1]})
    with pytest.raises(ValueError, match="duplicate rows"):
        prd.evaluate(run.lazy(), qrels, ["AP"], client=client)
    got = prd.evaluate(run, qrels, ["AP"], client=client, duplicates="keep_best")
    assert got["AP"].to_list() == [1.0]


def test_hash_disagreement_is_caught():
    piece = prd.evaluate_piece(
        pl.DataFrame({"query": ["a"], "doc": ["x"], "score": [1.0]}),
        pl.DataFrame({"query": ["a"], "doc": ["x"], "relevance": [1]}),
        ["AP"],
    )
    prd._check_counts([piece], 1, 1)
    with pytest.raises(RuntimeError, match="did not agree on the query buckets"):
        prd._check_counts([piece, piece], 1, 1)


def test_clear_import_error_without_dask(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(ImportError, match=r"pip install polars-rankeval\[dask\]"):
        prd.evaluate(*random_corpus(1, n_queries=3), ["AP"])


def test_rank_order_with_extra_columns(client, tmp_path):
    """order='rank' reads the run's rank column; unused columns are not read."""
    run, qrels = random_corpus(29, n_queries=30, systems=2)
    run = run.with_columns(
        rank=pl.int_range(1, pl.len() + 1).shuffle(seed=1).over("system", "query"),
        tag=pl.lit("unused"),
    )
    run_glob = write_parts(run, tmp_path / "run", 2)
    expected = evaluate_quietly(run, qrels, MEASURES, order="rank")
    with pytest.warns(pr.UnscoredQueriesWarning):
        got = prd.evaluate(run_glob, qrels, MEASURES, client=client, order="rank")
    assert_frame_equal(got, expected, check_exact=True)
    assert not got.equals(evaluate_quietly(run, qrels, MEASURES))  # rank order mattered
