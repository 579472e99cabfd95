"""Synthetic TREC-like runs and qrels, generated fast and reproducibly.

What makes the data realistic, and hard for an evaluator:

* doc ids are strings like real TREC docnos (``FBIS3-12345``, ``LA010189-7``,
  ``FR940104-0-311``), of mixed length, so string tie-breaking matters;
* scores are rounded to three decimals, so many rows tie with a
  neighbour and the trec_eval tie rule (doc id descending) decides their rank;
* a run retrieves ``depth`` documents per query (1000, as in TREC), some
  queries fewer; rows of a query come in arbitrary order (as from a re-ranker);
* qrels are graded 0..3, pooled mostly from the top of the ranking, plus judged
  documents that the run never retrieved (a missed relevant document costs
  recall and AP);
* about 1% of run queries have no qrels and 1% of qrels queries have no run.

Doc ids of a query are ``(a + j * b) mod N`` for j = 0, 1, ..., with N prime:
distinct without any sampling, and positions j >= depth are never retrieved.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import polars as pl

N_DOCS = 1_000_003  # prime: the progressions below never repeat a doc id
PREFIXES = ["FBIS3-", "FBIS4-", "FT911-", "FT944-", "LA010189-", "LA123190-", "FR940104-0-"]
POOL_DEPTH = 200
UNRETRIEVED_JUDGED = 50


def doc_names(index: pl.Expr) -> pl.Expr:
    """Integer doc index -> docno string (prefix by index mod 7, number by index div 7)."""
    prefix = pl.lit(pl.Series(PREFIXES)).gather(index % len(PREFIXES))
    return pl.concat_str(prefix, (index // len(PREFIXES)).cast(pl.String))


def query_names(index: pl.Expr) -> pl.Expr:
    """Integer query index -> query id string (TREC topic numbers, from 301)."""
    return (index + 301).cast(pl.String)


def _progressions(rng: np.random.Generator, n_queries: int) -> tuple[np.ndarray, np.ndarray]:
    """Start and step of each query's doc-id progression."""
    return rng.integers(0, N_DOCS, n_queries), rng.integers(1, N_DOCS, n_queries)


def _lengths(rng: np.random.Generator, n_queries: int, depth: int) -> np.ndarray:
    """Documents retrieved per query: ``depth``, except 5% of queries that stop early."""
    short = rng.random(n_queries) < 0.05
    return np.where(short, rng.integers(1, depth + 1, n_queries), depth)


def run_frame(
    rng: np.random.Generator,
    starts: np.ndarray,
    steps: np.ndarray,
    lengths: np.ndarray,
    *,
    skill: float = 1.0,
    first: int = 0,
) -> pl.DataFrame:
    """One system's run: ``query, doc, score`` with rows in arbitrary order per query.

    The score falls with the position j in the query's progression (the
    positions that qrels judge relevant most often), plus noise scaled by
    ``1 / skill``; rounded to 3 decimals so that ties are common. Query ``i``
    of the arrays is named as query ``first + i``.
    """
    qidx = np.repeat(np.arange(len(lengths)), lengths)
    offsets = np.cumsum(lengths) - lengths
    j = np.arange(len(qidx)) - np.repeat(offsets, lengths)
    doc = (starts[qidx] + j * steps[qidx]) % N_DOCS
    score = 10.0 * np.exp(-j / 300.0) + rng.normal(0.0, 1.5 / skill, len(j))
    order = np.lexsort((rng.random(len(j)), qidx))  # shuffle rows within each query
    frame = pl.DataFrame(
        {"q": qidx[order] + first, "d": doc[order], "score": np.round(score[order], 3) + 20.0}
    )
    return frame.select(
        query_names(pl.col("q")).alias("query"), doc_names(pl.col("d")).alias("doc"), "score"
    )


def qrels_frame(
    rng: np.random.Generator, starts: np.ndarray, steps: np.ndarray, depth: int, first: int = 0
) -> pl.DataFrame:
    """Graded qrels: a pool from positions < 200 plus 50 positions the run never reaches.

    Query ``i`` of the arrays is named as query ``first + i``.
    """
    n_queries = len(starts)
    pooled = rng.random((n_queries, POOL_DEPTH)) < 0.7
    qi, j = np.nonzero(pooled)
    qu = np.repeat(np.arange(n_queries), UNRETRIEVED_JUDGED)
    ju = max(depth, POOL_DEPTH) + np.tile(np.arange(UNRETRIEVED_JUDGED), n_queries) * 7
    qi, j = np.concatenate([qi, qu]), np.concatenate([j, ju])
    p_rel = np.where(j < depth, 0.6 * np.exp(-j / 80.0), 0.15)
    u = rng.random(len(j))
    grade = np.where(u < p_rel, 1 + (u < p_rel / 2) + (u < p_rel / 6), 0)
    doc = (starts[qi] + j * steps[qi]) % N_DOCS
    frame = pl.DataFrame({"q": qi + first, "d": doc, "relevance": grade.astype(np.int32)})
    return frame.select(
        query_names(pl.col("q")).alias("query"),
        doc_names(pl.col("d")).alias("doc"),
        "relevance",
    )


def make_corpus(
    n_rows: int, *, depth: int = 1000, systems: int = 1, seed: int = 0
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A run of about ``n_rows`` rows (over ``systems``) and its qrels.

    Parameters
    ----------
    n_rows
        Target total number of run rows; queries = n_rows / (depth * systems).
    depth
        Documents retrieved per query (fewer for 5% of queries).
    systems
        With more than one, the run has a ``system`` column (``sys0``, ...),
        every system ranking the same queries with its own noise.
    seed
        Everything is a function of it.

    Returns
    -------
    run, qrels
        ``[system], query, doc, score`` and ``query, doc, relevance``.
    """
    rng = np.random.default_rng(seed)
    n_queries = max(1, round(n_rows / depth / systems))
    starts, steps = _progressions(rng, n_queries)
    lengths = _lengths(rng, n_queries, depth)
    qrels = qrels_frame(rng, starts, steps, depth)
    in_run = rng.random(n_queries) >= 0.01  # 1% of qrels queries are not in the run
    lengths = np.where(in_run, lengths, 0)
    unjudged = rng.random(n_queries) < 0.01  # 1% of run queries get no qrels
    qrels = qrels.filter(~pl.col("query").is_in(query_names(pl.Series(np.nonzero(unjudged)[0]))))
    runs = [
        run_frame(rng, starts, steps, lengths, skill=1.0 + s / 4).select(
            *([pl.lit(f"sys{s}").alias("system")] if systems > 1 else []), pl.all()
        )
        for s in range(systems)
    ]
    return pl.concat(runs), qrels


def write_shuffled_run(
    out: Path,
    n_rows: int,
    *,
    depth: int = 1000,
    seed: int = 0,
    chunk_rows: int = 2_000_000,
) -> None:
    """Write a single-system run of about ``n_rows`` rows, its rows shuffled across
    queries, as ``out/run.parquet``, and its qrels as ``out/qrels.parquet``.

    The corpus is :func:`make_corpus`'s (same per-query recipe, not the same
    random draws), generated ``chunk_rows`` rows at a time so that memory stays
    bounded whatever ``n_rows``: each chunk of queries sends each of its rows to
    one of ``n_rows / chunk_rows`` parts at random (a file per chunk and part);
    each part is then read, shuffled and written; the parts are concatenated into
    one file by a streaming sink. A row's position is uniform over the file, so
    a query's rows are spread over all of it.
    """
    rng = np.random.default_rng(seed)
    n_queries = max(1, round(n_rows / depth))
    starts, steps = _progressions(rng, n_queries)
    lengths = _lengths(rng, n_queries, depth)
    lengths = np.where(rng.random(n_queries) >= 0.01, lengths, 0)  # 1%: qrels only
    unjudged = rng.random(n_queries) < 0.01  # 1% of run queries get no qrels
    per_chunk = max(1, chunk_rows // depth)
    n_parts = max(1, -(-n_rows // chunk_rows))
    tmp = out / "tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    qrels_parts = []
    for c, lo in enumerate(range(0, n_queries, per_chunk)):
        hi = min(n_queries, lo + per_chunk)
        crng = np.random.default_rng([seed, c])
        qrels = qrels_frame(crng, starts[lo:hi], steps[lo:hi], depth, first=lo)
        judged = query_names(pl.Series(np.nonzero(~unjudged[lo:hi])[0] + lo))
        qrels_parts.append(qrels.filter(pl.col("query").is_in(judged.implode())))
        run = run_frame(crng, starts[lo:hi], steps[lo:hi], lengths[lo:hi], first=lo)
        part = pl.Series("part", crng.integers(0, n_parts, run.height), dtype=pl.UInt32)
        for (p,), rows in (
            run.with_columns(part).partition_by("part", as_dict=True, include_key=False).items()
        ):
            rows.write_parquet(tmp / f"p{p:05d}-c{c:05d}.parquet", compression="uncompressed")
    pl.concat(qrels_parts).write_parquet(out / "qrels.parquet")
    for p in range(n_parts):
        pieces = sorted(tmp.glob(f"p{p:05d}-c*.parquet"))
        if pieces:
            rows = pl.read_parquet(pieces)
            rows.sample(fraction=1.0, shuffle=True, seed=seed + p).write_parquet(
                tmp / f"s{p:05d}.parquet", compression="uncompressed"
            )
            for piece in pieces:
                piece.unlink()
    pl.scan_parquet(sorted(tmp.glob("s*.parquet"))).sink_parquet(out / "run.parquet")
    shutil.rmtree(tmp)


def write_trec_run(run: pl.DataFrame, path: str, tag: str = "bench") -> None:
    """Write a run as a TREC file: ``query Q0 doc rank score tag``, in rank order."""
    ranked = run.sort(["query", "score"], descending=[False, True])
    ranked.select(
        "query",
        pl.lit("Q0").alias("q0"),
        "doc",
        pl.int_range(1, pl.len() + 1).over("query").alias("rank"),
        "score",
        pl.lit(tag).alias("tag"),
    ).write_csv(path, separator=" ", include_header=False)


def write_trec_qrels(qrels: pl.DataFrame, path: str) -> None:
    """Write qrels as a TREC file: ``query 0 doc relevance``."""
    qrels.select("query", pl.lit("0").alias("iter"), "doc", "relevance").write_csv(
        path, separator=" ", include_header=False
    )
