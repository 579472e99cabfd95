"""A column with two roles is refused by name before any work, and id columns may be named
like the engine's own columns (issue 37): ``query="system"`` with the default ``system``
ended in Polars' DuplicateError, a query column named ``__rk_fact`` in a SchemaError and
``judge`` with a doc column named ``__rk_ranking`` in a ColumnNotFoundError. (System and
segment columns with such names: tests/test_reliability.py.)"""

from __future__ import annotations

import polars as pl
import pytest

import polars_rankeval as pr
from polars_rankeval.engine import shape

ENGINE_COLUMNS = sorted(
    v
    for k, v in vars(shape).items()
    if k.isupper() and isinstance(v, str) and v.startswith("__rk_")
)


def frames(query: str = "q", doc: str = "doc") -> tuple[pl.DataFrame, pl.DataFrame]:
    run = pl.DataFrame({query: ["a", "a", "b"], doc: ["x", "y", "x"], "score": [1.0, 2.0, 3.0]})
    qrels = pl.DataFrame({query: ["a", "b"], doc: ["x", "x"], "relevance": [1, 1]})
    return run, qrels


WAYS = {
    "evaluate": lambda run, qrels, **kw: pr.evaluate(run, qrels, ["P@1", "AP"], **kw),
    "lazy": lambda run, qrels, **kw: pr.evaluate(run.lazy(), qrels, ["P@1", "AP"], **kw).collect(),
    "judge": lambda run, qrels, **kw: pr.judge(run, qrels, **kw),
}


def test_there_are_engine_columns_to_collide_with() -> None:
    assert len(ENGINE_COLUMNS) >= 10


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("name", [*ENGINE_COLUMNS, "__rk_query", "__rk_doc"])
def test_id_columns_named_like_engine_columns_give_the_same_values(way: str, name: str) -> None:
    expected = WAYS[way](*frames(), query="q")
    run, qrels = frames(query=name)
    got = WAYS[way](run, qrels, query=name)
    assert got.columns == [name, *expected.columns[1:]]
    assert got.rename({name: "q"}).equals(expected)
    run, qrels = frames(doc=name)
    got = WAYS[way](run, qrels, query="q", doc=name)
    assert got.equals(expected.rename({"doc": name}) if way == "judge" else expected)


@pytest.mark.parametrize("way", WAYS)
def test_query_named_system_needs_system_none(way: str) -> None:
    run, qrels = frames(query="system")
    with pytest.raises(ValueError, match="query and system both name the column 'system'"):
        WAYS[way](run, qrels, query="system")
    out = WAYS[way](run, qrels, query="system", system=None)
    assert sorted(out["system"].unique().to_list()) == ["a", "b"]


def test_doc_and_query_naming_one_column_is_refused() -> None:
    run, qrels = frames()
    with pytest.raises(ValueError, match="query and doc both name the column 'q'"):
        pr.evaluate(run, qrels, ["P@1"], query="q", doc="q")


def test_the_input_frames_are_left_alone() -> None:
    run, qrels = frames(query="system")
    before = run.clone(), qrels.clone()
    with pytest.raises(ValueError):
        pr.evaluate(run, qrels, ["P@1"], query="system")
    assert run.equals(before[0]) and qrels.equals(before[1])


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"query": "__rk_fact"}, r"query column '__rk_fact' is named like the engine's own"),
        ({"doc": "__rk_doc"}, r"doc column '__rk_doc' is named like the engine's own"),
        ({"query": ["q", "session"]}, r"Compound ids \(query=\[\.\.\.\]"),
    ],
)
def test_dask_and_spark_name_why_they_refuse_an_id(options: dict, match: str) -> None:
    """Dask and Spark (their shared driver step, ``pieces.prepare``) do not read an id
    column named like the engine's columns: the error said "Compound ids (query=[...])"
    for a single column."""
    from polars_rankeval import pieces

    names = [*(v if isinstance(v, list) else [v] for v in options.values())]
    columns = {n: pl.String for part in names for n in part}
    run = pl.Schema({"q": pl.String, "doc": pl.String, "score": pl.Float64} | columns)
    qrels = pl.Schema({"q": pl.String, "doc": pl.String, "relevance": pl.Int64} | columns)
    with pytest.raises(ValueError, match=match):
        pieces.prepare(run, qrels, ["AP"], {"query": "q"} | options)


def test_dask_names_an_engine_named_query_column(client) -> None:
    pytest.importorskip("distributed")
    from polars_rankeval import dask as prd

    run, qrels = frames(query="__rk_fact")
    with pytest.raises(ValueError, match="named like the engine's own columns"):
        prd.evaluate(run, qrels, ["AP"], query="__rk_fact", client=client)
