"""Features: the named columns measure formulas read, each computed once, only when asked for.

A measure's formula (``MeasureFamily.formula``) is written against a
:class:`Features` object: it asks for row-level columns (a hit, the hits so
far in the ranking, a gain), per-ranking aggregations of them (plain sums and
maxima: no cumulative sum or filter inside ``agg``, which would run group by
group), per-query facts from the judgments (|R|, the judged non-relevant
count, ideal DCG at k) and per-ranking numbers (documents retrieved), and
returns a per-ranking expression over those. Every feature is named after the
expression that defines it, so measures that share one (P@10, R@10 and
Success@10 share the hits in the top 10) compute it once.

:meth:`Features.evaluate` runs the whole set on a
:class:`~polars_rankeval.engine.shape.Judged` shape in vectorised steps:

1. per query: sums over its judgments (one ``group_by`` of rows sorted by
   query) and over its ideal rankings (one sort of the positive gains);
2. those facts joined to the rankings, and per-ranking columns;
3. row features (``with_columns``; cumulative sums within a ranking), then one
   ``group_by`` of the rows, sorted by ranking so that its groups are slices;
4. late per-ranking features, then one ``select`` of every measure's value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from polars_rankeval.engine.shape import (
    FACT,
    GRADE,
    IDEAL_GAIN,
    IDEAL_POS,
    N_REL,
    NRET,
    RANK,
    RANKING,
    Judged,
)
from polars_rankeval.metrics.gain import grade_gain

if TYPE_CHECKING:
    from polars_rankeval.measures import Context

_U32_LIMIT = 2**32
_AT = "__rk_at"


@dataclass(frozen=True)
class Ideal:
    """The ideal ranking of each query under one gain function: positive gains, descending."""

    key: str
    gain: pl.Expr
    """Gain of a judgment, an expression of ``GRADE``."""


@dataclass
class Built:
    """What :meth:`Features.evaluate` has built so far, for features computed by functions."""

    rows: pl.DataFrame
    """The judged retrieved rows, with the row features built so far."""
    per_ranking: pl.DataFrame
    """One row per ranking: ``RANKING, FACT, NRET, ...`` and the per-ranking features."""
    ideals: dict[str, pl.DataFrame]
    """Per gain function: ``FACT, IDEAL_GAIN, IDEAL_POS`` and cumulative columns."""


RowFunction = Callable[[Built], pl.Series]


class Features:
    """The features a set of measure formulas read, and how to compute them.

    Formulas call the methods below; each returns an expression naming a
    column that :meth:`evaluate` computes. Row-level expressions read ``RANK``
    (:attr:`rank`) and ``GRADE`` (:attr:`grade`) of the judged retrieved rows;
    per-ranking expressions read :meth:`sum`, :meth:`max`, :meth:`nrel`,
    :attr:`nret` and the other per-ranking features.
    """

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._names: dict[str, str] = {}
        self._judgment_aggs: dict[str, pl.Expr] = {}
        self._ideals: dict[str, Ideal] = {}
        self._ideal_sums: dict[str, tuple[str, pl.Expr]] = {}
        self._ideal_cols: dict[str, tuple[str, pl.Expr]] = {}
        self._ranking_cols: dict[str, pl.Expr] = {}
        self._row_cols: dict[str, pl.Expr | RowFunction] = {}
        self._row_sums: dict[str, pl.Expr] = {}
        self._row_maxes: dict[str, pl.Expr] = {}
        self._late: dict[str, RowFunction] = {}

    def _name(self, kind: str, key: str) -> str:
        """A short column name for a feature, the same for the same defining key."""
        full = f"{kind}:{key}"
        if full not in self._names:
            self._names[full] = f"__rk_{kind}{len(self._names)}"
        return self._names[full]

    # ------------------------------------------------------------------ rows

    @property
    def rank(self) -> pl.Expr:
        """The rank of a judged retrieved row, as Float64."""
        return pl.col(RANK).cast(pl.Float64)

    @property
    def grade(self) -> pl.Expr:
        """The qrels grade of a judged retrieved row (Int64)."""
        return pl.col(GRADE)

    @staticmethod
    def hit(rel_level: int) -> pl.Expr:
        """Row is relevant: grade >= ``rel_level``."""
        return pl.col(GRADE) >= rel_level

    @staticmethod
    def judged_nonrelevant(rel_level: int) -> pl.Expr:
        """Row is judged non-relevant: 0 <= grade < ``rel_level`` (negative grades are unjudged)."""
        return (pl.col(GRADE) >= 0) & (pl.col(GRADE) < rel_level)

    @staticmethod
    def in_top(k: float | None) -> pl.Expr:
        """Row is retrieved at rank <= k (every row when k is None or beyond any rank)."""
        if k is None or k >= _U32_LIMIT:
            return pl.lit(True)
        return pl.col(RANK) <= int(k)

    def row(self, expr: pl.Expr) -> pl.Expr:
        """A row-level column computed once (for expressions read several times)."""
        name = self._name("r", str(expr))
        self._row_cols.setdefault(name, expr)
        return pl.col(name)

    def cum(self, expr: pl.Expr) -> pl.Expr:
        """Cumulative sum of a row expression within each ranking, in rank order (inclusive)."""
        name = self._name("c", str(expr))
        self._row_cols.setdefault(name, expr.cum_sum().over(RANKING))
        return pl.col(name)

    def on_rows(self, per_ranking: pl.Expr) -> pl.Expr:
        """A per-ranking expression, broadcast to each row of the ranking."""
        is_column = per_ranking.meta.is_column()
        source = per_ranking.meta.output_name() if is_column else self._ranking(per_ranking)

        def broadcast(built: Built) -> pl.Series:
            return built.per_ranking[source].gather(built.rows[RANKING])

        return self.row_function(f"broadcast|{source}", broadcast)

    def row_function(self, key: str, fn: RowFunction) -> pl.Expr:
        """A row-level column computed by ``fn`` from what is built so far."""
        name = self._name("f", key)
        self._row_cols.setdefault(name, fn)
        return pl.col(name)

    # ------------------------------------------------------------------ per ranking

    def hits(self, rel_level: int, k: float | None = None) -> pl.Expr:
        """Relevant documents retrieved at rank <= k (all retrieved when k is None)."""
        return self.sum((self.hit(rel_level) & self.in_top(k)).cast(pl.Float64))

    def hits_so_far(self, rel_level: int) -> pl.Expr:
        """Row-level: relevant documents at this row's rank or above."""
        return self.cum(self.hit(rel_level).cast(pl.Float64))

    def sum(self, expr: pl.Expr) -> pl.Expr:
        """Sum of a row expression over the ranking's judged retrieved rows (0 when none)."""
        name = self._name("s", str(expr))
        self._row_sums.setdefault(name, expr)
        return pl.col(name)

    def max(self, expr: pl.Expr) -> pl.Expr:
        """Maximum of a row expression over the ranking's judged retrieved rows (null when none)."""
        name = self._name("m", str(expr))
        self._row_maxes.setdefault(name, expr)
        return pl.col(name)

    @property
    def nret(self) -> pl.Expr:
        """Documents retrieved (after the depth cut), Float64."""
        return pl.col(NRET).cast(pl.Float64)

    def judgments(self, aggregation: pl.Expr) -> pl.Expr:
        """An aggregation of ``GRADE`` over the query's judgments (its qrels rows); 0 for a
        ranking whose query has none."""
        name = self._name("j", str(aggregation))
        self._judgment_aggs.setdefault(name, aggregation)
        return pl.col(name)

    def judgments_sum(self, expr: pl.Expr) -> pl.Expr:
        """Sum of an expression of ``GRADE`` over the query's judgments (its qrels rows)."""
        return self.judgments(expr.sum())

    def nrel(self, rel_level: int) -> pl.Expr:
        """|R|: the query's relevant judgments, retrieved or not (or the given ``n_rel``)."""
        count = self.judgments_sum((pl.col(GRADE) >= rel_level).cast(pl.Float64))
        return pl.coalesce(pl.col(N_REL).cast(pl.Float64), count)

    def nnonrel(self, rel_level: int) -> pl.Expr:
        """|N|: the query's judged non-relevant documents (0 <= grade < rel_level)."""
        return self.judgments_sum(self.judged_nonrelevant(rel_level).cast(pl.Float64))

    def ranking(self, expr: pl.Expr) -> pl.Expr:
        """A per-ranking column computed once, from the facts, before the row features."""
        return pl.col(self._ranking(expr))

    def _ranking(self, expr: pl.Expr) -> str:
        name = self._name("k", str(expr))
        self._ranking_cols.setdefault(name, expr)
        return name

    def late(self, key: str, fn: RowFunction) -> pl.Expr:
        """A per-ranking column computed by ``fn`` after the rows are aggregated."""
        name = self._name("l", key)
        self._late.setdefault(name, fn)
        return pl.col(name)

    # ------------------------------------------------------------------ ideal rankings

    def ideal(
        self, gains: Mapping[int, float] | None = None, *, exponential: bool = False
    ) -> Ideal:
        """The ideal ranking of each query for a gain function (see
        :func:`polars_rankeval.metrics.gain.grade_gain`)."""
        gain = grade_gain(pl.col(GRADE), gains, exponential=exponential)
        return self._ideals.setdefault(str(gain), Ideal(str(gain), gain))

    ideal_position = pl.col(IDEAL_POS)
    """Position (1, 2, ...) in the ideal ranking, for :meth:`ideal_sum` terms."""
    ideal_gain = pl.col(IDEAL_GAIN)
    """Gain at a position of the ideal ranking, for :meth:`ideal_sum` terms."""

    def ideal_sum(self, ideal: Ideal, term: pl.Expr) -> pl.Expr:
        """Per ranking: the sum over its query's ideal positions of ``term``, an expression
        of :attr:`ideal_position` and :attr:`ideal_gain` (0 when the query has none)."""
        name = self._name("i", f"{ideal.key}|{term}")
        self._ideal_sums.setdefault(name, (ideal.key, term))
        return pl.col(name)

    def ideal_column(self, ideal: Ideal, expr: pl.Expr) -> pl.Expr:
        """A column of the ideal table (one row per ideal position of each query), computed
        once; ``expr`` may use ``.over(FACT)`` for a query's positions."""
        name = self._name("q", f"{ideal.key}|{expr}")
        self._ideal_cols.setdefault(name, (ideal.key, expr))
        return pl.col(name)

    def ideal_length(self, ideal: Ideal) -> pl.Expr:
        """Per ranking: the number of positive gains of its query (its ideal ranking's length)."""
        return self.ideal_sum(ideal, self.ideal_gain.is_not_null().cast(pl.Float64))

    def ideal_prefix(self, ideal: Ideal, term: pl.Expr, position: pl.Expr) -> pl.Expr:
        """Row-level: the sum of ``term`` over ideal positions 1 .. min(``position``, length).

        ``term`` is an expression of :attr:`ideal_position` and :attr:`ideal_gain`;
        ``position`` a row expression (usually the rank).
        """
        cumulative = self.ideal_column(ideal, term.cum_sum().over(FACT)).meta.output_name()
        length = self.ideal_length(ideal)
        start = self.on_rows(pl.col(self._start_name(ideal))).meta.output_name()
        steps = self.row(pl.min_horizontal(position.cast(pl.Float64), self.on_rows(length)))

        def prefix(built: Built) -> pl.Series:
            values = built.ideals[ideal.key][cumulative].to_numpy()
            n = built.rows[steps.meta.output_name()].to_numpy().astype(np.int64)
            at = built.rows[start].to_numpy().astype(np.int64) + n - 1
            picked = values[np.clip(at, 0, len(values) - 1)] if len(values) else 0.0
            return pl.Series(np.where(n > 0, picked, 0.0), dtype=pl.Float64)

        return self.row_function(f"prefix|{cumulative}|{position}", prefix)

    def _start_name(self, ideal: Ideal) -> str:
        """The per-ranking column: where its query's positions start in the ideal table."""
        return self._name("t", ideal.key)

    # ------------------------------------------------------------------ evaluation

    def evaluate(self, shape: Judged, values: dict[str, pl.Expr]) -> pl.DataFrame:
        """Every value expression, one row per ranking of ``shape``, in ranking order."""
        ideals = self._ideal_tables(shape.judgments)
        per_ranking = self._with_facts(shape, ideals).with_columns(**self._ranking_cols)
        built = Built(shape.rows, per_ranking, ideals)
        built.rows = self._row_features(built)
        built.per_ranking = self._aggregate_rows(built)
        for name, fn in self._late.items():
            built.per_ranking = built.per_ranking.with_columns(fn(built).alias(name))
        return built.per_ranking.select(**values)

    def _ideal_tables(self, judgments: pl.DataFrame) -> dict[str, pl.DataFrame]:
        """Per gain function: each query's positive gains sorted descending, with positions."""
        tables = {}
        for key, ideal in self._ideals.items():
            table = (
                judgments.select(FACT, ideal.gain.alias(IDEAL_GAIN))
                .filter(pl.col(IDEAL_GAIN) > 0)
                .sort([FACT, IDEAL_GAIN], descending=[False, True])
                .with_columns(pl.col(FACT).set_sorted())
            )
            table = table.with_row_index(_AT)
            position = pl.col(_AT) - pl.col(_AT).first().over(FACT) + 1
            table = table.with_columns(position.cast(pl.Float64).alias(IDEAL_POS)).drop(_AT)
            for name, (of, expr) in self._ideal_cols.items():
                if of == key:
                    table = table.with_columns(expr.alias(name))
            tables[key] = table
        return tables

    def _with_facts(self, shape: Judged, ideals: dict[str, pl.DataFrame]) -> pl.DataFrame:
        """The rankings joined with every per-query fact (0 for a query without any)."""
        rankings = shape.rankings
        if N_REL not in rankings.columns:
            rankings = rankings.with_columns(pl.lit(None, pl.Float64).alias(N_REL))
        judgments = shape.judgments.with_columns(pl.col(FACT).set_sorted())
        per_fact = []
        if self._judgment_aggs:
            aggs = [e.alias(n) for n, e in self._judgment_aggs.items()]
            per_fact.append(judgments.group_by(FACT).agg(aggs))
        for key, table in ideals.items():
            sums = [e.sum().alias(n) for n, (k, e) in self._ideal_sums.items() if k == key]
            start = pl.col(_AT).first().cast(pl.Int64).alias(self._start_name(self._ideals[key]))
            per_fact.append(table.with_row_index(_AT).group_by(FACT).agg(*sums, start))
        for facts in per_fact:
            rankings = rankings.join(facts, on=FACT, how="left", maintain_order="left")
        filled = [c for c in rankings.columns if c.startswith(("__rk_j", "__rk_i", "__rk_t"))]
        return rankings.with_columns(pl.col(filled).fill_null(0))

    def _row_features(self, built: Built) -> pl.DataFrame:
        """The row-level columns, in the order asked for (each after what it reads)."""
        rows = built.rows
        batch: dict[str, pl.Expr] = {}
        for name, feature in self._row_cols.items():
            if isinstance(feature, pl.Expr):
                if set(feature.meta.root_names()) & set(batch):
                    rows, batch = rows.with_columns(**batch), {}
                batch[name] = feature
                continue
            if batch:
                rows, batch = rows.with_columns(**batch), {}
            built.rows = rows
            rows = rows.with_columns(feature(built).alias(name))
        return rows.with_columns(**batch) if batch else rows

    def _aggregate_rows(self, built: Built) -> pl.DataFrame:
        """Per ranking: every requested sum (0 when no row) and maximum (null when none)."""
        if not self._row_sums and not self._row_maxes:
            return built.per_ranking
        aggs = [e.sum().alias(n) for n, e in self._row_sums.items()]
        aggs += [e.max().alias(n) for n, e in self._row_maxes.items()]
        by_ranking = built.rows.with_columns(pl.col(RANKING).set_sorted()).group_by(RANKING)
        joined = built.per_ranking.join(
            by_ranking.agg(aggs), on=RANKING, how="left", maintain_order="left"
        )
        return joined.with_columns(pl.col(list(self._row_sums)).fill_null(0))
