"""The ``polars-rankeval`` command line: ``eval``, ``compare`` and ``curve``.

``polars-rankeval eval [trec_eval's flags] QRELS RUN`` is a drop-in trec_eval:
alias ``trec_eval`` to it and the lines are the same. It takes trec_eval's
flags as trec_eval spells them (``-q``, ``-m measure[.params]`` with nicknames
such as ``all_trec``, ``-c``, ``-l2``, ``-M100``, ``-J``, ``-n``, ``-N``,
``-D level.qid``, ``-R qrels``, ``-T trec_results``, ``-Z file``, ``-v``,
``-h``, and the long forms ``--measure``, ``--level_for_rel``, ...), reads the
run from standard input given ``-`` and prints exactly trec_eval's lines:
trec_eval's names (``P_5``, ``ndcg_cut_10``), field widths, line order,
``runid``, ``num_q``, ``relstring``. A run file is one run: the tag of its last
line is the ``runid``. ``--conventions trec_eval-10`` (default) or
``trec_eval-9`` says which release to reproduce
(:mod:`polars_rankeval.conventions`). Where trec_eval 10.0 stops with status 4
(a qrels query with no run lines, without ``-c``), the query is left out, as
9.x does.

The library's own options keep working where they do not clash: measures in
the library's dialects (``-m nDCG@10``, ``-m ERR@20``: printed under trec_eval's
name when trec_eval has the measure), several run files (each printed as its
own run, named by a ``runid`` line even when ``-m`` does not ask for one),
``--missing drop|zero|error`` (``-c`` is ``--missing zero``) and
``--format table|csv|json|markdown`` (canonical names as column headers, one
row per run or per run and query; default measures there: AP, P@10, nDCG@10,
RR, R@1000, where the trec format defaults to trec_eval's ``official``).

Run files are TREC runs (``qid Q0 docno rank score tag``, plain or gzip,
``#`` comment lines and fields after the sixth ignored), or Parquet/CSV tables
with ``query, doc, score`` (and optionally ``system``) columns; qrels are TREC
qrels (``qid iter docno rel``) or Parquet/CSV tables with
``query, doc, relevance``.

Errors are printed as one line on stderr, ``polars-rankeval: error: ...``, with
exit status 1 (2 for a malformed command line): a missing file, a directory,
an empty file or one with no data lines, a malformed line (named by file and
line number), qrels and run files given the other way round (named as
such). ``compare`` and the non-trec formats print notes, such as run queries
that have no qrels, as ``polars-rankeval: note: ...``; the trec format is
silent about them, as trec_eval is.
"""

from __future__ import annotations

import argparse
import importlib
import io
import runpy
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from polars_rankeval.conventions import CONVENTIONS, DEFAULT, Conventions, get_conventions
from polars_rankeval.evaluate import evaluate
from polars_rankeval.io import (
    Encoding,
    NotUtf8Error,
    read_trec_qrels,
    read_trec_run,
    require_data,
    scan_trec_qrels,
    scan_trec_run,
    write_trec_run,
)
from polars_rankeval.means import mean_scores
from polars_rankeval.measures import Measure, aggregate_kind, parse_measures
from polars_rankeval.stats import CORRECTIONS, TESTS
from polars_rankeval.trec_report import (
    Line,
    TrecOptions,
    prepare_run,
    read_zscores,
    trec_lines,
    trec_request,
)

PROG = "polars-rankeval"
VERSION = "0.1.0"
DEFAULT_MEASURES = ("AP", "P@10", "nDCG@10", "RR", "R@1000")
FORMATS = ("trec", "table", "csv", "json", "markdown")
_TABLE_SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv"}
STDIN = "-"


class CommandError(Exception):
    """An error the command reports as one line (bad input, bad option value)."""


# --------------------------------------------------------------------------- inputs


RUN_COLUMNS = ("query", "doc", "score")
QRELS_COLUMNS = ("query", "doc", "relevance")


def _table_kind(path: Path) -> str | None:
    return _TABLE_SUFFIXES.get(path.suffix.lower())


def _read_table(path: Path, kind: str, columns: Sequence[str]) -> pl.DataFrame:
    """A Parquet or CSV table with at least ``columns``; errors name the file."""
    ids = {"query": pl.String, "doc": pl.String}
    if path.is_dir():
        msg = f"{path}: is a directory, not a {kind} file"
        raise IsADirectoryError(msg)
    try:
        table = (
            pl.read_parquet(path) if kind == "parquet" else pl.read_csv(path, schema_overrides=ids)
        )
    except (FileNotFoundError, PermissionError):
        raise
    except (pl.exceptions.PolarsError, OSError) as exc:
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        msg = f"{path}: cannot read as a {kind} file: {detail}"
        raise CommandError(msg) from None
    missing = [c for c in columns if c not in table.columns]
    if missing:
        msg = (
            f"{path}: no column {', '.join(map(repr, missing))} (a {kind} table needs "
            f"{', '.join(columns)}; it has {', '.join(table.columns) or 'no columns'})"
        )
        raise CommandError(msg)
    return table


ENCODING: ContextVar[Encoding] = ContextVar("encoding", default="utf-8")
"""How the TREC text inputs are read: UTF-8, or, once one of them is not UTF-8 text,
every one byte by byte (``latin-1``) as trec_eval reads them (:func:`main`)."""
_STDIN: ContextVar[bytes | None] = ContextVar("stdin", default=None)
"""Standard input once read, for a second reading of the inputs."""


def read_qrels(path: str | Path) -> pl.DataFrame:
    """Qrels from a TREC qrels file, or a Parquet/CSV table with ``query, doc, relevance``.

    An input with no data lines is an error naming the file.
    """
    path = Path(path)
    kind = _table_kind(path)
    if kind is None:
        qrels = read_trec_qrels(path, encoding=ENCODING.get())
    else:
        qrels = _read_table(path, kind, QRELS_COLUMNS)
    require_data(qrels, path, "qrels")
    return qrels


def read_run(path: str | Path, *, stdin: bytes | None = None) -> pl.DataFrame:
    """A run from a TREC run file, ``-`` (standard input), or a Parquet/CSV table.

    ``system`` is always present: the run tag of each line (a table without a
    ``system`` column is named by its file name). An input with no data lines
    is an error naming the file.
    """
    if str(path) == STDIN:
        data = stdin if stdin is not None else _STDIN.get()
        if data is None:
            data = sys.stdin.buffer.read()
            _STDIN.set(data)
        run = read_trec_run(data, name="<stdin>", encoding=ENCODING.get())
        require_data(run, data, "run", name="<stdin>")
        return run
    path = Path(path)
    kind = _table_kind(path)
    if kind is None:
        run = read_trec_run(path, encoding=ENCODING.get())
    else:
        run = _read_table(path, kind, RUN_COLUMNS)
    require_data(run, path, "run")
    if "system" not in run.columns:
        run = run.with_columns(system=pl.lit(path.name))
    return run.with_columns(pl.col("system").cast(pl.String))


def as_one_run(run: pl.DataFrame) -> tuple[pl.DataFrame, str]:
    """A run file as trec_eval reads it: one run, named by the tag of its last line.

    Examples
    --------
    >>> import polars as pl
    >>> run = pl.DataFrame({"query": ["1", "2"], "doc": ["d", "e"], "score": [1.0, 2.0],
    ...                     "system": ["a", "b"]})
    >>> one, runid = as_one_run(run)
    >>> runid, one["system"].unique().to_list()
    ('b', ['b'])
    """
    runid = str(run["system"][-1])
    return run.with_columns(system=pl.lit(runid)), runid


def combine_runs(runs: Sequence[tuple[str, pl.DataFrame]]) -> pl.DataFrame:
    """Stack runs; if two files share a tag, name every run by its file (``file:tag``).

    Examples
    --------
    >>> import polars as pl
    >>> a = pl.DataFrame({"query": ["1"], "doc": ["d"], "score": [1.0], "system": ["x"]})
    >>> combine_runs([("a.run", a), ("b.run", a)])["system"].to_list()
    ['a.run', 'b.run']
    """
    tags = [set(run["system"].unique().to_list()) for _, run in runs]
    clash = any(tags[i] & tags[j] for i in range(len(tags)) for j in range(i + 1, len(tags)))
    frames = []
    for (name, run), own in zip(runs, tags, strict=True):
        if clash:
            label = pl.lit(name) if len(own) == 1 else pl.lit(name + ":") + pl.col("system")
            run = run.with_columns(label.alias("system"))
        frames.append(run.select("query", "doc", "score", "system"))
    if clash and len({name for name, _ in runs}) < len(runs):
        msg = "the same run file was given twice; give each run once"
        raise CommandError(msg)
    return pl.concat(frames, how="vertical_relaxed")


def _file_run(name: str) -> pl.DataFrame:
    """A run file as ``eval`` reads it: a TREC file (or ``-``) is one run, named by the
    tag of its last line; a table keeps its ``system`` column."""
    run = read_run(name)
    if name == STDIN or _table_kind(Path(name)) is None:
        run = as_one_run(run)[0]
    return run


def _check_stdin(runs: Sequence[str]) -> None:
    if sum(str(r) == STDIN for r in runs) > 1:
        msg = "standard input (-) can be read once: give - as one RUN only"
        raise CommandError(msg)


def _reads_as(path: str, scan: Callable[..., pl.LazyFrame]) -> bool:
    """Whether a TREC file's first data line reads with ``scan`` in the encoding the
    inputs are read in (standard input and tables are not looked at)."""
    if path == STDIN or _table_kind(Path(path)) is not None:
        return False
    try:
        return scan(Path(path), encoding=ENCODING.get()).head(1).collect().height == 1
    except Exception:  # any failure means "does not read as that"
        return False


def swap_message(qrels: str, runs: Sequence[str], error: Exception) -> str | None:
    """What to say when reading the inputs failed and the files look given the wrong way
    round (a run as QRELS, a qrels file as a RUN), or None if they do not.

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / "r").write_text("1 Q0 a 1 2.0 t\\n"), (d / "q").write_text("1 0 a 1\\n")
    >>> print(swap_message(str(d / "r"), [str(d / "q")], ValueError("4 fields")))
    /.../r and /.../q look swapped: /.../r reads as a TREC run file and /.../q as a qrels
    file; give the qrels file first (polars-rankeval eval QRELS RUN, as trec_eval QRELS RUN)
    >>> swap_message(str(d / "q"), [str(d / "r")], ValueError("a bad line")) is None
    True
    """
    as_run = _reads_as(qrels, scan_trec_run)
    as_qrels = [run for run in runs if _reads_as(run, scan_trec_qrels)]
    order = f"give the qrels file first ({PROG} eval QRELS RUN, as trec_eval QRELS RUN)"
    if as_run and as_qrels:
        return (
            f"{qrels} and {as_qrels[0]} look swapped: {qrels} reads as a TREC run file and "
            f"{as_qrels[0]} as a qrels file; {order}"
        )
    if as_run:
        return f"{qrels}: reads as a TREC run file, not qrels: {order} ({_one_line(error)})"
    if as_qrels:
        return (
            f"{as_qrels[0]}: reads as a TREC qrels file (qid iter docno rel), not a run: "
            f"{order} ({_one_line(error)})"
        )
    return None


@contextmanager
def naming_swaps(qrels: str, runs: Sequence[str]) -> Iterator[None]:
    """Turn an error reading the inputs into :func:`swap_message` when the files look
    given the wrong way round; any other error goes on as it is."""
    try:
        yield
    except ValueError as exc:
        message = swap_message(qrels, runs, exc)
        if message is None:
            raise
        raise CommandError(message) from None


def load_inputs(qrels: str, runs: Sequence[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Read the qrels and every run (one frame, ``system`` telling runs apart)."""
    _check_stdin(runs)
    with naming_swaps(qrels, runs):
        return combine_runs([(r, read_run(r)) for r in runs]), read_qrels(qrels)


def parse_measure_args(
    names: Sequence[str] | None, conventions: Conventions | None = None
) -> dict[Measure, str]:
    """Each distinct measure with the name it was first typed as.

    trec_eval forms with several values (``P.5,10``), nicknames (``official``)
    and bare family names (``P``: trec_eval's cutoffs) give several measures.
    """
    typed: dict[Measure, str] = {}
    for name in names or DEFAULT_MEASURES:
        for measure in parse_measures(name, conventions=conventions):
            typed.setdefault(measure, name.strip())
    return typed


# --------------------------------------------------------------------------- output


def _trec_value(value: float | None, *, count: bool) -> str:
    if value is None:
        return "nan"
    return str(round(value)) if count else f"{value:.4f}"


def trec_table_lines(
    per_query: pl.DataFrame, measures: dict[Measure, str], *, show_queries: bool
) -> list[str]:
    """trec_eval-style lines for per-query results of one or more systems.

    The ``all`` line combines the queries as trec_eval does
    (:func:`polars_rankeval.mean_scores`). Used for frames that already hold
    per-query values; ``eval`` prints through
    :func:`polars_rankeval.trec_report.trec_lines`, which reproduces trec_eval
    exactly.

    Examples
    --------
    >>> import polars as pl
    >>> from polars_rankeval.measures import parse
    >>> pq = pl.DataFrame({"system": ["s", "s"], "query": ["1", "2"], "AP": [0.5, 0.25]})
    >>> print("\\n".join(trec_table_lines(pq, {parse("map"): "map"}, show_queries=True)))
    map                   \t1\t0.5000
    map                   \t2\t0.2500
    runid                 \tall\ts
    map                   \tall\t0.3750
    """
    cols = {str(m): label for m, label in measures.items()}
    counts = {c for c in cols if aggregate_kind(c) == "sum"}
    lines = []
    for (system,), block in per_query.group_by("system", maintain_order=True):
        if show_queries:
            for row in block.iter_rows(named=True):
                for col, label in cols.items():
                    value = _trec_value(row[col], count=col in counts)
                    lines.append(f"{label:<22}\t{row['query']}\t{value}")
        lines.append(f"{'runid':<22}\tall\t{system}")
        totals = mean_scores(block, list(cols), system=None).row(0, named=True)
        for col, label in cols.items():
            lines.append(f"{label:<22}\tall\t{_trec_value(totals[col], count=col in counts)}")
    return lines


def format_frame(frame: pl.DataFrame, fmt: str, *, decimals: int | None = 4) -> str:
    """Render a result frame as ``table``, ``csv``, ``json`` or ``markdown`` text.

    ``decimals`` rounds floats in ``table`` and ``markdown`` only (None: Polars'
    default, six significant digits, which keeps small p-values readable);
    ``csv`` and ``json`` keep full precision.
    """
    if fmt == "csv":
        return frame.write_csv()
    if fmt == "json":
        return frame.write_json() + "\n"
    config: dict[str, Any] = {
        "tbl_rows": -1,
        "tbl_cols": -1,
        "float_precision": decimals,
        "tbl_hide_dataframe_shape": True,
        "tbl_width_chars": 1000,
        "fmt_str_lengths": 1000,
    }
    if fmt == "markdown":
        config |= {"tbl_formatting": "MARKDOWN", "tbl_hide_column_data_types": True}
    with pl.Config(**config):
        return f"{frame}\n"


# --------------------------------------------------------------------------- commands


def _eval_options(args: argparse.Namespace) -> dict[str, Any]:
    return {"rel_level": args.level, "missing": args.missing, "depth": args.depth}


def _trec_options(args: argparse.Namespace, conventions: Conventions) -> TrecOptions:
    """trec_eval's flags, checked, as :class:`~polars_rankeval.trec_report.TrecOptions`."""
    if args.rel_format != "qrels":
        msg = (
            f"-R {args.rel_format}: only -R qrels is supported (preference and "
            "judgment-group files are not)"
        )
        raise CommandError(msg)
    if args.depth is not None and args.depth < 0:
        msg = f"-M {args.depth}: the number of documents kept must be >= 0"
        raise CommandError(msg)
    if args.zscores is not None and args.format != "trec":
        msg = f"-Z prints trec_eval's lines: it does not go with --format {args.format}"
        raise CommandError(msg)
    if args.results_format != "trec_results":
        msg = f"-T {args.results_format}: only -T trec_results is supported"
        raise CommandError(msg)
    debug = args.debug
    query = debug.partition(".")[2] if debug is not None and "." in debug else None
    return TrecOptions(
        conventions=conventions,
        per_query=args.per_query,
        complete=args.missing == "zero",
        rel_level=args.level,
        summary=not args.no_summary,
        depth=args.depth,
        judged_only=args.judged_only,
        num_docs=args.num_docs,
        debug_query=query,
        zscores=None if args.zscores is None else read_zscores(args.zscores),
    )


def named_blocks(request: list[Line]) -> list[Line]:
    """The lines of a request with a ``runid`` line, first as in trec_eval's measure
    list, when it has none: several runs are printed block after block, and trec_eval
    (one run) prints ``runid`` only when asked.

    Examples
    --------
    >>> from polars_rankeval.conventions import get_conventions
    >>> [x.name for x in named_blocks(trec_request(["map"], get_conventions()))]
    ['runid', 'map']
    >>> [x.name for x in named_blocks(trec_request(["map", "runid"], get_conventions()))]
    ['runid', 'map']
    """
    if any(x.output == "runid" for x in request):
        return request
    return [Line("runid", "runid"), *request]


def _require_every_query(run: pl.DataFrame, qrels: pl.DataFrame, name: str, runid: str) -> None:
    """--missing error: every qrels query must have lines of each run (runid) of a file."""
    absent = sorted(set(qrels["query"].unique()) - set(run["query"].unique()))
    if absent:
        shown = ", ".join(absent[:10]) + (", ..." if len(absent) > 10 else "")
        msg = (
            f"{len(absent)} qrels queries have no lines of run {runid!r} in {name} ({shown}); "
            "use -c to score them as empty rankings, or --missing drop to leave them out"
        )
        raise CommandError(msg)


def cmd_eval(args: argparse.Namespace) -> str:
    """``eval``: trec_eval's lines (default), or per-query values or means in a table format."""
    _check_stdin(args.runs)
    conventions = get_conventions(args.conventions)
    if args.complete:
        args.missing = "zero"
    elif args.missing is None:  # the conventions' choice: drop for trec_eval, zero for ranx
        args.missing = conventions.absent_queries
    opts = _trec_options(args, conventions)
    with naming_swaps(args.qrels, args.runs):
        qrels = read_qrels(args.qrels)
        files = [(name, _file_run(name)) for name in args.runs]
    if args.format == "trec":
        request = trec_request(args.measure, conventions, num_docs=args.num_docs)
        several = sum(run["system"].n_unique() for _, run in files) > 1
        if several:
            request = named_blocks(request)
        out: list[str] = []
        for name, run in files:
            for (runid,), one in run.group_by("system", maintain_order=True):
                if args.missing == "error":
                    _require_every_query(one, qrels, name, str(runid))
                try:
                    out += trec_lines(one, qrels, str(runid), request, opts)
                except ValueError as exc:  # name the run file: there may be several
                    raise CommandError(f"{name}: {_one_line(exc)}") from None
                if several and not opts.summary:  # -n prints no runid: name the block
                    out.append(f"{'runid':<22}\tall\t{runid}")
        return "".join(line + "\n" for line in out)
    request = trec_request(args.measure or DEFAULT_MEASURES, conventions, num_docs=args.num_docs)
    measures = list(dict.fromkeys(x.measure for x in request if x.measure is not None))
    if not measures:
        msg = "-m: no measure with per-query values (runid, num_q, relstring are trec lines)"
        raise CommandError(msg)
    run, qrels, depth = prepare_run(combine_runs(files), qrels, opts)
    options = _eval_options(args) | {"depth": depth}
    per_query = evaluate(
        run, qrels, measures, per_query=args.per_query, conventions=conventions, **options
    )
    return format_frame(per_query, args.format)


def cmd_compare(args: argparse.Namespace) -> str:
    """``compare``: paired tests between the runs, one row per measure and pair."""
    from polars_rankeval.compare import compare

    run, qrels = load_inputs(args.qrels, args.runs)
    conventions = get_conventions(args.conventions)
    measures = parse_measure_args(args.measure, conventions)
    n_systems = run["system"].n_unique()
    if n_systems < 2:
        msg = f"compare needs at least two runs; got {n_systems} system in {', '.join(args.runs)}"
        raise CommandError(msg)
    per_query = evaluate(run, qrels, list(measures), conventions=conventions, **_eval_options(args))
    table = compare(
        per_query,
        [str(x) for x in measures],
        baseline=args.baseline,
        test=args.test,
        correction=args.correction,
        alpha=args.alpha,
        seed=args.seed,
    )
    return format_frame(table, args.format, decimals=None)


REPORT_FORMATS = ("markdown", "latex", "table", "csv", "json")


def cmd_report(args: argparse.Namespace) -> str:
    """``report``: the results table of a paper (:func:`polars_rankeval.report`), scores
    marked where they differ significantly, as Markdown, LaTeX or a tidy table."""
    from polars_rankeval.report import report

    run, qrels = load_inputs(args.qrels, args.runs)
    conventions = get_conventions(args.conventions)
    measures = parse_measure_args(args.measure, conventions)
    n_systems = run["system"].n_unique()
    if n_systems < 2:
        msg = f"report needs at least two runs; got {n_systems} system in {', '.join(args.runs)}"
        raise CommandError(msg)
    per_query = evaluate(run, qrels, list(measures), conventions=conventions, **_eval_options(args))
    bases = args.baseline or []
    rep = report(
        per_query,
        [str(x) for x in measures],
        baseline=bases[0] if len(bases) == 1 else (bases or None),
        test=args.test,
        correction=args.correction,
        alpha=args.alpha,
        seed=args.seed,
        missing=args.missing,
        digits=args.digits,
        interval=args.interval or False,
        level=args.level_ci,
    )
    if args.format == "markdown":
        return rep.to_markdown()
    if args.format == "latex":
        return rep.to_latex(caption=args.caption, label=args.label)
    lists = [c for c, t in rep.frame.schema.items() if isinstance(t, pl.List)]
    frame = rep.frame.with_columns(pl.col(c).list.join("") for c in lists)  # beats: letters
    return format_frame(frame, args.format, decimals=None)


def cmd_explain(args: argparse.Namespace) -> str:
    """``explain``: measures under two conventions, per query (or per cause), and why they
    differ."""
    from polars_rankeval.explain import explain

    if args.per == "cause" and args.differing:
        raise CommandError("--differing selects queries: it goes with --per query, not --per cause")
    run, qrels = load_inputs(args.qrels, args.runs)
    if run["system"].n_unique() == 1:
        run = run.drop("system")
    measures = args.measure[0] if len(args.measure) == 1 else args.measure
    table = explain(run, qrels, measures, between=tuple(args.between), per=args.per)
    if args.differing:
        table = table.filter(pl.col("causes").list.len() > 0)
    lists = [c for c, t in table.schema.items() if isinstance(t, pl.List)]
    if args.format in ("csv", "markdown"):
        table = table.with_columns(pl.col(c).list.join("; ") for c in lists)
    return format_frame(table, args.format, decimals=None)


def cmd_curve(args: argparse.Namespace) -> str:
    """``curve``: precision-recall curves of every run, drawn to a PNG, SVG or PDF file."""
    from polars_rankeval.plots import plot_pr_curves

    run, qrels = load_inputs(args.qrels, args.runs)
    points = None if args.raw else args.points
    path = plot_pr_curves(
        run, qrels, args.output, points=points, rel_level=args.level, title=args.title
    )
    return f"wrote {path}\n"


# --------------------------------------------------------------------------- parser


class _Version(argparse.Action):
    """``-v`` / ``--version``: the version on stderr, exit 0 (as trec_eval does)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: object, **__: object) -> None:
        versions = ", ".join(f"{c.name}: {c.version}" for c in CONVENTIONS.values())
        print(f"{PROG} version {VERSION} (trec_eval conventions {versions})", file=sys.stderr)
        parser.exit(0)


def _fusion_runs(paths: Sequence[str]) -> dict[str, pl.DataFrame]:
    """The run files to fuse, named by file (``file:tag`` never needed: one run a file)."""
    runs: dict[str, pl.DataFrame] = {}
    for path in paths:
        name = Path(path).name
        if name in runs:
            msg = f"the run file {path} was given twice; give each run once"
            raise CommandError(msg)
        runs[name] = read_run(path).select("query", "doc", "score")
    return runs


def _fusion_params(items: Sequence[str]) -> dict[str, float]:
    """``--param k=60`` pairs as numbers (an int when it reads as one)."""
    out: dict[str, float] = {}
    for item in items:
        key, sep, value = item.partition("=")
        try:
            number: float = int(value) if value.strip().lstrip("-").isdigit() else float(value)
        except ValueError:
            number = float("nan")
        if not sep or not key or number != number:
            msg = f"--param takes NAME=NUMBER (as k=60). Got {item!r}."
            raise CommandError(msg)
        out[key] = number
    return out


def _norm_arg(value: str) -> str | None:
    return None if value == "none" else value


def cmd_fuse(args: argparse.Namespace) -> str:
    """``fuse``: the fused run, to ``-o`` (TREC, or Parquet by its suffix) or stdout."""
    from polars_rankeval.fusion import fuse

    runs = _fusion_runs(args.runs)
    fused = fuse(
        runs,
        method=args.method,
        norm=_norm_arg(args.norm),
        weights=args.weights,
        params=_fusion_params(args.param) or None,
        name=args.name,
        depth=args.depth,
        max_docs=args.max_docs,
        doc_order=args.doc_order,
    )
    if args.output is None:
        buffer = io.StringIO()
        ordered = fused.sort(["query", "score", "doc"], descending=[False, True, True])
        ranked = ordered.with_columns(pl.int_range(1, pl.len() + 1).over("query").alias("rank"))
        for q, d, r, sc in ranked.select("query", "doc", "rank", "score").iter_rows():
            buffer.write(f"{q} Q0 {d} {r} {sc!r} {args.name}\n")
        return buffer.getvalue()
    out = Path(args.output)
    if _table_kind(out) == "parquet":
        fused.write_parquet(out)
    else:
        write_trec_run(fused, out, tag=args.name, encoding=ENCODING.get())
    return ""


def cmd_optimize_fusion(args: argparse.Namespace) -> str:
    """``optimize-fusion``: every configuration's score, then the best parameters."""
    import json

    from polars_rankeval.fusion import optimize_fusion

    qrels = read_qrels(args.qrels)
    runs = _fusion_runs(args.runs)
    best, report = optimize_fusion(
        runs, qrels, method=args.method, norm=_norm_arg(args.norm), metric=args.metric,
        step=args.step,
    )  # fmt: skip
    metric = report.columns[-1]
    lines = [f"{config}\t{value:.6f}" for config, value in zip(
        report["config"], report[metric], strict=True)]  # fmt: skip
    plain = {
        k: (np.asarray(v).tolist() if k in ("probs", "log_odds") else v) for k, v in best.items()
    }
    lines.append("best\t" + json.dumps(plain))
    return "\n".join(lines) + "\n"


def _add_fusion(parser: argparse.ArgumentParser) -> None:
    from polars_rankeval.fusion import METHODS

    parser.add_argument(
        "--method", choices=tuple(METHODS), default="wsum", help="fusion method (default wsum)"
    )
    parser.add_argument(
        "--norm",
        choices=("min-max", "min-max-inverted", "max", "sum", "zmuv", "rank", "borda", "none"),
        default="min-max",
        help="score normalisation of each ranking (default min-max)",
    )


def _add_common(parser: argparse.ArgumentParser, *, runs: str) -> None:
    parser.add_argument("qrels", help="qrels file (TREC 'qid iter docno rel', or .parquet/.csv)")
    parser.add_argument(
        "runs", nargs=runs, metavar="RUN", help="run file(s) (TREC, or .parquet/.csv)"
    )
    parser.add_argument(
        "-l",
        "--level",
        "--level_for_rel",
        type=int,
        default=1,
        help="minimum grade that counts as relevant (trec_eval -l; default 1)",
    )


def _add_conventions(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--conventions",
        choices=tuple(CONVENTIONS),
        default=DEFAULT,
        help=(
            "which trec_eval to reproduce: trec_eval-10 (default, the current release) or "
            "trec_eval-9 (9.x, as pytrec_eval); or a peer's preset: ranx, ir_measures, "
            "sklearn, torchmetrics, spark (see the explain command)"
        ),
    )


def _add_measures(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument(
        "-m",
        "--measure",
        action="append",
        metavar="MEASURE",
        help=(
            "measure, repeatable: trec_eval names with parameters and nicknames (map, P.5,10, "
            "ndcg_cut.10, all_trec, official), canonical (AP, P@10, nDCG@10) or ranx (mrr) "
            f"names; default {default}"
        ),
    )
    parser.add_argument(
        "--measures-from",
        action="append",
        default=[],
        metavar="FILE",
        help=(
            "a Python file (or an importable module name) that declares measures with "
            "pr.define_measure, loaded before -m is read; repeatable"
        ),
    )
    parser.add_argument(
        "-M",
        "--depth",
        "--Max_retrieved_per_topic",
        type=int,
        default=None,
        help="only the top N documents of each query (trec_eval -M)",
    )


def _add_trec_flags(p: argparse.ArgumentParser) -> None:
    """trec_eval's own flags, spelled as trec_eval spells them."""
    p.add_argument(
        "-q",
        "--per-query",
        "--query_eval_wanted",
        action="store_true",
        help="one value per query as well as the summary (trec_eval -q)",
    )
    p.add_argument(
        "-c",
        "--complete_rel_info_wanted",
        dest="complete",
        action="store_true",
        help="average over every qrels query; a query the run lacks scores 0 (--missing zero)",
    )
    p.add_argument(
        "-n", "--nosummary", dest="no_summary", action="store_true", help="no 'all' lines"
    )
    p.add_argument(
        "-J",
        "--Judged_docs_only",
        dest="judged_only",
        action="store_true",
        help="drop the unjudged documents from each ranking before scoring",
    )
    p.add_argument(
        "-N",
        "--Number_docs_in_coll",
        dest="num_docs",
        type=int,
        default=None,
        help="documents in the collection (for utility's fourth coefficient)",
    )
    p.add_argument(
        "-D",
        "--Debug_level",
        dest="debug",
        default=None,
        metavar="LEVEL[.QID]",
        help="with .QID, score only that query (trec_eval prints debug output too; we do not)",
    )
    p.add_argument(
        "-R",
        "--Rel_info_format",
        dest="rel_format",
        default="qrels",
        help="qrels format: qrels (the only one supported)",
    )
    p.add_argument(
        "-T",
        "--Results_format",
        dest="results_format",
        default="trec_results",
        help="run format: trec_results (the only one)",
    )
    p.add_argument(
        "-Z",
        "--Zscore",
        dest="zscores",
        default=None,
        metavar="FILE",
        help="print z-scores from per-query means and deviations in FILE",
    )
    p.add_argument(
        "-o",
        "--Output_old_results_format",
        dest="old_format",
        action="store_true",
        help=argparse.SUPPRESS,
    )
    p.add_argument("-v", "--version", action=_Version)


def _add_report(sub: Any) -> None:
    """The ``report`` subcommand: :func:`polars_rankeval.report` from the command line."""
    p = sub.add_parser(
        "report",
        help="the results table of a paper: scores, significance markers, intervals",
        description=(
            "Score the runs, test them (as compare does) and print the table of a paper: "
            "each score marked where it differs significantly (arrows against one "
            "--baseline, letters otherwise), optionally with its confidence interval."
        ),
    )
    _add_common(p, runs="+")
    _add_measures(p, " ".join(DEFAULT_MEASURES))
    p.add_argument(
        "--baseline",
        action="append",
        default=None,
        metavar="SYSTEM",
        help="system the others are tested against (arrows); repeatable (letters); "
        "default: every pair (letters)",
    )
    p.add_argument("--test", choices=tuple(TESTS), default="t", help="as for compare (default t)")
    p.add_argument(
        "--correction",
        choices=tuple(CORRECTIONS),
        default="none",
        help="as for compare (default none)",
    )
    p.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    p.add_argument("--seed", type=int, default=0, help="seed of the resampling tests and intervals")
    p.add_argument(
        "--interval",
        choices=("normal", "t", "bootstrap", "bca"),
        default=None,
        help="print each score's confidence interval of this kind (default: none)",
    )
    p.add_argument(
        "--ci-level",
        dest="level_ci",
        metavar="LEVEL",
        type=float,
        default=0.95,
        help="coverage of the interval (default 0.95)",
    )
    p.add_argument("--digits", type=int, default=4, help="decimals printed (default 4)")
    p.add_argument(
        "--missing",
        choices=("drop", "zero", "error"),
        default="zero",
        help="qrels queries absent from a run: zero (default, as compare), drop or error",
    )
    p.add_argument(
        "-f",
        "--format",
        choices=REPORT_FORMATS,
        default="markdown",
        help="markdown (default), latex, or the tidy frame as table, csv or json",
    )
    p.add_argument("--caption", default=None, help="latex: the caption (default: the note)")
    p.add_argument("--label", default=None, help="latex: the \\label of the table")
    _add_conventions(p)
    p.set_defaults(handler=cmd_report)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``polars-rankeval`` command."""
    parser = argparse.ArgumentParser(
        prog=PROG, description="Evaluate ranked retrieval runs, exact to trec_eval."
    )
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p_eval = sub.add_parser(
        "eval",
        help="score runs against qrels (trec_eval's flags and lines)",
        description=(
            "Score runs against qrels. With the default --format trec this is trec_eval: "
            "the same flags, the same lines. RUN may be - (standard input)."
        ),
    )
    _add_common(p_eval, runs="+")
    _add_measures(p_eval, "trec_eval's official set (trec format) or " + " ".join(DEFAULT_MEASURES))
    _add_trec_flags(p_eval)
    p_eval.add_argument(
        "--missing",
        choices=("drop", "zero", "error"),
        default=None,
        help=(
            "qrels queries absent from a run: drop (default; zero under --conventions "
            "ranx or ir_measures), zero (-c) or error"
        ),
    )
    p_eval.add_argument(
        "-f",
        "--format",
        choices=FORMATS,
        default="trec",
        help="trec (default: trec_eval's lines), or a table of canonical names",
    )
    _add_conventions(p_eval)
    p_eval.set_defaults(handler=cmd_eval)

    p_cmp = sub.add_parser("compare", help="paired significance tests between runs")
    _add_common(p_cmp, runs="+")
    _add_measures(p_cmp, " ".join(DEFAULT_MEASURES))
    p_cmp.add_argument(
        "--test",
        choices=tuple(TESTS),
        default="t",
        help="paired tests, or tukey / randomized_tukey over all systems at once (default t)",
    )
    p_cmp.add_argument(
        "--correction",
        choices=tuple(CORRECTIONS),
        default="none",
        help="p-value adjustment over the comparisons of a measure (default none)",
    )
    p_cmp.add_argument(
        "--baseline", default=None, help="system compared against (default: all pairs)"
    )
    p_cmp.add_argument(
        "--alpha", type=float, default=0.05, help="significance level (default 0.05)"
    )
    p_cmp.add_argument(
        "--seed", type=int, default=0, help="seed of randomization/bootstrap tests (default 0)"
    )
    p_cmp.add_argument(
        "--missing",
        choices=("drop", "zero", "error"),
        default="zero",
        help=(
            "qrels queries absent from a run: zero (default, trec_eval -c, so every run is "
            "paired on the same queries), drop or error"
        ),
    )
    p_cmp.add_argument(
        "-f", "--format", choices=FORMATS[1:], default="table", help="default: table"
    )
    _add_conventions(p_cmp)
    p_cmp.set_defaults(handler=cmd_compare)
    _add_report(sub)

    p_explain = sub.add_parser(
        "explain",
        help="why a measure differs between two tools' conventions, query by query",
        description=(
            "Score one measure under two conventions (presets: "
            + ", ".join(CONVENTIONS)
            + ") and name, for each query whose values differ, the choices that cause it; "
            "or (--per cause) how much each cause adds to the difference of the means."
        ),
    )
    p_explain.add_argument("qrels", help="qrels file (TREC 'qid iter docno rel', or .parquet/.csv)")
    p_explain.add_argument("runs", nargs=1, metavar="RUN", help="run file (TREC, or .parquet/.csv)")
    p_explain.add_argument(
        "-m",
        "--measure",
        required=True,
        action="append",
        metavar="MEASURE",
        help="a measure, e.g. ndcg@10; repeatable",
    )
    p_explain.add_argument(
        "--per",
        choices=("query", "cause"),
        default="query",
        help="one row per query (default), or per cause: its share of the difference of the means",
    )
    p_explain.add_argument(
        "--between",
        nargs=2,
        choices=tuple(CONVENTIONS),
        default=[DEFAULT, "ranx"],
        metavar="CONVENTIONS",
        help=f"two conventions ({', '.join(CONVENTIONS)}); default {DEFAULT} ranx",
    )
    p_explain.add_argument(
        "--differing", action="store_true", help="only the queries whose values differ"
    )
    p_explain.add_argument(
        "-f", "--format", choices=FORMATS[1:], default="table", help="default: table"
    )
    p_explain.set_defaults(handler=cmd_explain)

    p_curve = sub.add_parser("curve", help="precision-recall curves to a PNG, SVG or PDF file")
    _add_common(p_curve, runs="+")
    p_curve.add_argument(
        "-o", "--output", required=True, help="the file to write: .png, .svg or .pdf"
    )
    p_curve.add_argument(
        "--points", type=int, default=11, help="interpolated recall levels (default 11)"
    )
    p_curve.add_argument(
        "--raw", action="store_true", help="raw per-query curves instead of interpolated means"
    )
    p_curve.add_argument("--title", default=None, help="the plot's title")
    p_curve.set_defaults(handler=cmd_curve, depth=None)

    p_fuse = sub.add_parser(
        "fuse",
        help="fuse runs into one run (ranx's methods and normalisations)",
        description="Fuse runs into one run: RRF, CombSUM, weighted sums, Borda, ...",
    )
    p_fuse.add_argument("runs", nargs="+", metavar="RUN", help="run files (TREC, or .parquet/.csv)")
    _add_fusion(p_fuse)
    p_fuse.add_argument(
        "--weights", type=float, nargs="+", default=None, help="one weight per run, in order"
    )
    p_fuse.add_argument(
        "--param", action="append", default=[], metavar="NAME=VALUE",
        help="a method parameter, as k=60 (rrf), phi=0.8 (rbc), gamma=0.5 (gmnz)",
    )  # fmt: skip
    p_fuse.add_argument("--name", default="fused", help="the fused run's tag (default fused)")
    p_fuse.add_argument("--depth", type=int, default=None, help="fuse each run's top N only")
    p_fuse.add_argument(
        "--max-docs", type=int, default=None, help="keep the fused run's top N per query"
    )
    p_fuse.add_argument(
        "--doc-order", choices=("desc", "asc"), default="desc",
        help="equal scores by doc id descending (trec_eval, default) or ascending (trectools)",
    )  # fmt: skip
    p_fuse.add_argument(
        "-o", "--output", default=None,
        help="the fused run file: TREC, or Parquet for .parquet (default: stdout, TREC)",
    )  # fmt: skip
    p_fuse.set_defaults(handler=cmd_fuse)

    p_opt = sub.add_parser(
        "optimize-fusion",
        help="search the fusion parameters that score best on qrels (ranx's grids)",
    )
    p_opt.add_argument("qrels", help="qrels file (TREC 'qid iter docno rel', or .parquet/.csv)")
    p_opt.add_argument("runs", nargs="+", metavar="RUN", help="run files (TREC, or .parquet/.csv)")
    _add_fusion(p_opt)
    p_opt.add_argument("--metric", default="nDCG@10", help="the measure to maximise (nDCG@10)")
    p_opt.add_argument("--step", type=float, default=None, help="the grid's step (ranx's default)")
    p_opt.set_defaults(handler=cmd_optimize_fusion)
    return parser


_PYTHON_ADVICE = "; pass duplicates='keep_best' to keep the best-scored row"
"""Advice for Python callers that the command line has no flag for."""


def _one_line(exc: BaseException | str) -> str:
    text = str(exc).strip() or type(exc).__name__
    first = text.split("\n\n")[0].replace(_PYTHON_ADVICE, "")
    return " ".join(first.split())


def load_measures_from(sources: Sequence[str]) -> None:
    """Run each Python file (a path ending in ``.py``) or import each module of
    ``sources``: the measures they declare with :func:`polars_rankeval.define_measure`
    are then known by name (``--measures-from``)."""
    for source in sources:
        if source.endswith(".py") or Path(source).is_file():
            if not Path(source).is_file():
                msg = f"--measures-from {source}: no such file."
                raise FileNotFoundError(msg)
            runpy.run_path(source, run_name=f"polars_rankeval_measures_{Path(source).stem}")
        else:
            importlib.import_module(source)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 error, 2 usage)."""
    args = build_parser().parse_args(argv)
    stdin = _STDIN.set(None)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            load_measures_from(getattr(args, "measures_from", []))
            out, encoding = _handled(args, caught)
        for w in caught:
            note = _one_line(w.message).split(" pr.coverage(")[0]
            print(f"{PROG}: note: {note}", file=sys.stderr)
        _write(out, encoding)
    except BrokenPipeError:
        sys.stderr = io.StringIO()
        return 0
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # one line, never a traceback
        print(f"{PROG}: error: {_one_line(exc)}", file=sys.stderr)
        return 1
    finally:
        _STDIN.reset(stdin)
    return 0


def _handled(
    args: argparse.Namespace, caught: list[warnings.WarningMessage]
) -> tuple[str, Encoding]:
    """The command's output and the encoding of its ids: when a TREC text input is not
    UTF-8, every input is read again byte by byte (``latin-1``), as trec_eval reads
    them, so that ids match, order and print as their bytes do."""
    try:
        return args.handler(args), "utf-8"
    except NotUtf8Error:
        caught.clear()
        token = ENCODING.set("latin-1")
        try:
            out = args.handler(args)
        finally:
            ENCODING.reset(token)
        return out, "latin-1" if _prints_trec_lines(args) else "utf-8"


def _prints_trec_lines(args: argparse.Namespace) -> bool:
    """Whether the command prints trec_eval's lines or a run's lines (``eval`` in its
    trec format, ``fuse``), whose ids go back as their bytes; the tables, CSV, JSON
    and Markdown are UTF-8 text."""
    if args.handler is cmd_fuse:
        return True
    return args.handler is cmd_eval and args.format == "trec"


def _write(out: str, encoding: Encoding) -> None:
    """``out`` on standard output: UTF-8 text, or, for ids read byte by byte, each
    character back as its byte (the rest of trec_eval's lines is ASCII)."""
    if encoding == "latin-1":
        try:
            data = out.encode("latin-1")
        except UnicodeEncodeError:  # a table input held characters past U+00FF
            data = out.encode("utf-8")
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
    else:
        sys.stdout.write(out)
    sys.stdout.flush()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
