"""Per call: wall time and fresh memory (minor page faults) of ``evaluate`` and ``judge``.

``python benchmarks/fresh_memory.py --data benchmarks/data/2M --calls 8`` calls
``pr.evaluate`` (the core ten) and ``pr.judge`` in alternation on the directory's
``run.parquet`` and ``qrels.parquet`` (read before the clock starts), after one untimed
call of each, and prints each call's wall time and the minor page faults the process
took during it (``resource.getrusage``: pages of memory touched for the first time,
or again after the allocator gave them back to the system), then the process's
resident memory right after the calls, 3 s later, and at its peak. ``--idle S`` sleeps
S seconds before each call, as a process does between two requests. ``--measures all``
times trec_eval's all_trec (92 measures) instead of the core ten, without ``judge``.

The time of a call that makes large columns depends on how many of its pages are
fresh. Two allocators serve a call: Polars' (jemalloc) its columns, glibc's malloc
numpy's arrays. Each hands freed memory back to the system: jemalloc on a
background thread within about half a second (Polars builds it with
``dirty_decay_ms:500``), glibc when the free memory at the top of a heap passes its
trim threshold (which follows the largest block it has mapped, up to 64 MiB). To see
the library's time with the allocators keeping their pages (settings of the process,
read when it starts, not of the library), run the same command with
``GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=1073741824``
(glibc) and/or ``_RJEM_MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1`` (jemalloc).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

sys.path.insert(0, str(Path(__file__).parent))


def calls(data: Path, measures: str) -> dict[str, Callable[[], Any]]:
    """The calls to time, by name, on the directory's run and qrels."""
    from workers import ALL_TREC, MEASURES

    import polars_rankeval as pr

    run = pl.read_parquet(data / "run.parquet")
    qrels = pl.read_parquet(data / "qrels.parquet")
    if measures == "all":
        return {"evaluate all_trec": lambda: pr.evaluate(run, qrels, ALL_TREC)}
    return {
        "evaluate": lambda: pr.evaluate(run, qrels, MEASURES),
        "judge": lambda: pr.judge(run, qrels),
    }


def faults() -> int:
    """Minor page faults of this process so far (every thread)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def resident_mib() -> float:
    """This process's resident memory now, in MiB (Linux's ``/proc/self/statm``)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * resource.getpagesize() / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("benchmarks/data/2M"))
    parser.add_argument("--calls", type=int, default=8)
    parser.add_argument("--idle", type=float, default=0.0, help="seconds asleep before a call")
    parser.add_argument("--measures", choices=["core", "all"], default="core")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    timed = calls(args.data, args.measures)
    for call in timed.values():  # not timed: imports, caches, Polars' thread pool
        call()
    seen: dict[str, list[tuple[float, int]]] = {name: [] for name in timed}
    for i in range(args.calls):
        line = []
        for name, call in timed.items():
            time.sleep(args.idle)
            before, start = faults(), time.perf_counter()
            call()
            took, fresh = time.perf_counter() - start, faults() - before
            seen[name].append((took, fresh))
            line.append(f"{name} {took:.3f} s {fresh:6d} faults")
        print(f"call {i + 1}: " + " | ".join(line), flush=True)
    for name, got in seen.items():
        median_time = statistics.median(t for t, _ in got)
        median_faults = statistics.median(f for _, f in got)
        print(f"median {name}: {median_time:.3f} s, {median_faults:.0f} faults")
    if len(seen) == 2:
        ratio = statistics.median(j[0] / e[0] for e, j in zip(*seen.values(), strict=True))
        print(f"judge / evaluate (median of the calls' ratios): {ratio:.2f}x")
    after = resident_mib()
    time.sleep(3)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(
        f"resident: {after:.0f} MiB after the calls, {resident_mib():.0f} MiB 3 s later, "
        f"{peak:.0f} MiB at the peak"
    )


if __name__ == "__main__":
    main()
