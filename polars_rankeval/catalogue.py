"""The declarations of the measures: what a measure is, and the registry of them.

Each built-in measure is declared once, next to its code, in the module of its family
under :mod:`polars_rankeval.metrics`: its Polars expression, the formula over the
engine's features, its parameters with their types, defaults and choices, the names it
has in each dialect (aliases of trec_eval, ranx and ir_measures, presets such as
``ndcg_burges``, trec_eval's ``name_value`` and ``-m name.values`` forms), what it reads,
its bounds and how queries combine (:func:`declare`). :func:`register` adds a declaration
to :data:`REGISTRY` and derives the name tables the parser reads (:data:`ALIASES`,
:data:`TREC_CUTOFF_ALIASES`, :data:`TREC_DOTTED`) from it.

This module imports no metric module and nothing of the engine but the formulas' Context
(:mod:`polars_rankeval.engine.plan`), so that each metric
module can import it; :mod:`polars_rankeval.measures` imports the metric modules (every
built-in is declared before a name is parsed) and holds the parser.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, get_args

import polars as pl

from polars_rankeval._typing import Aggregate, IntoExpr, Norm, Ties
from polars_rankeval.engine.plan import Context

if TYPE_CHECKING:
    from polars_rankeval.engine.features import Features
    from polars_rankeval.lists import Lists

SideInput = Literal["train", "catalog", "item_features", "qrels"]
"""The inputs besides the run that a measure of recommendation lists may read:
``train`` (the training interactions: popularity), ``catalog`` (the item ids that
could be recommended), ``item_features`` and ``qrels`` (the test interactions)."""

CutoffRule = Literal["none", "optional", "required"]
Better = Literal["higher", "lower"]
"""Which way a measure's values are better: ``"higher"`` (AP, nDCG) or ``"lower"``
(FallOut, Unjudged, the RBP residuals)."""
Bounds = tuple[float, float]
"""The (low, high) range of a measure's per-query values."""


@dataclass(frozen=True)
class Param:
    """A measure parameter: name, type and default (None: the context decides)."""

    name: str
    kind: type
    default: Any = None
    choices: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)
class MeasureFamily:
    """Declaration of one measure family (e.g. precision at any cutoff).

    Compared by identity: a measure parsed after its family was declared again
    (``define_measure(..., replace=True)``) is another measure, so nothing computed
    for the old declaration is reused for it.
    """

    name: str
    build: Callable[[Measure, Context], pl.Expr]
    cutoff: CutoffRule = "none"
    cutoff_kind: type = int
    params: tuple[Param, ...] = ()
    summary: str = ""
    aggregate: Aggregate = "mean"
    formula: Callable[[Measure, Features], pl.Expr] | None = None
    """The measure over the engine's features (see
    :mod:`polars_rankeval.engine.features`): per-ranking sums and maxima of
    row columns, per-query facts and per-ranking numbers, combined into the
    per-ranking value. ``build`` gives the same value as one aggregation
    over a query's rows of the judged table, for users' own ``group_by``."""
    reads: Callable[[Measure, Context], float] | None = None
    """The lowest grade of the judged rows (retrieved or in the qrels) the formula
    reads: a measure of relevant documents reads grades >= its relevance level,
    nDCG the grades with a gain. None: every judged row, whatever its grade
    (Judged@k). The engine selects only the rows some measure asked for reads, so
    the others cost nothing. Rows under it that the formula reads only as counts
    (bpref and infAP: the judged non-relevant documents above each relevant one,
    :meth:`~polars_rankeval.engine.features.Features.nonrelevant_above`) are counted
    by the engine, not carried."""
    bounds: Bounds | Callable[[Measure], Bounds | None] | None = None
    """The range of the per-query values (``(0, 1)`` for proportions), read by the
    statistics (:func:`polars_rankeval.compare.measure_bounds`); a function of the
    measure when its parameters decide (``RBP(gain=linear)`` has no upper bound:
    grades above 1 are gains); None: not known."""
    expression: pl.Expr | Callable[..., pl.Expr] | None = None
    """A declared measure's Polars expression over one ranking of :func:`polars_rankeval.judge`'s
    table, or a function of the measure's cutoff ``k`` and parameters that returns one
    (see :func:`polars_rankeval.define_measure`)."""
    aliases: tuple[str, ...] = ()
    """Other names of the measure, lower-cased: trec_eval's (``map``), ranx's (``mrr``),
    ir_measures' and other tools' spellings."""
    presets: Mapping[str, str] = field(default_factory=dict)
    """Names, lower-cased, that stand for the measure with some parameters set: name ->
    canonical text (``{"ndcg_burges": "nDCG(gain=exp)"}``)."""
    trec_cutoff: Mapping[str, str | None] = field(default_factory=dict)
    """trec_eval's names that carry a value after an underscore (``map_cut_10``,
    ``Rprec_mult_0.20``): prefix -> the parameter the value sets (None: the cutoff)."""
    trec_dotted: Mapping[str, str] = field(default_factory=dict)
    """trec_eval's ``-m name.values`` forms: name -> how the values expand:
    ``"cutoffs"`` (one measure per value), ``"param:<name>"`` (one measure per value of
    that parameter), ``"levels"``, ``"gains"`` or ``"utility"`` (one measure)."""
    fractional: bool | Callable[[Measure], bool] = False
    """Whether the measure reads grades with a fraction (0.5, 2.7), as gains (a function
    of the measure when a parameter decides): scikit-learn's ``dcg_score`` reads
    real-valued grades; trec_eval reads integers, so its measures take none."""
    better: Better = "higher"
    """Which values are better: ``"higher"`` (default) or ``"lower"`` (FallOut,
    Unjudged, RBPResid, ...). :func:`polars_rankeval.report` bolds the best score by
    it and counts a system as beating another by it; :func:`polars_rankeval.compare`
    counts ``wins`` and ``losses`` by it."""
    order: float = math.inf
    """The place of a built-in in :data:`REGISTRY` (the measures page and the "Known
    measures" list): trec_eval's measures in its order, then the others by origin."""
    needs: tuple[SideInput, ...] | Callable[[Measure], tuple[SideInput, ...]] = ()
    """The side inputs it reads besides the run (see :data:`SideInput`; a function of the
    measure when a parameter decides, as ``CatalogCoverage(normalize=true)`` reads the
    catalogue): a call that lacks one is refused, naming it, before any work."""
    over_lists: Callable[[Measure, Lists], pl.LazyFrame | pl.Expr] | None = None
    """A measure of each recommendation list as a whole (novelty, popularity,
    diversity): one value per list from the list's rows joined with the per-item
    table of the side inputs (:mod:`polars_rankeval.lists`): an aggregation over a
    list's rows (:meth:`~polars_rankeval.lists.Lists.per_list`; those of every
    measure are computed in one group-by), or a frame of the list keys and a column
    named by the measure. Such a measure reads no judgments unless it
    ``needs`` ``qrels``, and scores every list of the run, whether or not its user has
    test interactions; a list it leaves out scores null."""
    reads_history: bool = False
    """Whether it reads each training user's items (the (user, item) rows of ``train``),
    not only the per-item table: the side inputs then keep them
    (:attr:`~polars_rankeval.side.Side.user_items`; ``CoocDiversity``)."""
    empty_list: float | None = None
    """The value of a list with no item within the cutoff of a measure of lists (None:
    null, the list left out of the mean, as RecTools leaves such a user out;
    ``SufficientReco``: 0)."""
    over_catalog: Callable[[Measure, Lists], pl.LazyFrame] | None = None
    """A measure of the recommendations of a whole system (and segment) at once:
    catalogue coverage, the Gini index of exposure, personalization. One value per
    system and segment, from :func:`polars_rankeval.evaluate_catalog` only."""
    refuse: Callable[[Measure, pl.DataFrame], None] | None = None
    """Checks the measure's per-ranking values once the engine has them (``scored``:
    the ranking keys and the measure's column) and raises for those it refuses, naming
    the rankings (``PAP(insufficient_handling=raise)``: the users RecTools refuses)."""

    def __post_init__(self) -> None:
        if self.better not in get_args(Better):
            msg = f"better of {self.name} must be 'higher' or 'lower'. Got {self.better!r}."
            raise ValueError(msg)

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        known = ", ".join(p.name for p in self.params) or "none"
        msg = f"{self.name} has no parameter {name!r} (parameters: {known})."
        raise ValueError(msg)


@dataclass(frozen=True)
class Measure:
    """A measure with its cutoff and non-default parameters; hashable."""

    family: MeasureFamily = field(repr=False)
    name: str
    cutoff: int | float | None = None
    params: tuple[tuple[str, Any], ...] = ()

    def __str__(self) -> str:
        out = self.name
        if self.params:
            out += "(" + ",".join(f"{k}={_format_value(v)}" for k, v in self.params) + ")"
        if self.cutoff is not None:
            out += f"@{_format_value(self.cutoff)}"
        return out

    def get(self, name: str, default: Any = None) -> Any:
        """The value of parameter ``name`` (``default`` when not set)."""
        return dict(self.params).get(name, default)

    def setting(self, name: str) -> Any:
        """The value of parameter ``name``: as set, else its declared default."""
        return dict(self.params).get(name, self.family.param(name).default)

    def rel_level(self, ctx: Context) -> int:
        """The relevance threshold: the measure's ``rel`` parameter, else the context's."""
        return self.get("rel", ctx.rel_level)

    @property
    def summed(self) -> bool:
        """Whether its per-query values are summed over queries (the counts): they are
        left as they are for a query without a relevant document."""
        return self.family.aggregate == "sum"

    @property
    def reads_ties(self) -> bool:
        """Whether it reads tie groups (``ties=average`` averages over them, ``ties=doc_asc``
        reverses them): the rank stage then gives each row its tie group."""
        return self.get("ties") in ("average", "doc_asc")

    @property
    def tie_order(self) -> Ties | None:
        """The order of equal scores in the ranking it reads, when it needs one whatever
        the conventions' rule: ``ties=input`` (cwl_eval's measures under
        ``conventions="ir_measures"``) the run's row order; ``ties=doc_asc`` doc id
        descending, which it reads the other way. A pass of their own scores such
        measures (:func:`~polars_rankeval.engine.plan.by_tie_order`) unless the
        conventions already rank so. None otherwise."""
        ties = self.get("ties")
        return "input" if ties == "input" else "doc_desc" if ties == "doc_asc" else None

    @property
    def judged_only(self) -> bool:
        """``judged_only=True`` (trec_eval's ``-J``, ir_measures' ``judged_only``): the
        measure reads each ranking with its unjudged documents (no qrels row, or a
        negative grade) taken out and the others ranked 1, 2, ... in their order, scored
        in a pass of their own (:func:`~polars_rankeval.engine.plan.by_pass`)."""
        return bool(self.get("judged_only"))

    def check_values(self, scored: pl.DataFrame) -> None:
        """Raise for per-ranking values the measure refuses (its family's ``refuse``)."""
        if self.family.refuse is not None:
            self.family.refuse(self, scored)

    @property
    def takes_fractional_grades(self) -> bool:
        """Whether it reads grades with a fraction (0.5, 2.7) as gains (declared by its
        family's ``fractional``)."""
        fractional = self.family.fractional
        return fractional(self) if callable(fractional) else fractional

    @property
    def bounds(self) -> Bounds | None:
        """The range of its per-query values, from its family's ``bounds`` (a function
        of the measure when its parameters decide); None: not known."""
        bounds = self.family.bounds
        return bounds(self) if callable(bounds) else bounds

    def lowest_grade(self, ctx: Context) -> float:
        """The lowest grade of the judged rows this measure reads (-inf: all of them)."""
        reads = self.family.reads
        return -math.inf if reads is None else float(reads(self, ctx))

    @property
    def needs(self) -> tuple[SideInput, ...]:
        """The side inputs it reads besides the run (its family's ``needs``)."""
        needs = self.family.needs
        return needs(self) if callable(needs) else needs

    @property
    def reads_history(self) -> bool:
        """Whether it reads the training users' items (its family's ``reads_history``)."""
        return self.family.reads_history

    @property
    def of_lists(self) -> bool:
        """Whether it is a measure of each list as a whole (its family's ``over_lists``)."""
        return self.family.over_lists is not None

    @property
    def of_catalog(self) -> bool:
        """Whether it is a measure of a whole system's recommendations (``over_catalog``)."""
        return self.family.over_catalog is not None

    def formula(self, features: Features) -> pl.Expr:
        """The per-ranking value over the engine's features, aliased to the canonical name."""
        if self.family.formula is None:
            msg = f"Measure {self} has no formula for the engine."
            raise NotImplementedError(msg)
        return self.family.formula(self, features).alias(str(self))

    def expr(self, ctx: Context | None = None) -> pl.Expr:
        """The aggregation expression, aliased to the canonical name (a ``judged_only``
        measure's reads the ranks among the judged documents: :func:`judged_rank`)."""
        ctx = ctx or Context()
        if self.judged_only:
            ctx = replace(ctx, rank=judged_rank(ctx.rank, ctx.relevance))
        return self.family.build(self, ctx).alias(str(self))


def judged_rank(rank: IntoExpr = "rank", relevance: IntoExpr = "relevance") -> pl.Expr:
    """The rank of a row of the judged table among its query's retrieved judged documents
    (grade 0 or more; trec_eval's ``-J``), 1, 2, ... in rank order; null for the others,
    which then read as judgments not retrieved (the unjudged ones have no grade).

    Examples
    --------
    >>> judged = pl.DataFrame({"rank": [1, 2, 3, 4, None], "relevance": [None, 1, -1, 0, 2]})
    >>> judged.select(judged_rank()).to_series().to_list()
    [None, 1, None, 2, None]
    """
    r = pl.col(rank) if isinstance(rank, str) else rank
    g = pl.col(relevance) if isinstance(relevance, str) else relevance
    kept = r.is_not_null() & (g >= 0).fill_null(False)
    return pl.when(kept).then(pl.when(kept).then(r).rank("ordinal"))


def _number_text(value: float) -> str:
    """3.0 -> '3', 0.25 -> '0.25' (for map and list items)."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


class GainMap(tuple):
    """Grade -> gain pairs, sorted by grade; written ``1:3;2:9`` (trec_eval ``1=3,2=9``)."""

    @classmethod
    def of(cls, value: Any) -> GainMap:
        if isinstance(value, GainMap):
            return value
        if isinstance(value, Mapping):
            items: list[tuple[Any, Any]] = list(value.items())
        elif isinstance(value, str):
            items = []
            for part in filter(None, value.replace(",", ";").split(";")):
                grade, sep, gain = part.replace("=", ":").partition(":")
                if not sep or not re.fullmatch(r"[+-]?\d+", grade.strip()):
                    msg = f"Cannot read gains {value!r}: expected grade:gain items, e.g. 1:3;2:9."
                    raise ValueError(msg)
                items.append((grade, gain))
        else:
            msg = f"gains must be a grade:gain map such as 1:3;2:9. Got {value!r} instead."
            raise ValueError(msg)
        pairs = []
        for grade, gain in items:
            g = int(grade)
            if g < 0:
                msg = f"Gains are given for grades >= 0. Got grade {g} in {value!r}."
                raise ValueError(msg)
            try:
                pairs.append((g, float(gain)))
            except ValueError:
                msg = f"Cannot read the gain {gain!r} of grade {g} in {value!r}."
                raise ValueError(msg) from None
        if len({g for g, _ in pairs}) != len(pairs):
            msg = f"A grade is given two gains in {value!r}."
            raise ValueError(msg)
        return cls(sorted(pairs))

    def __str__(self) -> str:
        return ";".join(f"{g}:{_number_text(v)}" for g, v in self)


class Levels(tuple):
    """A list of numbers (e.g. recall levels); written ``0.25;0.5;0.75``."""

    @classmethod
    def of(cls, value: Any) -> Levels:
        if isinstance(value, Levels):
            return value
        if isinstance(value, int | float) and not isinstance(value, bool):
            parts: Iterable[Any] = [value]
        elif isinstance(value, str):
            parts = [x for x in value.replace(",", ";").split(";") if x.strip()]
        else:
            parts = list(value)
        try:
            levels = tuple(float(x) for x in parts)
        except (TypeError, ValueError):
            msg = f"Cannot read a list of numbers from {value!r} (e.g. 0.25;0.5;0.75)."
            raise ValueError(msg) from None
        if not levels:
            msg = "The list of levels is empty."
            raise ValueError(msg)
        return cls(levels)

    def __str__(self) -> str:
        return ";".join(_number_text(v) for v in self)


def _format_value(value: Any) -> str:
    if isinstance(value, float):
        return repr(value)
    return str(value)


UNIT = (0.0, 1.0)
"""``bounds`` of a proportion: its per-query values lie in [0, 1] by definition."""
NON_NEGATIVE = (0.0, math.inf)
"""``bounds`` of a sum of non-negative gains with no ceiling (a count, graded RBP)."""


def unit_unless_negative_gains(measure: Measure) -> Bounds | None:
    """``bounds`` of a normalised gain measure (nDCG, nDCGRel, Rndcg): [0, 1], but not
    known when its ``gains`` give a grade a negative gain (the ideal no longer bounds it).
    """
    gains = measure.get("gains")
    return None if gains and any(gain < 0 for _, gain in gains) else UNIT


MIN_GEO_MEAN = 0.00001
"""trec_eval's floor on per-query values before a geometric mean."""
REL = Param("rel", int)
TIE_ORDER = Param("ties", str, "ranked", ("ranked", "doc_asc"))
"""The order of equal scores a measure reads: ``ranked`` (the rank stage's, the
conventions' ``ties``: trec_eval's doc id descending) or ``doc_asc`` (doc id ascending:
ir_measures' judged, msmarco and compat providers). A measure with ``doc_asc`` reads each
row's tie group in a ranking by doc id descending, and places a row at ``first + last -
rank`` of it: the group read the other way. Under conventions that keep equal scores
in the row order, such measures are ranked in a pass of their own
(:attr:`Measure.tie_order`)."""
"""The relevance threshold of a measure of relevant documents (default: the context's)."""
NORM = Param("norm", str, "R", get_args(Norm))
GAINS = Param("gains", GainMap)

REGISTRY: dict[str, MeasureFamily] = {}
"""The measure families by canonical name."""
ALIASES: dict[str, str] = {}
"""Plain names from trec_eval, ranx and ir_measures (lower-cased) -> a canonical measure
text (which may preset parameters): the declarations' ``aliases`` and ``presets``."""
TREC_CUTOFF_ALIASES: dict[str, tuple[str, str | None]] = {}
"""trec_eval names that carry a value after an underscore: map_cut_10, P_10,
iprec_at_recall_0.50, Rprec_mult_0.20 -> (family, parameter set by the value; None: the
cutoff). The declarations' ``trec_cutoff``."""
TREC_DOTTED: dict[str, tuple[str, str]] = {}
"""trec_eval ``-m`` forms with parameters after a dot -> (family, how each expands; see
:attr:`MeasureFamily.trec_dotted`). The declarations' ``trec_dotted``."""


def register(family: MeasureFamily) -> MeasureFamily:
    """Add a measure family to the registry (by canonical name), and its names to the
    name tables."""
    REGISTRY[family.name] = family
    ALIASES.update(dict.fromkeys(family.aliases, family.name) | dict(family.presets))
    for prefix, param in family.trec_cutoff.items():
        TREC_CUTOFF_ALIASES[prefix] = (family.name, param)
    for name, how in family.trec_dotted.items():
        TREC_DOTTED[name] = (family.name, how)
    return family


def declare(
    name: str,
    build: Callable[[Measure, Context], pl.Expr],
    cutoff: CutoffRule = "none",
    *params: Param,
    summary: str,
    **kw: Any,
) -> MeasureFamily:
    """Declare and register a built-in measure family (see :class:`MeasureFamily` for
    the keywords)."""
    return register(MeasureFamily(name, build, cutoff, params=params, summary=summary, **kw))


def in_declared_order() -> None:
    """Put :data:`REGISTRY` in the declared ``order`` of the families (stable: those of
    one order keep the order they were registered in)."""
    ordered = sorted(REGISTRY.items(), key=lambda item: item[1].order)
    REGISTRY.clear()
    REGISTRY.update(ordered)


# ------------------------------------------------------------------ helpers of the declarations


def columns(measure: Measure, ctx: Context) -> dict[str, Any]:
    """The keyword arguments ``rank``, ``relevance`` and ``rel_level`` of a metric."""
    return {"rank": ctx.rank, "relevance": ctx.relevance, "rel_level": measure.rel_level(ctx)}


def with_n_rel(measure: Measure, ctx: Context) -> dict[str, Any]:
    """:func:`columns` and ``n_rel``, for the metrics that need |R|."""
    return {**columns(measure, ctx), "n_rel": ctx.n_rel}


def gain_map(measure: Measure) -> dict[int, float] | None:
    """The measure's ``gains`` parameter as a dict (None: not given)."""
    gains = measure.get("gains")
    return dict(gains) if gains else None


def optional_k(measure: Measure) -> int | None:
    """The cutoff of a measure cut at a rank: an int (as the parser gives it), or None."""
    if measure.cutoff is None or isinstance(measure.cutoff, int):
        return measure.cutoff
    msg = f"The cutoff k of {measure.name} must be an int >= 1. Got {measure.cutoff!r} instead."
    raise ValueError(msg)


def required_k(measure: Measure) -> int:
    """The cutoff of a measure that needs one, cut at a rank."""
    k = optional_k(measure)
    if k is None:
        msg = f"Measure {measure.name} needs a cutoff, e.g. {measure.name}@10."
        raise ValueError(msg)
    return k


JUDGED_ONLY = Param("judged_only", bool, False)
"""``judged_only=True``: the measure over the judged documents only
(:attr:`Measure.judged_only`)."""
INPUT_TIES = Param("ties", str, "ranked", ("ranked", "input"))
"""``ties=input``: the measure reads the run ranked by a stable sort of its rows by score
compared as doubles (equal scores in the run's row order), whatever the conventions'
rule, as cwl_eval ranks; ``ranked``: as the conventions rank them
(:attr:`Measure.tie_order`)."""


def over_lists_only(name: str) -> Callable[[Measure, Context], pl.Expr]:
    """The ``build`` of a measure of each recommendation list (``over_lists``): it has no
    expression over the judged table, and asking for one says where it is scored."""
    return _scored_elsewhere(
        f"{name} is a measure of each recommendation list: it has no expression over the "
        f"judged table; pr.evaluate scores it (with its side inputs)."
    )


def over_catalog_only(name: str) -> Callable[[Measure, Context], pl.Expr]:
    """The ``build`` of a measure of a system's recommendations as a whole
    (``over_catalog``): it has no expression over the judged table."""
    return _scored_elsewhere(
        f"{name} is a measure of a system's recommendations as a whole: "
        f"pr.evaluate_catalog scores it, one value per system and segment."
    )


def _scored_elsewhere(msg: str) -> Callable[[Measure, Context], pl.Expr]:
    def refuse(measure: Measure, ctx: Context) -> pl.Expr:
        raise ValueError(msg)

    return refuse


def reads_relevant(measure: Measure, ctx: Context) -> float:
    """``reads`` of a measure of relevant documents: its relevance level."""
    return measure.rel_level(ctx)


def reads_gained(measure: Measure, ctx: Context) -> float:
    """``reads`` of a gain measure: grade 1 up (negative grades and, unless ``gains``
    gives it one, grade 0 have no gain)."""
    gains = measure.get("gains")
    return 0.0 if gains and dict(gains).get(0, 0.0) != 0.0 else 1.0


def reads_no_rows(measure: Measure, ctx: Context) -> float:
    """``reads`` of a measure of the run alone (NumRet): no judged row."""
    return math.inf


def declare_relevant(
    name: str,
    metric: Callable[..., pl.Expr],
    formula: Callable[[Features, int], pl.Expr],
    *,
    summary: str,
    params: tuple[Param, ...] = (),
    **kw: Any,
) -> MeasureFamily:
    """Declare a measure of relevant documents that takes no cutoff and ``rel`` (and
    ``params`` the engine reads, as ``judged_only``): its expression is
    ``metric(rank=, relevance=, rel_level=, n_rel=)`` and its formula
    ``formula(features, rel_level)`` (Bpref, SetP, ...)."""
    return declare(
        name,
        lambda x, c: metric(**with_n_rel(x, c)),
        "none",
        REL,
        *params,
        summary=summary,
        reads=reads_relevant,
        formula=lambda x, f: formula(f, x.rel_level(f.ctx)),
        **kw,
    )
