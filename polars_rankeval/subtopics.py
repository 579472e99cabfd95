r"""The values of ndeval's novelty and diversity measures (ir_measures' ``pyndeval``
provider) over ranked rows and subtopic qrels: ``alpha_nDCG@k``, ``alpha_DCG@k``,
``ERR_IA@k``, ``nERR_IA@k``, ``NRBP``, ``nNRBP``, ``AP_IA``, ``P_IA@k``, ``StRecall@k``.
:func:`polars_rankeval.evaluate_diversity` reads, checks, ranks and cuts the rows
into pieces by query; this module scores one piece (:func:`score_rankings`).

Subtopic qrels have one row per (query, subtopic, doc) with a grade: a document
is relevant to a subtopic when that grade is >= ``rel_level`` (binary, as ndeval).
A query's subtopics are those with at least one relevant document (S of them).

The measures read, per document, the subtopics it is relevant to (where the
engine's judged rows carry one grade per document): they are computed from the
relevant (document, subtopic) pairs of each ranking, one Polars aggregation per
(``rel``, α) for all the measures that share them, with no per-query Python. With α
the redundancy penalty, a relevant (document, subtopic) pair at rank r is
worth :math:`(1-\alpha)^{c}`, c the documents above r relevant to the same
subtopic; the score of rank r is the sum over its pairs:

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
from typing import Any, Literal

import numpy as np
import polars as pl

from polars_rankeval.engine.rank import sort_order
from polars_rankeval.validation import key_hash

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
    "α_dcg": "alpha_DCG",
    "α_ndcg": "alpha_nDCG",
}
"""ndeval's names and ir_measures' Greek spellings (lower-cased) -> canonical."""
NORMALISED = {"alpha_nDCG": "alpha_DCG", "nERR_IA": "ERR_IA", "nNRBP": "NRBP"}
"""Measures divided by the same measure of ndeval's ideal ranking."""
QUERY, RANKING, SUBTOPIC, DOC, RANK, GRADE = (
    "__dv_q",
    "__dv_k",
    "__dv_s",
    "__dv_d",
    "__dv_r",
    "__dv_grade",
)
"""The columns :func:`score_rankings` reads: ranked rows ``RANKING, QUERY, DOC, RANK``,
judgments ``QUERY, SUBTOPIC, DOC, GRADE``."""
_Q, _K, _S, _D, _R, _G = QUERY, RANKING, SUBTOPIC, DOC, RANK, GRADE
_SC, _H, _I = "__dv_sc", "__dv_h", "__dv_i"
_NAME = re.compile(r"^(?P<name>[A-Za-z_\-α]+)(?:\((?P<params>[^()]*)\))?(?:@(?P<cutoff>\d+))?$")


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
    >>> str(parse_diversity("α_nDCG(alpha=0.3)@10"))  # ir_measures' Greek spelling
    'alpha_nDCG(alpha=0.3)@10'
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


def score_rankings(
    ranked: pl.DataFrame,
    judgments: pl.DataFrame,
    scored: pl.DataFrame,
    measures: Iterable[DiversityMeasure],
    ideals: pl.DataFrame | None = None,
) -> list[pl.Series]:
    """Each measure's value for each ranking of ``scored`` (``RANKING, QUERY``), in its
    order, from the ranked rows of those rankings (``RANKING, QUERY, DOC, RANK``, 1-based
    ranks) and their queries' judgments (``QUERY, SUBTOPIC, DOC, GRADE``); a ranking
    without a row, or whose query has no relevant document, scores 0. ``ideals``: the
    normalisers of the queries (:func:`ideal_values`), when made once for several pieces
    of one run; else made here from ``judgments``.

    Examples
    --------
    >>> ranked = pl.DataFrame({RANKING: [0, 0], QUERY: ["q", "q"], DOC: ["a", "b"], RANK: [1, 2]},
    ...                       schema_overrides={RANKING: pl.UInt32, RANK: pl.UInt32})
    >>> judgments = pl.DataFrame({QUERY: ["q", "q"], SUBTOPIC: ["1", "2"], DOC: ["b", "b"],
    ...                           GRADE: [1, 1]})
    >>> scored = ranked.select(RANKING, QUERY).unique()
    >>> measures = [parse_diversity("StRecall@1"), parse_diversity("P_IA@2")]
    >>> [s.item() for s in score_rankings(ranked, judgments, scored, measures)]
    [0.0, 0.5]
    """
    listed = list(measures)
    shared = _Shared(ranked, judgments, listed if ideals is None else [])
    columns: dict[str, pl.Series] = {}
    for (rel, alpha), group in _by_settings(listed).items():
        values = _group_values(group, shared, scored, rel, alpha, ideals)
        columns |= {c: values.get_column(c) for c in values.columns}
    return [columns[str(m)].alias(str(m)) for m in listed]


def ideal_values(judgments: pl.DataFrame, measures: Iterable[DiversityMeasure]) -> pl.DataFrame:
    """The normalisers of the queries of ``judgments`` (``QUERY, SUBTOPIC, DOC, GRADE``):
    ``QUERY`` and, per normalised measure m (``alpha_nDCG``, ``nERR_IA``, ``nNRBP``), the
    value of the measure it normalises for ndeval's ideal ranking (column
    ``__ideal {m}``; null where the query has no relevant document at the measure's
    ``rel``).

    A query's ideal depends on its judgments alone: a run cut into pieces that share
    queries (a lazy run read system by system) makes it once for them all.

    Examples
    --------
    >>> judgments = pl.DataFrame({QUERY: ["q", "q"], SUBTOPIC: ["1", "2"], DOC: ["a", "b"],
    ...                           GRADE: [1, 1]})
    >>> ideal_values(judgments, [parse_diversity("alpha_nDCG@1")]).rows()
    [('q', 1.0)]
    """
    listed = list(measures)
    shared = _Shared(None, judgments, listed)
    frames = [
        _ideal_group(group, shared, rel, alpha)
        for (rel, alpha), group in _by_settings(listed).items()
        if any(m.name in NORMALISED for m in group)
    ]
    out = pl.DataFrame({QUERY: judgments.get_column(QUERY).unique().sort()})
    for frame in frames:
        out = out.join(frame, on=QUERY, how="left")
    return out


def _by_settings(
    measures: list[DiversityMeasure],
) -> dict[tuple[int, float], list[DiversityMeasure]]:
    """The measures grouped by the (``rel``, α) of the pairs they read."""
    groups: dict[tuple[int, float], list[DiversityMeasure]] = {}
    for m in measures:
        rel, alpha, _ = _settings(m)
        groups.setdefault((rel, alpha), []).append(m)
    return groups


def _facts(pairs: pl.DataFrame) -> pl.DataFrame:
    """Per (query, subtopic) number: its query, its relevant documents ``R_s`` and its
    query's subtopics ``S``."""
    facts = pairs.group_by(_SC).agg(pl.col(_Q).first(), pl.len().cast(pl.Float64).alias("R_s"))
    return facts.with_columns(pl.len().over(_Q).cast(pl.Float64).alias("S"))


def _ideal_group(
    measures: list[DiversityMeasure], shared: _Shared, rel: int, alpha: float
) -> pl.DataFrame:
    """``QUERY`` and ``__ideal {m}`` for the normalised ``measures`` of one ``rel`` and α:
    one aggregation over the ideal ranking's relevant pairs."""
    normalised = [m for m in measures if m.name in NORMALISED]
    facts = _facts(shared.pairs(rel))
    ideal = shared.ideal(rel, alpha).join(facts.select(_Q, "S").unique(_Q), on=_Q)
    raw = {str(m): _raw(NORMALISED[m.name], m, alpha) for m in normalised}
    return ideal.group_by(_Q).agg(raw[str(m)].alias(f"__ideal {m}") for m in normalised)


def _group_values(
    measures: list[DiversityMeasure],
    shared: _Shared,
    scored: pl.DataFrame,
    rel: int,
    alpha: float,
    ideals: pl.DataFrame | None,
) -> pl.DataFrame:
    """The values of ``measures`` (all of one ``rel`` and α) for the rankings of ``scored``,
    in its order: one aggregation over the rankings' relevant pairs, divided for the
    normalised measures by the ideal's (``ideals``, else :func:`_ideal_group`)."""
    facts = _facts(shared.pairs(rel))
    raw = {str(m): _raw(NORMALISED.get(m.name, m.name), m, alpha) for m in measures}
    hits = shared.hits(rel, alpha).join(facts.select(_SC, "R_s", "S"), on=_SC)
    values = hits.group_by(_K).agg(e.alias(n) for n, e in raw.items())
    out = scored.join(values, on=_K, how="left", maintain_order="left")
    normalised = [m for m in measures if m.name in NORMALISED]
    if normalised:
        made = _ideal_group(measures, shared, rel, alpha) if ideals is None else ideals
        columns = [f"__ideal {m}" for m in normalised]
        out = out.join(made.select(_Q, *columns), on=_Q, how="left", maintain_order="left")
    final = []
    for m in measures:
        value = pl.col(str(m)).fill_null(0.0)
        if m.name in NORMALISED:
            value = pl.when(value != 0).then(value / pl.col(f"__ideal {m}")).otherwise(0.0)
        final.append(value.cast(pl.Float64).alias(str(m)))
    return out.select(final)


def _raw(name: str, m: DiversityMeasure, alpha: float) -> pl.Expr:
    """A measure not normalised by the ideal ranking (``name``: ``m``'s, or the one it
    normalises), as an aggregation over one ranking's relevant pairs (``gain``, ``seen``,
    ``RANK``, ``SUBTOPIC``, the query's subtopics ``S`` and, for AP_IA, the subtopic's
    relevant documents ``R_s``)."""
    k, beta = m.cutoff, m.get("beta", BETA)
    rank = pl.col(_R).cast(pl.Float64)
    s = pl.col("S").first()
    inside = pl.lit(True) if k is None else pl.col(_R) <= k
    if name == "alpha_DCG":
        assert k is not None
        total = (pl.col("gain") / (rank + 1.0).log(2)).filter(inside).sum()
        return total if k == 1 else total / (s * ideal_ideal(alpha, k, "log"))
    if name == "ERR_IA":
        assert k is not None
        total = (pl.col("gain") / rank).filter(inside).sum()
        return total if k == 1 else total / (s * ideal_ideal(alpha, k, "reciprocal"))
    if name == "NRBP":
        total = (pl.col("gain") * pl.lit(beta).pow(rank - 1.0)).sum()
        return total * (1.0 - (1.0 - alpha) * beta) / s
    if name == "P_IA":
        assert k is not None
        return inside.sum().cast(pl.Float64) / (k * s)
    if name == "StRecall":
        return pl.col(_S).filter(inside).n_unique().cast(pl.Float64) / s
    return ((pl.col("seen") + 1.0) / rank / pl.col("R_s")).sum() / s  # AP_IA


def listed(measures: Any) -> list[DiversityMeasure]:
    """The measures asked for, parsed, each once, in order; none is refused by name."""
    parsed = [parse_diversity(m) for m in _listed(measures)]
    return list(dict.fromkeys(parsed))


def _listed(measures: Any) -> list[str | DiversityMeasure]:
    if isinstance(measures, str | DiversityMeasure):
        return [measures]
    listed = list(measures)
    if not listed:
        msg = "No measures given: pass at least one, e.g. measures=['alpha_nDCG@10']."
        raise ValueError(msg)
    return listed


def _settings(m: DiversityMeasure) -> tuple[int, float, float]:
    """``rel``, α (ERR_IA's is ndeval's 0.5 always) and β of a measure."""
    alpha = ALPHA if m.name in ("ERR_IA", "nERR_IA") else m.get("alpha", ALPHA)
    return m.get("rel", 1), alpha, m.get("beta", BETA)


class _Shared:
    """What several measures of one call read, made once: the relevant pairs per ``rel``,
    a ranking's pairs per (``rel``, α), and ndeval's ideal ranking per (``rel``, α), to the
    deepest rank any normalised measure of the call needs (the greedy ideal's first d
    ranks do not depend on how deep it goes)."""

    def __init__(
        self,
        ranked: pl.DataFrame | None,
        judgments: pl.DataFrame,
        measures: Iterable[DiversityMeasure],
    ) -> None:
        self.ranked, self.judgments = ranked, judgments
        self._pairs: dict[int, pl.DataFrame] = {}
        self._hits: dict[tuple[int, float], pl.DataFrame] = {}
        self._ideals: dict[tuple[int, float], pl.DataFrame] = {}
        self._depths: dict[tuple[int, float], int | None] = {}
        for m in measures:
            if m.name in NORMALISED:
                rel, alpha, _ = _settings(m)
                depth = _ideal_depth(m, self.pairs(rel))
                key = (rel, alpha)
                if key not in self._depths:
                    self._depths[key] = depth
                elif depth is None or self._depths[key] is None:
                    self._depths[key] = None
                else:
                    self._depths[key] = max(depth, self._depths[key] or 0)

    def pairs(self, rel: int) -> pl.DataFrame:
        if rel not in self._pairs:
            self._pairs[rel] = _relevant_pairs(self.judgments, rel)
        return self._pairs[rel]

    def hits(self, rel: int, alpha: float) -> pl.DataFrame:
        if (rel, alpha) not in self._hits:
            assert self.ranked is not None, "made for the ideal ranking only"
            self._hits[rel, alpha] = _run_pairs(self.ranked, self.pairs(rel), alpha)
        return self._hits[rel, alpha]

    def ideal(self, rel: int, alpha: float) -> pl.DataFrame:
        if (rel, alpha) not in self._ideals:
            depth = self._depths.get((rel, alpha))
            self._ideals[rel, alpha] = _ideal_pairs(self.pairs(rel), alpha, depth)
        return self._ideals[rel, alpha]


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
    """(query, subtopic, doc) of every relevant pair, and ``__dv_sc``: a number per
    (query, subtopic)."""
    relevant = judgments.filter(pl.col(_G) >= rel).select(_Q, _S, _D).unique()
    subtopics = relevant.select(_Q, _S).unique().with_row_index(_SC)
    return relevant.join(subtopics, on=[_Q, _S])


def _run_pairs(ranked: pl.DataFrame, pairs: pl.DataFrame, alpha: float) -> pl.DataFrame:
    """The relevant pairs of each ranking: ``_K, _Q, subtopic, rank, seen`` (c: the
    documents above relevant to the same subtopic) and ``gain`` = (1 - α)^c.

    The ranked rows meet the pairs on a 64-bit hash of (query, doc), and each match's
    ids are then compared, so that a hash collision never pairs two documents.
    """
    keyed = key_hash([_Q, _D]).alias(_H)
    rows = pl.int_range(pl.len(), dtype=pl.UInt32).alias(_I)
    hits = ranked.select(_K, _R, keyed, rows).join(pairs.with_columns(keyed), on=_H)
    at = hits.get_column(_I)
    same = (ranked[_Q].gather(at) == hits[_Q]) & (ranked[_D].gather(at) == hits[_D])
    hits = hits.filter(same)
    seen = pl.Series("seen", _seen(hits[_K], hits[_SC], hits[_R]))
    return hits.select(_K, _Q, _S, _SC, _R).with_columns(seen, gain=pl.lit(1.0 - alpha).pow(seen))


def _seen(ranking: pl.Series, subtopic: pl.Series, rank: pl.Series) -> np.ndarray:
    """For each pair, the pairs of the same ranking and subtopic at a smaller rank
    (float64): its place in one sort of (ranking, subtopic, rank).

    Examples
    --------
    >>> _seen(pl.Series([0, 0, 0, 1]), pl.Series([5, 5, 6, 5]), pl.Series([3, 1, 2, 1])).tolist()
    [1.0, 0.0, 0.0, 0.0]
    """
    columns = [c.cast(pl.UInt64).to_numpy() for c in (ranking, subtopic, rank)]
    widths = [int(c.max()).bit_length() if len(c) else 0 for c in columns]
    if sum(widths) <= 64:  # one packed key: one sort of integers
        key = np.zeros(len(columns[0]), np.uint64)
        for c, w in zip(columns, widths, strict=True):
            key = (key << np.uint64(w)) | c
        order = sort_order(key)
        group = key[order] >> np.uint64(widths[2])
    else:
        order = np.lexsort(columns[::-1])
        group = columns[0][order] << np.uint64(32) | columns[1][order]
    starts = np.ones(len(order), bool)
    starts[1:] = group[1:] != group[:-1]
    place = np.arange(len(order))
    first = np.maximum.accumulate(np.where(starts, place, 0))
    seen = np.empty(len(order))
    seen[order] = place - first
    return seen


_IDEAL_CELLS = 1 << 24
"""(query, document, subtopic) cells of :func:`_ideal_pairs`' dense arrays at most (128 MiB
of float64); past it the greedy steps run as Polars joins (:func:`_ideal_pairs_joined`)."""


def _ideal_pairs(pairs: pl.DataFrame, alpha: float, depth: int | None) -> pl.DataFrame:
    """The relevant pairs of ndeval's greedy ideal ranking, to ``depth`` (None: all).

    One step per ideal rank, for every query at once: each document left scores the
    sum of (1 - α)^n over its subtopics (n: the subtopic's documents placed so far);
    the highest (ties: the larger doc id, byte-wise) is placed. Once every document
    left scores 0 the rest add nothing, and the steps stop. The steps work on a dense
    (query, document, subtopic) array, documents in doc id descending order so that
    the first highest score is the larger doc id; scores equal to 12 significant digits
    tie (sums of the same powers in another order).
    """
    coded = pairs.select(_Q, _S, _D, (pl.col(_Q).rank("dense").cast(pl.Int64) - 1).alias("q"))
    coded = coded.select(
        _Q,
        _S,
        "q",
        (pl.col(_D).rank("dense", descending=True).over("q").cast(pl.Int64) - 1).alias("d"),
        (pl.col(_S).rank("dense").over("q").cast(pl.Int64) - 1).alias("s"),
    )
    if not coded.height:
        return _no_ideal(pairs)
    n_q, n_d, n_s = (int(coded[c].max()) + 1 for c in ("q", "d", "s"))  # type: ignore[arg-type]
    if n_q * n_d * n_s > _IDEAL_CELLS:
        return _ideal_pairs_joined(pairs, alpha, depth)
    q, d, s = (coded[c].to_numpy() for c in ("q", "d", "s"))
    relevant = np.zeros((n_s, n_q, n_d))  # a (query, document) plane per subtopic
    relevant[s, q, d] = 1.0
    placed: np.ndarray = np.logical_not(relevant.any(axis=0))
    counts = np.zeros((n_q, n_s))
    steps: list[tuple[np.ndarray, np.ndarray, np.ndarray, int]] = []
    rows = np.arange(n_q)
    for rank in range(1, (depth if depth is not None else n_d) + 1):
        weight = (1.0 - alpha) ** counts
        gain = relevant[0] * weight[:, :1]
        for i in range(1, n_s):
            gain += relevant[i] * weight[:, i : i + 1]
        gain[placed] = -1.0
        top = gain.max(axis=1)
        # the first (larger doc id) of the scores equal to the top to 12 significant digits
        best = (gain >= (top - 1e-12 * np.abs(top))[:, None]).argmax(axis=1)
        active = rows[top > 0]
        if not len(active):
            break
        chosen = relevant[:, active, best[active]].T  # (active, subtopics)
        qa, sa = np.nonzero(chosen)
        steps.append((active[qa], sa, counts[active[qa], sa], rank))
        counts[active] += chosen
        placed[active, best[active]] = True
    if not steps:
        return _no_ideal(pairs)
    q_of = np.concatenate([st[0] for st in steps])
    s_of = np.concatenate([st[1] for st in steps])
    seen = np.concatenate([st[2] for st in steps])
    rank_of = np.concatenate([np.full(len(st[0]), st[3], np.uint32) for st in steps])
    names = coded.select("q", "s", _Q, _S).unique(["q", "s"])
    placed_pairs = pl.DataFrame({"q": q_of, "s": s_of, _R: rank_of, "seen": seen})
    return placed_pairs.join(names, on=["q", "s"], how="left").select(
        _Q, _S, _R, "seen", gain=pl.lit(1.0 - alpha).pow(pl.col("seen"))
    )


def _no_ideal(pairs: pl.DataFrame) -> pl.DataFrame:
    return pl.DataFrame(schema={_Q: pairs.schema[_Q], _S: pl.String, _R: pl.UInt32,
                                "seen": pl.Float64, "gain": pl.Float64})  # fmt: skip


def _ideal_pairs_joined(pairs: pl.DataFrame, alpha: float, depth: int | None) -> pl.DataFrame:
    """:func:`_ideal_pairs` as Polars joins, one step per ideal rank (for queries too many
    or too large for its dense arrays)."""
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
        return _no_ideal(pairs)
    return pl.concat(placed).rename({"n": "seen"}).select(_Q, _S, _R, "seen", "gain")


_EXACT_TERMS = 1 << 20
"""Terms of ``ideal_ideal``'s sum added one by one when they do not decay (α = 0)."""


def ideal_ideal(alpha: float, k: int, discount: Literal["log", "reciprocal"]) -> float:
    r"""ndeval's "ideal ideal" normaliser over S: :math:`\sum_{i \le k} (1-\alpha)^{i-1} d(i)`,
    with :math:`d(i) = 1/\log_2(i + 1)` (``"log"``) or :math:`1/i` (``"reciprocal"``).

    Its cost does not grow with k: for α > 0 the terms fall geometrically and the sum
    stops once a term is below 1e-17 of the total (it no longer changes the double); for
    α = 0 the reciprocal sum is the harmonic number :math:`\psi(k + 1) + \gamma`, and
    the logarithmic one is summed term by term to :data:`_EXACT_TERMS`, then by
    Euler-Maclaurin from there, :math:`\int_a^b d + (d(a) + d(b))/2 + (d'(b) - d'(a))/12`
    with :math:`\int d = \ln 2\, \mathrm{li}(x + 1)` (the next term is below 1e-30 of
    the sum).

    Examples
    --------
    >>> round(ideal_ideal(0.5, 3, "reciprocal"), 12)  # 1 + 0.5 / 2 + 0.25 / 3
    1.333333333333
    >>> ideal_ideal(0.5, 10**12, "log") == ideal_ideal(0.5, 10**4, "log")
    True
    """
    if alpha > 0.0:
        total, weight, i = 0.0, 1.0, 1
        while i <= k:
            term = weight * (1.0 / i if discount == "reciprocal" else math.log(2.0) / math.log1p(i))
            total += term
            if term < 1e-17 * total:
                break
            weight *= 1.0 - alpha
            i += 1
        return total
    from scipy.special import digamma, expi

    if discount == "reciprocal":
        return float(digamma(k + 1.0)) + float(np.euler_gamma)
    n = min(k, _EXACT_TERMS)
    total = float((math.log(2.0) / np.log1p(np.arange(1, n + 1, dtype=np.float64))).sum())
    if k == n:
        return total
    a, b = float(n + 1), float(k)  # the terms n + 1 .. k

    def d(x: float) -> float:
        return math.log(2.0) / math.log1p(x)

    def slope(x: float) -> float:
        return -math.log(2.0) / ((x + 1.0) * math.log1p(x) ** 2)

    integral = math.log(2.0) * (float(expi(math.log1p(b))) - float(expi(math.log1p(a))))
    return total + integral + (d(a) + d(b)) / 2.0 + (slope(b) - slope(a)) / 12.0
