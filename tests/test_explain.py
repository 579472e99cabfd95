"""pr.explain: for every pair of presets, a hand-made run where each query shows one choice."""

from __future__ import annotations

import io
import itertools
import math
import warnings

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

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
    on_ndcg = {c for c in differ if "." not in c or c.startswith("nDCG.")}
    assert named or not on_ndcg, "every pair of presets that differs on nDCG differs here"
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


def test_cli_explain_takes_several_measures_and_per_cause(tmp_path, capsys) -> None:
    """Repeated -m and --per cause print what pr.explain gives for the same call."""
    run, qrels = random_data(3)
    qrels_path, run_path = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels_path.write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in qrels.iter_rows()))
    s1 = run.filter(system="s1").drop("system")
    run_path.write_text("".join(f"{q} Q0 {d} 1 {v!r} s1\n" for q, d, v in s1.iter_rows()))
    argv = ["explain", str(qrels_path), str(run_path), "-m", "AP", "-m", "ndcg@5",
            "--between", "trec_eval-10", "ranx", "-f", "csv"]  # fmt: skip
    assert main([*argv, "--per", "cause"]) == 0
    printed = pl.read_csv(io.StringIO(capsys.readouterr().out))
    expected = pr.explain(s1, qrels, ["AP", "ndcg@5"], between=("trec_eval-10", "ranx"),
                          per="cause")  # fmt: skip
    assert printed.columns == expected.columns
    assert printed["measure"].to_list() == expected["measure"].to_list()
    assert printed["contribution"].to_list() == pytest.approx(
        expected["contribution"].to_list(), abs=1e-9
    )
    assert main(argv) == 0
    per_query = pl.read_csv(io.StringIO(capsys.readouterr().out))
    assert set(per_query["measure"]) == {"AP", "ndcg@5"}  # as asked
    assert main([*argv, "--per", "cause", "--differing"]) == 1
    assert "--per query" in capsys.readouterr().err


# --------------------------------------------------------------------------- several measures
# and the contribution of each cause to the difference of the means

MEASURES = ["AP", "ndcg@5", "P@5", "RR", "R@10", "AP@5", "ERR@5"]
CONTRIBUTION_PAIRS = [
    ("trec_eval-10", "ranx"),
    ("trec_eval-10", "sklearn"),
    ("trec_eval-9", "ir_measures"),
    ("ranx", "spark"),
    ("ir_measures", "torchmetrics"),
    ("sklearn", "spark"),
]


def random_data(seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Two systems, 25 queries; scores rounded to 0.1 (ties), grades 0-3, relevant
    documents not retrieved, qrels queries the run lacks, run queries with no qrels,
    and qrels queries with no relevant document."""
    rng = np.random.default_rng(seed)
    runs, qrels = [], []
    for q in range(25):
        docs = [f"d{i}" for i in range(rng.integers(8, 20))]
        if q % 7 != 3:  # q3, q10, ...: qrels only (absent from the run)
            for system in ("s1", "s2"):
                shown = rng.choice(docs, size=rng.integers(1, len(docs)), replace=False)
                for d in shown:
                    runs.append((system, f"q{q}", str(d), round(float(rng.random()), 1)))
        if q % 11 != 5:  # q5, q16: run only (no qrels)
            judged = rng.choice(docs, size=rng.integers(1, len(docs)), replace=False)
            grades = [0] * len(judged) if q == 9 else rng.integers(0, 4, len(judged)).tolist()
            qrels += [(f"q{q}", str(d), int(g)) for d, g in zip(judged, grades, strict=True)]
    run = pl.DataFrame(runs, schema=["system", "query", "doc", "score"], orient="row")
    return run, pl.DataFrame(qrels, schema=["query", "doc", "relevance"], orient="row")


def means(run: pl.DataFrame, qrels: pl.DataFrame, measure: str, conventions: str) -> dict:
    """Mean per system of one measure under one conventions, from pr.evaluate alone."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pq = pr.evaluate(run, qrels, [measure], conventions=conventions)
    value = pq.columns[-1]
    return dict(pq.group_by("system").agg(pl.col(value).mean()).iter_rows())


@pytest.mark.parametrize(
    ("first", "second"), CONTRIBUTION_PAIRS, ids=["-vs-".join(p) for p in CONTRIBUTION_PAIRS]
)
@pytest.mark.parametrize("seed", [1, 2])
def test_contributions_add_up_to_the_difference_of_the_means(
    first: str, second: str, seed: int
) -> None:
    run, qrels = random_data(seed)
    per_query = pr.explain(run, qrels, MEASURES, between=(first, second))
    by_cause = pr.explain(run, qrels, MEASURES, between=(first, second), per="cause")
    assert_frame_equal(by_cause, pr.cause_contributions(per_query))
    totals = by_cause.group_by("measure", "system").agg(
        pl.col("contribution").sum(), pl.col("mean_difference").first(), pl.col("n_queries").sum()
    )
    assert totals.height == len(MEASURES) * 2
    for measure, system, total, mean_difference, n in totals.iter_rows():
        one, two = means(run, qrels, measure, first), means(run, qrels, measure, second)
        assert total == pytest.approx(two[system] - one[system], abs=1e-12), (measure, system)
        assert mean_difference == pytest.approx(two[system] - one[system], abs=1e-12)
        rows = per_query.filter(measure=measure, system=system)
        assert n == rows.height  # every query is in exactly one group
    agree = by_cause.filter(pl.col("causes").list.len() == 0)
    assert (agree["contribution"].abs() < 1e-12).all()  # the queries with no cause add nothing
    assert by_cause.filter(pl.col("causes").list.len() > 0).height > 0


def test_several_measures_equal_each_measure_alone() -> None:
    run, qrels = random_data(3)
    together = pr.explain(run, qrels, ["ndcg@5", "AP", "P@5"], between=("trec_eval-10", "sklearn"))
    assert together.columns[0] == "measure"
    assert together["measure"].unique(maintain_order=True).to_list() == ["ndcg@5", "AP", "P@5"]
    for measure in ("ndcg@5", "AP", "P@5"):
        alone = pr.explain(run, qrels, measure, between=("trec_eval-10", "sklearn"))
        assert "measure" not in alone.columns  # one name: the table as it always was
        assert_frame_equal(together.filter(measure=measure).drop("measure"), alone)
    one = pr.explain(run, qrels, ["AP"], between=("trec_eval-10", "sklearn"))
    assert one.columns[0] == "measure"  # a list, even of one name, gives the measure column


def test_contributions_by_hand() -> None:
    """The docstring's run, nDCG@2 and MRR (trec_eval-10 vs ranx), written as arithmetic."""
    run = pl.DataFrame({"query": ["q1", "q1", "q2"], "doc": ["a", "b", "c"], "score": [1.0] * 3})
    qrels = pl.DataFrame(
        {"query": ["q1", "q2", "q3"], "doc": ["a", "c", "d"], "relevance": [1] * 3}
    )
    got = pr.explain(run, qrels, ["mrr", "ndcg@2"], per="cause")
    rows = {(r["measure"], r["causes"][0] if r["causes"] else ""): r for r in got.to_dicts()}
    # MRR: trec_eval (b before a) 0.5, 1 over q1, q2; ranx (a first) 1, 1, and q3 scored 0.
    n1, n2, s1 = 2, 3, 0.5 + 1.0
    assert rows["mrr", "ties: doc_desc -> input"]["contribution"] == pytest.approx((1 - 0.5) / n2)
    absent = rows["mrr", "absent_queries: drop -> zero"]
    assert absent["contribution"] == pytest.approx((0 - s1 / n1) / n2)
    assert absent["mean_difference"] == pytest.approx(2 / 3 - 0.75)
    # nDCG@2 of q1: b first: D2 (a at rank 2) against a first: 1.
    s1 = D2 + 1.0
    assert rows["ndcg@2", "ties: doc_desc -> input"]["contribution"] == pytest.approx((1 - D2) / 3)
    assert rows["ndcg@2", "absent_queries: drop -> zero"]["contribution"] == pytest.approx(
        (0 - s1 / 2) / 3
    )
    assert rows["ndcg@2", ""]["contribution"] == 0.0 and rows["ndcg@2", ""]["n_queries"] == 1


def test_contributions_when_one_side_scores_nothing_are_null() -> None:
    table = pl.DataFrame(
        {"query": ["q1"], "a": [0.5], "b": [None], "difference": [None], "causes": [["x: 1 -> 2"]]},
        schema_overrides={"b": pl.Float64},
    )
    got = pr.cause_contributions(table)
    assert got["contribution"].to_list() == [None]
    assert got["mean_difference"].to_list() == [None]


def test_several_measures_refusals() -> None:
    with pytest.raises(ValueError, match="at least one measure"):
        pr.explain(RUN, QRELS, [], between=("ranx", "sklearn"))
    with pytest.raises(ValueError, match=r"'P.5,10' stands for 2 .* list them"):
        pr.explain(RUN, QRELS, ["AP", "P.5,10"], between=("ranx", "sklearn"))
    with pytest.raises(ValueError, match="per must be 'query' or 'cause'"):
        pr.explain(RUN, QRELS, "AP", per="measure")  # type: ignore[arg-type]
    renamed = RUN.rename({"query": "measure"})
    with pytest.raises(ValueError, match="id column 'measure' has the name of the measure column"):
        pr.explain(renamed, QRELS.rename({"query": "measure"}), "AP", query="measure")
    with pytest.raises(ValueError, match="id column 'ranx' has the name of a conventions' values"):
        pr.explain(
            RUN.rename({"query": "ranx"}), QRELS.rename({"query": "ranx"}), "AP", query="ranx"
        )
    with pytest.raises(ValueError, match="no 'difference' column"):
        pr.cause_contributions(RUN)


def test_causes_named_per_row_or_all_together() -> None:
    from polars_rankeval.explain import _named_causes

    differing = pl.DataFrame({"measure": ["AP", "AP", "P@5"], "query": ["q1", "q2", "q1"]})
    ties = pl.DataFrame({"measure": ["AP", "P@5"], "query": ["q1", "q1"], "causes": ["ties"] * 2})
    judged = pl.DataFrame({"measure": ["P@5", "AP"], "query": ["q1", "q9"], "causes": ["judg"] * 2})
    got = _named_causes(differing, [ties, judged], ["ties", "judg"])
    assert got.to_dicts() == [
        {"measure": "AP", "query": "q1", "causes": ["ties"]},
        {"measure": "AP", "query": "q2", "causes": ["ties", "judg"]},  # no switch alone: both
        {"measure": "P@5", "query": "q1", "causes": ["ties", "judg"]},  # each alone: both
    ]
    assert _named_causes(differing.head(0), [], [])["causes"].to_list() == []


def test_explain_names_the_recommender_libraries_definitions() -> None:
    """RecBole's AP@k divides by min(k, R) where trec_eval's divides by R; RecTools'
    nDCG@k takes its ideal over k positions whatever R: explain names each choice, and
    a query whose only cause is AP.norm differs exactly by that divisor."""
    run, qrels = random_data(3)
    run = run.filter(system="s1").drop("system")
    table = pr.explain(run, qrels, "AP@5", between=("trec_eval-10", "recbole"))
    relevant = qrels.filter(pl.col("relevance") >= 1).group_by("query").len()
    r = dict(relevant.iter_rows())
    only_norm = table.filter(pl.col("causes") == ["AP.norm: (not set) -> min"])
    assert only_norm.height >= 5
    for row in only_norm.iter_rows(named=True):
        assert r[row["query"]] > 5  # min(5, R) differs from R only past the cutoff
        scaled = row["trec_eval-10"] * r[row["query"]] / 5
        assert row["recbole"] == pytest.approx(scaled, abs=1e-12)
    per_cause = pr.explain(run, qrels, "AP@5", between=("trec_eval-10", "recbole"), per="cause")
    assert per_cause["contribution"].sum() == pytest.approx(per_cause["mean_difference"][0])
    ndcg = pr.explain(run, qrels, "nDCG@5", between=("trec_eval-10", "rectools"))
    causes = set(ndcg.explode("causes")["causes"].drop_nulls())
    assert "nDCG.ideal: (not set) -> k" in causes
