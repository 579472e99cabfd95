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


def test_png_suffix_required(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    with pytest.raises(ValueError, match=r"must end in \.png"):
        plots.plot_query_differences(PER_QUERY, "AP", tmp_path / "d.pdf")


def test_without_matplotlib_the_error_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in ("matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ImportError, match=r"pip install 'polars-rankeval\[plot\]'"):
        plots.plot_query_differences(PER_QUERY, "AP", tmp_path / "d.png")
    assert not (tmp_path / "d.png").exists()
