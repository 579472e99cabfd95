"""polars_rankeval: ranking evaluation as Polars expressions, exact to trec_eval.

>>> import polars_rankeval as pr
>>> str(pr.parse("map_cut_10"))
'AP@10'
"""

from polars_rankeval import curves, metrics, namespace  # namespace registers df.rankeval
from polars_rankeval.compare import align, compare, summarize
from polars_rankeval.curves import precision_recall_curve
from polars_rankeval.evaluate import (
    UnscoredQueriesWarning,
    coverage,
    evaluate,
    evaluate_judged,
    mean_scores,
)
from polars_rankeval.io import (
    read_trec_qrels,
    read_trec_run,
    scan_trec_qrels,
    scan_trec_run,
    write_trec_run,
)
from polars_rankeval.measures import Measure, parse, parse_measures
from polars_rankeval.ranking import judge, rank_run
from polars_rankeval.report import Report, report
from polars_rankeval.stats import (
    adjust_pvalues,
    bonferroni,
    bootstrap_test,
    holm,
    mean_interval,
    paired_ttest,
    randomization_test,
    wilcoxon,
)

__version__ = "0.1.0"

__all__ = [
    "Measure",
    "Report",
    "UnscoredQueriesWarning",
    "adjust_pvalues",
    "align",
    "bonferroni",
    "bootstrap_test",
    "compare",
    "coverage",
    "curves",
    "evaluate",
    "evaluate_judged",
    "holm",
    "judge",
    "mean_interval",
    "mean_scores",
    "metrics",
    "namespace",
    "paired_ttest",
    "parse",
    "parse_measures",
    "precision_recall_curve",
    "randomization_test",
    "rank_run",
    "read_trec_qrels",
    "read_trec_run",
    "report",
    "scan_trec_qrels",
    "scan_trec_run",
    "summarize",
    "wilcoxon",
    "write_trec_run",
]
