"""Options: checked once, at the API boundary, into one frozen object.

:func:`run_options` turns :func:`polars_rankeval.evaluate`'s keyword options
and the run's and qrels' schemas into an :class:`Options`, raising on a bad
value, a missing column or a dtype that cannot work, before any data is read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, get_args

import polars as pl

from polars_rankeval._typing import Duplicates, Empty, Missing, Order
from polars_rankeval.conventions import Conventions, get_conventions
from polars_rankeval.engine.plan import Options
from polars_rankeval.inputs import JOINED_DOC, JOINED_QUERY, check_not_swapped, id_columns
from polars_rankeval.validation import (
    check_choice,
    check_columns,
    check_grade_dtype,
    check_id_dtypes,
    check_int,
    check_score_dtype,
    system_column,
)


@dataclass(frozen=True)
class Rule:
    """What one keyword option may be: one of ``choices``, an int of at least
    ``minimum``, or a bool; None too when ``none``."""

    choices: tuple[Any, ...] = ()
    minimum: int | None = None
    boolean: bool = False
    none: bool = False

    def check(self, name: str, value: Any) -> None:
        """Raise naming the option and what it may be."""
        if value is None and self.none:
            return
        if self.choices:
            check_choice(name, value, self.choices)
        elif self.minimum is not None:
            check_int(name, value, minimum=self.minimum, allow_none=self.none)
        elif self.boolean and not isinstance(value, bool):
            msg = f"{name} must be True or False. Got {value!r} instead."
            raise TypeError(msg)


OPTION_RULES: Mapping[str, Rule] = {
    "order": Rule(choices=get_args(Order)),
    "missing": Rule(choices=get_args(Missing)),
    "empty_queries": Rule(choices=get_args(Empty)),
    "duplicates": Rule(choices=get_args(Duplicates)),
    "rel_level": Rule(minimum=0),
    "depth": Rule(minimum=0, none=True),
    "per_query": Rule(boolean=True),
    "validate": Rule(boolean=True),
}
"""The keyword options whose values are checked alone, declared (``missing`` and
``rel_level`` after the conventions gave their defaults); their columns and dtypes
are checked against the schemas by :func:`run_options`."""


def check_options(values: Mapping[str, Any]) -> None:
    """Check each option of ``values`` against its rule in :data:`OPTION_RULES`.

    Examples
    --------
    >>> check_options({"order": "score", "depth": None})
    >>> check_options({"depth": -1})
    Traceback (most recent call last):
    ...
    ValueError: depth must be an int >= 0 or None. Got -1 instead.
    """
    for name, value in values.items():
        OPTION_RULES[name].check(name, value)


def run_options(
    run_schema: pl.Schema,
    qrels_schema: pl.Schema,
    *,
    query: str | Sequence[str] = "query",
    doc: str | Sequence[str] = "doc",
    score: str = "score",
    relevance: str = "relevance",
    rank: str = "rank",
    system: str | None = "system",
    by: str | Sequence[str] | None = None,
    rel_level: int | None = None,
    order: Order = "score",
    depth: int | None = None,
    missing: Missing | None = None,
    empty_queries: Empty | None = None,
    duplicates: Duplicates = "error",
    conventions: str | Conventions | None = None,
) -> Options:
    """Check the options and the schemas; the :class:`Options` to score with.

    ``system`` is kept only when the run has that column; ``by`` columns must
    be in the run. A list of columns for ``query`` or ``doc`` is a compound id:
    the engine reads one id joined from them (:func:`polars_rankeval.inputs.joined_id`),
    which :func:`polars_rankeval.inputs.with_joined_ids` adds to the frames.
    ``missing``, ``empty_queries`` and ``rel_level`` not given: the conventions'
    choices; ``empty_queries`` given replaces the conventions' choice.
    """
    conv = get_conventions(conventions)
    missing = conv.option("missing", missing)
    rel_level = conv.option("rel_level", rel_level)
    empty_queries = conv.option("empty_queries", empty_queries)
    check_options(
        {"order": order, "missing": missing, "duplicates": duplicates,
         "rel_level": rel_level, "depth": depth, "empty_queries": empty_queries}
    )  # fmt: skip
    if empty_queries != conv.empty_queries:
        conv = replace(conv, empty_queries=empty_queries)
    taken = [*run_schema.names(), *qrels_schema.names()]
    query, query_parts = id_columns(query, JOINED_QUERY, "query", taken)
    doc, doc_parts = id_columns(doc, JOINED_DOC, "doc", taken)
    system = system_column(system, run_schema)
    ids = [*(query_parts or [query]), *(doc_parts or [doc])]
    check_roles(
        {"query": query_parts or [query], "doc": doc_parts or [doc], "system": [system],
         "score": [score if order == "score" else None],
         "rank": [rank if order == "rank" else None]}
    )  # fmt: skip
    segments = segment_columns(by, run_schema, taken=[*ids, score, rank, system])
    check_roles({"by": segments})
    check_not_swapped(run_schema, qrels_schema, score=score, relevance=relevance)
    for keyword, names in (("query", query_parts or [query]), ("doc", doc_parts or [doc])):
        for name in names:
            check_columns(run_schema, {keyword: name}, "run")
            check_columns(qrels_schema, {keyword: name}, "qrels")
    ordering = {"score": {"score": score}, "rank": {"rank": rank}, "presorted": {}}[order]
    check_columns(run_schema, ordering, "run")
    check_columns(qrels_schema, {"relevance": relevance}, "qrels")
    if order == "score":
        check_score_dtype(run_schema, score)
    if order == "rank":
        check_rank_dtype(run_schema, rank)
    check_grade_dtype(qrels_schema, relevance)
    check_id_dtypes(run_schema, qrels_schema, ids)
    return Options(
        query,
        doc,
        score,
        relevance,
        rank,
        system,
        segments,
        query_parts,
        doc_parts,
        rel_level,
        order,
        depth,
        missing,
        duplicates,
        conv,
    )


def check_roles(roles: Mapping[str, Sequence[str | None]]) -> None:
    """Raise when one column has two roles (query, doc, system, score or rank).

    Examples
    --------
    >>> check_roles({"query": ["system"], "system": ["system"]})
    Traceback (most recent call last):
    ...
    ValueError: query and system both name the column 'system': a column has one role. ...
    """
    seen: dict[str, str] = {}
    for role, names in roles.items():
        for name in names:
            if name is None:
                continue
            if name in seen:
                hint = (
                    " Pass system=None for a run of one system, or name another column."
                    if "system" in (role, seen[name])
                    else ""
                )
                msg = (
                    f"{seen[name]} and {role} both name the column {name!r}: "
                    f"a column has one role.{hint}"
                )
                raise ValueError(msg)
            seen[name] = role


def segment_columns(
    by: str | Sequence[str] | None, schema: pl.Schema, *, taken: Sequence[str | None]
) -> tuple[str, ...]:
    """The ``by`` columns as a tuple, checked against the run's schema.

    Examples
    --------
    >>> segment_columns("day", pl.Schema({"day": pl.Date, "query": pl.String}), taken=["query"])
    ('day',)
    >>> segment_columns(["query"], pl.Schema({"query": pl.String}), taken=["query"])
    Traceback (most recent call last):
    ...
    ValueError: by cannot name 'query': it already has a role (query, doc, score, rank or system).
    """
    if by is None:
        return ()
    if not isinstance(by, str | Sequence) or (
        not isinstance(by, str) and not all(isinstance(name, str) for name in by)
    ):
        msg = f"by must be a column name or a list of them. Got {by!r} instead."
        raise TypeError(msg)
    columns = (by,) if isinstance(by, str) else tuple(by)
    for name in columns:
        if not isinstance(name, str):
            msg = f"by must be a column name or a list of them. Got {by!r} instead."
            raise TypeError(msg)
        if name in taken:
            msg = (
                f"by cannot name {name!r}: it already has a role "
                f"(query, doc, score, rank or system)."
            )
            raise ValueError(msg)
    for name in columns:
        check_columns(schema, {"by": name}, "run")
    if len(set(columns)) != len(columns):
        msg = f"by names a column twice: {list(columns)}."
        raise ValueError(msg)
    return columns


def check_rank_dtype(schema: pl.Schema, rank: str) -> None:
    """Raise unless the rank column is numeric (order="rank")."""
    dtype = schema[rank]
    if not dtype.is_numeric():
        msg = (
            f"run column {rank!r} must hold numeric ranks for order='rank' (1 = top). "
            f"Got dtype {dtype}. Cast it first, e.g. pl.col({rank!r}).cast(pl.Int64)."
        )
        raise TypeError(msg)
