"""Measure registry and name parser.

A measure is a declaration (:class:`MeasureFamily`): a canonical name, the
parameters it takes with their types and defaults, whether ``@`` sets a cutoff,
and how to build its expression. :func:`parse` turns a name in any of three
dialects into a :class:`Measure`:

* canonical (ir_measures style): ``AP``, ``AP@10``, ``P(rel=2)@5``, ``nDCG@10``;
* trec_eval: ``map``, ``map_cut_10``, ``P_10``, ``recall_100``, ``recip_rank``,
  ``ndcg_cut_10``, ``success_1``, ``num_ret``, ``iprec_at_recall_0.50``,
  ``Rprec_mult_0.20``, ``set_F``, ``bpref``, ... and the ``-m`` parameter forms
  (``P.5,10``, ``ndcg.1=3,2=9``, ``11pt_avg..25,.5``), which
  :func:`parse_measures` expands into several measures;
* ranx: ``map@100``, ``precision@10``, ``recall@10``, ``ndcg@10``, ``mrr``,
  ``hit_rate@5``, ``f1@10``, ``r-precision``, ``ndcg_burges@10``.

Parameter values are numbers, bare words, grade:gain maps (``gains=1:3;2:9``)
or lists of numbers (``levels=0.25;0.5``); ``;`` separates items because ``,``
separates parameters.

Names are parsed with regular expressions and literal conversion, never
evaluated. ``parse(str(m)) == m`` for every measure, and output columns carry
``str(m)``, the canonical name, whichever dialect was typed.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib import import_module
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Literal, get_args

import polars as pl

from polars_rankeval import metrics as m
from polars_rankeval import trec_names
from polars_rankeval._typing import Aggregate, AggregateMode, APNorm, Norm, Rounding
from polars_rankeval.conventions import Conventions, get_conventions
from polars_rankeval.metrics.compat import COMPAT_P
from polars_rankeval.metrics.trec_rbp import TREC_P
from polars_rankeval.validation import check_choice

family = SimpleNamespace(
    **{
        name: import_module(f"polars_rankeval.metrics.{name}")
        for name in (
            "ap",
            "bpref",
            "compat",
            "cwl",
            "classification",
            "err",
            "gain",
            "iprec",
            "ndcg",
            "precision",
            "random",
            "rr",
            "set",
            "trec_rbp",
            "unjudged",
        )
    }
)
"""The metric modules, by name: their ``*_formula`` functions are the measures over the
engine's features (the package itself re-exports functions under some of these names)."""

if TYPE_CHECKING:
    from polars_rankeval.engine.features import Features

CutoffRule = Literal["none", "optional", "required"]


@dataclass(frozen=True)
class Context:
    """Column names and defaults a measure builds its expression against."""

    rank: str = "rank"
    relevance: str = "relevance"
    rel_level: int = 1
    n_rel: str | None = None
    iprec_rounding: Rounding = "v10"  # conventions' IPrec rounding (issue 13: trec_eval-10 default)


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
    bounds: tuple[float, float] | None = None
    """The range of the per-query values (``(0, 1)`` for proportions), read by the
    statistics (:func:`polars_rankeval.compare.measure_bounds`); None: not known."""
    expression: pl.Expr | Callable[..., pl.Expr] | None = None
    """A declared measure's Polars expression over one ranking of :func:`polars_rankeval.judge`'s
    table, or a function of the measure's cutoff ``k`` and parameters that returns one
    (see :func:`polars_rankeval.define_measure`)."""

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

    def rel_level(self, ctx: Context) -> int:
        """The relevance threshold: the measure's ``rel`` parameter, else the context's."""
        return self.get("rel", ctx.rel_level)

    def lowest_grade(self, ctx: Context) -> float:
        """The lowest grade of the judged rows this measure reads (-inf: all of them)."""
        reads = self.family.reads
        return -math.inf if reads is None else float(reads(self, ctx))

    def formula(self, features: Features) -> pl.Expr:
        """The per-ranking value over the engine's features, aliased to the canonical name."""
        if self.family.formula is None:
            msg = f"Measure {self} has no formula for the engine."
            raise NotImplementedError(msg)
        return self.family.formula(self, features).alias(str(self))

    def expr(self, ctx: Context | None = None) -> pl.Expr:
        """The aggregation expression, aliased to the canonical name."""
        return self.family.build(self, ctx or Context()).alias(str(self))


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


# --------------------------------------------------------------------------- registry

UNIT = (0.0, 1.0)
"""``bounds`` of a proportion: its per-query values lie in [0, 1] by definition."""
MIN_GEO_MEAN = 0.00001
"""trec_eval's floor on per-query values before a geometric mean."""
REL = Param("rel", int)
NORM = Param("norm", str, "R", get_args(Norm))
AP_NORM = Param("norm", str, "R", get_args(APNorm))
GAINS = Param("gains", GainMap)
ROUNDING = Param("rounding", str, None, get_args(Rounding))  # None: the conventions decide
TIES = Param("ties", str, "ordered", ("ordered", "average"))
"""Equal scores: in the ranking's order, or averaged over the tie group (scikit-learn)."""
ELEVEN = Levels(family.iprec.ELEVEN_POINTS)
REGISTRY: dict[str, MeasureFamily] = {}


def register(family: MeasureFamily) -> MeasureFamily:
    """Add a measure family to the registry (by canonical name)."""
    REGISTRY[family.name] = family
    return family


def _cols(measure: Measure, ctx: Context) -> dict[str, Any]:
    return {"rank": ctx.rank, "relevance": ctx.relevance, "rel_level": measure.rel_level(ctx)}


def _with_n_rel(measure: Measure, ctx: Context) -> dict[str, Any]:
    return {**_cols(measure, ctx), "n_rel": ctx.n_rel}


def _dcg_options(measure: Measure) -> dict[str, Any]:
    """The keyword arguments of DCG (metric and formula) from its parameters."""
    gain = measure.get("gain", "linear")
    return {
        "gains": _gains(measure),
        "exponential": gain == "exp",
        "signed": gain == "signed",
        "rel_level": measure.get("rel"),
        "log_base": measure.get("log_base", 2.0),
        "ties": measure.get("ties", "ordered"),
    }


def _gains(measure: Measure) -> dict[int, float] | None:
    gains = measure.get("gains")
    return dict(gains) if gains else None


def _k(measure: Measure) -> int | None:
    """The cutoff of a measure cut at a rank: an int (as the parser gives it), or None."""
    if measure.cutoff is None or isinstance(measure.cutoff, int):
        return measure.cutoff
    msg = f"The cutoff k of {measure.name} must be an int >= 1. Got {measure.cutoff!r} instead."
    raise ValueError(msg)


def _required_k(measure: Measure) -> int:
    """The cutoff of a measure that needs one, cut at a rank."""
    k = _k(measure)
    if k is None:
        msg = f"Measure {measure.name} needs a cutoff, e.g. {measure.name}@10."
        raise ValueError(msg)
    return k


def _level(measure: Measure) -> float:
    """The cutoff of a measure cut at a recall level (IPrec)."""
    if measure.cutoff is None:
        msg = f"Measure {measure.name} needs a recall level, e.g. {measure.name}@0.5."
        raise ValueError(msg)
    return measure.cutoff


def _relevant(measure: Measure, ctx: Context) -> float:
    """``reads`` of a measure of relevant documents: its relevance level."""
    return measure.rel_level(ctx)


def _gained(measure: Measure, ctx: Context) -> float:
    """``reads`` of a gain measure: grade 1 up (negative grades and, unless ``gains``
    gives it one, grade 0 have no gain)."""
    gains = measure.get("gains")
    return 0.0 if gains and dict(gains).get(0, 0.0) != 0.0 else 1.0


def _binary_level(measure: Measure, ctx: Context) -> int | None:
    """The grade from which ``gain=binary`` gives gain 1 (the measure's ``rel``, else the
    relevance level), or None."""
    return measure.get("rel", ctx.rel_level) if measure.get("gain") == "binary" else None


GAIN_REL = Param("rel", int)
"""The relevance level of a gain measure (nDCG, DCG): grades below it have no gain (ranx's
``-lN``). Unlike the other measures' ``rel``, the global ``rel_level`` leaves it unset, as
trec_eval reads raw grades as gains whatever the level."""


def _gained_from_rel(measure: Measure, ctx: Context) -> float:
    """``reads`` of nDCG and DCG: their relevance level when given (grades below it have
    no gain), every grade for signed gains, else as :func:`_gained`."""
    if measure.get("gain") == "signed":
        return -math.inf
    rel = measure.get("rel")
    return _gained(measure, ctx) if rel is None else float(rel)


def _no_rows(measure: Measure, ctx: Context) -> float:
    """``reads`` of a measure of the run alone (NumRet): no judged row."""
    return math.inf


def lowest_grade(measures: Iterable[Measure], ctx: Context) -> float:
    """The lowest grade any of ``measures`` reads: the engine keeps the judged rows of
    that grade and up (-inf: every judged row).

    Examples
    --------
    >>> lowest_grade([parse("AP"), parse("nDCG@10")], Context())
    1.0
    >>> lowest_grade([parse("P(rel=2)@5")], Context(rel_level=3))
    2.0
    >>> lowest_grade([parse("AP"), parse("Bpref")], Context())  # the others counted
    1.0
    >>> lowest_grade([parse("AP"), parse("Judged@10")], Context())
    -inf
    """
    return min((m.lowest_grade(ctx) for m in measures), default=-math.inf)


def _family(
    name: str,
    build: Callable[[Measure, Context], pl.Expr],
    cutoff: CutoffRule = "none",
    *params: Param,
    summary: str,
    **kw: Any,
) -> None:
    register(MeasureFamily(name, build, cutoff, params=params, summary=summary, **kw))


# trec_eval's measures (all_trec), in its order.
_family(
    "NumRet",
    lambda x, c: m.num_ret(rank=c.rank),
    summary="documents retrieved",
    aggregate="sum",
    reads=_no_rows,
    formula=lambda x, f: family.precision.num_ret_formula(f),
)
_family(
    "NumRel",
    lambda x, c: m.num_rel(relevance=c.relevance, rel_level=x.rel_level(c), n_rel=c.n_rel),
    "none",
    REL,
    summary="relevant documents, retrieved or not",
    aggregate="sum",
    reads=_relevant,
    formula=lambda x, f: family.precision.num_rel_formula(f, x.rel_level(f.ctx)),
)
_family(
    "NumRelRet",
    lambda x, c: m.num_rel_ret(**_cols(x, c)),
    "none",
    REL,
    summary="relevant documents retrieved",
    aggregate="sum",
    reads=_relevant,
    formula=lambda x, f: family.precision.num_rel_ret_formula(f, x.rel_level(f.ctx)),
)
_family(
    "AP",
    lambda x, c: m.average_precision(_k(x), norm=x.get("norm", "R"), **_with_n_rel(x, c)),
    "optional",
    REL,
    AP_NORM,
    summary="average precision (at k: |R| stays the denominator unless norm=min|found)",
    reads=_relevant,
    formula=lambda x, f: family.ap.average_precision_formula(
        f, _k(x), x.rel_level(f.ctx), x.get("norm", "R")
    ),
    bounds=UNIT,
)
_family(
    "GMAP",
    lambda x, c: m.average_precision(**_with_n_rel(x, c)),
    "none",
    REL,
    summary="AP per query, geometric mean over queries (floor 1e-5)",
    aggregate="gmean",
    reads=_relevant,
    formula=lambda x, f: family.ap.average_precision_formula(f, None, x.rel_level(f.ctx)),
    bounds=UNIT,
)
_family(
    "Rprec",
    lambda x, c: (
        m.r_precision(**_with_n_rel(x, c))
        if x.get("mult") is None
        else m.rprec_mult(x.get("mult"), **_with_n_rel(x, c))
    ),
    "none",
    REL,
    Param("mult", float),
    summary="R-precision: precision at rank |R| (mult: at rank mult*|R|, Rprec_mult)",
    reads=_relevant,
    formula=lambda x, f: (
        family.precision.r_precision_formula(f, x.rel_level(f.ctx))
        if x.get("mult") is None
        else family.precision.rprec_mult_formula(f, x.get("mult"), x.rel_level(f.ctx))
    ),
    bounds=UNIT,
)
_family(
    "Bpref",
    lambda x, c: m.bpref(**_with_n_rel(x, c)),
    "none",
    REL,
    summary="binary preference",
    reads=_relevant,
    formula=lambda x, f: family.bpref.bpref_formula(f, x.rel_level(f.ctx)),
    bounds=UNIT,
)
_family(
    "GMBpref",
    lambda x, c: m.bpref(**_with_n_rel(x, c)),
    "none",
    REL,
    summary="bpref per query, geometric mean over queries (floor 1e-5)",
    aggregate="gmean",
    reads=_relevant,
    formula=lambda x, f: family.bpref.bpref_formula(f, x.rel_level(f.ctx)),
    bounds=UNIT,
)
_family(
    "RR",
    lambda x, c: m.reciprocal_rank(_k(x), **_cols(x, c)),
    "optional",
    REL,
    summary="reciprocal rank of the first relevant document",
    reads=_relevant,
    formula=lambda x, f: family.rr.reciprocal_rank_formula(f, _k(x), x.rel_level(f.ctx)),
    bounds=UNIT,
)
_family(
    "IPrec",
    lambda x, c: m.iprec_at_recall(
        _level(x), rounding=x.get("rounding", c.iprec_rounding), **_with_n_rel(x, c)
    ),
    "required",
    REL,
    ROUNDING,
    summary="interpolated precision at a recall level (rounding=v9|v10; default: conventions)",
    cutoff_kind=float,
    reads=_relevant,
    formula=lambda x, f: family.iprec.iprec_at_recall_formula(
        f, _level(x), x.rel_level(f.ctx), x.get("rounding", f.ctx.iprec_rounding)
    ),
    bounds=UNIT,
)
_family(
    "IPrecAvg",
    lambda x, c: m.iprec_average(
        x.get("levels", ELEVEN), rounding=x.get("rounding", c.iprec_rounding), **_with_n_rel(x, c)
    ),
    "none",
    REL,
    ROUNDING,
    Param("levels", Levels, ELEVEN),
    summary="interpolated precision averaged over recall levels (11pt_avg)",
    reads=_relevant,
    formula=lambda x, f: family.iprec.iprec_average_formula(
        f, x.get("levels", ELEVEN), x.rel_level(f.ctx), x.get("rounding", f.ctx.iprec_rounding)
    ),
    bounds=UNIT,
)


def _precision_variant(x: Measure) -> bool:
    """Whether P@k is adaptive (torchmetrics); refuse it together with judged_only."""
    adaptive = bool(x.get("adaptive_k"))
    if adaptive and x.get("judged_only"):
        msg = f"{x}: judged_only and adaptive_k cannot be combined."
        raise ValueError(msg)
    return adaptive


def _precision_build(x: Measure, c: Context) -> pl.Expr:
    """P@k, over the judged documents only (``judged_only``) or adaptive (``adaptive_k``)."""
    adaptive = _precision_variant(x)
    if x.get("judged_only"):
        return m.precision_judged_only(_required_k(x), **_cols(x, c))
    return m.precision(_required_k(x), adaptive_k=adaptive, **_cols(x, c))


def _precision_formula(x: Measure, f: Features) -> pl.Expr:
    """The engine formula of :func:`_precision_build`."""
    adaptive = _precision_variant(x)
    if x.get("judged_only"):
        return family.precision.precision_judged_only_formula(f, _required_k(x), x.rel_level(f.ctx))
    return family.precision.precision_formula(
        f, _required_k(x), x.rel_level(f.ctx), adaptive_k=adaptive
    )


_family(
    "P",
    _precision_build,
    "required",
    REL,
    Param("judged_only", bool, False),
    Param("adaptive_k", bool, False),
    summary=(
        "precision at k (judged_only=True: over the judged documents only, trec_eval -J; "
        "adaptive_k=True: divided by min(k, retrieved), torchmetrics)"
    ),
    reads=lambda x, c: min(0, x.rel_level(c)) if x.get("judged_only") else x.rel_level(c),
    formula=lambda x, f: _precision_formula(x, f),
    bounds=UNIT,
)
_family(
    "R",
    lambda x, c: m.recall(_k(x), norm=x.get("norm", "R"), **_with_n_rel(x, c)),
    "optional",
    REL,
    NORM,
    summary="recall at k (norm=min: divided by min(k, |R|))",
    reads=_relevant,
    formula=lambda x, f: family.precision.recall_formula(
        f, _k(x), x.rel_level(f.ctx), x.get("norm", "R")
    ),
    bounds=UNIT,
)
_family(
    "infAP",
    lambda x, c: m.inferred_ap(**_with_n_rel(x, c)),
    "none",
    REL,
    summary="inferred AP for sampled judgments",
    reads=_relevant,
    formula=lambda x, f: family.bpref.inferred_ap_formula(f, x.rel_level(f.ctx)),
)
_family(
    "Utility",
    lambda x, c: m.utility(
        x.get("a", 1.0),
        x.get("b", -1.0),
        x.get("c", 0.0),
        x.get("d", 0.0),
        n_docs=x.get("n_docs", 0),
        **_with_n_rel(x, c),
    ),
    "none",
    REL,
    Param("a", float, 1.0),
    Param("b", float, -1.0),
    Param("c", float, 0.0),
    Param("d", float, 0.0),
    Param("n_docs", int, 0),
    summary="set utility a*rel_ret + b*nonrel_ret + c*rel_missed + d*nonrel_missed",
    reads=_relevant,
    formula=lambda x, f: family.set.utility_formula(
        f,
        x.get("a", 1.0),
        x.get("b", -1.0),
        x.get("c", 0.0),
        x.get("d", 0.0),
        x.get("n_docs", 0),
        x.rel_level(f.ctx),
    ),
)
_family(
    "binG",
    lambda x, c: m.bin_g(**_with_n_rel(x, c)),
    "none",
    REL,
    summary="binary G (trec_eval experimental)",
    reads=_relevant,
    formula=lambda x, f: family.gain.bin_g_formula(f, x.rel_level(f.ctx)),
)
_family(
    "G",
    lambda x, c: m.g_measure(rank=c.rank, relevance=c.relevance, gains=_gains(x)),
    "none",
    GAINS,
    summary="normalised gain G (trec_eval experimental)",
    reads=_gained,
    formula=lambda x, f: family.gain.g_measure_formula(f, _gains(x)),
)
_family(
    "nDCG",
    lambda x, c: m.ndcg(
        _k(x),
        rank=c.rank,
        relevance=c.relevance,
        gains=_gains(x),
        exponential=x.get("gain") == "exp",
        ties=x.get("ties", "ordered"),
        binary_level=_binary_level(x, c),
        rel_level=x.get("rel"),
    ),
    "optional",
    GAINS,
    Param("gain", str, "linear", ("linear", "exp", "binary")),
    GAIN_REL,
    TIES,
    summary="normalised DCG: linear gain and trec_eval ideal; gains=g:v;..., gain=exp|binary",
    reads=lambda x, c: (
        float(_binary_level(x, c) or 0) if x.get("gain") == "binary" else _gained_from_rel(x, c)
    ),
    formula=lambda x, f: family.ndcg.ndcg_formula(
        f,
        _k(x),
        _gains(x),
        exponential=x.get("gain") == "exp",
        ties=x.get("ties", "ordered"),
        binary_level=_binary_level(x, f.ctx),
        rel_level=x.get("rel"),
    ),
    bounds=UNIT,
)
_family(
    "nDCGRel",
    lambda x, c: m.ndcg_rel(rank=c.rank, relevance=c.relevance, gains=_gains(x)),
    "none",
    GAINS,
    summary="nDCG averaged over the relevant documents (trec_eval ndcg_rel)",
    reads=_gained,
    formula=lambda x, f: family.gain.ndcg_rel_formula(f, _gains(x)),
    bounds=UNIT,
)
_family(
    "Rndcg",
    lambda x, c: m.rndcg(gains=_gains(x), **_with_n_rel(x, c)),
    "none",
    REL,
    GAINS,
    summary="nDCG averaged at the R levels of the grades (trec_eval Rndcg)",
    reads=_gained,
    formula=lambda x, f: family.gain.rndcg_formula(f, x.rel_level(f.ctx), _gains(x)),
    bounds=UNIT,
)
_family(
    "RelP",
    lambda x, c: m.relative_precision(_required_k(x), **_with_n_rel(x, c)),
    "required",
    REL,
    summary="precision at k relative to min(k, |R|)",
    reads=_relevant,
    formula=lambda x, f: family.precision.relative_precision_formula(
        f, _required_k(x), x.rel_level(f.ctx)
    ),
    bounds=UNIT,
)
_family(
    "Success",
    lambda x, c: m.success(_k(x), **_cols(x, c)),
    "optional",
    REL,
    summary="1 if a relevant document is in the top k",
    reads=_relevant,
    formula=lambda x, f: family.precision.success_formula(f, _k(x), x.rel_level(f.ctx)),
    bounds=UNIT,
)
_family(
    "SetP",
    lambda x, c: m.set_precision(**_with_n_rel(x, c)),
    "none",
    REL,
    summary="set precision",
    reads=_relevant,
    formula=lambda x, f: family.set.set_precision_formula(f, x.rel_level(f.ctx)),
    bounds=UNIT,
)
_family(
    "SetRelP",
    lambda x, c: m.set_relative_precision(**_with_n_rel(x, c)),
    "none",
    REL,
    summary="set precision relative to min(|ret|, |R|)",
    reads=_relevant,
    formula=lambda x, f: family.set.set_relative_precision_formula(f, x.rel_level(f.ctx)),
    bounds=UNIT,
)
_family(
    "SetR",
    lambda x, c: m.set_recall(**_with_n_rel(x, c)),
    "none",
    REL,
    summary="set recall",
    reads=_relevant,
    formula=lambda x, f: family.set.set_recall_formula(f, x.rel_level(f.ctx)),
    bounds=UNIT,
)
_family(
    "SetAP",
    lambda x, c: m.set_ap(**_with_n_rel(x, c)),
    "none",
    REL,
    summary="set precision times set recall (set_map)",
    reads=_relevant,
    formula=lambda x, f: family.set.set_ap_formula(f, x.rel_level(f.ctx)),
    bounds=UNIT,
)
_family(
    "SetF",
    lambda x, c: m.set_f(x.get("beta", 1.0), **_with_n_rel(x, c)),
    "none",
    REL,
    Param("beta", float, 1.0),
    summary="weighted harmonic mean of set precision and recall",
    reads=_relevant,
    formula=lambda x, f: family.set.set_f_formula(f, x.get("beta", 1.0), x.rel_level(f.ctx)),
    bounds=UNIT,
)
_family(
    "NumNonRelJudgedRet",
    lambda x, c: m.num_nonrel_judged_ret(**_cols(x, c)),
    "none",
    REL,
    summary="judged non-relevant documents retrieved",
    aggregate="sum",
    reads=_relevant,
    formula=lambda x, f: family.bpref.num_nonrel_judged_ret_formula(f, x.rel_level(f.ctx)),
)
# Beyond trec_eval.
_family(
    "F1",
    lambda x, c: m.f1(_k(x), **_with_n_rel(x, c)),
    "optional",
    REL,
    summary="harmonic mean of P@k and R@k",
    reads=_relevant,
    formula=lambda x, f: family.precision.f1_formula(f, _k(x), x.rel_level(f.ctx)),
    bounds=UNIT,
)
_family(
    "ERR",
    lambda x, c: m.err(_k(x), rank=c.rank, relevance=c.relevance, max_grade=x.get("max_grade")),
    "optional",
    Param("max_grade", int),
    summary="expected reciprocal rank (Chapelle et al. 2009)",
    reads=_gained,
    formula=lambda x, f: family.err.err_formula(f, _k(x), x.get("max_grade")),
    bounds=UNIT,
)
_family(
    "RBP",
    lambda x, c: m.rbp(x.get("p", 0.8), graded=x.get("gain") == "linear", **_cols(x, c)),
    "none",
    REL,
    Param("p", float, 0.8),
    Param("gain", str, "binary", ("binary", "linear")),
    summary="rank-biased precision (Moffat and Zobel 2008); gain=linear: graded (ranx rbp.p)",
    reads=_relevant,
    formula=lambda x, f: family.err.rbp_formula(
        f, x.get("p", 0.8), x.rel_level(f.ctx), graded=x.get("gain") == "linear"
    ),
    bounds=UNIT,
)
_family(
    "RBPResid",
    lambda x, c: m.rbp_residual(x.get("p", 0.8), rank=c.rank, relevance=c.relevance),
    "none",
    Param("p", float, 0.8),
    summary="the residual of RBP: weight of unjudged and unretrieved ranks",
    formula=lambda x, f: family.err.rbp_residual_formula(f, x.get("p", 0.8)),
    bounds=UNIT,
)
_family(
    "Judged",
    lambda x, c: m.judged_at(_k(x), rank=c.rank, relevance=c.relevance),
    "optional",
    summary="fraction of the top k that is judged",
    formula=lambda x, f: family.unjudged.judged_at_formula(f, _k(x)),
    bounds=UNIT,
)
_family(
    "ExpectedP",
    lambda x, c: m.expected_precision(_required_k(x), **_cols(x, c)),
    "required",
    REL,
    summary="expected P@k under a random order of the retrieved documents",
    reads=_relevant,
    formula=lambda x, f: family.random.expected_precision_formula(
        f, _required_k(x), x.rel_level(f.ctx)
    ),
    bounds=UNIT,
)
_family(
    "ExpectedAP",
    lambda x, c: m.expected_ap(**_with_n_rel(x, c)),
    "none",
    REL,
    summary="expected AP under a random order of the retrieved documents",
    reads=_relevant,
    formula=lambda x, f: family.random.expected_ap_formula(f, x.rel_level(f.ctx)),
    bounds=UNIT,
)


# --------------------------------------------------------------------------- aliases

# Plain names from trec_eval, ranx and ir_measures -> a canonical measure text
# (lower-cased keys; a value may preset parameters).
ALIASES: dict[str, str] = {
    "map": "AP",
    "ap": "AP",
    "gm_map": "GMAP",
    "gmap": "GMAP",
    "recip_rank": "RR",
    "mrr": "RR",
    "rr": "RR",
    "ndcg": "nDCG",
    "ndcg_burges": "nDCG(gain=exp)",
    "rprec": "Rprec",
    "r-precision": "Rprec",
    "r_precision": "Rprec",
    "precision": "P",
    "p": "P",
    "recall": "R",
    "r": "R",
    "hit_rate": "Success",
    "success": "Success",
    "num_ret": "NumRet",
    "num_rel": "NumRel",
    "num_rel_ret": "NumRelRet",
    "num_nonrel_judged_ret": "NumNonRelJudgedRet",
    "bpref": "Bpref",
    "gm_bpref": "GMBpref",
    "infap": "infAP",
    "11pt_avg": "IPrecAvg",
    "iprec": "IPrec",
    "utility": "Utility",
    "g": "G",
    "bing": "binG",
    "rndcg": "Rndcg",
    "ndcg_rel": "nDCGRel",
    "ndcgrel": "nDCGRel",
    "relative_p": "RelP",
    "relp": "RelP",
    "set_p": "SetP",
    "setp": "SetP",
    "set_recall": "SetR",
    "setr": "SetR",
    "set_f": "SetF",
    "setf": "SetF",
    "set_map": "SetAP",
    "setap": "SetAP",
    "set_relative_p": "SetRelP",
    "setrelp": "SetRelP",
    "f1": "F1",
    "err": "ERR",
    "rbp": "RBP",
    "judged": "Judged",
}

# trec_eval names that carry a value after an underscore: map_cut_10, P_10,
# iprec_at_recall_0.50, Rprec_mult_0.20 -> (family, parameter set by the value;
# None: the cutoff).
TREC_CUTOFF_ALIASES: dict[str, tuple[str, str | None]] = {
    "P": ("P", None),
    "recall": ("R", None),
    "map_cut": ("AP", None),
    "ndcg_cut": ("nDCG", None),
    "success": ("Success", None),
    "relative_P": ("RelP", None),
    "iprec_at_recall": ("IPrec", None),
    "Rprec_mult": ("Rprec", "mult"),
}
# trec_eval -m forms with parameters after a dot: how each expands.
#   "cutoffs": one measure per value; "param:<name>": one measure per value of
#   that parameter; "levels", "gains", "utility", "beta": one measure.
TREC_DOTTED: dict[str, tuple[str, str]] = {
    "P": ("P", "cutoffs"),
    "recall": ("R", "cutoffs"),
    "map_cut": ("AP", "cutoffs"),
    "ndcg_cut": ("nDCG", "cutoffs"),
    "success": ("Success", "cutoffs"),
    "relative_P": ("RelP", "cutoffs"),
    "iprec_at_recall": ("IPrec", "cutoffs"),
    "Rprec_mult": ("Rprec", "param:mult"),
    "11pt_avg": ("IPrecAvg", "levels"),
    "set_F": ("SetF", "param:beta"),
    "utility": ("Utility", "utility"),
    "ndcg": ("nDCG", "gains"),
    "G": ("G", "gains"),
    "Rndcg": ("Rndcg", "gains"),
    "ndcg_rel": ("nDCGRel", "gains"),
}
# --------------------------------------------------------------------------- trec_eval 10.0
# Measures new in trec_eval 10.0 (issue 13), declared next to their code in
# polars_rankeval/metrics/trec_rbp.py and metrics/unjudged.py. The trec_eval
# names rbp and rbp_resid mean these; the binary RBP(p=0.8) keeps its name.
_family(
    "TrecRBP",
    lambda x, c: m.trec_rbp(x.get("p", TREC_P), rank=c.rank, relevance=c.relevance),
    "none",
    Param("p", float, TREC_P),
    summary="rank-biased precision as trec_eval 10 (rbp): graded gains / max grade, p=0.9",
    reads=_gained,
    formula=lambda x, f: family.trec_rbp.trec_rbp_formula(f, x.get("p", TREC_P)),
)
_family(
    "TrecRBPResid",
    lambda x, c: m.trec_rbp_residual(x.get("p", TREC_P), rank=c.rank, relevance=c.relevance),
    "none",
    Param("p", float, TREC_P),
    summary="residual of TrecRBP as trec_eval 10 (rbp_resid): 0 when all retrieved are judged",
    formula=lambda x, f: family.trec_rbp.trec_rbp_residual_formula(f, x.get("p", TREC_P)),
)
_family(
    "Unjudged",
    lambda x, c: m.unjudged_at(_required_k(x), rank=c.rank, relevance=c.relevance),
    "required",
    summary="fraction of the top k that is unjudged (trec_eval 10 unj_k)",
    formula=lambda x, f: family.unjudged.unjudged_formula(f, _required_k(x)),
)
ALIASES |= {"rbp": "TrecRBP", "rbp_resid": "TrecRBPResid", "unjudged": "Unjudged"}
TREC_CUTOFF_ALIASES["unj"] = ("Unjudged", None)
# --------------------------------------------------------------------------- end trec_eval 10.0
# --------------------------------------------------------------------------- ir_measures
# Measures ir_measures has that trec_eval's all_trec lacks (issue 18), under
# ir_measures' names. P(judged_only=True)@k is a parameter of P, above.
_family(
    "NumQ",
    lambda x, c: m.num_q(),
    summary="one per query: summed, the number of queries scored (ir_measures NumQ)",
    aggregate="sum",
    reads=_no_rows,
    formula=lambda x, f: family.precision.num_q_formula(f),
)
_family(
    "Compat",
    lambda x, c: m.compat(
        x.get("p", COMPAT_P), normalize=x.get("normalize", True), rank=c.rank, relevance=c.relevance
    ),
    "none",
    Param("p", float, COMPAT_P),
    Param("normalize", bool, True),
    summary="compatibility: rank-biased overlap with the ideal ranking (Clarke et al. 2021)",
    reads=lambda x, c: 1.0,
    formula=lambda x, f: family.compat.compat_formula(
        f, x.get("p", COMPAT_P), x.get("normalize", True)
    ),
)
# The C/W/L measures ir_measures gets from cwl_eval (metrics/cwl.py): gains are the
# grades scaled from [min_rel, max_rel] to [0, 1]; max_rel has no default, as there.
CWL_RANGE = (Param("min_rel", int, 0), Param("max_rel", int))
CWL_T = Param("T", float, 1.0)


def _cwl(x: Measure) -> dict[str, Any]:
    """min_rel and max_rel of a C/W/L measure."""
    return {"min_rel": x.get("min_rel", 0), "max_rel": x.get("max_rel")}


def _cwl_reads(x: Measure, c: Context) -> float:
    """``reads`` of a C/W/L measure: the grades with a positive gain."""
    return family.cwl.lowest_gained_grade(x.get("min_rel", 0))


_family(
    "SDCG",
    lambda x, c: m.sdcg(_required_k(x), **_cwl(x), rank=c.rank, relevance=c.relevance),
    "required",
    *CWL_RANGE,
    summary="scaled DCG: DCG over that of k documents of full gain (cwl_eval, C/W/L)",
    reads=_cwl_reads,
    formula=lambda x, f: family.cwl.sdcg_formula(f, _required_k(x), **_cwl(x)),
)
_family(
    "INSQ",
    lambda x, c: m.insq(x.get("T", 1.0), **_cwl(x), rank=c.rank, relevance=c.relevance),
    "none",
    CWL_T,
    *CWL_RANGE,
    summary="INSQ: C/W/L measure of a user who wants gain T (Moffat et al. 2012; cwl_eval)",
    reads=_cwl_reads,
    formula=lambda x, f: family.cwl.insq_formula(f, x.get("T", 1.0), **_cwl(x)),
)
_family(
    "INST",
    lambda x, c: m.inst(x.get("T", 1.0), **_cwl(x), rank=c.rank, relevance=c.relevance),
    "none",
    CWL_T,
    *CWL_RANGE,
    summary="INST: INSQ adapting to the gain found so far (Moffat et al. 2015; cwl_eval)",
    reads=_cwl_reads,
    formula=lambda x, f: family.cwl.inst_formula(f, x.get("T", 1.0), **_cwl(x)),
)
_family(
    "BPM",
    lambda x, c: m.bpm(
        _required_k(x), x.get("T", 1.0), **_cwl(x), rank=c.rank, relevance=c.relevance
    ),
    "required",
    CWL_T,
    *CWL_RANGE,
    summary="static Bejeweled Player Model: read until k documents or gain T (cwl_eval)",
    reads=_cwl_reads,
    formula=lambda x, f: family.cwl.bpm_formula(f, _required_k(x), x.get("T", 1.0), **_cwl(x)),
)


def _nerr_family(equation: int, cutoff: CutoffRule, extra: tuple[Param, ...], what: str) -> None:
    """Register NERR8 .. NERR11 (one C vector each, metrics/cwl.py ``nerr``)."""

    def build(x: Measure, c: Context) -> pl.Expr:
        p, t = x.get("p", 0.9), x.get("T", 1.0)
        return m.nerr(equation, _k(x), p=p, T=t, **_cwl(x), rank=c.rank, relevance=c.relevance)

    def formula(x: Measure, f: Features) -> pl.Expr:
        p, t = x.get("p", 0.9), x.get("T", 1.0)
        return family.cwl.nerr_formula(f, equation, _k(x), p, t, **_cwl(x))

    summary = f"not (but nearly) ERR, equation {equation}: {what} (cwl_eval)"
    _family(f"NERR{equation}", build, cutoff, *extra, *CWL_RANGE, summary=summary,
            reads=_cwl_reads, formula=formula)  # fmt: skip


_nerr_family(8, "required", (), "truncated at k")
_nerr_family(9, "required", (), "truncated at k, discounted")
_nerr_family(10, "none", (Param("p", float, 0.9),), "with persistence p")
_nerr_family(11, "none", (CWL_T,), "with INST's goal T")
ALIASES |= {"numq": "NumQ", "compat": "Compat"}
# --------------------------------------------------------------------------- end ir_measures
# --------------------------------------------------------------------------- peers (issue 18)
# Formula variants of ranx, scikit-learn and torchmetrics, each cited in its docstring.
_family(
    "Hits",
    lambda x, c: m.hits(_k(x), **_cols(x, c)),
    "optional",
    REL,
    summary="relevant documents in the top k, a count per query (ranx hits@k)",
    reads=_relevant,
    formula=lambda x, f: family.precision.hits_formula(f, _k(x), x.rel_level(f.ctx)),
)
_family(
    "DCG",
    lambda x, c: m.discounted_cumulative_gain(
        _k(x), rank=c.rank, relevance=c.relevance, **_dcg_options(x)
    ),
    "optional",
    GAINS,
    Param("gain", str, "linear", ("linear", "exp", "signed")),
    GAIN_REL,
    Param("log_base", float, 2.0),
    TIES,
    summary="unnormalised DCG (ranx dcg@k, dcg_burges@k; scikit-learn dcg_score, log_base)",
    reads=_gained_from_rel,
    formula=lambda x, f: family.ndcg.dcg_formula(f, _k(x), **_dcg_options(x)),
)
_family(
    "FallOut",
    lambda x, c: m.fall_out(_k(x), **_cols(x, c)),
    "optional",
    REL,
    summary="share of the retrieved non-relevant documents in the top k (torchmetrics)",
    reads=_relevant,
    formula=lambda x, f: family.classification.fall_out_formula(f, _k(x), x.rel_level(f.ctx)),
)
_family(
    "AUROC",
    lambda x, c: m.auroc(_k(x), **_cols(x, c)),
    "optional",
    REL,
    summary="area under the ROC curve of the top k (torchmetrics RetrievalAUROC)",
    reads=_relevant,
    formula=lambda x, f: family.classification.auroc_formula(f, _k(x), x.rel_level(f.ctx)),
)
ALIASES |= {
    "retrievalmap": "AP(norm=found)",
    "retrieval_map": "AP(norm=found)",
    "retrieval_average_precision": "AP(norm=found)",
    "fallout": "FallOut",
    "fall_out": "FallOut",
    "retrievalfallout": "FallOut",
    "retrieval_fall_out": "FallOut",
    "auroc": "AUROC",
    "retrievalauroc": "AUROC",
    "retrieval_auroc": "AUROC",
    "hits": "Hits",
    "dcg": "DCG",
    "dcg_burges": "DCG(gain=exp)",
    "dcg_score": "DCG",
    "ndcg_score": "nDCG",
}
_RANX_LEVEL = re.compile(r"^(?P<body>.+)-l(?P<level>\d+)$")
"""ranx's relevance-level suffix on any of its names: ``map@10-l2`` is ``AP(rel=2)@10``."""
_RANX_RBP = re.compile(r"^rbp[.@](?P<digits>\d+)$")
"""ranx's rbp with its persistence after a dot: ``rbp.95`` is ``RBP(gain=linear,p=0.95)``."""


def takes_fractional_grades(measure: Measure) -> bool:
    """Whether a measure reads grades with a fraction (0.5, 2.7): the ones that read grades
    as gains, as scikit-learn's ``dcg_score`` and ``ndcg_score`` read real-valued
    ``y_true``: DCG, nDCG and the graded ``RBP(gain=linear)``. trec_eval reads grades as
    integers, so its other measures take none."""
    name = measure.family.name
    return name in ("DCG", "nDCG") or (name == "RBP" and measure.get("gain") == "linear")


def check_fractional_grades(
    qrels: pl.DataFrame, relevance: str, ids: Iterable[str], measures: Iterable[Measure]
) -> bool:
    """Whether the ``relevance`` column of ``qrels`` holds a grade with a fraction; an
    error naming the column and the first such row (by its ``ids``) when one of
    ``measures`` cannot read such grades.

    Examples
    --------
    >>> qrels = pl.DataFrame({"query": ["q", "q"], "doc": ["a", "b"], "relevance": [2.0, 0.5]})
    >>> check_fractional_grades(qrels, "relevance", ["query", "doc"], [parse("DCG")])
    True
    >>> check_fractional_grades(qrels, "relevance", ["query", "doc"], [parse("AP")])
    Traceback (most recent call last):
    ...
    ValueError: qrels has a grade 'relevance' that is not an integer (0.5, query='q', doc='b'): ...
    """
    grades = qrels[relevance]
    if not grades.dtype.is_float():
        return False
    fractional = (grades != grades.round(0)).fill_null(False)
    if not fractional.any():
        return False
    refused = [str(m) for m in measures if not takes_fractional_grades(m)]
    if refused:
        row = int(fractional.arg_true()[0])
        where = ", ".join(f"{k}={qrels[k][row]!r}" for k in ids)
        verb = "reads" if len(refused) == 1 else "read"
        msg = (
            f"qrels has a grade {relevance!r} that is not an integer ({grades[row]!r}, "
            f"{where}): only DCG, nDCG and RBP(gain=linear) read such grades (as gains); "
            f"{', '.join(refused)} {verb} integer grades, as trec_eval does. Round or "
            f"threshold the grades for them."
        )
        raise ValueError(msg)
    return True


# --------------------------------------------------------------------------- end peers

_TREC_CUTOFF = re.compile(r"^(?P<name>[A-Za-z_]+?)_(?P<cutoff>\d+(?:\.\d*)?)$")
_TREC_DOTTED = re.compile(r"^(?P<name>[A-Za-z0-9_]+?)\.(?P<params>.*)$")
_CANONICAL = re.compile(
    r"^(?P<name>[A-Za-z0-9][A-Za-z0-9_\-]*)(?:\((?P<params>[^()]*)\))?(?:@(?P<cutoff>[^@]+))?$"
)
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_STRUCTURED = re.compile(r"^[0-9eE.+\-:;= ]*[:;][0-9eE.+\-:;= ]*$")


def _literal(text: str) -> Any:
    """Parse a parameter value: int, float, bare word, or map / list text (never evaluated)."""
    text = text.strip()
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    if _NUMBER.fullmatch(text):
        return float(text)
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text):
        return text
    if _STRUCTURED.fullmatch(text):
        return text  # a grade:gain map or a ;-list, read by the parameter's type
    msg = (
        f"Cannot read parameter value {text!r}: expected a number, a bare word, "
        f"a grade:gain map (1:3;2:9) or a ;-separated list (0.25;0.5)."
    )
    raise ValueError(msg)


def _coerce(value: Any, kind: type, what: str) -> Any:
    if kind in (GainMap, Levels):
        try:
            return kind.of(value)
        except ValueError as err:
            msg = f"{what}: {err}"
            raise ValueError(msg) from None
    if kind is bool:
        return _boolean(value, what)
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind is int and isinstance(value, float) and value.is_integer():
        return int(value)
    if not isinstance(value, kind) or isinstance(value, bool):
        msg = f"{what} must be {kind.__name__}. Got {value!r} instead."
        raise ValueError(msg)
    return value


def _boolean(value: Any, what: str) -> bool:
    """True / False, or the words True / False in any case (as ir_measures writes them)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    msg = f"{what} must be True or False. Got {value!r} instead."
    raise ValueError(msg)


def known_names() -> list[str]:
    """Every name the parser knows: canonical families, aliases, trec_eval prefixes."""
    trec = {f"{k}_10" for k in TREC_CUTOFF_ALIASES} | {f"{k}.10" for k in TREC_DOTTED}
    return sorted(set(REGISTRY) | set(ALIASES) | trec)


def _unknown(name: str) -> ValueError:
    base = re.split(r"[@(]", name)[0]
    from polars_rankeval.diversity import ALIASES as DIVERSITY_ALIASES
    from polars_rankeval.diversity import PARAMS as DIVERSITY

    if base in DIVERSITY or base.lower() in DIVERSITY_ALIASES:
        msg = (
            f"{name!r} is a diversity measure: it reads subtopic qrels, so "
            "pr.evaluate_diversity(run, qrels, measures) computes it."
        )
        return ValueError(msg)
    close = difflib.get_close_matches(base, known_names(), n=5, cutoff=0.5)
    close += [x for x in difflib.get_close_matches(name, known_names(), n=5, cutoff=0.5)]
    close = list(dict.fromkeys(close))
    lowered = difflib.get_close_matches(
        name.lower(), [n.lower() for n in known_names()], n=5, cutoff=0.6
    )
    close += [n for n in known_names() if n.lower() in lowered and n not in close]
    hint = f" Did you mean: {', '.join(close[:8])}?" if close else ""
    return ValueError(f"Unknown measure {name!r}.{hint} Known measures: {', '.join(REGISTRY)}.")


def _resolve_family(name: str) -> tuple[MeasureFamily, dict[str, Any]] | None:
    """Canonical name or alias -> (family, preset parameters)."""
    if name in REGISTRY:
        return REGISTRY[name], {}
    alias = ALIASES.get(name.lower())
    if alias is None:
        return None
    match = _CANONICAL.match(alias)
    if match is None:  # the table above is written in canonical form
        raise _unknown(alias)
    return REGISTRY[match["name"]], _read_params(match["params"], alias)


def _read_params(text: str | None, whole: str) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            msg = f"Cannot read parameter {item!r} of {whole!r}: expected key=value."
            raise ValueError(msg)
        if key.strip() in params:
            msg = f"Parameter {key.strip()!r} is given twice in {whole!r}."
            raise ValueError(msg)
        params[key.strip()] = _literal(value)
    return params


def convention_params(
    family: MeasureFamily, conventions: Conventions, given: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The parameters ``conventions`` give a measure of ``family`` that does not set them
    (``given``): its :attr:`~polars_rankeval.conventions.Conventions.measure_params`, and
    ``ties=average`` where the conventions average ties and the family can. A measure
    that gives its own ``gains`` map keeps it (a tool's ``gain`` does not apply).

    Examples
    --------
    >>> from polars_rankeval.conventions import get_conventions
    >>> convention_params(REGISTRY["nDCG"], get_conventions("sklearn"))
    {'ties': 'average'}
    >>> convention_params(REGISTRY["AP"], get_conventions())
    {}
    """
    params = dict(conventions.measure_params.get(family.name, {}))
    if conventions.ties == "average" and any(p.name == "ties" for p in family.params):
        params.setdefault("ties", "average")
    given = given or {}
    if "gains" in given:
        params.pop("gain", None)
    return params | dict(given)


def _build(
    family: MeasureFamily,
    cutoff: Any,
    params: Mapping[str, Any],
    text: str,
    conventions: Conventions | None = None,
) -> Measure:
    if conventions is not None:
        params = convention_params(family, conventions, params)
    if cutoff is not None:
        if family.cutoff == "none":
            msg = f"Measure {family.name} takes no cutoff; got {text!r}."
            raise ValueError(msg)
        cutoff = _coerce(cutoff, family.cutoff_kind, f"The cutoff of {family.name}")
        if family.cutoff_kind is float and not 0.0 <= cutoff <= 1.0:
            msg = f"The level of {family.name} must be in [0, 1]. Got {cutoff!r} in {text!r}."
            raise ValueError(msg)
        if family.cutoff_kind is int and cutoff < 1:
            msg = f"The cutoff of {family.name} must be >= 1. Got {cutoff!r} in {text!r}."
            raise ValueError(msg)
    elif family.cutoff == "required":
        msg = f"Measure {family.name} needs a cutoff, e.g. {family.name}@10; got {text!r}."
        raise ValueError(msg)
    clean = []
    for key, value in sorted(params.items()):
        p = family.param(key)
        value = _coerce(value, p.kind, f"Parameter {key} of {family.name}")
        if p.choices:
            check_choice(f"Parameter {key} of {family.name}", value, p.choices)
        if key == "rel" and value < 1:
            msg = f"The relevance threshold rel must be >= 1. Got {value!r} in {text!r}."
            raise ValueError(msg)
        if value != p.default:
            clean.append((key, value))
    return Measure(family, family.name, cutoff, tuple(clean))


def _trec_values(text: str) -> list[str]:
    values = [v.strip() for v in text.split(",") if v.strip()]
    if not values:
        msg = f"No parameter values after the dot in {text!r}."
        raise ValueError(msg)
    return values


def _expand_trec(
    name: str, params: str, text: str, conventions: Conventions | None = None
) -> list[Measure]:
    """A trec_eval ``-m name.params`` form -> the measures it stands for."""
    family_name, how = TREC_DOTTED[name]
    family = REGISTRY[family_name]
    if not params.strip():
        return [_build(family, None, {}, text, conventions)] if family.cutoff != "required" else []
    if how == "cutoffs":
        kind = family.cutoff_kind
        # trec_eval reads integer cutoffs with atol: 23.4 -> 23
        values = [kind(float(v)) if kind is float else int(float(v)) for v in _trec_values(params)]
        return [_build(family, v, {}, text, conventions) for v in values]
    if how.startswith("param:"):
        key = how.partition(":")[2]
        return [
            _build(family, None, {key: float(v)}, text, conventions) for v in _trec_values(params)
        ]
    if how == "levels":
        return [_build(family, None, {"levels": Levels.of(params)}, text, conventions)]
    if how == "gains":
        return [_build(family, None, {"gains": GainMap.of(params)}, text, conventions)]
    coefficients = [float(v) for v in _trec_values(params)]
    if len(coefficients) != 4:
        msg = f"utility takes 4 coefficients (a,b,c,d). Got {params!r} in {text!r}."
        raise ValueError(msg)
    return [_build(family, None, dict(zip("abcd", coefficients, strict=True)), text, conventions)]


def _ranx_forms(text: str, conventions: Conventions | None = None) -> list[Measure] | None:
    """ranx's ``name-lN`` (relevance level N) and ``rbp.NN`` forms, or None."""
    level = _RANX_LEVEL.match(text)
    if level:
        return [
            _with_rel(x, int(level["level"]), text) for x in _parse_all(level["body"], conventions)
        ]
    rbp = _RANX_RBP.match(text)
    if rbp:
        p = float(f"0.{rbp['digits']}")
        return [_build(REGISTRY["RBP"], None, {"gain": "linear", "p": p}, text, conventions)]
    return None


def _with_rel(measure: Measure, level: int, text: str) -> Measure:
    """``measure`` at relevance level ``level`` (ranx's ``-lN`` suffix)."""
    params = dict(measure.params)
    if "rel" not in {p.name for p in measure.family.params}:
        msg = f"{text!r}: {measure.name} has no relevance level for the -l{level} suffix to set."
        raise ValueError(msg)
    if "rel" in params:
        msg = f"{text!r} gives the relevance level twice (rel= and -l{level})."
        raise ValueError(msg)
    return _build(measure.family, measure.cutoff, {**params, "rel": level}, text)


def _parse_all(text: str, conventions: Conventions | None = None) -> list[Measure]:
    """The measures a name stands for; ``conventions`` give the parameters a measure
    does not set (see :func:`convention_params`)."""
    ranx = _ranx_forms(text, conventions)
    if ranx is not None:
        return ranx
    match = _CANONICAL.match(text)
    if match:
        resolved = _resolve_family(match["name"])
        if resolved is not None:
            family, params = resolved
            for key, value in _read_params(match["params"], text).items():
                params[key] = value
            cutoff = _literal(match["cutoff"]) if match["cutoff"] is not None else None
            return [_build(family, cutoff, params, text, conventions)]
    trec = _TREC_CUTOFF.match(text)
    if trec and trec["name"] in TREC_CUTOFF_ALIASES:
        family_name, param = TREC_CUTOFF_ALIASES[trec["name"]]
        family = REGISTRY[family_name]
        value = _literal(trec["cutoff"])
        if param is not None:
            return [_build(family, None, {param: value}, text, conventions)]
        return [_build(family, value, {}, text, conventions)]
    dotted = _TREC_DOTTED.match(text)
    if dotted and dotted["name"] in TREC_DOTTED:
        return _expand_trec(dotted["name"], dotted["params"], text, conventions)
    raise _unknown(text)


def parse(name: str | Measure) -> Measure:
    """Parse a measure name in canonical, trec_eval or ranx form.

    Parameters
    ----------
    name
        e.g. ``"AP@10"``, ``"map_cut_10"``, ``"ndcg@10"``, ``"P(rel=2)@5"``,
        ``"iprec_at_recall_0.50"``, ``"ndcg.1=3,2=9"``.

    Returns
    -------
    Measure
        Its ``str()`` is the canonical name.

    Examples
    --------
    >>> str(parse("map_cut_10")), str(parse("ndcg@10")), str(parse("mrr"))
    ('AP@10', 'nDCG@10', 'RR')
    >>> str(parse("P(rel=2)@5"))
    'P(rel=2)@5'
    >>> str(parse("iprec_at_recall_0.50")), str(parse("Rprec_mult_0.20"))
    ('IPrec@0.5', 'Rprec(mult=0.2)')
    >>> str(parse("ndcg.1=3,2=9")), str(parse("ndcg_burges@10"))
    ('nDCG(gains=1:3;2:9)', 'nDCG(gain=exp)@10')
    >>> parse("P@0")
    Traceback (most recent call last):
    ...
    ValueError: The cutoff of P must be >= 1. Got 0 in 'P@0'.
    """
    if isinstance(name, Measure):
        return name
    if not isinstance(name, str):
        msg = f"A measure must be a name (str) or a Measure. Got {type(name).__name__}: {name!r}."
        raise TypeError(msg)
    text = name.strip()
    found = _parse_expanded(text)
    if len(found) != 1:
        msg = (
            f"{text!r} stands for {len(found)} measures "
            f"({', '.join(map(str, found)) or 'none'}); use parse_measures for it."
        )
        raise ValueError(msg)
    return found[0]


def _parse_expanded(text: str, conventions: str | Conventions | None = None) -> list[Measure]:
    """:func:`_parse_all` after trec_eval's nicknames and family defaults (issue 13).

    ``all_trec``, ``official``, ``set`` (of the conventions' trec_eval) and bare
    family names with default cutoffs (``P``, ``recall``, ``success``, ...) are
    expanded by :func:`polars_rankeval.trec_names.expand`.
    """
    conv = get_conventions(conventions)
    if _RANX_LEVEL.match(text) or _RANX_RBP.match(text):  # ranx's forms, not trec_eval's
        return _parse_all(text, conv)
    names = trec_names.expand(text, conv.nicknames)
    if names is None:
        return _parse_all(text, conv)
    return [x for n in names for x in _parse_all(n, conv)]


def parse_measures(
    measures: str | Measure | Iterable[str | Measure],
    *,
    conventions: str | Conventions | None = None,
) -> list[Measure]:
    """Parse many names; duplicates (in any dialect) are kept once, in first order.

    A trec_eval ``-m`` form with several values (``P.5,10``) gives one measure
    per value; a trec_eval nickname (``all_trec``, ``official``, ``set``) gives
    its measures, and a family name alone (``P``, ``recall``, ``ndcg_cut``,
    ``iprec_at_recall``, ...) its trec_eval default cutoffs. ``conventions``
    picks which trec_eval's ``all_trec`` (default ``"trec_eval-10"``).

    Examples
    --------
    >>> [str(x) for x in parse_measures(["map", "AP", "P_10", "precision@10", "RR"])]
    ['AP', 'P@10', 'RR']
    >>> [str(x) for x in parse_measures("P.5,10")]
    ['P@5', 'P@10']
    >>> [str(x) for x in parse_measures("success")]
    ['Success@1', 'Success@5', 'Success@10']
    >>> len(parse_measures("all_trec")), len(parse_measures("all_trec", conventions="trec_eval-9"))
    (97, 92)
    """
    if isinstance(measures, str | Measure):
        measures = [measures]
    if not isinstance(measures, Iterable):
        msg = (
            f"measures must be a name or a list of names, e.g. ['AP', 'nDCG@10']. "
            f"Got {measures!r} instead."
        )
        raise TypeError(msg)
    parsed: list[Measure] = []
    for x in measures:
        if isinstance(x, str):
            parsed += _parse_expanded(x.strip(), conventions)
        else:
            parsed.append(parse(x))
    if not parsed:
        msg = "No measures given: pass at least one, e.g. measures=['AP', 'nDCG@10']."
        raise ValueError(msg)
    return list(dict.fromkeys(parsed))


def aggregate_kind(name: str) -> Aggregate:
    """How the ``all`` line combines a measure's per-query values (mean by default).

    Geometric mean for GMAP and GMBpref (trec_eval ``gm_map``, ``gm_bpref``), sum
    for the counts (``NumRet``, ``NumRel``, ``NumRelRet``, ``NumNonRelJudgedRet``),
    as trec_eval reports them; a name that is not a measure gets the mean.

    Examples
    --------
    >>> aggregate_kind("GMAP"), aggregate_kind("NumRet"), aggregate_kind("AP@10")
    ('gmean', 'sum', 'mean')
    """
    try:
        return parse(name).family.aggregate
    except ValueError:
        return "mean"


def measure_kind(name: str, aggregate: AggregateMode = "trec") -> Aggregate:
    """How a measure column combines over queries: ``"mean"``, ``"gmean"`` or ``"sum"``.

    With ``aggregate="trec"``, as trec_eval's ``all`` line (:func:`aggregate_kind`):
    geometric mean for GMAP and GMBpref, sum for the counts (NumRet, NumRel,
    NumRelRet, NumNonRelJudgedRet), mean otherwise and for columns that are not
    measures. ``aggregate="mean"``: always the mean.

    Examples
    --------
    >>> measure_kind("GMAP"), measure_kind("num_ret"), measure_kind("GMAP", "mean")
    ('gmean', 'sum', 'mean')
    """
    check_choice("aggregate", aggregate, AggregateMode)
    return aggregate_kind(name) if aggregate == "trec" else "mean"
