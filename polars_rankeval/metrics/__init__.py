"""Metric expressions: each reduces one query's rows of a judged table.

Use them in ``judged.group_by("query").agg(...)`` over :func:`polars_rankeval.judge`'s
table. They give the values :func:`polars_rankeval.evaluate` gives for the measures of
the same name, which it computes otherwise: from the engine's judged shape, with
row-level columns and per-ranking sums (:mod:`polars_rankeval.engine`). The tests hold
the two to the same values.
"""

from polars_rankeval.metrics import (  # noqa: F401  (declare their measures)
    beyond,
    cooccurrence,
    exposure,
)
from polars_rankeval.metrics.ap import average_precision
from polars_rankeval.metrics.bpref import bpref, inferred_ap, num_nonrel_judged_ret
from polars_rankeval.metrics.classification import auroc, fall_out
from polars_rankeval.metrics.compat import compat
from polars_rankeval.metrics.cwl import bpm, insq, inst, nerr, sdcg
from polars_rankeval.metrics.err import err, rbp, rbp_residual
from polars_rankeval.metrics.gain import bin_g, g_measure, grade_gain, ndcg_rel, rndcg
from polars_rankeval.metrics.iprec import iprec_at_recall, iprec_average
from polars_rankeval.metrics.ndcg import dcg, discounted_cumulative_gain, ideal_dcg, ndcg
from polars_rankeval.metrics.precision import (
    f1,
    hits,
    num_q,
    num_rel,
    num_rel_ret,
    num_ret,
    precision,
    precision_judged_only,
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
    "bpm",
    "bpref",
    "compat",
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
    "insq",
    "inst",
    "iprec_at_recall",
    "iprec_average",
    "judged_at",
    "ndcg",
    "ndcg_rel",
    "nerr",
    "num_nonrel_judged_ret",
    "num_q",
    "num_rel",
    "num_rel_ret",
    "num_ret",
    "precision",
    "precision_judged_only",
    "r_precision",
    "rbp",
    "rbp_residual",
    "recall",
    "reciprocal_rank",
    "relative_precision",
    "rndcg",
    "rprec_mult",
    "sdcg",
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
