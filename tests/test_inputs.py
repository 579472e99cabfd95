"""Frames users already hold (pandas, Arrow, nested dicts) give the Polars results exactly."""

from __future__ import annotations

import warnings

import polars as pl
import pyarrow as pa
import pytest
from corpus import random_corpus
from polars.testing import assert_frame_equal

import polars_rankeval as pr

MEASURES = ["AP", "nDCG@5", "P@3", "RR", "Bpref"]


@pytest.fixture(scope="module")
def corpus() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    run, qrels = random_corpus(50, n_queries=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        want = pr.evaluate(run, qrels, MEASURES)
    return run, qrels, want


def quietly(call, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        return call(*args, **kw)


@pytest.mark.parametrize("kind", ["pandas", "arrow", "capsule"])
def test_pandas_arrow_and_capsule_inputs(corpus, kind):
    run, qrels, want = corpus
    convert = {
        "pandas": lambda f: f.to_pandas(),
        "arrow": lambda f: f.to_arrow(),
        "capsule": lambda f: _Capsule(f.to_arrow()),
    }[kind]
    got = quietly(pr.evaluate, convert(run), convert(qrels), MEASURES)
    assert isinstance(got, pl.DataFrame)
    assert_frame_equal(got, want)
    judged = pr.judge(run, qrels)
    assert_frame_equal(quietly(pr.evaluate_judged, convert(judged), MEASURES),
                       quietly(pr.evaluate_judged, judged, MEASURES))  # fmt: skip
    assert_frame_equal(pr.summarize(convert(want)), pr.summarize(want))
    assert_frame_equal(pr.mean_scores(convert(want)), pr.mean_scores(want))


class _Capsule:
    """Only the Arrow PyCapsule stream interface, as DuckDB's results offer."""

    def __init__(self, table: pa.Table) -> None:
        self._table = table

    def __arrow_c_stream__(self, requested_schema=None):
        return self._table.__arrow_c_stream__(requested_schema)


def test_pytrec_eval_and_ranx_style_dicts(corpus):
    run, qrels, want = corpus
    run_d: dict[str, dict[str, float]] = {}
    for q, d, s in run.iter_rows():
        run_d.setdefault(q, {})[d] = s
    qrels_d: dict[str, dict[str, int]] = {}
    for q, d, g in qrels.iter_rows():
        qrels_d.setdefault(q, {})[d] = g
    assert_frame_equal(quietly(pr.evaluate, run_d, qrels_d, MEASURES), want)


def test_swapped_arguments_are_named():
    run = pl.DataFrame({"query": ["q"], "doc": ["a"], "score": [1.0]})
    qrels = pl.DataFrame({"query": ["q"], "doc": ["a"], "relevance": [1]})
    with pytest.raises(ValueError, match=r"passed in the wrong order.*takes \(run, qrels\)"):
        pr.evaluate(qrels, run, ["AP"])


@pytest.mark.parametrize("bad", [[1, 2, 3], "run.tsv", 3.5, None])
def test_other_objects_are_refused_naming_the_type(bad):
    qrels = pl.DataFrame({"query": ["q"], "doc": ["a"], "relevance": [1]})
    with pytest.raises(TypeError, match=r"run must be a Polars DataFrame or LazyFrame.*Got "):
        pr.evaluate(bad, qrels, ["AP"])


@pytest.mark.parametrize("lazy", [False, True])
def test_boolean_relevance_everywhere(corpus, lazy):
    run, qrels, _ = corpus
    flags = qrels.with_columns(relevance=pl.col("relevance") >= 1)
    ints = qrels.with_columns(relevance=(pl.col("relevance") >= 1).cast(pl.Int64))
    measures = ["AP", "P@3", "Bpref", "nDCG"]
    if lazy:
        got = quietly(lambda: pr.evaluate(run.lazy(), flags.lazy(), measures).collect())
    else:
        got = quietly(pr.evaluate, run, flags, measures)
    assert_frame_equal(got, quietly(pr.evaluate, run, ints, measures))


NO_PYARROW = """
import importlib.abc, sys


class NoPyarrow(importlib.abc.MetaPathFinder):  # pyarrow as if it were not installed
    def find_spec(self, name, path, target=None):
        if name == "pyarrow" or name.startswith("pyarrow."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


sys.meta_path.insert(0, NoPyarrow())
import pandas as pd
import polars_rankeval as pr

run = pd.DataFrame({"query": pd.array(["a", "a"], dtype="string[python]"),
                    "doc": ["x", "y"], "score": [1.0, 2.0]})
qrels = pd.DataFrame({"query": ["a"], "doc": ["x"], "relevance": [1]})
try:
    pr.evaluate(run, qrels, ["P@1"])
except ImportError as err:
    print(err)
numeric = pd.DataFrame({"query": [1, 1], "doc": [5, 6], "score": [1.0, 2.0]})
print(pr.evaluate(numeric, {"1": {"6": 1}}, ["P@1"])["P@1"].to_list())
"""


def test_a_pandas_string_column_without_pyarrow_names_the_column_and_the_extra() -> None:
    """pandas 3's string columns need pyarrow to become Polars: the error says which
    columns and what to install, where Polars' raw ImportError said neither."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", NO_PYARROW], capture_output=True, text=True, check=True
    )
    first, second = done.stdout.strip().splitlines()
    assert "Reading the pandas run needs pyarrow" in first
    assert "'query' (string)" in first and "polars-rankeval[pandas]" in first
    assert second == "[1.0]"  # numpy-backed columns need no pyarrow
