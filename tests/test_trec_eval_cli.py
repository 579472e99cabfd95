"""``polars-rankeval eval`` as a drop-in trec_eval: its flags, its lines, its test suite.

The expected outputs of trec_eval 10.0's own test suite (``tests/data/trec_eval-10.0``,
copied verbatim with its notice) must come out line for line; the smaller cases
below check each flag on files written here, with values worked out by hand.
"""

from __future__ import annotations

import io
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest

import polars_rankeval as pr
from polars_rankeval.cli import main

ROOT = Path(__file__).parents[1]
SUITE = Path(__file__).parent / "data" / "trec_eval-10.0"
NOT_READ = ("prefs", "qrels_jg")  # preference judgments and judgment groups: not supported


def quicktest_commands() -> list[tuple[str, list[str]]]:
    """(expected output, trec_eval arguments) of the suite's README: the 9 core commands
    and the -Z one (every command but the preference and judgment-group ones)."""
    readme = (SUITE / "README.md").read_text()
    rows = re.findall(r"^\| (out\.\S+) \| `trec_eval ([^`]+)` \|$", readme, flags=re.MULTILINE)
    return [(out, shlex.split(args)) for out, args in rows if not any(s in args for s in NOT_READ)]


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def run_eval(capsys: pytest.CaptureFixture[str]) -> Callable[..., Result]:
    """``polars-rankeval eval ARGS`` in process; ``stdin=`` bytes for a run given as ``-``."""

    def call(*args: str | Path, stdin: bytes | None = None) -> Result:
        saved = sys.stdin
        if stdin is not None:
            sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
        try:
            code = main(["eval", *map(str, args)])
        except SystemExit as exc:
            code = int(exc.code or 0)
        finally:
            sys.stdin = saved
        out = capsys.readouterr()
        return Result(code, out.out, out.err)

    return call


def test_readme_lists_the_nine_core_commands_and_z_scores() -> None:
    commands = quicktest_commands()
    core = [out for out, args in commands if "-Z" not in args]
    assert len(core) == 9
    assert sorted(set(core)) == [
        "out.comment.test", "out.test", "out.test.a", "out.test.aq", "out.test.aqc",
        "out.test.aqcM", "out.test.aql", "out.test.meas_params",
    ]  # fmt: skip
    assert [out for out, args in commands if "-Z" in args] == ["out.test.aqZ"]


@pytest.mark.parametrize(
    ("expected", "args"), quicktest_commands(), ids=[" ".join(a) for _, a in quicktest_commands()]
)
def test_quicktest_prints_trec_eval_10_lines(
    expected: str, args: list[str], run_eval: Callable[..., Result]
) -> None:
    *flags, qrels, run = args
    if "-Z" in flags:  # the z-scores file is in the suite too
        at = flags.index("-Z") + 1
        flags[at] = str(SUITE / flags[at])
    res = run_eval(*flags, SUITE / qrels, SUITE / run)
    assert res.returncode == 0, res.stderr
    # the suite's own ndcg_cut.10,20,23.4 is read as trec_eval reads it, with a note
    misread = "-m ndcg_cut.10,20,23.4 read as ndcg_cut.10,20,23 (trec_eval reads '23.4' as 23)"
    notes = [f"polars-rankeval: note: {misread}"] if "-mndcg_cut.10,20,23.4" in flags else []
    assert res.stderr.splitlines() == notes
    want = (SUITE / expected).read_text().splitlines()
    got = res.stdout.splitlines()
    assert [(i, g) for i, (g, w) in enumerate(zip(got, want, strict=False)) if g != w] == []
    assert len(got) == len(want)
    assert res.stdout.endswith("\n")


def test_quicktest_through_the_installed_command_from_stdin() -> None:
    # a real process, the run piped in as trec_eval 10.0 reads it: `... qrels -`
    cmd = [sys.executable, "-m", "polars_rankeval", "eval", "-m", "all_trec", "-q",
           str(SUITE / "qrels.test"), "-"]  # fmt: skip
    res = subprocess.run(cmd, input=(SUITE / "results.test").read_bytes(), capture_output=True,
                         cwd=ROOT, timeout=120, check=False)  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert res.stdout == (SUITE / "out.test.aq").read_bytes()


# --------------------------------------------------------------------------- small cases


def write(tmp_path: Path, name: str, lines: list[str]) -> Path:
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines))
    return path


def table(stdout: str) -> dict[tuple[str, str], str]:
    """``name<TAB>query<TAB>value`` lines -> {(name, query): value}."""
    return {
        (name.strip(), query): value
        for name, query, value in (line.split("\t") for line in stdout.splitlines())
    }


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    """Two queries judged; q3 judged but not retrieved; q9 retrieved but not judged."""
    qrels = write(tmp_path, "qrels", [
        "q1 0 a 1", "q1 0 b 0", "q1 0 c 2", "q1 0 d -1",
        "q2 0 a 1", "q2 0 z 3",
        "q3 0 x 1",
    ])  # fmt: skip
    run = write(tmp_path, "run", [
        "q1 Q0 a 1 3.0 tagA", "q1 Q0 b 2 2.0 tagA", "q1 Q0 u 3 1.5 tagA",
        "q1 Q0 d 4 1.0 tagA", "q1 Q0 c 5 0.5 tagA",
        "q2 Q0 u 1 2.0 tagA", "q2 Q0 a 2 1.0 tagB",
        "q9 Q0 a 1 1.0 tagB",
    ])  # fmt: skip
    return qrels, run


def test_default_is_official_and_runid_is_the_last_tag(files, run_eval) -> None:
    qrels, run = files
    res = run_eval(qrels, run)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == f"{'runid':<22}\tall\ttagB"  # one run: the tag of the last line
    assert lines[1] == f"{'num_q':<22}\tall\t2"  # q1, q2: q3 has no run lines, q9 no qrels
    names = [x.split("\t")[0].strip() for x in lines]
    assert names[2:10] == ["num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec",
                           "bpref", "recip_rank"]  # fmt: skip
    assert len(lines) == 2 + 8 + 11 + 9  # official: 11 recall levels, 9 cutoffs of P
    got = table(res.stdout)
    # q1: relevant a (rank 1), c (rank 5): AP = (1/1 + 2/5) / 2; q2: a at rank 2 of R=2
    assert got["map", "all"] == f"{((1 + 2 / 5) / 2 + (1 / 2) / 2) / 2:6.4f}"
    assert got["num_ret", "all"] == "7"


def test_per_query_lines_and_no_summary(files, run_eval) -> None:
    qrels, run = files
    res = run_eval("-q", "-n", "-m", "P.2", "-m", "recip_rank", qrels, run)
    assert res.stdout.splitlines() == [
        f"{'recip_rank':<22}\tq1\t1.0000",
        f"{'P_2':<22}\tq1\t0.5000",
        f"{'recip_rank':<22}\tq2\t0.5000",
        f"{'P_2':<22}\tq2\t0.5000",
    ]  # trec_eval's measure order, not the order typed


def test_complete_flag_prints_absent_queries_in_10_not_in_9(files, run_eval) -> None:
    qrels, run = files
    ten = table(
        run_eval("-q", "-c", "-m", "map", "-m", "num_rel", "-m", "num_q", qrels, run).stdout
    )
    nine = run_eval("-q", "-c", "--conventions", "trec_eval-9", "-m", "map", "-m", "num_rel",
                    "-m", "num_q", qrels, run).stdout  # fmt: skip
    assert ten["map", "q3"] == "0.0000" and ten["num_rel", "q3"] == "1"
    assert "\tq3\t" not in nine
    for got in (ten, table(nine)):
        assert got["num_q", "all"] == "3"
        assert got["map", "all"] == f"{((1 + 2 / 5) / 2 + 1 / 4 + 0) / 3:6.4f}"


def test_complete_num_rel_counts_every_positive_grade(files, run_eval) -> None:
    qrels, run = files
    # -l2: q1 has one relevant document (c), q2 one (z), q3 none; but with -c the
    # all line of num_rel counts every qrels row with a grade > 0, as trec_eval does
    got = table(run_eval("-q", "-c", "-l2", "-m", "num_rel", qrels, run).stdout)
    assert [got["num_rel", q] for q in ("q1", "q2", "q3")] == ["1", "1", "0"]
    assert got["num_rel", "all"] == "5"
    assert table(run_eval("-l2", "-m", "num_rel", qrels, run).stdout)["num_rel", "all"] == "2"


def test_judged_only_reranks_without_unjudged_documents(files, run_eval) -> None:
    qrels, run = files
    got = table(run_eval("-q", "-J", "-m", "P.2", "-m", "num_ret", qrels, run).stdout)
    # q1 keeps a, b, c (u has no qrels row, d a negative grade): P_2 = 1/2
    assert got["num_ret", "q1"] == "3" and got["P_2", "q1"] == "0.5000"
    assert got["num_ret", "q2"] == "1" and got["P_2", "q2"] == "0.5000"


def test_max_retrieved_debug_query_and_relstring(files, run_eval) -> None:
    qrels, run = files
    got = table(run_eval("-q", "-M3", "-m", "num_ret", "-m", "relstring", qrels, run).stdout)
    assert got["num_ret", "q1"] == "3" and got["relstring", "q1"] == "'10-'"
    got = table(run_eval("-q", "-m", "relstring.9", "-D", "1.q1", qrels, run).stdout)
    assert got == {("relstring_9", "q1"): "'10-.2'"}  # '.': negative grade, '-': no qrels row


def test_number_of_documents_for_utility(files, run_eval) -> None:
    qrels, run = files
    got = table(run_eval("-q", "-N", "100", "-m", "utility.1,-1,0,0.5", qrels, run).stdout)
    # q1: 2 relevant retrieved, 3 not, 0 missed; 100 + 2 - 5 - 2 = 95 others: 2 - 3 + 47.5
    assert got["utility_1,-1,0,0.5", "q1"] == "46.5000"


def test_stdin_run_and_comments(files, run_eval, tmp_path: Path) -> None:
    qrels, run = files
    text = b"# my run\n" + run.read_bytes().replace(
        b"q2 Q0 u 1 2.0 tagA", b"q2 Q0 u 1 2.0 tagA x y"
    )
    from_stdin = run_eval("-q", "-m", "all_trec", qrels, "-", stdin=text)
    from_file = run_eval("-q", "-m", "all_trec", qrels, run)
    assert from_stdin.returncode == 0, from_stdin.stderr
    assert from_stdin.stdout == from_file.stdout


def test_scores_tie_in_single_precision_under_9(tmp_path: Path, run_eval) -> None:
    # 7.0000001 and 7.00000005 are one float32: 9.x ties them and the doc id decides
    # (descending: b before a); 10.0 holds doubles and puts a first.
    qrels = write(tmp_path, "qrels", ["q 0 a 1", "q 0 b 0"])
    run = write(tmp_path, "run", ["q Q0 a 1 7.0000001 t", "q Q0 b 2 7.00000005 t"])
    ten = table(run_eval("-m", "recip_rank", qrels, run).stdout)
    nine = table(run_eval("--conventions", "trec_eval-9", "-m", "recip_rank", qrels, run).stdout)
    assert ten["recip_rank", "all"] == "1.0000" and nine["recip_rank", "all"] == "0.5000"
    frames = pr.read_trec_run(run), pr.read_trec_qrels(qrels)
    assert pr.evaluate(*frames, ["RR"])["RR"].item() == 1.0
    assert pr.evaluate(*frames, ["RR"], conventions="trec_eval-9")["RR"].item() == 0.5


def test_library_names_print_under_trec_eval_names(files, run_eval) -> None:
    qrels, run = files
    res = run_eval("-m", "nDCG@5", "-m", "ERR@3", "-m", "AP", "-m", "ndcg_cut.2", qrels, run)
    names = [x.split("\t")[0].strip() for x in res.stdout.splitlines()]
    assert names == ["map", "ndcg_cut_2", "ndcg_cut_5", "ERR@3"]


def test_table_formats_take_nicknames(files, run_eval) -> None:
    qrels, run = files
    res = run_eval("-m", "official", "--format", "csv", qrels, run)
    assert res.returncode == 0, res.stderr
    frame = pl.read_csv(res.stdout.encode())
    assert frame["system"].to_list() == ["tagB"]
    assert len(frame.columns) == 2 + 28  # system, n_queries, the 28 numbers of official


def test_version_and_help(run_eval) -> None:
    version = run_eval("-v", "q", "r")
    assert version.returncode == 0 and "trec_eval-10: 10.0" in version.stderr
    help_text = run_eval("-h")
    assert help_text.returncode == 0 and "-Z FILE" in help_text.stdout


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda d: d / "nope.run", "No such file"),
        (lambda d: (d / "folder").mkdir() or d / "folder", "is a directory"),
        (lambda d: write(d, "empty.run", []), "empty.run: no data lines"),
        (lambda d: write(d, "blank.run", ["", "  \t"]), "blank.run: no data lines"),
        (lambda d: write(d, "notes.run", ["# only", "# comments"]), "notes.run: no data lines"),
    ],
    ids=["missing", "directory", "empty", "blank", "comments-only"],
)
def test_bad_run_files_are_one_line_errors(
    files, make: Callable[[Path], Path], needle: str, run_eval, tmp_path: Path
) -> None:
    qrels, _ = files
    res = run_eval(qrels, make(tmp_path))
    assert res.returncode == 1
    assert res.stdout == ""
    assert len(res.stderr.splitlines()) == 1, res.stderr
    assert res.stderr.startswith("polars-rankeval: error: ") and needle in res.stderr


def test_bad_qrels_and_empty_stdin_are_one_line_errors(files, run_eval, tmp_path: Path) -> None:
    _, run = files
    res = run_eval(write(tmp_path, "empty.qrels", []), run)
    assert res.returncode == 1 and "empty.qrels: no data lines" in res.stderr
    res = run_eval(files[0], "-", stdin=b"")
    assert res.returncode == 1 and "<stdin>: no data lines" in res.stderr
    res = run_eval(tmp_path, run)
    assert res.returncode == 1 and "is a directory" in res.stderr


def test_a_document_twice_is_an_error_whatever_the_tags(files, run_eval, tmp_path: Path) -> None:
    run = write(tmp_path, "twice.run", ["q1 Q0 a 1 2.0 x", "q1 Q0 a 2 1.0 y"])
    for args in ((files[0], run), (files[0], "-")):
        res = run_eval(*args, stdin=run.read_bytes())
        assert res.returncode == 1
        assert "duplicate rows for (query='q1', doc='a')" in res.stderr
        assert "trec_eval refuses such runs." in res.stderr
        assert "duplicates=" not in res.stderr


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["-R", "prefs"], "-R prefs: only -R qrels is supported"),
        (["-M", "-1"], "-M -1: the number of documents kept must be >= 0"),
        (["-Z", "z", "--format", "csv"], "-Z prints trec_eval's lines"),
        (["-m", "P.0"], "cutoffs must be > 0"),
        (["-m", "P.5,5"], "duplicate cutoffs"),
        (["-m", "all_prefs"], "-m prefs_num_prefs_poss: trec_eval's prefs_num_prefs_poss"),
        (["-m", "mapp"], "Unknown measure 'mapp'"),
        (["--conventions", "trec_eval-9", "-m", "rbp"], "use --conventions trec_eval-10"),
        (["--missing", "error"], "use -c to score them"),
        (["-D", "1.nosuchquery"], "no queries with both results and relevance info"),
    ],
)
def test_messages_speak_flags(files, args: list[str], needle: str, run_eval) -> None:
    res = run_eval(*args, *files)
    assert res.returncode == 1
    assert len(res.stderr.splitlines()) == 1, res.stderr
    assert needle in res.stderr
    assert "missing='" not in res.stderr and "parse_measures" not in res.stderr


@pytest.mark.parametrize(
    ("arg", "line", "note"),
    [
        ("P.1O", "P_1", "P.1O read as P.1 (trec_eval reads '1O' as 1)"),
        ("ndcg_cut.10x", "ndcg_cut_10",
         "ndcg_cut.10x read as ndcg_cut.10 (trec_eval reads '10x' as 10)"),
        ("P.5,2.5", "P_2", "P.5,2.5 read as P.5,2 (trec_eval reads '2.5' as 2)"),
        ("iprec_at_recall.0.5x", "iprec_at_recall_0.50",
         "iprec_at_recall.0.5x read as iprec_at_recall.0.5 (trec_eval reads '0.5x' as 0.5)"),
        ("ndcg.1=3x", "ndcg_1=3x", "ndcg.1=3x read as ndcg.1=3 (trec_eval reads '3x' as 3)"),
    ],
)  # fmt: skip
def test_a_parameter_trec_eval_misreads_prints_as_trec_eval_with_a_note(
    files, run_eval, arg: str, line: str, note: str
) -> None:
    # trec_eval 9 and 10 read cutoffs with atol and values with atof: "1O" is 1.
    qrels, run = files
    res = run_eval("-m", arg, qrels, run)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[0].startswith(f"{line:<22}\tall\t")
    assert res.stderr == f"polars-rankeval: note: -m {note}\n"


def test_parameters_read_whole_print_no_note(files, run_eval) -> None:
    qrels, run = files
    res = run_eval("-m", "P.5,10", "-m", "iprec_at_recall..5,1.0", "-m", "ndcg.1=3", qrels, run)
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""
