r"""Microsoft Recommenders' measures of item co-occurrence, and its novelty.

Microsoft Recommenders 1.2.1 (``recommenders/evaluation/python_evaluation.py``)
measures how alike two items are by how often the training interactions hold them
together: the cosine of their columns in the (user x item) matrix of training rows,

.. math::
    sim(i, j) = \frac{\sum_u n_u(i)\, n_u(j)}{\sqrt{N_i N_j}}

with :math:`n_u(i)` the training rows of user u and item i and :math:`N_i = \sum_u
n_u(i)` (``_get_cooccurrence_similarity``; Zhang et al., "Auralist", WSDM 2012); two
items never held together have similarity 0. Only the pairs the measures read are
counted: the pairs of a list's items, and each recommended item with its user's
training items, one join of the training rows per item of the pair.

``CoocDiversity`` and ``CoocSerendipity`` are measures of each list (``user_diversity``
and ``user_serendipity``; their means over the users are ``diversity`` and
``serendipity``); ``ChoiceNovelty`` is a measure of a system's recommendations as a
whole (``novelty``). ``conventions="recommenders"`` reads Recommenders' names as them.
Their cost grows with the training rows of the items recommended: a popular item joins
every user who interacted with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import polars as pl

from polars_rankeval.catalogue import (
    UNIT,
    Measure,
    Param,
    SideInput,
    declare,
    over_catalog_only,
    over_lists_only,
)
from polars_rankeval.lists import POS, RELEVANT
from polars_rankeval.metrics.exposure import Split, Sums, exposure
from polars_rankeval.side import INTERACTIONS, ROWS

if TYPE_CHECKING:
    from polars_rankeval.lists import Lists
    from polars_rankeval.side import Side

_A, _B, _SIM = "__rk_co_a", "__rk_co_b", "__rk_co_sim"
_N = ROWS
RELEVANCE = ("all", "qrels")
"""Which recommended items ``CoocSerendipity`` counts as relevant: every one (Recommenders'
default, ``col_relevance=None``) or the user's test interactions (``qrels``)."""


def similarity(pairs: pl.LazyFrame, ls: Lists) -> pl.LazyFrame:
    r"""``pairs`` (columns ``__rk_co_a``, ``__rk_co_b``: two items) with ``__rk_co_sim``,
    their co-occurrence cosine in the training rows (see the module docstring; 0 for
    items never held together, or absent from the training rows)."""
    counts = ls.train_counts()
    query, doc = ls.query, ls.doc
    distinct = pairs.select(_A, _B).unique()
    left = counts.rename({doc: _A, _N: "__rk_co_na"})
    right = counts.rename({doc: _B, _N: "__rk_co_nb"})
    together = distinct.join(left, on=_A).join(right, on=[query, _B])
    co = together.group_by(_A, _B).agg(
        (pl.col("__rk_co_na") * pl.col("__rk_co_nb")).sum().cast(pl.Float64).alias("__rk_co")
    )
    totals = ls.popularity().select(doc, pl.col(INTERACTIONS).cast(pl.Float64))
    co = co.join(totals.rename({doc: _A, INTERACTIONS: "__rk_co_ta"}), on=_A)
    co = co.join(totals.rename({doc: _B, INTERACTIONS: "__rk_co_tb"}), on=_B)
    sim = pl.col("__rk_co") / (pl.col("__rk_co_ta") * pl.col("__rk_co_tb")).sqrt()
    co = co.select(_A, _B, sim.alias(_SIM))
    return pairs.join(co, on=[_A, _B], how="left").with_columns(pl.col(_SIM).fill_null(0.0))


def cooc_diversity(measure: Measure, ls: Lists) -> pl.LazyFrame:
    r"""1 - the mean co-occurrence cosine of the pairs of a list (Microsoft Recommenders
    ``user_diversity``, Ziegler et al. 2005's intra-list similarity).

    .. math::
        \mathrm{CoocDiversity@k} = 1 - \frac{1}{|P_u|} \sum_{(i, j) \in P_u} sim(i, j)

    over :math:`P_u`, the pairs of positions of the top k holding two different items
    (a repeated item makes a pair with each other item once per time it is listed, and
    none with itself, as Recommenders' ``_get_pairwise_items`` keeps ``i1 < i2``).
    A list without such a pair (one item, or one item repeated) has no value: it is
    left out of the mean, as Recommenders leaves the user out.
    """
    keys = list(ls.keys)
    k = measure.cutoff if isinstance(measure.cutoff, int) else None
    rows = ls.at(k).select(*keys, ls.doc, POS)
    left = rows.rename({ls.doc: _A, POS: "__rk_co_pa"})
    right = rows.rename({ls.doc: _B, POS: "__rk_co_pb"})
    pairs = left.join(right, on=keys, nulls_equal=True)
    pairs = pairs.filter((pl.col("__rk_co_pa") < pl.col("__rk_co_pb")) & (pl.col(_A) != pl.col(_B)))
    per_list = (
        similarity(pairs, ls).group_by(keys).agg((1.0 - pl.col(_SIM).mean()).alias(str(measure)))
    )
    return per_list


def cooc_serendipity(measure: Measure, ls: Lists) -> pl.LazyFrame:
    r"""The mean over a list's items of how unlike they are to the user's training items,
    for the relevant ones (Microsoft Recommenders ``user_serendipity``).

    .. math::
        \mathrm{CoocSerendipity@k} = \frac{1}{|L_u|} \sum_{i \in L_u}
            \Big(1 - \frac{\sum_j n_u(j)\, sim(i, j)}{\sum_j n_u(j)}\Big)\, rel(i)

    over the rows :math:`L_u` of the top k and the user's training items j (each as
    many times as it has training rows, as Recommenders' merge of the frames).
    ``relevant="all"`` takes :math:`rel(i) = 1` for every item (Recommenders without a
    ``col_relevance``: the list's unexpectedness); ``relevant="qrels"``, 1 for the user's
    test interactions and 0 for the others. A user without training rows has no value
    (Recommenders' inner merge leaves the user out).
    """
    keys, query, doc = list(ls.keys), ls.query, ls.doc
    k = measure.cutoff if isinstance(measure.cutoff, int) else None
    judged = measure.setting("relevant") == "qrels"
    rows = ls.at(k).select(*keys, doc, *([RELEVANT] if judged else []))
    rows = rows.with_row_index("__rk_co_row")  # a recommended row, repeated or tied
    history = ls.train_counts().rename({doc: _B})
    pairs = rows.rename({doc: _A}).join(history, on=query)
    scored = similarity(pairs, ls)
    expected = scored.group_by(*keys, "__rk_co_row").agg(
        ((pl.col(_SIM) * pl.col(_N)).sum() / pl.col(_N).sum()).alias("__rk_co_expected"),
        (pl.col(RELEVANT).first().cast(pl.Float64) if judged else pl.lit(1.0)).alias("__rk_rel"),
    )
    value = ((1.0 - pl.col("__rk_co_expected")) * pl.col("__rk_rel")).mean()
    return expected.group_by(keys).agg(value.alias(str(measure)))


def choice_novelty(
    measure: Measure, sums: tuple[Sums, ...], groups: Sequence[str], side: Side
) -> pl.LazyFrame:
    r"""The mean over every recommended row of the system of its item's self-information
    in the training rows (Microsoft Recommenders ``novelty``; Castells et al., ECIR 2011,
    item choice model), from the items' exposure :math:`c_i` (summed over any buckets of
    users: :class:`~polars_rankeval.metrics.exposure.Split`).

    .. math::
        \mathrm{ChoiceNovelty@k} = \frac{1}{C} \sum_i c_i \Big(-\log_2 \frac{N_i}{N}\Big)

    with :math:`c_i` the item's rows in the top k of the system's lists, :math:`C`
    their sum, :math:`N_i` its training rows and :math:`N` the training rows; an item
    absent from the training rows adds 0 (Recommenders' inner merge) but counts in C.
    """
    exposed = sums[0]
    doc = next(k for k in exposed.keys if k not in groups)
    assert side.items is not None, "ChoiceNovelty needs train"
    n = float(side.n_interactions or 0)
    items = side.items.lazy().select(doc, pl.col(INTERACTIONS).cast(pl.Float64))
    rows = exposed.frame.join(items, on=doc, how="left")
    info = -(pl.col(INTERACTIONS) / n).log(2)
    c = pl.col("count").cast(pl.Float64)
    value = ((c * info).fill_null(0.0).sum() / c.sum()).alias(str(measure))
    return rows.group_by(list(groups)).agg(value) if groups else rows.select(value)


CHOICE_NOVELTY = Split(exposure, choice_novelty)


def _serendipity_needs(measure: Measure) -> tuple[SideInput, ...]:
    return ("train", "qrels") if measure.setting("relevant") == "qrels" else ("train",)


declare(
    "CoocDiversity",
    over_lists_only("CoocDiversity"),
    "optional",
    summary="1 - mean co-occurrence cosine of the list's pairs (Microsoft Recommenders)",
    over_lists=cooc_diversity,
    needs=("train",),
    reads_history=True,
    bounds=(0.0, 1.0),
    aliases=("coocdiversity", "user_diversity"),
    order=312,
)
declare(
    "CoocSerendipity",
    over_lists_only("CoocSerendipity"),
    "optional",
    Param("relevant", str, "all", RELEVANCE),
    summary="mean of 1 - co-occurrence cosine to the user's history (Microsoft Recommenders)",
    over_lists=cooc_serendipity,
    needs=_serendipity_needs,
    reads_history=True,
    bounds=UNIT,
    aliases=("coocserendipity", "user_serendipity"),
    order=313,
)
declare(
    "ChoiceNovelty",
    over_catalog_only("ChoiceNovelty"),
    "optional",
    summary="mean -log2(N_i/N) of the recommended rows (Microsoft Recommenders novelty)",
    over_catalog=CHOICE_NOVELTY.whole,
    needs=("train",),
    bounds=(0.0, float("inf")),
    aliases=("choicenovelty",),
    order=325,
)
