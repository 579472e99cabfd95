"""trec_eval's measure names as data: its measure list, nicknames and default parameters.

trec_eval knows its measures by a name (``P``, ``map``, ``ndcg_cut``), takes
parameters after a dot (``-m P.5,10``, ``-m ndcg.1=3,2=9``), prints one line per
measure and parameter value (``P_5``, ``ndcg_cut_10``, ``iprec_at_recall_0.50``)
and groups measures under nicknames (``official``, ``all_trec``, ``set``). This
module holds those tables, exactly as the C sources of trec_eval 10.0 and 9.0.8
have them (``measures.c``, and each ``m_*.c`` for its defaults), and the
translation of a trec_eval measure with its parameters into the library's
canonical measure names. It imports nothing from the library, so that the
parser (:mod:`polars_rankeval.measures`) and the conventions
(:mod:`polars_rankeval.conventions`) can both use it.

Examples
--------
>>> MEASURES["P"].default
(5, 10, 15, 20, 30, 100, 200, 500, 1000)
>>> expand("success")
['Success@1', 'Success@5', 'Success@10']
>>> expand("official")[:4]
['NumRet', 'NumRel', 'NumRelRet', 'AP']
>>> expand("map") is None  # a single measure: the parser reads it as it is
True
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

ParamKind = Literal["none", "cutoffs", "levels", "values", "pairs"]
"""How a trec_eval measure reads the text after the dot of ``-m name.params``.

* ``none``: takes no parameters (any text after the dot is ignored);
* ``cutoffs``: comma-separated integers (read with C's ``atol``), sorted, one
  line each, printed ``name_%ld`` (``P_10``);
* ``levels``: comma-separated numbers (C's ``atof``), sorted, one line each,
  printed ``name_%3.2f`` (``iprec_at_recall_0.50``, ``Rprec_mult_0.20``);
* ``values``: comma-separated numbers for one measure, printed
  ``name_<text as typed>`` (``utility_2,-1,0,0``, ``11pt_avg_.25,.5,.75``);
* ``pairs``: ``name=value`` pairs for one measure, printed the same way
  (``ndcg_1=3,2=9,4=4.5``, ``rbp_p=0.95``).
"""
Output = Literal["float", "int", "summary", "relstring", "runid", "num_q"]
"""How a measure's lines are printed.

``float``: one ``%6.4f`` line per query and the mean on the ``all`` line;
``int``: ``%ld`` lines and the sum; ``summary``: the ``all`` line only (the
geometric means ``gm_map``, ``gm_bpref``); ``relstring``: per query only;
``runid`` and ``num_q``: the ``all`` line only.
"""

CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
"""trec_eval's default cutoffs of P, recall, map_cut, ndcg_cut and relative_P."""
RECALL_LEVELS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
"""Default recall levels of iprec_at_recall and 11pt_avg."""
RPREC_MULTS = (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)
"""Default multiples of R of Rprec_mult."""
SUCCESS_CUTOFFS = (1, 5, 10)
UNJ_CUTOFFS = (5, 10, 20)
UTILITY = (1.0, -1.0, 0.0, 0.0)
RELSTRING_LENGTH = (10.0,)
SET_F_BETA = (1.0,)


def _fmt(value: float) -> str:
    """A number as the canonical parser reads it back exactly (``0.1``, ``5.0``)."""
    return repr(float(value))


def _gains(pairs: Sequence[tuple[str, float]]) -> str:
    """``grade=gain`` pairs whose name is an integer, as a canonical gains map.

    trec_eval skips pairs whose name is not an integer (``setup_gains``).
    """
    items = [(int(k), v) for k, v in pairs if re.fullmatch(r"[+-]?\d+", k)]
    return ";".join(f"{k}:{_fmt(v)}" for k, v in items)


def _with_gains(family: str) -> Callable[[Sequence[tuple[str, float]]], list[str]]:
    def build(pairs: Sequence[tuple[str, float]]) -> list[str]:
        gains = _gains(pairs)
        return [f"{family}(gains={gains})" if gains else family]

    return build


def _rbp(family: str) -> Callable[[Sequence[tuple[str, float]]], list[str]]:
    def build(pairs: Sequence[tuple[str, float]]) -> list[str]:
        p = [v for k, v in pairs if k == "p"]
        return [f"{family}(p={_fmt(p[-1])})" if p else family]

    return build


@dataclass(frozen=True)
class TrecMeasure:
    """One measure of trec_eval's list (``te_trec_measures`` in ``measures.c``).

    ``build`` turns the parameter values into canonical measure names (one per
    printed line, in order); None marks a measure the library does not compute
    (the preference and judgment-group measures, ``dcg``, ``yaap``) or a line
    that is not a measure (``runid``, ``num_q``, ``relstring``).
    """

    name: str
    build: Callable[..., list[str]] | None = None
    kind: ParamKind = "none"
    default: tuple = ()
    output: Output = "float"
    since: int = 9
    """The first trec_eval major version that has the measure (9 or 10)."""

    def canonical(self, params: Sequence | None = None) -> list[str]:
        """Canonical measure names for these parameter values (default: trec_eval's)."""
        if self.build is None:
            return []
        values = self.default if params is None else params
        if self.kind == "none":
            return self.build()
        if self.kind in ("cutoffs", "levels"):
            return [name for v in values for name in self.build(v)]
        return self.build(values)


def _one(text: str) -> Callable[[], list[str]]:
    return lambda: [text]


def _cut(pattern: str) -> Callable[[float], list[str]]:
    return lambda v: [pattern.format(v if isinstance(v, int) else _fmt(v))]


def _utility(values: Sequence[float]) -> list[str]:
    if len(values) < 4:
        msg = f"utility takes four coefficients (-m utility.a,b,c,d); got {len(values)}"
        raise ValueError(msg)
    a, b, c, d = (_fmt(v) for v in values[:4])
    return [f"Utility(a={a},b={b},c={c},d={d})"]


def _levels(values: Sequence[float]) -> list[str]:
    return [f"IPrecAvg(levels={';'.join(_fmt(v) for v in values)})"]


_TABLE: tuple[TrecMeasure, ...] = (
    TrecMeasure("runid", output="runid"),
    TrecMeasure("num_q", output="num_q"),
    TrecMeasure("num_ret", _one("NumRet"), output="int"),
    TrecMeasure("num_rel", _one("NumRel"), output="int"),
    TrecMeasure("num_rel_ret", _one("NumRelRet"), output="int"),
    TrecMeasure("map", _one("AP")),
    TrecMeasure("gm_map", _one("GMAP"), output="summary"),
    TrecMeasure("Rprec", _one("Rprec")),
    TrecMeasure("bpref", _one("Bpref")),
    TrecMeasure("recip_rank", _one("RR")),
    TrecMeasure("iprec_at_recall", _cut("IPrec@{}"), "levels", RECALL_LEVELS),
    TrecMeasure("P", _cut("P@{}"), "cutoffs", CUTOFFS),
    TrecMeasure("relstring", None, "values", RELSTRING_LENGTH, output="relstring"),
    TrecMeasure("recall", _cut("R@{}"), "cutoffs", CUTOFFS),
    TrecMeasure("infAP", _one("infAP")),
    TrecMeasure("gm_bpref", _one("GMBpref"), output="summary"),
    TrecMeasure("Rprec_mult", _cut("Rprec(mult={})"), "levels", RPREC_MULTS),
    TrecMeasure("utility", _utility, "values", UTILITY),
    TrecMeasure("11pt_avg", _levels, "values", RECALL_LEVELS),
    TrecMeasure("binG", _one("binG")),
    TrecMeasure("G", _with_gains("G"), "pairs"),
    TrecMeasure("dcg", None, "pairs", since=10),
    TrecMeasure("ideal_dcg", None, "pairs", since=10),
    TrecMeasure("ndcg", _with_gains("nDCG"), "pairs"),
    TrecMeasure("ndcg_rel", _with_gains("nDCGRel"), "pairs"),
    TrecMeasure("Rndcg", _with_gains("Rndcg"), "pairs"),
    TrecMeasure("ndcg_cut", _cut("nDCG@{}"), "cutoffs", CUTOFFS),
    TrecMeasure("map_cut", _cut("AP@{}"), "cutoffs", CUTOFFS),
    TrecMeasure("relative_P", _cut("RelP@{}"), "cutoffs", CUTOFFS),
    TrecMeasure("success", _cut("Success@{}"), "cutoffs", SUCCESS_CUTOFFS),
    TrecMeasure("set_P", _one("SetP")),
    TrecMeasure("set_relative_P", _one("SetRelP")),
    TrecMeasure("set_recall", _one("SetR")),
    TrecMeasure("set_map", _one("SetAP")),
    TrecMeasure("set_F", lambda v: [f"SetF(beta={_fmt(v[0])})"], "values", SET_F_BETA),
    TrecMeasure("num_nonrel_judged_ret", _one("NumNonRelJudgedRet"), output="int"),
    *(
        TrecMeasure(name, output="int" if "num_prefs" in name else "float")
        for name in (
            "prefs_num_prefs_poss",
            "prefs_num_prefs_ful",
            "prefs_num_prefs_ful_ret",
            "prefs_simp",
            "prefs_pair",
            "prefs_avgjg",
            "prefs_avgjg_Rnonrel",
            "prefs_simp_ret",
            "prefs_pair_ret",
            "prefs_avgjg_ret",
            "prefs_avgjg_Rnonrel_ret",
            "prefs_simp_imp",
            "prefs_pair_imp",
            "prefs_avgjg_imp",
            "map_avgjg",
        )
    ),
    TrecMeasure("P_avgjg", None, "cutoffs", CUTOFFS),
    TrecMeasure("Rprec_mult_avgjg", None, "levels", RPREC_MULTS),
    TrecMeasure("yaap"),
    TrecMeasure("rbp", _rbp("TrecRBP"), "pairs", since=10),
    TrecMeasure("rbp_resid", _rbp("TrecRBPResid"), "pairs", since=10),
    TrecMeasure("unj", _cut("Unjudged@{}"), "cutoffs", UNJ_CUTOFFS, since=10),
)
MEASURES: dict[str, TrecMeasure] = {m.name: m for m in _TABLE}
"""Every trec_eval measure by name, in trec_eval 10.0's order (the order of its lines)."""
ORDER_10 = tuple(m.name for m in _TABLE)
"""trec_eval 10.0's measure list (``te_trec_measures``): the order its lines are printed in."""
ORDER_9 = tuple(m.name for m in _TABLE if m.since <= 9)
"""trec_eval 9.x's measure list: 10.0's without dcg, ideal_dcg, rbp, rbp_resid and unj."""

OFFICIAL = (
    "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map",
    "Rprec", "bpref", "recip_rank", "iprec_at_recall", "P",
)  # fmt: skip
"""``-m official``, and what trec_eval prints when no ``-m`` is given."""
SET = (
    "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P",
    "set_recall", "set_relative_P", "set_map", "set_F",
)  # fmt: skip
ALL_TREC_9 = (
    "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map",
    "Rprec", "bpref", "recip_rank", "iprec_at_recall", "P", "relstring",
    "recall", "infAP", "gm_bpref",
    "utility", "11pt_avg", "ndcg", "relative_P", "Rprec_mult", "success",
    "map_cut", "ndcg_cut", "ndcg_rel", "Rndcg", "binG", "G",
    "set_P", "set_recall", "set_relative_P", "set_map", "set_F",
    "num_nonrel_judged_ret",
)  # fmt: skip
"""``-m all_trec`` of trec_eval 9.x."""
ALL_TREC_10 = (*ALL_TREC_9[:14], "unj", "rbp", "rbp_resid", *ALL_TREC_9[14:])
"""``-m all_trec`` of trec_eval 10.0: 9.x's plus unj, rbp and rbp_resid."""
ALL_PREFS = (
    "runid", "num_q", "prefs_num_prefs_poss", "prefs_num_prefs_ful",
    "prefs_num_prefs_ful_ret", "prefs_simp", "prefs_pair", "prefs_avgjg",
    "prefs_avgjg_Rnonrel", "prefs_simp_ret", "prefs_pair_ret", "prefs_avgjg_ret",
    "prefs_avgjg_Rnonrel_ret", "prefs_simp_imp", "prefs_pair_imp", "prefs_avgjg_imp",
)  # fmt: skip
PREFS = (
    "runid", "num_q", "prefs_num_prefs_poss", "prefs_num_prefs_ful",
    "prefs_num_prefs_ful_ret", "prefs_simp", "prefs_pair", "prefs_avgjg",
)  # fmt: skip
QRELS_JG = ("runid", "num_q", "map_avgjg", "P_avgjg", "Rprec_mult_avgjg")


def nicknames(all_trec: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """trec_eval's nickname table (``te_trec_measure_nicknames``) with a version's all_trec."""
    return {
        "official": OFFICIAL,
        "set": SET,
        "all_trec": all_trec,
        "all_prefs": ALL_PREFS,
        "prefs": PREFS,
        "qrels_jg": QRELS_JG,
    }


NICKNAMES_10 = nicknames(ALL_TREC_10)
NICKNAMES_9 = nicknames(ALL_TREC_9)
NOT_MEASURES = ("runid", "num_q", "relstring")
"""Lines trec_eval prints that are not per-query numbers (the command line prints them)."""


# --------------------------------------------------------------------------- C parsing

_ATOL = re.compile(r"\s*([+-]?\d+)")
_ATOF = re.compile(r"\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:inf|nan))", re.I)


def atol(text: str) -> int:
    """C's ``atol``: the leading integer of ``text``, 0 if there is none.

    >>> atol("23.4"), atol("x"), atol(" -5,")
    (23, 0, -5)
    """
    match = _ATOL.match(text)
    return int(match[1]) if match else 0


def atof(text: str) -> float:
    """C's ``atof``: the leading number of ``text``, 0.0 if there is none.

    >>> atof(".25"), atof("1e-1x"), atof("")
    (0.25, 0.1, 0.0)
    """
    match = _ATOF.match(text)
    return float(match[1]) if match else 0.0


def _read_number(item: str, kind: str) -> tuple[str, bool]:
    """How trec_eval reads one parameter (``atol`` for cutoffs, else ``atof``): the
    number's text and whether it took the whole item."""
    match = (_ATOL if kind == "cutoffs" else _ATOF).match(item)
    if match is None:
        return "0", item == ""
    value = int(match[1]) if kind == "cutoffs" else float(match[1])
    shown = str(value) if kind == "cutoffs" else f"{value:g}"
    return shown, match.end() == len(item) and not item[:1].isspace()


def misread(measure: TrecMeasure, text: str) -> tuple[str, list[tuple[str, str]]]:
    """The parameter text as trec_eval reads it, and the items it does not read whole.

    trec_eval reads each parameter with C's ``atol`` or ``atof``, which stop at the
    first character that is not part of a number: ``-m P.1O`` is ``P.1``. Each such
    item is given with the number read.

    >>> misread(MEASURES["P"], "5,1O")
    ('5,1', [('1O', '1')])
    >>> misread(MEASURES["ndcg"], "1=3x,2=9")
    ('1=3,2=9', [('3x', '3')])
    >>> misread(MEASURES["iprec_at_recall"], ".5,1.0")
    ('.5,1.0', [])
    """
    if measure.kind not in ("cutoffs", "levels", "values", "pairs"):
        return text, []
    read, wrong = [], []
    for item in text.split(","):
        key, eq, value = item.rpartition("=") if measure.kind == "pairs" else ("", "", item)
        number, whole = _read_number(value, measure.kind)
        if whole:
            read.append(item)
            continue
        wrong.append((value, number))
        read.append(f"{key}{eq}{number}")
    return ",".join(read), wrong


def split_arg(arg: str) -> tuple[str, str | None]:
    """``-m`` argument -> (name, parameter text or None), split at the first dot.

    >>> split_arg("iprec_at_recall..10,.5"), split_arg("map")
    (('iprec_at_recall', '.10,.5'), ('map', None))
    """
    name, dot, params = arg.partition(".")
    return (name, params) if dot else (name, None)


def parse_params(measure: TrecMeasure, text: str) -> tuple:
    """The parameter text of ``-m name.text`` read as trec_eval reads it.

    Cutoffs are read with ``atol`` and levels with ``atof``, sorted, and must
    be distinct (cutoffs also > 0); values are read with ``atof`` in order;
    pairs are ``name=value`` items.

    >>> parse_params(MEASURES["P"], "5,7,3"), parse_params(MEASURES["ndcg_cut"], "10,23.4")
    ((3, 5, 7), (10, 23))
    >>> parse_params(MEASURES["Rprec_mult"], "5.0,0.2,0.35")
    (0.2, 0.35, 5.0)
    >>> parse_params(MEASURES["rbp"], "p=0.95")
    (('p', 0.95),)
    """
    if text == "":
        msg = f"improper measure in parameter '{measure.name}': nothing after the dot"
        raise ValueError(msg)
    items = text.split(",")
    if measure.kind in ("cutoffs", "levels"):
        values = sorted(atol(x) if measure.kind == "cutoffs" else atof(x) for x in items)
        if measure.kind == "cutoffs" and values[0] <= 0:
            msg = f"-m {measure.name}.{text}: cutoffs must be > 0"
            raise ValueError(msg)
        if len(set(values)) < len(values):
            msg = f"-m {measure.name}.{text}: duplicate cutoffs"
            raise ValueError(msg)
        return tuple(values)
    if measure.kind == "values":
        return tuple(atof(x) for x in items)
    if measure.kind == "pairs":
        pairs = []
        for item in items:
            key, eq, value = item.partition("=")
            if not eq:
                msg = f"-m {measure.name}.{text}: malformed pair parameters (expected name=value)"
                raise ValueError(msg)
            pairs.append((key, atof(value)))
        return tuple(pairs)
    return ()


def line_names(measure: TrecMeasure, params: tuple | None, text: str | None) -> list[str]:
    """The names trec_eval prints for a measure: one per line, in order.

    ``params`` are from :func:`parse_params` (None: the defaults) and ``text``
    is the parameter text as typed (printed by the one-line measures).

    >>> line_names(MEASURES["P"], (3, 5), "5,3")
    ['P_3', 'P_5']
    >>> line_names(MEASURES["iprec_at_recall"], None, None)[:2]
    ['iprec_at_recall_0.00', 'iprec_at_recall_0.10']
    >>> line_names(MEASURES["11pt_avg"], (0.25, 0.5), ".25,.5")
    ['11pt_avg_.25,.5']
    """
    values = measure.default if params is None else params
    if measure.kind == "cutoffs":
        return [f"{measure.name}_{v}" for v in values]
    if measure.kind == "levels":
        # snprintf into strlen(name) + 10 bytes: at most len(name) + 9 characters
        return [f"{measure.name}_{v:3.2f}"[: len(measure.name) + 9] for v in values]
    if text is not None and measure.kind in ("values", "pairs"):
        return [f"{measure.name}_{text}"]
    return [measure.name]


# --------------------------------------------------------------------------- API names


def expand(
    text: str, nickname_table: Mapping[str, tuple[str, ...]] | None = None
) -> list[str] | None:
    """Canonical names a trec_eval nickname or a bare family name stands for.

    ``all_trec``, ``official``, ``set`` give the measures of that nickname
    (``nickname_table``: a version's; default trec_eval 10.0's) at trec_eval's
    default parameters, leaving out the lines that are not per-query numbers
    (``runid``, ``num_q``, ``relstring``). A family name that takes cutoffs
    (``P``, ``recall``, ``map_cut``, ``ndcg_cut``, ``relative_P``,
    ``success``, ``iprec_at_recall``, ``Rprec_mult``, ``unj``) gives one
    measure per default cutoff; ``rbp.p=0.95``, ``rbp_resid.p=0.95`` and
    ``unj.5,10`` give trec_eval 10's measures with those parameters. Anything
    else returns None: the parser reads it as it is.

    Examples
    --------
    >>> expand("P")[:3], len(expand("iprec_at_recall"))
    (['P@5', 'P@10', 'P@15'], 11)
    >>> expand("rbp.p=0.95"), expand("unj")
    (['TrecRBP(p=0.95)'], ['Unjudged@5', 'Unjudged@10', 'Unjudged@20'])
    >>> "TrecRBP" in expand("all_trec"), "TrecRBP" in expand("all_trec", NICKNAMES_9)
    (True, False)
    """
    table = NICKNAMES_10 if nickname_table is None else nickname_table
    if text in table:
        missing = [n for n in table[text] if n not in NOT_MEASURES and MEASURES[n].build is None]
        if missing:
            msg = (
                f"trec_eval's {text!r} measures ({', '.join(missing)}) read preference or "
                "judgment-group files, which polars_rankeval does not compute"
            )
            raise ValueError(msg)
        return [c for n in table[text] for c in MEASURES[n].canonical()]
    name, params = split_arg(text)
    if name in NOT_MEASURES:
        msg = (
            f"{name!r} is a line trec_eval prints, not a per-query number; "
            "the command line (polars-rankeval eval) prints it"
        )
        raise ValueError(msg)
    measure = MEASURES.get(name)
    if measure is None or measure.build is None:
        return None
    if params is None:
        return measure.canonical() if measure.kind in ("cutoffs", "levels") else None
    if name in ("rbp", "rbp_resid", "unj"):  # dotted forms the parser does not know
        return measure.canonical(parse_params(measure, params))
    return None


def mean_of(values: Sequence[float]) -> float:
    """trec_eval's mean: the values added in order, then divided by their count."""
    total = 0.0
    for v in values:
        total += v
    return total / len(values) if values else 0.0


MIN_GEO_MEAN = 0.00001


def geometric_mean_of(values: Sequence[float], n_missing: int = 0) -> float:
    """trec_eval's geometric mean: logs of max(v, 1e-5) added in order, then any
    missing queries' share (``-c`` in 9.x), then divided by the count."""
    total = 0.0
    for v in values:
        total += math.log(max(v, MIN_GEO_MEAN))
    n = len(values) + n_missing
    if n_missing:
        total += n_missing * math.log(MIN_GEO_MEAN)
    return math.exp(total / n) if n else 0.0
