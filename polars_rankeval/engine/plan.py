"""What the engine reads of a call: its options, the formulas' context, its measures.

The engine imports nothing from the API boundary (:mod:`polars_rankeval.evaluate`,
:mod:`polars_rankeval.options`, :mod:`polars_rankeval.inputs`) or from the catalogue
(:mod:`polars_rankeval.measures`, :mod:`polars_rankeval.catalogue`,
:mod:`polars_rankeval.metrics`). A call reaches it as an :class:`Options`, checked at
the boundary (:func:`polars_rankeval.options.run_options`), and measures as
:class:`Scored` objects: a formula over the engine's features
(:class:`~polars_rankeval.engine.features.Features`) and the few facts the stages need
(which judged rows it reads, whether it reads fractional grades or tie groups, whether
it is a count). :class:`polars_rankeval.measures.Measure` is one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import polars as pl

from polars_rankeval._typing import Duplicates, IntoExpr, Missing, Order, Rounding, Ties
from polars_rankeval.conventions import Conventions, get_conventions

if TYPE_CHECKING:
    from polars_rankeval.engine.features import Features


@dataclass(frozen=True)
class Context:
    """Column names and defaults a measure builds its expression against."""

    rank: IntoExpr = "rank"
    """The rank column (or an expression of it: a ``judged_only`` measure reads
    :func:`~polars_rankeval.catalogue.judged_rank`)."""
    relevance: str = "relevance"
    rel_level: int = 1
    n_rel: str | None = None
    iprec_rounding: Rounding = "v10"  # conventions' IPrec rounding (issue 13: trec_eval-10 default)


@dataclass(frozen=True)
class Options:
    """How a run is scored: its column names and evaluate's options."""

    query: str = "query"
    doc: str = "doc"
    score: str = "score"
    relevance: str = "relevance"
    rank: str = "rank"
    system: str | None = None
    """The run's system column when it has one (resolved against its schema)."""
    by: tuple[str, ...] = ()
    """Segment columns of the run (day, country, ...): with the system and the query,
    they identify a ranking."""
    query_parts: tuple[str, ...] = ()
    """The columns of a compound query id (``query=[...]``), joined into ``query``."""
    doc_parts: tuple[str, ...] = ()
    """The columns of a compound doc id (``doc=[...]``), joined into ``doc``."""
    rel_level: int = 1
    order: Order = "score"
    depth: int | None = None
    missing: Missing = "drop"
    duplicates: Duplicates = "error"
    conventions: Conventions = field(default_factory=get_conventions)
    """Which trec_eval release the values reproduce (see :mod:`polars_rankeval.conventions`)."""

    @property
    def keys(self) -> list[str]:
        """The columns that identify a ranking: ``[*by], [system], [*query parts], query``."""
        return [*self.by, *([self.system] if self.system else []), *self.query_parts, self.query]

    @property
    def output_keys(self) -> list[str]:
        """The key columns of the output: :attr:`keys` without a joined query id."""
        return self.keys[:-1] if self.query_parts else self.keys

    @property
    def value(self) -> str | None:
        """The column that orders a ranking (None for ``order="presorted"``)."""
        return {"score": self.score, "rank": self.rank}.get(self.order)

    @property
    def joined_ids(self) -> list[tuple[str, tuple[str, ...]]]:
        """(joined id column, its parts) of the compound ids, for
        :func:`polars_rankeval.inputs.with_joined_ids`."""
        return [(self.query, self.query_parts), (self.doc, self.doc_parts)]

    @property
    def run_columns(self) -> list[str]:
        """The run columns the engine reads."""
        return [*self.keys, self.doc, *self.doc_parts, *([self.value] if self.value else [])]

    @property
    def qrels_columns(self) -> list[str]:
        """The qrels columns the engine reads."""
        return [*self.query_parts, self.query, self.doc, *self.doc_parts, self.relevance]

    @property
    def single_precision(self) -> bool:
        """Scores are ordered as single-precision floats (trec_eval 9.x)."""
        return self.conventions.score_precision == "float32"

    @property
    def context(self) -> Context:
        """What the measure formulas read of the options."""
        return Context(rel_level=self.rel_level, iprec_rounding=self.conventions.iprec_rounding)


class Scored(Protocol):
    """A measure as the engine scores it: ``str()`` names its output column."""

    @property
    def summed(self) -> bool:
        """Whether its per-query values are summed over queries (a count): the
        conventions' ``empty_queries`` leaves them as they are."""
        ...

    @property
    def reads_ties(self) -> bool:
        """Whether it reads tie groups (averages over them, or orders them its own way):
        the rank stage then gives each row its tie group."""
        ...

    @property
    def tie_order(self) -> Ties | None:
        """The order of equal scores in the rankings it reads when it is not the
        conventions' (``"input"``: the run's row order), else None: the engine scores
        the measures of each such order in a pass of their own over the piece."""
        ...

    @property
    def judged_only(self) -> bool:
        """Whether it reads each ranking without its unjudged documents (``-J``): the
        engine scores such measures in a pass of their own over the piece."""
        ...

    @property
    def takes_fractional_grades(self) -> bool:
        """Whether it reads grades with a fraction (0.5, 2.7)."""
        ...

    def check_values(self, scored: pl.DataFrame) -> None:
        """Raise for per-ranking values it refuses (``scored``: the ranking keys and its
        column)."""
        ...

    def lowest_grade(self, ctx: Context) -> float:
        """The lowest grade of the judged rows it reads (-inf: all of them)."""
        ...

    def formula(self, features: Features) -> pl.Expr:
        """Its per-ranking value over the features, aliased to its output column."""
        ...


def lowest_grade(measures: Iterable[Scored], ctx: Context) -> float:
    """The lowest grade any of ``measures`` reads: the engine keeps the judged rows of
    that grade and up (-inf: every judged row).

    Examples
    --------
    >>> from polars_rankeval.measures import parse
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


def check_fractional_grades(
    qrels: pl.DataFrame, relevance: str, ids: Iterable[str], measures: Iterable[Scored]
) -> bool:
    """Whether the ``relevance`` column of ``qrels`` holds a grade with a fraction; an
    error naming the column and the first such row (by its ``ids``) when one of
    ``measures`` cannot read such grades (:attr:`Scored.takes_fractional_grades`).

    Examples
    --------
    >>> from polars_rankeval.measures import parse
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
    refused = [str(m) for m in measures if not m.takes_fractional_grades]
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


Pass = tuple[Ties | None, bool]
"""How a pass ranks the run: the order of equal scores (None: the conventions'), and
whether its unjudged documents are taken out (``judged_only``)."""


def by_pass(measures: Sequence[Scored], ties: Ties = "doc_desc", doubles: bool = True
            ) -> dict[Pass, list[Scored]]:  # fmt: skip
    """The measures grouped by the ranking they read: the order of equal scores
    (:attr:`Scored.tie_order`; None: the conventions', whose rule is ``ties``) and
    :attr:`Scored.judged_only`, the groups in the order they first come. Doc id
    descending is the conventions' order when their rule is that one and they compare
    scores as ``doubles`` (no pass of its own; the pass of an order of its own compares
    them as doubles, as the tools that order ties so do).

    Examples
    --------
    >>> from polars_rankeval.measures import parse
    >>> ms = [parse("AP"), parse("Judged(ties=doc_asc)@10"), parse("AP(judged_only=True)")]
    >>> list(by_pass(ms)), list(by_pass(ms, "input"))
    ([(None, False), (None, True)], [(None, False), ('doc_desc', False), (None, True)])
    """
    groups: dict[Pass, list[Scored]] = {}
    for m in measures:
        order = m.tie_order
        key = (None if order == "doc_desc" == ties and doubles else order, m.judged_only)
        groups.setdefault(key, []).append(m)
    return groups


def reads_ties(measures: Sequence[Scored]) -> bool:
    """Whether some measure reads tie groups (:attr:`Scored.reads_ties`)."""
    return any(m.reads_ties for m in measures)
