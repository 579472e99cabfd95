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
from typing import Any

import polars as pl

from polars_rankeval._typing import Order
from polars_rankeval.call import Call, check_needs
from polars_rankeval.catalogue import Measure
from polars_rankeval.engine.buckets import query_bucket
from polars_rankeval.inputs import as_frame
from polars_rankeval.lists import lists, score_catalog
from polars_rankeval.lists import score_lists as lists_values
from polars_rankeval.measures import parse_measures
from polars_rankeval.options import segment_columns
from polars_rankeval.side import check_side, reduce_side
from polars_rankeval.validation import (
    check_choice,
    check_columns,
    check_output_names,
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
    measures = call.list_measures
    reads_qrels = any("qrels" in m.needs for m in measures)
    reduced = reduce_side(side, query=o.query, doc=o.doc)
    n_buckets = list_buckets(run, call.memory_limit)
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
            reduced,
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
    return pl.concat(values) if len(values) > 1 else values[0]


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
    given = check_side(
        train=train, catalog=catalog, item_features=item_features, query=query, doc=doc
    )
    check_needs(parsed, frozenset(given))
    run = frame.lazy()

    def scored() -> pl.DataFrame:
        ls = lists(
            run,
            parsed,
            reduce_side(given, query=query, doc=doc),
            keys=[*groups, query],
            groups=groups,
            query=query,
            doc=doc,
            order=order,
            score=score,
            rank=rank,
        )
        out = score_catalog(ls, parsed).collect(engine="streaming")
        return out.sort(groups) if groups else out

    if isinstance(frame, pl.DataFrame):
        return scored()
    out_schema = pl.Schema({g: schema[g] for g in groups} | {str(m): pl.Float64 for m in parsed})
    return pl.defer(scored, schema=out_schema)
