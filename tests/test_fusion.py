"""pr.fuse against ranx 0.3.21 (every method x normalisation) and trectools 0.0.50.

ranx orders a ranking with numba's ``np.argsort`` (a quicksort: equal scores in an
unspecified order past 15 documents), and its Borda normalisation lists the
candidates in Python set order, which then is the ranks the rank-based methods read.
So that the comparison is of the formulas, not of those tie orders, the reference
(:func:`ranx_fuse`) runs ranx's own normalisation and fusion functions
(``ranx.normalization.norm_switch``, ``ranx.fusion.fusion_switch``, as
``ranx.meta.fuse`` calls them) with each normalised ranking re-listed in the order
pr.fuse ranks it: score descending, ties by doc id descending.
:func:`test_ranx_fuse_itself` checks the same data through ``ranx.fuse`` itself
wherever no tie order is involved.
"""

from __future__ import annotations

import math
import random

import numpy as np
import polars as pl
import pytest
from numba import types
from numba.typed import Dict as TypedDict
from ranx import Run
from ranx import fuse as ranx_fuse_direct
from ranx.fusion import fusion_switch
from ranx.normalization import norm_switch

import polars_rankeval as pr
from polars_rankeval.fusion import METHODS, NORMALIZATIONS

TOL = 1e-9


def random_runs(seed: int, n_runs: int = 2, n_queries: int = 12, pool: int = 14,
                max_docs: int = 12, ties: bool = True, absent: float = 0.15,
                ) -> dict[str, pl.DataFrame]:  # fmt: skip
    """Runs with tied scores, partial overlap, and queries some runs lack."""
    rng = random.Random(seed)
    runs = {}
    for i in range(n_runs):
        rows = []
        for q in range(n_queries):
            if rng.random() < absent:  # this run lacks the query
                continue
            docs = rng.sample(range(pool), rng.randint(1, max_docs))
            for d in docs:
                score = round(rng.uniform(-2, 5), 1) if ties else rng.uniform(-2, 5)
                rows.append((f"q{q:02d}", f"d{d:02d}", score))
        runs[f"r{i}"] = pl.DataFrame(rows, schema=["query", "doc", "score"], orient="row")
    return runs


def ordered_docs(docs: dict[str, float]) -> list[tuple[str, float]]:
    """Score descending, ties by doc id descending (pr.fuse's ranking order)."""
    by_doc = sorted(docs.items(), key=lambda kv: kv[0], reverse=True)
    return sorted(by_doc, key=lambda kv: -kv[1])


def relisted(run: Run, queries: list[str]) -> Run:
    """The same ranx run, each ranking re-listed in :func:`ordered_docs` order, with
    an empty ranking for each of ``queries`` it lacks (ranx needs equal query sets)."""
    out = Run()
    out.name = run.name
    current = {q: dict(run.run[q]) for q in run.run.keys()}
    for q in queries:
        inner = TypedDict.empty(key_type=types.unicode_type, value_type=types.float64)
        for d, s in ordered_docs(current.get(q, {})):
            inner[d] = s
        out.run[q] = inner
    return out


def to_ranx(runs: dict[str, pl.DataFrame], pad: bool = True) -> list[Run]:
    """ranx runs, each padded with empty rankings for the queries it lacks (``pad``)."""
    everyone = sorted({q for f in runs.values() for q in f["query"].to_list()})
    out = []
    for name, frame in runs.items():
        nested: dict[str, dict[str, float]] = {}
        for q, d, s in frame.iter_rows():
            nested.setdefault(q, {})[d] = s
        run = Run.from_dict(nested, name=name)
        out.append(relisted(run, everyone if pad else sorted(nested)))
    return out


def ranx_fuse(runs: dict[str, pl.DataFrame], norm, method, params) -> dict:
    """ranx.meta.fuse's steps, each normalised ranking re-listed (module docstring)."""
    rx = to_ranx(runs)
    queries = list(rx[0].run.keys())
    if norm is None:
        normed = rx
    elif norm == "borda":
        normed = norm_switch(norm)(rx)
    else:  # each run over its own rankings: ranx's zmuv on an empty one (numba's
        # np.mean of nothing) empties the run's other rankings
        normed = [norm_switch(norm)(r) for r in to_ranx(runs, pad=False)]
    normed = [relisted(r, queries) for r in normed]
    fused = fusion_switch(method)(normed, **params)
    return {(q, d): s for q in fused.run.keys() for d, s in fused.run[q].items()}


def ours(runs, norm, method, params, **kw) -> dict:
    weights = params.get("weights")
    rest = {k: v for k, v in params.items() if k != "weights"}
    out = pr.fuse(runs, method=method, norm=norm, weights=weights, params=rest or None, **kw)
    return {(q, d): s for q, d, s, _ in out.iter_rows()}


def method_params(method: str, n_runs: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    weights = [round(float(w), 3) for w in rng.uniform(0.1, 1.0, n_runs)]
    return {
        "gmnz": {"gamma": 0.7},
        "rbc": {"phi": 0.8},
        "rrf": {"k": 60},
        "logn_isr": {"sigma": 0.01},
        "wsum": {"weights": weights},
        "wmnz": {"weights": weights},
        "mixed": {"weights": weights},
        "w_bordafuse": {"weights": weights},
        "w_condorcet": {"weights": weights},
        "probfuse": {"probs": [rng.uniform(0, 1, 4) for _ in range(n_runs)]},
        "segfuse": {"probs": [rng.uniform(0, 1, 10) for _ in range(n_runs)]},
        "slidefuse": {"probs": [rng.uniform(0, 1, 9) for _ in range(n_runs)], "w": 2},
        "posfuse": {"probs": [rng.uniform(0, 1, 9) for _ in range(n_runs)]},
        "mapfuse": {"map_scores": list(rng.uniform(0, 1, n_runs))},
        "bayesfuse": {"log_odds": [rng.normal(0, 1, 1000) for _ in range(n_runs)]},
    }.get(method, {})


def assert_same(mine: dict, theirs: dict) -> None:
    assert mine.keys() == theirs.keys()
    for key, value in theirs.items():
        assert math.isclose(mine[key], value, rel_tol=TOL, abs_tol=TOL), (key, mine[key], value)


CONDORCET = {"condorcet", "w_condorcet"}
PAIRS = [(m, n) for m in METHODS if m not in CONDORCET for n in NORMALIZATIONS]


@pytest.mark.parametrize(("method", "norm"), PAIRS, ids=[f"{m}-{n}" for m, n in PAIRS])
def test_every_method_and_norm_equals_ranx(method, norm):
    for seed, n_runs in [(1, 2), (2, 3)]:
        runs = random_runs(seed * 101 + len(method), n_runs=n_runs)
        params = method_params(method, n_runs, seed)
        assert_same(ours(runs, norm, method, params), ranx_fuse(runs, norm, method, params))


def permutation_runs(seed: int, n_runs: int = 3) -> dict[str, pl.DataFrame]:
    """Every run ranks the same candidates (perturbed orders): Condorcet's majority is
    then a strict order on most queries."""
    rng = random.Random(seed)
    runs = {f"r{i}": [] for i in range(n_runs)}
    for q in range(15):
        docs = [f"d{d:02d}" for d in rng.sample(range(30), rng.randint(2, 9))]
        for name in runs:
            noisy = sorted(docs, key=lambda d: int(d[1:]) + rng.gauss(0, 4))
            for r, d in enumerate(noisy):
                runs[name].append((f"q{q:02d}", d, float(len(noisy) - r)))
    return {
        k: pl.DataFrame(v, schema=["query", "doc", "score"], orient="row") for k, v in runs.items()
    }


@pytest.mark.parametrize("method", sorted(CONDORCET))
@pytest.mark.parametrize("norm", NORMALIZATIONS)
def test_condorcet_equals_ranx_where_the_majority_is_an_order(method, norm):
    """ranx sorts with a pairwise comparison that is not an order when the majority has
    cycles or ties (its result then depends on Python's set order); where it is a strict
    order, ranx's ranking is the one by number of pairwise wins."""
    runs = permutation_runs(7)
    params = method_params(method, 3, 3)
    mine, theirs = ours(runs, norm, method, params), ranx_fuse(runs, norm, method, params)
    assert mine.keys() == theirs.keys()
    by_query: dict[str, list] = {}
    for (q, d), s in mine.items():
        by_query.setdefault(q, []).append((d, s))
    checked = 0
    for q, docs in by_query.items():
        scores = [s for _, s in docs]
        if len(set(scores)) != len(scores):
            continue
        if method == "condorcet" and not _strict_majority(runs, q):
            continue
        checked += 1
        for d, s in docs:
            assert s == theirs[(q, d)], (q, d, s, theirs[(q, d)])
    assert checked >= 5


def _strict_majority(runs: dict[str, pl.DataFrame], q: str) -> bool:
    """Whether the runs' pairwise majority on query ``q`` is a transitive tournament."""
    orders = [
        f.filter(pl.col("query") == q).sort("score", descending=True)["doc"].to_list()
        for f in runs.values()
    ]
    docs = orders[0]
    beats = {
        d: {
            e
            for e in docs
            if e != d and sum(o.index(d) < o.index(e) for o in orders) * 2 > len(orders)
        }
        for d in docs
    }
    wins = sorted(len(v) for v in beats.values())
    return wins == list(range(len(docs)))


DIRECT = [(m, n) for m in METHODS if m not in CONDORCET for n in NORMALIZATIONS if n != "borda"]


@pytest.mark.parametrize(("method", "norm"), DIRECT, ids=[f"{m}-{n}" for m, n in DIRECT])
def test_ranx_fuse_itself(method, norm):
    """With distinct scores, rankings of up to 12 documents and ranx.fuse called as a
    user calls it, no tie order is involved: the same values."""
    runs = random_runs(len(method) * 7 + 3, ties=False, absent=0.0)
    params = method_params(method, 2, 5)
    rx = to_ranx(runs)
    fused = ranx_fuse_direct(rx, norm=norm, method=method, params=params)
    theirs = {(q, d): s for q in fused.run.keys() for d, s in fused.run[q].items()}
    assert_same(ours(runs, norm, method, params), theirs)


@pytest.mark.parametrize("method", ["rrf", "isr", "rbc"])
@pytest.mark.parametrize("norm", ["min-max", "max", "sum", "zmuv"])
def test_rank_methods_read_the_order_of_the_scores_as_they_are(method, norm):
    """min-max and max round 1.75 and the next double up, over a maximum of 3, to one
    value: ranx's normalisations keep each ranking in its input order (that of the
    scores as they are), which its rank-based methods read; so does pr.fuse, where
    ranking the normalised scores would put b (doc id descending) before a."""
    above = float(np.nextafter(1.75, 2.0))
    assert (above - 0.0) / (3.0 - 0.0) == (1.75 - 0.0) / (3.0 - 0.0)
    runs = {
        "r0": pl.DataFrame({"query": ["q"] * 4, "doc": ["a", "b", "c", "z"],
                            "score": [above, 1.75, 3.0, 0.0]}),
        "r1": pl.DataFrame({"query": ["q"] * 3, "doc": ["b", "a", "d"],
                            "score": [0.7, 0.5, 0.1]}),
    }  # fmt: skip
    params = {"rbc": {"phi": 0.8}}.get(method, {})
    rx = [Run.from_dict({"q": dict(f.select("doc", "score").iter_rows())}, name=k)
          for k, f in runs.items()]  # fmt: skip
    fused = ranx_fuse_direct(rx, norm=norm, method=method, params=params)
    theirs = {("q", d): s for d, s in fused.run["q"].items()}
    assert_same(ours(runs, norm, method, params), theirs)
    if method == "rrf":  # a: second in both runs
        assert theirs[("q", "a")] == pytest.approx(1 / 62 + 1 / 62, abs=1e-15)


@pytest.mark.parametrize("method", ["rrf", "wsum", "min", "bordafuse"])
def test_a_long_frame_in_any_row_order_fuses_as_its_runs(method):
    """Rows of the runs interleaved (no run's rows together, rankings apart): the same
    fused run, to the bit, as the runs one after the other."""
    runs = random_runs(8, n_runs=3)
    long = pl.concat([f.with_columns(pl.lit(k).alias("system")) for k, f in runs.items()])
    shuffled = long.sample(fraction=1.0, shuffle=True, seed=3)
    assert not shuffled["system"].equals(long["system"])
    a = pr.fuse(shuffled, method=method).sort("query", "doc")
    b = pr.fuse(runs, method=method).sort("query", "doc")
    assert a.equals(b)


def test_long_frame_list_and_dict_inputs_agree():
    runs = random_runs(3)
    long = pl.concat([f.with_columns(pl.lit(k).alias("system")) for k, f in runs.items()])
    a = pr.fuse(long, method="rrf")
    b = pr.fuse(list(runs.values()), method="rrf")
    c = pr.fuse(runs, method="rrf")
    d = pr.fuse({k: f.to_pandas() for k, f in runs.items()}, method="rrf")
    a, b, c, d = (x.sort("query", "doc") for x in (a, b, c, d))
    assert a.equals(b) and b.equals(c) and c.equals(d)
    assert a.height == long.select("query", "doc").unique().height


def test_lazy_bucketed_and_eager_give_the_same_run(tmp_path):
    runs = random_runs(4, n_runs=3, n_queries=60)
    paths = []
    for name, frame in runs.items():
        path = tmp_path / f"{name}.parquet"
        frame.write_parquet(path)
        paths.append(path)
    lazy = {name: pl.scan_parquet(p) for name, p in zip(runs, paths, strict=True)}
    for method, norm in [
        ("wsum", "min-max"),
        ("rrf", None),
        ("bordafuse", "borda"),
        ("condorcet", "zmuv"),
    ]:
        eager = pr.fuse(runs, method=method, norm=norm)
        out = pr.fuse(lazy, method=method, norm=norm)
        assert isinstance(out, pl.LazyFrame)
        whole = out.collect()
        tiny = pr.fuse(lazy, method=method, norm=norm, memory_limit="16KiB").collect()
        for other in (whole, tiny):
            assert other.sort("query", "doc").equals(eager.sort("query", "doc")), method


def test_a_lazy_long_frame_is_read_when_collected(tmp_path):
    """A lazy long frame stays lazy: no row is read by the call (the source below counts
    its reads); its runs are learned from its rows when the result is collected, and the
    options that depend on them are checked then."""
    runs = random_runs(12, n_runs=3)
    long = pl.concat([f.with_columns(pl.lit(k).alias("system")) for k, f in runs.items()])
    reads = []

    def source() -> pl.DataFrame:
        reads.append(1)
        return long

    lazy = pl.defer(source, schema=long.schema)
    out = pr.fuse(lazy, method="rrf", memory_limit="16KiB")
    weighted = pr.fuse(lazy, method="wsum", weights=[0.2, 0.3, 0.5])
    too_few = pr.fuse(lazy, method="wsum", weights=[0.5, 0.5])
    assert isinstance(out, pl.LazyFrame) and isinstance(weighted, pl.LazyFrame)
    assert out.collect_schema() == {
        "query": pl.String, "doc": pl.String, "score": pl.Float64, "system": pl.String
    }  # fmt: skip
    assert reads == []
    eager = pr.fuse(runs, method="rrf")
    assert out.collect().sort("query", "doc").equals(eager.sort("query", "doc"))
    assert reads
    eager_w = pr.fuse(runs, method="wsum", weights=[0.2, 0.3, 0.5])
    assert weighted.collect().sort("query", "doc").equals(eager_w.sort("query", "doc"))
    with pytest.raises(ValueError, match="one value per run"):
        too_few.collect()
    with pytest.raises(ValueError, match="has no parameter 'kk'"):  # checked at the call
        pr.fuse(lazy, method="rrf", params={"kk": 3})
    path = tmp_path / "runs.parquet"  # a Parquet scan, bucketed or not
    long.write_parquet(path)
    for limit in (None, "16KiB"):
        scanned = pr.fuse(pl.scan_parquet(path), method="rrf", memory_limit=limit)
        assert scanned.collect().sort("query", "doc").equals(eager.sort("query", "doc"))


@pytest.mark.parametrize("norm", ["min-max", "min-max-inverted", "max"])
def test_rankings_apart_normalise_as_rankings_together(norm):
    """Rows of each ranking together are normalised in numpy, rows apart by a Polars
    window: the same fused run, to the bit."""
    runs = random_runs(13, n_runs=3)
    shuffled = {k: f.sample(fraction=1.0, shuffle=True, seed=1) for k, f in runs.items()}
    for method in ("wsum", "rrf", "mnz"):
        together = pr.fuse(runs, method=method, norm=norm).sort("query", "doc")
        apart = pr.fuse(shuffled, method=method, norm=norm).sort("query", "doc")
        assert together.equals(apart), method


def test_an_oversized_bucket_is_split_again(tmp_path):
    """Every row in one bucket over the budget: it is split again by another seed into
    buckets of its own, each fused alone, and together they give the eager run."""
    from functools import partial

    from polars_rankeval.engine.buckets import Spill
    from polars_rankeval.fusion.fuse import Columns, fuse_frame, fuse_spilled, prepare

    runs = random_runs(11, n_runs=2, n_queries=40)
    cols = Columns()
    spec, stacked = prepare(
        runs, cols, method="rrf", norm="min-max", weights=None, params=None,
        depth=None, max_docs=None, doc_order="desc",
    )  # fmt: skip
    rows = stacked.frame.collect()
    spill = Spill(tmp_path, "__q", 1, flush_bytes=1 << 20)  # one bucket holds every row
    spill.add(rows)
    spill.flush()
    fuse_one = partial(fuse_frame, spec=spec, systems=stacked.systems, cols=cols, validate=True)
    pieces = fuse_spilled(spill, fuse_one, budget=1024, folder=tmp_path, splits=1)
    assert len(pieces) > 10  # the bucket of ~40 queries went into many smaller ones
    queries = [set(p["__q"].to_list()) for p in pieces]
    n_queries = rows["__q"].n_unique()
    assert sum(len(q) for q in queries) == len(set().union(*queries)) == n_queries  # none split
    eager = pr.fuse(runs, method="rrf", norm="min-max").sort("query", "doc")
    both = pl.concat(pieces).sort("__q", "__d")
    assert both["__d"].to_list() == eager["doc"].to_list()
    assert both["__f"].to_list() == eager["score"].to_list()
    # no split left: the bucket is fused whole, in one piece
    spill = Spill(tmp_path, "__q", 1, flush_bytes=1 << 20)
    spill.add(rows)
    spill.flush()
    assert len(fuse_spilled(spill, fuse_one, budget=1024, folder=tmp_path, splits=0)) == 1


def test_result_is_evaluable_and_named():
    runs = random_runs(5)
    fused = pr.fuse(runs, method="wsum", name="hybrid")
    assert fused.columns == ["query", "doc", "score", "system"]
    assert set(fused["system"]) == {"hybrid"}
    qrels = (
        pl.concat(runs.values())
        .select("query", "doc")
        .unique()
        .with_columns((pl.col("doc").str.slice(1).cast(pl.Int64) % 2).alias("relevance"))
    )
    out = pr.evaluate(
        pl.concat([fused, *(f.with_columns(pl.lit(k).alias("system")) for k, f in runs.items())]),
        qrels,
        "nDCG@10",
    )
    assert set(out["system"]) == {"hybrid", "r0", "r1"}


def test_column_names_and_integer_ids():
    a = pl.DataFrame({"qid": [1, 1, 2], "docno": [10, 11, 10], "sim": [1.0, 2.0, 3.0]})
    b = pl.DataFrame({"qid": [1, 2], "docno": [10, 12], "sim": [5.0, 1.0]})
    out = pr.fuse(
        [a, b], method="sum", norm=None, query="qid", doc="docno", score="sim", system="tag"
    ).sort("qid", "docno")
    assert out.columns == ["qid", "docno", "sim", "tag"]
    assert out.rows() == [
        (1, 10, 6.0, "fused"),
        (1, 11, 2.0, "fused"),
        (2, 10, 3.0, "fused"),
        (2, 12, 1.0, "fused"),
    ]


def test_rrf_by_hand():
    """Cormack et al. (2009): 1/(k + rank) summed over the runs that retrieved the doc."""
    a = pl.DataFrame({"query": ["q"] * 3, "doc": ["x", "y", "z"], "score": [3.0, 2.0, 1.0]})
    b = pl.DataFrame({"query": ["q"] * 2, "doc": ["z", "x"], "score": [2.0, 1.0]})
    out = dict(pr.fuse([a, b], method="rrf", norm=None).select("doc", "score").iter_rows())
    assert out == pytest.approx(
        {"x": 1 / 61 + 1 / 62, "y": 1 / 62, "z": 1 / 63 + 1 / 61}, abs=1e-15
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"method": "rrff"}, "method must be one of"),
        ({"norm": "minmax"}, "norm must be one of"),
        ({"method": "rrf", "weights": [1, 2]}, "takes no weights"),
        ({"weights": [1.0]}, "one value per run"),
        ({"weights": {"r0": 1.0}}, "missing \\['r1'\\]"),
        ({"method": "rbc"}, "needs parameter\\(s\\) \\['phi'\\]"),
        ({"method": "rrf", "params": {"kk": 1}}, "has no parameter 'kk'"),
        ({"method": "posfuse"}, "optimize_fusion"),
        ({"depth": 0}, "depth must be an int >= 1"),
        ({"doc_order": "up"}, "doc_order must be one of"),
    ],
)
def test_bad_options_are_refused_by_name(kwargs, message):
    with pytest.raises(ValueError, match=message):
        pr.fuse(random_runs(1), **kwargs)


def test_bad_rows_are_refused_and_inputs_untouched():
    runs = random_runs(1)
    before = {k: v.clone() for k, v in runs.items()}
    dup = {"a": runs["r0"], "b": pl.concat([runs["r1"], runs["r1"].head(1)])}
    with pytest.raises(ValueError, match="more than once"):
        pr.fuse(dup)
    nan = {"a": runs["r0"], "b": runs["r1"].with_columns(pl.lit(float("nan")).alias("score"))}
    with pytest.raises(ValueError, match="NaN"):
        pr.fuse(nan)
    with pytest.raises(ValueError, match="at least two runs"):
        pr.fuse([runs["r0"]])
    with pytest.raises(ValueError, match="missing column 'score'"):
        pr.fuse([runs["r0"], runs["r1"].drop("score")])
    with pytest.raises(TypeError, match="share their id dtypes"):
        pr.fuse([runs["r0"], runs["r1"].with_columns(pl.col("query").cast(pl.Categorical))])
    for k, v in runs.items():
        assert v.equals(before[k])


# trectools 0.0.50 -------------------------------------------------------------------


def to_trectools(frame: pl.DataFrame, name: str):
    from trectools import TrecRun

    df = frame.to_pandas()
    df = df.rename(columns={"doc": "docid"})
    df["q0"] = "Q0"
    df["system"] = name
    df = df.sort_values(["query", "score", "docid"], ascending=[True, False, True])
    df["rank"] = df.groupby("query").cumcount() + 1
    run = TrecRun(None)
    run.load_run_from_dataframe(df[["query", "q0", "docid", "rank", "score", "system"]])
    return run


@pytest.mark.parametrize("strategy", ["sum", "max", "min", "anz", "mnz", "med"])
def test_trectools_combos(strategy):
    """trectools.fusion.combos (two runs: its merge keeps two score columns): the raw
    scores combined over the runs that retrieved the doc, top max_docs kept."""
    from trectools import fusion

    runs = random_runs(11, n_runs=2, ties=False)
    theirs = fusion.combos(
        [to_trectools(f, k) for k, f in runs.items()], strategy=strategy, max_docs=5
    )
    expected = {(r.query, r.docid): r.score for r in theirs.run_data.itertuples()}
    mine = ours(runs, None, strategy, {}, max_docs=5)
    assert_same(mine, expected)


def test_trectools_reciprocal_rank_fusion():
    """trectools.fusion.reciprocal_rank_fusion: each run's top 1000 (ties by doc id
    ascending, as trectools reads a run), 1/(k + rank), the fused run cut at max_docs
    with ties by doc id ascending. One query ranks 1200 documents, so the top-1000
    cut bites."""
    from trectools import fusion

    runs = random_runs(12, n_runs=3)  # tied scores
    rng = random.Random(5)
    big = pl.DataFrame(
        [("q99", f"e{d:04d}", float(rng.randint(0, 300))) for d in range(1200)],
        schema=["query", "doc", "score"],
        orient="row",
    )
    runs["r0"] = pl.concat([runs["r0"], big])
    runs["r1"] = pl.concat([runs["r1"], big.with_columns(-pl.col("score"))])
    trs = [to_trectools(f, k) for k, f in runs.items()]
    for k, max_docs in [(60, 1000), (10, 3)]:
        theirs = fusion.reciprocal_rank_fusion(trs, k=k, max_docs=max_docs)
        expected = {(r.query, r.docid): r.score for r in theirs.run_data.itertuples()}
        mine = ours(runs, None, "rrf", {"k": k}, depth=1000, max_docs=max_docs, doc_order="asc")
        assert_same(mine, expected)


def test_pairs_sort_packed_and_lexsort_agree():
    """The (pair, run, row) sort packs 64-bit integers when they fit, else lexsorts:
    both give the same order, pair numbers and repeated (pair, run) rows."""
    from polars_rankeval.fusion.keys import Pairs

    rng = np.random.default_rng(3)
    pair = rng.integers(0, 50, 400).astype(np.uint64)
    run = rng.integers(0, 3, 400)
    packed = Pairs.of(pair, run, 3)
    wide = Pairs.of(pair | np.uint64(1 << 62), run, 3)  # 63 bits: too many to pack
    assert packed.order.tolist() == wide.order.tolist()
    assert packed.numbers().tolist() == wide.numbers().tolist()
    assert packed.repeated.tolist() == wide.repeated.tolist() != []
    expected = sorted(range(400), key=lambda i: (int(pair[i]), int(run[i]), i))
    assert packed.order.tolist() == expected
