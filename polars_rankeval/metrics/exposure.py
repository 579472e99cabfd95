r"""Measures of a system's recommendations as a whole: coverage and exposure.

One value per system (and segment), from :func:`polars_rankeval.evaluate_catalog`.
:math:`c_i` is the number of times item i is recommended within the top k of the
lists of the system (its *exposure*), :math:`C = \sum_i c_i`, :math:`n` the number of
distinct recommended items and :math:`|I|` the catalogue's size.

Each measure is a :class:`Split`: sums over lists that add up over any partition of
the users (the exposure :math:`c_i`, per-item sums of user weights, counts of users),
and the value from the sums of all lists. In one process the parts of all lists are
taken at once; on Dask each bucket of users gives its parts and the driver adds them
(:func:`polars_rankeval.dask.evaluate_catalog`), so both give the same values.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

from polars_rankeval.catalogue import (
    UNIT,
    Measure,
    Param,
    SideInput,
    declare,
    over_catalog_only,
)
from polars_rankeval.lists import POS

if TYPE_CHECKING:
    from polars_rankeval.lists import Lists
    from polars_rankeval.side import Side

LOG_BASES = ("2", "e")


def _k(measure: Measure) -> int | None:
    return measure.cutoff if isinstance(measure.cutoff, int) else None


def _per_group(groups: Sequence[str], frame: pl.LazyFrame, *values: pl.Expr) -> pl.LazyFrame:
    groups = list(groups)
    return frame.group_by(groups).agg(*values) if groups else frame.select(*values)


# --------------------------------------------------------------------------- sums over lists


@dataclass(frozen=True)
class Sums:
    """Sums over some lists of the recommendations, keyed by ``keys`` (a system and
    segment, and the item for per-item sums): every other column is a sum over lists,
    so the sums of two sets of lists (two buckets of users) add up to those of both
    (:func:`add`)."""

    keys: tuple[str, ...]
    frame: pl.LazyFrame


def add(parts: Sequence[Sums]) -> Sums:
    """The sums of several sets of lists, each list in one of them.

    Examples
    --------
    >>> a = Sums(("item",), pl.LazyFrame({"item": ["x", "y"], "count": [1, 2]}))
    >>> b = Sums(("item",), pl.LazyFrame({"item": ["y"], "count": [3]}))
    >>> add([a, b]).frame.sort("item").collect().rows()
    [('x', 1), ('y', 5)]
    """
    keys = list(parts[0].keys)
    frame = pl.concat([p.frame for p in parts], how="vertical_relaxed")
    values = [c for c in frame.collect_schema().names() if c not in keys]
    return Sums(parts[0].keys, _per_group(keys, frame, pl.col(values).sum()))


@dataclass(frozen=True)
class Split:
    """A catalogue measure as sums over lists (``parts``, one :class:`Sums` per table it
    reads, from any set of lists) and its value per system and segment from the sums of
    all the lists (``value(measure, sums, groups, side)``): :meth:`whole` scores the
    lists at once (:func:`polars_rankeval.evaluate_catalog`); on Dask each bucket of
    users gives its parts, which :func:`add` sums, as the value reads them."""

    parts: Callable[[Measure, Lists], tuple[Sums, ...]]
    value: Callable[[Measure, tuple[Sums, ...], Sequence[str], Side], pl.LazyFrame]

    def whole(self, measure: Measure, ls: Lists) -> pl.LazyFrame:
        """The measure over all of ``ls``: its value from its parts."""
        return self.value(measure, self.parts(measure, ls), ls.groups, ls.side)


def split_of(measure: Measure) -> Split | None:
    """The :class:`Split` a catalogue measure is scored with (None: it cannot be summed
    over buckets of users)."""
    owner = getattr(measure.family.over_catalog, "__self__", None)
    return owner if isinstance(owner, Split) else None


def exposure(measure: Measure, ls: Lists) -> tuple[Sums, ...]:
    """``groups, doc, count``: :math:`c_i`, the rows of each item within the top k."""
    count = ls.exposure(_k(measure)).with_columns(pl.col("count").cast(pl.Int64))
    return (Sums((*ls.groups, ls.doc), count),)


def catalog_coverage(
    measure: Measure, sums: tuple[Sums, ...], groups: Sequence[str], side: Side
) -> pl.LazyFrame:
    r"""Distinct items recommended (RecTools ``CatalogCoverage``), :math:`n`; with
    ``normalize=true`` their share of the catalogue, :math:`n / |I|` (RecBole
    ``ItemCoverage``, Microsoft Recommenders ``catalog_coverage`` over its catalogue)."""
    n = pl.len().cast(pl.Float64)
    if measure.setting("normalize"):
        n = n / float(side.n_catalog or 0)
    return _per_group(groups, sums[0].frame, n.alias(str(measure)))


def entropy(
    measure: Measure, sums: tuple[Sums, ...], groups: Sequence[str], side: Side
) -> pl.LazyFrame:
    r"""Shannon entropy of the exposure (distributional coverage).

    .. math::
        H = -\sum_i \frac{c_i}{C} \log_2 \frac{c_i}{C}

    (Microsoft Recommenders ``distributional_coverage``). ``log=e`` takes the natural
    log and ``per_item=true`` divides by n, as RecBole's ``ShannonEntropy`` does.
    """
    c = pl.col("count").cast(pl.Float64)
    p = c / c.sum()
    logs = p.log(2) if measure.setting("log") == "2" else p.log()
    value = -(p * logs).sum()
    if measure.setting("per_item"):
        value = value / pl.len().cast(pl.Float64)
    return _per_group(groups, sums[0].frame, value.alias(str(measure)))


def gini(
    measure: Measure, sums: tuple[Sums, ...], groups: Sequence[str], side: Side
) -> pl.LazyFrame:
    r"""Gini index of the exposure over the catalogue (RecBole ``GiniIndex``).

    .. math::
        G = \frac{1}{|I|\,C}\sum_{j=1}^{|I|} (2j - |I| - 1)\, c_{(j)}

    over the exposures sorted ascending, :math:`c_{(j)}`, the catalogue's items never
    recommended first (with :math:`c = 0`): 0 when every item is shown as often,
    towards 1 when one item takes every slot.
    """
    n_items = float(side.n_catalog or 0)
    c = pl.col("count").cast(pl.Float64)
    j = c.rank("ordinal") + (n_items - pl.len())  # place among all catalogue items
    value = ((2.0 * j - n_items - 1.0) * c).sum() / c.sum() / n_items
    return _per_group(groups, sums[0].frame, value.alias(str(measure)))


def user_weights(measure: Measure, ls: Lists) -> tuple[Sums, ...]:
    r"""Personalization's sums: per item, :math:`\sum_{u \ni i} a_u` and
    :math:`\sum_{u \ni i} a_u^2` with :math:`a_u = |L_u|^{-1/2}` over the list's distinct
    items; per system and segment, the lists with an item in the top k."""
    groups, keys, doc = list(ls.groups), list(ls.keys), ls.doc
    rows = ls.at(_k(measure)).select(*keys, doc).unique()
    a = (1.0 / pl.len().cast(pl.Float64).sqrt()).over(keys).alias("__rk_a")
    rows = rows.with_columns(a)
    per_item = rows.group_by(*groups, doc).agg(
        pl.col("__rk_a").sum().alias("__rk_s"), pl.col("__rk_a").pow(2).sum().alias("__rk_q")
    )
    n_lists = pl.len().cast(pl.Float64).alias("__rk_u")
    users = _per_group(groups, rows.select(*keys).unique(), n_lists)
    return Sums((*groups, doc), per_item), Sums(tuple(groups), users)


def personalization(
    measure: Measure, sums: tuple[Sums, ...], groups: Sequence[str], side: Side
) -> pl.LazyFrame:
    r"""1 - the mean cosine similarity of two users' lists (``recmetrics.personalization``).

    .. math::
        P = 1 - \frac{2}{|U|(|U|-1)}\sum_{u < v}
            \frac{|L_u \cap L_v|}{\sqrt{|L_u|\,|L_v|}}

    over the lists' distinct items, from per-item sums of :math:`a_u = |L_u|^{-1/2}`,
    :math:`\sum_{u<v} \ldots = \sum_i \big((\sum_{u \ni i} a_u)^2 - \sum_{u \ni i} a_u^2\big)/2`,
    without forming the pairs of users (:func:`user_weights`). Null for fewer than two
    users.
    """
    groups = list(groups)
    per_item, users = sums
    s, q = pl.col("__rk_s"), pl.col("__rk_q")
    similar = _per_group(groups, per_item.frame, ((s * s - q).sum() / 2.0).alias("__rk_sim"))
    both = (
        similar.join(users.frame, on=groups, nulls_equal=True)
        if groups
        else similar.join(users.frame, how="cross")
    )
    u = pl.col("__rk_u")
    value = pl.when(u >= 2).then(1.0 - pl.col("__rk_sim") / (u * (u - 1) / 2.0))
    return both.select(*groups, value.alias(str(measure)))


def shown_users(measure: Measure, ls: Lists) -> tuple[Sums, ...]:
    """UserCoverage's sum: per system and segment, the training users with an item in
    the top k."""
    users = ls.side.users
    assert users is not None
    rows = ls.at(_k(measure)).filter(pl.col(POS) >= 1)
    shown = rows.select(*ls.groups, ls.query).unique()
    shown = shown.join(users.lazy(), on=ls.query, how="semi")
    n = pl.len().cast(pl.Float64).alias("__rk_shown")
    return (Sums(ls.groups, _per_group(ls.groups, shown, n)),)


def user_coverage(
    measure: Measure, sums: tuple[Sums, ...], groups: Sequence[str], side: Side
) -> pl.LazyFrame:
    r"""Users of the training log who get a recommendation within the top k, as a share
    of them, :math:`|\{u \in U : L_u \neq \emptyset\}| / |U|` (the count with
    ``normalize=false``)."""
    n = pl.col("__rk_shown")
    if measure.setting("normalize"):
        n = n / float(side.n_users or 0)
    return sums[0].frame.select(*groups, n.alias(str(measure)))


COVERAGE = Split(exposure, catalog_coverage)
ENTROPY = Split(exposure, entropy)
GINI = Split(exposure, gini)
PERSONALIZATION = Split(user_weights, personalization)
USER_COVERAGE = Split(shown_users, user_coverage)


# --------------------------------------------------------------------------- declarations


def _coverage_needs(measure: Measure) -> tuple[SideInput, ...]:
    return ("catalog",) if measure.setting("normalize") else ()


declare(
    "CatalogCoverage",
    over_catalog_only("CatalogCoverage"),
    "optional",
    Param("normalize", bool, False),
    summary="distinct items recommended (normalize: share of the catalogue)",
    over_catalog=COVERAGE.whole,
    needs=_coverage_needs,
    bounds=(0.0, float("inf")),
    aliases=("catalogcoverage", "catalog_coverage"),
    presets={"itemcoverage": "CatalogCoverage(normalize=true)"},
    order=320,
)
declare(
    "Entropy",
    over_catalog_only("Entropy"),
    "optional",
    Param("log", str, "2", LOG_BASES),
    Param("per_item", bool, False),
    summary="Shannon entropy of the items' exposure (distributional coverage)",
    over_catalog=ENTROPY.whole,
    bounds=(0.0, float("inf")),
    aliases=("entropy", "distributional_coverage"),
    presets={"shannonentropy": "Entropy(log=e,per_item=true)"},
    order=321,
)
declare(
    "Gini",
    over_catalog_only("Gini"),
    "optional",
    summary="Gini index of the items' exposure over the catalogue (RecBole GiniIndex)",
    over_catalog=GINI.whole,
    needs=("catalog",),
    bounds=UNIT,
    better="lower",
    aliases=("gini", "giniindex", "gini_index"),
    order=322,
)
declare(
    "Personalization",
    over_catalog_only("Personalization"),
    "optional",
    summary="1 - mean cosine similarity of two users' lists",
    over_catalog=PERSONALIZATION.whole,
    bounds=UNIT,
    aliases=("personalization",),
    order=323,
)
declare(
    "UserCoverage",
    over_catalog_only("UserCoverage"),
    "optional",
    Param("normalize", bool, True),
    summary="share of the training users who get a recommendation",
    over_catalog=USER_COVERAGE.whole,
    needs=("train",),
    bounds=(0.0, float("inf")),
    aliases=("usercoverage", "user_coverage"),
    order=324,
)
