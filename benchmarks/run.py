"""Benchmark polars_rankeval against pytrec_eval, ranx and ir_measures, in one run.

The full run (the defaults; writes the results into ``benchmarks/README.md``)::

    python benchmarks/run.py --write-readme

A quick check that every workload runs (a few minutes)::

    python benchmarks/run.py --sizes 100k --file-sizes 100k --stream-rows 1M \\
        --alltrec-sizes 100k --mix-sizes 100k --input-sizes 100k --versus-sizes 100k \\
        --scan-rows 2M --repeats 2

``--workloads`` picks workloads (default: all), each with its own sizes:

frames   (``--sizes``)         DataFrames -> per-query values, 10 core measures:
                               ours, the bare join+sort, pytrec_eval, ranx, ir_measures
files    (``--file-sizes``)    TREC files on disk -> per-query values, same tools
stream   (``--stream-rows``)   Parquet dataset of ``--stream-systems`` systems -> means
alltrec  (``--alltrec-sizes``) DataFrames -> trec_eval's 92 all_trec measures,
                               ours vs pytrec_eval (dicts built from the frames)
mix      (``--mix-sizes``)     core ten vs core ten + Bpref, infAP, IPrec@0.5, SetF,
                               NumRet: one process, calls in alternation
inputs   (``--input-sizes`` x ``--depths``)  one run as DataFrame, ``df.lazy()``,
                               Parquet scan, read_parquet + DataFrame, and
                               ``evaluate_judged`` on ``pr.judge``'s table (a
                               DataFrame, and a Parquet scan): one process, in
                               alternation; plus pytrec_eval (frames)
versus   (``--versus-sizes`` x ``--depths``)  ours and pytrec_eval, core ten and
                               all_trec, in one process in alternation: ratios
                               to the peer that hold under load (no peak RSS)
scan     (``--scan-rows``)     a single-system Parquet file shuffled across queries
                               -> means: lazy scan vs read_parquet + evaluate
                               (the latter up to ``--scan-memory-max`` rows), one
                               fresh process per call, the two in alternation

For each size it generates a synthetic corpus (see ``data.py``) under
``benchmarks/data/`` (git-ignored; the shuffled scan file is written in
chunks, so 100M rows need little memory), then times every tool on every
workload, each (size, tool, workload) in a fresh process (``workers.py``) so
that peak RSS is that tool's own. Reported times are medians over the
repeats (up to ``--repeats``, until ``--budget`` seconds are spent); ratios
are computed from medians measured in this same run, or, for the
alternating workloads, as the median of the per-round ratios. Peers that
exceed the time limit are reported as such. Per-query values of
polars_rankeval are checked against pytrec_eval (trec_eval) on the
benchmarked data (the ten core measures, and all_trec at the all_trec sizes).

The results tables and a table of the issue's targets (met or not, computed
from the results) are printed and, with ``--write-readme``, written between
the markers in ``benchmarks/README.md``; the records go to ``results/last.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from data import make_corpus, write_shuffled_run, write_trec_qrels, write_trec_run  # noqa: E402

PEERS = ["pytrec_eval", "ranx", "ir_measures"]
FRAME_TOOLS = ["polars_rankeval", "join+sort", *PEERS]
WORKLOADS = ["frames", "files", "stream", "alltrec", "mix", "inputs", "versus", "costs", "scan"]
BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"
SCAN_MEMORY = "in memory (read_parquet + evaluate)"
GIB = 2**30
LAZY_AND_JUDGED = ("df.lazy()", "scan_parquet", "evaluate_judged")


def parse_size(text: str) -> int:
    """'2M' -> 2_000_000, '500k' -> 500_000, '1000' -> 1000."""
    text = text.strip().lower()
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1], 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


def sizes(text: str) -> list[str]:
    return [s for s in text.split(",") if s and parse_size(s) > 0]


def prepare(label: str, n_rows: int, data_dir: Path, depth: int = 1000) -> Path:
    """Generate (once) the run and qrels of a size as Parquet and TREC files."""
    out = data_dir / (label if depth == 1000 else f"{label}-d{depth}")
    if (out / "qrels.trec").exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    run, qrels = make_corpus(n_rows, depth=depth, seed=42)
    run.write_parquet(out / "run.parquet")
    qrels.write_parquet(out / "qrels.parquet")
    write_trec_run(run, str(out / "run.trec"))
    write_trec_qrels(qrels, str(out / "qrels.trec"))
    return out


def prepare_stream(label: str, n_rows: int, data_dir: Path, systems: int) -> Path:
    """Generate (once) a Parquet dataset of ``n_rows`` over ``systems``, one file each."""
    out = data_dir / f"stream-{label}"
    if (out / "qrels.parquet").exists():
        return out
    (out / "stream").mkdir(parents=True, exist_ok=True)
    per_system = n_rows // systems
    for s in range(systems):
        # Same seed: same queries, progressions and qrels; each system its own noise.
        run, qrels = make_corpus(per_system, seed=42)
        noise = np.random.default_rng(s).normal(0, 0.5, run.height).round(3)
        run = run.select(pl.lit(f"sys{s:02d}").alias("system"), "query", "doc", "score")
        run.with_columns(pl.col("score") + noise).write_parquet(
            out / "stream" / f"part-{s:02d}.parquet"
        )
    qrels.write_parquet(out / "qrels.parquet")
    return out


def prepare_scan(label: str, n_rows: int, data_dir: Path) -> Path:
    """Generate (once) the shuffled single-system Parquet file, in chunks."""
    out = data_dir / f"scan-{label}"
    if not (out / "run.parquet").exists():
        out.mkdir(parents=True, exist_ok=True)
        write_shuffled_run(out, n_rows, seed=42)
    return out


def count_rows(path: Path | str) -> int:
    return pl.scan_parquet(path).select(pl.len()).collect().item()


def measure(
    tool: str, workload: str, path: Path, repeats: int, budget: float, timeout: float
) -> dict[str, Any]:
    """Run one worker process; a timeout or crash is recorded, not raised."""
    cmd = [sys.executable, str(HERE / "workers.py"), tool, workload, str(path)]
    cmd += [str(repeats), str(budget)]
    LOADS.append(os.getloadavg()[0])
    start = time.perf_counter()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"tool": tool, "workload": workload, "error": f"did not finish in {timeout:.0f} s"}
    finally:
        LOADS.append(os.getloadavg()[0])
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["?"]
        return {"tool": tool, "workload": workload, "error": f"failed: {tail[0][:120]}"}
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["wall"] = time.perf_counter() - start
    return result


LOADS: list[float] = []
"""1-minute load average sampled before and after each worker process."""


def run_check(workload: str, path: Path, sample: int) -> str:
    """Per-query values vs pytrec_eval, in a worker (keeps this process small)."""
    cmd = [sys.executable, str(HERE / "workers.py"), "polars_rankeval", workload, str(path)]
    done = subprocess.run([*cmd, str(sample), "0"], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return "check failed: " + (done.stderr.strip().splitlines() or ["?"])[-1]
    return json.loads(done.stdout.strip().splitlines()[-1])["check"]


def median(result: dict[str, Any] | None) -> float | None:
    times = (result or {}).get("times")
    return statistics.median(times) if times else None


def fmt_time(result: dict[str, Any]) -> str:
    m = median(result)
    if m is None:
        return result.get("error", "n/a")
    return f"{m:.3f} s (n={len(result['times'])})"


def fmt_cpu(result: dict[str, Any]) -> str:
    """Median CPU time (all threads) of the timed calls, when the worker recorded it."""
    cpu = result.get("cpu")
    return f"{statistics.median(cpu):.3f} s" if cpu else "n/a"


def fmt_gib(n: float | None) -> str:
    return "n/a" if n is None else f"{n / GIB:.2f} GiB"


def fmt_ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}x"


def table(rows: list[dict[str, Any]], workload: str, tools: list[str]) -> list[str]:
    """Markdown table of medians, peak RSS and ratios for one workload."""
    lines = [
        "| rows | tool | median | CPU median | peak RSS | input frames "
        "| x slower than polars_rankeval |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    kinds = (workload, "warm") if workload == "frames" else (workload,)
    for size in dict.fromkeys(r["size"] for r in rows if r["workload"] == workload):
        here = {r["tool"]: r for r in rows if r["workload"] in kinds and r["size"] == size}
        ours = median(here.get("polars_rankeval", {}))
        for tool in tools:
            if tool not in here:
                continue
            r = here[tool]
            m = median(r)
            ratio = f"{m / ours:.1f}x" if m is not None and ours else "-"
            if tool == "polars_rankeval":
                ratio = "1"
            if m is None:
                ratio = "did not finish" if "did not" in r.get("error", "") else "-"
            lines.append(
                f"| {r['rows']:,} | {tool} | {fmt_time(r)} | {fmt_cpu(r)} | "
                f"{fmt_gib(r.get('rss_peak'))} | {fmt_gib(r.get('input_bytes'))} | {ratio} |"
            )
    return lines


def variant_table(rows: list[dict[str, Any]], workload: str, reference: str) -> list[str]:
    """Alternating workloads: each variant's median, CPU time, peak RSS and ratio to the
    reference variant (median of the per-round ratios), plus pytrec_eval's time."""
    lines = [
        f"| rows | docs per query | variant | median | CPU median | peak RSS | x {reference} "
        "(same round) | pytrec_eval x slower |",
        "|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        if r["workload"] != workload:
            continue
        pytrec = r.get("pytrec")
        if r.get("error"):
            lines.append(f"| {r['rows']:,} | {r['depth']} | {r['tool']} | {r['error']} |||||")
            continue
        m = median(r)
        vs_pytrec = median(pytrec) / m if pytrec and median(pytrec) and m else None
        lines.append(
            f"| {r['rows']:,} | {r['depth']} | {r['tool']} | {fmt_time(r)} | "
            f"{fmt_cpu(r)} | {fmt_gib(r.get('rss_peak'))} | "
            f"{fmt_ratio(r.get('round_ratio'))} | "
            f"{'-' if vs_pytrec is None else f'{vs_pytrec:.1f}x'} |"
        )
        last = r["tool"] == r.get("last_variant")
        if last and pytrec is not None and workload == "inputs":
            lines.append(
                f"| {r['rows']:,} | {r['depth']} | pytrec_eval (frames, own process) | "
                f"{fmt_time(pytrec)} | - | {fmt_gib(pytrec.get('rss_peak'))} | - | 1 |"
            )
    return lines


def pair_ratio(ours: dict[str, Any], peer: dict[str, Any]) -> float | None:
    """Median over rounds of the peer's time over ours in the same round."""
    a, b = ours.get("times"), peer.get("times")
    if not a or not b:
        return None
    return statistics.median(y / x for x, y in zip(a, b, strict=False))


def versus_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| rows | docs per query | measures | polars_rankeval | CPU | pytrec_eval | CPU "
        "| pytrec_eval x slower (same round) |",
        "|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        if r["workload"] != "versus" or not r["tool"].startswith("polars_rankeval"):
            continue
        kind = r["tool"].split(", ", 1)[1]
        peer = find(rows, "versus", r["size"], f"pytrec_eval, {kind}", depth=r["depth"])
        lines.append(
            f"| {r['rows']:,} | {r['depth']} | {kind} | {fmt_time(r)} | {fmt_cpu(r)} | "
            f"{fmt_time(peer)} | {fmt_cpu(peer)} | {fmt_ratio(pair_ratio(r, peer))} |"
        )
    return lines


def scan_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| rows | qrels rows | tool | median | CPU median | peak RSS | x in memory (same round) |",
        "|---:|---:|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        if r["workload"] == "scan":
            lines.append(
                f"| {r['rows']:,} | {r.get('qrels_rows', 0):,} | {r['tool']} | {fmt_time(r)} | "
                f"{fmt_cpu(r)} | {fmt_gib(r.get('rss_peak'))} | {fmt_ratio(r.get('round_ratio'))} |"
            )
    return lines


def find(rows: list[dict[str, Any]], workload: str, size: str, tool: str, **kw: Any) -> dict:
    for r in rows:
        if (r["workload"], r["size"], r["tool"]) == (workload, size, tool) and all(
            r.get(k) == v for k, v in kw.items()
        ):
            return r
    return {}


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("**met**" if ok else "**not met**")


def targets(rows: list[dict[str, Any]], checks: list[str]) -> list[str]:
    """The issue's targets, each with the measured figure, the target's verdict and the
    verdict of the "done" threshold where the issue sets one ("-" where it does not)."""
    out = [
        "| target (done threshold) | where | measured | target | done |",
        "|---|---|---:|---|---|",
    ]

    def add(
        target: str, where: str, shown: str, ok: bool | None, done: bool | str | None = "-"
    ) -> None:
        done_text = done if isinstance(done, str) else verdict(done)
        out.append(f"| {target} | {where} | {shown} | {verdict(ok)} | {done_text} |")

    def fmt(x: float | None, unit: str = "x") -> str:
        return "did not run" if x is None else f"{x:.2f}{unit}"

    def at_most(x: float | None, limit: float) -> bool | None:
        return None if x is None else x <= limit

    def at_least(x: float | None, limit: float) -> bool | None:
        return None if x is None else x >= limit

    def speedup(workload: str, size: str, peer: str = "pytrec_eval") -> float | None:
        ours = median(find(rows, workload, size, "polars_rankeval"))
        theirs = median(find(rows, workload, size, peer))
        return theirs / ours if ours and theirs else None

    def versus(size: str, kind: str) -> float | None:
        ours = find(rows, "versus", size, f"polars_rankeval, {kind}", depth=1000)
        return pair_ratio(ours, find(rows, "versus", size, f"pytrec_eval, {kind}", depth=1000))

    alltrec = "all_trec (92) on DataFrames >= 10x pytrec_eval (done: >= 5x at 1M)"
    for size in dict.fromkeys(r["size"] for r in rows if r["workload"] == "alltrec"):
        x = speedup("alltrec", size)
        done = at_least(x, 5) if parse_size(size) == 1_000_000 else "-"
        add(alltrec, f"{size}, own processes", fmt(x), at_least(x, 10), done)
    for size in dict.fromkeys(r["size"] for r in rows if r["workload"] == "versus"):
        x = versus(size, "all_trec")
        done = at_least(x, 5) if parse_size(size) == 1_000_000 else "-"
        add(alltrec, f"{size}, one process, same round", fmt(x), at_least(x, 10), done)
    for r in rows:
        if r["workload"] == "mix" and r["tool"].startswith("core+5"):
            x = r.get("round_ratio")
            add("core+5 mix <= 1.5x the core ten", r["size"], fmt(x), at_most(x, 1.5),
                at_most(x, 1.5))  # fmt: skip
    for r in rows:
        if r["workload"] == "inputs" and r["tool"] in LAZY_AND_JUDGED:
            where = f"{r['size']}, depth {r['depth']}, {r['tool']}"
            x = r.get("round_ratio")
            if r["tool"] == "scan_parquet":  # the scan reads the file: so does its reference
                read = find(rows, "inputs", r["size"], "read_parquet + DataFrame", depth=r["depth"])
                y = pair_ratio(read, r)
                add("within 1.1x of the DataFrame path, reading the file (done: 1.15x)", where,
                    fmt(y), at_most(y, 1.1), at_most(y, 1.15))  # fmt: skip
                add("(scan against the DataFrame in memory, no bar: reading not counted)",
                    where, fmt(x), None, "-")  # fmt: skip
            else:
                add("within 1.1x of the DataFrame path (done: 1.15x)", where, fmt(x),
                    at_most(x, 1.1), at_most(x, 1.15))  # fmt: skip
            pytrec, m = median(r.get("pytrec")), median(r)
            y = pytrec / m if pytrec and m else None
            add(">= 10x pytrec_eval", where, fmt(y), at_least(y, 10))
    for r in rows:
        if r["workload"] == "scan" and r["tool"] == "polars_rankeval":
            peak = r.get("rss_peak")
            gib = peak / GIB if peak else None
            where = f"{r['size']} shuffled rows (done: 20M, target: 100M)"
            small = parse_size(r["size"]) != 20_000_000  # "done" is set at 20M rows
            fits = None if gib is None else gib < 1
            add("lazy scan peak RSS < 1 GiB", where, fmt(gib, " GiB"), fits, "-" if small else fits)
            x = r.get("round_ratio")
            if x is not None:
                ok = at_most(x, 1.5)
                add("lazy scan <= 1.5x read into memory + evaluate", where, fmt(x), ok,
                    "-" if small else ok)  # fmt: skip
                d = r.get("means_diff")
                add("same means as in memory", where, f"max abs difference {d:.1e}",
                    d is not None and d <= 1e-12)  # fmt: skip
    for r in rows:  # issue 37's costs
        if r["workload"] != "costs":
            continue
        where = f"{r['size']}, depth {r['depth']}"
        base = find(rows, "costs", r["size"], "distinct scores", depth=r["depth"])
        if r["tool"] == "tie-heavy scores":
            x = pair_ratio(base, r)
            add("ties cost <= 1.3x distinct scores", where, fmt(x), at_most(x, 1.3))
            theirs = find(rows, "costs", r["size"], "pytrec_eval, tie-heavy scores",
                          depth=r["depth"])  # fmt: skip
            y = pair_ratio(r, theirs)
            add("tie-heavy: pytrec_eval x slower (>= 10x)", where, fmt(y), at_least(y, 10))
        elif r["tool"] == "judge":
            x = pair_ratio(base, r)
            add("judge <= 1.5x evaluate", where, fmt(x), at_most(x, 1.5))
        elif r["tool"] == "evaluate_judged, shuffled log":
            x = pair_ratio(base, r)
            add("shuffled pre-judged log <= 1.15x the DataFrame path", where, fmt(x),
                at_most(x, 1.15))  # fmt: skip
    keep = "keep: core ten >= 10x pytrec_eval (at 2M and 10M)"
    for size in dict.fromkeys(r["size"] for r in rows if r["workload"] == "frames"):
        x = speedup("frames", size)
        add(keep, f"{size}, own processes", fmt(x), at_least(x, 10))
    for size in dict.fromkeys(r["size"] for r in rows if r["workload"] == "versus"):
        x = versus(size, "core ten")
        add(keep, f"{size}, one process, same round", fmt(x), at_least(x, 10))
    bad = [c for c in checks if not c.split(": ", 1)[1].startswith("0 mismatches")]
    add("keep: every value equal to trec_eval's (1e-9)", f"{len(checks)} checks",
        f"{len(bad)} with mismatches", not bad if checks else None)  # fmt: skip
    return out


def machine() -> str:
    cpus = os.cpu_count()
    with open("/proc/meminfo") as f:
        mem = int(f.readline().split()[1]) / 2**20
    import polars_rankeval as pr

    load = os.getloadavg()
    during = f"{min(LOADS):.1f}-{max(LOADS):.1f}" if LOADS else "n/a"
    return (
        f"{platform.processor() or platform.machine()}, {cpus} cores, {mem:.0f} GiB RAM, "
        f"Python {platform.python_version()}, Polars {pl.__version__}, "
        f"polars_rankeval {pr.__version__}; 1-minute load average during the run "
        f"{during}, at the end {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1 / 5 / 15 min)"
    )


def flatten(result: dict[str, Any], label: str, n: int, depth: int) -> list[dict[str, Any]]:
    """One record per variant of an alternating worker."""
    if "variants" not in result:
        return [{**result, "size": label, "rows": n, "depth": depth, "tool": "(all variants)"}]
    names = list(result["variants"])
    out = []
    for name, v in result["variants"].items():
        out.append(
            {
                "workload": result["workload"],
                "size": label,
                "rows": n,
                "depth": depth,
                "tool": name,
                "times": v["times"],
                "cpu": v["cpu"],
                "rss_peak": v["rss_peak"],
                "round_ratio": statistics.median(v["round_ratios"]),
                "values": v.get("values"),
                "input_bytes": result.get("input_bytes"),
                "judged_rows": result.get("judged_rows"),
                "last_variant": names[-1],
            }
        )
    return out


def scan_rounds(path: Path, label: str, n: int, args: argparse.Namespace) -> list[dict[str, Any]]:
    """The scan and (when it fits) the in-memory evaluation, one fresh process per call,
    in alternation, up to ``--repeats`` rounds or ``--budget`` seconds."""
    tools = ["polars_rankeval"]
    if n <= parse_size(args.scan_memory_max):
        tools.append(SCAN_MEMORY)
    runs: dict[str, list[dict[str, Any]]] = {t: [] for t in tools}
    spent = 0.0
    while not spent or (len(runs["polars_rankeval"]) < args.repeats and spent < args.budget):
        for tool in tools if len(runs["polars_rankeval"]) % 2 == 0 else tools[::-1]:
            worker = "polars_rankeval" if tool == "polars_rankeval" else "in memory"
            r = measure(worker, "scan", path, 1, 0.0, args.timeout * 4)
            runs[tool].append(r)
            spent += r.get("wall", args.timeout * 4)
            print(f"    {tool}: {fmt_time(r)} peak {fmt_gib(r.get('rss_peak'))}", flush=True)
        if any("error" in r for rs in runs.values() for r in rs):
            break
    qrels_rows = count_rows(path / "qrels.parquet")
    out = []
    for tool, rs in runs.items():
        ok = [r for r in rs if "times" in r]
        rec: dict[str, Any] = {"workload": "scan", "size": label, "rows": n, "tool": tool}
        rec["qrels_rows"] = qrels_rows
        if not ok:
            rec["error"] = rs[0].get("error", "failed")
        else:
            rec["times"] = [r["times"][0] for r in ok]
            rec["cpu"] = [r["cpu"][0] for r in ok]
            rec["rss_peak"] = max(r["rss_peak"] for r in ok)
            rec["means"] = ok[0]["means"]
        out.append(rec)
    if len(out) == 2 and "times" in out[0] and "times" in out[1]:
        pairs = zip(out[0]["times"], out[1]["times"], strict=False)
        out[0]["round_ratio"] = statistics.median(a / b for a, b in pairs)
        a, b = out[0]["means"], out[1]["means"]
        out[0]["means_diff"] = max(abs(a[k] - b[k]) for k in a)
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--workloads", default=",".join(WORKLOADS), help="which workloads to run")
    ap.add_argument("--sizes", default="2M,10M", help="frames sizes (core ten vs peers)")
    ap.add_argument("--file-sizes", default="2M", help="sizes for the TREC-file workload")
    ap.add_argument("--stream-rows", default="100M", help="Parquet dataset size; 0 to skip")
    ap.add_argument("--stream-systems", type=int, default=10)
    ap.add_argument("--alltrec-sizes", default="1M,10M", help="sizes for all_trec on frames")
    ap.add_argument("--mix-sizes", default="1M,10M", help="sizes for core vs core+5")
    ap.add_argument("--input-sizes", default="1M,10M", help="sizes for the inputs workload")
    ap.add_argument("--depths", default="100,1000", help="documents per query (inputs, versus)")
    ap.add_argument("--versus-sizes", default="1M,10M", help="sizes for ours vs pytrec_eval")
    ap.add_argument("--cost-sizes", default="2M", help="sizes for the costs workload")
    ap.add_argument("--scan-rows", default="20M,100M", help="shuffled single-system file sizes")
    ap.add_argument(
        "--scan-memory-max", default="30M", help="largest scan size also evaluated in memory"
    )
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--budget", type=float, default=120.0, help="stop repeating after this (s)")
    ap.add_argument("--timeout", type=float, default=900.0, help="time limit per tool and size")
    ap.add_argument("--peers", default=",".join(PEERS))
    ap.add_argument("--check-sample", type=int, default=2000, help="queries checked vs trec_eval")
    ap.add_argument("--data-dir", default=str(HERE / "data"))
    ap.add_argument("--write-readme", action="store_true")
    args = ap.parse_args(argv)
    data_dir = Path(args.data_dir)
    peers = [p for p in args.peers.split(",") if p]
    chosen = [w for w in args.workloads.split(",") if w]
    unknown = set(chosen) - set(WORKLOADS)
    if unknown:
        ap.error(f"unknown workloads {sorted(unknown)}; choose from {WORKLOADS}")
    rows: list[dict[str, Any]] = []
    checks: list[str] = []
    checked: set[tuple[str, Path]] = set()

    def record(result: dict[str, Any], label: str, n: int) -> dict[str, Any]:
        result.update(size=label, rows=n)
        rows.append(result)
        print(
            f"  {result['workload']:7s} {label:>5s} {result['tool']:16s} {fmt_time(result)}"
            f"  peak {fmt_gib(result.get('rss_peak'))}",
            flush=True,
        )
        return result

    def check(workload: str, path: Path, label: str) -> None:
        if (workload, path) in checked:
            return
        checked.add((workload, path))
        checks.append(f"{path.name} ({workload}): {run_check(workload, path, args.check_sample)}")
        print("  check:", checks[-1], flush=True)

    def go(*a: Any) -> dict[str, Any]:
        return measure(*a, args.repeats, args.budget, args.timeout)

    if "frames" in chosen:
        for label in sizes(args.sizes):
            path = prepare(label, parse_size(label), data_dir)
            n = count_rows(path / "run.parquet")
            print(f"[frames] {label}: {n:,} run rows", flush=True)
            for tool in ["polars_rankeval", "join+sort", *peers]:
                record(go(tool, "frames", path), label, n)
                if tool == "ranx":
                    warm = go("ranx", "warm", path)
                    warm["tool"] = "ranx (warm evaluate)"
                    record(warm, label, n)
            check("check", path, label)
    if "alltrec" in chosen:
        for label in sizes(args.alltrec_sizes):
            path = prepare(label, parse_size(label), data_dir)
            n = count_rows(path / "run.parquet")
            print(f"[alltrec] {label}: {n:,} run rows", flush=True)
            for tool in ["polars_rankeval", "pytrec_eval"]:
                record(go(tool, "alltrec", path), label, n)
            check("check-alltrec", path, label)
    if "mix" in chosen:
        for label in sizes(args.mix_sizes):
            path = prepare(label, parse_size(label), data_dir)
            n = count_rows(path / "run.parquet")
            print(f"[mix] {label}: {n:,} run rows", flush=True)
            for rec in flatten(go("polars_rankeval", "mix", path), label, n, 1000):
                record(rec, label, n)
    if "inputs" in chosen:
        for label in sizes(args.input_sizes):
            for depth in [int(d) for d in args.depths.split(",") if d]:
                path = prepare(label, parse_size(label), data_dir, depth)
                n = count_rows(path / "run.parquet")
                print(f"[inputs] {label}, depth {depth}: {n:,} run rows", flush=True)
                pytrec = find(rows, "frames", label, "pytrec_eval") if depth == 1000 else {}
                if "pytrec_eval" in peers and not pytrec:
                    pytrec = go("pytrec_eval", "frames", path)
                    print(f"  pytrec_eval (frames) {fmt_time(pytrec)}", flush=True)
                for rec in flatten(go("polars_rankeval", "inputs", path), label, n, depth):
                    rec["pytrec"] = pytrec or None
                    record(rec, label, n)
                check("check", path, label)
    if "versus" in chosen:
        for label in sizes(args.versus_sizes):
            for depth in [int(d) for d in args.depths.split(",") if d]:
                path = prepare(label, parse_size(label), data_dir, depth)
                n = count_rows(path / "run.parquet")
                print(f"[versus] {label}, depth {depth}: {n:,} run rows", flush=True)
                for rec in flatten(go("polars_rankeval", "versus", path), label, n, depth):
                    record(rec, label, n)
    if "costs" in chosen:
        for label in sizes(args.cost_sizes):
            for depth in [int(d) for d in args.depths.split(",") if d]:
                path = prepare(label, parse_size(label), data_dir, depth)
                n = count_rows(path / "run.parquet")
                print(f"[costs] {label}, depth {depth}: {n:,} run rows", flush=True)
                for rec in flatten(go("polars_rankeval", "costs", path), label, n, depth):
                    record(rec, label, n)
    if "files" in chosen:
        for label in sizes(args.file_sizes):
            path = prepare(label, parse_size(label), data_dir)
            n = count_rows(path / "run.parquet")
            print(f"[files] {label}", flush=True)
            for tool in ["polars_rankeval", "join+sort", *peers]:
                record(go(tool, "files", path), label, n)
    if "stream" in chosen:
        for label in sizes(args.stream_rows):
            path = prepare_stream(label, parse_size(label), data_dir, args.stream_systems)
            n = count_rows(path / "stream" / "*.parquet")
            print(f"[stream] {label}: {n:,} rows", flush=True)
            for tool in ["polars_rankeval", "polars_rankeval (one call)", "join+sort"]:
                record(measure(tool, "stream", path, 1, 0.0, args.timeout * 4), label, n)
    if "scan" in chosen:
        for label in sizes(args.scan_rows):
            path = prepare_scan(label, parse_size(label), data_dir)
            n = count_rows(path / "run.parquet")
            print(f"[scan] {label}: {n:,} rows, shuffled, one system", flush=True)
            rows.extend(scan_rounds(path, label, n, args))

    frame_tools = ["polars_rankeval", "join+sort", "pytrec_eval", "ranx", "ranx (warm evaluate)"]
    frame_tools.append("ir_measures")
    command = " ".join(sys.argv[1:] if argv is None else argv)
    sections = [
        (
            "frames",
            "Polars frames in memory -> per-query values (10 measures)",
            table(rows, "frames", frame_tools),
        ),
        (
            "alltrec",
            "trec_eval's all_trec (92 measures) on frames in memory -> per-query values",
            table(rows, "alltrec", ["polars_rankeval", "pytrec_eval"]),
        ),
        (
            "mix",
            "Core ten vs core ten + Bpref, infAP, IPrec@0.5, SetF, NumRet (one process, "
            "alternating)",
            variant_table(rows, "mix", "core"),
        ),
        (
            "inputs",
            "Every way in, 10 measures (one process, alternating; pytrec_eval in its own)",
            variant_table(rows, "inputs", "DataFrame"),
        ),
        (
            "versus",
            "polars_rankeval vs pytrec_eval end to end, one process, alternating",
            versus_table(rows),
        ),
        (
            "costs",
            "Costs beside what they should cost: tie-heavy scores (rounded to 0.1), judge, "
            "a shuffled pre-judged log (one process, alternating)",
            variant_table(rows, "costs", "distinct scores"),
        ),
        ("files", "TREC files on disk -> per-query values", table(rows, "files", FRAME_TOOLS)),
        (
            "stream",
            "Parquet dataset -> mean per system and measure",
            table(rows, "stream", ["polars_rankeval", "polars_rankeval (one call)", "join+sort"]),
        ),
        (
            "scan",
            "Shuffled single-system Parquet file -> means (lazy scan vs in memory, "
            "fresh processes, alternating)",
            scan_table(rows),
        ),
    ]
    report = [
        f"Machine: {machine()}.",
        "",
        f"Command: `python benchmarks/run.py{' ' if command else ''}{command}`",
        "",
        "### Targets (issue 12), computed from the tables below",
        "",
        *targets(rows, checks),
    ]
    for workload, title, lines in sections:
        if any(r["workload"] == workload for r in rows):
            report += ["", f"### {title}", "", *lines]
    report += [
        "",
        "### Correctness",
        "",
        "Per-query values vs pytrec_eval (trec_eval 9) on the benchmarked data:",
        "",
        *(f"- {c}" for c in checks),
    ]
    for r in rows:
        v = r.get("values")
        if r["workload"] == "inputs" and v and r["tool"] != "DataFrame":
            extra = v["queries"] - v["common_queries"]
            report.append(
                f"- {r['size']}, depth {r['depth']}, {r['tool']} vs DataFrame: max abs difference "
                f"{v['max_abs_diff']:.1e} over {v['common_queries']} queries"
                + (f"; {extra} more queries scored" if extra else "")
                + (
                    f"; {v['reference_queries'] - v['common_queries']} missing"
                    if v["reference_queries"] > v["common_queries"]
                    else ""
                )
            )
        if r["workload"] == "scan" and "means_diff" in r:
            report.append(
                f"- scan {r['size']}: means of the lazy scan vs in memory, max abs difference "
                f"{r['means_diff']:.1e}"
            )
    text = "\n".join(report)
    print("\n" + text)
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "last.json").write_text(json.dumps(rows, indent=1))
    if args.write_readme:
        readme = HERE / "README.md"
        old = readme.read_text()
        head, _, rest = old.partition(BEGIN)
        _, _, tail = rest.partition(END)
        readme.write_text(f"{head}{BEGIN}\n{text}\n{END}{tail}")


if __name__ == "__main__":
    main()
