"""Click logs: CTR by position, the position-based model by EM, the randomised
estimate, COEC judgments, qrels from clicks, and click metrics of a new ranking.

The logs are simulated with a known examination curve theta and known relevance gamma
(the position-based model, Craswell et al. 2008): a click happens when the result is
examined (probability theta at its position) and found relevant (gamma of the pair).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal
from scipy.stats import kendalltau

import polars_rankeval as pr

THETA = 1 / np.arange(1, 11) ** 0.8  # examination of positions 1..10, theta_1 = 1


def simulate(
    n_lists: int,
    n_queries: int = 50,
    n_docs: int = 10,
    theta: np.ndarray = THETA,
    seed: int = 0,
    randomized: float = 0.0,
) -> tuple[pl.DataFrame, np.ndarray]:
    """``n_lists`` ranked lists of ``n_docs`` results (so n_lists * n_docs impressions);
    each list a noisy ranking by relevance, or a uniform shuffle with probability
    ``randomized``. Returns the log and the true relevance gamma[query, doc]."""
    rng = np.random.default_rng(seed)
    gamma = rng.uniform(0.02, 0.9, size=(n_queries, n_docs))
    q = rng.integers(n_queries, size=n_lists)
    shuffle = rng.random(n_lists) < randomized
    noise = rng.gumbel(size=(n_lists, n_docs))
    keys = np.where(shuffle[:, None], noise, np.log(gamma[q]) + noise)
    order = np.argsort(-keys, axis=1)
    pos = np.argsort(order, axis=1) + 1
    clicked = rng.random((n_lists, n_docs)) < theta[pos - 1] * gamma[q]
    log = pl.DataFrame(
        {
            "session": np.repeat(np.arange(n_lists), n_docs),
            "query": np.repeat(q, n_docs),
            "doc": np.tile(np.arange(n_docs), n_lists),
            "position": pos.ravel(),
            "clicked": clicked.ravel(),
            "randomized": np.repeat(shuffle, n_docs),
        }
    )
    return log, gamma


@pytest.fixture(scope="module")
def million() -> tuple[pl.DataFrame, np.ndarray]:
    return simulate(100_000)  # 1M impressions


def test_em_recovers_the_examination_curve_at_1m_impressions(
    million: tuple[pl.DataFrame, np.ndarray],
) -> None:
    log, gamma = million
    assert log.height == 1_000_000
    fit = pr.fit_pbm(log)
    assert fit.converged
    got = fit.examination.sort("position")
    assert got["position"].to_list() == list(range(1, 11))
    assert got["examination"][0] == 1.0
    assert np.abs(got["examination"].to_numpy() - THETA).max() < 0.01
    rel = fit.relevance
    truth = gamma[rel["query"].to_numpy(), rel["doc"].to_numpy()]
    assert kendalltau(rel["relevance"].to_numpy(), truth).statistic >= 0.9
    assert rel["impressions"].sum() == 1_000_000
    assert rel["clicks"].sum() == log["clicked"].sum()
    assert pr.position_bias(log)["examination"].to_list() == got["examination"].to_list()


def test_em_normalises_to_the_top_position_when_it_is_not_always_examined() -> None:
    theta = 0.7 * THETA  # the model cannot tell this from THETA with 0.7 * gamma
    log, _ = simulate(100_000, theta=theta, seed=1)
    got = pr.fit_pbm(log).examination["examination"].to_numpy()
    assert np.abs(got - theta / theta[0]).max() < 0.01


def reference_em(log: pl.DataFrame, n_iter: int) -> np.ndarray:
    """Wang et al. 2018's EM, row by row in plain Python (the formulas as printed),
    from the same start: theta = CTR / max CTR clipped to [0.01, 1 - 1e-6], gamma = 0.5."""
    rows = log.select("query", "doc", "position", "clicked").rows()
    positions = sorted({r[2] for r in rows})
    ctr = {k: np.mean([r[3] for r in rows if r[2] == k]) for k in positions}
    top = max(ctr.values())
    theta = {k: min(max(ctr[k] / top, 0.01), 1 - 1e-6) for k in positions}
    gamma = {(r[0], r[1]): 0.5 for r in rows}
    for _ in range(n_iter):
        e_sum = dict.fromkeys(positions, 0.0)
        e_n = dict.fromkeys(positions, 0)
        r_sum = dict.fromkeys(gamma, 0.0)
        r_n = dict.fromkeys(gamma, 0)
        for q, d, k, c in rows:
            t, g = theta[k], gamma[q, d]
            e_sum[k] += c + (1 - c) * t * (1 - g) / (1 - t * g)
            r_sum[q, d] += c + (1 - c) * (1 - t) * g / (1 - t * g)
            e_n[k] += 1
            r_n[q, d] += 1
        theta = {k: e_sum[k] / e_n[k] for k in positions}
        gamma = {p: r_sum[p] / r_n[p] for p in gamma}
    return np.array([theta[k] / theta[positions[0]] for k in positions])


@pytest.mark.parametrize("n_iter", [1, 2, 7])
def test_em_steps_equal_the_formulas_row_by_row(n_iter: int) -> None:
    log, _ = simulate(300, n_queries=4, n_docs=5, theta=THETA[:5], seed=n_iter)
    fit = pr.fit_pbm(log.with_columns(pl.col("clicked").cast(pl.Int8)), max_iter=n_iter, tol=0)
    assert fit.n_iter == n_iter
    assert not fit.converged
    want = reference_em(log.with_columns(pl.col("clicked").cast(pl.Int64)), n_iter)
    assert fit.examination["examination"].to_numpy() == pytest.approx(want, abs=1e-12)


def test_em_by_segment_equals_one_fit_per_segment(tmp_path: Path) -> None:
    one, _ = simulate(3000, n_queries=5, seed=2)
    two, _ = simulate(3000, n_queries=5, seed=3, theta=THETA**2)
    log = pl.concat([one.with_columns(market=pl.lit("fr")), two.with_columns(market=pl.lit("de"))])
    # the segments' parameters are disjoint: the same iterations give the same numbers
    both = pr.fit_pbm(log, by="market", max_iter=200, tol=0)
    assert both.examination["market"].unique(maintain_order=True).to_list() == ["de", "fr"]
    for market, part in (("fr", one), ("de", two)):
        alone = pr.fit_pbm(part, max_iter=200, tol=0)
        seg = both.examination.filter(pl.col("market") == market)
        assert seg["examination"].to_numpy() == pytest.approx(
            alone.examination["examination"].to_numpy(), abs=1e-12
        )
        rel = both.relevance.filter(pl.col("market") == market).drop("market")
        assert rel.sort("query", "doc")["relevance"].to_numpy() == pytest.approx(
            alone.relevance.sort("query", "doc")["relevance"].to_numpy(), abs=1e-12
        )
    log.write_parquet(tmp_path / "log.parquet")
    scanned = pr.fit_pbm(
        pl.scan_parquet(tmp_path / "log.parquet"), by="market", max_iter=200, tol=0
    )
    assert scanned.examination.equals(both.examination)


def test_randomised_impressions_give_the_examination_ratio() -> None:
    log, _ = simulate(200_000, randomized=0.5, seed=4)
    got = pr.position_bias(log, method="randomized")
    assert got["examination"][0] == pytest.approx(1.0, abs=1e-15)
    assert np.abs(got["examination"].to_numpy() - THETA).max() < 0.02
    # hand-worked: 4 randomised lists of 2; clicks at position 1: 2 of 4, at 2: 1 of 4
    small = pl.DataFrame(
        {
            "position": [1, 2] * 5,
            "clicked": [1, 0, 1, 1, 0, 0, 0, 0, 1, 1],
            "randomized": [True] * 8 + [False] * 2,
        }
    )
    ratio = pr.position_bias(small, method="randomized")["examination"].to_list()
    assert ratio == pytest.approx([1.0, (1 / 4) / (2 / 4)], abs=1e-15)
    with pytest.raises(ValueError, match="no impression is marked randomised"):
        pr.position_bias(small.with_columns(randomized=False), method="randomized")
    with pytest.raises(TypeError, match="randomized column 'randomized' must be Boolean"):
        pr.position_bias(small.with_columns(randomized=1), method="randomized")


def test_ctr_by_position_counts(million: tuple[pl.DataFrame, np.ndarray]) -> None:
    log, _ = million
    got = pr.ctr_by_position(log.lazy().with_columns(country=pl.lit("fr")), by="country")
    assert isinstance(got, pl.LazyFrame)
    out = got.collect()
    pos, clicked = log["position"].to_numpy(), log["clicked"].to_numpy()
    for row in out.iter_rows(named=True):
        at = pos == row["position"]
        assert row["impressions"] == at.sum()
        assert row["clicks"] == clicked[at].sum()
        assert row["ctr"] == pytest.approx(clicked[at].mean(), abs=1e-12)


def test_coec_equals_its_definition_and_recovers_the_relevance_order(
    million: tuple[pl.DataFrame, np.ndarray],
) -> None:
    log, gamma = million
    got = pr.coec(log)
    # definition, row by row with numpy: CTR per position, then per pair
    pos, clicked = log["position"].to_numpy(), log["clicked"].to_numpy().astype(float)
    ctr = np.array([clicked[pos == k].mean() for k in range(1, 11)])
    pair = log["query"].to_numpy() * 10 + log["doc"].to_numpy()
    expected = np.bincount(pair, weights=ctr[pos - 1])
    clicks = np.bincount(pair, weights=clicked)
    want = clicks / expected
    have = got["query"].to_numpy() * 10 + got["doc"].to_numpy()
    assert got["coec"].to_numpy() == pytest.approx(want[have], abs=1e-12)
    assert got["expected_clicks"].to_numpy() == pytest.approx(expected[have], abs=1e-9)
    truth = gamma[got["query"].to_numpy(), got["doc"].to_numpy()]
    assert kendalltau(got["coec"].to_numpy(), truth).statistic >= 0.9


def test_qrels_from_clicks_feed_evaluate(million: tuple[pl.DataFrame, np.ndarray]) -> None:
    log, gamma = million
    judgments = pr.coec(log.lazy())
    assert isinstance(judgments, pl.LazyFrame)
    qrels = pr.qrels_from_clicks(judgments, thresholds=[0.5, 1.0, 1.5], min_impressions=10)
    assert isinstance(qrels, pl.LazyFrame)
    qrels_df = qrels.collect()
    coec = qrels_df["coec"].to_numpy()
    want = (coec >= 0.5).astype(int) + (coec >= 1.0) + (coec >= 1.5)
    assert qrels_df["relevance"].to_list() == want.tolist()
    # a run ordering the documents by true relevance beats one ordering them backwards
    good = pl.DataFrame(
        {
            "query": np.repeat(np.arange(50), 10),
            "doc": np.tile(np.arange(10), 50),
            "score": gamma.ravel(),
        }
    )
    bad = good.with_columns(score=-pl.col("score"))
    runs = pl.concat(
        [good.with_columns(system=pl.lit("good")), bad.with_columns(system=pl.lit("bad"))]
    )
    means = (
        pr.evaluate(runs, qrels_df.select("query", "doc", "relevance"), ["nDCG@5"])
        .group_by("system")
        .agg(pl.col("nDCG@5").mean())
    )
    by_system = dict(means.iter_rows())
    assert by_system["good"] > by_system["bad"] + 0.3


def test_qrels_from_clicks_refuses_bad_thresholds() -> None:
    scores = pl.DataFrame({"query": [1], "doc": [1], "coec": [1.0]})
    for bad in ([], [1.0, 1.0], [2.0, 1.0]):
        with pytest.raises(ValueError, match="thresholds must be a non-empty increasing"):
            pr.qrels_from_clicks(scores, thresholds=bad)
    with pytest.raises(ValueError, match="missing column 'impressions'"):
        pr.qrels_from_clicks(scores, thresholds=[1.0], min_impressions=3)


def reference_click_metrics(
    log: pl.DataFrame, run: pl.DataFrame, theta: np.ndarray, k: int
) -> dict[int, tuple[float, float, float]]:
    """clicks@k, click_P@k and click_nDCG@k per query, in plain Python from the
    formulas of Joachims et al. 2017 (IPS relevance) and the nDCG normalisation."""
    out = {}
    for q in sorted(set(log["query"].to_list())):
        part = log.filter(pl.col("query") == q)
        sessions = part["session"].n_unique()
        rel: dict[int, float] = {}
        for d, p, c in part.select("doc", "position", "clicked").rows():
            if c:
                rel[d] = rel.get(d, 0.0) + 1 / theta[p - 1] / sessions
        ranking = run.filter(pl.col("query") == q).sort(["score", "doc"], descending=True)
        top = ranking["doc"].to_list()[:k]
        clicks = sum(theta[i] * rel.get(d, 0.0) for i, d in enumerate(top))
        prec = sum(rel.get(d, 0.0) for d in top) / k
        dcg = sum(rel.get(d, 0.0) / np.log2(i + 2) for i, d in enumerate(top))
        ideal = sorted(rel.values(), reverse=True)[:k]
        idcg = sum(r / np.log2(i + 2) for i, r in enumerate(ideal))
        out[q] = (clicks, prec, dcg / idcg if idcg > 0 else 0.0)
    return out


def test_click_metrics_equal_their_formulas_and_estimate_the_truth() -> None:
    log, gamma = simulate(4000, n_queries=20, seed=5)
    rng = np.random.default_rng(6)
    run = pl.DataFrame(
        {
            "query": np.repeat(np.arange(20), 10),
            "doc": np.tile(np.arange(10), 20),
            "score": rng.integers(0, 4, size=200).astype(float),  # ties: doc id decides
        }
    )
    bias = pl.DataFrame({"position": np.arange(1, 11), "examination": THETA})
    got = pr.click_metrics(log, run, bias, k=5)
    want = reference_click_metrics(log, run, THETA, 5)
    assert got["query"].to_list() == sorted(want)
    for row in got.iter_rows(named=True):
        assert (row["clicks@5"], row["click_P@5"], row["click_nDCG@5"]) == pytest.approx(
            want[row["query"]], abs=1e-12
        )
    lazy = pr.click_metrics(log.lazy(), run, bias, k=5)
    assert isinstance(lazy, pl.LazyFrame)
    assert_frame_equal(lazy.collect(), got, abs_tol=1e-12, rel_tol=0)
    # the IPS precision estimates the true mean relevance of the new top 5
    big, gamma = simulate(200_000, n_queries=20, seed=7)
    est = pr.click_metrics(big, run, bias, k=5).sort("query")
    ranked = pr.rank_run(run, system=None, depth=5)
    true_p = [
        gamma[q, ranked.filter(pl.col("query") == q)["doc"].to_numpy()].sum() / 5
        for q in est["query"].to_list()
    ]
    assert np.abs(est["click_P@5"].to_numpy() - np.array(true_p)).max() < 0.05


def test_click_metrics_refuse_missing_positions() -> None:
    log, _ = simulate(10, n_queries=2, seed=8)
    run = pl.DataFrame({"query": [0], "doc": [1], "score": [1.0]})
    short = pl.DataFrame({"position": [1, 2, 3], "examination": [1.0, 0.5, 0.3]})
    with pytest.raises(ValueError, match=r"examination lacks positions \[4, 5\]"):
        pr.click_metrics(log, run, short, k=5)
    with pytest.raises(ValueError, match="a click happened at a position that examination"):
        pr.click_metrics(log, run, short, k=3)


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        (pl.col("position").cast(pl.Float64), TypeError, "position column 'position' must hold"),
        (pl.col("clicked").cast(pl.Int64) * 2, ValueError, "must hold 0 or 1"),
        (pl.col("clicked").cast(pl.String), TypeError, "clicked column 'clicked' must be Boolean"),
    ],
)
def test_bad_logs_are_refused(change: pl.Expr, error: type[Exception], match: str) -> None:
    log, _ = simulate(20, n_queries=2, seed=9)
    bad = log.with_columns(change.alias(change.meta.output_name()))
    with pytest.raises(error, match=match):
        pr.fit_pbm(bad)
    with pytest.raises(ValueError, match="the log has no rows"):
        pr.fit_pbm(log.head(0))
    with pytest.raises(ValueError, match="log is missing column 'query'"):
        pr.coec(log.drop("query"))
    with pytest.raises(ValueError, match="method must be one of 'em', 'randomized'"):
        pr.position_bias(log, method="ratio")  # type: ignore[arg-type]


def test_inputs_are_not_modified(million: tuple[pl.DataFrame, np.ndarray]) -> None:
    log, _ = million
    before = log.clone()
    pr.fit_pbm(log, max_iter=3)
    pr.coec(log)
    pr.ctr_by_position(log.to_pandas())
    assert log.equals(before)
