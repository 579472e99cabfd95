"""Rank: trec_eval's order of every ranking of an in-memory run, from one sort.

Every run row gets one 64-bit integer packing its ranking's id (high bits), its
ordering value mapped to an order-preserving integer (middle bits, as many as
fit) and its row number (low bits). Those integers are sorted with nothing
carried along: the sorted array holds each position's row number, so a row's
rank is its sorted position minus the position where its ranking starts, plus
one. Rows whose packed value ties with a neighbour's (a true tie, or two values
closer than the bits kept) are then ordered exactly among their tie group: by
value, then doc id descending compared as strings (trec_eval's
``comp_sim_docno``). Only the rows whose rank is asked for pay for that.

The packing is split into slices worked on in parallel (numpy releases the
GIL). When each ranking's rows are contiguous, a slice holds whole rankings and
is sorted on its own, in place, the slices in parallel: at 9.7M rows in 37
slices, 98 ms against 217 ms for Polars' sort of the whole array on one thread
(134 ms one slice after the other: a slice's keys stay in cache). Otherwise the
whole array is sorted by numpy (187 ms). When another thread has the second core
(the join beside the sort), the slices are worked on one after the other
(``parallel=False`` in :func:`rank_order`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal

import numpy as np
import polars as pl

MAX_ROWS = 2**32 - 1
"""Rows of one in-memory piece at most: row numbers and ranking ids share 64 bits."""
_KEY_BITS = 64
_SLICE_ROWS = 1 << 18  # a slice's keys stay in cache while they are sorted
_SIGN = np.uint64(1 << 63)
_COMPARED_PER_MEMBER = 3
"""Comparisons per tie group member past which :meth:`TieBreak.places` sorts the members."""
_PAIRED = 4
"""Rows of a tie group up to which :meth:`TieBreak.group_places` compares every pair of
its members (6 comparisons for 4 rows) rather than sorting them."""
_NEAR = 8
"""Neighbours :meth:`RankOrder._spans` reads each way before a binary search."""
_DIRECT_ROWS = 500
"""Rows a chunk under which :func:`gather_sorted` gathers from the whole column."""

Spans = tuple[np.ndarray, np.ndarray]
"""Sorted-position ranges ``[lo, hi)`` of tie groups (see :meth:`RankOrder.ranked`)."""
_NO_SPANS: Spans = (np.zeros(0, np.int64), np.zeros(0, np.int64))


def ranking_ids(run: pl.DataFrame, keys: Sequence[str]) -> tuple[np.ndarray, bool]:
    """A dense ranking id per row (0, 1, ...), and whether each ranking's rows are contiguous.

    When they are (the usual layout) the ids number the stretches of equal
    keys in order, without hashing. Contiguity is checked on the first row of
    each stretch when there are few stretches (and when it fails, only those
    rows are coded: qrels in two blocks cost two rows a query), else by
    counting the rankings through hashed codes (:func:`hashed_codes`), which then
    serve as the ids if need be.

    Examples
    --------
    >>> run = pl.DataFrame({"query": ["b", "b", "a", "c"]})
    >>> ids, contiguous = ranking_ids(run, ["query"])
    >>> ids.tolist(), contiguous
    ([0, 0, 1, 2], True)
    >>> ids, contiguous = ranking_ids(run[[0, 2, 1, 3]], ["query"])
    >>> len(set(ids.tolist())), contiguous
    (3, False)
    """
    if run.height == 0:
        return np.zeros(0, np.uint32), True
    if run.height > 2 * _PEEK and _stretches(run.head(_PEEK), keys) > _PEEK // 2:
        codes = _codes(run, keys)  # shuffled rows (most likely): no run-length ids
        changes = int(np.count_nonzero(codes[1:] != codes[:-1]))
        return codes, changes + 1 == int(codes.max()) + 1
    firsts = np.zeros(run.height, bool)  # first row of a stretch of equal keys
    stretches = np.zeros(run.height, np.uint32)
    for k in keys:
        stretches = run.select(pl.col(k).rle_id()).to_series().to_numpy()
        firsts[1:] |= stretches[1:] != stretches[:-1]
    firsts[0] = True
    n_stretches = int(firsts.sum())
    if n_stretches <= run.height // 2:
        heads = run.select(keys).filter(firsts)
        if heads.is_duplicated().any():  # ids of the stretches' first rows, spread to the rest
            # each row's stretch: one key's run-length ids are that already
            stretch = stretches if len(keys) == 1 else np.cumsum(firsts, dtype=np.uint32) - 1
            return _codes(heads, keys)[stretch], False
    else:
        codes = _codes(run, keys)
        if int(codes.max()) + 1 != n_stretches:  # fewer rankings than stretches
            return codes, False
    if len(keys) == 1:
        return stretches.astype(np.uint32, copy=False), True
    return np.cumsum(firsts, dtype=np.uint32) - np.uint32(1), True


_PEEK = 4096
"""Rows :func:`ranking_ids` reads first: past half as many stretches of equal keys in
them, the rows are taken as shuffled (coded by their hashes at once)."""


def _stretches(run: pl.DataFrame, keys: Sequence[str]) -> int:
    """The number of stretches of equal ``keys`` in ``run``'s rows."""
    changed = pl.any_horizontal(pl.col(k).ne_missing(pl.col(k).shift(1)) for k in keys)
    return int(run.select(changed.fill_null(True).sum()).item())


def _codes(run: pl.DataFrame, keys: Sequence[str]) -> np.ndarray:
    """Dense ids (uint32) of the distinct ``keys`` values, in order of first appearance:
    :func:`hashed_codes` of a hash of each row's keys.

    Examples
    --------
    >>> _codes(pl.DataFrame({"q": ["b", "a", "b", "c"]}), ["q"]).tolist()
    [0, 1, 0, 2]
    """
    return hashed_codes(run, keys, run.select(keys).hash_rows(seed=0).to_numpy())


def hashed_codes(run: pl.DataFrame, keys: Sequence[str], hashes: np.ndarray) -> np.ndarray:
    """Dense ids (uint32) of the distinct ``keys`` values, in order of first appearance,
    from ``hashes`` (uint64, one a row; :func:`dense_ids`), checked exactly.

    Every row's keys are compared with those of its id's first row, so two values
    whose hashes collide are never merged: they are then coded by categorical codes
    (:func:`_categorical_codes`). At 2M shuffled rows the numbering itself takes
    40-50 ms for 2,000 or 20,000 distinct values (the categorical codes 50-90 ms, more
    with more values), and 0.1 s for 1M distinct values, where categorical codes take
    1.5 s.

    Examples
    --------
    >>> run = pl.DataFrame({"q": ["b", "a", "b", "c"]})
    >>> colliding = np.zeros(4, dtype=np.uint64)  # every row the same hash
    >>> hashed_codes(run, ["q"], colliding).tolist()
    [0, 1, 0, 2]
    """
    found = dense_ids(hashes)
    if found is not None:
        ids, first = found
        spread = pl.Series(first[ids])
        if all(bool(run[k].eq_missing(run[k].gather(spread)).all()) for k in keys):
            return ids
    return _categorical_codes(run, keys)


_MIX = [0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93]
"""Odd multipliers: each round of :func:`dense_ids` places the hashes by other bits."""
_SAMPLE = 1 << 16


def dense_ids(hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Dense ids (uint32) of the distinct ``hashes`` in order of first appearance, and the
    first row of each id; None if numpy did not keep the first of equal writes.

    An open table in numpy: each round writes every pending row's number into the
    slot its hash picks, the first row of a slot written last; a row whose slot holds
    a row of the same hash takes that row as its group's first, the others wait for
    the next round, placed by other bits of the hash in a table as large as they
    are many. Each round settles every slot's group: no sort, a few passes over the
    rows. The first table is sized by the distinct hashes of a sample of rows.

    Examples
    --------
    >>> ids, first = dense_ids(np.array([7, 3, 7, 9, 3], dtype=np.uint64))
    >>> ids.tolist(), first.tolist()
    ([0, 1, 0, 2, 1], [0, 1, 3])
    """
    n = len(hashes)
    index = np.int32 if n < 2**31 else np.int64
    rows: np.ndarray = np.arange(n, dtype=index)
    step = max(1, n // _SAMPLE)
    seen = len(np.unique(hashes[::step]))
    many = n if seen * 2 > len(hashes[::step]) else seen  # most rows differ: as many ids
    first_of: np.ndarray = rows  # replaced in the first round
    pending, pending_hashes = rows, hashes
    round_ = 0
    while len(pending):
        spread = 8 if round_ == 0 and many < n else 2  # slots per distinct hash
        bits = max(10, (spread * many).bit_length())
        mix = np.uint64(_MIX[round_ % len(_MIX)] + 2 * (round_ // len(_MIX)))
        slot = pending_hashes * mix
        slot >>= np.uint64(64 - bits)
        slot = slot.view(np.int64)  # under 2^bits: an index as it is (no cast by numpy)
        table = np.empty(1 << bits, index)
        table[slot[::-1]] = pending[::-1]  # the first row of a slot is written last
        candidate = table[slot]
        same = hashes[candidate] == pending_hashes
        if round_ == 0:
            first_of = candidate
        else:
            first_of[pending[same]] = candidate[same]
        waiting = np.flatnonzero(~same)
        pending, pending_hashes = pending[waiting], pending_hashes[waiting]
        many = len(pending)
        round_ += 1
    if not bool(np.all(first_of <= rows)):  # a later row kept: not the first
        return None
    first = np.flatnonzero(first_of == rows)
    dense = np.empty(n, np.uint32)
    dense[first] = np.arange(len(first), dtype=np.uint32)
    return dense[first_of], first


def _categorical_codes(run: pl.DataFrame, keys: Sequence[str]) -> np.ndarray:
    """Dense ids (uint32) of the distinct ``keys`` values: categorical codes."""
    ids: np.ndarray | None = None
    for k in keys:
        code = pl.col(k).cast(pl.String).cast(pl.Categorical(pl.Categories.random()))
        codes = run.select(code.to_physical()).to_series().to_numpy()
        if ids is None:
            ids = codes.astype(np.uint64)
            continue
        ids = ids * np.uint64(int(codes.max()) + 1) + codes  # one-to-one, not dense
    assert ids is not None
    if len(keys) == 1:
        return ids.astype(np.uint32)
    combined = pl.DataFrame({"c": ids})
    numbered = combined.unique(maintain_order=True).with_row_index("id")
    joined = combined.join(numbered, on="c", how="left", maintain_order="left")
    return joined["id"].to_numpy()


def slices(starts: np.ndarray, n: int, contiguous: bool) -> list[tuple[int, int]]:
    """Row ranges of about 2^18 rows to work on in parallel.

    With contiguous rankings a range holds whole rankings (it is cut at a
    ranking's first row, ``starts``), so sorting each range sorts the whole array.

    Examples
    --------
    >>> slices(np.array([0, 3]), 5, True)
    [(0, 5)]
    """
    targets = np.arange(_SLICE_ROWS, n, _SLICE_ROWS)
    if contiguous and len(starts):
        targets = starts[np.minimum(np.searchsorted(starts, targets), len(starts) - 1)]
    cuts = np.unique(np.concatenate([[0], targets, [n]]))
    return list(zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True))


def in_parallel(
    work: Callable[[int, int], object], parts: list[tuple[int, int]], *, parallel: bool = True
) -> list:
    """``work(start, stop)`` for every slice, on Polars' number of threads (one after the
    other without ``parallel``).

    The work is numpy, which releases the GIL: slices run truly in parallel.
    """
    if len(parts) <= 1 or not parallel:
        return [work(*p) for p in parts]
    with ThreadPoolExecutor(pl.thread_pool_size()) as pool:
        return list(pool.map(lambda bounds: work(*bounds), parts))


def descending_key(values: np.ndarray) -> np.ndarray:
    """uint64 integers whose ascending order is float64 ``values``' descending order.

    A float's bits read as an unsigned integer are in float order once
    negative floats are inverted and positive ones get the sign bit; the
    complement of that, ``raw ^ 0x7FF...F`` for a positive float and ``raw``
    for a negative one, is in descending order. -0.0 is taken as 0.0.

    Examples
    --------
    >>> keys = descending_key(np.array([2.5, -1.0, float("inf"), 0.0, -0.0]))
    >>> np.argsort(keys, kind="stable").tolist()  # inf, 2.5, 0.0, -0.0, -1.0
    [2, 0, 3, 4, 1]
    """
    raw = (values + 0.0).view(np.uint64)
    flip = raw.view(np.int64) >> 63  # -1 for a negative float, 0 otherwise
    np.invert(flip, out=flip)
    descending = flip.view(np.uint64)
    descending >>= np.uint64(1)
    descending ^= raw
    return descending


def order_key(values: np.ndarray, *, descending: bool) -> np.ndarray:
    """uint64 integers in rank order (ascending) for float or integer ``values``.

    Floats compare as doubles (-0.0 as 0.0), integers exactly, whatever their
    size: int64 scores above 2^53 (nanosecond timestamps) keep their order.

    Examples
    --------
    >>> big = np.array([2**60 + 1, 2**60, -5], dtype=np.int64)
    >>> np.argsort(order_key(big, descending=True)).tolist()
    [0, 1, 2]
    >>> np.argsort(order_key(np.array([3, 1, 2], np.uint32), descending=False)).tolist()
    [1, 2, 0]
    """
    if values.dtype.kind == "f":
        key = descending_key(values.astype(np.float64, copy=False))
        return key if descending else ~key
    if values.dtype.kind == "i":
        key = values.astype(np.int64, copy=False).view(np.uint64) ^ _SIGN
    else:
        key = values.astype(np.uint64, copy=False).copy()
    return ~key if descending else key


def fit(low: int, high: int, bits: int) -> int:
    """Right shift that brings integers in [low, high] minus low below 2**bits.

    Applied to :func:`order_key` keys, ``(key - low) >> shift`` is monotone:
    distinct values may share an integer (a tie, broken exactly later), never swap.

    Examples
    --------
    >>> fit(0, 1000, 8)  # 1000 needs 10 bits
    2
    """
    return max(0, (high - low).bit_length() - bits)


def sort_order(keys: np.ndarray) -> np.ndarray:
    """The permutation (int64) that sorts distinct integer ``keys``.

    When each key less the smallest and a row number fit in 64 bits together, one
    numpy sort of those integers (the row in the low bits) gives it (2M keys: 53 ms,
    200k keys: 4 ms); otherwise Polars' sort (84 ms and 7 ms; numpy's stable argsort
    took 240 ms at 2M).

    Examples
    --------
    >>> sort_order(np.array([30, 10, 20], dtype=np.uint64)).tolist()
    [1, 2, 0]
    >>> sort_order(np.array([-2**62, 2**62, 0], dtype=np.int64)).tolist()
    [0, 2, 1]
    """
    n = len(keys)
    if n == 0:
        return np.zeros(0, np.int64)
    ordered = keys.astype(np.uint64) if keys.dtype.kind == "u" else None
    if ordered is None:  # signed: the sign bit flipped keeps their order as unsigned
        ordered = keys.astype(np.int64).view(np.uint64) ^ _SIGN
    low = ordered.min()
    row_bits = max(1, (n - 1).bit_length())
    if int(ordered.max() - low).bit_length() + row_bits > _KEY_BITS:
        return pl.Series(keys).arg_sort().to_numpy().astype(np.int64, copy=False)
    packed = ordered - low
    packed <<= np.uint64(row_bits)
    packed |= np.arange(n, dtype=np.uint64)
    packed.sort()
    packed &= np.uint64((1 << row_bits) - 1)
    return packed.view(np.int64)


def gather_sorted(column: pl.Series, rows: np.ndarray, *, few: int = _DIRECT_ROWS) -> pl.Series:
    """``column[rows]`` for increasing ``rows``, chunk by chunk (unless under ``few`` rows
    a chunk).

    A frame read from Parquet holds many chunks per column, and a gather from
    such a column first copies it into one; gathering from each chunk its
    share of the (sorted) rows copies only those. A gather from each chunk costs
    about 0.2 ms, so few rows are gathered from the whole column (as Polars does
    without a copy then: 6 ms for 10,000 rows of a 79-chunk column of 9.7M strings,
    against 17 ms chunk by chunk).

    Examples
    --------
    >>> column = pl.concat([pl.Series(["a", "b"]), pl.Series(["c", "d"])], rechunk=False)
    >>> gather_sorted(column, np.array([1, 2, 3]), few=0).to_list()
    ['b', 'c', 'd']
    """
    chunks = column.get_chunks()
    if len(chunks) == 1 or len(rows) < few * len(chunks):
        return column.gather(rows)
    ends = np.cumsum([len(c) for c in chunks])
    cuts = np.searchsorted(rows, ends)
    parts = [
        chunk[rows[lo:hi] - (end - len(chunk))]  # [], not gather: a third of its cost a call
        for chunk, end, lo, hi in zip(chunks, ends, [0, *cuts[:-1]], cuts, strict=True)
    ]
    return pl.concat(parts)


def gather_rows(frame: pl.DataFrame, rows: np.ndarray) -> pl.DataFrame:
    """``frame[rows]`` for rows in any order, gathered chunk by chunk in row order."""
    by_row = np.argsort(rows, kind="stable")
    picked = pl.DataFrame([gather_sorted(frame[c], rows[by_row]) for c in frame.columns])
    return picked[np.argsort(by_row, kind="stable")]


@dataclass(frozen=True)
class Groups:
    """Where the rows of each ranking are: ids per row, counts, sorted starts."""

    ids: np.ndarray
    """Ranking id of each row (uint32, dense from 0)."""
    contiguous: bool
    """Each ranking's rows are contiguous in the frame."""
    counts: np.ndarray
    """Rows of each ranking."""
    starts: np.ndarray
    """Position of each ranking's first row once rows are sorted by ranking."""

    @classmethod
    def of(cls, run: pl.DataFrame, keys: Sequence[str]) -> Groups:
        ids, contiguous = ranking_ids(run, keys)
        if not len(ids):
            return cls(ids, contiguous, np.zeros(0, np.int64), np.zeros(0, np.int64))
        if contiguous:  # ids 0, 0, 1, ...: each ranking starts where the id changes
            starts = np.concatenate([[0], np.flatnonzero(ids[1:] != ids[:-1]) + 1])
            return cls(ids, contiguous, np.diff(starts, append=len(ids)), starts)
        counts = np.bincount(ids)
        return cls(ids, contiguous, counts, np.cumsum(counts) - counts)

    @property
    def n(self) -> int:
        """Number of rankings."""
        return len(self.counts)

    def slices(self) -> list[tuple[int, int]]:
        """Row ranges for parallel work (whole rankings when contiguous)."""
        return slices(self.starts, len(self.ids), self.contiguous)


def span_positions(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct spans ``[lo, hi)`` (a span repeated, same ``lo``, counted once): each
    one's size, and all their positions, span after span.

    Examples
    --------
    >>> sizes, positions = span_positions(np.array([5, 1, 5]), np.array([7, 3, 7]))
    >>> sizes.tolist(), positions.tolist()
    ([2, 2], [1, 2, 5, 6])
    """
    starts, first = np.unique(lo, return_index=True)
    sizes = hi[first] - starts
    offsets = np.cumsum(sizes) - sizes
    return sizes, np.repeat(starts - offsets, sizes) + np.arange(sizes.sum())


@dataclass(frozen=True)
class TieBreak:
    """Exact order within a group of rows whose packed keys are equal.

    By ordering value (descending for scores, ascending for ranks), then doc
    id descending compared as strings byte by byte, as trec_eval does
    (``by_doc=False``: then by row number, the run's input order).
    """

    values: np.ndarray
    """The exact ordering value of every row (float64 or integer)."""
    descending: bool
    doc: pl.Series
    """The run's doc id column."""
    by_doc: bool = True
    """Equal values ordered by doc id descending (trec_eval), else in row order."""

    def places(
        self, packed: np.ndarray, mask: np.uint64, lo: np.ndarray, hi: np.ndarray, pos: np.ndarray
    ) -> np.ndarray:
        """Place (0 = first) within its tie group of the row at each sorted position
        ``pos``, whose group spans ``lo:hi`` of the sorted ``packed`` keys (whose low
        bits, ``mask``, are row numbers).

        A row's place is the number of its group's members that come before it: each
        row is compared with every member of its group, the members' doc ids gathered
        once. When the rows asked for are many in their groups (so many comparisons),
        every member is put in order instead (:meth:`group_places`).

        Examples
        --------
        >>> tie = TieBreak(np.array([1.0, 1.0, 2.0]), descending=True,
        ...                doc=pl.Series(["a", "b", "c"]))
        >>> packed = np.array([0, 1, 2 | 4], dtype=np.uint64)  # rows 0, 1 tie; then row 2
        >>> tie.places(packed, np.uint64(3), np.array([0, 0]), np.array([2, 2]),
        ...            np.array([0, 1])).tolist()  # b before a: doc id descending
        [1, 0]
        """
        starts, first, group = np.unique(lo, return_index=True, return_inverse=True)
        sizes = hi[first] - starts
        offsets = np.cumsum(sizes) - sizes
        n_members = int(sizes.sum())
        positions = np.repeat(starts - offsets, sizes) + np.arange(n_members)
        members = (packed[positions] & mask).astype(np.int64)  # group after group
        own = offsets[group] + pos - lo  # each row's index among the members
        compared = hi - lo - 1  # each row against every other member of its group
        if int(compared.sum()) > _COMPARED_PER_MEMBER * n_members:
            return self.group_places(members, sizes)[own]
        firsts = np.cumsum(compared) - compared
        k = np.arange(int(compared.sum())) - np.repeat(firsts, compared)  # 0, 1, ... a row
        k += k >= np.repeat(pos - lo, compared)  # skip the row itself
        at = np.repeat(offsets[group], compared) + k
        ahead = self._ahead(members, at, np.repeat(own, compared))
        return np.add.reduceat(ahead, firsts) if len(ahead) else np.zeros(len(pos), np.int64)

    def _ahead(self, members: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Whether member ``a[i]`` comes before member ``b[i]`` (indices into ``members``,
        rows of one tie group): by value, then doc id descending compared as strings
        (or row order). The members' doc ids are gathered once, in row order, when two
        of them have equal values."""
        value = self.values[members]
        value_a, value_b = value[a], value[b]
        same = value_a == value_b
        before = value_a > value_b if self.descending else value_a < value_b
        if not bool(same.any()):
            return before
        a, b = a[same], b[same]
        if self.by_doc:
            docs, at = self._doc_ids(members)
            later = (docs.gather(at[a]) > docs.gather(at[b])).to_numpy()
        else:
            later = members[a] < members[b]
        before[same] = later
        return before

    def _doc_ids(self, rows: np.ndarray) -> tuple[pl.Series, np.ndarray]:
        """The doc ids of ``rows`` as strings in one chunk, and where each row's id is in
        it: the doc column itself when it is one chunk of strings, else the rows' ids
        gathered chunk by chunk in row order (a gather from many chunks copies them).

        Examples
        --------
        >>> tie = TieBreak(np.zeros(3), descending=True, doc=pl.Series(["a", "b", "c"]))
        >>> docs, at = tie._doc_ids(np.array([2, 0]))
        >>> docs.gather(at).to_list()
        ['c', 'a']
        """
        if self.doc.n_chunks() == 1 and self.doc.dtype == pl.String:
            return self.doc, rows
        by_row = sort_order(rows)
        docs = gather_sorted(self.doc, rows[by_row]).cast(pl.String).rechunk()
        at = np.empty(len(rows), np.int64)
        at[by_row] = np.arange(len(rows))
        return docs, at

    def group_places(self, rows: np.ndarray, sizes: np.ndarray) -> np.ndarray:
        """Place (0 = first) of each of ``rows`` within its tie group, the rows listed
        group after group (``sizes``): :meth:`places` of every member of known groups.

        Examples
        --------
        >>> tie = TieBreak(np.array([1.0, 1.0, 2.0, 1.0]), descending=True,
        ...                doc=pl.Series(["a", "b", "c", "d"]))
        >>> tie.group_places(np.array([0, 1, 3, 2]), np.array([3, 1])).tolist()
        [2, 1, 0, 0]
        >>> tie.group_places(np.array([0, 3, 1, 2]), np.array([2, 2])).tolist()  # pairs
        [1, 0, 1, 0]
        """
        offsets = np.cumsum(sizes) - sizes
        small = (sizes >= 2) & (sizes <= _PAIRED)  # most tie groups: two or three rows
        if not small.any():
            return self._sorted_places(rows, sizes, offsets)
        place = np.zeros(len(rows), np.int64)
        value = self.values[rows]
        docs: list[tuple[pl.Series, np.ndarray]] = []  # the rows' doc ids, read once

        def doc_ids() -> tuple[pl.Series, np.ndarray]:
            if not docs:
                docs.append(self._doc_ids(rows))
            return docs[0]

        for size in np.unique(sizes[small]).tolist():  # a few sizes, each its pairs at once
            first, second = np.triu_indices(size, 1)  # every pair of members, once
            a = (offsets[sizes == size][:, None] + first).ravel()
            b = (offsets[sizes == size][:, None] + second).ravel()
            a_first = self._before(rows, value, a, b, doc_ids)
            # a member's place: how many members of its group come before it
            place += np.bincount(np.where(a_first, b, a), minlength=len(rows))
        rest = ~small
        if rest.any():
            listed = np.flatnonzero(np.repeat(rest, sizes))
            sizes = sizes[rest]
            place[listed] = self._sorted_places(rows[listed], sizes, np.cumsum(sizes) - sizes)
        return place

    def _before(
        self,
        rows: np.ndarray,
        value: np.ndarray,
        a: np.ndarray,
        b: np.ndarray,
        doc_ids: Callable[[], tuple[pl.Series, np.ndarray]],
    ) -> np.ndarray:
        """Whether ``rows[a[i]]`` comes before ``rows[b[i]]`` (rows of one tie group, whose
        ordering values are ``value``): by value, then doc id descending compared as
        strings (or row order). Only the pairs of equal values read their doc ids (none
        when the packed keys tie values that differ, as distinct scores do past the bits
        kept), from ``doc_ids`` (:meth:`_doc_ids` of ``rows``)."""
        value_a, value_b = value[a], value[b]
        same = value_a == value_b
        before = value_a > value_b if self.descending else value_a < value_b
        if not self.by_doc:
            before[same] = rows[a[same]] < rows[b[same]]
            return before
        equal = np.flatnonzero(same)
        if not len(equal):
            return before
        a, b = a[equal], b[equal]
        docs, at = doc_ids()
        doc_a, doc_b = docs.gather(at[a]), docs.gather(at[b])
        compared = doc_a > doc_b  # null for a missing doc id: not later
        later = (compared.fill_null(False) if compared.has_nulls() else compared).to_numpy()
        # a doc id twice in a ranking (an unchecked run): the later row first, a total order
        # (group_places lists a pair in row order: then no pair is compared again)
        flipped = np.flatnonzero(rows[a] > rows[b])
        if len(flipped):
            index = pl.Series(flipped)
            same_doc = doc_a.gather(index) == doc_b.gather(index)
            later[flipped] |= same_doc.fill_null(False).to_numpy()
        before[equal] = later
        return before

    def _sorted_places(
        self, rows: np.ndarray, sizes: np.ndarray, offsets: np.ndarray
    ) -> np.ndarray:
        """:meth:`group_places` by one sort of the rows of every group."""
        by_row = sort_order(rows)  # distinct row numbers
        in_row_order = rows[by_row]
        group = np.repeat(np.arange(len(sizes)), sizes)[by_row]
        ordered = self._ordered(group, in_row_order, _uniform(self.values[rows], sizes))
        place = np.empty(len(rows), np.int64)  # place of each row, in row order
        place[ordered] = np.arange(len(ordered)) - np.repeat(offsets, sizes)
        listed = np.empty(len(rows), np.int64)
        listed[by_row] = place
        return listed

    def _ordered(self, group: np.ndarray, rows: np.ndarray, uniform: bool) -> np.ndarray:
        """Indices of ``rows`` (increasing row numbers, each with its ``group``) in tie
        group order, each group's rows by value, then doc id descending (or row).

        ``uniform``: every group's rows have one value (true ties, the usual case), so
        the sort skips the values (one key less to compare).
        """
        tied = pl.DataFrame(
            {"group": group, "row": rows, "value": self.values[rows], "at": np.arange(len(rows))}
        )
        if self.by_doc and not uniform:  # the values may leave no tie for the doc ids
            at = tied.sort(["group", "value"], descending=[False, self.descending])["at"]
            order = at.to_numpy()
            g, v = group[order], tied["value"].to_numpy()[order]
            if not bool(np.any((g[1:] == g[:-1]) & (v[1:] == v[:-1]))):
                return order
        if self.by_doc:  # one chunk: a sort of many chunks costs twice as much
            doc = gather_sorted(self.doc, rows).cast(pl.String).rechunk()
            tied = tied.with_columns(doc=doc)
        last = "doc" if self.by_doc else "row"
        by, descending = ["group", last], [False, self.by_doc]
        if not uniform:
            by, descending = ["group", "value", last], [False, self.descending, self.by_doc]
        return tied.sort(by, descending=descending)["at"].to_numpy()


def _same_as_next(packed: np.ndarray, mask: np.uint64) -> np.ndarray:
    """Whether each packed key but the last equals the next in all but its row bits
    (``mask``): their exclusive or is at most the mask. Worked out slice by slice, so
    that each slice's exclusive or stays in cache (a whole column of it is 8 bytes a row
    of fresh memory).

    Examples
    --------
    >>> _same_as_next(np.array([4, 5, 8, 13], np.uint64), np.uint64(3)).tolist()
    [True, False, False]
    """
    same = np.empty(max(len(packed) - 1, 0), bool)
    for start in range(0, len(same), _SLICE_ROWS // 4):
        stop = min(start + _SLICE_ROWS // 4, len(same))
        xor = np.bitwise_xor(packed[start + 1 : stop + 1], packed[start:stop])
        np.less_equal(xor, mask, out=same[start:stop])
    return same


def _uniform(values: np.ndarray, sizes: np.ndarray) -> bool:
    """Whether each group of ``values`` (listed group after group, ``sizes``) holds one value.

    Examples
    --------
    >>> _uniform(np.array([1.0, 1.0, 2.0]), np.array([2, 1]))
    True
    >>> _uniform(np.array([1.0, 2.0]), np.array([2]))
    False
    """
    if len(values) < 2:
        return True
    same = values[1:] == values[:-1]
    same[(np.cumsum(sizes) - 1)[:-1]] = True  # a group's last value and the next group's first
    return bool(same.all())


@dataclass(frozen=True)
class Moves:
    """The rows of a run's tie groups and their places in rank order
    (:meth:`RankOrder.ordered`)."""

    rows: np.ndarray
    """The rows (int64), group after group, each group's in row order."""
    places: np.ndarray
    """The place of each in rank order (int64; without ties, a row's place is its sorted
    position)."""


_NO_MOVES = Moves(np.zeros(0, np.int64), np.zeros(0, np.int64))


@dataclass(frozen=True)
class Ordered:
    """Every row of a run in rank order (:meth:`RankOrder.ordered`)."""

    by_rank: np.ndarray
    """The row at each place (uint32): ranking by ranking in id order, each in rank
    order, so that the i-th has rank :meth:`RankOrder.sorted_ranks` ``[i]``."""
    position: np.ndarray
    """Each row's sorted position (:attr:`RankOrder.position`)."""
    moves: Moves
    """The tie groups' rows, whose places differ from their sorted positions."""

    def places_of(self, rows: np.ndarray) -> np.ndarray:
        """The place (int64) of each of ``rows`` in :attr:`by_rank`: its sorted position,
        or its tie group's place for it.

        Examples
        --------
        >>> ordered = Ordered(np.array([1, 0, 2], np.uint32), np.array([0, 1, 2], np.uint32),
        ...                   Moves(np.array([0, 1]), np.array([1, 0])))
        >>> ordered.places_of(np.array([2, 0])).tolist()
        [2, 1]
        """
        if not len(self.moves.rows):
            return self.position[rows].astype(np.int64)
        place = self.position.copy()  # a copy (4 bytes a row), not a search of the moves
        place[self.moves.rows] = self.moves.places
        return place[rows].astype(np.int64)


@dataclass(frozen=True)
class RankOrder:
    """Every row's place in trec_eval order: :meth:`ranks` of any rows.

    ``packed`` holds the sorted (ranking | order key | row number) integers;
    ``position[row]`` is the row's sorted position. ``tie_break`` is None when
    the row order itself is the rank order (``order="presorted"``).
    """

    groups: Groups
    packed: np.ndarray
    row_bits: int
    position: np.ndarray
    tie_break: TieBreak | None

    @property
    def _mask(self) -> np.uint64:
        return np.uint64((1 << self.row_bits) - 1)

    def ranks(self, rows: np.ndarray) -> np.ndarray:
        """trec_eval rank (1 = top) of each of ``rows`` (int64).

        A row's rank is its sorted position minus its ranking's first position,
        plus one, unless its packed key ties with a neighbour's: then it is the
        tie group's first rank plus the row's place in the group.
        """
        return self.ranked(rows)[0]

    def ranked(self, rows: np.ndarray) -> tuple[np.ndarray, Spans]:
        """The :meth:`ranks` of ``rows``, and the spans of the tie groups they fall in: the
        sorted positions ``[lo, hi)`` of the group of each tied row (one per tied row)."""
        groups, packed = self.groups, self.packed
        pos = self.position[rows].astype(np.int64)
        ranks = pos - groups.starts[groups.ids[rows]] + 1
        tied = self._tied(pos)
        if tied is None or not tied.any():
            return ranks, _NO_SPANS
        lo, hi = self._spans(pos[tied])
        assert self.tie_break is not None  # rows tie only when a tie break is needed
        places = self.tie_break.places(packed, self._mask, lo, hi, pos[tied])
        ranks[tied] = lo - groups.starts[groups.ids[rows[tied]]] + 1 + places
        return ranks, (lo, hi)

    def all_ranks(self) -> np.ndarray:
        """:meth:`ranks` of every row (int64, in row order), read off the sorted keys in
        their order: the tie groups are the stretches of equal packed keys, found by
        comparing each key with the next, where :meth:`ranks` of given rows reads two
        neighbours of each at random and searches for its group (at 2M rows, 25 ms
        against 200 ms).

        Examples
        --------
        >>> run = pl.DataFrame({"query": ["q"] * 4, "doc": ["a", "b", "c", "d"],
        ...                     "score": [1.0, 2.0, 1.0, 3.0]})
        >>> order = rank_order(Groups.of(run, ["query"]), run["score"].to_numpy(),
        ...     TieBreak(run["score"].to_numpy(), descending=True, doc=run["doc"]),
        ...     descending=True)
        >>> order.all_ranks().tolist()  # the tie of a and c: doc id descending
        [4, 2, 3, 1]
        """
        rows, in_rank_order = self.in_rank_order()
        ranks = np.empty(len(rows), np.int64)
        ranks[in_rank_order] = self.sorted_ranks()
        return ranks

    def sorted_ranks(self) -> np.ndarray:
        """The rank (int64) at each sorted position: its place in its ranking, plus one
        (the rankings lie one after the other, in id order)."""
        groups, n = self.groups, len(self.packed)
        return np.arange(1, n + 1, dtype=np.int64) - np.repeat(groups.starts, groups.counts)

    def in_rank_order(self) -> tuple[np.ndarray, np.ndarray]:
        """(the row at each sorted position, the row at each rank): two int64 arrays of
        every row, ranking by ranking (in id order), the second with each tie group in
        its exact order, so that its i-th row has rank :meth:`sorted_ranks` ``[i]``.

        The tie groups are the stretches of equal packed keys, found by comparing each
        key with the next; only their rows are put in order
        (:meth:`TieBreak.group_places`). Neither a sort of every row nor a scatter
        by rank is needed: :func:`polars_rankeval.rank_run` gives its rows in this
        order (:func:`polars_rankeval.judge` in that of :meth:`ordered`, the same).

        Examples
        --------
        >>> run = pl.DataFrame({"query": ["q"] * 4, "doc": ["a", "b", "c", "d"],
        ...                     "score": [1.0, 2.0, 1.0, 3.0]})
        >>> order = rank_order(Groups.of(run, ["query"]), run["score"].to_numpy(),
        ...     TieBreak(run["score"].to_numpy(), descending=True, doc=run["doc"]),
        ...     descending=True)
        >>> order.in_rank_order()[1].tolist()  # d, b, then c before a (doc id descending)
        [3, 1, 2, 0]
        """
        rows = (self.packed & self._mask).view(np.int64)  # the row at each sorted position
        moves = self._tie_moves()
        if moves is None:
            return rows, rows
        by_rank = rows.copy()
        by_rank[moves.places] = moves.rows
        return rows, by_rank

    def ordered(self) -> Ordered:
        """Every row in rank order, as the second array of :meth:`in_rank_order` (uint32, and
        without the first array of sorted rows: one pass over the packed keys), and the
        tie groups' rows put in order, whose places differ from their sorted positions.

        Examples
        --------
        >>> run = pl.DataFrame({"query": ["q"] * 4, "doc": ["a", "b", "c", "d"],
        ...                     "score": [1.0, 2.0, 1.0, 3.0]})
        >>> order = rank_order(Groups.of(run, ["query"]), run["score"].to_numpy(),
        ...     TieBreak(run["score"].to_numpy(), descending=True, doc=run["doc"]),
        ...     descending=True)
        >>> ordered = order.ordered()
        >>> ordered.by_rank.tolist(), ordered.places_of(np.array([0, 2])).tolist()
        ([3, 1, 2, 0], [3, 2])
        """
        by_rank = np.empty(len(self.packed), np.uint32)  # rows < 2^32: one pass, no temporary
        np.bitwise_and(self.packed, self._mask, out=by_rank, casting="unsafe")
        moves = self._tie_moves()
        if moves is None:
            return Ordered(by_rank, self.position, _NO_MOVES)
        by_rank[moves.places] = moves.rows
        return Ordered(by_rank, self.position, moves)

    def _tie_moves(self) -> Moves | None:
        """The rows of every tie group and their places in rank order (None: no row ties).

        The tie groups are the stretches of equal packed keys: two neighbouring keys
        differ only in their row bits when their exclusive or is at most the row mask.
        """
        packed, n = self.packed, len(self.packed)
        if self.tie_break is None or n < 2:
            return None
        same = _same_as_next(packed, self._mask)
        if not bool(same.any()):
            return None
        tied = np.zeros(n, bool)
        tied[1:] |= same
        tied[:-1] |= same
        at = np.flatnonzero(tied)
        opens = np.ones(len(at), bool)  # a tie group's first position
        opens[1:] = ~same[at[1:] - 1]
        sizes = np.diff(np.append(np.flatnonzero(opens), len(at)))
        rows = (packed[at] & self._mask).view(np.int64)
        places = self.tie_break.group_places(rows, sizes)
        return Moves(rows, np.repeat(at[opens], sizes) + places)

    def ranks_beside(self, rows: np.ndarray, spans: Spans, depth: int | None) -> np.ndarray:
        """Ranks of ``rows`` (int64) exact enough to compare them with the rows ranked by
        :meth:`ranked` (whose tie groups are ``spans``) and to cut them at ``depth``.

        A row's sorted position orders it exactly against every row outside its tie
        group. So each row gets the rank of its position, and only the rows that fall
        in one of ``spans``, or in the tie group across a ranking's ``depth`` cut, get
        their exact rank: the rows that a measure reads only as counts (how many lie
        above each row ranked) skip the neighbour reads and tie breaks of
        :meth:`ranks`, which cost a cache miss or more a row.
        """
        groups = self.groups
        pos = self.position[rows].astype(np.int64)
        ranks = pos - groups.starts[groups.ids[rows]] + 1
        if self.tie_break is None or not len(rows):
            return ranks
        lo, hi = spans
        if depth is not None:
            cut_lo, cut_hi = self._cut_spans(depth)
            lo, hi = np.concatenate([lo, cut_lo]), np.concatenate([hi, cut_hi])
        if not len(lo):
            return ranks
        inside = np.zeros(len(self.packed), bool)  # the sorted positions in a span
        inside[span_positions(lo, hi)[1]] = True
        exact = np.flatnonzero(inside[pos])
        if len(exact):
            ranks[exact] = self.ranks(rows[exact])
        return ranks

    def _tied(self, pos: np.ndarray) -> np.ndarray | None:
        """Whether the packed key at each sorted position ``pos`` equals a neighbour's
        (None: no tie break, the packed keys are distinct)."""
        packed, n = self.packed, len(self.packed)
        if self.tie_break is None or n < 2:
            return None
        bits = np.uint64(self.row_bits)
        key = packed[pos] >> bits
        # the neighbours' keys, each row its own neighbour at either end of the array
        before = (packed[np.maximum(pos - 1, 0)] >> bits) == key
        after = (packed[np.minimum(pos + 1, n - 1)] >> bits) == key
        return (before & (pos > 0)) | (after & (pos < n - 1))

    def _spans(self, pos: np.ndarray) -> Spans:
        """The sorted positions ``[lo, hi)`` of the rows whose packed key is that at ``pos``.

        Each end is first looked for among the :data:`_NEAR` positions next to ``pos``
        (a tie group is mostly a few rows: reads of neighbouring memory), then, for the
        groups larger than that, by a binary search of the whole array.
        """
        packed, bits = self.packed, np.uint64(self.row_bits)
        key = packed[pos] >> bits
        ends = []
        sides: tuple[tuple[int, Literal["left", "right"]], ...] = ((-1, "left"), (1, "right"))
        for step, side in sides:
            end = pos.copy()  # the last position of the key found so far, this way
            open_ = np.arange(len(pos))
            for _ in range(_NEAR):
                nxt = end[open_] + step
                inside = (nxt >= 0) & (nxt < len(packed))
                same = np.zeros(len(open_), bool)
                same[inside] = (packed[nxt[inside]] >> bits) == key[open_[inside]]
                open_ = open_[same]
                end[open_] += step
                if not len(open_):
                    break
            if len(open_):  # groups larger than the neighbours read: a binary search
                group = key[open_] << bits
                found = np.searchsorted(packed, group if step < 0 else group | self._mask, side)
                end[open_] = found if step < 0 else found - 1
            ends.append(end if step < 0 else end + 1)
        return ends[0], ends[1]

    def _cut_spans(self, depth: int) -> Spans:
        """The :meth:`_spans` of the tie groups that hold both the rows at rank ``depth``
        and ``depth + 1`` of a ranking."""
        groups, packed, bits = self.groups, self.packed, np.uint64(self.row_bits)
        last = (groups.starts + depth - 1)[groups.counts > depth].astype(np.int64)
        across = (packed[last] >> bits) == (packed[last + 1] >> bits)
        return self._spans(last[across])

    def tie_spans(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """First and last rank (int64) of the tie group of each of ``rows``: the rows of
        its ranking with its exact ordering value (the row alone for
        ``order="presorted"``)."""
        if self.tie_break is None:
            ranks = self.ranks(rows)
            return ranks, ranks
        frame = pl.DataFrame({"ranking": self.groups.ids, "value": self.tie_break.values})
        value, by = pl.col("value"), "ranking"
        desc = self.tie_break.descending
        spans = frame.select(
            first=value.rank("min", descending=desc).over(by).cast(pl.Int64),
            last=value.rank("max", descending=desc).over(by).cast(pl.Int64),
        )
        return spans["first"].to_numpy()[rows], spans["last"].to_numpy()[rows]

    def first_rows(self) -> np.ndarray:
        """The first row (by sorted position) of each ranking (int64)."""
        return (self.packed[self.groups.starts] & self._mask).astype(np.int64)


def _positions(
    packed: np.ndarray, row_bits: int, parts: list[tuple[int, int]], *, parallel: bool = True
) -> np.ndarray:
    """The inverse permutation of the sorted row numbers: each row's sorted position."""
    n = len(packed)
    mask = np.uint64((1 << row_bits) - 1)
    position = np.empty(n, np.uint32)  # n <= MAX_ROWS

    def place(start: int, stop: int) -> None:
        rows_here = (packed[start:stop] & mask).astype(np.intp)
        position[rows_here] = np.arange(start, stop, dtype=np.uint32)

    in_parallel(place, parts, parallel=parallel)  # a permutation: disjoint entries
    return position


def rank_order(
    groups: Groups,
    values: np.ndarray | None,
    tie_break: TieBreak | None,
    *,
    descending: bool,
    parallel: bool = True,
) -> RankOrder:
    """Sort every row by (ranking, :func:`order_key` of ``values``).

    ``values`` are the exact ordering values (higher first with ``descending``),
    or None for ``order="presorted"`` (with ``tie_break`` None: rows keep their
    order within a ranking). The key gets the bits that the ranking id and the
    row number leave (``n`` rows and ``n`` ranking ids at most: 64 - 2 * 32 >= 0
    for up to :data:`MAX_ROWS` rows); the fewer they are, the more rows tie
    and are ordered exactly by ``tie_break``.

    The keys are made slice by slice in the packed array itself: a whole
    column of keys and its temporaries (three arrays of 8 bytes a row) would
    be fresh memory, whose pages cost more to map than the arithmetic.
    The slices are worked on in parallel, or one after the other without
    ``parallel`` (when another thread has the second core: the join beside the sort
    in :func:`~polars_rankeval.engine.select.match_and_rank`, where threads for the
    slices made an all_trec call at 1M rows 4-10% slower, with 2-10% more CPU time).
    """
    n = len(groups.ids)
    if n == 0:
        empty = np.zeros(0, np.uint64)
        return RankOrder(groups, empty, 1, np.zeros(0, np.uint32), tie_break)
    if n > MAX_ROWS:
        msg = f"An in-memory piece holds at most {MAX_ROWS:,} rows. Got {n:,}."
        raise ValueError(msg)
    parts = groups.slices()
    row_bits = max(1, (n - 1).bit_length())
    ranking_shift = np.uint64(_KEY_BITS - max(1, max(groups.n - 1, 0).bit_length()))
    packed = np.zeros(n, np.uint64)

    def keys(start: int, stop: int) -> tuple[int, int]:
        part = packed[start:stop]
        if values is not None:
            part[:] = order_key(values[start:stop], descending=descending)
        return (int(part.min()), int(part.max())) if stop > start else (0, 0)

    limits = in_parallel(keys, parts, parallel=parallel)
    low = min(b[0] for b in limits)
    shift = np.uint64(fit(low, max(b[1] for b in limits), int(ranking_shift) - row_bits))
    ids = groups.ids

    def pack(start: int, stop: int) -> None:
        part = packed[start:stop]
        part -= np.uint64(low)
        part >>= shift
        part <<= np.uint64(row_bits)
        part |= ids[start:stop].astype(np.uint64) << ranking_shift
        part |= np.arange(start, stop, dtype=np.uint64)

    in_parallel(pack, parts, parallel=parallel)
    if groups.contiguous:  # each slice holds whole rankings: sorted, they sort the whole
        in_parallel(lambda start, stop: packed[start:stop].sort(), parts, parallel=parallel)
    else:
        packed.sort()
    position = _positions(packed, row_bits, parts, parallel=parallel)
    return RankOrder(groups, packed, row_bits, position, tie_break)


def order_values(column: pl.Series, *, by_rank: bool, single_precision: bool) -> np.ndarray:
    """The exact value that orders each row: a score (higher first) or a rank (lower first).

    Floats are compared as doubles, or as single-precision floats with
    ``single_precision`` (trec_eval 9.x, which holds scores as C floats: two
    scores equal in float32 tie and the doc id decides). Integers are compared
    exactly, whatever their size. Other numeric types (Decimal) are replaced by
    their dense rank, which is exact. A missing value sorts last.

    Examples
    --------
    >>> order_values(pl.Series([7.0000001, 7.00000005]), by_rank=False,
    ...              single_precision=True).tolist()
    [7.0, 7.0]
    """
    dtype = column.dtype
    if single_precision and not by_rank:
        column = column.cast(pl.Float32).cast(pl.Float64)
    elif not (dtype.is_float() or dtype.is_integer()) or dtype in (pl.Int128, pl.UInt128):
        column = column.rank("dense", descending=False).cast(pl.UInt64)
    if column.dtype.is_float():
        last = float("inf") if by_rank else float("-inf")
        return column.cast(pl.Float64).fill_null(last).to_numpy()
    if column.has_nulls():
        wide = pl.Int64 if column.dtype.is_signed_integer() else pl.UInt64
        info = np.iinfo(np.int64 if wide == pl.Int64 else np.uint64)
        column = column.cast(wide).fill_null(int(info.max if by_rank else info.min))
    return column.to_numpy()
