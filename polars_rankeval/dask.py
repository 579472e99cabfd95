"""Evaluate on a Dask cluster: the rows cut once by query bucket, one task per bucket.

Every measure of a query depends only on that query's run rows and qrels rows,
so the evaluation is split by a hash of the query id
(:mod:`polars_rankeval.pieces` holds what Dask and Spark share):

* **map**: Parquet inputs and LazyFrames are read once, by map tasks: one per
  Parquet file (a file larger than twice a 2 x threads-th share of the input
  is cut into row slices, so that one big file still keeps every worker
  busy), one for a LazyFrame. Each task checks its rows as they arrive and
  writes them, in batches, to spill files (uncompressed Parquet, one per
  flush of buffered batches, rows grouped by bucket: see
  :class:`polars_rankeval.engine.buckets.Spill`)
  in a spill folder every worker can read; in-memory DataFrames are instead
  split on the driver and scattered;
* **reduce**: one task per bucket reads that bucket's slices of the files
  (every run and qrels row of its queries) and scores them as
  :func:`polars_rankeval.evaluate` scores a DataFrame;
* the driver gathers the per-query values, checks that every input row was
  scored once, warns once about unscored queries, and sorts (or averages, for
  ``per_query=False``). The spill folder is deleted.

:func:`evaluate`, :func:`evaluate_diversity` and :func:`evaluate_catalog` share this
driver (:func:`_start`, then :func:`_score_buckets`); each gives it how its tables are
read, the reduce task's function and what every reduce task shares (the job; the side
inputs of the recommendation measures, reduced once on the driver and scattered once).

``dask[distributed]`` is imported only when :func:`evaluate` is called
(``pip install polars-rankeval[dask]``).
"""

from __future__ import annotations

import glob
import math
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import polars as pl

from polars_rankeval import diversity, pieces
from polars_rankeval._typing import Order
from polars_rankeval.call import check_needs
from polars_rankeval.diversity import DiversityMeasure
from polars_rankeval.engine import buckets
from polars_rankeval.evaluate import options_query
from polars_rankeval.measures import Measure
from polars_rankeval.recsys import catalog_piece, catalog_values, prepare_catalog, splittable
from polars_rankeval.side import check_side
from polars_rankeval.validation import check_int

if TYPE_CHECKING:
    from distributed import Client

Source: TypeAlias = (
    str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | pl.DataFrame | pl.LazyFrame
)
"""A Parquet path, glob, directory or list of them, or a Polars frame."""

PIECE_ROWS = 4_000_000
"""Default run rows per bucket, when the run's size is known before it is read."""
LAZY_BUCKETS_PER_THREAD = 4
"""Default buckets per worker thread for a LazyFrame run (its size is unknown)."""
MIN_MAP_ROWS = 1 << 20
"""A Parquet file is cut into row slices for more map tasks only above this many rows."""
FLUSH_BYTES = 64 << 20
"""A map task writes its buffered rows to bucket files when they reach this size."""


@dataclass(frozen=True)
class Chunk:
    """What one map task reads: rows of one Parquet file (or a slice of them), or a LazyFrame."""

    source: str | pl.LazyFrame
    first_row: int = 0
    """Number, in the whole input, of the chunk's first row (for error messages)."""
    offset: int = 0
    """First row of the slice within the file."""
    length: int | None = None
    """Rows of the slice (None: to the end of the file)."""
    hive: dict[str, pl.DataType] | None = None
    """Hive partition columns (``dir/system=bm25/part.parquet``) of a directory input."""

    def scan(self, columns: list[str]) -> pl.LazyFrame:
        if isinstance(self.source, pl.LazyFrame):
            return self.source.select(columns)
        frame = pl.scan_parquet(
            self.source, hive_partitioning=bool(self.hive), hive_schema=self.hive or None
        )
        if self.offset or self.length is not None:
            frame = frame.slice(self.offset, self.length)
        return frame.select(columns)

    @property
    def where(self) -> str | None:
        """The file named in error messages (a LazyFrame's row numbers need none)."""
        return None if isinstance(self.source, pl.LazyFrame) else self.source


@dataclass(frozen=True)
class Mapped:
    """What a map task wrote: where its rows of each bucket are, and what it saw on the way."""

    slices: list[list[buckets.Slice]]
    """Per bucket, the file slices holding its rows, in the order they were read."""
    rows: int
    systems: pl.Series | None
    probe: tuple[int, ...]


@dataclass
class Table:
    """One input (run or qrels), as the tasks receive it."""

    name: pieces.Table
    schema: pl.Schema
    frame: pl.DataFrame | None = None
    """An in-memory input: split on the driver."""
    chunks: list[Chunk] = field(default_factory=list)
    """A Parquet or lazy input: read by one map task per chunk."""
    rows: int | None = None
    """Row count when known before reading (frame height, Parquet metadata)."""


def _as_table(source: Source, name: pieces.Table, map_tasks: int) -> Table:
    """A frame passes through; a path, glob, directory or list becomes Parquet chunks."""
    if isinstance(source, pl.DataFrame):
        return Table(name, source.schema, frame=source, rows=source.height)
    if isinstance(source, pl.LazyFrame):
        return Table(name, source.collect_schema(), chunks=[Chunk(source)])
    entries: list[str | os.PathLike[str]] | None = None
    if isinstance(source, str | os.PathLike):
        entries = [source]
    elif isinstance(source, Sequence) and all(isinstance(p, str | os.PathLike) for p in source):
        entries = list(source)
    if not entries:
        msg = (
            f"{name} must be a Parquet path, glob, directory or non-empty list of them, "
            f"or a Polars DataFrame/LazyFrame. Got {_kind(source)} instead."
        )
        raise TypeError(msg)
    files = [f for entry in entries for f in _parquet_files(os.fspath(entry))]
    counts = [pl.scan_parquet(path).select(pl.len()).collect().item() for path, _ in files]
    first = files[0]
    schema = pl.scan_parquet(
        first[0], hive_partitioning=bool(first[1]), hive_schema=first[1]
    ).collect_schema()
    return Table(name, schema, chunks=_chunks(files, counts, map_tasks), rows=sum(counts))


def _kind(source: object) -> str:
    """The type of an input refused, named with its library, and what to pass instead.

    Examples
    --------
    >>> import pandas as pd
    >>> _kind(pd.DataFrame())
    'a pandas DataFrame (pass polars.from_pandas(frame))'
    >>> _kind(3)
    'int'
    """
    kind = type(source)
    library = kind.__module__.split(".")[0]
    if library == "dask":
        return (
            f"a Dask {kind.__name__} (write it with .to_parquet(path) and pass the path: "
            f"the tasks read Parquet files themselves)"
        )
    if library == "pandas":
        return f"a pandas {kind.__name__} (pass polars.from_pandas(frame))"
    return kind.__name__ if library == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def _parquet_files(entry: str) -> list[tuple[str, dict[str, pl.DataType] | None]]:
    """The files of a path, glob or directory, in Polars' order, each with the hive
    columns of its directory (if any)."""
    is_url = "://" in entry
    if not glob.has_magic(entry) and not entry.endswith("/") and (is_url or os.path.isfile(entry)):
        return [(entry, None)]
    try:
        import fsspec
    except ImportError as err:  # pragma: no cover - fsspec comes with dask
        msg = f"Listing {entry!r} needs fsspec. Pass a list of files instead."
        raise ImportError(msg) from err
    try:
        fs, path = fsspec.core.url_to_fs(entry)
    except ImportError as err:
        msg = f"Listing {entry!r} needs a filesystem package ({err}). Pass a list of files instead."
        raise ImportError(msg) from err
    if fs.isdir(path):
        found = [p for p in sorted(fs.find(path)) if _is_data_file(p)]
        directory_schema = pl.scan_parquet(entry).collect_schema()
    else:
        found, directory_schema = sorted(fs.glob(path)), None
    if not found:
        msg = f"No Parquet file matches {entry!r}."
        raise FileNotFoundError(msg)
    files = [fs.unstrip_protocol(p) if is_url else p for p in found]
    hive = None
    if directory_schema is not None:
        own = pl.read_parquet_schema(files[0])
        hive = {k: v for k, v in directory_schema.items() if k not in own} or None
    return [(f, hive) for f in files]


def _is_data_file(path: str) -> bool:
    """Skip what writers leave beside the data (``_SUCCESS``, ``.crc``, ``_metadata``)."""
    name = path.rsplit("/", 1)[-1]
    return not name.startswith(("_", ".")) and name.endswith(".parquet")


def _chunks(
    files: list[tuple[str, dict[str, pl.DataType] | None]], counts: list[int], tasks: int
) -> list[Chunk]:
    """One chunk per file; a file larger than twice a ``tasks``-th of the input (and than
    :data:`MIN_MAP_ROWS`) is cut into row slices, so one large file is read by several tasks.

    Examples
    --------
    >>> chunks = _chunks([("a", None), ("b", None)], [5, 3 * MIN_MAP_ROWS], tasks=4)
    >>> [(c.source, c.first_row, c.offset, c.length) for c in chunks]
    [('a', 0, 0, None), ('b', 5, 0, 1048576), ('b', 1048581, 1048576, 1048576),
     ('b', 2097157, 2097152, 1048576)]
    """
    slice_rows = max(MIN_MAP_ROWS, math.ceil(sum(counts) / tasks))
    chunks, first_row = [], 0
    for (path, hive), n in zip(files, counts, strict=True):
        if n <= 2 * slice_rows:
            chunks.append(Chunk(path, first_row, hive=hive))
        else:
            for start in range(0, n, slice_rows):
                length = min(slice_rows, n - start)
                chunks.append(Chunk(path, first_row + start, start, length, hive))
        first_row += n
    return chunks


@dataclass(frozen=True)
class Reading:
    """How the tasks read one table of an evaluation: the columns taken, the query column
    its rows are cut by, the check of each batch (``check(batch, offset=, where=)``: a
    module-level function or partial, so that it pickles) and the column whose distinct
    values a map task returns (the run's systems, when the job needs them)."""

    query: str
    columns: list[str]
    check: Callable[..., None]
    noted: str | None = None


def _reading(job: pieces.Job, table: pieces.Table) -> Reading:
    """How :func:`evaluate`'s tasks read ``table``."""
    noted = job.options.system if table == "run" and job.needs_systems else None
    check = partial(pieces.check_rows, job=job, table=table)
    return Reading(job.options.query, pieces.columns(job, table), check, noted)


def _map(chunk: Chunk, reading: Reading, n_buckets: int, folder: str) -> Mapped:
    """A map task: read a chunk once, check it, write its rows to bucket files."""
    spill = buckets.Spill(Path(folder), reading.query, n_buckets, FLUSH_BYTES)
    Path(folder).mkdir()  # not parents=True: never recreate a spill folder already deleted
    rows, noted = 0, []
    for batch in chunk.scan(reading.columns).collect_batches(chunk_size=buckets.BATCH_ROWS):
        reading.check(batch, offset=chunk.first_row + rows, where=chunk.where)
        if reading.noted is not None:
            noted.append(batch[reading.noted].unique())
        spill.add(batch)
        rows += batch.height
    spill.flush()
    seen = pl.concat(noted).unique() if noted else None
    return Mapped(spill.slices, rows, seen, pieces.hash_probe())


def _load(part: pl.DataFrame | list[buckets.Slice], schema: pl.Schema) -> pl.DataFrame:
    """A bucket's rows: a scattered frame, or its slices of the spill files (the driver
    deletes the files with the spill folder at the end)."""
    if isinstance(part, pl.DataFrame):
        return part
    return buckets.read_slices(part, schema)


@dataclass(frozen=True)
class _Call:
    key: str
    fn: Callable[..., Any]
    args: tuple[Any, ...]


def _compute(calls: list[_Call], client: Client | None) -> list[Any]:
    """Run the calls as tasks (named by their keys); their results, in order."""
    if client is None:
        import dask

        delayed = [dask.delayed(c.fn, pure=False)(*c.args, dask_key_name=c.key) for c in calls]
        return list(dask.compute(*delayed))
    futures = [client.submit(c.fn, *c.args, key=c.key, pure=False) for c in calls]
    try:
        return client.gather(futures)
    finally:
        client.cancel(futures)


@contextmanager
def _spill_folder(spill_dir: str | os.PathLike[str] | None, needed: bool) -> Iterator[str]:
    """A fresh folder for the bucket files, deleted at the end (also on error)."""
    if not needed:
        yield ""
        return
    if spill_dir is not None:
        os.makedirs(spill_dir, exist_ok=True)
    folder = tempfile.mkdtemp(prefix="polars_rankeval-dask-", dir=spill_dir)
    try:
        yield folder
    finally:
        _remove(folder)


def _remove(folder: str, attempts: int = 50) -> None:
    """Delete the spill folder. After a failed task, map tasks already running go on
    (Dask cannot stop them) and may write a file while the folder is being deleted;
    their next write then fails, as their folder is gone. So delete until it is gone."""
    for _ in range(attempts):
        shutil.rmtree(folder, ignore_errors=True)
        if not os.path.exists(folder):
            return
        time.sleep(0.1)


def _split(table: Table, reading: Reading, n_buckets: int, client: Client | None) -> list[Any]:
    """An in-memory input, checked and split on the driver (scattered to the workers)."""
    frame = pl.DataFrame() if table.frame is None else table.frame
    frame = frame.select(reading.columns)
    reading.check(frame, offset=0, where=None)
    parts = pieces.split(frame, reading.query, n_buckets)
    return client.scatter(parts, hash=False) if client is not None else parts


@contextmanager
def _cut(
    tables: Sequence[Table],
    readings: dict[str, Reading],
    n_buckets: int,
    client: Client | None,
    spill_dir: str | os.PathLike[str] | None,
) -> Iterator[tuple[dict[str, list[Mapped]], list[list[Any]], str]]:
    """The map step: every table cut into ``n_buckets`` by query, in-memory ones on the
    driver, the others by one map task per chunk. Gives what the map tasks saw, each
    table's input per bucket (to pass to the reduce tasks before the spill folder is
    deleted, on leaving) and the token naming this evaluation's tasks."""
    split = {
        t.name: _split(t, readings[t.name], n_buckets, client)
        for t in tables
        if t.frame is not None
    }
    token = uuid.uuid4().hex[:8]
    with _spill_folder(spill_dir, len(split) < len(tables)) as folder:
        maps = [
            _Call(
                f"rankeval-map-{t.name}-{i}-{token}",
                _map,
                (chunk, readings[t.name], n_buckets, os.path.join(folder, f"{t.name}-{i:05d}")),
            )
            for t in tables
            for i, chunk in enumerate(t.chunks)
        ]
        done = iter(_compute(maps, client) if maps else [])
        mapped: dict[str, list[Mapped]] = {t.name: [next(done) for _ in t.chunks] for t in tables}
        _check_maps(mapped, tables)
        inputs = [split.get(t.name) or _slices_of(mapped[t.name], n_buckets) for t in tables]
        yield mapped, inputs, token


def _rows(tables: Sequence[Table], mapped: dict[str, list[Mapped]]) -> list[int]:
    """Each table's rows: known before reading, or counted by its map tasks."""
    return [t.rows if t.rows is not None else sum(m.rows for m in mapped[t.name]) for t in tables]


def _threads(client: Client | None) -> int:
    """Worker threads of the cluster (this machine's cores for the local scheduler)."""
    return sum(client.nthreads().values()) if client is not None else os.cpu_count() or 1


def _default_buckets(run: Table, threads: int) -> int:
    if run.rows is None:
        return LAZY_BUCKETS_PER_THREAD * threads
    return max(threads, math.ceil(run.rows / PIECE_ROWS))


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


def _start(
    client: Client | None, sources: dict[pieces.Table, Source], npartitions: int | None
) -> tuple[Client | None, dict[pieces.Table, Table], int]:
    """What every evaluation on Dask starts with: the client (the given, the active or
    none), each input as a :class:`Table` (Parquet files counted, not read) and the
    number of buckets, checked."""
    _import_dask()
    client = _current_client(client)
    threads = _threads(client)
    tables = {name: _as_table(source, name, 2 * threads) for name, source in sources.items()}
    first = next(iter(tables.values()))
    n = npartitions if npartitions is not None else _default_buckets(first, threads)
    check_int("npartitions", n, minimum=1)
    return client, tables, n


def _score_buckets(
    tables: dict[pieces.Table, Table],
    readings: dict[str, Reading],
    n: int,
    *,
    client: Client | None,
    spill_dir: str | os.PathLike[str] | None,
    name: str,
    score: Callable[..., Any],
    shared: Callable[[dict[str, list[Mapped]]], tuple[Any, ...]],
) -> tuple[list[Any], list[int]]:
    """The one driver of every evaluation on Dask: cut the tables into ``n`` buckets by
    query (:func:`_cut`), then one reduce task per bucket (keys ``rankeval-{name}-...``)
    calls ``score(*frames, *shared)``: the bucket's frame of each table, in the order
    of ``tables``, and what ``shared(mapped)`` gives, computed once the map tasks are
    done and scattered once to the workers. Gives the tasks' results and each table's
    rows, to check that every row was scored once."""
    ordered = list(tables.values())
    with _cut(ordered, readings, n, client, spill_dir) as (mapped, inputs, token):
        common = list(shared(mapped))
        if client is not None and common:
            common = client.scatter(common, hash=False)
        schemas = tuple(
            pl.Schema({c: t.schema[c] for c in readings[t.name].columns}) for t in ordered
        )
        reduces = [
            _Call(
                f"rankeval-{name}-{b}-{token}",
                _bucket,
                (score, schemas, *(table[b] for table in inputs), *common),
            )
            for b in range(n)
        ]
        results = _compute(reduces, client)
    return results, _rows(ordered, mapped)


def _bucket(score: Callable[..., Any], schemas: tuple[pl.Schema, ...], *args: Any) -> Any:
    """A reduce task: the bucket's rows of each table (``args`` first, one per schema)
    loaded, then scored with the shared arguments that follow them."""
    frames = [_load(part, schema) for part, schema in zip(args, schemas, strict=False)]
    return score(*frames, *args[len(schemas) :])


def _paths_or(source: Any, *, ids: bool = False) -> Any:
    """A side input given as a Parquet path, glob or directory (or a list of them, but
    for ``ids``, where a list holds item ids), scanned on the driver; anything else as
    given."""
    if isinstance(source, str | os.PathLike):
        entries = [source]
    elif (
        not ids
        and isinstance(source, Sequence)
        and len(source) > 0
        and all(isinstance(p, str | os.PathLike) for p in source)
    ):
        entries = list(source)
    else:
        return source
    files = [f for entry in entries for f, _ in _parquet_files(os.fspath(entry))]
    return pl.scan_parquet(files)


def evaluate(
    run: Source,
    qrels: Source,
    measures: str | Measure | Iterable[str | Measure],
    *,
    client: Client | None = None,
    npartitions: int | None = None,
    spill_dir: str | os.PathLike[str] | None = None,
    train: Any = None,
    catalog: Any = None,
    item_features: Any = None,
    **evaluate_options: Any,
) -> pl.DataFrame:
    """Score a run against qrels on Dask: :func:`polars_rankeval.evaluate`, query-partitioned.

    Map tasks read each input once and write its rows to bucket files by a
    seeded hash of the query id (every query's run and qrels rows in exactly
    one bucket); one reduce task per bucket scores it as
    :func:`polars_rankeval.evaluate` scores a DataFrame. The values equal the
    in-process ones for every query.

    Parameters
    ----------
    run
        ``query, doc, score`` (optionally ``system``, ``rank``): a Parquet path,
        glob, directory (hive partitions such as ``system=bm25/`` become columns)
        or list of them, read by the workers, one map task per file; a Polars
        LazyFrame, shipped to one map task as a plan; or a Polars DataFrame,
        split on the driver and scattered.
    qrels
        ``query, doc, relevance``, in any of the same forms.
    measures
        Measure names or objects, as for :func:`polars_rankeval.evaluate`.
    client
        A ``distributed.Client``. Default: the active client if there is one,
        else dask's local scheduler.
    npartitions
        Number of buckets (reduce tasks). A reduce task holds its bucket's rows,
        and the engine takes about 4x that while it scores them: more buckets,
        less memory per task. Default: enough for about 4 million run rows each
        (counted from the Parquet metadata or the frame) and at least one per
        worker thread; for a LazyFrame run, whose size is unknown before it is
        read, 4 per worker thread.
    spill_dir
        Where the map tasks write the bucket files (in a fresh folder, deleted at
        the end). It must be a path that every worker can read and write, and
        the driver delete: the default, the system's temporary folder, works for
        a ``LocalCluster`` on one machine; on a cluster of several machines,
        pass a shared mount. Not used when both inputs are DataFrames.
    train, catalog, item_features
        The side inputs of the measures of lists (``Novelty``, ``ARP``, ``ILD``,
        ``Serendipity``, ...), as for :func:`polars_rankeval.evaluate`, or a Parquet
        path, glob or directory (``train`` and ``item_features``: or a list of them;
        a list given as ``catalog`` holds item ids). Those a measure reads are reduced
        once on the driver (:func:`~polars_rankeval.pieces.reduce_side_inputs`: the
        per-item table, the numbers, the features) and scattered once; each reduce
        task scores its users' lists with them, as :func:`polars_rankeval.evaluate`
        does, beside the accuracy measures.
    **evaluate_options
        Keyword options of :func:`polars_rankeval.evaluate`: ``query``, ``doc``,
        ``score``, ``relevance``, ``system``, ``rank``, ``rel_level``, ``order``,
        ``depth``, ``missing``, ``duplicates``, ``per_query``, ``validate``,
        ``conventions``.

    Returns
    -------
    pl.DataFrame
        As :func:`polars_rankeval.evaluate`: ``[system], query`` and one Float64
        column per measure, sorted by system and query; with ``per_query=False``
        the trec_eval ``all`` line per system, as :func:`polars_rankeval.mean_scores`.

    Notes
    -----
    Run queries with no qrels row are not scored; one
    :class:`~polars_rankeval.UnscoredQueriesWarning` says how many, for every
    input type. ``missing="error"`` raises one ``ValueError`` naming every
    qrels query absent from the run. Null ids, NaN scores and duplicate rows
    raise with :func:`polars_rankeval.evaluate`'s messages (for a Parquet input,
    the row number counts across the files, and the file is named).
    ``order="presorted"`` relies on the row order within each query, which the
    buckets keep (for Parquet, the order of the files and of the rows in them).
    The driver checks that the buckets hold every input row once and that every
    worker hashes query ids as it does.

    Examples
    --------
    >>> import polars_rankeval.dask as prd
    >>> from distributed import Client, LocalCluster  # doctest: +SKIP
    >>> client = Client(LocalCluster(n_workers=2, threads_per_worker=1))  # doctest: +SKIP
    >>> prd.evaluate("runs/*.parquet", "qrels.parquet", ["AP", "nDCG@10"],
    ...              client=client)  # doctest: +SKIP
    """
    client, tables, n = _start(client, {"run": run, "qrels": qrels}, npartitions)
    run_in, qrels_in = tables["run"], tables["qrels"]
    query, doc = evaluate_options.get("query", "query"), evaluate_options.get("doc", "doc")
    given = check_side(train=_paths_or(train), catalog=_paths_or(catalog, ids=True),
                       item_features=_paths_or(item_features),
                       query=options_query(query), doc=options_query(doc))  # fmt: skip
    job = pieces.prepare(run_in.schema, qrels_in.schema, measures, evaluate_options,
                         given=frozenset(given))  # fmt: skip
    lists = [m for m in job.parsed if m.of_lists]
    side = None
    if lists:
        side = pieces.reduce_side_inputs(lists, given, query=job.options.query, doc=job.options.doc)
    readings = {t: _reading(job, t) for t in ("run", "qrels")}

    def shared(mapped: dict[str, list[Mapped]]) -> tuple[Any, ...]:
        return job.with_systems(_systems(run_in, mapped["run"], job)), side

    scored, rows = _score_buckets(tables, readings, n, client=client, spill_dir=spill_dir,
                                  name="reduce", score=pieces.score, shared=shared)  # fmt: skip
    return pieces.combine(scored, job, run_rows=rows[0], qrels_rows=rows[1])


def evaluate_diversity(
    run: Source,
    qrels: Source,
    measures: str | DiversityMeasure | Iterable[str | DiversityMeasure],
    *,
    client: Client | None = None,
    npartitions: int | None = None,
    spill_dir: str | os.PathLike[str] | None = None,
    **options: Any,
) -> pl.DataFrame:
    """Diversity measures on Dask: :func:`polars_rankeval.evaluate_diversity`,
    query-partitioned as :func:`evaluate` is.

    The run and the subtopic qrels are cut by the same seeded hash of the query id
    (map tasks for Parquet and lazy inputs, the driver for DataFrames); one reduce
    task per bucket ranks and scores its rankings
    (:func:`polars_rankeval.diversity.score`); the driver puts them together
    (:func:`polars_rankeval.diversity.combine`: one warning for the run queries
    without qrels, ``missing`` over the whole run, sorted). The values equal the
    in-process ones for every ranking.

    Parameters
    ----------
    run
        ``query, doc, score`` (optionally ``system`` and segment columns), in any
        form :func:`evaluate` takes.
    qrels
        ``query, subtopic, doc, relevance``, in any of the same forms.
    measures
        Diversity measure names, as for :func:`polars_rankeval.evaluate_diversity`.
    client, npartitions, spill_dir
        As for :func:`evaluate`.
    **options
        Keyword options of :func:`polars_rankeval.evaluate_diversity`: ``query``,
        ``doc``, ``score``, ``subtopic``, ``relevance``, ``system``, ``by``, ``depth``,
        ``missing``, ``validate``.

    Returns
    -------
    pl.DataFrame
        ``[by], [system], query`` and one Float64 column per measure, sorted by those.

    Examples
    --------
    >>> import polars_rankeval.dask as prd
    >>> prd.evaluate_diversity("runs/*.parquet", "subtopic-qrels.parquet",
    ...                        ["alpha_nDCG@20", "ERR_IA@20"], client=client)  # doctest: +SKIP
    """
    client, tables, n = _start(client, {"run": run, "qrels": qrels}, npartitions)
    run_in, qrels_in = tables["run"], tables["qrels"]
    job = diversity.prepare(run_in.schema, qrels_in.schema, measures, options)
    readings = {
        "run": Reading(job.query, job.run_columns, partial(diversity.check_run, job=job)),
        "qrels": Reading(job.query, job.qrels_columns, partial(diversity.check_qrels, job=job)),
    }
    scored, _ = _score_buckets(tables, readings, n, client=client, spill_dir=spill_dir,
                               name="diversity", score=diversity.score,
                               shared=lambda mapped: (job,))  # fmt: skip
    return diversity.combine(scored, job, run_in.schema)


def evaluate_catalog(
    recs: Source,
    measures: str | Measure | Iterable[str | Measure],
    *,
    train: Any = None,
    catalog: Any = None,
    item_features: Any = None,
    by: str | Sequence[str] | None = None,
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    rank: str = "rank",
    system: str | None = "system",
    order: Order = "score",
    conventions: str | None = None,
    client: Client | None = None,
    npartitions: int | None = None,
    spill_dir: str | os.PathLike[str] | None = None,
) -> pl.DataFrame:
    r"""The measures of a system's recommendations as a whole on Dask:
    :func:`polars_rankeval.evaluate_catalog`, user-partitioned as :func:`evaluate` is.

    The recommendations are cut by the seeded hash of the user id (map tasks for
    Parquet and lazy inputs, the driver for a DataFrame); one reduce task per bucket
    takes, over its users' lists, each measure's sums
    (:class:`~polars_rankeval.metrics.exposure.Split`): the exposure of each item
    :math:`c_i` (coverage, entropy, Gini), per-item sums of the users' weights
    :math:`\sum_{u \ni i} |L_u|^{-1/2}` and of their squares and the number of lists
    (personalization), the training users shown an item (user coverage). The driver
    adds the buckets' sums (each user's list is in one bucket) and computes the
    values from them with the code :func:`polars_rankeval.evaluate_catalog` runs on
    the sums of all lists at once: the same values, up to the order of floating-point
    additions (personalization's sums).

    Parameters
    ----------
    recs
        ``[system], query, doc, score`` (or ``rank``), in any form :func:`evaluate`
        takes for a run.
    measures
        Catalogue measures, as for :func:`polars_rankeval.evaluate_catalog`. Each
        built-in one is a sum over lists; one that is not is refused by name.
    train, catalog, item_features
        As for :func:`polars_rankeval.evaluate_catalog`, or a Parquet path, glob or
        directory (``train`` and ``item_features``: or a list of them; a list given as
        ``catalog`` holds item ids), read and reduced once on the driver: ``train`` to
        its distinct users and their number (``UserCoverage``), ``catalog`` to its
        number of items (``Gini``, the shares of coverage).
    by, query, doc, score, rank, system, order, conventions
        As for :func:`polars_rankeval.evaluate_catalog`.
    client, npartitions, spill_dir
        As for :func:`evaluate`.

    Returns
    -------
    pl.DataFrame
        ``[*by], [system]`` and one Float64 column per measure, sorted by the keys.

    Examples
    --------
    >>> import polars_rankeval.dask as prd
    >>> prd.evaluate_catalog("recs/*.parquet", ["CatalogCoverage@10", "Gini@10"],
    ...                      catalog="items.parquet", query="user", doc="item",
    ...                      client=client)  # doctest: +SKIP
    """
    client, tables, n = _start(client, {"run": recs}, npartitions)
    job = prepare_catalog(tables["run"].schema, measures, by=by, query=query, doc=doc,
                          score=score, rank=rank, system=system, order=order,
                          conventions=conventions)  # fmt: skip
    parsed = job.parsed
    given = check_side(train=_paths_or(train), catalog=_paths_or(catalog, ids=True),
                       item_features=_paths_or(item_features), query=query, doc=doc)  # fmt: skip
    check_needs(parsed, frozenset(given))
    splittable(parsed)
    side = pieces.reduce_side_inputs(parsed, given, query=query, doc=doc)
    readings = {"run": Reading(query, job.columns, _unchecked)}
    scored, rows = _score_buckets(tables, readings, n, client=client, spill_dir=spill_dir,
                                  name="catalog", score=catalog_piece,
                                  shared=lambda mapped: (job, side))  # fmt: skip
    counted = [pieces.Scored(None, pl.DataFrame(), pl.DataFrame(), p.rows, 0) for p in scored]
    pieces.check_counts(counted, rows[0], 0)
    return catalog_values(scored, job, side)


def _unchecked(batch: pl.DataFrame, *, offset: int, where: str | None) -> None:
    """The recommendations of :func:`evaluate_catalog` are read as given, as in process."""


def _slices_of(mapped: list[Mapped], n: int) -> list[list[buckets.Slice]]:
    """Per bucket, the slices the map tasks wrote for it, in reading order."""
    return [[s for m in mapped for s in m.slices[b]] for b in range(n)]


def _systems(run: Table, mapped: list[Mapped], job: pieces.Job) -> list[pl.Series]:
    """Every system of the run, from the driver's frame or from what the map tasks saw."""
    if not job.needs_systems:
        return []
    if run.frame is not None:
        return [run.frame.get_column(str(job.options.system)).unique()]
    return [m.systems for m in mapped if m.systems is not None]


def _check_maps(mapped: dict[str, list[Mapped]], tables: Sequence[Table]) -> None:
    """Every worker hashed as the driver does, and the map tasks read every row once."""
    probe = pieces.hash_probe()
    if any(m.probe != probe for done in mapped.values() for m in done):
        msg = (
            "A Dask worker hashes query ids differently from the client, so a query's "
            "rows would be split between buckets: run the same Polars version on the "
            "workers as on the client."
        )
        raise RuntimeError(msg)
    for t in tables:
        read = sum(m.rows for m in mapped[t.name])
        if t.chunks and t.rows is not None and read != t.rows:
            msg = (
                f"The map tasks read {read} {t.name} rows, but the Parquet metadata counts "
                f"{t.rows}: did a file change while it was read?"
            )
            raise RuntimeError(msg)
