"""``df.rankeval`` and ``lf.rankeval``: thin, typed forwards to the functions."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Generic

import polars as pl

from polars_rankeval._typing import FrameT, IntoFrameOrDict
from polars_rankeval.evaluate import evaluate
from polars_rankeval.measures import Measure
from polars_rankeval.ranking import judge


class _RankEval(Generic[FrameT]):
    def __init__(self, frame: FrameT) -> None:
        self._frame: FrameT = frame

    def evaluate(
        self,
        qrels: IntoFrameOrDict,
        measures: str | Measure | Iterable[str | Measure],
        **options: Any,
    ) -> FrameT:
        """Score this run against ``qrels``; see :func:`polars_rankeval.evaluate`."""
        return evaluate(self._frame, qrels, measures, **options)

    def judge(self, qrels: IntoFrameOrDict, **options: Any) -> FrameT:
        """Join this run with ``qrels``; see :func:`polars_rankeval.judge`."""
        return judge(self._frame, qrels, **options)


@pl.api.register_dataframe_namespace("rankeval")
class DataFrameRankEval(_RankEval[pl.DataFrame]):
    """``run_df.rankeval.evaluate(qrels, ["AP", "nDCG@10"])``."""


@pl.api.register_lazyframe_namespace("rankeval")
class LazyFrameRankEval(_RankEval[pl.LazyFrame]):
    """``run_lf.rankeval.evaluate(qrels, ["AP", "nDCG@10"])`` (lazy in, lazy out)."""
