"""Benchmark (issue 35): a click log on Parquet, scanned with bounded memory.

Parts, each run in a fresh subprocess (its peak resident set size is the process's
``ru_maxrss``):

- ``generate``: a simulated impression log of ``--rows`` rows (slates of 10 positions:
  ``slate_id, query, doc, position, reward`` and the six propensity columns of Open
  Bandit Pipeline), written chunk by chunk to ``benchmarks/data/clicks/log_<rows>.parquet``
  (git-ignored). Clicks follow the position-based model (examination 1/k^0.8, a
  relevance per (query, doc)); the propensities are random valid probabilities (the
  benchmark measures speed; tests/test_off_policy.py measures correctness).
- ``ope``: ``pr.off_policy`` on ``pl.scan_parquet`` of that file, the six estimators,
  with ``--n-bootstrap`` resamples (seeded).
- ``em``: ``pr.fit_pbm`` (the EM behind ``pr.position_bias``) on the same scan, with
  the largest error of the examination curve against the simulated one.
- ``obp``: Open Bandit Pipeline's slate estimators against ``pr.off_policy`` on
  in-memory arrays of ``--obp-rows`` rows, all six estimators, point estimate and
  interval. OBP 0.5.7 requires Python < 3.11 and does not install here, so its code
  is run as transcribed (numpy, as in ``obp/ope/estimators_slate.py``:
  ``_estimate_round_rewards``, the self-normalised versions,
  ``_estimate_slate_confidence_interval_by_bootstrap`` and ``obp/utils.py``
  ``estimate_confidence_interval_by_bootstrap``; Apache License 2.0, Copyright (c)
  Yuta Saito, Yusuke Narita, and ZOZO Technologies, Inc.), the same per-row numpy OBP
  runs; each OBP estimator call draws its own resamples, as OBP does. ``pr.off_policy``
  runs twice: with its default ``draws="fast"`` (its bounds checked to be within
  4.5 Monte-Carlo standard errors of OBP's) and with ``draws="obp"`` (OBP's resamples:
  bounds equal to 1e-9). The machine's load average is reported with each size.

Run from the repository root::

    python benchmarks/bench_clicks.py --rows 100000000 --n-bootstrap 100
    python benchmarks/bench_clicks.py --part obp --obp-rows 10000,100000

Not a test: no assertion on time.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
from scipy import stats

import polars_rankeval as pr

DATA = Path("benchmarks/data/clicks")
SLATE = 10
N_QUERIES, N_CANDIDATES = 10_000, 20
ESTIMATORS = ("sips", "iips", "rips", "snsips", "sniips", "snrips")
PAIRS = {
    "sips": ("pscore", "evaluation_policy_pscore"),
    "iips": ("pscore_item_position", "evaluation_policy_pscore_item_position"),
    "rips": ("pscore_cascade", "evaluation_policy_pscore_cascade"),
}


def chunk(rng: np.random.Generator, first_slate: int, n_slates: int, gamma: np.ndarray) -> pa.Table:
    theta = 1 / np.arange(1, SLATE + 1) ** 0.8
    q = rng.integers(N_QUERIES, size=n_slates)
    noise = rng.gumbel(size=(n_slates, N_CANDIDATES)).astype(np.float32)
    docs = np.argsort(-(np.log(gamma[q]) + noise), axis=1)[:, :SLATE]
    clicked = rng.random((n_slates, SLATE), dtype=np.float32) < theta * gamma[q[:, None], docs]
    item_b = rng.uniform(0.05, 1.0, size=(n_slates, SLATE))
    item_e = rng.uniform(0.0, 1.0, size=(n_slates, SLATE))
    cascade_b = np.cumprod(rng.uniform(0.3, 1.0, size=(n_slates, SLATE)), axis=1)
    cascade_e = np.cumprod(rng.uniform(0.2, 1.0, size=(n_slates, SLATE)), axis=1)
    n = n_slates * SLATE
    return pa.table(
        {
            "slate_id": np.repeat(np.arange(first_slate, first_slate + n_slates), SLATE),
            "query": np.repeat(q, SLATE).astype(np.int32),
            "doc": docs.ravel().astype(np.int32),
            "position": np.tile(np.arange(SLATE, dtype=np.int8), n_slates),
            "reward": clicked.ravel().astype(np.int8),
            "pscore": np.repeat(cascade_b[:, -1], SLATE),
            "evaluation_policy_pscore": np.repeat(cascade_e[:, -1], SLATE),
            "pscore_item_position": item_b.ravel(),
            "evaluation_policy_pscore_item_position": item_e.ravel(),
            "pscore_cascade": cascade_b.ravel(),
            "evaluation_policy_pscore_cascade": cascade_e.ravel(),
        }
    ).slice(0, n)


def generate(rows: int) -> Path:
    path = DATA / f"log_{rows}.parquet"
    if path.exists():
        return path
    DATA.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    gamma = rng.uniform(0.02, 0.9, size=(N_QUERIES, N_CANDIDATES))
    n_slates, per_chunk = rows // SLATE, 500_000
    tmp = path.with_suffix(".tmp")
    writer = None
    for start in range(0, n_slates, per_chunk):
        table = chunk(rng, start, min(per_chunk, n_slates - start), gamma)
        writer = writer or pq.ParquetWriter(tmp, table.schema, compression="zstd")
        writer.write_table(table, row_group_size=1_000_000)
    assert writer is not None
    writer.close()
    tmp.rename(path)
    return path


def peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB


def part_ope(rows: int, n_bootstrap: int) -> dict[str, object]:
    start = time.perf_counter()
    out = pr.off_policy(
        pl.scan_parquet(DATA / f"log_{rows}.parquet"), ESTIMATORS, n_bootstrap=n_bootstrap, seed=0
    )
    seconds = time.perf_counter() - start
    print(out)
    return {"seconds": seconds, "peak_gib": peak_gib()}


def part_em(rows: int) -> dict[str, object]:
    start = time.perf_counter()
    fit = pr.fit_pbm(pl.scan_parquet(DATA / f"log_{rows}.parquet"), clicked="reward")
    seconds = time.perf_counter() - start
    theta = 1 / np.arange(1, SLATE + 1) ** 0.8
    error = float(np.abs(fit.examination["examination"].to_numpy() - theta).max())
    print(fit.examination)
    return {
        "seconds": seconds,
        "peak_gib": peak_gib(),
        "n_iter": fit.n_iter,
        "converged": fit.converged,
        "max_abs_error": error,
        "pairs": fit.relevance.height,
    }


# --- Open Bandit Pipeline 0.5.7, transcribed (see the module docstring) ---------------


def obp_estimate_confidence_interval_by_bootstrap(
    samples, alpha, n_bootstrap_samples, random_state
):  # type: ignore[no-untyped-def]
    boot_samples = list()
    random_ = np.random.RandomState(random_state)
    for _ in np.arange(n_bootstrap_samples):
        boot_samples.append(np.mean(random_.choice(samples, size=samples.shape[0])))
    lower_bound = np.percentile(boot_samples, 100 * (alpha / 2))
    upper_bound = np.percentile(boot_samples, 100 * (1.0 - alpha / 2))
    return {"mean": np.mean(boot_samples), "lower": lower_bound, "upper": upper_bound}


def obp_estimator(name: str, log: dict[str, np.ndarray], n_bootstrap: int) -> tuple[float, dict]:  # type: ignore[type-arg]
    behaviour, evaluation = PAIRS[name.removeprefix("sn")]
    reward, position = log["reward"], log["position"]
    pb, pe = log[behaviour], log[evaluation]
    if name in ("sips", "iips", "rips"):  # BaseSlateInverseProbabilityWeighting
        iw = pe / pb
        estimated_rewards = reward * iw
    elif name == "snsips":  # SelfNormalizedSlateStandardIPS
        iw = pe / pb
        estimated_rewards = reward * iw / iw.mean()
    else:  # BaseSlateSelfNormalizedInverseProbabilityWeighting
        estimated_rewards = np.zeros_like(pb)
        iw = np.zeros_like(pb)
        for pos_ in range(SLATE):
            idx = position == pos_
            iw[idx] = pe[idx] / pb[idx]
            estimated_rewards[idx] = reward[idx] * iw[idx] / iw[idx].mean()
    slate_id = log["slate_id"]
    value = estimated_rewards.sum() / np.unique(slate_id).shape[0]
    unique_slate = np.unique(slate_id)  # _estimate_slate_confidence_interval_by_bootstrap
    estimated_round_rewards = list()
    for slate in unique_slate:
        estimated_round_rewards.append(estimated_rewards[slate_id == slate].sum())
    interval = obp_estimate_confidence_interval_by_bootstrap(
        np.array(estimated_round_rewards), 0.05, n_bootstrap, 0
    )
    interval["sd"] = float(np.std(estimated_round_rewards, ddof=1))  # not OBP's: for the check
    return value, interval


def monte_carlo_tolerance(sd: float, n: int, n_bootstrap: int, alpha: float = 0.05) -> float:
    """4.5 standard errors of the difference of two independent percentiles q = alpha/2
    of n_bootstrap resampled means (normal approximation, as tests/test_off_policy.py)."""
    q = alpha / 2
    density = np.exp(-(stats.norm.ppf(1 - q) ** 2) / 2) / np.sqrt(2 * np.pi)
    return float(4.5 * np.sqrt(2) * np.sqrt(q * (1 - q) / n_bootstrap) / density * sd / np.sqrt(n))


def timed(call: Callable[[], pl.DataFrame]) -> tuple[pl.DataFrame, float]:
    start = time.perf_counter()
    out = call()
    return out, time.perf_counter() - start


def part_obp(rows: int, n_bootstrap: int) -> dict[str, object]:
    rng = np.random.default_rng(1)
    gamma = rng.uniform(0.02, 0.9, size=(N_QUERIES, N_CANDIDATES))
    frame = pl.from_arrow(chunk(rng, 0, rows // SLATE, gamma))
    assert isinstance(frame, pl.DataFrame)
    arrays = {c: frame[c].to_numpy().astype(np.float64) for c in frame.columns}
    arrays["position"] = frame["position"].to_numpy()
    # first (it pays the first call's setup): the point estimates with one resample
    _, ours_point_s = timed(lambda: pr.off_policy(frame, ESTIMATORS, n_bootstrap=1, seed=0))
    fast, fast_s = timed(lambda: pr.off_policy(frame, ESTIMATORS, n_bootstrap=n_bootstrap, seed=0))
    same, same_s = timed(
        lambda: pr.off_policy(frame, ESTIMATORS, n_bootstrap=n_bootstrap, seed=0, draws="obp")
    )
    start = time.perf_counter()
    theirs = {name: obp_estimator(name, arrays, n_bootstrap) for name in ESTIMATORS}
    obp_s = time.perf_counter() - start
    start = time.perf_counter()
    for name in ESTIMATORS:  # OBP's estimate_policy_value alone (no interval)
        behaviour, evaluation = PAIRS[name.removeprefix("sn")]
        (arrays["reward"] * arrays[evaluation] / arrays[behaviour]).sum() / np.unique(
            arrays["slate_id"]
        ).shape[0]
    obp_point_s = time.perf_counter() - start
    worst = 0.0  # the largest fast-vs-OBP bound difference, in units of the tolerance
    for row_same, row_fast in zip(
        same.iter_rows(named=True), fast.iter_rows(named=True), strict=True
    ):
        value, interval = theirs[row_same["estimator"]]
        assert abs(row_same["estimate"] - value) < 1e-9
        assert abs(row_fast["estimate"] - value) < 1e-9
        assert abs(row_same["lower"] - interval["lower"]) < 1e-9
        assert abs(row_same["upper"] - interval["upper"]) < 1e-9
        tolerance = monte_carlo_tolerance(interval["sd"], rows // SLATE, n_bootstrap)
        for bound in ("lower", "upper"):
            worst = max(worst, abs(row_fast[bound] - interval[bound]) / tolerance)
    assert worst < 1, worst
    return {
        "rows": rows,
        "ours_s": fast_s,
        "ours_obp_draws_s": same_s,
        "obp_s": obp_s,
        "ratio": obp_s / fast_s,
        "ratio_obp_draws": obp_s / same_s,
        "fast_bounds_off_by_tolerance": worst,
        "ours_point_s": ours_point_s,
        "obp_point_s": obp_point_s,
        "load_average": os.getloadavg()[0],
    }


def child(args: argparse.Namespace) -> None:
    if args.task == "generate":
        result: dict[str, object] = {"path": str(generate(args.rows)), "peak_gib": peak_gib()}
    elif args.task == "ope":
        result = part_ope(args.rows, args.n_bootstrap)
    elif args.task == "em":
        result = part_em(args.rows)
    else:
        result = part_obp(args.rows, args.n_bootstrap)
    print("RESULT " + json.dumps(result))


def run(task: str, rows: int, n_bootstrap: int) -> dict[str, object]:
    cmd = [sys.executable, __file__, "--task", task, "--rows", str(rows)]
    cmd += ["--n-bootstrap", str(n_bootstrap)]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    print(done.stdout, end="")
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    result: dict[str, object] = json.loads(line.removeprefix("RESULT "))
    result["wall_s"] = wall
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000_000)
    parser.add_argument("--n-bootstrap", type=int, default=100)
    parser.add_argument("--obp-rows", default="10000,100000")
    parser.add_argument("--obp-bootstrap", type=int, default=10_000)
    parser.add_argument("--part", default="all", choices=["all", "scan", "obp"])
    parser.add_argument("--task", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.task:
        child(args)
        return
    results = {}
    if args.part in ("all", "scan"):
        for task in ("generate", "ope", "em"):
            results[task] = run(task, args.rows, args.n_bootstrap)
            print(f"{task}: {results[task]}", flush=True)
    if args.part in ("all", "obp"):
        for rows in map(int, args.obp_rows.split(",")):
            results[f"obp_{rows}"] = run("obp", rows, args.obp_bootstrap)
            print(f"obp {rows}: {results[f'obp_{rows}']}", flush=True)
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
