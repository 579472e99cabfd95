"""Diversity measures on every way in of the pipeline (issue 36): a lazy Parquet scan at
a tiny ``memory_limit`` (scored as it comes, and bucket by bucket when rankings are
interleaved), and Dask on a real LocalCluster; each equals the DataFrame path and ndeval
(pyndeval) per ranking, and the output goes to ``mean_scores`` and ``compare``."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal
from test_diversity import NAMES, ndeval_values
from test_diversity_ways import systems_corpus
from test_ir_measures import ranked_scores

import polars_rankeval as pr
from polars_rankeval.diversity import parse_diversity

COLUMNS = [str(parse_diversity(n)) for n in NAMES]


def quietly(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        return fn(*args, **kwargs)


def collect(frame):
    return frame.collect() if isinstance(frame, pl.LazyFrame) else frame


def assert_ndeval(got: pl.DataFrame, run: pl.DataFrame, qrels: pl.DataFrame) -> int:
    """Every (system, query) ndeval scores equals ``got`` at 1e-9; the count compared."""
    compared = 0
    for (system,), part in run.partition_by("system", as_dict=True).items():
        theirs = ndeval_values(ranked_scores(part.select("query", "doc", "score")), qrels)
        mine = got.filter(pl.col("system") == system)
        rows = {r["query"]: r for r in mine.iter_rows(named=True)}
        for (query, name), value in theirs.items():
            want = 0.0 if math.isnan(value) else value
            assert rows[query][str(parse_diversity(name))] == pytest.approx(want, abs=1e-9)
            compared += 1
    return compared


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[pl.DataFrame, pl.DataFrame, Path, Path]:
    run, qrels = systems_corpus(11)
    run = run.drop("day")
    folder = tmp_path_factory.mktemp("diversity")
    sorted_path, shuffled_path = folder / "sorted.parquet", folder / "shuffled.parquet"
    run.sort("system", "query").write_parquet(sorted_path, row_group_size=50)
    run.sample(fraction=1.0, shuffle=True, seed=3).write_parquet(shuffled_path, row_group_size=50)
    return run, qrels, sorted_path, shuffled_path


@pytest.mark.parametrize("layout", ["sorted", "shuffled"])
@pytest.mark.parametrize("missing", ["drop", "zero"])
def test_a_lazy_scan_at_a_tiny_memory_limit_equals_the_dataframe_and_ndeval(
    corpus, layout, missing
) -> None:
    run, qrels, sorted_path, shuffled_path = corpus
    path = sorted_path if layout == "sorted" else shuffled_path
    expected = quietly(pr.evaluate_diversity, run, qrels, NAMES, missing=missing)
    lazy = quietly(
        pr.evaluate_diversity, pl.scan_parquet(path), qrels.lazy(), NAMES, missing=missing,
        memory_limit="16KiB",
    )  # fmt: skip
    assert isinstance(lazy, pl.LazyFrame)
    got = quietly(lazy.collect)
    assert_frame_equal(got, expected, abs_tol=1e-12)
    assert got.columns == ["system", "query", *COLUMNS]
    if missing == "zero":  # ndeval scores every qrels query of each system
        assert assert_ndeval(got, run, qrels) > 500


def test_the_lazy_path_refuses_absent_queries_and_bad_rows_by_name(corpus, tmp_path) -> None:
    run, qrels, sorted_path, _ = corpus
    scan = pl.scan_parquet(sorted_path)
    with pytest.raises(ValueError, match="system='sys2'"):
        quietly(lambda: pr.evaluate_diversity(scan, qrels, ["P_IA@5"], missing="error",
                                              memory_limit="16KiB").collect())  # fmt: skip
    bad = run.sort("system", "query").with_columns(
        score=pl.when(pl.int_range(pl.len()) == 137).then(float("nan")).otherwise("score")
    )
    bad.write_parquet(tmp_path / "bad.parquet", row_group_size=50)
    lazy = pr.evaluate_diversity(pl.scan_parquet(tmp_path / "bad.parquet"), qrels, "P_IA@5",
                                 memory_limit="16KiB")  # fmt: skip
    with pytest.raises(ValueError, match="row 137"):
        lazy.collect()


def test_run_queries_without_qrels_are_warned_about_once(corpus) -> None:
    run, qrels, _, _ = corpus
    extra = pl.DataFrame({"query": ["qx", "qy"], "doc": ["d1", "d1"], "score": [1.0, 1.0],
                          "system": ["sys0", "sys1"]})  # fmt: skip
    run = pl.concat([run, extra])
    unjudged = sorted(set(run["query"]) - set(qrels["query"]))
    assert unjudged == ["qx", "qy"]
    with pytest.warns(pr.UnscoredQueriesWarning, match="have no qrels") as caught:
        out = pr.evaluate_diversity(run, qrels, ["P_IA@5"])
    assert len(caught) == 1 and not set(out["query"]) & set(unjudged)


def test_the_output_takes_mean_scores_and_compare(corpus) -> None:
    _, qrels, sorted_path, _ = corpus
    per_query = quietly(
        lambda: pr.evaluate_diversity(pl.scan_parquet(sorted_path), qrels,
                                      ["alpha_nDCG@10", "ERR_IA@10"], missing="zero",
                                      memory_limit="16KiB").collect()
    )  # fmt: skip
    means = pr.mean_scores(per_query)
    assert means.height == 3
    by_hand = per_query.group_by("system").agg(pl.col("alpha_nDCG@10").mean()).sort("system")
    assert means.sort("system")["alpha_nDCG@10"].to_list() == pytest.approx(
        by_hand["alpha_nDCG@10"].to_list(), abs=1e-15
    )
    table = pr.compare(per_query, "alpha_nDCG@10", baseline="sys0", test="t")
    assert table.height == 2 and table["p_value"].is_not_null().all()
    shown = pr.report(per_query, baseline="sys0").frame.filter(measure="alpha_nDCG@10")
    assert shown.sort("system")["mean"].to_list() == pytest.approx(
        by_hand["alpha_nDCG@10"].to_list(), abs=1e-15
    )


def test_unknown_options_are_refused_by_name() -> None:
    from polars_rankeval.diversity import prepare

    schema = pl.Schema({"query": pl.String, "doc": pl.String, "score": pl.Float64})
    qrels = pl.Schema({"query": pl.String, "subtopic": pl.String, "doc": pl.String,
                       "relevance": pl.Int64})  # fmt: skip
    with pytest.raises(TypeError, match="'rel_level'"):
        prepare(schema, qrels, "P_IA@5", {"rel_level": 2})


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
        dashboard_address=None, memory_limit="1GiB",
    )  # fmt: skip
    with distributed.Client(cluster, set_as_default=False) as c:
        yield c
    cluster.close()


@pytest.mark.dask
class TestDask:
    @pytest.mark.parametrize("source", ["parquet", "frames", "lazy"])
    def test_dask_equals_the_dataframe_and_ndeval(self, client, corpus, tmp_path, source):
        prd = pytest.importorskip("polars_rankeval.dask")
        run, qrels, _, shuffled_path = corpus
        qrels_path = tmp_path / "qrels.parquet"
        qrels.write_parquet(qrels_path)
        inputs = {
            "parquet": (str(shuffled_path), str(qrels_path)),
            "frames": (run, qrels),
            "lazy": (pl.scan_parquet(shuffled_path), qrels),
        }[source]
        expected = quietly(pr.evaluate_diversity, run, qrels, NAMES, missing="zero")
        got = quietly(prd.evaluate_diversity, *inputs, NAMES, missing="zero", client=client,
                      npartitions=5)  # fmt: skip
        assert_frame_equal(got, expected, abs_tol=1e-12)
        assert assert_ndeval(got, run, qrels) > 500

    def test_dask_refuses_absent_queries_and_bad_rows(self, client, corpus, tmp_path):
        prd = pytest.importorskip("polars_rankeval.dask")
        run, qrels, sorted_path, _ = corpus
        with pytest.raises(ValueError, match="system='sys2'"):
            quietly(prd.evaluate_diversity, str(sorted_path), qrels, ["P_IA@5"],
                    missing="error", client=client)  # fmt: skip
        bad = qrels.with_columns(
            relevance=pl.when(pl.int_range(pl.len()) == 5).then(None).otherwise("relevance")
        )
        bad.write_parquet(tmp_path / "bad.parquet")
        with pytest.raises(ValueError, match=r"bad\.parquet"):
            prd.evaluate_diversity(run, str(tmp_path / "bad.parquet"), ["P_IA@5"], client=client)


@pytest.fixture(scope="module")
def spark():
    pytest.importorskip("pyspark")
    from test_spark import local_spark

    yield from local_spark()


@pytest.mark.spark
@pytest.mark.parametrize("missing", ["drop", "zero"])
def test_spark_equals_the_dataframe_and_ndeval(spark, corpus, missing) -> None:
    prs = pytest.importorskip("polars_rankeval.spark")
    run, qrels, _, _ = corpus
    arrow = [f.to_arrow(compat_level=pl.CompatLevel.oldest()) for f in (run, qrels)]
    run_sdf, qrels_sdf = (spark.createDataFrame(a) for a in arrow)
    scores = prs.evaluate_diversity(run_sdf, qrels_sdf, NAMES, missing=missing, num_buckets=3)
    got = pl.from_arrow(scores.toArrow()).sort("system", "query")
    expected = quietly(pr.evaluate_diversity, run, qrels, NAMES, missing=missing)
    assert_frame_equal(got, expected, abs_tol=1e-12)
    if missing == "zero":
        assert assert_ndeval(got, run, qrels) > 500
    with pytest.raises(ValueError, match="system='sys2'"):
        prs.evaluate_diversity(run_sdf, qrels_sdf, ["P_IA@5"], missing="error")
