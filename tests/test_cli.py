"""The command line, run as a real subprocess: ``python -m polars_rankeval ...``."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_rankeval as pr
from polars_rankeval.cli import build_parser, main
from polars_rankeval.io import read_trec_qrels, read_trec_run

ROOT = Path(__file__).parents[1]
SAMPLE = ROOT / "examples" / "data"
QRELS, BM25, DENSE = SAMPLE / "sample.qrels", SAMPLE / "bm25.run", SAMPLE / "dense.run"
# Our canonical names -> trec_eval's names in out.test.aq.
TREC_NAMES = {"AP": "map", "P@10": "P_10", "nDCG@10": "ndcg_cut_10", "RR": "recip_rank",
              "R@100": "recall_100"}  # fmt: skip


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """Run the command as a real subprocess (each costs an interpreter start: keep few)."""
    cmd = [sys.executable, "-m", "polars_rankeval", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def run_main(capsys: pytest.CaptureFixture[str]) -> Callable[..., Result]:
    """The same command line, in process (``cli.main``), for the many output checks."""

    def call(*args: str | Path) -> Result:
        code = main([str(a) for a in args])
        out = capsys.readouterr()
        return Result(code, out.out, out.err)

    return call


def trec_table(text: str) -> dict[tuple[str, str], str]:
    """``measure<TAB>query<TAB>value`` lines -> {(measure, query): value}."""
    out = {}
    for line in text.splitlines():
        measure, query, value = line.split("\t")
        out[measure.strip(), query] = value
    return out


def test_eval_trec_format_equals_trec_eval(trec_eval_data: Path) -> None:
    args = [a for name in TREC_NAMES for a in ("-m", name)]
    res = cli("eval", trec_eval_data / "qrels.test", trec_eval_data / "results.test",
              "--per-query", "--format", "trec", *args)  # fmt: skip
    assert res.returncode == 0, res.stderr
    ours = trec_table(res.stdout)
    expected = trec_table((trec_eval_data / "out.test.aq").read_text())
    for trec in TREC_NAMES.values():  # canonical names print under trec_eval's names
        for query in ("301", "302", "303", "all"):
            assert ours[trec, query] == expected[trec, query], (trec, query)
    all_lines = [x for x in res.stdout.splitlines() if x.split("\t")[1] == "all"]
    # trec_eval's line order (its measure list), not the order typed; no runid unless asked
    assert [x.split("\t")[0].strip() for x in all_lines] == [
        "map", "recip_rank", "P_10", "recall_100", "ndcg_cut_10"
    ]  # fmt: skip
    assert len(res.stdout.splitlines()) == 3 * 5 + 5


def test_eval_prints_trec_eval_names_as_typed_byte_for_byte(trec_eval_data: Path) -> None:
    names = ["map", "P_10", "ndcg_cut_10", "recip_rank", "recall_100", "num_rel_ret", "bpref"]
    res = cli("eval", trec_eval_data / "qrels.test", trec_eval_data / "results.test", "-q",
              *[a for n in names for a in ("-m", n)])  # fmt: skip
    assert res.returncode == 0, res.stderr
    expected = {
        line
        for line in (trec_eval_data / "out.test.aq").read_text().splitlines()
        if line.split("\t")[0].strip() in names
    }
    assert set(res.stdout.splitlines()) - {f"{'runid':<22}\tall\tSTANDARD"} == expected


def test_bad_run_line_is_one_line_error(tmp_path: Path) -> None:
    run = tmp_path / "bad.run"
    run.write_text("401 Q0 DOC-401-0013 1 2.5 mine\n401 Q0 DOC-401-0052 2 1.5\n")
    res = cli("eval", QRELS, run, "-m", "AP")
    assert res.returncode == 1
    assert res.stdout == ""
    assert res.stderr == (
        f"polars-rankeval: error: {run}, line 2: expected 6 fields (qid Q0 docno rank score "
        "tag), found 5: '401 Q0 DOC-401-0052 2 1.5'\n"
    )


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["eval", QRELS, "/nonexistent/x.run"], "No such file"),
        (["eval", QRELS, BM25, "-m", "MAPP"], "Unknown measure 'MAPP'"),
        (["compare", QRELS, BM25, "-m", "AP"], "compare needs at least two runs"),
    ],
    ids=["missing-file", "unknown-measure", "compare-one-run"],
)
def test_errors_are_one_line(
    args: list[str | Path], needle: str, run_main: Callable[..., Result]
) -> None:
    res = run_main(*args)
    assert res.returncode == 1
    assert len(res.stderr.splitlines()) == 1, res.stderr
    assert res.stderr.startswith("polars-rankeval: error: ")
    assert needle in res.stderr
    assert "Traceback" not in res.stderr


def test_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["eval", str(QRELS), str(BM25), "--format", "yaml"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'yaml'" in capsys.readouterr().err


def _expected_per_query(measures: list[str]) -> pl.DataFrame:
    run = pl.concat([read_trec_run(BM25), read_trec_run(DENSE)])
    return pr.evaluate(run, read_trec_qrels(QRELS), measures)


def test_several_runs_in_one_call_trec_format() -> None:
    res = cli("eval", QRELS, BM25, DENSE, "-m", "AP", "-m", "ndcg_cut_10", "-m", "runid", "-q")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    runids = [x.split("\t")[2] for x in lines if x.startswith("runid")]
    assert runids == ["bm25", "dense"]  # each file printed as its own run
    expected = _expected_per_query(["AP", "nDCG@10"])
    dense = lines[lines.index(f"{'runid':<22}\tall\tbm25") + 3 :]
    got = trec_table("\n".join(x for x in dense if not x.startswith("runid")))
    row = expected.filter(system="dense", query="407").row(0, named=True)
    assert got["map", "407"] == f"{row['AP']:.4f}"
    assert got["ndcg_cut_10", "407"] == f"{row['nDCG@10']:.4f}"
    mean = expected.filter(system="dense")["AP"].mean()
    assert got["map", "all"] == f"{mean:.4f}"


def test_format_csv_is_full_precision_per_query(run_main: Callable[..., Result]) -> None:
    res = run_main("eval", QRELS, BM25, DENSE, "-m", "AP", "-m", "P@5", "-q", "--format", "csv")
    assert res.returncode == 0, res.stderr
    got = pl.read_csv(res.stdout.encode(), schema_overrides={"query": pl.String})
    assert_frame_equal(got, _expected_per_query(["AP", "P@5"]))


def test_format_json_means(run_main: Callable[..., Result]) -> None:
    res = run_main("eval", QRELS, BM25, DENSE, "-m", "AP", "-m", "RR", "--format", "json")
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)
    expected = pr.mean_scores(_expected_per_query(["AP", "RR"]))
    assert [r["system"] for r in rows] == ["bm25", "dense"]
    assert [r["n_queries"] for r in rows] == [25, 25]
    assert [r["AP"] for r in rows] == pytest.approx(expected["AP"].to_list(), abs=1e-15)


@pytest.mark.parametrize(
    ("fmt", "header"),
    [("table", "│ system ┆ n_queries ┆ AP "), ("markdown", "| system | n_queries | AP ")],
)
def test_format_table_and_markdown(fmt: str, header: str, run_main: Callable[..., Result]) -> None:
    res = run_main("eval", QRELS, BM25, DENSE, "-m", "AP", "--format", fmt)
    assert res.returncode == 0, res.stderr
    assert header in res.stdout
    mean = _expected_per_query(["AP"]).filter(system="bm25")["AP"].mean()
    assert f"{mean:.4f}" in res.stdout


def test_compare_csv_matches_python(run_main: Callable[..., Result]) -> None:
    res = run_main("compare", QRELS, BM25, DENSE, "-m", "AP", "-m", "P@10", "--test", "wilcoxon",
              "--correction", "holm", "--format", "csv")  # fmt: skip
    assert res.returncode == 0, res.stderr
    got = pl.read_csv(res.stdout.encode())
    per_query = _expected_per_query(["AP", "P@10"])
    expected = pr.compare(per_query, ["AP", "P@10"], test="wilcoxon", correction="holm")
    assert got["measure"].to_list() == ["AP", "P@10"]
    assert got["p_adjusted"].to_list() == pytest.approx(expected["p_adjusted"].to_list())
    assert got["system_a"].to_list() == ["bm25", "bm25"]


@pytest.mark.parametrize(("test", "correction"), [("tukey", "none"), ("t", "bh")])
def test_compare_offers_every_test_and_correction(
    tmp_path: Path, run_main: Callable[..., Result], test: str, correction: str
) -> None:
    third = tmp_path / "third.run"
    third.write_text(Path(BM25).read_text().replace("bm25", "third"))
    res = run_main("compare", QRELS, BM25, DENSE, str(third), "-m", "AP", "--test", test,
                   "--correction", correction, "--format", "csv")  # fmt: skip
    assert res.returncode == 0, res.stderr
    got = pl.read_csv(res.stdout.encode())
    run = pl.concat([pr.read_trec_run(f) for f in (BM25, DENSE, str(third))])
    per_query = pr.evaluate(run, pr.read_trec_qrels(QRELS), ["AP"], missing="zero")
    expected = pr.compare(per_query, ["AP"], test=test, correction=correction)
    assert got.height == expected.height == 3
    want = expected["p_adjusted"].to_list()
    assert got["p_adjusted"].to_list() == pytest.approx(want, nan_ok=True)


def test_same_tag_in_two_files_names_runs_by_file(
    tmp_path: Path, run_main: Callable[..., Result]
) -> None:
    copy = tmp_path / "copy.run"
    copy.write_bytes(BM25.read_bytes())
    res = run_main("eval", QRELS, BM25, copy, "-m", "AP", "--format", "csv")
    assert res.returncode == 0, res.stderr
    got = pl.read_csv(res.stdout.encode())
    assert got["system"].to_list() == sorted([str(BM25), str(copy)])
    assert got["AP"][0] == pytest.approx(got["AP"][1], rel=1e-12)


def test_curve_writes_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    pytest.importorskip("polars_rankeval.curves")
    out = tmp_path / "pr.png"
    res = cli("curve", QRELS, BM25, DENSE, "-o", out)
    assert res.returncode == 0, res.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_table_inputs_that_cannot_be_read_are_named(
    tmp_path: Path, run_main: Callable[..., Result]
) -> None:
    broken = tmp_path / "broken.parquet"
    broken.write_text("not parquet")
    res = run_main("eval", QRELS, str(broken))
    assert res.returncode == 1
    assert f"{broken}: cannot read as a parquet file" in res.stderr
    qrels_csv = tmp_path / "qrels.csv"
    qrels_csv.write_text("query,doc,grade\nq1,d1,1\n")
    res = run_main("eval", str(qrels_csv), BM25)
    assert res.returncode == 1
    assert f"{qrels_csv}: no column 'relevance'" in res.stderr
    assert "it has query, doc, grade" in res.stderr


@pytest.mark.parametrize("command", ["eval", "compare"])
def test_qrels_and_run_swapped_is_named(command: str, run_main: Callable[..., Result]) -> None:
    res = run_main(command, BM25, QRELS, *([DENSE] if command == "compare" else []))
    assert res.returncode == 1
    assert res.stderr.startswith(
        f"polars-rankeval: error: {BM25} and {QRELS} look swapped: {BM25} reads as a TREC run "
        f"file and {QRELS} as a qrels file; give the qrels file first"
    ), res.stderr
    assert res.stderr.count("\n") == 1


def test_a_qrels_file_given_as_the_run_is_named(run_main: Callable[..., Result]) -> None:
    res = run_main("eval", QRELS, QRELS)
    assert res.returncode == 1
    assert f"{QRELS}: reads as a TREC qrels file (qid iter docno rel), not a run" in res.stderr
    assert "line 1: expected 6 fields" in res.stderr  # the reader's own words are kept


def test_several_runs_print_a_runid_line_per_block(run_main: Callable[..., Result]) -> None:
    # trec_eval prints runid only when asked (-m runid, official, all_trec); it takes one
    # run, so with several runs each block is named by a runid line, as trec_eval places it.
    res = run_main("eval", QRELS, BM25, DENSE, "-m", "map", "-m", "P.10")
    assert res.returncode == 0, res.stderr
    names = [line.split("\t")[0].strip() for line in res.stdout.splitlines()]
    values = [line.split("\t")[2] for line in res.stdout.splitlines()]
    assert names == ["runid", "map", "P_10"] * 2
    assert values[0::3] == ["bm25", "dense"]
    # -n: no 'all' lines, but the per-query lines of each run are still named
    res = run_main("eval", QRELS, BM25, DENSE, "-m", "map", "-q", "-n")
    lines = res.stdout.splitlines()
    assert [x for x in lines if x.startswith("runid")] == [
        f"{'runid':<22}\tall\tbm25",
        f"{'runid':<22}\tall\tdense",
    ]
    assert lines[-1] == f"{'runid':<22}\tall\tdense"


def test_one_run_with_explicit_measures_prints_no_runid(run_main: Callable[..., Result]) -> None:
    res = run_main("eval", QRELS, BM25, "-m", "map")  # as trec_eval: runid only when asked
    assert res.stdout.startswith("map ")
    assert "runid" not in res.stdout


def _parsers() -> dict[str, argparse.ArgumentParser]:
    """The top-level parser and each subcommand's, by name."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {"polars-rankeval": parser, **sub.choices}


def _in_code_span(token: str, doc: str) -> bool:
    """Whether ``token`` is written in a code span of ``doc`` as a whole option or value
    (``-M100`` holds ``-M``; ``--level_for_rel`` does not hold ``--level``)."""
    spans = re.findall(r"`([^`\n]+)`", doc) + re.findall(r"```text\n(.*?)```", doc, re.S)
    word = rf"(?<![\w.@-]){re.escape(token)}(?![A-Za-z_-])"
    return any(re.search(word, span) for span in spans)


def _section(doc: str, command: str) -> str:
    """The text of ``## command`` in docs/cli.md, up to the next ``## `` heading."""
    start = doc.index(f"\n## {command}\n")
    end = doc.find("\n## ", start + 1)
    return doc[start : end if end != -1 else len(doc)]


@pytest.mark.parametrize("command", list(_parsers()))
def test_docs_cli_lists_every_option_and_choice_of_help(command: str) -> None:
    """Each command's section lists each of its options and choices (the page as a
    whole for the top-level command)."""
    doc = (ROOT / "docs" / "cli.md").read_text()
    parser = _parsers()[command]
    if command != "polars-rankeval":
        assert f"\n## {command}\n" in doc, f"docs/cli.md has no section for {command}"
        doc = _section(doc, command)
    missing = []
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._SubParsersAction):
            continue
        missing += [o for o in action.option_strings if not _in_code_span(o, doc)]
        missing += [
            f"{action.dest}={c}" for c in action.choices or () if not _in_code_span(str(c), doc)
        ]
    assert missing == [], f"docs/cli.md does not list {command}'s {missing}"


@pytest.mark.parametrize("fmt", ["trec", "csv"])
def test_missing_error_checks_each_run(tmp_path: Path, run_main, fmt: str) -> None:
    """--missing error refuses a qrels query that one run lacks though another has it,
    naming that run; a table of runs (a system column) is checked per system (issue 37)."""
    qrels = tmp_path / "qrels"
    qrels.write_text("q1 0 d1 1\nq2 0 d2 1\n")
    (tmp_path / "a.run").write_text("q1 Q0 d1 1 2.0 a\nq2 Q0 d2 1 1.0 a\n")
    (tmp_path / "b.run").write_text("q1 Q0 d1 1 2.0 b\n")
    table = tmp_path / "runs.parquet"
    pl.concat([read_trec_run(tmp_path / "a.run"), read_trec_run(tmp_path / "b.run")]).write_parquet(
        table
    )
    for runs in ([tmp_path / "a.run", tmp_path / "b.run"], [table]):
        done = run_main("eval", qrels, *runs, "-m", "map", "--missing", "error", "--format", fmt)
        assert done.returncode == 1 and done.stdout == ""
        assert "q2" in done.stderr and "b" in done.stderr.split("q2")[0]
        assert "'a'" not in done.stderr
        dropped = run_main("eval", qrels, *runs, "-m", "map", "--missing", "drop", "--format", fmt)
        assert dropped.returncode == 0


# --------------------------------------------------------------------------- report


def _expected_report(runs: list[Path], measures: list[str], **options: object) -> pr.Report:
    run = pl.concat([pr.read_trec_run(f) for f in runs])
    per_query = pr.evaluate(run, pr.read_trec_qrels(QRELS), measures, missing="zero")
    return pr.report(per_query, measures, **options)  # type: ignore[arg-type]


@pytest.fixture
def third(tmp_path: Path) -> Path:
    """A third run: bm25's lines under another tag (the same rankings)."""
    path = tmp_path / "third.run"
    lines = Path(BM25).read_text().replace("bm25", "third").splitlines()
    path.write_text("\n".join(lines[::-1]) + "\n")  # same ranking, lines reversed
    return path


def test_report_markdown_with_intervals_equals_python(run_main: Callable[..., Result]) -> None:
    res = run_main("report", QRELS, BM25, DENSE, "-m", "AP", "-m", "nDCG@10", "--baseline",
                   "bm25", "--interval", "t", "--ci-level", "0.9", "--digits", "3")  # fmt: skip
    assert res.returncode == 0, res.stderr
    want = _expected_report([BM25, DENSE], ["AP", "nDCG@10"], baseline="bm25", interval="t",
                            level=0.9, digits=3)  # fmt: skip
    assert res.stdout == want.to_markdown()
    assert "| dense | **0.629**▲ [" in res.stdout
    assert "90% t confidence interval" in res.stdout


def test_report_letters_latex_equals_python(third: Path, run_main: Callable[..., Result]) -> None:
    res = run_main("report", QRELS, BM25, DENSE, third, "-m", "AP", "--test", "tukey",
                   "-f", "latex", "--caption", "MAP.", "--label", "tab:map")  # fmt: skip
    assert res.returncode == 0, res.stderr
    want = _expected_report([BM25, DENSE, third], ["AP"], test="tukey")
    assert want.style == "letters"
    assert res.stdout == want.to_latex(caption="MAP.", label="tab:map")
    assert r"\caption{MAP.}" in res.stdout and r"\label{tab:map}" in res.stdout


@pytest.mark.parametrize("fmt", ["csv", "json", "table"])
def test_report_frame_formats(fmt: str, third: Path, run_main: Callable[..., Result]) -> None:
    res = run_main("report", QRELS, BM25, DENSE, third, "-m", "AP", "-m", "RR", "--baseline",
                   "bm25", "--baseline", "dense", "--interval", "bootstrap", "-f", fmt)  # fmt: skip
    assert res.returncode == 0, res.stderr
    want = _expected_report([BM25, DENSE, third], ["AP", "RR"], baseline=["bm25", "dense"],
                            interval="bootstrap").frame  # fmt: skip
    if fmt == "table":
        header = res.stdout.splitlines()[1]
        for column in ("system", "label", "measure", "mean", "ci_low", "ci_high", "marker"):
            assert f" {column} " in header
        assert res.stdout.count("\n") == 6 + want.height  # borders, header, ---, types, rule, rows
        return
    got = pl.read_csv(res.stdout.encode()) if fmt == "csv" else pl.read_json(res.stdout.encode())
    assert got["system"].to_list() == want["system"].to_list()
    assert got["beats"].fill_null("").to_list() == want["beats"].list.join("").to_list()
    for column in ("mean", "ci_low", "ci_high"):
        assert got[column].to_list() == pytest.approx(want[column].to_list(), rel=1e-12)


def test_report_needs_two_runs_and_valid_options(run_main: Callable[..., Result]) -> None:
    res = run_main("report", QRELS, BM25, "-m", "AP")
    assert res.returncode == 1
    assert "report needs at least two runs" in res.stderr
    res = run_main("report", QRELS, BM25, DENSE, "-m", "AP", "--interval", "t", "--ci-level", "95")
    assert res.returncode == 1
    assert res.stderr.startswith("polars-rankeval: error: level must be strictly between 0 and 1")
    assert res.stdout == ""


def test_report_as_a_real_command() -> None:
    res = cli("report", QRELS, BM25, DENSE, "-m", "map", "--baseline", "bm25")
    assert res.returncode == 0, res.stderr
    assert res.stdout == _expected_report([BM25, DENSE], ["AP"], baseline="bm25").to_markdown()
