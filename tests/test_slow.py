"""Heavy conformance checks, kept out of the default run: ``python -m pytest -m slow``.

The default suite compares the library with trec_eval (pytrec-eval-terrier) on many
small random corpora. These checks do the same at the size of a real evaluation, and
with many more generated cases:

* every trec_eval measure (``all_trec``) on a corpus of long, tie-heavy rankings with
  five grades, at two relevance levels;
* a run of several systems, scored from every way in (a DataFrame, shuffled, in many
  chunks, a LazyFrame on the default and the streaming engine, a Parquet scan), each
  equal to trec_eval for each system;
* thousands of hypothesis-generated small rankings against the whole ``all_trec`` set.

They take minutes; run them before a change to ranking, ties, |R| or a measure lands.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import polars as pl
import pytest
from corpus import mismatches, pytrec_reference, random_corpus
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from test_catalogue_conformance import catalogue_mismatches
from test_conformance import CORE, EXTRA, scored, tiny_corpus

pytestmark = pytest.mark.slow
MEASURES = CORE + EXTRA


@pytest.mark.parametrize("rel_level", [1, 3])
def test_long_tied_rankings_every_trec_measure(rel_level: int) -> None:
    run, qrels = random_corpus(
        2024, n_queries=1000, max_docs=1000, tie_levels=40, grades=(-1, 0, 0, 0, 1, 1, 2, 3, 4)
    )
    assert run.height > 400_000
    assert catalogue_mismatches(run, qrels, rel_level) == []


@cache
def systems_corpus() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(run of 3 systems, qrels, the library's per-query values on the DataFrame)."""
    run, qrels = random_corpus(77, n_queries=1000, max_docs=600, tie_levels=20, systems=3)
    return run, qrels, scored(run, qrels, MEASURES)


def test_many_systems_equal_trec_eval_each() -> None:
    run, qrels, ours = systems_corpus()
    assert run.height > 800_000
    assert ours["system"].n_unique() == 3
    for (name,), part in run.group_by("system"):
        reference = pytrec_reference(part.drop("system"), qrels, MEASURES)
        mine = ours.filter(pl.col("system") == name).drop("system")
        assert mismatches(mine, reference, MEASURES) == [], name


def _chunked(run: pl.DataFrame) -> pl.DataFrame:
    chunked = pl.concat([run.slice(i, 7_919) for i in range(0, run.height, 7_919)], rechunk=False)
    assert chunked.n_chunks() > 20
    return chunked


def _parquet(run: pl.DataFrame, folder: Path) -> pl.LazyFrame:
    run.write_parquet(folder / "run.parquet", row_group_size=50_000)
    return pl.scan_parquet(folder / "run.parquet")


def _lazy(run: pl.LazyFrame, qrels: pl.DataFrame, engine: str) -> pl.DataFrame:
    return scored(run, qrels.lazy(), MEASURES).collect(engine=engine)


WAYS_IN = {  # way in -> per-query values, from (run, qrels, a scratch folder)
    "shuffled": lambda run, qrels, _: scored(run.sample(fraction=1.0, shuffle=True, seed=5),
                                             qrels, MEASURES),
    "many-chunks": lambda run, qrels, _: scored(_chunked(run), qrels, MEASURES),
    "lazy": lambda run, qrels, _: _lazy(run.lazy(), qrels, "auto"),
    "lazy-streaming": lambda run, qrels, _: _lazy(run.lazy(), qrels, "streaming"),
    "parquet-streaming": lambda run, qrels, tmp: _lazy(_parquet(run, tmp), qrels, "streaming"),
}  # fmt: skip


@pytest.mark.parametrize("way", list(WAYS_IN))
def test_many_systems_every_way_in(way: str, tmp_path: Path) -> None:
    run, qrels, expected = systems_corpus()
    got = WAYS_IN[way](run, qrels, tmp_path)
    # The lazy plan sums some zero terms too: equal up to float summation order.
    assert_frame_equal(got, expected, check_exact=False, rel_tol=0, abs_tol=1e-14)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpus=tiny_corpus(), rel_level=st.sampled_from([1, 2]))
def test_many_small_rankings_every_trec_measure(corpus, rel_level: int) -> None:
    run, qrels = corpus
    assert catalogue_mismatches(run, qrels, rel_level) == []
