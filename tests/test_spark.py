"""polars_rankeval.spark on a real local[2] session: the same per-query values as pr.evaluate."""

from __future__ import annotations

import math
import re
import shutil
import sys
import warnings
from pathlib import Path

import polars as pl
import pytest
from corpus import mismatches, pytrec_reference, random_corpus
from polars.testing import assert_frame_equal

import polars_rankeval as pr

pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(
        shutil.which("java") is None,
        reason="Spark needs Java 17+ on PATH (CI installs openjdk-17-jre-headless)",
    ),
]
pyspark = pytest.importorskip(
    "pyspark", reason="pyspark is not installed (pip install polars-rankeval[spark])"
)
prs = pytest.importorskip("polars_rankeval.spark")

MEASURES = ["AP", "nDCG@10", "P@10", "RR", "R@100"]
TREC_MEANS = ["AP", "GMAP", "GMBpref", "NumRet", "NumRel", "NumRelRet", "P@10"]


@pytest.fixture(scope="module")
def spark():
    yield from local_spark()


def local_spark():
    """A local[2] Spark session on the loopback interface, stopped when the generator ends."""
    from pyspark.sql import SparkSession

    with pytest.MonkeyPatch.context() as env:
        env.setenv("PYSPARK_PYTHON", sys.executable)  # executors run this venv's Python
        env.setenv("SPARK_LOCAL_IP", "127.0.0.1")  # stay on the loopback interface
        session = (
            SparkSession.builder.master("local[2]")
            .appName("polars_rankeval-tests")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.driver.memory", "1g")
            .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
            .config("spark.sql.shuffle.partitions", "4")
            .getOrCreate()
        )
        session.sparkContext.setLogLevel("ERROR")
        yield session
        session.stop()


def to_spark(spark, frame: pl.DataFrame):
    return spark.createDataFrame(frame.to_arrow(compat_level=pl.CompatLevel.oldest()))


def collect(sdf, keys: list[str]) -> pl.DataFrame:
    return pl.from_arrow(sdf.toArrow()).sort(keys)


def evaluate_quietly(run, qrels, measures, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        return pr.evaluate(run, qrels, measures, **options)


def assert_same(got: pl.DataFrame, expected: pl.DataFrame) -> None:
    """Keys exactly equal (same rows, same order, same dtypes), values at 1e-12."""
    keys = [c for c in ("system", "query", "qid", "n_queries") if c in expected.columns]
    assert expected.height > 0
    assert_frame_equal(got.select(keys), expected.select(keys), check_exact=True)
    assert_frame_equal(got, expected, check_exact=False, rel_tol=1e-12, abs_tol=1e-12)


def collect_means(sdf, keys: list[str]) -> pl.DataFrame:
    """Means collected from Spark, n_queries cast from Spark's long to Polars' u32."""
    return collect(sdf, keys).with_columns(pl.col("n_queries").cast(pl.UInt32))


def write_parts(frame: pl.DataFrame, directory: Path, n_files: int) -> str:
    """Write rows round-robin into n_files Parquet files: queries span files."""
    directory.mkdir()
    parts = frame.with_row_index("_i").with_columns(pl.col("_i") % n_files)
    for (i,), part in parts.partition_by("_i", as_dict=True, include_key=False).items():
        part.write_parquet(directory / f"part-{i}.parquet")
    return str(directory)


@pytest.mark.parametrize(("systems", "num_buckets"), [(1, 3), (3, None)])
def test_parquet_files_equal_in_process(spark, tmp_path, systems, num_buckets):
    run, qrels = random_corpus(23 + systems, n_queries=60, systems=systems)
    run_sdf = spark.read.parquet(write_parts(run, tmp_path / "run", 3))
    qrels_sdf = spark.read.parquet(write_parts(qrels, tmp_path / "qrels", 2))
    keys = ["query"] if systems == 1 else ["system", "query"]
    got = collect(prs.evaluate(run_sdf, qrels_sdf, MEASURES, num_buckets=num_buckets), keys)
    expected = evaluate_quietly(run, qrels, MEASURES)
    assert got.height > 40 * systems
    assert_same(got, expected)
    if systems == 1:
        assert mismatches(got, pytrec_reference(run, qrels, MEASURES), MEASURES) == []


def test_integer_query_ids_and_renamed_columns(spark):
    run, qrels = random_corpus(5, n_queries=40)
    run = run.filter(pl.col("query").str.contains("^[0-9]+$")).with_columns(
        pl.col("query").cast(pl.Int64)
    )
    run = run.rename({"query": "qid", "doc": "docno", "score": "sim"})
    qrels = qrels.rename({"query": "qid", "doc": "docno", "relevance": "rel"})
    options = {"query": "qid", "doc": "docno", "score": "sim", "relevance": "rel"}
    sdf = prs.evaluate(to_spark(spark, run), to_spark(spark, qrels), MEASURES, **options)
    assert_same(collect(sdf, ["qid"]), evaluate_quietly(run, qrels, MEASURES, **options))
    means = prs.evaluate(
        to_spark(spark, run), to_spark(spark, qrels), MEASURES, per_query=False, **options
    )
    expected_means = evaluate_quietly(run, qrels, MEASURES, per_query=False, **options)
    assert_same(collect_means(means, []), expected_means)


def test_missing_zero_scores_systems_absent_from_a_bucket(spark):
    """sys2 retrieves for one query only: most buckets hold no sys2 row at all."""
    run, qrels = random_corpus(13, n_queries=40, systems=2)
    lone = run.filter(pl.col("system") == "sys1").filter(pl.col("query") == pl.first("query"))
    run = pl.concat([run, lone.with_columns(system=pl.lit("sys2"))])
    measures = [*MEASURES, "NumRel"]
    options = {"missing": "zero", "rel_level": 2, "depth": 20}
    sdf = prs.evaluate(
        to_spark(spark, run), to_spark(spark, qrels), measures, num_buckets=5, **options
    )
    got = collect(sdf, ["system", "query"])
    assert got.filter(system="sys2").height == qrels["query"].n_unique()
    assert_same(got, evaluate_quietly(run, qrels, measures, **options))


@pytest.mark.parametrize("systems", [1, 2])
def test_means_combine_as_mean_scores(spark, systems):
    """GMAP and GMBpref: geometric means with trec_eval's floor; the counts: sums."""
    run, qrels = random_corpus(17, n_queries=45, systems=systems)
    per_query = evaluate_quietly(run, qrels, TREC_MEANS)
    assert (per_query["AP"] == 0).any()  # the 1e-5 floor matters for GMAP here
    sdf = prs.evaluate(
        to_spark(spark, run), to_spark(spark, qrels), TREC_MEANS, per_query=False, num_buckets=3
    )
    keys = ["system"] if systems > 1 else []
    got = collect_means(sdf, keys)
    assert_same(got, pr.mean_scores(per_query))
    plain = per_query.select(pl.col("GMAP").mean(), pl.col("NumRet").mean())
    assert got["GMAP"][0] < plain["GMAP"][0]  # a plain average would not match
    assert got["NumRet"][0] > plain["NumRet"][0]


def test_duplicates_fail_the_job_with_the_in_process_message(spark):
    run, qrels = random_corpus(43, n_queries=20)
    run = pl.concat([run, run.slice(7, 1).with_columns(score=pl.lit(-1.0))])
    with pytest.raises(ValueError, match="duplicate rows") as in_process:
        pr.evaluate(run, qrels, ["AP"])
    sdf = prs.evaluate(to_spark(spark, run), to_spark(spark, qrels), ["AP"], num_buckets=3)
    with pytest.raises(Exception, match=re.escape(str(in_process.value))):
        sdf.collect()
    kept = prs.evaluate(
        to_spark(spark, run), to_spark(spark, qrels), ["AP"], duplicates="keep_best"
    )
    expected = evaluate_quietly(run, qrels, ["AP"], duplicates="keep_best")
    assert_same(collect(kept, ["query"]), expected)


def test_missing_error_raises_when_called(spark):
    run, qrels = random_corpus(71, n_queries=40)
    with pytest.raises(ValueError, match="qrels queries are not in the run") as in_process:
        pr.evaluate(run, qrels, ["AP"], missing="error")
    with pytest.raises(ValueError, match=f"^{re.escape(str(in_process.value))}$"):
        prs.evaluate(to_spark(spark, run), to_spark(spark, qrels), ["AP"], missing="error")


@pytest.mark.parametrize("by", [None, "day"])
def test_missing_error_is_checked_per_system_on_the_driver(spark, by):
    """A qrels query one system lacks (the whole run has it) is refused when called, with
    the in-process message naming the segment and the system (issue 37): the driver
    checked the whole run only, and the buckets raised inside Spark's job."""
    run, qrels = random_corpus(72, n_queries=30, systems=2)
    run = run.with_columns(day=pl.when(pl.col("query").hash() % 2 == 0).then(pl.lit("mon"))
                           .otherwise(pl.lit("tue")))  # fmt: skip
    present = set(qrels["query"]) & set(run["query"])
    run = run.filter(pl.col("query").is_in(sorted(present)))  # every qrels query in the run
    qrels = qrels.filter(pl.col("query").is_in(sorted(present)))
    lacking = sorted(present)[:2]
    run = run.filter(~((pl.col("system") == "sys1") & pl.col("query").is_in(lacking)))
    with pytest.raises(ValueError, match="system='sys1'") as in_process:
        pr.evaluate(run, qrels, ["AP"], missing="error", by=by)
    with pytest.raises(ValueError, match=f"^{re.escape(str(in_process.value))}$"):
        prs.evaluate(to_spark(spark, run), to_spark(spark, qrels), ["AP"], missing="error", by=by)


def test_bad_inputs_fail_before_any_job(spark):
    run, qrels = random_corpus(1, n_queries=5)
    run_sdf, qrels_sdf = to_spark(spark, run), to_spark(spark, qrels)
    with pytest.raises(ValueError, match="presorted"):
        prs.evaluate(run_sdf, qrels_sdf, ["AP"], order="presorted")
    with pytest.raises(ValueError, match="'ranx' order equal scores by input order"):
        prs.evaluate(run_sdf, qrels_sdf, ["AP"], conventions="ranx")
    with pytest.raises(ValueError, match="missing column 'docno'"):
        prs.evaluate(run_sdf, qrels_sdf, ["AP"], doc="docno")
    with pytest.raises(TypeError, match="Unknown option"):
        prs.evaluate(run_sdf, qrels_sdf, ["AP"], rel_levle=2)
    with pytest.raises(ValueError, match=r"num_buckets must be an int >= 1\. Got 0"):
        prs.evaluate(run_sdf, qrels_sdf, ["AP"], num_buckets=0)
    with pytest.raises(ValueError, match="Unknown measure"):
        prs.evaluate(run_sdf, qrels_sdf, ["APP"])


def test_clear_import_error_without_pyspark(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyspark", None)
    with pytest.raises(ImportError, match=r"pip install polars-rankeval\[spark\]"):
        prs.evaluate(None, None, ["AP"])


# pyspark.mllib's RankingMetrics builds an SQLContext itself (deprecated since Spark 3.0).
@pytest.mark.filterwarnings("ignore:Deprecated in 3.0.0:FutureWarning")
def test_spark_preset_matches_ranking_metrics(spark):
    """conventions="spark" against pyspark.mllib.evaluation.RankingMetrics, query by query:
    each query's ranked docs (score descending, ties in input order) and its relevant docs.
    Spark's nDCG from Python is binary (the relevance values are dropped on the way)."""
    from pyspark.mllib.evaluation import RankingMetrics

    run, qrels = random_corpus(5, n_queries=12, max_docs=20)
    measures = ["P@5", "map", "map@5", "ndcg@5", "recall@10"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        ours = pr.evaluate(run, qrels, measures, conventions="spark")
    relevant = qrels.filter(pl.col("relevance") >= 1)
    compared = 0
    for row in ours.iter_rows(named=True):
        q = row["query"]
        ranked = run.filter(pl.col("query") == q).with_row_index("row")
        ranked = ranked.sort(["score", "row"], descending=[True, False])["doc"].to_list()
        labels = relevant.filter(pl.col("query") == q)["doc"].to_list()
        if not labels:  # Spark cannot infer the type of an empty list from Python
            assert all(v == 0 for k, v in row.items() if k != "query")
            continue
        spark_metrics = RankingMetrics(spark.sparkContext.parallelize([(ranked, labels)], 1))
        want = [
            spark_metrics.precisionAt(5),
            spark_metrics.meanAveragePrecision,
            spark_metrics.meanAveragePrecisionAt(5),
            spark_metrics.ndcgAt(5),
            spark_metrics.recallAt(10),
        ]
        got = [row[c] for c in ["P@5", "AP(norm=min)", "AP(norm=min)@5",
                                "nDCG(gain=binary)@5", "R@10"]]  # fmt: skip
        assert got == pytest.approx(want, abs=1e-9, rel=0), q
        compared += 1
    assert compared >= 5


def test_presets_on_spark(spark):
    """Tie-averaged and doc-id tie rules do not depend on row order: Spark gives the
    in-process values (sklearn's retrieved-only judgments, ir_measures' absent zeros)."""
    run, qrels = random_corpus(8, n_queries=20)
    run_sdf, qrels_sdf = to_spark(spark, run), to_spark(spark, qrels)
    for conventions, measures in [("sklearn", ["ndcg@5", "dcg@3"]), ("ir_measures", ["AP", "P@5"])]:
        expected = evaluate_quietly(run, qrels, measures, conventions=conventions)
        got = prs.evaluate(run_sdf, qrels_sdf, measures, conventions=conventions)
        assert_same(collect(got, ["query"]), expected)


def _discounted_precision(k: int) -> pl.Expr:
    """DP@k = (1/k) * sum over relevant documents at ranks i <= k of 1 / log2(i + 1)."""
    hit = (pl.col("relevance") >= 1) & (pl.col("rank") <= k)
    return (hit.cast(pl.Float64) / (pl.col("rank").cast(pl.Float64) + 1).log(2)).sum() / k


def test_a_declared_measure_travels_to_the_executors(spark):
    # The executors' Python workers never ran define_measure: the job carries it.
    pr.define_measure("DP", _discounted_precision, cutoff="required", bounds=(0, 1))
    run = pl.DataFrame({"query": ["q1"] * 3 + ["q2"] * 2, "doc": ["a", "b", "c", "d", "e"],
                        "score": [3.0, 2.0, 1.0, 2.0, 1.0]})  # fmt: skip
    qrels = pl.DataFrame({"query": ["q1", "q1", "q2"], "doc": ["a", "c", "e"], "relevance": 1})
    sdf = prs.evaluate(to_spark(spark, run), to_spark(spark, qrels), ["DP@2", "DP@3", "AP"])
    got = collect(sdf, ["query"])
    third = 1 / math.log2(3)
    assert got["query"].to_list() == ["q1", "q2"]
    assert got["DP@2"].to_list() == pytest.approx([1 / 2, third / 2], abs=1e-12)
    assert got["DP@3"].to_list() == pytest.approx([1.5 / 3, third / 3], abs=1e-12)
    corpus_run, corpus_qrels = random_corpus(8, n_queries=40, systems=2)
    measures = ["DP@5", "DP@10", "nDCG@10"]
    sdf = prs.evaluate(to_spark(spark, corpus_run), to_spark(spark, corpus_qrels), measures)
    assert_same(
        collect(sdf, ["system", "query"]), evaluate_quietly(corpus_run, corpus_qrels, measures)
    )
