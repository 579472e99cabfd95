"""Edges of the TREC readers and writer where a value could be lost or misread (issue 37)."""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest

from polars_rankeval.cli import main
from polars_rankeval.io import read_trec_qrels, read_trec_run, scan_trec_run, write_trec_run


def _run(**columns: object) -> pl.DataFrame:
    base: dict[str, object] = {"query": ["q"], "doc": ["d"], "score": [1.0], "system": ["s"]}
    return pl.DataFrame(base | columns)


# --------------------------------------------------------------------------- writer: ids


@pytest.mark.parametrize("query", ["#q", "#", "#301"])
def test_write_refuses_a_query_id_that_reads_back_as_a_comment(tmp_path: Path, query: str) -> None:
    # trec_eval (get_trec_results.c) and read_trec_run skip a line whose first
    # non-blank character is '#': its rows would be lost without a word.
    run = _run(query=["ok", query], doc=["a", "b"], score=[1.0, 2.0], system=["s", "s"])
    pattern = rf"query {re.escape(repr(query))} \(column 'query', row 1\).*comment"
    with pytest.raises(ValueError, match=pattern):
        write_trec_run(run, tmp_path / "x.run")
    assert not (tmp_path / "x.run").exists()


def test_a_hash_inside_a_query_id_or_a_doc_or_tag_id_is_data(tmp_path: Path) -> None:
    run = _run(query=["q#1"], doc=["#d"], system=["#s"])
    write_trec_run(run, tmp_path / "x.run")
    back = read_trec_run(tmp_path / "x.run")
    assert back.select("query", "doc", "system").row(0) == ("q#1", "#d", "#s")


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("query", "a\nb"),
        ("doc", "a\rb"),
        ("doc", "a\x0bb"),
        ("doc", "a\x0cb"),
        ("system", "a b"),
        ("doc", ""),
        ("doc", "a\x00b"),
    ],
)
def test_write_refuses_ids_that_cannot_survive_the_format_naming_the_row(
    tmp_path: Path, column: str, value: str
) -> None:
    two = {"query": ["q", "q"], "doc": ["x", "y"], "score": [2.0, 1.0], "system": ["s", "s"]}
    run = pl.DataFrame(two | {column: ["fine", value]})
    field = {"system": "tag"}.get(column, column)
    pattern = rf"{field} {re.escape(repr(value))} \(column {column!r}, row 1\)"
    with pytest.raises(ValueError, match=pattern):
        write_trec_run(run, tmp_path / "x.run")


def test_ids_with_non_ascii_spaces_survive_the_format(tmp_path: Path) -> None:
    # trec_eval splits on C isspace (ASCII); so does read_trec_run.
    run = _run(doc=["a\u00a0b"], query=["q\u2003"])
    write_trec_run(run, tmp_path / "x.run")
    back = read_trec_run(tmp_path / "x.run")
    assert back.select("query", "doc").row(0) == ("q\u2003", "a\u00a0b")


# --------------------------------------------------------------------------- writer: scores


def test_integer_scores_past_two_to_the_53_are_written_exactly(tmp_path: Path) -> None:
    big = 2**53
    run = pl.DataFrame({"query": ["q", "q"], "doc": ["a", "b"], "score": [big, big + 1]})
    write_trec_run(run, tmp_path / "x.run", tag="t")
    lines = (tmp_path / "x.run").read_text().splitlines()
    assert lines == [f"q Q0 b 1 {big + 1} t", f"q Q0 a 2 {big} t"]


def test_decimal_scores_are_written_exactly(tmp_path: Path) -> None:
    scores = [Decimal("0.10000000000000000001"), Decimal("0.10000000000000000002")]
    run = pl.DataFrame(
        {"query": ["q", "q"], "doc": ["a", "b"], "score": scores},
        schema_overrides={"score": pl.Decimal(38, 20)},
    )
    write_trec_run(run, tmp_path / "x.run", tag="t")
    lines = (tmp_path / "x.run").read_text().splitlines()
    assert lines == ["q Q0 b 1 0.10000000000000000002 t", "q Q0 a 2 0.10000000000000000001 t"]


def test_integer_scores_round_trip_as_the_same_numbers(tmp_path: Path) -> None:
    run = pl.DataFrame({"query": ["q", "q"], "doc": ["a", "b"], "score": [-3, 7]})
    write_trec_run(run, tmp_path / "x.run", tag="t")
    back = read_trec_run(tmp_path / "x.run")
    assert back["score"].to_list() == [7.0, -3.0]
    assert scan_trec_run(tmp_path / "x.run").collect()["score"].to_list() == [7.0, -3.0]


# --------------------------------------------------------------------------- readers


@pytest.mark.parametrize(("text", "grade"), [("1.0", 1), ("2.", 2), ("-1.00", -1), ("+3", 3)])
def test_a_grade_written_with_a_zero_fraction_reads_as_trec_eval_reads_it(
    text: str, grade: int
) -> None:
    # trec_eval reads a grade with atol (get_qrels.c): "1.0" is 1.
    qrels = read_trec_qrels(f"301 0 d1 {text}\n".encode())
    assert qrels["relevance"].to_list() == [grade]


@pytest.mark.parametrize(("line", "field"), [("301 0 d 1.5", "1.5"), ("301 0 d 1e2", "1e2")])
def test_a_grade_that_is_not_an_integer_is_still_refused(line: str, field: str) -> None:
    with pytest.raises(ValueError, match=rf"<bytes>, line 1: relevance {field} is not an integer"):
        read_trec_qrels(f"{line}\n".encode())


@pytest.mark.parametrize("reader", [read_trec_run, lambda data: scan_trec_run(data).collect()])
def test_a_rank_written_with_a_zero_fraction_is_read(
    reader: Callable[[bytes], pl.DataFrame],
) -> None:
    # trec_eval skips the rank field (get_trec_results.c); "1.0" is rank 1 here.
    run = reader(b"301 Q0 d1 1.0 2.5 t\n301 Q0 d2 2. 1.5 t\n")
    assert run["rank"].to_list() == [1, 2]
    with pytest.raises(ValueError, match=r"line 1: rank 1.5 is not an integer rank"):
        reader(b"301 Q0 d1 1.5 2.5 t\n")


def test_cli_reads_decimal_grades_and_ranks_as_trec_eval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # trec_eval 10.0 prints map 0.8333, ndcg 0.7602 for both qrels files.
    (tmp_path / "q").write_text("1 0 a 1.0\n1 0 b 2.00\n1 0 c 0\n")
    (tmp_path / "r").write_text("1 Q0 a 1.0 3 t\n1 Q0 c 2.0 2 t\n1 Q0 b 3 1 t\n")
    assert main(["eval", "-m", "map", "-m", "ndcg", str(tmp_path / "q"), str(tmp_path / "r")]) == 0
    out = capsys.readouterr()
    assert out.out == "map                   \tall\t0.8333\nndcg                  \tall\t0.7602\n"
    assert out.err == ""
