"""Scope: which rankings are scored, decided in one place.

A ranking is one (segment, system, query) of the run, the segment being the
values of the ``by`` columns (none by default). It is scored when its query
has at least one qrels row (any grade), as in trec_eval; a run query without
qrels is left out and reported. Under ``missing="zero"`` (trec_eval ``-c``)
every system also gets an empty ranking, scored, for each qrels query it did
not retrieve for, in each segment the query belongs to. Without segments a
qrels query belongs everywhere (trec_eval's rule); with segments, it belongs
to the segments where the run has it, for some system (a query a user never
issued on a day is not scored as a failure that day).
:func:`polars_rankeval.coverage` reports the same decision.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from polars_rankeval._typing import Missing
from polars_rankeval.engine.shape import FACT, HAS_RUN, RANKING, SCORED


@dataclass(frozen=True)
class Scope:
    """The rankings: the run's first (in ranking-id order), then the empty ones added."""

    keys: pl.DataFrame
    """The user's key columns, one row per ranking."""
    flags: pl.DataFrame
    """``RANKING, FACT, SCORED, HAS_RUN``: one row per ranking, in the same order."""


def scope(
    run_keys: pl.DataFrame,
    facts: pl.DataFrame,
    *,
    query: str,
    system: str | None,
    missing: Missing,
    by: Sequence[str] = (),
    systems: pl.Series | None = None,
    absent: bool | None = None,
    run_facts: pl.Series | None = None,
) -> Scope:
    """The rankings to score, from the run's rankings and the qrels queries.

    Parameters
    ----------
    run_keys
        One row per ranking of the run: ``[*by], [system], query``.
    facts
        One row per qrels query: ``query, FACT`` (the id of its judgments).
    query, system
        Column names (``system`` None for a one-system run).
    by
        The segment columns (see the module docstring).
    missing
        ``"zero"`` adds a scored empty ranking for every (system, qrels query)
        the run lacks; otherwise such rankings are not scored.
    systems
        Every system of the whole run, when ``run_keys`` come from one piece
        of it (a bucket, a Dask or Spark task).
    absent
        Whether to list the rankings the run lacks (default: under ``missing="zero"``).
    run_facts
        ``FACT`` of each of ``run_keys``' rankings (null: no qrels row), when the
        caller has looked them up already; else they are looked up here.

    Examples
    --------
    >>> run_keys = pl.DataFrame({"query": ["a", "b"]})
    >>> facts = pl.DataFrame({"query": ["a", "c"], "__rk_fact": [0, 1]},
    ...                      schema_overrides={"__rk_fact": pl.UInt32})
    >>> s = scope(run_keys, facts, query="query", system=None, missing="zero")
    >>> s.keys["query"].to_list(), s.flags["__rk_scored"].to_list()
    (['a', 'b', 'c'], [True, False, True])
    """
    if run_facts is None:
        joined = run_keys.select(query).join(facts, on=query, how="left", maintain_order="left")
        run_facts = joined[FACT]
    flags = run_facts.to_frame().with_columns(
        pl.col(FACT).is_not_null().alias(SCORED), pl.lit(True).alias(HAS_RUN)
    )
    keys = run_keys
    if absent if absent is not None else missing == "zero":
        extra = _absent(run_keys, facts, query, system, by, systems)
        keys = pl.concat([run_keys, extra.drop(FACT)], how="vertical_relaxed")
        added = pl.DataFrame(
            {FACT: extra[FACT], SCORED: missing == "zero", HAS_RUN: False},
            schema={FACT: pl.UInt32, SCORED: pl.Boolean, HAS_RUN: pl.Boolean},
        )
        flags = pl.concat([flags, added])
    ranking = pl.int_range(pl.len(), dtype=pl.UInt32).alias(RANKING)
    return Scope(keys, flags.select(ranking, FACT, SCORED, HAS_RUN))


def _absent(
    run_keys: pl.DataFrame,
    facts: pl.DataFrame,
    query: str,
    system: str | None,
    by: Sequence[str],
    systems: pl.Series | None,
) -> pl.DataFrame:
    """``[*by], [system], query, FACT`` of every ranking the run lacks, where its query belongs."""
    columns = [*run_keys.columns, FACT]
    if not by:
        if system is None:
            return facts.join(run_keys, on=query, how="anti", maintain_order="left")
        every = systems if systems is not None else run_keys[system].unique(maintain_order=True)
        wanted = every.to_frame(system).join(facts, how="cross")
    else:
        present = run_keys.select(*by, query).unique(maintain_order=True)
        wanted = present.join(facts, on=query)
        if system is not None:
            every = systems if systems is not None else run_keys[system].unique(maintain_order=True)
            wanted = wanted.join(every.to_frame(system), how="cross")
    keys = [c for c in run_keys.columns]
    return wanted.join(run_keys, on=keys, how="anti", maintain_order="left").select(columns)


def absent_rankings(
    run_keys: pl.DataFrame,
    qrels_queries: pl.Series,
    *,
    query: str,
    system: str | None,
    by: Sequence[str] = (),
    systems: pl.Series | None = None,
) -> pl.DataFrame:
    """``[*by], [system], query`` (query ids as strings, sorted) of the rankings the run
    lacks: those ``missing="zero"`` scores as empty and ``missing="error"`` refuses,
    by the same rule (:func:`scope`).

    ``run_keys`` holds the run's ranking keys (repeats allowed); ``systems``, every
    system of the whole run when ``run_keys`` come from one piece of it.

    Examples
    --------
    >>> run_keys = pl.DataFrame({"system": ["a", "a", "b"], "query": ["q1", "q2", "q1"]})
    >>> absent_rankings(run_keys, pl.Series(["q1", "q2"]), query="query", system="system").rows()
    [('b', 'q2')]
    """
    keys = [*by, *([system] if system else []), query]
    present = run_keys.select(keys).with_columns(pl.col(query).cast(pl.String)).unique()
    queries = qrels_queries.cast(pl.String).unique().sort().alias(query).to_frame()
    facts = queries.with_columns(pl.int_range(pl.len(), dtype=pl.UInt32).alias(FACT))
    every = None if systems is None else systems.unique(maintain_order=True)
    missing = _absent(present, facts, query, system, by, every)
    return missing.drop(FACT).sort(keys)
