r"""Diversity measures over subtopic qrels, through the one pipeline's ways in.

:func:`evaluate_diversity` scores ndeval's novelty and diversity measures
(:mod:`polars_rankeval.subtopics`: ``alpha_nDCG@k``, ``ERR_IA@k``,
``NRBP``, ``P_IA@k``, ``StRecall@k``, ...) as :func:`polars_rankeval.evaluate`
scores the others: every system and segment of a run at once, with its data
checks, ``depth`` and ``missing``, from a DataFrame, or from a LazyFrame read
once in batches and, past ``memory_limit``, cut by a hash of the query into
buckets on disk (:func:`polars_rankeval.engine.buckets.score_judged_lazy`);
:func:`polars_rankeval.dask.evaluate_diversity` cuts it the same way over a
Dask cluster. Every measure of a ranking reads only that ranking's rows and
its query's subtopic qrels, so the steps are the same on every way in:

1. on the caller, :func:`prepare` checks the options against the schemas and
   gives the :class:`Job` every piece is scored with;
2. the rows are checked as they arrive (:func:`check_run`, :func:`check_qrels`);
3. :func:`score` scores one piece (whole rankings, with their queries' qrels):
   it ranks them (trec_eval's order: score descending, ties by doc id
   descending) and computes the measures;
4. :func:`combine` puts the pieces together: the run queries without qrels
   warned about once, ``missing`` applied over the whole run (its absent
   rankings score 0, or are refused by name), sorted by ``[by], [system],
   query``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from polars_rankeval._typing import IntoFrameOrDict, Missing
from polars_rankeval.engine.buckets import memory_bytes, score_judged_lazy
from polars_rankeval.engine.outcome import raise_absent_queries, warn_unscored_queries
from polars_rankeval.engine.pipeline import Piece
from polars_rankeval.engine.rank import Groups
from polars_rankeval.engine.scope import absent_rankings
from polars_rankeval.engine.select import rank_order_of
from polars_rankeval.inputs import as_frame
from polars_rankeval.options import Options, check_roles, segment_columns
from polars_rankeval.subtopics import (
    ALIASES,
    PARAMS,
    DiversityMeasure,
    ideal_ideal,
    ideal_values,
    listed,
    parse_diversity,
    score_rankings,
)
from polars_rankeval.subtopics import (
    DOC as _D,
)
from polars_rankeval.subtopics import (
    GRADE as _G,
)
from polars_rankeval.subtopics import (
    QUERY as _Q,
)
from polars_rankeval.subtopics import (
    RANK as _R,
)
from polars_rankeval.subtopics import (
    RANKING as _K,
)
from polars_rankeval.subtopics import (
    SUBTOPIC as _S,
)
from polars_rankeval.validation import (
    check_choice,
    check_columns,
    check_duplicates,
    check_grade_dtype,
    check_id_dtypes,
    check_int,
    check_qrels_values,
    check_run_values,
    check_score_dtype,
    system_column,
    where_named,
)

__all__ = [
    "ALIASES",
    "PARAMS",
    "DiversityMeasure",
    "Job",
    "check_qrels",
    "check_run",
    "combine",
    "evaluate_diversity",
    "ideal_ideal",
    "parse_diversity",
    "prepare",
    "score",
]

DEFAULT_MEMORY_LIMIT = "1GiB"
"""``memory_limit`` of a LazyFrame run when none is given (as :func:`polars_rankeval.evaluate`)."""


def evaluate_diversity(
    run: IntoFrameOrDict,
    qrels: IntoFrameOrDict,
    measures: str | DiversityMeasure | Iterable[str | DiversityMeasure],
    *,
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    subtopic: str = "subtopic",
    relevance: str = "relevance",
    system: str | None = "system",
    by: str | Sequence[str] | None = None,
    depth: int | None = None,
    missing: Missing = "drop",
    validate: bool = True,
    memory_limit: int | str | None = None,
) -> Any:
    """Diversity measures per query (per system and segment), from a run and subtopic qrels.

    Parameters
    ----------
    run
        ``query, doc, score`` (optionally ``system`` and segment columns): one row per
        retrieved document of a ranking. A DataFrame (or a pandas or Arrow frame), or
        a LazyFrame (a Parquet or CSV scan): lazy in, lazy out, read once in batches
        and, past ``memory_limit``, scored bucket by bucket.
    qrels
        ``query, subtopic, doc, relevance``: one row per judged (subtopic,
        document) pair of a query (TREC diversity qrels: the second column
        holds the subtopic). Read whole into memory (a LazyFrame too): subtopic
        qrels are small next to the runs they judge.
    measures
        Names such as ``"alpha_nDCG@10"``, ``"ERR_IA@20"``, ``"NRBP"``,
        ``"P_IA@5"``, ``"StRecall@10"``, ``"AP_IA"``; ndeval's names too.
    query, doc, score, subtopic, relevance, system
        Column names; ``system`` is used when the run has that column (every system
        is scored, each against the same qrels).
    by
        Segment columns of the run: each (segment, system, query) is a ranking of its
        own, as in :func:`polars_rankeval.evaluate`.
    depth
        Keep only the top ``depth`` documents of each ranking (trec_eval ``-M``).
    missing
        ``"drop"``: the rankings of the run whose query has qrels. ``"zero"``: also
        the qrels queries a system (in a segment where the run has them) lacks,
        scored 0 (as ir_measures). ``"error"``: raise naming them.
    validate
        Check the data first (default True), as :func:`polars_rankeval.evaluate`
        does: null ids, NaN or null scores, grades that are not integers,
        duplicate (ranking, doc) rows in the run and (query, subtopic, doc) rows
        in the qrels. Columns and dtypes are always checked.
    memory_limit
        LazyFrame runs only, as in :func:`polars_rankeval.evaluate`: the most memory
        (bytes, or a string such as ``"2GiB"``) the run's rows should take. Default
        ``"1GiB"``. Past an eighth of it, the run is scored piece by piece as it is
        read (rankings in one stretch each) or split by a hash of the query into
        buckets on disk and scored bucket by bucket.

    Returns
    -------
    DataFrame or LazyFrame
        ``[by], [system], query`` and one Float64 column per measure (its canonical
        name), sorted by those keys: the shape of :func:`polars_rankeval.evaluate`'s
        output, so :func:`polars_rankeval.compare`, :func:`polars_rankeval.mean_scores`
        and the reports take it. A LazyFrame for a LazyFrame run.

    Warns
    -----
    UnscoredQueriesWarning
        Run queries with no qrels row are not scored (as ``evaluate``).

    Examples
    --------
    >>> import polars as pl
    >>> run = pl.DataFrame({"query": ["q"] * 3, "doc": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
    >>> qrels = pl.DataFrame({"query": ["q"] * 3, "subtopic": [1, 1, 2],
    ...                       "doc": ["a", "b", "c"], "relevance": [1, 1, 1]})
    >>> out = evaluate_diversity(run, qrels, ["StRecall@1", "StRecall@3", "P_IA@2"])
    >>> out.row(0)
    ('q', 0.5, 1.0, 0.5)
    >>> evaluate_diversity(run.lazy(), qrels, "StRecall@1", memory_limit="64MiB").collect().row(0)
    ('q', 0.5)
    """
    named = {"query": query, "doc": doc, "score": score, "subtopic": subtopic}
    for option, value in (named | {"relevance": relevance}).items():
        if not isinstance(value, str):
            msg = (
                f"{option} must be one column name. Got {value!r}. For an id made of several "
                f"columns, join them into one first, e.g. pl.concat_str([...], separator='|')."
            )
            raise TypeError(msg)
    run_in = as_frame(run, "run", (query, doc, score))
    qrels_in = as_frame(qrels, "qrels")
    options = {"query": query, "doc": doc, "score": score, "subtopic": subtopic,
               "relevance": relevance, "system": system, "by": by, "depth": depth,
               "missing": missing, "validate": validate}  # fmt: skip
    run_schema = run_in.lazy().collect_schema()
    job = prepare(run_schema, qrels_in.lazy().collect_schema(), measures, options)
    limit = memory_bytes(memory_limit if memory_limit is not None else DEFAULT_MEMORY_LIMIT)
    if isinstance(run_in, pl.DataFrame):
        return _score_frame(run_in, _read_qrels(qrels_in, job), job)
    lazy_run = run_in

    def deferred() -> pl.DataFrame:
        return _score_lazy(lazy_run, _read_qrels(qrels_in, job), job, limit)

    return pl.defer(deferred, schema=job.output_schema(run_schema))


OPTIONS: dict[str, Any] = {
    "query": "query", "doc": "doc", "score": "score", "subtopic": "subtopic",
    "relevance": "relevance", "system": "system", "by": None, "depth": None,
    "missing": "drop", "validate": True,
}  # fmt: skip
"""The options every way in takes, with their defaults."""


@dataclass(frozen=True)
class Job:
    """What every piece of one evaluation is scored with, decided once from the schemas
    (plain data: it pickles to a Dask worker)."""

    measures: tuple[DiversityMeasure, ...]
    query: str
    doc: str
    score: str
    subtopic: str
    relevance: str
    system: str | None
    by: tuple[str, ...]
    depth: int | None
    missing: str
    validate: bool
    strings: bool
    """Whether query ids are compared as strings (integer ids in one table, strings in
    the other); the output's query column is then a string."""

    @property
    def keys(self) -> list[str]:
        """A ranking's key columns, ``[*by], [system], query``."""
        return [*self.by, *([self.system] if self.system else []), self.query]

    @property
    def run_columns(self) -> list[str]:
        return [*self.keys, self.doc, self.score]

    @property
    def qrels_columns(self) -> list[str]:
        return [self.query, self.subtopic, self.doc, self.relevance]

    def output_schema(self, run_schema: pl.Schema) -> pl.Schema:
        """``[by], [system], query`` as the run types them (query: a string when
        ``strings``), and a Float64 per measure."""
        columns = {k: run_schema[k] for k in self.keys}
        if self.strings:
            columns[self.query] = pl.String()
        return pl.Schema({**columns, **{str(m): pl.Float64() for m in self.measures}})


def prepare(
    run_schema: pl.Schema,
    qrels_schema: pl.Schema,
    measures: str | DiversityMeasure | Iterable[str | DiversityMeasure],
    options: dict[str, Any],
) -> Job:
    """Check the measures, the options and the columns, roles and dtypes of both tables,
    before any row is read; the :class:`Job` of the evaluation.

    Examples
    --------
    >>> run = pl.Schema({"system": pl.String, "query": pl.Int64, "doc": pl.String,
    ...                  "score": pl.Float64})
    >>> qrels = pl.Schema({"query": pl.String, "subtopic": pl.Int64, "doc": pl.String,
    ...                    "relevance": pl.Int64})
    >>> job = prepare(run, qrels, "alpha-nDCG@20", {})
    >>> job.keys, [str(m) for m in job.measures], job.strings
    (['system', 'query'], ['alpha_nDCG@20'], True)
    """
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        msg = f"Unknown option(s) {', '.join(map(repr, unknown))}; known: {', '.join(OPTIONS)}."
        raise TypeError(msg)
    o = OPTIONS | options
    parsed = tuple(listed(measures))
    check_choice("missing", o["missing"], ("drop", "zero", "error"))
    check_int("depth", o["depth"], minimum=0, allow_none=True)
    query, doc, score, subtopic, relevance = (
        o[k] for k in ("query", "doc", "score", "subtopic", "relevance")
    )
    system = system_column(o["system"], run_schema.names())
    segments = segment_columns(o["by"], run_schema, taken=[query, doc, score, system])
    check_columns(run_schema, {"query": query, "doc": doc, "score": score}, "run")
    check_columns(
        qrels_schema,
        {"query": query, "subtopic": subtopic, "doc": doc, "relevance": relevance},
        "qrels",
    )
    check_roles({"query": [query], "doc": [doc], "score": [score],
                 "by/system": [*segments, *([system] if system else [])]})  # fmt: skip
    check_score_dtype(run_schema, score)
    check_grade_dtype(qrels_schema, relevance)
    check_id_dtypes(run_schema, qrels_schema, [query, doc])
    strings = run_schema[query] != qrels_schema[query]
    return Job(parsed, query, doc, score, subtopic, relevance, system, segments, o["depth"],
               o["missing"], bool(o["validate"]), strings)  # fmt: skip


def check_run(batch: pl.DataFrame, job: Job, offset: int = 0, where: str | None = None) -> None:
    """With ``validate``: null ids, NaN or null scores; raise naming the first bad row
    (``offset``: the batch's first row number in the whole run; ``where``: its file)."""
    if job.validate:
        with where_named(where):
            check_run_values(batch, ids=[*job.keys, job.doc], score=job.score, rank=None,
                             offset=offset)  # fmt: skip


def check_qrels(batch: pl.DataFrame, job: Job, offset: int = 0, where: str | None = None) -> None:
    """With ``validate``: null ids, grades that are not integers (as :func:`check_run`)."""
    if job.validate:
        with where_named(where):
            check_qrels_values(batch, ids=[job.query, job.subtopic, job.doc],
                               relevance=job.relevance, offset=offset)  # fmt: skip


@dataclass(frozen=True)
class Scored:
    """One piece, scored."""

    scores: pl.DataFrame
    """``[by], [system], query`` and the measures, for the piece's rankings whose query
    has qrels."""
    no_qrels: pl.DataFrame
    """``[by], [system], query`` (query ids as strings) of its rankings whose query has
    no qrels: not scored."""
    judged: pl.Series
    """The queries of the piece's qrels, as strings."""


def score(
    run: pl.DataFrame,
    qrels: pl.DataFrame,
    job: Job,
    ideals: pl.DataFrame | None = None,
    *,
    qrels_checked: bool = False,
) -> Scored:
    """Score one piece: every row of each of its rankings, and (at least) its queries'
    qrels rows. Values and dtypes are checked where rows come in (:func:`check_run`,
    :func:`check_qrels`); duplicate rows raise here, with ``validate``. ``ideals``: the
    queries' normalisers (:func:`~polars_rankeval.subtopics.ideal_values` of
    :func:`judgments`), when pieces share queries; else made from the piece's qrels.
    ``qrels_checked``: the caller checked the qrels for duplicates once, for every piece.

    Examples
    --------
    >>> run = pl.DataFrame({"query": ["a", "a", "b"], "doc": ["x", "y", "z"],
    ...                     "score": [2.0, 1.0, 1.0]})
    >>> qrels = pl.DataFrame({"query": ["a", "c"], "subtopic": [1, 1], "doc": ["y", "w"],
    ...                       "relevance": [1, 1]})
    >>> piece = score(run, qrels, prepare(run.schema, qrels.schema, "StRecall@1", {}))
    >>> piece.scores.rows(), piece.no_qrels.rows(), piece.judged.sort().to_list()
    ([('a', 0.0)], [('b',)], ['a', 'c'])
    """
    keys, query = job.keys, job.query
    if job.validate:
        check_duplicates(run.lazy(), [*keys, job.doc], "the run")
        if not qrels_checked:
            check_duplicates(qrels.lazy(), [query, job.subtopic, job.doc], "qrels")
    if job.strings:
        run = run.with_columns(pl.col(query).cast(pl.String))
    ranked, rankings = _rankings(run, keys, job.doc, job.score, job.depth)
    graded = judgments(qrels, job)
    judged = graded.get_column(_Q).unique()
    is_judged = pl.col(query).is_in(judged.implode())
    present = rankings.filter(is_judged).with_columns(pl.col(query).alias(_Q))
    values = score_rankings(ranked, graded, present.select(_K, _Q), job.measures, ideals)
    no_qrels = rankings.filter(~is_judged).select(keys)
    return Scored(
        present.select(keys).with_columns(values),
        no_qrels.with_columns(pl.col(query).cast(pl.String)),
        judged.cast(pl.String),
    )


def judgments(qrels: pl.DataFrame, job: Job) -> pl.DataFrame:
    """The qrels rows as :func:`~polars_rankeval.subtopics.score_rankings` reads them
    (``QUERY, SUBTOPIC, DOC, GRADE``; ids as strings where they are compared so)."""
    query = job.query
    return qrels.select(
        pl.col(query).cast(pl.String) if job.strings else pl.col(query),
        pl.col(job.subtopic).cast(pl.String).alias(_S),
        pl.col(job.doc).cast(pl.String).alias(_D),
        pl.col(job.relevance).cast(pl.Int64).alias(_G),
    ).rename({query: _Q})


def combine(
    pieces: Sequence[Scored], job: Job, run_schema: pl.Schema, judged: pl.Series | None = None
) -> pl.DataFrame:
    """The pieces' values as one frame sorted by ``[by], [system], query``: one warning for
    the run queries without qrels, and ``missing`` over the whole run (the absent
    rankings, by :func:`~polars_rankeval.engine.scope.absent_rankings`' rule, refused
    by name or scored 0). ``judged``: every qrels query, when the pieces' do not hold
    them all (a lazy run's pieces get only their own queries' qrels)."""
    schema = job.output_schema(run_schema)
    keys, query = job.keys, job.query
    as_text = pl.col(query).cast(pl.String)
    no_qrels = [p.no_qrels.select(keys).with_columns(as_text) for p in pieces]
    unscored = pl.concat(no_qrels) if no_qrels else pl.DataFrame(schema={query: pl.String})
    if unscored.height:
        warn_unscored_queries(unscored.get_column(query))
    cast = [pl.col(c).cast(t) for c, t in schema.items()]
    scores = [p.scores.select(cast) for p in pieces]
    if job.missing != "drop":
        if judged is None:
            judged = (
                pl.concat([p.judged for p in pieces]) if pieces else pl.Series([], dtype=pl.String)
            )
        seen = (
            [s.select(keys).with_columns(as_text) for s in scores] + [unscored.select(keys)]
            if pieces
            else []
        )
        run_keys = pl.concat(seen) if seen else pl.DataFrame(schema={k: pl.String for k in keys})
        absent = absent_rankings(run_keys, judged, query=query, system=job.system, by=job.by)
        if job.missing == "error":
            raise_absent_queries(absent)
        else:
            zeros = [pl.lit(0.0, pl.Float64).alias(str(m)) for m in job.measures]
            scores.append(absent.with_columns(*zeros).select(cast))
    if not scores:
        return pl.DataFrame(schema=schema)
    return pl.concat(scores).sort(keys)


def _read_qrels(qrels: pl.DataFrame | pl.LazyFrame, job: Job) -> pl.DataFrame:
    """The qrels columns, read whole and checked."""
    frame = qrels.lazy().select(job.qrels_columns).collect()
    check_qrels(frame, job)
    return frame


def _score_frame(run: pl.DataFrame, qrels: pl.DataFrame, job: Job) -> pl.DataFrame:
    """A run in memory, scored as one piece (``missing="error"`` refused before)."""
    run = run.select(job.run_columns)
    check_run(run, job)
    if job.missing == "error":
        judged = qrels.get_column(job.query).cast(pl.String)
        keys = run.select(job.keys)
        absent = absent_rankings(keys, judged, query=job.query, system=job.system, by=job.by)
        raise_absent_queries(absent)
    return combine([score(run, qrels, job)], job, run.schema)


def _score_lazy(run: pl.LazyFrame, qrels: pl.DataFrame, job: Job, limit: int) -> pl.DataFrame:
    """A lazy run read once in batches, checked as they arrive, and scored in pieces of
    whole rankings (as they come, or bucket by bucket past the budget), each with the
    qrels rows of its queries."""
    query = job.query
    qrels_ids = pl.col(query).cast(pl.String) if job.strings else pl.col(query)
    no_judged = pl.Series([], dtype=pl.String)
    ideals = ideal_values(judgments(qrels, job), job.measures)  # once: pieces share queries

    def piece(rows: pl.DataFrame) -> Piece:
        queries = rows.get_column(query).unique()
        queries = queries.cast(pl.String) if job.strings else queries
        mine = qrels.filter(qrels_ids.is_in(queries.implode()))
        done = score(rows, mine, job, ideals, qrels_checked=True)
        return Piece(done.scores, done.no_qrels, rows.height, mine.height)

    def check(batch: pl.DataFrame, offset: int) -> None:
        check_run(batch, job, offset)

    if job.validate:  # a piece checks only its queries' rows
        check_duplicates(qrels.lazy(), [query, job.subtopic, job.doc], "qrels")
    pieces = score_judged_lazy(run, job.run_columns, job.keys, piece, check, limit)
    scored = [Scored(p.scores, p.no_qrels, no_judged) for p in pieces]
    judged = qrels.get_column(query).cast(pl.String).unique()
    return combine(scored, job, run.collect_schema(), judged)


def _rankings(
    run: pl.DataFrame, keys: list[str], doc: str, score: str, depth: int | None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The ranked rows ``_K, _Q, _D, _R`` (in the run's row order; ranks by score
    descending, ties by doc id descending, as the engine ranks: :func:`~polars_rankeval.
    engine.select.rank_order_of`; to ``depth``) and the rankings ``_K, *keys`` (``_K``: a
    ranking's id)."""
    query = keys[-1]
    groups = Groups.of(run, keys)
    columns = Options(query=query, doc=doc, score=score, system=None, order="score")
    order = rank_order_of(run, columns, groups, "score", single_precision=False)
    ranks = order.ranks(np.arange(run.height))
    ids = pl.Series(_K, groups.ids, dtype=pl.UInt32)
    ranked = pl.DataFrame(
        [ids, run[query].alias(_Q), run[doc].cast(pl.String).alias(_D),
         pl.Series(_R, ranks, dtype=pl.UInt32)]
    )  # fmt: skip
    first = ids.arg_unique()
    rankings = run.select(keys).gather(first).with_columns(ids.gather(first))
    if depth is not None:
        ranked = ranked.filter(pl.col(_R) <= depth)
        rankings = rankings.clear() if depth == 0 else rankings
    return ranked, rankings.select(_K, *keys)
