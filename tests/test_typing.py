"""What a type checker sees: lazy in, lazy out; anything else in, a DataFrame out.

The functions' ``@overload`` signatures are checked by running mypy (the ``dev``
extra) on a small program with ``assert_type``; a ``# type: ignore`` marks a call
that must stay an error (the configuration warns about an ignore that is not needed).
"""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PROGRAM = """
from typing import assert_type

import polars as pl

import polars_rankeval as pr
from polars_rankeval.namespace import DataFrameRankEval, LazyFrameRankEval


class Stream:  # what pandas, pyarrow and DuckDB frames have
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        return None


df = pl.DataFrame({"query": ["q"], "doc": ["d"], "score": [1.0]})
lf = df.lazy()
qrels = {"q": {"d": 1}}
either: pl.DataFrame | pl.LazyFrame = df

assert_type(pr.evaluate(df, qrels, "AP"), pl.DataFrame)
assert_type(pr.evaluate(lf, qrels, "AP"), pl.LazyFrame)
assert_type(pr.evaluate(either, lf, "AP"), pl.DataFrame | pl.LazyFrame)
assert_type(pr.evaluate(Stream(), qrels, "AP"), pl.DataFrame)
assert_type(pr.evaluate({"q": {"d": 1.0}}, qrels, "AP"), pl.DataFrame)
assert_type(pr.evaluate_judged(lf, "AP"), pl.LazyFrame)
assert_type(pr.evaluate_judged(Stream(), "AP"), pl.DataFrame)
assert_type(pr.mean_scores(lf), pl.LazyFrame)
assert_type(pr.ctr_by_position(lf), pl.LazyFrame)
assert_type(pr.ctr_by_position(Stream()), pl.DataFrame)
assert_type(pr.coec(lf), pl.LazyFrame)
assert_type(pr.coec(df), pl.DataFrame)
assert_type(pr.qrels_from_clicks(lf, thresholds=[1.0]), pl.LazyFrame)
assert_type(pr.click_metrics(lf, df, df), pl.LazyFrame)
assert_type(pr.click_metrics(Stream(), df, df), pl.DataFrame)
assert_type(pr.interleaving_outcomes(lf), pl.LazyFrame)
assert_type(pr.interleaving_outcomes(df), pl.DataFrame)
assert_type(pr.off_policy(lf), pl.DataFrame)
assert_type(pr.judge(lf, qrels), pl.LazyFrame)
assert_type(pr.judge(df, lf), pl.DataFrame)
assert_type(pr.rank_run(lf), pl.LazyFrame)
assert_type(pr.precision_recall_curve(lf, qrels), pl.LazyFrame)
assert_type(pr.precision_recall_curve(df), pl.DataFrame)
assert_type(pr.coverage(lf, qrels), pl.DataFrame)
assert_type(pr.compare(lf), pl.DataFrame)
assert_type(pr.make_pool(lf), pl.LazyFrame)
assert_type(pr.make_pool([df, Stream()]), pl.DataFrame)
assert_type(pr.make_pool({"a": lf, "b": lf}), pl.LazyFrame)
assert_type(pr.make_pool([df, lf]), pl.DataFrame | pl.LazyFrame)
assert_type(pr.pool_coverage(lf, df), pl.LazyFrame)
assert_type(pr.pool_coverage(df, df), pl.DataFrame)
assert_type(pr.pool_coverage(df, lf), pl.DataFrame | pl.LazyFrame)
assert_type(pr.unjudged(df, Stream()), pl.DataFrame)
assert_type(pr.agreement([lf, df]), pl.DataFrame)
assert_type(pr.summarize(Stream()), pl.DataFrame)
assert_type(DataFrameRankEval(df).evaluate(qrels, "AP"), pl.DataFrame)
assert_type(LazyFrameRankEval(lf).judge(qrels), pl.LazyFrame)

pr.evaluate(1, qrels, "AP")  # type: ignore[call-overload]
pr.evaluate_judged({"q": {"d": 1}}, "AP")  # type: ignore[call-overload]
"""


def test_frames_keep_their_kind_for_type_checkers(tmp_path, monkeypatch):
    api = pytest.importorskip("mypy.api", reason="mypy comes with the dev extra")
    program = tmp_path / "frames.py"
    program.write_text(PROGRAM)
    monkeypatch.chdir(ROOT)  # the package's sources and its [tool.mypy] configuration
    out, err, status = api.run([str(program), "--cache-dir", str(tmp_path / "cache")])
    assert (status, err) == (0, ""), out
