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
