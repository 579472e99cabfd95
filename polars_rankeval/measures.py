"""Measure registry and name parser.

A measure is a declaration (:class:`MeasureFamily`): a canonical name, the
parameters it takes with their types and defaults, whether ``@`` sets a cutoff,
how to build its expression, and its names in each dialect. The built-ins are
declared next to their code in :mod:`polars_rankeval.metrics` (see
:mod:`polars_rankeval.catalogue`, whose names this module re-exports); importing
this module declares them all. :func:`parse` turns a name in any of three
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
import re
from collections.abc import Iterable, Mapping
from typing import Any

import polars_rankeval.metrics  # noqa: F401  (declares every built-in measure)
from polars_rankeval import trec_names
from polars_rankeval._typing import Aggregate, AggregateMode
from polars_rankeval.catalogue import (
    ALIASES,
    MIN_GEO_MEAN,
    REGISTRY,
    TREC_CUTOFF_ALIASES,
    TREC_DOTTED,
    UNIT,
    Better,
    Context,
    CutoffRule,
    GainMap,
    Levels,
    Measure,
    MeasureFamily,
    Param,
    in_declared_order,
    register,
)
from polars_rankeval.conventions import Conventions, get_conventions
from polars_rankeval.validation import check_choice

__all__ = [
    "ALIASES",
    "MIN_GEO_MEAN",
    "REGISTRY",
    "TREC_CUTOFF_ALIASES",
    "TREC_DOTTED",
    "UNIT",
    "Context",
    "CutoffRule",
    "GainMap",
    "Levels",
    "Measure",
    "MeasureFamily",
    "Param",
    "aggregate_kind",
    "convention_params",
    "known_names",
    "measure_kind",
    "parse",
    "parse_measures",
    "register",
]

in_declared_order()  # the built-ins, declared in polars_rankeval/metrics/*.py


_RANX_LEVEL = re.compile(r"^(?P<body>.+)-l(?P<level>\d+)$")
"""ranx's relevance-level suffix on any of its names: ``map@10-l2`` is ``AP(rel=2)@10``."""
_RANX_RBP = re.compile(r"^rbp[.@](?P<digits>\d+)$")
"""ranx's rbp with its persistence after a dot: ``rbp.95`` is ``RBP(gain=linear,p=0.95)``."""


_TREC_CUTOFF = re.compile(r"^(?P<name>[A-Za-z_]+?)_(?P<cutoff>\d+(?:\.\d*)?)$")
_TREC_DOTTED = re.compile(r"^(?P<name>[A-Za-z0-9_]+?)\.(?P<params>.*)$")
_CANONICAL = re.compile(
    r"^(?P<name>[A-Za-z0-9][A-Za-z0-9_\-]*)(?:\((?P<params>[^()]*)\))?(?:@(?P<cutoff>[^@]+))?$"
)
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_STRUCTURED = re.compile(r"^[0-9eE.+\-:;= ]*[:;][0-9eE.+\-:;= ]*$")


def _literal(text: str, what: str = "parameter value") -> Any:
    """Parse a parameter value: int, float, bare word, or map / list text (never evaluated).

    ``what`` names the value in the error: the parameter or cutoff and its measure.

    Examples
    --------
    >>> _literal("10"), _literal("0.5"), _literal("exp"), _literal("1:3;2:9")
    (10, 0.5, 'exp', '1:3;2:9')
    >>> _literal("1O", "the cutoff '1O' of nDCG in 'ndcg@1O'")
    Traceback (most recent call last):
    ...
    ValueError: Cannot read the cutoff '1O' of nDCG in 'ndcg@1O': expected a number, a bare \
word, a grade:gain map (1:3;2:9) or a ;-separated list (0.25;0.5).
    """
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
        f"Cannot read {what}: expected a number, a bare word, "
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
    return ValueError(f"Unknown measure {name!r}.{hint} {_WHERE_NAMES_ARE}")


_WHERE_NAMES_ARE = (
    "Every measure: pr.measures.REGISTRY; their names in each dialect: docs/measures.md."
)
"""Where an unknown name's error points to (the whole list is too long for a message)."""


def _snake_case(name: str) -> str:
    """``HitRate`` -> ``hit_rate``: a CamelCase spelling of a snake_case alias.

    Examples
    --------
    >>> _snake_case("HitRate"), _snake_case("hit_rate")
    ('hit_rate', 'hit_rate')
    """
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _tool_name(text: str, conventions: Conventions) -> str:
    """The canonical text a name stands for under ``conventions`` (their tool's meaning,
    :attr:`~polars_rankeval.conventions.Conventions.names`), or the name itself; a name
    whose measure they do not reproduce is refused.

    Examples
    --------
    >>> _tool_name("precision", get_conventions("ranx")), _tool_name("precision", get_conventions())
    ('SetP', 'precision')
    >>> _tool_name("map_at_k@10", get_conventions("recommenders"))
    'AP(norm=min)@10'
    """
    base, at, cutoff = text.partition("@")
    for name in (text, base):
        if name in conventions.refused_names:
            why = conventions.refused_names[name]
            msg = f"{text!r} under conventions={conventions.name!r}: {why}"
            raise ValueError(msg)
    if text in conventions.names:
        return conventions.names[text]
    if at and f"{base}@" in conventions.names:  # a name declared with a cutoff: map_at_k@10
        return f"{conventions.names[base + '@']}@{cutoff}"
    return text


def _resolve_family(name: str) -> tuple[MeasureFamily, dict[str, Any]] | None:
    """Canonical name or alias -> (family, preset parameters)."""
    if name in REGISTRY:
        return REGISTRY[name], {}
    alias = ALIASES.get(name.lower()) or ALIASES.get(_snake_case(name))
    if alias is None:
        return None
    match = _CANONICAL.match(alias)
    if match is None:  # the table above is written in canonical form
        raise _unknown(alias)
    return REGISTRY[match["name"]], _read_params(match["params"], alias, match["name"])


def _read_params(text: str | None, whole: str, family: str) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for item in _top_level_parts(text or ""):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            msg = f"Cannot read parameter {item!r} of {whole!r}: expected key=value."
            raise ValueError(msg)
        if key.strip() in params:
            msg = f"Parameter {key.strip()!r} is given twice in {whole!r}."
            raise ValueError(msg)
        what = f"parameter {key.strip()} of {family} in {whole!r} (value {value.strip()!r})"
        value = _ir_measures_value(value)
        quoted = value.startswith("'") and len(value) >= 2 and value.endswith("'")
        params[key.strip()] = value[1:-1] if quoted else _literal(value, what)
    return params


def _ir_measures_value(text: str) -> str:
    """ir_measures' spelling of a value as this parser's: a quoted string in single
    quotes (``"log2"`` -> ``'log2'``: a string whatever it holds), a dict of gains as a
    grade:gain map (``{0:0, 1:1}`` -> ``0:0;1:1``).

    Examples
    --------
    >>> _ir_measures_value('"exp-log2"'), _ir_measures_value("{0: 0, 1: 1, 2: 3}")
    ("'exp-log2'", '0:0;1:1;2:3')
    """
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return f"'{text[1:-1]}'"
    if text.startswith("{") and text.endswith("}"):
        return ";".join(item.replace(" ", "") for item in text[1:-1].split(",") if item.strip())
    return text


_IR_MEASURES_PARAMS: dict[tuple[str, Any], dict[str, Any]] = {
    ("dcg", "log2"): {},
    ("dcg", "exp-log2"): {"gain": "exp"},
    ("judged_only", False): {},
    ("relative", False): {},
}
"""ir_measures' parameters that a measure here has under another form, ``(name, value) ->
the parameters they stand for``, read where the family has no parameter of that name:
``nDCG(dcg='exp-log2')`` is ``nDCG(gain=exp)``, an ir_measures default is left out."""
_IR_MEASURES_FAMILIES: dict[tuple[str, str, Any], str] = {("SetP", "relative", True): "SetRelP"}
"""ir_measures' parameters that name another measure here: ``SetP(relative=True)`` is
``SetRelP``."""
_IR_MEASURES_KEPT: dict[tuple[str, str], str] = {("NumRet", "rel"): "NumRelRet"}
"""ir_measures' parameters that, whatever their value, name another measure here which
takes them too: ``NumRet(rel=2)`` is ``NumRelRet(rel=2)``."""


def _ir_measures_params(
    family: MeasureFamily, params: dict[str, Any]
) -> tuple[MeasureFamily, dict[str, Any]]:
    """``family`` and ``params`` with ir_measures' parameter forms read (see
    :data:`_IR_MEASURES_PARAMS`); the others are left for :func:`_build` to check.

    Examples
    --------
    >>> _ir_measures_params(REGISTRY["nDCG"], {"dcg": "exp-log2"})[1]
    {'gain': 'exp'}
    >>> _ir_measures_params(REGISTRY["SetP"], {"relative": "True"})[0].name
    'SetRelP'
    >>> family, params = _ir_measures_params(REGISTRY["NumRet"], {"rel": 2})
    >>> family.name, params
    ('NumRelRet', {'rel': 2})
    >>> _ir_measures_params(REGISTRY["SDCG"], {"dcg": "exp-log2"})[1]  # no gain to stand for
    {'dcg': 'exp-log2'}
    """
    own = {p.name for p in family.params}
    out: dict[str, Any] = {}
    for key, value in params.items():
        if key in own:
            out[key] = value
            continue
        if (family.name, key) in _IR_MEASURES_KEPT:
            family = REGISTRY[_IR_MEASURES_KEPT[family.name, key]]
            own = {p.name for p in family.params}
            out[key] = value
            continue
        if isinstance(value, str) and value.lower() in ("true", "false"):
            value = value.lower() == "true"
        other = _IR_MEASURES_FAMILIES.get((family.name, key, value))
        if other is not None:
            family, own = REGISTRY[other], {p.name for p in REGISTRY[other].params}
        elif (key, value) in _IR_MEASURES_PARAMS and own >= set(_IR_MEASURES_PARAMS[key, value]):
            out.update(_IR_MEASURES_PARAMS[key, value])
        else:  # the family's check names the parameter as given
            out[key] = value
    return family, out


def convention_params(
    family: MeasureFamily,
    conventions: Conventions,
    given: Mapping[str, Any] | None = None,
    *,
    cutoff: bool = False,
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
    if cutoff:  # "family@": the family's measures with a cutoff
        params |= conventions.measure_params.get(f"{family.name}@", {})
    if conventions.ties == "average" and any(
        p.name == "ties" and "average" in p.choices for p in family.params
    ):
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
        params = convention_params(family, conventions, params, cutoff=cutoff is not None)
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


def _trec_numbers(params: str, family: str, text: str) -> list[float]:
    """The numbers of a trec_eval ``-m name.v1,v2`` form; an error names the measure."""
    numbers = []
    for v in _trec_values(params):
        try:
            numbers.append(float(v))
        except ValueError:
            msg = f"Cannot read the value {v!r} of {family} in {text!r}: expected a number."
            raise ValueError(msg) from None
    return numbers


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
        numbers = _trec_numbers(params, family.name, text)
        values = [kind(v) if kind is float else int(v) for v in numbers]
        return [_build(family, v, {}, text, conventions) for v in values]
    if how.startswith("param:"):
        key = how.partition(":")[2]
        return [
            _build(family, None, {key: v}, text, conventions)
            for v in _trec_numbers(params, family.name, text)
        ]
    if how == "levels":
        return [_build(family, None, {"levels": Levels.of(params)}, text, conventions)]
    if how == "gains":
        return [_build(family, None, {"gains": GainMap.of(params)}, text, conventions)]
    coefficients = _trec_numbers(params, family.name, text)
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
    does not set (see :func:`convention_params`) and their tool's meaning of names
    (see :func:`_tool_name`)."""
    if conventions is not None:
        text = _tool_name(text, conventions)
    ranx = _ranx_forms(text, conventions)
    if ranx is not None:
        return ranx
    match = _CANONICAL.match(text)
    if match:
        resolved = _resolve_family(match["name"])
        if resolved is not None:
            family, params = resolved
            for key, value in _read_params(match["params"], text, family.name).items():
                params[key] = value
            family, params = _ir_measures_params(family, params)
            raw = match["cutoff"]
            what = f"the cutoff {raw!r} of {family.name} in {text!r}"
            cutoff = _literal(raw, what) if raw is not None else None
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
    try:
        return _parse_one_text(text, conv)
    except ValueError:
        parts = _top_level_parts(text)
        if len(parts) > 1 and all(_parses(part, conv) for part in parts):
            msg = (
                f"{text!r} looks like {len(parts)} measure names: pass a list, measures={parts!r}."
            )
            raise ValueError(msg) from None
        raise


def _top_level_parts(text: str) -> list[str]:
    """``text`` split at the commas outside parentheses, braces and quotes.

    Examples
    --------
    >>> _top_level_parts("P@10, nDCG(gains={1: 3, 2: 9})@5")
    ['P@10', 'nDCG(gains={1: 3, 2: 9})@5']
    """
    parts, depth, quote, start = [], 0, "", 0
    for i, char in enumerate(text):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "({":
            depth += 1
        elif char in ")}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    return [*parts, text[start:].strip()]


def _parses(text: str, conventions: Conventions) -> bool:
    """Whether ``text`` alone is a measure name."""
    try:
        _parse_one_text(text, conventions)
    except ValueError:
        return False
    return bool(text)


def _parse_one_text(text: str, conv: Conventions) -> list[Measure]:
    """:func:`_parse_expanded` of one name (no comma-joined list)."""
    if _RANX_LEVEL.match(text) or _RANX_RBP.match(text):  # ranx's forms, not trec_eval's
        return _parse_all(text, conv)
    if text in conv.names or text in conv.refused_names:  # the tool's meaning wins
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


def measure_better(name: str) -> Better:
    """Which values of a measure are better: its declaration's ``better``
    (``"lower"`` for FallOut, Unjudged, RBPResid, ...); ``"higher"`` for other
    columns.

    Examples
    --------
    >>> measure_better("AP"), measure_better("FallOut@10"), measure_better("my_column")
    ('higher', 'lower', 'higher')
    """
    try:
        return parse(name).family.better
    except ValueError:
        return "higher"
