"""Conventions: which tool's numbers the values reproduce, as data.

trec_eval is the reference, in two releases that differ in small ways, and
other tools (ranx, ir_measures, scikit-learn, torchmetrics, Spark's
``RankingMetrics``) make other choices for "the same" measure. Each
:class:`Conventions` value lists, as data, every choice that makes a value
differ; :func:`polars_rankeval.evaluate`, :func:`polars_rankeval.explain` and the
command line (``--conventions``) read them from here. No preset is a code path:
each is one declaration in :data:`CONVENTIONS`, and :func:`conventions_table`
renders them side by side (docs/conventions.md shows that table).

Between the two trec_eval releases:

==================================  ========================  =========================
choice                              ``"trec_eval-10"``        ``"trec_eval-9"``
                                    (default)                 (pytrec_eval, ir_measures)
==================================  ========================  =========================
scores compared as                  doubles (float64)         single-precision floats:
                                                              equal in float32 -> tie,
                                                              the doc id decides
IPrec@r, 11pt_avg: relevant docs   ``lround(r * |R|)``       ``(long)(r * |R| + 0.9)``
all_trec                            + rbp, rbp_resid, unj     without them
``-c -q``: qrels queries the run    printed, every measure    not printed (still in the
lacks                               0 but num_rel             ``all`` lines as zeros)
``-c``: ``num_rel`` on ``all``      qrels rows with grade>0   the same
                                    (``-l`` ignored)
qrels query with no run lines,      left out (10.0 itself     left out
no ``-c``                           exits 4: not copied)
==================================  ========================  =========================

Both read ``#`` comment lines, run-file fields after the sixth and a run
from standard input (``-``), which only 10.0 itself does: inputs, not scores.

pytrec_eval (``pytrec-eval-terrier``) wraps trec_eval 9.x: pass
``conventions="trec_eval-9"`` to reproduce its numbers bit for bit;
``conventions="ir_measures"`` adds ir_measures' zeros for the qrels queries a
run lacks.

Examples
--------
>>> get_conventions("trec_eval-9").score_precision
'float32'
>>> get_conventions().name
'trec_eval-10'
>>> get_conventions("ranx").ties, get_conventions("sklearn").judgments
('input', 'retrieved')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Literal, overload

from polars_rankeval import trec_names
from polars_rankeval._typing import Empty, Judgments, Missing, Rounding, Ties
from polars_rankeval.validation import check_choice

ConventionsName = Literal[
    "trec_eval-10",
    "trec_eval-9",
    "ranx",
    "ir_measures",
    "sklearn",
    "torchmetrics",
    "spark",
    "rectools",
    "recbole",
    "lenskit",
    "recommenders",
]


def _params(**families: Mapping[str, Any]) -> Mapping[str, Mapping[str, Any]]:
    """A read-only ``{family: {parameter: value}}`` map (see :attr:`Conventions.measure_params`)."""
    return MappingProxyType({k: MappingProxyType(dict(v)) for k, v in families.items()})


@dataclass(frozen=True)
class Conventions:
    """Every choice that makes one tool's value of a measure differ from another's."""

    name: str
    version: str
    """The release of the tool whose values these conventions reproduce."""
    score_precision: Literal["float64", "float32"]
    """How run scores are compared when ordering a ranking. trec_eval 9.x reads
    scores into C ``float`` (single precision), so scores equal after rounding to
    float32 tie and the doc id breaks the tie; 10.0 keeps doubles."""
    iprec_rounding: Rounding
    """How many relevant documents a recall level r stands for in ``IPrec`` and
    ``IPrecAvg`` (trec_eval ``iprec_at_recall``, ``11pt_avg``): 9.x truncates
    ``r * |R| + 0.9``, 10.0 rounds ``r * |R|`` to the nearest integer."""
    measure_order: tuple[str, ...]
    """trec_eval's measure list: the order of its output lines."""
    nicknames: Mapping[str, tuple[str, ...]] = field(repr=False)
    """``-m`` nicknames (``all_trec``, ``official``, ...) and what they stand for."""
    complete_prints_absent: bool
    """Whether ``-c -q`` prints per-query lines for the qrels queries the run lacks."""
    complete_num_rel: Literal["positive_grades"] = "positive_grades"
    """``-c``: the ``all`` line of num_rel counts every qrels row with grade > 0,
    whatever ``-l`` says (trec_eval's ``te_calc_avg_num_rel``)."""
    absent_without_complete: Literal["drop"] = "drop"
    """A qrels query with no run lines, without ``-c``: left out of the scores.
    trec_eval 10.0 stops with status 4 there; 9.x leaves the query out."""
    tool: str = "trec_eval"
    """The tool (and the API) whose per-query values these conventions reproduce."""
    ties: Ties = "doc_desc"
    """Equal scores: ``"doc_desc"`` orders them by doc id descending compared as strings
    (trec_eval's ``comp_sim_docno``), ``"input"`` keeps the run's row order (the first
    row first), ``"average"`` averages the gains of a tie group over its positions in
    the measures that have a ``ties`` parameter (nDCG: scikit-learn's
    ``ignore_ties=False``) and keeps the row order for the others."""
    absent_queries: Missing = "drop"
    """A qrels query the run lacks: ``"drop"`` (left out), ``"zero"`` (scored as an empty
    ranking, trec_eval ``-c``) or ``"error"``; :func:`polars_rankeval.evaluate`'s
    ``missing`` when it is not given."""
    absent_values: Literal["empty_ranking", "zero"] = "empty_ranking"
    """What a qrels query the run lacks scores when it is scored (``absent_queries`` or
    ``missing`` ``"zero"``): ``"empty_ranking"``, each measure's value on an empty
    ranking (trec_eval ``-c``: NumRel counts its relevant documents, NumQ is 1), or
    ``"zero"``, 0 on every measure (ir_measures' DEFAULT)."""
    empty_queries: Empty = "zero"
    """A scored query without a relevant document (among the judgments read, see
    :attr:`judgments`): ``"zero"`` (each measure's own value, 0 for AP, RR, nDCG, ...),
    ``"one"`` (1), ``"skip"`` (left out of the output) or ``"error"`` (raise), as
    torchmetrics' ``empty_target_action`` neg / pos / skip / error. Counts (``NumRet``,
    ``NumRel``, ...) keep their value."""
    judgments: Judgments = "all"
    """The judgments a ranking is scored against: ``"all"`` the query's qrels rows,
    retrieved or not (|R| and the ideal ranking count a relevant document the run
    missed), ``"retrieved"`` only the documents the ranking retrieved (scikit-learn
    and torchmetrics see nothing else: their ideal DCG and their |R| are over the
    retrieved documents)."""
    rel_level: int = 1
    """The lowest grade that is relevant, when :func:`polars_rankeval.evaluate`'s
    ``rel_level`` is not given."""
    measure_params: Mapping[str, Mapping[str, Any]] = field(default_factory=_params)
    """Parameters given to every measure of a family that does not set them itself,
    ``{family: {parameter: value}}``: the tool's formula variant, named in the output
    column (``nDCG(gain=exp)@10`` under ``"spark"``). A key ``"family@"`` gives them
    to the family's measures with a cutoff only (under ``"ir_measures"``, ``RR@k``
    comes from another provider than ``RR``)."""
    names: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """The tool's meaning of names another dialect reads otherwise, ``{name: canonical
    text}``: under ``"ranx"``, ``precision`` without a cutoff is over the whole ranking
    (``SetP``), not trec_eval's ``P`` that needs one, and ``recall`` is ``R`` over the
    whole ranking, not trec_eval's nine cutoffs. The parser reads them first, ranx's
    ``-lN`` forms included (``precision-l2`` is ``SetP(rel=2)``). A key ``"name@"``
    reads the name with a cutoff (under ``"recommenders"``, ``map_at_k@10`` is
    ``AP(norm=min)@10``)."""
    refused_names: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """The tool's names whose measure these conventions do not reproduce, ``{name:
    why}``: the parser refuses them rather than give another tool's value."""
    notes: tuple[str, ...] = ()
    """What the tool does that these conventions do not reproduce (its own bugs)."""

    @property
    def all_trec(self) -> tuple[str, ...]:
        """The measures of ``-m all_trec``."""
        return self.nicknames["all_trec"]

    @overload
    def option(self, name: Literal["missing"], given: Missing | None) -> Missing: ...
    @overload
    def option(self, name: Literal["rel_level"], given: int | None) -> int: ...
    @overload
    def option(self, name: Literal["empty_queries"], given: Empty | None) -> Empty: ...
    def option(self, name: str, given: Any) -> Any:
        """An option as given, or these conventions' choice of it when it is None
        (``missing``: :attr:`absent_queries`; ``rel_level``; ``empty_queries``).

        Examples
        --------
        >>> ranx = CONVENTIONS["ranx"]
        >>> ranx.option("missing", None), ranx.option("missing", "drop")
        ('zero', 'drop')
        """
        if given is not None:
            return given
        return getattr(self, "absent_queries" if name == "missing" else name)

    @property
    def order_ties(self) -> Literal["doc_desc", "input"]:
        """The order of equal scores in the ranking (``"average"`` keeps the row order)."""
        return "doc_desc" if self.ties == "doc_desc" else "input"


CHOICES: tuple[str, ...] = (
    "ties",
    "score_precision",
    "judgments",
    "absent_queries",
    "absent_values",
    "empty_queries",
    "rel_level",
    "iprec_rounding",
    "measure_params",
)
"""The fields of :class:`Conventions` that change a value (the others name the tool or
shape trec_eval's printed lines): what :func:`polars_rankeval.explain` switches one at a
time, and the rows of :func:`conventions_table`."""

_TREC_10 = Conventions(
    name="trec_eval-10",
    version="10.0",
    score_precision="float64",
    iprec_rounding="v10",
    measure_order=trec_names.ORDER_10,
    nicknames=trec_names.NICKNAMES_10,
    complete_prints_absent=True,
    tool="trec_eval 10.0",
)
_TREC_9 = Conventions(
    name="trec_eval-9",
    version="9.0.8",
    score_precision="float32",
    iprec_rounding="v9",
    measure_order=trec_names.ORDER_9,
    nicknames=trec_names.NICKNAMES_9,
    complete_prints_absent=False,
    tool="trec_eval 9.x, pytrec_eval",
)
CWL_EVAL_FAMILIES = ("SDCG", "NERR8", "NERR9", "NERR10", "NERR11", "BPM", "INSQ", "INST")
"""The families ir_measures' default pipeline takes from cwl_eval, which ranks equal
scores in the run's row order."""

_TOOLS: dict[str, dict[str, Any]] = {
    "ranx": dict(
        version="0.3.21",
        tool="ranx 0.3.21: evaluate(..., make_comparable=True)",
        ties="input",
        absent_queries="zero",
        names=MappingProxyType({"precision": "SetP", "recall": "R"}),
        refused_names=MappingProxyType(
            {
                "bpref": "ranx's bpref is not trec_eval's (it counts negative grades as "
                "judged non-relevant and gives 0 to some queries trec_eval scores), and "
                "conventions='ranx' does not reproduce it; ask for trec_eval's Bpref under "
                "conventions='trec_eval-10'."
            }
        ),
        notes=(
            "ranx sorts a ranking with numba's np.argsort (a quicksort): equal scores keep "
            "the input order in rankings of up to 15 documents, an unspecified order beyond.",
            "ranx compares doc ids by a 64-bit hash held as a float64.",
        ),
    ),
    "ir_measures": dict(
        base=_TREC_9,
        version="0.4.3",
        tool="ir_measures 0.4.3 (pytrec_eval provider)",
        absent_queries="zero",
        absent_values="zero",
        # ERR comes from gdeval, whose stopping probabilities divide by 2^4 ($MAX_JUDGMENT)
        # ERR comes from gdeval; Judged from its judged provider and RR@k from msmarco,
        # both ordering equal scores by doc id ascending
        measure_params=_params(
            ERR={"max_grade": 4},
            Judged={"ties": "doc_asc", "negative": "judged"},
            # the compat provider: equal scores by doc id ascending, its ideal by score
            Compat={"ties": "doc_asc"},
            **{"RR@": {"ties": "doc_asc"}},
            # cwl_eval keeps equal scores in the run's row order
            **{name: {"ties": "input"} for name in CWL_EVAL_FAMILIES},
            # RBP from cwl_eval too (no other provider before it has it); Accuracy
            # (AUROC here) from the accuracy provider, a stable sort by score
            RBP={"ties": "input"},
            AUROC={"ties": "input"},
        ),
        notes=(
            "ir_measures gives a qrels query the run lacks each measure's DEFAULT (0), "
            "NumRel and NumQ included, where trec_eval -c counts its relevant documents "
            "and the query (absent_values=zero).",
            "Measures pytrec_eval lacks come from other providers, each reproduced with its "
            "provider's rule: ERR@k from gdeval (grades scaled by a fixed highest grade of "
            "4: ERR(max_grade=4)), Judged@k from its judged provider and RR@k from msmarco "
            "(equal scores by doc id ascending: ties=doc_asc; Judged counts a negative "
            "grade as judged: negative=judged), ranked in a pass of their own with the scores "
            "compared as doubles, as those providers compare them (pytrec_eval's measures "
            "read them as floats). cwl_eval's measures "
            "(SDCG, NERR8-11, BPM, INSQ, INST) keep equal scores in the run's row order "
            "(ties=input: scored in a ranking pass of their own); so does its RBP "
            "(RBP(ties=input): the first 1,000 ranks, weighted to sum to 1 over them). "
            "Accuracy@k, from the "
            "accuracy provider, is AUROC(no_pairs=skip)@k over a stable sort by score (a "
            "query without a relevant and a non-relevant document in the top k left out; "
            "the provider fails on one whose top k is all relevant). Compat comes from the "
            "compat provider: equal scores by doc id ascending, and the documents of one "
            "grade in its ideal ranking by the run's score (an unretrieved one scoring 0), "
            "then in the qrels' row order (Compat(ties=doc_asc)).",
        ),
    ),
    "sklearn": dict(
        version="1.9.1",
        tool="scikit-learn 1.9: ndcg_score per query",
        ties="average",
        judgments="retrieved",
        notes=(
            "ndcg_score sees only the documents passed to it: a run query without qrels "
            "would score 0 there, here it is left out.",
            "ndcg_score refuses negative gains; here negative grades have no gain.",
            "ndcg_score refuses a query of one document; here it is scored.",
        ),
    ),
    "torchmetrics": dict(
        version="1.9.0",
        tool="torchmetrics 1.9: Retrieval* metrics",
        score_precision="float32",
        ties="average",
        judgments="retrieved",
        measure_params=_params(AP={"norm": "found"}),
        notes=(
            "torch.topk orders equal scores in no documented order (AP, RR, P@k); here "
            "the input order.",
            "preds are float32 tensors by default, so scores compare as float32; for "
            "float64 preds set score_precision='float64' (dataclasses.replace).",
            "Its AP, P@k, R@k and RR count a relevant document only when its score is "
            "above 0; here the score only orders the ranking.",
            "A run query without qrels would be an empty query there (0 by default); "
            "here it is left out.",
        ),
    ),
    "spark": dict(
        version="4.3",
        tool="PySpark 4.3: mllib RankingMetrics",
        ties="input",
        measure_params=_params(AP={"norm": "min"}, nDCG={"gain": "binary"}),
        notes=(
            "RankingMetrics takes a ranked list: equal scores are in the order the user "
            "sorted them (here the input order).",
            "PySpark's RankingMetrics drops relevance values (PythonMLLibAPI."
            "newRankingMetrics keeps two columns): its nDCG is binary, as Spark's before 3.4.",
            "Spark's graded nDCG (Scala, 3.4+: 2^rel - 1) takes the ideal ranking in the "
            "order the labels are given; nDCG(gain=exp) is it for labels sorted by grade.",
            "RankingMetrics cannot infer the type of an empty label list from Python; "
            "Scala gives such a query 0, as here.",
        ),
    ),
    "rectools": dict(
        version="0.19.0",
        tool="RecTools 0.19: calc_metrics, Metric.calc_per_user",
        ties="input",
        absent_queries="zero",
        measure_params=_params(nDCG={"gain": "binary", "ideal": "k"}),
        notes=(
            "RecTools reads ranked lists (its Columns.Rank): pass order='rank' with the "
            "rank column, and an item of rank <= k is in the top k.",
            "Its test interactions are binary: every qrels row is relevant at grade 1.",
            "MAP(divide_by_k=True) is AP(norm=k); NDCG(divide_by_achievable=True) is "
            "nDCG(gain=binary) with the ideal of the qrels; NDCG's log_base cancels in "
            "the ratio.",
            "The measures of lists (MeanInvUserFreq, AvgRecPopularity, Serendipity, "
            "IntraListDiversity, SufficientReco, UnrepeatedReco) score every user of the "
            "recommendations, as RecTools does; CatalogCoverage comes from "
            "pr.evaluate_catalog.",
        ),
    ),
    "recbole": dict(
        version="1.2.1",
        tool="RecBole 1.2.1: recbole/evaluator/metrics.py",
        ties="input",
        absent_queries="zero",
        measure_params=_params(AP={"norm": "min"}, nDCG={"gain": "binary"}),
        notes=(
            "RecBole takes each user's top k by torch.topk: equal scores in no documented "
            "order (here the input order).",
            "Its averages are over full top-k matrices: TailPercentage and "
            "AveragePopularity divide by k positions, here by the items a list has (the "
            "same for lists of k items).",
            "ItemCoverage, GiniIndex and ShannonEntropy come from pr.evaluate_catalog.",
        ),
    ),
    "lenskit": dict(
        version="2025.8.1",
        tool="LensKit 2025.8: lenskit.metrics, ListMetric.measure_list per list",
        ties="input",
        measure_params=_params(
            AP={"norm": "retrieved"},
            P={"adaptive_k": True},
            R={"norm": "min"},
            nDCG={"gain": "binary", "discount": "clipped"},
        ),
        names=MappingProxyType(
            {"AveragePrecision": "AP", "AveragePrecision@": "AP", "Precision": "SetP"}
        ),
        notes=(
            "LensKit reads ordered item lists: pass order='rank' with their rank column "
            "(equal scores keep the input order here).",
            "LensKit measures every recommendation list, a user without test items against "
            "an empty test list: Precision 0, the other measures NaN (AveragePrecision "
            "divides by zero). Here such a user is left out of every measure, Precision "
            "included (UnscoredQueriesWarning names them).",
            "NDCG without a gain field gives every test item gain 1 (nDCG(gain=binary)); "
            "with one (NDCG(gain='rating')) it is nDCG(discount=clipped) with the grades "
            "as gains. Both discount rank i by log2(max(i, 2)) (LogRankWeight).",
        ),
    ),
    "recommenders": dict(
        version="1.2.1",
        tool="Microsoft Recommenders 1.2.1: recommenders/evaluation/python_evaluation.py",
        ties="input",
        measure_params=_params(nDCG={"gain": "binary"}),
        names=MappingProxyType(
            {
                "precision_at_k": "P@10",
                "precision_at_k@": "P",
                "recall_at_k": "R@10",
                "recall_at_k@": "R",
                "ndcg_at_k": "nDCG@10",
                "ndcg_at_k@": "nDCG",
                "map_at_k": "AP(norm=min)@10",
                "map_at_k@": "AP(norm=min)",
                "catalog_coverage": "CatalogCoverage(normalize=true)",
                "distributional_coverage": "Entropy",
                "novelty": "ChoiceNovelty",
                "diversity": "CoocDiversity",
                "serendipity": "CoocSerendipity",
            }
        ),
        refused_names=MappingProxyType(
            {
                "r_precision_at_k": "Microsoft Recommenders' r_precision_at_k counts the hits "
                "in the top min(k, |R|) and divides by |R|, which no measure here "
                "reproduces; ask for Rprec (trec_eval's R-precision).",
            }
        ),
        notes=(
            "Each function takes the top k of rating_pred by col_prediction with a pandas "
            "sort (equal scores in input order) and averages over the users both frames "
            "hold: a user without test interactions or without recommendations is left "
            "out, as here.",
            "ndcg_at_k's natural-log discount (discfun_type='loge') cancels in the ratio: "
            "nDCG(gain=binary); score_type='raw' is nDCG and 'exp' nDCG(gain=exp).",
            "map_at_k divides by min(|R|, k) (AP(norm=min)); map divides by |R| (AP@k).",
            "The names without a cutoff take Recommenders' DEFAULT_K = 10. "
            "catalog_coverage, distributional_coverage and novelty (ChoiceNovelty) come "
            "from pr.evaluate_catalog, with train's distinct items as the catalogue.",
            "diversity and serendipity are the means over the users of user_diversity "
            "(CoocDiversity) and user_serendipity (CoocSerendipity) with the default "
            "item co-occurrence similarity, scored from train=; serendipity without "
            "col_relevance counts every recommended item as relevant, "
            "CoocSerendipity(relevant=qrels) as with col_relevance the test interactions. "
            "Recommenders' item_feature_vector similarity is not reproduced.",
        ),
    ),
}


def _preset(name: str, base: Conventions = _TREC_10, **choices: Any) -> Conventions:
    """A tool's conventions: trec_eval 10.0's choices but those given."""
    return Conventions(
        **{f.name: getattr(base, f.name) for f in fields(Conventions)} | {"name": name} | choices
    )


CONVENTIONS: dict[str, Conventions] = {
    "trec_eval-10": _TREC_10,
    "trec_eval-9": _TREC_9,
    **{name: _preset(name, **choices) for name, choices in _TOOLS.items()},
}
DEFAULT: ConventionsName = "trec_eval-10"
"""trec_eval 10.0 is the current release (2026-06-18)."""


def get_conventions(conventions: str | Conventions | None = None) -> Conventions:
    """The :class:`Conventions` of a name (None: the default, ``"trec_eval-10"``).

    Examples
    --------
    >>> get_conventions("trec_eval-9").iprec_rounding
    'v9'
    >>> get_conventions("trec_eval-8")
    Traceback (most recent call last):
    ...
    ValueError: conventions must be one of 'trec_eval-10', 'trec_eval-9', 'ranx', \
'ir_measures', 'sklearn', 'torchmetrics', 'spark', 'rectools', 'recbole', 'lenskit', \
'recommenders'. Got 'trec_eval-8' instead.
    """
    if isinstance(conventions, Conventions):
        return conventions
    name = DEFAULT if conventions is None else conventions
    check_choice("conventions", name, CONVENTIONS)
    return CONVENTIONS[name]


ROW_LABELS: Mapping[str, str] = MappingProxyType(
    {
        "tool": "reproduces",
        "ties": "equal scores",
        "score_precision": "scores compared as",
        "judgments": "\\|R\\| and ideal DCG from",
        "absent_queries": "qrels query the run lacks",
        "absent_values": "an absent query scored scores",
        "empty_queries": "query without a relevant document",
        "rel_level": "relevance level",
        "iprec_rounding": "IPrec@r: relevant documents at level r",
        "AP.norm": "AP@k denominator",
        "nDCG.gain": "nDCG gain",
        "ERR.max_grade": "ERR: grades scaled by",
        "nDCG.ties": "nDCG over equal scores",
        "Judged.ties": "Judged@k over equal scores",
        "Judged.negative": "Judged@k: a negative grade is",
        "RR@.ties": "RR@k over equal scores",
        "Compat.ties": "Compat over equal scores",
        "RBP.ties": "RBP over equal scores",
        "AUROC.ties": "AUROC (ir_measures' Accuracy) over equal scores",
        "C/W/L.ties": "C/W/L measures (SDCG, NERR8-11, BPM, INSQ, INST) over equal scores",
        "nDCG.ideal": "nDCG ideal",
        "nDCG.discount": "nDCG discount at rank i",
        "P.adaptive_k": "P@k denominator",
        "R.norm": "R@k denominator",
    }
)
"""The label of each row of :func:`conventions_table` (a choice, or ``family.param``)."""
VALUE_LABELS: Mapping[str, Mapping[Any, str]] = MappingProxyType(
    {
        "ties": {
            "doc_desc": "doc id descending (as strings)",
            "input": "input order",
            "average": "input order; nDCG averages them",
        },
        "judgments": {"all": "every qrels row", "retrieved": "retrieved documents only"},
        "absent_queries": {"drop": "left out", "zero": "scored 0", "error": "error"},
        "absent_values": {
            "empty_ranking": "an empty ranking's values",
            "zero": "0 on every measure",
        },
        "empty_queries": {"zero": "0", "one": "1", "skip": "left out", "error": "error"},
        "iprec_rounding": {"v10": "lround(r·\\|R\\|)", "v9": "(long)(r·\\|R\\| + 0.9)"},
        "AP.norm": {
            "R": "\\|R\\|",
            "min": "min(k, \\|R\\|)",
            "found": "relevant in the top k",
            "k": "k",
            "retrieved": "min(\\|R\\|, retrieved in the top k)",
        },
        "nDCG.gain": {"linear": "grade", "exp": "2^grade − 1", "binary": "1 if relevant"},
        "nDCG.ties": {"ordered": "in rank order", "average": "gains averaged per tie group"},
        "ERR.max_grade": {None: "the query's highest grade", 4: "4 (gdeval)"},
        "Judged.ties": {"ranked": "as ranked", "doc_asc": "doc id ascending"},
        "Judged.negative": {"unjudged": "unjudged", "judged": "judged"},
        "RR@.ties": {"ranked": "as ranked", "doc_asc": "doc id ascending"},
        "RBP.ties": {"ranked": "as ranked", "input": "input order, first 1,000 ranks"},
        "AUROC.ties": {"ranked": "as ranked", "input": "input order"},
        "Compat.ties": {
            "ranked": "as ranked (ideal: retrieved first, as ranked)",
            "doc_asc": "doc id ascending (ideal: by score, then qrels row)",
        },
        "C/W/L.ties": {"ranked": "as ranked", "input": "input order"},
        "nDCG.ideal": {"qrels": "the qrels, sorted by gain", "k": "k documents of gain 1"},
        "nDCG.discount": {"plus_one": "log2(i + 1)", "clipped": "log2(max(i, 2))"},
        "P.adaptive_k": {False: "k", True: "min(k, retrieved)"},
        "R.norm": {"R": "\\|R\\|", "min": "min(k, \\|R\\|)"},
    }
)


def _cell(conventions: Conventions, row: str) -> str:
    """The text of one cell of :func:`conventions_table`."""
    if "." in row:
        family, param = row.split(".", 1)
        family = CWL_EVAL_FAMILIES[0] if family == "C/W/L" else family  # one row for all
        if row == "nDCG.ties":
            value: Any = "average" if conventions.ties == "average" else "ordered"
        else:
            value = conventions.measure_params.get(family, {}).get(param, _DEFAULTS[row])
    else:
        value = getattr(conventions, row)
    return VALUE_LABELS.get(row, {}).get(value, str(value))


_DEFAULTS: Mapping[str, Any] = MappingProxyType(
    {
        "AP.norm": "R",
        "nDCG.gain": "linear",
        "ERR.max_grade": None,
        "nDCG.ideal": "qrels",
        "nDCG.discount": "plus_one",
        "P.adaptive_k": False,
        "R.norm": "R",
        "Judged.ties": "ranked",
        "Judged.negative": "unjudged",
        "RR@.ties": "ranked",
        "Compat.ties": "ranked",
        "RBP.ties": "ranked",
        "AUROC.ties": "ranked",
        "C/W/L.ties": "ranked",
    }
)
"""The measures' own values of the parameters a preset may set (trec_eval's)."""


def conventions_table(names: Sequence[str] | None = None) -> str:
    """The presets side by side, as a Markdown table rendered from their declarations.

    Rows: every choice of :data:`CHOICES` and the measure parameters presets set;
    columns: the presets (``names``, default all). docs/conventions.md holds this table
    (a test checks that it is up to date).

    Examples
    --------
    >>> print(conventions_table(["trec_eval-10", "ranx"]).splitlines()[3])
    | equal scores | doc id descending (as strings) | input order |
    """
    chosen = [get_conventions(n) for n in (names or CONVENTIONS)]
    params = [f"{'C/W/L' if f in CWL_EVAL_FAMILIES else f}.{p}" for c in CONVENTIONS.values()
              for f, ps in c.measure_params.items() for p in ps]  # fmt: skip
    rows = ["tool", *(c for c in CHOICES if c != "measure_params")]
    rows += [*dict.fromkeys([*params, "nDCG.ties"])]
    header = ["choice", *(f"`{c.name}`" for c in chosen)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        cells = [ROW_LABELS.get(row, row), *(_cell(c, row) for c in chosen)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


__all__ = [
    "CHOICES",
    "CONVENTIONS",
    "DEFAULT",
    "Conventions",
    "ConventionsName",
    "conventions_table",
    "get_conventions",
]
