"""The engine's shortcuts for the costs of issue 37, each against a plain reference.

Ranking ids from hashes (:func:`~polars_rankeval.engine.rank.dense_ids`,
:func:`~polars_rankeval.engine.rank.hashed_codes`), the check of one row a rank
(:func:`~polars_rankeval.engine.select._check_one_row_a_rank`), and the pre-judged tables and
runs whose rows are shuffled across rankings, which take them.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_rankeval as pr
from polars_rankeval.engine.rank import dense_ids, hashed_codes
from polars_rankeval.engine.select import _check_one_row_a_rank

MEASURES = ["AP", "AP@10", "P@5", "R@10", "RR", "nDCG", "nDCG@10", "Rprec", "Bpref", "NumRel"]


def first_appearance_codes(values: list) -> list[int]:
    """Reference: each distinct value numbered in order of its first row."""
    seen: dict = {}
    return [seen.setdefault(v, len(seen)) for v in values]


@pytest.mark.parametrize("distinct", [1, 3, 200, 5000, None])
@pytest.mark.parametrize("seed", [0, 1])
def test_dense_ids_number_distinct_hashes_in_order_of_first_appearance(distinct, seed):
    rng = np.random.default_rng(seed)
    n = 20_000
    pool = rng.integers(0, 2**64, size=distinct or n, dtype=np.uint64)
    hashes = pool[rng.integers(0, len(pool), n)] if distinct else pool
    found = dense_ids(hashes)
    assert found is not None
    ids, first = found
    expected = first_appearance_codes(hashes.tolist())
    assert ids.tolist() == expected
    assert ids.dtype == np.uint32
    assert first.tolist() == [expected.index(i) for i in range(max(expected) + 1)]


def test_dense_ids_of_hashes_that_share_their_high_bits():
    """Hashes differing only in low bits: the rounds place them by other bits."""
    hashes = np.array([5 << 40, (5 << 40) + 1, 5 << 40, (5 << 40) + 2, (5 << 40) + 1], np.uint64)
    ids, first = dense_ids(np.tile(hashes, 300)) or (None, None)
    assert ids is not None and first is not None
    assert ids[:5].tolist() == [0, 1, 0, 2, 1]
    assert first.tolist() == [0, 1, 3]


@pytest.mark.parametrize("collide", ["all", "pairs", "none"])
def test_hashed_codes_never_merge_colliding_keys(collide):
    """Whatever the hashes, two different keys get two ids (checked, then recoded)."""
    rng = np.random.default_rng(3)
    n = 3000
    frame = pl.DataFrame(
        {"system": rng.integers(0, 3, n), "query": [f"q{i}" for i in rng.integers(0, 40, n)]}
    )
    hashes = {
        "all": np.zeros(n, np.uint64),  # every row the same hash
        "pairs": (frame["system"].to_numpy() % 2).astype(np.uint64),  # systems 0 and 2 collide
        "none": frame.hash_rows(seed=0).to_numpy(),
    }[collide]
    codes = hashed_codes(frame, ["system", "query"], hashes)
    reference = first_appearance_codes(frame.rows())
    assert len(set(codes.tolist())) == len(set(reference))
    # one-to-one with the reference: the same partition of the rows
    assert len(set(zip(codes.tolist(), reference, strict=True))) == len(set(reference))


@pytest.mark.parametrize(
    ("ranks", "twice"),
    [
        ([3, 1, 2, 2, 1], None),  # each ranking's ranks 1..n: marked, no sort
        ([1, 5, 2, 1, 9], None),  # gaps: sorted
        ([2, 1, 2, 2, 1], 2),  # a rank held twice, no gap elsewhere
        ([7, 1, 7, 3, 1], 7),  # a rank held twice beside gaps
        ([0, 1, 2, 0, 1], None),  # rank 0 (refused earlier by the validation)
        ([0, 0, 2, 1, 2], 2),
    ],
)
def test_one_row_a_rank_is_checked_with_or_without_a_sort(ranks, twice):
    """Rankings 0 (rows 0, 2, 4) and 1 (rows 1, 3)."""
    ids = np.array([0, 1, 0, 1, 0])
    table = pl.DataFrame({"q": ["a", "b", "a", "b", "a"], "r": ranks})
    check = lambda: _check_one_row_a_rank(  # noqa: E731
        table, ["q"], "r", np.arange(5), ids, np.array(ranks), np.bincount(ids)
    )
    if twice is None:
        check()
        return
    with pytest.raises(ValueError, match=f"two rows at the same rank \\(q='a', r={twice}\\)"):
        check()


def judged_log(seed: int, *, gaps: bool) -> pl.DataFrame:
    """A pre-judged log of 2 systems x 60 users, some relevant items not shown (null
    rank), some shown items not judged (null grade), ranks 1..n or with gaps."""
    rng = np.random.default_rng(seed)
    parts = []
    for system in ["a", "b"]:
        for user in range(60):
            shown = int(rng.integers(1, 25))
            ranks = np.arange(1, shown + 1) * (rng.integers(1, 3) if gaps else 1)
            hidden = int(rng.integers(0, 4))
            grades = rng.integers(0, 4, shown + hidden).astype(float)
            grades[1:][rng.random(shown + hidden - 1) < 0.1] = np.nan  # the first graded
            parts.append(
                pl.DataFrame(
                    {
                        "system": system,
                        "query": f"u{user}",
                        "rank": pl.Series([*ranks.tolist(), *[None] * hidden], dtype=pl.Int64),
                        "relevance": pl.Series(grades).fill_nan(None).cast(pl.Int64),
                    }
                )
            )
    return pl.concat(parts)


@pytest.mark.parametrize("gaps", [False, True])
@pytest.mark.parametrize("seed", [0, 1])
def test_a_shuffled_judged_log_scores_as_the_ordered_one(gaps, seed):
    log = judged_log(seed, gaps=gaps)
    shuffled = log.sample(fraction=1.0, shuffle=True, seed=seed)
    assert shuffled["query"].rle_id().max() > 200  # rankings not contiguous
    ordered = pr.evaluate_judged(log, MEASURES)
    assert_frame_equal(pr.evaluate_judged(shuffled, MEASURES), ordered, rel_tol=1e-12)


@pytest.mark.parametrize("gaps", [False, True])
def test_a_shuffled_judged_log_with_a_rank_held_twice_is_refused(gaps):
    log = judged_log(4, gaps=gaps)
    twice = pl.concat([log, log.filter(pl.col("rank") == 3).head(1)])
    with pytest.raises(ValueError, match="two rows at the same rank"):
        pr.evaluate_judged(twice.sample(fraction=1.0, shuffle=True, seed=0), MEASURES)


def test_a_shuffled_run_of_many_small_rankings_scores_as_the_ordered_one():
    """Past half as many rankings as rows the ids come from the hashes of every row."""
    rng = np.random.default_rng(5)
    users = 3000
    sizes = rng.integers(1, 4, users)
    run = pl.DataFrame(
        {
            "query": np.repeat([f"u{u}" for u in range(users)], sizes),
            "doc": [f"d{i}" for i in rng.integers(0, 50, sizes.sum())],
            "score": rng.integers(0, 3, sizes.sum()).astype(float),
        }
    ).unique(["query", "doc"], maintain_order=True)
    qrels = pl.DataFrame(
        {"query": [f"u{u}" for u in range(users)], "doc": [f"d{u % 50}" for u in range(users)]}
    ).with_columns(relevance=pl.lit(1))
    shuffled = run.sample(fraction=1.0, shuffle=True, seed=1)
    assert_frame_equal(
        pr.evaluate(shuffled, qrels, MEASURES), pr.evaluate(run, qrels, MEASURES), rel_tol=1e-12
    )


@pytest.mark.parametrize("layout", ["shuffled", "one row a ranking first", "contiguous"])
def test_ranking_ids_of_tables_larger_than_the_rows_read_first(layout):
    """ranking_ids against first-appearance codes and a plain contiguity check, past the
    rows it reads first to tell shuffled rows (coded by hashes at once) from others:
    a contiguous table whose first rows are rankings of one row is coded by its hashes
    and still found contiguous."""
    from polars_rankeval.engine.rank import _PEEK, ranking_ids

    rng = np.random.default_rng(3)
    n = 3 * _PEEK
    if layout == "one row a ranking first":
        query = np.concatenate(
            [np.arange(_PEEK), np.repeat(np.arange(_PEEK, _PEEK + 20), 2 * _PEEK // 20)]
        )
    else:
        query = np.repeat(np.arange(50), n // 50)
        if layout == "shuffled":
            query = rng.permutation(query)
    table = pl.DataFrame({"system": "a", "query": [f"q{q}" for q in query]})
    ids, contiguous = ranking_ids(table, ["system", "query"])
    assert ids.tolist() == first_appearance_codes(table["query"].to_list())
    stretches = 1 + int(np.count_nonzero(query[1:] != query[:-1]))
    assert contiguous == (stretches == len(set(query.tolist())))
    assert contiguous == (layout != "shuffled")


def reference_judge(
    run: pl.DataFrame, qrels: pl.DataFrame, depth: int | None, missing: str
) -> pl.DataFrame:
    """Plain Polars: each (system, query) ranked by score then doc id descending (trec_eval),
    cut at ``depth``, joined with the qrels; then its query's judgments not kept (rank
    null); with ``missing="zero"``, every qrels query a system lacks, all unretrieved."""
    ranked = run.sort(["system", "query", "score", "doc"], descending=[False, False, True, True])
    ranked = ranked.with_columns(rank=pl.int_range(1, pl.len() + 1).over("system", "query"))
    if depth is not None:
        ranked = ranked.filter(pl.col("rank") <= depth)
    retrieved = ranked.join(qrels, on=["query", "doc"], how="left").select(
        "system", "query", "doc", pl.col("rank").cast(pl.UInt32), "relevance"
    )
    rankings = run.select("system", "query").unique()
    if missing == "zero":
        rankings = run.select("system").unique().join(qrels.select("query").unique(), how="cross")
    unretrieved = (
        rankings.join(qrels, on="query")
        .join(retrieved, on=["system", "query", "doc"], how="anti")
        .select("system", "query", "doc", pl.lit(None, pl.UInt32).alias("rank"), "relevance")
    )
    return pl.concat([retrieved, unretrieved])


@pytest.mark.parametrize("depth", [None, 4])
@pytest.mark.parametrize("missing", ["drop", "zero"])
@pytest.mark.parametrize("seed", [0, 1])
def test_judge_equals_a_plain_join_and_rank(depth, missing, seed):
    """Ties (scores of 3 values), several systems, shuffled rows, judgments not retrieved,
    queries on one side only: the same rows as the reference, each ranking's rows
    together, by rank, its unretrieved judgments last."""
    rng = np.random.default_rng(seed)
    n = 1500
    run = pl.DataFrame(
        {
            "system": rng.choice(["s1", "s2", "s3"], n),
            "query": [f"q{i}" for i in rng.integers(0, 25, n)],
            "doc": [f"d{i}" for i in rng.integers(0, 60, n)],
            "score": rng.integers(0, 3, n).astype(float),
        }
    ).unique(["system", "query", "doc"])
    qrels = pl.DataFrame(
        {
            "query": [f"q{i}" for i in rng.integers(3, 30, 400)],
            "doc": [f"d{i}" for i in rng.integers(0, 60, 400)],
            "relevance": rng.integers(0, 3, 400),
        }
    ).unique(["query", "doc"])
    ours = pr.judge(run.sample(fraction=1.0, shuffle=True, seed=seed), qrels, depth=depth,
                    missing=missing)  # fmt: skip
    by = ["system", "query", "doc"]
    assert_frame_equal(
        ours.sort(by), reference_judge(run, qrels, depth, missing).sort(by), check_dtypes=False
    )
    ranking = ours.select(pl.concat_str("system", "query").rle_id()).to_series()
    assert ranking.max() + 1 == ours.select("system", "query").n_unique()  # contiguous
    in_order = ours.with_columns(r=pl.col("rank").fill_null(2**31)).select(
        (pl.col("r").diff().over(ranking).fill_null(0) >= 0).all()
    )
    assert in_order.item()


def test_all_ranks_equal_the_ranks_of_every_row_and_a_plain_sort():
    """RankOrder.all_ranks (read in sorted order) against ranks of every row (random reads)
    and a Polars sort: both tie breaks, contiguous rankings or not, true ties and values
    closer than the bits the packed keys keep (ties that the values break)."""
    from polars_rankeval.engine.rank import Groups, TieBreak, rank_order

    rng = np.random.default_rng(7)
    for trial in range(12):
        n = int(rng.integers(1, 2000))
        score = rng.integers(0, 5, n).astype(float)
        if trial % 4 > 1:  # a few ulps apart: equal in the packed keys, not in value
            score = 1.0 + score + rng.integers(0, 3, n) * 1e-15
        run = pl.DataFrame(
            {
                "query": rng.integers(0, 30, n),
                "doc": [f"d{i}" for i in rng.permutation(n)],
                "score": score,
            }
        ).with_row_index("row")
        if trial % 2:
            run = run.sort("query")
        groups, values = Groups.of(run, ["query"]), run["score"].to_numpy()
        for descending in [True, False]:
            by_doc = trial % 3 > 0
            tie = TieBreak(values, descending=descending, doc=run["doc"], by_doc=by_doc)
            order = rank_order(groups, values, tie, descending=descending)
            ranks = order.all_ranks().tolist()
            assert ranks == order.ranks(np.arange(n)).tolist()
            last = "doc" if by_doc else "row"
            expected = (
                run.with_row_index("at")
                .sort(["query", "score", last], descending=[False, descending, by_doc])
                .with_columns(rank=pl.int_range(1, pl.len() + 1).over("query"))
                .sort("at")["rank"]
            )
            assert ranks == expected.to_list()


@pytest.mark.parametrize("chunks", [1, 3])
@pytest.mark.parametrize("values", [2, 40, 1000])
@pytest.mark.parametrize("seed", [0, 1])
def test_ranks_of_some_rows_equal_their_ranks_among_all(values, seed, chunks):
    """RankOrder.ranks of a few rows (each compared with the other members of its tie
    group), of many (the members put in order) and of tie groups larger than the
    neighbours read before a binary search, against all_ranks: both tie breaks, both
    directions, true ties and values closer than the packed keys' bits."""
    from polars_rankeval.engine.rank import Groups, TieBreak, rank_order

    rng = np.random.default_rng(seed)
    n = 3000
    score = rng.integers(0, values, n).astype(float)
    if seed:  # a few ulps apart: equal in the packed keys, not in value
        score = 1.0 + score + rng.integers(0, 3, n) * 1e-15
    run = pl.DataFrame(
        {
            "query": np.sort(rng.integers(0, 6, n)),
            "doc": [f"d{i}" for i in rng.permutation(n)],
            "score": score,
        }
    )
    groups, scores = Groups.of(run, ["query"]), run["score"].to_numpy()
    parts = np.array_split(np.arange(n), chunks)
    doc = pl.concat([run["doc"].gather(part) for part in parts], rechunk=False)
    assert doc.n_chunks() == chunks
    for descending, by_doc in [(True, True), (False, True), (True, False)]:
        tie = TieBreak(scores, descending=descending, doc=doc, by_doc=by_doc)
        order = rank_order(groups, scores, tie, descending=descending)
        every = order.all_ranks()
        reference = run.with_row_index("at").sort(
            ["query", "score", "doc" if by_doc else "at"],
            descending=[False, descending, by_doc],
        )
        expected = np.empty(n, np.int64)
        expected[reference["at"].to_numpy()] = (
            reference.select(pl.int_range(1, pl.len() + 1).over("query")).to_series().to_numpy()
        )
        assert every.tolist() == expected.tolist()
        for share in [0.01, 0.1, 0.9]:
            rows = np.sort(rng.choice(n, int(n * share), replace=False))
            assert order.ranks(rows).tolist() == every[rows].tolist()


@pytest.mark.parametrize("depth", [None, 3])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rank_run_equals_a_plain_sort(depth, seed):
    """rank_run's rows (ranking by ranking, each in rank order, read off the engine's
    sorted keys and tie groups) against a Polars sort in trec_eval order: ties of two
    rows and of more, several systems, shuffled rows, a depth cut, lazy or not."""
    rng = np.random.default_rng(seed)
    n = 2000
    run = pl.DataFrame(
        {
            "system": rng.choice(["s1", "s2"], n),
            "query": [f"q{i}" for i in rng.integers(0, 20, n)],
            "doc": [f"d{i}" for i in rng.integers(0, 400, n)],
            "score": rng.integers(0, 40 if seed else 4, n) / 8,
        }
    ).unique(["system", "query", "doc"])
    expected = (
        run.sort(["system", "query", "score", "doc"], descending=[False, False, True, True])
        .with_columns(rank=pl.int_range(1, pl.len() + 1, dtype=pl.UInt32).over("system", "query"))
        .filter(pl.col("rank") <= (depth or n))
        .select("system", "query", "doc", "rank")
    )
    for frame in [run, run.lazy()]:
        ranked = pr.rank_run(frame, depth=depth)
        ranked = ranked.collect() if isinstance(ranked, pl.LazyFrame) else ranked
        by = ["system", "query", "rank"]
        assert_frame_equal(ranked.sort(by), expected.sort(by))
        ranking = ranked.select(pl.concat_str("system", "query").rle_id()).to_series()
        assert ranking.max() + 1 == ranked.select("system", "query").n_unique()  # together
        assert ranked.select((pl.col("rank").diff().over(ranking).fill_null(1) == 1).all()).item()


@pytest.mark.parametrize("seed", range(6))
def test_unretrieved_judgments_of_one_ranking_per_query_equal_the_general_way(seed):
    """The shortcut for a ranking per query (which unretrieved_judgments takes then)
    against a plain set difference: rankings given in any order, queries without a
    ranking or without judgments."""
    from polars_rankeval.ranking import _unretrieved_by_query, unretrieved_judgments

    rng = np.random.default_rng(seed)
    n_facts, n_judgments = 30, 400
    judgment_facts = np.sort(rng.integers(0, n_facts, n_judgments))
    judgments = rng.permutation(n_judgments + 50)[:n_judgments]
    facts = rng.permutation(n_facts + 5)[: n_facts - 4]  # some unjudged, some without a ranking
    rankings = rng.permutation(len(facts))
    of_fact = dict(zip(facts.tolist(), rankings.tolist(), strict=True))
    picked = np.flatnonzero(rng.random(n_judgments) < 0.4)
    picked = picked[[int(f) in of_fact for f in judgment_facts[picked]]]
    found_rankings = np.array([of_fact[int(f)] for f in judgment_facts[picked]], np.int64)
    args = (rankings, facts, judgment_facts, judgments, found_rankings, judgments[picked])
    short = _unretrieved_by_query(rankings, facts, judgment_facts, judgments, judgments[picked])
    pairs = set(zip(*[a.tolist() for a in unretrieved_judgments(*args)], strict=True))
    expected = {
        (of_fact[int(f)], int(j))
        for f, j in zip(judgment_facts, judgments, strict=True)
        if int(f) in of_fact and int(j) not in set(judgments[picked].tolist())
    }
    assert set(zip(*[a.tolist() for a in short], strict=True)) == expected == pairs
    assert len(short[0]) == len(expected)
    assert np.all(np.diff(short[0]) >= 0)  # ranking by ranking


def judge_corpus(seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Two systems, ties, judgments not retrieved, queries on one side only."""
    rng = np.random.default_rng(seed)
    n = 3000
    run = pl.DataFrame(
        {
            "system": rng.choice(["s1", "s2"], n),
            "query": [f"q{i}" for i in rng.integers(0, 40, n)],
            "doc": [f"d{i}" for i in rng.integers(0, 90, n)],
            "score": rng.integers(0, 5, n).astype(float),
        }
    ).unique(["system", "query", "doc"])
    qrels = pl.DataFrame(
        {
            "query": [f"q{i}" for i in rng.integers(5, 45, 700)],
            "doc": [f"d{i}" for i in rng.integers(0, 90, 700)],
            "relevance": rng.integers(-1, 3, 700),
        }
    ).unique(["query", "doc"])
    return run, qrels


def assert_same_rankings(ours: pl.DataFrame, reference: pl.DataFrame, keys: list[str]) -> None:
    """The same rows, each ranking's together and in the reference's order."""
    by = [*keys, "doc"]
    assert_frame_equal(ours.sort(by), reference.sort(by))
    ranking = ours.select(pl.concat_str(keys).rle_id()).to_series()
    assert ranking.max() + 1 == ours.select(keys).n_unique()
    ordered = ours.with_row_index("at").sort([*keys, "at"]).drop("at")
    expected = reference.with_row_index("at").sort([*keys, "at"]).drop("at")
    assert_frame_equal(ordered, expected)


@pytest.mark.parametrize("layout", ["sorted", "shuffled"])
@pytest.mark.parametrize(("missing", "depth"), [("drop", None), ("zero", 3), ("error", None)])
def test_a_lazy_judge_in_pieces_equals_the_dataframe_call(layout, missing, depth):
    """A LazyFrame run past an eighth of memory_limit is judged piece by piece (as it
    comes when sorted by ranking, bucket by bucket when shuffled), lazy qrels too: the
    rows of the DataFrame call, each ranking's in its order."""
    from polars_rankeval.engine import buckets

    run, qrels = judge_corpus(3)
    if layout == "sorted":
        run = run.sort("system", "query")
    else:
        run = run.sample(fraction=1.0, shuffle=True, seed=4)
    kw = {"missing": missing, "depth": depth}
    reference = pr.judge(run, qrels, **kw)
    for qrels_in in [qrels, qrels.lazy()]:
        lazy = pr.judge(run.lazy(), qrels_in, memory_limit=40_000, **kw)
        assert isinstance(lazy, pl.LazyFrame)
        got = lazy.collect()
        assert got.schema == reference.schema
        assert_same_rankings(got, reference, ["system", "query"])
    seen = []

    def piece(rows, qrels_rows, systems, concurrent):
        seen.append(rows.height)
        return pipeline.Piece(pl.DataFrame(), pl.DataFrame(), rows.height, qrels_rows.height)

    from polars_rankeval.call import prepare
    from polars_rankeval.engine import pipeline

    options = prepare(run.collect_schema(), qrels.collect_schema(), (), kw, scores=False).options
    buckets.pieces_lazy(run.lazy(), qrels, piece, options, validate=True, limit=40_000)
    assert len(seen) > 1  # in pieces indeed
    assert sum(seen) == run.height


def test_a_lazy_judge_in_pieces_refuses_what_the_dataframe_call_refuses():
    """Duplicates and fractional grades: refused in pieces as in one."""
    run, qrels = judge_corpus(5)
    twice = pl.concat([run, run.head(1)])
    with pytest.raises(ValueError, match="run"):
        pr.judge(twice.lazy(), qrels, memory_limit=40_000).collect()
    halves = qrels.with_columns(pl.col("relevance").cast(pl.Float64) / 2)
    with pytest.raises(ValueError) as whole:
        pr.judge(run, halves)
    with pytest.raises(ValueError) as pieces:
        pr.judge(run.lazy(), halves, memory_limit=40_000).collect()
    assert str(pieces.value) == str(whole.value)


@pytest.mark.parametrize("layout", ["sorted", "shuffled"])
def test_a_lazy_rank_run_in_pieces_equals_the_dataframe_call(layout):
    run, _ = judge_corpus(6)
    run = run.sort("system", "query") if layout == "sorted" else run.sample(fraction=1.0, seed=2)
    reference = pr.rank_run(run, depth=4)
    got = pr.rank_run(run.lazy(), depth=4, memory_limit=40_000).collect()
    assert_same_rankings(got, reference, ["system", "query"])


@pytest.mark.parametrize("contiguous", [True, False])
def test_rank_order_slices_one_after_the_other_equal_slices_in_parallel(contiguous):
    """rank_order(parallel=False), as the engine sorts beside the join, against the slices on
    threads and a Polars sort: runs of several slices (over 2^18 rows), rankings contiguous
    or shuffled, true ties broken by doc id."""
    from polars_rankeval.engine import rank
    from polars_rankeval.engine.rank import Groups, TieBreak, rank_order

    rng = np.random.default_rng(11)
    per, n_rankings = 300, 2000  # 600,000 rows: three slices
    n = per * n_rankings
    run = pl.DataFrame(
        {
            "query": np.repeat(np.arange(n_rankings), per),
            "doc": pl.Series(rng.permutation(n)).cast(pl.String),
            "score": rng.integers(0, 50, n).astype(float),
        }
    )
    if not contiguous:
        run = run.sample(fraction=1.0, shuffle=True, seed=2)
    groups, values = Groups.of(run, ["query"]), run["score"].to_numpy()
    assert groups.contiguous == contiguous and len(groups.slices()) > (2 if contiguous else 1)
    tie = TieBreak(values, descending=True, doc=run["doc"])
    alone = rank_order(groups, values, tie, descending=True, parallel=False)
    threaded = rank_order(groups, values, tie, descending=True, parallel=True)
    assert np.array_equal(alone.packed, threaded.packed)
    assert np.array_equal(alone.position, threaded.position)
    expected = (
        run.with_row_index("at")
        .sort(["query", "score", "doc"], descending=[False, True, True])
        .with_columns(rank=pl.int_range(1, pl.len() + 1).over("query"))
        .sort("at")["rank"]
    )
    assert alone.all_ranks().tolist() == expected.to_list()
    calls: list[bool] = []
    plain = rank.in_parallel

    def spy(work, parts, *, parallel=True):  # which way the engine's call takes
        calls.append(parallel)
        return plain(work, parts, parallel=parallel)

    queries = run.select("query", "doc").unique("query", keep="first")  # every query judged
    qrels = queries.with_columns(relevance=pl.col("doc").str.len_bytes() % 2)
    try:
        rank.in_parallel = spy
        scored = pr.evaluate(run, qrels, MEASURES)
    finally:
        rank.in_parallel = plain
    assert calls and not any(calls)  # beside the join: one slice after the other
    assert_frame_equal(scored, pr.evaluate(run.lazy(), qrels, MEASURES).collect())


@pytest.mark.parametrize("chunks", [1, 4])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ordered_rows_and_their_places_equal_in_rank_order(seed, chunks):
    """RankOrder.ordered (uint32 rows in rank order, the tie groups' rows moved) against
    in_rank_order, and its places_of against the inverse of that order: tie groups of two
    to four rows (each pair compared) and larger (sorted), both tie rules, both directions,
    string and integer doc ids in one chunk or several, values a few ulps apart."""
    from polars_rankeval.engine.rank import Groups, TieBreak, rank_order

    rng = np.random.default_rng(seed)
    n = 4000
    score = rng.integers(0, [300, 1500, 12][seed], n).astype(float)
    if seed == 1:  # a few ulps apart: equal in the packed keys, not in value
        score = 1.0 + score + rng.integers(0, 3, n) * 1e-15
    ids = rng.permutation(n)
    run = pl.DataFrame(
        {
            "query": np.sort(rng.integers(0, 5, n)) if seed != 2 else rng.integers(0, 5, n),
            "doc": ids if seed == 2 else [f"d{i}" for i in ids],
            "score": score,
        }
    )
    parts = np.array_split(np.arange(n), chunks)
    doc = pl.concat([run["doc"].gather(part) for part in parts], rechunk=False)
    groups, values = Groups.of(run, ["query"]), run["score"].to_numpy()
    sizes = np.unique(run.group_by("query", "score").len()["len"].to_numpy())
    assert {2, 3, 4} <= set(sizes.tolist()) or sizes.max() > 4  # pairs, triples, or more
    for descending, by_doc in [(True, True), (False, True), (True, False)]:
        tie = TieBreak(values, descending=descending, doc=doc, by_doc=by_doc)
        order = rank_order(groups, values, tie, descending=descending)
        ordered = order.ordered()
        _, by_rank = order.in_rank_order()
        assert ordered.by_rank.dtype == np.uint32
        assert ordered.by_rank.tolist() == by_rank.tolist()
        places = np.empty(n, np.int64)
        places[by_rank] = np.arange(n)
        rows = rng.permutation(n)[: n // 3]
        assert ordered.places_of(rows).tolist() == places[rows].tolist()
        last = pl.col("doc").cast(pl.String) if by_doc else pl.col("at")
        ranking = pl.col("at").min().over("query")  # rankings in order of first row
        expected = run.with_row_index("at").sort(
            [ranking, pl.col("score"), last], descending=[False, descending, by_doc]
        )
        assert ordered.by_rank.tolist() == expected["at"].to_list()


def exact_reference_judge(
    run: pl.DataFrame, qrels: pl.DataFrame, keys: list[str], depth: int | None, missing: str
) -> pl.DataFrame:
    """Plain Polars, in judge's row order: the rankings in the order of their first run row
    (with ``missing="zero"``, then each system's absent qrels queries, the systems and the
    queries in order of first appearance); a ranking's rows by rank (score descending, doc
    id descending compared as strings, the later row first for a doc id twice), then its
    query's judgments it did not retrieve, in qrels order."""
    run = run.with_row_index("row")
    first = run.group_by(keys).agg(pl.col("row").min().alias("ranking")).sort("ranking")
    first = first.with_columns(pl.int_range(pl.len()).alias("ranking"))
    by_doc = pl.col("doc").cast(pl.String)
    ranked = (
        run.join(first, on=keys)
        .sort(["ranking", "score", by_doc, "row"], descending=[False, True, True, True])
        .with_columns(rank=pl.int_range(1, pl.len() + 1, dtype=pl.UInt32).over("ranking"))
    )
    if depth is not None:
        ranked = ranked.filter(pl.col("rank") <= depth)
    judged = qrels.with_row_index("judgment")
    retrieved = ranked.join(judged, on=["query", "doc"], how="left", maintain_order="left")
    rankings = first
    if missing == "zero" and "system" in keys:
        systems = run.select("system").unique(maintain_order=True)
        queries = qrels.select("query").unique(maintain_order=True)
        absent = systems.join(queries, how="cross").join(first, on=keys, how="anti")
        absent = absent.with_columns(pl.int_range(pl.len()).alias("ranking") + first.height)
        rankings = pl.concat([first, absent.select(first.columns)])
    elif missing == "zero":
        absent = qrels.select("query").unique(maintain_order=True).join(first, on=keys, how="anti")
        absent = absent.with_columns(pl.int_range(pl.len()).alias("ranking") + first.height)
        rankings = pl.concat([first, absent.select(first.columns)])
    unretrieved = rankings.join(judged, on="query").join(
        retrieved.select("ranking", "doc"), on=["ranking", "doc"], how="anti"
    )
    columns = [*keys, "doc", "rank", pl.col("relevance").cast(pl.Int64)]
    return (
        pl.concat(
            [
                retrieved.select(
                    "ranking", pl.lit(0).alias("part"), pl.col("rank").alias("at"), *columns
                ),
                unretrieved.select(
                    "ranking",
                    pl.lit(1).alias("part"),
                    pl.col("judgment").cast(pl.UInt32).alias("at"),
                    *keys,
                    "doc",
                    pl.lit(None, pl.UInt32).alias("rank"),
                    pl.col("relevance").cast(pl.Int64),
                ),
            ]
        )
        .sort("ranking", "part", "at")
        .drop("ranking", "part", "at")
    )


@pytest.mark.parametrize("ids", ["str", "int"])
@pytest.mark.parametrize(("systems", "chunks"), [(1, 1), (3, 4)])
@pytest.mark.parametrize(("depth", "missing"), [(None, "drop"), (None, "zero"), (5, "zero")])
@pytest.mark.parametrize("values", [3, 60])
def test_judge_rows_in_their_exact_order(ids, systems, chunks, depth, missing, values):
    """judge's whole table, row for row, against the exact reference: ties of every size
    (scores of 3 values: large groups, sorted; of 60: pairs and triples, each pair
    compared), string and integer ids, one system or three, shuffled rows in one chunk or
    several (run and qrels), a depth cut, queries on one side only."""
    rng = np.random.default_rng(values + 7 * systems + (ids == "int"))
    n = 4000
    query, doc = rng.integers(0, 30, n), rng.integers(0, 120, n)
    run = pl.DataFrame(
        {
            "system": rng.choice([f"s{i}" for i in range(systems)], n),
            "query": query if ids == "int" else [f"q{i}" for i in query],
            "doc": doc if ids == "int" else [f"d{i}" for i in doc],
            "score": rng.integers(0, values, n) / 4,
        }
    ).unique(["system", "query", "doc"], maintain_order=True)
    keys = ["system", "query"] if systems > 1 else ["query"]
    if systems == 1:
        run = run.drop("system")
    q_query, q_doc = rng.integers(4, 34, 900), rng.integers(0, 120, 900)
    qrels = pl.DataFrame(
        {
            "query": q_query if ids == "int" else [f"q{i}" for i in q_query],
            "doc": q_doc if ids == "int" else [f"d{i}" for i in q_doc],
            "relevance": rng.integers(0, 4, 900),
        }
    ).unique(["query", "doc"], maintain_order=True)
    if chunks > 1:  # the frames in several chunks, as read from Parquet row groups
        run, qrels = (
            pl.concat(
                [f[part] for part in np.array_split(np.arange(f.height), chunks)], rechunk=False
            )
            for f in (run, qrels)
        )
        assert run["doc"].n_chunks() == chunks
    ours = pr.judge(run, qrels, depth=depth, missing=missing)
    assert_frame_equal(ours, exact_reference_judge(run, qrels, keys, depth, missing))


def test_judge_of_an_unchecked_run_with_a_doc_twice_in_a_ranking():
    """validate=False takes a run whose ranking lists a doc id twice (not checked): every
    row is kept once, with its grade, where the doc id's rows tie in a group of two rows
    (one comparison) and of three (every pair compared: equal doc ids still give each
    row a place of its own)."""
    run = pl.DataFrame(
        {
            "query": ["q"] * 7,
            "doc": ["a", "b", "a", "c", "c", "c", "d"],
            "score": [1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 0.5],
        }
    )
    qrels = pl.DataFrame({"query": ["q", "q", "q"], "doc": ["a", "c", "z"], "relevance": [1, 2, 0]})
    ours = pr.judge(run, qrels, validate=False)
    assert_frame_equal(ours, exact_reference_judge(run, qrels, ["query"], None, "drop"))
    assert ours["doc"].to_list() == ["c", "c", "c", "b", "a", "a", "d", "z"]


@pytest.mark.parametrize("systems", [1, 2])
def test_judge_of_a_run_ranked_anew_after_keep_best(systems):
    """duplicates="keep_best" ranks the run again once its duplicates are dropped (the rank
    order made while the join went on is then not used): the table of the run without its
    worse duplicates, row for row."""
    rng = np.random.default_rng(11 + systems)
    n = 3000
    run = pl.DataFrame(
        {
            "system": rng.choice([f"s{i}" for i in range(systems)], n),
            "query": [f"q{i}" for i in rng.integers(0, 20, n)],
            "doc": [f"d{i}" for i in rng.integers(0, 80, n)],
            "score": rng.integers(0, 30, n) / 4,
        }
    )
    keys = ["system", "query"] if systems > 1 else ["query"]
    if systems == 1:
        run = run.drop("system")
    assert run.select([*keys, "doc"]).is_duplicated().any()
    qrels = pl.DataFrame(
        {
            "query": [f"q{i}" for i in rng.integers(2, 22, 500)],
            "doc": [f"d{i}" for i in rng.integers(0, 80, 500)],
            "relevance": rng.integers(0, 3, 500),
        }
    ).unique(["query", "doc"], maintain_order=True)
    best = (  # the best-scored row of each (ranking, doc), the first of equal ones, in row order
        run.with_row_index("row")
        .sort(["score", "row"], descending=[True, False])
        .unique([*keys, "doc"], keep="first")
        .sort("row")
        .drop("row")
    )
    ours = pr.judge(run, qrels, duplicates="keep_best")
    assert_frame_equal(ours, exact_reference_judge(best, qrels, keys, None, "drop"))
