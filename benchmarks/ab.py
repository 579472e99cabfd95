"""Two checkouts of the library, alternating in fresh processes, on one data directory.

``python benchmarks/ab.py --old ../old-checkout --data benchmarks/data/1M --measures
core,mix,all --rounds 5`` times ``pr.evaluate`` of the directory's ``run.parquet`` and
``qrels.parquet`` (read before the clock starts) with each measure set, ``--calls``
times per process after one untimed call, in a fresh process per (round, checkout,
set): the old checkout (``PYTHONPATH`` set to ``--old``) and the library installed in
this environment (an editable install of this checkout) take turns, so both see the
same hours of a noisy machine. It prints, per checkout and set, the
median over rounds of each process's median wall time and CPU time, the range of the
processes' peak RSS, and the median over rounds of new / old.

``--way`` picks the way in: ``frame`` (the DataFrames), ``lazy`` (``run.lazy()`` with
the qrels DataFrame, under the default ``memory_limit``) or ``scan`` (``scan_parquet``
of both files, read inside the call). With ``--calls 1`` there is no untimed call
first, so a process's peak RSS is that of one call (with the frames it read first
for ``frame`` and ``lazy``), as the lazy path's memory bound is judged.

``--old`` is a directory holding a ``polars_rankeval`` package (a ``git worktree`` of
the commit to compare with). The data directories are the ones ``run.py`` writes
(``benchmarks/data/<size>``). Use it to decide on an engine change; ``run.py`` is the
benchmark of record.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

SETS = ("core", "mix", "all")
"""``core``: the core ten; ``mix``: the core ten plus Bpref, infAP, IPrec@0.5, SetF and
NumRet; ``all``: trec_eval's all_trec (see ``workers.py``)."""
WAYS = ("frame", "lazy", "scan")

CHILD = """
import gc, json, statistics, sys, time, warnings
sys.path.insert(0, {bench!r})
import polars as pl
import polars_rankeval as pr
from workers import ALL_TREC, MEASURES, MIX
warnings.simplefilter("ignore")
measures = {{"core": MEASURES, "mix": MIX, "all": ALL_TREC}}[{name!r}]
import resource
if {way!r} == "scan":
    def call():
        run, qrels = pl.scan_parquet("run.parquet"), pl.scan_parquet("qrels.parquet")
        return pr.evaluate(run, qrels, measures).collect()
else:
    run = pl.read_parquet("run.parquet")
    qrels = pl.read_parquet("qrels.parquet")
    def call():
        if {way!r} == "lazy":
            return pr.evaluate(run.lazy(), qrels, measures).collect()
        return pr.evaluate(run, qrels, measures)
if {calls} > 1:
    call()
wall, cpu = [], []
for _ in range({calls}):
    gc.collect()
    start, start_cpu = time.perf_counter(), time.process_time()
    call()
    wall.append(time.perf_counter() - start)
    cpu.append(time.process_time() - start_cpu)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({{"wall": statistics.median(wall), "cpu": statistics.median(cpu),
                  "peak": peak, "module": pr.__file__}}))
"""


def one_process(
    checkout: Path | None, data: Path, name: str, calls: int, way: str
) -> dict[str, Any]:
    """Median wall and CPU time of ``calls`` calls in a fresh process (``checkout``: a
    directory put first on the path, else the installed library), and the path of
    the library it imported, and the process's peak RSS (bytes)."""
    env = dict(os.environ)
    if checkout is not None:
        env["PYTHONPATH"] = str(checkout)
    bench = str(Path(__file__).resolve().parent)
    code = CHILD.format(bench=bench, name=name, calls=calls, way=way)
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
        cwd=str(data),  # not the repository: the installed (new) library is imported
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--old", type=Path, required=True, help="checkout to compare with")
    parser.add_argument("--data", type=Path, required=True, help="run.py data directory")
    parser.add_argument("--measures", default="core,all", help=f"sets among {SETS}")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=11)
    parser.add_argument("--way", choices=WAYS, default="frame", help="the way in")
    args = parser.parse_args()
    names = args.measures.split(",")
    unknown = sorted(set(names) - set(SETS))
    if unknown:
        parser.error(f"--measures: unknown set(s) {unknown}; choose among {SETS}")
    old_dir = args.old.resolve()
    if not (old_dir / "polars_rankeval" / "__init__.py").exists():
        parser.error(f"--old {args.old}: no polars_rankeval package in it")
    data = args.data.resolve()
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for _ in range(args.rounds):
        for name in names:
            for label, checkout in (("old", old_dir), ("new", None)):
                got = one_process(checkout, data, name, args.calls, args.way)
                if label == "old" and not got["module"].startswith(str(old_dir)):
                    sys.exit(f"the old process imported {got['module']}, not --old")
                results.setdefault((label, name), []).append(got)
    print(f"{args.rounds} rounds, {args.calls} calls a process, way {args.way}, data {args.data}")
    for name in names:
        old, new = results[("old", name)], results[("new", name)]
        ratio = statistics.median(n["wall"] / o["wall"] for o, n in zip(old, new, strict=True))
        for label, rows in (("old", old), ("new", new)):
            wall = statistics.median(r["wall"] for r in rows)
            cpu = statistics.median(r["cpu"] for r in rows)
            low, high = (f(r["peak"] for r in rows) / 2**30 for f in (min, max))
            print(f"{name:5s} {label}  wall {wall:.4f} s  CPU {cpu:.4f} s  "
                  f"peak {low:.2f}-{high:.2f} GiB")  # fmt: skip
        print(f"{name:5s} new / old {ratio:.3f}")


if __name__ == "__main__":
    main()
