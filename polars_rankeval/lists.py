"""The recommendation lists as a whole: the stage of the measures that read no judgment.

A measure of a list (novelty, popularity, diversity: ``over_lists`` in its
declaration) or of a system's whole recommendations (coverage, Gini: ``over_catalog``)
reads the run's rows, their place in the list and what the side inputs say of each
item (:mod:`polars_rankeval.side`), never the engine's judged rows. :func:`lists`
builds, lazily, the rows every such measure reads: the list keys, the item, its
position (:data:`POS`) and the per-item columns, the test interactions as a flag
(:data:`RELEVANT`) when a measure needs them; each measure reduces them with Polars
group-bys (:meth:`Lists.per_list`) and :func:`score_lists` joins the values onto every
list of the run.

The position of an item: under ``order="score"`` its place by score descending, equal
scores by item id descending compared as strings (trec_eval's rule, as the engine
orders a ranking); under ``order="rank"`` the run's rank as given (RecTools: an item of
rank <= k is in the top k, a gap in the ranks is a missing item); under
``order="presorted"``, its row order within the list.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import polars as pl

from polars_rankeval.catalogue import Measure
from polars_rankeval.side import INTERACTIONS, ITEM_USERS, POP_RANK, Side

POS = "__rk_pos"
"""The item's position in its list (1 = top)."""
RELEVANT = "__rk_relevant"
"""Whether the item is among the user's test interactions (grade >= the relevance level)."""


@dataclass(frozen=True)
class Lists:
    """The rows of the recommendation lists, lazily, and what the measures read of them."""

    rows: pl.LazyFrame
    """``keys, doc, POS`` and the per-item columns of the side inputs (cut at the
    largest cutoff asked), and :data:`RELEVANT` when a measure reads the qrels."""
    every: pl.LazyFrame
    """One row per list of the run: its keys."""
    keys: tuple[str, ...]
    """The columns that identify a list: ``[*by], [system], query``."""
    groups: tuple[str, ...]
    """The columns that identify a system and segment: ``[*by], [system]``."""
    query: str
    doc: str
    side: Side
    qrels: pl.LazyFrame | None = None
    """``query, doc`` of the relevant test interactions, distinct (when read)."""

    def at(self, k: int | None) -> pl.LazyFrame:
        """The rows within the top ``k`` (every row for None)."""
        return self.rows if k is None else self.rows.filter(pl.col(POS) <= k)

    @staticmethod
    def inside(measure: Measure) -> pl.Expr:
        """Whether a row is within the measure's cutoff (every row without one)."""
        k = measure.cutoff if isinstance(measure.cutoff, int) else None
        return pl.lit(True) if k is None else pl.col(POS) <= k

    def per_list(self, measure: Measure, value: pl.Expr) -> pl.Expr:
        """The measure's column: ``value``, an aggregation over a list's rows that reads
        them through :meth:`inside` (``x.filter(ls.inside(m)).mean()``); the
        aggregations of every measure are computed in one group-by
        (:func:`score_lists`)."""
        return value.alias(str(measure))

    def exposure(self, k: int | None) -> pl.LazyFrame:
        """``groups, doc, count``: the rows of each item within the top ``k``, per system
        and segment."""
        return self.at(k).group_by([*self.groups, self.doc]).agg(pl.len().alias("count"))

    def popularity(self) -> pl.LazyFrame:
        """The per-item table of ``train`` (:data:`INTERACTIONS`, ...), lazily."""
        if self.side.items is None:
            msg = "The measure reads the training interactions: pass train=."
            raise ValueError(msg)
        return self.side.items.lazy()

    def train_counts(self) -> pl.LazyFrame:
        """``query, doc, ROWS``: the training rows per (user, item), lazily."""
        if self.side.user_items is None:
            msg = "The measure reads the training interactions: pass train=."
            raise ValueError(msg)
        return self.side.user_items


def positions(
    run: pl.LazyFrame, *, keys: Sequence[str], doc: str, order: str, score: str, rank: str
) -> pl.Expr:
    """The position of each row in its list (see the module docstring).

    Examples
    --------
    >>> run = pl.LazyFrame({"q": ["a", "a", "a"], "d": ["x", "z", "y"], "s": [1.0, 1.0, 2.0]})
    >>> run.select(positions(run, keys=["q"], doc="d", order="score", score="s",
    ...                      rank="r")).collect().to_series().to_list()
    [3, 2, 1]
    """
    if order == "rank":
        return pl.col(rank).cast(pl.Int64).alias(POS)
    if order == "presorted":
        return pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over(keys).alias(POS)
    by = [pl.col(score).cast(pl.Float64), pl.col(doc).cast(pl.String)]
    place = pl.int_range(1, pl.len() + 1, dtype=pl.Int64)
    return place.over(keys, order_by=by, descending=True).alias(POS)


def lists(
    run: pl.LazyFrame,
    measures: Sequence[Measure],
    side: Side,
    *,
    keys: Sequence[str],
    groups: Sequence[str],
    query: str,
    doc: str,
    order: str,
    score: str,
    rank: str,
    qrels: pl.LazyFrame | None = None,
    relevance: str = "relevance",
    rel_level: int = 1,
) -> Lists:
    """The :class:`Lists` the ``measures`` read, lazily, from the run and the side inputs."""
    cutoffs = [m.cutoff for m in measures]
    deepest = None if any(c is None for c in cutoffs) else max(int(c or 0) for c in cutoffs)
    value = [] if order == "presorted" else [{"score": score, "rank": rank}[order]]
    base = run.select(*keys, doc, *value)
    rows = base.with_columns(positions(base, keys=keys, doc=doc, order=order, score=score,
                                       rank=rank)).select(*keys, doc, POS)  # fmt: skip
    if deepest is not None:
        rows = rows.filter(pl.col(POS) <= deepest)
    if side.items is not None:
        items = side.items.lazy().select(doc, INTERACTIONS, ITEM_USERS, POP_RANK)
        rows = rows.join(items, on=doc, how="left")
    relevant = None
    if qrels is not None:
        relevant = (
            qrels.filter(pl.col(relevance).cast(pl.Float64) >= rel_level)
            .select(query, doc)
            .unique()
        )
        flagged = relevant.with_columns(pl.lit(True).alias(RELEVANT))
        rows = rows.join(flagged, on=[query, doc], how="left").with_columns(
            pl.col(RELEVANT).fill_null(False)
        )
    every = base.select(keys).unique()
    return Lists(rows, every, tuple(keys), tuple(groups), query, doc, side, relevant)


def materialized(ls: Lists) -> Lists:
    """``ls`` with its rows and lists computed once, for the measures that each read
    them (a plan per measure would read and join the run again for each)."""
    rows, every = pl.collect_all([ls.rows, ls.every])
    return replace(ls, rows=rows.lazy(), every=every.lazy())


def score_lists(ls: Lists, measures: Sequence[Measure]) -> pl.LazyFrame:
    """Every list of the run (:attr:`Lists.every`) with each measure's value (null where
    a measure leaves the list out)."""
    ls = materialized(ls)
    keys = list(ls.keys)
    out = ls.every
    aggregations = []
    for m in measures:
        assert m.family.over_lists is not None
        value = m.family.over_lists(m, ls)
        if isinstance(value, pl.Expr):
            aggregations.append(value)
        else:
            out = out.join(value, on=keys, how="left", nulls_equal=True)
    if aggregations:
        together = ls.rows.group_by(keys).agg(aggregations)
        out = out.join(together, on=keys, how="left", nulls_equal=True)
    filled = [
        pl.col(str(m)).fill_null(m.family.empty_list)
        for m in measures
        if m.family.empty_list is not None
    ]
    return out.with_columns(filled).select(*keys, *(str(m) for m in measures))


def score_catalog(ls: Lists, measures: Sequence[Measure]) -> pl.LazyFrame:
    """Every system and segment of the run with each catalogue measure's value."""
    groups = list(ls.groups)
    ls = materialized(ls)
    values = []
    for m in measures:
        assert m.family.over_catalog is not None
        values.append(m.family.over_catalog(m, ls))
    return with_groups(ls.every.select(groups).unique(), values, groups)


def with_groups(
    every: pl.LazyFrame, values: Sequence[pl.LazyFrame], groups: Sequence[str]
) -> pl.LazyFrame:
    """Every system and segment (``every``: the distinct ``groups`` of the run) with the
    catalogue measures' ``values`` (each ``groups`` and one column; null for a group a
    measure has no value for); one row without ``groups``."""
    groups = list(groups)
    out = every if groups else pl.LazyFrame({"__rk_one": [0]})
    for value in values:
        if groups:
            out = out.join(value, on=groups, how="left", nulls_equal=True)
        else:
            out = out.join(value, how="cross")
    return out.drop("__rk_one", strict=False)
