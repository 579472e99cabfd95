"""trec_eval 9.0.4's own test suite (real TREC data) as a test.

Each expected output in ``tests/data/trec_eval-9.0.4`` (fixture ``trec_eval_data``) is
produced by a known trec_eval command (see its README). The library is run with the same
options, and every per-query and ``all`` value it has a measure for must equal
trec_eval's at the 4 printed decimals. :func:`missing_measures` lists the
trec_eval measures the library cannot compute (the goal is none).
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from pathlib import Path

import polars as pl
import pytest

import polars_rankeval as pr

TEXT = ("runid", "relstring")  # printed as text, not scores
MEAS_PARAMS = (
    "iprec_at_recall..10,.20,.25,.75,.50",
    "P.5,7,3",
    "recall.20,2000",
    "Rprec_mult.5.0,0.2,0.35",
    "utility.2,-1,0,0",
    "11pt_avg..25,.5,.75",
    "ndcg.1=3,2=9,4=4.5",
    "ndcg_cut.10,20,23.4",
    "success.2,5,20",
)
# expected output -> (qrels, run, evaluate options)
CASES = {
    "out.test.aq": ("qrels.test", "results.test", {}),
    "out.test.aqc": ("qrels.test", "results.trunc", {"missing": "zero"}),
    "out.test.aqcM": ("qrels.test", "results.trunc", {"missing": "zero", "depth": 100}),
    "out.test.aql": ("qrels.rel_level", "results.test", {"rel_level": 2}),
    "out.test.meas_params": ("qrels.test", "results.test", {}),
}


def read_qrels(path: Path) -> pl.DataFrame:
    rows = [line.split() for line in path.read_text().splitlines() if line.strip()]
    return pl.DataFrame(
        [(q, d, int(g)) for q, _, d, g in rows],
        schema={"query": pl.String, "doc": pl.String, "relevance": pl.Int64},
        orient="row",
    )


def read_run(path: Path) -> pl.DataFrame:
    rows = [line.split() for line in path.read_text().splitlines() if line.strip()]
    return pl.DataFrame(
        [(r[0], r[2], float(r[4])) for r in rows],
        schema={"query": pl.String, "doc": pl.String, "score": pl.Float64},
        orient="row",
    )


def read_expected(path: Path) -> Iterator[tuple[str, str, str]]:
    """(trec measure, query or 'all', printed value) per line."""
    for line in path.read_text().splitlines():
        if line.strip():
            name, query, value = (part.strip() for part in line.split("\t"))
            yield name, query, value


def measure_for(trec_name: str) -> str | None:
    """The canonical name of a trec_eval output name, or None when the library lacks it.

    Output names with parameters print them after an underscore
    (``utility_2,-1,0,0``); they are read as the ``-m`` form with a dot.
    """
    if trec_name.startswith(TEXT) or trec_name == "num_q":
        return None
    try:
        return str(pr.parse(trec_name))
    except ValueError:
        pass
    for dotted in pr.measures.TREC_DOTTED:
        if trec_name.startswith(dotted + "_"):
            try:
                return str(pr.parse(dotted + "." + trec_name[len(dotted) + 1 :]))
            except ValueError:
                return None
    return None


@cache
def library_output(suite: Path, case: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(per-query, all) frames from the library for one expected output."""
    qrels_file, run_file, options = CASES[case]
    names = {n for n, _, _ in read_expected(suite / case)}
    measures = sorted({m for n in names if (m := measure_for(n))})
    run, qrels = read_run(suite / run_file), read_qrels(suite / qrels_file)
    per_query = pr.evaluate(run, qrels, measures, conventions="trec_eval-9", **options)  # 9.0.4
    return per_query, pr.mean_scores(per_query)


def comparisons(suite: Path, case: str) -> Iterator[tuple[str, str, float, float]]:
    """(trec measure, query, ours, expected) for every value the library has."""
    per_query, summary = library_output(suite, case)
    by_query = {r["query"]: r for r in per_query.iter_rows(named=True)}
    for name, query, value in read_expected(suite / case):
        if name == "num_q":
            yield name, query, float(summary["n_queries"].item()), float(value)
            continue
        measure = measure_for(name)
        if measure is None:
            continue
        row = summary.row(0, named=True) if query == "all" else by_query[query]
        yield name, query, row[measure], float(value)


def missing_measures(suite: Path) -> list[str]:
    """trec_eval measures in the suite that the library has no measure for."""
    names = {n for case in CASES for n, _, _ in read_expected(suite / case)}
    return sorted(n for n in names if measure_for(n) is None and n != "num_q")


@pytest.mark.parametrize("case", list(CASES))
def test_suite_values_match_at_printed_precision(trec_eval_data: Path, case: str) -> None:
    checked = list(comparisons(trec_eval_data, case))
    bad = [c for c in checked if not abs(c[2] - c[3]) <= 0.5e-4 + 1e-9]
    print(f"{case}: {len(checked)} values checked, {len(bad)} differ")
    assert len(checked) > 200 if case != "out.test.meas_params" else len(checked) == 88
    assert bad == []


def test_every_trec_eval_measure_is_covered(trec_eval_data: Path) -> None:
    missing = missing_measures(trec_eval_data)
    print("trec_eval measures still missing:", missing or "none")
    assert [n for n in missing if not n.startswith(TEXT)] == []
    assert all(n.startswith(TEXT) for n in missing)  # only text lines: runid, relstring


def test_meas_params_command_parses(trec_eval_data: Path) -> None:
    parsed = [str(m) for arg in MEAS_PARAMS for m in pr.parse_measures(arg)]
    assert "nDCG(gains=1:3;2:9;4:4.5)" in parsed
    assert "IPrecAvg(levels=0.25;0.5;0.75)" in parsed
    assert "Utility(a=2.0)" in parsed
    assert "nDCG@23" in parsed  # trec_eval reads the cutoff 23.4 as 23
    names = {n for n, _, _ in read_expected(trec_eval_data / "out.test.meas_params")}
    assert {measure_for(n) for n in names} <= set(parsed)
