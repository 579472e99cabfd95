"""polars_rankeval: ranking evaluation as Polars expressions, exact to trec_eval.

>>> import polars_rankeval as pr
>>> str(pr.parse("map_cut_10"))
'AP@10'
"""

from polars_rankeval import curves, metrics, namespace  # namespace registers df.rankeval
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
from polars_rankeval.explain import explain
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
from polars_rankeval.ranking import judge, rank_run
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
    "align",
    "benjamini_hochberg",
    "benjamini_yekutieli",
    "bonferroni",
    "bootstrap_test",
    "click_metrics",
    "coec",
    "compare",
    "coverage",
    "ctr_by_position",
    "curves",
    "define_measure",
    "discriminative_power",
    "evaluate",
    "evaluate_diversity",
    "evaluate_judged",
    "explain",
    "fit_pbm",
    "holm",
    "interleave",
    "interleaving_outcomes",
    "interleaving_test",
    "judge",
    "mean_interval",
    "mean_scores",
    "metrics",
    "namespace",
    "off_policy",
    "paired_t_power",
    "paired_ttest",
    "parse",
    "parse_measures",
    "position_bias",
    "precision_recall_curve",
    "qrels_from_clicks",
    "randomization_test",
    "rank_correlation",
    "rank_run",
    "read_trec_qrels",
    "read_trec_run",
    "report",
    "reports",
    "scan_trec_qrels",
    "scan_trec_run",
    "summarize",
    "topic_set_size",
    "wilcoxon",
    "write_trec_run",
]
