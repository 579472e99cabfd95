"""Type aliases shared across the package."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Protocol, TypeAlias, TypeVar

import polars as pl

FrameT = TypeVar("FrameT", pl.DataFrame, pl.LazyFrame)
"""A Polars frame whose kind a function keeps: a DataFrame gives a DataFrame, a
LazyFrame a LazyFrame."""
PolarsFrame: TypeAlias = pl.DataFrame | pl.LazyFrame


class ArrowStreamExportable(Protocol):
    """An object with the Arrow PyCapsule stream interface: a pandas DataFrame, a pyarrow
    Table or RecordBatch, a DuckDB result, ... (a Polars DataFrame has it too)."""

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...


NestedDict: TypeAlias = Mapping[Any, Mapping[Any, Any]]
"""``{query: {doc: value}}``, as pytrec_eval and ranx take runs (scores) and qrels (grades)."""
IntoFrame: TypeAlias = pl.DataFrame | pl.LazyFrame | ArrowStreamExportable
"""What :func:`polars_rankeval.inputs.as_frame` takes: a Polars frame, or a foreign one
that becomes a DataFrame."""
IntoFrameOrDict: TypeAlias = IntoFrame | NestedDict
"""A run or qrels: a frame, or a nested dict (which becomes a DataFrame)."""
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
APNorm: TypeAlias = Literal["R", "min", "found", "k", "retrieved"]
"""The denominator of AP@k: |R| (trec_eval), min(k, |R|) (Spark), or the relevant
documents found in the top k (torchmetrics)."""
Rounding: TypeAlias = Literal["v9", "v10"]
"""How a recall level becomes a number of relevant documents: trec_eval 9.x's or 10.0's."""
Ties: TypeAlias = Literal["doc_desc", "input", "average"]
"""Equal scores: by doc id descending (trec_eval), in input order, or averaged (scikit-learn)."""
Empty: TypeAlias = Literal["zero", "one", "skip", "error"]
"""A query without a relevant document: its values, 1, left out, or an error (torchmetrics)."""
Judgments: TypeAlias = Literal["all", "retrieved"]
"""What a ranking is scored against: every qrels row of its query, or its retrieved ones."""
