"""Evaluate on a Dask cluster: query-partitioned pieces, one :func:`~polars_rankeval.evaluate` each.

Every measure of a query depends only on that query's run rows and qrels rows.
So the run and the qrels are cut into pieces by a hash of the query id (the
same query lands in the same piece on both sides, and in exactly one piece),
each Dask task scores its piece with the same Polars plan as
:func:`polars_rankeval.evaluate`, and the per-query frames are concatenated.
The result equals the in-process one query by query; means are taken over the
gathered queries, never as means of piece means.

Parquet inputs are read inside the tasks: each task scans the files with a
filter on its bucket pushed into the scan, so no worker holds more than its
piece, and the driver only reads file metadata. In-memory frames are split on
the driver and scattered to the workers.

``dask[distributed]`` is imported only when :func:`evaluate` is called
(``pip install polars-rankeval[dask]``). :func:`query_bucket` and
:func:`evaluate_piece` need only Polars; the Spark module reuses them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

import polars as pl

from polars_rankeval.evaluate import evaluate as evaluate_in_process
from polars_rankeval.evaluate import (
    mean_scores,
    raise_absent_queries,
    run_keys,
    unscored_not_warned,
    warn_unscored_queries,
)
from polars_rankeval.measures import Measure, parse_measures

if TYPE_CHECKING:
    from distributed import Client

Source: TypeAlias = (
    str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | pl.DataFrame | pl.LazyFrame
)
"""A Parquet path, glob or list of them, or a Polars frame."""

BUCKET_SEED = 0x5EED_0F_0E7A1
"""Seed of the query hash; fixed so every process computes the same buckets."""

EVALUATE_OPTIONS = frozenset(
    {
        "query",
        "doc",
        "score",
        "relevance",
        "system",
        "rank",
        "rel_level",
        "order",
        "depth",
        "missing",
        "duplicates",
        "per_query",
    }
)
"""Keyword options of :func:`polars_rankeval.evaluate` that the engines pass through."""


def query_bucket(query: str, n_buckets: int) -> pl.Expr:
    """Bucket ``0 .. n_buckets - 1`` of each row's query id.

    The id is hashed as a string (so ``401`` and ``"401"`` share a bucket, as
    they share a ranking in :func:`polars_rankeval.evaluate`) with a fixed seed:
    the same in every process running the same Polars version.

    Parameters
    ----------
    query
        Name of the query id column.
    n_buckets
        Number of buckets, >= 1.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"query": ["q1", "q2", "q1"]})
    >>> b = df.select(query_bucket("query", 4))["query"]
    >>> b[0] == b[2], b.dtype, bool(b.is_between(0, 3).all())
    (True, UInt64, True)
    """
    if n_buckets < 1:
        msg = f"The number of buckets must be an int >= 1. Got {n_buckets!r} instead."
        raise ValueError(msg)
    return pl.col(query).cast(pl.String).hash(seed=BUCKET_SEED) % n_buckets


@dataclass(frozen=True)
class PieceResult:
    """What scoring one piece gives back: scores plus what was left out, and why."""

    scores: pl.DataFrame
    """Per-query values of the piece, as :func:`polars_rankeval.evaluate` gives them."""
    run_rows: int
    qrels_rows: int
    no_qrels: pl.DataFrame
    """Run rankings (``[system], query``) with no qrels row: never scored."""
    not_in_run: pl.DataFrame
    """Qrels queries (``query``) absent from the whole run."""


def needed_columns(options: Mapping[str, Any], system: str | None) -> tuple[list[str], list[str]]:
    """The run and qrels columns that :func:`polars_rankeval.evaluate` reads.

    Selecting them before a piece is read or shuffled keeps other columns
    (run tags, text, features) off the wire.

    Examples
    --------
    >>> needed_columns({"order": "rank", "doc": "docno"}, "system")
    (['system', 'query', 'docno', 'rank'], ['query', 'docno', 'relevance'])
    """
    query, doc = options.get("query", "query"), options.get("doc", "doc")
    order = options.get("order", "score")
    ordering = {
        "score": [options.get("score", "score")],
        "rank": [options.get("rank", "rank")],
    }
    run = [*run_keys(query, system), doc, *ordering.get(order, [])]
    return run, [query, doc, options.get("relevance", "relevance")]


def _as_string_ids(frame: pl.DataFrame, query: str) -> pl.DataFrame:
    return frame.with_columns(pl.col(query).cast(pl.String))


def evaluate_piece(
    run: pl.DataFrame,
    qrels: pl.DataFrame,
    measures: Sequence[str],
    *,
    systems: pl.DataFrame | None = None,
    options: Mapping[str, Any] | None = None,
) -> PieceResult:
    """Score one query-partitioned piece: what each Dask task and Spark worker runs.

    The piece must hold, for each of its queries, all of that query's run rows
    and qrels rows. Under ``missing="zero"`` a system that retrieved nothing in
    this piece is still scored on the piece's qrels queries (as an empty
    ranking) when it is listed in ``systems``, the systems of the whole run.

    Parameters
    ----------
    run, qrels
        The piece's rows.
    measures
        Canonical measure names.
    systems
        One-column frame of every system of the whole run (``missing="zero"`` only).
    options
        Keyword options of :func:`polars_rankeval.evaluate` (``per_query`` is ignored).

    Examples
    --------
    >>> import polars as pl
    >>> run = pl.DataFrame({"query": ["a", "a", "b"], "doc": ["x", "y", "z"],
    ...                     "score": [2.0, 1.0, 1.0]})
    >>> qrels = pl.DataFrame({"query": ["a", "c"], "doc": ["y", "w"], "relevance": [1, 1]})
    >>> piece = evaluate_piece(run, qrels, ["RR"])
    >>> piece.scores
    shape: (1, 2)
    ┌───────┬─────┐
    │ query ┆ RR  │
    │ ---   ┆ --- │
    │ str   ┆ f64 │
    ╞═══════╪═════╡
    │ a     ┆ 0.5 │
    └───────┴─────┘
    >>> piece.no_qrels["query"].to_list(), piece.not_in_run["query"].to_list()
    (['b'], ['c'])
    """
    opts = {k: v for k, v in (options or {}).items() if k != "per_query"}
    query = opts.get("query", "query")
    system = opts.get("system", "system")
    system = system if system is not None and system in run.columns else None
    missing = opts.get("missing", "drop")
    scored_opts = {**opts, "missing": "drop" if missing == "error" else missing}
    scores = _score_quietly(run, qrels, measures, scored_opts)
    if missing == "zero" and system is not None and systems is not None:
        scores = _add_absent_systems(scores, run, qrels, measures, systems, system, scored_opts)
    run_q = _as_string_ids(run.select(run_keys(query, system)).unique(), query)
    qrels_q = _as_string_ids(qrels.select(query).unique(), query)
    return PieceResult(
        scores=scores,
        run_rows=run.height,
        qrels_rows=qrels.height,
        no_qrels=run_q.join(qrels_q, on=query, how="anti"),
        not_in_run=qrels_q.join(run_q.select(query), on=query, how="anti"),
    )


def _score_quietly(
    run: pl.DataFrame, qrels: pl.DataFrame, measures: Sequence[str], options: Mapping[str, Any]
) -> pl.DataFrame:
    """``evaluate`` on the piece's frames, with every check but no warning: unscored
    queries are counted and reported once, on the driver. The piece is in memory, so
    it takes the same path as ``evaluate`` on whole DataFrames (and gives the same
    bits)."""
    with unscored_not_warned():
        return evaluate_in_process(run, qrels, measures, **{"validate": True, **options})


def _add_absent_systems(
    scores: pl.DataFrame,
    run: pl.DataFrame,
    qrels: pl.DataFrame,
    measures: Sequence[str],
    systems: pl.DataFrame,
    system: str,
    options: Mapping[str, Any],
) -> pl.DataFrame:
    """missing='zero': score systems with no row in this piece on its qrels queries."""
    absent = systems.join(run.select(system).unique(), on=system, how="anti")
    if absent.is_empty() or qrels.is_empty():
        return scores
    empty_run = run.clear().drop(system)
    empty_scores = _score_quietly(empty_run, qrels, measures, {**options, "system": None})
    extra = absent.join(empty_scores, how="cross").select(
        pl.col(name).cast(dtype) for name, dtype in scores.schema.items()
    )
    return pl.concat([scores, extra])


def check_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """Reject keyword options that :func:`polars_rankeval.evaluate` does not take.

    Examples
    --------
    >>> check_options({"rel_levle": 2})
    Traceback (most recent call last):
    ...
    TypeError: Unknown option(s) 'rel_levle'. Options are those of polars_rankeval.evaluate: ...
    """
    unknown = sorted(set(options) - EVALUATE_OPTIONS)
    if unknown:
        msg = (
            f"Unknown option(s) {', '.join(map(repr, unknown))}. "
            f"Options are those of polars_rankeval.evaluate: {', '.join(sorted(EVALUATE_OPTIONS))}."
        )
        raise TypeError(msg)
    return dict(options)


def _as_lazy(source: Source, table: str) -> pl.LazyFrame | pl.DataFrame:
    """A Parquet path/glob/list becomes a scan; frames pass through."""
    if isinstance(source, pl.DataFrame | pl.LazyFrame):
        return source
    if isinstance(source, str | os.PathLike):
        return pl.scan_parquet(source)
    if (
        isinstance(source, Sequence)
        and source
        and all(isinstance(p, str | os.PathLike) for p in source)
    ):
        return pl.scan_parquet(list(source))
    msg = (
        f"{table} must be a Parquet path, glob or non-empty list of paths, "
        f"or a Polars DataFrame/LazyFrame. Got {type(source).__name__} instead."
    )
    raise TypeError(msg)


def _piece_of(frame: pl.LazyFrame, query: str, bucket: int, n_buckets: int) -> pl.DataFrame:
    """One bucket's rows; on a Parquet scan the filter is pushed into the reader."""
    return frame.filter(query_bucket(query, n_buckets) == bucket).collect()


def _scan_task(
    run: pl.LazyFrame,
    qrels: pl.LazyFrame,
    bucket: int,
    n_buckets: int,
    measures: Sequence[str],
    systems: pl.DataFrame | None,
    options: Mapping[str, Any],
) -> PieceResult:
    """A task on lazy inputs: read this bucket's rows of both tables, score them."""
    query = options.get("query", "query")
    return evaluate_piece(
        _piece_of(run, query, bucket, n_buckets),
        _piece_of(qrels, query, bucket, n_buckets),
        measures,
        systems=systems,
        options=options,
    )


def _frame_task(
    run: pl.DataFrame,
    qrels: pl.DataFrame,
    measures: Sequence[str],
    systems: pl.DataFrame | None,
    options: Mapping[str, Any],
) -> PieceResult:
    """A task on a piece split on the driver."""
    return evaluate_piece(run, qrels, measures, systems=systems, options=options)


def split_by_query(frame: pl.DataFrame, query: str, n_buckets: int) -> list[pl.DataFrame]:
    """Cut a frame into ``n_buckets`` pieces by :func:`query_bucket`, keeping row order.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"query": ["a", "b", "a", "c"], "doc": [1, 2, 3, 4]})
    >>> pieces = split_by_query(df, "query", 3)
    >>> len(pieces), sum(p.height for p in pieces)
    (3, 4)
    >>> [sum(q in p["query"] for p in pieces) for q in "abc"]  # each query in one piece
    [1, 1, 1]
    >>> [p.filter(query="a")["doc"].to_list() for p in pieces if "a" in p["query"]]
    [[1, 3]]
    """
    bucket = "__bucket"
    keyed = frame.with_columns(query_bucket(query, n_buckets).alias(bucket))
    parts = keyed.partition_by(bucket, as_dict=True, maintain_order=True, include_key=False)
    return [parts.get((i,), frame.clear()) for i in range(n_buckets)]


def _default_buckets(client: Client | None) -> int:
    if client is None:
        return os.cpu_count() or 1
    return max(1, sum(client.nthreads().values()))


def _current_client(client: Client | None) -> Client | None:
    """The given client, else the active one, else None (dask's local scheduler)."""
    if client is not None:
        return client
    from distributed import Client

    try:
        return Client.current()
    except ValueError:
        return None


def _import_dask() -> None:
    try:
        import dask  # noqa: F401
        import distributed  # noqa: F401
    except ImportError as err:
        msg = (
            "polars_rankeval.dask needs dask and distributed. "
            "Install them with: pip install polars-rankeval[dask]"
        )
        raise ImportError(msg) from err


def _row_count(frame: pl.DataFrame | pl.LazyFrame) -> int:
    if isinstance(frame, pl.DataFrame):
        return frame.height
    return int(frame.select(pl.len()).collect().item())


def _run_tasks(
    run: pl.DataFrame | pl.LazyFrame,
    qrels: pl.DataFrame | pl.LazyFrame,
    names: list[str],
    systems: pl.DataFrame | None,
    options: dict[str, Any],
    client: Client | None,
    n_buckets: int,
) -> list[PieceResult]:
    """Build one task per bucket and gather their results, in bucket order."""
    import dask

    query = options.get("query", "query")
    if isinstance(run, pl.DataFrame) and isinstance(qrels, pl.DataFrame):
        pieces = list(
            zip(
                split_by_query(run, query, n_buckets),
                split_by_query(qrels, query, n_buckets),
                strict=True,
            )
        )
        if client is not None:
            futures = client.scatter([p for pair in pieces for p in pair])
            pieces = list(zip(futures[::2], futures[1::2], strict=True))
        calls = [(_frame_task, r, q, names, systems, options) for r, q in pieces]
    else:
        run_lf, qrels_lf = run.lazy(), qrels.lazy()
        calls = [
            (_scan_task, run_lf, qrels_lf, b, n_buckets, names, systems, options)
            for b in range(n_buckets)
        ]
    if client is not None:
        futures = [client.submit(*call, pure=False) for call in calls]
        return client.gather(futures)
    return list(dask.compute(*(dask.delayed(call[0])(*call[1:]) for call in calls)))


def _report(pieces: Sequence[PieceResult], options: Mapping[str, Any]) -> None:
    """Warn about unscored run queries; raise under missing='error'."""
    no_qrels = pl.concat([p.no_qrels for p in pieces])
    query = options.get("query", "query")
    warn_unscored_queries(no_qrels[query])
    not_in_run = pl.concat([p.not_in_run for p in pieces])
    if options.get("missing") == "error":
        raise_absent_queries(not_in_run.sort(not_in_run.columns[0]).to_series())


def _check_counts(pieces: Sequence[PieceResult], run_rows: int, qrels_rows: int) -> None:
    """Every row must land in exactly one piece; else the workers hashed differently."""
    got = sum(p.run_rows for p in pieces), sum(p.qrels_rows for p in pieces)
    if got != (run_rows, qrels_rows):
        msg = (
            f"The pieces hold {got[0]} run rows and {got[1]} qrels rows, but the inputs have "
            f"{run_rows} and {qrels_rows}: the workers did not agree on the query buckets "
            f"(are they running the same Polars version as the client?)."
        )
        raise RuntimeError(msg)


def evaluate(
    run: Source,
    qrels: Source,
    measures: str | Measure | Iterable[str | Measure],
    *,
    client: Client | None = None,
    npartitions: int | None = None,
    **evaluate_options: Any,
) -> pl.DataFrame:
    """Score a run against qrels on Dask: :func:`polars_rankeval.evaluate`, query-partitioned.

    The rows are cut into ``npartitions`` pieces by a seeded hash of the query id
    (every query's run and qrels rows in exactly one piece); one task per piece
    runs :func:`polars_rankeval.evaluate` on it, and the per-query frames are
    gathered into one. The values equal the in-process ones for every query.

    Parameters
    ----------
    run
        ``query, doc, score`` (optionally ``system``, ``rank``): a Parquet path,
        glob or list of them (read inside the tasks, each reading only its
        piece's rows), or a Polars DataFrame (split on the driver and scattered)
        or LazyFrame (shipped to the tasks as a plan, filtered there).
    qrels
        ``query, doc, relevance``, in any of the same forms.
    measures
        Measure names or objects, as for :func:`polars_rankeval.evaluate`.
    client
        A ``distributed.Client``. Default: the active client if there is one,
        else dask's local scheduler.
    npartitions
        Number of pieces (tasks). Default: the client's total number of threads
        (the machine's CPU count without a client). A Parquet input is scanned
        once per piece (each scan keeps only its piece's rows), so more pieces
        cost more reading but less memory per task.
    **evaluate_options
        Keyword options of :func:`polars_rankeval.evaluate`: ``query``, ``doc``,
        ``score``, ``relevance``, ``system``, ``rank``, ``rel_level``, ``order``,
        ``depth``, ``missing``, ``duplicates``, ``per_query``.

    Returns
    -------
    pl.DataFrame
        As :func:`polars_rankeval.evaluate`: ``[system], query`` and one Float64
        column per measure, sorted by system and query; with ``per_query=False``
        the mean over all queries per system (never a mean of piece means).

    Notes
    -----
    Run queries with no qrels row are not scored; an
    :class:`~polars_rankeval.UnscoredQueriesWarning` says how many, for every
    input type. ``order="presorted"`` relies on the row order within each query,
    which the pieces keep (for Parquet, the order of the files and of the rows in
    them). Every piece is checked against the input row counts, so a worker
    that hashed query ids differently raises instead of losing rows.

    Examples
    --------
    >>> import polars_rankeval.dask as prd
    >>> from distributed import Client, LocalCluster  # doctest: +SKIP
    >>> client = Client(LocalCluster(n_workers=2, threads_per_worker=1))  # doctest: +SKIP
    >>> prd.evaluate("runs/*.parquet", "qrels.parquet", ["AP", "nDCG@10"],
    ...              client=client)  # doctest: +SKIP
    """
    _import_dask()
    options = check_options(evaluate_options)
    names = [str(m) for m in parse_measures(measures)]
    run_in, qrels_in = _as_lazy(run, "run"), _as_lazy(qrels, "qrels")
    # Validates columns, dtypes and options on the schemas, before any task.
    evaluate_in_process(run_in.lazy(), qrels_in.lazy(), names, **options).collect_schema()
    query = options.get("query", "query")
    system = options.get("system", "system")
    system = system if system is not None and system in run_in.collect_schema() else None
    run_cols, qrels_cols = needed_columns(options, system)
    run_in, qrels_in = run_in.select(run_cols), qrels_in.select(qrels_cols)
    systems = None
    if options.get("missing") == "zero" and system is not None:
        systems = run_in.lazy().select(system).unique().collect()
    client = _current_client(client)
    n_buckets = npartitions if npartitions is not None else _default_buckets(client)
    query_bucket(query, n_buckets)  # validates n_buckets
    pieces = _run_tasks(run_in, qrels_in, names, systems, options, client, n_buckets)
    _check_counts(pieces, _row_count(run_in), _row_count(qrels_in))
    _report(pieces, options)
    scores = pl.concat([p.scores for p in pieces]).sort(run_keys(query, system))
    if options.get("per_query", True):
        return scores
    return mean_scores(scores, names, system=system, query=query)
