"""Lazy runs in bounded memory: read once, scored in memory or bucket by bucket.

A LazyFrame run and its qrels (lazy or not) are each read once, in batches, on
Polars' streaming engine; each batch is checked as it arrives (null ids, NaN
scores: the error names the row of the whole input). While the rows of both
tables fit in an eighth of the memory limit (:data:`PIECE_SHARE`), the budget,
they are kept: the qrels are read first, and the run has what they leave. Qrels
given as a DataFrame are in memory already: held where they are, whatever their
size, and not charged to the budget.

Past that, a run whose rankings each come in one stretch (a TREC run sorted by
query, logs written ranking by ranking: :class:`_Contiguity` checks it batch by
batch) is scored as it is read, when its qrels are held: the first time the run's
rows held pass what the budget leaves them, and then each time they pass a
quarter of the budget, those of the rankings complete so far are scored, in
pieces of whole rankings of about a quarter of the budget each, with their
queries' qrels rows (slices of the qrels: :func:`_rows_of`); the last ranking's
rows wait for the next batch (the rows left at the end are one more such piece).
Pieces are kept small here because Polars' reader works ahead while a piece is
scored (up to about 0.25 GiB of decoded batches waiting): a run whose plan scans
is scored one piece after the other on the reading thread. A run read from frames
in memory has no reader working ahead, and that room takes a second piece: its
pieces are scored two at once on worker threads while the run is read on
(:class:`_InFlight`). Should
a ranking come back after its rows were scored, the run is read a second time
and taken bucket by bucket, as below. ``missing="zero"`` needs every system
before any ranking is scored, and takes the buckets too.

Otherwise, every row of a table past the eighth (a qrels DataFrame too, once the
run is taken by bucket) is written to one of
:data:`BUCKETS` files on disk chosen by a hash of its query id. When either
table was spilled, both are taken bucket by bucket (the one held in memory is
split the same way), and the buckets are scored one at a time: a bucket holds
all the run and qrels rows of its queries, so its values are those of the
whole run. A bucket still too large is split again the same way (with another
hash seed) before it is scored. The inputs are read once; the spilled rows are
written and read back once (again only for a bucket split twice). A spill file is
written on a second thread while the next batches are read and split by bucket,
and a piece's slices of every file are read together.

The engine's peak memory is a small multiple of its piece's size (the packed
sort keys, hashes and positions: about 30 bytes a row over the frame itself),
which is what the eighth leaves room for. The engine's second threads (the
qrels' part and the run's hashes worked on beside the sort) raise that
multiple, so a piece takes them only when small: buckets are put together in
pieces of up to half the budget, each scored with the threads, and a single
bucket past half the budget is scored one step after the other; the input held
whole, and a piece scored as the run is read, take the threads within half the
budget.
"""

from __future__ import annotations

import re
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from polars_rankeval.engine.outcome import (
    absent_queries,
    raise_absent_queries,
    warn_unscored_queries,
)
from polars_rankeval.engine.pipeline import Piece, check_qrels_rows, check_run_rows, score_piece
from polars_rankeval.measures import Measure
from polars_rankeval.options import Options
from polars_rankeval.validation import check_duplicates, fresh_name, key_hash

DEFAULT_LIMIT = 1 << 30
"""The default ``memory_limit`` of a lazy evaluation: 1 GiB."""
BUCKETS = 64
"""Buckets a spilled run is split into (and each oversized bucket again)."""
PIECE_SHARE = 8
"""The budget: the rows held in memory (run and qrels together) may take 1/PIECE_SHARE
of the memory limit, and a piece at most that; the engine needs the rest."""
BATCH_ROWS = 1 << 19
"""Rows per batch read from the lazy run."""
SPLITS = 2
"""How many times a bucket over the budget may be split again."""
PIECES_AT_ONCE = 2
"""Pieces of a run read from frames in memory scored at once as it is read (a run read
from files: one, on the reading thread)."""
BUCKET_SEED = 0x5EED_B0C4E7
_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 1 << 10,
    "mib": 1 << 20,
    "gib": 1 << 30,
    "tib": 1 << 40,
}


def memory_bytes(limit: int | str | None) -> int:
    """A memory limit in bytes, from an int or a string such as ``"512MiB"`` or ``"2GB"``.

    Examples
    --------
    >>> memory_bytes("512MiB"), memory_bytes(10**9), memory_bytes(None) == DEFAULT_LIMIT
    (536870912, 1000000000, True)
    """
    if limit is None:
        return DEFAULT_LIMIT
    if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
        return limit
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B|B)?\s*", str(limit), re.IGNORECASE)
    if isinstance(limit, str) and match:
        return int(float(match[1]) * _UNITS[(match[2] or "").lower()])
    msg = (
        f"memory_limit must be a positive number of bytes or a size such as '512MiB' or "
        f"'2GB'. Got {limit!r} instead."
    )
    raise ValueError(msg)


def query_bucket(query: str, n_buckets: int, seed: int = BUCKET_SEED) -> pl.Expr:
    """Bucket 0 .. n_buckets - 1 of each row's query id, hashed as a string.

    ``401`` and ``"401"`` share a bucket, as they share a ranking once run and
    qrels ids are aligned. The seed is fixed, so every process running the
    same Polars version agrees.

    Examples
    --------
    >>> df = pl.DataFrame({"query": ["q1", "q2", "q1"]})
    >>> b = df.select(query_bucket("query", 4))["query"]
    >>> b[0] == b[2], bool(b.is_between(0, 3).all())
    (True, True)
    """
    return pl.col(query).cast(pl.String).hash(seed=seed) % n_buckets


def split_by_bucket(
    frame: pl.DataFrame, query: str, n_buckets: int, seed: int = BUCKET_SEED
) -> dict[int, pl.DataFrame]:
    """The rows of ``frame`` by :func:`query_bucket` (empty buckets left out), in row order."""
    name = fresh_name("__rk_bucket", frame.columns)
    keyed = frame.with_columns(query_bucket(query, n_buckets, seed).alias(name))
    parts = keyed.partition_by(name, as_dict=True, include_key=False, maintain_order=True)
    return {int(b): part for (b,), part in parts.items()}


def nbytes(frame: pl.DataFrame) -> int:
    """Bytes of ``frame`` in memory (Polars' estimate)."""
    return int(frame.estimated_size())


@dataclass(frozen=True)
class Slice:
    """Rows ``offset .. offset + length`` of a spill file: one bucket's rows of one flush."""

    path: str
    offset: int
    length: int
    nbytes: int
    """Their size in memory (Polars' estimate)."""

    def scan(self) -> pl.LazyFrame:
        """The rows, lazily (only the file's row groups that hold them are read)."""
        return pl.scan_parquet(self.path).slice(self.offset, self.length)

    def read(self) -> pl.DataFrame:
        """The rows."""
        return self.scan().collect()


def read_slices(slices: Sequence[Slice], schema: pl.Schema | None) -> pl.DataFrame:
    """A bucket's rows from its slices, in the order they were spilled: read together
    (``collect_all``: each file read on its own costs about 1 ms before its first row)."""
    frames = pl.collect_all([s.scan() for s in slices])
    return pl.concat(frames, rechunk=False) if frames else pl.DataFrame(schema=schema)


@dataclass
class Spill:
    """Rows written to disk by a hash of their query id, into buckets.

    Each flush writes one file (uncompressed Parquet) holding the buffered
    rows bucket after bucket, in the order they were added; a bucket is the
    list of its :class:`Slice` of every file. Few, large files: creating and
    deleting a file costs more than writing megabytes. The files are deleted
    with the folder, by its owner.

    Parquet, not Arrow IPC: a slice of an IPC file is read by going through the
    file up to it, and every piece reads a slice of every file, so the read-back
    grew with the square of the rows (100M shuffled rows: 8.8 s, against 3.8 s);
    the peak was higher (0.83-0.87 GiB, against 0.56-0.57: likely the IPC files'
    mapped pages, which count as resident; not confirmed); and Parquet's files are
    40% smaller. Its row groups say how many rows they hold, so a slice reads only
    its own.

    With ``write_behind``, a flush that :meth:`add` starts is split by bucket
    on the caller's thread, then written on a second thread while the next rows
    are read and buffered (one write at a time: at most two buffers are held;
    splitting on the writer's thread too left the reading waiting for it);
    :meth:`flush` writes the rest and waits, after which ``slices`` is complete.
    """

    folder: Path
    query: str
    n_buckets: int
    flush_bytes: int
    """Buffered bytes that make the buffered rows be written out."""
    seed: int = BUCKET_SEED
    write_behind: bool = False
    slices: list[list[Slice]] = field(default_factory=list)
    schema: pl.Schema | None = None
    """The spilled rows' schema (for an empty bucket's empty frame)."""
    _buffer: list[pl.DataFrame] = field(default_factory=list)
    _buffered: int = 0
    _files: int = 0
    _writing: Future[None] | None = None
    _writer: ThreadPoolExecutor | None = None
    """The one thread that writes behind (one for every flush, not a thread each: each
    new thread takes its own allocator arena, and the 20M-row scan peaked higher)."""

    def __post_init__(self) -> None:
        self.slices = [[] for _ in range(self.n_buckets)]

    def add(self, frame: pl.DataFrame) -> None:
        """Buffer ``frame``'s rows (written out, behind, when enough are buffered)."""
        self.schema = frame.schema
        self._buffer.append(frame)
        self._buffered += nbytes(frame)
        if self._buffered >= self.flush_bytes and not self.write_behind:
            self.flush()
        elif self._buffered >= self.flush_bytes:
            parts = self._split(self._take())
            self.settle()
            if self._writer is None:
                self._writer = ThreadPoolExecutor(max_workers=1)
            self._writing = self._writer.submit(self._write, parts)

    def flush(self) -> None:
        """Write every buffered row (bucket after bucket, to one file) and wait for the
        write under way."""
        self.settle()
        self._end_writer()
        if self._buffer:
            self._write(self._split(self._take()))

    def settle(self) -> None:
        """Wait for the write under way, and raise its error if it failed."""
        if self._writing is not None:
            writing, self._writing = self._writing, None
            writing.result()

    def stop(self) -> None:
        """Wait for the write under way, whatever its outcome (before the folder goes,
        when the reading stopped on an error)."""
        if self._writing is not None:
            wait([self._writing])
            self._writing = None
        self._end_writer()

    def _end_writer(self) -> None:
        """Let the writing thread end (no write is under way)."""
        if self._writer is not None:
            self._writer.shutdown(wait=True)
            self._writer = None

    def _take(self) -> pl.DataFrame:
        """The buffered rows, taken out of the buffer."""
        frame = pl.concat(self._buffer, rechunk=False)
        self._buffer.clear()
        self._buffered = 0
        return frame

    def _split(self, frame: pl.DataFrame) -> dict[int, pl.DataFrame]:
        """``frame``'s rows by bucket."""
        return split_by_bucket(frame, self.query, self.n_buckets, self.seed)

    def _write(self, parts: dict[int, pl.DataFrame]) -> None:
        """Write the buckets' rows to a new file, bucket after bucket, and record the
        slices."""
        path = self.folder / f"s{self.seed:x}-{self._files:05d}.parquet"
        self._files += 1
        order = sorted(parts)
        pl.concat([parts[b] for b in order], rechunk=False).write_parquet(
            path, compression="uncompressed", statistics=False
        )
        offset = 0
        for b in order:
            part = parts[b]
            self.slices[b].append(Slice(str(path), offset, part.height, nbytes(part)))
            offset += part.height

    def size(self, b: int) -> int:
        """Bytes of bucket ``b`` in memory (Polars' estimate)."""
        return sum(s.nbytes for s in self.slices[b])

    def has(self, b: int) -> bool:
        """Whether bucket ``b`` has rows."""
        return bool(self.slices[b])

    def drop(self, b: int) -> None:
        """Forget bucket ``b`` without reading it (its file goes with the folder)."""
        self.slices[b] = []

    def read(self, b: int) -> pl.DataFrame:
        """Bucket ``b``'s rows, in the order they were added (given once)."""
        return self.read_many([b])

    def read_many(self, group: Sequence[int]) -> pl.DataFrame:
        """The rows of the buckets in ``group`` (given once): each bucket's in the order
        they were added. Neighbouring buckets lie next to each other in every file, so a
        run of them is read as one slice per file."""
        slices = sorted(
            (s for b in group for s in self.slices[b]), key=lambda s: (s.path, s.offset)
        )
        for b in group:
            self.slices[b] = []
        merged: list[Slice] = []
        for s in slices:
            last = merged[-1] if merged else None
            if last is not None and last.path == s.path and last.offset + last.length == s.offset:
                merged[-1] = Slice(
                    s.path, last.offset, last.length + s.length, last.nbytes + s.nbytes
                )
            else:
                merged.append(s)
        return read_slices(merged, self.schema)

    def parts(self, b: int) -> Iterator[pl.DataFrame]:
        """Bucket ``b``'s rows slice by slice (given once)."""
        slices, self.slices[b] = self.slices[b], []
        for s in slices:
            yield s.read()


class Held:
    """Rows held in memory, handed out bucket by bucket as :class:`Spill` hands out its files."""

    def __init__(
        self, frames: list[pl.DataFrame], schema: pl.Schema, query: str, n_buckets: int, seed: int
    ) -> None:
        """Split ``frames`` by bucket, taking each out of the list once it is split: the
        rows are held about once, not twice."""
        self.schema = schema
        self.n_buckets, self.seed = n_buckets, seed
        parts: dict[int, list[pl.DataFrame]] = {}
        while frames:
            for b, part in split_by_bucket(frames.pop(0), query, n_buckets, seed).items():
                parts.setdefault(b, []).append(part)
        self._parts = {b: pl.concat(p, rechunk=False) for b, p in parts.items()}

    def size(self, b: int) -> int:
        """Bytes of bucket ``b`` (0 when it has no row)."""
        part = self._parts.get(b)
        return 0 if part is None else nbytes(part)

    def has(self, b: int) -> bool:
        return b in self._parts

    def drop(self, b: int) -> None:
        """Forget bucket ``b``'s rows."""
        self._parts.pop(b, None)

    def read(self, b: int) -> pl.DataFrame:
        """Bucket ``b``'s rows, given once (then dropped from memory)."""
        return self._parts.pop(b, pl.DataFrame(schema=self.schema))

    def read_many(self, group: Sequence[int]) -> pl.DataFrame:
        """The rows of the buckets in ``group``, given once."""
        return pl.concat([self.read(b) for b in group], rechunk=False)

    def parts(self, b: int) -> Iterator[pl.DataFrame]:
        yield self.read(b)


Bucketed = Spill | Held
"""A table's rows by bucket: on disk or in memory."""


@dataclass(frozen=True)
class _Part:
    """Whole rankings of a run read as it comes, and their estimated size in memory."""

    rows: pl.DataFrame
    nbytes: int


def _last_ranking_rows(frame: pl.DataFrame, keys: Sequence[str], window: int = 1 << 16) -> int:
    """How many of ``frame``'s rows are of its last row's ranking, whose rows come in
    one stretch: counted in the last ``window`` rows, or in all of them when every
    row of the window is of that ranking.

    Examples
    --------
    >>> _last_ranking_rows(pl.DataFrame({"q": ["a", "b", "b"]}), ["q"])
    2
    """
    last = frame.tail(1).select(keys)
    same = pl.all_horizontal(pl.col(k).eq_missing(last[k][0]) for k in keys).sum()
    n = int(frame.tail(window).select(same).item())
    return n if n < min(window, frame.height) else int(frame.select(same).item())


class _Input:
    """One table read once, in batches: held in memory while it fits the budget,
    else spilled to bucket files by query (rows already held are spilled too)."""

    def __init__(self, name: str, query: str, budget: int, folder: Path) -> None:
        self.name, self.query, self.budget, self.folder = name, query, budget, folder
        self.flush_bytes = max(1, budget // 8)
        """Bytes of spilled rows buffered per file written."""
        self.held: list[pl.DataFrame] = []
        self.held_bytes = 0
        self.spill: Spill | None = None
        self.rows = 0

    def add(self, batch: pl.DataFrame, *, hold: bool = False) -> None:
        """Keep ``batch``; past the budget, spill (unless ``hold``: the caller takes
        the rows held with :meth:`take_complete`)."""
        self.rows += batch.height
        if self.spill is not None:
            self.spill.add(batch)
            return
        self.held.append(batch)
        self.held_bytes += nbytes(batch)
        if self.held_bytes > self.budget and not hold:
            self.spill_all()

    def take_complete(self, keys: Sequence[str], piece_bytes: int) -> list[_Part]:
        """The rows held but those of the last ranking (which may go on in the next
        batch), given once, in pieces of whole rankings of about ``piece_bytes`` each
        (more when one ranking is larger); none when every row held is of that ranking.

        The rankings are contiguous (:class:`_Contiguity`), so a ranking cut by a
        piece's end goes on at the start of the next one, and the last one's rows are
        the last rows held. A piece's size is estimated from its share of the rows
        (Polars' estimate of a slice of string columns goes through every row).
        """
        frame = pl.concat(self.held, rechunk=False)
        n = max(1, -(-self.held_bytes // max(1, piece_bytes)))
        pieces: list[_Part] = []
        start = 0
        for cut in sorted({frame.height * k // n for k in range(1, n + 1)} - {0}):
            end = cut - _last_ranking_rows(frame.slice(start, cut - start), keys)
            if end > start:
                size = self.held_bytes * (end - start) // frame.height
                pieces.append(_Part(frame.slice(start, end - start), size))
                start = end
        tail = frame.slice(start).rechunk()
        self.held, self.held_bytes = [tail], nbytes(tail)
        return pieces

    def stop(self) -> None:
        """Wait for the spill's write under way, whatever its outcome (:meth:`Spill.stop`)."""
        if self.spill is not None:
            self.spill.stop()

    def spill_all(self) -> None:
        """Route every row to bucket files from now on, the held ones first."""
        if self.spill is None:
            folder = self.folder / self.name
            folder.mkdir()
            self.spill = Spill(folder, self.query, BUCKETS, self.flush_bytes, write_behind=True)
        while self.held:  # one batch at a time, so that rows are never held twice
            held = self.held.pop(0)
            for start in range(0, held.height, BATCH_ROWS):
                self.spill.add(held.slice(start, BATCH_ROWS))
        self.held_bytes = 0

    def frame(self, schema: pl.Schema) -> pl.DataFrame:
        """The rows held (all of them: the table was not spilled), the batches put
        together as they are: not copied into one chunk (the engine copies the ranking
        keys into one, :func:`~polars_rankeval.engine.pipeline.keys_in_one_chunk`;
        copying every column cost more than it saved). Kept so: a second call does
        nothing."""
        if not self.held:
            return pl.DataFrame(schema=schema)
        if len(self.held) > 1:
            self.held = [pl.concat(self.held, rechunk=False)]
        return self.held[0]

    def buckets(self, schema: pl.Schema) -> Bucketed:
        """The rows by bucket: the spill's files, or the held rows split in memory, batch
        by batch (split as they are: the split copies them anyway)."""
        if self.spill is not None:
            self.spill.flush()
            return self.spill
        return Held(self.held, schema, self.query, BUCKETS, BUCKET_SEED)


class _RankingCameBackError(Exception):
    """A ranking came back after its rows were scored: the run must be read again."""


def stretch_heads(frame: pl.DataFrame, keys: Sequence[str]) -> pl.DataFrame:
    """The ``keys`` of the first row of each stretch of rows of equal keys, in order
    (nulls equal). One key: Polars' run-length encoding, 2.5x faster than comparing
    each row with the one before (20 ms at 10M rows); several keys: that comparison
    (encoding a struct of the keys was no faster).

    Examples
    --------
    >>> stretch_heads(pl.DataFrame({"q": ["a", "a", "b", "a"]}), ["q"])["q"].to_list()
    ['a', 'b', 'a']
    """
    if len(keys) == 1:
        return frame.select(pl.col(keys[0]).rle().struct.field("value").alias(keys[0]))
    return frame.select(keys).filter(
        pl.any_horizontal(pl.col(k).ne_missing(pl.col(k).shift(1)) for k in keys)
        | (pl.int_range(pl.len()) == 0)
    )


class _Contiguity:
    """Whether each ranking's rows have come in one stretch so far, batch after batch.

    Within a batch, the first rows of the stretches of equal keys must be distinct;
    across batches, a stretch may only go on from the last batch's last one, and no
    ranking may come back once another followed it. Rankings already closed are kept
    as 64-bit hashes of their keys (a collision only makes the run look
    non-contiguous); past ``limit`` bytes of them, the run is taken as non-contiguous.
    """

    def __init__(self, keys: Sequence[str], limit: int) -> None:
        self.keys, self.limit = list(keys), limit
        self.closed: list[pl.Series] = []
        self.n_closed = 0
        self.open: pl.DataFrame | None = None
        """The keys of the last ranking seen (it may go on in the next batch)."""

    def add(self, batch: pl.DataFrame) -> bool:
        """Take ``batch``; whether every ranking is still in one stretch."""
        if batch.height == 0:
            return True
        heads = stretch_heads(batch, self.keys)
        if heads.is_duplicated().any():
            return False
        goes_on = self.open is not None and heads.head(1).equals(self.open)
        new = heads.slice(1) if goes_on else heads
        hashes = new.select(key_hash(self.keys)).to_series()
        if self.closed and hashes.is_in(pl.concat(self.closed).implode()).any():
            return False
        if self.open is not None and not goes_on:
            if new.join(self.open, on=self.keys, how="semi", nulls_equal=True).height:
                return False
            self._close(self.open.select(key_hash(self.keys)).to_series())
        self._close(heads.head(heads.height - 1).select(key_hash(self.keys)).to_series())
        self.open = heads.tail(1)
        return self.n_closed * 8 <= self.limit

    def _close(self, hashes: pl.Series) -> None:
        self.closed.append(hashes)
        self.n_closed += hashes.len()
        if len(self.closed) > 64:
            self.closed = [pl.concat(self.closed)]


class _AsItComes:
    """A table's rows held as they are read, given back as pieces of whole rankings
    while its rankings come in one stretch each (:class:`_Contiguity`).

    Nothing is given while the rows held fit what the budget leaves them; from the
    first time they pass it, and then each time they pass a quarter of the budget,
    the rankings complete so far are given in pieces of about a quarter of the budget
    each (:meth:`_Input.take_complete`). Found not contiguous before any piece was
    given, the rows are held or spilled as they come (:meth:`_Input.add`); after,
    :class:`_RankingCameBackError` is raised: the table must be read again.
    """

    def __init__(self, rows_in: _Input, keys: Sequence[str], budget: int, *, on: bool) -> None:
        """``on``: whether pieces may be given at all (else the rows are only added)."""
        self.rows_in, self.keys, self.budget = rows_in, list(keys), budget
        self.order = _Contiguity(keys, budget // 4) if on else None
        self.checking = False
        """From the first time the rows held pass the budget."""
        self.given = False

    def add(self, batch: pl.DataFrame) -> list[_Part]:
        """Take ``batch``; the pieces now complete (often none)."""
        rows_in = self.rows_in
        rows_in.add(batch, hold=self.order is not None)
        if self.order is None:
            return []
        if not self.checking and rows_in.held_bytes > rows_in.budget:
            self.checking = True
            contiguous = all(self.order.add(held) for held in rows_in.held)
        else:
            contiguous = not self.checking or self.order.add(batch)
        if not contiguous:
            if self.given:
                raise _RankingCameBackError
            self.order = None
            if rows_in.held_bytes > rows_in.budget:
                rows_in.spill_all()
            return []
        if not self.checking or rows_in.held_bytes <= min(rows_in.budget, self.budget // 4):
            return []
        parts = rows_in.take_complete(self.keys, self.budget // 4)
        self.given = self.given or bool(parts)
        return parts


@dataclass
class _Seen:
    """What the pass over the run collects for the whole run (not per bucket)."""

    options: Options
    systems: list[pl.Series] = field(default_factory=list)
    queries: list[pl.Series] = field(default_factory=list)

    def add(self, batch: pl.DataFrame) -> None:
        if self.options.missing == "zero" and self.options.system is not None:
            self.systems.append(batch[self.options.system].unique())
        if self.options.missing == "error":
            self.queries.append(batch[self.options.query].cast(pl.String).unique())

    def all_systems(self) -> pl.Series | None:
        if not self.systems:
            return None
        return pl.concat(self.systems).unique(maintain_order=True)

    def all_queries(self) -> pl.Series:
        return pl.concat(self.queries).unique() if self.queries else pl.Series([], dtype=pl.String)


def score_lazy(
    run: pl.LazyFrame,
    qrels: pl.DataFrame | pl.LazyFrame,
    measures: Sequence[Measure],
    options: Options,
    *,
    validate: bool,
    limit: int,
) -> pl.DataFrame:
    """Per-ranking values of a lazy run (see the module docstring); unsorted.

    A run whose rankings come in one stretch each (the usual layout: a TREC run
    sorted by query, logs written ranking by ranking) is scored as it is read,
    piece by piece, when its qrels fit the budget; one found otherwise after a
    piece was scored is read again and taken bucket by bucket.
    """
    try:
        return _score_lazy(run, qrels, measures, options, validate=validate, limit=limit,
                           stream=True)  # fmt: skip
    except _RankingCameBackError:
        return _score_lazy(run, qrels, measures, options, validate=validate, limit=limit,
                           stream=False)  # fmt: skip


def _score_lazy(
    run: pl.LazyFrame,
    qrels: pl.DataFrame | pl.LazyFrame,
    measures: Sequence[Measure],
    options: Options,
    *,
    validate: bool,
    limit: int,
    stream: bool,
) -> pl.DataFrame:
    """:func:`score_lazy`, scoring contiguous rankings as they come when ``stream``."""
    budget = max(1, limit // PIECE_SHARE)
    run_schema = run.select(options.run_columns).collect_schema()
    qrels_schema = qrels.lazy().select(options.qrels_columns).collect_schema()
    progress = _Progress()
    with (
        tempfile.TemporaryDirectory(prefix="polars_rankeval-") as folder,
        ThreadPoolExecutor(max_workers=PIECES_AT_ONCE) as pool,  # done with before the folder
    ):
        qrels_in = _Input("qrels", options.query, budget, Path(folder))
        run_in = _Input("run", options.query, budget, Path(folder))
        try:
            qrels_seen = _Seen(options)
            # a qrels DataFrame is in memory already: held where it is, not charged
            in_memory = isinstance(qrels, pl.DataFrame)
            whole_below = sys.maxsize if in_memory else budget
            for batch in _batches(qrels, options.qrels_columns, whole_below=whole_below):
                if validate:
                    check_qrels_rows(batch, options, offset=qrels_in.rows)
                if options.missing == "error":
                    qrels_seen.queries.append(batch[options.query].cast(pl.String).unique())
                qrels_in.add(batch, hold=in_memory)
            if not in_memory:  # held together: one budget
                run_in.budget = max(1, budget - qrels_in.held_bytes)
            seen = _Seen(options)
            on = stream and options.missing != "zero" and qrels_in.spill is None
            coming = _AsItComes(run_in, options.keys, budget, on=on)
            streamed: _Streamed | None = None  # the qrels, once a piece is scored as it comes
            pieces: list[Piece] = []
            scoring = _InFlight(pool, 0 if _reads_ahead(run) else PIECES_AT_ONCE)
            for batch in _batches(run, options.run_columns):
                if validate:
                    check_run_rows(batch, options, offset=run_in.rows)
                seen.add(batch)
                parts = coming.add(batch)
                progress.reading(run_in.rows)
                for part in parts:
                    if streamed is None:
                        streamed = _Streamed(qrels_in.frame(qrels_schema), options.query,
                                             budget // 2)  # fmt: skip
                    scoring.submit(streamed.score, part, measures, options, validate)
            if options.missing == "error":
                raise_absent_queries(absent_queries(seen.all_queries(), qrels_seen.all_queries()))
            systems = seen.all_systems()

            def piece(run: pl.DataFrame, qrels: pl.DataFrame, concurrent: bool) -> Piece:
                return score_piece(run, qrels, measures, options, check_duplicates=validate,
                                   systems=systems, concurrent=concurrent)  # fmt: skip

            check = partial(check_qrels_duplicates, options=options) if validate else None
            scorer = _Scorer(piece, options.query, options.missing == "zero", check, budget,
                             progress, Path(folder))  # fmt: skip
            if streamed is not None:  # the last rankings, with their queries' qrels rows
                last = _Part(run_in.frame(run_schema), run_in.held_bytes)
                scoring.submit(streamed.score, last, measures, options, validate)
                pieces.extend(scoring.results())
                if validate:
                    streamed.check_rest(options)
            elif held := _held_together(run_in, qrels_in, run_schema, qrels_schema, options,
                                        budget, whole_qrels=not in_memory,
                                        validate=validate):  # fmt: skip
                pieces.append(scorer.score(*held, size=nbytes(held[0]) + nbytes(held[1])))
            else:
                if qrels_in.spill is None and run_in.held_bytes + qrels_in.held_bytes > budget:
                    qrels_in.spill_all()  # a qrels DataFrame past what the run leaves
                run_b, qrels_b = run_in.buckets(run_schema), qrels_in.buckets(qrels_schema)
                pieces.extend(scorer.score_buckets(run_b, qrels_b, SPLITS))
        finally:  # no spill write may outlive the folder
            qrels_in.stop()
            run_in.stop()
    progress.done()
    warn_unscored_queries(pl.concat([p.no_qrels[options.query].cast(pl.String) for p in pieces]))
    return pl.concat([p.scores for p in pieces], how="vertical_relaxed")


def _held_together(
    run_in: _Input,
    qrels_in: _Input,
    run_schema: pl.Schema,
    qrels_schema: pl.Schema,
    options: Options,
    budget: int,
    *,
    whole_qrels: bool,
    validate: bool,
) -> tuple[pl.DataFrame, pl.DataFrame] | None:
    """The run and qrels held, as one piece within ``budget`` bytes; None when either
    was spilled or they do not fit. Unless ``whole_qrels`` (lazy qrels, within the
    budget: all of them), only the qrels rows of the run's queries are taken (a
    qrels DataFrame of any size against a small run; the others checked for
    duplicates with ``validate``), unless ``missing="zero"`` scores the qrels
    queries the run lacks. The run's batches are put together only once they make
    the piece: the buckets split them batch by batch."""
    if run_in.spill is not None or qrels_in.spill is not None:
        return None
    qrels = qrels_in.frame(qrels_schema)
    if run_in.held_bytes + qrels_in.held_bytes > budget:
        if whole_qrels or options.missing == "zero":
            return None
        query = options.query
        queries = pl.concat([batch[query] for batch in run_in.held]).unique()
        stretches = _stretches(qrels, query)
        taken = _rows_of(qrels, stretches, query, queries)
        if run_in.held_bytes + nbytes(taken) > budget:
            return None
        if validate:
            _check_not_taken(qrels, stretches, queries, options)
        qrels = taken
    return run_in.frame(run_schema), qrels


def check_qrels_duplicates(qrels: pl.DataFrame, options: Options) -> None:
    """Refuse duplicate (query, doc) rows in the ``qrels`` of queries no piece takes
    (see :func:`~polars_rankeval.validation.check_duplicates`): a piece checks only
    the qrels rows it is given, and the DataFrame path checks them all."""
    check_duplicates(qrels.lazy(), [options.query, options.doc], "qrels")


def _check_not_taken(
    qrels: pl.DataFrame, stretches: pl.DataFrame | None, taken: pl.Series, options: Options
) -> None:
    """:func:`check_qrels_duplicates` of the rows of ``qrels`` (with their
    :func:`_stretches`) whose query is not one of ``taken`` (the pieces' queries)."""
    rest = _rows_of(qrels, stretches, options.query, taken, outside=True)
    check_qrels_duplicates(rest, options)


def _reads_ahead(run: pl.LazyFrame) -> bool:
    """Whether Polars reads ``run`` from files or a Python source (its plan scans),
    decoding ahead while a piece is scored; else it is read from frames in memory.

    Examples
    --------
    >>> _reads_ahead(pl.DataFrame({"q": ["a"]}).lazy().filter(pl.col("q") != "b"))
    False
    """
    return "SCAN" in run.explain(optimized=False)


class _InFlight:
    """Pieces scored while the run is read on: on the calling thread (``most=0``), or
    up to ``most`` at once on ``pool``'s threads. Their values come in the order the
    pieces were given; a piece's error is raised once it is waited for (when the
    next piece is given past ``most``, or by :meth:`results`): at the same point
    whatever the threads' timing."""

    def __init__(self, pool: ThreadPoolExecutor, most: int) -> None:
        self.pool, self.most = pool, most
        self.pending: list[Future[Piece]] = []
        self.done: list[Piece] = []

    def submit(self, score: Callable[..., Piece], *args: Any) -> None:
        """Score ``score(*args)``, waiting first for the oldest pieces past ``most``."""
        if self.most == 0:
            self.done.append(score(*args))
            return
        while len(self.pending) >= self.most:
            self.done.append(self.pending.pop(0).result())
        self.pending.append(self.pool.submit(score, *args))

    def results(self) -> list[Piece]:
        """Every piece's values, once all are scored."""
        while self.pending:
            self.done.append(self.pending.pop(0).result())
        return self.done


class _Streamed:
    """Scores pieces of whole rankings as they are read, with their queries' qrels."""

    def __init__(self, qrels: pl.DataFrame, query: str, threaded: int) -> None:
        """``threaded``: the largest piece (run and qrels rows, bytes) scored with the
        engine's threads."""
        self.qrels, self.query, self.threaded = qrels, query, threaded
        self.stretches = _stretches(qrels, query)
        self.taken: list[pl.Series] = []
        """The query ids of the pieces scored."""

    def score(
        self, part: _Part, measures: Sequence[Measure], options: Options, validate: bool
    ) -> Piece:
        """The piece ``part`` (whole rankings) with every qrels row of its queries
        (found from the stretches of its query ids: a ranking's rows come together,
        and this took a third of the time of the distinct ids)."""
        run = part.rows
        queries = stretch_heads(run, [self.query]).to_series()
        self.taken.append(queries)
        qrels = _rows_of(self.qrels, self.stretches, self.query, queries)
        threads = part.nbytes + nbytes(qrels) <= self.threaded
        return score_piece(run, qrels, measures, options, check_duplicates=validate,
                           concurrent=threads)  # fmt: skip

    def check_rest(self, options: Options) -> None:
        """Refuse duplicates among the qrels rows no piece took (each piece checks its
        own), once every piece is scored."""
        taken = pl.concat(self.taken) if self.taken else self.qrels[self.query].clear()
        _check_not_taken(self.qrels, self.stretches, taken, options)


MAX_STRETCHES = 1024
"""Past this many stretches of a piece's queries' qrels rows (joined where they meet),
they are filtered."""


def _stretches(frame: pl.DataFrame, query: str) -> pl.DataFrame | None:
    """``frame``'s stretches of rows of one query: ``value`` (the query), ``start``
    and ``len`` (Int64), in row order. Qrels are most often grouped by query, so
    there are few stretches. None past one stretch in 16 rows, judged first on the
    first 65,536 rows (the table of stretches of shuffled qrels would be about as
    large as their query ids; counting every stretch first cost three times the
    encoding).

    Examples
    --------
    >>> _stretches(pl.DataFrame({"q": ["a", "a", "b", "a"] * 8}).sort("q"), "q").rows()
    [(24, 'a', 0), (8, 'b', 24)]
    >>> _stretches(pl.DataFrame({"q": ["a", "a", "b", "a"] * 8}), "q") is None
    True
    """
    ids = pl.col(query)
    head = frame.head(1 << 16)
    if (head.select(ids.rle_id().max()).item() or 0) * 16 >= max(1, head.height):
        return None
    runs = frame.select(ids.rle()).unnest(query)
    if runs.height * 16 > frame.height:
        return None
    return runs.with_columns(
        pl.col("len").cast(pl.Int64), start=(pl.col("len").cum_sum() - pl.col("len")).cast(pl.Int64)
    )


def _rows_of(
    frame: pl.DataFrame,
    stretches: pl.DataFrame | None,
    query: str,
    queries: pl.Series,
    *,
    outside: bool = False,
) -> pl.DataFrame:
    """The rows of ``frame`` whose ``query`` is one of ``queries`` (``outside``: is none
    of them), in their order:
    slices of ``frame`` (no copy) where their stretches (:func:`_stretches`), joined
    where they meet, number at most :data:`MAX_STRETCHES`, else (or without
    ``stretches``) filtered (a filter goes through every row: 60-100 ms at 18.8M
    qrels rows, against a few ms). Query ids of another dtype than ``frame``'s are
    compared as strings.

    Examples
    --------
    >>> frame = pl.DataFrame({"q": ["a", "a", "b", "c", "a"], "d": [1, 2, 3, 4, 5]})
    >>> _rows_of(frame, _stretches(frame, "q"), "q", pl.Series(["a", "b"]))["d"].to_list()
    [1, 2, 3, 5]
    >>> _rows_of(frame, None, "q", pl.Series(["a", "b"]), outside=True)["d"].to_list()
    [4]
    """
    value = pl.col("value")
    if queries.dtype != frame.schema[query]:
        queries, value = queries.cast(pl.String), value.cast(pl.String)
    wanted = queries.implode()
    filtered = pl.col(query).cast(queries.dtype).is_in(wanted) ^ outside
    if stretches is None:
        return frame.filter(filtered)
    chosen = stretches.filter(value.is_in(wanted) ^ outside)
    if chosen.height == 0:
        return frame.clear()
    start, length = chosen["start"].to_numpy(), chosen["len"].to_numpy()
    heads = np.flatnonzero(np.r_[True, start[1:] != start[:-1] + length[:-1]])
    if len(heads) > MAX_STRETCHES:
        return frame.filter(filtered)
    ends = np.r_[heads[1:], len(start)] - 1
    slices = [frame.slice(int(start[h]), int(start[e] + length[e] - start[h]))
              for h, e in zip(heads, ends, strict=True)]  # fmt: skip
    return pl.concat(slices, rechunk=False)


def _batches(
    table: pl.DataFrame | pl.LazyFrame,
    columns: list[str],
    *,
    whole_below: int = 0,
) -> Iterator[pl.DataFrame]:
    """The table's ``columns`` in batches of at most :data:`BATCH_ROWS` rows; a DataFrame
    of fewer than ``whole_below`` bytes in one batch (slices would be copied back
    into one chunk for the engine)."""
    if isinstance(table, pl.DataFrame):  # already in memory: slices, no copy
        frame = table.select(columns)
        if nbytes(frame) < whole_below:
            yield frame
            return
        for start in range(0, frame.height, BATCH_ROWS):
            yield frame.slice(start, BATCH_ROWS)
        return
    yield from table.select(columns).collect_batches(chunk_size=BATCH_ROWS)


PieceScorer = Callable[[pl.DataFrame, pl.DataFrame, bool], Piece]
"""Scores one in-memory piece: ``(run, qrels, concurrent)`` (see :class:`_Scorer`)."""


@dataclass(frozen=True)
class _Scorer:
    """Scores the pieces of one lazy table bucket by bucket: a run and its qrels, or a
    pre-judged table (its qrels then empty)."""

    piece: PieceScorer
    """Scores one piece; ``concurrent``: with the engine's second threads."""
    query: str
    every_bucket: bool
    """Whether a bucket without run rows is scored (``missing="zero"``)."""
    check_qrels: Callable[[pl.DataFrame], None] | None
    """Checks the qrels rows of a bucket that is not scored (see
    :func:`check_qrels_duplicates`)."""
    budget: int
    progress: _Progress
    folder: Path
    """Where a bucket split again writes its buckets."""

    def score(self, run: pl.DataFrame, qrels: pl.DataFrame, *, size: int) -> Piece:
        """One in-memory piece (all the rows of its queries) of ``size`` bytes; within
        half the budget, scored with the engine's second threads
        (:func:`~polars_rankeval.engine.pipeline.score_piece`), which take more memory
        at the peak than one step after the other."""
        return self.piece(run, qrels, size <= self.budget // 2)

    def score_buckets(self, run: Bucketed, qrels: Bucketed, splits: int) -> Iterator[Piece]:
        """Every bucket (run and qrels share the buckets: same count, same seed), several
        small ones together in one piece up to half the budget, scored with threads; one
        between half the budget and the budget alone, one step after the other; one over
        the budget is split again (at most ``splits`` more times: a single query's rows
        can never be split)."""
        group: list[int] = []
        group_bytes = 0
        for b in range(run.n_buckets):
            self.progress.scoring(b, run.n_buckets)
            size = run.size(b) + qrels.size(b)
            if not run.has(b) and not self.every_bucket:
                if self.check_qrels is not None and qrels.has(b):  # read only to be checked
                    self.check_qrels(qrels.read(b))
                qrels.drop(b)  # no rankings to score
                continue
            if size > self.budget and splits > 0 and run.has(b):
                yield from self._split(run, qrels, b, splits)
                continue
            if group and group_bytes + size > self.budget // 2:
                yield self._score_group(run, qrels, group, group_bytes)
                group, group_bytes = [], 0
            group.append(b)
            group_bytes += size
        if group:
            yield self._score_group(run, qrels, group, group_bytes)

    def _score_group(self, run: Bucketed, qrels: Bucketed, group: list[int], size: int) -> Piece:
        """One piece of the buckets in ``group`` (whole queries: a valid piece) of
        ``size`` bytes, scored in the chunks it was read in (copying it into one chunk
        was no faster, and took memory)."""
        return self.score(run.read_many(group), qrels.read_many(group), size=size)

    def _split(self, run: Bucketed, qrels: Bucketed, b: int, splits: int) -> Iterator[Piece]:
        """Bucket ``b`` split again by another hash seed, and scored."""
        seed = run.seed + 1
        folder = Path(tempfile.mkdtemp(dir=self.folder))
        inner_run = Spill(folder, self.query, BUCKETS, max(1, self.budget // 2), seed)
        for part in run.parts(b):
            inner_run.add(part)
        inner_run.flush()
        rows = [qrels.read(b)] if qrels.has(b) else []
        inner_qrels = Held(rows, qrels.schema or pl.Schema(), self.query, BUCKETS, seed)
        yield from self.score_buckets(inner_run, inner_qrels, splits - 1)


def score_judged_lazy(
    table: pl.LazyFrame,
    columns: list[str],
    keys: list[str],
    score: Callable[[pl.DataFrame], Piece],
    check: Callable[[pl.DataFrame, int], None] | None,
    limit: int,
    *,
    stream: bool = True,
) -> list[Piece]:
    """A lazy pre-judged table (:func:`polars_rankeval.evaluate_judged`) of rankings
    ``keys`` (the last one a query id), read once in batches, each checked as it
    arrives (``check(batch, its first row's number)``), and scored (``score``) as a
    run is: whole while its rows fit the budget (an eighth of ``limit``); past it,
    piece by piece as it is read while its rankings come in one stretch each (a log
    written ranking by ranking, :func:`polars_rankeval.judge`'s table; with
    ``stream``); else spilled by a hash of the query id and scored bucket by bucket.
    Should a ranking come back after a piece was scored, the table is read again,
    bucket by bucket."""
    budget = max(1, limit // PIECE_SHARE)
    schema = table.select(columns).collect_schema()
    query = keys[-1]
    progress = _Progress()
    pieces: list[Piece] = []
    try:
        with tempfile.TemporaryDirectory(prefix="polars_rankeval-") as folder:
            rows_in = _Input("judged", query, budget, Path(folder))
            try:
                coming = _AsItComes(rows_in, keys, budget, on=stream)
                for batch in _batches(table, columns):
                    if check is not None:
                        check(batch, rows_in.rows)
                    pieces.extend(score(part.rows) for part in coming.add(batch))
                    progress.reading(rows_in.rows)
                if rows_in.spill is None:  # the whole table, or its last rankings
                    pieces.append(score(rows_in.frame(schema)))
                else:
                    scorer = _Scorer(lambda rows, _, __: score(rows), query, False, None, budget,
                                     progress, Path(folder))  # fmt: skip
                    none = Held([], pl.Schema(), query, BUCKETS, BUCKET_SEED)
                    pieces.extend(scorer.score_buckets(rows_in.buckets(schema), none, SPLITS))
            finally:  # no spill write may outlive the folder
                rows_in.stop()
    except _RankingCameBackError:
        return score_judged_lazy(table, columns, keys, score, check, limit, stream=False)
    progress.done()
    return pieces


class _Progress:
    """A one-line progress report on stderr, when it is a terminal."""

    def __init__(self) -> None:
        self.shown = sys.stderr.isatty()
        self.used = False

    def reading(self, rows: int) -> None:
        if self.shown and rows >= 10 * BATCH_ROWS:
            self.used = True
            print(f"\rpolars_rankeval: read {rows:,} rows", end="", file=sys.stderr)

    def scoring(self, b: int, n: int) -> None:
        if self.shown:
            self.used = True
            print(f"\rpolars_rankeval: scoring bucket {b + 1}/{n}      ", end="", file=sys.stderr)

    def done(self) -> None:
        if self.used:
            print(file=sys.stderr)
