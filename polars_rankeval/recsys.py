"""Recommendation measures at the API boundary: the lists' measures and the catalogue's.

:func:`evaluate_catalog` scores the measures of a system's recommendations as a
whole (coverage, the Gini index and entropy of exposure, personalization), one row
per system and segment. :func:`score_lists` is what :func:`polars_rankeval.evaluate`
runs for the measures of each list (novelty, popularity, diversity, serendipity):
the side inputs reduced once (:mod:`polars_rankeval.side`), then Polars group-bys
over the lists (:mod:`polars_rankeval.lists`), lazily.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from polars_rankeval._typing import Order
from polars_rankeval.call import Call, check_needs
from polars_rankeval.catalogue import Measure
from polars_rankeval.engine.buckets import query_bucket
from polars_rankeval.inputs import as_frame
from polars_rankeval.lists import Lists, lists, materialized, score_catalog, with_groups
from polars_rankeval.lists import score_lists as lists_values
from polars_rankeval.measures import parse, parse_measures
from polars_rankeval.metrics.exposure import Sums, add, split_of
from polars_rankeval.options import segment_columns
from polars_rankeval.side import Side, check_side, reduce_side
from polars_rankeval.validation import (
    check_choice,
    check_columns,
    check_output_names,
    check_reserved,
    checked_run_rows,
    system_column,
)

SIDE_INPUTS = ("train", "catalog", "item_features")


LIST_ROW_BYTES = 100
"""About what scoring the measures of lists holds per run row: the row with its
position and per-item columns, and the group-bys' and joins' state (measured:
benchmarks/bench_recsys.py's 20 million rows took a peak of 1.7 GiB with ILD in one
piece, reading included, about 90 bytes a row). ``ILD`` with
``distance=jaccard`` or ``table`` forms each list's pairs, (k - 1) / 2 rows per row of a
list of k items, beyond this estimate."""


def list_buckets(run: pl.DataFrame | pl.LazyFrame, limit: int) -> int:
    """How many buckets of queries the run's lists are scored in, so that each holds
    about ``limit`` bytes (:data:`LIST_ROW_BYTES` a row); counting a LazyFrame's rows
    reads it once.

    Examples
    --------
    >>> run = pl.DataFrame({"query": ["u"] * 10})
    >>> list_buckets(run, 1 << 30), list_buckets(run.lazy(), 300)
    (1, 4)
    """
    rows = run.height if isinstance(run, pl.DataFrame) else run.select(pl.len()).collect().item()
    return max(1, math.ceil(rows * LIST_ROW_BYTES / limit))


def score_lists(
    run: pl.DataFrame | pl.LazyFrame,
    qrels: pl.DataFrame | pl.LazyFrame,
    call: Call,
    side: dict[str, pl.DataFrame | pl.LazyFrame],
) -> pl.DataFrame:
    """The values of ``call``'s measures of lists for every list of ``run``: its keys
    and one column per measure (null where a measure leaves the list out).

    The side inputs are reduced once; the lists are scored bucket by bucket by a hash
    of the query id (:func:`~polars_rankeval.engine.buckets.query_bucket`, as the
    engine's buckets), as many buckets as ``call.memory_limit`` needs
    (:func:`list_buckets`): a list's measures read its own rows and the side inputs'
    totals only, so each bucket gives its lists' final values."""
    o = call.options
    history = any(m.reads_history for m in call.list_measures)
    reduced = reduce_side(side, query=o.query, doc=o.doc, history=history)
    return list_values(run, qrels, call, reduced, list_buckets(run, call.memory_limit))


def list_values(
    run: pl.DataFrame | pl.LazyFrame,
    qrels: pl.DataFrame | pl.LazyFrame,
    call: Call,
    side: Side,
    n_buckets: int = 1,
) -> pl.DataFrame:
    """:func:`score_lists` with the side inputs reduced (:func:`~polars_rankeval.side.reduce_side`),
    in ``n_buckets`` buckets of queries: what a Dask task runs on its bucket (in one)."""
    o = call.options
    measures = call.list_measures
    reads_qrels = any("qrels" in m.needs for m in measures)
    values = []
    for bucket in range(n_buckets):
        where = query_bucket(o.query, n_buckets) == bucket
        part = run.lazy() if n_buckets == 1 else run.lazy().filter(where)
        judged = None
        if reads_qrels:
            judged = qrels.lazy() if n_buckets == 1 else qrels.lazy().filter(where)
        ls = lists(
            part,
            measures,
            side,
            keys=o.keys,
            groups=[*o.by, *([o.system] if o.system else [])],
            query=o.query,
            doc=o.doc,
            order=o.order,
            score=o.score,
            rank=o.rank,
            qrels=judged,
            relevance=o.relevance,
            rel_level=o.rel_level,
        )
        values.append(lists_values(ls, measures).collect(engine="streaming"))
    return pl.concat(values, how="vertical_relaxed") if len(values) > 1 else values[0]


def with_accuracy(
    values: pl.DataFrame, accuracy: pl.DataFrame, keys: Sequence[str]
) -> pl.DataFrame:
    """The lists' values beside the judged measures' (``accuracy``: the scored rankings),
    joined on the ranking keys (query ids typed as ``accuracy`` types them); a ranking on
    one side only gets nulls on the other."""
    values = values.with_columns(pl.col(k).cast(accuracy.schema[k]) for k in keys)
    return accuracy.join(values, on=list(keys), how="full", coalesce=True, nulls_equal=True)


# --------------------------------------------------------------------------- the catalogue


@dataclass(frozen=True)
class CatalogJob:
    """One :func:`evaluate_catalog`, checked on the schema: plain data (measure names),
    so that it pickles to a Dask worker."""

    measures: tuple[str, ...]
    """Canonical names, in the order asked."""
    groups: tuple[str, ...]
    """``[*by], [system]``: one output row per value of them."""
    query: str
    doc: str
    score: str
    rank: str
    order: str

    @property
    def parsed(self) -> list[Measure]:
        return [parse(name) for name in self.measures]

    @property
    def columns(self) -> list[str]:
        """The columns of the recommendations the measures read."""
        value = {"score": [self.score], "rank": [self.rank]}.get(self.order, [])
        return [*self.groups, self.query, self.doc, *value]

    def lists(self, recs: pl.DataFrame | pl.LazyFrame, side: Side) -> Lists:
        """The lists of ``recs`` the measures read (:func:`~polars_rankeval.lists.lists`),
        its rows checked as they are read (:func:`checked_run_rows`: a null id would be
        one more item, a NaN score would rank first)."""
        checked = checked_run_rows(recs.lazy(), ids=[*self.groups, self.query, self.doc],
                                   score=self.score if self.order == "score" else None,
                                   rank=self.rank if self.order == "rank" else None,
                                   table="recs")  # fmt: skip
        return lists(checked, self.parsed, side, keys=[*self.groups, self.query],
                     groups=self.groups, query=self.query, doc=self.doc, order=self.order,
                     score=self.score, rank=self.rank)  # fmt: skip


def prepare_catalog(
    schema: pl.Schema,
    measures: str | Measure | Iterable[str | Measure],
    *,
    by: str | Sequence[str] | None,
    query: str,
    doc: str,
    score: str,
    rank: str,
    system: str | None,
    order: str,
    conventions: str | None,
) -> CatalogJob:
    """Check :func:`evaluate_catalog`'s measures, columns and options on the schema of
    the recommendations: the job to run."""
    check_choice("order", order, ("score", "rank", "presorted"))
    parsed = parse_measures(measures, conventions=conventions)
    for m in parsed:
        if not m.of_catalog:
            msg = (
                f"{m} is not a measure of a system's recommendations as a whole: "
                f"score it with pr.evaluate (catalogue measures: CatalogCoverage, Entropy, "
                f"Gini, Personalization, UserCoverage)."
            )
            raise ValueError(msg)
    system = system_column(system, schema)
    value = {"score": {"score": score}, "rank": {"rank": rank}}.get(order, {})
    check_columns(schema, {"query": query, "doc": doc} | value, "recs")
    segments = segment_columns(by, schema, taken=[query, doc, score, rank, system])
    groups = [*segments, *([system] if system else [])]
    check_output_names(groups, [str(m) for m in parsed])
    roles = {"by": segments, "system": system, "query": query, "doc": doc}
    check_reserved(roles, ("count",), "evaluate_catalog")
    return CatalogJob(tuple(str(m) for m in parsed), tuple(groups), query, doc, score, rank,
                      order)  # fmt: skip


@dataclass(frozen=True)
class CatalogPiece:
    """A bucket of users' part of the catalogue measures, as a Dask reduce task returns
    it: the sums over its lists (:class:`~polars_rankeval.metrics.exposure.Sums`)."""

    groups: pl.DataFrame
    """The distinct systems and segments of the bucket's lists."""
    sums: list[list[tuple[tuple[str, ...], pl.DataFrame]]]
    """Per measure, its parts: the keys and the frame of each."""
    rows: int
    """The bucket's rows of the recommendations."""


def catalog_piece(recs: pl.DataFrame, job: CatalogJob, side: Side) -> CatalogPiece:
    """The parts of the catalogue measures over the lists of ``recs`` (every list in it
    whole: a bucket of users)."""
    ls = materialized(job.lists(recs, side))
    sums = []
    for m in job.parsed:
        split = split_of(m)
        assert split is not None
        parts = split.parts(m, ls)
        frames = pl.collect_all([p.frame for p in parts])
        sums.append([(p.keys, f) for p, f in zip(parts, frames, strict=True)])
    groups = ls.every.select(job.groups).unique().collect()
    return CatalogPiece(groups, sums, recs.height)


def catalog_values(pieces: Sequence[CatalogPiece], job: CatalogJob, side: Side) -> pl.DataFrame:
    """The catalogue measures from the pieces of all users: each measure's parts added
    (:func:`~polars_rankeval.metrics.exposure.add`), then its value, as
    :func:`evaluate_catalog` gives it."""
    groups = list(job.groups)
    values = []
    for i, m in enumerate(job.parsed):
        split = split_of(m)
        assert split is not None
        n_parts = len(pieces[0].sums[i])
        sums = tuple(
            add([Sums(p.sums[i][j][0], p.sums[i][j][1].lazy()) for p in pieces])
            for j in range(n_parts)
        )
        values.append(split.value(m, sums, groups, side))
    every = pl.concat([p.groups for p in pieces], how="vertical_relaxed").lazy().unique()
    out = with_groups(every, values, groups).collect()
    return out.sort(groups) if groups else out


def splittable(measures: Iterable[Measure]) -> None:
    """Refuse, by name, a catalogue measure that cannot be summed over buckets of users
    (one without a :class:`~polars_rankeval.metrics.exposure.Split`)."""
    for m in measures:
        if split_of(m) is None:
            msg = (
                f"{m} cannot be scored on Dask: its value is not a sum over the users' "
                "lists that buckets of users can add up. Score it with pr.evaluate_catalog."
            )
            raise ValueError(msg)


def evaluate_catalog(
    recs: Any,
    measures: str | Measure | Iterable[str | Measure],
    *,
    train: Any = None,
    catalog: Any = None,
    item_features: Any = None,
    by: str | Sequence[str] | None = None,
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    rank: str = "rank",
    system: str | None = "system",
    order: Order = "score",
    conventions: str | None = None,
) -> pl.DataFrame | pl.LazyFrame:
    r"""Score the measures of a system's recommendations as a whole: one row per system
    (and segment).

    The recommendations are a run (``query``: the user, ``doc``: the item, ordered by
    ``score`` or by ``rank``); each measure reads the items of every list within its
    cutoff (``CatalogCoverage@10``: the top 10 of each list) and, where it needs
    them, the side inputs. See docs/recsys.md for the measures and their formulas.

    Parameters
    ----------
    recs
        ``[system], query, doc, score`` (or ``rank``): a Polars, pandas or Arrow frame,
        or a LazyFrame (lazy in, lazy out).
    measures
        Catalogue measures: ``CatalogCoverage``, ``Entropy``, ``Gini``,
        ``Personalization``, ``UserCoverage`` (with a cutoff), or a tool's names
        (RecTools' ``CatalogCoverage@10``, RecBole's ``ItemCoverage@10``).
    train
        The training interactions, ``query, doc`` (the same column names as ``recs``):
        for ``UserCoverage``.
    catalog
        The ids of the items that could be recommended: a frame with the ``doc``
        column, or a Series or list of ids; for ``Gini`` and the shares of coverage.
    item_features
        Not read by the catalogue measures (accepted for symmetry with
        :func:`polars_rankeval.evaluate`).
    by
        Segment columns of ``recs`` (a day, a device): one row per segment and system.
    query, doc, score, rank, system
        Column names; ``system`` is used when ``recs`` has it.
    order
        ``"score"`` (descending, equal scores by item id descending), ``"rank"`` (the
        ``rank`` column as given: rank <= k is in the top k) or ``"presorted"``.
    conventions
        A preset whose names are read (``"rectools"``, ``"recbole"``, ...).

    Returns
    -------
    DataFrame or LazyFrame
        ``[*by], [system]`` and one Float64 column per measure, sorted by the keys.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> recs = pl.DataFrame({"query": ["u1", "u1", "u2", "u2"],
    ...                      "doc": ["a", "b", "a", "c"], "rank": [1, 2, 1, 2]})
    >>> pr.evaluate_catalog(recs, ["CatalogCoverage@2", "CatalogCoverage(normalize=true)@1",
    ...                            "Gini@2"], catalog=["a", "b", "c", "d"], order="rank")
    shape: (1, 3)
    ┌───────────────────┬─────────────────────────────────┬────────┐
    │ CatalogCoverage@2 ┆ CatalogCoverage(normalize=True… ┆ Gini@2 │
    │ ---               ┆ ---                             ┆ ---    │
    │ f64               ┆ f64                             ┆ f64    │
    ╞═══════════════════╪═════════════════════════════════╪════════╡
    │ 3.0               ┆ 0.25                            ┆ 0.375  │
    └───────────────────┴─────────────────────────────────┴────────┘

    Three of the four items are shown in the top 2 (one, a, in the top 1: 1/4).
    Item a takes 2 of the 4 slots, b and c one each, d none: the exposures sorted,
    0, 1, 1, 2, weighted by RecBole's :math:`2j - |I| - 1` = -3, -1, 1, 3, give a
    Gini index of :math:`(0 - 1 + 1 + 6) / (4 \cdot 4) = 0.375`.
    """
    frame = as_frame(recs, "recs")
    schema = frame.lazy().collect_schema()
    job = prepare_catalog(schema, measures, by=by, query=query, doc=doc, score=score, rank=rank,
                          system=system, order=order, conventions=conventions)  # fmt: skip
    parsed, groups = job.parsed, list(job.groups)
    given = check_side(train=train, catalog=catalog, item_features=item_features, query=query,
                       doc=doc, run=("recs", schema), keys=[query, *groups])  # fmt: skip
    check_needs(parsed, frozenset(given))
    run = frame.lazy()

    def scored() -> pl.DataFrame:
        history = any(m.reads_history for m in parsed)
        ls = job.lists(run, reduce_side(given, query=query, doc=doc, history=history))
        out = score_catalog(ls, parsed).collect(engine="streaming")
        return out.sort(groups) if groups else out

    if isinstance(frame, pl.DataFrame):
        return scored()
    out_schema = pl.Schema({g: schema[g] for g in groups} | {str(m): pl.Float64 for m in parsed})
    return pl.defer(scored, schema=out_schema)
