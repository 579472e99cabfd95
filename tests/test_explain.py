"""pr.explain: for every pair of presets, a hand-made run where each query shows one choice."""

from __future__ import annotations

import itertools
import math

import polars as pl
import pytest

import polars_rankeval as pr
from polars_rankeval.cli import main
from polars_rankeval.conventions import CONVENTIONS, get_conventions
from polars_rankeval.explain import choices_between

D2 = 1 / math.log2(3)  # the discount of rank 2

# Each query isolates one choice (nDCG@2 in comments: trec_eval-10's value first).
RUN = pl.DataFrame(
    [
        # ties: a and b tie; doc id descending puts b first (nDCG@2 = D2), input order a
        # (1.0), averaging (a + b) / 2 over ranks 1-2 ((1 + D2) / 2)
        ("ties", "a", 1.0),
        ("ties", "b", 1.0),
        # score_precision: a > b as doubles, equal as floats (then b first by doc id)
        ("float32", "a", 1.0000000001),
        ("float32", "b", 1.0),
        # judgments: z is relevant and not retrieved (ideal 1 + D2), or not seen (ideal 1)
        ("missed", "a", 2.0),
        ("missed", "b", 1.0),
        # nDCG.gain: grades 1 then 2: linear (1 + 2 D2) / (2 + D2), binary 1
        ("graded", "a", 2.0),
        ("graded", "b", 1.0),
        # AP.norm (AP@1): |R| = 2, min(1, |R|) = 1
        ("deep", "a", 2.0),
        ("deep", "b", 1.0),
    ],
    schema=["query", "doc", "score"],
    orient="row",
)
QRELS = pl.DataFrame(
    [
        ("ties", "a", 1),
        ("float32", "a", 1),
        ("missed", "a", 1),
        ("missed", "z", 1),
        ("graded", "a", 1),
        ("graded", "b", 2),
        ("deep", "a", 1),
        ("deep", "y", 1),
        ("absent", "x", 1),  # absent_queries: a qrels query the run lacks
    ],
    schema=["query", "doc", "relevance"],
    orient="row",
)
SHOWS = {
    "ties": "ties",
    "float32": "score_precision",
    "missed": "judgments",
    "graded": "nDCG.gain",
    "absent": "absent_queries",
}
"""The choice each query is made to show (on nDCG@2)."""
PAIRS = list(itertools.combinations(CONVENTIONS, 2))


def causes_of(table: pl.DataFrame) -> dict[str, set[str]]:
    return {
        q: {c.split(":")[0] for c in causes}
        for q, causes in zip(table["query"], table["causes"], strict=True)
    }


@pytest.mark.parametrize(("first", "second"), PAIRS, ids=["-vs-".join(p) for p in PAIRS])
def test_explain_names_the_choice_each_query_shows(first: str, second: str) -> None:
    table = pr.explain(RUN, QRELS, "ndcg@2", between=(first, second))
    differ = {c.name for c in choices_between(get_conventions(first), get_conventions(second))}
    causes = causes_of(table)
    named = set().union(*causes.values())
    assert named <= differ  # only choices on which the two presets differ
    assert named, "every pair of presets differs on this run"
    for query, choice in SHOWS.items():
        if choice in differ:  # the query's values differ, and its own choice is named
            assert choice in causes[query], (query, causes[query])
        else:
            assert choice not in causes.get(query, set())
    same = table.filter(pl.col("causes").list.len() == 0)
    assert (same["difference"].abs() < 1e-12).all()


def test_explain_exact_values_trec_vs_sklearn() -> None:
    table = pr.explain(RUN, QRELS, "ndcg@2", between=("trec_eval-10", "sklearn"))
    rows = {r["query"]: r for r in table.iter_rows(named=True)}
    assert rows["ties"]["trec_eval-10"] == pytest.approx(D2)
    assert rows["ties"]["sklearn"] == pytest.approx((1 + D2) / 2)
    assert rows["ties"]["causes"] == ["ties: doc_desc -> average"]
    assert rows["missed"]["trec_eval-10"] == pytest.approx(1 / (1 + D2))
    assert rows["missed"]["sklearn"] == 1.0
    assert rows["missed"]["causes"] == ["judgments: all -> retrieved"]
    assert rows["graded"]["causes"] == []


def test_explain_measure_parameter_and_absent_queries() -> None:
    table = pr.explain(RUN, QRELS, "map@1", between=("ranx", "spark"))
    rows = {r["query"]: r for r in table.iter_rows(named=True)}
    assert (rows["deep"]["ranx"], rows["deep"]["spark"]) == (0.5, 1.0)
    assert rows["deep"]["causes"] == ["AP.norm: (not set) -> min"]
    assert rows["absent"]["ranx"] == 0.0 and rows["absent"]["spark"] is None
    assert rows["absent"]["causes"] == ["absent_queries: zero -> drop"]


def test_explain_refuses_bad_arguments() -> None:
    with pytest.raises(ValueError, match="between must name two conventions"):
        pr.explain(RUN, QRELS, "AP", between=("ranx",))
    with pytest.raises(ValueError, match="the same conventions twice"):
        pr.explain(RUN, QRELS, "AP", between=("ranx", "ranx"))
    with pytest.raises(ValueError, match="explain takes one measure"):
        pr.explain(RUN, QRELS, "P.5,10", between=("ranx", "sklearn"))
    with pytest.raises(ValueError, match="conventions must be one of"):
        pr.explain(RUN, QRELS, "AP", between=("ranx", "trec"))


def test_cli_explain(tmp_path, capsys) -> None:
    qrels = tmp_path / "qrels.txt"
    run = tmp_path / "run.txt"
    qrels.write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in QRELS.iter_rows()))
    run.write_text("".join(f"{q} Q0 {d} 1 {s!r} r\n" for q, d, s in RUN.iter_rows()))
    argv = ["explain", str(qrels), str(run), "-m", "ndcg@2", "--between", "trec_eval-10", "ranx"]
    assert main([*argv, "-f", "csv", "--differing"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "query,trec_eval-10,ranx,difference,causes"
    assert sorted(line.split(",")[-1] for line in lines[1:]) == [
        "absent_queries: drop -> zero",
        "ties: doc_desc -> input",
    ]
