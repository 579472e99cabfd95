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


# ------------------------------------------------------------ letters style


def test_report_without_baseline_marks_letters_of_beaten_systems(per_query):
    rep = pr.report(per_query, test="tukey")  # every pair, Tukey over the 4 systems
    assert rep.style == "letters"
    assert rep.labels == {"better": "a", "run_base": "b", "same": "c", "worse": "d"}
    cmp = pr.compare(per_query, test="tukey")
    assert rep.comparisons.equals(cmp)
    for row in rep.frame.iter_rows(named=True):
        beaten = set()
        for c in cmp.filter(pl.col("measure") == row["measure"]).iter_rows(named=True):
            if not c["significant"]:
                continue
            if c["system_a"] == row["system"] and c["diff"] > 0:
                beaten.add(rep.labels[c["system_b"]])
            if c["system_b"] == row["system"] and c["diff"] < 0:
                beaten.add(rep.labels[c["system_a"]])
        assert row["beats"] == sorted(beaten)
        assert row["marker"] == "".join(sorted(beaten))
    ap = dict(rep.frame.filter(pl.col("measure") == "AP").select("system", "marker").rows())
    assert ap["better"].startswith("b")  # better beats the baseline on every query
    assert ap["worse"] == ""


def test_letters_markdown_and_latex(per_query):
    rep = pr.report(per_query, ["AP"], test="t", correction="holm", digits=2)
    lines = rep.to_markdown().splitlines()
    assert lines[0] == "| # | system | AP |"
    assert lines[1] == "|:---|:---|---:|"
    # better: 0.28125 + 1.6 / 8 = 0.48; beats run_base (b), same (c) and worse (d)
    assert lines[2] == "| a | better | **0.48**ᵇᶜᵈ |"
    assert lines[5] == "| d | worse | 0.18 |"
    assert "Superscripts: significantly higher than the system of that letter" in lines[7]
    assert "Holm correction" in lines[7]
    tex = rep.to_latex()
    assert r"\begin{tabular}{llr}" in tex
    assert r"\# & System & AP \\" in tex
    assert r"a & better & \textbf{0.48}$^{bcd}$ \\" in tex
    # worse beats nobody: room for the three other letters keeps the column aligned
    assert r"d & worse & 0.18\hphantom{$^{abc}$} \\" in tex


def test_several_baselines_use_letters_and_list_first(per_query):
    rep = pr.report(per_query, ["AP"], baseline=["run_base", "same"])
    assert rep.systems[:2] == ["run_base", "same"]
    assert rep.labels["run_base"] == "a" and rep.labels["same"] == "b"
    pairs = set(rep.comparisons.select("system_a", "system_b").rows())
    assert ("better", "worse") not in pairs and ("worse", "better") not in pairs
    assert "tested against a, b only" in rep.note()


def test_report_names_tukey_and_fdr_and_aggregates(per_query):
    gm = per_query.rename({"P@10": "GMAP"})
    rep = pr.report(gm, baseline="run_base", test="randomized_tukey", n_resamples=500)
    assert "randomised Tukey HSD test, family-wise over the 4 systems" in rep.note()
    assert "GMAP: geometric mean." in rep.note()
    assert rep.frame.filter(pl.col("measure") == "GMAP")["aggregate"].unique().item() == "gmean"
    bh = pr.report(per_query, baseline="run_base", correction="bh")
    assert "Benjamini-Hochberg correction" in bh.note()


def test_too_many_systems_for_letters():
    rows = [(f"s{i:02d}", f"q{q}", (i + q) / 100) for i in range(27) for q in range(3)]
    pq = pl.DataFrame(rows, schema=["system", "query", "AP"], orient="row")
    with pytest.raises(ValueError, match="at most 26 systems without a single baseline"):
        pr.report(pq)
    assert pr.report(pq, baseline="s00").style == "arrows"


# ------------------------------------------------------------ interval columns


@pytest.mark.parametrize("kind", ["normal", "t", "bootstrap", "bca"])
@pytest.mark.parametrize("baseline", ["run_base", None])
def test_interval_columns_equal_summarize(per_query, kind, baseline):
    gm = per_query.with_columns(GMAP=pl.col("AP"), NumRelRet=(pl.col("AP") * 10).round())
    rep = pr.report(gm, baseline=baseline, interval=kind, level=0.9, n_resamples=300, seed=3)
    summary = pr.summarize(gm, interval=kind, level=0.9, n_resamples=300, seed=3)
    cols = rep.frame.columns
    assert cols[cols.index("mean") + 1 : cols.index("mean") + 3] == ["ci_low", "ci_high"]
    joined = rep.frame.join(summary, on=["system", "measure"], suffix="_s")
    assert joined.height == rep.frame.height == 4 * 4
    for name in ("mean", "ci_low", "ci_high"):  # the same queries as summarize: all of them
        diff = (joined[name] - joined[f"{name}_s"]).abs().max()
        assert diff < 1e-12, (name, diff)
    assert rep.interval == kind and rep.level == 0.9


@pytest.mark.parametrize("missing", ["drop", "zero"])
def test_intervals_are_over_the_queries_the_scores_use(per_query, missing):
    """A system lacking queries: the interval is of the paired queries, as the score."""
    lacking = per_query.filter(
        ~((pl.col("system") == "worse") & pl.col("query").is_in(["q0", "q1"]))
    )
    rep = pr.report(lacking, ["AP"], baseline="run_base", missing=missing, interval="t")
    if missing == "drop":
        paired = lacking.filter(~pl.col("query").is_in(["q0", "q1"]))
    else:
        absent = per_query.filter(
            (pl.col("system") == "worse") & pl.col("query").is_in(["q0", "q1"])
        )
        paired = pl.concat([lacking, absent.with_columns(AP=pl.lit(0.0))])
    summary = pr.summarize(paired, ["AP"], interval="t")
    joined = rep.frame.join(summary, on=["system", "measure"], suffix="_s")
    assert joined.height == 4
    for name in ("mean", "ci_low", "ci_high"):
        assert (joined[name] - joined[f"{name}_s"]).abs().max() < 1e-12
    # and not summarize over each system's own queries (which differ here: run_base has
    # q0, q1, which drop leaves out; worse lacks them, which zero scores 0)
    differs = "run_base" if missing == "drop" else "worse"
    own = pr.summarize(lacking, ["AP"], interval="t").filter(system=differs)
    shown = rep.frame.filter(system=differs)
    assert abs(own["ci_low"][0] - shown["ci_low"][0]) > 1e-6


def bracket(low: float, high: float, digits: int) -> str:
    return f" [{low:.{digits}f}, {high:.{digits}f}]"


def test_intervals_in_every_format_arrows(per_query):
    rep = pr.report(per_query, baseline="run_base", digits=3, interval="t")
    rows = {(r["system"], r["measure"]): r for r in rep.frame.iter_rows(named=True)}
    better, base = rows["better", "AP"], rows["run_base", "P@10"]
    after_better = bracket(better["ci_low"], better["ci_high"], 3)
    after_base = bracket(base["ci_low"], base["ci_high"], 3)
    markdown = rep.to_markdown()
    assert f"| better | **{better['mean']:.3f}**▲{after_better} |" in markdown
    assert f"| run_base | {rows['run_base', 'AP']['mean']:.3f}" in markdown
    assert f"{base['mean']:.3f}{after_base} |" in markdown
    assert "In brackets: the 95% t confidence interval of each score." in markdown
    latex = rep.to_latex()
    assert rf"\textbf{{{better['mean']:.3f}}}$^{{\blacktriangle}}${after_better} &" in latex
    assert r"In brackets: the 95\% t confidence interval of each score." in latex
    table = rep.table()
    cell = table.filter(system="better")["AP"].item()
    assert cell == f"**{better['mean']:.3f}**▲{after_better}"
    assert str(rep) == markdown and rep._repr_markdown_() == markdown
    assert rep.frame["ci_low"].null_count() == 0


def test_intervals_in_every_format_letters(per_query):
    rep = pr.report(per_query, ["AP"], digits=2, interval="bootstrap", level=0.9, n_resamples=200)
    row = rep.frame.filter(system="worse").row(0, named=True)
    after = bracket(row["ci_low"], row["ci_high"], 2)
    assert f"| d | worse | {row['mean']:.2f}{after} |" in rep.to_markdown()
    assert rf"d & worse & {row['mean']:.2f}\hphantom{{$^{{abc}}$}}{after} \\" in rep.to_latex()
    assert rep.table().filter(system="worse")["AP"].item() == f"{row['mean']:.2f}{after}"
    assert "the 90% percentile bootstrap confidence interval" in rep.note()


def test_interval_true_is_normal_and_bad_values_are_refused_first(per_query):
    rep = pr.report(per_query, ["AP"], baseline="run_base", interval=True)
    normal = pr.summarize(per_query, ["AP"]).select("system", "ci_low")
    joined = rep.frame.join(normal, on="system", suffix="_s")
    assert (joined["ci_low"] - joined["ci_low_s"]).abs().max() < 1e-12
    assert "ci_low" not in pr.report(per_query, ["AP"], baseline="run_base").frame.columns
    with pytest.raises(ValueError, match="interval"):
        pr.report(per_query, baseline="run_base", interval="wald")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="level must be strictly between 0 and 1"):
        pr.report(per_query, baseline="run_base", interval="t", level=95)


def test_reports_by_segment_carry_intervals(per_query):
    days = per_query.with_columns(
        day=pl.when(pl.col("query").is_in(["q0", "q1", "q2", "q3"])).then(pl.lit("mon"))
        .otherwise(pl.lit("tue"))
    )  # fmt: skip
    out = pr.reports(days, "day", ["AP"], baseline="run_base", interval="t")
    for (day,), rep in out.items():
        summary = pr.summarize(days.filter(day=day), ["AP"], interval="t")
        joined = rep.frame.join(summary, on=["system", "measure"], suffix="_s")
        assert (joined["ci_high"] - joined["ci_high_s"]).abs().max() < 1e-12


def test_intervals_from_lazy_and_pandas_inputs(per_query):
    want = pr.report(per_query, baseline="run_base", interval="t").frame
    for given in (per_query.lazy(), per_query.to_pandas()):
        got = pr.report(given, baseline="run_base", interval="t").frame
        assert got.equals(want)
