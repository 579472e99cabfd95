"""The side inputs of the recommendation measures, checked and reduced once.

:func:`polars_rankeval.evaluate` and :func:`polars_rankeval.evaluate_catalog` take,
besides the recommendations, the training interactions (``train=``: user, item;
RecTools' ``prev_interactions``), the ids of the items that could be recommended
(``catalog=``) and the items' features (``item_features=``). Each may be a Polars,
pandas or Arrow frame or a LazyFrame, with the run's column names for the user
(``query``) and the item (``doc``). :func:`check_side` checks their columns on the
schemas, before any work; :func:`reduce_side` reduces them, once per call, to what the
measures read:

* the per-item table: the item's interactions in ``train`` (:data:`INTERACTIONS`),
  the distinct users who interacted with it (:data:`ITEM_USERS`) and the dense rank of
  its interaction count, 1 for the most popular (:data:`POP_RANK`);
* the numbers: users and interactions in ``train``, items in the catalogue;
* the features in long form: ``doc, FEATURE, VALUE``, one row per item and feature.

Item features come in two shapes. *Wide*: the item column and one column per feature
(every column but the item); an item with a null or NaN feature value, or absent from
the table, has no known features (RecTools' ``PairwiseHammingDistanceCalculator``
sets the distances of its pairs to NaN, which its mean skips). *Long*: the item
column and the columns ``feature`` and ``value``, one row per item and feature it has;
an item absent from the table has no known features, and a feature an item lacks
differs from any value another item has (sparse features, such as genres). *Pairs*:
exactly the columns ``item_a``, ``item_b`` and ``distance``, the distance of each pair of
items (``ILD(distance=table)`` reads it, in either order of the pair).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

import polars as pl

from polars_rankeval.inputs import as_frame
from polars_rankeval.validation import check_columns, check_same_dtypes

INTERACTIONS = "__rk_interactions"
"""Per item: its rows in the training interactions (its popularity)."""
ITEM_USERS = "__rk_item_users"
"""Per item: the distinct users who interacted with it in the training interactions."""
POP_RANK = "__rk_pop_rank"
"""Per item: the dense rank of its interaction count, descending (1: the most popular)."""
ROWS = "__rk_rows"
"""Per (user, item) of the training interactions: its rows."""
FEATURE = "__rk_feature"
"""The feature name of a long feature row."""
VALUE = "__rk_value"
"""The feature value of a long feature row (a string for Hamming, a float for cosine)."""
LONG_FEATURES = ("feature", "value")
"""The columns that make ``item_features`` long: item, feature, value."""
PAIR_COLUMNS = ("item_a", "item_b", "distance")
"""The columns of ``item_features`` given as a table of pairwise distances."""


@dataclass(frozen=True)
class Side:
    """The side inputs of one call, reduced (see the module docstring)."""

    items: pl.DataFrame | None = None
    """``doc, INTERACTIONS, ITEM_USERS, POP_RANK``: one row per item of ``train``."""
    n_users: int | None = None
    """Distinct users of ``train``."""
    n_interactions: int | None = None
    """Rows of ``train``."""
    users: pl.DataFrame | None = None
    """The distinct users of ``train`` (one column, the run's ``query``)."""
    user_items: pl.LazyFrame | None = None
    """``query, doc, ROWS``: the rows of ``train`` per (user, item), computed with the
    per-item table when a measure reads them (the measures of item co-occurrence)."""
    n_catalog: int | None = None
    """Distinct items of the catalogue."""
    features: pl.LazyFrame | None = None
    """``doc, FEATURE, VALUE`` (VALUE a string), one row per item and feature."""
    numeric_features: pl.LazyFrame | None = None
    """The same with VALUE as Float64 (cosine), when every value is a number."""
    sparse: bool = False
    """Whether the features came long (a feature an item lacks differs from any value)."""
    wide: pl.LazyFrame | None = None
    """Wide features as given (``doc`` and one column per feature), the items with a
    missing value left out: Hamming reads them without a long form."""
    distances: pl.LazyFrame | None = None
    """``item_a, item_b, distance`` (Float64) in both orders of each pair, when
    ``item_features`` is a table of pairwise distances (:data:`PAIR_COLUMNS`)."""


def _frame(obj: Any, name: str) -> pl.DataFrame | pl.LazyFrame:
    if isinstance(obj, pl.Series):
        return obj.to_frame()
    return as_frame(obj, name)


def catalog_frame(catalog: Any, doc: str) -> pl.DataFrame | pl.LazyFrame:
    """``catalog`` as a frame with the item column ``doc``: a frame that has it, or a
    Series, list, set or array of ids.

    Examples
    --------
    >>> catalog_frame(["a", "b"], "item").columns
    ['item']
    """
    if isinstance(catalog, pl.DataFrame | pl.LazyFrame):
        return catalog
    if isinstance(catalog, pl.Series):
        return catalog.alias(doc).to_frame()
    if isinstance(catalog, Sequence | set | frozenset | range) and not isinstance(catalog, str):
        return pl.Series(doc, list(catalog)).to_frame()
    if hasattr(catalog, "__array__") and getattr(catalog, "ndim", 1) == 1:
        return pl.Series(doc, catalog).to_frame()
    return as_frame(catalog, "catalog")


def side_keys(
    query: str | Sequence[str], system: str | None, by: str | Sequence[str] | None
) -> list[str]:
    """The run's key columns (user, system, segments) named by the options.

    Examples
    --------
    >>> side_keys(["user", "session"], "system", "day")
    ['user', 'session', 'system', 'day']
    """
    given: list[object] = []
    for option in (query, system, by):
        given += list(option) if isinstance(option, list | tuple) else [option]
    return [name for name in given if isinstance(name, str)]  # bad ones: refused later


def check_side(
    *,
    train: Any,
    catalog: Any,
    item_features: Any,
    query: str,
    doc: str,
    run: tuple[str, pl.Schema] | None = None,
    keys: Sequence[str] = (),
) -> dict[str, pl.DataFrame | pl.LazyFrame]:
    """The side inputs given, as Polars frames, their columns checked on the schemas.

    With ``run`` (the name and schema of the rankings), the user and item ids that
    ``train`` and ``item_features`` are joined on must have the run's dtypes, and no
    feature column may be named like one of the run's ``keys`` (user, system,
    segments), which the features join.

    Raises
    ------
    ValueError
        A side input lacks the user or item column, or ``item_features`` has no
        feature column.

    Examples
    --------
    >>> train = pl.DataFrame({"user": [1], "item": ["a"]})
    >>> sorted(check_side(train=train, catalog=None, item_features=None,
    ...                   query="user", doc="item"))
    ['train']
    >>> check_side(train=train, catalog=None, item_features=None, query="u", doc="item")
    Traceback (most recent call last):
    ...
    ValueError: train is missing column 'u' (it has: 'user', 'item'). If it is named ...
    """
    given: dict[str, pl.DataFrame | pl.LazyFrame] = {}

    def same_dtypes(table: str, schema: pl.Schema, pairs: Mapping[str, str]) -> None:
        """``pairs``: the side input's column -> the run's column it is matched with."""
        if run is not None:
            joined = {side: own for side, own in pairs.items() if own in run[1]}
            check_same_dtypes((table, schema), run, joined, integers_match=True)

    if train is not None:
        frame = _frame(train, "train")
        schema = frame.lazy().collect_schema()
        check_columns(schema, {"query": query, "doc": doc}, "train")
        same_dtypes("train", schema, {query: query, doc: doc})
        given["train"] = frame
    if catalog is not None:
        frame = catalog_frame(catalog, doc)
        check_columns(frame.lazy().collect_schema(), {"doc": doc}, "catalog")
        given["catalog"] = frame
    if item_features is not None:
        frame = _frame(item_features, "item_features")
        schema = frame.lazy().collect_schema()
        if set(schema.names()) == set(PAIR_COLUMNS):
            if not schema["distance"].is_numeric():
                msg = f"item_features' distance column must be numeric. Got {schema['distance']}."
                raise ValueError(msg)
            same_dtypes("item_features", schema, dict.fromkeys(PAIR_COLUMNS[:2], doc))
            given["item_features"] = frame
            return given
        check_columns(schema, {"doc": doc}, "item_features")
        same_dtypes("item_features", schema, {doc: doc})
        clash = [c for c in schema.names() if c != doc and c in keys]
        if clash:
            msg = (
                f"item_features has a feature column {clash[0]!r}, the name of a key column "
                f"of the {run[0] if run else 'run'} (user, system or segment): rename the "
                f"feature first, e.g. item_features.rename({{{clash[0]!r}: "
                f"{clash[0] + '_feature'!r}}})."
            )
            raise ValueError(msg)
        if len(schema) < 2:
            msg = (
                f"item_features has no feature column: give the item column {doc!r} and "
                f"one column per feature (wide), or the columns 'feature' and 'value' (long)."
            )
            raise ValueError(msg)
        given["item_features"] = frame
    return given


def reduce_side(
    given: Mapping[str, pl.DataFrame | pl.LazyFrame],
    *,
    query: str,
    doc: str,
    history: bool = False,
) -> Side:
    """:class:`Side`: the checked side inputs (:func:`check_side`) reduced once; with
    ``history`` (a measure reads it) also the training rows per (user, item).

    Examples
    --------
    >>> train = pl.DataFrame({"user": [1, 1, 2, 2], "item": ["a", "b", "a", "a"]})
    >>> side = reduce_side({"train": train}, query="user", doc="item")
    >>> side.n_users, side.n_interactions
    (2, 4)
    >>> side.items.sort("item").rows()
    [('a', 3, 2, 1), ('b', 1, 1, 2)]
    """
    out: dict[str, Any] = {}
    if "train" in given:
        train = given["train"].lazy().select(query, doc)
        counts = train.group_by(doc).agg(
            pl.len().cast(pl.Int64).alias(INTERACTIONS),
            pl.col(query).n_unique().cast(pl.Int64).alias(ITEM_USERS),
        )
        counts = counts.with_columns(
            pl.col(INTERACTIONS).rank("dense", descending=True).cast(pl.Int64).alias(POP_RANK)
        )
        users = train.select(pl.col(query).unique())
        plans = [counts, users, train.select(pl.len())]
        if history:  # in the same pass over train
            plans.append(train.group_by(query, doc).agg(pl.len().cast(pl.Int64).alias(ROWS)))
        items, users_df, n, *user_items = pl.collect_all(plans, engine="streaming")
        out |= {
            "items": items,
            "users": users_df,
            "n_users": users_df.height,
            "n_interactions": int(n.item()),
        }
        if user_items:
            out["user_items"] = user_items[0].lazy()
    if "catalog" in given:
        catalog = given["catalog"].lazy().select(pl.col(doc).n_unique())
        out["n_catalog"] = int(catalog.collect().item())
    if "item_features" in given:
        features = given["item_features"].lazy()
        if set(features.collect_schema().names()) == set(PAIR_COLUMNS):
            out["distances"] = _pair_distances(features)
        else:
            out |= _long_features(features, doc)
    return Side(**out)


def _pair_distances(pairs: pl.LazyFrame) -> pl.LazyFrame:
    """The pairwise table in both orders of each pair, one distance per ordered pair; a
    pair given twice with two distances is refused, naming it.

    Examples
    --------
    >>> table = pl.DataFrame({"item_a": ["x"], "item_b": ["y"], "distance": [0.5]})
    >>> _pair_distances(table.lazy()).collect().sort("item_a").rows()
    [('x', 'y', 0.5), ('y', 'x', 0.5)]
    """
    a, b, d = PAIR_COLUMNS
    one = pairs.select(a, b, pl.col(d).cast(pl.Float64))
    both = pl.concat([one, one.select(pl.col(b).alias(a), pl.col(a).alias(b), d)])
    both = both.unique()
    clash = both.group_by(a, b).agg(pl.len().alias("n")).filter(pl.col("n") > 1)
    clash = clash.sort(a, b).head(1)
    found = clash.collect()
    if found.height:
        x, y = found.row(0)[:2]
        msg = (
            f"item_features gives the pair ({x!r}, {y!r}) two distances (in one or both "
            "orders): give each pair one distance."
        )
        raise ValueError(msg)
    return both


def _long_features(features: pl.LazyFrame, doc: str) -> dict[str, Any]:
    """``features``, ``numeric_features`` and ``sparse`` of :class:`Side`."""
    schema = features.collect_schema()
    if set(LONG_FEATURES) <= set(schema.names()) and len(schema) == 3:
        long = features.select(
            pl.col(doc), pl.col("feature").cast(pl.String).alias(FEATURE), pl.col("value")
        )
        known = long.group_by(doc).agg(pl.col("value").is_null().any().alias("__rk_bad"))
        long = long.join(known.filter(~pl.col("__rk_bad")).select(doc), on=doc, how="semi")
        sparse = True
    else:
        names = [c for c in schema.names() if c != doc]
        unknown = pl.any_horizontal(
            [pl.col(c).is_null() | (pl.col(c).is_nan() if schema[c].is_float() else False)
             for c in names]
        )  # fmt: skip
        wide = features.filter(~unknown)
        wide_out = wide
        long = wide.select(
            pl.col(doc),
            pl.concat_list([pl.lit(c) for c in names]).alias(FEATURE),
            pl.concat_list([pl.col(c).cast(pl.String) for c in names]).alias("value"),
        ).explode([FEATURE, "value"])
        long = long.with_columns(pl.col(FEATURE).cast(pl.String))
        sparse = False
    value = pl.col("value")
    text = long.with_columns(value.cast(pl.String).alias(VALUE)).select(doc, FEATURE, VALUE)
    numeric = long.with_columns(value.cast(pl.Float64, strict=False).alias(VALUE))
    numeric = numeric.select(doc, FEATURE, VALUE)
    out = {"features": text, "numeric_features": numeric, "sparse": sparse}
    return out if sparse else out | {"wide": wide_out}


def collected(side: Side) -> Side:
    """``side`` with its lazy tables (the features, the pairs) computed, once: what is
    shipped to the tasks of another process reads no file of this one.

    Examples
    --------
    >>> features = pl.LazyFrame({"item": ["a", "b"], "genre": [1, 2]})
    >>> side = collected(reduce_side({"item_features": features}, query="user", doc="item"))
    >>> side.features.collect().height
    2
    """
    lazy = [f.name for f in fields(side) if isinstance(getattr(side, f.name), pl.LazyFrame)]
    frames = pl.collect_all([getattr(side, name) for name in lazy])
    computed: dict[str, Any] = {n: f.lazy() for n, f in zip(lazy, frames, strict=True)}
    return replace(side, **computed)
