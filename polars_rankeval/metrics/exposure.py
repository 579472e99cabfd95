r"""Measures of a system's recommendations as a whole: coverage and exposure.

One value per system (and segment), from :func:`polars_rankeval.evaluate_catalog`.
:math:`c_i` is the number of times item i is recommended within the top k of the
lists of the system (its *exposure*), :math:`C = \sum_i c_i`, :math:`n` the number of
distinct recommended items and :math:`|I|` the catalogue's size.
"""

from __future__ import annotations

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

LOG_BASES = ("2", "e")


def _k(measure: Measure) -> int | None:
    return measure.cutoff if isinstance(measure.cutoff, int) else None


def _per_group(ls: Lists, frame: pl.LazyFrame, *values: pl.Expr) -> pl.LazyFrame:
    groups = list(ls.groups)
    return frame.group_by(groups).agg(*values) if groups else frame.select(*values)


def catalog_coverage(measure: Measure, ls: Lists) -> pl.LazyFrame:
    r"""Distinct items recommended (RecTools ``CatalogCoverage``), :math:`n`; with
    ``normalize=true`` their share of the catalogue, :math:`n / |I|` (RecBole
    ``ItemCoverage``, Microsoft Recommenders ``catalog_coverage`` over its catalogue)."""
    n = pl.len().cast(pl.Float64)
    if measure.setting("normalize"):
        n = n / float(ls.side.n_catalog or 0)
    return _per_group(ls, ls.exposure(_k(measure)), n.alias(str(measure)))


def entropy(measure: Measure, ls: Lists) -> pl.LazyFrame:
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
    return _per_group(ls, ls.exposure(_k(measure)), value.alias(str(measure)))


def gini(measure: Measure, ls: Lists) -> pl.LazyFrame:
    r"""Gini index of the exposure over the catalogue (RecBole ``GiniIndex``).

    .. math::
        G = \frac{1}{|I|\,C}\sum_{j=1}^{|I|} (2j - |I| - 1)\, c_{(j)}

    over the exposures sorted ascending, :math:`c_{(j)}`, the catalogue's items never
    recommended first (with :math:`c = 0`): 0 when every item is shown as often,
    towards 1 when one item takes every slot.
    """
    n_items = float(ls.side.n_catalog or 0)
    c = pl.col("count").cast(pl.Float64)
    j = c.rank("ordinal") + (n_items - pl.len())  # place among all catalogue items
    value = ((2.0 * j - n_items - 1.0) * c).sum() / c.sum() / n_items
    ordered = ls.exposure(_k(measure))
    return _per_group(ls, ordered, value.alias(str(measure)))


def personalization(measure: Measure, ls: Lists) -> pl.LazyFrame:
    r"""1 - the mean cosine similarity of two users' lists (``recmetrics.personalization``).

    .. math::
        P = 1 - \frac{2}{|U|(|U|-1)}\sum_{u < v}
            \frac{|L_u \cap L_v|}{\sqrt{|L_u|\,|L_v|}}

    over the lists' distinct items, from per-item sums of :math:`a_u = |L_u|^{-1/2}`,
    :math:`\sum_{u<v} \ldots = \sum_i \big((\sum_{u \ni i} a_u)^2 - \sum_{u \ni i} a_u^2\big)/2`,
    without forming the pairs of users. Null for fewer than two users.
    """
    groups, keys, doc = list(ls.groups), list(ls.keys), ls.doc
    rows = ls.at(_k(measure)).select(*keys, doc).unique()
    a = (1.0 / pl.len().cast(pl.Float64).sqrt()).over(keys).alias("__rk_a")
    rows = rows.with_columns(a)
    per_item = rows.group_by(*groups, doc).agg(
        pl.col("__rk_a").sum().alias("__rk_s"), pl.col("__rk_a").pow(2).sum().alias("__rk_q")
    )
    s, q = pl.col("__rk_s"), pl.col("__rk_q")
    similar = _per_group(ls, per_item, ((s * s - q).sum() / 2.0).alias("__rk_sim"))
    users = _per_group(ls, rows.select(*keys).unique(), pl.len().cast(pl.Float64).alias("__rk_u"))
    both = (
        similar.join(users, on=groups, nulls_equal=True)
        if groups
        else similar.join(users, how="cross")
    )
    u = pl.col("__rk_u")
    value = pl.when(u >= 2).then(1.0 - pl.col("__rk_sim") / (u * (u - 1) / 2.0))
    return both.select(*groups, value.alias(str(measure)))


def user_coverage(measure: Measure, ls: Lists) -> pl.LazyFrame:
    r"""Users of the training log who get a recommendation within the top k, as a share
    of them, :math:`|\{u \in U : L_u \neq \emptyset\}| / |U|` (the count with
    ``normalize=false``)."""
    users = ls.side.users
    assert users is not None
    rows = ls.at(_k(measure)).filter(pl.col(POS) >= 1)
    shown = rows.select(*ls.groups, ls.query).unique()
    shown = shown.join(users.lazy(), on=ls.query, how="semi")
    n = pl.len().cast(pl.Float64)
    if measure.setting("normalize"):
        n = n / float(ls.side.n_users or 0)
    return _per_group(ls, shown, n.alias(str(measure)))


# --------------------------------------------------------------------------- declarations


def _coverage_needs(measure: Measure) -> tuple[SideInput, ...]:
    return ("catalog",) if measure.setting("normalize") else ()


declare(
    "CatalogCoverage",
    over_catalog_only("CatalogCoverage"),
    "optional",
    Param("normalize", bool, False),
    summary="distinct items recommended (normalize: share of the catalogue)",
    over_catalog=catalog_coverage,
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
    over_catalog=entropy,
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
    over_catalog=gini,
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
    over_catalog=personalization,
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
    over_catalog=user_coverage,
    needs=("train",),
    bounds=(0.0, float("inf")),
    aliases=("usercoverage", "user_coverage"),
    order=324,
)
