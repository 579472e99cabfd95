"""Your own measures: :func:`define_measure` declares one, and its names work everywhere.

A declared measure is a Polars expression over one ranking of
:func:`polars_rankeval.judge`'s table (``rank``: 1 = top, null for a judged document
the run did not retrieve; ``relevance``: the qrels grade, null for a retrieved
document without a judgment) that reduces the ranking's rows to one number, exactly
as the expressions of :mod:`polars_rankeval.metrics` do. Once declared, its names
are parsed as the built-ins' are (``DP@10``, ``DP(rel=2)@5``), by
:func:`polars_rankeval.evaluate` on any input, :func:`polars_rankeval.evaluate_judged`,
``by=``, :func:`polars_rankeval.mean_scores`, :func:`polars_rankeval.compare`, the
Dask and Spark adapters and the command line (``--measures-from``).

The engine computes a declared expression over its judged rows in the same pass as
the built-ins' formulas, lazily and bucket by bucket, but with one ``group_by`` that
runs ranking by ranking: a few such measures cost little, many cost as
:mod:`polars_rankeval.metrics`' expressions do in a ``group_by`` (92 of them took
1.3 s over 159k judged rows where the engine's formulas take 0.2 s at 1M run rows).
A declaration may also give ``formula``, the measure over the engine's features
(:mod:`polars_rankeval.engine.features`), which is how the built-ins are computed.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace as replaced
from typing import TYPE_CHECKING, Any, get_args

import polars as pl

from polars_rankeval._typing import Aggregate
from polars_rankeval.catalogue import Better, Bounds
from polars_rankeval.measures import (
    ALIASES,
    REGISTRY,
    TREC_CUTOFF_ALIASES,
    TREC_DOTTED,
    Context,
    CutoffRule,
    Measure,
    MeasureFamily,
    Param,
    register,
)
from polars_rankeval.validation import check_choice

if TYPE_CHECKING:
    from polars_rankeval.engine.features import Features

COLUMNS = ("rank", "relevance")
"""The columns of a ranking's judged table a declared expression may read."""
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_KINDS = (bool, int, float, str)

Expression = pl.Expr | Callable[..., pl.Expr]


def define_measure(
    name: str,
    expression: Expression,
    *,
    cutoff: CutoffRule | None = None,
    params: Mapping[str, Any] | Sequence[Param] = (),
    aggregate: Aggregate = "mean",
    bounds: Bounds | Callable[[Measure], Bounds | None] | None = None,
    better: Better = "higher",
    aliases: Iterable[str] = (),
    summary: str = "",
    formula: Callable[[Measure, Features], pl.Expr] | None = None,
    reads: float | None = None,
    replace: bool = False,
) -> MeasureFamily:
    r"""Declare a measure: its names then work wherever a built-in's name does.

    Parameters
    ----------
    name
        The canonical name (letters, digits and ``_``, starting with a letter): the
        output column is ``name``, ``name@k`` or ``name(param=value)@k``.
    expression
        A Polars expression over the columns ``rank`` and ``relevance`` of one
        ranking of :func:`polars_rankeval.judge`'s table that reduces them to one
        number; or a function that returns one, called with keyword arguments ``k``
        (the cutoff, when the measure takes one; None when an optional cutoff is not
        given) and each parameter. The rows come in rank order, the judged documents
        the run did not retrieve last (``rank`` null).
    cutoff
        ``None`` (no ``@k``), ``"optional"`` or ``"required"``: whether ``name@k``
        sets ``k`` (an int >= 1).
    params
        The parameters ``name(p=v)`` sets: a mapping of each name to its default
        (its type is the default's: bool, int, float or str), or
        :class:`~polars_rankeval.measures.Param` objects.
    aggregate
        How per-query values combine in :func:`polars_rankeval.mean_scores` and
        the ``all`` line: ``"mean"``, ``"gmean"`` (as GMAP, floor 1e-5) or ``"sum"``
        (as the counts).
    bounds
        The range of the per-query values, e.g. ``(0, 1)``: the statistics clip
        intervals to it (:func:`polars_rankeval.summarize`); or a function of the
        :class:`~polars_rankeval.measures.Measure` that returns it when the
        parameters decide (``lambda m: (0, 1) if m.get("grade") else None``).
        None: not known (nothing is clipped).
    better
        ``"higher"`` (default) or ``"lower"``: which values are better (``"lower"``
        for an error rate or a share of unjudged documents). :func:`polars_rankeval.report`
        bolds the best score and marks a system as beating another by it;
        :func:`polars_rankeval.compare` counts ``wins`` and ``losses`` by it.
    aliases
        Other names that parse to this measure (compared in lower case).
    summary
        One line saying what it measures.
    formula
        Optional: the measure over the engine's features (a function of the
        :class:`~polars_rankeval.measures.Measure` and a
        :class:`~polars_rankeval.engine.features.Features`), the fast path the
        built-ins take; without it the engine computes ``expression``.
    reads
        With ``formula``: the lowest grade of the judged rows it reads (None: every
        judged row). The engine keeps only the rows some measure reads.
    replace
        Declare ``name`` (or an alias) again, a built-in's included. Without it, a
        name that is taken is refused.

    Returns
    -------
    MeasureFamily
        The declaration, as registered.

    Examples
    --------
    A discounted precision, :math:`DP@k = \frac1k \sum_{i \le k} rel_i / \log_2(i+1)`:

    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> def dp(k):
    ...     top = pl.col("rank") <= k
    ...     hits = (pl.col("relevance") >= 1) & top
    ...     return (hits.cast(pl.Float64) / (pl.col("rank") + 1).log(2)).sum() / k
    >>> _ = pr.define_measure("DP", dp, cutoff="required", bounds=(0, 1), replace=True)
    >>> run = pl.DataFrame({"query": ["q"] * 3, "doc": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
    >>> qrels = pl.DataFrame({"query": ["q", "q"], "doc": ["a", "c"], "relevance": [1, 1]})
    >>> pr.evaluate(run, qrels, ["DP@2", "P@2"]).row(0)
    ('q', 0.5, 0.5)
    """
    if not isinstance(name, str) or not _NAME.match(name):
        msg = (
            f"A measure's name is letters, digits and '_', starting with a letter "
            f"(e.g. 'DP'). Got {name!r}."
        )
        raise ValueError(msg)
    rule = "none" if cutoff is None else cutoff
    check_choice(f"cutoff of {name}", rule, get_args(CutoffRule))
    check_choice(f"aggregate of {name}", aggregate, get_args(Aggregate))
    check_choice(f"better of {name}", better, get_args(Better))
    declared = _params(name, params)
    _check_expression(name, expression, rule, declared)
    names = [name.lower(), *(a.lower() for a in aliases)]
    if not replace:
        _check_free(name, list(aliases))
    family = MeasureFamily(
        name,
        _expression_build,
        rule,
        params=declared,
        summary=summary,
        aggregate=aggregate,
        formula=formula or _expression_formula,
        reads=_reads_from(reads) if formula is not None else None,
        bounds=_bounds(name, bounds),
        better=better,
        expression=expression,
    )
    register(family)
    for alias in names:  # the name in any case, and the aliases
        ALIASES[alias] = name
    return family


def _params(name: str, params: Mapping[str, Any] | Sequence[Param]) -> tuple[Param, ...]:
    """The declared parameters as :class:`Param` objects (type from the default)."""
    if isinstance(params, Mapping):
        out = []
        for key, default in params.items():
            kind = type(default)
            if kind not in _KINDS:
                msg = (
                    f"Parameter {key!r} of {name}: give its default as a bool, int, float "
                    f"or str (or a Param for another type). Got {default!r}."
                )
                raise ValueError(msg)
            out.append(Param(key, kind, default))
        declared = tuple(out)
    else:
        declared = tuple(params)
        if not all(isinstance(p, Param) for p in declared):
            msg = f"params of {name} must be a mapping of name to default, or Param objects."
            raise TypeError(msg)
    for p in declared:
        if not _NAME.match(p.name) or p.name == "k":
            msg = f"{name} cannot take a parameter named {p.name!r}."
            raise ValueError(msg)
    return declared


def _check_expression(
    name: str, expression: Expression, rule: str, params: tuple[Param, ...]
) -> None:
    """A plain expression must read only :data:`COLUMNS`; a function must take ``k``
    (with a cutoff) and each parameter by name."""
    if isinstance(expression, pl.Expr):
        _check_columns(name, expression)
        if rule != "none":
            msg = f"{name} takes a cutoff: give its expression as a function of k."
            raise ValueError(msg)
        if params:
            msg = f"{name} takes parameters: give its expression as a function of them."
            raise ValueError(msg)
        return
    if not callable(expression):
        msg = f"The expression of {name} must be a Polars expression or a function returning one."
        raise TypeError(msg)
    wanted = [p.name for p in params] + (["k"] if rule != "none" else [])
    try:
        signature = inspect.signature(expression)
    except (TypeError, ValueError):  # a builtin: called as declared
        return
    taken = signature.parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in taken.values()):
        return
    missing = [w for w in wanted if w not in taken]
    if missing:
        msg = f"The expression function of {name} must take {', '.join(missing)} by name."
        raise ValueError(msg)


def _check_columns(name: str, expression: pl.Expr) -> None:
    """Errors name the measure and the column it reads that the judged rows lack."""
    for column in expression.meta.root_names():
        if column not in COLUMNS:
            msg = (
                f"The expression of {name} reads the column {column!r}; a measure reads "
                f"one ranking's judged rows, whose columns are {', '.join(COLUMNS)}."
            )
            raise ValueError(msg)


def _check_free(name: str, aliases: list[str]) -> None:
    """Refuse a name or alias that already means a measure (``replace=True`` allows it)."""
    taken = (
        {n.lower() for n in REGISTRY}
        | set(ALIASES)
        | {n.lower() for n in (*TREC_CUTOFF_ALIASES, *TREC_DOTTED)}
    )
    for word in (name, *aliases):
        if word.lower() in taken:
            msg = (
                f"{word!r} already names a measure: pass replace=True to declare it again, "
                f"or choose another name."
            )
            raise ValueError(msg)


def _bounds(
    name: str, bounds: Bounds | Callable[[Measure], Bounds | None] | None
) -> Bounds | Callable[[Measure], Bounds | None] | None:
    """Checked bounds: a (low, high) pair, or a function whose answers are checked."""
    if callable(bounds):
        function = bounds
        return lambda measure: _pair(str(measure), function(measure))
    return _pair(name, bounds)


def _pair(name: str, bounds: Bounds | None) -> Bounds | None:
    if bounds is None:
        return None
    low, high = (float(b) for b in bounds)
    if math.isnan(low) or math.isnan(high) or low > high:
        msg = f"bounds of {name} must be (low, high) with low <= high. Got {bounds!r}."
        raise ValueError(msg)
    return (low, high)


def _reads_from(lowest: float | None) -> Callable[[Measure, Context], float] | None:
    if lowest is None:
        return None
    return lambda measure, ctx: float(lowest)


def expression_of(measure: Measure) -> pl.Expr:
    """The expression of a declared measure at its cutoff and parameters.

    Examples
    --------
    >>> import polars as pl
    >>> from polars_rankeval.measures import parse
    >>> _ = define_measure("Hits1", lambda k: (pl.col("rank") <= k).sum(), cutoff="required",
    ...                    replace=True)
    >>> expression_of(parse("Hits1@3")).meta.root_names()
    ['rank']
    """
    expression = measure.family.expression
    if expression is None:
        msg = f"{measure} is computed by the engine's formula alone: it has no expression."
        raise ValueError(msg)
    if isinstance(expression, pl.Expr):
        return expression
    kwargs = {p.name: measure.get(p.name, p.default) for p in measure.family.params}
    if measure.family.cutoff != "none":
        kwargs["k"] = measure.cutoff
    made = expression(**kwargs)
    if not isinstance(made, pl.Expr):
        got = type(made).__name__
        msg = f"The expression function of {measure.name} returned {got}, not a Polars expression."
        raise TypeError(msg)
    _check_columns(str(measure), made)
    return made


def _expression_build(measure: Measure, ctx: Context) -> pl.Expr:
    """``MeasureFamily.build`` of a declared measure: its expression as it is."""
    return expression_of(measure)


def _expression_formula(measure: Measure, features: Features) -> pl.Expr:
    """``MeasureFamily.formula`` of a declared measure without one: its expression over
    each ranking's judged rows."""
    return features.over_judged(expression_of(measure), str(measure))


def resolved(measure: Measure) -> Measure:
    """``measure`` with its expression made at its cutoff and parameters: a declaration
    that pickles with plain data (no user function), for Dask and Spark workers."""
    if measure.family.expression is None or isinstance(measure.family.expression, pl.Expr):
        return measure
    family = replaced(measure.family, expression=expression_of(measure))
    return Measure(family, measure.name, measure.cutoff, measure.params)
