"""Every trec_eval measure equals trec_eval (pytrec-eval-terrier) per query, to 1e-9.

The reference output names (``iprec_at_recall_0.10``, ``Rprec_mult_0.20``,
``set_F``, ...) are turned into measures by the library's own parser, so these
tests also pin the trec_eval dialect of the names.
"""

from __future__ import annotations

import math
import warnings

import polars as pl
import pytest
from corpus import GEOMETRIC, pytrec_all_trec, random_corpus
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import polars_rankeval as pr

TOL = 1e-9


def _evaluate(run: pl.DataFrame, qrels: pl.DataFrame, names: list[str], **kw) -> pl.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        return pr.evaluate(run, qrels, names, conventions="trec_eval-9", **kw)  # pytrec_eval: 9.x


def _canonical(trec_key: str) -> str:
    return str(pr.parse(trec_key))


def catalogue_mismatches(
    run: pl.DataFrame, qrels: pl.DataFrame, rel_level: int, request: set[str] | None = None
) -> list[tuple[str, str, float, float]]:
    """(query, trec measure, ours, trec_eval) for every differing value; [] when all agree."""
    ref = pytrec_all_trec(run, qrels, rel_level, request)
    keys = sorted({k for vals in ref.values() for k in vals})
    names = {k: _canonical(k) for k in keys}
    ours = _evaluate(run, qrels, list(dict.fromkeys(names.values())), rel_level=rel_level)
    got = {str(r["query"]): r for r in ours.iter_rows(named=True)}
    bad = [(q, "<query set>", float(q in got), float(q in ref)) for q in set(got) ^ set(ref)]
    for q in sorted(set(got) & set(ref)):
        for k in keys:
            mine = got[q][names[k]]
            if k in GEOMETRIC:
                mine = math.log(max(mine, 0.00001))
            if not abs(mine - ref[q][k]) <= TOL:
                bad.append((q, k, mine, ref[q][k]))
    return bad


@pytest.mark.parametrize("rel_level", [1, 2])
@pytest.mark.parametrize("seed", range(6))
def test_all_trec_measures_equal_trec_eval(seed: int, rel_level: int) -> None:
    run, qrels = random_corpus(1000 + seed, n_queries=25)
    assert catalogue_mismatches(run, qrels, rel_level) == []


def test_long_rankings_and_many_grades() -> None:
    run, qrels = random_corpus(
        77, n_queries=12, max_docs=300, tie_levels=50, grades=(0, 1, 2, 3, 4)
    )
    assert catalogue_mismatches(run, qrels, 1) == []
    assert catalogue_mismatches(run, qrels, 3) == []


def test_set_f_with_a_parameter() -> None:
    run, qrels = random_corpus(5, n_queries=20)
    ref = pytrec_all_trec(run, qrels, 1, {"set_F.0.5"})
    (name,) = [str(x) for x in pr.parse_measures("set_F.0.5")]
    assert name == "SetF(beta=0.5)"
    ours = dict(_evaluate(run, qrels, [name]).select("query", name).iter_rows())
    assert ours.keys() == ref.keys()
    assert all(abs(ours[q] - ref[q]["set_F"]) <= TOL for q in ref)
    default = dict(_evaluate(run, qrels, ["SetF"]).select("query", "SetF").iter_rows())
    assert any(abs(ours[q] - default[q]) > 1e-6 for q in ref)  # the parameter matters


def test_trec_eval_names_cover_all_trec() -> None:
    run, qrels = random_corpus(3, n_queries=5)
    keys = {k for vals in pytrec_all_trec(run, qrels).values() for k in vals}
    assert len(keys) >= 80  # the 11 + 9 + 9 + ... per-cutoff names
    for k in keys:  # every output name parses, and its canonical name parses back
        assert str(pr.parse(_canonical(k))) == _canonical(k)


def _frames(data: dict) -> tuple[pl.DataFrame, pl.DataFrame]:
    run = pl.DataFrame(
        [(q, d, s) for q, docs in data["run"].items() for d, s in docs.items()],
        schema={"query": pl.String, "doc": pl.String, "score": pl.Float64},
        orient="row",
    )
    qrels = pl.DataFrame(
        [(q, d, g) for q, docs in data["qrels"].items() for d, g in docs.items()],
        schema={"query": pl.String, "doc": pl.String, "relevance": pl.Int64},
        orient="row",
    )
    return run, qrels


_docs = st.sampled_from(["a", "b", "B", "c", "d1", "d10", "d2", "e", "f", "g"])
_rankings = st.dictionaries(
    st.sampled_from(["q1", "q2", "10"]),
    st.dictionaries(_docs, st.sampled_from([0.0, 0.5, 1.0, 2.0]), min_size=1, max_size=8),
    min_size=1,
    max_size=3,
)
_judgments = st.dictionaries(
    st.sampled_from(["q1", "q2", "10"]),
    st.dictionaries(_docs, st.integers(-1, 3), min_size=1, max_size=8),
    min_size=1,
    max_size=3,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(run=_rankings, qrels=_judgments, rel_level=st.integers(1, 2))
@example(run={"q1": {"a": 1.0}}, qrels={"q1": {"b": 0}}, rel_level=1)  # nothing relevant
@example(run={"q1": {"a": 1.0, "b": 1.0}}, qrels={"q1": {"a": -1, "b": 2}}, rel_level=2)
def test_hypothesis_all_trec(run: dict, qrels: dict, rel_level: int) -> None:
    # trec_eval's ndcg_cut loops forever on a query whose grades are all negative
    # (no judged level >= 0): such input is outside what the reference accepts.
    qrels = {q: g if max(g.values()) >= 0 else {**g, "zz": 0} for q, g in qrels.items()}
    run_df, qrels_df = _frames({"run": run, "qrels": qrels})
    if not set(run) & set(qrels):
        return  # trec_eval scores nothing
    assert catalogue_mismatches(run_df, qrels_df, rel_level) == []
