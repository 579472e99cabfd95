"""The frames users already hold: pandas, Arrow, anything with the Arrow stream interface,
and the nested dicts of pytrec_eval and ranx, turned into Polars frames at the door.

Every entry point (``evaluate``, ``evaluate_judged``, ``judge``, ``coverage``,
``compare``, ``summarize``, ...) calls :func:`as_frame` first; the rest of the
library sees only Polars. Conversion goes through Arrow, without a copy where
Polars can share the buffers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, overload

import numpy as np
import polars as pl

from polars_rankeval._typing import ArrowStreamExportable, FrameT, NestedDict, PolarsFrame
from polars_rankeval.validation import fresh_name


@overload
def as_frame(obj: FrameT, name: str, columns: tuple[str, str, str] | None = None) -> FrameT: ...
@overload
def as_frame(
    obj: ArrowStreamExportable | NestedDict, name: str, columns: tuple[str, str, str] | None = None
) -> pl.DataFrame: ...
def as_frame(
    obj: object, name: str, columns: tuple[str, str, str] | None = None
) -> pl.DataFrame | pl.LazyFrame:
    """``obj`` as a Polars DataFrame or LazyFrame (Polars frames pass through; anything
    else becomes a DataFrame).

    Parameters
    ----------
    obj
        A Polars DataFrame or LazyFrame; a pandas DataFrame; a pyarrow Table or
        RecordBatch; any object with the Arrow PyCapsule stream interface
        (``__arrow_c_stream__``: DuckDB results, ...); or a nested dict
        ``{query: {doc: value}}`` as pytrec_eval and ranx take (runs: scores,
        qrels: grades).
    name
        The argument's name, for errors (``"run"``, ``"qrels"``, ...).
    columns
        Names of the (query, doc, value) columns a nested dict becomes; None
        when a dict makes no sense for this argument.

    Examples
    --------
    >>> as_frame({"q1": {"d1": 2.0, "d2": 1.0}}, "run", ("query", "doc", "score"))
    shape: (2, 3)
    ┌───────┬─────┬───────┐
    │ query ┆ doc ┆ score │
    │ ---   ┆ --- ┆ ---   │
    │ str   ┆ str ┆ f64   │
    ╞═══════╪═════╪═══════╡
    │ q1    ┆ d1  ┆ 2.0   │
    │ q1    ┆ d2  ┆ 1.0   │
    └───────┴─────┴───────┘
    """
    if isinstance(obj, pl.DataFrame | pl.LazyFrame):
        return obj
    if isinstance(obj, Mapping) and columns is not None:
        return _from_nested(obj, name, columns)
    module = type(obj).__module__.split(".")[0]
    if module == "pandas" and hasattr(obj, "columns"):
        return _from_pandas(obj, name)
    if module == "pyarrow" and hasattr(obj, "schema"):  # a Table or RecordBatch: no copy
        table = pl.from_arrow(obj)
        if isinstance(table, pl.DataFrame):
            return table
    if hasattr(obj, "__arrow_c_stream__"):
        return pl.DataFrame(obj)
    kind = type(obj).__qualname__ if module == "builtins" else f"{module}.{type(obj).__qualname__}"
    accepted = "a Polars DataFrame or LazyFrame, a pandas DataFrame, a pyarrow Table"
    if columns is not None:
        accepted += ", a {query: {doc: value}} dict"
    msg = f"{name} must be {accepted}, or an object with __arrow_c_stream__. Got {kind}."
    raise TypeError(msg)


def _from_nested(obj: Mapping[Any, Any], name: str, columns: tuple[str, str, str]) -> pl.DataFrame:
    """``{query: {doc: value}}`` -> ``query, doc, value`` rows (in the dicts' order)."""
    query, doc, value = columns
    queries, docs, values = [], [], []
    for q, ranking in obj.items():
        if not isinstance(ranking, Mapping):
            msg = (
                f"{name} as a dict must map each query to a {{doc: value}} dict. "
                f"Query {q!r} maps to {type(ranking).__name__}."
            )
            raise TypeError(msg)
        queries += [q] * len(ranking)
        docs += list(ranking)
        values += list(ranking.values())
    return pl.DataFrame({query: queries, doc: docs, value: values}, strict=False)


def check_not_swapped(
    run_schema: pl.Schema, qrels_schema: pl.Schema, *, score: str, relevance: str
) -> None:
    """Raise when run and qrels look passed the other way round (ranx and pytrec_eval
    take qrels first; here the run comes first).

    Examples
    --------
    >>> run = pl.Schema({"query": pl.String, "doc": pl.String, "relevance": pl.Int64})
    >>> qrels = pl.Schema({"query": pl.String, "doc": pl.String, "score": pl.Float64})
    >>> check_not_swapped(run, qrels, score="score", relevance="relevance")
    Traceback (most recent call last):
    ...
    ValueError: The run has a 'relevance' column and no 'score', and qrels the other way ...
    """
    if (
        score not in run_schema
        and relevance in run_schema
        and score in qrels_schema
        and relevance not in qrels_schema
    ):
        msg = (
            f"The run has a {relevance!r} column and no {score!r}, and qrels the other way "
            f"round: were they passed in the wrong order? polars_rankeval takes (run, qrels); "
            f"ranx and pytrec_eval take qrels first."
        )
        raise ValueError(msg)


ENGINE_PREFIX = "__rk_"
"""The prefix of the engine's own column names (:mod:`polars_rankeval.engine.shape`)."""
JOINED_QUERY = "__rk_query"
"""The one id column a compound query id (``query=[...]``) becomes."""
JOINED_DOC = "__rk_doc"
"""The one id column a compound doc id (``doc=[...]``) becomes."""


def joined_id(parts: Sequence[str]) -> pl.Expr:
    """One string id from several columns, in their order.

    Each part is written as a string with its NUL characters doubled as
    ``\\x00\\x01``, and parts are joined by ``\\x00\\x00``: two different
    tuples never give the same id, and ids compare as the tuples of their
    parts' strings do (byte by byte), so ties break by the parts in order.

    Examples
    --------
    >>> df = pl.DataFrame({"user": ["u1", "u1"], "session": [7, 12]})
    >>> df.select(joined_id(["user", "session"])).to_series().to_list()
    ['u1\\x00\\x007', 'u1\\x00\\x0012']
    """
    escaped = [
        pl.col(p).cast(pl.String).str.replace_all("\x00", "\x00\x01", literal=True) for p in parts
    ]
    return pl.concat_str(escaped, separator="\x00\x00")


def id_columns(
    name: str | Sequence[str], joined: str, argument: str, taken: Iterable[str] = ()
) -> tuple[str, tuple[str, ...]]:
    """(the id column the engine reads, the compound parts or ()) for ``query=``/``doc=``.

    Examples
    --------
    >>> id_columns("query", JOINED_QUERY, "query")
    ('query', ())
    >>> id_columns(["user", "session"], JOINED_QUERY, "query")
    ('__rk_query', ('user', 'session'))
    """
    if isinstance(name, str):
        if not name.startswith(ENGINE_PREFIX):
            return name, ()
        # named like an engine column: read through a joined id of one part, whose name
        # is fresh, as a compound id is (the output keeps the user's column)
        return fresh_name(joined, [*taken, name]), (name,)
    parts = tuple(name)
    if not parts or not all(isinstance(p, str) for p in parts):
        msg = f"{argument} must be a column name or a non-empty list of names. Got {name!r}."
        raise TypeError(msg)
    if len(set(parts)) != len(parts):
        msg = f"{argument} names a column twice: {list(parts)}."
        raise ValueError(msg)
    return (parts[0], ()) if len(parts) == 1 else (fresh_name(joined, taken), parts)


def _from_pandas(frame: Any, name: str) -> pl.DataFrame:
    """A pandas frame as Polars; an ImportError for pyarrow names the columns that need it.

    Polars reads numpy-backed columns by itself; pandas 3's default ``str`` columns,
    ``string``, nullable (``Int64``) and Arrow-backed ones go through pyarrow.
    """
    try:
        return pl.from_pandas(frame)
    except ImportError as err:
        if "pyarrow" not in str(err):
            raise
        needs = [
            f"{c!r} ({frame.dtypes[c]})"
            for c in frame.columns
            if not isinstance(frame.dtypes[c], np.dtype)
        ]
        msg = (
            f"Reading the pandas {name} needs pyarrow: its columns {', '.join(needs)} are not "
            f"numpy-backed (pandas 3's default string columns are not). Install it with "
            f"pip install 'polars-rankeval[pandas]' (or pyarrow), or pass a Polars frame."
        )
        raise ImportError(msg) from err


def dict_columns(
    query: str | Sequence[str], doc: str | Sequence[str], value: str
) -> tuple[str, str, str]:
    """The (query, doc, value) columns a nested dict becomes in :func:`as_frame`: a
    compound id (a list of columns) cannot come from a dict, its ids go in ``query``
    and ``doc``.

    Examples
    --------
    >>> dict_columns(["user", "session"], "item", "score")
    ('query', 'item', 'score')
    """
    return (
        query if isinstance(query, str) else "query",
        doc if isinstance(doc, str) else "doc",
        value,
    )


def run_keys(query: str | Sequence[str], system: str | None) -> list[str]:
    """Columns that identify one ranking: ``[system], query`` (a compound query's columns).

    Examples
    --------
    >>> run_keys("query", "system"), run_keys(["user", "session"], None)
    (['system', 'query'], ['user', 'session'])
    """
    queries = [query] if isinstance(query, str) else list(query)
    return queries if system is None else [system, *queries]


def with_joined_ids(frame: PolarsFrame, ids: Sequence[tuple[str, Sequence[str]]]) -> PolarsFrame:
    """``frame`` (Data- or LazyFrame) with each joined id column ``(name, parts)`` whose
    parts it has (a compound id's parts are in both run and qrels)."""
    names = frame.lazy().collect_schema().names()
    added = [
        joined_id(parts).alias(name)
        for name, parts in ids
        if parts and all(p in names for p in parts)
    ]
    return frame.with_columns(added) if added else frame
