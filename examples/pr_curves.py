"""Precision-recall curves: the 11-point interpolated curve and the raw points.

Run from the repository root (PNG files go to examples/output/ or the folder given):

    python examples/pr_curves.py [OUTPUT_DIR]
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

# The curve as a frame: mean interpolated precision at recall 0.0, 0.1, ..., 1.0.
curve = pr.precision_recall_curve(run, qrels, points=11, per_query=False)
with pl.Config(tbl_rows=-1, float_precision=4):
    print(curve.pivot(on="system", index="recall", values="precision"))

# Its points are trec_eval's iprec_at_recall means.
iprec = pr.mean_scores(pr.evaluate(run, qrels, ["IPrec@0.5"]))
print("IPrec@0.5 per system:", dict(zip(iprec["system"], iprec["IPrec@0.5"], strict=True)))

# Raw points: (recall, precision) at every relevant document retrieved, per query.
raw = pr.precision_recall_curve(run, qrels, points=None)
print(raw.head(3))

# Drawn to PNG files (needs matplotlib: pip install 'polars-rankeval[plot]').
try:
    from polars_rankeval.plots import plot_pr_curves

    print("wrote", plot_pr_curves(run, qrels, OUT / "pr_11pt.png"))
    print("wrote", plot_pr_curves(run, qrels, OUT / "pr_raw.png", points=None))
except ImportError as exc:
    print(f"no plot: {exc}")
