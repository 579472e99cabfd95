"""Measure registry and name parser.

A measure is a declaration (:class:`MeasureFamily`): a canonical name, the
parameters it takes with their types and defaults, whether ``@`` sets a cutoff,
and how to build its expression. :func:`parse` turns a name in any of three
dialects into a :class:`Measure`:

* canonical (ir_measures style): ``AP``, ``AP@10``, ``P(rel=2)@5``, ``nDCG@10``;
* trec_eval: ``map``, ``map_cut_10``, ``P_10``, ``recall_100``, ``recip_rank``,
  ``ndcg_cut_10``, ``success_1``, ``num_ret``;
* ranx: ``map@100``, ``precision@10``, ``recall@10``, ``ndcg@10``, ``mrr``,
  ``hit_rate@5``, ``r-precision``.

Names are parsed with regular expressions and literal conversion, never
evaluated. ``parse(str(m)) == m`` for every measure, and output columns carry
``str(m)``, the canonical name, whichever dialect was typed.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import polars as pl

from polars_rankeval import metrics as m

CutoffRule = Literal["none", "optional", "required"]


@dataclass(frozen=True)
class Context:
    """Column names and defaults a measure builds its expression against."""

    rank: str = "rank"
    relevance: str = "relevance"
    rel_level: int = 1
    n_rel: str | None = None


@dataclass(frozen=True)
class Param:
    """A measure parameter: name, type and default (None: the context decides)."""

    name: str
    kind: type
    default: Any = None


@dataclass(frozen=True)
class MeasureFamily:
    """Declaration of one measure family (e.g. precision at any cutoff)."""

    name: str
    build: Callable[[Measure, Context], pl.Expr]
    cutoff: CutoffRule = "none"
    cutoff_kind: type = int
    params: tuple[Param, ...] = ()
    summary: str = ""

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

    family: MeasureFamily = field(compare=False, hash=False, repr=False)
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

    def expr(self, ctx: Context | None = None) -> pl.Expr:
        """The aggregation expression, aliased to the canonical name."""
        return self.family.build(self, ctx or Context()).alias(str(self))


def _format_value(value: Any) -> str:
    if isinstance(value, float):
        return repr(value)
    return str(value)


# --------------------------------------------------------------------------- registry

REL = Param("rel", int)
REGISTRY: dict[str, MeasureFamily] = {}


def register(family: MeasureFamily) -> MeasureFamily:
    """Add a measure family to the registry (by canonical name)."""
    REGISTRY[family.name] = family
    return family


def _cols(measure: Measure, ctx: Context) -> dict[str, Any]:
    return {"rank": ctx.rank, "relevance": ctx.relevance, "rel_level": measure.rel_level(ctx)}


def _with_n_rel(measure: Measure, ctx: Context) -> dict[str, Any]:
    return {**_cols(measure, ctx), "n_rel": ctx.n_rel}


register(
    MeasureFamily(
        "P",
        lambda x, c: m.precision(x.cutoff, **_cols(x, c)),
        "required",
        params=(REL,),
        summary="precision at k",
    )
)
register(
    MeasureFamily(
        "R",
        lambda x, c: m.recall(x.cutoff, **_with_n_rel(x, c)),
        "optional",
        params=(REL,),
        summary="recall at k",
    )
)
register(
    MeasureFamily(
        "AP",
        lambda x, c: m.average_precision(x.cutoff, **_with_n_rel(x, c)),
        "optional",
        params=(REL,),
        summary="average precision (at k: |R| stays the denominator)",
    )
)
register(
    MeasureFamily(
        "RR",
        lambda x, c: m.reciprocal_rank(x.cutoff, **_cols(x, c)),
        "optional",
        params=(REL,),
        summary="reciprocal rank of the first relevant document",
    )
)
register(
    MeasureFamily(
        "Rprec",
        lambda x, c: m.r_precision(**_with_n_rel(x, c)),
        params=(REL,),
        summary="R-precision: precision at rank |R|",
    )
)
register(
    MeasureFamily(
        "nDCG",
        lambda x, c: m.ndcg(x.cutoff, rank=c.rank, relevance=c.relevance),
        "optional",
        summary="normalised DCG, linear gain, trec_eval ideal",
    )
)
register(
    MeasureFamily(
        "Success",
        lambda x, c: m.success(x.cutoff, **_cols(x, c)),
        "optional",
        params=(REL,),
        summary="1 if a relevant document is in the top k",
    )
)
register(
    MeasureFamily("NumRet", lambda x, c: m.num_ret(rank=c.rank), summary="documents retrieved")
)
register(
    MeasureFamily(
        "NumRel",
        lambda x, c: m.num_rel(relevance=c.relevance, rel_level=x.rel_level(c), n_rel=c.n_rel),
        params=(REL,),
        summary="relevant documents, retrieved or not",
    )
)
register(
    MeasureFamily(
        "NumRelRet",
        lambda x, c: m.num_rel_ret(**_cols(x, c)),
        params=(REL,),
        summary="relevant documents retrieved",
    )
)


# --------------------------------------------------------------------------- aliases

# Plain names from trec_eval, ranx and ir_measures -> canonical family (lower-cased keys).
ALIASES: dict[str, str] = {
    "map": "AP",
    "ap": "AP",
    "recip_rank": "RR",
    "mrr": "RR",
    "rr": "RR",
    "ndcg": "nDCG",
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
}

# trec_eval names that carry the cutoff after an underscore: map_cut_10, P_10, ...
TREC_CUTOFF_ALIASES: dict[str, str] = {
    "P": "P",
    "recall": "R",
    "map_cut": "AP",
    "ndcg_cut": "nDCG",
    "success": "Success",
}
_TREC_CUTOFF = re.compile(r"^(?P<name>[A-Za-z_]+?)_(?P<cutoff>\d+)$")
_CANONICAL = re.compile(
    r"^(?P<name>[A-Za-z][A-Za-z0-9_\-]*)(?:\((?P<params>[^()]*)\))?(?:@(?P<cutoff>[^@]+))?$"
)
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


def _literal(text: str) -> Any:
    """Parse a parameter value: int, float or bare word (never evaluated)."""
    text = text.strip()
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    if _NUMBER.fullmatch(text):
        return float(text)
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text):
        return text
    msg = f"Cannot read parameter value {text!r}: expected a number or a bare word."
    raise ValueError(msg)


def _coerce(value: Any, kind: type, what: str) -> Any:
    if kind is float and isinstance(value, int):
        return float(value)
    if kind is int and isinstance(value, float) and value.is_integer():
        return int(value)
    if not isinstance(value, kind) or isinstance(value, bool):
        msg = f"{what} must be {kind.__name__}. Got {value!r} instead."
        raise ValueError(msg)
    return value


def known_names() -> list[str]:
    """Every name the parser knows: canonical families, aliases, trec_eval prefixes."""
    return sorted(set(REGISTRY) | set(ALIASES) | {f"{k}_10" for k in TREC_CUTOFF_ALIASES})


def _unknown(name: str) -> ValueError:
    close = difflib.get_close_matches(name, known_names(), n=5, cutoff=0.5)
    close += [n for n in known_names() if n.lower() == name.lower() and n not in close]
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    return ValueError(f"Unknown measure {name!r}.{hint} Known measures: {', '.join(REGISTRY)}.")


def _resolve_family(name: str) -> MeasureFamily | None:
    if name in REGISTRY:
        return REGISTRY[name]
    alias = ALIASES.get(name.lower())
    return REGISTRY[alias] if alias else None


def _build(family: MeasureFamily, cutoff: Any, params: Mapping[str, Any], text: str) -> Measure:
    if cutoff is not None:
        if family.cutoff == "none":
            msg = f"Measure {family.name} takes no cutoff; got {text!r}."
            raise ValueError(msg)
        cutoff = _coerce(cutoff, family.cutoff_kind, f"The cutoff of {family.name}")
        if cutoff < (1 if family.cutoff_kind is int else 0):
            msg = f"The cutoff of {family.name} must be >= 1. Got {cutoff!r} in {text!r}."
            raise ValueError(msg)
    elif family.cutoff == "required":
        msg = f"Measure {family.name} needs a cutoff, e.g. {family.name}@10; got {text!r}."
        raise ValueError(msg)
    clean = []
    for key, value in sorted(params.items()):
        p = family.param(key)
        value = _coerce(value, p.kind, f"Parameter {key} of {family.name}")
        if value != p.default:
            clean.append((key, value))
    return Measure(family, family.name, cutoff, tuple(clean))


def parse(name: str | Measure) -> Measure:
    """Parse a measure name in canonical, trec_eval or ranx form.

    Parameters
    ----------
    name
        e.g. ``"AP@10"``, ``"map_cut_10"``, ``"ndcg@10"``, ``"P(rel=2)@5"``.

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
    match = _CANONICAL.match(text)
    if match:
        family = _resolve_family(match["name"])
        if family is not None:
            params = {}
            if match["params"]:
                for item in match["params"].split(","):
                    key, sep, value = item.partition("=")
                    if not sep or not key.strip():
                        msg = f"Cannot read parameter {item!r} of {text!r}: expected key=value."
                        raise ValueError(msg)
                    params[key.strip()] = _literal(value)
            cutoff = _literal(match["cutoff"]) if match["cutoff"] is not None else None
            return _build(family, cutoff, params, text)
    trec = _TREC_CUTOFF.match(text)
    if trec and trec["name"] in TREC_CUTOFF_ALIASES:
        family = REGISTRY[TREC_CUTOFF_ALIASES[trec["name"]]]
        return _build(family, int(trec["cutoff"]), {}, text)
    raise _unknown(text)


def parse_measures(measures: str | Measure | Iterable[str | Measure]) -> list[Measure]:
    """Parse many names; duplicates (in any dialect) are kept once, in first order.

    Examples
    --------
    >>> [str(x) for x in parse_measures(["map", "AP", "P_10", "precision@10", "RR"])]
    ['AP', 'P@10', 'RR']
    """
    if isinstance(measures, str | Measure):
        measures = [measures]
    parsed = [parse(x) for x in measures]
    if not parsed:
        msg = "No measures given: pass at least one, e.g. measures=['AP', 'nDCG@10']."
        raise ValueError(msg)
    return list(dict.fromkeys(parsed))
