r"""Measures of each recommendation list beyond accuracy, and RecTools' AUC measures.

The measures of a list as a whole (``over_lists``) read the list's items, their
positions and what the side inputs say of them (:mod:`polars_rankeval.side`), and
score every list of the run, whether or not its user has test interactions
(:mod:`polars_rankeval.lists`). Their values are RecTools 0.19's ``calc_per_user``
(``rectools/metrics/novelty.py``, ``popularity.py``, ``diversity.py``,
``serendipity.py``, ``dq.py``) and RecBole 1.2's (``recbole/evaluator/metrics.py``).
:math:`L_u` is the list's rows within the top k (a repeated item counts each time),
:math:`U` the users of the training interactions, :math:`I` the catalogue.

``PAP`` and ``PartialAUC`` (RecTools ``auc.py``) read the judged rows, as the
accuracy measures do, through the engine's features.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from polars_rankeval.catalogue import (
    UNIT,
    Measure,
    Param,
    SideInput,
    declare,
    over_lists_only,
    reads_relevant,
    required_k,
    with_n_rel,
)
from polars_rankeval.side import (
    FEATURE,
    INTERACTIONS,
    ITEM_USERS,
    PAIR_COLUMNS,
    POP_RANK,
    VALUE,
)

if TYPE_CHECKING:
    from polars_rankeval.engine.features import Features
    from polars_rankeval.engine.plan import Context
    from polars_rankeval.lists import Lists

from polars_rankeval.lists import POS, RELEVANT

TAIL_RATIO = 0.1
"""RecBole's default ``tail_ratio``: the 10% least interacted items are the tail."""
DISTANCES = ("hamming", "cosine", "jaccard", "table")
INSUFFICIENT = ("ignore", "exclude", "raise")


# --------------------------------------------------------------------------- per-list values


def novelty(measure: Measure, ls: Lists) -> pl.Expr:
    r"""Mean self-information of the recommended items (RecTools ``MeanInvUserFreq``).

    .. math::
        \mathrm{Novelty@k} = \frac{1}{|L_u|}\sum_{i \in L_u} -\log_2 \frac{|U_i|}{|U|}

    where :math:`|U_i|` is the number of distinct training users of item i (1 for an
    item absent from the training log, as RecTools) and :math:`|U|` the number of
    distinct training users (Castells' self-information; Zhou et al. 2010).
    """
    n_users = float(ls.side.n_users or 0)
    users = pl.col(ITEM_USERS).fill_null(1).cast(pl.Float64)
    inside = ls.inside(measure)
    return ls.per_list(measure, (-(users / n_users).log(2)).filter(inside).mean())


def average_popularity(measure: Measure, ls: Lists) -> pl.Expr:
    r"""Mean popularity of the recommended items (RecTools ``AvgRecPopularity``, RecBole
    ``AveragePopularity``).

    .. math::
        \mathrm{ARP@k} = \frac{1}{|L_u|}\sum_{i \in L_u} \phi(i)

    where :math:`\phi(i)` is the item's number of training interactions (0 for an item
    absent from them), divided by the number of all training interactions with
    ``normalize=true``.
    """
    pop = pl.col(INTERACTIONS).fill_null(0).cast(pl.Float64)
    if measure.setting("normalize"):
        pop = pop / float(ls.side.n_interactions or 0)
    return ls.per_list(measure, pop.filter(ls.inside(measure)).mean())


def tail_items(items: pl.LazyFrame, doc: str, tail_ratio: float) -> pl.LazyFrame:
    """The long-tail items of the training log (RecBole ``TailPercentage.get_tail``): with
    ``tail_ratio`` > 1 the items with at most that many interactions, else the
    ``max(int(n * tail_ratio), 1)`` least interacted of the n items, equal counts by
    item id ascending."""
    if tail_ratio > 1:
        return items.filter(pl.col(INTERACTIONS) <= tail_ratio).select(doc)
    n = pl.len()
    cut = pl.max_horizontal((n.cast(pl.Float64) * tail_ratio).floor().cast(pl.Int64), pl.lit(1))
    ordered = items.sort(INTERACTIONS, doc)
    return ordered.filter(pl.int_range(pl.len()) < cut).select(doc)


def tail_share(measure: Measure, ls: Lists) -> pl.LazyFrame:
    r"""Share of long-tail items in the list (RecBole ``TailPercentage``).

    .. math::
        \mathrm{TailShare@k} = \frac{1}{|L_u|}\sum_{i \in L_u} \delta(i \in T)

    where :math:`T` is the long tail of the training log (:func:`tail_items`).
    """
    tail = tail_items(ls.popularity(), ls.doc, measure.setting("tail_ratio"))
    flagged = tail.with_columns(pl.lit(1.0).alias("__rk_tail"))
    rows = ls.at(measure.cutoff if isinstance(measure.cutoff, int) else None)
    rows = rows.join(flagged, on=ls.doc, how="left")
    value = pl.col("__rk_tail").fill_null(0.0).mean().alias(str(measure))
    return rows.group_by(ls.keys).agg(value)


HEAD_RATIO = 0.8
"""Elliot's default ``pop_ratio``: the most popular items that take 80% of the training
interactions are the short head, the others the long tail."""


def elliot_long_tail(items: pl.LazyFrame, doc: str, pop_ratio: float) -> pl.LazyFrame:
    r"""The long tail of the training log as Elliot defines it (``elliot/evaluation/
    popularity.py``, ``Popularity.get_short_head`` and ``get_long_tail``).

    The items sorted by their distinct training users :math:`|U_i|`, most first (equal
    counts by item id ascending, for Elliot's internal item order), make the short head
    while the users of the items before them sum to less than ``pop_ratio`` times all
    the (user, item) pairs, :math:`\sum_{j < i} |U_j| < \rho \sum_j |U_j|`; the other
    training items are the long tail (an item absent from the training log is in
    neither).

    Examples
    --------
    >>> items = pl.LazyFrame({"item": ["a", "b", "c", "d"], ITEM_USERS: [5, 3, 1, 1]})
    >>> elliot_long_tail(items, "item", 0.8).collect()["item"].to_list()  # 5 + 3 >= 8
    ['c', 'd']
    """
    users = pl.col(ITEM_USERS).cast(pl.Float64)
    ordered = items.select(doc, ITEM_USERS).sort([ITEM_USERS, doc], descending=[True, False])
    before = users.cum_sum() - users
    head = before < pl.lit(pop_ratio) * users.sum()
    return ordered.filter(~head).select(doc)


def long_tail_items(measure: Measure, ls: Lists) -> pl.LazyFrame:
    r"""Elliot's ``APLT`` (share) and ``ACLT`` (count) of long-tail items in a list.

    .. math::
        \mathrm{APLT@k} = rac{|\{i \in L_u\} \cap \Gamma|}{|L_u|}, \qquad
        \mathrm{ACLT@k} = |\{i \in L_u\} \cap \Gamma|

    over the distinct items of the list's top k and :math:`|L_u|` its rows, where
    :math:`\Gamma` is :func:`elliot_long_tail` (Elliot's ``__user_aplt`` and
    ``__user_aclt``, ``elliot/evaluation/metrics/bias/aplt/aplt.py``, ``aclt/aclt.py``;
    Abdollahpouri et al., RecSys 2017 and FLAIRS 2019).
    """
    tail = elliot_long_tail(ls.popularity(), ls.doc, measure.setting("pop_ratio"))
    flagged = tail.with_columns(pl.lit(True).alias("__rk_long"))
    rows = ls.at(measure.cutoff if isinstance(measure.cutoff, int) else None)
    rows = rows.join(flagged, on=ls.doc, how="left")
    count = pl.col(ls.doc).filter(pl.col("__rk_long").fill_null(False)).n_unique()
    count = count.cast(pl.Float64)
    value = count / pl.len().cast(pl.Float64) if measure.name == "APLT" else count
    return rows.group_by(ls.keys).agg(value.alias(str(measure)))


def intra_list_diversity(measure: Measure, ls: Lists) -> pl.LazyFrame:
    r"""Mean distance between the pairs of items of a list (RecTools ``IntraListDiversity``).

    .. math::
        \mathrm{ILD@k} = \frac{2}{m(m-1)} \sum_{i < j \in L_u} d(i, j)

    over the m items of the list with known features (pairs with an unknown one are
    skipped, as RecTools' mean skips their NaN distance); 0 for a list of one item,
    null when it has pairs but none of known items. ``distance="hamming"``: the number
    of features whose values differ (RecTools ``PairwiseHammingDistanceCalculator``),
    summed over features from value counts, :math:`\binom{m}{2} - \sum_v \binom{c_v}{2}`
    per feature, without forming the pairs. ``distance="cosine"``: 1 - the cosine of
    the feature vectors, from the sum of the unit vectors,
    :math:`1 - (\lVert\sum_i \hat x_i\rVert^2 - m) / (m(m-1))`.
    ``distance="jaccard"``: :math:`1 - |S_i \cap S_j| / |S_i \cup S_j|` over the sets
    of (feature, value) pairs of the two items (0 when both are empty; multi-hot
    features such as genres belong in the long shape, one row per feature an item
    has). ``distance="table"``: the distances of a table of pairs given as
    ``item_features`` (``item_a, item_b, distance``, either order); a pair the table
    lacks is unknown, a repeated item is at distance 0 from itself.
    """
    check_ild_input(measure, ls)
    k = measure.cutoff if isinstance(measure.cutoff, int) else None
    keys, doc = list(ls.keys), ls.doc
    rows = ls.at(k).select(*keys, doc)
    if measure.setting("distance") in ("jaccard", "table"):
        return _ild_of_pairs(measure, ls, ls.at(k).select(*keys, doc, POS))
    cosine = measure.setting("distance") == "cosine"
    features = ls.side.numeric_features if cosine else ls.side.features
    assert features is not None
    if cosine:
        norm = (pl.col(VALUE).pow(2).sum().over(doc)).sqrt()
        features = features.with_columns((pl.col(VALUE) / norm).alias(VALUE))
        features = features.filter(pl.col(VALUE).is_not_null() & pl.col(VALUE).is_finite())
        bad = features.filter(~pl.col(VALUE).is_finite()).select(doc)
        features = features.join(bad, on=doc, how="anti")
    n = rows.group_by(keys).agg(pl.len().cast(pl.Float64).alias("__rk_n"))
    pairs = pl.col("__rk_m") * (pl.col("__rk_m") - 1) / 2
    if not cosine and ls.side.wide is not None:  # wide features: one count per column
        m, total = _hamming_wide(rows, ls.side.wide, keys, doc)
        mean_distance = pl.col("__rk_total") / pairs
    else:
        known = rows.join(features.select(doc).unique(), on=doc, how="semi")
        m = known.group_by(keys).agg(pl.len().cast(pl.Float64).alias("__rk_m"))
        per_item = known.join(features, on=doc)
        if cosine:
            sums = per_item.group_by(*keys, FEATURE).agg(pl.col(VALUE).sum().alias("__rk_s"))
            total = sums.group_by(keys).agg(pl.col("__rk_s").pow(2).sum().alias("__rk_total"))
            mean_distance = 1.0 - (pl.col("__rk_total") - pl.col("__rk_m")) / (2.0 * pairs)
        else:
            counts = per_item.group_by(*keys, FEATURE, VALUE).agg(pl.len().alias("__rk_c"))
            c = pl.col("__rk_c").cast(pl.Float64)
            same = counts.group_by(*keys, FEATURE).agg(
                (c * (c - 1) / 2).sum().alias("__rk_same"), c.sum().alias("__rk_present")
            )
            same = same.join(m, on=keys, how="left", nulls_equal=True)
            absent = pl.col("__rk_m") - pl.col("__rk_present")
            equal = pl.col("__rk_same") + (absent * (absent - 1) / 2 if ls.side.sparse else 0.0)
            total = same.group_by(keys).agg((pairs - equal).sum().alias("__rk_total"))
            mean_distance = pl.col("__rk_total") / pairs
    out = n.join(m, on=keys, how="left", nulls_equal=True)
    out = out.join(total, on=keys, how="left", nulls_equal=True)
    value = (
        pl.when(pl.col("__rk_n") < 2)
        .then(0.0)
        .when(pl.col("__rk_m").fill_null(0) < 2)
        .then(None)
        .otherwise(mean_distance.fill_null(0.0) if not cosine else mean_distance)
    )
    return out.select(*keys, value.cast(pl.Float64).alias(str(measure)))


def check_ild_input(measure: Measure, ls: Lists) -> None:
    """Refuse ILD's distance on the wrong shape of ``item_features``: ``table`` reads a
    table of pairs, the others the items' features."""
    table = ls.side.distances is not None
    if (measure.setting("distance") == "table") != table:
        what = "a table of pairwise distances" if table else "the items' features"
        needs = (
            f"the items' features (wide, or long: {ls.doc!r}, 'feature', 'value')"
            if table
            else f"a table of pairs ({', '.join(repr(c) for c in PAIR_COLUMNS)})"
        )
        msg = f"{measure} reads {needs} as item_features; it was given {what}."
        raise ValueError(msg)


def _ild_of_pairs(measure: Measure, ls: Lists, rows: pl.LazyFrame) -> pl.LazyFrame:
    """ILD over the pairs of each list's rows (``distance="jaccard"`` or ``"table"``):
    ``rows`` hold the list keys, the item and its position."""
    keys, doc = list(ls.keys), ls.doc
    doc_type = rows.collect_schema()[doc]
    if measure.setting("distance") == "table":
        assert ls.side.distances is not None
        a, b, d = PAIR_COLUMNS
        table = ls.side.distances.select(pl.col(a).cast(doc_type), pl.col(b).cast(doc_type), d)
        known = rows
    else:
        assert ls.side.features is not None
        tokens = ls.side.features.select(doc, FEATURE, VALUE).unique()
        sizes = tokens.group_by(doc).agg(pl.len().cast(pl.Float64).alias("__rk_size"))
        known = rows.join(sizes, on=doc)
    left = known.rename({doc: "__rk_a", POS: "__rk_pa"})
    right = known.rename({doc: "__rk_b", POS: "__rk_pb"})
    if "__rk_size" in known.collect_schema():
        right = right.rename({"__rk_size": "__rk_size_b"})
    pairs = left.join(right, on=keys, nulls_equal=True)
    pairs = pairs.filter(pl.col("__rk_pa") < pl.col("__rk_pb"))
    same = pl.col("__rk_a") == pl.col("__rk_b")
    if measure.setting("distance") == "table":
        pairs = pairs.join(
            table.rename({a: "__rk_a", b: "__rk_b"}), on=["__rk_a", "__rk_b"], how="left"
        )
        distance = pl.when(same).then(0.0).otherwise(pl.col(d))
    else:
        placed = known.join(tokens, on=doc).select(*keys, POS, FEATURE, VALUE)
        shared = placed.rename({POS: "__rk_pa"}).join(
            placed.rename({POS: "__rk_pb"}), on=[*keys, FEATURE, VALUE], nulls_equal=True
        )
        shared = shared.filter(pl.col("__rk_pa") < pl.col("__rk_pb"))
        inter = shared.group_by(*keys, "__rk_pa", "__rk_pb").agg(
            pl.len().cast(pl.Float64).alias("__rk_inter")
        )
        pairs = pairs.join(inter, on=[*keys, "__rk_pa", "__rk_pb"], how="left", nulls_equal=True)
        i = pl.col("__rk_inter").fill_null(0.0)
        union = pl.col("__rk_size") + pl.col("__rk_size_b") - i
        distance = pl.when(union > 0).then(1.0 - i / union).otherwise(0.0)
    per_list = pairs.group_by(keys).agg(distance.mean().alias("__rk_d"))
    n = rows.group_by(keys).agg(pl.len().alias("__rk_n"))
    out = n.join(per_list, on=keys, how="left", nulls_equal=True)
    value = pl.when(pl.col("__rk_n") < 2).then(0.0).otherwise(pl.col("__rk_d"))
    return out.select(*keys, value.cast(pl.Float64).alias(str(measure)))


def _hamming_wide(
    rows: pl.LazyFrame, wide: pl.LazyFrame, keys: list[str], doc: str
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """``keys, m`` (items with known features) and ``keys, total`` (the summed Hamming
    distance of their pairs) from wide features: per feature column, the pairs of a
    list minus those of equal value, :math:`\\binom{m}{2} - \\sum_v \\binom{c_v}{2}`."""
    names = [c for c in wide.collect_schema().names() if c != doc]
    known = rows.join(wide, on=doc, how="inner")
    m = known.group_by(keys).agg(pl.len().cast(pl.Float64).alias("__rk_m"))
    total = m.with_columns(
        (pl.col("__rk_m") * (pl.col("__rk_m") - 1) / 2 * len(names)).alias("__rk_total")
    )
    known_rows = known.collect()
    for name in names:
        equal = _equal_pairs(known_rows, keys, name)
        total = total.join(equal, on=keys, how="left", nulls_equal=True).select(
            *keys, "__rk_m", (pl.col("__rk_total") - pl.col("__rk_eq").fill_null(0.0))
        )
    return m, total.select(*keys, "__rk_total")


def _packed(known: pl.DataFrame, key: str, name: str) -> tuple[np.ndarray, int, int] | None:
    """The (list, value) pairs of integer columns ``key`` and ``name`` packed into sorted
    int64s, the value span and the lowest key; None when they are not integers or do
    not fit."""
    schema = known.schema
    if not (known.height and schema[key].is_integer() and schema[name].is_integer()):
        return None
    lows = known.select(
        pl.col(key).min().alias("a"),
        pl.col(name).min().alias("b"),
        pl.col(key).max().alias("c"),
        pl.col(name).max().alias("d"),
    ).row(0)
    if any(x is None for x in lows):
        return None
    k_low, v_low, k_high, v_high = (int(x) for x in lows)
    span = v_high - v_low + 1
    if (k_high - k_low + 1) * span >= 2**62:
        return None
    lists = known[key].to_numpy().astype(np.int64) - k_low
    values = known[name].to_numpy().astype(np.int64) - v_low
    return np.sort(lists * span + values), span, k_low


def _equal_pairs(known: pl.DataFrame, keys: list[str], name: str) -> pl.LazyFrame:
    """``keys, __rk_eq``: per list, the pairs of its rows with equal values of feature
    ``name``, :math:`\\sum_v \\binom{c_v}{2}`.

    For one integer list key and an integer feature, both are packed into one int64
    and counted after a sort (numpy): a group-by on two columns took 3-10 times longer
    at 10M rows. Otherwise one Polars group-by.
    """
    packed = _packed(known, keys[0], name) if len(keys) == 1 else None
    if packed is None:
        c = pl.col("__rk_c").cast(pl.Float64)
        counts = known.lazy().group_by(*keys, name).agg(pl.len().alias("__rk_c"))
        return counts.group_by(keys).agg((c * (c - 1) / 2).sum().alias("__rk_eq"))
    keys_values, span, k_low = packed
    starts = np.flatnonzero(np.r_[True, keys_values[1:] != keys_values[:-1]])
    counts = np.diff(np.r_[starts, keys_values.size]).astype(np.float64)
    run_list = keys_values[starts] // span
    firsts = np.flatnonzero(np.r_[True, run_list[1:] != run_list[:-1]])
    equal = np.add.reduceat(counts * (counts - 1) / 2, firsts)
    ids = pl.Series(keys[0], run_list[firsts] + k_low).cast(known.schema[keys[0]])
    return pl.DataFrame([ids, pl.Series("__rk_eq", equal)]).lazy()


def serendipity(measure: Measure, ls: Lists) -> pl.Expr:
    r"""Relevant and unexpected (RecTools ``Serendipity``).

    .. math::
        \mathrm{Serendipity@k} = \frac{1}{|L_u|}\sum_{i \in L_u}
            \max\big(p(i) - p_u(i), 0\big)\, rel(i)

    where :math:`p(i) = (|I| + 1 - r_i) / |I|` from the item's position :math:`r_i`,
    :math:`p_u(i) = (|I| + 1 - \pi_i) / |I|` from the dense rank :math:`\pi_i` of its
    training popularity (most popular 1; 0 for an item absent from the training log),
    and :math:`rel(i)` is 1 for a test interaction of the user. Users without test
    interactions score 0.
    """
    n = float(ls.side.n_catalog or 0)
    p = (n + 1 - pl.col(POS).cast(pl.Float64)) / n
    pu = pl.when(pl.col(POP_RANK).is_not_null()).then((n + 1 - pl.col(POP_RANK)) / n).otherwise(0.0)
    gain = pl.max_horizontal(p - pu, pl.lit(0.0)) * pl.col(RELEVANT).cast(pl.Float64)
    return ls.per_list(measure, gain.filter(ls.inside(measure)).mean())


def sufficient(measure: Measure, ls: Lists) -> pl.Expr:
    r"""Whether the list has k items (RecTools ``SufficientReco``): 1 or 0; with
    ``deep=true`` :math:`\min(|L_u| / k, 1)`. A list with no item in the top k scores 0."""
    k = required_k(measure)
    n = ls.inside(measure).sum().cast(pl.Float64)
    value = pl.min_horizontal(n / k, pl.lit(1.0)) if measure.setting("deep") else (n >= k)
    return ls.per_list(measure, value.cast(pl.Float64))


def unrepeated(measure: Measure, ls: Lists) -> pl.Expr:
    r"""Whether no item is repeated in the list (RecTools ``UnrepeatedReco``): 1 or 0;
    with ``deep=true`` the share of its rows that are an item's first occurrence,
    :math:`|\mathrm{distinct}(L_u)| / |L_u|`."""
    inside = ls.inside(measure)
    distinct = pl.col(ls.doc).filter(inside).n_unique().cast(pl.Float64)
    n = inside.sum().cast(pl.Float64)
    value = distinct / n if measure.setting("deep") else (distinct == n).cast(pl.Float64)
    return ls.per_list(measure, pl.when(n > 0).then(value))


# --------------------------------------------------------------------------- AUC (judged rows)


def partial_auc(
    k: int,
    *,
    rank: str = "rank",
    relevance: str = "relevance",
    rel_level: int = 1,
    n_rel: str | None = None,
    top_positives: bool = False,
) -> pl.Expr:
    r"""RecTools' partial AUC at k over one ranking's rows of the judged table (pAp@k with
    ``top_positives``); see :func:`partial_auc_formula` for the definition.

    Examples
    --------
    >>> judged = pl.DataFrame({"rank": [1, 2, 3, None], "relevance": [0, 1, 0, 1]})
    >>> judged.select(partial_auc(1)).item()  # 1 of the 2 relevant is above 1 non-relevant
    0.0
    >>> judged.select(partial_auc(2)).item()  # (2 - 1) / (2 * 2)
    0.25
    """
    r = pl.col(rank).cast(pl.Float64)
    relevant = (pl.col(relevance) >= rel_level).fill_null(False)
    hit = (relevant & r.is_not_null()).sort_by(r, nulls_last=True)
    so_far = hit.cast(pl.Float64).cum_sum()
    term = pl.max_horizontal(pl.lit(float(k)) - (r.sort_by(r, nulls_last=True) - so_far), 0.0)
    counted = hit & (so_far <= k) if top_positives else hit
    total = pl.when(counted).then(term).otherwise(0.0).sum()
    n_pos = pl.col(n_rel).first().cast(pl.Float64) if n_rel else relevant.sum().cast(pl.Float64)
    divisor = (pl.min_horizontal(n_pos, float(k)) if top_positives else n_pos) * float(k)
    return pl.when(n_pos > 0).then(total / divisor).otherwise(0.0)


def partial_auc_formula(
    f: Features, k: int, rel_level: int, *, top_positives: bool, insufficient: str
) -> pl.Expr:
    r"""RecTools' ``PartialAUC@k`` (``top_positives=False``) and ``PAP@k`` (True).

    .. math::
        \mathrm{pAUC@k} = \frac{1}{k\,n_+}\sum_{x_i \in S^+}\sum_{x_j \in S^-}
            \mathbb{1}[s(x_i) \ge s(x_j)]
        \qquad
        \mathrm{pAp@k} = \frac{1}{k\,\beta}\sum_{x_i \in S^+_\beta}\sum_{x_j \in S^-}
            \mathbb{1}[s(x_i) \ge s(x_j)]

    where :math:`S^-` are the k top non-relevant recommended items, :math:`n_+ = |R|`,
    :math:`\beta = \min(k, |R|)` and :math:`S^+_\beta` the relevant items among the
    :math:`\beta` first relevant recommended ones. A relevant item at rank r with h
    relevant items down to it has :math:`r - h` non-relevant ones above it and adds
    :math:`\max(k - (r - h), 0)`; an unretrieved relevant item adds 0 (RecTools'
    ``insufficient_handling="ignore"``). ``"exclude"`` leaves out (null) a user with
    fewer than k non-relevant recommendations and a relevant item not recommended;
    ``"raise"`` refuses such a user with an error naming it (:func:`refuse_insufficient`).
    Hiranandani et al., ICML 2020.
    """
    hit = f.hit(rel_level)
    above = f.rank.cast(pl.Float64) - f.hits_so_far(rel_level)
    term = pl.max_horizontal(pl.lit(float(k)) - above, pl.lit(0.0))
    counted = hit & (f.hits_so_far(rel_level) <= k) if top_positives else hit
    total = f.sum(pl.when(counted).then(term).otherwise(0.0))
    n_pos = f.nrel(rel_level).cast(pl.Float64)
    divisor = (pl.min_horizontal(n_pos, pl.lit(float(k))) if top_positives else n_pos) * f.constant(
        k
    )
    value = pl.when(n_pos > 0).then(total / divisor).otherwise(0.0)
    if insufficient in ("exclude", "raise"):
        hits = f.hits(rel_level)
        short = ((f.nret - hits) < k) & (n_pos > hits)
        value = pl.when(short).then(None).otherwise(value)
    return value


def refuse_insufficient(measure: Measure, scored: pl.DataFrame) -> None:
    """Raise for ``insufficient_handling="raise"`` (RecTools' ``InsufficientHandling.RAISE``,
    ``rectools/metrics/auc.py`` ``_handle_insufficient_cases``): a user scored null by
    such a measure has fewer than k non-relevant recommendations and a relevant item not
    recommended. The error names the measure, how many users and the first of them
    (``scored``: the ranking keys and the measure's column). PAP's and PartialAUC's
    declared ``refuse``.

    Examples
    --------
    >>> from polars_rankeval.measures import parse
    >>> scored = pl.DataFrame({"query": ["u1", "u2"], "PAP(insufficient_handling=raise)@2":
    ...                        [0.5, None]})
    >>> refuse_insufficient(parse("PAP(insufficient_handling=raise)@2"), scored)
    Traceback (most recent call last):
    ...
    ValueError: PAP(insufficient_handling=raise)@2 needs at least 2 non-relevant \
recommendations for each user with a relevant item it does not recommend; 1 user has \
fewer: {'query': 'u2'}. Recommend more items, or pass insufficient_handling=exclude \
(leave such users out) or ignore (score them as they are).
    """
    if measure.get("insufficient_handling") != "raise":
        return
    column = str(measure)
    short = scored.filter(pl.col(column).is_null())
    if not short.height:
        return
    keys = short.drop(column)
    keys = keys.sort(keys.columns)
    first = ", ".join(str(row) for row in keys.head(3).iter_rows(named=True))
    more = f" and {short.height - 3} more" if short.height > 3 else ""
    users = "user has" if short.height == 1 else "users have"
    msg = (
        f"{column} needs at least {measure.cutoff} non-relevant recommendations for "
        "each user with a relevant item it does not recommend; "
        f"{short.height} {users} fewer: {first}{more}. Recommend more items, or pass "
        "insufficient_handling=exclude (leave such users out) or ignore (score them "
        "as they are)."
    )
    raise ValueError(msg)


# --------------------------------------------------------------------------- declarations


def _needs(*inputs: SideInput) -> tuple[SideInput, ...]:
    return inputs


declare(
    "Novelty",
    over_lists_only("Novelty"),
    "optional",
    summary="mean self-information -log2(|U_i|/|U|) of the recommended items (needs train)",
    over_lists=novelty,
    needs=_needs("train"),
    bounds=(0.0, float("inf")),
    aliases=("meaninvuserfreq", "miuf", "novelty", "mean_inv_user_freq"),
    order=300,
)
declare(
    "ARP",
    over_lists_only("ARP"),
    "optional",
    Param("normalize", bool, False),
    summary="average popularity (training interactions) of the recommended items",
    over_lists=average_popularity,
    needs=_needs("train"),
    bounds=(0.0, float("inf")),
    better="lower",
    aliases=("avgrecpopularity", "arp", "averagepopularity", "avg_rec_popularity"),
    order=301,
)
declare(
    "TailShare",
    over_lists_only("TailShare"),
    "optional",
    Param("tail_ratio", float, TAIL_RATIO),
    summary="share of long-tail items (RecBole TailPercentage) in the list",
    over_lists=tail_share,
    needs=_needs("train"),
    bounds=UNIT,
    aliases=("tailpercentage", "tail_percentage", "tailshare"),
    order=302,
)


for _name, _what, _bounds in (
    ("APLT", "share of distinct long-tail items (Elliot APLT)", UNIT),
    ("ACLT", "count of distinct long-tail items (Elliot ACLT)", (0.0, float("inf"))),
):
    declare(
        _name,
        over_lists_only(_name),
        "optional",
        Param("pop_ratio", float, HEAD_RATIO),
        summary=f"{_what} in the list; the short head takes pop_ratio of train's pairs",
        over_lists=long_tail_items,
        needs=_needs("train"),
        bounds=_bounds,
        aliases=(_name.lower(),),
        order=310 if _name == "APLT" else 311,
    )
declare(
    "ILD",
    over_lists_only("ILD"),
    "optional",
    Param("distance", str, "hamming", DISTANCES),
    summary=(
        "intra-list diversity: mean pairwise distance (hamming, cosine or jaccard of the "
        "item features, or a table of pairs)"
    ),
    over_lists=intra_list_diversity,
    needs=_needs("item_features"),
    bounds=(0.0, float("inf")),
    aliases=("intralistdiversity", "ild", "intra_list_diversity"),
    order=303,
)
declare(
    "Serendipity",
    over_lists_only("Serendipity"),
    "optional",
    REL_PARAM := Param("rel", int),
    summary="relevant and unexpected: max(p(i) - p_u(i), 0) over relevant items (RecTools)",
    over_lists=serendipity,
    needs=_needs("train", "catalog", "qrels"),
    bounds=UNIT,
    aliases=("serendipity",),
    order=304,
)
declare(
    "SufficientReco",
    over_lists_only("SufficientReco"),
    "required",
    Param("deep", bool, False),
    summary="1 if the list has k items (deep: the share of k it has)",
    over_lists=sufficient,
    empty_list=0.0,
    bounds=UNIT,
    aliases=("sufficientreco", "sufficient_reco"),
    order=305,
)
declare(
    "UnrepeatedReco",
    over_lists_only("UnrepeatedReco"),
    "optional",
    Param("deep", bool, False),
    summary="1 if no item repeats in the list (deep: the share of first occurrences)",
    over_lists=unrepeated,
    bounds=UNIT,
    aliases=("unrepeatedreco", "unrepeated_reco"),
    order=306,
)


def _declare_auc(name: str, top: bool, summary: str, aliases: tuple[str, ...], order: int) -> None:
    def build(x: Measure, c: Context) -> pl.Expr:
        return partial_auc(required_k(x), **with_n_rel(x, c), top_positives=top)

    def formula(x: Measure, f: Features) -> pl.Expr:
        handling = x.setting("insufficient_handling")
        k, level = required_k(x), x.rel_level(f.ctx)
        return partial_auc_formula(f, k, level, top_positives=top, insufficient=handling)

    declare(
        name,
        build,
        "required",
        REL_PARAM,
        Param("insufficient_handling", str, "ignore", INSUFFICIENT),
        summary=summary,
        reads=reads_relevant,
        formula=formula,
        bounds=UNIT,
        aliases=aliases,
        order=order,
        refuse=refuse_insufficient,
    )


_declare_auc(
    "PartialAUC",
    False,
    "partial AUC of the relevant vs the top k non-relevant items (RecTools)",
    ("partialauc", "pauc"),
    307,
)
_declare_auc(
    "PAP",
    True,
    "pAp@k: AUC of the top min(k,|R|) relevant vs the top k non-relevant (RecTools)",
    ("pap",),
    308,
)
