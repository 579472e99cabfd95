r"""Integer keys of the fusion's long table: what puts the runs side by side fast.

Two things are asked of the long table (:data:`~polars_rankeval.fusion.normalize.SYS`,
``Q``, ``D``, ``S``) again and again: the rows of each ranking (a run's query), and
the rows of each (query, doc) across the runs. Both are answered with integers made
once, in memory:

* :data:`G`, a ranking's id (the engine's :class:`~polars_rankeval.engine.rank.Groups`
  of ``(SYS, Q)``, dense from 0), over which a ranking's statistics are taken;
* :data:`K`, a (query, doc) pair's number, dense from 0: the pairs found by one sort of
  64-bit integers packing the query's code (shared by the runs), the document's code,
  the run and the row number (:class:`Pairs`; a stable ``lexsort`` when they need more
  than 64 bits). The same sort finds a document twice in one ranking (two equal
  (pair, run) neighbours).

Putting the runs side by side (:func:`spread`) is then a scatter of each run's values
into one array per run, indexed by :data:`K`: no join of string keys. The columns are
made once and carried along by the normalisations and methods (a frame without them
gets them when it is spread).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from polars_rankeval.engine.rank import Groups, gather_sorted, ranking_ids
from polars_rankeval.fusion.normalize import SYS, D, G, K, N, Q, R, S, column_as, engine_ranks

_ID_BITS = 32


def codes(column: pl.Series) -> np.ndarray:
    """Dense-enough codes (uint64, below 2^32) of ``column``'s values: equal values,
    equal codes. Integers whose range fits 32 bits are their offset from the minimum;
    other values are their categorical codes (of their string form).

    >>> codes(pl.Series(["b", "a", "b"])).tolist() == [0, 1, 0]
    True
    >>> codes(pl.Series([7, 5, 7])).tolist()
    [2, 0, 2]
    """
    if column.dtype.is_integer() and len(column):
        low, high = column.min(), column.max()
        assert isinstance(low, int) and isinstance(high, int)
        if (high - low).bit_length() <= _ID_BITS:
            return (column.to_numpy().astype(np.int64) - low).astype(np.uint64)
    as_cat = column.cast(pl.String).cast(pl.Categorical(pl.Categories.random()))
    return as_cat.to_physical().to_numpy().astype(np.uint64)


def bits(values: np.ndarray) -> int:
    """Bits that hold every value of non-negative ``values`` (at least 1).

    >>> bits(np.array([0, 5], dtype=np.uint64))
    3
    """
    return max(1, int(values.max()).bit_length()) if len(values) else 1


def pair_code(query: np.ndarray, doc: np.ndarray) -> np.ndarray:
    """A code (uint64) of every row's (query, doc) from the rows' query codes (the
    engine's :func:`~polars_rankeval.engine.rank.ranking_ids` of ``Q``) and document
    :func:`codes`: the query's code in the high bits, the document's in the low bits.

    >>> pair_code(np.array([0, 1, 0], np.uint32), np.array([2, 2, 3], np.uint64)).tolist()
    [2, 6, 3]
    """
    code = query.astype(np.uint64)
    code <<= np.uint64(bits(doc))
    code |= doc
    return code


_SLICE = 1 << 18


def _packed(pair: np.ndarray, run: np.ndarray, run_bits: int, row_bits: int) -> np.ndarray:
    """``(pair << run_bits | run) << row_bits | row number`` of every row, slice by slice
    (the temporaries stay small: fresh memory costs more to map than the arithmetic).

    >>> _packed(np.array([5, 3], np.uint64), np.array([1, 0]), 1, 1).tolist()
    [22, 13]
    """
    packed = pair << np.uint64(run_bits)
    for lo in range(0, len(packed), _SLICE):
        part = packed[lo : lo + _SLICE]
        part |= run[lo : lo + _SLICE].astype(np.uint64)
        part <<= np.uint64(row_bits)
        part |= np.arange(lo, lo + len(part), dtype=np.uint64)
    return packed


@dataclass(frozen=True)
class Pairs:
    """The rows sorted by (pair, run, row): ``order``; where each pair starts in it."""

    order: np.ndarray
    """Row numbers, pair by pair, each pair's rows in the runs' order (int64)."""
    starts: np.ndarray
    """Position in ``order`` of each pair's first row."""
    repeated: np.ndarray
    """Positions ``i`` of ``order`` whose (pair, run) equals that at ``i + 1``."""
    first: np.ndarray
    """Each pair's first row (its lowest row number), the pairs in sorted order."""

    @classmethod
    def of(cls, pair: np.ndarray, run: np.ndarray, n_runs: int) -> Pairs:
        """Sort rows by (``pair``, ``run``, row number).

        >>> p = Pairs.of(np.array([5, 3, 5], np.uint64), np.array([1, 0, 0]), 2)
        >>> p.order.tolist(), p.starts.tolist(), p.repeated.tolist(), p.first.tolist()
        ([1, 2, 0], [0, 1], [], [1, 0])
        """
        n = len(pair)
        run_bits, row_bits = bits(np.array([max(n_runs - 1, 0)])), bits(np.array([max(n - 1, 0)]))
        new = np.ones(n, bool)
        if bits(pair) + run_bits + row_bits <= 64:
            packed = _packed(pair, run, run_bits, row_bits)
            packed.sort()
            order = np.bitwise_and(packed, np.uint64((1 << row_bits) - 1)).view(np.int64)
            packed >>= np.uint64(row_bits)  # (pair, run)
            same = packed[1:] == packed[:-1]
            packed >>= np.uint64(run_bits)  # pair
            np.not_equal(packed[1:], packed[:-1], out=new[1:])
        else:
            order = np.lexsort((run, pair)).astype(np.int64)
            sorted_pair, runs = pair[order], run[order]
            same = (sorted_pair[1:] == sorted_pair[:-1]) & (runs[1:] == runs[:-1])
            new[1:] = sorted_pair[1:] != sorted_pair[:-1]
        starts = np.flatnonzero(new)
        if n < 2 or bool(np.all(run[1:] >= run[:-1])):  # the runs one after the other
            first = order[starts]  # a pair's rows by run, then row: its lowest row first
        else:
            first = np.minimum.reduceat(order, starts)
        return cls(order, starts, np.flatnonzero(same), first)

    def numbers(self) -> np.ndarray:
        """Each row's pair number (0 .. pairs - 1, uint32), in row order, the pairs numbered
        in the order of their first rows: a pair's first row is after those of the pairs
        numbered before it, so the pairs' first rows (:func:`first_rows`) are gathered in
        row order.

        >>> Pairs.of(np.array([5, 3, 5], np.uint64), np.array([1, 0, 0]), 2).numbers().tolist()
        [0, 1, 0]
        """
        n = len(self.order)
        if not n:
            return np.zeros(0, np.uint32)
        first = self.first
        is_first = np.zeros(n, bool)
        is_first[first] = True
        by_first = np.cumsum(is_first, dtype=np.uint32)
        by_first -= np.uint32(1)
        out = np.empty(n, np.uint32)
        out[self.order] = np.repeat(by_first[first], np.diff(np.append(self.starts, n)))
        return out


def ranking_groups(run: np.ndarray, query: np.ndarray) -> Groups:
    """The rankings (run, query) of the rows, from the rows' run positions and query codes
    (integers below 2^32): in the usual layout, each stretch of rows with one (run,
    query) is a ranking, numbered in order, which the stretches' first rows confirm (no
    (run, query) heads two stretches) without hashing every row; else the engine's
    :class:`~polars_rankeval.engine.rank.Groups` of the two columns.

    >>> groups = ranking_groups(np.array([0, 0, 1, 1]), np.array([3, 4, 3, 3]))
    >>> groups.ids.tolist(), groups.contiguous, groups.starts.tolist()
    ([0, 1, 2, 2], True, [0, 1, 2])
    """
    n = len(run)
    if n:
        new = np.empty(n, bool)
        new[0] = True
        np.not_equal(run[1:], run[:-1], out=new[1:])
        new[1:] |= query[1:] != query[:-1]
        heads = np.flatnonzero(new)
        if len(heads) <= n // 2:  # few stretches: their first rows are cheap to check
            head_keys = (run[heads].astype(np.uint64) << np.uint64(32)) | query[heads]
            if len(np.unique(head_keys)) == len(heads):
                ids = np.cumsum(new, dtype=np.uint32)
                ids -= np.uint32(1)
                return Groups(ids, True, np.diff(np.append(heads, n)), heads)
    return Groups.of(pl.DataFrame({SYS: run, Q: query}), [SYS, Q])


def add_keys(frame: pl.DataFrame, n_runs: int, ranks: bool = False
             ) -> tuple[pl.DataFrame, Pairs]:  # fmt: skip
    """``frame`` (``SYS, Q, D, S, ...`` in memory) with :data:`K` (:meth:`Pairs.numbers`)
    and :data:`G` (:func:`ranking_groups`), and the rows' :class:`Pairs` (whose
    ``repeated`` tells a document twice in a ranking). With ``ranks``, also :data:`R` and
    :data:`N` of the scores as they are
    (:func:`~polars_rankeval.fusion.normalize.engine_ranks`), made in a second thread
    while the pairs are sorted: two independent sorts, in numpy calls that release the
    GIL.

    >>> out, pairs = add_keys(pl.DataFrame(
    ...     {SYS: [0, 0, 1], Q: ["q", "r", "q"], D: ["a"] * 3, S: [1.0, 2.0, 3.0]}), 2, True)
    >>> out[K].to_list(), out[G].to_list(), out[R].to_list(), pairs.repeated.tolist()
    ([0, 1, 0], [0, 1, 2], [1, 1, 1], [])
    """
    query, _ = ranking_ids(frame, [Q])
    run = frame[SYS].to_numpy()
    groups = ranking_groups(run, query)
    with ThreadPoolExecutor(1) as pool:
        ranked = pool.submit(engine_ranks, frame, [G], S, groups) if ranks else None
        pairs = Pairs.of(pair_code(query, codes(frame[D])), run, n_runs)
        keys = [column_as(frame, K, pairs.numbers()), column_as(frame, G, groups.ids, pl.UInt32())]
        if ranked is not None:
            rank, length = ranked.result()
            keys += [column_as(frame, R, rank), column_as(frame, N, length)]
    return frame.with_columns(keys), pairs


def first_rows(number: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each pair's first row (increasing), and the rows' pair ``number`` renumbered densely
    in the order of those rows: ``number`` as it is when :meth:`Pairs.numbers` made it
    and no row was dropped since (each row's number is then at most one above those
    before it: found by a running maximum), else renumbered (a dropped row may leave a
    pair empty or move its first row).

    >>> rows, number = first_rows(np.array([3, 0, 3, 1], np.uint32))
    >>> rows.tolist(), number.tolist()
    ([0, 1, 3], [0, 1, 0, 2])
    """
    n = len(number)
    if not n:
        return np.zeros(0, np.int64), number
    top = np.maximum.accumulate(number)
    new = np.empty(n, bool)
    new[0] = True
    np.greater(top[1:], top[:-1], out=new[1:])
    first = np.flatnonzero(new)
    if top[0] == 0 and int(top[-1]) + 1 == len(first):  # every step up is by one
        return first, number
    slots = int(top[-1]) + 1
    first = np.full(slots, n, np.int64)
    first[number[::-1]] = np.arange(n - 1, -1, -1)
    kept = first < n
    is_first = np.zeros(n, bool)
    is_first[first[kept]] = True
    by_first = np.cumsum(is_first, dtype=np.int64) - 1
    renumber = np.zeros(slots, number.dtype)
    renumber[kept] = by_first[first[kept]]
    return np.flatnonzero(is_first), renumber[number]


def run_rows(run: np.ndarray, n_runs: int) -> list[slice] | list[np.ndarray]:
    """The rows of each run (``run``: each row's run position): slices when the runs come
    one after the other, else row numbers.

    >>> run_rows(np.array([0, 0, 1]), 2)
    [slice(0, 2, None), slice(2, 3, None)]
    >>> [r.tolist() for r in run_rows(np.array([1, 0, 1]), 2)]
    [[1], [0, 2]]
    """
    if len(run) < 2 or bool(np.all(run[1:] >= run[:-1])):
        bounds = np.searchsorted(run, np.arange(n_runs + 1)).tolist()
        return [slice(bounds[i], bounds[i + 1]) for i in range(n_runs)]
    return [np.flatnonzero(run == i) for i in range(n_runs)]


def placed(values: np.ndarray, at: np.ndarray, size: int, fill: Any = 0) -> np.ndarray:
    """An array of ``size`` ``fill`` values with ``values`` written at the distinct
    positions ``at``: a copy into a slice when ``at`` is a range (a run's new pairs, in
    the order of their first rows), else a scatter.

    >>> placed(np.array([5.0, 6.0]), np.array([1, 2]), 4).tolist()
    [0.0, 5.0, 6.0, 0.0]
    """
    out = np.full(size, fill, dtype=values.dtype)
    if len(at) and int(at[-1]) - int(at[0]) == len(at) - 1 and bool(np.all(np.diff(at) == 1)):
        out[int(at[0]) : int(at[-1]) + 1] = values
    else:
        out[at] = values
    return out


def gather_first(column: pl.Series, rows: np.ndarray) -> pl.Series:
    """``column[rows]`` for increasing ``rows`` (:func:`first_rows`): their leading stretch
    ``0, 1, ..., m - 1`` is a slice of ``column``, without a copy (when the runs come one
    after the other, the first run's rows: each is its pair's first), the rest gathered
    in row order chunk by chunk (:func:`~polars_rankeval.engine.rank.gather_sorted`: a
    gather across many chunks, as a Polars plan's output has, costs several times the
    copy).

    >>> gather_first(pl.Series(["a", "b", "c", "d"]), np.array([0, 1, 3])).to_list()
    ['a', 'b', 'd']
    """
    leading = int(np.searchsorted(rows - np.arange(len(rows)), 0, side="right"))
    rest = rows[leading:]
    if not len(rest):
        return column.slice(0, leading)
    return pl.concat([column.slice(0, leading), gather_sorted(column, rest)], rechunk=False)


def spread(frame: pl.DataFrame, n_runs: int, columns: list[str]) -> pl.DataFrame:
    """One row per (query, doc) of ``frame``: ``Q, D`` and each of ``columns`` of each
    run side by side, ``{name}_{i}``, null where run *i* has no row for the pair (or a
    null value), the pairs in the order of their first rows in ``frame``. The rows'
    :data:`K` is read, or made when ``frame`` lacks it.

    >>> rows = pl.DataFrame({SYS: [0, 1, 1], Q: ["q"] * 3, D: ["a", "a", "b"],
    ...                      "v": [1.0, 2.0, 3.0]})
    >>> spread(rows, 2, ["v"]).rows()
    [('q', 'a', 1.0, 2.0), ('q', 'b', None, 3.0)]
    """
    if K in frame.columns:
        number = frame[K].to_numpy()
    else:
        pair = pair_code(ranking_ids(frame, [Q])[0], codes(frame[D]))
        number = Pairs.of(pair, frame[SYS].to_numpy(), n_runs).numbers()
    first, number = first_rows(number)
    n_pairs = len(first)
    out: list[pl.Series] = [gather_first(frame[Q], first), gather_first(frame[D], first)]
    ids = pl.DataFrame(out)  # the values below cut as the ids are (see column_as)
    picks: list[pl.Expr] = [pl.col(Q), pl.col(D)]
    mine = run_rows(frame[SYS].to_numpy(), n_runs)
    at = [number[rows] for rows in mine]
    for c in columns:
        column = frame[c]
        nulls = column.has_nulls()
        valid = column.is_not_null().to_numpy() if nulls else None
        data = (column.fill_null(strategy="zero") if nulls else column).to_numpy()
        for i in range(n_runs):
            name = f"{c}_{i}"
            values = placed(data[mine[i]], at[i], n_pairs)
            out.append(column_as(ids, name, values).cast(column.dtype))
            is_valid = np.ones(len(at[i]), bool) if valid is None else valid[mine[i]]
            present = placed(is_valid, at[i], n_pairs, False)
            if present.all():
                picks.append(pl.col(name))
                continue
            out.append(column_as(ids, f"__m_{name}", present))
            picks.append(pl.when(pl.col(f"__m_{name}")).then(pl.col(name)).alias(name))
    return pl.DataFrame(out).select(picks)
