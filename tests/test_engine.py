"""The engine (:mod:`polars_rankeval.engine`) equals a plain reference, for every family.

The reference is written the slow, obvious way: each ranking sorted by score
(then doc id descending as a string), numbered, left-joined with qrels, the
judgments it missed appended with a null rank, then every measure's own
aggregation expression (``Measure.expr``, the one users put in their own
``group_by``) over each ranking's rows. The engine instead ranks with packed
integers, keeps only the judged rows and sums row features per ranking. Both
must agree on every layout and option: rows shuffled so rankings are not
contiguous, several systems, depth cuts, missing queries, rank order,
presorted rows, special floats, and scores so close that only the exact tie
stage can order them.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import polars as pl
import pytest
from corpus import mismatches, pytrec_reference, random_corpus
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import polars_rankeval as pr
from polars_rankeval.conventions import get_conventions
from polars_rankeval.engine import features, join, pipeline, select
from polars_rankeval.engine import rank as engine_rank
from polars_rankeval.engine.shape import (
    FACT,
    GRADE,
    LEFT_NONREL_ABOVE,
    LEFT_NONREL_JUDGED,
    LEFT_NONREL_RET,
    LEFT_UNJUDGED_ABOVE,
    RANK,
    RANKING,
)
from polars_rankeval.measures import REGISTRY, Context, parse
from polars_rankeval.options import run_options

SAMPLES = [
    "PAP@3",
    "PartialAUC@3",
    "NumRet",
    "NumRel",
    "NumRel(rel=2)",
    "NumRelRet",
    "AP",
    "AP@5",
    "AP(norm=min)@5",
    "GMAP",
    "Rprec",
    "Rprec(mult=0.4)",
    "Rprec(mult=2.0)",
    "Bpref",
    "GMBpref",
    "RR",
    "RR@3",
    "IPrec@0.3",
    "IPrec@0",
    "IPrec(rounding=v10)@0.5",
    "IPrecAvg",
    "P@3",
    "P(rel=2)@5",
    "R@5",
    "R(norm=min)@5",
    "infAP",
    "Utility",
    "Utility(a=2,b=-0.5,c=1,d=0.25,n_docs=500)",
    "binG",
    "G",
    "G(gains=1:3;2:0.5)",
    "nDCG",
    "nDCG@3",
    "nDCG(gain=exp)@3",
    "nDCG(gain=binary)@3",
    "nDCG(gains=0:1;2:5)",
    "nDCG(gains=1:-2;3:4)@5",
    "nDCGRel",
    "nDCGRel(gains=1:2)",
    "Rndcg",
    "Rndcg(gains=2:1;3:1)",
    "RelP@3",
    "Success@2",
    "Success",
    "SetP",
    "SetRelP",
    "SetR",
    "SetAP",
    "SetF",
    "SetF(beta=0.5)",
    "NumNonRelJudgedRet",
    "F1@3",
    "F1",
    "ERR@5",
    "ERR(max_grade=4)@5",
    "ERR",
    "RBP(p=0.5)",
    "RBP",
    "RBPResid(p=0.5)",
    "Judged@3",
    "Judged",
    "ExpectedP@3",
    "ExpectedAP",
    "TrecRBP",
    "TrecRBP(p=0.5)",
    "TrecRBPResid",
    "TrecRBPResid(p=0.5)",
    "Unjudged@3",
    "Unjudged@20",
    "NumQ",
    "P(judged_only=True)@3",
    "P(judged_only=True,rel=2)@5",
    "Compat",
    "Compat(normalize=False,p=0.5)",
    "Compat(p=1.0)",
    "SDCG(max_rel=3)@5",
    "INSQ(max_rel=3)",
    "INST(max_rel=2)",
    "INST(T=0.4,max_rel=3,min_rel=-1)",
    "BPM(max_rel=3)@5",
    "BPM(T=0,max_rel=3)@5",
    "NERR8(max_rel=3)@5",
    "NERR9(max_rel=3,min_rel=1)@5",
    "NERR10(max_rel=3)",
    "NERR11(T=2.0,max_rel=3)",
    # peers' variants (issue 18)
    "Hits@3",
    "Hits(rel=2)",
    "DCG",
    "DCG@3",
    "DCG(gain=exp)@5",
    "DCG(gain=signed)@5",
    "DCG(rel=2)@4",
    "DCG(log_base=10.0)@3",
    "DCG(gains=0:1;2:5)@4",
    "nDCG(rel=2)@5",
    "nDCG(gain=exp,rel=2)",
    "RBP(gain=linear,p=0.95)",
    "RBP(gain=linear,p=0.5,rel=2)",
    "AP(norm=found)@5",
    "AP(norm=found)",
    "P(adaptive_k=True)@5",
    "P(adaptive_k=True,rel=2)@50",
    "FallOut@3",
    "FallOut",
    "AUROC@4",
    "AUROC",
]
TOL = 1e-12


def reference_judged(
    run: pl.DataFrame,
    qrels: pl.DataFrame,
    *,
    order: str = "score",
    depth: int | None = None,
    missing: str = "drop",
    single_precision: bool = False,
) -> tuple[pl.DataFrame, list[str]]:
    """The judged table built the obvious way, and its key columns."""
    keys = ["system", "query"] if "system" in run.columns else ["query"]
    run = run.with_columns(pl.col("query", "doc").cast(pl.String))
    qrels = qrels.with_columns(pl.col("query", "doc").cast(pl.String))
    if order == "presorted":
        ranked = run.with_row_index("__order")
    else:
        value = pl.col("score") if order == "score" else -pl.col("rank").cast(pl.Float64)
        if single_precision:
            value = value.cast(pl.Float32)
        ranked = run.with_columns(__value=value.cast(pl.Float64)).sort(
            [*keys, "__value", "doc"], descending=[False] * len(keys) + [True, True]
        )
        ranked = ranked.with_row_index("__order")
    ranked = ranked.sort("__order").with_columns(
        rank=pl.int_range(1, pl.len() + 1, dtype=pl.UInt32).over(keys)
    )
    if depth is not None:
        ranked = ranked.filter(pl.col("rank") <= depth)
    retrieved = ranked.join(qrels, on=["query", "doc"], how="left").select(
        *keys, "doc", "rank", "relevance"
    )
    rankings = run.select(keys).unique()
    if missing == "zero":
        queries = qrels.select("query").unique()
        systems = run.select("system").unique() if "system" in keys else None
        every = queries if systems is None else systems.join(queries, how="cross")
        rankings = pl.concat([rankings, every]).unique()
    missed = (
        rankings.join(qrels, on="query")
        .join(retrieved.filter(pl.col("relevance").is_not_null()), on=[*keys, "doc"], how="anti")
        .select(*keys, "doc", pl.lit(None, pl.UInt32).alias("rank"), "relevance")
    )
    table = pl.concat([retrieved, missed.with_columns(pl.col("relevance").cast(pl.Int64))])
    judged_queries = qrels.select("query").unique()
    table = table.join(judged_queries, on="query", how="semi")
    return table.sort([*keys, "rank"], nulls_last=True, maintain_order=True), keys


def reference_values(
    run: pl.DataFrame,
    qrels: pl.DataFrame,
    measures: list[str],
    rel_level: int = 1,
    iprec_rounding: str = "v10",
    **kw,
) -> pl.DataFrame:
    """Every measure's aggregation expression over the reference judged table."""
    table, keys = reference_judged(run, qrels, **kw)
    ctx = Context(rel_level=rel_level, iprec_rounding=iprec_rounding)
    exprs = [parse(m).expr(ctx) for m in measures]
    return table.group_by(keys, maintain_order=True).agg(exprs).sort(keys)


def engine_values(run, qrels, measures, **kw) -> pl.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        out = pr.evaluate(run, qrels, measures, **kw)
    return out.with_columns(pl.col("query").cast(pl.String))


def assert_same(got: pl.DataFrame, want: pl.DataFrame) -> None:
    """Equal keys; values equal up to the order of float summation."""
    got = got.select(want.columns)
    assert_frame_equal(got, want, check_exact=False, rel_tol=TOL, abs_tol=TOL)


def test_every_family_has_a_sample():
    """Every family the engine scores (the measures of lists and of catalogues are
    compared with their peers in tests/test_recsys.py)."""
    engine = {name for name, f in REGISTRY.items() if not (f.over_lists or f.over_catalog)}
    assert {parse(m).family.name for m in SAMPLES} == engine


OPTIONS = [
    {},
    {"depth": 4},
    {"depth": 0},
    {"missing": "zero"},
    {"rel_level": 2},
    {"rel_level": 0},
    {"order": "rank"},
    {"order": "presorted"},
]


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("systems", [1, 3])
@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(map(str, o.items())) or "-")
@pytest.mark.parametrize("seed", [0, 1])
def test_engine_equals_reference(seed, options, systems, shuffle):
    run, qrels = random_corpus(seed, n_queries=25, systems=systems)
    if options.get("order") == "rank":  # ranks that disagree with the scores, with ties
        run = run.with_columns(rank=(pl.col("score") * 7 + pl.col("doc").str.len_bytes()) % 5)
    if shuffle:  # rankings no longer contiguous
        run = run.sample(fraction=1.0, shuffle=True, seed=seed)
    rel_level = options.get("rel_level", 1)
    reference_kw = {k: v for k, v in options.items() if k != "rel_level"}
    want = reference_values(run, qrels, SAMPLES, rel_level, **reference_kw)
    got = engine_values(run, qrels, SAMPLES, **options)
    assert got.height > 0
    assert_same(got, want)


@pytest.mark.parametrize("rel_level", [1, 2, 0])
def test_each_measure_alone_reads_all_it_needs(rel_level):
    # Alone, a measure gets only the judged rows of the grades it declares it reads
    # (Measure.lowest_grade): a wrong declaration changes its value here.
    run, qrels = random_corpus(11, n_queries=30, systems=2)
    assert set(qrels["relevance"].unique()) >= {-1, 0, 1, 2}
    want = reference_values(run, qrels, SAMPLES, rel_level)
    judged = pr.judge(run, qrels)
    for name in SAMPLES:
        column = str(parse(name))
        got = engine_values(run, qrels, [name], rel_level=rel_level)
        assert_same(got, want.select("system", "query", column))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
            logs = pr.evaluate_judged(judged, [name], rel_level=rel_level)
        logs = logs.with_columns(pl.col("query").cast(pl.String))
        assert_same(logs, want.select("system", "query", column))


def test_measures_of_relevant_documents_select_fewer_rows():
    ctx = Context(rel_level=2)
    assert parse("AP").lowest_grade(ctx) == 2
    assert parse("P(rel=1)@5").lowest_grade(ctx) == 1
    assert parse("nDCG@10").lowest_grade(ctx) == 1
    assert parse("nDCG(gains=0:1;2:5)").lowest_grade(ctx) == 0
    assert parse("NumRet").lowest_grade(ctx) == math.inf
    assert parse("Bpref").lowest_grade(ctx) == 2  # the judged non-relevant rows: counted
    assert parse("Judged@10").lowest_grade(ctx) == -math.inf
    run, qrels = random_corpus(12, n_queries=10)
    options = run_options(run.schema, qrels.schema)
    every, graded = (
        pipeline.judged_piece(run, qrels, options, reads=select.Reads(grade))
        for grade in (-math.inf, 2)
    )
    assert every.rows[GRADE].min() < 2 <= graded.rows[GRADE].min()
    assert graded.rows.height == every.rows.filter(pl.col(GRADE) >= 2).height
    assert graded.judgments[GRADE].min() >= 2
    assert graded.rankings.equals(every.rankings)  # the same rankings are scored


COUNTED = [m for m in SAMPLES if parse(m).lowest_grade(Context()) >= 1]
"""SAMPLES but the measures that read grade 0 or every judged row: Bpref, infAP and
NumNonRelJudgedRet then read the judged non-relevant rows as counts."""


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(map(str, o.items())) or "-")
def test_rows_counted_not_carried_give_the_reference_values(options, shuffle):
    run, qrels = random_corpus(21, n_queries=25, systems=2)
    if options.get("order") == "rank":
        run = run.with_columns(rank=(pl.col("score") * 7 + pl.col("doc").str.len_bytes()) % 5)
    if shuffle:
        run = run.sample(fraction=1.0, shuffle=True, seed=21)
    rel_level = options.get("rel_level", 1)
    measures = [*COUNTED, "Bpref(rel=2)", "infAP(rel=2)", "NumNonRelJudgedRet(rel=2)"]
    reads = pipeline.measure_reads(
        [parse(m) for m in measures], Context(rel_level=rel_level), get_conventions(None)
    )
    assert reads.counted and reads.rows == min(rel_level, 1)
    reference_kw = {k: v for k, v in options.items() if k != "rel_level"}
    want = reference_values(run, qrels, measures, rel_level, **reference_kw)
    assert_same(engine_values(run, qrels, measures, **options), want)


def test_rows_under_the_lowest_grade_read_are_counted():
    run, qrels = random_corpus(22, n_queries=20, systems=2)
    options = run_options(run.schema, qrels.schema)

    def shape(reads):
        return pipeline.judged_piece(run, qrels, options, reads=reads)

    every, counted = shape(select.EVERY_ROW), shape(select.Reads(2, counted=True))
    assert counted.rows.select(RANKING, RANK, GRADE).equals(every.rows.filter(pl.col(GRADE) >= 2))
    nonrel = ((pl.col(GRADE) >= 0) & (pl.col(GRADE) < 2)).cast(pl.UInt32)
    unjudged = (pl.col(GRADE) < 0).cast(pl.UInt32)
    want = every.rows.with_columns(
        (nonrel.cum_sum() - nonrel).over(RANKING).alias(LEFT_NONREL_ABOVE),
        (unjudged.cum_sum() - unjudged).over(RANKING).alias(LEFT_UNJUDGED_ABOVE),
    ).filter(pl.col(GRADE) >= 2)
    assert counted.rows.select(LEFT_NONREL_ABOVE, LEFT_UNJUDGED_ABOVE).equals(
        want.select(LEFT_NONREL_ABOVE, LEFT_UNJUDGED_ABOVE)
    )
    assert counted.rows[LEFT_NONREL_ABOVE].sum() > 0 and counted.rows[LEFT_UNJUDGED_ABOVE].sum() > 0
    per_ranking = every.rows.group_by(RANKING).agg(nonrel.sum().alias("n"))
    retrieved = every.rankings.join(per_ranking, on=RANKING, how="left")["n"].fill_null(0)
    assert counted.rankings[LEFT_NONREL_RET].to_list() == retrieved.to_list()
    assert counted.judgments.equals(every.judgments.filter(pl.col(GRADE) >= 2))
    per_query = every.judgments.group_by(FACT).agg(nonrel.sum().alias("n"))
    judged = every.rankings.join(per_query, on=FACT, how="left")["n"].fill_null(0)
    assert counted.rankings[LEFT_NONREL_JUDGED].to_list() == judged.to_list()
    assert judged.sum() > 0


@pytest.mark.parametrize("conventions", [None, "sklearn", "trec_eval-9"])
def test_counted_rows_equal_every_row_kept(conventions):
    # Judged@3 reads every judged row, so with it nothing is counted: the values of the
    # other measures must not change, on a run and on a pre-judged table.
    run, qrels = random_corpus(23, n_queries=25, systems=2)
    measures = ["AP", "Bpref", "infAP", "GMBpref", "NumNonRelJudgedRet", "Bpref(rel=2)"]
    counted = engine_values(run, qrels, measures, conventions=conventions)
    every = engine_values(run, qrels, [*measures, "Judged@3"], conventions=conventions)
    assert_frame_equal(counted, every.drop("Judged@3"))
    table = pr.judge(run, qrels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        logs = pr.evaluate_judged(table, measures, conventions=conventions)
        logs_every = pr.evaluate_judged(table, [*measures, "Judged@3"], conventions=conventions)
    assert_frame_equal(logs, logs_every.drop("Judged@3"))
    if conventions is None:  # (the others average over tied scores, which a table lacks)
        assert_same(logs.with_columns(pl.col("query").cast(pl.String)), counted)


@pytest.mark.parametrize("seed", [3, 4])
def test_lazy_and_judged_inputs_equal_the_dataframe_path(seed):
    run, qrels = random_corpus(seed, n_queries=25, systems=2)
    frame = engine_values(run, qrels, SAMPLES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.UnscoredQueriesWarning)
        lazy = pr.evaluate(run.lazy(), qrels.lazy(), SAMPLES).collect()
    assert_frame_equal(lazy.with_columns(pl.col("query").cast(pl.String)), frame)
    table = pr.judge(run, qrels)
    no_qrels = run["query"].unique().filter(~run["query"].unique().is_in(qrels["query"].implode()))
    assert no_qrels.len() > 0  # judge gives them null grades: evaluate_judged leaves them out
    with pytest.warns(pr.UnscoredQueriesWarning, match="have no judged row"):
        judged = pr.evaluate_judged(table, SAMPLES)
    assert_same(judged.with_columns(pl.col("query").cast(pl.String)), frame)


def test_single_precision_scores_tie_under_trec_eval_9():
    run = pl.DataFrame(
        {"query": ["q"] * 3, "doc": ["a", "b", "c"], "score": [7.0000001, 7.00000005, 1.0]}
    )
    qrels = pl.DataFrame({"query": ["q"], "doc": ["a"], "relevance": [1]})
    # doubles: a (7.0000001) is first; single precision: a and b tie, b wins on doc id
    assert pr.evaluate(run, qrels, ["RR"])["RR"].item() == 1.0
    assert pr.evaluate(run, qrels, ["RR"], conventions="trec_eval-9")["RR"].item() == 0.5
    run2, qrels2 = random_corpus(5, n_queries=20)
    run2 = run2.with_columns(pl.col("score") + pl.Series(np.linspace(0, 1e-7, run2.height)))
    want = reference_values(run2, qrels2, SAMPLES, single_precision=True, iprec_rounding="v9")
    assert_same(engine_values(run2, qrels2, SAMPLES, conventions="trec_eval-9"), want)


@pytest.mark.parametrize("key_bits", [30, 24])
def test_few_bits_for_the_score_change_nothing(monkeypatch, key_bits):
    """With few bits left for the score, most rows tie on the packed key and are
    ordered by the exact stage."""
    run, qrels = random_corpus(7, n_queries=25, systems=2, tie_levels=40)
    want = engine_values(run, qrels, SAMPLES)
    monkeypatch.setattr(engine_rank, "_KEY_BITS", key_bits)
    assert_same(engine_values(run, qrels, SAMPLES), want)


@pytest.mark.parametrize("slice_rows", [1, 37, 500])
def test_work_split_in_slices_changes_nothing(monkeypatch, slice_rows):
    run, qrels = random_corpus(8, n_queries=25, systems=2)
    want = engine_values(run, qrels, SAMPLES)
    monkeypatch.setattr(engine_rank, "_SLICE_ROWS", slice_rows)
    assert_same(engine_values(run, qrels, SAMPLES), want)


@settings(max_examples=40, deadline=None)
@given(
    scores=st.lists(
        st.one_of(
            st.floats(allow_nan=False, width=64),
            st.sampled_from([0.0, -0.0, 1e-308, 5e-324, -5e-324, 1.0, 1.0 + 2**-52]),
        ),
        min_size=1,
        max_size=40,
    ),
    grades=st.lists(st.integers(-1, 3), min_size=1, max_size=40),
)
def test_special_floats_rank_as_the_reference(scores, grades):
    n = len(scores)
    run = pl.DataFrame(
        {
            "query": [f"q{i % 3}" for i in range(n)],
            "doc": [f"d{i}" for i in range(n)],
            "score": scores,
        }
    )
    judged_queries = [f"q{i % 3}" for i in range(len(grades))]
    judged_docs = [f"d{(i * 7) % (n + 3)}" for i in range(len(grades))]
    qrels = pl.DataFrame({"query": judged_queries, "doc": judged_docs, "relevance": grades})
    qrels = qrels.unique(["query", "doc"])
    measures = ["AP", "RR", "nDCG@3", "Bpref", "IPrec@0.5", "NumRet", "G", "Rndcg"]
    assert_same(engine_values(run, qrels, measures), reference_values(run, qrels, measures))


def test_integer_scores_are_ordered_exactly():
    """Nanosecond timestamps as scores: distinct above 2^53, equal as doubles."""
    base = 1_700_000_000_000_000_000
    run = pl.DataFrame({"query": ["q"] * 3, "doc": ["a", "b", "c"], "score": [base, base + 1, 5]})
    qrels = pl.DataFrame({"query": ["q"], "doc": ["b"], "relevance": [1]})
    assert float(base) == float(base + 1)
    assert pr.evaluate(run, qrels, ["RR"])["RR"].item() == 1.0  # b outranks a by one ns
    assert pr.judge(run, qrels)["doc"].to_list() == ["b", "a", "c"]


def test_unsigned_and_float_rank_columns():
    run = pl.DataFrame({"query": ["q"] * 3, "doc": ["a", "b", "c"], "score": [1.0, 2.0, 3.0]})
    qrels = pl.DataFrame({"query": ["q"], "doc": ["a"], "relevance": [1]})
    for dtype in (pl.UInt32, pl.UInt8, pl.Int16, pl.Float32):
        ranked = run.with_columns(rank=pl.Series([1, 2, 3], dtype=dtype))
        assert pr.evaluate(ranked, qrels, ["RR"], order="rank")["RR"].item() == 1.0


def test_a_hash_collision_cannot_match_different_documents():
    """Every run row hashes alike here: only the id check tells the true matches."""
    run = pl.DataFrame({"query": ["q", "q", "r"], "doc": ["a", "b", "a"]})
    qrels = pl.DataFrame({"query": ["q", "r", "r"], "doc": ["b", "a", "c"], "relevance": [1] * 3})
    same_hash = pl.Series([7, 7, 7], dtype=pl.UInt64)
    options = run_options(run.schema, qrels.schema, order="presorted")
    side = select.qrels_side(qrels, options)
    assert side.facts["query"].to_list() == ["q", "r"]  # query ids 0 and 1
    order = join.HashOrder.of(same_hash)
    keys = join.qrels_keys(qrels, options, -math.inf, check=True)
    keys = dataclasses.replace(keys, hashes=same_hash, by_hash=order.frame(join.JUDGMENT))
    assert not order.distinct(same_hash.to_numpy())
    merged = order.frame(join.ROW).join(keys.by_hash, on=join.KEY)
    for found, was_merged in ((join._hash_join(same_hash, keys), False), (merged, True)):
        rows, judgments = join._exact(run["doc"], found, keys, merged=was_merged)
        same = select._same_query(judgments, np.array([0, 0, 1])[rows], side)  # their queries
        rows, judgments = rows[same], judgments[same]
        assert sorted(zip(rows.tolist(), judgments.tolist(), strict=True)) == [(1, 0), (2, 1)]


@settings(max_examples=200, deadline=None)
@given(
    tops=st.lists(st.integers(0, 3), min_size=1, max_size=30),
    lows=st.lists(st.integers(0, 2), min_size=30, max_size=30),
)
def test_hash_order_finds_equal_hashes(tops, lows):
    """Rows share their top bits often here, in groups of three and more."""
    hashes = np.array([(t << 32) + lo for t, lo in zip(tops, lows, strict=False)], np.uint64)
    order = join.HashOrder.of(pl.Series(hashes))
    rows = (order.packed & np.uint64(2**32 - 1)).astype(np.intp)
    assert sorted(rows.tolist()) == list(range(len(hashes)))
    assert order.top.tolist() == sorted((hashes >> np.uint64(32)) << np.uint64(32))
    assert np.array_equal(order.top >> np.uint64(32), hashes[rows] >> np.uint64(32))
    assert order.distinct(hashes) == (len(set(hashes.tolist())) == len(hashes))


@pytest.mark.parametrize("concurrent", [True, False])
def test_the_qrels_parts_are_made_once(concurrent):
    """The join asks for the qrels' keys, the rest for the qrels side: each made once."""
    run = pl.DataFrame({"query": ["q", "q", "r"], "doc": ["a", "b", "a"], "score": [2.0, 1, 1]})
    qrels = pl.DataFrame({"query": ["q", "r"], "doc": ["b", "a"], "relevance": [1, 1]})
    options = run_options(run.schema, qrels.schema)
    made = []

    def side() -> select.QrelsSide:
        made.append("side")
        return select.qrels_side(qrels, options)

    def keys() -> join.QrelsKeys:
        made.append("keys")
        return join.qrels_keys(qrels, options, -math.inf, check=True)

    matched = select.match_and_rank(
        run, options, side, keys, order="score", duplicates="error", check=True,
        concurrent=concurrent,
    )  # fmt: skip
    assert matched.run_rows.tolist() == [1, 2]
    assert sorted(made) == ["keys", "side"]


@pytest.mark.parametrize("systems", [1, 2], ids=["merge", "hash join"])
def test_the_run_duplicates_are_named_before_the_qrels(systems):
    run = pl.DataFrame({"query": ["q"] * 3, "doc": ["a", "a", "b"], "score": [3.0, 2, 1]})
    if systems == 2:
        run = run.with_columns(system=pl.Series(["s", "s", "t"]))
    qrels = pl.DataFrame({"query": ["q", "q"], "doc": ["b", "b"], "relevance": [1, 0]})
    with pytest.raises(ValueError, match="run") as raised:
        pr.evaluate(run, qrels, ["P@1"])
    assert "qrels" not in str(raised.value)
    with pytest.raises(ValueError, match="qrels"):
        pr.evaluate(run.unique(["query", "doc"], keep="first", maintain_order=True), qrels, ["P@1"])


@pytest.mark.parametrize("order", [[0, 1, 2, 3], [0, 2, 1, 3]], ids=["contiguous", "interleaved"])
def test_duplicate_rows_are_refused(order):
    run = pl.DataFrame(
        {
            "system": ["s", "s", "t", "t"],
            "query": ["q"] * 4,
            "doc": ["a", "a", "a", "b"],
            "score": [1.0, 2.0, 1.0, 0.5],
        }
    )[order]
    qrels = pl.DataFrame({"query": ["q"], "doc": ["a"], "relevance": [1]})
    with pytest.raises(ValueError, match=r"run has duplicate rows for \(system='s', query='q'"):
        pr.evaluate(run, qrels, ["AP"])
    with pytest.raises(ValueError, match=r"run has duplicate rows for \(system='s', query='q'"):
        pr.evaluate(run.lazy(), qrels, ["AP"]).collect()
    # the same doc in two systems is no duplicate
    fine = run.filter(~((pl.col("system") == "s") & (pl.col("score") == 2.0)))
    assert pr.evaluate(fine, qrels, ["AP"])["AP"].to_list() == [1.0, 1.0]


@pytest.mark.parametrize("order", ["score", "rank", "presorted"])
def test_keep_best_keeps_one_row_per_document_in_every_order(order):
    """The best copy: highest score, lowest rank, or the first row."""
    run = pl.DataFrame(
        {
            "query": ["q"] * 4,
            "doc": ["x", "y", "z", "y"],
            "score": [4.0, 1.0, 3.0, 3.5],
            "rank": [1, 4, 3, 2],
        }
    )
    qrels = pl.DataFrame({"query": ["q", "q"], "doc": ["y", "w"], "relevance": [1, 1]})
    out = pr.evaluate(
        run, qrels, ["NumRelRet", "NumRet", "RR"], order=order, duplicates="keep_best"
    )
    expected_rr = {"score": 0.5, "rank": 0.5, "presorted": 0.5}[order]
    assert out.row(0) == ("q", 1.0, 3.0, expected_rr)


@pytest.mark.filterwarnings("ignore::polars_rankeval.UnscoredQueriesWarning")
def test_many_chunk_frames_score_as_one_chunk():
    """A frame read from Parquet comes in many chunks; gathers go chunk by chunk."""
    run, qrels = random_corpus(11, n_queries=30, systems=2)
    pieces = [run[i : i + 97] for i in range(0, run.height, 97)]
    chunked = pl.concat(pieces, rechunk=False)
    assert chunked.n_chunks() > 5
    assert_frame_equal(pr.evaluate(chunked, qrels, SAMPLES), pr.evaluate(run, qrels, SAMPLES))


@settings(max_examples=100, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 6), min_size=1, max_size=6),
    picks=st.lists(st.integers(0, 10_000), max_size=20),
)
def test_gather_sorted_equals_gather(sizes, picks):
    parts = [
        pl.Series([f"v{i}-{j}" for j in range(n)], dtype=pl.String) for i, n in enumerate(sizes)
    ]
    column = pl.concat(parts, rechunk=False)
    if column.len() == 0:
        return
    rows = np.array(sorted({p % column.len() for p in picks}), dtype=np.int64)
    want = column.gather(rows).to_list()
    for few in (0, 1, 500):  # chunk by chunk, either, from the whole column
        assert engine_rank.gather_sorted(column, rows, few=few).to_list() == want


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(st.floats(allow_nan=False, width=64), min_size=1, max_size=50),
    bits=st.integers(0, 62),
)
def test_score_bits_never_swap_two_scores(values, bits):
    """The packed score: order keys, less their minimum, shifted by ``fit``."""
    x = np.array(values, dtype=np.float64)
    full = engine_rank.order_key(x.copy(), descending=True)
    low = int(full.min())
    keys = (full - np.uint64(low)) >> np.uint64(engine_rank.fit(low, int(full.max()), bits))
    assert int(keys.max()) < 2**bits or (bits == 0 and int(keys.max()) == 0)
    order = np.argsort(-x, kind="stable")  # descending scores
    assert np.all(np.diff(keys[order].astype(np.float64)) >= 0)
    # all 64 bits: distinct scores, distinct keys (-0.0 is 0.0)
    same = full[:, None] == full[None, :]
    assert np.array_equal(same, x[:, None] == x[None, :])


@settings(max_examples=150, deadline=None)
@given(
    scores=st.lists(st.integers(0, 3), min_size=2, max_size=40),
    queries=st.integers(1, 3),
    picks=st.lists(st.integers(0, 2), min_size=40, max_size=40),
    depth=st.one_of(st.none(), st.integers(1, 12)),
)
def test_ranks_beside_place_the_counted_rows_as_their_ranks(scores, queries, picks, depth):
    """Against the rows ranked exactly, and at the depth cut, a counted row's rank from
    its sorted position says what its exact rank says, ties included."""
    n = len(scores)
    run = pl.DataFrame(
        {
            "query": [f"q{i % queries}" for i in range(n)],
            "doc": [f"d{(37 * i) % 41}" for i in range(n)],  # distinct, not in row order
            "score": [float(s) for s in scores],
        }
    )
    qrels_schema = pl.Schema({"query": pl.String, "doc": pl.String, "relevance": pl.Int64})
    options = run_options(run.schema, qrels_schema, order="score")
    groups = engine_rank.Groups.of(run, ["query"])
    order = select.rank_order_of(run, options, groups, "score", False)
    exact = order.ranks(np.arange(n))
    role = np.array(picks[:n])  # 0: ranked, 1: counted, 2: neither
    ranked, counted = np.flatnonzero(role == 0), np.flatnonzero(role == 1)
    ranks, spans = order.ranked(ranked)
    assert np.array_equal(ranks, exact[ranked])
    beside = order.ranks_beside(counted, spans, depth)
    same = groups.ids[counted][:, None] == groups.ids[ranked][None, :]
    above = beside[:, None] < ranks[None, :]
    assert np.array_equal(above & same, (exact[counted][:, None] < ranks[None, :]) & same)
    if depth is not None:
        assert np.array_equal(beside <= depth, exact[counted] <= depth)


@pytest.mark.parametrize("depth", [None, 3, 7])
@pytest.mark.parametrize("rel_level", [1, 2])
def test_counted_rows_score_as_the_reference_at_a_depth(depth, rel_level):
    """Bpref and infAP alone count the judged rows under the grades they rank; many ties."""
    run, qrels = random_corpus(5, n_queries=30, systems=2)
    kw = {} if depth is None else {"depth": depth}
    measures = ["Bpref", "infAP", "NumNonRelJudgedRet"]
    want = reference_values(run, qrels, measures, rel_level, **kw)
    assert_same(engine_values(run, qrels, measures, rel_level=rel_level, **kw), want)


@pytest.mark.filterwarnings("ignore::polars_rankeval.UnscoredQueriesWarning")
@pytest.mark.parametrize("shared", [True, False], ids=["same-categories", "own-categories"])
def test_categorical_ids_score_as_strings(shared):
    run, qrels = random_corpus(12, n_queries=20)
    categories = [pl.Categories.random() for _ in range(2)]
    run_c = run.with_columns(pl.col("query", "doc").cast(pl.Categorical(categories[0])))
    qrels_c = qrels.with_columns(
        pl.col("query", "doc").cast(pl.Categorical(categories[0 if shared else 1]))
    )
    got = pr.evaluate(run_c, qrels_c, SAMPLES).with_columns(pl.col("query").cast(pl.String))
    assert_frame_equal(got, pr.evaluate(run, qrels, SAMPLES))


def _qrels(rows: list[tuple[str, str, int]]) -> pl.DataFrame:
    schema = {"query": pl.String, "doc": pl.String, "relevance": pl.Int64}
    return pl.DataFrame(rows, schema=schema, orient="row")


EDGE_QRELS = {
    "empty": _qrels([]),
    "only-grade-0": _qrels([("q1", "a", 0), ("q3", "z", 0)]),
    "negative-and-missed": _qrels([("q1", "a", -1), ("q1", "x", 2), ("q2", "c", 1)]),
}


@pytest.mark.parametrize("missing", ["drop", "zero"])
@pytest.mark.parametrize("case", list(EDGE_QRELS))
def test_edge_qrels_score_as_the_reference(case, missing):
    run = pl.DataFrame({"query": ["q1", "q1", "q2"], "doc": ["a", "b", "c"], "score": [1.0, 2, 3]})
    for r in (run, run.head(1)):
        want = reference_values(r, EDGE_QRELS[case], SAMPLES, missing=missing)
        assert_same(engine_values(r, EDGE_QRELS[case], SAMPLES, missing=missing), want)


def test_one_document_per_ranking():
    run = pl.DataFrame({"query": [f"q{i}" for i in range(300)], "doc": "d", "score": 1.0})
    qrels = _qrels([(f"q{i}", "d", 1) for i in range(0, 300, 3)])
    got = engine_values(run, qrels, SAMPLES)
    assert got.height == 100
    assert_same(got, reference_values(run, qrels, SAMPLES))


def test_engine_matches_trec_eval_on_shuffled_runs():
    run, qrels = random_corpus(13, n_queries=30)
    run = run.sample(fraction=1.0, shuffle=True, seed=1)
    measures = ["AP", "P@5", "nDCG@10", "RR", "Rprec"]
    ours = engine_values(run, qrels, measures)
    assert mismatches(ours, pytrec_reference(run, qrels, measures), measures) == []


def test_scoring_leaves_the_cached_formulas_unchanged():
    # aggregate() reuses one Features per measure set (pipeline.formulas is cached), so
    # Features.evaluate must not register anything: a second piece sees the same features
    run, qrels = random_corpus(3, n_queries=20)
    options = run_options(run.schema, qrels.schema)
    features, values = pipeline.formulas(tuple(parse(m) for m in SAMPLES), options.context)
    before = {k: dict(v) for k, v in vars(features).items() if isinstance(v, dict)}
    features.evaluate(
        pipeline.judged_piece(*pipeline.piece_columns(run, qrels, options), options), values
    )
    after = {k: dict(v) for k, v in vars(features).items() if isinstance(v, dict)}
    assert after.keys() == before.keys()
    assert all(after[k].keys() == before[k].keys() for k in before)


@pytest.mark.parametrize("systems", [1, 2])
def test_a_piece_scores_the_same_with_and_without_its_second_threads(systems, monkeypatch):
    # every piece this size gets the aggregation's second thread too (not only large ones)
    monkeypatch.setattr(features, "_THREADED_ROWS", 0)
    run, qrels = random_corpus(8, n_queries=30, systems=systems)
    options = run_options(run.schema, qrels.schema)
    measures = [parse(m) for m in SAMPLES]
    together, alone = (
        pipeline.score_piece(run, qrels, measures, options, concurrent=c) for c in (True, False)
    )
    assert_frame_equal(together.scores, alone.scores)
    assert_frame_equal(together.no_qrels, alone.no_qrels)


@pytest.mark.parametrize("concurrent", [True, False])
def test_the_runs_duplicates_are_named_before_the_qrels(concurrent):
    run, qrels = random_corpus(9, n_queries=5)
    options = run_options(run.schema, qrels.schema)
    both = (pl.concat([run, run.head(1)]), pl.concat([qrels, qrels.head(1)]))
    with pytest.raises(ValueError, match=r"^run has duplicate rows"):
        pipeline.score_piece(*both, [parse("AP")], options, concurrent=concurrent)
    with pytest.raises(ValueError, match=r"^qrels has duplicate rows"):
        pipeline.score_piece(run, both[1], [parse("AP")], options, concurrent=concurrent)


def test_ideal_running_sums_equal_their_window_fallback(monkeypatch):
    """IDCG@k, Rndcg, nDCGRel and G read running sums over each query's ideal
    positions, added in a (query x position) table; queries too uneven for the table
    have them added by a window function instead, one position after the other too:
    the same values."""
    run, qrels = random_corpus(5, n_queries=30, systems=2)
    measures = ["Rndcg", "nDCGRel", "G", "nDCG", "nDCG@5", "Rndcg(gains=1:1;2:5)"]
    want = pr.evaluate(run, qrels, measures)
    monkeypatch.setattr(features, "accumulate_within", lambda *args, **kwargs: None)
    assert_frame_equal(pr.evaluate(run, qrels, measures), want)


@pytest.mark.parametrize("n_gains", [3, 5000], ids=["grades", "fractional gains"])
def test_gain_counts_equal_a_group_by(n_gains):
    """One count per (query, gain) cell, or the group-by it falls back to past a table
    much larger than the judgments: the same counts, in the same order."""
    rng = np.random.default_rng(n_gains)
    gains = rng.integers(1, n_gains + 1, 20_000) / (1 if n_gains < 10 else 7)
    positive = pl.DataFrame(
        {
            features.FACT: pl.Series(rng.integers(0, 300, 20_000), dtype=pl.UInt32),
            features.IDEAL_GAIN: gains.astype(np.float64),
        }
    )
    by = [features.FACT, features.IDEAL_GAIN]
    expected = positive.group_by(by).len().sort(by, descending=[False, True])
    assert_frame_equal(features.gain_counts(positive), expected)
    assert features.gain_counts(positive.clear()).height == 0
