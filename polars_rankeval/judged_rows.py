"""The graded rows of an in-memory run, ranked without sorting the run's rows.

Most measures (AP, P@k, R@k, RR, nDCG, Rprec, ...) read only the documents of
a ranking with a grade of at least some ``min_grade`` (the relevant ones, or
those with a positive gain), their ranks and grades, and |R|. For those,
:func:`polars_rankeval.evaluate` on a DataFrame builds just those rows of the
judged table (see :mod:`polars_rankeval.ranking`) here, typically a fiftieth
of the run:

1. every run row gets one 64-bit integer, packing its ranking's id (high
   bits), its score mapped to an order-preserving descending integer (middle
   bits, as many as fit) and its row number (low bits);
2. those integers are sorted, with nothing carried along: the sorted array
   itself holds each position's row number, so a row's rank is its position
   minus the position where its ranking starts, plus one;
3. run and the qrels rows of grade ``min_grade`` or more are joined on a 64-bit
   hash of (query, doc), and each match is checked on the ids themselves, so a
   hash collision can never match two different documents (the same hashes
   prove the (query, doc) pairs distinct, the duplicate check);
4. a matched row whose packed score equals a neighbour's (a true tie, or two
   scores closer than the bits kept) is ranked among the rows of its tie group
   only, by exact score then doc id descending as strings: trec_eval's order.

Rows, and the per-query sums the measures take over them, are those of
:func:`polars_rankeval.judge` restricted to grades >= ``min_grade``; values
equal the general path's up to the order of float summation (about 1e-17).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import numpy as np
import polars as pl

from polars_rankeval import validation
from polars_rankeval._typing import Missing, Order
from polars_rankeval.validation import key_hash

_ROW = "__row"
_JUDGMENT = "__judgment"
RANKING = "__ranking"
HAS_QRELS = "__has_qrels"
_NO_RANK = 0xFFFF_FFFF  # sorts after every rank; null in the output
MAX_ROWS = 2**32 - 1  # so that row numbers and ranking ids fit in 64 bits together
_KEY_BITS = 64
_MIX = np.uint64(0x9E37_79B9_7F4A_7C15)  # odd: ranking ids spread over the hash space
_SLICE_ROWS = 1 << 18  # a slice's keys stay in cache while they are sorted


def _ranking_ids(run: pl.DataFrame, keys: list[str]) -> tuple[np.ndarray, bool]:
    """A dense ranking id per row (0, 1, ...), and whether each ranking's rows are contiguous.

    When they are (the usual layout) the ids number the stretches of equal
    keys in order, without hashing. Contiguity is checked on the first row of
    each stretch when there are few stretches, else by counting the rankings
    through categorical codes, which then serve as the ids if need be.
    """
    firsts = np.zeros(run.height, bool)  # first row of a stretch of equal keys
    for k in keys:
        stretches = run.select(pl.col(k).rle_id()).to_series().to_numpy()
        firsts[1:] |= stretches[1:] != stretches[:-1]
    firsts[0] = True
    n_stretches = int(firsts.sum())
    if n_stretches <= run.height // 2:
        if run.select(keys).filter(firsts).is_duplicated().any():
            return _codes(run, keys), False
    else:
        codes = _codes(run, keys)
        if int(codes.max()) + 1 != n_stretches:  # fewer rankings than stretches
            return codes, False
    if len(keys) == 1:
        return stretches, True
    return np.cumsum(firsts, dtype=np.uint32) - np.uint32(1), True


def _codes(run: pl.DataFrame, keys: list[str]) -> np.ndarray:
    """Dense ids (uint32) of the distinct ``keys`` values: categorical codes."""
    ids = None
    for k in keys:
        code = pl.col(k).cast(pl.String).cast(pl.Categorical(pl.Categories.random()))
        codes = run.select(code.to_physical()).to_series().to_numpy()
        if ids is None:
            ids = codes.astype(np.uint64)
            continue
        ids = ids * np.uint64(int(codes.max()) + 1) + codes  # one-to-one, not dense
    if len(keys) == 1:
        return ids.astype(np.uint32)
    combined = pl.DataFrame({"c": ids})
    numbered = combined.unique().with_row_index("id")
    return combined.join(numbered, on="c", how="left", maintain_order="left")["id"].to_numpy()


def _slices(starts: np.ndarray, n: int, contiguous: bool) -> list[tuple[int, int]]:
    """Row ranges of about :data:`_SLICE_ROWS` rows to work on in parallel.

    With contiguous rankings a range holds whole rankings (it is cut at a
    ranking's first row, ``starts``), so sorting each range sorts the whole array.
    """
    targets = np.arange(_SLICE_ROWS, n, _SLICE_ROWS)
    if contiguous:
        targets = starts[np.minimum(np.searchsorted(starts, targets), len(starts) - 1)]
    cuts = np.unique(np.concatenate([[0], targets, [n]]))
    return list(zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True))


def _check_duplicates(
    run: pl.DataFrame,
    keys: list[str],
    doc: str,
    pair_hash: pl.Series,
    ids: np.ndarray,
    contiguous: bool,
    slices: list[tuple[int, int]],
) -> None:
    """Raise naming a duplicate (ranking, doc) of the run, if any.

    With contiguous rankings each slice's (ranking, query, doc) hashes are
    sorted and compared with their neighbours, in parallel; otherwise they are
    counted. Distinct hashes prove distinct rows; equal ones (a duplicate, or
    a collision) go to the exact check, which names the rows.
    """
    with_keys = [*keys, doc]
    if contiguous:
        hashes = pair_hash.to_numpy()

        def distinct(start: int, stop: int) -> bool:
            mixed = hashes[start:stop] + ids[start:stop].astype(np.uint64) * _MIX
            mixed.sort()
            return not (mixed[1:] == mixed[:-1]).any()

        if all(_in_parallel(distinct, slices)):
            return
        by_ranking = None  # equal hashes seen: let the exact check name the rows
    else:
        by_ranking = pair_hash if len(keys) == 1 else run.select(key_hash(with_keys)).to_series()
    validation.check_duplicates(run.lazy(), with_keys, "run", hashes=by_ranking)


def _in_parallel(work: Callable[[int, int], object], slices: list[tuple[int, int]]) -> list:
    """``work(start, stop)`` for every slice, on Polars' number of threads.

    The work is numpy, which releases the GIL: slices run truly in parallel.
    """
    if len(slices) == 1:
        return [work(*slices[0])]
    with ThreadPoolExecutor(pl.thread_pool_size()) as pool:
        return list(pool.map(lambda bounds: work(*bounds), slices))


def descending_key(values: np.ndarray) -> np.ndarray:
    """uint64 integers whose ascending order is ``values``' descending order.

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


def _fit(low: int, high: int, bits: int) -> int:
    """Right shift that brings integers in [low, high] minus low below 2**bits.

    Applied to :func:`descending_key` keys, ``(key - low) >> shift`` is monotone:
    distinct values may share an integer (a tie, broken exactly later), never swap.
    """
    return max(0, (high - low).bit_length() - bits)


def _order_values(run: pl.DataFrame, order: Order, score: str, rank: str) -> pl.Series:
    """The value that orders a ranking, higher first (a null comes last)."""
    if order == "score" and run[score].dtype == pl.Float64 and not run[score].has_nulls():
        return run[score]  # no copy
    value = pl.col(score) if order == "score" else -pl.col(rank)
    return run.select(value.cast(pl.Float64).fill_null(float("-inf"))).to_series()


def gather_sorted(column: pl.Series, rows: np.ndarray) -> pl.Series:
    """``column[rows]`` for increasing ``rows``, chunk by chunk.

    A frame read from Parquet holds many chunks per column, and a gather from
    such a column first copies it into one; gathering from each chunk its
    share of the (sorted) rows copies only those.

    Examples
    --------
    >>> column = pl.concat([pl.Series(["a", "b"]), pl.Series(["c", "d"])], rechunk=False)
    >>> gather_sorted(column, np.array([1, 2, 3])).to_list()
    ['b', 'c', 'd']
    """
    chunks = column.get_chunks()
    if len(chunks) == 1:
        return column.gather(rows)
    ends = np.cumsum([len(c) for c in chunks])
    cuts = np.searchsorted(rows, ends)
    parts = [
        chunk.gather(rows[lo:hi] - (end - len(chunk)))
        for chunk, end, lo, hi in zip(chunks, ends, [0, *cuts[:-1]], cuts, strict=True)
    ]
    return pl.concat(parts)


def _matches(
    run: pl.DataFrame,
    qrels: pl.DataFrame,
    run_hash: pl.Series,
    qrels_hash: pl.Series,
    ids: list[str],
) -> tuple[np.ndarray, np.ndarray]:
    """(run row, qrels row) of every retrieved document that has a qrels row.

    A join on the hashes of the ``ids`` (query, doc); each pair is then
    checked on the ids themselves, so a hash collision cannot match two
    different documents.
    """
    left = run_hash.alias("h").to_frame().with_row_index(_ROW)
    right = qrels_hash.alias("h").to_frame().with_row_index(_JUDGMENT)
    pairs = left.join(right, on="h").sort(_ROW)
    rows, judgments = pairs[_ROW].to_numpy().astype(np.int64), pairs[_JUDGMENT]
    same = pl.Series(np.ones(len(rows), bool))
    for name in ids:
        same &= gather_sorted(run[name], rows) == qrels[name].gather(judgments)
    return rows[same.to_numpy()], judgments.filter(same).to_numpy()


def _places_in_ties(
    run: pl.DataFrame,
    values: np.ndarray,
    doc: str,
    packed: np.ndarray,
    mask: np.uint64,
    lo: np.ndarray,
    hi: np.ndarray,
    rows: np.ndarray,
) -> np.ndarray:
    """Place (0 = first) of each of ``rows`` within its tie group, in trec_eval order.

    A row's group spans ``lo:hi`` of the sorted ``packed`` keys (whose low
    bits, ``mask``, are row numbers); the members of every such group are
    sorted by exact value, then doc id as a string, both descending.
    """
    starts, first = np.unique(lo, return_index=True)
    sizes = hi[first] - starts
    offsets = np.cumsum(sizes) - sizes
    positions = np.repeat(starts - offsets, sizes) + np.arange(sizes.sum())
    members = (packed[positions] & mask).astype(np.int64)
    by_member = np.argsort(members)
    ordered = (
        pl.DataFrame(
            {
                "group": np.repeat(np.arange(len(starts)), sizes)[by_member],
                _ROW: members[by_member],
                "value": values[members[by_member]],
            }
        )
        .with_columns(doc=gather_sorted(run[doc], members[by_member]).cast(pl.String))
        .sort(["group", "value", "doc"], descending=[False, True, True])[_ROW]
        .to_numpy()
    )
    place = np.arange(len(ordered)) - np.repeat(offsets, sizes)
    by_row = np.argsort(ordered)
    return place[by_row][np.searchsorted(ordered[by_row], rows)]


def _packed_order(
    ids: np.ndarray, contiguous: bool, values: np.ndarray, slices: list[tuple[int, int]]
) -> tuple[np.ndarray, int]:
    """Sorted (ranking id | descending score | row number) integers, and the row bits.

    The score gets the bits the other two leave (``n`` rows and ``n`` ranking
    ids at most: 64 - 2 * 32 >= 0 for up to :data:`MAX_ROWS` rows); the fewer
    they are, the more rows tie and are ordered exactly by the tie stage.
    Each slice is filled, and with contiguous rankings sorted, in parallel.
    """
    n = len(values)
    row_bits = max(1, (n - 1).bit_length())
    ranking_shift = np.uint64(_KEY_BITS - max(1, int(ids.max()).bit_length()))
    packed = np.empty(n, np.uint64)

    def descend(start: int, stop: int) -> tuple[int, int]:
        part = packed[start:stop]
        part[:] = descending_key(values[start:stop])
        return int(part.min()), int(part.max())

    bounds = _in_parallel(descend, slices)
    low = min(b[0] for b in bounds)
    shift = np.uint64(_fit(low, max(b[1] for b in bounds), int(ranking_shift) - row_bits))

    def pack(start: int, stop: int) -> None:
        part = packed[start:stop]
        part -= np.uint64(low)
        part >>= shift
        part <<= np.uint64(row_bits)
        part |= ids[start:stop].astype(np.uint64) << ranking_shift
        part |= np.arange(start, stop, dtype=np.uint64)
        if contiguous:
            part.sort()

    _in_parallel(pack, slices)
    if not contiguous:
        packed.sort()
    return packed, row_bits


def _ranks(
    packed: np.ndarray,
    row_bits: int,
    ids: np.ndarray,
    starts: np.ndarray,
    slices: list[tuple[int, int]],
    rows: np.ndarray,
    tie_places: Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray],
) -> np.ndarray:
    """trec_eval rank of each of ``rows`` (ranking ``ids``, which start at ``starts``).

    A row's rank is its sorted position minus its ranking's first position,
    plus one, unless its packed key ties with a neighbour's: then it is the
    tie group's first rank plus the row's place in the group (``tie_places``).
    """
    n = len(packed)
    mask = np.uint64((1 << row_bits) - 1)
    position = np.empty(n, np.uint32)  # n <= MAX_ROWS

    def place(start: int, stop: int) -> None:
        rows_here = (packed[start:stop] & mask).astype(np.intp)
        position[rows_here] = np.arange(start, stop, dtype=np.uint32)

    _in_parallel(place, slices)  # a permutation: the slices write disjoint entries
    pos = position[rows].astype(np.int64)
    ranks = pos - starts[ids[rows]] + 1
    key = packed[pos] >> np.uint64(row_bits)
    tied = np.zeros(len(pos), bool)
    before, after = pos > 0, pos < n - 1
    tied[before] = (packed[pos[before] - 1] >> np.uint64(row_bits)) == key[before]
    tied[after] |= (packed[pos[after] + 1] >> np.uint64(row_bits)) == key[after]
    if tied.any():
        group = key[tied] << np.uint64(row_bits)
        lo = np.searchsorted(packed, group, "left")
        hi = np.searchsorted(packed, group | mask, "right")
        places = tie_places(packed, mask, lo, hi, rows[tied])
        ranks[tied] = lo - starts[ids[rows[tied]]] + 1 + places
    return ranks


def judged_only_rows(
    run: pl.DataFrame,
    qrels: pl.DataFrame,
    *,
    query: str,
    doc: str,
    score: str,
    relevance: str,
    rank: str,
    system: str | None,
    order: Order,
    depth: int | None,
    missing: Missing,
    min_grade: int,
    check_duplicates: bool,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The rows of grade ``min_grade`` or more of every ranking (see the module docstring).

    ``run`` (1 to :data:`MAX_ROWS` rows) and ``qrels`` are validated but for
    duplicate rows, with id dtypes aligned. ``check_duplicates`` checks those
    on the (query, doc) hashes the join needs anyway.

    Returns
    -------
    rows : pl.DataFrame
        ``__ranking, rank, relevance``: the retrieved rows of grade
        ``min_grade`` or more with their rank, then those not retrieved (null
        rank), sorted by ranking then rank. A ranking of the run that
        retrieved no such row gets a row with rank 1 and no grade, and a
        ranking the run lacks (a qrels query under ``missing="zero"``) with no
        such row gets one with neither: every ranking shows, as retrieved or
        not.
    rankings : pl.DataFrame
        ``__ranking, [system], query, __has_qrels``: one row per ranking;
        ``__has_qrels`` tells whether the query has any qrels row.

    Examples
    --------
    ``b`` and ``c`` tie at 3.0, and trec_eval puts ``c`` first (doc ids
    descending); ``x`` is relevant but not retrieved; ``d`` (grade 0) is left out:

    >>> run = pl.DataFrame({"query": ["q"] * 4, "doc": ["a", "b", "c", "d"],
    ...                     "score": [4.0, 3.0, 3.0, 1.0]})
    >>> qrels = pl.DataFrame({"query": ["q"] * 3, "doc": ["c", "d", "x"],
    ...                       "relevance": [2, 0, 1]})
    >>> rows, rankings = judged_only_rows(
    ...     run, qrels, query="query", doc="doc", score="score", relevance="relevance",
    ...     rank="rank", system=None, order="score", depth=None, missing="drop",
    ...     min_grade=1, check_duplicates=True)
    >>> rows.rows()  # (ranking, rank, grade)
    [(0, 2, 2), (0, None, 1)]
    >>> rankings.rows()
    [(0, 'q', True)]
    """
    keys = [query] if system is None else [system, query]
    run_hash = run.select(key_hash([query, doc])).to_series().rechunk()  # read twice
    qrels_hash = qrels.select(key_hash([query, doc])).to_series().rechunk()
    ids, contiguous = _ranking_ids(run, keys)
    counts = np.bincount(ids)
    starts = np.cumsum(counts) - counts  # where each ranking starts once sorted
    slices = _slices(starts, run.height, contiguous)
    if check_duplicates:
        _check_duplicates(run, keys, doc, run_hash, ids, contiguous, slices)
        validation.check_duplicates(qrels.lazy(), [query, doc], "qrels", hashes=qrels_hash)
    read = qrels[relevance] >= min_grade
    graded, graded_hash = qrels.filter(read), qrels_hash.filter(read)
    run_rows, judgments = _matches(run, graded, run_hash, graded_hash, [query, doc])
    del run_hash  # before the packed keys take as much memory
    values = _order_values(run, order, score, rank).to_numpy()
    packed, row_bits = _packed_order(ids, contiguous, values, slices)

    tie_places = partial(_places_in_ties, run, values, doc)
    ranks = _ranks(packed, row_bits, ids, starts, slices, run_rows, tie_places)
    of = ids[run_rows].astype(np.int64)
    if depth is not None:
        kept = ranks <= depth
        of, ranks, judgments = of[kept], ranks[kept], judgments[kept]
    first_rows = (packed[starts] & np.uint64((1 << row_bits) - 1)).astype(np.int64)
    rankings = _rankings(_gather_rows(run, keys, first_rows), qrels, query, system, missing)
    unretrieved = _unretrieved(rankings, graded, query, of, judgments, single=system is None)
    grades = graded.select(pl.col(relevance).cast(pl.Int64)).to_series()
    rows = _assemble((of, ranks, judgments), unretrieved, len(starts), rankings.height, grades)
    return rows.rename({"rank": rank}), rankings


def _gather_rows(run: pl.DataFrame, columns: list[str], rows: np.ndarray) -> pl.DataFrame:
    """``run[rows, columns]`` for rows in any order, gathered in row order."""
    by_row = np.argsort(rows)
    picked = pl.DataFrame([gather_sorted(run[c], rows[by_row]) for c in columns])
    return picked[np.argsort(by_row)]


def _assemble(
    retrieved: tuple[np.ndarray, np.ndarray, np.ndarray],
    unretrieved: tuple[np.ndarray, np.ndarray],
    n_run_rankings: int,
    n_rankings: int,
    grades: pl.Series,
) -> pl.DataFrame:
    """``__ranking, rank, <grade>`` rows sorted by ranking then rank (nulls last).

    ``retrieved`` is (ranking, rank, grade row) of the retrieved graded rows,
    ``unretrieved`` (ranking, grade row) of the graded rows not retrieved. A
    marker row with no grade is added for each ranking that has no row: rank 1
    for the run's rankings (numbered first), a null rank for the others.
    """
    of, ranks, judgments = retrieved
    has_row = np.zeros(n_rankings, bool)
    has_row[of] = True
    has_row[unretrieved[0][unretrieved[0] >= n_run_rankings]] = True
    markers = np.flatnonzero(~has_row)
    ranking = np.concatenate([of, unretrieved[0], markers])
    rank = np.concatenate(
        [
            ranks,
            np.full(len(unretrieved[0]), _NO_RANK),
            np.where(markers < n_run_rankings, 1, _NO_RANK),
        ]
    )
    judgment = np.concatenate([judgments, unretrieved[1], np.full(len(markers), grades.len())])
    in_order = pl.Series((ranking.astype(np.uint64) << np.uint64(32)) | rank.astype(np.uint64))
    in_order = in_order.arg_sort().to_numpy()
    with_none = pl.concat([grades, grades.clear(1)])  # the last row: no grade
    return pl.DataFrame(
        {RANKING: ranking[in_order], "rank": rank[in_order]},
        schema={RANKING: pl.UInt32, "rank": pl.UInt32},
    ).with_columns(
        pl.when(pl.col("rank") != _NO_RANK).then("rank").alias("rank"),
        with_none.gather(judgment[in_order]),
    )


def _unretrieved(
    rankings: pl.DataFrame,
    graded: pl.DataFrame,
    query: str,
    of: np.ndarray,
    judgments: np.ndarray,
    *,
    single: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """(ranking number, ``graded`` row) of each graded document a ranking did not retrieve.

    With one system a qrels row belongs to one ranking at most, so a mask
    over qrels rows tells the retrieved ones; with several, (ranking, qrels
    row) pairs are looked up.
    """
    scope = rankings.select(RANKING, query).join(
        graded.select(query).with_row_index(_JUDGMENT), on=query
    )
    pair_ranking = scope[RANKING].to_numpy().astype(np.int64)
    pair_judgment = scope[_JUDGMENT].to_numpy().astype(np.int64)
    if single:
        retrieved = np.zeros(graded.height, bool)
        retrieved[judgments] = True
        missed = ~retrieved[pair_judgment]
    else:
        width = graded.height
        found = pl.Series(of * width + judgments).implode()
        missed = ~pl.Series(pair_ranking * width + pair_judgment).is_in(found).to_numpy()
    return pair_ranking[missed], pair_judgment[missed]


def _rankings(
    retrieved: pl.DataFrame, qrels: pl.DataFrame, query: str, system: str | None, missing: Missing
) -> pl.DataFrame:
    """The rankings to score, numbered in ``__ranking``, with ``__has_qrels``.

    The run's rankings, in order; with ``missing="zero"`` the rankings of
    qrels queries a system did not retrieve for follow (scored as empty
    rankings, trec_eval ``-c``).
    """
    stretch_firsts = pl.col(query).ne_missing(pl.col(query).shift(1)).fill_null(True)
    queries = qrels.select(pl.col(query).filter(stretch_firsts)).unique(maintain_order=True)
    rankings = retrieved.with_row_index(RANKING).with_columns(
        pl.col(query).is_in(queries[query].implode()).alias(HAS_QRELS)
    )
    if missing != "zero":
        return rankings
    wanted = (
        queries if system is None else retrieved.select(system).unique().join(queries, how="cross")
    )
    absent = wanted.join(retrieved, on=wanted.columns, how="anti")
    absent = absent.with_row_index(RANKING, offset=rankings.height).with_columns(
        pl.lit(True).alias(HAS_QRELS)
    )
    return pl.concat([rankings, absent])
