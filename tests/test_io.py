"""TREC run and qrels files: reading, scanning, writing, and clear errors on bad lines."""

from __future__ import annotations

import gzip
import os
import re
import threading
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import polars_rankeval as pr
from polars_rankeval.io import (
    read_trec_qrels,
    read_trec_run,
    scan_trec_qrels,
    scan_trec_run,
    write_trec_run,
)

RUN_TEXT = "301 Q0 d1 1 2.5 bm25\n301 Q0 d2 2 1.25 bm25\n0302 Q0 007 1 -3 dense\n"
EXPECTED_RUN = pl.DataFrame(
    {
        "query": ["301", "301", "0302"],
        "doc": ["d1", "d2", "007"],
        "rank": [1, 2, 1],
        "score": [2.5, 1.25, -3.0],
        "system": ["bm25", "bm25", "dense"],
    }
)
EXAMPLES = Path(__file__).parents[1] / "examples" / "data"


def _write(path: Path, text: str | bytes) -> Path:
    data = text.encode() if isinstance(text, str) else text
    path.write_bytes(data)
    return path


def test_read_run_types_and_ids_kept_as_strings(tmp_path: Path) -> None:
    path = _write(tmp_path / "a.run", RUN_TEXT)
    assert_frame_equal(read_trec_run(path), EXPECTED_RUN)
    assert_frame_equal(read_trec_run(str(path)), EXPECTED_RUN)


def test_scan_run_is_lazy_and_equal_to_read(tmp_path: Path) -> None:
    path = _write(tmp_path / "a.run", RUN_TEXT)
    lf = scan_trec_run(path)
    assert isinstance(lf, pl.LazyFrame)
    assert_frame_equal(lf.collect(), EXPECTED_RUN)
    assert_frame_equal(lf.collect(engine="streaming"), EXPECTED_RUN)


def test_scan_does_not_read_until_collected(tmp_path: Path) -> None:
    path = _write(tmp_path / "late.run", "")
    lf = scan_trec_run(path)
    path.write_text(RUN_TEXT)
    assert_frame_equal(lf.collect(), EXPECTED_RUN)


@pytest.mark.parametrize(
    "text",
    [
        "301\tQ0\td1\t1\t2.5\tbm25\n301\tQ0\td2\t2\t1.25\tbm25\n0302\tQ0\t007\t1\t-3\tdense\n",
        "  301   Q0 d1 1   2.5 bm25   \n\n301 \t Q0\td2 2 1.25 bm25\n0302 Q0 007 1 -3 dense",
        "301 Q0 d1 1 2.5 bm25\r\n301 Q0 d2 2 1.25 bm25\r\n0302 Q0 007 1 -3.0e0 dense\r\n",
        "\n\n301 Q0 d1 1 2.5 bm25\n \t \n301 Q0 d2 2 1.25 bm25\n0302 Q0 007 1 -3 dense\n\n",
        "301\x0bQ0\x0cd1 1 2.5 bm25\n301 Q0 d2 +2 1.25 bm25\n0302 Q0 007 1 -3 dense\n",
    ],
    ids=["tabs", "mixed-spaces", "crlf", "blank-lines", "vtab-formfeed"],
)
def test_whitespace_variants(tmp_path: Path, text: str) -> None:
    path = _write(tmp_path / "w.run", text)
    assert_frame_equal(read_trec_run(path), EXPECTED_RUN)


def test_gzip_run_and_qrels(tmp_path: Path) -> None:
    run = _write(tmp_path / "a.run.gz", gzip.compress(RUN_TEXT.encode()))
    assert_frame_equal(read_trec_run(run), EXPECTED_RUN)
    assert_frame_equal(scan_trec_run(run).collect(), EXPECTED_RUN)
    qrels = _write(tmp_path / "q.gz", gzip.compress(b"301 0 d1 1\n301 0 d9 0\n"))
    assert read_trec_qrels(qrels)["relevance"].to_list() == [1, 0]


def test_read_qrels(tmp_path: Path) -> None:
    path = _write(tmp_path / "q", "301 0 d1 2\n301\t0\td2\t0\n 0302 1 007 -1 \n")
    expected = pl.DataFrame(
        {"query": ["301", "301", "0302"], "doc": ["d1", "d2", "007"], "relevance": [2, 0, -1]}
    )
    assert_frame_equal(read_trec_qrels(path), expected)
    assert_frame_equal(scan_trec_qrels(path).collect(), expected)


def test_empty_files(tmp_path: Path) -> None:
    assert read_trec_run(_write(tmp_path / "e.run", "")).shape == (0, 5)
    assert read_trec_qrels(_write(tmp_path / "e.qrels", "\n\n")).shape == (0, 3)


@pytest.mark.parametrize(
    ("lines", "lineno", "reason"),
    [
        (["301 Q0 d1 1 2.5"], 1, "expected 6 fields (qid Q0 docno rank score tag), found 5"),
        (["301 Q0 d1 1 high t"], 1, "score high is not a number"),
        (["301 Q0 d1 1 nan t"], 1, "score nan is not a number"),
        (["301 Q0 d1 1 1,5 t"], 1, "score 1,5 is not a number"),
        (["301 Q0 d1 first 2.5 t"], 1, "rank first is not an integer rank"),
        (["301 Q0 d1 1.5 2.5 t"], 1, "rank 1.5 is not an integer rank"),
    ],
)
def test_malformed_run_line_is_named(
    tmp_path: Path, lines: list[str], lineno: int, reason: str
) -> None:
    good = ["301 Q0 a 1 3.0 t", "", "301 Q0 b 2 2.0 t"]
    path = _write(tmp_path / "bad.run", "\n".join([*good, *lines, "301 Q0 z 9 0.0 t"]) + "\n")
    where = len(good) + lineno
    text = re.escape(repr(lines[0]))
    pattern = rf"^{re.escape(str(path))}, line {where}: {re.escape(reason)}.*: {text}$"
    with pytest.raises(ValueError, match=pattern):
        read_trec_run(path)
    with pytest.raises(ValueError, match=rf"{re.escape(str(path))}, line {where}: "):
        scan_trec_run(path).collect()


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("301 0 d1", "expected 4 fields (qid iter docno rel), found 3"),
        ("301 0 d1 1 1", "expected 4 fields (qid iter docno rel), found 5"),
        ("301 0 d1 1.5", "relevance 1.5 is not an integer grade"),
        ("301 0 d1 yes", "relevance yes is not an integer grade"),
    ],
)
def test_malformed_qrels_line_is_named(tmp_path: Path, line: str, reason: str) -> None:
    path = _write(tmp_path / "bad.qrels", f"301 0 a 1\n301 0 b 0\n{line}\n")
    with pytest.raises(ValueError, match=rf"line 3: {re.escape(reason)}: {re.escape(repr(line))}$"):
        read_trec_qrels(path)


def test_malformed_line_in_gzip_file_is_numbered(tmp_path: Path) -> None:
    text = "".join(f"1 Q0 d{i} {i} 1.0 t\n" for i in range(1, 1000)) + "1 Q0 x 1 ? t\n"
    path = _write(tmp_path / "big.run.gz", gzip.compress(text.encode()))
    with pytest.raises(ValueError, match=r"big\.run\.gz, line 1000: score \? is not a number"):
        read_trec_run(path)


def test_invalid_utf8_names_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path / "latin.run", b"1 Q0 a 1 1.0 t\n1 Q0 caf\xe9 2 0.5 t\n")
    with pytest.raises(ValueError, match=r"latin\.run, line 2: not valid UTF-8 text"):
        read_trec_run(path)


def test_missing_file_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_trec_run(tmp_path / "nope.run")


def test_write_then_read_round_trip(tmp_path: Path) -> None:
    run = pl.DataFrame(
        {
            "query": ["q2", "q1", "q1", "q1"],
            "doc": ["x", "a", "b", "c"],
            "score": [0.1, 1.0 / 3.0, 2.0, 2.0],
            "system": ["s", "s", "s", "s"],
        }
    )
    for name in ("out.run", "out.run.gz"):
        path = tmp_path / name
        write_trec_run(run, path)
        back = read_trec_run(path)
        # trec_eval order: score descending, ties by doc id descending; ranks 1..n.
        assert back["doc"].to_list() == ["c", "b", "a", "x"]
        assert back["rank"].to_list() == [1, 2, 3, 1]
        assert back["score"].to_list() == [2.0, 2.0, 1.0 / 3.0, 0.1]
    assert gzip.decompress((tmp_path / "out.run.gz").read_bytes()).startswith(b"q1 Q0 c 1 2.0 s\n")


def test_write_lazy_run_with_tag(tmp_path: Path) -> None:
    run = pl.LazyFrame({"query": [1, 1], "doc": [10, 20], "score": [0.5, 0.7]})
    path = tmp_path / "lazy.run"
    write_trec_run(run, path, tag="mine")
    assert path.read_text() == "1 Q0 20 1 0.7 mine\n1 Q0 10 2 0.5 mine\n"


def test_written_ranks_follow_trec_eval_order_for_integer_doc_ids(tmp_path: Path) -> None:
    # tied integer ids are ordered as strings, descending: "2" > "10" > "1"
    run = pl.DataFrame({"query": [7] * 4, "doc": [10, 2, 1, 30], "score": [1.0, 1.0, 1.0, 5.0]})
    qrels = pl.DataFrame({"query": [7, 7], "doc": [10, 1], "relevance": [1, 1]})
    path = tmp_path / "ints.run"
    write_trec_run(run, path, tag="t")
    assert path.read_text().splitlines() == [
        "7 Q0 30 1 5.0 t", "7 Q0 2 2 1.0 t", "7 Q0 10 3 1.0 t", "7 Q0 1 4 1.0 t"
    ]  # fmt: skip
    back = read_trec_run(path).with_columns(
        pl.col("doc").cast(pl.Int64), pl.col("query").cast(pl.Int64)
    )
    measures = ["AP", "RR", "P@3"]
    by_rank = pr.evaluate(back.drop("score"), qrels, measures, order="rank", system=None)
    assert_frame_equal(by_rank, pr.evaluate(run, qrels, measures))
    assert by_rank["RR"].item() == 1 / 3


def test_sample_files_round_trip(tmp_path: Path) -> None:
    run = pl.concat([read_trec_run(EXAMPLES / "bm25.run"), read_trec_run(EXAMPLES / "dense.run")])
    path = tmp_path / "both.run"
    write_trec_run(run, path)
    back = read_trec_run(path)
    key = ["system", "query", "doc"]
    assert_frame_equal(back.drop("rank").sort(key), run.drop("rank").sort(key))


@pytest.mark.parametrize(
    ("column", "value"), [("doc", "two words"), ("query", ""), ("system", "a\tb")]
)
def test_write_refuses_ids_the_format_cannot_hold(tmp_path: Path, column: str, value: str) -> None:
    run = pl.DataFrame({"query": ["q"], "doc": ["d"], "score": [1.0], "system": ["s"]})
    run = run.with_columns(pl.lit(value).alias(column))
    with pytest.raises(
        ValueError, match=f"column {column!r}, row 0\\) (is empty|contains whitespace)"
    ):
        write_trec_run(run, tmp_path / "x.run")


def test_real_trec_files(trec_eval_data: Path) -> None:
    run = read_trec_run(trec_eval_data / "results.test")
    qrels = read_trec_qrels(trec_eval_data / "qrels.test")
    assert run.shape == (1500, 5)
    assert run["system"].unique().to_list() == ["STANDARD"]
    assert run["query"].unique().sort().to_list() == ["301", "302", "303"]
    assert qrels.height == 3681
    assert qrels["relevance"].is_in([0, 1]).all()


_FIELD = st.text(alphabet=st.sampled_from("0123456789.-+eEnaiQx \t"), min_size=0, max_size=6)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.binary(max_size=200))
@example(data=b"\x1f\x8b\x08\x00garbage")
@example(data=b"1 Q0 a 1 1.0 t\n\xff")
@example(data=b"\x00 \x00 \x00 \x00 \x00 \x00")
def test_fuzz_bytes_parse_or_clear_error(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "fuzz.run"
    path.write_bytes(data)
    for reader in (read_trec_run, read_trec_qrels):
        try:
            frame = reader(path)
        except ValueError as exc:
            assert str(exc).startswith(f"{path}"), str(exc)
            assert "\n" not in str(exc), str(exc)
        else:
            assert frame["query"].dtype == pl.String


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=st.lists(st.lists(_FIELD, min_size=0, max_size=8), max_size=6))
def test_fuzz_lines_parse_or_name_the_line(tmp_path: Path, lines: list[list[str]]) -> None:
    text = "\n".join(" ".join(fields) for fields in lines)
    path = tmp_path / "fuzz.run"
    path.write_text(text)
    try:
        frame = read_trec_run(path)
    except ValueError as exc:
        match = re.match(rf"^{re.escape(str(path))}, line (\d+): ", str(exc))
        assert match, str(exc)
        bad = text.split("\n")[int(match[1]) - 1]
        assert repr(bad) in str(exc)
    else:
        assert frame.height == sum(1 for line in text.split("\n") if line.split())
        assert frame["score"].is_nan().sum() == 0


def _first_paragraph(exc: pytest.ExceptionInfo[ValueError]) -> str:
    """The message without the expression Polars appends to errors raised in a plan."""
    return str(exc.value).split("\n\n")[0]


@pytest.mark.parametrize(
    ("reader", "good"), [(read_trec_run, "1 Q0 a 1 1.0 t"), (read_trec_qrels, "1 0 a 1")]
)
def test_read_names_the_first_bad_line_when_the_last_has_no_newline(
    tmp_path: Path, reader: Callable[[Path], pl.DataFrame], good: str
) -> None:
    # scan_lines hands an unterminated last line over on its own; read_* still
    # reports the file's first malformed line.
    path = _write(tmp_path / "tail", f"{good}\n0\n0")
    with pytest.raises(ValueError, match=r"tail, line 2: expected \d fields .*: '0'$"):
        reader(path)


@pytest.mark.parametrize("where", [1, 20_000, 39_999, 40_000])
def test_bad_line_in_a_many_batch_file_is_named_by_read_and_scan(
    tmp_path: Path, where: int
) -> None:
    lines = [f"q{i // 100} Q0 d{i} {i % 100 + 1} {i / 7} run" for i in range(40_000)]
    lines[where - 1] = "q1 Q0 d 3 1e400e t"
    path = _write(tmp_path / "many.run", "\n".join(lines) + "\n")
    message = f"{path}, line {where}: score 1e400e is not a number: 'q1 Q0 d 3 1e400e t'"
    with pytest.raises(ValueError) as read_error:
        read_trec_run(path)
    assert str(read_error.value) == message
    with pytest.raises(ValueError) as scan_error:
        scan_trec_run(path).collect()
    assert _first_paragraph(scan_error) == message


_ID = st.text(alphabet=st.sampled_from("0123456789abcQé-_.:"), min_size=1, max_size=5)
_GAP = st.text(alphabet=st.sampled_from(" \t\r\x0b\x0c"), min_size=1, max_size=3)
_EDGE = st.text(alphabet=st.sampled_from(" \t\r\x0b\x0c"), max_size=2)
_RUN_ROW = st.tuples(
    _ID, _ID, _ID, st.integers(-5, 10**6).map(str), st.floats(allow_nan=False).map(repr), _ID
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rows=st.lists(_RUN_ROW, max_size=12), data=st.data())
def test_any_whitespace_reads_as_single_spaces(
    tmp_path: Path, rows: list[tuple[str, ...]], data: st.DataObject
) -> None:
    plain = _write(tmp_path / "plain.run", "".join(" ".join(row) + "\n" for row in rows))
    messy_lines = []
    for row in rows:
        gaps = data.draw(st.lists(_GAP, min_size=len(row) - 1, max_size=len(row) - 1))
        line = row[0] + "".join(gap + field for gap, field in zip(gaps, row[1:], strict=True))
        lead, tail = data.draw(_EDGE), data.draw(_EDGE)
        blank = data.draw(st.sampled_from(["", "\n", " \t\n"]))
        messy_lines.append(f"{blank}{lead}{line}{tail}\n")
    messy = _write(tmp_path / "messy.run", "".join(messy_lines))
    expected = read_trec_run(plain)
    assert expected["doc"].to_list() == [row[2] for row in rows]
    assert expected["rank"].to_list() == [int(row[3]) for row in rows]
    assert_frame_equal(read_trec_run(messy), expected)
    assert_frame_equal(scan_trec_run(messy).collect(), expected)
    qrels = [f"{row[0]} 0 {row[2]} {row[3]}\n" for row in rows]
    assert_frame_equal(
        read_trec_qrels(_write(tmp_path / "q", "".join(qrels))),
        scan_trec_qrels(
            _write(tmp_path / "q2", "".join(q.replace(" ", "\t") for q in qrels))
        ).collect(),
    )


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=st.lists(st.lists(_FIELD, min_size=0, max_size=8), max_size=6))
def test_read_and_scan_agree(tmp_path: Path, lines: list[list[str]]) -> None:
    # read_* flag bad lines in the plan and raise afterwards, scan_* raise inside it.
    path = _write(tmp_path / "agree", "".join(" ".join(fields) + "\n" for fields in lines))
    for read, scan in ((read_trec_run, scan_trec_run), (read_trec_qrels, scan_trec_qrels)):
        try:
            frame = read(path)
        except ValueError as exc:
            with pytest.raises(ValueError) as scan_error:
                scan(path).collect()
            assert _first_paragraph(scan_error) == str(exc)
        else:
            assert_frame_equal(scan(path).collect(), frame)


# --------------------------------------------------------------------------- trec_eval 10.0 inputs

SUITE_10 = Path(__file__).parent / "data" / "trec_eval-10.0"


def test_comment_lines_are_skipped_and_numbering_kept(tmp_path: Path) -> None:
    text = (
        "# header\n301 Q0 d1 1 2.5 bm25\n   # indented\n301 Q0 d#2 2 1.25 bm25\n301 Q0 d3 x 1 t\n"
    )
    path = _write(tmp_path / "c.run", text)
    with pytest.raises(ValueError, match=r"c\.run, line 5: rank x is not an integer rank"):
        read_trec_run(path)
    good = read_trec_run(_write(tmp_path / "ok.run", text.rsplit("301", 1)[0]))
    assert good["doc"].to_list() == ["d1", "d#2"]  # a '#' inside a field is data
    qrels = read_trec_qrels(_write(tmp_path / "q", "# judged 2026\n301 0 d1 1\n#x\n301 0 d2 0\n"))
    assert qrels["doc"].to_list() == ["d1", "d2"]
    assert_frame_equal(scan_trec_run(tmp_path / "ok.run").collect(), good)


def test_run_fields_after_the_sixth_are_ignored_qrels_fields_are_not(tmp_path: Path) -> None:
    run = read_trec_run(_write(tmp_path / "r", "301 Q0 d1 1 2.5 bm25 more junk\n"))
    assert run.row(0) == ("301", "d1", 1, 2.5, "bm25")
    with pytest.raises(ValueError, match="expected 4 fields"):
        read_trec_qrels(_write(tmp_path / "q", "301 0 d1 1 extra\n"))


def test_trec_eval_10_suite_files_read() -> None:
    trunc = read_trec_run(SUITE_10 / "results.trunc")
    lines = [x.split()[:6] for x in (SUITE_10 / "results.trunc").read_text().splitlines()]
    assert trunc.height == len(lines) and trunc["system"].unique().to_list() == ["STANDARD"]
    assert trunc["doc"].to_list() == [x[2] for x in lines]
    plain = read_trec_qrels(SUITE_10 / "qrels.test")
    commented = read_trec_qrels(SUITE_10 / "qrels.test.with-comments")
    assert commented.height == plain.height
    changed = commented.join(plain, on=["query", "doc", "relevance"], how="anti")
    assert changed["doc"].to_list() == ["CR#93E-1860"]  # the suite's "comment in docno"


def test_directory_special_files_and_require_data(tmp_path: Path) -> None:
    from polars_rankeval.io import require_data

    with pytest.raises(IsADirectoryError, match="is a directory"):
        read_trec_run(tmp_path)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    writer = threading.Thread(target=fifo.write_text, args=("1 Q0 a 1 1.0 t\n",))
    writer.start()
    assert read_trec_run(fifo)["doc"].to_list() == ["a"]  # Polars alone reads it as empty
    writer.join()
    empty = read_trec_run(b"\n# nothing\n", name="<stdin>")
    with pytest.raises(ValueError, match=r"^<stdin>: no data lines \(the run file"):
        require_data(empty, b"", "run", name="<stdin>")
    require_data(read_trec_qrels(b"1 0 a 1\n"), b"", "qrels")
    with pytest.raises(ValueError, match=r"^my\.qrels, line 1: relevance x"):
        read_trec_qrels(b"1 0 a x\n", name="my.qrels")


def test_a_glob_is_read_file_by_file_and_errors_name_the_file_and_its_line(tmp_path: Path) -> None:
    (tmp_path / "a.run").write_text("q1 Q0 d1 1 1.0 s\nq1 Q0 d2 2 0.5 s\n")
    (tmp_path / "b.run").write_text("q2 Q0 d1 1 1.0 s\nq2 Q0 d2 two 0.5 s\n")
    pattern = str(tmp_path / "*.run")
    for read in (read_trec_run, lambda p: scan_trec_run(p).collect()):
        with pytest.raises(ValueError, match=r"b\.run, line 2: rank two"):
            read(pattern)
    (tmp_path / "b.run").write_text("q2 Q0 d1 1 1.0 s\n")
    assert read_trec_run(pattern)["query"].to_list() == ["q1", "q1", "q2"]
    assert scan_trec_run(pattern).collect()["query"].to_list() == ["q1", "q1", "q2"]
    with pytest.raises(FileNotFoundError, match="no file matches"):
        read_trec_run(str(tmp_path / "zz*.run"))


def test_truncated_or_corrupt_gzip_is_refused_naming_the_file(tmp_path: Path) -> None:
    lines = "".join(f"q{i % 7} Q0 d{i * 7919 % 100003} {i} {1 / i} s\n" for i in range(1, 5001))
    data = gzip.compress(lines.encode())
    whole = tmp_path / "whole.run.gz"
    whole.write_bytes(data)
    assert read_trec_run(whole).height == 5000
    several = tmp_path / "members.run.gz"  # gzip files may hold several members
    several.write_bytes(gzip.compress(lines[:999].encode()) + gzip.compress(lines[999:].encode()))
    assert read_trec_run(several).height == 5000
    cut = tmp_path / "cut.run.gz"
    cut.write_bytes(data[: len(data) // 2])
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0xFF
    corrupt = tmp_path / "corrupt.run.gz"
    corrupt.write_bytes(bytes(flipped))
    for path, problem in ((cut, "ends early"), (corrupt, "corrupt gzip")):
        for read in (read_trec_run, lambda p: scan_trec_run(p).collect(), read_trec_qrels):
            with pytest.raises(ValueError, match=f"{path.name}: .*{problem}"):
                read(path)
    with pytest.raises(ValueError, match="<bytes>: the gzip data ends early"):
        read_trec_run(data[: len(data) // 2])


@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_a_scan_names_the_first_bad_line_whatever_the_batch_order(
    tmp_path: Path, suffix: str
) -> None:
    lines = [f"q{i % 7} Q0 d{i} {i} 1.0 s" for i in range(1, 200_001)]
    lines[60_000] = "q1 Q0 dX one 1.0 s"
    lines[180_000] = "q1 Q0 dY two 1.0 s"
    data = "\n".join(lines).encode()
    path = tmp_path / f"two_bad.run{suffix}"
    path.write_bytes(gzip.compress(data) if suffix else data)
    for engine in ("auto", "streaming", "streaming"):
        with pytest.raises(ValueError, match="line 60001: rank one"):
            scan_trec_run(path).collect(engine=engine)
