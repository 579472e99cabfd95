"""One tool on one workload, in a fresh process: ``python workers.py TOOL WORKLOAD DIR``.

Prints one JSON line: the wall times of each repeat, this process's peak RSS
(``ru_maxrss``, which includes loading the inputs), the RSS before the inputs
were loaded, and the in-memory size of the input frames. The driver
(``run.py``) starts one such process per (size, tool, workload), so that peak
RSS is the tool's own and nothing stays warm between tools.

Workloads
---------
frames
    Polars frames in memory -> per-query values. Each peer pays for what a
    Polars user must do to call it (building dicts or pandas frames).
warm
    ranx only: ``evaluate`` on Qrels/Run structures built beforehand.
files
    TREC run and qrels files on disk -> per-query values.
stream
    polars_rankeval only: a Parquet dataset -> mean per measure and system, on
    the streaming engine, one system at a time.
"""

from __future__ import annotations

import json
import resource
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

MEASURES = ["AP", "AP@10", "P@5", "P@10", "R@10", "R@100", "RR", "nDCG", "nDCG@10", "Rprec"]
TREC_MEASURES = {"map", "map_cut.10", "P.5,10", "recall.10,100", "recip_rank", "ndcg"}
TREC_MEASURES |= {"ndcg_cut.10", "Rprec"}
RANX_MEASURES = ["map", "map@10", "precision@5", "precision@10", "recall@10", "recall@100"]
RANX_MEASURES += ["mrr", "ndcg", "ndcg@10", "r-precision"]
IRM_MEASURES = ["AP", "AP@10", "P@5", "P@10", "R@10", "R@100", "RR", "nDCG", "nDCG@10", "Rprec"]


def peak_rss_bytes() -> int:
    """Peak resident set size of this process so far: ``VmHWM`` of /proc/self/status.

    Not ``ru_maxrss``: on Linux that keeps the parent's peak from before
    ``exec``, so a child of a big driver process would report the driver's peak.
    """
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def current_rss_bytes() -> int:
    """Resident set size of this process now."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


# --------------------------------------------------------------------- frames -> per query


def pytrec_dicts(run: pl.DataFrame, qrels: pl.DataFrame) -> tuple[dict, dict]:
    """The nested dicts pytrec_eval and ranx take, built from Polars frames."""
    qrels_d: dict[str, dict[str, int]] = {}
    for q, d, g in qrels.select("query", "doc", "relevance").iter_rows():
        qrels_d.setdefault(q, {})[d] = g
    run_d: dict[str, dict[str, float]] = {}
    for q, d, s in run.select("query", "doc", "score").iter_rows():
        run_d.setdefault(q, {})[d] = s
    return qrels_d, run_d


def pytrec_frames(run: pl.DataFrame, qrels: pl.DataFrame) -> dict:
    import pytrec_eval

    qrels_d, run_d = pytrec_dicts(run, qrels)
    return pytrec_eval.RelevanceEvaluator(qrels_d, TREC_MEASURES).evaluate(run_d)


def ranx_structures(run: pl.DataFrame, qrels: pl.DataFrame) -> tuple[Any, Any]:
    """ranx Qrels and Run from Polars frames, through pandas (``from_df``)."""
    from ranx import Qrels, Run

    qdf = qrels.select(
        pl.col("query").alias("q_id"), pl.col("doc").alias("doc_id"), pl.col("relevance")
    ).to_pandas()
    rdf = run.select(
        pl.col("query").alias("q_id"), pl.col("doc").alias("doc_id"), pl.col("score")
    ).to_pandas()
    # ranx requires object (Python str) id columns; pandas >= 3 defaults to its str dtype.
    qdf = qdf.astype({"q_id": object, "doc_id": object, "relevance": "int64"})
    rdf = rdf.astype({"q_id": object, "doc_id": object})
    return (
        Qrels.from_df(qdf, q_id_col="q_id", doc_id_col="doc_id", score_col="relevance"),
        Run.from_df(rdf, q_id_col="q_id", doc_id_col="doc_id", score_col="score"),
    )


def ranx_evaluate(qrels: Any, run: Any) -> dict:
    from ranx import evaluate

    evaluate(qrels, run, RANX_MEASURES, make_comparable=True)
    return run.scores


def ranx_frames(run: pl.DataFrame, qrels: pl.DataFrame) -> dict:
    q, r = ranx_structures(run, qrels)
    return ranx_evaluate(q, r)


def ir_measures_frames(run: pl.DataFrame, qrels: pl.DataFrame) -> list:
    import ir_measures

    qdf = qrels.select(
        pl.col("query").alias("query_id"), pl.col("doc").alias("doc_id"), "relevance"
    ).to_pandas()
    rdf = run.select(
        pl.col("query").alias("query_id"), pl.col("doc").alias("doc_id"), "score"
    ).to_pandas()
    measures = [ir_measures.parse_measure(m) for m in IRM_MEASURES]
    return list(ir_measures.iter_calc(measures, qdf, rdf))


def ours_frames(run: pl.DataFrame, qrels: pl.DataFrame) -> pl.DataFrame:
    import polars_rankeval as pr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pr.evaluate(run, qrels, MEASURES)


def ceiling_frames(run: pl.DataFrame, qrels: pl.DataFrame) -> pl.DataFrame:
    """The floor for any exact evaluator: one join and one trec_eval-order sort."""
    return (
        run.lazy()
        .join(qrels.lazy(), on=["query", "doc"], how="left")
        .sort(["query", "score", "doc"], descending=[False, True, True])
        .collect()
    )


# --------------------------------------------------------------------- files -> per query


def pytrec_files(run_path: str, qrels_path: str) -> dict:
    import pytrec_eval

    with open(qrels_path) as f:
        qrels = pytrec_eval.parse_qrel(f)
    with open(run_path) as f:
        run = pytrec_eval.parse_run(f)
    return pytrec_eval.RelevanceEvaluator(qrels, TREC_MEASURES).evaluate(run)


def ranx_files(run_path: str, qrels_path: str) -> dict:
    from ranx import Qrels, Run

    return ranx_evaluate(
        Qrels.from_file(qrels_path, kind="trec"), Run.from_file(run_path, kind="trec")
    )


def ir_measures_files(run_path: str, qrels_path: str) -> list:
    import ir_measures

    measures = [ir_measures.parse_measure(m) for m in IRM_MEASURES]
    return list(
        ir_measures.iter_calc(
            measures,
            ir_measures.read_trec_qrels(qrels_path),
            ir_measures.read_trec_run(run_path),
        )
    )


def ours_files(run_path: str, qrels_path: str) -> pl.DataFrame:
    import polars_rankeval as pr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pr.evaluate(pr.read_trec_run(run_path), pr.read_trec_qrels(qrels_path), MEASURES)


def ceiling_files(run_path: str, qrels_path: str) -> pl.DataFrame:
    import polars_rankeval as pr

    return ceiling_frames(pr.read_trec_run(run_path), pr.read_trec_qrels(qrels_path))


# --------------------------------------------------------------------- parquet, streaming


def ours_stream(run_path: str, qrels_path: str) -> pl.DataFrame:
    """Means per system and measure over a Parquet dataset, one system at a time."""
    import polars_rankeval as pr

    scan = pl.scan_parquet(run_path)
    systems = scan.select(pl.col("system").unique()).collect(engine="streaming")["system"]
    qrels = pl.scan_parquet(qrels_path)
    parts = []
    for name in systems.sort():
        run = scan.filter(pl.col("system") == name)
        lf = pr.evaluate(run, qrels, MEASURES, per_query=False)
        parts.append(lf.collect(engine="streaming"))
    return pl.concat(parts)


def ceiling_stream(run_path: str, qrels_path: str) -> pl.DataFrame:
    """Join + trec_eval-order sort of each system's run, streaming engine."""
    scan = pl.scan_parquet(run_path)
    systems = scan.select(pl.col("system").unique()).collect(engine="streaming")["system"]
    qrels = pl.scan_parquet(qrels_path)
    for name in systems.sort():
        (
            scan.filter(pl.col("system") == name)
            .join(qrels, on=["query", "doc"], how="left")
            .sort(["query", "score", "doc"], descending=[False, True, True])
            .select(pl.col("doc").gather_every(100_000))  # depends on the order: no shortcut
            .collect(engine="streaming")
        )
    return pl.DataFrame()


# --------------------------------------------------------------------- driver side

FRAME_TOOLS: dict[str, Callable] = {
    "polars_rankeval": ours_frames,
    "join+sort": ceiling_frames,
    "pytrec_eval": pytrec_frames,
    "ranx": ranx_frames,
    "ir_measures": ir_measures_frames,
}
FILE_TOOLS: dict[str, Callable] = {
    "polars_rankeval": ours_files,
    "join+sort": ceiling_files,
    "pytrec_eval": pytrec_files,
    "ranx": ranx_files,
    "ir_measures": ir_measures_files,
}
STREAM_TOOLS: dict[str, Callable] = {"polars_rankeval": ours_stream, "join+sort": ceiling_stream}


def _warm_up(tool: str, workload: str) -> None:
    """Run the tool once on a tiny corpus (imports, numba JIT, Polars thread pool)."""
    sys.path.insert(0, str(Path(__file__).parent))
    from data import make_corpus

    run, qrels = make_corpus(2_000, depth=100, seed=1)
    if tool in FRAME_TOOLS:
        FRAME_TOOLS[tool](run, qrels)
    if tool == "ranx":
        ranx_evaluate(*ranx_structures(run, qrels))


def _timed(call: Callable[[], Any], repeats: int, budget: float) -> list[float]:
    """Wall times of up to ``repeats`` calls; stop early once ``budget`` s are spent."""
    times: list[float] = []
    while not times or (len(times) < repeats and sum(times) < budget):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return times


def check_against_trec_eval(path: Path, sample: int) -> str:
    """Compare our per-query values with pytrec_eval's on (a sample of) the queries."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from corpus import mismatches, pytrec_reference

    run = pl.read_parquet(path / "run.parquet")
    qrels = pl.read_parquet(path / "qrels.parquet")
    ours = ours_frames(run, qrels)
    queries = run["query"].unique().sort()
    if queries.len() > sample:
        queries = queries.sample(sample, seed=0)
    chosen = pl.col("query").is_in(queries.implode())
    reference = pytrec_reference(run.filter(chosen), qrels.filter(chosen), MEASURES)
    bad = mismatches(ours.filter(chosen), reference, MEASURES)
    return f"{len(bad)} mismatches (1e-9) over {len(reference)} queries x {len(MEASURES)} measures"


def main(tool: str, workload: str, data_dir: str, repeats: int, budget: float) -> dict:
    """Run one (tool, workload) on the inputs in ``data_dir``; return the measurements.

    Workload ``check`` compares values with trec_eval instead (``repeats`` is
    then the number of queries to check).
    """
    if workload == "check":
        return {"check": check_against_trec_eval(Path(data_dir), repeats)}
    _warm_up(tool, workload)
    base = Path(data_dir)
    baseline = current_rss_bytes()
    out: dict[str, Any] = {"tool": tool, "workload": workload, "rss_baseline": baseline}
    if workload in ("frames", "warm"):
        run = pl.read_parquet(base / "run.parquet")
        qrels = pl.read_parquet(base / "qrels.parquet")
        out["input_bytes"] = run.estimated_size() + qrels.estimated_size()
        if workload == "warm":
            structures = ranx_structures(run, qrels)
            del run, qrels
            call = lambda: ranx_evaluate(*structures)  # noqa: E731
        else:
            fn = FRAME_TOOLS[tool]
            call = lambda: fn(run, qrels)  # noqa: E731
    else:
        tools = FILE_TOOLS if workload == "files" else STREAM_TOOLS
        names = (
            ("run.trec", "qrels.trec")
            if workload == "files"
            else ("stream/*.parquet", "qrels.parquet")
        )
        paths = [str(base / n) for n in names]
        fn = tools[tool]
        call = lambda: fn(*paths)  # noqa: E731
    out["times"] = _timed(call, repeats, budget)
    out["rss_peak"] = peak_rss_bytes()
    return out


if __name__ == "__main__":
    tool_, workload_, dir_, repeats_, budget_ = sys.argv[1:6]
    print(json.dumps(main(tool_, workload_, dir_, int(repeats_), float(budget_))))
