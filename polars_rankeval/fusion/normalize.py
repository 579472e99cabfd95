r"""Score normalisations of rank fusion, per ranking, as Polars expressions.

Every function here works on the long table the fusion modules share: one row per
(run, query, document) with the internal columns :data:`SYS` (the run's position,
0, 1, ...), :data:`Q` (query id), :data:`D` (doc id) and :data:`S` (its score); a
ranking is one (run, query). The names and formulas are ranx's (0.3.21,
``ranx/normalization/*.py``), with the same guard on a zero denominator (1e-9):

============================  ==========================================================
``"min-max"``                 :math:`(s - \min) / \max(\max - \min, 10^{-9})`
``"min-max-inverted"``        :math:`(\max - s) / \max(\max - \min, 10^{-9})`
``"max"``                     :math:`s / \max(\max, 10^{-9})`
``"sum"``                     :math:`(s - \min) / \max(\sum s - n \min, 10^{-9})`
``"zmuv"``                    :math:`(s - \mu) / \max(\sigma, 10^{-9})` (population :math:`\sigma`)
``"rank"``                    :math:`1 - (r - 1) / n`
``"borda"``                   :math:`1 - (r - 1) / c` for a retrieved document,
                              :math:`1/2 - (n - 1) / (2c)` for the query's other candidates
``None``                      the scores as they are
============================  ==========================================================

with :math:`n` the ranking's length, :math:`r` a document's rank in it and :math:`c`
the number of distinct documents any run retrieved for the query (its candidates).
Borda adds a row for every candidate a run did not retrieve, in every run (a run
without the query gets every candidate); the other normalisations keep the rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeAlias

import numpy as np
import polars as pl

from polars_rankeval.engine.rank import Groups, TieBreak, order_values, rank_order

SYS, Q, D, S = "__sys", "__q", "__d", "__s"
"""Internal columns: run position (UInt32), query id, doc id, score (Float64)."""
K, G = "__pair", "__ranking"
"""Internal columns: a (query, doc) pair's code and a ranking's id
(:mod:`~polars_rankeval.fusion.keys`)."""
R, N, C, PRESENT = "__r", "__n", "__c", "__present"
"""Internal columns: rank 1..n, ranking length, the query's candidates, retrieved or added."""

NORMALIZATIONS: tuple[str | None, ...] = (
    "min-max",
    "min-max-inverted",
    "max",
    "sum",
    "zmuv",
    "rank",
    "borda",
    None,
)
"""The normalisations :func:`~polars_rankeval.fuse` takes, with ranx's names."""
ORDER_KEEPING = ("min-max", "max", "sum", "zmuv")
"""The normalisations that keep each ranking's order: a shift and a positive scale."""
SCALING = ("min-max", "min-max-inverted", "max", "sum", "zmuv")
"""The normalisations that read each ranking's range of scores (its min, max, sum or
spread): an infinite score makes them NaN."""
_ALIASES = {"min_max": "min-max", "min_max_inverted": "min-max-inverted"}
EPS = 1e-9
"""ranx's floor on a normalisation's denominator."""
DocOrder: TypeAlias = Literal["desc", "asc"]
"""Equal scores within a ranking: doc id descending (trec_eval) or ascending (trectools)."""

RANKING = (SYS, Q)


def canonical_norm(norm: str | None) -> str | None:
    """``norm`` under its ranx name (ranx also takes ``min_max`` and ``min_max_inverted``).

    >>> canonical_norm("min_max"), canonical_norm(None)
    ('min-max', None)
    """
    if norm is None:
        return None
    name = _ALIASES.get(norm, norm) if isinstance(norm, str) else norm
    if name not in NORMALIZATIONS:
        listed = ", ".join(repr(n) for n in NORMALIZATIONS)
        msg = f"norm must be one of {listed}. Got {norm!r} instead."
        raise ValueError(msg)
    return name


def column_as(frame: pl.DataFrame, name: str, values: np.ndarray,
              dtype: pl.DataType | None = None) -> pl.Series:  # fmt: skip
    """``values`` as a column of ``frame``, in chunks of the lengths of ``frame``'s (the
    stacked runs' frames, one chunk a run, are not copied into one: a frame whose columns
    are cut in different places is copied whole by the next expression that reads it).

    >>> frame = pl.concat([pl.DataFrame({"a": [1, 2]}), pl.DataFrame({"a": [3]})], rechunk=False)
    >>> column_as(frame, "b", np.array([4, 5, 6])).chunk_lengths()
    [2, 1]
    """
    lengths = frame.to_series(0).chunk_lengths() if frame.width else []
    if len(lengths) <= 1:
        return pl.Series(name, values, dtype=dtype)
    ends = np.cumsum(lengths).tolist()
    parts = [
        pl.Series(name, values[a:b], dtype=dtype) for a, b in zip([0, *ends], ends, strict=False)
    ]
    return pl.concat(parts, rechunk=False)


def applied_norm(norm: str | None, reads_scores: bool) -> str | None:
    """The normalisation a method applies: ``norm``, or none for a method that reads only
    ranks (not ``reads_scores``) when ``norm`` keeps each ranking's order
    (:data:`ORDER_KEEPING`): it ranks the scores as they are. ranx does the same: these
    normalisations list a ranking in its input order (that of the scores as they are),
    which its rank-based methods read, even where rounding makes two distinct scores one
    normalised value.

    >>> applied_norm("min-max", reads_scores=False), applied_norm("min-max", True)
    (None, 'min-max')
    >>> applied_norm("min-max-inverted", reads_scores=False)
    'min-max-inverted'
    """
    return None if not reads_scores and norm in ORDER_KEEPING else norm


def with_ranks(frame: pl.LazyFrame, doc_order: DocOrder, by: str = S) -> pl.LazyFrame:
    """Add :data:`R` (1 = top: ``by`` descending, ties by doc id compared as strings in
    ``doc_order``) and :data:`N` (the ranking's length) to every row.

    Doc ids descending is trec_eval's order, and the engine's ranking
    (:func:`engine_ranks`: one sort of packed integers) gives it;
    ascending is a sort.

    >>> lf = pl.LazyFrame({SYS: [0, 0, 0], Q: ["q"] * 3, D: ["a", "b", "c"],
    ...                    S: [1.0, 2.0, 2.0]})
    >>> with_ranks(lf, "desc").select(D, R, N).collect().rows()
    [('a', 3, 3), ('b', 2, 3), ('c', 1, 3)]
    """
    names = frame.collect_schema().names()
    keys = [SYS, Q] if SYS in names else [Q]
    if doc_order == "desc":
        if G in names:  # the rankings' ids, made once: cheaper to group than (SYS, Q)
            keys = [G]
        rows = frame.collect()
        rank, length = engine_ranks(rows, keys, by)
        return rows.with_columns(column_as(rows, R, rank), column_as(rows, N, length)).lazy()
    ordered = frame.sort(
        [*(pl.col(k) for k in keys), pl.col(by), pl.col(D).cast(pl.String)],
        descending=[*(False for _ in keys), True, False],
        nulls_last=True,
    )
    return ordered.with_columns(
        pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over(keys).alias(R),
        pl.len().over(keys).cast(pl.Int64).alias(N),
    )


def engine_ranks(rows: pl.DataFrame, keys: Sequence[str], by: str, groups: Groups | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Each row's rank in its ranking (``keys``) by ``by`` descending, ties by doc id
    descending compared as strings (trec_eval's order), and its ranking's length: the
    engine's one sort of packed integers (:func:`~polars_rankeval.engine.rank.rank_order`).
    ``groups``: the rankings of ``keys``, when known.

    >>> rows = pl.DataFrame({Q: ["q"] * 3, D: ["a", "b", "c"], S: [1.0, 2.0, 2.0]})
    >>> [a.tolist() for a in engine_ranks(rows, [Q], S)]
    [[3, 2, 1], [3, 3, 3]]
    """
    if groups is None and list(keys) == [G]:
        groups = ids_groups(rows[G].to_numpy())
    if groups is None:
        groups = Groups.of(rows, keys)
    values = order_values(rows[by], by_rank=False, single_precision=False)
    tie_break = TieBreak(values, descending=True, doc=rows[D])
    order = rank_order(groups, values, tie_break, descending=True)
    n, bits = rows.height, np.uint64(order.row_bits)
    mask = np.uint64((1 << order.row_bits) - 1)
    rank = in_order_ranks(groups.starts, groups.counts, n)
    pos = tied_positions(order.packed, bits)
    if len(pos):  # the tied rows' places, by value then doc id (the engine's tie break)
        key = order.packed >> bits  # ranking and value, sorted: equal neighbours tie
        lo = np.searchsorted(key, key[pos], "left")
        hi = np.searchsorted(key, key[pos], "right")
        places = tie_break.places(order.packed, mask, lo, hi, pos)
        rank[pos] += lo - pos + places  # the rank of the tie group's first position, + place
    # the row at each position, in the sorted keys' own array (read for the last time)
    at_row = np.bitwise_and(order.packed, mask, out=order.packed).view(np.int64)
    by_row = np.empty(n, np.int64)
    by_row[at_row] = rank
    return by_row, np.asarray(groups.counts[groups.ids], dtype=np.int64)


def in_order_ranks(starts: np.ndarray, counts: np.ndarray, n: int) -> np.ndarray:
    """1, 2, ... within each ranking, at each sorted position (the rankings at ``starts``,
    increasing, ``counts`` rows each): a running sum of ones that drops back at each
    ranking's start, in one array.

    >>> in_order_ranks(np.array([0, 2]), np.array([2, 3]), 5).tolist()
    [1, 2, 1, 2, 3]
    """
    rank = np.ones(n, np.int64)
    rank[starts[1:]] = 1 - counts[:-1]
    return np.cumsum(rank, out=rank)


_SLICE = 1 << 18


def tied_positions(packed: np.ndarray, bits: np.uint64) -> np.ndarray:
    """The sorted positions whose key (``packed >> bits``) equals a neighbour's, read
    slice by slice (no array of keys).

    >>> tied_positions(np.array([0b100, 0b101, 0b110, 0b1000], np.uint64), np.uint64(1)).tolist()
    [0, 1]
    """
    equal = []  # positions i whose key equals that at i + 1
    for lo in range(0, max(len(packed) - 1, 0), _SLICE):
        hi = min(lo + _SLICE, len(packed) - 1)
        same = (packed[lo:hi] >> bits) == (packed[lo + 1 : hi + 1] >> bits)
        equal.append(np.flatnonzero(same) + lo)
    if not equal or not sum(len(e) for e in equal):
        return np.zeros(0, np.int64)
    first = np.concatenate(equal)
    return np.union1d(first, first + 1)


def ids_groups(ids: np.ndarray) -> Groups | None:
    """The rankings of ranking ids numbered 0, 1, ... stretch after stretch (each
    ranking's rows together, as :func:`~polars_rankeval.fusion.keys.add_keys` numbers
    them), read off the ids without hashing them; None for ids in another layout.

    >>> ids_groups(np.array([0, 0, 1], np.uint32)).counts.tolist()
    [2, 1]
    >>> ids_groups(np.array([1, 0], np.uint32)) is None
    True
    """
    if not len(ids) or ids[0] != 0 or ids.dtype.kind not in "iu":
        return None
    ids = ids.astype(np.uint32, copy=False)  # G's dtype: no copy
    step = ids[1:] - ids[:-1]  # a decrease wraps around to a large step
    if bool(np.any(step > 1)):
        return None
    starts = np.concatenate([[0], np.flatnonzero(step) + 1])
    return Groups(ids, True, np.diff(np.append(starts, len(ids))), starts)


def score_expr(norm: str | None, ranking: Sequence[str] = RANKING) -> pl.Expr:
    """The normalised score of a row, by ranking (every norm but ``"rank"`` and
    ``"borda"``, which need ranks: :func:`normalize`).

    >>> lf = pl.LazyFrame({SYS: [0, 0], Q: ["q", "q"], D: ["a", "b"], S: [1.0, 3.0]})
    >>> lf.select(score_expr("min-max")).collect()[S].to_list()
    [0.0, 1.0]
    """
    s = pl.col(S)
    ranking = list(ranking)
    lo, hi = s.min().over(ranking), s.max().over(ranking)
    if norm == "min-max":
        return ((s - lo) / pl.max_horizontal(hi - lo, pl.lit(EPS))).alias(S)
    if norm == "min-max-inverted":
        return ((hi - s) / pl.max_horizontal(hi - lo, pl.lit(EPS))).alias(S)
    if norm == "max":
        return (s / pl.max_horizontal(hi, pl.lit(EPS))).alias(S)
    if norm == "sum":
        denominator = s.sum().over(ranking) - lo * pl.len().over(ranking)
        return ((s - lo) / pl.max_horizontal(denominator, pl.lit(EPS))).alias(S)
    if norm == "zmuv":
        sd = s.std(ddof=0).over(ranking)
        return ((s - s.mean().over(ranking)) / pl.max_horizontal(sd, pl.lit(EPS))).alias(S)
    return s


def with_scores(frame: pl.LazyFrame, norm: str | None, ranking: Sequence[str] = RANKING
                ) -> pl.LazyFrame:  # fmt: skip
    """``frame`` with :data:`S` normalised by :func:`score_expr`; ``frame`` itself for
    ``norm=None`` (a plan's ``with_columns`` cuts every column into a thread's morsels,
    which the gathers by row that follow pay for)."""
    return frame if norm is None else frame.with_columns(score_expr(norm, ranking))


def contiguous_scores(frame: pl.DataFrame, norm: str | None) -> pl.DataFrame | None:
    """``frame`` with :data:`S` normalised by ``"min-max"``, ``"min-max-inverted"`` or
    ``"max"`` in numpy, when each ranking's rows (:data:`G`) lie together (each
    ranking's minimum and maximum by ``reduceat``): the expressions of
    :func:`score_expr`, to the bit, without a window's hash of the ranking ids. None for
    another norm, or rankings whose rows are apart.

    >>> rows = pl.DataFrame({G: [0, 0, 1], S: [1.0, 3.0, 5.0]})
    >>> contiguous_scores(rows, "min-max")[S].to_list()
    [0.0, 1.0, 0.0]
    """
    if norm not in ("min-max", "min-max-inverted", "max") or G not in frame.columns:
        return None
    if not frame.height:
        return frame
    groups = ids_groups(frame[G].to_numpy())
    if groups is None:
        return None
    s, starts, counts = frame[S].to_numpy(), groups.starts, groups.counts
    hi = np.maximum.reduceat(s, starts)  # by ranking, each spread over its rows once
    if norm == "max":
        normalised = s / np.repeat(np.maximum(hi, EPS), counts)
        return frame.with_columns(column_as(frame, S, normalised))
    lo = np.minimum.reduceat(s, starts)
    top = s - np.repeat(lo, counts) if norm == "min-max" else np.repeat(hi, counts) - s
    top /= np.repeat(np.maximum(hi - lo, EPS), counts)
    return frame.with_columns(column_as(frame, S, top))


def expand(frame: pl.LazyFrame, n_runs: int) -> pl.LazyFrame:
    """Every (run, candidate) of every query: the ranked rows (with :data:`R`, :data:`N`)
    and, for each candidate a run did not retrieve, a row with a null score and rank,
    ``PRESENT`` false and that run's :data:`N` (0 for a run without the query); every
    row gets :data:`C`, the query's number of candidates.

    >>> lf = pl.LazyFrame({SYS: [0, 1], Q: ["q", "q"], D: ["a", "b"], S: [1.0, 1.0]})
    >>> out = expand(with_ranks(lf, "desc"), 2).sort(SYS, D).collect()
    >>> for row in out.select(SYS, D, R, N, C, PRESENT).rows():
    ...     print(row)
    (0, 'a', 1, 1, 2, True)
    (0, 'b', None, 1, 2, False)
    (1, 'a', None, 1, 2, False)
    (1, 'b', 1, 1, 2, True)
    """
    pair = [K] if K in frame.collect_schema().names() else []
    candidates = frame.select(Q, D, *pair).unique(maintain_order=True)
    counts = candidates.group_by(Q).agg(pl.len().cast(pl.Int64).alias(C))
    runs = pl.LazyFrame({SYS: pl.Series(range(n_runs), dtype=pl.UInt32)})
    lengths = frame.group_by(SYS, Q).agg(pl.len().cast(pl.Int64).alias(N))
    grid = candidates.join(runs, how="cross")
    rows = frame.drop(N, *pair, G, strict=False).with_columns(pl.lit(True).alias(PRESENT))
    out = (
        grid.join(rows, on=[SYS, Q, D], how="left", maintain_order="left")
        .join(lengths, on=[SYS, Q], how="left", maintain_order="left")
        .join(counts, on=Q, how="left", maintain_order="left")
    )
    return out.with_columns(pl.col(PRESENT).fill_null(False), pl.col(N).fill_null(0))


def normalize(
    frame: pl.LazyFrame,
    norm: str | None,
    n_runs: int,
    doc_order: DocOrder,
    ranking: Sequence[str] = RANKING,
) -> pl.LazyFrame:
    """Rows with :data:`S` replaced by its normalised value (Borda adds rows: see the
    module), ranked again by it (:data:`R`, :data:`N`).

    >>> lf = pl.LazyFrame({SYS: [0, 0, 1], Q: ["q"] * 3, D: ["a", "b", "a"],
    ...                    S: [3.0, 1.0, 5.0]})
    >>> normalize(lf, "borda", 2, "desc").sort(SYS, D).select(SYS, D, S).collect().rows()
    [(0, 'a', 1.0), (0, 'b', 0.5), (1, 'a', 1.0), (1, 'b', 0.5)]
    """
    if norm == "rank":
        ranked = with_ranks(frame, doc_order)
        scored = ranked.with_columns((1.0 - (pl.col(R) - 1) / pl.col(N)).alias(S))
    elif norm == "borda":
        full = expand(with_ranks(frame, doc_order), n_runs)
        borda = (
            pl.when(pl.col(PRESENT))
            .then(1.0 - (pl.col(R) - 1) / pl.col(C))
            .otherwise(0.5 - (pl.col(N) - 1) / (2.0 * pl.col(C)))
        )
        scored = full.with_columns(borda.alias(S))
    else:
        scored = with_scores(frame, norm, ranking)
    kept = [c for c in (K, G) if c in scored.collect_schema().names()]
    return with_ranks(scored.select(SYS, Q, D, *kept, S), doc_order)


def keep_top(frame: pl.LazyFrame, depth: int | None, doc_order: DocOrder) -> pl.LazyFrame:
    """Each ranking's top ``depth`` rows (by score, ties by ``doc_order``); all when None."""
    if depth is None:
        return frame
    columns: Sequence[str] = frame.collect_schema().names()
    return with_ranks(frame, doc_order).filter(pl.col(R) <= depth).select(columns)
