"""Benchmark (issue 33): RecTools' metrics against polars_rankeval, end to end.

One million users x 20 recommended items, a 10-million-row training log, about 1.6
million test interactions and 50,021 items with three features, written to Parquet
by Polars. Each side runs in a fresh process that reads the Parquet files and
scores every metric RecTools 0.19 has that the issue names: MAP@10, NDCG@10,
HitRate@10, MRR@10, Recall@10, MeanInvUserFreq@10, AvgRecPopularity@10,
Serendipity@10, IntraListDiversity@10 (Hamming on the features), CatalogCoverage@10,
SufficientReco@10, UnrepeatedReco@10, PartialAUC@10 and PAP@10:

* RecTools: its pandas frames built from the Polars ones (``read_parquet`` then
  ``to_numpy``), then ``rectools.metrics.calc_metrics`` (which shares work between
  metrics); IntraListDiversity in a process of its own (it forms every pair of a
  list in Python, and is the slowest and largest);
* polars_rankeval: ``pr.evaluate(..., conventions="rectools", per_query=False)`` and
  ``pr.evaluate_catalog``;
* with ``--dask``, polars_rankeval on Dask as well: ``polars_rankeval.dask.evaluate``
  and ``evaluate_catalog`` on a ``LocalCluster`` of 2 worker processes x 1 thread
  started in the measured process (the same Parquet files read by the workers, the
  side inputs reduced on the driver); its peak memory is that of the process and its
  workers together, and its means are compared with the in-process ones.

Each process reports its time and its peak resident memory; the script prints both,
the ratios, and the largest difference between the two sides' means (RecTools' means
over users are the same numbers). RecTools 0.19 pins numpy < 2, which pyarrow 26 does
not import with, so it runs in a virtual environment of its own::

    python3 -m venv /tmp/rt && /tmp/rt/bin/pip install rectools==0.19.0 polars
    python benchmarks/bench_recsys.py --rectools-python /tmp/rt/bin/python
    python benchmarks/bench_recsys.py --users 100k --train 1M --rectools-python ...
    python benchmarks/bench_recsys.py --dask      # in process and on Dask, no RecTools

Not a test: no assertion on time.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

K = 10
N_ITEMS = 50_021  # prime: (start + j * step) % N_ITEMS are distinct for j < 20
PER_USER = 20
RECTOOLS = [
    "MAP@10",
    "NDCG@10",
    "HitRate@10",
    "MRR@10",
    "Recall@10",
    "MeanInvUserFreq@10",
    "AvgRecPopularity@10",
    "Serendipity@10",
    "CatalogCoverage@10",
    "SufficientReco@10",
    "UnrepeatedReco@10",
    "PartialAUC@10",
    "PAP@10",
]
ILD = ["IntraListDiversity@10"]


def rectools_metrics(m: object, which: str, features: object) -> dict:
    """RecTools' metric objects (``m`` is ``rectools.metrics``) by the names above."""
    if which == "ild":
        calc = m.PairwiseHammingDistanceCalculator(features)  # type: ignore[attr-defined]
        return {ILD[0]: m.IntraListDiversity(k=K, distance_calculator=calc)}  # type: ignore[attr-defined]
    return {name: getattr(m, name.split("@")[0])(k=K) for name in RECTOOLS}


def _count(text: str) -> int:
    scale = {"k": 10**3, "M": 10**6}
    return int(float(text[:-1]) * scale[text[-1]]) if text[-1] in scale else int(text)


def write_data(folder: Path, users: int, train_rows: int, seed: int = 5) -> None:
    """The recommendations, train, test and item features as Parquet files."""
    import polars as pl

    rng = np.random.default_rng(seed)
    start = (rng.pareto(1.2, users) * 50).astype(np.int64) % N_ITEMS
    step = rng.integers(1, 997, users)
    j = np.arange(PER_USER)
    items = (start[:, None] + j[None, :] * step[:, None]) % N_ITEMS
    user_ids = np.repeat(np.arange(users), PER_USER)
    pl.DataFrame(
        {"user_id": user_ids, "item_id": items.ravel(), "rank": np.tile(j + 1, users)}
    ).write_parquet(folder / "recs.parquet")
    popular = (rng.pareto(1.2, train_rows) * 50).astype(np.int64) % N_ITEMS
    pl.DataFrame({"user_id": rng.integers(0, users, train_rows), "item_id": popular}).write_parquet(
        folder / "train.parquet"
    )
    tested = rng.random(users) < 0.8
    hit = rng.random(users) < 0.4  # one of the recommended items, at a random rank
    who = np.flatnonzero(tested)
    first = np.where(hit[who], items[who, rng.integers(0, PER_USER, who.size)],
                     rng.integers(0, N_ITEMS, who.size))  # fmt: skip
    second = rng.integers(0, N_ITEMS, who.size)
    test = pl.DataFrame({"user_id": np.concatenate([who, who]),
                         "item_id": np.concatenate([first, second])}).unique()  # fmt: skip
    test.write_parquet(folder / "test.parquet")
    pl.DataFrame({"item_id": np.arange(N_ITEMS), "genre": rng.integers(0, 20, N_ITEMS),
                  "decade": rng.integers(0, 8, N_ITEMS), "studio": rng.integers(0, 50, N_ITEMS)}
                 ).write_parquet(folder / "features.parquet")  # fmt: skip


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_rectools(folder: Path, which: str, ild_users: int | None = None) -> dict:
    """In RecTools' venv: pandas frames from the Polars ones, then calc_metrics."""
    import pandas as pd
    import polars as pl
    from rectools import metrics as m

    t0 = time.perf_counter()

    def frame(name: str) -> pd.DataFrame:
        f = pl.read_parquet(folder / f"{name}.parquet")
        return pd.DataFrame({c: f[c].to_numpy() for c in f.columns})

    reco, train, test = frame("recs"), frame("train"), frame("test")
    if which == "ild" and ild_users:
        reco = reco[reco["user_id"] < ild_users]
    features = frame("features").set_index("item_id")
    catalog = np.arange(N_ITEMS)
    loaded = time.perf_counter() - t0
    metrics = rectools_metrics(m, which, features)
    t1 = time.perf_counter()
    values = m.calc_metrics(metrics, reco, test, train, catalog)
    scored = time.perf_counter() - t1
    return {"load": loaded, "score": scored, "values": values, "peak_mib": peak_mib()}


def run_ours_ild(folder: Path, ild_users: int) -> dict:
    """Our ILD alone on the users RecTools' ILD process scores."""
    import polars as pl

    import polars_rankeval as pr

    t0 = time.perf_counter()
    recs = pl.read_parquet(folder / "recs.parquet").filter(pl.col("user_id") < ild_users)
    features = pl.read_parquet(folder / "features.parquet")
    qrels = pl.DataFrame({"user_id": [0], "item_id": [0], "relevance": [1]})
    loaded = time.perf_counter() - t0
    t1 = time.perf_counter()
    out = pr.evaluate(recs, qrels, ILD, query="user_id", doc="item_id", order="rank",
                      item_features=features, per_query=False)  # fmt: skip
    scored = time.perf_counter() - t1
    values = {ILD[0]: out[out.columns[-1]].item()}
    return {"load": loaded, "score": scored, "values": values, "peak_mib": peak_mib()}


def run_ours(folder: Path) -> dict:
    import polars as pl

    import polars_rankeval as pr

    t0 = time.perf_counter()
    recs = pl.read_parquet(folder / "recs.parquet")
    train = pl.read_parquet(folder / "train.parquet")
    test = pl.read_parquet(folder / "test.parquet").with_columns(relevance=pl.lit(1))
    features = pl.read_parquet(folder / "features.parquet")
    catalog = pl.Series("item_id", np.arange(N_ITEMS))
    loaded = time.perf_counter() - t0
    per_user = [n for n in RECTOOLS if n != "CatalogCoverage@10"]
    t1 = time.perf_counter()
    means = pr.evaluate(recs, test, per_user, query="user_id", doc="item_id", order="rank",
                        train=train, catalog=catalog, item_features=features,
                        conventions="rectools", per_query=False)  # fmt: skip
    catalogue = pr.evaluate_catalog(recs, ["CatalogCoverage@10"], query="user_id",
                                    doc="item_id", order="rank")  # fmt: skip
    scored = time.perf_counter() - t1
    columns = dict(zip(per_user, means.columns[1:], strict=True))
    values = {n: means[c].item() for n, c in columns.items()}
    values["CatalogCoverage@10"] = catalogue.item()
    return {"load": loaded, "score": scored, "values": values, "peak_mib": peak_mib()}


def run_ours_dask(folder: Path) -> dict:
    """The same measures with polars_rankeval.dask, the Parquet files read by the workers."""
    import polars as pl
    from bench_distributed import PeakRSS
    from distributed import Client, LocalCluster

    import polars_rankeval.dask as prd

    t0 = time.perf_counter()
    with PeakRSS() as peak:
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                               dashboard_address=None, memory_limit=None)  # fmt: skip
        client = Client(cluster)
        started = time.perf_counter() - t0
        per_user = [n for n in RECTOOLS if n != "CatalogCoverage@10"]
        catalog = pl.Series("item_id", np.arange(N_ITEMS))
        test = pl.read_parquet(folder / "test.parquet").with_columns(relevance=pl.lit(1))
        t1 = time.perf_counter()
        means = prd.evaluate(str(folder / "recs.parquet"), test, per_user, query="user_id",
                             doc="item_id", order="rank", train=str(folder / "train.parquet"),
                             catalog=catalog, item_features=str(folder / "features.parquet"),
                             conventions="rectools", per_query=False, client=client)  # fmt: skip
        catalogue = prd.evaluate_catalog(str(folder / "recs.parquet"), ["CatalogCoverage@10"],
                                         query="user_id", doc="item_id", order="rank",
                                         client=client)  # fmt: skip
        scored = time.perf_counter() - t1
        client.close()
        cluster.close()
    columns = dict(zip(per_user, means.columns[1:], strict=True))
    values = {n: means[c].item() for n, c in columns.items()}
    values["CatalogCoverage@10"] = catalogue.item()
    return {"load": started, "score": scored, "values": values,
            "peak_mib": peak.peak / 2**20}  # fmt: skip


def worker(args: list[str]) -> None:
    side, folder, ild_users = args[0], Path(args[1]), int(args[2])
    if side == "ours":
        out = run_ours(folder)
    elif side == "ours-dask":
        out = run_ours_dask(folder)
    elif side == "ours-ild":
        out = run_ours_ild(folder, ild_users)
    else:
        out = run_rectools(folder, side, ild_users)
    print(json.dumps(out, default=float))


def spawn(python: str, side: str, folder: Path, timeout: float, ild_users: int = 0) -> dict:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    cmd = [python, __file__, "--worker", side, str(folder), str(ild_users)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                          check=False)  # fmt: skip
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", default="1M")
    parser.add_argument("--train", default="10M")
    parser.add_argument("--rectools-python", default=None, help="a python with rectools 0.19")
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument(
        "--ild-users",
        default=None,
        help="RecTools' ILD on the lists of this many users only (it keeps every pair "
        "of a list as Python tuples: about 8 GiB at 1M users); ours on the same lists",
    )
    parser.add_argument("--dask", action="store_true", help="polars_rankeval on Dask too")
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker)
        return
    users, train_rows = _count(args.users), _count(args.train)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        t0 = time.perf_counter()
        write_data(folder, users, train_rows)
        print(f"data: {users:,} users x {PER_USER} items, {train_rows:,} training rows "
              f"({time.perf_counter() - t0:.1f} s to write)")  # fmt: skip
        ours = spawn(sys.executable, "ours", folder, args.timeout)
        report("polars_rankeval (13 metrics)", ours)
        if args.dask:
            spread = spawn(sys.executable, "ours-dask", folder, args.timeout)
            report("polars_rankeval on Dask, 2 workers x 1 thread (13 metrics; read: "
                   "the cluster started)", spread)  # fmt: skip
            if "error" not in spread and "error" not in ours:
                mine, theirs = ours["load"] + ours["score"], spread["load"] + spread["score"]
                print(f"  Dask / in process: {theirs / mine:.2f}x the time, peak memory "
                      f"{spread['peak_mib']:.0f} MiB (with the workers) against "
                      f"{ours['peak_mib']:.0f} MiB")  # fmt: skip
                compare(spread["values"], ours["values"])
        if not args.rectools_python:
            return
        main_rt = spawn(args.rectools_python, "main", folder, args.timeout)
        report("RecTools (13 metrics, calc_metrics)", main_rt)
        ild_users = _count(args.ild_users) if args.ild_users else users
        ild = spawn(args.rectools_python, "ild", folder, args.timeout, ild_users)
        report(f"RecTools ILD ({ild_users:,} users)", ild)
        total = ours["load"] + ours["score"]
        if "error" not in main_rt:
            theirs = main_rt["load"] + main_rt["score"]
            print(f"13 metrics end to end: polars_rankeval {total:.1f} s, "
                  f"RecTools {theirs:.1f} s: {theirs / total:.1f}x; peak memory "
                  f"{ours['peak_mib']:.0f} MiB against {main_rt['peak_mib']:.0f} MiB")  # fmt: skip
            compare(ours["values"], main_rt["values"])
        if "error" not in ild:
            mine = spawn(sys.executable, "ours-ild", folder, args.timeout, ild_users)
            report(f"polars_rankeval ILD ({ild_users:,} users)", mine)
            ratio = (ild["load"] + ild["score"]) / (mine["load"] + mine["score"])
            print(f"ILD end to end on {ild_users:,} users: {ratio:.1f}x, peak memory "
                  f"{mine['peak_mib']:.0f} MiB against {ild['peak_mib']:.0f} MiB")  # fmt: skip
            compare(mine["values"], ild["values"])
            if ild_users != users:
                full = spawn(sys.executable, "ours-ild", folder, args.timeout, users)
                report(f"polars_rankeval ILD ({users:,} users)", full)


def report(label: str, r: dict) -> None:
    if "error" in r:
        print(f"{label}: failed {r['error']}")
    else:
        print(f"{label}: read {r['load']:.1f} s, score {r['score']:.1f} s, "
              f"peak {r['peak_mib']:.0f} MiB")  # fmt: skip


def compare(ours: dict, theirs: dict) -> None:
    diffs = {n: abs(ours[n] - float(v)) for n, v in theirs.items()}
    worst = max(diffs, key=diffs.__getitem__)
    print(f"  means compared: {len(diffs)}, largest difference {diffs[worst]:.2e} ({worst})")


if __name__ == "__main__":
    main()
