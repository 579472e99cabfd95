"""trec_eval's output, line for line: what ``polars-rankeval eval`` prints by default.

:func:`trec_request` reads ``-m`` arguments as trec_eval does (nicknames,
parameters after a dot, the first parameters given for a measure win, lines
in trec_eval's measure order) and also takes the library's own names
(``nDCG@10``, ``ERR@20``); :func:`trec_lines` scores one run and prints
trec_eval's lines: per-query lines under ``-q``, then ``runid``, ``num_q`` and
one ``all`` line per measure (the mean added in query order as trec_eval adds
it, the sum for counts, the geometric mean for ``gm_map`` and ``gm_bpref``),
each ``%-22s\\t%s\\t%6.4f``.

The differences between trec_eval releases come from
:mod:`polars_rankeval.conventions`; the tables of names from
:mod:`polars_rankeval.trec_names`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from polars_rankeval import trec_names as tn
from polars_rankeval._typing import Aggregate, Rounding
from polars_rankeval.conventions import Conventions
from polars_rankeval.engine.outcome import UnscoredQueriesWarning
from polars_rankeval.evaluate import evaluate
from polars_rankeval.measures import Measure, parse, parse_measures
from polars_rankeval.metrics.iprec import ELEVEN_POINTS as RECALL
from polars_rankeval.metrics.trec_rbp import TREC_P
from polars_rankeval.ranking import judge


@dataclass(frozen=True)
class Line:
    """One measure line of trec_eval's output: the name printed, how, and its measure."""

    name: str
    output: tn.Output
    measure: Measure | None = None
    length: int = 0
    """relstring: how many ranks it shows."""


@dataclass(frozen=True)
class TrecOptions:
    """trec_eval's flags that change what is scored or printed."""

    conventions: Conventions
    per_query: bool = False  # -q
    complete: bool = False  # -c
    rel_level: int = 1  # -l
    summary: bool = True  # not -n
    depth: int | None = None  # -M
    judged_only: bool = False  # -J
    num_docs: int | None = None  # -N
    debug_query: str | None = None  # -D level.qid
    zscores: dict[str, dict[str, tuple[float, float]]] | None = field(default=None, repr=False)
    """-Z: per query, per line name, the (mean, standard deviation) to convert to."""


MISSING_ZSCORE = -1000000.0
"""What trec_eval prints for a value without a mean and deviation in the -Z file."""


def read_zscores(path: str | Path) -> dict[str, dict[str, tuple[float, float]]]:
    """A -Z file: lines ``qid measure mean std_dev``, read as trec_eval reads it.

    Examples
    --------
    >>> import tempfile
    >>> f = Path(tempfile.mkdtemp()) / "z"
    >>> _ = f.write_text("301 map 0.25 0.1\\n301  P_5\\t.3 0\\n")
    >>> read_zscores(f)
    {'301': {'map': (0.25, 0.1), 'P_5': (0.3, 0.0)}}
    """
    out: dict[str, dict[str, tuple[float, float]]] = {}
    text = Path(path).read_text()
    if not text.strip():
        msg = f"{path}: no data lines (the -Z file is empty)"
        raise ValueError(msg)
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if len(fields) != 4:
            msg = f"{path}, line {number}: expected 4 fields (qid measure mean std_dev): {line!r}"
            raise ValueError(msg)
        qid, name, mean, std = fields
        out.setdefault(qid, {})[name] = (tn.atof(mean), tn.atof(std))
    return out


def _zscore(value: float, found: tuple[float, float] | None) -> float:
    """trec_eval's te_convert_to_zscore for one value."""
    if found is None:
        return MISSING_ZSCORE
    mean, std = found
    if std:
        return (value - mean) / std
    return 0.0 if value == mean else MISSING_ZSCORE


# The library's measures under trec_eval's names, for measures typed in the
# library's own dialect (-m AP@10 prints map_cut_10).
_PLAIN = {
    "NumRet": "num_ret", "NumRel": "num_rel", "NumRelRet": "num_rel_ret", "AP": "map",
    "GMAP": "gm_map", "Rprec": "Rprec", "Bpref": "bpref", "RR": "recip_rank",
    "infAP": "infAP", "GMBpref": "gm_bpref", "Utility": "utility", "IPrecAvg": "11pt_avg",
    "binG": "binG", "G": "G", "nDCG": "ndcg", "nDCGRel": "ndcg_rel", "Rndcg": "Rndcg",
    "SetP": "set_P", "SetRelP": "set_relative_P", "SetR": "set_recall", "SetAP": "set_map",
    "SetF": "set_F", "NumNonRelJudgedRet": "num_nonrel_judged_ret", "TrecRBP": "rbp",
    "TrecRBPResid": "rbp_resid",
}  # fmt: skip
_CUTOFF = {
    "P": "P", "R": "recall", "AP": "map_cut", "nDCG": "ndcg_cut", "RelP": "relative_P",
    "Success": "success", "Unjudged": "unj", "IPrec": "iprec_at_recall",
}  # fmt: skip


def trec_name(measure: Measure) -> str | None:
    """trec_eval's line name of a measure at trec_eval's settings, or None.

    Examples
    --------
    >>> trec_name(parse("AP@10")), trec_name(parse("IPrec@0.5")), trec_name(parse("ERR@10"))
    ('map_cut_10', 'iprec_at_recall_0.50', None)
    """
    if measure.name == "Rprec" and measure.cutoff is None and len(measure.params) == 1:
        mult = measure.get("mult")
        return None if mult is None else tn.line_names(tn.MEASURES["Rprec_mult"], (mult,), None)[0]
    if measure.params:
        return None
    if measure.cutoff is None:
        return _PLAIN.get(measure.name)
    family = _CUTOFF.get(measure.name)
    if family is None:
        return None
    return tn.line_names(tn.MEASURES[family], (measure.cutoff,), None)[0]


def _family_of(line_name: str) -> str:
    """The trec_eval measure a line name belongs to (``P_10`` -> ``P``)."""
    if line_name in tn.MEASURES:
        return line_name
    return max((m for m in tn.MEASURES if line_name.startswith(m + "_")), key=len)


def _output(measure: Measure) -> tn.Output:
    outputs: dict[Aggregate, tn.Output] = {"mean": "float", "sum": "int", "gmean": "summary"}
    return outputs[measure.family.aggregate]


def _with_n_docs(canonical: str, num_docs: int | None) -> str:
    """Utility with trec_eval's -N (the number of documents in the collection)."""
    if num_docs is None or not canonical.startswith("Utility"):
        return canonical
    inner = canonical[len("Utility(") : -1] if canonical.endswith(")") else ""
    return f"Utility({inner + ',' if inner else ''}n_docs={num_docs})"


def _note_misread(arg: str, measure: tn.TrecMeasure, text: str) -> None:
    """Warn when trec_eval reads a parameter as another number (``-m P.1O`` is ``P.1``):
    the lines stay trec_eval's, the command line prints the warning as a note.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _note_misread("P.1O", tn.MEASURES["P"], "1O")
    >>> print(caught[0].message)
    -m P.1O read as P.1 (trec_eval reads '1O' as 1)
    """
    read, wrong = tn.misread(measure, text)
    if wrong:
        how = ", ".join(f"{item!r} as {number}" for item, number in wrong)
        warnings.warn(
            f"-m {arg} read as {measure.name}.{read} (trec_eval reads {how})", stacklevel=3
        )


def trec_request(
    args: Sequence[str] | None, conventions: Conventions, *, num_docs: int | None = None
) -> list[Line]:
    """The lines ``-m`` arguments ask for, in trec_eval's order (default: ``official``).

    A trec_eval name or nickname (exact case, split at the first dot) is read
    as trec_eval reads it: the first parameters given for a measure win,
    cutoffs are sorted, and lines follow trec_eval's measure list. Any other
    name is read by :func:`polars_rankeval.parse_measures` (``nDCG@10``,
    ``ERR@20``): printed under trec_eval's name when trec_eval has that
    measure, at its place, else under its canonical name after the others.

    Examples
    --------
    >>> from polars_rankeval.conventions import get_conventions
    >>> [x.name for x in trec_request(["P.10,5", "map", "P.7"], get_conventions())]
    ['map', 'P_5', 'P_10']
    >>> [x.name for x in trec_request(["ndcg@5", "ERR@10", "ndcg_cut.10"], get_conventions())]
    ['ndcg_cut_5', 'ndcg_cut_10', 'ERR@10']
    """
    order = conventions.measure_order
    marked: set[str] = set()
    texts: dict[str, str] = {}
    extra: list[Measure] = []
    for arg in args or ["official"]:
        name, text = tn.split_arg(arg)
        if name in conventions.nicknames:
            marked.update(conventions.nicknames[name])
        elif name in order:
            marked.add(name)
            if text is not None and name not in texts:
                texts[name] = text
                _note_misread(arg, tn.MEASURES[name], text)
        elif name in tn.MEASURES:
            msg = (
                f"-m {arg}: {name} is not a measure of trec_eval {conventions.version} "
                f"(it is new in trec_eval 10.0: use --conventions trec_eval-10)"
            )
            raise ValueError(msg)
        else:
            extra += parse_measures(arg, conventions=conventions)
    keyed: list[tuple[tuple[int, float, int], Line]] = []
    for position, name in enumerate(order):
        if name not in marked:
            continue
        trec = tn.MEASURES[name]
        if trec.build is None and trec.output not in tn.NOT_MEASURES:
            msg = f"-m {name}: trec_eval's {name} is not computed by polars-rankeval"
            raise ValueError(msg)
        text = texts.get(name) if trec.kind != "none" else None
        params = None if text is None else tn.parse_params(trec, text)
        names = tn.line_names(trec, params, text)
        if trec.output in tn.NOT_MEASURES:
            length = int((params or trec.default or (0,))[0])
            keyed.append(((position, 0.0, 0), Line(names[0], trec.output, length=length)))
            continue
        values = trec.default if params is None else params
        for i, (line, canonical) in enumerate(zip(names, trec.canonical(params), strict=True)):
            measure = parse(_with_n_docs(canonical, num_docs))
            sub = float(values[i]) if trec.kind in ("cutoffs", "levels") else float(i)
            keyed.append(((position, sub, 0), Line(line, trec.output, measure)))
    seen = {x.measure for _, x in keyed}
    for i, measure in enumerate(dict.fromkeys(extra)):
        if measure in seen:
            continue
        line_name = trec_name(measure)
        if line_name is None:
            keyed.append(((len(order), float(i), 0), Line(str(measure), _output(measure), measure)))
            continue
        family = tn.MEASURES[_family_of(line_name)]
        sub = float(measure.cutoff if measure.cutoff is not None else measure.get("mult", 0.0))
        keyed.append(((order.index(family.name), sub, 1), Line(line_name, family.output, measure)))
    keyed.sort(key=lambda item: item[0])
    return [line for _, line in keyed]


def _trec_order(queries: Sequence[str]) -> list[str]:
    """Query ids in trec_eval's order: ``strcmp``, byte by byte (UTF-8)."""
    return sorted(queries, key=lambda q: q.encode())


def _relstrings(run: pl.DataFrame, qrels: pl.DataFrame, depth: int | None, n: int) -> dict:
    """relstring per query: one character per rank of the top n (trec_eval's m_relstring)."""
    judged = judge(run, qrels, depth=depth, system=None).filter(pl.col("rank") <= n)
    grade = pl.col("relevance")
    char = (
        pl.when(grade.is_null())
        .then(pl.lit("-"))
        .when(grade < 0)
        .then(pl.lit("."))
        .when(grade > 9)
        .then(pl.lit(">"))
        .otherwise(grade.cast(pl.String))
    )
    strings = (
        judged.sort("query", "rank").group_by("query", maintain_order=True).agg(char.str.join())
    )
    return dict(strings.iter_rows())


def _float_scores(run: pl.DataFrame) -> pl.DataFrame:
    """Scores as trec_eval 9.x holds them: C floats (single precision)."""
    return run.with_columns(pl.col("score").cast(pl.Float32).cast(pl.Float64))


def _judged_only(run: pl.DataFrame, qrels: pl.DataFrame, depth: int | None) -> pl.DataFrame:
    """-J: the run without its unjudged documents, after -M has cut it.

    trec_eval cuts each ranking at ``-M`` first, then removes the documents
    that have no qrels row or a negative grade; the rest keep their order.
    """
    system = "system" if "system" in run.columns else None
    keys = [*([system] if system else []), "query", "doc"]
    judged = judge(run, qrels, depth=depth, system=system)
    kept = judged.filter(pl.col("rank").is_not_null() & (pl.col("relevance") >= 0))
    return run.join(kept.select(keys), on=keys, how="semi", maintain_order="left")


def prepare_run(
    run: pl.DataFrame, qrels: pl.DataFrame, opts: TrecOptions
) -> tuple[pl.DataFrame, pl.DataFrame, int | None]:
    """(run, qrels, depth) after ``-D level.qid``, 9.x's float scores and ``-J``.

    With ``-J`` the run is already cut at ``-M``, so the depth returned is None.
    """
    if opts.debug_query is not None:
        run = run.filter(pl.col("query") == opts.debug_query)
        qrels = qrels.filter(pl.col("query") == opts.debug_query)
    if opts.conventions.score_precision == "float32":
        run = _float_scores(run)
    if opts.judged_only:
        return _judged_only(run, qrels, opts.depth), qrels, None
    return run, qrels, opts.depth


def _values(line: Line, rows: dict, queries: Sequence[str]) -> list[float]:
    return [rows[q][line.name] for q in queries]


def _number(value: float) -> str:
    """``%6.4f`` as C prints it; NaN (0/0 in trec_eval) prints as ``-nan``."""
    return "  -nan" if value != value else f"{value:6.4f}"


def _relevant_counts(qrels: pl.DataFrame, rel_level: int) -> dict[str, int]:
    """|R| per qrels query."""
    counts = qrels.group_by("query").agg((pl.col("relevance") >= rel_level).sum().alias("n"))
    return dict(counts.iter_rows())


def _recall_rank(level: float, n_rel: int, rounding: Rounding) -> int:
    """How many relevant documents a recall level stands for (trec_eval's cutoffs)."""
    if rounding == "v9":
        return int(level * n_rel + 0.9)
    x = level * n_rel
    whole = math.floor(x)
    return whole + 1 if x - whole >= 0.5 else whole  # C lround, for x >= 0


def _empty_ranking(line: Line, value: float, n_rel: int, rounding: Rounding) -> float:
    """A value of a ranking that -J or -M0 emptied: trec_eval divides 0 by 0 in iprec_at_recall
    and 11pt_avg at the recall levels that stand for no relevant document."""
    measure = line.measure
    if measure is None or measure.name not in ("IPrec", "IPrecAvg"):
        return value
    rounding = measure.get("rounding", rounding)
    levels = [measure.cutoff] if measure.name == "IPrec" else measure.get("levels", RECALL)
    nan = any(_recall_rank(x, n_rel, rounding) == 0 for x in levels if x is not None)
    return math.nan if nan else value


def _bogus_ranking(line: Line, value: float | str | None, n_rel: int) -> float | str | None:
    """trec_eval 10.0 -c: the value of a qrels query the run lacks.

    10.0 scores such a query on a one-document ranking of an unjudged
    document, then sets num_ret, unj_*, and the lines named exactly
    ``utility``, ``rbp_resid`` and ``relstring`` back to nothing. A line with
    parameters in its name (``utility_1,-1,0,0.5``) keeps the one-document
    value. Every other measure is 0 on both rankings. (With -J the document
    is dropped: the ranking is empty, see :func:`_empty_ranking`.)
    """
    measure = line.measure
    if line.output == "relstring":
        return "" if line.name == "relstring" else "-"[: line.length]
    if measure is None or line.name in ("utility", "rbp_resid"):
        return 0.0 if measure is not None and measure.name == "Utility" else value
    if measure.name == "Utility":  # one non-relevant document retrieved
        b, d = measure.get("b", -1.0), measure.get("d", 0.0)
        c, n_docs = measure.get("c", 0.0), measure.get("n_docs", 0)
        return b + c * n_rel + d * (n_docs + 0 - 1 - n_rel)
    if measure.name == "TrecRBPResid":
        p = measure.get("p", TREC_P)
        return p + (1 - p) * 1.0
    return value


def trec_lines(
    run: pl.DataFrame, qrels: pl.DataFrame, runid: str, lines: Sequence[Line], opts: TrecOptions
) -> list[str]:
    """trec_eval's output lines for one run (``query, doc, score``) and its qrels.

    Examples
    --------
    >>> import polars as pl
    >>> from polars_rankeval.conventions import get_conventions
    >>> run = pl.DataFrame({"query": ["1", "1", "2"], "doc": ["a", "b", "a"],
    ...                     "score": [2.0, 1.0, 1.0]})
    >>> qrels = pl.DataFrame({"query": ["1", "2"], "doc": ["b", "c"], "relevance": [1, 1]})
    >>> opts = TrecOptions(get_conventions(), per_query=True)
    >>> lines = trec_request(["num_q", "map", "P.2"], opts.conventions)
    >>> print("\\n".join(trec_lines(run, qrels, "demo", lines, opts)))
    map                   \t1\t0.5000
    P_2                   \t1\t0.5000
    map                   \t2\t0.0000
    P_2                   \t2\t0.0000
    num_q                 \tall\t2
    map                   \tall\t0.2500
    P_2                   \tall\t0.2500
    """
    conv = opts.conventions
    all_qrels = qrels
    run = run.select("query", "doc", "score")
    in_run = set(run["query"].unique().to_list())
    run, qrels, depth = prepare_run(run, qrels, opts)
    in_qrels = set(qrels["query"].unique().to_list())
    if opts.debug_query is not None:
        in_run &= {opts.debug_query}
    scored = _trec_order(list(in_qrels & in_run))
    every = _trec_order(list(in_qrels)) if opts.complete else scored
    n_queries = all_qrels["query"].n_unique() if opts.complete else len(scored)
    # The queries whose values are printed and added up, in order: 10.0 scores the
    # qrels queries the run lacks (-c) on a stand-in ranking, 9.x adds zeros for them.
    counted = every if conv.complete_prints_absent else scored
    if not counted:
        msg = "no queries with both results and relevance info"
        raise ValueError(msg)
    absent = set(every) - set(scored)
    # -J can leave a ranking empty, -M0 leaves them all empty; then 10.0's -c stand-in
    # ranking is empty too
    cut_away = depth is not None and depth <= 0
    emptied = set(counted) if cut_away else set()
    if opts.judged_only:
        emptied = set(counted) - set(run["query"].unique())
    n_rel = _relevant_counts(qrels, opts.rel_level)

    measures = list(dict.fromkeys(x.measure for x in lines if x.measure is not None))
    rows: dict[str, dict] = {q: {} for q in counted}
    if measures:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnscoredQueriesWarning)  # trec_eval is silent
            per_query = evaluate(
                run,
                qrels,
                measures,
                rel_level=opts.rel_level,
                depth=depth,
                missing="zero",  # -J can empty a ranking; such queries are still scored
                system=None,
                conventions=conv,
            )
        by_query = {r["query"]: r for r in per_query.iter_rows(named=True)}
        for q in counted:
            rows[q] = {x.name: by_query[q][str(x.measure)] for x in lines if x.measure is not None}
    if any(x.output == "relstring" for x in lines):
        strings = _relstrings(run, qrels, depth, max(x.length for x in lines))
        for q in counted:
            rows[q] |= {
                x.name: strings.get(q, "")[: x.length] for x in lines if x.output == "relstring"
            }
    for q in emptied & set(counted):
        rows[q] = {x.name: _empty_ranking(x, rows[q][x.name], n_rel[q], conv.iprec_rounding)
                   for x in lines if x.name in rows[q]}  # fmt: skip
    stand_in = set() if opts.judged_only or cut_away else absent & set(counted)
    for q in stand_in:
        rows[q] |= {x.name: _bogus_ranking(x, rows[q].get(x.name), n_rel[q]) for x in lines}
    for q in absent & set(counted) - stand_in:  # -J -c: an empty ranking
        rows[q] |= {x.name: 0.0 for x in lines if x.name == "utility"}

    z = opts.zscores
    if z is not None:  # -Z: every value becomes (value - mean) / deviation, then adds up
        for q in counted:
            table = z.get(q)
            for x in lines:
                if x.output in ("float", "int", "summary"):
                    v = rows[q][x.name]
                    v = math.log(max(v, tn.MIN_GEO_MEAN)) if x.output == "summary" else v
                    rows[q][x.name] = _zscore(v, None if table is None else table.get(x.name))
    prefix = "" if z is None else "Z"
    out: list[str] = []
    if opts.per_query:
        for q in counted:
            for x in lines:
                name = f"{prefix}{x.name:<22}"
                if x.output == "float" or (x.output == "int" and z is not None):
                    out.append(f"{name}\t{q}\t{_number(rows[q][x.name])}")
                elif x.output == "int":
                    out.append(f"{name}\t{q}\t{int(rows[q][x.name])}")
                elif x.output == "relstring":
                    out.append(f"{x.name:<22}\t{q}\t'{rows[q][x.name]}'")
    if not opts.summary:
        return out
    missing = n_queries - len(counted)
    for x in lines:
        name = f"{prefix}{x.name:<22}"
        if x.output == "runid":
            out.append(f"{'runid':<22}\tall\t{runid}")
        elif x.output == "num_q":
            n = str(n_queries) if z is None else _number(n_queries)
            out.append(f"{prefix}{'num_q':<22}\tall\t{n}")
        elif x.output == "summary":
            values = _values(x, rows, counted)
            if z is not None:  # the logs were converted: exp of their mean
                total = sum_of(values) + missing * math.log(tn.MIN_GEO_MEAN)
                value = math.exp(total / n_queries) if n_queries else 0.0
            else:
                value = tn.geometric_mean_of(values, missing)
            out.append(f"{name}\tall\t{_number(value)}")
        elif x.output == "int":
            if opts.complete and x.measure is not None and x.measure.name == "NumRel":
                total = float((all_qrels["relevance"] > 0).sum())  # trec_eval ignores -l here
            else:
                total = sum_of(_values(x, rows, counted))
            out.append(f"{name}\tall\t{int(total) if z is None else _number(total)}")
        elif x.output == "float":
            total = sum_of(_values(x, rows, counted))
            out.append(f"{name}\tall\t{_number(total / n_queries if n_queries else total)}")
    return out


def sum_of(values: Sequence[float]) -> float:
    """The values added in order, as trec_eval accumulates them."""
    total = 0.0
    for v in values:
        total += v
    return total
