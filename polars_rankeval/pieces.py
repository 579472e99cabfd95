"""Scoring in pieces, for engines that spread one evaluation over many tasks.

Every measure of a query depends only on that query's run rows and qrels rows
(|R| counts every relevant qrels row of the query, retrieved or not). So an
engine may cut both tables into pieces by a hash of the query id, score every
piece on its own with :func:`~polars_rankeval.engine.pipeline.score_piece`,
and put the per-query values side by side: they equal
:func:`polars_rankeval.evaluate`'s, query by query. This module holds what
every such engine shares; :mod:`polars_rankeval.dask` and
:mod:`polars_rankeval.spark` only move rows and call it:

1. on the driver, :func:`prepare` checks the options against the schemas,
   once, before any data is read, and gives the :class:`Job` every task runs;
2. the rows are cut by :func:`bucket` (the one hash of every engine except
   Spark, whose executors hash with Spark's own Murmur3), and checked on the
   way in with :func:`check_rows`;
3. each piece is scored by :func:`score`, in a task (the measures of lists with the
   side inputs reduced once on the driver, :func:`reduce_side_inputs`: a list's value
   reads only its own rows and those totals);
4. on the driver, :func:`combine` puts the pieces together: every row counted
   once, one warning for the unscored queries, ``missing="error"`` raised
   once, output sorted, ``per_query=False`` combined as
   :func:`polars_rankeval.mean_scores` does (:func:`mean_kinds` says how, for
   an engine that combines in its own language).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Literal

import polars as pl

from polars_rankeval._typing import Aggregate
from polars_rankeval.call import OPTIONS as EVALUATE_OPTIONS
from polars_rankeval.call import Call
from polars_rankeval.call import prepare as prepare_call
from polars_rankeval.declare import resolved
from polars_rankeval.engine.buckets import query_bucket, split_by_bucket
from polars_rankeval.engine.outcome import (
    lists_score_every_query,
    raise_absent_queries,
    warn_unscored_queries,
)
from polars_rankeval.engine.pipeline import check_qrels_rows, check_run_rows, score_piece
from polars_rankeval.engine.scope import absent_rankings
from polars_rankeval.inputs import ENGINE_PREFIX
from polars_rankeval.measures import Measure, aggregate_kind, parse
from polars_rankeval.options import Options
from polars_rankeval.recsys import list_values, with_accuracy
from polars_rankeval.side import Side, collected, reduce_side
from polars_rankeval.validation import check_int, where_named

OPTIONS = EVALUATE_OPTIONS - {"memory_limit"}
"""Keyword options of :func:`polars_rankeval.evaluate` that the engines take (each
task's memory is the engine's, not ``memory_limit``'s)."""

Table = Literal["run", "qrels"]


@dataclass(frozen=True)
class Job:
    """What every piece of one evaluation is scored with: decided once, on the driver.

    Plain data (measure names, not measure objects), so that it pickles to any worker.
    """

    measures: tuple[str, ...]
    """Canonical measure names, in the order asked."""
    options: Options
    per_query: bool = True
    validate: bool = True
    systems: pl.Series | None = None
    """Every system of the whole run, under ``missing="zero"`` or ``"error"`` with a
    system column: a piece gives empty rankings to (or refuses) the systems it holds no
    row of."""
    declared: tuple[Measure, ...] = ()
    """The measures asked for that were declared by :func:`polars_rankeval.define_measure`,
    their expressions made (:func:`~polars_rankeval.declare.resolved`): a worker's
    process has not declared them, so the declarations travel with the job."""

    @property
    def parsed(self) -> list[Measure]:
        """The measure objects (parsed once per process; declared ones as shipped)."""
        return list(_parse(self.measures, self.declared))

    def call(self, *, per_query: bool | None = None) -> Call:
        """The prepared call this job scores (with ``per_query`` when given)."""
        per_query = self.per_query if per_query is None else per_query
        return Call(tuple(self.parsed), self.options, per_query=per_query, validate=self.validate)

    @property
    def needs_systems(self) -> bool:
        """Whether :attr:`systems` must be collected before the pieces are scored."""
        return self.options.missing in ("zero", "error") and self.options.system is not None

    def with_systems(self, seen: Iterable[pl.Series]) -> Job:
        """This job with the systems seen in the run's rows (when it needs them)."""
        if not self.needs_systems:
            return self
        found = [s for s in seen if s.len()]
        systems = pl.concat(found).unique(maintain_order=True) if found else None
        return replace(self, systems=systems)


@lru_cache(maxsize=64)
def _parse(names: tuple[str, ...], declared: tuple[Measure, ...] = ()) -> tuple[Measure, ...]:
    shipped = {str(m): m for m in declared}
    return tuple(shipped[n] if n in shipped else parse(n) for n in names)


def prepare(
    run_schema: pl.Schema,
    qrels_schema: pl.Schema,
    measures: str | Measure | Iterable[str | Measure],
    options: Mapping[str, Any],
    *,
    given: frozenset[str] | None = None,
) -> Job:
    """Check measures, options, columns and dtypes on the schemas: the job to run.

    ``options`` are the keyword options of :func:`polars_rankeval.evaluate`
    (:data:`OPTIONS`); anything else is refused, naming what is accepted. ``given``:
    the side inputs given (``train``, ``catalog``, ``item_features``): a measure of
    lists that needs one that is not is refused by name (None: no measure of lists).

    Examples
    --------
    >>> schema = pl.Schema({"query": pl.String, "doc": pl.String, "score": pl.Float64})
    >>> qrels = pl.Schema({"query": pl.String, "doc": pl.String, "relevance": pl.Int64})
    >>> job = prepare(schema, qrels, ["map", "ndcg_cut_10"], {"per_query": False})
    >>> job.measures, job.options.keys, job.per_query
    (('AP', 'nDCG@10'), ['query'], False)
    >>> prepare(schema, qrels, ["AP"], {"rel_levle": 2})
    Traceback (most recent call last):
    ...
    TypeError: Unknown option(s) 'rel_levle'. Options are those of polars_rankeval.evaluate: ...
    """
    call = prepare_call(run_schema, qrels_schema, measures, options, accepts=OPTIONS, given=given)
    if call.options.query_parts or call.options.doc_parts:
        raise ValueError(_joined_id_message(options))
    return Job(
        tuple(call.names),
        call.options,
        declared=tuple(resolved(m) for m in call.measures if m.family.expression is not None),
        per_query=call.per_query,
        validate=call.validate,
    )


def _joined_id_message(options: Mapping[str, Any]) -> str:
    """Why the ids are refused on Dask or Spark: a compound id, or an id column named
    like the engine's own columns (read, in process, as a joined id of one part)."""
    for role in ("query", "doc"):
        name = options.get(role, role)
        if isinstance(name, str) and name.startswith(ENGINE_PREFIX):
            return (
                f"{role} column {name!r} is named like the engine's own columns "
                f"({ENGINE_PREFIX!r}...), which Dask and Spark do not read yet: rename it "
                f"first, e.g. frame.rename({{{name!r}: {role!r}}}), and pass {role}={role!r}."
            )
    return (
        "Compound ids (query=[...] or doc=[...]) are not supported on Dask or Spark yet: "
        "join the columns into one id column first (e.g. with pl.concat_str)."
    )


def reduce_side_inputs(
    measures: Iterable[Measure],
    given: Mapping[str, pl.DataFrame | pl.LazyFrame],
    *,
    query: str,
    doc: str,
) -> Side:
    """The side inputs the ``measures`` read, reduced once on the driver and computed
    (:func:`~polars_rankeval.side.reduce_side`, :func:`~polars_rankeval.side.collected`):
    the per-item table, the numbers, the features. The tasks receive this, never the
    inputs themselves (an input no measure reads is not read at all).

    Examples
    --------
    >>> from polars_rankeval.measures import parse
    >>> train = pl.DataFrame({"user": [1, 2], "item": ["a", "a"]})
    >>> side = reduce_side_inputs([parse("Novelty@5")], {"train": train, "catalog": train},
    ...                           query="user", doc="item")
    >>> side.n_users, side.n_catalog
    (2, None)
    """
    measures = list(measures)
    needs: set[str] = {need for m in measures for need in m.needs}
    chosen = {k: v for k, v in given.items() if k in needs}
    history = any(m.reads_history for m in measures)
    return collected(reduce_side(chosen, query=query, doc=doc, history=history))


def columns(job: Job, table: Table) -> list[str]:
    """The columns of ``table`` a piece needs: select them before rows move.

    Examples
    --------
    >>> from polars_rankeval.options import Options
    >>> job = Job(("AP",), Options(doc="docno", system="system", order="rank"))
    >>> columns(job, "run"), columns(job, "qrels")
    (['system', 'query', 'docno', 'rank'], ['query', 'docno', 'relevance'])
    """
    return job.options.run_columns if table == "run" else job.options.qrels_columns


def output_columns(job: Job, run_schema: pl.Schema, qrels_schema: pl.Schema) -> pl.Schema:
    """The schema of a piece's per-query values (ids as typed, measures Float64)."""
    return job.call(per_query=True).output_schema(run_schema, qrels_schema)


def bucket(query: str, n_buckets: int) -> pl.Expr:
    """Bucket ``0 .. n_buckets - 1`` of each row: a seeded hash of the query id as a string.

    The hash of :func:`polars_rankeval.engine.buckets.query_bucket`: the same in
    every process running the same Polars version (:func:`hash_probe` checks it).

    Examples
    --------
    >>> df = pl.DataFrame({"query": ["q1", "q2", "q1"]})
    >>> b = df.select(bucket("query", 4))["query"]
    >>> b[0] == b[2], bool(b.is_between(0, 3).all())
    (True, True)
    """
    check_int("npartitions", n_buckets, minimum=1)
    return query_bucket(query, n_buckets)


_PROBE = pl.DataFrame({"q": ["", "0", "401", "q1", "FBIS3-10082", "\u00e9"]})


def hash_probe() -> tuple[int, ...]:
    """The buckets of a few fixed ids: equal in two processes iff they hash alike.

    A task that cuts rows returns it, and the driver compares it with its own:
    a worker with another Polars version would put a query's rows in another
    bucket than its neighbours do, and the query would be scored twice, each
    time on part of its rows.
    """
    return tuple(_PROBE.select(query_bucket("q", 1_000_003))["q"].to_list())


def split(frame: pl.DataFrame, query: str, n_buckets: int) -> list[pl.DataFrame]:
    """Cut an in-memory frame into ``n_buckets`` pieces by :func:`bucket`, keeping row order.

    Examples
    --------
    >>> df = pl.DataFrame({"query": ["a", "b", "a", "c"], "doc": [1, 2, 3, 4]})
    >>> parts = split(df, "query", 3)
    >>> len(parts), sum(p.height for p in parts)
    (3, 4)
    >>> [sum(q in p["query"] for p in parts) for q in "abc"]  # each query in one piece
    [1, 1, 1]
    >>> [p.filter(query="a")["doc"].to_list() for p in parts if "a" in p["query"]]
    [[1, 3]]
    """
    parts = split_by_bucket(frame, query, n_buckets)
    return [parts.get(i, frame.clear()) for i in range(n_buckets)]


def check_rows(
    frame: pl.DataFrame, job: Job, table: Table, *, offset: int = 0, where: str | None = None
) -> None:
    """Null ids, NaN or null scores, null ranks, grades that are not integers: raise naming
    the first bad row (``offset``: the frame's first row number in the whole input;
    ``where``: the file or piece, added to the message). Duplicates are found by
    :func:`score`. Nothing is checked with ``validate=False``."""
    if not job.validate:
        return
    check = check_run_rows if table == "run" else check_qrels_rows
    with where_named(where):
        check(frame, job.options, offset)


@dataclass(frozen=True)
class Scored:
    """One piece, scored: its values, and what it left out."""

    scores: pl.DataFrame | None
    """``[system], query`` and one Float64 column per measure (None when ``absent``
    is not empty under ``missing="error"``: the evaluation fails, nothing is scored)."""
    no_qrels: pl.DataFrame
    """``[system], query`` (query ids as strings) of the piece's run rankings with no
    qrels: not scored."""
    absent: pl.DataFrame
    """Under ``missing="error"``: ``[*by], [system], query`` (query ids as strings) of
    the rankings of the piece's qrels queries the run lacks, by the rule of
    ``missing="zero"`` (:func:`~polars_rankeval.engine.scope.absent_rankings`). A piece
    holds all rows of its queries, so they are absent from the whole run."""
    run_rows: int
    qrels_rows: int
    lists: pl.DataFrame | None = None
    """The values of the measures of lists for every list of the piece's run (keys and
    one column per measure), when the job has such measures."""


def score(run: pl.DataFrame, qrels: pl.DataFrame, job: Job, side: Side | None = None) -> Scored:
    """Score one piece; it must hold, for each of its queries, all of that query's rows.

    Duplicate rows raise here (unless ``validate=False``, and only when the engine scores
    a measure: a list may repeat an item), with the message of
    :func:`polars_rankeval.evaluate`; values are checked where rows come in
    (:func:`check_rows`). The measures of lists read ``side``, the side inputs reduced
    once on the driver (:func:`reduce_side_inputs`), and score every list of the piece
    (:func:`~polars_rankeval.recsys.list_values`).

    Examples
    --------
    >>> run = pl.DataFrame({"query": ["a", "a", "b"], "doc": ["x", "y", "z"],
    ...                     "score": [2.0, 1.0, 1.0]})
    >>> qrels = pl.DataFrame({"query": ["a", "c"], "doc": ["y", "w"], "relevance": [1, 1]})
    >>> job = prepare(run.schema, qrels.schema, ["RR"], {})
    >>> piece = score(run, qrels, job)
    >>> piece.scores.to_dicts(), piece.no_qrels["query"].to_list(), piece.run_rows
    ([{'query': 'a', 'RR': 0.5}], ['b'], 3)
    """
    o = job.options
    call = job.call(per_query=True)
    values = None
    if call.list_measures:
        assert side is not None
        values = list_values(run, qrels, call, side)
    none = _string_keys(run.select(o.keys).clear(), o.query)
    absent = pl.DataFrame(schema={o.query: pl.String})
    if not call.engine_measures:
        return Scored(None, none, absent, run.height, qrels.height, values)
    if o.missing == "error":
        absent = absent_rankings(run.select(o.keys), qrels[o.query], query=o.query,
                                 system=o.system, by=o.by, systems=job.systems)  # fmt: skip
        if absent.height:
            return Scored(None, none, absent, run.height, qrels.height)
    piece = score_piece(  # one step after the other: the engine runs a task per core
        run, qrels, list(call.engine_measures), o, check_duplicates=job.validate,
        systems=job.systems, concurrent=False,
    )  # fmt: skip
    no_qrels = _string_keys(piece.no_qrels, o.query)
    return Scored(piece.scores, no_qrels, absent, piece.run_rows, piece.qrels_rows, values)


def values(piece: Scored, job: Job) -> pl.DataFrame:
    """One piece's per-ranking values, as :func:`polars_rankeval.evaluate` gives those
    rankings (``per_query=True``): the engine's scores, beside the values of the
    measures of lists (every list of the piece), joined on the ranking keys. For an
    engine that does not gather the pieces (Spark); the piece must be scored (no
    absent query under ``missing="error"``).

    Examples
    --------
    >>> from polars_rankeval.side import reduce_side
    >>> run = pl.DataFrame({"query": ["a", "a", "b"], "doc": ["x", "y", "x"],
    ...                     "score": [2.0, 1.0, 1.0]})
    >>> qrels = pl.DataFrame({"query": ["a"], "doc": ["y"], "relevance": [1]})
    >>> train = pl.DataFrame({"query": ["a", "c"], "doc": ["x", "x"]})
    >>> job = prepare(run.schema, qrels.schema, ["RR", "ARP@2"], {}, given=frozenset({"train"}))
    >>> side = reduce_side({"train": train}, query="query", doc="doc")
    >>> values(score(run, qrels, job, side), job).rows()
    [('a', 0.5, 1.0), ('b', None, 2.0)]
    """
    call = job.call(per_query=True)
    if not call.list_measures:
        assert piece.scores is not None
        return piece.scores
    assert piece.lists is not None
    lists = piece.lists
    if call.engine_measures:
        assert piece.scores is not None
        judged = replace(call, measures=call.engine_measures)
        lists = with_accuracy(lists, judged.finish(piece.scores), job.options.output_keys)
    return call.finish(lists)


def _string_keys(keys: pl.DataFrame, query: str) -> pl.DataFrame:
    return keys.with_columns(pl.col(query).cast(pl.String))


def combine(pieces: Sequence[Scored], job: Job, *, run_rows: int, qrels_rows: int) -> pl.DataFrame:
    """The pieces' values as one frame, as :func:`polars_rankeval.evaluate` gives them.

    Checks that the pieces hold ``run_rows`` and ``qrels_rows`` rows (the
    inputs' counts) and score each ranking once; raises under
    ``missing="error"`` naming every absent query; warns once about the run
    queries with no qrels (named in sorted order, whatever the number of
    pieces); sorts; with ``per_query=False``, combines as
    :func:`polars_rankeval.mean_scores`.

    Examples
    --------
    >>> run = pl.DataFrame({"query": ["a", "b"], "doc": ["x", "y"], "score": [1.0, 1.0]})
    >>> qrels = pl.DataFrame({"query": ["a", "b"], "doc": ["x", "z"], "relevance": [1, 1]})
    >>> job = prepare(run.schema, qrels.schema, ["RR"], {"per_query": False})
    >>> parts = [score(r, q, job) for r, q in zip(split(run, "query", 2),
    ...                                             split(qrels, "query", 2))]
    >>> combine(parts, job, run_rows=2, qrels_rows=2)
    shape: (1, 2)
    ┌───────────┬─────┐
    │ n_queries ┆ RR  │
    │ ---       ┆ --- │
    │ u32       ┆ f64 │
    ╞═══════════╪═════╡
    │ 2         ┆ 0.5 │
    └───────────┴─────┘
    """
    check_counts(pieces, run_rows, qrels_rows)
    o = job.options
    absent = [p.absent for p in pieces if p.absent.height]
    if absent:
        raise_absent_queries(pl.concat(absent).sort(absent[0].columns))
    call = job.call()
    judged = replace(call, measures=call.engine_measures, per_query=True)
    names = [str(m) for m in call.list_measures], judged.names
    accuracy = None
    if judged.measures:
        scores = pl.concat([p.scores for p in pieces if p.scores is not None],
                           how="vertical_relaxed")  # fmt: skip
        no_qrels = pl.concat([p.no_qrels for p in pieces], how="vertical_relaxed").sort(o.keys)
        seen = [_string_keys(scores.select(o.keys), o.query), no_qrels]
        _check_once(pl.concat(seen, how="vertical_relaxed"))
        with lists_score_every_query(*names):
            warn_unscored_queries(no_qrels[o.query])
        accuracy = judged.finish(scores)
    if not call.list_measures:
        assert accuracy is not None
        return call.finish(accuracy)
    values = pl.concat([p.lists for p in pieces if p.lists is not None], how="vertical_relaxed")
    _check_once(values.select(o.keys))
    if accuracy is not None:
        values = with_accuracy(values, accuracy, o.output_keys)
    return call.finish(values)


def _check_once(keys: pl.DataFrame) -> None:
    """Every ranking in one piece."""
    if keys.is_duplicated().any():
        msg = (
            "A ranking is in two pieces: its rows were not all cut into the same bucket "
            "(do all workers run the same Polars version as the client?)."
        )
        raise RuntimeError(msg)


def check_counts(pieces: Sequence[Scored], run_rows: int, qrels_rows: int) -> None:
    """Every input row must be in exactly one piece: raise if rows were lost or doubled.

    Examples
    --------
    >>> piece = Scored(None, pl.DataFrame(), pl.DataFrame(), run_rows=3, qrels_rows=2)
    >>> check_counts([piece], 3, 2)
    >>> check_counts([piece, piece], 3, 2)
    Traceback (most recent call last):
    ...
    RuntimeError: The pieces hold 6 run rows and 4 qrels rows, but the inputs have 3 and 2: ...
    """
    got = sum(p.run_rows for p in pieces), sum(p.qrels_rows for p in pieces)
    if got != (run_rows, qrels_rows):
        msg = (
            f"The pieces hold {got[0]} run rows and {got[1]} qrels rows, but the inputs have "
            f"{run_rows} and {qrels_rows}: rows were lost or read twice on the way to the "
            f"tasks (did an input change while it was read?)."
        )
        raise RuntimeError(msg)


def mean_kinds(job: Job) -> list[tuple[str, Aggregate]]:
    """How ``per_query=False`` combines each measure over queries, for an engine that
    computes the means in its own language (as :func:`polars_rankeval.mean_scores`:
    geometric mean with a floor of :data:`~polars_rankeval.measures.MIN_GEO_MEAN`,
    sum, or arithmetic mean).

    Examples
    --------
    >>> from polars_rankeval.options import Options
    >>> mean_kinds(Job(("AP", "GMAP", "NumRet"), Options()))
    [('AP', 'mean'), ('GMAP', 'gmean'), ('NumRet', 'sum')]
    """
    return [(name, aggregate_kind(name)) for name in job.measures]
