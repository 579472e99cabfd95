"""Metric expressions: each reduces one query's rows of a judged table.

Use them in ``judged.group_by("query").agg(...)``; :func:`polars_rankeval.evaluate`
does exactly that for measures given by name.
"""

from polars_rankeval.metrics.ap import average_precision
from polars_rankeval.metrics.bpref import bpref, inferred_ap, num_nonrel_judged_ret
from polars_rankeval.metrics.classification import auroc, fall_out
from polars_rankeval.metrics.err import err, rbp, rbp_residual
from polars_rankeval.metrics.gain import bin_g, g_measure, grade_gain, ndcg_rel, rndcg
from polars_rankeval.metrics.iprec import iprec_at_recall, iprec_average
from polars_rankeval.metrics.ndcg import dcg, discounted_cumulative_gain, ideal_dcg, ndcg
from polars_rankeval.metrics.precision import (
    f1,
    hits,
    num_rel,
    num_rel_ret,
    num_ret,
    precision,
    r_precision,
    recall,
    relative_precision,
    rprec_mult,
    success,
)
from polars_rankeval.metrics.random import expected_ap, expected_precision
from polars_rankeval.metrics.rr import reciprocal_rank
from polars_rankeval.metrics.set import (
    set_ap,
    set_f,
    set_precision,
    set_recall,
    set_relative_precision,
    utility,
)
from polars_rankeval.metrics.trec_rbp import trec_rbp, trec_rbp_residual
from polars_rankeval.metrics.unjudged import judged_at, unjudged_at

__all__ = [
    "auroc",
    "average_precision",
    "bin_g",
    "bpref",
    "dcg",
    "discounted_cumulative_gain",
    "err",
    "expected_ap",
    "expected_precision",
    "f1",
    "fall_out",
    "g_measure",
    "grade_gain",
    "hits",
    "ideal_dcg",
    "inferred_ap",
    "iprec_at_recall",
    "iprec_average",
    "judged_at",
    "ndcg",
    "ndcg_rel",
    "num_nonrel_judged_ret",
    "num_rel",
    "num_rel_ret",
    "num_ret",
    "precision",
    "r_precision",
    "rbp",
    "rbp_residual",
    "recall",
    "reciprocal_rank",
    "relative_precision",
    "rndcg",
    "rprec_mult",
    "set_ap",
    "set_f",
    "set_precision",
    "set_recall",
    "set_relative_precision",
    "success",
    "trec_rbp",
    "trec_rbp_residual",
    "unjudged_at",
    "utility",
]
