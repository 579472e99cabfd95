"""PNG plots: files are written, inputs are checked, matplotlib stays optional."""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl
import pytest

from polars_rankeval import plots

PER_QUERY = pl.DataFrame(
    {
        "system": ["x"] * 3 + ["y"] * 3,
        "query": ["1", "2", "3"] * 2,
        "AP": [0.5, 0.2, 0.3, 0.25, 0.4, 0.3],
    }
)


def test_query_differences_values_and_order() -> None:
    got = plots.query_differences(PER_QUERY, "AP", system_a="y", system_b="x")
    assert got["query"].to_list() == ["2", "3", "1"]
    assert got["diff"].to_list() == pytest.approx([0.2, 0.0, -0.25])


def test_query_differences_needs_paired_queries() -> None:
    unpaired = PER_QUERY.filter(~((pl.col("system") == "y") & (pl.col("query") == "3")))
    with pytest.raises(ValueError, match=r"1 queries are scored for only one of 'x' and 'y' \(3\)"):
        plots.query_differences(unpaired, "AP")


def test_query_differences_needs_two_systems_named() -> None:
    three = pl.concat([PER_QUERY, PER_QUERY.with_columns(system=pl.lit("z"))])
    with pytest.raises(ValueError, match="holds 3 systems"):
        plots.query_differences(three, "AP")
    with pytest.raises(ValueError, match="System 'w' is not in per_query"):
        plots.query_differences(three, "AP", system_a="w", system_b="x")


def test_plots_write_png_files(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    diff = plots.plot_query_differences(PER_QUERY, "AP", tmp_path / "d.png")
    curves = pl.DataFrame(
        {"query": ["1"] * 3 + ["2"] * 3, "recall": [0.0, 0.5, 1.0] * 2,
         "precision": [1.0, 0.5, 0.2, 0.8, 0.8, 0.1]}
    )  # fmt: skip
    pr = plots.plot_precision_recall(curves, tmp_path / "pr.png", title="two queries")
    for path in (diff, pr):
        assert path.stat().st_size > 1000
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_other_suffixes_are_refused_before_any_work(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    with pytest.raises(ValueError, match=r"must end in \.png, \.svg or \.pdf\. Got '.*d\.jpg'"):
        plots.plot_query_differences(PER_QUERY, "AP", tmp_path / "d.jpg")
    with pytest.raises(ValueError, match=r"must end in \.png, \.svg or \.pdf"):
        plots.plot_means(PER_QUERY, tmp_path / "m.eps")  # the path is checked first
    assert list(tmp_path.iterdir()) == []


def is_png(data: bytes) -> bool:
    return data[:8] == b"\x89PNG\r\n\x1a\n" and data[-8:-4] == b"IEND"


def is_svg(data: bytes) -> bool:
    text = data.decode("utf-8", errors="replace")
    return text.startswith("<?xml") and "<svg" in text[:1000] and text.rstrip().endswith("</svg>")


def is_pdf(data: bytes) -> bool:
    return data[:5] == b"%PDF-" and data.rstrip().endswith(b"%%EOF")


FORMAT_CHECKS = {"png": is_png, "svg": is_svg, "pdf": is_pdf}
CURVES = pl.DataFrame(
    {"query": ["1"] * 3 + ["2"] * 3, "recall": [0.0, 0.5, 1.0] * 2,
     "precision": [1.0, 0.5, 0.2, 0.8, 0.8, 0.1]}
)  # fmt: skip


@pytest.mark.parametrize("suffix", [".png", ".svg", ".pdf", ".SVG"])
def test_every_plot_writes_png_svg_and_pdf(tmp_path: Path, suffix: str) -> None:
    pytest.importorskip("matplotlib")
    import polars_rankeval as pr

    kind = suffix.lower().lstrip(".")
    run = pl.DataFrame({"query": ["q"] * 4, "doc": ["a", "b", "c", "d"], "score": [4.0, 3, 2, 1]})
    qrels = pl.DataFrame({"query": ["q", "q"], "doc": ["b", "d"], "relevance": [1, 1]})
    written = [
        plots.plot_query_differences(PER_QUERY, "AP", tmp_path / f"d{suffix}"),
        plots.plot_precision_recall(CURVES, tmp_path / f"pr{suffix}"),
        plots.plot_pr_curves(run, qrels, tmp_path / f"curves{suffix}"),
        plots.plot_means(pr.summarize(PER_QUERY), tmp_path / f"means{suffix}"),
    ]
    for path in written:
        assert path.suffix == suffix
        data = path.read_bytes()
        assert FORMAT_CHECKS[kind](data), (path, data[:20])
        for other, check in FORMAT_CHECKS.items():  # and not another format named so
            assert check(data) == (other == kind)


def test_vector_files_are_the_same_bytes_each_time(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    for suffix in (".svg", ".pdf"):
        one = plots.plot_precision_recall(CURVES, tmp_path / f"a{suffix}").read_bytes()
        two = plots.plot_precision_recall(CURVES, tmp_path / f"b{suffix}").read_bytes()
        assert one == two, suffix  # no creation date in the file


def test_plot_means_draws_summarize_values(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    import numpy as np

    import polars_rankeval as pr

    three = pl.concat([PER_QUERY, PER_QUERY.with_columns(system=pl.lit("z"), AP=pl.col("AP") / 2)])
    three = three.with_columns(NumRelRet=pl.col("AP") * 10)
    summary = pr.summarize(three, interval="t", level=0.9)
    fig = plots._means_figure(summary, measures=None, system="system", title=None)
    axes = fig.axes
    assert [ax.get_xlabel() for ax in axes] == ["AP", "NumRelRet (total)"]
    assert [t.get_text() for t in axes[0].get_yticklabels()] == ["x", "y", "z"]
    for ax, measure in zip(axes, ["AP", "NumRelRet"], strict=True):
        rows = summary.filter(measure=measure)
        segments = np.array(ax.collections[0].get_segments())  # [low, y] -> [high, y]
        np.testing.assert_allclose(segments[:, 0, 0], rows["ci_low"].to_numpy(), rtol=1e-12)
        np.testing.assert_allclose(segments[:, 1, 0], rows["ci_high"].to_numpy(), rtol=1e-12)
        np.testing.assert_array_equal(segments[:, 0, 1], [0, 1, 2])
        dots = ax.collections[1].get_offsets()
        np.testing.assert_allclose(dots[:, 0], rows["mean"].to_numpy(), rtol=1e-12)
    only = plots._means_figure(summary, measures=["NumRelRet"], system="system", title="t")
    assert [ax.get_xlabel() for ax in only.axes] == ["NumRelRet (total)"]


def test_plot_means_segments_are_rows(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    import polars_rankeval as pr

    days = PER_QUERY.with_columns(
        day=pl.when(pl.col("query") == "1").then(pl.lit("mon")).otherwise(pl.lit("tue"))
    )
    summary = pr.summarize(days, by="day")
    fig = plots._means_figure(summary, measures=None, system="system", title=None)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == ["mon / x", "mon / y", "tue / x", "tue / y"]


def test_plot_means_refuses_what_it_cannot_draw(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    import polars_rankeval as pr

    with pytest.raises(
        ValueError, match=r"plot_means draws pr.summarize's output .* pass pr.summarize"
    ):
        plots.plot_means(PER_QUERY, tmp_path / "m.png")
    with pytest.raises(ValueError, match="Measure 'P@10' is not in the summary"):
        plots.plot_means(pr.summarize(PER_QUERY), tmp_path / "m.png", measures=["P@10"])
    assert list(tmp_path.iterdir()) == []


def test_cli_curve_writes_svg(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from polars_rankeval.cli import main

    data = Path(__file__).parents[1] / "examples" / "data"
    out = tmp_path / "curves.svg"
    assert main(["curve", str(data / "sample.qrels"), str(data / "bm25.run"), "-o", str(out)]) == 0
    assert is_svg(out.read_bytes())


def test_without_matplotlib_the_error_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in ("matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ImportError, match=r"pip install 'polars-rankeval\[plot\]'"):
        plots.plot_query_differences(PER_QUERY, "AP", tmp_path / "d.png")
    assert not (tmp_path / "d.png").exists()


def test_query_differences_count_wins_by_the_measures_direction(tmp_path: Path) -> None:
    """FallOut: a lower value is a win, so x (lower on 2 of 3 queries) wins twice; the
    same values named AP, where higher wins, count one win (the title, as text in an SVG
    written with its fonts kept as text)."""
    matplotlib = pytest.importorskip("matplotlib")
    pq = pl.DataFrame(
        {"system": ["x"] * 3 + ["y"] * 3, "query": ["1", "2", "3"] * 2,
         "v": [0.1, 0.2, 0.5, 0.3, 0.4, 0.2]}
    )  # fmt: skip
    titles = {}
    for name in ("FallOut@10", "AP"):
        out = tmp_path / f"{name}.svg"
        with matplotlib.rc_context({"svg.fonttype": "none"}):
            plots.plot_query_differences(pq.rename({"v": name}), name, out)
        titles[name] = out.read_text()
    assert "x vs y: 2 wins, 0 ties, 1 losses" in titles["FallOut@10"]
    assert "x vs y: 1 wins, 0 ties, 2 losses" in titles["AP"]
