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
