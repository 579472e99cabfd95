"""Judgment quality: how far assessors agree, merged qrels, and what disagreement does to a
comparison of systems.

Every function takes the qrels of several assessors, a list or a dict
``{assessor: qrels}``, and compares them over the (query, doc) pairs they all
judged. The statistics are Polars group_bys over those pairs (overall, or one
group per query): :func:`agreement` (observed agreement, overlap, Cohen's kappa
as scikit-learn gives it, Fleiss' kappa as statsmodels, Krippendorff's alpha as
the ``krippendorff`` package), :func:`confusion_matrix`, :func:`merge_qrels`, and
:func:`system_rankings` / :func:`ranking_agreement` (the ranking of systems under
each assessor's qrels and the rank correlation between them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations
from typing import Literal, TypeAlias, cast, get_args

import polars as pl

from polars_rankeval._typing import IntoFrame
from polars_rankeval.evaluate import evaluate
from polars_rankeval.inputs import as_frame
from polars_rankeval.means import mean_scores
from polars_rankeval.measures import measure_better, parse
from polars_rankeval.stats import rank_correlation
from polars_rankeval.validation import (
    check_choice,
    check_columns,
    check_duplicates,
    check_grade_dtype,
    check_int,
    check_qrels_values,
    check_reserved,
)

AgreementMeasure: TypeAlias = Literal[
    "agreement", "overlap", "cohen_kappa", "fleiss_kappa", "krippendorff_alpha"
]
KappaWeights: TypeAlias = Literal["linear", "quadratic"]
LevelOfMeasurement: TypeAlias = Literal["nominal", "ordinal", "interval"]
MergeRule: TypeAlias = Literal["or", "and", "majority", "mean"]
Keep: TypeAlias = Literal["shared", "all"]
CorrelationMethod: TypeAlias = Literal["kendall", "tau_ap"]

IntoAssessors: TypeAlias = Sequence[IntoFrame] | Mapping[str, IntoFrame]

MEASURES: tuple[AgreementMeasure, ...] = (
    "agreement",
    "overlap",
    "cohen_kappa",
    "fleiss_kappa",
    "krippendorff_alpha",
)
"""The measures of :func:`agreement`, in the order of its output."""

# Internal column names.
_WHO, _GRADE, _GROUP, _N = "__assessor", "__grade", "__group", "__n"


def _assessor_frames(
    qrels: IntoAssessors, *, query: str, doc: str, relevance: str, minimum: int = 2
) -> tuple[list[str], pl.DataFrame]:
    """The assessors' names and their judgments as one frame
    ``_WHO, query, doc, _GRADE (Int64)``, each checked as qrels."""
    if isinstance(qrels, Mapping):
        items = [(str(k), v) for k, v in qrels.items()]
    elif isinstance(qrels, Sequence) and not isinstance(qrels, str | bytes):
        items = [(f"assessor{i + 1}", v) for i, v in enumerate(qrels)]
    else:
        msg = (
            "qrels must be a list or a dict {assessor: qrels} of the assessors' qrels. "
            f"Got {type(qrels).__name__}."
        )
        raise TypeError(msg)
    if len(items) < minimum:
        msg = f"qrels must hold at least {minimum} assessors' qrels. Got {len(items)}."
        raise ValueError(msg)
    parts = []
    for name, obj in items:
        where = f"qrels[{name!r}]"
        lazy = as_frame(obj, where, (query, doc, relevance)).lazy()
        schema = lazy.collect_schema()
        check_columns(schema, {"query": query, "doc": doc, "relevance": relevance}, where)
        check_grade_dtype(schema, relevance, table=where)
        frame = lazy.select(query, doc, relevance).collect()
        check_qrels_values(frame, ids=[query, doc], relevance=relevance)
        check_duplicates(frame.lazy(), [query, doc], where)
        grade = pl.col(relevance).cast(pl.Int64).alias(_GRADE)
        parts.append(frame.select(pl.lit(name).alias(_WHO), query, doc, grade))
    for column in (query, doc):  # an integer and a string id become strings
        if len({p.schema[column] for p in parts}) > 1:
            parts = [p.with_columns(pl.col(column).cast(pl.String)) for p in parts]
    return [name for name, _ in items], pl.concat(parts)


def _sum(values: pl.Expr) -> pl.Expr:
    """A group's sum added smallest first: the same whatever order the rows come in
    (a plain sum's order follows Polars' threads, a last-digit difference)."""
    return values.sort().cum_sum().last()


def _mean(values: pl.Expr) -> pl.Expr:
    return _sum(values) / pl.len().cast(pl.Float64)


def _shared(judgments: pl.DataFrame, m: int, *, query: str, doc: str) -> pl.DataFrame:
    """The judgments of the (query, doc) pairs every one of the m assessors judged."""
    return judgments.filter(pl.len().over(query, doc) == m)


def _grouped(frame: pl.DataFrame, query: str, per_query: bool) -> pl.DataFrame:
    """``frame`` with the group column: its query, or one group for all."""
    group = pl.col(query) if per_query else pl.lit(0)
    return frame.with_columns(group.alias(_GROUP))


def _pair_frame(shared: pl.DataFrame, a: str, b: str, *, query: str, doc: str) -> pl.DataFrame:
    """``_GROUP, query, doc, x, y``: the grades of assessors a and b side by side."""
    keys = [_GROUP, query, doc]
    x = shared.filter(pl.col(_WHO) == a).select(*keys, pl.col(_GRADE).alias("x"))
    y = shared.filter(pl.col(_WHO) == b).select(*keys, pl.col(_GRADE).alias("y"))
    return x.join(y, on=keys)


def _weight(distance: pl.Expr, weights: KappaWeights | None) -> pl.Expr:
    if weights is None:
        return (distance != 0).cast(pl.Float64)
    return distance if weights == "linear" else distance**2


def _cohen(pairs: pl.DataFrame, weights: KappaWeights | None) -> pl.DataFrame:
    r"""Cohen's kappa of each group of ``pairs`` (columns x, y), as scikit-learn's
    ``cohen_kappa_score``: categories are the group's grades in order, their
    distance the difference of their places."""
    labels = pl.concat(
        [pairs.select(_GROUP, pl.col("x").alias("v")), pairs.select(_GROUP, pl.col("y").alias("v"))]
    ).unique()
    labels = labels.with_columns(
        (pl.col("v").rank("dense").over(_GROUP).cast(pl.Float64) - 1.0).alias("i")
    )
    ix = labels.rename({"v": "x", "i": "ix"})
    iy = labels.rename({"v": "y", "i": "iy"})
    placed = pairs.join(ix, on=[_GROUP, "x"]).join(iy, on=[_GROUP, "y"])
    distance = (pl.col("ix") - pl.col("iy")).abs()
    observed = placed.group_by(_GROUP).agg(
        _weight(distance, weights).sum().alias("wo"), pl.len().cast(pl.Float64).alias("n")
    )
    rows = placed.group_by(_GROUP, "ix").agg(pl.len().cast(pl.Float64).alias("ca"))
    cols = placed.group_by(_GROUP, "iy").agg(pl.len().cast(pl.Float64).alias("cb"))
    chance = (
        rows.join(cols, on=_GROUP)
        .group_by(_GROUP)
        .agg((_weight(distance, weights) * pl.col("ca") * pl.col("cb")).sum().alias("we"))
    )
    kappa = 1.0 - pl.col("wo") / (pl.col("we") / pl.col("n"))
    return observed.join(chance, on=_GROUP).select(_GROUP, kappa.alias("cohen_kappa"))


def _item_counts(shared: pl.DataFrame, *, query: str, doc: str) -> pl.DataFrame:
    """``_GROUP, query, doc, v, c``: how many assessors gave grade v to the pair."""
    return shared.group_by(_GROUP, query, doc, pl.col(_GRADE).alias("v")).agg(
        pl.len().cast(pl.Float64).alias("c")
    )


def _fleiss(counts: pl.DataFrame, m: int, *, query: str, doc: str) -> pl.DataFrame:
    r"""Fleiss' kappa of each group, as statsmodels' ``fleiss_kappa(method="fleiss")``."""
    # sum_j n_ij^2 - m per pair: whole numbers, so their sum is exact in any order
    items = counts.group_by(_GROUP, query, doc).agg((pl.col("c") ** 2).sum() - m)
    observed = items.group_by(_GROUP).agg(
        (pl.col("c").sum() / (pl.len() * m * (m - 1.0))).alias("p_mean")
    )
    shares = counts.group_by(_GROUP, "v").agg(pl.col("c").sum().alias("n_v"))  # integers
    chance = shares.group_by(_GROUP).agg(
        _sum((pl.col("n_v") / pl.col("n_v").sum()) ** 2).alias("p_exp")
    )
    kappa = (pl.col("p_mean") - pl.col("p_exp")) / (1.0 - pl.col("p_exp"))
    return observed.join(chance, on=_GROUP).select(_GROUP, kappa.alias("fleiss_kappa"))


def _delta(level: LevelOfMeasurement) -> pl.Expr:
    """Krippendorff's squared distance of grades (v, w) with counts n_v, n_w and
    cumulative counts C_v, C_w (over the group's grades in order)."""
    if level == "nominal":
        return (pl.col("v") != pl.col("w")).cast(pl.Float64)
    if level == "interval":
        return (pl.col("v") - pl.col("w")).cast(pl.Float64) ** 2
    low = pl.col("v") <= pl.col("w")
    c_lo = pl.when(low).then(pl.col("C_v")).otherwise(pl.col("C_w"))
    c_hi = pl.when(low).then(pl.col("C_w")).otherwise(pl.col("C_v"))
    n_lo = pl.when(low).then(pl.col("n_v")).otherwise(pl.col("n_w"))
    n_hi = pl.when(low).then(pl.col("n_w")).otherwise(pl.col("n_v"))
    # the grades from lo to hi, less half of the two ends: sum_{g=lo}^{hi} n_g - (n_lo + n_hi)/2
    return (c_hi - c_lo + (n_lo - n_hi) / 2.0) ** 2


def _krippendorff(
    counts: pl.DataFrame, m: int, level: LevelOfMeasurement, *, query: str, doc: str
) -> pl.DataFrame:
    """Krippendorff's alpha of each group, as ``krippendorff.alpha``, every pair
    judged by the m assessors."""
    keys = [_GROUP, query, doc]
    other = counts.rename({"v": "w", "c": "c_w"})
    pairs = counts.join(other, on=keys)  # each pair's grades v, w: the coincidences
    # whole numbers summed (exact in any order), divided by m - 1 once
    coincide = pl.col("c") * (pl.col("c_w") - (pl.col("v") == pl.col("w")).cast(pl.Float64))
    o = pairs.group_by(_GROUP, "v", "w").agg(coincide.sum().alias("o"))
    totals = o.group_by(_GROUP, "v").agg((pl.col("o").sum() / (m - 1.0)).alias("n_v"))
    totals = totals.sort(_GROUP, "v")
    o = o.with_columns(pl.col("o") / (m - 1.0))
    totals = totals.with_columns(
        pl.col("n_v").cum_sum().over(_GROUP).alias("C_v"),
        pl.col("n_v").sum().over(_GROUP).alias("n"),
    )
    grades_w = totals.drop("n").rename({"v": "w", "n_v": "n_w", "C_v": "C_w"})
    cells = totals.join(grades_w, on=_GROUP).join(o, on=[_GROUP, "v", "w"], how="left")
    n = pl.col("n")
    expected = (
        pl.col("n_v") * pl.col("n_w")
        - (pl.col("v") == pl.col("w")).cast(pl.Float64) * pl.col("n_v")
    ) / (n - 1.0)
    delta = _delta(level)
    sums = (
        cells.with_columns(expected.alias("e"))
        .group_by(_GROUP)
        .agg(
            _sum(pl.col("o").fill_null(0.0) * delta).alias("do"),
            _sum(pl.col("e") * delta).alias("de"),
        )
    )
    return sums.select(_GROUP, (1.0 - pl.col("do") / pl.col("de")).alias("krippendorff_alpha"))


def _check_measures(measures: str | Iterable[str]) -> list[AgreementMeasure]:
    names = [measures] if isinstance(measures, str) else list(measures)
    if not names:
        msg = f"measures is empty: name one or more of {', '.join(map(repr, MEASURES))}."
        raise ValueError(msg)
    for name in names:
        check_choice("measures", name, AgreementMeasure)
    return cast("list[AgreementMeasure]", list(dict.fromkeys(names)))


def agreement(
    qrels: IntoAssessors,
    *,
    measures: str | Iterable[str] = MEASURES,
    weights: KappaWeights | None = None,
    level: LevelOfMeasurement = "nominal",
    per_query: bool = False,
    rel_level: int = 1,
    query: str = "query",
    doc: str = "doc",
    relevance: str = "relevance",
) -> pl.DataFrame:
    r"""How far assessors agree, over the (query, doc) pairs they all judged.

    With :math:`N` shared pairs, :math:`m` assessors and grades :math:`g`:

    - ``"agreement"``: the share of pairs every assessor graded alike.
    - ``"overlap"``: pairs relevant (grade >= ``rel_level``) for every
      assessor over pairs relevant for any (trectools ``check_overlap``).
    - ``"cohen_kappa"`` (scikit-learn ``cohen_kappa_score``), with the
      confusion matrix :math:`O` of two assessors, the outer product
      :math:`E` of its margins over :math:`N` and weights :math:`w_{ij}`
      (0 on the diagonal, 1 elsewhere; ``"linear"`` :math:`|i - j|`;
      ``"quadratic"`` :math:`(i - j)^2`, i and j the places of the grades in the
      sorted grades that occur):

      .. math:: \kappa = 1 - \frac{\sum_{ij} w_{ij} O_{ij}}{\sum_{ij} w_{ij} E_{ij}}

      With more than two assessors, the mean of the kappas of every pair of
      them (Light's kappa).
    - ``"fleiss_kappa"`` (statsmodels ``fleiss_kappa``), with :math:`n_{ij}`
      the assessors who gave pair i grade j:

      .. math:: \kappa = \frac{\bar P - P_e}{1 - P_e}, \quad
                \bar P = \frac{1}{N} \sum_i \frac{\sum_j n_{ij}^2 - m}{m (m - 1)},
                \quad P_e = \sum_j \Big(\frac{\sum_i n_{ij}}{N m}\Big)^2

    - ``"krippendorff_alpha"`` (the ``krippendorff`` package), with the
      coincidences :math:`o_{ck}` of grades c and k within a pair, their totals
      :math:`n_c` (:math:`n = \sum_c n_c`) and the distance
      :math:`\delta_{ck}` of ``level`` (nominal: :math:`c \ne k`; interval:
      :math:`(c - k)^2`; ordinal: :math:`(\sum_{g=c}^{k} n_g - (n_c + n_k)/2)^2`):

      .. math:: \alpha = 1 - (n - 1)
                \frac{\sum_{ck} o_{ck} \delta_{ck}}{\sum_{ck} n_c n_k \delta_{ck}}

    Parameters
    ----------
    qrels
        The assessors' qrels: a list (named ``assessor1``, ``assessor2``, ...)
        or a dict ``{assessor: qrels}``, at least two; Polars (lazy frames are
        collected: qrels are small), pandas or Arrow frames. Grades are integers.
    measures
        Which of ``"agreement"``, ``"overlap"``, ``"cohen_kappa"``,
        ``"fleiss_kappa"``, ``"krippendorff_alpha"`` (default: all, in this order).
    weights
        Cohen's kappa: None (default, unweighted), ``"linear"`` or ``"quadratic"``.
    level
        Krippendorff's level of measurement: ``"nominal"`` (default),
        ``"ordinal"`` or ``"interval"``.
    per_query
        One row per query (True; every query any assessor judged) or one row
        for all pairs (False, default).
    rel_level
        The lowest relevant grade, for ``"overlap"`` (default 1).
    query, doc, relevance
        Column names, the same in every assessor's qrels.

    Returns
    -------
    pl.DataFrame
        ``[query], pairs, <measures>``: ``pairs`` the number of shared (query,
        doc) pairs; each measure a Float64. With no shared pair the measures
        are null; a measure that is 0 / 0 (kappa or alpha when a single grade
        occurs, overlap when no pair is relevant) is NaN, as in the peers
        (``krippendorff.alpha`` raises there).

    References
    ----------
    Cohen, "Weighted kappa", Psychological Bulletin 70, 1968. Fleiss, "Measuring
    nominal scale agreement among many raters", Psychological Bulletin 76, 1971.
    Krippendorff, "Content Analysis", 2004, ch. 11. Light, "Measures of response
    agreement for qualitative data", Psychological Bulletin 76, 1971.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> alice = pl.DataFrame({"query": 1, "doc": ["a", "b", "c", "d"], "relevance": [1, 1, 0, 0]})
    >>> bob = pl.DataFrame({"query": 1, "doc": ["a", "b", "c", "e"], "relevance": [1, 0, 0, 1]})
    >>> pr.agreement({"alice": alice, "bob": bob})
    shape: (1, 6)
    ┌───────┬───────────┬─────────┬─────────────┬──────────────┬────────────────────┐
    │ pairs ┆ agreement ┆ overlap ┆ cohen_kappa ┆ fleiss_kappa ┆ krippendorff_alpha │
    │ ---   ┆ ---       ┆ ---     ┆ ---         ┆ ---          ┆ ---                │
    │ u32   ┆ f64       ┆ f64     ┆ f64         ┆ f64          ┆ f64                │
    ╞═══════╪═══════════╪═════════╪═════════════╪══════════════╪════════════════════╡
    │ 3     ┆ 0.666667  ┆ 0.5     ┆ 0.4         ┆ 0.333333     ┆ 0.444444           │
    └───────┴───────────┴─────────┴─────────────┴──────────────┴────────────────────┘

    They share a, b, c and agree on a and c (2/3). Alice has two relevant of
    three, Bob one: chance agreement is 2/3 * 1/3 + 1/3 * 2/3 = 4/9, so Cohen's
    kappa is (2/3 - 4/9) / (1 - 4/9) = 0.4.
    """
    chosen = _check_measures(measures)
    if weights is not None:
        check_choice("weights", weights, KappaWeights)
    check_choice("level", level, LevelOfMeasurement)
    check_int("rel_level", rel_level, minimum=-(2**53))
    made = (*get_args(AgreementMeasure), "pairs", "kinds", "lo", "hi")
    check_reserved({"query": query, "doc": doc}, made, "agreement", prefix="__")
    names, judgments = _assessor_frames(qrels, query=query, doc=doc, relevance=relevance)
    m = len(names)
    shared = _grouped(_shared(judgments, m, query=query, doc=doc), query, per_query)
    groups = _grouped(judgments.select(query).unique().sort(query), query, per_query)
    groups = groups.select(*([query] if per_query else []), _GROUP).unique(maintain_order=True)
    items = shared.group_by(_GROUP, query, doc).agg(
        pl.col(_GRADE).n_unique().alias("kinds"),
        pl.col(_GRADE).min().alias("lo"),
        pl.col(_GRADE).max().alias("hi"),
    )
    result = groups.join(
        items.group_by(_GROUP).agg(pl.len().cast(pl.UInt32).alias("pairs")), on=_GROUP, how="left"
    ).with_columns(pl.col("pairs").fill_null(0))
    parts: dict[str, pl.DataFrame] = {}
    if "agreement" in chosen or "overlap" in chosen:
        every = (pl.col("lo") >= rel_level).sum().cast(pl.Float64)
        some = (pl.col("hi") >= rel_level).sum().cast(pl.Float64)
        parts["simple"] = items.group_by(_GROUP).agg(
            (pl.col("kinds") == 1).cast(pl.Float64).mean().alias("agreement"),
            (every / some).alias("overlap"),
        )
    if "cohen_kappa" in chosen:
        kappas = [
            _cohen(_pair_frame(shared, a, b, query=query, doc=doc), weights)
            for a, b in combinations(names, 2)
        ]
        parts["cohen"] = (
            pl.concat(kappas).group_by(_GROUP).agg(_mean(pl.col("cohen_kappa")))
            if kappas[0].height
            else kappas[0]
        )
    if "fleiss_kappa" in chosen or "krippendorff_alpha" in chosen:
        counts = _item_counts(shared, query=query, doc=doc)
        if "fleiss_kappa" in chosen:
            parts["fleiss"] = _fleiss(counts, m, query=query, doc=doc)
        if "krippendorff_alpha" in chosen:
            parts["alpha"] = _krippendorff(counts, m, level, query=query, doc=doc)
    for part in parts.values():
        result = result.join(part, on=_GROUP, how="left")
    keys = [query] if per_query else []
    return result.select(*keys, "pairs", *chosen)


def confusion_matrix(
    qrels: IntoAssessors,
    *,
    per_query: bool = False,
    query: str = "query",
    doc: str = "doc",
    relevance: str = "relevance",
) -> pl.DataFrame:
    """How two assessors' grades meet over the (query, doc) pairs both judged.

    Parameters
    ----------
    qrels
        Exactly two assessors' qrels, a list or a dict (see :func:`agreement`).
    per_query
        One matrix per query (True) or one for all shared pairs (False, default).
    query, doc, relevance
        Column names.

    Returns
    -------
    pl.DataFrame
        ``[query], <assessor a>, <assessor b>, count``: one row per pair of
        grades that occur (in the query, with ``per_query``), zero counts
        included, sorted: scikit-learn's ``confusion_matrix(a, b)`` in long
        form, rows a and columns b.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> alice = pl.DataFrame({"query": 1, "doc": ["a", "b", "c"], "relevance": [1, 1, 0]})
    >>> bob = pl.DataFrame({"query": 1, "doc": ["a", "b", "c"], "relevance": [1, 0, 0]})
    >>> pr.confusion_matrix({"alice": alice, "bob": bob})
    shape: (4, 3)
    ┌───────┬─────┬───────┐
    │ alice ┆ bob ┆ count │
    │ ---   ┆ --- ┆ ---   │
    │ i64   ┆ i64 ┆ u32   │
    ╞═══════╪═════╪═══════╡
    │ 0     ┆ 0   ┆ 1     │
    │ 0     ┆ 1   ┆ 0     │
    │ 1     ┆ 0   ┆ 1     │
    │ 1     ┆ 1   ┆ 1     │
    └───────┴─────┴───────┘
    """
    names, judgments = _assessor_frames(qrels, query=query, doc=doc, relevance=relevance)
    if len(names) != 2:
        msg = f"confusion_matrix compares exactly 2 assessors. Got {len(names)}: {names}."
        raise ValueError(msg)
    a, b = names
    if a == b or {a, b} & {query, "count"}:
        msg = (
            f"confusion_matrix names its columns after the assessors; {a!r} and {b!r} must "
            f"differ and be neither {query!r} nor 'count'. Pass a dict with other names."
        )
        raise ValueError(msg)
    shared = _grouped(_shared(judgments, 2, query=query, doc=doc), query, per_query)
    pairs = _pair_frame(shared, a, b, query=query, doc=doc)
    counts = pairs.group_by(_GROUP, "x", "y").agg(pl.len().cast(pl.UInt32).alias("count"))
    labels = pl.concat([pairs.select(_GROUP, v=pl.col("x")), pairs.select(_GROUP, v=pl.col("y"))])
    labels = labels.unique()
    grid = labels.rename({"v": "x"}).join(labels.rename({"v": "y"}), on=_GROUP)
    if per_query:
        grid = grid.join(pairs.select(_GROUP, query).unique(), on=_GROUP)
    full = grid.join(counts, on=[_GROUP, "x", "y"], how="left").with_columns(
        pl.col("count").fill_null(0)
    )
    keys = [query] if per_query else []
    return full.sort(*keys, "x", "y").select(
        *keys, pl.col("x").alias(a), pl.col("y").alias(b), "count"
    )


def merge_qrels(
    qrels: IntoAssessors,
    *,
    how: MergeRule = "or",
    keep: Keep = "shared",
    query: str = "query",
    doc: str = "doc",
    relevance: str = "relevance",
) -> pl.DataFrame:
    """One qrels from several assessors' qrels.

    ``how``: ``"or"`` the highest grade (trectools ``merge_with(operation="or")``),
    ``"and"`` the lowest (``"and"``), ``"majority"`` the grade most assessors
    gave (a tie goes to the lowest of the tied grades: a document is relevant
    only if most say so), ``"mean"`` the mean grade (a Float64, for measures
    that read grades as gains). ``keep``: ``"shared"`` (default, trectools'
    ``keep_all=False``) keeps the pairs every assessor judged, ``"all"`` every
    pair any judged, merged over those who did.

    Returns
    -------
    pl.DataFrame
        ``query, doc, relevance, assessors`` (how many judged the pair),
        sorted by query and doc.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> a = pl.DataFrame({"query": 1, "doc": ["x", "y"], "relevance": [2, 0]})
    >>> b = pl.DataFrame({"query": 1, "doc": ["x", "z"], "relevance": [1, 1]})
    >>> pr.merge_qrels([a, b], how="and", keep="all")
    shape: (3, 4)
    ┌───────┬─────┬───────────┬───────────┐
    │ query ┆ doc ┆ relevance ┆ assessors │
    │ ---   ┆ --- ┆ ---       ┆ ---       │
    │ i32   ┆ str ┆ i64       ┆ u32       │
    ╞═══════╪═════╪═══════════╪═══════════╡
    │ 1     ┆ x   ┆ 1         ┆ 2         │
    │ 1     ┆ y   ┆ 0         ┆ 1         │
    │ 1     ┆ z   ┆ 1         ┆ 1         │
    └───────┴─────┴───────────┴───────────┘
    """
    check_choice("how", how, MergeRule)
    check_choice("keep", keep, Keep)
    roles = {"query": query, "doc": doc, "relevance": relevance}
    check_reserved(roles, ("assessors",), "merge_qrels")
    names, judgments = _assessor_frames(qrels, query=query, doc=doc, relevance=relevance)
    if keep == "shared":
        judgments = _shared(judgments, len(names), query=query, doc=doc)
    grade = pl.col(_GRADE)
    if how == "majority":
        votes = judgments.group_by(query, doc, _GRADE).agg(pl.len().alias(_N))
        merged = votes.group_by(query, doc).agg(
            grade.sort_by([_N, _GRADE], descending=[True, False]).first().alias(relevance),
            pl.col(_N).sum().cast(pl.UInt32).alias("assessors"),
        )
    else:
        rule = {"or": grade.max(), "and": grade.min(), "mean": grade.cast(pl.Float64).mean()}
        merged = judgments.group_by(query, doc).agg(
            rule[how].alias(relevance), pl.len().cast(pl.UInt32).alias("assessors")
        )
    return merged.sort(query, doc)


def system_rankings(
    runs: IntoFrame,
    qrels: IntoAssessors,
    *,
    measure: str = "AP",
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    relevance: str = "relevance",
    system: str = "system",
) -> pl.DataFrame:
    """Each system's mean score under each assessor's qrels.

    :func:`~polars_rankeval.evaluate` with ``measure`` and each assessor's qrels
    in turn, and :func:`~polars_rankeval.mean_scores` over the queries each
    scores (those the assessor judged).

    Returns
    -------
    pl.DataFrame
        ``system, <assessor>...``: one row per system, one Float64 column per
        assessor, sorted by system.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> runs = pl.DataFrame({"system": ["s1", "s1", "s2", "s2"], "query": 1,
    ...                      "doc": ["a", "b", "b", "a"], "score": [2.0, 1.0, 2.0, 1.0]})
    >>> alice = pl.DataFrame({"query": 1, "doc": ["a", "b"], "relevance": [1, 0]})
    >>> bob = pl.DataFrame({"query": 1, "doc": ["a", "b"], "relevance": [0, 1]})
    >>> pr.system_rankings(runs, {"alice": alice, "bob": bob}, measure="RR")
    shape: (2, 3)
    ┌────────┬───────┬─────┐
    │ system ┆ alice ┆ bob │
    │ ---    ┆ ---   ┆ --- │
    │ str    ┆ f64   ┆ f64 │
    ╞════════╪═══════╪═════╡
    │ s1     ┆ 1.0   ┆ 0.5 │
    │ s2     ┆ 0.5   ┆ 1.0 │
    └────────┴───────┴─────┘
    """
    name = str(parse(measure))
    names, judgments = _assessor_frames(qrels, query=query, doc=doc, relevance=relevance)
    run = as_frame(runs, "runs", (query, doc, score))
    check_columns(run.lazy().collect_schema(), {"system": system}, "runs")
    if system in names:
        msg = (
            f"an assessor is named {system!r}, the name of the system column: the table has "
            f"one column per assessor beside it. Give the assessors other names (a dict of "
            f"qrels) or pass system=<another column name>."
        )
        raise ValueError(msg)
    table: pl.DataFrame | None = None
    for assessor in names:
        mine = judgments.filter(pl.col(_WHO) == assessor).select(
            query, doc, pl.col(_GRADE).alias(relevance)
        )
        per_query = evaluate(
            run, mine, [name], query=query, doc=doc, score=score, relevance=relevance, system=system
        )
        means = mean_scores(per_query, [name], system=system, query=query)
        column = means.lazy().select(system, pl.col(name).alias(assessor)).collect()
        table = (
            column if table is None else table.join(column, on=system, how="full", coalesce=True)
        )
    assert table is not None
    return table.sort(system)


def ranking_agreement(
    runs: IntoFrame,
    qrels: IntoAssessors,
    *,
    measure: str = "AP",
    methods: Iterable[CorrelationMethod] = ("kendall", "tau_ap"),
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    relevance: str = "relevance",
    system: str = "system",
) -> pl.DataFrame:
    r"""Does disagreement change the comparison? Rank correlation of the system
    rankings under each pair of assessors' qrels.

    The means of :func:`system_rankings`, compared for every pair of assessors
    (a, b) with :func:`~polars_rankeval.rank_correlation`: Kendall's
    :math:`\tau_b`, and :math:`\tau_{ap}` with a's ranking as the reference
    (it refuses tied means: leave it out of ``methods`` then). Systems with no
    score under one of the two are left out of that pair. A ``measure`` declared
    ``better="lower"`` (FallOut, Unjudged, ...) ranks the lowest means first.

    Returns
    -------
    pl.DataFrame
        ``assessor_a, assessor_b, systems, <methods>``, one row per pair in the
        order the assessors were given.

    References
    ----------
    Voorhees, "Variations in relevance judgments and the measurement of
    retrieval effectiveness", IP&M 36, 2000.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> runs = pl.DataFrame({"system": ["s1", "s1", "s2", "s2"], "query": 1,
    ...                      "doc": ["a", "b", "b", "a"], "score": [2.0, 1.0, 2.0, 1.0]})
    >>> alice = pl.DataFrame({"query": 1, "doc": ["a", "b"], "relevance": [1, 0]})
    >>> bob = pl.DataFrame({"query": 1, "doc": ["a", "b"], "relevance": [0, 1]})
    >>> pr.ranking_agreement(runs, {"alice": alice, "bob": bob}, measure="RR")
    shape: (1, 5)
    ┌────────────┬────────────┬─────────┬─────────┬────────┐
    │ assessor_a ┆ assessor_b ┆ systems ┆ kendall ┆ tau_ap │
    │ ---        ┆ ---        ┆ ---     ┆ ---     ┆ ---    │
    │ str        ┆ str        ┆ u32     ┆ f64     ┆ f64    │
    ╞════════════╪════════════╪═════════╪═════════╪════════╡
    │ alice      ┆ bob        ┆ 2       ┆ -1.0    ┆ -1.0   │
    └────────────┴────────────┴─────────┴─────────┴────────┘
    """
    chosen = list(dict.fromkeys(methods))
    if not chosen:
        msg = "methods is empty: name 'kendall', 'tau_ap' or both."
        raise ValueError(msg)
    for method in chosen:
        check_choice("methods", method, CorrelationMethod)
    table = system_rankings(
        runs,
        qrels,
        measure=measure,
        query=query,
        doc=doc,
        score=score,
        relevance=relevance,
        system=system,
    )
    names = [c for c in table.columns if c != system]
    if measure_better(measure) == "lower":  # best first: tau_ap weighs the top
        table = table.with_columns(-pl.col(names))
    rows = []
    for a, b in combinations(names, 2):
        both = table.select(a, b).drop_nulls()
        values = both.select(
            pl.lit(a).alias("assessor_a"),
            pl.lit(b).alias("assessor_b"),
            pl.lit(both.height, dtype=pl.UInt32).alias("systems"),
            *(rank_correlation(a, b, method=method).alias(method) for method in chosen),
        )
        rows.append(values)
    return pl.concat(rows)
