"""Compare two systems query by query, with significance tests and plots.

Run from the repository root (files go to examples/output/ or the folder given):

    python examples/compare_systems.py [OUTPUT_DIR]
"""

import sys
from pathlib import Path

import polars as pl

import polars_rankeval as pr

DATA = Path(__file__).parent / "data"
OUT = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "output"
OUT.mkdir(parents=True, exist_ok=True)

qrels = pr.read_trec_qrels(DATA / "sample.qrels")
run = pl.concat([pr.read_trec_run(DATA / "bm25.run"), pr.read_trec_run(DATA / "dense.run")])
measures = ["AP", "nDCG@10", "P@10", "RR"]
# missing="zero": a query a system retrieved nothing for scores 0, so pairs are complete.
per_query = pr.evaluate(run, qrels, measures, missing="zero")

# Mean, standard error and 95% interval per system and measure.
with pl.Config(float_precision=4, tbl_cols=-1):
    print(pr.summarize(per_query, measures))

# Paired tests against the baseline, Holm-corrected across every row of the table
# (family="all": all measures together; the default corrects within each measure).
for test in ("t", "randomization"):
    table = pr.compare(
        per_query, measures, baseline="bm25", test=test, correction="holm", family="all"
    )
    with pl.Config(tbl_cols=-1, tbl_width_chars=200):
        print(f"\n{test} test, Holm-corrected:")
        print(table.select("measure", "system_a", "system_b", "diff", "p_value", "p_adjusted",
                           "significant", "wins", "losses"))  # fmt: skip

# The table of a paper: means with significance markers against the baseline.
print()
print(pr.report(per_query, measures, baseline="bm25", test="t", correction="holm").to_markdown())

# Where does dense win or lose? One bar per query (needs matplotlib).
try:
    from polars_rankeval.plots import plot_means, plot_query_differences

    path = plot_query_differences(
        per_query, "AP", OUT / "ap_differences.png", system_a="dense", system_b="bm25"
    )
    print(f"\nwrote {path}")
    # Each system's score with its 95% t interval, per measure: a vector PDF for a paper.
    path = plot_means(pr.summarize(per_query, measures, interval="t"), OUT / "means.pdf")
    print(f"wrote {path}")
except ImportError as exc:
    print(f"\nno plot: {exc}")
