"""Diff ``polars-rankeval eval`` against trec_eval programs, line for line, on random files.

A development check, not a test: the reference programs are never part of the
project. Build trec_eval 10.0 and/or 9.0.8 from their published sources and
give their paths::

    python benchmarks/diff_trec_eval.py --trec-eval-10 path/to/10.0/trec_eval \\
        --trec-eval-9 path/to/9.0.8/trec_eval --files 200 --seed 1

Each random case is a run file and a qrels file with what trips up an
evaluator: scores that tie only in single precision (9.x holds C floats),
exact ties, scores beyond the float range, ``#`` comment lines, text after
the sixth field, blank lines, several run tags (the last line's is the runid),
negative grades (-1, -2) and grades above 9, query and doc ids that sort
differently as strings and numbers, queries only in the run or only in the
qrels. Each case runs under several flag sets (``-q``, ``-c``, ``-M``, ``-l``,
``-J``, ``-n``, ``-N``, measures with parameters and nicknames), some with the
run on standard input (``-``), through both programs: ours in process
(``polars_rankeval.cli.main``) with ``--conventions`` matching the reference.

Known differences in what the programs accept, handled here and documented:

* trec_eval 9.x reads neither ``#`` comments nor standard input: it gets the
  same run without comment lines, from the file;
* trec_eval 10.0 reads qrels comments only in column 0 and not two in a row,
  so the qrels get single column-0 comments;
* without ``-c``, trec_eval 10.0 exits 4 when a qrels query has no run lines
  (we leave the query out, as 9.x does): such cases are compared with 10.0 run
  on the qrels of the run's queries only;
* trec_eval stops ("Can't calculate measure") on a query whose qrels grades
  are all negative, and with ``-c`` scores a run with no data lines, which we
  refuse: every generated qrels query has a grade >= 0, and the first query
  of each case is in both files;
* trec_eval 10.0's rbp reads two uninitialised variables (``min``, ``max`` in
  ``m_rbp.c``): after ndcg, G or ndcg_rel with gain parameters they hold that
  measure's leftovers and rbp comes out scaled by them. We compute rbp as
  intended (what 10.0 prints in every other company), so rbp is not asked for
  together with the gain measures here.

Prints the number of files, program runs, lines compared and lines that
differ, per reference, and the first differences; exits 1 if any line differs.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from polars_rankeval.cli import main as cli_main

MEASURE_SETS = {
    "all_trec": ["-m", "all_trec"],
    "official": [],
    "relstring": ["-m", "all_trec", "-m", "relstring.15"],
    "params": [
        "-m", "P.3,7", "-m", "ndcg_cut.4,9", "-m", "iprec_at_recall..15,.33,.5",
        "-m", "Rprec_mult.0.5,1.5", "-m", "11pt_avg..2,.4", "-m", "set_F.0.5",
        "-m", "utility.2,-1,0.5,0", "-m", "recall.2,9", "-m", "success.2",
        "-m", "map_cut.3", "-m", "relative_P.4",
    ],
    "gains": ["-m", "ndcg.0=0.5,1=2,3=7", "-m", "G.1=2", "-m", "Rndcg.2=5", "-m", "ndcg_rel.1=2"],
    "utility_N": ["-N", "500", "-m", "utility.1,-1,0.2,0.01", "-m", "num_q"],
    # measures that read only graded rows: the library's judged-only path
    "graded_rows": [
        "-m", "map", "-m", "P.5,10", "-m", "ndcg_cut.5", "-m", "recip_rank", "-m", "Rprec",
        "-m", "success.1,5", "-m", "recall.10", "-m", "map_cut.10", "-m", "num_rel_ret",
        "-m", "gm_map", "-m", "ndcg", "-m", "num_rel",
    ],
}  # fmt: skip
MEASURE_SETS_10 = {"rbp": ["-m", "rbp.p=0.7", "-m", "rbp_resid.p=0.95", "-m", "unj.3,7"]}
OPTIONS = [[], ["-q"], ["-c"], ["-q", "-c"], ["-l2"], ["-q", "-l", "3"], ["-J"], ["-q", "-J"]]
MORE = [["-M5"], ["-M", "12"], ["-n"], ["-c", "-M7"], ["-q", "-c", "-l2", "-M20"], ["-q", "-M0"]]


@dataclass
class Case:
    run: str
    run_plain: str  # without comment lines, for trec_eval 9.x
    qrels: str
    qrels_plain: str


@dataclass
class Tally:
    runs: int = 0
    lines: int = 0
    differing: int = 0
    both_failed: dict[str, int] = field(default_factory=dict)
    reference_exit_4: int = 0
    examples: list[str] = field(default_factory=list)


def _ids(rng: np.random.Generator, n: int, styles: list[str]) -> list[str]:
    out = []
    while len(out) < n:
        style = styles[rng.integers(len(styles))]
        value = str(rng.integers(0, 60))
        x = style.format(value)
        if x not in out:
            out.append(x)
    return out


def _score_maker(rng: np.random.Generator):
    """A function giving scores of one of several kinds, with many kinds of ties."""
    kind = rng.integers(5)
    bases = [float(np.float32(rng.uniform(-20, 20))) for _ in range(rng.integers(1, 6))]

    def near_float32(base: float) -> float:
        # a double that differs from base but rounds to the same float32
        ulp = float(np.spacing(np.float32(base)))
        for _ in range(10):
            x = base + float(rng.uniform(-0.45, 0.45)) * ulp
            if float(np.float32(x)) == base:
                return x
        return base

    def score() -> float:
        if kind == 0:
            return near_float32(bases[rng.integers(len(bases))])
        if kind == 1:
            return float(rng.integers(0, 4)) / 2.0
        if kind == 2:
            return [1e39, 2e39, -1e39, 3.4e38, 1.0][rng.integers(5)]
        if kind == 3:
            return float(rng.normal())
        return round(float(rng.uniform(0, 3)), 2)

    return score


def make_case(rng: np.random.Generator) -> Case:
    """A random run and qrels (see the module docstring)."""
    queries = _ids(rng, int(rng.integers(1, 9)), ["{}", "q{}", "1{}", "Q-{}"])
    run_lines: list[str] = []
    qrels_lines: list[str] = []
    tags = ["runA"] if rng.random() < 0.7 else ["runA", "runB", "r-c"]
    grades = [-2, -1, 0, 0, 0, 1, 1, 1, 2, 3, 4, 12]
    for q in queries:
        pool = _ids(rng, 40, ["d{}", "D{}", "doc-{}", "FT9-{}", "x#{}", "{}", "z{}a"])
        where = rng.random() if q != queries[0] else 0.5  # the first: in run and qrels
        if where > 0.12:  # in the qrels
            judged = rng.choice(pool, size=int(rng.integers(1, 25)), replace=False)
            some = [int(rng.choice(grades if where > 0.2 else [-1, 0])) for _ in judged]
            if max(some) < 0:  # trec_eval stops on a query whose grades are all negative
                some[0] = 0
            qrels_lines += [f"{q} 0 {d} {g}" for d, g in zip(judged, some, strict=True)]
        if where < 0.92:  # in the run
            score = _score_maker(rng)
            docs = rng.choice(pool, size=int(rng.integers(1, 35)), replace=False)
            for rank, d in enumerate(docs, 1):
                sep = ["\t", " ", "  "][rng.integers(3)]
                tag = tags[rng.integers(len(tags))]
                line = sep.join([q, "Q0", str(d), str(rank), repr(score()), tag])
                if rng.random() < 0.1:
                    line += " extra fields\there"
                run_lines.append(line)
    rng.shuffle(run_lines)
    rng.shuffle(qrels_lines)
    with_comments: list[str] = []
    for line in run_lines:
        r = rng.random()
        if r < 0.05:
            with_comments.append("# a comment line")
        elif r < 0.07:
            with_comments.append("   # indented comment")
        elif r < 0.09:
            with_comments.append("")
        with_comments.append(line)
    plain = [x for x in with_comments if not x.lstrip().startswith("#")]
    qrels_out: list[str] = []
    for i, line in enumerate(qrels_lines):
        if rng.random() < 0.05 and (not qrels_out or not qrels_out[-1].startswith("#")):
            qrels_out.append(f"# judged by assessor {i}")
        qrels_out.append(line)
    text = ["\n".join(lines) + "\n" for lines in (with_comments, plain, qrels_out, qrels_lines)]
    return Case(*text)


def ours(args: list[str], stdin: bytes | None) -> tuple[int, str, str]:
    """polars-rankeval eval, in this process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdin
    try:
        if stdin is not None:
            sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli_main(["eval", *args])
            except SystemExit as exc:
                code = int(exc.code or 0)
    finally:
        sys.stdin = saved
    return code, out.getvalue(), err.getvalue().strip()


def reference(program: str, args: list[str], stdin: bytes | None) -> tuple[int, str, str]:
    """The reference program: (exit status, stdout, first line of stderr)."""
    res = subprocess.run(
        [program, *args], input=stdin, capture_output=True, timeout=120, check=False
    )
    err = res.stderr.decode(errors="backslashreplace").strip().split("\n")[0]
    return res.returncode, res.stdout.decode(errors="backslashreplace"), err


def compare_case(
    case: Case, flags: list[str], version: str, program: str, use_stdin: bool, tmp: Path
) -> tuple[int, list[str], str]:
    """(lines compared, differing lines shown as diffs, outcome)."""
    (tmp / "qrels").write_text(case.qrels)
    (tmp / "qrels.plain").write_text(case.qrels_plain)
    (tmp / "run").write_text(case.run)
    (tmp / "run.plain").write_text(case.run_plain)
    ten = version == "10"
    ref_run = tmp / ("run" if ten else "run.plain")
    ref_qrels = str(tmp / ("qrels" if ten else "qrels.plain"))
    stdin = case.run.encode() if use_stdin else None
    our_code, our_out, our_err = ours(
        ["--conventions", f"trec_eval-{version}", *flags, str(tmp / "qrels"),
         "-" if use_stdin else str(tmp / "run")],
        stdin,
    )  # fmt: skip
    ref_stdin = stdin if (use_stdin and ten) else None
    ref_target = "-" if ref_stdin is not None else str(ref_run)
    code, ref_out, ref_err = reference(program, [*flags, ref_qrels, ref_target], ref_stdin)
    outcome = "compared"
    if code == 4 and ten and "-c" not in flags:
        # 10.0 stops on a qrels query without run lines; we leave it out, as 9.x does
        run_queries = {x.split()[0] for x in case.run_plain.splitlines() if x.strip()}
        kept = [x for x in case.qrels_plain.splitlines() if x.split()[0] in run_queries]
        (tmp / "qrels.kept").write_text("\n".join(kept) + "\n")
        kept_qrels = str(tmp / "qrels.kept")
        code, ref_out, ref_err = reference(program, [*flags, kept_qrels, ref_target], ref_stdin)
        outcome = "exit4"
    if code != 0:
        if our_code != 0:
            return 0, [], f"both_failed: {ref_err} / ours: {our_err}"
        return 0, [f"reference exit {code} ({ref_err}), ours 0"], outcome
    if our_code != 0:
        return 0, [f"reference exit 0, ours {our_code}: {our_err}"], outcome
    a, b = our_out.splitlines(), ref_out.splitlines()
    diffs = [f"- {r!r}\n+ {o!r}" for o, r in zip(a, b, strict=False) if o != r]
    if len(a) != len(b):
        diffs.append(f"{len(a)} lines, reference {len(b)}")
    return max(len(a), len(b)), diffs, outcome


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trec-eval-10", help="path to a trec_eval 10.0 program")
    parser.add_argument("--trec-eval-9", help="path to a trec_eval 9.x program (9.0.8)")
    parser.add_argument("--files", type=int, default=100, help="random cases (default 100)")
    parser.add_argument("--flag-sets", type=int, default=6, help="flag sets per case")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show", type=int, default=5, help="differences shown per reference")
    parser.add_argument("--keep", type=Path, help="copy the files of differing cases here")
    args = parser.parse_args()
    programs = {v: p for v, p in (("10", args.trec_eval_10), ("9", args.trec_eval_9)) if p}
    if not programs:
        parser.error("give --trec-eval-10 and/or --trec-eval-9")
    rng = np.random.default_rng(args.seed)
    tallies = {v: Tally() for v in programs}
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        for i in range(args.files):
            case = make_case(rng)
            for _ in range(args.flag_sets):
                sets = dict(MEASURE_SETS)
                measures = list(sets)[rng.integers(len(sets))]
                options = OPTIONS[rng.integers(len(OPTIONS))]
                if rng.random() < 0.4:
                    options = options + MORE[rng.integers(len(MORE))]
                use_stdin = rng.random() < 0.25
                extra_10 = rng.random() < 0.3
                for version, program in programs.items():
                    flags = [*options, *sets[measures]]
                    if version == "10" and extra_10 and measures != "gains":
                        flags += MEASURE_SETS_10["rbp"]
                    n, diffs, outcome = compare_case(case, flags, version, program, use_stdin, tmp)
                    t = tallies[version]
                    t.runs += 1
                    t.lines += n
                    t.differing += len(diffs)
                    if outcome.startswith("both_failed"):
                        why = outcome.partition(": ")[2]
                        t.both_failed[why] = t.both_failed.get(why, 0) + 1
                    t.reference_exit_4 += outcome == "exit4"
                    if diffs and args.keep is not None:
                        where = args.keep / f"case{i}"
                        where.mkdir(parents=True, exist_ok=True)
                        for part in ("run", "run.plain", "qrels", "qrels.plain"):
                            (where / part).write_bytes((tmp / part).read_bytes())
                    if diffs and len(t.examples) < args.show:
                        stdin = " (run on stdin)" if use_stdin else ""
                        t.examples.append(
                            f"case {i}, flags {flags}{stdin}:\n" + "\n".join(diffs[:4])
                        )
    bad = False
    for version, t in tallies.items():
        refused = sum(t.both_failed.values())
        print(
            f"trec_eval {version}: {args.files} files, {t.runs} runs, {t.lines} lines compared, "
            f"{t.differing} differing; {refused} runs where both programs refused the input, "
            f"{t.reference_exit_4} where 10.0 exits 4 (compared without those queries)"
        )
        for why, n in sorted(t.both_failed.items()):
            print(f"  both refused {n}x: {why}")
        for example in t.examples:
            print("  " + example.replace("\n", "\n  "))
        bad |= t.differing > 0
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
