"""evaluate(): run + qrels -> one row per scored query, one column per measure.

The functions here check their arguments and hand the work to the engine
(:mod:`polars_rankeval.engine`): one pipeline, scope -> rank -> select rows ->
aggregate, for every input.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any, overload

import polars as pl

from polars_rankeval._typing import (
    ArrowStreamExportable,
    Duplicates,
    Empty,
    FrameT,
    IntoFrame,
    IntoFrameOrDict,
    Missing,
    NestedDict,
    Order,
)
from polars_rankeval.call import Call, check_per_ranking, prepare
from polars_rankeval.conventions import Conventions, get_conventions
from polars_rankeval.engine import buckets
from polars_rankeval.engine.outcome import (
    lists_score_every_query,
    raise_absent_queries,
    warn_unjudged_queries,
    warn_unscored_queries,
)
from polars_rankeval.engine.pipeline import (
    Piece,
    aggregate,
    check_values,
    measure_reads,
    score_piece,
)
from polars_rankeval.engine.scope import absent_rankings, scope
from polars_rankeval.engine.select import Reads, judged_from_table
from polars_rankeval.engine.shape import FACT, HAS_RUN, SCORED, Judged
from polars_rankeval.inputs import (
    JOINED_QUERY,
    as_frame,
    dict_columns,
    id_columns,
    run_keys,
    with_joined_ids,
)
from polars_rankeval.measures import (
    Context,
    Measure,
    parse_measures,
)
from polars_rankeval.options import check_options, segment_columns
from polars_rankeval.recsys import score_lists, with_accuracy
from polars_rankeval.side import check_side, side_keys
from polars_rankeval.validation import (
    check_columns,
    check_grade_dtype,
    check_int,
    check_judged_values,
    check_n_rel,
    check_output_names,
    check_reserved,
    system_column,
)


@overload
def evaluate(
    run: FrameT,
    qrels: IntoFrameOrDict,
    measures: str | Measure | Iterable[str | Measure],
    *,
    query: str | Sequence[str] = "query",
    doc: str | Sequence[str] = "doc",
    score: str = "score",
    relevance: str = "relevance",
    system: str | None = "system",
    by: str | Sequence[str] | None = None,
    rank: str = "rank",
    rel_level: int | None = None,
    order: Order = "score",
    depth: int | None = None,
    missing: Missing | None = None,
    empty_queries: Empty | None = None,
    duplicates: Duplicates = "error",
    per_query: bool = True,
    validate: bool = True,
    conventions: str | Conventions | None = None,
    memory_limit: int | str | None = None,
    train: IntoFrame | None = None,
    catalog: Any = None,
    item_features: IntoFrame | None = None,
) -> FrameT: ...
@overload
def evaluate(
    run: ArrowStreamExportable | NestedDict,
    qrels: IntoFrameOrDict,
    measures: str | Measure | Iterable[str | Measure],
    *,
    query: str | Sequence[str] = "query",
    doc: str | Sequence[str] = "doc",
    score: str = "score",
    relevance: str = "relevance",
    system: str | None = "system",
    by: str | Sequence[str] | None = None,
    rank: str = "rank",
    rel_level: int | None = None,
    order: Order = "score",
    depth: int | None = None,
    missing: Missing | None = None,
    empty_queries: Empty | None = None,
    duplicates: Duplicates = "error",
    per_query: bool = True,
    validate: bool = True,
    conventions: str | Conventions | None = None,
    memory_limit: int | str | None = None,
    train: IntoFrame | None = None,
    catalog: Any = None,
    item_features: IntoFrame | None = None,
) -> pl.DataFrame: ...
def evaluate(
    run: IntoFrameOrDict,
    qrels: IntoFrameOrDict,
    measures: str | Measure | Iterable[str | Measure],
    *,
    query: str | Sequence[str] = "query",
    doc: str | Sequence[str] = "doc",
    score: str = "score",
    relevance: str = "relevance",
    system: str | None = "system",
    by: str | Sequence[str] | None = None,
    rank: str = "rank",
    rel_level: int | None = None,
    order: Order = "score",
    depth: int | None = None,
    missing: Missing | None = None,
    empty_queries: Empty | None = None,
    duplicates: Duplicates = "error",
    per_query: bool = True,
    validate: bool = True,
    conventions: str | Conventions | None = None,
    memory_limit: int | str | None = None,
    train: IntoFrame | None = None,
    catalog: Any = None,
    item_features: IntoFrame | None = None,
) -> pl.DataFrame | pl.LazyFrame:
    r"""Score a run against qrels: one row per scored query, one column per measure.

    One pipeline for every input (:mod:`polars_rankeval.engine`): each ranking
    is ordered once (trec_eval order: score descending, ties by doc id
    descending as strings) by one sort of packed integers, the retrieved
    documents that have a qrels row are found by one hash join, and every
    measure is computed from those rows, their queries' judgments and the
    number of documents retrieved, by plain per-ranking sums: no per-query
    Python. A LazyFrame run (a Parquet or CSV scan) is read once, in batches;
    when it is larger than ``memory_limit`` it is split by a hash of the query
    into buckets on disk and scored bucket by bucket, so memory stays bounded
    whatever its size.

    Parameters
    ----------
    run
        ``query, doc, score`` (optionally ``system``, ``rank``); DataFrame or
        LazyFrame (lazy in, lazy out), or a pandas or Arrow frame or a nested
        ``{query: {doc: score}}`` dict, read as a DataFrame.
    qrels
        ``query, doc, relevance``: integer grades; grade >= ``rel_level`` is relevant.
    measures
        Names in canonical (``AP@10``), trec_eval (``map_cut_10``) or ranx
        (``map@10``) form, or :class:`Measure` objects.
    query, doc, score, relevance, system, rank
        Column names. ``system`` is used when the run has that column: every
        system is scored in the same plan and the result keeps the column.
    by
        Segment columns of the run (a day, a country, an experiment arm, ...):
        each (segment, system, query) is a ranking of its own, and the result
        keeps the columns. Under ``missing="zero"`` a qrels query is scored as
        an empty ranking only in the segments where the run has it (see
        :mod:`polars_rankeval.engine.scope`).
    rel_level
        Minimum grade that counts as relevant (trec_eval ``-l``; default: the
        conventions', 1 for every preset).
    order
        ``"score"`` (trec_eval), ``"rank"`` (the run's rank column) or
        ``"presorted"`` (rows already in rank order: no sort).
    depth
        Keep only the top ``depth`` documents per ranking (trec_eval ``-M``).
    missing
        Queries in qrels but not in the run (default: the conventions' choice,
        ``"zero"`` for ranx and ir_measures): ``"drop"`` (trec_eval),
        ``"zero"`` (score them as empty rankings, trec_eval ``-c``) or ``"error"``.
        Run queries with no qrels row are never scored; for a DataFrame run an
        :class:`UnscoredQueriesWarning` says how many.
    empty_queries
        Scored queries (or users) without a relevant document (default: the
        conventions' choice, ``"zero"`` but for torchmetrics): ``"zero"`` (each
        measure's own value: 0 for AP, RR, nDCG, ...), ``"one"``, ``"skip"`` (left out
        of the output and the means) or ``"error"``, as torchmetrics'
        ``empty_target_action``. Counts (``NumRet``, ``NumRel``, ...) keep their value.
    duplicates
        Duplicate (query, doc) rows in the run: ``"error"`` or ``"keep_best"``.
    per_query
        True (default): per-query values. False: the mean over queries per
        system and measure, with the number of queries in ``n_queries``.
    validate
        Check the data: null ids, NaN or null scores, grades that are not
        integers, duplicate (ranking, doc) rows in the run and (query, doc)
        rows in qrels (default True, for every input: a LazyFrame is checked
        during its one pass). Columns, dtypes and options are always checked,
        on the schemas, before any data is read.
    conventions
        ``"trec_eval-10"`` (default; the current release) or ``"trec_eval-9"``
        (the version pytrec_eval and ir_measures wrap): under 9.x, scores are
        ordered as single-precision floats (two scores equal in float32 tie and
        the doc id decides) and IPrec/11pt truncate where 10.0 rounds; the
        nicknames (``all_trec``) name each version's set. Or a peer's preset,
        ``"ranx"``, ``"ir_measures"``, ``"sklearn"``, ``"torchmetrics"``,
        ``"spark"``, or a :class:`~polars_rankeval.conventions.Conventions`: its tie
        rule, judgments, absent and empty queries and measure parameters. See
        :mod:`polars_rankeval.conventions` and :func:`polars_rankeval.explain`.
    memory_limit
        LazyFrame runs only: the most memory (bytes, or a string such as
        ``"2GiB"``) that the evaluation should take. Default ``"1GiB"``. When
        the run's or the qrels' rows take more than an eighth of it, the run is
        scored piece by piece as it is read (rankings in one stretch each) or
        bucket by bucket (see above); more memory means larger pieces and fewer
        of them, up to the whole input in one piece, as a DataFrame is scored.
        Qrels given as a DataFrame are in memory already: they are read where
        they are and not counted. The measures of lists (``Novelty``, ``ILD``, ...)
        are scored bucket by bucket of the queries past it, a DataFrame run's too
        (:func:`polars_rankeval.recsys.list_buckets`).
    train, catalog, item_features
        The side inputs of the recommendation measures (docs/recsys.md): the
        training interactions (``query, doc``, the run's column names; RecTools'
        ``prev_interactions``), the ids of the items that could be recommended (a
        frame with the ``doc`` column, or a list or Series of ids) and the items'
        features (wide: ``doc`` and one column per feature; long: ``doc, feature,
        value``). A measure that needs one that is not given is refused by name
        before any work. A measure of each list as a whole (``Novelty``, ``ARP``,
        ``ILD``, ``Serendipity``, ...) scores every list of the run, whether or not
        its user has qrels; the other measures are null for such a user.

    Returns
    -------
    DataFrame or LazyFrame (a LazyFrame for a LazyFrame run, else a DataFrame)
        ``[system], query``, then one Float64 column per measure named by its
        canonical name, sorted by system and query. For a LazyFrame run the
        work happens when the result is collected (``pl.defer``).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> run = pl.DataFrame({"query": ["q1"] * 3 + ["q2"] * 2,
    ...                     "doc": ["a", "b", "c", "a", "d"],
    ...                     "score": [3.0, 2.0, 1.0, 2.0, 1.0]})
    >>> qrels = pl.DataFrame({"query": ["q1", "q1", "q2"], "doc": ["b", "x", "d"],
    ...                       "relevance": [1, 1, 2]})
    >>> pr.evaluate(run, qrels, ["AP", "P@2", "map_cut_1"])
    shape: (2, 4)
    ┌───────┬──────┬─────┬──────┐
    │ query ┆ AP   ┆ P@2 ┆ AP@1 │
    │ ---   ┆ ---  ┆ --- ┆ ---  │
    │ str   ┆ f64  ┆ f64 ┆ f64  │
    ╞═══════╪══════╪═════╪══════╡
    │ q1    ┆ 0.25 ┆ 0.5 ┆ 0.0  │
    │ q2    ┆ 0.5  ┆ 0.5 ┆ 0.0  │
    └───────┴──────┴─────┴──────┘
    """
    run = as_frame(run, "run", dict_columns(query, doc, score))
    qrels = as_frame(qrels, "qrels", dict_columns(query, doc, relevance))
    run_schema, qrels_schema = run.lazy().collect_schema(), qrels.lazy().collect_schema()
    options = {
        "query": query,
        "doc": doc,
        "score": score,
        "relevance": relevance,
        "rank": rank,
        "system": system,
        "by": by,
        "rel_level": rel_level,
        "order": order,
        "depth": depth,
        "missing": missing,
        "empty_queries": empty_queries,
        "duplicates": duplicates,
        "conventions": conventions,
        "per_query": per_query,
        "validate": validate,
        "memory_limit": memory_limit,
    }
    side = check_side(train=train, catalog=catalog, item_features=item_features,
                      query=options_query(query), doc=options_query(doc), run=("run", run_schema),
                      keys=side_keys(query, system, by))  # fmt: skip
    call = prepare(run_schema, qrels_schema, measures, options, given=frozenset(side))
    run = with_joined_ids(run, call.options.joined_ids)
    qrels = with_joined_ids(qrels, call.options.joined_ids)
    if call.list_measures:
        return with_lists(run, qrels, call, side)
    if isinstance(run, pl.DataFrame):
        qrels_df = qrels.collect() if isinstance(qrels, pl.LazyFrame) else qrels
        return call.finish(score_frame(run, qrels_df, call))
    lazy_run, lazy_qrels = run, qrels

    def deferred() -> pl.DataFrame:
        scores = buckets.score_lazy(lazy_run, lazy_qrels, list(call.measures), call.options,
                                    validate=call.validate, limit=call.memory_limit)  # fmt: skip
        return call.finish(scores)

    return pl.defer(deferred, schema=call.output_schema(run_schema, qrels_schema))


def options_query(column: str | Sequence[str]) -> str:
    """The column a side input is joined on: the id column (the last of a compound id; an
    empty list is refused by :func:`~polars_rankeval.call.prepare`, naming the option)."""
    if isinstance(column, str):
        return column
    parts = list(column)
    return parts[-1] if parts else ""


def with_lists(
    run: pl.DataFrame | pl.LazyFrame,
    qrels: pl.DataFrame | pl.LazyFrame,
    call: Call,
    side: dict[str, pl.DataFrame | pl.LazyFrame],
) -> pl.DataFrame | pl.LazyFrame:
    """A call with measures of lists (:mod:`polars_rankeval.lists`): those over every
    list of the run, the others through the engine over the scored rankings, joined
    on the ranking keys (null where one side has no value)."""
    engine_call = replace(call, measures=call.engine_measures, per_query=True)
    keys = call.options.output_keys

    def scored() -> pl.DataFrame:
        values = score_lists(run, qrels, call, side)
        lists = [str(m) for m in call.list_measures]
        judged = [str(m) for m in engine_call.measures]
        with lists_score_every_query(lists, judged):
            return call.finish(with_judged(values))

    def with_judged(values: pl.DataFrame) -> pl.DataFrame:
        if engine_call.measures:
            if isinstance(run, pl.DataFrame):
                q = qrels.collect() if isinstance(qrels, pl.LazyFrame) else qrels
                accuracy = engine_call.finish(score_frame(run, q, engine_call))
            else:
                accuracy = engine_call.finish(
                    buckets.score_lazy(run, qrels, list(engine_call.measures),
                                       engine_call.options, validate=call.validate,
                                       limit=call.memory_limit)
                )  # fmt: skip
            values = with_accuracy(values, accuracy, keys)
        return values

    if isinstance(run, pl.DataFrame):
        return scored()
    schemas = run.collect_schema(), qrels.lazy().collect_schema()
    return pl.defer(scored, schema=call.output_schema(*schemas))


def score_frame(run: pl.DataFrame, qrels: pl.DataFrame, call: Call) -> pl.DataFrame:
    """Score an in-memory run: checks, one piece through the engine, the warning."""
    options = call.options
    if call.validate:
        check_values(run, qrels, options)
    if options.missing == "error":
        raise_absent_queries(
            absent_rankings(run.select(options.keys), qrels[options.query],
                            query=options.query, system=options.system, by=options.by)
        )  # fmt: skip
    piece = score_piece(run, qrels, call.measures, options, check_duplicates=call.validate)
    warn_unscored_queries(piece.no_qrels[options.query])
    return piece.scores


@overload
def evaluate_judged(
    judged: FrameT,
    measures: str | Measure | Iterable[str | Measure],
    *,
    query: str | Sequence[str] = "query",
    rank: str = "rank",
    relevance: str = "relevance",
    system: str | None = "system",
    by: str | Sequence[str] | None = None,
    n_rel: str | None = None,
    rel_level: int | None = None,
    empty_queries: Empty | None = None,
    validate: bool = True,
    conventions: str | Conventions | None = None,
    memory_limit: int | str | None = None,
) -> FrameT: ...
@overload
def evaluate_judged(
    judged: ArrowStreamExportable,
    measures: str | Measure | Iterable[str | Measure],
    *,
    query: str | Sequence[str] = "query",
    rank: str = "rank",
    relevance: str = "relevance",
    system: str | None = "system",
    by: str | Sequence[str] | None = None,
    n_rel: str | None = None,
    rel_level: int | None = None,
    empty_queries: Empty | None = None,
    validate: bool = True,
    conventions: str | Conventions | None = None,
    memory_limit: int | str | None = None,
) -> pl.DataFrame: ...
def evaluate_judged(
    judged: IntoFrame,
    measures: str | Measure | Iterable[str | Measure],
    *,
    query: str | Sequence[str] = "query",
    rank: str = "rank",
    relevance: str = "relevance",
    system: str | None = "system",
    by: str | Sequence[str] | None = None,
    n_rel: str | None = None,
    rel_level: int | None = None,
    empty_queries: Empty | None = None,
    validate: bool = True,
    conventions: str | Conventions | None = None,
    memory_limit: int | str | None = None,
) -> pl.DataFrame | pl.LazyFrame:
    r"""Score a table that already carries relevance and order: no qrels needed.

    The shape of logged impressions and clicks, or of a judged table built
    elsewhere: one row per shown item with its ``rank`` (1 = top) and its
    ``relevance`` (an integer grade, or a Boolean ``relevant`` flag). Rows with a
    null rank are items known to be relevant (or judged) but not shown; they
    count toward |R| and the ideal DCG only.

    |R| for a query is taken from the per-query column ``n_rel`` when given
    (its first value in the query), else it is the number of rows with grade
    >= ``rel_level``, shown or not. The ideal ranking for nDCG is built from the
    grades present in the table. Every query in the table that has a judged row
    (a grade, 0 included) is scored; a query whose rows all have a null grade
    (as :func:`polars_rankeval.judge` gives a run query without qrels) is left
    out with an :class:`UnscoredQueriesWarning`, as :func:`evaluate` leaves out a
    run query without qrels.

    Parameters
    ----------
    judged
        ``[system], query, rank, relevance`` (+ ``n_rel``). Lazy in, lazy out.
    measures
        Measure names in any dialect, or :class:`Measure` objects.
    query, rank, relevance, system, n_rel
        Column names; ``system`` is used when present.
    by
        Segment columns (a day, a country, ...): each (segment, system, query)
        is a ranking of its own; the result keeps the columns.
    rel_level
        Minimum grade that counts as relevant (default: the conventions', 1 for every
        preset, as for :func:`evaluate`).
    empty_queries
        Rankings (users) without a relevant document, as for :func:`evaluate`:
        ``"zero"``, ``"one"``, ``"skip"`` or ``"error"`` (default: the conventions').
    validate
        Check the table first (default True): ids are not null, ranks are
        integers >= 1 and unique within a ranking, grades are integers or
        Booleans. A null rank (judged, not shown) and a null grade (shown, not
        judged, as in :func:`polars_rankeval.judge`'s table) are allowed.
        Rows may come in any order.
    conventions
        As for :func:`evaluate` (IPrec's rounding, the nicknames, a tool's measure
        parameters; ``judgments="retrieved"`` presets read only the shown rows).
    memory_limit
        LazyFrame tables only, as for :func:`evaluate` (default ``"1GiB"``): the
        table is read once, in batches, each checked as it arrives; while its rows
        fit an eighth of the limit they are scored in one piece; past it, a table
        whose rankings each come in one stretch (as :func:`polars_rankeval.judge`
        returns them) is scored piece by piece as it is read, any other is written
        to buckets on disk by a hash of the query and scored bucket by bucket, so
        that logs of any size are scored in bounded memory.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> clicks = pl.DataFrame({"query": ["u1"] * 4 + ["u2"] * 2,
    ...                        "rank": [1, 2, 3, 4, 1, 2],
    ...                        "clicked": [False, True, False, True, True, False]})
    >>> pr.evaluate_judged(clicks, ["AP", "RR", "P@2"], relevance="clicked")
    shape: (2, 4)
    ┌───────┬─────┬─────┬─────┐
    │ query ┆ AP  ┆ RR  ┆ P@2 │
    │ ---   ┆ --- ┆ --- ┆ --- │
    │ str   ┆ f64 ┆ f64 ┆ f64 │
    ╞═══════╪═════╪═════╪═════╡
    │ u1    ┆ 0.5 ┆ 0.5 ┆ 0.5 │
    │ u2    ┆ 1.0 ┆ 1.0 ┆ 0.5 │
    └───────┴─────┴─────┴─────┘
    """
    parsed = parse_measures(measures, conventions=conventions)
    check_per_ranking(parsed, lists=False)
    conv = get_conventions(conventions)
    judged = as_frame(judged, "judged")
    rel_level = conv.option("rel_level", rel_level)
    check_int("rel_level", rel_level, minimum=0)
    empty = conv.option("empty_queries", empty_queries)
    check_options({"empty_queries": empty})
    schema = judged.lazy().collect_schema()
    system = system_column(system, schema)
    queries = run_keys(query, None)
    segments = segment_columns(by, schema, taken=[*queries, rank, relevance, system, n_rel])
    keys = [*segments, *run_keys(queries, system)]
    for name in queries:
        check_columns(schema, {"query": name}, "judged")
    required = {"rank": rank, "relevance": relevance}
    check_columns(schema, required | ({"n_rel": n_rel} if n_rel else {}), "judged")
    check_grade_dtype(schema, relevance, table="judged")
    check_output_names(keys, [str(m) for m in parsed])
    context = Context(rel_level=rel_level, iprec_rounding=conv.iprec_rounding)
    columns = [*keys, rank, relevance, *([n_rel] if n_rel else [])]
    reads = measure_reads([m for m in parsed if not m.judged_only] or parsed, context, conv)
    limit = buckets.memory_bytes(memory_limit)

    def check(table: pl.DataFrame, offset: int = 0) -> None:
        check_judged_values(table, keys=keys, rank=rank, relevance=relevance, offset=offset)

    plain = [m for m in parsed if not m.judged_only]
    judged_only = [m for m in parsed if m.judged_only]
    # a ranking with no shown row is a query the run lacks: 0 on every measure under
    # the conventions' absent_values="zero" (ir_measures), as evaluate scores it; an
    # emptied -J ranking scores 0 on those measures either way
    absent_zero = conv.absent_values == "zero"
    only_reads = Reads(min(measure_reads(judged_only, context, conv).rows, 0.0))

    def shaped(table: pl.DataFrame, reads: Reads) -> Judged:
        return judged_from_table(
            table,
            keys=keys,
            rank=rank,
            relevance=relevance,
            n_rel=n_rel,
            check=validate,
            reads=reads,
            retrieved_only=conv.judgments == "retrieved",
        )

    def piece(table: pl.DataFrame) -> Piece:
        if validate and n_rel:  # a piece holds whole rankings
            check_n_rel(table, keys=keys, relevance=relevance, n_rel=n_rel, rel_level=rel_level)
        shape = shaped(table, reads)
        ids = [pl.col(q).cast(pl.String) for q in queries]
        unjudged = shape.keys.filter(~shape.rankings[SCORED])
        scores = aggregate(shape, plain, context, empty, absent_zero=absent_zero)
        if judged_only:  # the rankings without their unjudged documents (-J)
            rows = judged_only_rows(table, keys, rank, relevance)
            more = aggregate(shaped(rows, only_reads), judged_only, context, empty,
                             absent_zero=absent_zero)  # fmt: skip
            names = [str(m) for m in judged_only]
            joined = scores.join(more, on=keys, how="left", nulls_equal=True, maintain_order="left")
            scores = joined.with_columns(pl.col(names).fill_null(0.0))  # no row left: 0
        scores = scores.select(*keys, *(str(m) for m in parsed))
        return Piece(scores, unjudged.select(pl.concat_str(ids, separator=" / ")), table.height, 0)

    def finished(pieces: list[Piece]) -> pl.DataFrame:
        unjudged = pl.concat([p.no_qrels for p in pieces], how="vertical_relaxed")
        warn_unjudged_queries(unjudged.to_series())  # one warning, whatever the pieces
        return pl.concat([p.scores for p in pieces], how="vertical_relaxed").sort(keys)

    if isinstance(judged, pl.DataFrame):
        table = judged.select(columns)
        if validate:
            check(table)
        return finished([piece(table)])
    out_schema = pl.Schema({k: schema[k] for k in keys} | {str(m): pl.Float64 for m in parsed})
    lazy = judged
    return pl.defer(
        lambda: finished(buckets.score_judged_lazy(lazy, columns, keys, piece,
                                                   check if validate else None, limit)),
        schema=out_schema,
    )  # fmt: skip


def coverage(
    run: IntoFrameOrDict,
    qrels: IntoFrameOrDict,
    *,
    query: str | Sequence[str] = "query",
    system: str | None = "system",
    by: str | Sequence[str] | None = None,
    missing: Missing = "drop",
) -> pl.DataFrame:
    """Which queries :func:`evaluate` scores, and why the others are left out.

    Returns
    -------
    pl.DataFrame
        ``[*by], [system], query, status`` with status ``"scored"``,
        ``"no_qrels"`` (a run query with no qrels row: never scored, as in
        trec_eval), ``"not_in_run"`` (a qrels query the system did not retrieve
        for: scored as an empty ranking only with ``missing="zero"``) or
        ``"scored_empty"`` (such a query under ``missing="zero"``). With
        ``by``, a qrels query the run has in no segment is listed once as
        ``"not_in_run"`` with null segment (and system) columns: it belongs to
        no segment. Query ids are compared as strings.

    Examples
    --------
    >>> import polars as pl
    >>> run = pl.DataFrame({"query": ["a", "b"], "doc": ["x", "y"], "score": [1.0, 1.0]})
    >>> qrels = pl.DataFrame({"query": ["a", "c"], "doc": ["x", "z"], "relevance": [1, 1]})
    >>> coverage(run, qrels).sort("query")
    shape: (3, 2)
    ┌───────┬────────────┐
    │ query ┆ status     │
    │ ---   ┆ ---        │
    │ str   ┆ str        │
    ╞═══════╪════════════╡
    │ a     ┆ scored     │
    │ b     ┆ no_qrels   │
    │ c     ┆ not_in_run │
    └───────┴────────────┘
    """
    run = as_frame(run, "run", dict_columns(query, "doc", "score"))
    qrels = as_frame(qrels, "qrels", dict_columns(query, "doc", "relevance"))
    taken = [*run.lazy().collect_schema().names(), *qrels.lazy().collect_schema().names()]
    joined, parts = id_columns(query, JOINED_QUERY, "query", taken)
    run = with_joined_ids(run, [(joined, parts)])
    qrels = with_joined_ids(qrels, [(joined, parts)])
    schema = run.lazy().collect_schema()
    system = system_column(system, schema)
    if system is not None and system in (*parts, joined):
        msg = (
            f"system={system!r} is also the query column: pass system=None (one system) "
            f"or name the run's system column."
        )
        raise ValueError(msg)
    check_reserved({"query": [*parts, joined], "system": system}, ("status",), "coverage")
    segments = segment_columns(by, schema, taken=[*parts, joined, system])
    check_reserved({"by": segments}, ("status",), "coverage")
    keys = [*segments, *run_keys([*parts, joined], system)]
    text = pl.col(joined).cast(pl.String)
    run_rankings = run.lazy().select(keys).unique(maintain_order=True).collect()
    run_rankings = run_rankings.with_columns(text)
    facts = qrels.lazy().select(*parts, text).unique(joined, maintain_order=True).collect()
    facts = facts.with_row_index(FACT)
    decided = scope(
        run_rankings, facts, query=joined, system=system, missing=missing, by=segments, absent=True
    )
    flags = decided.flags
    status = (
        pl.when(~flags[HAS_RUN])
        .then(pl.lit("scored_empty" if missing == "zero" else "not_in_run"))
        .when(flags[FACT].is_null())
        .then(pl.lit("no_qrels"))
        .otherwise(pl.lit("scored"))
    )
    listed = decided.keys.with_columns(flags.select(status.alias("status")))
    if segments:  # qrels queries in no segment: they belong nowhere
        nowhere = facts.join(run_rankings, on=joined, how="anti").drop(FACT)
        listed = pl.concat(
            [listed, nowhere.with_columns(status=pl.lit("not_in_run"))], how="diagonal_relaxed"
        ).select(listed.columns)
    shown = [k for k in keys if not (parts and k == joined)]
    return listed.sort(keys, nulls_last=True).select(*shown, "status")


def judged_only_rows(table: pl.DataFrame, keys: Sequence[str], rank: str, relevance: str
                     ) -> pl.DataFrame:  # fmt: skip
    """The rows of a pre-judged ``table`` as its ``judged_only`` measures read them
    (trec_eval's ``-J``): without the retrieved documents that are unjudged (no grade, or
    a negative one), the others ranked 1, 2, ... in their order within each ranking.

    Examples
    --------
    >>> table = pl.DataFrame({"query": ["q"] * 5, "rank": [1, 2, 3, 4, None],
    ...                       "relevance": [None, 1, -1, 0, 2]})
    >>> judged_only_rows(table, ["query"], "rank", "relevance").rows()
    [('q', 1, 1), ('q', 2, 0), ('q', None, 2)]
    """
    unjudged = pl.col(rank).is_not_null() & ~(pl.col(relevance) >= 0).fill_null(False)
    kept = table.filter(~unjudged)
    ranks = pl.col(rank).rank("ordinal").over(keys).cast(table.schema[rank])
    return kept.with_columns(ranks)
