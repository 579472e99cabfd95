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
    the streaming engine, one system at a time (and, tool ``polars_rankeval
    (one call)``, every system in one lazy call, bucketed by the engine).
alltrec
    Frames -> per-query values of trec_eval's whole ``all_trec`` set (92
    measures at default parameters): polars_rankeval or pytrec_eval (dicts
    built from the frames, as in *frames*).
mix
    polars_rankeval only, one process: the ten core measures and the ten plus
    Bpref, infAP, IPrec@0.5, SetF and NumRet, called in alternation.
inputs
    polars_rankeval only, one process: the same run as a DataFrame, as
    ``df.lazy()``, as a Parquet scan, read from Parquet then evaluated, and as
    ``pr.judge``'s table through ``evaluate_judged``, called in alternation;
    then each variant's values are compared with the DataFrame path's.
versus
    One process: polars_rankeval and pytrec_eval end to end (as in *frames* and
    *alltrec*), core ten and all_trec, called in alternation, so that the
    ratios to the peer hold under a shared machine's load.
scan
    A single-system Parquet file shuffled across queries -> means
    (``per_query=False``): tool ``polars_rankeval`` is the lazy scan
    (``pr.evaluate(pl.scan_parquet(...), ...).collect()``, default memory
    limit), tool ``in memory`` reads the file with ``pl.read_parquet`` and
    evaluates the DataFrame. One timed call per process; the means are returned.

Alternating workloads (*mix*, *inputs*) run every variant once per round, in
an order rotated each round, so that load on a shared machine falls on all of
them alike; each variant's time is also compared with the reference variant's
time in the same round (the median of those per-round ratios is reported).
Before every timed call the garbage collector runs (not timed), so that no
call pays for collecting the Python objects of the call before (pytrec_eval's
dicts: up to a third of polars_rankeval's time right after a pytrec_eval call).
Per-variant peak RSS there is the process's peak while that variant ran
(``VmHWM`` reset through ``/proc/self/clear_refs`` before each call), inputs
included.
"""

from __future__ import annotations

import gc
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
MIX = [*MEASURES, "Bpref", "infAP", "IPrec@0.5", "SetF", "NumRet"]
"""The core ten plus the measures that used to send a call to the slow plan."""
CUTOFFS = ["5", "10", "15", "20", "30", "100", "200", "500", "1000"]
ALL_TREC = [
    *["NumRet", "NumRel", "NumRelRet", "NumNonRelJudgedRet", "AP", "GMAP", "Rprec"],
    *["Bpref", "GMBpref", "RR", "infAP", "IPrecAvg", "Utility"],
    *["G", "binG", "nDCG", "nDCGRel", "Rndcg", "SetP", "SetR", "SetF", "SetAP", "SetRelP"],
    *[f"IPrec@{r / 10:.1f}" for r in range(11)],
    *[f"Rprec(mult={m / 10:.1f})" for m in range(2, 21, 2)],
    *[f"{m}@{k}" for m in ("P", "R", "AP", "nDCG", "RelP") for k in CUTOFFS],
    *["Success@1", "Success@5", "Success@10"],
]
"""trec_eval's all_trec (default parameters) as canonical names: ``pr.parse`` of
pytrec_eval's output keys (the check workload verifies that the two agree)."""
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


def reset_peak_rss() -> bool:
    """Reset this process's ``VmHWM`` to its current RSS (Linux >= 4.0); False if refused."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True


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


def trec_all_request() -> set[str]:
    """The all_trec request of the conformance tests (``tests/corpus.py``)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from corpus import ALL_TREC_REQUEST

    return set(ALL_TREC_REQUEST)


def pytrec_alltrec(run: pl.DataFrame, qrels: pl.DataFrame) -> dict:
    """pytrec_eval's all_trec, end to end: nested dicts from the frames, then evaluate."""
    import pytrec_eval

    qrels_d, run_d = pytrec_dicts(run, qrels)
    return pytrec_eval.RelevanceEvaluator(qrels_d, trec_all_request()).evaluate(run_d)


def ours_alltrec(run: pl.DataFrame, qrels: pl.DataFrame) -> pl.DataFrame:
    import polars_rankeval as pr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pr.evaluate(run, qrels, ALL_TREC)


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


def ours_stream_one_call(run_path: str, qrels_path: str) -> pl.DataFrame:
    """Means per system and measure over a Parquet dataset, every system in one lazy call."""
    import polars_rankeval as pr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lf = pr.evaluate(
            pl.scan_parquet(run_path), pl.scan_parquet(qrels_path), MEASURES, per_query=False
        )
        return lf.collect()


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
STREAM_TOOLS: dict[str, Callable] = {
    "polars_rankeval": ours_stream,
    "polars_rankeval (one call)": ours_stream_one_call,
    "join+sort": ceiling_stream,
}
ALLTREC_TOOLS: dict[str, Callable] = {
    "polars_rankeval": ours_alltrec,
    "pytrec_eval": pytrec_alltrec,
}


# --------------------------------------------------------------------- alternating variants


def _evaluate(run: Any, qrels: Any, measures: list[str], **kw: Any) -> pl.DataFrame:
    import polars_rankeval as pr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = pr.evaluate(run, qrels, measures, **kw)
        return out.collect() if isinstance(out, pl.LazyFrame) else out


def mix_variants(base: Path) -> tuple[dict[str, Callable[[], Any]], dict[str, Any]]:
    """The core ten and the core+5 mix on the same DataFrames."""
    run = pl.read_parquet(base / "run.parquet")
    qrels = pl.read_parquet(base / "qrels.parquet")
    calls = {
        "core (10 measures)": lambda: _evaluate(run, qrels, MEASURES),
        "core+5 (15 measures)": lambda: _evaluate(run, qrels, MIX),
    }
    return calls, {"input_bytes": run.estimated_size() + qrels.estimated_size()}


def input_variants(base: Path) -> tuple[dict[str, Callable[[], Any]], dict[str, Any]]:
    """One run through every way in: the DataFrame path first (the reference)."""
    import polars_rankeval as pr

    run_path = base / "run.parquet"
    run = pl.read_parquet(run_path)
    qrels = pl.read_parquet(base / "qrels.parquet")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        judged = pr.judge(run, qrels)

    judged_path = base / "judged.parquet"  # ranking by ranking, as judge returns it
    if not judged_path.exists():
        judged.write_parquet(judged_path)

    def judged_call() -> pl.DataFrame:
        return pr.evaluate_judged(judged, MEASURES)

    def judged_scan() -> pl.DataFrame:
        return pr.evaluate_judged(pl.scan_parquet(judged_path), MEASURES).collect()

    calls = {
        "DataFrame": lambda: _evaluate(run, qrels, MEASURES),
        "df.lazy()": lambda: _evaluate(run.lazy(), qrels, MEASURES),
        "scan_parquet": lambda: _evaluate(pl.scan_parquet(run_path), qrels, MEASURES),
        "read_parquet + DataFrame": lambda: _evaluate(pl.read_parquet(run_path), qrels, MEASURES),
        "evaluate_judged": judged_call,
        "evaluate_judged (scan_parquet)": judged_scan,
    }
    extra = {
        "input_bytes": run.estimated_size() + qrels.estimated_size(),
        "judged_rows": judged.height,
    }
    return calls, extra


def compare_values(ours: pl.DataFrame, ref: pl.DataFrame, measures: list[str]) -> dict:
    """Largest absolute difference over the queries both score, and the query-set sizes."""
    both = ref.join(ours, on="query", how="inner", suffix="__v")
    diff = both.select(
        pl.max_horizontal((pl.col(m) - pl.col(f"{m}__v")).abs().max() for m in measures)
    ).item()
    return {
        "max_abs_diff": float(diff or 0.0),
        "queries": ours.height,
        "reference_queries": ref.height,
        "common_queries": both.height,
    }


SHORT_ROUNDS = 5.0
"""Seconds of rounds the alternating workloads take at least, past ``repeats`` rounds (up
to :data:`MAX_ROUNDS`): a ratio of two calls of a tenth of a second is mostly the
machine's noise over three rounds (the core+5 mix at 1M rows, full run on 4ce00b3:
1.41x by the medians, 1.65x by the median of three rounds' ratios)."""
MAX_ROUNDS = 25


def alternate(
    calls: dict[str, Callable[[], Any]], repeats: int, budget: float
) -> dict[str, dict[str, Any]]:
    """Rounds of one call of every variant (order rotated each round), up to ``repeats``
    rounds or ``budget`` seconds, and more while they have taken under
    :data:`SHORT_ROUNDS` seconds; per variant: wall and CPU times, the ratio to the
    first variant's time in each round, and the peak RSS while it ran."""
    names = list(calls)
    out: dict[str, dict[str, Any]] = {
        n: {"times": [], "cpu": [], "round_ratios": [], "rss_peak": 0} for n in names
    }
    spent = 0.0
    r = 0
    while r == 0 or (spent < budget and (r < repeats or (spent < SHORT_ROUNDS and r < MAX_ROUNDS))):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            gc.collect()  # not timed: pytrec_eval's dicts would be collected in our call
            reset_peak_rss()
            start, cpu = time.perf_counter(), time.process_time()
            calls[name]()
            wall = time.perf_counter() - start
            out[name]["times"].append(wall)
            out[name]["cpu"].append(time.process_time() - cpu)
            out[name]["rss_peak"] = max(out[name]["rss_peak"], peak_rss_bytes())
            spent += wall
        for name in names:
            out[name]["round_ratios"].append(out[name]["times"][-1] / out[names[0]]["times"][-1])
        r += 1
    return out


def versus_variants(base: Path) -> tuple[dict[str, Callable[[], Any]], dict[str, Any]]:
    """polars_rankeval and pytrec_eval end to end, core ten and all_trec, in one process."""
    run = pl.read_parquet(base / "run.parquet")
    qrels = pl.read_parquet(base / "qrels.parquet")
    calls = {
        "polars_rankeval, core ten": lambda: ours_frames(run, qrels),
        "pytrec_eval, core ten": lambda: pytrec_frames(run, qrels),
        "polars_rankeval, all_trec": lambda: ours_alltrec(run, qrels),
        "pytrec_eval, all_trec": lambda: pytrec_alltrec(run, qrels),
    }
    return calls, {"input_bytes": run.estimated_size() + qrels.estimated_size()}


def cost_variants(base: Path) -> tuple[dict[str, Callable[[], Any]], dict[str, Any]]:
    """The costs issue 37 names, each beside what it should cost: a tie-heavy run (scores
    rounded to 0.1) beside distinct scores, with pytrec_eval on both; ``judge`` (and
    ``rank_run``, no bar) beside ``evaluate``; a pre-judged log shuffled across queries
    beside the same log ranking by ranking and the DataFrame path."""
    import polars_rankeval as pr

    run = pl.read_parquet(base / "run.parquet")
    qrels = pl.read_parquet(base / "qrels.parquet")
    tied = run.with_columns(pl.col("score").round(1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        judged = pr.judge(run, qrels)
    shuffled = judged.sample(fraction=1.0, shuffle=True, seed=0)

    def judge() -> pl.DataFrame:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return pr.judge(run, qrels)

    calls = {
        "distinct scores": lambda: _evaluate(run, qrels, MEASURES),
        "tie-heavy scores": lambda: _evaluate(tied, qrels, MEASURES),
        "pytrec_eval, distinct scores": lambda: pytrec_frames(run, qrels),
        "pytrec_eval, tie-heavy scores": lambda: pytrec_frames(tied, qrels),
        "judge": judge,
        "rank_run": lambda: pr.rank_run(run),
        "evaluate_judged, log ranking by ranking": lambda: pr.evaluate_judged(judged, MEASURES),
        "evaluate_judged, shuffled log": lambda: pr.evaluate_judged(shuffled, MEASURES),
    }
    ties = tied.group_by("query", "score").len()["len"].mean()
    extra = {"judged_rows": judged.height, "rows_per_tied_score": float(ties)}  # type: ignore[arg-type]
    return calls, extra


VARIANTS = {
    "mix": mix_variants,
    "inputs": input_variants,
    "versus": versus_variants,
    "costs": cost_variants,
}


def alternating(workload: str, base: Path, repeats: int, budget: float) -> dict[str, Any]:
    """Run the *mix*, *inputs* or *versus* workload; values compared after timing."""
    make = VARIANTS[workload]
    calls, extra = make(base)
    for call in calls.values():  # first call of each path on the real data: not timed
        call()
    variants = alternate(calls, repeats, budget)
    if workload == "inputs":
        results = {name: call() for name, call in calls.items()}
        ref = results["DataFrame"]
        for name, got in results.items():
            variants[name]["values"] = compare_values(got, ref, MEASURES)
    return {"variants": variants, **extra}


# --------------------------------------------------------------------- shuffled scan


def scan_means(tool: str, base: Path) -> pl.DataFrame:
    """Means over the shuffled single-system file: lazy scan, or read then evaluate."""
    run_path, qrels_path = base / "run.parquet", base / "qrels.parquet"
    if tool == "polars_rankeval":
        return _evaluate(
            pl.scan_parquet(run_path), pl.scan_parquet(qrels_path), MEASURES, per_query=False
        )
    return _evaluate(
        pl.read_parquet(run_path), pl.read_parquet(qrels_path), MEASURES, per_query=False
    )


def _warm_up(tool: str, workload: str) -> None:
    """Run the tool once on a tiny corpus (imports, numba JIT, Polars thread pool)."""
    sys.path.insert(0, str(Path(__file__).parent))
    from data import make_corpus

    run, qrels = make_corpus(2_000, depth=100, seed=1)
    if workload == "alltrec":
        ALLTREC_TOOLS[tool](run, qrels)
    elif tool in FRAME_TOOLS:
        FRAME_TOOLS[tool](run, qrels)
    if workload == "versus":
        pytrec_frames(run, qrels)
        pytrec_alltrec(run, qrels)
        ours_alltrec(run, qrels)
    if (tool.startswith("polars_rankeval") and workload in ("inputs", "stream")) or (
        workload == "scan"
    ):
        _evaluate(run.lazy(), qrels.lazy(), MEASURES, per_query=False)
    if tool == "ranx":
        ranx_evaluate(*ranx_structures(run, qrels))


def _timed(
    call: Callable[[], Any], repeats: int, budget: float, cpu: list[float] | None = None
) -> list[float]:
    """Wall times of up to ``repeats`` calls; stop early once ``budget`` s are spent.
    The CPU time of each call (all threads) is appended to ``cpu`` when given."""
    times: list[float] = []
    while not times or (len(times) < repeats and sum(times) < budget):
        gc.collect()  # not timed: no call pays for the garbage of the one before
        start, used = time.perf_counter(), time.process_time()
        call()
        times.append(time.perf_counter() - start)
        if cpu is not None:
            cpu.append(time.process_time() - used)
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


def check_alltrec(path: Path, sample: int) -> str:
    """All of trec_eval's all_trec values, ours vs pytrec_eval, on (a sample of) the queries."""
    import math

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from corpus import GEOMETRIC, pytrec_all_trec

    import polars_rankeval as pr

    run = pl.read_parquet(path / "run.parquet")
    qrels = pl.read_parquet(path / "qrels.parquet")
    with warnings.catch_warnings():  # pytrec_eval is trec_eval 9.x: compare under its rules
        warnings.simplefilter("ignore")
        ours = pr.evaluate(run, qrels, ALL_TREC, conventions="trec_eval-9")
    queries = run["query"].unique().sort()
    if queries.len() > sample:
        queries = queries.sample(sample, seed=0)
    chosen = pl.col("query").is_in(queries.implode())
    ref = pytrec_all_trec(run.filter(chosen), qrels.filter(chosen))
    keys = sorted({k for vals in ref.values() for k in vals})
    names = {k: str(pr.parse(k)) for k in keys}
    if sorted(set(names.values())) != sorted(ALL_TREC):
        return "check failed: ALL_TREC differs from pr.parse of pytrec_eval's all_trec keys"
    got = {str(r["query"]): r for r in ours.filter(chosen).iter_rows(named=True)}
    bad = len(set(got) ^ set(ref))
    for q in set(got) & set(ref):
        for k in keys:
            mine = got[q][names[k]]
            if k in GEOMETRIC:
                mine = math.log(max(mine, 0.00001))
            bad += not abs(mine - ref[q][k]) <= 1e-9
    return f"{bad} mismatches (1e-9) over {len(ref)} queries x {len(keys)} all_trec measures"


def main(tool: str, workload: str, data_dir: str, repeats: int, budget: float) -> dict:
    """Run one (tool, workload) on the inputs in ``data_dir``; return the measurements.

    Workload ``check`` compares values with trec_eval instead (``repeats`` is
    then the number of queries to check).
    """
    if workload == "check":
        return {"check": check_against_trec_eval(Path(data_dir), repeats)}
    if workload == "check-alltrec":
        return {"check": check_alltrec(Path(data_dir), repeats)}
    _warm_up(tool, workload)
    base = Path(data_dir)
    baseline = current_rss_bytes()
    out: dict[str, Any] = {"tool": tool, "workload": workload, "rss_baseline": baseline}
    if workload in VARIANTS:
        out |= alternating(workload, base, repeats, budget)
        out["rss_peak"] = peak_rss_bytes()
        return out
    if workload == "scan":
        means: list[pl.DataFrame] = []
        out["cpu"] = []
        call = lambda: means.append(scan_means(tool, base))  # noqa: E731
        out["times"] = _timed(call, repeats, budget, out["cpu"])
        out["rss_peak"] = peak_rss_bytes()
        out["means"] = means[-1].to_dicts()[0]
        return out
    if workload in ("frames", "warm", "alltrec"):
        run = pl.read_parquet(base / "run.parquet")
        qrels = pl.read_parquet(base / "qrels.parquet")
        out["input_bytes"] = run.estimated_size() + qrels.estimated_size()
        if workload == "warm":
            structures = ranx_structures(run, qrels)
            del run, qrels
            call = lambda: ranx_evaluate(*structures)  # noqa: E731
        else:
            fn = (ALLTREC_TOOLS if workload == "alltrec" else FRAME_TOOLS)[tool]
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
    out["cpu"] = []
    out["times"] = _timed(call, repeats, budget, out["cpu"])
    out["rss_peak"] = peak_rss_bytes()
    return out


if __name__ == "__main__":
    tool_, workload_, dir_, repeats_, budget_ = sys.argv[1:6]
    print(json.dumps(main(tool_, workload_, dir_, int(repeats_), float(budget_))))
