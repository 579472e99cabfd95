"""report(): means and markers against a baseline, and their Markdown / LaTeX text."""

from __future__ import annotations

import polars as pl
import pytest
import scipy.stats as sps

import polars_rankeval as pr
from polars_rankeval.report import latex_escape


@pytest.fixture(scope="module")
def per_query() -> pl.DataFrame:
    """Three systems, eight queries: 'better' wins everywhere, 'worse' loses, 'same' ties-ish."""
    base = [0.10, 0.30, 0.20, 0.50, 0.40, 0.35, 0.25, 0.15]
    systems = {
        "run_base": base,
        "better": [
            x + d for x, d in zip(base, [0.2, 0.1, 0.3, 0.2, 0.1, 0.2, 0.3, 0.2], strict=True)
        ],
        "worse": [
            x - d for x, d in zip(base, [0.05, 0.1, 0.1, 0.2, 0.1, 0.1, 0.05, 0.1], strict=True)
        ],
        "same": [
            x + d for x, d in zip(base, [0.1, -0.1, 0.05, -0.05, 0.0, 0.1, -0.1, 0.0], strict=True)
        ],
    }
    rows = [(s, f"q{i}", v, 1.0 - v) for s, values in systems.items() for i, v in enumerate(values)]
    return pl.DataFrame(rows, schema=["system", "query", "AP", "P@10"], orient="row")


def test_frame_means_markers_and_order(per_query):
    rep = pr.report(per_query, baseline="run_base")
    frame = rep.frame
    assert frame.columns == [
        "system",
        "measure",
        "aggregate",
        "mean",
        "diff",
        "p_value",
        "p_adjusted",
        "significant",
        "marker",
        "best",
    ]
    assert rep.systems == ["run_base", "better", "same", "worse"]  # baseline first
    assert rep.measures == ["AP", "P@10"]
    base = frame.filter(pl.col("system") == "run_base")
    assert base["diff"].to_list() == [0.0, 0.0]
    assert base["p_value"].null_count() == 2
    for row in frame.filter(pl.col("system") != "run_base").iter_rows(named=True):
        a = per_query.filter(pl.col("system") == row["system"]).sort("query")[row["measure"]]
        b = per_query.filter(pl.col("system") == "run_base").sort("query")[row["measure"]]
        assert row["mean"] == pytest.approx(a.mean())
        assert row["diff"] == pytest.approx(a.mean() - b.mean())
        p = sps.ttest_rel(a.to_numpy(), b.to_numpy()).pvalue
        assert row["p_value"] == pytest.approx(p, abs=1e-9)
        expected = "" if p >= 0.05 else ("▲" if row["diff"] > 0 else "▼")
        assert row["marker"] == expected
    markers = dict(frame.filter(pl.col("measure") == "AP").select("system", "marker").rows())
    # P@10 = 1 - AP, so the directions flip
    flipped = dict(frame.filter(pl.col("measure") == "P@10").select("system", "marker").rows())
    assert markers == {"run_base": "", "better": "▲", "same": "", "worse": "▼"}
    assert flipped == {"run_base": "", "better": "▼", "same": "", "worse": "▲"}


def test_markdown_table(per_query):
    rep = pr.report(per_query, baseline="run_base", correction="holm", digits=3)
    text = rep.to_markdown()
    lines = text.splitlines()
    assert lines[0] == "| system | AP | P@10 |"
    assert lines[1] == "|:---|---:|---:|"
    mean_better = sum(per_query.filter(pl.col("system") == "better")["AP"]) / 8
    assert f"| better | **{mean_better:.3f}**▲ |" in lines[3]
    assert lines[2].startswith("| run_base | 0.281 |")  # (0.1+0.3+...+0.15)/8 = 0.28125
    assert "Holm correction" in text
    assert "8 queries" in text
    assert str(rep) == text


def test_latex_table_escapes_and_markers(per_query):
    rep = pr.report(per_query, baseline="run_base", digits=2)
    tex = rep.to_latex(label="tab:main")
    assert r"\begin{tabular}{lrr}" in tex
    assert r"System & AP & P@10 \\" in tex
    assert r"run\_base & 0.28 & 0.72 \\" in tex
    # better: 0.28125 + 1.6 / 8 = 0.48125; worse: 0.28125 - 0.8 / 8 = 0.18125
    assert r"better & \textbf{0.48}$^{\blacktriangle}$ & 0.52$^{\blacktriangledown}$ \\" in tex
    assert r"worse & 0.18$^{\blacktriangledown}$ & \textbf{0.82}$^{\blacktriangle}$ \\" in tex
    assert r"\label{tab:main}" in tex
    assert tex.count(r"\\") == 5  # header + 4 systems
    assert "run_base" not in tex.replace(r"run\_base", "")


def test_latex_escape():
    assert latex_escape("a_b&c%d$e#f{g}") == r"a\_b\&c\%d\$e\#f\{g\}"
    assert latex_escape("~^\\") == r"\textasciitilde{}\textasciicircum{}\textbackslash{}"


def test_report_rejects_unknown_baseline(per_query):
    with pytest.raises(ValueError, match="baseline 'bm25' is not a system"):
        pr.report(per_query, baseline="bm25")
