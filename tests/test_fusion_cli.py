"""The fuse and optimize-fusion subcommands, on real files."""

from __future__ import annotations

import json

import polars as pl
import pytest

import polars_rankeval as pr
from polars_rankeval.cli import main


@pytest.fixture
def files(tmp_path):
    a = pl.DataFrame({"query": ["1", "1", "1", "2"], "doc": ["a", "b", "c", "c"],
                      "score": [3.0, 2.0, 1.0, 1.0]})  # fmt: skip
    b = pl.DataFrame({"query": ["1", "1", "2"], "doc": ["b", "d", "c"], "score": [0.5, 0.2, 0.4]})
    pr.write_trec_run(a, tmp_path / "bm25.run", system=None, tag="bm25")
    pr.write_trec_run(b, tmp_path / "dense.run", system=None, tag="dense")
    (tmp_path / "qrels").write_text("1 0 b 1\n1 0 d 1\n2 0 c 1\n")
    return tmp_path, {"bm25.run": a, "dense.run": b}


def test_fuse_writes_trec_and_parquet_equal_to_the_api(files, capsys):
    path, runs = files
    expected = pr.fuse(runs, method="rrf", norm=None, params={"k": 10})
    assert main(["fuse", str(path / "bm25.run"), str(path / "dense.run"), "--method", "rrf",
                 "--norm", "none", "--param", "k=10", "-o", str(path / "f.run")]) == 0  # fmt: skip
    back = pr.read_trec_run(path / "f.run").select("query", "doc", "score").sort("query", "doc")
    assert back.equals(expected.select("query", "doc", "score").sort("query", "doc"))
    assert main(["fuse", str(path / "bm25.run"), str(path / "dense.run"),
                 "-o", str(path / "f.parquet"), "--weights", "0.3", "0.7"]) == 0  # fmt: skip
    parquet = pl.read_parquet(path / "f.parquet").sort("query", "doc")
    assert parquet.equals(pr.fuse(runs, weights=[0.3, 0.7]).sort("query", "doc"))
    assert main(["fuse", str(path / "bm25.run"), str(path / "dense.run"), "--method", "rrf"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:4] == ["1", "Q0", "b", "1"] and len(lines) == 5


def test_optimize_fusion_prints_the_grid_and_the_best(files, capsys):
    path, runs = files
    qrels = pr.read_trec_qrels(path / "qrels")
    best, report = pr.optimize_fusion(runs, qrels, metric="AP", show_progress=False)
    assert main(["optimize-fusion", str(path / "qrels"), str(path / "bm25.run"),
                 str(path / "dense.run"), "--metric", "AP"]) == 0  # fmt: skip
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == report.height + 1 == 12
    assert json.loads(lines[-1].split("\t")[1]) == {"weights": list(best["weights"])}


def test_errors_are_one_line(files, capsys):
    path, _ = files
    assert main(["fuse", str(path / "bm25.run"), str(path / "dense.run"), "--method", "rbc"]) == 1
    assert "needs parameter(s) ['phi']" in capsys.readouterr().err
    assert main(["fuse", str(path / "bm25.run"), str(path / "dense.run"), "--param", "k"]) == 1
    assert "NAME=NUMBER" in capsys.readouterr().err
