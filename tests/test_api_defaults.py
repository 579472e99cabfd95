"""One default per parameter name across the public API (issue 37: ``rank_run``'s
``system=None`` against ``evaluate``'s ``"system"`` merged a multi-system run into one
ranking without a word). A parameter that several public functions take has the same
default in all of them, but for the exceptions listed here with the reason the name
means something else there; a new function, or a changed default, that differs fails
until it is made the same or listed."""

from __future__ import annotations

import inspect
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import replace
from types import ModuleType
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_rankeval as pr
import polars_rankeval.dask
import polars_rankeval.spark
from polars_rankeval.conventions import CONVENTIONS, get_conventions

OWN_CHOICES = {"method", "test", "measures", "aggregate", "params", "name"}
"""Parameters whose values are each function's own vocabulary (a fusion method, an
interleaving method, a test, a measure list): no default is shared."""

NO_CONVENTIONS = "no conventions to take it from: trec_eval's choice, 'drop'"
COMPARED = "systems compared: a query one system lacks is an error"
DIFFERENT: dict[str, dict[str, str]] = {
    "missing": {
        "pr.evaluate": "None: the conventions decide ('zero' for ranx and ir_measures)",
        "pr.judge": "None: the conventions decide, as evaluate",
        "pr.precision_recall_curve": "None: the conventions decide, as evaluate",
        "pr.coverage": NO_CONVENTIONS,
        "pr.evaluate_diversity": NO_CONVENTIONS,
    },
    "rel_level": {"pr.agreement": "no conventions to take it from: 1"},
    "depth": {
        "pr.make_pool": "the pool depth (TREC pools take the top 10 or more)",
        "pr.pool_coverage": "the pool depth, as make_pool",
        "pr.unjudged": "the depth looked at, as make_pool",
    },
    "k": {"pr.interleave": "None: the interleaved list as long as the method goes"},
    "score": {"pr.qrels_from_clicks": "which click statistic grades, not a column"},
    "correction": {"pr.wilcoxon": "scipy's continuity correction, a bool"},
    "interval": {"pr.report": "whether to print interval columns, a bool"},
    "level": {"pr.agreement": "Krippendorff's level of measurement, not a confidence"},
    "per_query": {
        "pr.evaluate": "its values are per query, for the statistics",
        "pr.precision_recall_curve": "a curve per query, as evaluate",
    },
}
"""Parameter -> {function: why its default differs from the others'}."""


def _functions(module: ModuleType, names: list[str], label: str) -> Iterator[tuple[str, Callable]]:
    for name in names:
        obj = getattr(module, name)
        if inspect.isfunction(obj):
            yield f"{label}.{name}", obj


def public_functions() -> dict[str, Callable[..., Any]]:
    """``pr.*`` (its ``__all__``) and the functions defined in the Dask and Spark modules."""
    found = dict(_functions(pr, list(pr.__all__), "pr"))
    for module, label in ((polars_rankeval.dask, "dask"), (polars_rankeval.spark, "spark")):
        own = [
            n
            for n in dir(module)
            if not n.startswith("_")
            and getattr(getattr(module, n), "__module__", None) == module.__name__
        ]
        found.update(_functions(module, own, label))
    return found


def defaults_by_parameter() -> dict[str, dict[str, Any]]:
    """Parameter name -> {function: its default}, for parameters with a default."""
    seen: dict[str, dict[str, Any]] = {}
    for label, function in public_functions().items():
        for parameter in inspect.signature(function).parameters.values():
            if parameter.default is not inspect.Parameter.empty:
                seen.setdefault(parameter.name, {})[label] = parameter.default
    return seen


def test_the_api_is_found() -> None:
    functions = public_functions()
    assert {"pr.evaluate", "pr.judge", "pr.rank_run", "dask.evaluate", "spark.evaluate"} <= set(
        functions
    )
    assert len(functions) > 50


def test_each_parameter_has_one_default_but_the_listed_exceptions() -> None:
    unexplained, stale = [], []
    for name, defaults in defaults_by_parameter().items():
        if name in OWN_CHOICES:
            continue
        common, _ = Counter(repr(d) for d in defaults.values()).most_common(1)[0]
        differ = {f for f, d in defaults.items() if repr(d) != common}
        listed = set(DIFFERENT.get(name, {}))
        unexplained += [f"{f}({name}={defaults[f]!r}; others {common})" for f in differ - listed]
        stale += [f"{f}({name})" for f in listed - differ]
    assert not unexplained, f"defaults that differ from the other functions': {unexplained}"
    assert not stale, f"listed as different but now the same (remove from DIFFERENT): {stale}"


def test_the_shared_defaults_users_rely_on() -> None:
    """The defaults that decide what is scored, as the docs state them."""
    defaults = defaults_by_parameter()
    assert set(defaults["system"].values()) == {"system"}
    assert set(defaults["seed"].values()) == {0}
    assert set(defaults["conventions"].values()) == {None}
    assert set(defaults["duplicates"].values()) == {"error"}


RUN = pl.DataFrame(
    {
        "query": ["q", "q", "q", "s", "s", "t"],
        "doc": ["a", "b", "c", "a", "y", "z"],
        "score": [3.0, 2.0, 1.0, 2.0, 1.0, 1.0],
    }
)
QRELS = pl.DataFrame(  # query r: judged, not in the run; t: no relevant document
    {
        "query": ["q", "q", "q", "r", "s", "t"],
        "doc": ["a", "b", "d", "x", "y", "z"],
        "relevance": [1, 2, 0, 1, 2, 0],
    }
)
GRADE_TWO = replace(get_conventions(None), rel_level=2)


ACROSS = ["AP", "P@2", "nDCG@2", "RR", "R@2", "Rprec", "Bpref", "infAP", "ERR@2", "Judged@2",
          "NumRel", "NumRet", "NumRelRet", "NumQ", "Success@1", "IPrec@0.5", "SetP",
          "AP(judged_only=true)", "P(judged_only=true)@2", "NumRel(judged_only=true)"]  # fmt: skip
"""Families of every kind: ranks, sets, counts (an absent query's NumRel), -J passes."""


def accepted(measures: list[str], conventions: object) -> list[str]:
    """The measures a preset scores (some refuse names their tool lacks, or a
    combination: LensKit's adaptive P@k has no -J form)."""
    kept = []
    for name in measures:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pr.evaluate(RUN, QRELS, [name], conventions=conventions)
        except ValueError:
            continue
        kept.append(name)
    return kept


@pytest.mark.parametrize(
    "conventions", [*CONVENTIONS, GRADE_TWO], ids=lambda c: c if isinstance(c, str) else "grade_two"
)
def test_judge_then_evaluate_judged_scores_what_evaluate_scores(conventions) -> None:
    """judge's ``missing`` and evaluate_judged's ``rel_level`` come from the conventions
    as evaluate's do, and evaluate_judged scores a ranking with no shown row as a query
    the run lacks: under ranx's or ir_measures' a query the run lacks is scored in both
    (0 on every measure under ir_measures', NumRel included), and conventions with
    another relevance level are read by both."""
    measures = accepted(ACROSS, conventions)
    assert len(measures) >= 6
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = pr.evaluate(RUN, QRELS, measures, conventions=conventions)
        table = pr.judge(RUN, QRELS, conventions=conventions)
        got = pr.evaluate_judged(table, measures, conventions=conventions)
    assert_frame_equal(got.sort("query"), expected.sort("query"))


def test_curves_read_the_conventions_relevance_level() -> None:
    """Only grade 2 is relevant under GRADE_TWO: q's relevant document is at rank 2."""
    levels = ["IPrec@0.0", "IPrec@0.5", "IPrec@1.0"]
    expected = pr.evaluate(RUN, QRELS, levels, conventions=GRADE_TWO).sort("query")
    curve = pr.precision_recall_curve(RUN, QRELS, points=3, conventions=GRADE_TWO)
    assert curve.filter(pl.col("query") == "q")["precision"].to_list() == [0.5, 0.5, 0.5]
    for query in ("q", "s"):
        got = curve.filter(pl.col("query") == query)["precision"].to_list()
        assert got == list(expected.filter(pl.col("query") == query).row(0)[1:])
    raw = pr.precision_recall_curve(RUN, QRELS, points=None, conventions=GRADE_TWO)
    assert raw.filter(pl.col("query") == "q").rows() == [("q", 1.0, 0.5)]


@pytest.mark.parametrize(
    ("conventions", "measure"),
    [("sklearn", "nDCG@2"), ("torchmetrics", "nDCG@2"), ("ir_measures", "RR@3")],
)
def test_judge_warns_where_equal_scores_are_a_measures_own(conventions: str, measure: str) -> None:
    """Under conventions with measures that average (their nDCG) or order (ir_measures'
    RR@k: doc id ascending) equal scores their own way, judge's table ranks equal scores
    one after the other in the conventions' order, so evaluate_judged reads that order:
    judge says so (evaluate's value differs), and says nothing on distinct scores,
    where both agree."""
    run = pl.DataFrame({"query": ["q"] * 3, "doc": ["a", "c", "b"], "score": [1.0, 1.0, 0.5]})
    qrels = pl.DataFrame({"query": ["q", "q"], "doc": ["c", "b"], "relevance": [1, 2]})
    for given in (run, run.lazy()):
        with pytest.warns(UserWarning, match=r"equal scores within a ranking \(1 rankings\)"):
            table = pr.judge(given, qrels, conventions=conventions)
            table = table.collect() if isinstance(table, pl.LazyFrame) else table
    own = pr.evaluate(run, qrels, [measure], conventions=conventions)
    ranked = pr.evaluate_judged(table, [measure], conventions=conventions)
    assert own.columns == ranked.columns and own.item(0, 1) != ranked.item(0, 1)
    distinct = run.with_columns(score=pl.Series([3.0, 2.0, 1.0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table = pr.judge(distinct, qrels, conventions=conventions)
        pr.judge(run, qrels)  # trec_eval's measures all order equal scores by doc id
        # the raw precision-recall points read the table's ranks, no measure's tie rule
        pr.precision_recall_curve(run, qrels, points=None, conventions=conventions)
        lazy = pr.precision_recall_curve(run.lazy(), qrels, points=None, conventions=conventions)
        lazy.collect()
    assert_frame_equal(
        pr.evaluate_judged(table, [measure], conventions=conventions),
        pr.evaluate(distinct, qrels, [measure], conventions=conventions),
    )
