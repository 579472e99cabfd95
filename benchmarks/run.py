"""Benchmark polars_rankeval against pytrec_eval, ranx and ir_measures, in one run.

    python benchmarks/run.py --sizes 1M,2M,10M --stream-rows 100M

For each size it generates a synthetic corpus (see ``data.py``) under
``benchmarks/data/`` (git-ignored), then times every tool on every workload,
each (size, tool, workload) in a fresh process (``workers.py``) so that peak
RSS is that tool's own. Reported times are medians over the repeats; ratios
are computed from medians measured in this same run. Peers that exceed the
time limit are reported as such. Per-query values of polars_rankeval are
checked against pytrec_eval (trec_eval) on the benchmarked data.

The results table is printed and, with ``--write-readme``, written between
the markers in ``benchmarks/README.md``.
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

from data import make_corpus, write_trec_qrels, write_trec_run  # noqa: E402

PEERS = ["pytrec_eval", "ranx", "ir_measures"]
FRAME_TOOLS = ["polars_rankeval", "join+sort", *PEERS]
BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"


def parse_size(text: str) -> int:
    """'2M' -> 2_000_000, '500k' -> 500_000, '1000' -> 1000."""
    text = text.strip().lower()
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1], 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


def prepare(label: str, n_rows: int, data_dir: Path) -> Path:
    """Generate (once) the run and qrels of a size as Parquet and TREC files."""
    out = data_dir / label
    if (out / "qrels.trec").exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    run, qrels = make_corpus(n_rows, seed=42)
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


def measure(
    tool: str, workload: str, path: Path, repeats: int, budget: float, timeout: float
) -> dict[str, Any]:
    """Run one worker process; a timeout or crash is recorded, not raised."""
    cmd = [sys.executable, str(HERE / "workers.py"), tool, workload, str(path)]
    cmd += [str(repeats), str(budget)]
    start = time.perf_counter()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"tool": tool, "workload": workload, "error": f"did not finish in {timeout:.0f} s"}
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["?"]
        return {"tool": tool, "workload": workload, "error": f"failed: {tail[0][:120]}"}
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["wall"] = time.perf_counter() - start
    return result


def check_against_trec_eval(path: Path, sample: int) -> str:
    """Per-query values vs pytrec_eval, in a worker (keeps this process small)."""
    cmd = [sys.executable, str(HERE / "workers.py"), "polars_rankeval", "check", str(path)]
    done = subprocess.run([*cmd, str(sample), "0"], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return "check failed: " + (done.stderr.strip().splitlines() or ["?"])[-1]
    return json.loads(done.stdout.strip().splitlines()[-1])["check"]


def median(result: dict[str, Any]) -> float | None:
    times = result.get("times")
    return statistics.median(times) if times else None


def fmt_time(result: dict[str, Any]) -> str:
    m = median(result)
    if m is None:
        return result.get("error", "n/a")
    return f"{m:.3f} s (n={len(result['times'])})"


def fmt_gib(n: float | None) -> str:
    return "n/a" if n is None else f"{n / 2**30:.2f} GiB"


def table(rows: list[dict[str, Any]], workload: str, tools: list[str]) -> list[str]:
    """Markdown table of medians, peak RSS and ratios for one workload."""
    lines = [
        "| rows | tool | median | peak RSS | input frames | x slower than polars_rankeval |",
        "|---:|---|---:|---:|---:|---:|",
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
                f"| {r['rows']:,} | {tool} | {fmt_time(r)} | {fmt_gib(r.get('rss_peak'))} | "
                f"{fmt_gib(r.get('input_bytes'))} | {ratio} |"
            )
    return lines


def machine() -> str:
    cpus = os.cpu_count()
    with open("/proc/meminfo") as f:
        mem = int(f.readline().split()[1]) / 2**20
    import polars_rankeval as pr

    load = os.getloadavg()
    return (
        f"{platform.processor() or platform.machine()}, {cpus} cores, {mem:.0f} GiB RAM, "
        f"Python {platform.python_version()}, Polars {pl.__version__}, "
        f"polars_rankeval {pr.__version__}; load average at the end "
        f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1 / 5 / 15 min)"
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sizes", default="1M,2M,10M", help="run sizes, e.g. 1M,2M,10M")
    ap.add_argument("--file-sizes", default="1M", help="sizes for the TREC-file workload")
    ap.add_argument("--stream-rows", default="100M", help="Parquet dataset size; 0 to skip")
    ap.add_argument("--stream-systems", type=int, default=10)
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
    rows: list[dict[str, Any]] = []
    checks: list[str] = []

    def record(result: dict[str, Any], label: str, n: int) -> None:
        result.update(size=label, rows=n)
        rows.append(result)
        print(
            f"  {result['workload']:7s} {label:>5s} {result['tool']:16s} {fmt_time(result)}"
            f"  peak {fmt_gib(result.get('rss_peak'))}",
            flush=True,
        )

    for label in [s for s in args.sizes.split(",") if s]:
        path = prepare(label, parse_size(label), data_dir)
        n = pl.scan_parquet(path / "run.parquet").select(pl.len()).collect().item()
        print(f"[frames] {label}: {n:,} run rows", flush=True)
        for tool in ["polars_rankeval", "join+sort", *peers]:
            record(measure(tool, "frames", path, args.repeats, args.budget, args.timeout), label, n)
            if tool == "ranx":
                warm = measure("ranx", "warm", path, args.repeats, args.budget, args.timeout)
                warm["tool"] = "ranx (warm evaluate)"
                record(warm, label, n)
        checks.append(f"{label}: {check_against_trec_eval(path, args.check_sample)}")
        print("  check:", checks[-1], flush=True)
    for label in [s for s in args.file_sizes.split(",") if s]:
        path = prepare(label, parse_size(label), data_dir)
        n = pl.scan_parquet(path / "run.parquet").select(pl.len()).collect().item()
        print(f"[files] {label}", flush=True)
        for tool in ["polars_rankeval", "join+sort", *peers]:
            record(measure(tool, "files", path, args.repeats, args.budget, args.timeout), label, n)
    if parse_size(args.stream_rows) > 0:
        label = args.stream_rows
        path = prepare_stream(label, parse_size(label), data_dir, args.stream_systems)
        n = pl.scan_parquet(path / "stream" / "*.parquet").select(pl.len()).collect().item()
        print(f"[stream] {label}: {n:,} rows", flush=True)
        for tool in ["polars_rankeval", "join+sort"]:
            record(measure(tool, "stream", path, 1, 0.0, args.timeout * 4), label, n)

    frame_tools = ["polars_rankeval", "join+sort", "pytrec_eval", "ranx", "ranx (warm evaluate)"]
    frame_tools.append("ir_measures")
    report = [
        f"Machine: {machine()}.",
        "",
        f"Command: `python benchmarks/run.py {' '.join(sys.argv[1:] if argv is None else argv)}`",
        "",
        "### Polars frames in memory -> per-query values (10 measures)",
        "",
        *table(rows, "frames", frame_tools),
        "",
        "### TREC files on disk -> per-query values",
        "",
        *table(rows, "files", FRAME_TOOLS),
        "",
        "### Parquet dataset -> mean per system and measure (streaming engine)",
        "",
        *table(rows, "stream", ["polars_rankeval", "join+sort"]),
        "",
        "### Correctness (per-query values vs pytrec_eval on the benchmarked data)",
        "",
        *(f"- {c}" for c in checks),
    ]
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
