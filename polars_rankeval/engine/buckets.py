"""Lazy tables in bounded memory: read once, scored by one of three strategies.

A LazyFrame run and its qrels (lazy or not), or a lazy pre-judged table (it has no
qrels: :func:`score_judged_lazy`), are each read once, in batches, on Polars'
streaming engine, by one driver (:func:`_score_pass`: the two kinds of table differ
by their :class:`_Job`, their inputs and the function that scores a piece); each
batch is checked as it arrives (null ids, NaN scores: the error names the row of
the whole input). Every size the driver goes by is a share of the memory limit,
named in :class:`Budget`; the budget itself is an eighth of the limit
(:data:`PIECE_SHARE`). Once the table is read, :func:`_strategy` names the
:class:`Strategy` it is scored by.

Held whole (:attr:`Strategy.HELD_WHOLE`). While the rows of both tables fit the
budget, they are kept: the qrels are read first, and the run has what they leave.
Qrels given as a DataFrame are in memory already: held where they are, whatever
their size, and not charged to the budget.

As it comes (:attr:`Strategy.AS_IT_COMES`). Past that, a run whose rankings each
come in one stretch (a TREC run sorted by query, logs written ranking by ranking:
:class:`_Contiguity` checks it batch by batch) is scored as it is read, when its
qrels are held: the first time the run's rows held pass what the budget leaves
them, and then each time they pass a quarter of the budget, those of the rankings
complete so far are scored, in pieces of whole rankings of about a quarter of the
budget each, with their queries' qrels rows (slices of the qrels: :func:`_rows_of`);
the last ranking's rows wait for the next batch (the rows left at the end are one
more such piece). The rows go through the states of :class:`_Reading` as they are
read. Pieces are kept small here because Polars' reader works ahead while a piece
is scored (up to about 0.25 GiB of decoded batches waiting): a run whose plan scans
is scored one piece after the other on the reading thread. A run read from frames
in memory has no reader working ahead, and that room takes a second piece: its
pieces are scored two at once on worker threads while the run is read on
(:class:`_InFlight`). Should a ranking come back after its rows were scored, the
run is read a second time and taken bucket by bucket, as below. ``missing="zero"``
needs every system before any ranking is scored, and takes the buckets too.

Bucketed (:attr:`Strategy.BUCKETED`). Otherwise, every row of a table past the
eighth (a qrels DataFrame too, once the run is taken by bucket) is written to one of
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

import enum
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
    raise_absent_queries,
    warn_unscored_queries,
)
from polars_rankeval.engine.pipeline import Piece, check_qrels_rows, check_run_rows, score_piece
from polars_rankeval.engine.plan import Options, Scored
from polars_rankeval.engine.scope import absent_rankings
from polars_rankeval.validation import check_duplicates, fresh_name, key_hash

DEFAULT_LIMIT = 1 << 30
"""The default ``memory_limit`` of a lazy evaluation: 1 GiB."""
BUCKETS = 64
"""Buckets a spilled run is split into (and each oversized bucket again)."""
PIECE_SHARE = 8
"""The budget (:attr:`Budget.piece`): the rows held in memory (run and qrels together)
may take 1/PIECE_SHARE of the memory limit, and a piece at most that; the engine needs
the rest."""
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


@dataclass(frozen=True)
class Budget:
    """Every share of a lazy evaluation's memory limit the strategies go by, named.

    ``limit`` is the memory limit in bytes (:func:`memory_bytes` of ``memory_limit``);
    each size below is a fraction of :attr:`piece`, the budget, itself
    1/:data:`PIECE_SHARE` of the limit.

    Examples
    --------
    >>> budget = Budget(memory_bytes("1GiB"))
    >>> budget.piece, budget.threaded_piece, budget.read_piece, budget.spill_buffer
    (134217728, 67108864, 33554432, 16777216)
    >>> Budget(64).piece, Budget(64).left_by(100)
    (8, 1)
    """

    limit: int
    """The memory limit, in bytes."""

    @property
    def piece(self) -> int:
        """The budget (at least a byte): what the rows held in memory (run and qrels
        together) may take, and a piece at most; the engine needs the rest of the limit,
        its peak being a small multiple of its piece."""
        return max(1, self.limit // PIECE_SHARE)

    @property
    def threaded_piece(self) -> int:
        """Half the budget: the largest piece scored with the engine's second threads
        (they raise its peak), and the most that buckets are put together into one
        piece."""
        return self.piece // 2

    @property
    def read_piece(self) -> int:
        """A quarter of the budget: the size of a piece of whole rankings scored as the
        table is read, and, once the rows held passed their room, the rows held (or the
        room, when smaller) past which the rankings complete so far are scored (kept
        small: Polars' reader works ahead while a piece is scored)."""
        return self.piece // 4

    @property
    def closed_rankings(self) -> int:
        """A quarter of the budget: the most bytes of the hashes of rankings already
        closed kept to check that rankings come in one stretch (:class:`_Contiguity`);
        past it, the table is taken as not contiguous."""
        return self.piece // 4

    @property
    def spill_buffer(self) -> int:
        """An eighth of the budget (at least a byte): the rows of a spilled table
        buffered before a file is written (:attr:`Spill.flush_bytes`)."""
        return max(1, self.piece // 8)

    @property
    def split_buffer(self) -> int:
        """Half the budget (at least a byte): the rows buffered before a file is
        written when a bucket too large is split again."""
        return max(1, self.piece // 2)

    def left_by(self, held: int) -> int:
        """What the budget leaves (at least a byte) once ``held`` bytes are held: the
        room of a run whose lazy qrels were read first and held."""
        return max(1, self.piece - held)


class Strategy(enum.Enum):
    """How a lazy table is scored, named once it is read (:func:`_strategy`); see the
    module docstring."""

    HELD_WHOLE = "held whole"
    """Chosen when no piece was scored as the table was read, nothing was spilled, and
    the rows held make one piece within the budget: a run with its qrels held
    together (a qrels DataFrame past what the run leaves: only its queries' rows, when
    they fit, unless ``missing="zero"``); a pre-judged table's rows, whatever their
    size (only rows of one ranking read as it comes pass the budget unspilled). Scored
    as one piece."""
    AS_IT_COMES = "as it comes"
    """Chosen when a piece of whole rankings was given while the table was read (its
    rankings each in one stretch, its rows past what the budget leaves them, a run's
    qrels held, not ``missing="zero"``): those pieces were scored as they came, and the
    rows left make the last one."""
    BUCKETED = "bucketed"
    """Chosen otherwise: either table was spilled, or the rows held do not make one
    piece. Both tables are taken bucket by bucket by a hash of the query id (the one
    held split in memory; a qrels DataFrame past what the run leaves is spilled
    first); a bucket over the budget is split again with another seed before it is
    scored (:meth:`_Scorer.score_buckets`)."""


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
    """One table read once, in batches: its rows held in memory, or, once they are
    spilled (:meth:`spill_all`: the caller decides when), written to bucket files by
    query (rows already held are spilled too)."""

    def __init__(self, name: str, query: str, budget: Budget, folder: Path) -> None:
        self.name, self.query, self.folder = name, query, folder
        self.room = budget.piece
        """Bytes the rows held may take (a run's: what its lazy qrels leave)."""
        self.flush_bytes = budget.spill_buffer
        """Bytes of spilled rows buffered per file written."""
        self.held: list[pl.DataFrame] = []
        self.held_bytes = 0
        self.spill: Spill | None = None
        self.rows = 0

    def add(self, batch: pl.DataFrame) -> None:
        """Keep ``batch``: held, or spilled once the table is."""
        self.rows += batch.height
        if self.spill is not None:
            self.spill.add(batch)
            return
        self.held.append(batch)
        self.held_bytes += nbytes(batch)

    @property
    def past_room(self) -> bool:
        """Whether the rows held pass their room."""
        return self.held_bytes > self.room

    def spill_past_room(self) -> None:
        """Spill every row (:meth:`spill_all`) once the rows held pass their room."""
        if self.past_room:
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

    def hold_only(self, rows: pl.DataFrame, size: int) -> None:
        """Hold only ``rows`` (``size`` bytes) of the rows held: the qrels rows a run
        held whole takes."""
        self.held, self.held_bytes = [rows], size

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


HASH_BYTES = 8
"""Bytes of the hash a closed ranking is kept as (:func:`~polars_rankeval.validation.key_hash`)."""


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
        return self.n_closed * HASH_BYTES <= self.limit

    def _close(self, hashes: pl.Series) -> None:
        self.closed.append(hashes)
        self.n_closed += hashes.len()
        if len(self.closed) > 64:
            self.closed = [pl.concat(self.closed)]


class _Reading(enum.Enum):
    """The states of a table's rows as :class:`_AsItComes` takes them, batch by batch.

    ``HOLDING`` (or ``OFF``, when the table may not be scored as it comes) at first;
    ``HOLDING`` to ``WATCHING`` the first time the rows held pass their room; to
    ``GIVING`` once a piece is given; out of one stretch, ``HOLDING`` and ``WATCHING``
    go ``OFF``, ``GIVING`` goes ``CAME_BACK``.
    """

    OFF = "off"
    """Not scored as it comes (not on this pass: ``missing="zero"``, spilled qrels, the
    second pass; or its rankings were found out of one stretch before any piece was
    given): the rows are held while they fit their room, and all spilled past it."""
    HOLDING = "holding"
    """The rows are held within their room; their order is not checked yet."""
    WATCHING = "watching"
    """The rows held passed their room, every ranking in one stretch so far: each batch
    is checked, and the rankings complete are given as pieces; none given yet (every
    row held is of one ranking)."""
    GIVING = "giving"
    """A piece was given: the table is scored as it comes
    (:attr:`Strategy.AS_IT_COMES`)."""
    CAME_BACK = "came back"
    """A ranking came back after a piece was given: the pass stops, and the table is
    read again with ``OFF`` from the start (then taken bucket by bucket)."""


class _AsItComes:
    """A table's rows as they are read (into ``rows_in``), given back as pieces of whole
    rankings while its rankings come in one stretch each (:class:`_Contiguity`), through
    the states of :class:`_Reading` (:attr:`state`).

    Nothing is given while the rows held fit their room; from the first time they pass
    it, and then each time they pass a quarter of the budget, the rankings complete so
    far are given in pieces of about a quarter of the budget each
    (:meth:`_Input.take_complete`). Found not contiguous before any piece was given,
    the rows are held or spilled as they come; after, the table must be read again.
    """

    def __init__(self, rows_in: _Input, keys: Sequence[str], budget: Budget, *, on: bool) -> None:
        """``on``: whether pieces may be given at all (else the rows are only added)."""
        self.rows_in, self.keys = rows_in, list(keys)
        self.piece_bytes = budget.read_piece
        self.order = _Contiguity(keys, budget.closed_rankings)
        self.state = _Reading.HOLDING if on else _Reading.OFF

    def add(self, batch: pl.DataFrame) -> list[_Part]:
        """Take ``batch``; the pieces now complete (often none)."""
        rows_in = self.rows_in
        rows_in.add(batch)
        if self.state is _Reading.OFF:
            rows_in.spill_past_room()
            return []
        if self.state is _Reading.HOLDING:
            if not rows_in.past_room:
                return []
            self.state = _Reading.WATCHING
            contiguous = all(self.order.add(held) for held in rows_in.held)
        else:
            contiguous = self.order.add(batch)
        if not contiguous:
            if self.state is _Reading.GIVING:
                self.state = _Reading.CAME_BACK
            else:
                self.state = _Reading.OFF
                rows_in.spill_past_room()
            return []
        if rows_in.held_bytes <= min(rows_in.room, self.piece_bytes):
            return []
        parts = rows_in.take_complete(self.keys, self.piece_bytes)
        if parts:
            self.state = _Reading.GIVING
        return parts


@dataclass
class _Seen:
    """What the pass over the run collects for the whole run (not per bucket)."""

    options: Options
    systems: list[pl.Series] = field(default_factory=list)
    queries: list[pl.Series] = field(default_factory=list)
    rankings: list[pl.DataFrame] = field(default_factory=list)
    """Under ``missing="error"``: the run's ``[*by], [system], query`` seen."""

    def add(self, batch: pl.DataFrame) -> None:
        if self.options.missing == "zero" and self.options.system is not None:
            self.systems.append(batch[self.options.system].unique())
        if self.options.missing == "error":
            self.rankings.append(_ranking_keys(batch, self.options))

    def all_systems(self) -> pl.Series | None:
        if not self.systems:
            return None
        return pl.concat(self.systems).unique(maintain_order=True)

    def all_queries(self) -> pl.Series:
        return pl.concat(self.queries).unique() if self.queries else pl.Series([], dtype=pl.String)


def _ranking_keys(batch: pl.DataFrame, options: Options) -> pl.DataFrame:
    """A batch's distinct ``[*by], [system], query`` (query ids as strings)."""
    keys = [*options.by, *([options.system] if options.system else []), options.query]
    return batch.select(keys).with_columns(pl.col(options.query).cast(pl.String)).unique()


def score_lazy(
    run: pl.LazyFrame,
    qrels: pl.DataFrame | pl.LazyFrame,
    measures: Sequence[Scored],
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

    def scored(
        rows: pl.DataFrame, qrels_rows: pl.DataFrame, systems: pl.Series | None, concurrent: bool
    ) -> Piece:
        return score_piece(rows, qrels_rows, measures, options, check_duplicates=validate,
                           systems=systems, concurrent=concurrent)  # fmt: skip

    job = partial(_run_job, run, qrels, scored, options, validate=validate)
    pieces = _score_table(job, Budget(limit))
    warn_unscored_queries(pl.concat([p.no_qrels[options.query].cast(pl.String) for p in pieces]))
    return pl.concat([p.scores for p in pieces], how="vertical_relaxed")


def pieces_lazy(
    run: pl.LazyFrame,
    qrels: pl.DataFrame | pl.LazyFrame,
    piece: RunPieceScorer,
    options: Options,
    *,
    validate: bool,
    limit: int,
    fractional: bool = True,
) -> list[Piece]:
    """Every piece of a lazy run and its qrels, as :func:`score_lazy` reads and splits
    them (in bounded memory), each made by ``piece`` instead of scored: what
    :func:`polars_rankeval.judge` builds its table from, piece after piece. The
    queries the run lacks are not refused here (``missing="error"`` reads as
    ``"drop"``); ``fractional``: whether grades with a fraction pass the checks."""
    job = partial(_run_job, run, qrels, piece, options, validate=validate, fractional=fractional,
                  refuse_absent=False)  # fmt: skip
    return _score_table(job, Budget(limit))


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

    def piece(rows: pl.DataFrame, _qrels: pl.DataFrame, _concurrent: bool) -> Piece:
        return score(rows)  # its grades are in its rows: no qrels

    def job() -> _Job:
        return _Job("judged", table, columns, keys, keys[-1], check, piece)

    return _score_table(job, Budget(limit), stream=stream)


RunPieceScorer = Callable[[pl.DataFrame, pl.DataFrame, "pl.Series | None", bool], Piece]
"""Makes one in-memory piece of a run: ``(run rows, their queries' qrels rows, the systems
of the whole run (``missing="zero"``), concurrent)``."""


def _run_job(
    run: pl.LazyFrame,
    qrels: pl.DataFrame | pl.LazyFrame,
    scorer: RunPieceScorer,
    options: Options,
    *,
    validate: bool,
    fractional: bool = True,
    refuse_absent: bool = True,
) -> _Job:
    """A lazy run and its qrels as the :class:`_Job` of one pass: what the pass sees of
    their queries and systems is its own. ``refuse_absent``: raise for the qrels queries
    the run lacks under ``missing="error"``."""
    seen, qrels_seen = _Seen(options), _Seen(options)
    systems: pl.Series | None = None  # once read: missing="zero" only, never as it comes

    def check(batch: pl.DataFrame, offset: int) -> None:
        if validate:
            check_run_rows(batch, options, offset=offset)
        seen.add(batch)

    def after_read() -> None:
        nonlocal systems
        if options.missing == "error" and refuse_absent:
            keys = pl.concat(seen.rankings) if seen.rankings else None
            if keys is None:
                raise_absent_queries(qrels_seen.all_queries().unique().sort())
            else:
                raise_absent_queries(
                    absent_rankings(keys, qrels_seen.all_queries(), query=options.query,
                                    system=options.system, by=options.by)
                )  # fmt: skip
        systems = seen.all_systems()

    def piece(rows: pl.DataFrame, qrels_rows: pl.DataFrame, concurrent: bool) -> Piece:
        return scorer(rows, qrels_rows, systems, concurrent)

    return _Job(
        "run",
        run,
        options.run_columns,
        options.keys,
        options.query,
        check,
        piece,
        qrels=_Qrels(qrels, options, qrels_seen, validate=validate, fractional=fractional),
        missing_zero=options.missing == "zero",
        at_once=0 if _reads_ahead(run) else PIECES_AT_ONCE,
        after_read=after_read,
    )


@dataclass(frozen=True)
class _Job:
    """A lazy table as the one driver (:func:`_score_pass`) reads and scores it, for one
    pass: a run and its qrels (:func:`_run_job`), or a pre-judged table
    (:func:`score_judged_lazy`). The two differ by these fields, not by their loop."""

    name: str
    """The table's name (its spill folder's)."""
    table: pl.LazyFrame
    columns: list[str]
    keys: list[str]
    """A ranking's key columns: a piece scored as it comes holds whole rankings."""
    query: str
    """The query id column: its hash picks a row's bucket."""
    check: Callable[[pl.DataFrame, int], None] | None
    """Checks (and notes) each batch as it arrives: ``check(batch, its first row's
    number)``."""
    piece: PieceScorer
    """Scores one piece held in memory, with its queries' qrels rows."""
    qrels: _Qrels | None = None
    """A run's qrels, read before it; None for a pre-judged table."""
    missing_zero: bool = False
    """``missing="zero"``: every bucket is scored (the qrels queries the run lacks too),
    which needs every system first: never as it comes."""
    at_once: int = 0
    """Pieces scored at once on worker threads as the table is read (0: one after the
    other on the reading thread)."""
    after_read: Callable[[], None] | None = None
    """Called once the table is read, before its last pieces are scored."""


@dataclass(frozen=True)
class _Qrels:
    """A run's qrels as :func:`_score_pass` takes them: read before the run; a DataFrame
    held where it is, not charged to the budget; a LazyFrame held within the budget (the
    run has what it leaves) or spilled."""

    table: pl.DataFrame | pl.LazyFrame
    options: Options
    seen: _Seen
    """Their queries, for ``missing="error"``."""
    validate: bool
    fractional: bool = True
    """Whether grades with a fraction pass the checks (:func:`polars_rankeval.judge`'s
    do not)."""

    @property
    def in_memory(self) -> bool:
        """Whether they are a DataFrame (in memory already)."""
        return isinstance(self.table, pl.DataFrame)

    def schema(self) -> pl.Schema:
        """The schema of the columns read."""
        return self.table.lazy().select(self.options.qrels_columns).collect_schema()

    def read(self, qrels_in: _Input, run_in: _Input, budget: Budget) -> None:
        """Read the qrels into ``qrels_in`` batch by batch, each checked as it arrives,
        and leave the run what they take of the budget."""
        whole_below = sys.maxsize if self.in_memory else budget.piece
        for batch in _batches(self.table, self.options.qrels_columns, whole_below=whole_below):
            if self.validate:
                check_qrels_rows(
                    batch, self.options, offset=qrels_in.rows, fractional=self.fractional
                )
            if self.options.missing == "error":
                self.seen.queries.append(batch[self.options.query].cast(pl.String).unique())
            qrels_in.add(batch)
            if not self.in_memory:
                qrels_in.spill_past_room()
        if not self.in_memory:  # held together: one budget
            run_in.room = budget.left_by(qrels_in.held_bytes)

    def fit_held(self, run_in: _Input, qrels_in: _Input, schema: pl.Schema, budget: Budget) -> bool:
        """Whether the run and qrels held (neither spilled) make one piece within the
        budget. Unless the qrels are lazy (all of them, within the budget), only the
        qrels rows of the run's queries are kept (:meth:`_Input.hold_only`: a qrels
        DataFrame of any size against a small run; the others checked for duplicates
        with ``validate``), unless ``missing="zero"`` scores the qrels queries the run
        lacks. The run's batches are put together only once they make the piece: the
        buckets split them batch by batch."""
        qrels = qrels_in.frame(schema)
        if run_in.held_bytes + qrels_in.held_bytes <= budget.piece:
            return True
        if not self.in_memory or self.options.missing == "zero":
            return False
        query = self.options.query
        queries = pl.concat([batch[query] for batch in run_in.held]).unique()
        stretches = _stretches(qrels, query)
        taken = _rows_of(qrels, stretches, query, queries)
        size = nbytes(taken)
        if run_in.held_bytes + size > budget.piece:
            return False
        if self.validate:
            _check_not_taken(qrels, stretches, queries, self.options)
        qrels_in.hold_only(taken, size)
        return True

    def check_unscored(self) -> Callable[[pl.DataFrame], None] | None:
        """Checks the qrels rows of a bucket that is not scored, with ``validate``."""
        return partial(check_qrels_duplicates, options=self.options) if self.validate else None


def _score_table(job: Callable[[], _Job], budget: Budget, *, stream: bool = True) -> list[Piece]:
    """Every piece of a lazy table (see the module docstring): one pass (scoring it as it
    comes, if ``stream`` and it does); should a ranking come back after a piece was
    scored, a second pass that does not. Each pass takes a fresh ``job()``."""
    pieces = _score_pass(job(), budget, stream=stream)
    if pieces is None:  # a ranking came back
        pieces = _score_pass(job(), budget, stream=False)
        assert pieces is not None  # nothing was scored as it came, so nothing came back
    return pieces


def _score_pass(job: _Job, budget: Budget, *, stream: bool) -> list[Piece] | None:
    """One read of ``job``'s table (its qrels first), scored by the :class:`Strategy`
    :func:`_strategy` names; None when a ranking came back after a piece was scored as
    it came (``stream``): the table must be read again."""
    schema = job.table.select(job.columns).collect_schema()
    qrels = job.qrels
    qrels_schema = pl.Schema() if qrels is None else qrels.schema()
    progress = _Progress()
    with (
        tempfile.TemporaryDirectory(prefix="polars_rankeval-") as folder,
        ThreadPoolExecutor(max_workers=PIECES_AT_ONCE) as pool,  # done with before the folder
    ):
        qrels_in = _Input("qrels", job.query, budget, Path(folder))
        rows_in = _Input(job.name, job.query, budget, Path(folder))
        try:
            if qrels is not None:
                qrels.read(qrels_in, rows_in, budget)
            on = stream and not job.missing_zero and qrels_in.spill is None
            coming = _AsItComes(rows_in, job.keys, budget, on=on)
            streamed: _Streamed | None = None  # once a piece is scored as it comes
            scoring = _InFlight(pool, job.at_once)
            for batch in _batches(job.table, job.columns):
                if job.check is not None:
                    job.check(batch, rows_in.rows)
                parts = coming.add(batch)
                if coming.state is _Reading.CAME_BACK:
                    return None
                progress.reading(rows_in.rows)
                for part in parts:
                    if streamed is None:
                        qrels_held = None if qrels is None else qrels_in.frame(qrels_schema)
                        streamed = _Streamed(job.piece, qrels_held, job.query,
                                             budget.threaded_piece)  # fmt: skip
                    scoring.submit(streamed.score, part)
            if job.after_read is not None:
                job.after_read()
            check = None if qrels is None else qrels.check_unscored()
            scorer = _Scorer(job.piece, job.query, job.missing_zero, check, budget, progress,
                             Path(folder))  # fmt: skip
            spilled = rows_in.spill is not None or qrels_in.spill is not None
            fits = None if qrels is None else partial(qrels.fit_held, rows_in, qrels_in,
                                                      qrels_schema, budget)  # fmt: skip
            strategy = _strategy(coming.state, spilled, fits)
            if strategy is Strategy.AS_IT_COMES:  # the last rankings, with their queries' qrels
                assert streamed is not None  # a piece was given
                scoring.submit(streamed.score, _Part(rows_in.frame(schema), rows_in.held_bytes))
                pieces = scoring.results()
                if qrels is not None and qrels.validate:
                    streamed.check_rest(qrels.options)
            elif strategy is Strategy.HELD_WHOLE:
                rows, qrels_rows = rows_in.frame(schema), qrels_in.frame(qrels_schema)
                pieces = [scorer.score(rows, qrels_rows, size=nbytes(rows) + nbytes(qrels_rows))]
            else:
                if (
                    qrels_in.spill is None
                    and rows_in.held_bytes + qrels_in.held_bytes > budget.piece
                ):
                    qrels_in.spill_all()  # a qrels DataFrame past what the run leaves
                run_b, qrels_b = rows_in.buckets(schema), qrels_in.buckets(qrels_schema)
                pieces = list(scorer.score_buckets(run_b, qrels_b, SPLITS))
        finally:  # no spill write may outlive the folder
            qrels_in.stop()
            rows_in.stop()
    progress.done()
    return pieces


def _strategy(reading: _Reading, spilled: bool, fits: Callable[[], bool] | None) -> Strategy:
    """The :class:`Strategy` a table is scored by, once read: as it comes when a piece
    was given while it was read (``reading``); held whole when neither table was
    ``spilled`` and the rows held make one piece (``fits()``, which keeps only the
    qrels rows the piece takes; None when they always do: a pre-judged table's); else
    bucket by bucket."""
    if reading is _Reading.GIVING:
        return Strategy.AS_IT_COMES
    if not spilled and (fits is None or fits()):
        return Strategy.HELD_WHOLE
    return Strategy.BUCKETED


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
    """Scores pieces of whole rankings as they are read, each with its queries' qrels
    rows (a pre-judged table's: alone)."""

    def __init__(
        self, piece: PieceScorer, qrels: pl.DataFrame | None, query: str, threaded: int
    ) -> None:
        """``threaded``: the largest piece (run and qrels rows, bytes) scored with the
        engine's threads; ``qrels``: None for a pre-judged table."""
        self.piece, self.qrels, self.query, self.threaded = piece, qrels, query, threaded
        self.stretches = None if qrels is None else _stretches(qrels, query)
        self.taken: list[pl.Series] = []
        """The query ids of the pieces scored."""

    def score(self, part: _Part) -> Piece:
        """The piece ``part`` (whole rankings) with every qrels row of its queries
        (found from the stretches of its query ids: a ranking's rows come together,
        and this took a third of the time of the distinct ids)."""
        run = part.rows
        if self.qrels is None:  # its grades are in its rows
            return self.piece(run, pl.DataFrame(), part.nbytes <= self.threaded)
        queries = stretch_heads(run, [self.query]).to_series()
        self.taken.append(queries)
        qrels = _rows_of(self.qrels, self.stretches, self.query, queries)
        return self.piece(run, qrels, part.nbytes + nbytes(qrels) <= self.threaded)

    def check_rest(self, options: Options) -> None:
        """Refuse duplicates among the qrels rows no piece took (each piece checks its
        own), once every piece is scored."""
        if self.qrels is None:
            return
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
    budget: Budget
    progress: _Progress
    folder: Path
    """Where a bucket split again writes its buckets."""

    def score(self, run: pl.DataFrame, qrels: pl.DataFrame, *, size: int) -> Piece:
        """One in-memory piece (all the rows of its queries) of ``size`` bytes; within
        half the budget, scored with the engine's second threads
        (:func:`~polars_rankeval.engine.pipeline.score_piece`), which take more memory
        at the peak than one step after the other."""
        return self.piece(run, qrels, size <= self.budget.threaded_piece)

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
            if size > self.budget.piece and splits > 0 and run.has(b):
                yield from self._split(run, qrels, b, splits)
                continue
            if group and group_bytes + size > self.budget.threaded_piece:
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
        inner_run = Spill(folder, self.query, BUCKETS, self.budget.split_buffer, seed)
        for part in run.parts(b):
            inner_run.add(part)
        inner_run.flush()
        rows = [qrels.read(b)] if qrels.has(b) else []
        inner_qrels = Held(rows, qrels.schema or pl.Schema(), self.query, BUCKETS, seed)
        yield from self.score_buckets(inner_run, inner_qrels, splits - 1)


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
