"""Seeded random corpora that stress trec_eval's conventions, and the pytrec_eval reference.

Used by the conformance tests and by the benchmarks' correctness check.
"""

from __future__ import annotations

import numpy as np
import polars as pl

TREC_NAMES = {
    "AP": "map",
    "RR": "recip_rank",
    "nDCG": "ndcg",
    "Rprec": "Rprec",
    "NumRet": "num_ret",
    "NumRel": "num_rel",
    "NumRelRet": "num_rel_ret",
    "Bpref": "bpref",
    "infAP": "infAP",
    "G": "G",
    "binG": "binG",
    "Rndcg": "Rndcg",
    "nDCGRel": "ndcg_rel",
    "Utility": "utility",
    "NumNonRelJudgedRet": "num_nonrel_judged_ret",
    "SetP": "set_P",
    "SetR": "set_recall",
    "SetF": "set_F",
    "SetAP": "set_map",
    "SetRelP": "set_relative_P",
    "IPrecAvg": "11pt_avg",
}
TREC_CUTOFF_NAMES = {
    "AP": "map_cut",
    "P": "P",
    "R": "recall",
    "nDCG": "ndcg_cut",
    "Success": "success",
    "RelP": "relative_P",
}


def random_doc_ids(rng: np.random.Generator, n: int) -> list[str]:
    """Doc ids of mixed length and case, so byte-wise string order matters."""
    prefixes = np.array(["d", "D", "doc-", "FT93-", "a", "z9", "LA0101", ""])
    return [
        f"{prefixes[p]}{v}"
        for p, v in zip(rng.integers(0, len(prefixes), n), rng.integers(0, 400, n), strict=True)
    ]


def random_corpus(
    seed: int,
    *,
    n_queries: int = 40,
    max_docs: int = 60,
    tie_levels: int = 4,
    grades: tuple[int, ...] = (-1, 0, 0, 1, 1, 2, 3),
    systems: int = 1,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A run and qrels with ties, string ids, graded and negative grades.

    Some run queries have no qrels, some qrels queries are absent from the run,
    some queries have no relevant document, many runs are shorter than 10.
    """
    rng = np.random.default_rng(seed)
    run_rows: list[tuple[str, str, str, float]] = []
    qrels_rows: list[tuple[str, str, int]] = []
    for qi in range(n_queries):
        q = f"q{qi}" if qi % 3 else str(100 + qi)
        pool = list(dict.fromkeys(random_doc_ids(rng, max_docs * 2)))
        kind = rng.integers(0, 10)
        if kind != 0:  # kind 0: query missing from qrels
            judged = rng.choice(len(pool), size=rng.integers(1, len(pool) // 2 + 2), replace=False)
            zero_rel = kind == 1  # no relevant document at any level
            for j in judged:
                g = int(rng.choice(grades))
                qrels_rows.append((q, pool[j], min(g, 0) if zero_rel else g))
        if kind == 9:
            continue  # query missing from the run
        for s in range(systems):
            n = int(rng.integers(1, max_docs))
            docs = rng.choice(len(pool), size=min(n, len(pool)), replace=False)
            scores = rng.integers(0, tie_levels, len(docs)) / 2.0
            run_rows += [
                (f"sys{s}", q, pool[d], float(v)) for d, v in zip(docs, scores, strict=True)
            ]
    run = pl.DataFrame(run_rows, schema=["system", "query", "doc", "score"], orient="row")
    qrels = pl.DataFrame(qrels_rows, schema=["query", "doc", "relevance"], orient="row")
    if systems == 1:
        run = run.drop("system")
    return run, qrels


def trec_name(measure: str) -> str:
    """Canonical name (AP, P@10, ...) -> pytrec_eval output key (map, P_10, ...)."""
    name, _, cutoff = measure.partition("@")
    return f"{TREC_CUTOFF_NAMES[name]}_{cutoff}" if cutoff else TREC_NAMES[name]


def as_dicts(
    run: pl.DataFrame, qrels: pl.DataFrame
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, int]]]:
    """The run and qrels as pytrec_eval's and ir_measures' dict-of-dict inputs."""
    run_d: dict[str, dict[str, float]] = {}
    for q, d, s in run.select("query", "doc", "score").iter_rows():
        run_d.setdefault(str(q), {})[str(d)] = float(s)
    qrels_d: dict[str, dict[str, int]] = {}
    for q, d, g in qrels.select("query", "doc", "relevance").iter_rows():
        qrels_d.setdefault(str(q), {})[str(d)] = int(g)
    return run_d, qrels_d


def pytrec_reference(
    run: pl.DataFrame, qrels: pl.DataFrame, measures: list[str], rel_level: int = 1
) -> dict[str, dict[str, float]]:
    """Per-query values from trec_eval (pytrec-eval-terrier) for canonical measure names."""
    import pytrec_eval

    run_d, qrels_d = as_dicts(run, qrels)
    families: dict[str, set[str]] = {}
    for m in measures:
        name, _, cutoff = m.partition("@")
        if cutoff:
            families.setdefault(TREC_CUTOFF_NAMES[name], set()).add(cutoff)
        else:
            families.setdefault(TREC_NAMES[name], set())
    trec_measures = {f + ("." + ",".join(sorted(c)) if c else "") for f, c in families.items()}
    ev = pytrec_eval.RelevanceEvaluator(qrels_d, trec_measures, relevance_level=rel_level)
    out = ev.evaluate(run_d)
    return {q: {m: vals[trec_name(m)] for m in measures} for q, vals in out.items()}


def mismatches(
    ours: pl.DataFrame,
    reference: dict[str, dict[str, float]],
    measures: list[str],
    tol: float = 1e-9,
) -> list[tuple[str, str, float, float]]:
    """(query, measure, ours, trec_eval) for every value that differs, plus query-set diffs."""
    got = {str(r["query"]): r for r in ours.iter_rows(named=True)}
    bad: list[tuple[str, str, float, float]] = []
    for q in sorted(set(got) ^ set(reference)):
        bad.append((q, "<query set>", float(q in got), float(q in reference)))
    for q in sorted(set(got) & set(reference)):
        for m in measures:
            if abs(got[q][m] - reference[q][m]) > tol:
                bad.append((q, m, got[q][m], reference[q][m]))
    return bad


# The whole all_trec set of trec_eval at its default parameters (what `-m all_trec` prints).
ALL_TREC_REQUEST = {
    "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
    "iprec_at_recall", "P", "recall", "infAP", "gm_bpref", "Rprec_mult", "utility",
    "11pt_avg", "binG", "G", "ndcg", "ndcg_rel", "Rndcg", "ndcg_cut", "map_cut",
    "relative_P", "success", "set_P", "set_relative_P", "set_recall", "set_map", "set_F",
    "num_nonrel_judged_ret",
}  # fmt: skip
GEOMETRIC = {"gm_map", "gm_bpref"}
"""pytrec_eval reports these per query as log(max(value, 1e-5)); the library, the value."""


def pytrec_all_trec(
    run: pl.DataFrame, qrels: pl.DataFrame, rel_level: int = 1, request: set[str] | None = None
) -> dict[str, dict[str, float]]:
    """Per-query values of every trec_eval measure, keyed by trec_eval output name."""
    import pytrec_eval

    run_d, qrels_d = as_dicts(run, qrels)
    ev = pytrec_eval.RelevanceEvaluator(
        qrels_d, request or ALL_TREC_REQUEST, relevance_level=rel_level
    )
    return ev.evaluate(run_d)
