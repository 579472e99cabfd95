"""Metric expressions: each reduces one query's rows of a judged table.

Use them in ``judged.group_by("query").agg(...)``; :func:`polars_rankeval.evaluate`
does exactly that for measures given by name.
"""

from polars_rankeval.metrics.ap import average_precision
from polars_rankeval.metrics.ndcg import dcg, ideal_dcg, ndcg
from polars_rankeval.metrics.precision import (
    num_rel,
    num_rel_ret,
    num_ret,
    precision,
    r_precision,
    recall,
    success,
)
from polars_rankeval.metrics.rr import reciprocal_rank

__all__ = [
    "average_precision",
    "dcg",
    "ideal_dcg",
    "ndcg",
    "num_rel",
    "num_rel_ret",
    "num_ret",
    "precision",
    "r_precision",
    "recall",
    "reciprocal_rank",
    "success",
]
