"""Nightly evaluation of a click log: segments, intervals and an A/B comparison.

A click log holds one row per shown item: the day, the user's country, the
experiment arm that ranked the results, the user and session (a compound query
id), the position shown and whether it was clicked. The log is generated here
(seeded), written to Parquet, and scanned lazily as a real job would:

    python examples/log_evaluation.py [OUTPUT_DIR]

It prints the mean RR, nDCG@5 and P@3 per (day, country) segment and arm with
95% intervals, and per segment the comparison of the two arms (paired by user
and session, with Holm's correction within each segment).
"""

import sys
from pathlib import Path

import numpy as np
import polars as pl

import polars_rankeval as pr

OUT = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "output"
OUT.mkdir(parents=True, exist_ok=True)


def click_log(seed: int = 7, sessions: int = 400) -> pl.DataFrame:
    """Ten results per session, shown by both arms; the 'new' arm puts clicks higher."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(sessions):
        day = ["2026-11-29", "2026-11-30"][s % 2]
        country = ["de", "fr", "it"][(s // 2) % 3]
        user = f"u{s // 4}"
        wanted = rng.random(10) < 0.25  # which of the 10 items the user would click
        for arm, lift in (("old", 0.0), ("new", 0.15)):
            score = rng.random(10) + lift * wanted
            position = np.argsort(np.argsort(-score)) + 1
            for item in range(10):
                rows.append((day, country, arm, user, s, int(position[item]), bool(wanted[item])))
    schema = ["day", "country", "arm", "user", "session", "position", "clicked"]
    return pl.DataFrame(rows, schema=schema, orient="row")


click_log().write_parquet(OUT / "clicks.parquet")

log = pl.scan_parquet(OUT / "clicks.parquet")
per_query = pr.evaluate_judged(
    log,
    ["RR", "nDCG@5", "P@3"],
    query=["user", "session"],
    rank="position",
    relevance="clicked",
    system="arm",
    by=["day", "country"],
).collect()

summary = pr.summarize(per_query.drop("user", "session"), system="arm", by=["day", "country"])
compared = pr.compare(
    per_query.with_columns(query=pl.format("{}/{}", "user", "session")).drop("user", "session"),
    system="arm",
    baseline="old",
    test="t",
    correction="holm",
    by=["day", "country"],
)
with pl.Config(float_precision=3, tbl_rows=40, tbl_cols=12):
    print(summary.select("day", "country", "arm", "measure", "mean", "ci_low", "ci_high", "n"))
    print(compared.select("day", "country", "measure", "system_a", "diff", "p_adjusted",
                          "significant"))  # fmt: skip
wins = compared.filter(pl.col("significant") & (pl.col("diff") > 0)).height
print(f"new beats old significantly in {wins} of {compared.height} (segment, measure) tests")
