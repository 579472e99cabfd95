r"""Integer keys of the fusion's long table: what puts the runs side by side fast.

Two things are asked of the long table (:data:`~polars_rankeval.fusion.normalize.SYS`,
``Q``, ``D``, ``S``) again and again: the rows of each ranking (a run's query), and
the rows of each (query, doc) across the runs. Both are answered with integers made
once, in memory:

* :data:`G`, a ranking's id (the engine's :class:`~polars_rankeval.engine.rank.Groups`
  of ``(SYS, Q)``, dense from 0), over which a ranking's statistics are taken;
* :data:`K`, a (query, doc) pair's code: the query's code (shared by the runs) in the
  high bits, the document's in the low bits.

Putting the runs side by side (:func:`spread`) is then one sort of 64-bit integers
packing (pair, run, row), :math:`b_K + b_{run} + b_{row} \le 64` bits (else a stable
``lexsort``): equal pairs lie together, in the runs' order, so each pair's values are
scattered into one column per run, no join of string keys. The same sort finds a
document twice in one ranking (two equal (pair, run) neighbours).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from polars_rankeval.engine.rank import Groups, ranking_ids
from polars_rankeval.fusion.normalize import SYS, D, G, K, Q

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


def pair_key(frame: pl.DataFrame) -> pl.Series:
    """:data:`K` of every row of ``frame`` (``Q, D`` in memory): the query's code in the
    high bits, the document's in the low bits. The query codes come from the engine's
    :func:`~polars_rankeval.engine.rank.ranking_ids` of ``Q`` (stretch by stretch: a
    run's rows of one query are usually together).

    >>> rows = pl.DataFrame({Q: ["q", "r", "q"], D: ["a", "a", "a"]})
    >>> key = pair_key(rows).to_list()
    >>> key[0] == key[2] != key[1]
    True
    """
    query, _ = ranking_ids(frame, [Q])
    doc = codes(frame[D])
    pair = (query.astype(np.uint64) << np.uint64(bits(doc))) | doc
    return pl.Series(K, pair, dtype=pl.UInt64)


def add_keys(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` (``SYS, Q, D, ...`` in memory) with :data:`K` and :data:`G` (the
    engine's :class:`~polars_rankeval.engine.rank.Groups` of ``(SYS, Q)``).

    >>> out = add_keys(pl.DataFrame({SYS: [0, 0, 1], Q: ["q", "r", "q"], D: ["a"] * 3}))
    >>> out[K].n_unique(), out[G].to_list()
    (2, [0, 1, 2])
    """
    groups = Groups.of(frame, [SYS, Q])
    return frame.with_columns(pair_key(frame), pl.Series(G, groups.ids, dtype=pl.UInt32))


@dataclass(frozen=True)
class Pairs:
    """The rows sorted by (pair, run, row): ``order``; where each pair starts in it."""

    order: np.ndarray
    """Row numbers, pair by pair, each pair's rows in the runs' order (int64)."""
    runs: np.ndarray
    """The run of each row of ``order``."""
    starts: np.ndarray
    """Position in ``order`` of each pair's first row."""
    repeated: np.ndarray
    """Positions ``i`` of ``order`` whose (pair, run) equals that at ``i + 1``."""

    @classmethod
    def of(cls, pair: np.ndarray, run: np.ndarray, n_runs: int) -> Pairs:
        """Sort rows by (``pair``, ``run``, row number).

        >>> p = Pairs.of(np.array([5, 3, 5], np.uint64), np.array([1, 0, 0]), 2)
        >>> p.order.tolist(), p.starts.tolist(), p.repeated.tolist()
        ([1, 2, 0], [0, 1], [])
        """
        n = len(pair)
        run = run.astype(np.uint64)
        run_bits, row_bits = bits(np.array([max(n_runs - 1, 0)])), bits(np.array([max(n - 1, 0)]))
        pair_bits = bits(pair)
        if pair_bits + run_bits + row_bits <= 64:
            packed = (pair << np.uint64(run_bits)) | run
            packed <<= np.uint64(row_bits)
            packed |= np.arange(n, dtype=np.uint64)
            packed.sort()
            order = (packed & np.uint64((1 << row_bits) - 1)).astype(np.int64)
            high = packed >> np.uint64(row_bits)
            sorted_pair = high >> np.uint64(run_bits)
            same = high[1:] == high[:-1]
            runs = high & np.uint64((1 << run_bits) - 1)
        else:
            order = np.lexsort((run, pair)).astype(np.int64)
            sorted_pair, runs = pair[order], run[order]
            same = (sorted_pair[1:] == sorted_pair[:-1]) & (runs[1:] == runs[:-1])
        new = np.ones(n, bool)
        new[1:] = sorted_pair[1:] != sorted_pair[:-1]
        return cls(order, runs.astype(np.int64), np.flatnonzero(new), np.flatnonzero(same))

    @property
    def n(self) -> int:
        """Number of pairs."""
        return len(self.starts)

    def pair_of_sorted(self) -> np.ndarray:
        """The pair number (0 .. n - 1) of each position of ``order``."""
        index = np.zeros(len(self.order), np.int64)
        index[self.starts[1:]] = 1
        return np.cumsum(index)


def spread(frame: pl.DataFrame, n_runs: int, columns: list[str]) -> pl.DataFrame:
    """One row per (query, doc) of ``frame`` (which has :data:`K`): ``Q, D`` and each of
    ``columns`` of each run side by side, ``{name}_{i}``, null where run *i* has no row
    for the pair (or a null value).

    >>> lf = add_keys(pl.DataFrame({SYS: [0, 1, 1], Q: ["q"] * 3, D: ["a", "a", "b"],
    ...                             "v": [1.0, 2.0, 3.0]}))
    >>> spread(lf, 2, ["v"]).sort(D).rows()
    [('q', 'a', 1.0, 2.0), ('q', 'b', None, 3.0)]
    """
    pairs = Pairs.of(frame[K].to_numpy(), frame[SYS].to_numpy(), n_runs)
    return spread_pairs(frame, pairs, n_runs, columns)


def spread_pairs(
    frame: pl.DataFrame, pairs: Pairs, n_runs: int, columns: list[str]
) -> pl.DataFrame:
    """:func:`spread` with the rows' :class:`Pairs` given."""
    first = pairs.order[pairs.starts]
    where = pairs.pair_of_sorted()
    columns_out: list[pl.Series] = [frame[Q].gather(first), frame[D].gather(first)]
    picks: list[pl.Expr] = [pl.col(Q), pl.col(D)]
    for c in columns:
        column = frame[c]
        valid = column.is_not_null().to_numpy()[pairs.order]
        data = (column.fill_null(strategy="zero") if column.has_nulls() else column).to_numpy()
        data = data[pairs.order]
        for i in range(n_runs):
            mine = (pairs.runs == i) & valid
            filled = np.zeros(pairs.n, dtype=data.dtype)
            filled[where[mine]] = data[mine]
            present = np.zeros(pairs.n, bool)
            present[where[mine]] = True
            name = f"{c}_{i}"
            columns_out.append(pl.Series(name, filled).cast(column.dtype))
            columns_out.append(pl.Series(f"__m_{name}", present))
            picks.append(pl.when(pl.col(f"__m_{name}")).then(pl.col(name)).alias(name))
    return pl.DataFrame(columns_out).select(picks)
