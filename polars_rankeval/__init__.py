"""polars_rankeval: ranking evaluation as Polars expressions, exact to trec_eval.

>>> import polars_rankeval as pr
>>> str(pr.parse("map_cut_10"))
'AP@10'
"""

from polars_rankeval import curves, metrics, namespace  # namespace registers df.rankeval
from polars_rankeval.assessors import (
    agreement,
    confusion_matrix,
    merge_qrels,
    ranking_agreement,
    system_rankings,
)
from polars_rankeval.clicks import (
    PBMFit,
    coec,
    ctr_by_position,
    fit_pbm,
    position_bias,
    qrels_from_clicks,
)
from polars_rankeval.compare import align, compare, discriminative_power, summarize
from polars_rankeval.curves import precision_recall_curve
from polars_rankeval.declare import define_measure
from polars_rankeval.diversity import evaluate_diversity
from polars_rankeval.engine.outcome import UnscoredQueriesWarning
from polars_rankeval.evaluate import coverage, evaluate, evaluate_judged
from polars_rankeval.explain import cause_contributions, explain
from polars_rankeval.fusion import fuse, optimize_fusion
from polars_rankeval.interleaving import interleave, interleaving_outcomes, interleaving_test
from polars_rankeval.io import (
    read_trec_qrels,
    read_trec_run,
    scan_trec_qrels,
    scan_trec_run,
    write_trec_run,
)
from polars_rankeval.means import mean_scores
from polars_rankeval.measures import Measure, Param, parse, parse_measures
from polars_rankeval.off_policy import click_metrics, off_policy
from polars_rankeval.pools import make_pool, pool_coverage, unjudged, write_pool
from polars_rankeval.ranking import judge, rank_run
from polars_rankeval.recsys import evaluate_catalog
from polars_rankeval.report import Report, report, reports
from polars_rankeval.stats import (
    CORRECTIONS,
    TESTS,
    adjust_pvalues,
    benjamini_hochberg,
    benjamini_yekutieli,
    bonferroni,
    bootstrap_test,
    holm,
    mean_interval,
    paired_t_power,
    paired_ttest,
    randomization_test,
    rank_correlation,
    topic_set_size,
    wilcoxon,
)

__version__ = "0.1.0"

__all__ = [
    "CORRECTIONS",
    "TESTS",
    "Measure",
    "PBMFit",
    "Param",
    "Report",
    "UnscoredQueriesWarning",
    "adjust_pvalues",
    "agreement",
    "align",
    "benjamini_hochberg",
    "benjamini_yekutieli",
    "bonferroni",
    "bootstrap_test",
    "cause_contributions",
    "click_metrics",
    "coec",
    "compare",
    "confusion_matrix",
    "coverage",
    "ctr_by_position",
    "curves",
    "define_measure",
    "discriminative_power",
    "evaluate",
    "evaluate_catalog",
    "evaluate_diversity",
    "evaluate_judged",
    "explain",
    "fit_pbm",
    "fuse",
    "holm",
    "interleave",
    "interleaving_outcomes",
    "interleaving_test",
    "judge",
    "make_pool",
    "mean_interval",
    "mean_scores",
    "merge_qrels",
    "metrics",
    "namespace",
    "off_policy",
    "optimize_fusion",
    "paired_t_power",
    "paired_ttest",
    "parse",
    "parse_measures",
    "pool_coverage",
    "position_bias",
    "precision_recall_curve",
    "qrels_from_clicks",
    "randomization_test",
    "rank_correlation",
    "rank_run",
    "ranking_agreement",
    "read_trec_qrels",
    "read_trec_run",
    "report",
    "reports",
    "scan_trec_qrels",
    "scan_trec_run",
    "summarize",
    "system_rankings",
    "topic_set_size",
    "unjudged",
    "wilcoxon",
    "write_pool",
    "write_trec_run",
]
