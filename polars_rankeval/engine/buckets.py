"""Lazy runs in bounded memory: read once, scored in memory or bucket by bucket.

A LazyFrame run (a Parquet or CSV scan, any lazy plan) is read once, in
batches, on Polars' streaming engine; each batch is checked as it arrives
(null ids, NaN scores: the error names the row of the whole input). While
the rows read fit in a quarter of the memory limit they are kept, and the
whole run is then scored as one in-memory piece. Past that, every row is
written to one of :data:`BUCKETS` files on disk chosen by a hash of its
query id, and the buckets are scored one at a time: each holds all the rows
of its queries, so its values are those of the whole run. A bucket still too
large is split again the same way (with another hash seed) before it is
scored. The input is read once; the spilled rows are written and read back
once (again only for a bucket split twice).

The engine's peak memory is a small multiple of its piece's size (the packed
sort keys, hashes and positions: about 30 bytes a row over the frame itself),
which is what the quarter leaves room for.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from polars_rankeval.engine.outcome import (
    absent_queries,
    raise_absent_queries,
    warn_unscored_queries,
)
from polars_rankeval.engine.pipeline import Piece, check_qrels_rows, check_run_rows, score_piece
from polars_rankeval.measures import Measure
from polars_rankeval.options import Options
from polars_rankeval.validation import fresh_name

DEFAULT_LIMIT = 1 << 30
"""The default ``memory_limit`` of a lazy evaluation: 1 GiB."""
BUCKETS = 64
"""Buckets a spilled run is split into (and each oversized bucket again)."""
PIECE_SHARE = 8
"""A piece may take 1/PIECE_SHARE of the memory limit; the engine needs the rest."""
BATCH_ROWS = 1 << 20
"""Rows per batch read from the lazy run."""
SPLITS = 2
"""How many times a bucket over the budget may be split again."""
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
    return {int(b): part for (b,), part in parts.items()}  # type: ignore[misc]


@dataclass
class Spill:
    """Rows written to bucket files by a hash of their query id, in a temporary folder."""

    folder: Path
    query: str
    n_buckets: int
    flush_bytes: int
    """Buffered bytes that make every bucket's rows be written out."""
    seed: int = BUCKET_SEED
    files: list[list[Path]] = field(default_factory=list)
    schema: pl.Schema | None = None
    """The spilled rows' schema (for an empty bucket's empty run)."""
    _buffers: list[list[pl.DataFrame]] = field(default_factory=list)
    _buffered: int = 0

    def __post_init__(self) -> None:
        self.files = [[] for _ in range(self.n_buckets)]
        self._buffers = [[] for _ in range(self.n_buckets)]

    def add(self, frame: pl.DataFrame) -> None:
        """Route ``frame``'s rows to their buckets (written out when enough are buffered)."""
        self.schema = frame.schema
        parts = split_by_bucket(frame, self.query, self.n_buckets, self.seed)
        for b, part in parts.items():
            self._buffers[b].append(part)
        self._buffered += frame.estimated_size()
        if self._buffered >= self.flush_bytes:
            self.flush()

    def flush(self) -> None:
        """Write every buffered bucket to a file of its own."""
        for b, frames in enumerate(self._buffers):
            if frames:
                path = self.folder / f"s{self.seed:x}-b{b:03d}-{len(self.files[b]):05d}.arrow"
                pl.concat(frames, rechunk=False).write_ipc(path, compression="uncompressed")
                self.files[b].append(path)
                frames.clear()
        self._buffered = 0

    def size(self, b: int) -> int:
        """Bytes of bucket ``b`` on disk (about its size in memory: uncompressed Arrow)."""
        return sum(p.stat().st_size for p in self.files[b])

    def read(self, b: int) -> pl.DataFrame:
        """Bucket ``b``'s rows, in the order they were read; its files are then deleted."""
        frames = [pl.read_ipc(p) for p in self.files[b]]
        for p in self.files[b]:
            p.unlink()
        return pl.concat(frames, rechunk=False) if frames else pl.DataFrame()


@dataclass
class _Seen:
    """What the pass over the run collects for the whole run (not per bucket)."""

    options: Options
    systems: list[pl.Series] = field(default_factory=list)
    queries: list[pl.Series] = field(default_factory=list)
    rows: int = 0

    def add(self, batch: pl.DataFrame) -> None:
        if self.options.missing == "zero" and self.options.system is not None:
            self.systems.append(batch[self.options.system].unique())
        if self.options.missing == "error":
            self.queries.append(batch[self.options.query].cast(pl.String).unique())
        self.rows += batch.height

    def all_systems(self) -> pl.Series | None:
        if not self.systems:
            return None
        return pl.concat(self.systems).unique(maintain_order=True)


def score_lazy(
    run: pl.LazyFrame,
    qrels: pl.DataFrame | pl.LazyFrame,
    measures: Sequence[Measure],
    options: Options,
    *,
    validate: bool,
    limit: int,
) -> pl.DataFrame:
    """Per-ranking values of a lazy run (see the module docstring); unsorted."""
    qrels_df = qrels.lazy().select(options.qrels_columns).collect()
    if validate:
        check_qrels_rows(qrels_df, options)
    budget = max(1, limit // PIECE_SHARE)
    seen = _Seen(options)
    held: list[pl.DataFrame] = []
    held_bytes = 0
    progress = _Progress()
    with tempfile.TemporaryDirectory(prefix="polars_rankeval-") as folder:
        spill: Spill | None = None
        batches = run.select(options.run_columns).collect_batches(chunk_size=BATCH_ROWS)
        for batch in _read_ahead(batches, 1):
            if validate:
                check_run_rows(batch, options, offset=seen.rows)
            seen.add(batch)
            progress.reading(seen.rows)
            if spill is not None:
                spill.add(batch)
                continue
            held.append(batch)
            held_bytes += batch.estimated_size()
            if held_bytes > budget:
                spill = Spill(Path(folder), options.query, BUCKETS, max(1, budget // 4))
                while held:  # one batch at a time, so that rows are never held twice
                    spill.add(held.pop(0))
                held_bytes = 0
        if options.missing == "error":
            run_queries = (
                pl.concat(seen.queries) if seen.queries else pl.Series([], dtype=pl.String)
            )
            raise_absent_queries(absent_queries(run_queries, qrels_df[options.query]))
        scorer = _Scorer(measures, options, validate, seen.all_systems(), budget, progress)
        if spill is None:
            run_df = pl.concat(held, rechunk=False) if held else _no_rows(run, options)
            pieces = [scorer.score(run_df, qrels_df)]
        else:
            spill.flush()
            pieces = list(scorer.score_spill(spill, qrels_df, SPLITS))
    progress.done()
    warn_unscored_queries(pl.concat([p.no_qrels[options.query].cast(pl.String) for p in pieces]))
    return pl.concat([p.scores for p in pieces], how="vertical_relaxed")


@dataclass(frozen=True)
class _Scorer:
    """Scores pieces of one lazy run: in memory, or bucket by bucket from a spill."""

    measures: Sequence[Measure]
    options: Options
    validate: bool
    systems: pl.Series | None
    budget: int
    progress: _Progress

    def score(self, run: pl.DataFrame, qrels: pl.DataFrame) -> Piece:
        """One in-memory piece (all the rows of its queries)."""
        return score_piece(run, qrels, self.measures, self.options,
                           check_duplicates=self.validate, systems=self.systems)  # fmt: skip

    def score_spill(self, spill: Spill, qrels: pl.DataFrame, splits: int) -> Iterator[Piece]:
        """Every bucket of ``spill``; one over the budget is split again (at most
        ``splits`` more times: a single query's rows can never be split)."""
        parts = split_by_bucket(qrels, self.options.query, spill.n_buckets, spill.seed)
        for b in range(spill.n_buckets):
            self.progress.scoring(b, spill.n_buckets)
            qrels_b = parts.get(b, qrels.clear())
            if not spill.files[b]:
                if self.options.missing == "zero" and qrels_b.height:
                    yield self.score(_empty_run(spill), qrels_b)
                continue
            if spill.size(b) > self.budget and splits > 0:
                inner = Spill(
                    spill.folder,
                    self.options.query,
                    BUCKETS,
                    max(1, self.budget // 4),
                    spill.seed + 1,
                )
                for path in list(spill.files[b]):
                    inner.add(pl.read_ipc(path))
                    path.unlink()
                inner.flush()
                yield from self.score_spill(inner, qrels_b, splits - 1)
                continue
            yield self.score(spill.read(b), qrels_b)


def _no_rows(run: pl.LazyFrame, options: Options) -> pl.DataFrame:
    """A zero-row run with the columns the engine reads."""
    return pl.DataFrame(schema=run.select(options.run_columns).collect_schema())


def _empty_run(spill: Spill) -> pl.DataFrame:
    """A zero-row run with the spilled columns' dtypes."""
    return pl.DataFrame(schema=spill.schema)


def _read_ahead(batches: Iterable[pl.DataFrame], row_groups: int) -> Iterator[pl.DataFrame]:
    """``batches``, read with Polars' Parquet read-ahead (``POLARS_ROW_GROUP_PREFETCH_SIZE``)
    set to ``row_groups`` unless the user has set it.

    The default reads many row groups ahead, which is most of the reader's
    memory (20M rows: 0.48 GiB, against 0.28 GiB one row group ahead, no
    slower on a local disk). The variable is read when the batches start.
    """
    name = "POLARS_ROW_GROUP_PREFETCH_SIZE"
    if name in os.environ:
        yield from batches
        return
    os.environ[name] = str(row_groups)
    try:
        yield from batches
    finally:
        os.environ.pop(name, None)


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
