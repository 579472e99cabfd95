"""One evaluation, prepared once at the API boundary: what every way in hands to the engine.

:func:`polars_rankeval.evaluate` (DataFrame or LazyFrame), the Dask and Spark adapters
(:func:`polars_rankeval.pieces.prepare`, on the schemas alone) and the command line
(through ``evaluate``) build the same :class:`Call` with :func:`prepare`: the keyword
options checked against their declared rules
(:data:`polars_rankeval.options.OPTION_RULES`, as scikit-learn's ``validate_params``
declares them) and against the run's and qrels' schemas
(:func:`polars_rankeval.options.run_options`), the measures parsed under the
conventions, their output names checked, before any row is read. The engine then
reads the call's :class:`~polars_rankeval.engine.plan.Options` and measures; the
call finishes what the engine scored (:meth:`Call.finish`).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from polars_rankeval.engine.buckets import memory_bytes
from polars_rankeval.engine.plan import Options
from polars_rankeval.means import mean_scores
from polars_rankeval.measures import Measure, parse_measures
from polars_rankeval.options import check_options, run_options
from polars_rankeval.validation import check_output_names

CALL_OPTIONS = frozenset({"per_query", "validate", "memory_limit"})
"""Options of the call itself, not of how a run is read."""


@dataclass(frozen=True)
class Call:
    """One evaluation: its measures, its checked options and what to return."""

    measures: tuple[Measure, ...]
    options: Options
    per_query: bool = True
    validate: bool = True
    memory_limit: int = 1 << 30
    """Bytes a lazy input may take (:func:`polars_rankeval.engine.buckets.memory_bytes`)."""

    @property
    def engine_measures(self) -> tuple[Measure, ...]:
        """The measures the engine scores from the judged rows."""
        return tuple(m for m in self.measures if not m.of_lists)

    @property
    def list_measures(self) -> tuple[Measure, ...]:
        """The measures of each recommendation list as a whole
        (:mod:`polars_rankeval.lists`): they score every list of the run."""
        return tuple(m for m in self.measures if m.of_lists)

    @property
    def names(self) -> list[str]:
        """The measures' output columns (canonical names), in the order asked."""
        return [str(m) for m in self.measures]

    def output_schema(self, run: pl.Schema, qrels: pl.Schema) -> pl.Schema:
        """The schema of the result, known before any data is read (query ids compared
        as strings when the two tables type them differently)."""
        o = self.options
        keys = {k: run[k] for k in o.output_keys}
        if o.query in keys and run[o.query] != qrels[o.query]:
            keys[o.query] = pl.String()
        values: dict[str, pl.DataType] = {name: pl.Float64() for name in self.names}
        if self.per_query:
            return pl.Schema(keys | values)
        groups = {k: keys[k] for k in [*o.by, *([o.system] if o.system else [])]}
        return pl.Schema(groups | {"n_queries": pl.UInt32()} | values)

    def finish(self, scores: pl.DataFrame) -> pl.DataFrame:
        """Sorted per-query values, or their means per system (``per_query=False``)."""
        o = self.options
        scores = scores.sort(o.keys).select(*o.output_keys, *self.names)
        if self.per_query:
            return scores
        return mean_scores(scores, self.names, system=o.system, query=o.query, by=o.by)


def prepare(
    run: pl.Schema,
    qrels: pl.Schema,
    measures: str | Measure | Iterable[str | Measure],
    options: Mapping[str, Any],
    *,
    accepts: frozenset[str] | None = None,
    scores: bool = True,
    given: frozenset[str] | None = None,
) -> Call:
    """Check everything that can be checked without data: the :class:`Call` to run.

    ``options`` are :func:`polars_rankeval.evaluate`'s keyword options (``accepts``:
    those a way in takes, default all of :data:`OPTIONS`); anything else is refused,
    naming what is accepted. ``scores=False``: a call that scores nothing
    (:func:`polars_rankeval.judge` joins and ranks only); ``measures`` are ignored.

    Examples
    --------
    >>> run = pl.Schema({"query": pl.String, "doc": pl.String, "score": pl.Float64})
    >>> qrels = pl.Schema({"query": pl.String, "doc": pl.String, "relevance": pl.Int64})
    >>> call = prepare(run, qrels, ["map", "ndcg_cut_10"], {"per_query": False})
    >>> call.names, call.options.keys, call.per_query
    (['AP', 'nDCG@10'], ['query'], False)
    >>> prepare(run, qrels, ["AP"], {"depth": -1})
    Traceback (most recent call last):
    ...
    ValueError: depth must be an int >= 0 or None. Got -1 instead.
    """
    accepted = OPTIONS if accepts is None else accepts
    unknown = sorted(set(options) - accepted)
    if unknown:
        msg = (
            f"Unknown option(s) {', '.join(map(repr, unknown))}. "
            f"Options are those of polars_rankeval.evaluate: {', '.join(sorted(accepted))}."
        )
        raise TypeError(msg)
    check_options({k: options[k] for k in ("per_query", "validate") if k in options})
    conventions = options.get("conventions")
    parsed = parse_measures(measures, conventions=conventions) if scores else []
    check_per_ranking(parsed, lists=given is not None)
    check_needs(parsed, (given or frozenset()) | {"qrels"})
    read = {k: v for k, v in options.items() if k not in CALL_OPTIONS}
    checked = run_options(run, qrels, **read)
    check_output_names(checked.output_keys, [str(m) for m in parsed])
    return Call(
        tuple(parsed),
        checked,
        per_query=options.get("per_query", True),
        validate=options.get("validate", True),
        memory_limit=memory_bytes(options.get("memory_limit")),
    )


def check_needs(measures: Iterable[Measure], given: frozenset[str]) -> None:
    """Refuse, by name, a measure that needs a side input that is not ``given``.

    Examples
    --------
    >>> from polars_rankeval.measures import parse
    >>> check_needs([parse("Novelty@10")], frozenset({"qrels"}))
    Traceback (most recent call last):
    ...
    ValueError: Novelty@10 needs train= (the training interactions: user, item), which was ...
    """
    what = {
        "train": "train= (the training interactions: user, item)",
        "catalog": "catalog= (the ids of the items that could be recommended)",
        "item_features": "item_features= (item, feature columns; or item, feature, value)",
        "qrels": "the test interactions (qrels)",
    }
    for m in measures:
        for need in m.needs:
            if need not in given:
                msg = f"{m} needs {what[need]}, which was not given."
                raise ValueError(msg)


def check_per_ranking(measures: Iterable[Measure], *, lists: bool = True) -> None:
    """Refuse, by name, a measure of a whole catalogue (:func:`polars_rankeval.evaluate_catalog`
    scores those), and a measure of lists where the way in has none (``lists=False``)."""
    for m in measures:
        if m.of_catalog:
            msg = (
                f"{m} is a measure of a system's recommendations as a whole, not of each "
                f"ranking: score it with pr.evaluate_catalog(recs, [{str(m)!r}], ...)."
            )
            raise ValueError(msg)
        if m.of_lists and not lists:
            msg = (
                f"{m} is a measure of each recommendation list with its side inputs: "
                f"pr.evaluate scores it (a DataFrame or a LazyFrame), not this way in."
            )
            raise ValueError(msg)


OPTIONS = (
    frozenset(
        name
        for name, p in inspect.signature(run_options).parameters.items()
        if p.kind is p.KEYWORD_ONLY
    )
    | CALL_OPTIONS
)
"""Every keyword option of :func:`polars_rankeval.evaluate`."""
