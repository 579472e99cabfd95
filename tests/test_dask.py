"""polars_rankeval.dask on a real LocalCluster: the same per-query values as pr.evaluate."""

from __future__ import annotations

import math
import re
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
TREC_MEANS = ["AP", "GMAP", "GMBpref", "NumRet", "NumRel", "NumRelRet", "P@10"]


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


def assert_same(got: pl.DataFrame, expected: pl.DataFrame) -> None:
    """Keys exactly equal (same rows, same order, same dtypes), values at 1e-12."""
    keys = [c for c in ("system", "query", "qid") if c in expected.columns]
    assert expected.height > 0
    assert_frame_equal(got.select(keys), expected.select(keys), check_exact=True)
    assert_frame_equal(got, expected, check_exact=False, rel_tol=1e-12, abs_tol=1e-12)


def map_tasks(stream, table: str) -> list[str]:
    """The keys of the map tasks that read ``table`` (one per chunk of an input)."""
    keys = {t["key"] for t in stream.data}
    return sorted(k for k in keys if k.startswith(f"rankeval-map-{table}-"))


@pytest.mark.parametrize(("systems", "npartitions"), [(1, 2), (3, 5), (3, 1)])
def test_parquet_files_equal_in_process(client, tmp_path, systems, npartitions):
    run, qrels = random_corpus(7 + systems, n_queries=60, systems=systems)
    run_glob = write_parts(run, tmp_path / "run", 3)
    qrels_glob = write_parts(qrels, tmp_path / "qrels", 2)
    expected = evaluate_quietly(run, qrels, MEASURES)
    with pytest.warns(pr.UnscoredQueriesWarning):
        got = prd.evaluate(run_glob, qrels_glob, MEASURES, client=client, npartitions=npartitions)
    assert got.height > 40 * systems
    assert_same(got, expected)


def test_each_parquet_file_is_read_by_one_task(client, tmp_path):
    """One map task per input file, whatever the number of buckets; then one task per bucket.

    Before the map stage existed, every bucket's task scanned every file (here: 7 reads
    of each file, and no map task at all)."""
    run, qrels = random_corpus(31, n_queries=40, systems=2)
    run_glob = write_parts(run, tmp_path / "run", 4)
    qrels_glob = write_parts(qrels, tmp_path / "qrels", 2)
    with distributed.get_task_stream(client=client) as stream, warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        got = prd.evaluate(run_glob, qrels_glob, MEASURES, client=client, npartitions=7)
    assert len(map_tasks(stream, "run")) == 4
    assert len(map_tasks(stream, "qrels")) == 2
    keys = {t["key"] for t in stream.data}
    assert len({k for k in keys if k.startswith("rankeval-reduce-")}) == 7
    assert len(keys) == 4 + 2 + 7  # nothing else ran
    assert_same(got, evaluate_quietly(run, qrels, MEASURES))


def test_a_large_file_is_read_in_slices(client, tmp_path, monkeypatch):
    """A file much larger than the others is cut into row slices, one map task each."""
    monkeypatch.setattr(prd, "MIN_MAP_ROWS", 100)  # so that a small file counts as large
    run, qrels = random_corpus(37, n_queries=40, systems=2)
    (tmp_path / "run").mkdir()
    run.slice(10).write_parquet(tmp_path / "run" / "big.parquet", row_group_size=64)
    run.head(10).write_parquet(tmp_path / "run" / "small.parquet")
    with distributed.get_task_stream(client=client) as stream, warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        got = prd.evaluate(tmp_path / "run" / "*.parquet", qrels, MEASURES, client=client)
    assert len(map_tasks(stream, "run")) > 4  # 'big' in several slices, 'small' in one
    assert_same(got, evaluate_quietly(run, qrels, MEASURES))


def test_list_of_paths_matches_trec_eval(client, tmp_path):
    run, qrels = random_corpus(3, n_queries=50)
    run_dir = tmp_path / "run"
    write_parts(run, run_dir, 4)
    qrels.write_parquet(tmp_path / "qrels.parquet")
    paths = sorted(run_dir.glob("*.parquet"))
    with pytest.warns(pr.UnscoredQueriesWarning):
        got = prd.evaluate(paths, tmp_path / "qrels.parquet", MEASURES, client=client)
    assert mismatches(got, pytrec_reference(run, qrels, MEASURES), MEASURES) == []


def test_hive_directory_gives_the_system_column(client, tmp_path):
    """A directory written partitioned by system: the partition becomes the column."""
    run, qrels = random_corpus(41, n_queries=30, systems=3)
    for (system,), part in run.partition_by("system", as_dict=True, include_key=False).items():
        (tmp_path / "run" / f"system={system}").mkdir(parents=True)
        part.write_parquet(tmp_path / "run" / f"system={system}" / "part-0.parquet")
    (tmp_path / "run" / "_SUCCESS").touch()  # what Spark leaves beside the data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        got = prd.evaluate(tmp_path / "run", qrels, MEASURES, client=client, npartitions=3)
    assert got["system"].unique().sort().to_list() == ["sys0", "sys1", "sys2"]
    assert_same(got, evaluate_quietly(run, qrels, MEASURES))


@pytest.mark.parametrize("lazy", [False, True])
def test_polars_frames_equal_in_process(client, lazy):
    run, qrels = random_corpus(11, n_queries=50, systems=2)
    expected = evaluate_quietly(run, qrels, MEASURES)
    run_in, qrels_in = (run.lazy(), qrels.lazy()) if lazy else (run, qrels)
    with (
        distributed.get_task_stream(client=client) as stream,
        pytest.warns(pr.UnscoredQueriesWarning),
    ):
        got = prd.evaluate(run_in, qrels_in, MEASURES, client=client, npartitions=3)
    assert len(map_tasks(stream, "run")) == (1 if lazy else 0)  # a LazyFrame: read once
    assert_same(got, expected)


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
    assert got.schema["qid"] == pl.String  # Int64 in the run, String in qrels: as in-process
    assert_same(got, expected)


@pytest.mark.parametrize("source", ["frame", "parquet", "lazy"])
def test_missing_zero_scores_systems_absent_from_a_bucket(client, tmp_path, source):
    """sys2 retrieves for one query only: most buckets hold no sys2 row at all."""
    run, qrels = random_corpus(13, n_queries=40, systems=2)
    lone = run.filter(pl.col("system") == "sys1").filter(pl.col("query") == pl.first("query"))
    run = pl.concat([run, lone.with_columns(system=pl.lit("sys2"))])
    measures = [*MEASURES, "NumRel"]
    options = {"missing": "zero", "rel_level": 2, "depth": 20}
    expected = evaluate_quietly(run, qrels, measures, **options)
    run_in = {
        "frame": run,
        "parquet": write_parts(run, tmp_path / "run", 3),
        "lazy": run.lazy(),
    }[source]
    with pytest.warns(pr.UnscoredQueriesWarning):
        got = prd.evaluate(run_in, qrels, measures, client=client, npartitions=4, **options)
    assert got.filter(system="sys2").height == qrels["query"].n_unique()
    assert_same(got, expected)


def test_means_combine_as_mean_scores(client, tmp_path):
    """GMAP and GMBpref: geometric means with trec_eval's floor; the counts: sums."""
    run, qrels = random_corpus(17, n_queries=45, systems=2)
    per_query = evaluate_quietly(run, qrels, TREC_MEANS)
    assert (per_query["AP"] == 0).any()  # the 1e-5 floor matters for GMAP here
    with pytest.warns(pr.UnscoredQueriesWarning):
        got = prd.evaluate(
            write_parts(run, tmp_path / "run", 2),
            qrels,
            TREC_MEANS,
            client=client,
            npartitions=4,
            per_query=False,
        )
    assert_same(got, pr.mean_scores(per_query))
    scored = run.join(qrels.select("query").unique(), on="query", how="semi")
    assert (
        got["NumRet"].to_list() == scored.group_by("system").len().sort("system")["len"].to_list()
    )
    floor = per_query.group_by("system").agg(pl.col("AP").clip(1e-5).log().mean().exp())
    assert got["GMAP"].to_list() == pytest.approx(floor.sort("system")["AP"].to_list(), rel=1e-12)


def test_unscored_queries_are_counted_once(client, tmp_path):
    run = pl.DataFrame({"query": ["a", "b", "c"], "doc": ["x", "y", "z"], "score": [1.0] * 3})
    qrels = pl.DataFrame({"query": ["a", "d", "e"], "doc": ["x", "w", "v"], "relevance": [1] * 3})
    run.write_parquet(tmp_path / "run.parquet")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = prd.evaluate(tmp_path / "run.parquet", qrels, ["RR"], client=client, npartitions=3)
    unscored = [w for w in caught if issubclass(w.category, pr.UnscoredQueriesWarning)]
    assert [str(w.message)[:36] for w in unscored] == ["2 run queries have no qrels and were"]
    assert got.to_dict(as_series=False) == {"query": ["a"], "RR": [1.0]}
    for run_in in (run, tmp_path / "run.parquet"):
        with pytest.raises(ValueError, match=r"^2 qrels queries are not in the run \(d, e\)"):
            prd.evaluate(run_in, qrels, ["RR"], client=client, npartitions=3, missing="error")


def test_without_a_client_uses_the_local_scheduler(tmp_path):
    run, qrels = random_corpus(19, n_queries=20)
    expected = evaluate_quietly(run, qrels, MEASURES)
    with pytest.warns(pr.UnscoredQueriesWarning):
        got = prd.evaluate(run, qrels, MEASURES, npartitions=3)
    assert_same(got, expected)
    with pytest.warns(pr.UnscoredQueriesWarning):
        got = prd.evaluate(write_parts(run, tmp_path / "run", 2), qrels, MEASURES, npartitions=3)
    assert_same(got, expected)


def test_bad_inputs_fail_before_any_task(client):
    run, qrels = random_corpus(1, n_queries=5)
    with pytest.raises(ValueError, match="missing column 'docno'"):
        prd.evaluate(run, qrels, ["AP"], client=client, doc="docno")
    with pytest.raises(TypeError, match="Unknown option"):
        prd.evaluate(run, qrels, ["AP"], client=client, rel_levle=2)
    with pytest.raises(TypeError, match="Parquet path"):
        prd.evaluate(42, qrels, ["AP"], client=client)
    # a Dask or pandas frame: named with its library, with the way in
    import dask.dataframe as dd

    frame = run.to_pandas()
    with pytest.raises(TypeError, match=r"Got a Dask DataFrame \(write it with \.to_parquet"):
        prd.evaluate(dd.from_pandas(frame, npartitions=1), qrels, ["AP"], client=client)
    with pytest.raises(TypeError, match=r"Got a pandas DataFrame \(pass polars\.from_pandas"):
        prd.evaluate(run, qrels.to_pandas(), ["AP"], client=client)
    with pytest.raises(ValueError, match=r"npartitions must be an int >= 1\. Got 0"):
        prd.evaluate(run, qrels, ["AP"], client=client, npartitions=0)
    with pytest.raises(FileNotFoundError, match="No Parquet file matches"):
        prd.evaluate("/nonexistent-dir-for-test/*.parquet", qrels, ["AP"], client=client)


@pytest.mark.parametrize("source", ["frame", "parquet", "lazy"])
def test_duplicates_raise_the_in_process_message(client, tmp_path, source):
    run, qrels = random_corpus(43, n_queries=20)
    run = pl.concat([run, run.slice(7, 1).with_columns(score=pl.lit(-1.0))])
    with pytest.raises(ValueError, match="duplicate rows") as in_process:
        pr.evaluate(run, qrels, MEASURES)
    run_in = {
        "frame": run,
        "parquet": write_parts(run, tmp_path / "run", 3),
        "lazy": run.lazy(),
    }[source]
    with pytest.raises(ValueError, match=f"^{re.escape(str(in_process.value))}$"):
        prd.evaluate(run_in, qrels, MEASURES, client=client, npartitions=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        got = prd.evaluate(
            run_in, qrels, MEASURES, client=client, npartitions=3, duplicates="keep_best"
        )
    assert_same(got, evaluate_quietly(run, qrels, MEASURES, duplicates="keep_best"))


def test_nan_score_names_the_row_and_the_file(client, tmp_path):
    run, qrels = random_corpus(47, n_queries=20)
    run = run.with_columns(
        score=pl.when(pl.int_range(pl.len()) == 100).then(float("nan")).otherwise("score")
    )
    run_glob = write_parts(run, tmp_path / "run", 2)  # row 100 is row 50 of part-0
    in_files = pl.read_parquet(run_glob).with_row_index().filter(pl.col("score").is_nan())
    with pytest.raises(ValueError, match="NaN") as in_process:
        pr.evaluate(pl.scan_parquet(run_glob), qrels, MEASURES).collect()
    message = f"^{re.escape(str(in_process.value))} \\(in .*part-0.parquet\\)$"
    assert in_files["index"].to_list() == [50]
    assert "run row 50 (0-based)" in str(in_process.value)
    with pytest.raises(ValueError, match=message):
        prd.evaluate(run_glob, qrels, MEASURES, client=client)


def test_presorted_keeps_the_order_of_files_and_rows(client, tmp_path):
    run, qrels = random_corpus(53, n_queries=30, systems=2)
    run_glob = write_parts(run.sample(fraction=1.0, shuffle=True, seed=1), tmp_path / "run", 3)
    in_order = pl.read_parquet(run_glob)  # the files one after the other
    expected = evaluate_quietly(in_order, qrels, MEASURES, order="presorted")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        got = prd.evaluate(run_glob, qrels, MEASURES, client=client, order="presorted")
    assert_same(got, expected)
    assert not got.equals(evaluate_quietly(run, qrels, MEASURES))  # the order mattered


def test_spill_files_are_deleted(client, tmp_path):
    run, qrels = random_corpus(59, n_queries=20)
    run_glob = write_parts(run, tmp_path / "run", 2)
    spill = tmp_path / "spill"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        got = prd.evaluate(run_glob, qrels, MEASURES, client=client, spill_dir=spill)
    assert got.height > 0
    assert spill.is_dir() and list(spill.iterdir()) == []
    duplicated = write_parts(pl.concat([run, run.head(1)]), tmp_path / "duplicated", 2)
    with pytest.raises(ValueError, match="duplicate rows"):  # a reduce task fails
        prd.evaluate(duplicated, qrels, MEASURES, client=client, spill_dir=spill)
    assert list(spill.iterdir()) == []
    nan = write_parts(run.with_columns(score=pl.lit(float("nan"))), tmp_path / "nan", 4)
    with pytest.raises(ValueError, match="NaN score"):  # map tasks fail, others still run
        prd.evaluate(nan, qrels, MEASURES, client=client, spill_dir=spill)
    assert list(spill.iterdir()) == []


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
    assert_same(got, expected)
    assert not got.equals(evaluate_quietly(run, qrels, MEASURES))  # rank order mattered


@pytest.mark.parametrize("conventions", ["ranx", "sklearn", "ir_measures", "spark"])
def test_presets_equal_in_process(client, tmp_path, conventions):
    """Buckets keep each query's rows in input order (the files' order, then their rows'):
    input-order ties hold on Dask."""
    run, qrels = random_corpus(12, n_queries=30, systems=2)
    measures = ["AP", "map@5", "ndcg@5", "RR", "R@10"]
    files = write_parts(run, tmp_path / "run", 3)
    in_order = pl.read_parquet(files)
    expected = evaluate_quietly(in_order, qrels, measures, conventions=conventions)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        got = prd.evaluate(
            files,
            qrels,
            measures,
            client=client,
            npartitions=4,
            conventions=conventions,
        )
    assert_same(got, expected)


def _discounted_precision(k: int) -> pl.Expr:
    """DP@k = (1/k) * sum over relevant documents at ranks i <= k of 1 / log2(i + 1)."""
    hit = (pl.col("relevance") >= 1) & (pl.col("rank") <= k)
    return (hit.cast(pl.Float64) / (pl.col("rank").cast(pl.Float64) + 1).log(2)).sum() / k


def test_a_declared_measure_travels_to_the_workers(client, tmp_path):
    # The workers' processes never ran define_measure: the job carries the declaration.
    pr.define_measure("DP", _discounted_precision, cutoff="required", bounds=(0, 1))
    run = pl.DataFrame({"query": ["q1"] * 3 + ["q2"] * 2, "doc": ["a", "b", "c", "d", "e"],
                        "score": [3.0, 2.0, 1.0, 2.0, 1.0]})  # fmt: skip
    qrels = pl.DataFrame({"query": ["q1", "q1", "q2"], "doc": ["a", "c", "e"], "relevance": 1})
    got = prd.evaluate(run, qrels, ["DP@2", "DP@3", "AP"], client=client, npartitions=2)
    got = got.sort("query")
    third = 1 / math.log2(3)
    assert got["query"].to_list() == ["q1", "q2"]
    assert got["DP@2"].to_list() == pytest.approx([1 / 2, third / 2], abs=1e-12)
    assert got["DP@3"].to_list() == pytest.approx([1.5 / 3, third / 3], abs=1e-12)
    corpus_run, corpus_qrels = random_corpus(7, n_queries=40, systems=2)
    measures = ["DP@5", "DP@10", "nDCG@10"]
    corpus_run.write_parquet(tmp_path / "run.parquet")
    spread = prd.evaluate(
        str(tmp_path / "run.parquet"), corpus_qrels, measures, client=client, npartitions=3
    )
    assert_same(spread, evaluate_quietly(corpus_run, corpus_qrels, measures))


def test_empty_queries_skip_as_in_process(client):
    """The plain ``empty_queries`` option reaches the workers (issue 37)."""
    run, qrels = random_corpus(12, n_queries=40, systems=2)
    expected = evaluate_quietly(run, qrels, MEASURES, empty_queries="skip")
    zero = evaluate_quietly(run, qrels, MEASURES)
    assert 0 < expected.height < zero.height  # the corpus has queries without relevant docs
    with pytest.warns(pr.UnscoredQueriesWarning):
        got = prd.evaluate(run, qrels, MEASURES, client=client, empty_queries="skip")
    assert_same(got, expected)
