"""TREC files that are not UTF-8 text (issue 37's drop-in parity): trec_eval reads any
bytes and compares ids with ``strcmp``; the ``eval`` command then reads every input
byte by byte and prints the ids back as the same bytes, equal to trec_eval's output
(tests/data/latin1: the expected outputs of trec_eval 10.0 and 9.0.8 on them)."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_rankeval as pr
from polars_rankeval.io import NotUtf8Error

DATA = Path(__file__).parent / "data" / "latin1"
CONVENTIONS = {"10": [], "9": ["--conventions", "trec_eval-9"]}


def eval_command(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    cmd = [sys.executable, "-m", "polars_rankeval", "eval", *args]
    return subprocess.run(cmd, input=stdin, capture_output=True, check=False)


@pytest.mark.parametrize("version", CONVENTIONS)
def test_eval_prints_what_trec_eval_prints_on_latin1_files(version: str) -> None:
    args = [*CONVENTIONS[version], "-q", "-m", "all_trec", str(DATA / "qrels"), str(DATA / "run")]
    done = eval_command(*args)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (DATA / f"out.{version}.q.all_trec").read_bytes()


def test_eval_reads_a_latin1_run_from_standard_input() -> None:
    args = ["-q", "-m", "all_trec", str(DATA / "qrels"), "-"]
    done = eval_command(*args, stdin=(DATA / "run").read_bytes())
    assert done.returncode == 0, done.stderr
    assert done.stdout == (DATA / "out.10.q.all_trec").read_bytes()


def test_readers_name_the_line_and_the_encoding_that_reads_it() -> None:
    with pytest.raises(NotUtf8Error, match=r"run, line 1: not valid UTF-8 .*encoding='latin-1'"):
        pr.read_trec_run(DATA / "run")
    with pytest.raises(ValueError, match="encoding must be one of 'utf-8', 'latin-1'"):
        pr.read_trec_qrels(DATA / "qrels", encoding="latin1")  # type: ignore[arg-type]


def test_latin1_ids_are_their_bytes() -> None:
    """Each byte one character: the Latin-1 é (one byte) and the UTF-8 é (two bytes) are
    two ids, and ids order as their bytes (d\\xe9 after dz)."""
    qrels = pr.read_trec_qrels(DATA / "qrels", encoding="latin-1")
    docs = qrels.filter(qrels["query"] == "301")["doc"].to_list()
    assert docs == ["d\xe9", "dz", "da", "d\xc3\xa9"]
    assert sorted(["dz", "d\xe9"]) == ["dz", "d\xe9"]
    run = pr.read_trec_run(DATA / "run", encoding="latin-1")
    assert run["system"].unique().to_list() == ["r\xe8n"]
    ranked = pr.rank_run(run.filter(run["query"] == "301"))
    assert ranked["doc"].to_list() == ["d\xe9", "dz", "da", "d\xc3\xa9"]


def test_fuse_writes_latin1_ids_back_as_their_bytes(tmp_path: Path) -> None:
    out, other = tmp_path / "fused.run", tmp_path / "other.run"
    other.write_bytes((DATA / "run").read_bytes().replace(b"r\xe8n", b"other"))
    cmd = [sys.executable, "-m", "polars_rankeval", "fuse", str(DATA / "run"), str(other),
           "-o", str(out)]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, check=False)
    assert done.returncode == 0, done.stderr
    written = out.read_bytes()
    assert b" d\xe9 " in written and b"q\xf6 Q0 " in written
    assert b"\xc3\xa9" in written  # the UTF-8 e-acute of the input, its two bytes kept
    assert pr.read_trec_run(out, encoding="latin-1")["doc"].n_unique() == 8


def test_other_formats_print_latin1_ids_as_utf8_text() -> None:
    """JSON, CSV, tables and Markdown are text: UTF-8 (JSON must be), the ids as read."""
    done = eval_command("-f", "json", "-m", "AP", str(DATA / "qrels"), str(DATA / "run"))
    assert done.returncode == 0, done.stderr
    assert '"system":"r\xe8n"' in done.stdout.decode("utf-8")


@pytest.mark.parametrize(
    ("scan", "read", "name"),
    [
        (pr.scan_trec_run, pr.read_trec_run, "run"),
        (pr.scan_trec_qrels, pr.read_trec_qrels, "qrels"),
    ],
)
def test_scanners_read_latin1_as_the_readers_do(scan, read, name: str, tmp_path: Path) -> None:
    """The lazy readers take ``encoding`` too: plain and gzip files, the same frame as
    the eager reader's; a Latin-1 file scanned as UTF-8 still fails at collection."""
    expected = read(DATA / name, encoding="latin-1")
    packed = tmp_path / f"{name}.gz"
    packed.write_bytes(gzip.compress((DATA / name).read_bytes()))
    for source in (DATA / name, packed, (DATA / name).read_bytes()):
        assert_frame_equal(scan(source, encoding="latin-1").collect(), expected)
    assert_frame_equal(scan(DATA / name, encoding="latin-1").head(2).collect(), expected.head(2))
    with pytest.raises(pl.exceptions.ComputeError, match="invalid utf8"):
        scan(DATA / name).collect()
    with pytest.raises(ValueError, match="encoding must be one of 'utf-8', 'latin-1'"):
        scan(DATA / name, encoding="cp1252")


def test_eval_names_swapped_latin1_files() -> None:
    """A run given as the qrels and the qrels as the run: Latin-1 files are looked at
    in the encoding they are read in, so the swap is named (not a 4-fields error)."""
    done = eval_command(str(DATA / "run"), str(DATA / "qrels"))
    assert done.returncode == 1
    assert b"look swapped" in done.stderr and b"give the qrels file first" in done.stderr
