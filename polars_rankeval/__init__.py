"""polars_rankeval: ranking evaluation as Polars expressions, exact to trec_eval.

>>> import polars_rankeval as pr
>>> str(pr.parse("map_cut_10"))
'AP@10'
"""

from polars_rankeval import metrics, namespace  # namespace registers df.rankeval
from polars_rankeval.evaluate import UnscoredQueriesWarning, coverage, evaluate, mean_scores
from polars_rankeval.measures import Measure, parse, parse_measures
from polars_rankeval.ranking import judge, rank_run

__version__ = "0.1.0"

__all__ = [
    "Measure",
    "UnscoredQueriesWarning",
    "coverage",
    "evaluate",
    "judge",
    "mean_scores",
    "metrics",
    "namespace",
    "parse",
    "parse_measures",
    "rank_run",
]

from polars_rankeval import curves
from polars_rankeval.curves import precision_recall_curve
from polars_rankeval.io import (
    read_trec_qrels,
    read_trec_run,
    scan_trec_qrels,
    scan_trec_run,
    write_trec_run,
)

__all__ += ["curves", "precision_recall_curve"]
__all__ += [
    "read_trec_qrels",
    "read_trec_run",
    "scan_trec_qrels",
    "scan_trec_run",
    "write_trec_run",
]
