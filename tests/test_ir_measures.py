"""ir_measures' measures that trec_eval's all_trec lacks (issue 18), against installed
ir_measures, per query, on random runs with ties, string ids, graded and negative grades
and queries missing from the run or the qrels."""

from __future__ import annotations

import warnings

import ir_measures
import numpy as np
import polars as pl
import pytest
from corpus import as_dicts, random_corpus

import polars_rankeval as pr

TOL = 1e-9


def peer_values(
    names: list[str], run: pl.DataFrame, qrels: pl.DataFrame, provider: str | None = None
) -> dict[tuple[str, str], float]:
    """(query, ir_measures name) -> value, from the installed ir_measures."""
    run_d, qrels_d = as_dicts(run, qrels)
    measures = {str(peer_measure(n)): n for n in names}
    calc = ir_measures if provider is None else ir_measures.providers.registry[provider]
    found = calc.iter_calc([peer_measure(n) for n in names], qrels_d, run_d)
    return {(m.query_id, measures[str(m.measure)]): m.value for m in found}


def peer_measure(name: str):
    """ir_measures' measure of the same name and parameters (built, as its parser reads
    no negative numbers; parsed as written where the measure has another name here:
    ``Accuracy@5`` is ``AUROC(no_pairs=skip)@5``)."""
    ours = pr.parse(name)
    if not hasattr(ir_measures.measures, ours.name):
        return ir_measures.parse_measure(name)
    params = {k: {g: int(v) for g, v in v} if k == "gains" else v for k, v in ours.params}
    measure = getattr(ir_measures.measures, ours.name)(**params)
    return measure if ours.cutoff is None else measure @ ours.cutoff


def our_values(
    names: list[str], run: pl.DataFrame, qrels: pl.DataFrame, **kw
) -> dict[tuple[str, str], float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        out = pr.evaluate(run, qrels, names, **kw)
    columns = {n: str(*pr.parse_measures(n, conventions=kw.get("conventions"))) for n in names}
    return {
        (str(row["query"]), name): row[columns[name]]
        for row in out.iter_rows(named=True)
        for name in names
    }


def assert_match(ours: dict, theirs: dict) -> None:
    assert set(ours) == set(theirs)
    bad = {k: (ours[k], theirs[k]) for k in ours if abs(ours[k] - theirs[k]) > TOL}
    assert not bad, sorted(bad.items())[:10]


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_numq_and_judged_only_precision_equal_ir_measures(seed: int) -> None:
    # ir_measures' pytrec_eval provider is trec_eval 9.x: scores tie in float32
    run, qrels = random_corpus(seed, n_queries=30, tie_levels=3)
    names = ["NumQ", "P(judged_only=True)@5", "P(judged_only=True,rel=2)@10", "P@10"]
    theirs = peer_values(names, run, qrels, "pytrec_eval")
    ours = our_values(names, run, qrels, conventions="trec_eval-9", missing="zero")
    # ir_measures scores a qrels query absent from the run 0 on every measure, NumQ
    # included (its rule for absent queries); NumQ is 1 for every query scored, as
    # trec_eval's num_q (-c counts them).
    absent = {str(q) for q in set(qrels["query"]) - set(run["query"])}
    assert absent
    for q in absent:
        assert (ours[q, "NumQ"], theirs[q, "NumQ"]) == (1.0, 0.0)
        theirs[q, "NumQ"] = 1.0
    assert_match(ours, theirs)
    assert any(ours[q, "P(judged_only=True)@5"] != ours[q, "P@10"] for q, _ in ours)


def test_numq_sums_to_the_number_of_queries() -> None:
    run, qrels = random_corpus(5, n_queries=12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        per_query = pr.evaluate(run, qrels, ["NumQ", "AP"])
        summary = pr.evaluate(run, qrels, ["NumQ", "AP"], per_query=False)
    assert per_query["NumQ"].to_list() == [1.0] * per_query.height
    assert summary["NumQ"].item() == per_query.height


def test_judged_only_precision_by_hand() -> None:
    # ranks: unjudged, relevant, negative (unjudged), non-relevant, relevant
    run = pl.DataFrame(
        {"query": ["q"] * 5, "doc": list("uanbc"), "score": [5.0, 4.0, 3.0, 2.0, 1.0]}
    )
    qrels = pl.DataFrame({"query": ["q"] * 4, "doc": list("anbc"), "relevance": [1, -1, 0, 2]})
    out = pr.evaluate(run, qrels, ["P(judged_only=True)@1", "P(judged_only=True)@3", "P@3"])
    assert out.row(0)[1:] == (1.0, 2 / 3, 1 / 3)


def ranked_scores(run: pl.DataFrame) -> pl.DataFrame:
    """The run with its scores replaced by positive, distinct ones in the library's order
    (score descending, ties by doc id descending): peers that break ties or read scores
    their own way then see the same ranking."""
    ordered = run.with_columns(pl.col("doc").cast(pl.String)).sort(
        ["query", "score", "doc"], descending=[False, True, True]
    )
    position = pl.int_range(pl.len()).over("query")
    return ordered.with_columns(score=(pl.len().over("query") - position).cast(pl.Float64))


COMPAT = ["Compat", "Compat(p=0.8)", "Compat(p=0.5,normalize=False)", "Compat(p=1.0)"]


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_compat_equals_ir_measures(seed: int) -> None:
    run, qrels = random_corpus(seed, n_queries=30, tie_levels=3)
    run = ranked_scores(run)
    theirs = peer_values(COMPAT, run, qrels, "compat")
    ours = our_values(COMPAT, run, qrels, missing="zero")  # ir_measures: absent -> 0
    assert_match(ours, theirs)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_compat_under_the_preset_equals_the_provider_on_scores_as_given(seed, tmp_path):
    """The compat provider reads the scores as they are: equal scores by doc id ascending,
    its ideal's documents of one grade by score (an unretrieved one scoring 0), then in
    the qrels' row order. Scores -0.5, 0 and 0.5 (ties; some below and at 0), qrels rows
    shuffled; the same from a Parquet scan."""
    run, qrels = random_corpus(seed, n_queries=30, tie_levels=3)
    run = run.with_columns(pl.col("score") - 0.5)
    qrels = qrels.sample(fraction=1.0, shuffle=True, seed=seed)
    theirs = peer_values(COMPAT, run, qrels, "compat")
    ours = our_values(COMPAT, run, qrels, conventions="ir_measures")
    assert_match(ours, theirs)
    run.write_parquet(tmp_path / "run.parquet")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        frame = pr.evaluate(run, qrels, COMPAT, conventions="ir_measures")
        scan = pl.scan_parquet(tmp_path / "run.parquet")
        scanned = pr.evaluate(scan, qrels, COMPAT, conventions="ir_measures").collect()
    assert scanned.sort("query").equals(frame.sort("query"))
    # the tie rules matter here: the default conventions' values differ
    assert our_values(COMPAT, run, qrels, missing="zero") != ours


def test_compat_by_score_reads_a_pre_judged_table_as_compat():
    """A pre-judged table carries no score and no qrels row order: Compat(ties=doc_asc)
    reads its ranks as they are, as Compat does (the documented fallback)."""
    run, qrels = random_corpus(4, n_queries=20, tie_levels=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        out = pr.evaluate_judged(pr.judge(run, qrels), ["Compat(ties=doc_asc)", "Compat"])
    assert out.height > 10
    assert out["Compat(ties=doc_asc)"].equals(out["Compat"], check_names=False)


def test_compat_by_score_over_retrieved_judgments_only():
    """Under judgments="retrieved" (scikit-learn's preset) a ranking's judgments are its
    retrieved judged rows: Compat(ties=doc_asc) equals the provider given only those."""
    run, qrels = random_corpus(6, n_queries=20, tie_levels=3)
    run = run.with_columns(pl.col("score") - 0.5)
    names = ["Compat(ties=doc_asc)", "Compat(p=0.8,ties=doc_asc)"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        out = pr.evaluate(run, qrels, names, conventions="sklearn")
    shown = qrels.join(run.select("query", "doc"), on=["query", "doc"], how="semi")
    theirs = peer_values(["Compat", "Compat(p=0.8)"], run, shown, "compat")
    checked = 0
    for row in out.iter_rows(named=True):
        for ours, peer in zip(names, ["Compat", "Compat(p=0.8)"], strict=True):
            if (row["query"], peer) in theirs:
                assert abs(row[ours] - theirs[row["query"], peer]) <= TOL, (row, peer)
                checked += 1
    assert checked > 20


@pytest.mark.parametrize("conventions", [None, "ranx", "rectools"])
def test_doc_id_ascending_ties_whatever_the_conventions_rule(conventions):
    """``ties=doc_asc`` reads equal scores by doc id ascending under every preset, those
    that keep the row order for the others included (a ranking pass of their own):
    equal to ir_measures' judged, msmarco and compat providers per query (scikit-learn's
    preset reads only the retrieved judgments: its Compat is checked above)."""
    run, qrels = random_corpus(8, n_queries=25, tie_levels=3)
    run = run.sample(fraction=1.0, shuffle=True, seed=8)  # the row order is not doc order
    pairs = {
        "Judged(negative=judged,ties=doc_asc)@10": ("Judged@10", "judged"),
        "RR(ties=doc_asc)@5": ("RR@5", "msmarco"),
        "Compat(ties=doc_asc)": ("Compat", "compat"),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        out = pr.evaluate(run, qrels, list(pairs), conventions=conventions)
    checked = 0
    for ours, (name, provider) in pairs.items():
        theirs = peer_values([name], run, qrels, provider)
        for query, value in zip(out["query"], out[ours], strict=True):
            if (query, name) in theirs:
                assert abs(value - theirs[query, name]) <= TOL, (ours, query)
                checked += 1
    assert checked > 40


CWL = [
    "SDCG(max_rel=3)@10",
    "SDCG(max_rel=2,min_rel=1)@5",
    "INSQ(max_rel=3)",
    "INSQ(T=2.5,max_rel=3)",
    "INST(max_rel=3)",
    "INST(T=0.4,max_rel=2)",
    "INST(T=3,max_rel=3,min_rel=-1)",
    "BPM(max_rel=3)@10",
    "BPM(T=0.5,max_rel=3)@5",
    "BPM(T=2,max_rel=2)@20",
    "NERR8(max_rel=3)@10",
    "NERR9(max_rel=3)@10",
    "NERR9(max_rel=2,min_rel=1)@3",
    "NERR10(max_rel=3)",
    "NERR10(p=0.5,max_rel=2)",
    "NERR11(max_rel=3)",
    "NERR11(T=2,max_rel=3)",
]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_cwl_measures_equal_ir_measures(seed: int) -> None:
    run, qrels = random_corpus(seed, n_queries=30, tie_levels=3)
    run = ranked_scores(run)  # cwl_eval keeps the input order of tied scores
    theirs = peer_values(CWL, run, qrels, "cwl_eval")
    ours = our_values(CWL, run, qrels, missing="zero")  # ir_measures: absent -> 0
    assert_match(ours, theirs)


def long_corpus(seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Rankings of up to 1,500 documents, judged past cwl_eval's depth of 1,000."""
    rng = np.random.default_rng(seed)
    run_rows, qrels_rows = [], []
    for q in ("a", "b", "c", "d"):
        n = int(rng.integers(900, 1500))
        scores = rng.integers(0, 300, n) / 4.0  # many ties
        run_rows += [(q, f"d{i}", float(s)) for i, s in enumerate(scores)]
        judged = rng.choice(n + 200, size=400, replace=False)  # some never retrieved
        qrels_rows += [(q, f"d{j}", int(rng.choice([-1, 0, 0, 1, 2, 3]))) for j in judged]
    run = pl.DataFrame(run_rows, schema=["query", "doc", "score"], orient="row")
    qrels = pl.DataFrame(qrels_rows, schema=["query", "doc", "relevance"], orient="row")
    return ranked_scores(run), qrels


def test_long_rankings_equal_ir_measures() -> None:
    run, qrels = long_corpus(7)
    names = [n for n in CWL if "@" not in n] + ["SDCG(max_rel=3)@1200", "BPM(T=9,max_rel=3)@1100"]
    assert_match(our_values(names, run, qrels), peer_values(names, run, qrels, "cwl_eval"))
    assert_match(our_values(COMPAT, run, qrels), peer_values(COMPAT, run, qrels, "compat"))


def test_rbp_reads_the_first_1000_ranks_as_cwl_eval():
    """cwl_eval, which serves RBP in ir_measures, reads a ranking's first 1,000 ranks:
    with p = 0.995 the ranks past 1,000 still weigh (0.995^1000 is about 0.007)."""
    run, qrels = long_corpus(3)
    names = {"RBP(p=0.995,rel=1,ties=input)": "RBP(p=0.995,rel=1)"}
    theirs = peer_values(list(names.values()), run, qrels, "cwl_eval")
    ours = our_values(list(names), run, qrels)
    assert_match({(q, names[n]): v for (q, n), v in ours.items()}, theirs)
    whole = our_values(["RBP(p=0.995,rel=1)"], run, qrels)
    assert any(abs(whole[q, "RBP(p=0.995,rel=1)"] - v) > 1e-6 for (q, _), v in theirs.items())


def test_accuracy_by_hand_and_the_queries_it_leaves_out():
    """Accuracy@3 (ir_measures) of q: a, b, c relevant, non-relevant, relevant: the pair
    (c, b) is out of order, 1 of the 2 pairs. r has no non-relevant document in its top
    3 (the provider fails there), s no relevant one retrieved (it reports none): both
    are left out of the mean, which AUROC@3 (torchmetrics) scores 0."""
    run = pl.DataFrame({"query": ["q"] * 4 + ["r", "s"], "doc": ["a", "b", "c", "d", "a", "y"],
                        "score": [4.0, 3.0, 2.0, 1.0, 1.0, 1.0]})  # fmt: skip
    qrels = pl.DataFrame({"query": ["q", "q", "q", "r", "s"], "doc": ["a", "b", "c", "a", "x"],
                          "relevance": [1, 0, 1, 1, 1]})  # fmt: skip
    out = pr.evaluate(run, qrels, ["Accuracy@3", "Accuracy", "AUROC@3"]).sort("query")
    assert out["AUROC(no_pairs=skip)@3"].to_list() == [1 - 1 / (2 * 1), None, None]
    assert out["AUROC(no_pairs=skip)"].to_list() == [1 - (0 + 1) / (2 * 2), None, None]
    assert out["AUROC@3"].to_list() == [0.5, 0.0, 0.0]
    means = pr.evaluate(run, qrels, ["Accuracy@3", "AUROC@3"], per_query=False)
    assert means["AUROC(no_pairs=skip)@3"].item() == 0.5
    assert means["AUROC@3"].item() == 0.5 / 3
    with pytest.raises(ZeroDivisionError):  # r
        peer_values(["Accuracy"], run, qrels, "accuracy")
    theirs = peer_values(["Accuracy"], run.filter(pl.col("query") != "r"), qrels, "accuracy")
    assert theirs == {("q", "Accuracy"): 0.75}


def test_the_doc_id_ascending_providers_compare_scores_as_doubles():
    """ir_measures' judged, msmarco and compat providers order the scores as doubles:
    1.0, 1.0 + 1e-9 and 1.0 + 2e-9 differ there, while the preset's pytrec_eval measures
    read them as floats (equal). Each provider's measures are ranked on their own."""
    run = pl.DataFrame({"query": ["1"] * 6, "doc": ["d1", "d2", "d3", "d4", "d5", "d6"],
                        "score": [1.0, 1.0 + 1e-9, 1.0 + 2e-9, 0.5, 0.5, 0.2]})  # fmt: skip
    qrels = pl.DataFrame({"query": ["1"] * 4, "doc": ["d3", "d4", "d5", "d6"],
                          "relevance": [1, 0, 2, 1]})  # fmt: skip
    pairs = {"Judged@2": "judged", "RR@2": "msmarco", "Compat": "compat", "P@1": "pytrec_eval"}
    for name, provider in pairs.items():
        theirs = peer_values([name], run, qrels, provider)
        assert our_values([name], run, qrels, conventions="ir_measures") == pytest.approx(theirs)
    # as doubles d3 and d2 lead (one judged); as floats, by doc id ascending, d1 and d2
    assert peer_values(["Judged@2"], run, qrels, "judged")["1", "Judged@2"] == 0.5


# --------------------------------------------------------------------------- the preset

PRESET = {
    # ir_measures' measure -> the provider that serves it in ir_measures' default pipeline
    "AP": "pytrec_eval", "AP@5": "pytrec_eval", "P@5": "pytrec_eval", "R@5": "pytrec_eval",
    "RR": "pytrec_eval", "nDCG": "pytrec_eval", "nDCG@5": "pytrec_eval",
    "Rprec": "pytrec_eval", "Success@5": "pytrec_eval", "NumRet": "pytrec_eval",
    "NumRelRet": "pytrec_eval", "Bpref": "pytrec_eval", "infAP": "pytrec_eval",
    "IPrec@0.5": "pytrec_eval", "SetP": "pytrec_eval", "SetR": "pytrec_eval",
    "SetF": "pytrec_eval", "SetAP": "pytrec_eval", "SetRelP": "pytrec_eval",
    "P(judged_only=True)@5": "pytrec_eval", "nDCG(gains=0:0;1:1;2:3;3:7)@10": "pytrec_eval",
    "ERR@10": "gdeval", "ERR@3": "gdeval", "Judged@10": "judged", "Judged": "judged",
    "RR@5": "msmarco", "RR@20": "msmarco", "Judged@3": "judged", "Compat": "compat",
    "SDCG(max_rel=3)@10": "cwl_eval", "NERR8(max_rel=3)@10": "cwl_eval",
    "RBP(rel=1)": "cwl_eval", "RBP(p=0.5,rel=2)": "cwl_eval", "Accuracy@5": "accuracy",
    "Accuracy(rel=2)": "accuracy", "NumRet(rel=1)": "pytrec_eval",
    "AP(judged_only=True)": "pytrec_eval", "nDCG(judged_only=True)@5": "pytrec_eval",
    "R(judged_only=True)@5": "pytrec_eval", "NumRel": "pytrec_eval", "NumQ": "pytrec_eval",
}  # fmt: skip
UNREPRODUCED: dict[str, str] = {}
"""Providers whose values the preset does not reproduce (none)."""


def numeric_corpus(seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A random corpus with ties and numeric query ids (gdeval reads no other)."""
    run, qrels = random_corpus(seed, n_queries=30, tie_levels=3)
    ids = {q: str(i + 1) for i, q in enumerate(sorted(set(run["query"]) | set(qrels["query"])))}
    rename = pl.col("query").replace_strict(ids)
    return run.with_columns(rename), qrels.with_columns(rename)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(reason=UNREPRODUCED[p], strict=True))
        if p in UNREPRODUCED
        else n
        for n, p in PRESET.items()
    ],
)
def test_the_preset_gives_ir_measures_values(name: str) -> None:
    """Every measure ir_measures computes, under conventions="ir_measures", equals
    ir_measures' value per query (its default pipeline: the provider that serves it),
    on runs with ties; gdeval prints 5 decimals."""
    run, qrels = numeric_corpus(11)
    theirs = peer_values([name], run, qrels)
    ours = our_values([name], run, qrels, conventions="ir_measures")
    tol = 5e-6 if PRESET[name] == "gdeval" else TOL
    queries = {q for q, _ in theirs}
    assert len(queries) > (8 if PRESET[name] == "accuracy" else 15)  # it leaves some out
    for (q, n), value in ours.items():  # gdeval prints no query without a relevant document
        if q not in queries:  # the accuracy provider none without a relevant one in the top k
            assert value == 0.0 or (value is None and PRESET[name] == "accuracy"), (q, n)
    bad = {k: (v, theirs[k]) for k, v in ours.items() if k in theirs and abs(v - theirs[k]) > tol}
    assert not bad, sorted(bad.items())[:10]
    assert queries <= {q for q, _ in ours}


# --------------------------------------------------------------------------- ir_measures' syntax

SYNTAX = [
    "nDCG(dcg='exp-log2')@10",
    'nDCG(dcg="log2")@5',
    "nDCG(gains={0:0,1:1,2:3,3:7})@10",
    "nDCG(gains={0: 0, 1: 1, 2: 3})",
    "nDCG(judged_only=False)@10",
    "P(rel=2)@5",
    "P(judged_only=True)@5",
    "P(rel=2, judged_only=True)@10",
    "AP(judged_only=False)",
    "AP(rel=2)@10",
    "SetP(relative=True)",
    "SetP(relative=False,rel=2)",
    "RR(rel=2)",
    "Success(rel=2)@3",
    "SetF(beta=0.5)",
    "Compat(p=0.8,normalize=False)",
    "SDCG(dcg='log2',max_rel=3)@10",
    "MAP",
    "NDCG@10",
    "Rprec(rel=2)",
]


@pytest.mark.parametrize("name", SYNTAX)
def test_ir_measures_syntax_parses_to_its_measure(name: str) -> None:
    """ir_measures' own measure syntax (quoted values, dicts of gains, judged_only,
    dcg, relative) is parsed to the measure ir_measures computes, per query."""
    run, qrels = numeric_corpus(21)
    run = ranked_scores(run)  # every provider's tie rule gives this order
    peer = ir_measures.parse_measure(name)
    run_d, qrels_d = as_dicts(run, qrels)
    theirs = {m.query_id: m.value for m in ir_measures.iter_calc([peer], qrels_d, run_d)}
    [ours_measure] = pr.parse_measures(name, conventions="ir_measures")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        out = pr.evaluate(run, qrels, [name], conventions="ir_measures")
    ours = dict(zip(out["query"], out[str(ours_measure)], strict=True))
    tol = 5e-6 if "exp-log2" in name else TOL  # gdeval prints 5 decimals
    assert len(theirs) > 15
    for q, value in ours.items():
        assert value == pytest.approx(theirs.get(q, 0.0), abs=tol), q
    assert str(ours_measure) == str(pr.parse(str(ours_measure)))


def test_a_form_no_measure_here_takes_is_refused_as_written() -> None:
    """``dcg='exp-log2'`` stands for ``gain=exp`` only where a family has gains (nDCG):
    SDCG has none here, nor in ir_measures (cwl_eval takes dcg='log2' only), so the
    refusal names the parameter the user wrote, not the one it would stand for."""
    with pytest.raises(ValueError, match=r"SDCG has no parameter 'dcg' \(parameters:"):
        pr.parse_measures(["SDCG(dcg='exp-log2')@10"], conventions="ir_measures")
    assert [str(m) for m in pr.parse_measures(["SDCG(dcg='log2')@10"])] == ["SDCG@10"]


def test_tie_order_doc_asc_by_hand() -> None:
    """``ties=doc_asc`` reads each tie group doc id ascending (ir_measures' judged and
    msmarco providers): a, b, c tie at the top; trec_eval's order is c, b, a."""
    run = pl.DataFrame({"query": ["q"] * 4, "doc": ["a", "b", "c", "d"],
                        "score": [2.0, 2.0, 2.0, 1.0]})  # fmt: skip
    qrels = pl.DataFrame({"query": ["q"] * 3, "doc": ["a", "b", "d"], "relevance": [1, 0, -1]})
    names = ["RR", "RR(ties=doc_asc)", "Judged@1", "Judged(ties=doc_asc)@1",
             "Judged(negative=judged)@4", "Judged@4"]  # fmt: skip
    got = pr.evaluate(run, qrels, names).row(0, named=True)
    assert got["RR"] == 1 / 3  # c, b, a: a (relevant) at 3
    assert got["RR(ties=doc_asc)"] == 1.0  # a, b, c: a at 1
    assert got["Judged@1"] == 0.0  # c is not judged
    assert got["Judged(ties=doc_asc)@1"] == 1.0  # a is judged
    assert got["Judged@4"] == 2 / 4  # a and b; d's grade -1 is not a judgment
    assert got["Judged(negative=judged)@4"] == 3 / 4
    lazy = pr.evaluate(run.lazy(), qrels, names, memory_limit=1_000).collect()
    assert lazy.row(0, named=True) == got


@pytest.mark.parametrize("lazy", [False, True])
def test_a_measure_of_input_ties_is_scored_in_a_pass_of_its_own(lazy: bool) -> None:
    """A measure with ties=input beside measures of the conventions' order: each column
    equals the call that ranks every measure its way (the conventions' ties set to input
    for the one, trec_eval's for the others), on a run with many ties, eager and lazy in
    several pieces."""
    from dataclasses import replace

    from polars_rankeval.conventions import get_conventions

    run, qrels = random_corpus(5, n_queries=40, tie_levels=2)
    names = ["AP", "SDCG(max_rel=3,ties=input)@10", "nDCG@10", "INST(max_rel=3,ties=input)"]
    frame = run.lazy() if lazy else run
    kw = {"memory_limit": "64KiB"} if lazy else {}
    got = pr.evaluate(frame, qrels, names, **kw)
    got = got.collect() if isinstance(got, pl.LazyFrame) else got
    input_order = replace(get_conventions(), ties="input")
    alone = pr.evaluate(run, qrels, ["SDCG(max_rel=3)@10", "INST(max_rel=3)"],
                        conventions=input_order)  # fmt: skip
    usual = pr.evaluate(run, qrels, ["AP", "nDCG@10"])
    assert got.columns == ["query", *names]
    assert got["query"].to_list() == usual["query"].to_list() == alone["query"].to_list()
    for ours, theirs in [("AP", usual["AP"]), ("nDCG@10", usual["nDCG@10"]),
                         (names[1], alone["SDCG(max_rel=3)@10"]),
                         (names[3], alone["INST(max_rel=3)"])]:  # fmt: skip
        np.testing.assert_allclose(got[ours].to_numpy(), theirs.to_numpy(), rtol=0, atol=1e-12)
    ranked = pr.evaluate(run, qrels, ["SDCG(max_rel=3)@10"])  # trec_eval's order of ties
    assert not np.allclose(got[names[1]].to_numpy(), ranked[:, 1].to_numpy())


def test_cwl_eval_measures_compare_scores_as_doubles() -> None:
    """cwl_eval sorts the run by score as Python floats (doubles), equal ones in row order:
    1.0 and 1.0 + 1e-9 (equal as pytrec_eval's float32) are two scores there."""
    run = pl.DataFrame({"query": ["1"] * 3, "doc": ["a", "b", "c"],
                        "score": [1.0, 1.0 + 1e-9, 0.5]})  # fmt: skip
    qrels = pl.DataFrame({"query": ["1"] * 3, "doc": ["a", "b", "c"], "relevance": [0, 3, 1]})
    names = ["SDCG(max_rel=3)@1", "NERR8(max_rel=3)@2"]
    theirs = peer_values(names, run, qrels)
    ours = our_values(names, run, qrels, conventions="ir_measures")
    assert theirs[("1", names[0])] > 0  # b, of grade 3, first
    assert_match(ours, theirs)
