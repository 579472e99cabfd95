"""Assessor agreement, confusion matrices, merged qrels and the effect on system rankings.

Peers, on the same random judgments, overall and per query, at 1e-9:
scikit-learn ``cohen_kappa_score`` (unweighted, linear, quadratic) and
``confusion_matrix``; statsmodels ``fleiss_kappa`` (with ``aggregate_raters``);
``krippendorff.alpha`` (nominal, ordinal, interval); trectools 0.0.50
``TrecQrel.check_agreement``, ``check_overlap``, ``merge_with``; scipy
``kendalltau`` for the system rankings.
"""

from __future__ import annotations

import warnings
from itertools import combinations
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import polars_rankeval as pr

sklearn_metrics = pytest.importorskip("sklearn.metrics")
inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")
krippendorff = pytest.importorskip("krippendorff")
trectools = pytest.importorskip("trectools")
scipy_stats = pytest.importorskip("scipy.stats")
pd = pytest.importorskip("pandas")

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")


def assessors(seed: int, m: int, *, queries: int = 8, docs: int = 30, grades: int = 4):
    """m assessors' qrels: a latent grade per (query, doc), each assessor off by a
    little, each judging a random 80% of the pairs (so they share only part)."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, grades, size=(queries, docs))
    out = {}
    for a in range(m):
        noise = rng.choice([-1, 0, 0, 0, 1], size=truth.shape)
        graded = np.clip(truth + noise, 0, grades - 1)
        rows = [
            (q + 1, f"d{d}", int(graded[q, d]))
            for q in range(queries)
            for d in range(docs)
            if rng.random() < 0.8
        ]
        out[f"a{a}"] = pl.DataFrame(rows, schema=["query", "doc", "relevance"], orient="row")
    return out


def shared_matrix(qrels: dict[str, pl.DataFrame], query: int | None = None) -> np.ndarray:
    """(assessors x shared pairs) grades, pairs sorted: the peers' input."""
    frames = list(qrels.items())
    wide = frames[0][1].rename({"relevance": frames[0][0]})
    for name, frame in frames[1:]:
        wide = wide.join(frame.rename({"relevance": name}), on=["query", "doc"])
    if query is not None:
        wide = wide.filter(pl.col("query") == query)
    wide = wide.sort("query", "doc")
    return wide.select(list(qrels)).to_numpy().T


def close(a: float, b: float) -> bool:
    return (np.isnan(a) and np.isnan(b)) or abs(a - b) <= 1e-9


def sk_kappa(x: np.ndarray, y: np.ndarray, weights: str | None) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a single label: sklearn warns and gives NaN
        return float(sklearn_metrics.cohen_kappa_score(x, y, weights=weights))


def fleiss(matrix: np.ndarray) -> float:
    table, _ = inter_rater.aggregate_raters(matrix.T)
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(inter_rater.fleiss_kappa(table, method="fleiss"))


def alpha(matrix: np.ndarray, level: str) -> float:
    if len(np.unique(matrix)) < 2:
        return float("nan")  # krippendorff raises: one value in the domain
    return float(krippendorff.alpha(matrix.astype(float), level_of_measurement=level))


# -- Cohen's kappa against scikit-learn ---------------------------------------------


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cohen_kappa_equals_sklearn(weights: str | None, seed: int) -> None:
    qrels = assessors(seed, 2, grades=3 + seed)
    whole = pr.agreement(qrels, measures=["cohen_kappa"], weights=weights)
    x, y = shared_matrix(qrels)
    assert close(whole["cohen_kappa"].item(), sk_kappa(x, y, weights))
    assert whole["pairs"].item() == x.size
    per_query = pr.agreement(qrels, measures="cohen_kappa", weights=weights, per_query=True)
    assert per_query.height == 8
    for q, pairs, kappa in per_query.iter_rows():
        x, y = shared_matrix(qrels, q)
        assert pairs == x.size
        assert close(kappa, sk_kappa(x, y, weights)), q


def test_cohen_kappa_of_many_is_the_mean_over_pairs() -> None:
    qrels = assessors(3, 3)
    got = pr.agreement(qrels, measures="cohen_kappa", weights="linear")["cohen_kappa"].item()
    matrix = shared_matrix(qrels)
    pairs = [sk_kappa(matrix[i], matrix[j], "linear") for i, j in combinations(range(3), 2)]
    assert close(got, float(np.mean(pairs)))


def test_cohen_kappa_sparse_and_binary_grades() -> None:
    # grades 0 and 5 only: scikit-learn weighs by place (distance 1), so does this
    a = pl.DataFrame({"query": 1, "doc": list("abcdef"), "relevance": [0, 5, 5, 0, 5, 0]})
    b = pl.DataFrame({"query": 1, "doc": list("abcdef"), "relevance": [0, 5, 0, 0, 5, 5]})
    for weights in (None, "linear", "quadratic"):
        got = pr.agreement([a, b], measures="cohen_kappa", weights=weights).item(0, 1)
        assert close(got, sk_kappa(a["relevance"].to_numpy(), b["relevance"].to_numpy(), weights))
    # po = 4/6, pe = 1/2: (2/3 - 1/2) / (1 - 1/2) = 1/3
    assert close(pr.agreement([a, b], measures="cohen_kappa").item(0, 1), 1 / 3)


# -- Fleiss and Krippendorff --------------------------------------------------------


@pytest.mark.parametrize("m", [2, 3, 5])
@pytest.mark.parametrize("seed", [0, 1])
def test_fleiss_kappa_equals_statsmodels(m: int, seed: int) -> None:
    qrels = assessors(seed, m)
    whole = pr.agreement(qrels, measures="fleiss_kappa")
    assert close(whole["fleiss_kappa"].item(), fleiss(shared_matrix(qrels)))
    per_query = pr.agreement(qrels, measures="fleiss_kappa", per_query=True)
    for q, pairs, kappa in per_query.iter_rows():
        matrix = shared_matrix(qrels, q)
        if pairs:
            assert close(kappa, fleiss(matrix)), q


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
@pytest.mark.parametrize("m", [2, 4])
@pytest.mark.parametrize("seed", [0, 1])
def test_krippendorff_alpha_equals_the_package(level: str, m: int, seed: int) -> None:
    qrels = assessors(seed, m, grades=5)
    whole = pr.agreement(qrels, measures="krippendorff_alpha", level=level)
    assert close(whole["krippendorff_alpha"].item(), alpha(shared_matrix(qrels), level))
    per_query = pr.agreement(qrels, measures="krippendorff_alpha", level=level, per_query=True)
    for q, pairs, value in per_query.iter_rows():
        if pairs:
            assert close(value, alpha(shared_matrix(qrels, q), level)), q


def test_ordinal_alpha_with_gaps_in_the_grades() -> None:
    # grades 0, 3, 4: the ordinal distance counts the grades between, not the values
    a = pl.DataFrame({"query": 1, "doc": list("abcde"), "relevance": [0, 3, 4, 4, 0]})
    b = pl.DataFrame({"query": 1, "doc": list("abcde"), "relevance": [3, 3, 4, 0, 0]})
    c = pl.DataFrame({"query": 1, "doc": list("abcde"), "relevance": [0, 4, 4, 3, 3]})
    matrix = np.array([f["relevance"].to_numpy() for f in (a, b, c)])
    for level in ("nominal", "ordinal", "interval"):
        got = pr.agreement([a, b, c], measures="krippendorff_alpha", level=level).item(0, 1)
        assert close(got, alpha(matrix, level)), level


# -- observed agreement, overlap, confusion, merge against trectools / sklearn --------


def trec_qrel(frame: pl.DataFrame, path: Path):
    lines = frame.select(pl.format("{} 0 {} {}", "query", "doc", "relevance"))
    path.write_text("\n".join(lines.to_series()) + "\n")
    return trectools.TrecQrel(str(path))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_agreement_and_overlap_equal_trectools(tmp_path: Path, seed: int) -> None:
    qrels = assessors(seed, 2)
    a, b = (trec_qrel(f, tmp_path / n) for n, f in qrels.items())
    got = pr.agreement(qrels, measures=["agreement", "overlap"], rel_level=2)
    assert close(got["agreement"].item(), a.check_agreement(b))
    assert close(got["overlap"].item(), a.check_overlap(b, min_rel_label=2))
    per_query = pr.agreement(qrels, measures="agreement", per_query=True)
    theirs = a.check_agreement(b, topics=[str(q) for q in range(1, 9)])
    for q, _, value in per_query.iter_rows():
        assert close(value, theirs[str(q)])


@pytest.mark.parametrize("per_query", [False, True])
def test_confusion_matrix_equals_sklearn(per_query: bool) -> None:
    qrels = assessors(4, 2)
    got = pr.confusion_matrix(qrels, per_query=per_query)
    for q in range(1, 9) if per_query else [None]:
        x, y = shared_matrix(qrels, q)
        labels = np.unique(np.concatenate([x, y]))
        mine = got.filter(pl.col("query") == q) if per_query else got
        matrix = mine["count"].to_numpy().reshape(labels.size, labels.size)
        assert (matrix == sklearn_metrics.confusion_matrix(x, y)).all()
        assert mine["a0"].unique().sort().to_list() == labels.tolist()


@pytest.mark.parametrize("how", ["or", "and"])
def test_merge_shared_equals_trectools(tmp_path: Path, how: str) -> None:
    # trectools/trec_qrel.py TrecQrel.merge_with(keep_all=False), transcribed up to the
    # line it cannot pass on numpy >= 1.24 (r["rel"].astype(np.int)):
    qrels = assessors(5, 2)
    a, b = (trec_qrel(f, tmp_path / n).qrels_data for n, f in qrels.items())
    r = pd.merge(a, b, on=["query", "q0", "docid"])
    r["rel"] = r[["rel_x", "rel_y"]].apply(max if how == "or" else min, axis=1)
    theirs = r.sort_values(["query", "docid"])
    got = pr.merge_qrels(qrels, how=how).sort(pl.col("query").cast(pl.String), "doc")  # type: ignore[arg-type]
    assert got["doc"].to_list() == theirs["docid"].tolist()
    assert got["query"].cast(pl.String).to_list() == theirs["query"].tolist()
    assert got["relevance"].to_list() == theirs["rel"].tolist()
    assert set(got["assessors"]) == {2}


def test_merge_rules_over_all_pairs() -> None:
    # transcribed: each pair's grades from those who judged it
    qrels = assessors(6, 4)
    long = pl.concat([f.with_columns(who=pl.lit(n)) for n, f in qrels.items()])
    grades = {
        (q, d): g for q, d, g in long.group_by("query", "doc").agg(pl.col("relevance")).iter_rows()
    }

    def majority(g: list[int]) -> int:
        values, counts = np.unique(g, return_counts=True)
        return int(values[counts == counts.max()].min())  # ties: the lowest

    rules = {"or": max, "and": min, "mean": lambda g: float(np.mean(g)), "majority": majority}
    for how, rule in rules.items():
        got = pr.merge_qrels(qrels, how=how, keep="all")  # type: ignore[arg-type]
        assert got.height == len(grades)
        for q, d, value, n in got.iter_rows():
            assert n == len(grades[q, d])
            assert close(value, rule(grades[q, d])), (how, q, d)
    shared = pr.merge_qrels(qrels, how="majority")
    assert set(shared["assessors"]) == {4}
    assert shared.height == shared_matrix(qrels).shape[1]


# -- system rankings under each assessor --------------------------------------------


def test_ranking_agreement_equals_scipy() -> None:
    qrels = assessors(7, 3)
    rng = np.random.default_rng(7)
    rows = [
        (f"s{s}", q, f"d{d}", float(rng.random()))
        for s in range(6)
        for q in range(1, 9)
        for d in rng.choice(30, size=12, replace=False)
    ]
    runs = pl.DataFrame(rows, schema=["system", "query", "doc", "score"], orient="row")
    table = pr.system_rankings(runs, qrels, measure="nDCG@10")
    for name, frame in qrels.items():
        expected = pr.mean_scores(pr.evaluate(runs, frame, ["nDCG@10"]))
        assert table[name].to_list() == expected.sort("system")["nDCG@10"].to_list()
    got = pr.ranking_agreement(runs, qrels, measure="nDCG@10")
    assert got.select("assessor_a", "assessor_b").rows() == [
        ("a0", "a1"),
        ("a0", "a2"),
        ("a1", "a2"),
    ]
    for a, b, systems, kendall, tau_ap in got.iter_rows():
        x, y = table[a].to_numpy(), table[b].to_numpy()
        assert systems == 6
        assert close(kendall, scipy_stats.kendalltau(x, y).statistic)
        # tau_ap (Yilmaz et al. 2008), transcribed: sort by b, count those above also above in a
        order = np.argsort(-y)
        ranked = x[order]
        correct = [np.sum(ranked[:i] > ranked[i]) / i for i in range(1, 6)]
        assert close(tau_ap, 2 / 5 * np.sum(correct) - 1)


# -- edges and bad input ------------------------------------------------------------

A = pl.DataFrame({"query": [1, 1, 2], "doc": ["x", "y", "z"], "relevance": [1, 1, 0]})
B = pl.DataFrame({"query": [1, 1, 3], "doc": ["x", "y", "z"], "relevance": [1, 1, 1]})


def test_no_shared_pairs_is_null_and_one_grade_is_nan() -> None:
    got = pr.agreement({"a": A, "b": B}, per_query=True)
    assert got["query"].to_list() == [1, 2, 3]
    assert got["pairs"].to_list() == [2, 0, 0]
    one = got.row(0, named=True)  # both gave 1 to x and y: chance agreement is 1
    assert one["agreement"] == 1.0 and one["overlap"] == 1.0
    for name in ("cohen_kappa", "fleiss_kappa", "krippendorff_alpha"):
        assert np.isnan(one[name])
    for row in got.rows(named=True)[1:]:
        assert all(row[m] is None for m in pr.agreement.__globals__["MEASURES"])
    empty = pr.agreement({"a": A.filter(query=2), "b": B.filter(query=3)})
    assert empty.row(0) == (0, None, None, None, None, None)


def test_lazy_pandas_and_mixed_ids() -> None:
    qrels = assessors(8, 2)
    expected = pr.agreement(qrels)
    a, b = qrels.values()
    assert pr.agreement([a.lazy(), b.to_pandas()]).equals(expected)
    mixed = pr.agreement([a, b.with_columns(pl.col("query").cast(pl.String))])
    assert mixed.equals(expected)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: pr.agreement([A]), ValueError, "at least 2 assessors"),
        (lambda: pr.agreement(A), TypeError, "must be a list or a dict"),
        (lambda: pr.agreement([A, B], measures="kappa"), ValueError, "measures must be one of"),
        (lambda: pr.agreement([A, B], measures=[]), ValueError, "measures is empty"),
        (lambda: pr.agreement([A, B], weights="cubic"), ValueError, "weights must be one of"),
        (lambda: pr.agreement([A, B], level="ratio"), ValueError, "level must be one of"),
        (
            lambda: pr.agreement([A, B.rename({"relevance": "rel"})]),
            ValueError,
            r"qrels\['assessor2'\] is missing column 'relevance'",
        ),
        (
            lambda: pr.agreement([A, B.with_columns(relevance=pl.lit(0.5))]),
            ValueError,
            "grade 'relevance' that is not an integer",
        ),
        (
            lambda: pr.agreement([A, B.with_columns(pl.col("relevance").cast(pl.String))]),
            TypeError,
            "must hold integer relevance grades",
        ),
        (
            lambda: pr.agreement([A, pl.concat([B, B])]),
            ValueError,
            r"qrels\['assessor2'\] has duplicate rows",
        ),
        (lambda: pr.confusion_matrix([A, B, A]), ValueError, "exactly 2 assessors"),
        (lambda: pr.confusion_matrix({"query": A, "b": B}), ValueError, "names its columns"),
        (lambda: pr.merge_qrels([A, B], how="vote"), ValueError, "how must be one of"),
        (lambda: pr.merge_qrels([A, B], keep="any"), ValueError, "keep must be one of"),
        (lambda: pr.ranking_agreement(A, [A, B], methods=()), ValueError, "methods is empty"),
        (lambda: pr.system_rankings(A, [A, B]), ValueError, "runs is missing column 'system'"),
    ],
)
def test_bad_input(call, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        call()


def test_inputs_not_modified() -> None:
    frame = A.to_pandas()
    before = frame.copy()
    pr.agreement([frame, B])
    pr.merge_qrels([frame, B], keep="all")
    assert frame.equals(before)
