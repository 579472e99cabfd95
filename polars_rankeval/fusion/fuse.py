"""`fuse`: runs in, one fused run out, eager, lazy or bucket by bucket.

The runs are put in one long table (run position, query, doc, score), each run is
normalised ranking by ranking (:mod:`~polars_rankeval.fusion.normalize`), and each
(query, doc) gets its fused score (:mod:`~polars_rankeval.fusion.methods`). Every step
works per ranking or per (query, doc), so a query's fused scores
depend only on that query's rows: a LazyFrame is fused bucket by bucket (a hash of the
query id), each bucket holding every row of its queries, in bounded memory.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from polars_rankeval.engine.buckets import (
    BATCH_ROWS,
    BUCKETS,
    PIECE_SHARE,
    SPLITS,
    Spill,
    memory_bytes,
    nbytes,
)
from polars_rankeval.fusion.keys import Pairs, add_keys
from polars_rankeval.fusion.methods import METHODS, Context, F, Method
from polars_rankeval.fusion.normalize import (
    RANKING,
    SCALING,
    SYS,
    D,
    DocOrder,
    G,
    Q,
    R,
    S,
    applied_norm,
    canonical_norm,
    contiguous_scores,
    keep_top,
    normalize,
    with_ranks,
    with_scores,
)
from polars_rankeval.inputs import as_frame
from polars_rankeval.validation import (
    check_choice,
    check_columns,
    check_int,
    check_score_dtype,
)

Runs = Any
"""A long frame with a system column, a sequence of runs, or a ``{name: run}`` dict."""


@dataclass(frozen=True)
class Columns:
    """The user's column names."""

    query: str = "query"
    doc: str = "doc"
    score: str = "score"
    system: str = "system"

    def __post_init__(self) -> None:
        """Four different names: the fused run has each as a column (a run's query column
        named ``system`` ended in a raw DuplicateError).

        Examples
        --------
        >>> Columns(query="system")
        Traceback (most recent call last):
        ...
        ValueError: query and system both name the column 'system'; the fused run has ...
        """
        named = {"query": self.query, "doc": self.doc, "score": self.score}
        named["system"] = self.system
        seen: dict[str, str] = {}
        for option, column in named.items():
            if column in seen:
                msg = (
                    f"{seen[column]} and {option} both name the column {column!r}; the fused "
                    f"run has one column for each: pass {option}=<another name>."
                )
                raise ValueError(msg)
            seen[column] = option


@dataclass(frozen=True)
class Spec:
    """A fusion, checked: method, normalisation (the one applied:
    :func:`~polars_rankeval.fusion.normalize.applied_norm`), the context the method
    reads, cuts."""

    method: str
    norm: str | None
    ctx: Context
    depth: int | None = None
    max_docs: int | None = None

    @property
    def doc_order(self) -> DocOrder:
        return self.ctx.doc_order


@dataclass(frozen=True)
class Stacked:
    """The runs in one long table (:data:`SYS`, :data:`Q`, :data:`D`, :data:`S`)."""

    frame: pl.LazyFrame
    systems: tuple[str, ...]
    lazy: bool
    id_dtypes: tuple[pl.DataType, pl.DataType] = field(default=(pl.String(), pl.String()))


def stack_runs(runs: Runs, cols: Columns) -> Stacked:
    """The runs of ``runs`` as one long table, and the runs' names in order.

    A frame with a ``system`` column holds one run per system, in sorted order of
    the names; a sequence holds runs named ``run1``, ``run2``, ... in its order; a
    dict names them by its keys, in its order.
    """
    pieces: list[tuple[str, pl.DataFrame | pl.LazyFrame]]
    if isinstance(runs, Mapping) and not _is_nested_run(runs):
        pieces = [(str(k), as_frame(v, f"runs[{k!r}]", _cols3(cols))) for k, v in runs.items()]
        return _stack_pieces(pieces, cols)
    if isinstance(runs, Sequence) and not isinstance(runs, str):
        pieces = [
            (f"run{i + 1}", as_frame(v, f"runs[{i}]", _cols3(cols))) for i, v in enumerate(runs)
        ]
        return _stack_pieces(pieces, cols)
    return stack_long(long_frame(runs, cols), cols)


def long_frame(runs: Runs, cols: Columns) -> pl.DataFrame | pl.LazyFrame:
    """``runs``, one long frame with a system column, its schema checked."""
    frame = as_frame(runs, "runs", None)
    schema = frame.lazy().collect_schema()
    check_columns(
        schema,
        {"query": cols.query, "doc": cols.doc, "score": cols.score, "system": cols.system},
        "runs",
    )
    check_score_dtype(schema, cols.score)
    return frame


def is_lazy_long(runs: Runs) -> bool:
    """Whether ``runs`` is one lazy long frame (its runs known only from its rows)."""
    return isinstance(runs, pl.LazyFrame)


def stack_long(frame: pl.DataFrame | pl.LazyFrame, cols: Columns) -> Stacked:
    """A long frame's runs (its system names read: one streaming pass over the column)."""
    schema = frame.lazy().collect_schema()
    lazy = isinstance(frame, pl.LazyFrame)
    names_frame = frame.lazy().select(pl.col(cols.system).unique())
    names = names_frame.collect(engine="streaming").to_series()
    if names.null_count():
        msg = f"runs column {cols.system!r} has null values: every row must name its run."
        raise ValueError(msg)
    systems = tuple(sorted(str(n) for n in names.to_list()))
    position = (
        pl.col(cols.system)
        .cast(pl.String)
        .replace_strict(list(systems), list(range(len(systems))), return_dtype=pl.UInt32)
    )
    long = frame.select(  # eager when the frame is: its chunks, not a plan's morsels
        position.alias(SYS),
        pl.col(cols.query).alias(Q),
        pl.col(cols.doc).alias(D),
        pl.col(cols.score).cast(pl.Float64).alias(S),
    )
    return Stacked(long.lazy(), systems, lazy, (schema[cols.query], schema[cols.doc]))


def _cols3(cols: Columns) -> tuple[str, str, str]:
    return (cols.query, cols.doc, cols.score)


def _is_nested_run(obj: Mapping[Any, Any]) -> bool:
    """Whether a dict is one ``{query: {doc: score}}`` run rather than ``{name: run}``."""
    first = next(iter(obj.values()), None)
    return isinstance(first, Mapping) and all(not isinstance(v, Mapping) for v in first.values())


def _stack_pieces(pieces: list[tuple[str, pl.DataFrame | pl.LazyFrame]], cols: Columns) -> Stacked:
    names = [name for name, _ in pieces]
    if len(set(names)) != len(names):
        msg = f"runs must have distinct names. Got {names}."
        raise ValueError(msg)
    frames = []
    dtypes: tuple[pl.DataType, pl.DataType] | None = None
    for i, (name, frame) in enumerate(pieces):
        schema = frame.lazy().collect_schema()
        check_columns(
            schema, {"query": cols.query, "doc": cols.doc, "score": cols.score}, f"run {name!r}"
        )
        check_score_dtype(schema, cols.score)
        these = (schema[cols.query], schema[cols.doc])
        if dtypes is not None and these != dtypes:
            msg = (
                f"runs must share their id dtypes: run {names[0]!r} has {cols.query!r} "
                f"{dtypes[0]} and {cols.doc!r} {dtypes[1]}, run {name!r} has {these[0]} and "
                f"{these[1]}. Cast them to one dtype first."
            )
            raise TypeError(msg)
        dtypes = these
        frames.append(
            frame.select(
                pl.lit(i, pl.UInt32).alias(SYS),
                pl.col(cols.query).alias(Q),
                pl.col(cols.doc).alias(D),
                pl.col(cols.score).cast(pl.Float64).alias(S),
            )
        )
    lazy = any(isinstance(f, pl.LazyFrame) for _, f in pieces)
    assert dtypes is not None
    if lazy:
        stacked = pl.concat([f.lazy() for f in frames], how="vertical")
    else:  # eager: a chunk a run, not a thread's morsels as a plan's output would be
        eager = [f for f in frames if isinstance(f, pl.DataFrame)]
        stacked = pl.concat(eager, how="vertical", rechunk=False).lazy()
    return Stacked(stacked, tuple(names), lazy, dtypes)


def check_rows(
    frame: pl.DataFrame, systems: Sequence[str], cols: Columns, scaled: str | None = None
) -> None:
    """Raise on a null id or a NaN or null score, and with ``scaled`` (a normalisation of
    :data:`~polars_rankeval.fusion.normalize.SCALING` applied to the scores) on an
    infinite score, which would make the fused scores NaN."""
    nulls = frame.select(pl.col(Q).null_count(), pl.col(D).null_count(), pl.col(S).null_count())
    for (keyword, name), count in zip(
        [("query", cols.query), ("doc", cols.doc), ("score", cols.score)], nulls.row(0), strict=True
    ):
        if count:
            msg = f"runs column {name!r} has {count} null value(s); fusion needs every {keyword}."
            raise ValueError(msg)
    nan = frame.select(pl.col(S).is_nan().sum()).item()
    if nan:
        msg = f"runs column {cols.score!r} has {nan} NaN score(s)."
        raise ValueError(msg)
    infinite = frame.select(pl.col(S).is_infinite().sum()).item() if scaled else 0
    if infinite:
        msg = (
            f"runs column {cols.score!r} has {infinite} infinite score(s), which norm="
            f"{scaled!r} cannot scale (it reads each ranking's range of scores: the fused "
            f"scores would be NaN). Replace them, or fuse with norm='rank' or 'borda'."
        )
        raise ValueError(msg)


def scaled_norm(applied: str | None) -> str | None:
    """The normalisation applied to the scores (:attr:`Spec.norm`) when it scales them
    by their range (:data:`~polars_rankeval.fusion.normalize.SCALING`), else None.

    >>> scaled_norm("min-max"), scaled_norm("rank"), scaled_norm(None)
    ('min-max', None, None)
    """
    return applied if applied in SCALING else None


def check_pairs(frame: pl.DataFrame, pairs: Pairs, systems: Sequence[str]) -> None:
    """Raise on a document twice in one ranking (``pairs``: the rows of ``frame``'s)."""
    if len(pairs.repeated):
        involved = np.union1d(pairs.repeated, pairs.repeated + 1)
        row = frame.row(int(pairs.order[pairs.repeated].min()), named=True)
        msg = (
            f"run {systems[row[SYS]]!r} has document {row[D]!r} more than once for query "
            f"{row[Q]!r} ({len(involved)} duplicate rows): a run holds each (query, doc) once."
        )
        raise ValueError(msg)


def keyed(frame: pl.DataFrame, systems: Sequence[str], cols: Columns, validate: bool,
          ranks: bool = False, scaled: str | None = None) -> pl.DataFrame:  # fmt: skip
    """``frame`` with its integer keys (:func:`~polars_rankeval.fusion.keys.add_keys`),
    and with ``ranks`` the ranks of its scores, its rows checked (:func:`check_rows`,
    with ``scaled``; :func:`check_pairs`) with ``validate``."""
    if validate:
        check_rows(frame, systems, cols, scaled)
    out, pairs = add_keys(frame, len(systems), ranks)
    if validate:
        check_pairs(frame, pairs, systems)
    return out


def ranks_as_is(spec: Spec) -> bool:
    """Whether the fusion reads the ranks of the scores as they are: a rank-based method,
    no normalisation applied, no ``depth`` cut, ties by doc id descending (the engine's
    ranks), which :func:`keyed` then makes beside the pairs."""
    reads_ranks = METHODS[spec.method].needs == "ranks"
    return reads_ranks and spec.norm is None and spec.depth is None and spec.doc_order == "desc"


def fuse_plan(frame: pl.LazyFrame, spec: Spec) -> pl.LazyFrame:
    """The fused scores ``(Q, D, F)`` of the long table ``frame``, as a plan."""
    frame = keep_top(frame, spec.depth, spec.doc_order)
    method = METHODS[spec.method]
    names = frame.collect_schema().names()
    ranking = [G] if G in names else RANKING
    if method.needs == "scores" and spec.norm not in ("rank", "borda"):
        rows = with_scores(frame, spec.norm, ranking)
    elif spec.norm is None and R in names:  # ranked with the keys (:func:`ranks_as_is`)
        rows = frame
    else:
        rows = normalize(frame, spec.norm, spec.ctx.n_runs, spec.doc_order, ranking)
    fused = method.combine(rows, spec.ctx)
    if spec.max_docs is not None:
        fused = (
            with_ranks(fused, spec.doc_order, by=F)
            .filter(pl.col(R) <= spec.max_docs)
            .select(Q, D, F)
        )
    return fused


def in_pieces(frame: pl.DataFrame, n_runs: int) -> pl.DataFrame:
    """``frame`` as it is when its columns are cut in the same places, at most once a
    run (the runs' frames stacked: their ids are not copied), else in one chunk (the
    reads and gathers by row that follow cost several times more across a plan's
    many morsels)."""
    lengths = {tuple(frame[c].chunk_lengths()) for c in frame.columns}
    if len(lengths) == 1 and len(next(iter(lengths))) <= n_runs:
        return frame
    return frame.rechunk()


def fuse_frame(frame: pl.DataFrame, spec: Spec, systems: Sequence[str], cols: Columns,
               validate: bool) -> pl.DataFrame:  # fmt: skip
    """:func:`fuse_plan` of a frame in memory (:func:`in_pieces`), its rows checked
    first, and normalised first in numpy where :func:`contiguous_scores` can."""
    rows = keyed(in_pieces(frame, len(systems)), systems, cols, validate, ranks_as_is(spec),
                 scaled_norm(spec.norm))  # fmt: skip
    if spec.depth is None and (normalised := contiguous_scores(rows, spec.norm)) is not None:
        spec = replace(spec, norm=None)  # done: the scores are normalised
        rows = normalised
    return fuse_plan(rows.lazy(), spec).collect()


def finish(fused: pl.DataFrame, spec: Spec, cols: Columns, name: str) -> pl.DataFrame:
    """The user's columns (rows in no particular order: ``evaluate`` and
    ``write_trec_run`` rank them)."""
    return fused.select(
        pl.col(Q).alias(cols.query),
        pl.col(D).alias(cols.doc),
        pl.col(F).alias(cols.score),
        pl.lit(name, pl.String).alias(cols.system),
    )


def fuse_bucketed(stacked: Stacked, spec: Spec, cols: Columns, limit: int | str | None,
                  validate: bool) -> pl.DataFrame:  # fmt: skip
    """Fuse a lazy long table in bounded memory: held whole when it fits an eighth of
    the limit, else spilled to disk by a hash of the query id and fused bucket by
    bucket (a bucket holds every row of its queries; one over the budget is split
    again: :func:`fuse_spilled`)."""
    budget = memory_bytes(limit) // PIECE_SHARE
    empty = pl.DataFrame(schema={Q: stacked.id_dtypes[0], D: stacked.id_dtypes[1], F: pl.Float64})
    held: list[pl.DataFrame] = []
    size = 0
    with tempfile.TemporaryDirectory(prefix="rankeval-fuse-") as folder:
        spill: Spill | None = None
        for batch in stacked.frame.collect_batches(chunk_size=BATCH_ROWS):
            if spill is None:
                held.append(batch)
                size += nbytes(batch)
                if size > budget:
                    spill = Spill(Path(folder), Q, BUCKETS, flush_bytes=max(budget // 2, 1))
                    for part in held:
                        spill.add(part)
                    held = []
            else:
                spill.add(batch)
        if spill is None:
            whole = (
                pl.concat(held)
                if held
                else empty.select(pl.lit(0, pl.UInt32).alias(SYS), Q, D, pl.col(F).alias(S))
            )
            return fuse_frame(whole, spec, stacked.systems, cols, validate)
        spill.flush()
        fuse_one = partial(
            fuse_frame, spec=spec, systems=stacked.systems, cols=cols, validate=validate
        )
        outs = fuse_spilled(spill, fuse_one, budget, Path(folder), SPLITS)
    return pl.concat(outs) if outs else empty


def fuse_spilled(spill: Spill, fuse_one: Callable[[pl.DataFrame], pl.DataFrame], budget: int,
                 folder: Path, splits: int) -> list[pl.DataFrame]:  # fmt: skip
    """The fused rows of every bucket of ``spill``, one piece per bucket; a bucket over
    ``budget`` bytes is split again by another hash seed into buckets of its own (at
    most ``splits`` times: the rows of one query are never split), as ``evaluate``'s
    buckets are (:mod:`polars_rankeval.engine.buckets`)."""
    outs: list[pl.DataFrame] = []
    for b in range(spill.n_buckets):
        if not spill.has(b):
            continue
        if spill.size(b) > budget and splits > 0:
            inner = Spill(
                Path(tempfile.mkdtemp(dir=folder)), Q, BUCKETS,
                flush_bytes=max(budget // 2, 1), seed=spill.seed + 1,
            )  # fmt: skip
            for part in spill.parts(b):
                inner.add(part)
            inner.flush()
            outs += fuse_spilled(inner, fuse_one, budget, folder, splits - 1)
        else:
            outs.append(fuse_one(spill.read(b)))
    return outs


def fuse(
    runs: Runs,
    *,
    method: str = "wsum",
    norm: str | None = "min-max",
    weights: Sequence[float] | Mapping[str, float] | None = None,
    params: Mapping[str, Any] | None = None,
    name: str = "fused",
    depth: int | None = None,
    max_docs: int | None = None,
    doc_order: DocOrder = "desc",
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    system: str = "system",
    validate: bool = True,
    memory_limit: int | str | None = None,
) -> Any:
    r"""Fuse runs into one run: every method and normalisation of ranx, as Polars.

    Each run is normalised ranking by ranking (``norm``), then every (query, doc)
    any run retrieved gets one fused score (``method``), with ranx's formulas,
    parameter names and defaults (see :mod:`polars_rankeval.fusion.methods` and
    :mod:`polars_rankeval.fusion.normalize`). For a rank-based method, a run's ranks
    are those of its normalised scores, ties broken by doc id (``doc_order``); of its
    scores as they are under a normalisation that keeps their order (``min-max``,
    ``max``, ``sum``, ``zmuv``), as in ranx.

    .. math::

        \mathrm{wsum}(d) = \sum_{i} w_i \, \mathrm{norm}_i(d),
        \qquad \mathrm{rrf}(d) = \sum_{i \ni d} \frac{1}{k + r_i(d)}

    Parameters
    ----------
    runs
        One long frame with a ``system`` column (its runs taken in sorted order of
        the names), or a list of runs, or a ``{name: run}`` dict; each run a
        DataFrame, LazyFrame, pandas or Arrow frame, or a ``{query: {doc: score}}``
        dict. A query that some run lacks is fused from the runs that have it. A
        lazy long frame's runs are learned when the result is collected (a first
        streaming pass over its ``system`` column), and the options that depend on
        them (``weights``, per-run ``params``) are checked then.
    method
        ``"min"``, ``"max"``, ``"med"``, ``"sum"``, ``"anz"``, ``"mnz"``, ``"gmnz"``,
        ``"wsum"``, ``"wmnz"``, ``"mixed"``, ``"rrf"``, ``"isr"``, ``"log_isr"``,
        ``"logn_isr"``, ``"rbc"``, ``"bordafuse"``, ``"w_bordafuse"``,
        ``"condorcet"``, ``"w_condorcet"``, ``"probfuse"``, ``"segfuse"``,
        ``"slidefuse"``, ``"posfuse"``, ``"mapfuse"``, ``"bayesfuse"``.
    norm
        ``"min-max"`` (default), ``"min-max-inverted"``, ``"max"``, ``"sum"``,
        ``"zmuv"``, ``"rank"``, ``"borda"`` or None.
    weights
        The weighted methods' (``wsum``, ``wmnz``, ``mixed``, ``w_bordafuse``,
        ``w_condorcet``) weight of each run, in the runs' order or as
        ``{name: weight}``; default: equal weights summing to 1.
    params
        The method's parameters by ranx's names: ``k`` (rrf, default 60), ``gamma``
        (gmnz), ``sigma`` (logn_isr, 0.01), ``phi`` (rbc), ``w`` (slidefuse) and the
        trained ones' ``probs``, ``map_scores``, ``log_odds`` (one array or number per
        run; :func:`~polars_rankeval.optimize_fusion` trains them on qrels).
    name
        The fused run's ``system`` value.
    depth
        Fuse only each run's top ``depth`` documents per query (trectools: 1000).
    max_docs
        Keep the fused run's top ``max_docs`` documents per query (trectools: 1000).
    doc_order
        Equal scores, in the runs' rankings and at the ``max_docs`` cut: doc id
        ``"desc"`` (trec_eval, default) or ``"asc"`` (trectools), compared as strings.
    query, doc, score, system
        Column names, of the runs and of the result.
    validate
        Check the rows: null ids, NaN scores, a document twice in one ranking.
    memory_limit
        LazyFrame runs: the memory the fusion may take (as ``evaluate``'s; default
        1 GiB). Runs larger than an eighth of it are spilled to disk by a hash of
        the query id and fused bucket by bucket (a bucket over that split again).

    Returns
    -------
    DataFrame or LazyFrame (a LazyFrame when any run is one)
        ``query, doc, score, system``, in no particular order: a run that
        :func:`~polars_rankeval.evaluate` scores and
        :func:`~polars_rankeval.write_trec_run` writes as it is.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> bm25 = pl.DataFrame({"query": ["q1"] * 3, "doc": ["a", "b", "c"],
    ...                      "score": [12.0, 9.0, 3.0]})
    >>> dense = pl.DataFrame({"query": ["q1"] * 2, "doc": ["c", "a"], "score": [0.9, 0.7]})
    >>> pr.fuse({"bm25": bm25, "dense": dense}, method="rrf", norm=None).sort("doc")
    shape: (3, 4)
    ┌───────┬─────┬──────────┬────────┐
    │ query ┆ doc ┆ score    ┆ system │
    │ ---   ┆ --- ┆ ---      ┆ ---    │
    │ str   ┆ str ┆ f64      ┆ str    │
    ╞═══════╪═════╪══════════╪════════╡
    │ q1    ┆ a   ┆ 0.032522 ┆ fused  │
    │ q1    ┆ b   ┆ 0.016129 ┆ fused  │
    │ q1    ┆ c   ┆ 0.032266 ┆ fused  │
    └───────┴─────┴──────────┴────────┘

    ``a`` is first in one run and second in the other: 1/61 + 1/62.
    """
    cols = Columns(query, doc, score, system)
    if not isinstance(name, str):
        msg = f"name must be a str. Got {name!r}."
        raise TypeError(msg)
    options: dict[str, Any] = dict(
        method=method, norm=norm, weights=weights, params=params, depth=depth,
        max_docs=max_docs, doc_order=doc_order,
    )  # fmt: skip
    if is_lazy_long(runs):  # lazy in, lazy out: the runs are learned when collected
        frame = long_frame(runs, cols)
        check_options(**options)
        memory_bytes(memory_limit)
        schema = frame.collect_schema()

        def fused_when_collected() -> pl.DataFrame:
            stacked = stack_long(frame, cols)
            spec = make_spec(stacked, **options)
            return finish(fuse_bucketed(stacked, spec, cols, memory_limit, validate), spec,
                          cols, name)  # fmt: skip

        return pl.defer(fused_when_collected, schema=out_schema(schema, schema, cols))
    spec, stacked = prepare(runs, cols, **options)
    if not stacked.lazy:
        fused = fuse_frame(stacked.frame.collect(), spec, stacked.systems, cols, validate)
        return finish(fused, spec, cols, name)
    memory_bytes(memory_limit)  # checked now, used when collected
    return pl.defer(
        lambda: finish(
            fuse_bucketed(stacked, spec, cols, memory_limit, validate), spec, cols, name
        ),
        schema=out_schema(
            {cols.query: stacked.id_dtypes[0]}, {cols.doc: stacked.id_dtypes[1]}, cols
        ),
    )


def out_schema(
    query: Mapping[str, pl.DataType], doc: Mapping[str, pl.DataType], cols: Columns
) -> dict[str, pl.DataType]:
    """The fused run's schema: the ids' dtypes (read from ``query`` and ``doc``)."""
    return {
        cols.query: query[cols.query],
        cols.doc: doc[cols.doc],
        cols.score: pl.Float64(),
        cols.system: pl.String(),
    }


def check_options(
    *,
    method: str,
    norm: str | None,
    weights: Sequence[float] | Mapping[str, float] | None,
    params: Mapping[str, Any] | None,
    depth: int | None,
    max_docs: int | None,
    doc_order: DocOrder,
) -> str | None:
    """The options that need no run checked (the method's parameter names too); the
    canonical ``norm``."""
    check_choice("method", method, METHODS)
    canonical = canonical_norm(norm)
    check_choice("doc_order", doc_order, DocOrder)
    check_int("depth", depth, minimum=1, allow_none=True)
    check_int("max_docs", max_docs, minimum=1, allow_none=True)
    check_params(params, None, METHODS[method], method)
    return canonical


def make_spec(
    stacked: Stacked,
    *,
    method: str,
    norm: str | None,
    weights: Sequence[float] | Mapping[str, float] | None,
    params: Mapping[str, Any] | None,
    depth: int | None,
    max_docs: int | None,
    doc_order: DocOrder,
) -> Spec:
    """The fusion of ``stacked``'s runs: the options that depend on the runs checked."""
    if len(stacked.systems) < 2:
        msg = (
            f"fusion needs at least two runs. Got {len(stacked.systems)}: {list(stacked.systems)}."
        )
        raise ValueError(msg)
    spec_method = METHODS[method]
    ctx = Context(
        n_runs=len(stacked.systems),
        weights=check_weights(weights, params, stacked.systems, spec_method, method),
        params=check_params(params, stacked.systems, spec_method, method),
        doc_order=doc_order,
    )
    reads_scores = spec_method.needs != "ranks"
    return Spec(method, applied_norm(canonical_norm(norm), reads_scores), ctx, depth, max_docs)


def prepare(
    runs: Runs,
    cols: Columns,
    *,
    method: str,
    norm: str | None,
    weights: Sequence[float] | Mapping[str, float] | None,
    params: Mapping[str, Any] | None,
    depth: int | None,
    max_docs: int | None,
    doc_order: DocOrder,
) -> tuple[Spec, Stacked]:
    """Every option checked and the runs stacked, before any row is read."""
    options: dict[str, Any] = dict(
        method=method, norm=norm, weights=weights, params=params, depth=depth,
        max_docs=max_docs, doc_order=doc_order,
    )  # fmt: skip
    check_options(**options)
    stacked = stack_runs(runs, cols)
    return make_spec(stacked, **options), stacked


def check_weights(
    weights: Sequence[float] | Mapping[str, float] | None,
    params: Mapping[str, Any] | None,
    systems: Sequence[str],
    spec: Method,
    method: str,
) -> tuple[float, ...]:
    """The runs' weights in the runs' order (equal, summing to 1, when not given)."""
    if params is not None and "weights" in params:
        if weights is not None:
            msg = "weights given twice: as weights= and in params. Give them once."
            raise ValueError(msg)
        weights = params["weights"]
    if weights is None:
        return tuple([1.0 / len(systems)] * len(systems))
    if not spec.weighted:
        weighted = ", ".join(repr(m) for m, s in METHODS.items() if s.weighted)
        msg = f"method {method!r} takes no weights (the weighted methods: {weighted})."
        raise ValueError(msg)
    if isinstance(weights, Mapping):
        unknown = sorted(set(map(str, weights)) - set(systems))
        missing = [s for s in systems if s not in weights]
        if unknown or missing:
            msg = f"weights must name every run once: runs {list(systems)}; "
            msg += f"unknown {unknown}, missing {missing}."
            raise ValueError(msg)
        values = [weights[s] for s in systems]
    else:
        values = list(weights)
    if len(values) != len(systems):
        msg = f"weights must have one value per run ({len(systems)}: {list(systems)}). "
        msg += f"Got {len(values)}."
        raise ValueError(msg)
    for v in values:
        if (
            isinstance(v, bool)
            or not isinstance(v, int | float | np.floating | np.integer)
            or not math.isfinite(v)
        ):
            msg = f"weights must be finite numbers. Got {v!r}."
            raise ValueError(msg)
    return tuple(float(v) for v in values)


def check_params(
    params: Mapping[str, Any] | None, systems: Sequence[str] | None, spec: Method, method: str
) -> dict[str, Any]:
    """The method's parameters, defaults filled in; unknown or missing ones refused (the
    per-run ones' lengths too, when the runs ``systems`` are known)."""
    given = {k: v for k, v in (params or {}).items() if k != "weights"}
    accepted = set(spec.defaults) | set(spec.required)
    unknown = sorted(set(given) - accepted)
    if unknown:
        listed = ", ".join(sorted(accepted)) or "none"
        msg = f"method {method!r} has no parameter {unknown[0]!r} (its parameters: {listed})."
        raise ValueError(msg)
    missing = [p for p in spec.required if p not in given]
    if missing:
        how = " (train them with pr.optimize_fusion on qrels)" if spec.trained else ""
        msg = f"method {method!r} needs parameter(s) {missing} in params{how}."
        raise ValueError(msg)
    out = dict(spec.defaults) | given
    for key in ("probs", "log_odds", "map_scores"):
        if key in out and systems is not None and len(out[key]) != len(systems):
            msg = f"params[{key!r}] must hold one entry per run ({len(systems)}). "
            msg += f"Got {len(out[key])}."
            raise ValueError(msg)
    for key in ("k", "gamma", "sigma", "phi", "w"):
        if key in out and (isinstance(out[key], bool) or not isinstance(out[key], int | float)):
            msg = f"params[{key!r}] must be a number. Got {out[key]!r}."
            raise ValueError(msg)
    if "w" in out and (not isinstance(out["w"], int) or out["w"] < 0):
        msg = f"params['w'] (slidefuse's window) must be an int >= 0. Got {out['w']!r}."
        raise ValueError(msg)
    return out
