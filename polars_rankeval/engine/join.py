"""Join: the run rows that have a qrels row, paired with it on (query, doc), exactly.

Both sides are hashed on (query, doc) (:func:`~polars_rankeval.validation.key_hash`).
The same hashes prove each side free of duplicate rows; the rows of equal hashes
are then paired, and each pair's doc ids compared (its queries by the caller,
:func:`polars_rankeval.engine.select.match_and_rank`), so that a hash collision can
never match two different documents.

Two ways of pairing, one result (the pairs in run row order). When a ranking is a
query (a one-system run) and both sides are checked for duplicates, the checks
sort each side by its (query, doc) hashes (:class:`HashOrder`), and the two sorted
sides are paired by a merge: Polars joins two columns flagged sorted by merging
them, in 20-35 ms for 9.7M run rows against 0.4M-1.9M qrels rows, where building
and probing a hash table of the qrels rows took 120-290 ms (the larger when Bpref
or infAP match every judged row). A run of many systems (checked on its (system,
query, doc) hashes) and unchecked inputs are paired by a hash join.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import polars as pl

from polars_rankeval import validation
from polars_rankeval.engine.plan import Options
from polars_rankeval.engine.rank import gather_sorted
from polars_rankeval.engine.shape import JUDGMENT_ROW
from polars_rankeval.validation import key_hash

ROW = "__rk_row"
"""A run row (UInt32), in the pairs (in their low 32 bits, UInt64, from a merge)."""
JUDGMENT = JUDGMENT_ROW
"""A qrels row (UInt32), in the pairs and in the judgments of
:class:`~polars_rankeval.engine.select.QrelsSide` (the shape's :data:`JUDGMENT_ROW`)."""
KEY = "__rk_key"
"""The top 32 bits of a row's hash (UInt64, the low bits 0), which :class:`HashOrder`
sorts on."""
_TOP = (1 << 64) - (1 << 32)
_LOW = np.uint64(0xFFFF_FFFF)


@dataclass(frozen=True)
class HashOrder:
    """Rows in the order of the top 32 bits of their 64-bit hashes: one sort of integers
    packing those bits over the row number (about as fast as a sort of the bare hashes).

    Rows whose top bits are equal are compared on all 64 (:meth:`distinct`); a pair
    of rows paired on them whose documents differ is dropped by the id check.

    Examples
    --------
    >>> hashes = np.array([3 << 32, 1 << 32, (3 << 32) + 5], dtype=np.uint64)
    >>> order = HashOrder.of(pl.Series(hashes))
    >>> (order.top >> np.uint64(32)).tolist(), (order.packed & _LOW).tolist()
    ([1, 3, 3], [1, 0, 2])
    >>> order.distinct(hashes)
    True
    """

    packed: np.ndarray
    """The top 32 bits of each row's hash over its row number (uint64), increasing."""
    top: np.ndarray
    """The top 32 bits alone (uint64, the low bits 0), increasing: the join key."""

    @classmethod
    def of(cls, hashes: pl.Series) -> HashOrder:
        """The order of the rows of ``hashes`` (UInt64, fewer than 2^32 rows)."""
        ordered = hashes.to_numpy() & np.uint64(_TOP)
        ordered |= np.arange(len(ordered), dtype=np.uint64)
        ordered.sort()  # numpy's: 10-35% faster than Polars' here, and without the GIL
        return cls(ordered, ordered & np.uint64(_TOP))

    def distinct(self, hashes: np.ndarray) -> bool:
        """Whether no two rows have equal ``hashes`` (uint64, by row).

        Equal hashes have equal top bits, so only the rows that share their top bits
        with a neighbour (about one in 900 at 9.7M rows) are compared on the whole hash.
        """
        shared = np.flatnonzero(self.top[1:] == self.top[:-1])
        rows = self.packed[np.union1d(shared, shared + 1)] & _LOW
        candidates = hashes[rows.astype(np.intp)]
        return len(np.unique(candidates)) == len(candidates)

    def frame(self, name: str, keep: np.ndarray | None = None) -> pl.DataFrame:
        """``KEY`` (flagged sorted) and ``name`` (the packed integer, whose low 32 bits are
        the row), for every row or those that ``keep`` (a mask by row) keeps."""
        frame = pl.DataFrame({KEY: self.top, name: self.packed})
        if keep is not None:  # Polars' filter: a third of the time of numpy's masks
            frame = frame.filter(pl.Series(keep[(self.packed & _LOW).astype(np.intp)]))
        return frame.with_columns(pl.col(KEY).set_sorted())


@dataclass(frozen=True)
class QrelsKeys:
    """What the run is joined with: the qrels' (query, doc) hashes and doc ids, which rows
    are wanted, and for a merge the wanted rows in hash order (:func:`qrels_keys`)."""

    hashes: pl.Series
    """The :func:`~polars_rankeval.validation.key_hash` of each qrels row's (query, doc)."""
    wanted: pl.Series | None
    """The qrels rows the run is matched against (of the lowest grade matched or more;
    None: every row)."""
    docs: pl.Series
    """The doc id of every qrels row, in one chunk: the matched pairs gather them in any
    order, which from a column of many chunks (one per Parquet row group) took 24 ms
    for 668k pairs, against 8 ms to copy the column and 6 ms to gather."""
    by_hash: pl.DataFrame | None = None
    """``KEY, JUDGMENT`` of the wanted rows in hash order, for a merge."""


def qrels_keys(qrels: pl.DataFrame, columns: Options, lowest: float, *, check: bool) -> QrelsKeys:
    """The qrels' part of the join (:class:`QrelsKeys`), for the grades ``lowest`` and up.

    ``check`` refuses duplicate (query, doc) rows, on the hashes (equal hashes: the
    exact check decides, and names the rows). Checked qrels are sorted by hash for
    the check when the run will be too (:func:`merges`), so that the two are merged.
    """
    hashes = qrels.select(key_hash([columns.query, columns.doc])).to_series().rechunk()
    wanted = None if lowest == -math.inf else qrels[columns.relevance] >= lowest
    docs = qrels[columns.doc].rechunk()
    order = HashOrder.of(hashes) if merges(columns, check) else None
    if check and not (
        validation.distinct(hashes) if order is None else order.distinct(hashes.to_numpy())
    ):
        validation.check_duplicates(qrels.lazy(), [columns.query, columns.doc], "qrels")
    if order is None:
        return QrelsKeys(hashes, wanted, docs)
    keep = None if wanted is None else wanted.to_numpy()
    return QrelsKeys(hashes, wanted, docs, order.frame(JUDGMENT, keep))


def merges(columns: Options, check: bool) -> bool:
    """Whether a run and its qrels are paired by a merge: when both are checked for
    duplicates and a ranking is a query (one system), so that the run's check sorts
    it by its (query, doc) hashes."""
    return check and list(columns.keys) == [columns.query]


def pairs(
    run: pl.DataFrame, columns: Options, join_keys: Callable[[], QrelsKeys], check: bool
) -> tuple[np.ndarray, np.ndarray] | None:
    """(run row, qrels row) of every run row whose (query, doc) hash is that of one of the
    wanted qrels rows, and whose doc id is that row's (int64, run rows increasing).

    None when, with ``check``, a (ranking, doc) may appear twice in the run (equal
    hashes: a duplicate, or a collision, for the exact check to decide and name
    the rows); the qrels' keys are then not asked for.
    """
    hashes = run.select(key_hash([columns.query, columns.doc])).to_series().rechunk()
    doc = run[columns.doc]
    order = None
    if merges(columns, check):
        order = HashOrder.of(hashes)
        if not order.distinct(hashes.to_numpy()):
            return None
    elif check:
        by_ranking = run.select(key_hash([*columns.keys, columns.doc])).to_series()
        if not validation.distinct(by_ranking):
            return None
    side = join_keys()
    if order is not None and side.by_hash is not None:  # the qrels sorted by hash too
        return _exact(doc, order.frame(ROW).join(side.by_hash, on=KEY), side, merged=True)
    return _exact(doc, _hash_join(hashes, side), side)


def _hash_join(run_hash: pl.Series, side: QrelsKeys) -> pl.DataFrame:
    """``ROW, JUDGMENT`` of the rows of equal hashes, by a hash join."""
    left = run_hash.alias("h").to_frame().with_row_index(ROW).lazy()
    indexed = side.hashes.alias("h").to_frame().with_row_index(JUDGMENT)
    right = indexed if side.wanted is None else indexed.filter(side.wanted)
    return left.join(right.lazy(), on="h").collect()  # the lazy join is the faster one


def _exact(
    run_doc: pl.Series, found: pl.DataFrame, side: QrelsKeys, *, merged: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """The pairs ``found`` (``ROW, JUDGMENT``) in run row order, those of different doc ids
    dropped.

    One sort of the pairs packed into integers (row numbers < 2^32). A hash join
    gives them as a hundred or so stretches in run row order (one a part of its
    work), which a merge sort joins: 10 ms for 1.36M pairs, against 37 ms for
    Polars' sort and 24 ms for numpy's quicksort, the faster for the pairs of a
    merge (``merged``), in hash order.
    """
    packed = (found[ROW].to_numpy().astype(np.uint64) & _LOW) << np.uint64(32)
    packed |= found[JUDGMENT].to_numpy().astype(np.uint64) & _LOW
    packed = np.sort(packed, kind="quicksort" if merged else "stable")
    rows = (packed >> np.uint64(32)).astype(np.int64)
    judgments = (packed & _LOW).astype(np.int64)
    same = (gather_sorted(run_doc, rows) == side.docs.gather(judgments)).to_numpy()
    return rows[same], judgments[same]
