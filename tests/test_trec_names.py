"""trec_eval's names in the API: nicknames, family defaults, its 10.0 measures, conventions."""

from __future__ import annotations

import polars as pl
import pytest

import polars_rankeval as pr
from polars_rankeval import trec_names as tn
from polars_rankeval.conventions import CONVENTIONS, get_conventions
from polars_rankeval.metrics.trec_rbp import trec_rbp, trec_rbp_residual
from polars_rankeval.metrics.unjudged import unjudged_at
from polars_rankeval.trec_report import trec_name, trec_request


def names(measures: str | list[str], **kw: str) -> list[str]:
    return [str(m) for m in pr.parse_measures(measures, **kw)]


@pytest.mark.parametrize(
    ("family", "expected"),
    [
        ("P", [f"P@{k}" for k in tn.CUTOFFS]),
        ("recall", [f"R@{k}" for k in tn.CUTOFFS]),
        ("map_cut", [f"AP@{k}" for k in tn.CUTOFFS]),
        ("ndcg_cut", [f"nDCG@{k}" for k in tn.CUTOFFS]),
        ("relative_P", [f"RelP@{k}" for k in tn.CUTOFFS]),
        ("success", ["Success@1", "Success@5", "Success@10"]),
        ("unj", ["Unjudged@5", "Unjudged@10", "Unjudged@20"]),
        ("iprec_at_recall", [f"IPrec@{x / 10}" for x in range(11)]),
        ("Rprec_mult", [f"Rprec(mult={x / 5})" for x in range(1, 11)]),
    ],
)
def test_family_alone_means_trec_eval_default_parameters(family: str, expected: list[str]) -> None:
    assert names(family) == expected
    with pytest.raises(ValueError, match=f"stands for {len(expected)} measures"):
        pr.parse(family)


def test_nicknames_per_version() -> None:
    official = names("official")
    assert official[:8] == ["NumRet", "NumRel", "NumRelRet", "AP", "GMAP", "Rprec", "Bpref", "RR"]
    assert len(official) == 8 + 11 + 9
    ten, nine = names("all_trec"), names("all_trec", conventions="trec_eval-9")
    assert set(ten) - set(nine) == {
        "TrecRBP",
        "TrecRBPResid",
        *(f"Unjudged@{k}" for k in (5, 10, 20)),
    }
    assert len(ten) == 97  # trec_eval 10.0 prints 99 all lines: these, runid and num_q
    assert names("set") == ["NumRet", "NumRel", "NumRelRet", "Utility", "SetP", "SetR", "SetRelP",
                            "SetAP", "SetF"]  # fmt: skip
    assert get_conventions("trec_eval-9").all_trec == tn.ALL_TREC_9


def test_nicknames_in_evaluate() -> None:
    run = pl.DataFrame({"query": ["q"] * 3, "doc": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
    qrels = pl.DataFrame({"query": ["q", "q"], "doc": ["b", "z"], "relevance": [1, 2]})
    out = pr.evaluate(run, qrels, ["official"])
    assert out.columns == ["query", *names("official")]
    assert out["AP"].item() == pytest.approx((1 / 2) / 2)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("relstring", "a line trec_eval prints"),
        ("runid", "a line trec_eval prints"),
        ("all_prefs", "preference or judgment-group"),
    ],
)
def test_lines_that_are_not_measures_are_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        pr.parse_measures(text)


def test_rbp_names_mean_trec_eval_10() -> None:
    assert str(pr.parse("rbp")) == "TrecRBP"
    assert str(pr.parse("rbp_resid")) == "TrecRBPResid"
    assert names("rbp.p=0.95") == ["TrecRBP(p=0.95)"]
    assert names("unj.3,7") == ["Unjudged@3", "Unjudged@7"]
    assert str(pr.parse("unj_10")) == "Unjudged@10"
    binary = pr.parse("RBP")  # the binary variant keeps its canonical name
    assert binary.family.name == "RBP" and binary.get("p", 0.8) == 0.8
    assert str(pr.parse("TrecRBP(p=0.9)")) == "TrecRBP"  # trec_eval's default p is left out


# --------------------------------------------------------------------------- the measures


def judged(ranks: list[int | None], grades: list[int | None]) -> pl.DataFrame:
    return pl.DataFrame({"rank": ranks, "relevance": grades}, schema={"rank": pl.UInt32,
                        "relevance": pl.Int64})  # fmt: skip


def test_trec_rbp_scales_grades_by_the_highest() -> None:
    rows = judged([1, 2, 3, None], [3, 0, 1, 6])  # grade 6 not retrieved: still the scale
    p = 0.9
    assert rows.select(trec_rbp()).item() == pytest.approx((1 - p) * (3 / 6 + p**2 * 1 / 6))
    binary = judged([1, 2, 3], [1, 0, 1])  # grades 0/1: used as they are
    assert binary.select(trec_rbp(0.5)).item() == pytest.approx(0.5 * (1 + 0.25))
    unjudged = judged([1, 2], [None, -1])
    assert unjudged.select(trec_rbp()).item() == 0.0


def test_trec_rbp_residual_is_zero_when_all_judged() -> None:
    assert judged([1, 2, None], [1, 0, 1]).select(trec_rbp_residual()).item() == 0.0
    p = 0.9
    rows = judged([1, 2, 3], [1, None, 0])
    assert rows.select(trec_rbp_residual()).item() == pytest.approx((1 - p) * p + p**3)


def test_unjudged_divides_by_k() -> None:
    rows = judged([1, 2, 3, 4], [None, 0, -2, 1])
    got = rows.select(
        unjudged_at(2).alias("a"), unjudged_at(4).alias("b"), unjudged_at(10).alias("c")
    )
    assert got.row(0) == (1 / 2, 2 / 4, 2 / 10)


def test_trec_rbp_reads_only_graded_rows() -> None:
    # rows of grade <= 0 (and unjudged ones) add nothing to rbp
    m = pr.parse("rbp")
    full = judged([1, 2, 3, 4, None], [2, 0, None, 1, -1])
    graded = full.filter(pl.col("relevance") >= 1)
    assert full.select(m.expr()).item() == graded.select(m.expr()).item()


# --------------------------------------------------------------------------- conventions


def test_conventions_differ_in_iprec_rounding() -> None:
    # |R| = 4, recall 0.6: 9.x counts (long)(2.4 + 0.9) = 3 relevant documents, 10.0
    # lround(2.4) = 2: relevant at ranks 1, 2 and 10 -> 1.0 under 10.0, 3/10 under 9.x
    docs = [f"d{i}" for i in range(10)]
    run = pl.DataFrame({"query": ["q"] * 10, "doc": docs, "score": [10.0 - i for i in range(10)]})
    qrels = pl.DataFrame(
        {"query": ["q"] * 4, "doc": ["d0", "d1", "d9", "zz"], "relevance": [1] * 4}
    )
    assert pr.evaluate(run, qrels, ["IPrec@0.6"])["IPrec@0.6"].item() == 1.0
    nine = pr.evaluate(run, qrels, ["IPrec@0.6"], conventions="trec_eval-9")
    assert nine["IPrec@0.6"].item() == pytest.approx(3 / 10)
    explicit = pr.evaluate(run, qrels, ["IPrec(rounding=v9)@0.6"])  # a choice beats the default
    assert explicit["IPrec(rounding=v9)@0.6"].item() == pytest.approx(3 / 10)


def test_conventions_are_data() -> None:
    ten, nine = CONVENTIONS["trec_eval-10"], CONVENTIONS["trec_eval-9"]
    assert (ten.score_precision, nine.score_precision) == ("float64", "float32")
    assert (ten.complete_prints_absent, nine.complete_prints_absent) == (True, False)
    assert ten.measure_order[-3:] == ("rbp", "rbp_resid", "unj")
    assert "rbp" not in nine.measure_order
    assert get_conventions() is ten
    with pytest.raises(
        ValueError, match=r"conventions must be one of 'trec_eval-10', 'trec_eval-9', .*Got 'x'"
    ):
        pr.evaluate(pl.DataFrame(), pl.DataFrame(), ["AP"], conventions="x")


# --------------------------------------------------------------------------- lines


def test_trec_request_follows_trec_eval() -> None:
    conv = get_conventions()
    # first parameters given for a measure win; lines in trec_eval's measure order
    assert [x.name for x in trec_request(["P.5", "P.10", "map"], conv)] == ["map", "P_5"]
    lines = trec_request(["Rprec_mult.5.0,0.2", "11pt_avg..25,.5", "ndcg.1=3,2=9"], conv)
    assert [x.name for x in lines] == ["Rprec_mult_0.20", "Rprec_mult_5.00", "11pt_avg_.25,.5",
                                       "ndcg_1=3,2=9"]  # fmt: skip
    assert [str(x.measure) for x in lines] == ["Rprec(mult=0.2)", "Rprec(mult=5.0)",
        "IPrecAvg(levels=0.25;0.5)", "nDCG(gains=1:3;2:9)"]  # fmt: skip
    assert [x.output for x in trec_request(["gm_map", "num_ret", "relstring"], conv)] == [
        "int", "summary", "relstring"
    ]  # fmt: skip


def test_trec_names_of_library_measures() -> None:
    assert trec_name(pr.parse("P@5")) == "P_5"
    assert trec_name(pr.parse("Rprec(mult=0.2)")) == "Rprec_mult_0.20"
    assert trec_name(pr.parse("nDCG")) == "ndcg"
    assert trec_name(pr.parse("nDCG(gain=exp)@5")) is None
    # trec_eval prints into len(name) + 10 bytes: "%3.2f" of large values is cut
    assert tn.line_names(tn.MEASURES["Rprec_mult"], (100000.0,), None) == ["Rprec_mult_100000.0"]
