"""The ``polars-rankeval`` command line: ``eval``, ``compare`` and ``curve``.

Run files are TREC runs (``qid Q0 docno rank score tag``, plain or gzip), or
Parquet/CSV tables with ``query, doc, score`` (and optionally ``system``)
columns; qrels are TREC qrels (``qid iter docno rel``) or Parquet/CSV tables with
``query, doc, relevance``. Every run given is scored in one Polars plan.

Each run is named by its tag (the ``system`` column). When two run files use the
same tag, every run is named by its file name instead (``file:tag`` when a file
holds several tags), so systems stay apart.

``--format trec`` prints trec_eval's lines, ``measure<TAB>query<TAB>value``
with the measure name left-aligned in 22 characters and four decimals, then a
``runid`` line and one ``all`` line per measure holding the mean over queries
(combined as trec_eval does: the geometric mean for ``GMAP``, the sum for the
count measures such as ``NumRet``, which are printed as integers). The measure
is printed as the user typed it: ``-m map`` prints ``map`` lines, ``-m AP``
prints ``AP`` lines. The other formats use canonical names as column headers.

Errors are printed as one line on stderr, ``polars-rankeval: error: ...``, with
exit status 1 (2 for a malformed command line); notes, such as run queries that
have no qrels, are printed as ``polars-rankeval: note: ...``.
"""

from __future__ import annotations

import argparse
import io
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from polars_rankeval.evaluate import evaluate, mean_scores
from polars_rankeval.io import read_trec_qrels, read_trec_run
from polars_rankeval.measures import Measure, aggregate_kind, parse

PROG = "polars-rankeval"
DEFAULT_MEASURES = ("AP", "P@10", "nDCG@10", "RR", "R@1000")
FORMATS = ("trec", "table", "csv", "json", "markdown")
_TABLE_SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv"}


class CommandError(Exception):
    """An error the command reports as one line (bad input, bad option value)."""


# --------------------------------------------------------------------------- inputs


def _table_kind(path: Path) -> str | None:
    return _TABLE_SUFFIXES.get(path.suffix.lower())


def _read_table(path: Path, kind: str) -> pl.DataFrame:
    ids = {"query": pl.String, "doc": pl.String}
    if kind == "parquet":
        return pl.read_parquet(path)
    return pl.read_csv(path, schema_overrides=ids)


def read_qrels(path: str | Path) -> pl.DataFrame:
    """Qrels from a TREC qrels file, or a Parquet/CSV table with ``query, doc, relevance``."""
    path = Path(path)
    kind = _table_kind(path)
    return read_trec_qrels(path) if kind is None else _read_table(path, kind)


def read_run(path: str | Path) -> pl.DataFrame:
    """A run from a TREC run file, or a Parquet/CSV table; ``system`` is always present.

    A table without a ``system`` column is named by its file name.
    """
    path = Path(path)
    kind = _table_kind(path)
    run = read_trec_run(path) if kind is None else _read_table(path, kind)
    if "system" not in run.columns:
        run = run.with_columns(system=pl.lit(path.name))
    return run.with_columns(pl.col("system").cast(pl.String))


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


def load_inputs(qrels: str, runs: Sequence[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Read the qrels and every run (one frame, ``system`` telling runs apart)."""
    return combine_runs([(r, read_run(r)) for r in runs]), read_qrels(qrels)


def parse_measure_args(names: Sequence[str] | None) -> dict[Measure, str]:
    """Each distinct measure with the name it was first typed as (for trec output)."""
    typed: dict[Measure, str] = {}
    for name in names or DEFAULT_MEASURES:
        measure = parse(name)
        typed.setdefault(measure, name.strip())
    return typed


# --------------------------------------------------------------------------- output


def _trec_value(value: float | None, *, count: bool) -> str:
    if value is None:
        return "nan"
    return str(round(value)) if count else f"{value:.4f}"


def trec_lines(
    per_query: pl.DataFrame, measures: dict[Measure, str], *, show_queries: bool
) -> list[str]:
    """trec_eval's output lines for per-query results of one or more systems.

    The ``all`` line combines the queries as trec_eval does
    (:func:`polars_rankeval.mean_scores`): the mean, the geometric mean for
    ``GMAP``, the sum for the counts, which are printed as integers.

    Examples
    --------
    >>> import polars as pl
    >>> pq = pl.DataFrame({"system": ["s", "s"], "query": ["1", "2"], "AP": [0.5, 0.25]})
    >>> print("\\n".join(trec_lines(pq, {parse("map"): "map"}, show_queries=True)))
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
    config = {
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


def _eval_options(args: argparse.Namespace) -> dict[str, object]:
    return {"rel_level": args.level, "missing": args.missing, "depth": args.depth}


def cmd_eval(args: argparse.Namespace) -> str:
    """``eval``: per-query values or means, in the chosen format."""
    run, qrels = load_inputs(args.qrels, args.runs)
    measures = parse_measure_args(args.measure)
    per_query = evaluate(run, qrels, list(measures), **_eval_options(args))
    if args.format == "trec":
        return "\n".join(trec_lines(per_query, measures, show_queries=args.per_query)) + "\n"
    if not args.per_query:
        per_query = evaluate(run, qrels, list(measures), per_query=False, **_eval_options(args))
    return format_frame(per_query, args.format)


def cmd_compare(args: argparse.Namespace) -> str:
    """``compare``: paired tests between the runs, one row per measure and pair."""
    from polars_rankeval.compare import compare

    run, qrels = load_inputs(args.qrels, args.runs)
    measures = parse_measure_args(args.measure)
    n_systems = run["system"].n_unique()
    if n_systems < 2:
        msg = f"compare needs at least two runs; got {n_systems} system in {', '.join(args.runs)}"
        raise CommandError(msg)
    per_query = evaluate(run, qrels, list(measures), **_eval_options(args))
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


def cmd_curve(args: argparse.Namespace) -> str:
    """``curve``: precision-recall curves of every run, drawn to a PNG file."""
    from polars_rankeval.plots import plot_pr_curves

    run, qrels = load_inputs(args.qrels, args.runs)
    points = None if args.raw else args.points
    path = plot_pr_curves(
        run, qrels, args.output, points=points, rel_level=args.level, title=args.title
    )
    return f"wrote {path}\n"


# --------------------------------------------------------------------------- parser


def _add_common(parser: argparse.ArgumentParser, *, runs: str) -> None:
    parser.add_argument("qrels", help="qrels file (TREC 'qid iter docno rel', or .parquet/.csv)")
    parser.add_argument("runs", nargs=runs, metavar="RUN", help="run file(s) (TREC or .parquet)")
    parser.add_argument(
        "-l",
        "--level",
        type=int,
        default=1,
        help="minimum grade that counts as relevant (trec_eval -l; default 1)",
    )


def _add_measures(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-m",
        "--measure",
        action="append",
        metavar="MEASURE",
        help=(
            "measure, repeatable: canonical (AP, P@10, nDCG@10), trec_eval (map, P_10, "
            f"ndcg_cut_10) or ranx (mrr) names; default {' '.join(DEFAULT_MEASURES)}"
        ),
    )
    parser.add_argument(
        "-M", "--depth", type=int, default=None, help="only the top N documents (trec_eval -M)"
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``polars-rankeval`` command."""
    parser = argparse.ArgumentParser(
        prog=PROG, description="Evaluate ranked retrieval runs, exact to trec_eval."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p_eval = sub.add_parser("eval", help="score runs against qrels")
    _add_common(p_eval, runs="+")
    _add_measures(p_eval)
    p_eval.add_argument(
        "-q", "--per-query", action="store_true", help="one value per query (trec_eval -q)"
    )
    p_eval.add_argument(
        "--missing",
        choices=("drop", "zero", "error"),
        default="drop",
        help="qrels queries absent from a run: drop (default), zero (trec_eval -c) or error",
    )
    p_eval.add_argument("-f", "--format", choices=FORMATS, default="trec", help="default: trec")
    p_eval.set_defaults(handler=cmd_eval)

    p_cmp = sub.add_parser("compare", help="paired significance tests between runs")
    _add_common(p_cmp, runs="+")
    _add_measures(p_cmp)
    p_cmp.add_argument(
        "--test", choices=("t", "wilcoxon", "randomization", "bootstrap"), default="t"
    )
    p_cmp.add_argument("--correction", choices=("none", "bonferroni", "holm"), default="none")
    p_cmp.add_argument(
        "--baseline", default=None, help="system compared against (default: all pairs)"
    )
    p_cmp.add_argument("--alpha", type=float, default=0.05)
    p_cmp.add_argument("--seed", type=int, default=0, help="seed of randomization/bootstrap tests")
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
    p_cmp.set_defaults(handler=cmd_compare)

    p_curve = sub.add_parser("curve", help="precision-recall curves to a PNG file")
    _add_common(p_curve, runs="+")
    p_curve.add_argument("-o", "--output", required=True, help="the PNG file to write")
    p_curve.add_argument(
        "--points", type=int, default=11, help="interpolated recall levels (default 11)"
    )
    p_curve.add_argument(
        "--raw", action="store_true", help="raw per-query curves instead of interpolated means"
    )
    p_curve.add_argument("--title", default=None)
    p_curve.set_defaults(handler=cmd_curve, depth=None)
    return parser


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    first = text.split("\n\n")[0]
    return " ".join(first.split())


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 error, 2 usage)."""
    args = build_parser().parse_args(argv)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = args.handler(args)
        for w in caught:
            print(f"{PROG}: note: {_one_line(w.message)}", file=sys.stderr)  # type: ignore[arg-type]
        sys.stdout.write(out)
        sys.stdout.flush()
    except BrokenPipeError:
        sys.stderr = io.StringIO()
        return 0
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # one line, never a traceback
        print(f"{PROG}: error: {_one_line(exc)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
