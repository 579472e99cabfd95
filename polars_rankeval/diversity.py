r"""Novelty and diversity measures over subtopic qrels, as ndeval computes them
(ir_measures' ``pyndeval`` provider): ``alpha_nDCG@k``, ``alpha_DCG@k``, ``ERR_IA@k``,
``nERR_IA@k``, ``NRBP``, ``nNRBP``, ``AP_IA``, ``P_IA@k``, ``StRecall@k``.

Subtopic qrels have one row per (query, subtopic, doc) with a grade: a document
is relevant to a subtopic when that grade is >= ``rel_level`` (binary, as ndeval).
A query's subtopics are those with at least one relevant document (S of them).

The measures read, per document, the subtopics it is relevant to, and so lie
outside the engine (:mod:`polars_rankeval.engine`), whose judged rows carry one
grade per document: :func:`evaluate_diversity` computes them in vectorised
Polars over the same ranked rows (``rank_run``: score descending, ties by doc
id descending), with no per-query Python. With α the redundancy penalty, a
relevant (document, subtopic) pair at rank r is worth :math:`(1-\alpha)^{c}`,
c the documents above r relevant to the same subtopic; the score of rank r is
the sum over its pairs:

.. math::
    \alpha DCG@k &= \sum_{r \le k} \frac{score_r}{\log_2(r + 1)} \Big/
                    \sum_{i=1}^{k} \frac{S (1-\alpha)^{i-1}}{\log_2(i + 1)} \\
    ERR_{IA}@k &= \sum_{r \le k} \frac{score_r}{r} \Big/
                  \sum_{i=1}^{k} \frac{S (1-\alpha)^{i-1}}{i} \\
    NRBP &= \frac{1 - (1-\alpha)\beta}{S} \sum_r \beta^{r-1} score_r \\
    P_{IA}@k &= \frac{|\{\text{relevant pairs at rank} \le k\}|}{k S}, \quad
    StRecall@k = \frac{|\{\text{subtopics covered in the top } k\}|}{S} \\
    AP_{IA} &= \frac{1}{S} \sum_{s} \frac{1}{R_s}
               \sum_{d \text{ relevant to } s} \frac{c_s(d) + 1}{rank(d)}

``alpha_nDCG@k``, ``nERR_IA@k`` and ``nNRBP`` divide by the same value of
ndeval's ideal ranking: greedily, the document with the highest score given
those placed before it (ties: the larger doc id, byte-wise). ERR_IA uses
ndeval's α = 0.5.

ndeval's own conventions, kept: at k = 1, ``alpha_DCG@1`` and ``ERR_IA@1`` are
not divided by their normaliser (ndeval divides from the second rank on), and a
query without a relevant document scores 0 (ndeval: 0, but nNRBP NaN).

References
----------
Clarke et al., "Novelty and diversity in information retrieval evaluation",
SIGIR 2008 (α-nDCG); Clarke, Kolla and Vechtomova, "An effectiveness measure
for ambiguous and underspecified queries", ICTIR 2009 (NRBP); Chapelle et al.,
CIKM 2009 (ERR-IA); Agrawal et al., WSDM 2009 (intent-aware measures).
ndeval 4.5 (TREC Web track), as wrapped by pyndeval (``src/ndeval.c``:
``computeDCG``, ``computeERR``, ``computeNRBP``, ``computeMAP``,
``computePrecision``, ``computeSTRecall``, ``idealResult``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import polars as pl

from polars_rankeval._typing import IntoFrameOrDict
from polars_rankeval.inputs import as_frame
from polars_rankeval.ranking import rank_run
from polars_rankeval.validation import check_choice, check_columns

ALPHA = 0.5
"""ndeval's default redundancy penalty α (and the α of ERR_IA)."""
BETA = 0.5
"""ndeval's default patience β of NRBP."""

_CUTOFF = {"alpha_DCG", "alpha_nDCG", "ERR_IA", "nERR_IA", "P_IA", "StRecall"}
PARAMS: dict[str, tuple[str, ...]] = {
    "alpha_DCG": ("alpha", "rel"),
    "alpha_nDCG": ("alpha", "rel"),
    "ERR_IA": ("rel",),
    "nERR_IA": ("rel",),
    "NRBP": ("alpha", "beta", "rel"),
    "nNRBP": ("alpha", "beta", "rel"),
    "AP_IA": ("rel",),
    "P_IA": ("rel",),
    "StRecall": ("rel",),
}
"""The diversity measures and their parameters (canonical names: ir_measures')."""
ALIASES = {
    "alpha-dcg": "alpha_DCG",
    "alpha-ndcg": "alpha_nDCG",
    "err-ia": "ERR_IA",
    "nerr-ia": "nERR_IA",
    "map-ia": "AP_IA",
    "p-ia": "P_IA",
    "strec": "StRecall",
}
"""ndeval's names (lower-cased) -> canonical."""
NORMALISED = {"alpha_nDCG": "alpha_DCG", "nERR_IA": "ERR_IA", "nNRBP": "NRBP"}
"""Measures divided by the same measure of ndeval's ideal ranking."""
_NAME = re.compile(r"^(?P<name>[A-Za-z_\-]+)(?:\((?P<params>[^()]*)\))?(?:@(?P<cutoff>\d+))?$")


@dataclass(frozen=True)
class DiversityMeasure:
    """A diversity measure: canonical name, cutoff and non-default parameters."""

    name: str
    cutoff: int | None = None
    params: tuple[tuple[str, float | int], ...] = ()

    def get(self, key: str, default: Any) -> Any:
        return dict(self.params).get(key, default)

    def __str__(self) -> str:
        text = self.name
        if self.params:
            text += "(" + ",".join(f"{k}={v!r}" for k, v in self.params) + ")"
        return text if self.cutoff is None else f"{text}@{self.cutoff}"


_DEFAULTS: dict[str, float | int] = {"alpha": ALPHA, "beta": BETA, "rel": 1}


def parse_diversity(text: str | DiversityMeasure) -> DiversityMeasure:
    """Parse a diversity measure name: ir_measures' (``alpha_nDCG(alpha=0.5)@10``) or
    ndeval's (``alpha-nDCG@10``, ``MAP-IA``, ``strec@10``).

    Examples
    --------
    >>> str(parse_diversity("alpha-nDCG@20")), str(parse_diversity("NRBP(beta=0.8)"))
    ('alpha_nDCG@20', 'NRBP(beta=0.8)')
    >>> parse_diversity("P_IA")
    Traceback (most recent call last):
    ...
    ValueError: P_IA needs a cutoff, e.g. P_IA@10.
    """
    if isinstance(text, DiversityMeasure):
        return text
    match = _NAME.match(text.strip())
    name = match["name"] if match else ""
    name = name if name in PARAMS else ALIASES.get(name.lower(), "")
    if not match or not name:
        msg = f"Unknown diversity measure {text!r}. Known: {', '.join(PARAMS)}."
        raise ValueError(msg)
    cutoff = int(match["cutoff"]) if match["cutoff"] else None
    if (name in _CUTOFF) != (cutoff is not None):
        need = f"needs a cutoff, e.g. {name}@10" if name in _CUTOFF else "takes no cutoff"
        msg = f"{name} {need}."
        raise ValueError(msg)
    if cutoff is not None and cutoff < 1:
        msg = f"The cutoff of {name} must be >= 1. Got {cutoff} in {text!r}."
        raise ValueError(msg)
    params: dict[str, float | int] = {}
    for item in filter(str.strip, (match["params"] or "").split(",")):
        key, _, value = (x.strip() for x in item.partition("="))
        if key not in PARAMS[name]:
            msg = f"{name} has no parameter {key!r} (parameters: {', '.join(PARAMS[name])})."
            raise ValueError(msg)
        params[key] = _number(key, value, name)
    clean = tuple(sorted((k, v) for k, v in params.items() if v != _DEFAULTS[k]))
    return DiversityMeasure(name, cutoff, clean)


def _number(key: str, value: str, name: str) -> float | int:
    try:
        number: float | int = int(value) if key == "rel" else float(value)
    except ValueError:
        kind = "an int" if key == "rel" else "a number"
        msg = f"Parameter {key} of {name} must be {kind}. Got {value!r}."
        raise ValueError(msg) from None
    if key == "rel" and number < 1:
        msg = f"The relevance threshold rel must be >= 1. Got {number} in {name}."
        raise ValueError(msg)
    if key in ("alpha", "beta") and not 0.0 <= number <= 1.0:
        msg = f"Parameter {key} of {name} must be in [0, 1]. Got {number}."
        raise ValueError(msg)
    return number


# --------------------------------------------------------------------------- evaluation

_Q, _D, _S, _R = "__dv_query", "__dv_doc", "__dv_subtopic", "__dv_rank"


def evaluate_diversity(
    run: IntoFrameOrDict,
    qrels: IntoFrameOrDict,
    measures: str | DiversityMeasure | Iterable[str | DiversityMeasure],
    *,
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    subtopic: str = "subtopic",
    relevance: str = "relevance",
    missing: str = "drop",
) -> pl.DataFrame:
    """Diversity measures per query, from a run and subtopic qrels.

    Parameters
    ----------
    run
        ``query, doc, score``: one row per retrieved document (one system).
    qrels
        ``query, subtopic, doc, relevance``: one row per judged (subtopic,
        document) pair of a query (TREC diversity qrels: the second column
        holds the subtopic).
    measures
        Names such as ``"alpha_nDCG@10"``, ``"ERR_IA@20"``, ``"NRBP"``,
        ``"P_IA@5"``, ``"StRecall@10"``, ``"AP_IA"``; ndeval's names too.
    query, doc, score, subtopic, relevance
        Column names.
    missing
        ``"drop"``: the queries of the run that have qrels. ``"zero"``: also
        the qrels queries absent from the run, scored 0 (as ir_measures).

    Returns
    -------
    DataFrame
        ``query`` and one Float64 column per measure (its canonical name),
        sorted by query.

    Examples
    --------
    >>> import polars as pl
    >>> run = pl.DataFrame({"query": ["q"] * 3, "doc": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
    >>> qrels = pl.DataFrame({"query": ["q"] * 3, "subtopic": [1, 1, 2],
    ...                       "doc": ["a", "b", "c"], "relevance": [1, 1, 1]})
    >>> out = evaluate_diversity(run, qrels, ["StRecall@1", "StRecall@3", "P_IA@2"])
    >>> out.row(0)
    ('q', 0.5, 1.0, 0.5)
    """
    parsed = list(dict.fromkeys(parse_diversity(m) for m in _listed(measures)))
    check_choice("missing", missing, ("drop", "zero"))
    run_df = as_frame(run, "run", (query, doc, score)).lazy().collect()
    qrels_df = as_frame(qrels, "qrels").lazy().collect()
    check_columns(run_df.schema, {"query": query, "doc": doc, "score": score}, "run")
    check_columns(
        qrels_df.schema,
        {"query": query, "subtopic": subtopic, "doc": doc, "relevance": relevance},
        "qrels",
    )
    if run_df.select(query, doc).is_duplicated().any():
        msg = f"The run has a ({query}, {doc}) pair twice: keep one row per retrieved document."
        raise ValueError(msg)
    ranked = rank_run(run_df.select(query, doc, score), query=query, doc=doc, score=score)
    ranked = ranked.select(
        pl.col(query).alias(_Q), pl.col(doc).cast(pl.String).alias(_D), pl.col("rank").alias(_R)
    )
    judgments = qrels_df.select(
        pl.col(query).alias(_Q),
        pl.col(subtopic).cast(pl.String).alias(_S),
        pl.col(doc).cast(pl.String).alias(_D),
        pl.col(relevance).alias("__dv_grade"),
    )
    if ranked.schema[_Q] != judgments.schema[_Q]:  # e.g. integer ids in one, strings in the other
        ranked = ranked.with_columns(pl.col(_Q).cast(pl.String))
        judgments = judgments.with_columns(pl.col(_Q).cast(pl.String))
    queries = _queries(ranked, judgments, missing)
    columns = [_measure(m, ranked, judgments, queries).alias(str(m)) for m in parsed]
    out = queries.with_columns(columns) if columns else queries
    return out.rename({_Q: query}).sort(query)


def _listed(measures: Any) -> list[str | DiversityMeasure]:
    if isinstance(measures, str | DiversityMeasure):
        return [measures]
    listed = list(measures)
    if not listed:
        msg = "No measures given: pass at least one, e.g. measures=['alpha_nDCG@10']."
        raise ValueError(msg)
    return listed


def _queries(ranked: pl.DataFrame, judgments: pl.DataFrame, missing: str) -> pl.DataFrame:
    """The queries scored: of the run and the qrels (with ``"zero"``, every qrels query)."""
    judged = judgments.select(_Q).unique()
    if missing == "zero":
        return judged
    return ranked.select(_Q).unique().join(judged, on=_Q, how="semi")


def _measure(
    m: DiversityMeasure, ranked: pl.DataFrame, judgments: pl.DataFrame, queries: pl.DataFrame
) -> pl.Series:
    """One measure's value for each of ``queries``, in their order."""
    rel, alpha, beta = m.get("rel", 1), m.get("alpha", ALPHA), m.get("beta", BETA)
    if m.name in ("ERR_IA", "nERR_IA"):
        alpha = ALPHA
    pairs = _relevant_pairs(judgments, rel)
    subtopics = pairs.group_by(_Q).agg(pl.col(_S).n_unique().cast(pl.Float64).alias("__dv_S"))
    hits = _run_pairs(ranked, pairs, alpha)
    value = _value(m, hits, pairs, alpha, beta)
    if m.name in NORMALISED:
        plain = DiversityMeasure(NORMALISED[m.name], m.cutoff, m.params)
        value = _value(plain, hits, pairs, alpha, beta).join(
            _value(plain, _ideal_pairs(pairs, alpha, _ideal_depth(m, pairs)), pairs, alpha, beta),
            on=_Q,
            suffix="_ideal",
        )
        value = value.select(
            _Q,
            pl.when(pl.col("value") != 0)
            .then(pl.col("value") / pl.col("value_ideal"))
            .otherwise(0.0)
            .alias("value"),
        )
    out = queries.join(subtopics, on=_Q, how="left").join(value, on=_Q, how="left")
    return out.select(
        pl.when(pl.col("__dv_S") > 0).then(pl.col("value")).otherwise(None).fill_null(0.0)
    ).to_series()


def _ideal_depth(m: DiversityMeasure, pairs: pl.DataFrame) -> int | None:
    """How deep the ideal ranking is needed: the cutoff; for nNRBP, the rank past which
    the ideal's NRBP changes by less than 1e-16 of itself (None: to the end).

    A rank's score is at most S (the subtopics), and the ideal's first is at least 1,
    so the ranks past D add at most :math:`S \\beta^D / (1 - \\beta)` of it.
    """
    beta = m.get("beta", BETA)
    if m.cutoff is not None or beta >= 1.0 or not pairs.height:
        return m.cutoff
    if beta <= 0.0:
        return 1
    subtopics = pairs.group_by(_Q).agg(pl.col(_S).n_unique()).get_column(_S).max()
    bound = 1e-16 * (1.0 - beta) / float(subtopics)  # type: ignore[arg-type]
    return max(1, math.ceil(math.log(bound) / math.log(beta)))


def _relevant_pairs(judgments: pl.DataFrame, rel: int) -> pl.DataFrame:
    """(query, subtopic, doc) of every relevant pair."""
    relevant = judgments.filter(pl.col("__dv_grade") >= rel)
    return relevant.select(_Q, _S, _D).unique()


def _run_pairs(ranked: pl.DataFrame, pairs: pl.DataFrame, alpha: float) -> pl.DataFrame:
    """The relevant pairs of the run: ``query, subtopic, rank, seen`` (c: the documents
    above relevant to the same subtopic) and ``gain`` = (1 - α)^c."""
    hits = ranked.join(pairs, on=[_Q, _D]).sort(_Q, _S, _R)
    seen = pl.int_range(pl.len()).over(_Q, _S).cast(pl.Float64)
    return hits.select(_Q, _S, _R, seen.alias("seen")).with_columns(
        gain=pl.lit(1.0 - alpha).pow(pl.col("seen"))
    )


def _ideal_pairs(pairs: pl.DataFrame, alpha: float, depth: int | None) -> pl.DataFrame:
    """The relevant pairs of ndeval's greedy ideal ranking, to ``depth`` (None: all).

    One step per ideal rank, for every query at once: each document left scores the
    sum of (1 - α)^n over its subtopics (n: the subtopic's documents placed so far);
    the highest (ties: the larger doc id, byte-wise) is placed. Once every document
    left scores 0 the rest add nothing, and the steps stop.
    """
    left = pairs.select(_Q, _D, _S)
    counts = pairs.select(_Q, _S).unique().with_columns(n=pl.lit(0.0))
    placed: list[pl.DataFrame] = []
    rank = 0
    while left.height and (depth is None or rank < depth):
        rank += 1
        gains = left.join(counts, on=[_Q, _S]).with_columns(gain=pl.lit(1.0 - alpha).pow("n"))
        scores = gains.group_by(_Q, _D).agg(score=pl.col("gain").sum())
        scores = scores.with_columns(pl.col("score").round_sig_figs(12))
        best = (
            scores.sort([_Q, "score", _D], descending=[False, True, True])
            .group_by(_Q, maintain_order=True)
            .first()
        )
        best = best.filter(pl.col("score") > 0)
        if not best.height:
            break
        chosen = gains.join(best.select(_Q, _D), on=[_Q, _D])
        placed.append(chosen.select(_Q, _S, pl.lit(rank, pl.UInt32).alias(_R), "n", "gain"))
        counts = counts.join(
            chosen.select(_Q, _S, step=pl.lit(1.0)), on=[_Q, _S], how="left"
        ).select(_Q, _S, n=pl.col("n") + pl.col("step").fill_null(0.0))
        left = left.join(best.select(_Q, _D), on=[_Q, _D], how="anti")
    if not placed:
        return pl.DataFrame(schema={_Q: pairs.schema[_Q], _S: pl.String, _R: pl.UInt32,
                                    "seen": pl.Float64, "gain": pl.Float64})  # fmt: skip
    return pl.concat(placed).rename({"n": "seen"}).select(_Q, _S, _R, "seen", "gain")


def _value(
    m: DiversityMeasure, hits: pl.DataFrame, pairs: pl.DataFrame, alpha: float, beta: float
) -> pl.DataFrame:
    """``query, value`` of a measure (not normalised by an ideal ranking) from the relevant
    pairs of a ranking; queries without a pair are left out (their value is 0)."""
    k = m.cutoff
    n_sub = pairs.group_by(_Q).agg(pl.col(_S).n_unique().cast(pl.Float64).alias("S"))
    rank = pl.col(_R).cast(pl.Float64)
    top = hits if k is None else hits.filter(pl.col(_R) <= k)
    frame = top.join(n_sub, on=_Q)
    s = pl.col("S").first()
    if m.name == "alpha_DCG":
        assert k is not None
        raw = (pl.col("gain") / (rank + 1.0).log(2)).sum()
        value = raw if k == 1 else raw / (s * _ideal_ideal(alpha, k, _log_discount))
    elif m.name == "ERR_IA":
        assert k is not None
        raw = (pl.col("gain") / rank).sum()
        value = raw if k == 1 else raw / (s * _ideal_ideal(alpha, k, lambda i: 1.0 / i))
    elif m.name == "NRBP":
        value = (pl.col("gain") * pl.lit(beta).pow(rank - 1.0)).sum()
        value = value * (1.0 - (1.0 - alpha) * beta) / s
    elif m.name == "P_IA":
        assert k is not None
        value = pl.len().cast(pl.Float64) / (k * s)
    elif m.name == "StRecall":
        value = pl.col(_S).n_unique().cast(pl.Float64) / s
    else:  # AP_IA
        per_subtopic = pairs.group_by(_Q, _S).agg(pl.len().cast(pl.Float64).alias("R_s"))
        frame = frame.join(per_subtopic, on=[_Q, _S])
        value = ((pl.col("seen") + 1.0) / rank / pl.col("R_s")).sum() / s
    return frame.group_by(_Q).agg(value.cast(pl.Float64).alias("value"))


def _log_discount(i: int) -> float:
    return math.log(2.0) / math.log(i + 1.0)


def _ideal_ideal(alpha: float, k: int, discount: Any) -> float:
    """ndeval's "ideal ideal" normaliser over S: sum_{i<=k} (1 - α)^(i-1) discount(i)."""
    total, weight = 0.0, 1.0
    for i in range(1, k + 1):
        total += weight * discount(i)
        weight *= 1.0 - alpha
    return total
