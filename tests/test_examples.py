"""Every script in examples/ runs as written, from the repository root."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

ROOT = Path(__file__).parents[1]
EXAMPLES = ROOT / "examples"


def run_example(name: str, *args: str | Path) -> str:
    """Run ``python examples/<name>`` from the repository root; return its stdout."""
    cmd = [sys.executable, str(Path("examples") / name), *map(str, args)]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
    assert res.returncode == 0, f"{name} failed:\n{res.stderr}"
    return res.stdout


def test_examples_exist() -> None:
    # Every example has a test below (the Dask and Spark ones carry those markers).
    tested = {
        "quickstart.py",
        "compare_systems.py",
        "fusion.py",
        "pr_curves.py",
        "etl_parquet.py",
        "log_evaluation.py",
        "own_measures.py",
        "test_collection.py",
        "dask_evaluate.py",
        "spark_evaluate.py",
        "recsys.py",
        "click_logs.py",
    }
    assert tested == {p.name for p in EXAMPLES.glob("*.py")}


@pytest.mark.dask
def test_dask_example() -> None:
    pytest.importorskip("distributed", reason="needs the [dask] extra")
    out = run_example("dask_evaluate.py")
    assert "(system, query) rows, identical to pr.evaluate." in out


@pytest.mark.spark
def test_spark_example() -> None:
    pytest.importorskip("pyspark", reason="needs the [spark] extra")
    if shutil.which("java") is None:
        pytest.skip("Spark needs Java on PATH")
    out = run_example("spark_evaluate.py")
    assert "identical to pr.evaluate" in out


def test_quickstart() -> None:
    out = run_example("quickstart.py")
    assert "5000 retrieved rows, 2 systems, 3000 judgements" in out
    assert "│ bm25   ┆ 25        ┆ 0.4196 ┆ 0.7520 ┆" in out  # MAP and P@10 of bm25


def test_compare_systems(tmp_path: Path) -> None:
    out = run_example("compare_systems.py", tmp_path)
    assert "randomization test, Holm-corrected:" in out
    assert "| dense | **0.6295**▲ |" in out  # the report marks dense's MAP as a gain
    if "no plot:" not in out:
        assert (tmp_path / "ap_differences.png").read_bytes()[:4] == b"\x89PNG"
        assert (tmp_path / "means.pdf").read_bytes()[:5] == b"%PDF-"


def test_fusion() -> None:
    out = run_example("fusion.py")
    assert "best weights (bm25, dense): (0.4, 0.6)" in out
    assert "│ wsum   ┆ 0.928641 ┆" in out  # the tuned fusion's mean nDCG@10
    assert "│ rrf      ┆ bm25     ┆ 0.2307 ┆" in out


def test_pr_curves(tmp_path: Path) -> None:
    out = run_example("pr_curves.py", tmp_path)
    assert "IPrec@0.5 per system: {'bm25': 0.48299" in out
    if "no plot:" not in out:
        for name in ("pr_11pt.png", "pr_raw.png"):
            assert (tmp_path / name).read_bytes()[:4] == b"\x89PNG"


def test_etl_parquet(tmp_path: Path) -> None:
    out = run_example("etl_parquet.py", tmp_path)
    assert f"{tmp_path / 'per_query.parquet'}: 50 rows" in out
    means = pl.read_parquet(tmp_path / "means.parquet")
    assert means["system"].to_list() == ["bm25", "dense"]
    assert means["AP"].to_list() == pytest.approx([0.419557, 0.629494], abs=1e-6)
    runs = pl.read_parquet(tmp_path / "runs.parquet")
    assert runs.schema["query"] == pl.String
    assert runs.height == 5000


def test_log_evaluation(tmp_path: Path) -> None:
    out = run_example("log_evaluation.py", tmp_path)
    assert (tmp_path / "clicks.parquet").exists()
    log = pl.read_parquet(tmp_path / "clicks.parquet")
    assert log.height == 400 * 2 * 10
    # one summary row per (day, country, arm, measure): 2 * 3 * 2 * 3
    assert "shape: (36, 8)" in out
    assert "shape: (18, 7)" in out  # one comparison per (day, country, measure)
    assert "(segment, measure) tests" in out


def test_own_measures() -> None:
    out = run_example("own_measures.py")
    assert "│ bm25   ┆ 25        ┆ 0.3600 ┆ 0.5080 ┆ 0.7520         ┆ 0.7520 │" in out
    assert "GP(grade=1)@10 equals P@10 on every query: True" in out


def test_test_collection(tmp_path: Path) -> None:
    out = run_example("test_collection.py", tmp_path)
    assert "top-10 pool: 439 pairs; RBP pool: 250 pairs" in out
    assert "│ dense  ┆ 25      ┆ 1.560  ┆ 0.397     ┆ 0.156    ┆" in out  # coverage of dense
    assert "│ 3000  ┆ 0.9043    ┆ 0.8397  ┆ 0.8350      ┆ 0.8348       ┆ 0.8349" in out
    assert "│ primary    ┆ second     ┆ 2       ┆ 1.0     ┆ 1.0    │" in out
    assert "│ dense  ┆ 0.7795        ┆ 0.3882    ┆ 0.7726       │" in out  # infAP near AP
    lines = (tmp_path / "pool.txt").read_text().splitlines()
    assert len(lines) == 439 and lines[0].split("\t")[:3] == ["401", "Q0", "DOC-401-0135"]
    docs = (tmp_path / "docs.txt").read_text().splitlines()
    assert docs == sorted(set(line.split("\t")[2] for line in lines))


def test_recsys(tmp_path: Path) -> None:
    out = run_example("recsys.py", tmp_path)
    # the popularity baseline: the same 10 of 120 items to everyone
    assert "│ mobile ┆ popular  ┆ 0.083                              ┆ 0.917   ┆ 0.000" in out
    assert "│ mobile ┆ personal ┆ 450       ┆ 0.076" in out
    assert (tmp_path / "recs.parquet").exists()


def test_click_logs() -> None:
    out = run_example("click_logs.py")
    assert "500000 impressions, 96455 clicks" in out
    error = float(out.split("largest error ")[1].split()[0])
    assert error < 0.01  # EM within 0.01 of the simulated examination curve
    assert "│ by_relevance ┆ 1.0    │" in out
    assert "│ iips      ┆ 1.088    ┆ 1.06  ┆ 1.115 ┆ 20000    │" in out  # covers 1.1
    assert "interleaving: A wins 377, B wins 181, ties 185, preference 0.132" in out
