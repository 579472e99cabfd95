"""Pools, pool coverage and unjudged documents, against trectools 0.0.50.

trectools' ``TrecPoolMaker.make_pool`` (topX, rbp with sum and max, rrf),
``TrecPool.check_coverage``, ``TrecRun.check_qrel_coverage`` with
``misc.confidence_interval`` (the two halves of ``procedures.get_pool_coverage``)
and ``TrecPool.export_document_list`` are run on the same random runs, written
as TREC files, and compared per query.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

import polars_rankeval as pr

trectools = pytest.importorskip("trectools")
pd = pytest.importorskip("pandas")

from trectools import TrecPool, TrecPoolMaker, TrecQrel, TrecRun, misc  # noqa: E402

# trectools concatenates onto an empty frame, which pandas warns about
pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")


def random_runs(seed: int, *, systems: int = 4, queries: int = 6, docs: int = 40, per: int = 20):
    """Runs of distinct scores (no ties): every ranking order agrees with trectools'."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(systems):
        for q in range(1, queries + 1):
            n = int(rng.integers(1, per + 1))
            picked = rng.choice(docs, size=n, replace=False)
            scores = rng.permutation(n) + rng.random() * 0.5
            rows += [(f"sys{s}", q, f"d{d}", float(x)) for d, x in zip(picked, scores, strict=True)]
    return pl.DataFrame(rows, schema=["system", "query", "doc", "score"], orient="row")


def tied_runs(seed: int, **kw: int) -> pl.DataFrame:
    """The same with scores rounded to few values: many ties, broken by doc id."""
    runs = random_runs(seed, **kw)
    return runs.with_columns(pl.col("score").floor() // 4)


def to_trectools(runs: pl.DataFrame, tmp_path: Path, *, sort_by_file: bool) -> list:
    """One TrecRun per system. ``sort_by_file``: written as a TREC file and read back
    (trectools sorts by score); else loaded from a frame in this library's rank order."""
    ranked = pr.rank_run(runs).sort("system", "query", "rank")
    out = []
    for (name,), part in ranked.group_by("system", maintain_order=True):
        frame = part.join(runs, on=["system", "query", "doc"]).sort("query", "rank")
        if sort_by_file:
            path = tmp_path / f"{name}.run"
            lines = frame.select(
                pl.format("{} Q0 {} {} {} {}", "query", "doc", "rank", "score", "system")
            )
            path.write_text("\n".join(lines.to_series()) + "\n")
            out.append(TrecRun(str(path)))
        else:
            df = frame.select(
                pl.col("query").cast(pl.String),
                pl.lit("Q0").alias("q0"),
                pl.col("doc").alias("docid"),
                "rank",
                "score",
                "system",
            ).to_pandas()
            run = TrecRun()
            run.load_run_from_dataframe(df)
            out.append(run)
    return out


def pool_sets(pool: pl.DataFrame) -> dict[str, set[str]]:
    grouped = pool.group_by(pl.col("query").cast(pl.String)).agg(pl.col("doc"))
    return {q: set(d) for q, d in grouped.iter_rows()}


def their_sets(pool: TrecPool) -> dict[str, set[str]]:
    return {str(q): set(d) for q, d in pool.pool.items() if d}


# -- make_pool against TrecPoolMaker --------------------------------------------------

STRATEGIES = [
    ("top_k", {}, "topX", {}),
    ("rbp", {"p": 0.8}, "rbp", {"rbp_p": 0.8}),
    ("rbp", {"p": 0.5, "rbp_strategy": "max"}, "rbp", {"rbp_p": 0.5, "rbp_strategy": "max"}),
    ("rrf", {}, "rrf", {}),
    ("rrf", {"rrf_den": 5}, "rrf", {"rrf_den": 5}),
]


@pytest.mark.parametrize(("strategy", "ours", "theirs", "their_kw"), STRATEGIES)
@pytest.mark.parametrize("depth", [1, 3, 10])
@pytest.mark.parametrize("seed", [0, 1])
def test_make_pool_equals_trectools(
    tmp_path: Path, strategy: str, ours: dict, theirs: str, their_kw: dict, depth: int, seed: int
) -> None:
    runs = random_runs(seed)
    trec_runs = to_trectools(runs, tmp_path, sort_by_file=True)
    expected = TrecPoolMaker().make_pool(trec_runs, strategy=theirs, topX=depth, **their_kw)
    got = pr.make_pool(runs, strategy=strategy, depth=depth, **ours)
    assert isinstance(got, pl.DataFrame)
    assert pool_sets(got) == their_sets(expected)
    assert got.select(pl.len().over("query").max()).item() <= (
        depth * 4 if strategy == "top_k" else depth
    )


@pytest.mark.parametrize(("strategy", "ours", "theirs", "their_kw"), STRATEGIES)
@pytest.mark.parametrize("seed", [2, 3, 4])
def test_make_pool_with_ties_equals_trectools(
    tmp_path: Path, strategy: str, ours: dict, theirs: str, their_kw: dict, seed: int
) -> None:
    # Tied scores, ranked by doc id descending; tied weights at the cut, by doc id ascending.
    runs = tied_runs(seed, systems=5, docs=15, per=12)
    trec_runs = to_trectools(runs, tmp_path, sort_by_file=False)
    for depth in (2, 5):
        expected = TrecPoolMaker().make_pool(trec_runs, strategy=theirs, topX=depth, **their_kw)
        got = pr.make_pool(runs, strategy=strategy, depth=depth, **ours)
        assert pool_sets(got) == their_sets(expected), depth


@pytest.mark.parametrize(("strategy", "ours", "theirs", "their_kw"), STRATEGIES)
def test_make_pool_by_rank_column_equals_trectools(
    strategy: str, ours: dict, theirs: str, their_kw: dict
) -> None:
    # ranks that disagree with the scores: trectools reads the rank column (rbp, rrf)
    # or the rows in rank order (topX); order="rank" ranks by that column
    runs = random_runs(8)
    rng = np.random.default_rng(8)
    runs = runs.with_columns(
        rank=pl.int_range(1, pl.len() + 1)
        .shuffle(seed=int(rng.integers(1 << 30)))
        .over("system", "query")
    )
    trec_runs = []
    for _, part in runs.sort("system", "query", "rank").group_by("system", maintain_order=True):
        df = part.select(
            pl.col("query").cast(pl.String),
            pl.lit("Q0").alias("q0"),
            pl.col("doc").alias("docid"),
            "rank",
            "score",
            "system",
        ).to_pandas()
        run = TrecRun()
        run.load_run_from_dataframe(df)
        trec_runs.append(run)
    for depth in (3, 8):
        expected = TrecPoolMaker().make_pool(trec_runs, strategy=theirs, topX=depth, **their_kw)
        got = pr.make_pool(runs, strategy=strategy, depth=depth, order="rank", **ours)
        assert pool_sets(got) == their_sets(expected), depth
        assert pool_sets(got) != pool_sets(
            pr.make_pool(runs, strategy=strategy, depth=depth, **ours)
        )


def test_make_pool_weights_and_contributors() -> None:
    runs = pl.DataFrame(
        {
            "system": ["a", "a", "a", "b", "b"],
            "query": ["q"] * 5,
            "doc": ["x", "y", "z", "z", "w"],
            "score": [3.0, 2.0, 1.0, 5.0, 4.0],
        }
    )
    pool = pr.make_pool(runs, strategy="rbp", depth=4, p=0.5)
    # z: rank 3 in a, rank 1 in b -> 0.5 * (0.25 + 1); x: 0.5; w: 0.25; y: 0.25 (tie: w < y)
    assert pool.rows() == [
        ("q", "z", 0.5 * 0.25 + 0.5, ["a", "b"], [3, 1], 1),
        ("q", "x", 0.5, ["a"], [1], 1),
        ("q", "w", 0.5 * 0.5, ["b"], [2], 2),
        ("q", "y", 0.5 * 0.5, ["a"], [2], 2),
    ]
    assert pool.columns == ["query", "doc", "weight", "systems", "ranks", "best_rank"]
    top = pr.make_pool(runs, depth=1)
    assert top.select("doc", "systems").rows() == [("x", ["a"]), ("z", ["b"])]
    rrf = pr.make_pool(runs, strategy="rrf", depth=1, rrf_den=0)
    assert rrf.select("doc", "weight").rows() == [("z", 1 / 3 + 1 / 1)]


def test_runs_as_list_dict_lazy_and_pandas() -> None:
    runs = random_runs(5)
    expected = pr.make_pool(runs, strategy="rbp", depth=5)
    parts = {name: part.drop("system") for (name,), part in runs.group_by("system")}
    as_dict = pr.make_pool(parts, strategy="rbp", depth=5)
    as_list = pr.make_pool([part for _, part in runs.group_by("system")], strategy="rbp", depth=5)
    lazy = pr.make_pool(runs.lazy(), strategy="rbp", depth=5)
    assert isinstance(lazy, pl.LazyFrame)
    from_pandas = pr.make_pool(runs.to_pandas(), strategy="rbp", depth=5)
    mixed = runs.sample(fraction=1.0, shuffle=True, seed=3)
    shuffled = pr.make_pool(mixed, strategy="rbp", depth=5)
    others = (as_dict, as_list, lazy.collect(engine="streaming"), from_pandas, shuffled)
    for other in others:  # the same weights to the last bit, whatever the layout
        assert other.sort("query", "doc").equals(expected.sort("query", "doc"))
    unnamed = pr.make_pool(list(parts.values()), depth=1)
    assert set(unnamed["systems"].explode()) <= {"run1", "run2", "run3", "run4"}


def test_mixed_id_dtypes_become_strings() -> None:
    a = pl.DataFrame({"query": [1], "doc": ["x"], "score": [1.0]})
    b = pl.DataFrame({"query": ["1"], "doc": ["y"], "score": [1.0]})
    pool = pr.make_pool({"a": a, "b": b})
    assert pool.schema["query"] == pl.String
    assert pool.height == 2


# -- coverage against check_qrel_coverage, get_pool_coverage, check_coverage ----------


def random_qrels(runs: pl.DataFrame, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    pairs = runs.select("query", "doc").unique().sort("query", "doc")
    keep = rng.random(pairs.height) < 0.5
    grades = rng.integers(0, 3, pairs.height)
    return pairs.with_columns(relevance=pl.Series(grades)).filter(pl.Series(keep))


def write_qrels(qrels: pl.DataFrame, path: Path) -> TrecQrel:
    lines = qrels.select(pl.format("{} 0 {} {}", "query", "doc", "relevance"))
    path.write_text("\n".join(lines.to_series()) + "\n")
    return TrecQrel(str(path))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("depth", [1, 5, 10])
def test_pool_coverage_equals_trectools(tmp_path: Path, seed: int, depth: int) -> None:
    runs = random_runs(seed)
    qrels = random_qrels(runs, seed)
    trec_qrels = write_qrels(qrels, tmp_path / "qrels")
    trec_runs = to_trectools(runs, tmp_path, sort_by_file=True)
    per_query = pr.pool_coverage(runs, qrels, depth=depth, per_query=True)
    summary = pr.pool_coverage(runs, qrels, depth=depth)
    for run in trec_runs:
        name = run.get_runid()
        # procedures.get_pool_coverage: check_qrel_coverage's counts, their mean and CI
        counts = run.check_qrel_coverage(trec_qrels, topX=depth)
        mine = per_query.filter(pl.col("system") == name).sort(pl.col("query").cast(pl.String))
        assert mine["judged"].to_list() == counts
        row = summary.filter(pl.col("system") == name).row(0, named=True)
        assert row["judged"] == pytest.approx(np.mean(counts), abs=1e-12)
        assert row["judged_ci"] == pytest.approx(misc.confidence_interval(counts), abs=1e-9)
        shares = mine["judged"].to_numpy() / mine["retrieved"].to_numpy()
        assert row["coverage"] == pytest.approx(shares.mean(), abs=1e-12)
        half = misc.confidence_interval(shares)
        assert row["coverage_high"] - row["coverage"] == pytest.approx(half, abs=1e-9)
        assert row["coverage"] - row["coverage_low"] == pytest.approx(half, abs=1e-9)


@pytest.mark.parametrize("seed", [0, 1])
def test_pool_check_coverage_equals_trectools(tmp_path: Path, seed: int) -> None:
    runs = random_runs(seed, systems=5)
    trec_runs = to_trectools(runs, tmp_path, sort_by_file=True)
    pool_runs, new = (
        runs.filter(pl.col("system") != "sys4"),
        runs.filter(pl.col("system") == "sys4"),
    )
    their_pool = TrecPoolMaker().make_pool(trec_runs[:4], strategy="topX", topX=5)
    pool = pr.make_pool(pool_runs, depth=5)
    got = pr.pool_coverage(new, pool, depth=10, per_query=True)
    # check_coverage averages over the pool's queries: every run here has them all
    assert got["query"].n_unique() == len(their_pool.pool)
    assert got["judged"].mean() == pytest.approx(their_pool.check_coverage(trec_runs[4], 10))


def test_coverage_is_judged_at_k() -> None:
    runs = tied_runs(7)
    qrels = random_qrels(runs, 7)  # grades 0..2: none negative
    got = pr.pool_coverage(runs, qrels, depth=5, per_query=True)
    scored = pr.evaluate(runs, qrels, ["Judged@5"], missing="drop")
    joined = got.join(scored, on=["system", "query"], how="inner")
    assert joined.height == scored.height > 0
    assert (joined["coverage"] - joined["Judged@5"]).abs().max() <= 1e-12


def test_single_query_interval_is_nan() -> None:
    run = pl.DataFrame({"query": [1], "doc": ["a"], "score": [1.0]})
    row = pr.pool_coverage(run, run.select("query", "doc"), depth=3).row(0, named=True)
    assert row["queries"] == 1 and row["coverage"] == 1.0 and row["judged"] == 1.0
    assert np.isnan(row["judged_ci"]) and np.isnan(row["coverage_low"])


def test_pool_coverage_lazy() -> None:
    runs = random_runs(3)
    qrels = random_qrels(runs, 3)
    lazy = pr.pool_coverage(runs.lazy(), qrels.lazy(), depth=4)
    assert isinstance(lazy, pl.LazyFrame)
    assert lazy.collect(engine="streaming").equals(pr.pool_coverage(runs, qrels, depth=4))


# -- unjudged and the exports --------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1])
def test_unjudged_is_the_pool_minus_qrels(tmp_path: Path, seed: int) -> None:
    runs = random_runs(seed)
    qrels = random_qrels(runs, seed)
    trec_runs = to_trectools(runs, tmp_path, sort_by_file=True)
    their_pool = TrecPoolMaker().make_pool(trec_runs, strategy="topX", topX=7)
    judged = pool_sets(qrels)
    expected = {q: docs - judged.get(q, set()) for q, docs in their_sets(their_pool).items()}
    got = pool_sets(pr.unjudged(runs, qrels, depth=7))
    assert got == {q: d for q, d in expected.items() if d}
    # each one is a document whose absence lowers Judged@7 of a run that has it
    assert pr.unjudged(runs, pr.make_pool(runs, depth=7), depth=7).height == 0


@pytest.mark.parametrize("strategy", ["top_k", "rbp"])
def test_write_pool_equals_export_document_list(tmp_path: Path, strategy: str) -> None:
    runs = random_runs(11, queries=12)  # queries 1..12: 10, 11, 12 sort apart as text
    trec_runs = to_trectools(runs, tmp_path, sort_by_file=True)
    theirs = TrecPoolMaker().make_pool(trec_runs, strategy="topX" if strategy == "top_k" else "rbp")
    pool = pr.make_pool(runs, strategy=strategy)
    if strategy == "top_k":  # trectools' topX pool has string query ids, its rbp pool int ones
        pool = pool.with_columns(pl.col("query").cast(pl.String))
    for fmt in ("relevation", "filelist"):
        theirs.export_document_list(str(tmp_path / f"theirs.{fmt}"), with_format=fmt)
        pr.write_pool(pool, tmp_path / f"ours.{fmt}", format=fmt, tag="trectools")
        assert (tmp_path / f"ours.{fmt}").read_bytes() == (tmp_path / f"theirs.{fmt}").read_bytes()


# -- bad input ------------------------------------------------------------------------

RUN = pl.DataFrame({"query": [1, 1], "doc": ["a", "b"], "score": [1.0, 2.0]})


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"strategy": "topX"}, ValueError, "strategy must be one of 'top_k', 'rbp', 'rrf'"),
        ({"depth": 0}, ValueError, "depth must be an int >= 1"),
        ({"p": 1.0}, ValueError, "p .RBP's persistence. must be a number strictly between"),
        ({"rbp_strategy": "mean"}, ValueError, "rbp_strategy must be one of 'sum', 'max'"),
        ({"rrf_den": -1}, ValueError, "rrf_den must be a number >= 0"),
        ({"score": "sim"}, ValueError, "run is missing column 'sim'"),
        ({"order": "presorted"}, ValueError, "order must be one of 'score', 'rank'"),
    ],
)
def test_bad_options(kwargs: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        pr.make_pool(RUN, **kwargs)


@pytest.mark.parametrize("lazy", [False, True])
def test_bad_values(lazy: bool) -> None:
    def pool(frame: pl.DataFrame) -> object:
        out = pr.make_pool(frame.lazy() if lazy else frame)
        return out.collect() if isinstance(out, pl.LazyFrame) else out

    with pytest.raises(ValueError, match="run 'run1' has a NaN score 'score'"):
        pool(RUN.with_columns(score=pl.Series([1.0, float("nan")])))
    with pytest.raises(ValueError, match="has a null 'doc'"):
        pool(RUN.with_columns(doc=pl.Series(["a", None])))
    with pytest.raises(ValueError, match=r"run 'run1' has 2 rows for \(query=1, doc='a'\)"):
        pool(RUN.with_columns(doc=pl.lit("a")))
    with pytest.raises(TypeError, match="must be numeric"):
        pool(RUN.with_columns(pl.col("score").cast(pl.String)))
    with pytest.raises(TypeError, match="'doc' must hold integer or string ids"):
        pool(RUN.with_columns(pl.col("score").alias("doc")))
    with pytest.raises(ValueError, match="run is missing column 'rank'"):
        pr.make_pool(RUN, order="rank")
    with pytest.raises(TypeError, match="must hold integer ranks"):
        pr.make_pool(RUN.with_columns(rank=pl.lit(1.5)), order="rank")
    by_rank = RUN.with_columns(rank=pl.Series([1, None]))
    with pytest.raises(ValueError, match="run 'run1' has a null rank 'rank'"):
        out = pr.make_pool(by_rank.lazy() if lazy else by_rank, order="rank")
        if isinstance(out, pl.LazyFrame):
            out.collect()
    assert pool(by_rank).height == 2  # by score, the rank column is not read
    with pytest.raises(ValueError, match="runs is empty"):
        pr.make_pool([])


def test_inputs_not_modified() -> None:
    frame = RUN.to_pandas()
    before = frame.copy()
    pr.make_pool(frame, strategy="rrf")
    pr.pool_coverage(frame, frame, depth=1)
    assert frame.equals(before)


def test_judged_needs_its_columns() -> None:
    with pytest.raises(ValueError, match="judged is missing column 'doc'"):
        pr.pool_coverage(RUN, RUN.select("query"))
    with pytest.raises(ValueError, match="format must be one of 'relevation', 'filelist'"):
        pr.write_pool(RUN, "unused", format="qrels")  # type: ignore[arg-type]
