"""Type aliases shared across the package."""

from __future__ import annotations

from typing import Literal, TypeAlias

import polars as pl

FrameT: TypeAlias = pl.DataFrame | pl.LazyFrame
IntoExpr: TypeAlias = str | pl.Expr
"""Accepts expression input. Strings are parsed as column names."""

Order: TypeAlias = Literal["score", "rank", "presorted"]
Missing: TypeAlias = Literal["drop", "zero", "error"]
Duplicates: TypeAlias = Literal["error", "keep_best"]
AggregateMode: TypeAlias = Literal["trec", "mean"]
"""How measures combine over queries: as trec_eval's ``all`` line, or always the mean."""
Aggregate: TypeAlias = Literal["mean", "gmean", "sum"]
"""How one measure combines over queries."""
Norm: TypeAlias = Literal["R", "min"]
"""The denominator of AP@k and R@k: |R|, or min(k, |R|)."""
Rounding: TypeAlias = Literal["v9", "v10"]
"""How a recall level becomes a number of relevant documents: trec_eval 9.x's or 10.0's."""
