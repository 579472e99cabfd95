"""Edges of the wider API (clicks, off-policy, interleaving, recsys, fusion, pools,
assessors, reports, stats): a column named like a function's own output or working
columns, an id's dtype differing between two inputs, values out of range, several
systems where one ranking is scored. Each is a clear ValueError/TypeError naming the
column or option (or the right answer), never a raw Polars error or a silent number;
and the input frames are left as they were."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_rankeval as pr

RAW = (pl.exceptions.PolarsError, ZeroDivisionError, OverflowError, KeyError, IndexError)


def clear_error(call: Callable[[], Any], *frames: pl.DataFrame, match: str) -> None:
    """``call`` raises a ValueError/TypeError matching ``match`` (not a Polars error), and
    leaves ``frames`` unchanged."""
    before = [f.clone() for f in frames]
    with pytest.raises((ValueError, TypeError), match=match) as info:
        out = call()
        if isinstance(out, pl.LazyFrame):
            out.collect()
    assert not isinstance(info.value, RAW), repr(info.value)
    for frame, copy in zip(frames, before, strict=True):
        assert frame.equals(copy)


def click_log() -> pl.DataFrame:
    rng = np.random.default_rng(0)
    n = 200
    return pl.DataFrame(
        {
            "session": np.repeat(np.arange(n // 4), 4),
            "query": np.repeat(rng.integers(5, size=n // 4), 4),
            "doc": np.tile(np.arange(4), n // 4),
            "position": np.tile(np.arange(1, 5), n // 4),
            "clicked": rng.random(n) < 0.4,
            "randomized": np.repeat(rng.random(n // 4) < 0.5, 4),
        }
    )


# ------------------------------------------------------------------- clicks

CLICK_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "ctr_by_position": pr.ctr_by_position,
    "coec": pr.coec,
    "fit_pbm": pr.fit_pbm,
    "position_bias": pr.position_bias,
    "position_bias_randomized": lambda log, **kw: pr.position_bias(log, method="randomized", **kw),
}
CLICK_OUTPUTS = {
    "ctr_by_position": ["impressions", "clicks", "ctr"],
    "coec": ["impressions", "clicks", "ctr", "expected_clicks", "coec", "n", "c"],
    "fit_pbm": ["impressions", "clicks", "examination", "relevance", "n", "c"],
    "position_bias": ["impressions", "clicks", "examination", "relevance", "n"],
    "position_bias_randomized": ["impressions", "clicks", "ctr", "examination"],
}


@pytest.mark.parametrize(
    ("function", "name"),
    [(f, n) for f, names in CLICK_OUTPUTS.items() for n in names],
)
def test_click_log_segment_named_like_an_output(function: str, name: str) -> None:
    log = click_log().with_columns(pl.col("query").alias(name))
    clear_error(
        lambda: CLICK_FUNCTIONS[function](log, by=name),
        log,
        match=f"by column '{name}' has the name of a column",
    )


@pytest.mark.parametrize("name", ["impressions", "clicks", "expected_clicks", "coec", "n"])
@pytest.mark.parametrize("role", ["query", "doc"])
def test_coec_ids_named_like_an_output(role: str, name: str) -> None:
    log = click_log().rename({role: name})
    clear_error(lambda: pr.coec(log, **{role: name}), log, match=f"pass {role}='{name}_'")


@pytest.mark.parametrize("function", list(CLICK_FUNCTIONS))
@pytest.mark.parametrize(
    ("clicked", "shown"),
    [(pl.lit(2), "2"), (pl.lit(-1), "-1"), (pl.lit(None, pl.Int64), "None")],
)
def test_click_values_other_than_0_1_are_refused(
    function: str, clicked: pl.Expr, shown: str
) -> None:
    """A click of 2 counted twice, -1 took one away, null was an impression without a
    click: CTR, COEC and the fitted bias were silently wrong."""
    log = click_log().with_columns(
        pl.when(pl.col("position") == 2)
        .then(clicked)
        .otherwise(pl.col("clicked").cast(pl.Int64))
        .alias("clicked")
    )
    for frame in (log, log.lazy()):
        clear_error(
            lambda frame=frame: CLICK_FUNCTIONS[function](frame),
            log,
            match=f"clicked column 'clicked' must hold 0 or 1 .*Got {shown}",
        )


@pytest.mark.parametrize("function", list(CLICK_FUNCTIONS))
def test_null_positions_are_refused(function: str) -> None:
    log = click_log().with_columns(
        position=pl.when(pl.col("session") == 3).then(None).otherwise(pl.col("position")),
        randomized=pl.col("randomized") | (pl.col("session") == 3),
    )
    clear_error(
        lambda: CLICK_FUNCTIONS[function](log), log, match="position column 'position' has .*null"
    )


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("column", ["query", "doc"])
@pytest.mark.parametrize("function", ["coec", "fit_pbm", "position_bias"])
def test_null_ids_of_a_click_log_are_refused(function: str, column: str, lazy: bool) -> None:
    """A null query or doc id was one more (query, doc) pair of its own: a COEC row for
    (None, doc), and fit_pbm's numpy RuntimeWarning of a division by zero."""
    log = click_log().with_columns(
        pl.when(pl.col("session") == 3).then(None).otherwise(pl.col(column)).alias(column)
    )
    given = log.lazy() if lazy else log
    clear_error(
        lambda: CLICK_FUNCTIONS[function](given),
        log,
        match=f"log column '{column}' has null values: every row needs its id",
    )


def test_qrels_from_clicks_refuses_a_nan_coec() -> None:
    """A document shown only where nobody clicked has COEC 0/0 = NaN, and NaN >= t is
    true in Polars: it got the top grade."""
    log = pl.DataFrame(
        {
            "query": "q",
            "doc": ["a", "b", "a", "b"],
            "position": [1, 2, 1, 2],
            "clicked": [1, 0, 0, 0],
        }
    )
    judgments = pr.coec(log)
    assert judgments.filter(pl.col("doc") == "b")["coec"].is_nan().all()
    for frame in (judgments, judgments.lazy()):
        clear_error(
            lambda frame=frame: pr.qrels_from_clicks(frame, thresholds=[0.5, 1.5]),
            judgments,
            match="'coec' has 1 null or NaN values",
        )
    kept = pr.qrels_from_clicks(judgments.filter(pl.col("coec").is_not_nan()), thresholds=[0.5])
    assert kept["relevance"].to_list() == [1]


def click_metrics_inputs() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    log = click_log()
    run = pl.DataFrame(
        {
            "query": np.repeat(np.arange(5), 4),
            "doc": np.tile(np.arange(4), 5),
            "score": np.tile([4.0, 3.0, 2.0, 1.0], 5),
        }
    )
    bias = pl.DataFrame({"position": [1, 2, 3, 4], "examination": [1.0, 0.7, 0.5, 0.4]})
    return log, run, bias


def test_click_metrics_refuses_a_run_of_several_systems() -> None:
    """rank_run(system=None) merged the systems into one ranking of every row."""
    log, run, bias = click_metrics_inputs()
    two = pl.concat(
        [
            run.with_columns(system=pl.lit("x")),
            run.with_columns(system=pl.lit("y"), doc=pl.col("doc") + 10),
        ]
    )
    clear_error(
        lambda: pr.click_metrics(log, two, bias, k=3), log, two, match="'system' holds 2 systems"
    )
    one = pr.click_metrics(log, two.filter(pl.col("system") == "x"), bias, k=3)
    assert_frame_equal(one, pr.click_metrics(log, run, bias, k=3))


def test_click_metrics_refuses_duplicate_run_rows() -> None:
    log, run, bias = click_metrics_inputs()
    doubled = pl.concat([run, run.head(1)])
    clear_error(
        lambda: pr.click_metrics(log, doubled, bias, k=3),
        doubled,
        match="run has duplicate rows for",
    )


@pytest.mark.parametrize("dtype", [pl.String, pl.Int32, pl.UInt64])
@pytest.mark.parametrize("column", ["query", "doc"])
def test_click_metrics_id_dtypes_differ(column: str, dtype: pl.DataType) -> None:
    log, run, bias = click_metrics_inputs()
    run = run.with_columns(pl.col(column).cast(dtype))
    clear_error(
        lambda: pr.click_metrics(log, run, bias, k=3),
        run,
        match=f"Column '{column}' is Int64 in the log and {dtype} in the run",
    )


@pytest.mark.parametrize("column", ["session", "query", "doc"])
def test_click_metrics_refuses_null_ids(column: str) -> None:
    """A null session merged its rows into one session; a null query or doc matched no
    run row."""
    log, run, bias = click_metrics_inputs()
    log = log.with_columns(
        pl.when(pl.col("position") == 2).then(None).otherwise(pl.col(column)).alias(column)
    )
    clear_error(
        lambda: pr.click_metrics(log, run, bias, k=3),
        log,
        match=f"log column '{column}' has null values: every row needs its id",
    )


@pytest.mark.parametrize("name", ["rank", "examination", "sessions", "clicks@3", "rel", "__x"])
def test_click_metrics_doc_named_like_a_working_column(name: str) -> None:
    log, run, bias = click_metrics_inputs()
    log, run = log.rename({"doc": name}), run.rename({"doc": name})
    clear_error(
        lambda: pr.click_metrics(log, run, bias, k=3, doc=name),
        log,
        run,
        match=f"doc column '{name}' has the name of a column click_metrics makes",
    )


# --------------------------------------------------------------- off-policy


def slate_log() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "slate_id": [1, 1, 2, 2, 3, 3],
            "position": [0, 1, 0, 1, 0, 1],
            "reward": [1, 0, 1, 1, 0, 1],
            "pscore": [0.25] * 2 + [0.5] * 4,
            "evaluation_policy_pscore": [0.5] * 6,
        }
    )


@pytest.mark.parametrize(
    "name", ["estimator", "estimate", "lower", "upper", "n_slates", "__n", "__null", "__reward"]
)
def test_off_policy_segment_named_like_an_output(name: str) -> None:
    log = slate_log().with_columns(pl.lit(1).alias(name))
    clear_error(
        lambda: pr.off_policy(log, ["sips"], by=name, n_bootstrap=10, seed=0),
        log,
        match=f"by column '{name}' has the name of a column off_policy makes",
    )


@pytest.mark.parametrize("role", ["slate", "reward"])
def test_off_policy_column_named_like_a_working_column(role: str) -> None:
    """A slate column named '__reward' was overwritten by the weighted rewards."""
    column = {"slate": "slate_id", "reward": "reward"}[role]
    log = slate_log().rename({column: "__reward"})
    clear_error(
        lambda: pr.off_policy(log, ["sips"], n_bootstrap=10, seed=0, **{role: "__reward"}),
        log,
        match=f"{role} column '__reward' has the name",
    )


def test_off_policy_boolean_propensities_are_refused() -> None:
    log = slate_log().with_columns(pl.col("pscore") > 0.3)
    clear_error(
        lambda: pr.off_policy(log, ["sips"], n_bootstrap=10, seed=0),
        log,
        match="'pscore' must hold probabilities",
    )


@pytest.mark.parametrize("lazy", [False, True])
def test_off_policy_refuses_null_slate_ids_and_positions(lazy: bool) -> None:
    """Null slate ids were one more slate of their own (n_slates counted it); a null
    position was reported as a position shown twice."""
    log = slate_log().with_columns(pl.Series("slate_id", [1, 1, None, None, 3, 3]))
    given = log.lazy() if lazy else log
    clear_error(
        lambda: pr.off_policy(given, ["sips"], n_bootstrap=10, seed=0),
        log,
        match="log column 'slate_id' has null values: every row belongs to a slate",
    )
    log = slate_log().with_columns(pl.Series("position", [0, 1, None, 1, 0, 1]))
    given = log.lazy() if lazy else log
    clear_error(
        lambda: pr.off_policy(given, ["sips"], n_bootstrap=10, seed=0),
        log,
        match="log column 'position' has null values: every row is shown at a position",
    )


# ------------------------------------------------------------- interleaving

RUN_A = pl.DataFrame(
    {
        "query": ["q"] * 3 + ["r"] * 2,
        "doc": ["d1", "d2", "d3", "d1", "d2"],
        "score": [3.0, 2, 1, 2, 1],
    }
)
RUN_B = pl.DataFrame(
    {
        "query": ["q"] * 3 + ["r"] * 2,
        "doc": ["d2", "d4", "d1", "d2", "d5"],
        "score": [3.0, 2, 1, 2, 1],
    }
)


@pytest.mark.parametrize("name", ["position", "team", "rank_a", "rank_b"])
@pytest.mark.parametrize("role", ["query", "doc"])
def test_interleave_ids_named_like_an_output(role: str, name: str) -> None:
    a, b = RUN_A.rename({role: name}), RUN_B.rename({role: name})
    clear_error(
        lambda: pr.interleave(a, b, seed=1, **{role: name}),
        a,
        b,
        match=f"{role} column '{name}' has the name of a column interleave makes",
    )


@pytest.mark.parametrize("dtype", [pl.Categorical, pl.Int64])
def test_interleave_id_dtypes_differ(dtype: pl.DataType) -> None:
    if dtype == pl.Categorical:
        b = RUN_B.with_columns(pl.col("doc").cast(pl.Categorical))
    else:
        b = RUN_B.with_columns(pl.col("doc").str.slice(1).cast(pl.Int64))
    clear_error(
        lambda: pr.interleave(RUN_A, b, seed=1), b, match="Column 'doc' is String in the run_a"
    )


def test_interleave_refuses_duplicates_and_several_systems() -> None:
    """A doc twice in one run was interleaved twice; a run of two systems was one list."""
    doubled = pl.concat([RUN_A, RUN_A.head(1)])
    clear_error(lambda: pr.interleave(doubled, RUN_B, seed=1), doubled, match="run_a has duplicate")
    two = pl.concat(
        [
            RUN_A.with_columns(system=pl.lit("x")),
            RUN_A.with_columns(system=pl.lit("y"), doc=pl.col("doc") + "y"),
        ]
    )
    clear_error(lambda: pr.interleave(two, RUN_B, seed=1), two, match="'system' holds 2 systems")


def served_log() -> pl.DataFrame:
    return pr.interleave(RUN_A, RUN_B, seed=1).with_columns(
        impression=pl.col("query"), clicked=pl.col("position") <= 2
    )


@pytest.mark.parametrize("name", ["clicks", "credit_a", "credit_b", "winner"])
@pytest.mark.parametrize("method", ["team_draft", "balanced"])
def test_interleaving_outcomes_segment_named_like_an_output(method: str, name: str) -> None:
    log = served_log().with_columns(pl.lit(1).alias(name))
    clear_error(
        lambda: pr.interleaving_outcomes(log, method=method, by=name),
        log,
        match=f"by column '{name}' has the name",
    )


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (pl.col("clicked").cast(pl.String), "must be Boolean or 0/1 integers. Got String"),
        (pl.col("clicked").cast(pl.Int64) * 2, "must hold 0 or 1"),
        (pl.lit(None, pl.Boolean).alias("clicked"), "must hold 0 or 1"),
        (pl.lit("c").alias("team"), "team column 'team' must hold 'a' or 'b'"),
        (pl.lit(None, pl.Int64).alias("impression"), "log column 'impression' has null values"),
    ],
)
def test_interleaving_outcomes_bad_values(change: pl.Expr, match: str) -> None:
    """A team 'c' and null clicks were silently no credit; a click of 2 counted as none."""
    log = served_log().with_columns(change)
    clear_error(lambda: pr.interleaving_outcomes(log), log, match=match)


def test_interleaving_test_without_clicks() -> None:
    """No impression with a click ended in ZeroDivisionError."""
    for outcomes in (pl.DataFrame({"winner": [None, None]}, schema={"winner": pl.String}),):
        clear_error(lambda o=outcomes: pr.interleaving_test(o), outcomes, match="nothing to test")


@pytest.mark.parametrize(
    "name", ["impressions", "wins_a", "wins_b", "ties", "preference", "p_value", "lower"]
)
def test_interleaving_test_segment_named_like_an_output(name: str) -> None:
    outcomes = pl.DataFrame({"winner": ["a", "b", "a", "tie"], name: [1, 1, 2, 2]})
    clear_error(
        lambda: pr.interleaving_test(outcomes, by=name, seed=0),
        outcomes,
        match=f"by column '{name}' has the name",
    )


# ------------------------------------------------------------------- recsys

RECS = pl.DataFrame(
    {
        "system": ["a"] * 6 + ["b"] * 6,
        "query": [1, 1, 1, 2, 2, 2] * 2,
        "doc": [1, 2, 3, 2, 3, 4, 4, 5, 1, 1, 2, 3],
        "score": [3.0, 2, 1] * 4,
    }
)
TRAIN = pl.DataFrame({"query": [1, 1, 2, 3], "doc": [1, 2, 2, 5]})
FEATURES = pl.DataFrame({"doc": [1, 2, 3, 4, 5], "f1": [0.0, 1, 0, 1, 1], "f2": [1.0, 0, 1, 1, 0]})
TEST = pl.DataFrame({"query": [1, 2], "doc": [1, 4], "relevance": [1, 1]})


@pytest.mark.parametrize("role", ["by", "system"])
def test_evaluate_catalog_key_named_count(role: str) -> None:
    recs = RECS.with_columns(count=pl.col("system"))
    if role == "system":
        recs = recs.drop("system")
    clear_error(
        lambda: pr.evaluate_catalog(recs, ["Entropy@2"], **{role: "count"}),
        recs,
        match=f"{role} column 'count' has the name of a column evaluate_catalog makes",
    )


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize(
    ("column", "value", "match"),
    [
        ("doc", None, "recs column 'doc' has null values"),
        ("query", None, "recs column 'query' has null values"),
        ("system", None, "recs column 'system' has null values"),
        ("score", float("nan"), r"recs column 'score' has null or NaN scores"),
        ("score", None, r"recs column 'score' has null or NaN scores"),
    ],
)
def test_evaluate_catalog_refuses_null_ids_and_nan_scores(
    column: str, value: Any, match: str, lazy: bool
) -> None:
    """A null item was one more item covered (CatalogCoverage 4 of 5 items where 3 are
    shown); a NaN score ranked first. evaluate refuses both; so does evaluate_catalog."""
    recs = RECS.with_columns(
        pl.when(pl.int_range(pl.len()) == 1).then(value).otherwise(pl.col(column)).alias(column)
    )
    given = recs.lazy() if lazy else recs
    clear_error(
        lambda: pr.evaluate_catalog(given, ["CatalogCoverage@2"], catalog=[1, 2, 3, 4, 5]),
        recs,
        match=match,
    )


def test_rank_run_refuses_what_evaluate_refuses() -> None:
    """rank_run ranked a NaN score first and numbered null ids as rankings of their own;
    it checks the rows as evaluate does (validate=False keeps the former behaviour)."""
    run = pl.DataFrame({"query": ["q"] * 3, "doc": ["a", "b", "c"], "score": [3.0, np.nan, 1.0]})
    for given in (run, run.lazy()):
        clear_error(lambda given=given: pr.rank_run(given), run, match="has a NaN score 'score'")
    nulls = run.with_columns(doc=pl.Series(["a", None, "c"]), score=pl.Series([3.0, 2.0, 1.0]))
    clear_error(lambda: pr.rank_run(nulls), nulls, match=r"run row 1 \(0-based\) has a null 'doc'")
    ranks = nulls.with_columns(doc=pl.lit("d"), rank=pl.Series([1, None, 2]))
    clear_error(lambda: pr.rank_run(ranks, order="rank"), ranks, match="has a null rank 'rank'")
    assert pr.rank_run(run, validate=False)["doc"].to_list() == ["b", "a", "c"]


@pytest.mark.parametrize("dtype", [pl.String, pl.Categorical, pl.Float64])
@pytest.mark.parametrize("side", ["train", "item_features"])
def test_side_input_item_dtype_differs_from_the_run(side: str, dtype: pl.DataType) -> None:
    """The items of train and item_features are joined with the run's: a String item id
    against an Int64 one ended in a raw SchemaError."""
    frame = {"train": TRAIN, "item_features": FEATURES}[side]
    frame = frame.with_columns(pl.col("doc").cast(pl.String).cast(dtype))
    measure = {"train": "Novelty@3", "item_features": "ILD@3"}[side]
    clear_error(
        lambda: pr.evaluate(RECS, TEST, [measure], **{side: frame}),
        frame,
        match=f"Column 'doc' is {dtype} in the {side} and Int64 in the run",
    )
    if side == "train":
        clear_error(
            lambda: pr.evaluate_catalog(RECS, ["UserCoverage@2"], train=frame),
            frame,
            match="Column 'doc' is .* in the train and Int64 in the recs",
        )


def test_side_input_integer_widths_are_matched() -> None:
    """Integer ids of other widths join as before: no refusal, the same numbers."""
    narrow = TRAIN.with_columns(pl.col("doc").cast(pl.Int16))
    assert_frame_equal(
        pr.evaluate(RECS, TEST, ["Novelty@3"], train=narrow),
        pr.evaluate(RECS, TEST, ["Novelty@3"], train=TRAIN),
    )


@pytest.mark.parametrize("name", ["query", "system", "day"])
def test_feature_named_like_a_key_of_the_run(name: str) -> None:
    recs = RECS.with_columns(day=pl.lit(1))
    features = FEATURES.rename({"f1": name})
    clear_error(
        lambda: pr.evaluate(recs, TEST, ["ILD@3"], item_features=features, by="day"),
        features,
        match=f"item_features has a feature column '{name}'",
    )


# ------------------------------------------------------------------- fusion

RUN_X = RECS.filter(pl.col("system") == "a").drop("system")
RUN_Y = RECS.filter(pl.col("system") == "b").drop("system")


@pytest.mark.parametrize("role", ["query", "doc", "score"])
def test_fuse_column_named_like_the_system_column(role: str) -> None:
    runs = {"x": RUN_X.rename({role: "system"}), "y": RUN_Y.rename({role: "system"})}
    clear_error(
        lambda: pr.fuse(runs, **{role: "system"}),
        *runs.values(),
        match=f"{role} and system both name the column 'system'",
    )
    fused = pr.fuse(runs, **{role: "system"}, system="run")
    assert fused.columns == [c if c != role else "system" for c in ("query", "doc", "score")] + [
        "run"
    ]
    qrels = TEST.rename({role: "system"}) if role != "score" else TEST
    if role != "score":
        clear_error(
            lambda: pr.optimize_fusion(runs, qrels, show_progress=False, **{role: "system"}),
            qrels,
            match=f"{role} and system both name",
        )


@pytest.mark.parametrize("step", [0, -0.1, 2.0, float("nan"), "0.1", True])
def test_optimize_fusion_step_out_of_range(step: Any) -> None:
    """step=0 ended in ZeroDivisionError; step=2 searched an empty grid."""
    clear_error(
        lambda: pr.optimize_fusion({"x": RUN_X, "y": RUN_Y}, TEST, step=step, show_progress=False),
        RUN_X,
        match="step must be a number > 0",
    )


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("norm", ["min-max", "min-max-inverted", "max", "sum", "zmuv"])
def test_fuse_refuses_infinite_scores_a_norm_scales(norm: str, lazy: bool) -> None:
    """An infinite score made every score a normalisation by the ranking's range reads
    NaN (min-max: (inf - min) / (inf - min)), for a rank-based method too where the
    normalisation changes the order (min-max-inverted); ranks of the scores as they are
    read infinite scores as they are."""
    x = RUN_X.with_columns(score=pl.when(pl.col("doc") == 1).then(np.inf).otherwise("score"))
    runs = {"x": x.lazy() if lazy else x, "y": RUN_Y}
    clear_error(
        lambda: pr.fuse(runs, method="wsum", norm=norm),
        x,
        match=f"1 infinite score\\(s\\), which norm='{norm}' cannot scale",
    )
    clear_error(
        lambda: pr.optimize_fusion(runs, TEST, method="wsum", norm=norm, show_progress=False),
        x,
        match=f"which norm='{norm}' cannot scale",
    )
    rank_based = pr.fuse(runs, method="rrf", norm=norm) if norm != "min-max-inverted" else None
    if rank_based is None:  # rrf reads the ranks of the inverted scores: NaN
        clear_error(lambda: pr.fuse(runs, method="rrf", norm=norm), x, match="cannot scale")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no NaN made on the way (numpy's RuntimeWarning)
        for ranked in (pr.fuse(runs, method="wsum", norm="rank"), rank_based):
            if ranked is not None:
                ranked = ranked.collect() if isinstance(ranked, pl.LazyFrame) else ranked
                assert ranked["score"].is_finite().all()


# ---------------------------------------------------------- pools, assessors

POOL_RUNS = pl.DataFrame(
    {
        "system": ["s1"] * 3 + ["s2"] * 3,
        "query": 1,
        "doc": ["a", "b", "c", "b", "c", "d"],
        "score": [3.0, 2, 1, 3, 2, 1],
    }
)
ALICE = pl.DataFrame({"query": 1, "doc": ["a", "b", "c", "d"], "relevance": [1, 1, 0, 0]})
BOB = pl.DataFrame({"query": 1, "doc": ["a", "b", "c", "e"], "relevance": [1, 0, 0, 1]})


@pytest.mark.parametrize("name", ["systems", "ranks", "best_rank", "weight", "__pool_rank"])
@pytest.mark.parametrize(
    "call",
    [
        lambda runs, judged, doc: pr.make_pool(runs, depth=2, doc=doc),
        lambda runs, judged, doc: pr.make_pool(runs, strategy="rrf", depth=2, doc=doc),
        lambda runs, judged, doc: pr.unjudged(runs, judged, depth=2, doc=doc),
        lambda runs, judged, doc: pr.pool_coverage(runs, judged, depth=2, doc=doc),
    ],
    ids=["make_pool", "make_pool_rrf", "unjudged", "pool_coverage"],
)
def test_pool_doc_named_like_an_output(call: Callable[..., Any], name: str) -> None:
    runs, judged = POOL_RUNS.rename({"doc": name}), ALICE.rename({"doc": name})
    clear_error(
        lambda: call(runs, judged, name), runs, judged, match=f"doc column '{name}' has the name"
    )


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (pl.lit("a b"), "doc 'a b' .* contains whitespace"),
        (pl.lit(None, pl.String), "doc None .* is null"),
        (pl.lit(""), "doc '' .* is empty"),
    ],
)
@pytest.mark.parametrize("format", ["relevation", "filelist"])
def test_write_pool_refuses_ids_a_line_cannot_hold(
    tmp_path: Any, format: str, change: pl.Expr, match: str
) -> None:
    """A doc id with a space was written as two fields; a null as an empty field."""
    pool = pl.DataFrame({"query": [1, 1], "doc": ["a", "b"]}).with_columns(
        doc=pl.when(pl.col("doc") == "b").then(change).otherwise(pl.col("doc"))
    )
    path = tmp_path / "pool.txt"
    clear_error(lambda: pr.write_pool(pool, path, format=format), pool, match=match)
    assert not path.exists()
    clear_error(lambda: pr.write_pool(pool.head(1), path, tag="my tag"), pool, match="tag 'my tag'")


@pytest.mark.parametrize(
    "name", ["agreement", "overlap", "cohen_kappa", "pairs", "kinds", "lo", "hi", "__group"]
)
def test_agreement_query_named_like_an_output(name: str) -> None:
    qrels = {"alice": ALICE.rename({"query": name}), "bob": BOB.rename({"query": name})}
    clear_error(
        lambda: pr.agreement(qrels, query=name, per_query=True),
        *qrels.values(),
        match=f"query column '{name}' has the name of a column agreement makes",
    )


@pytest.mark.parametrize("function", [pr.system_rankings, pr.ranking_agreement])
def test_assessor_named_like_the_system_column(function: Callable[..., Any]) -> None:
    qrels = {"system": ALICE, "bob": BOB}
    clear_error(
        lambda: function(POOL_RUNS, qrels, measure="RR"),
        POOL_RUNS,
        match="an assessor is named 'system'",
    )


# ----------------------------------------------------------- report, stats

PER_QUERY = pl.DataFrame(
    {
        "system": ["a"] * 4 + ["b"] * 4,
        "query": ["q1", "q2", "q3", "q4"] * 2,
        "AP": [0.1, 0.5, 0.3, 0.9, 0.2, 0.4, 0.1, 0.5],
        "P@5": [0.2, 0.4, 0.6, 0.8, 0.0, 0.2, 0.4, 0.4],
    }
)


@pytest.mark.parametrize(
    "call",
    [
        lambda pq: pr.report(pq),
        lambda pq: pr.compare(pq),
        lambda pq: pr.summarize(pq),
        lambda pq: pr.mean_scores(pq),
        lambda pq: pr.discriminative_power(pq, n_resamples=10),
    ],
    ids=["report", "compare", "summarize", "mean_scores", "discriminative_power"],
)
@pytest.mark.parametrize("dtype", [pl.String, pl.Categorical])
def test_measure_named_column_of_text(call: Callable[..., Any], dtype: pl.DataType) -> None:
    """A measure-named String column ended in a raw InvalidOperationError."""
    pq = PER_QUERY.with_columns(pl.col("AP").cast(pl.String).cast(dtype))
    clear_error(lambda: call(pq), pq, match=f"column 'AP' has a measure's name but holds {dtype}")


@pytest.mark.parametrize("digits", [-1, 1.5, True])
def test_report_digits_out_of_range(digits: Any) -> None:
    """digits=-1 ended in a raw OverflowError."""
    clear_error(lambda: pr.report(PER_QUERY, digits=digits), PER_QUERY, match="digits must be")


@pytest.mark.parametrize(
    ("bounds", "match"),
    [
        ((1.0, 0.0), "low < high"),
        ((0.5, 0.5), "low < high"),
        ((float("nan"), 1.0), "low < high"),
        (("a", 1.0), "two numbers"),
        ((0.2, 0.3), "'AP' has values outside its bounds"),
        ((0.0, 0.5), "'AP' has values outside its bounds"),
    ],
)
@pytest.mark.parametrize("interval", ["normal", "t", "bootstrap", "bca"])
def test_mean_interval_bounds(bounds: Any, match: str, interval: str) -> None:
    """Bounds (1, 0) gave the interval [0, 0] around a mean of 0.45; bounds the values
    leave gave an interval that excluded the mean."""
    clear_error(
        lambda: PER_QUERY.select(
            pr.mean_interval("AP", bounds=bounds, interval=interval, n_resamples=50)
        ),
        PER_QUERY,
        match=match,
    )


def test_summarize_clip_with_values_beyond_the_bounds() -> None:
    """P@5 is in [0, 1]: a per-query frame holding 1.5 is refused rather than clipped
    to an interval below its mean; clip=False summarizes it as it is."""
    pq = PER_QUERY.with_columns(
        pl.when(pl.col("query") == "q1").then(1.5).otherwise("P@5").alias("P@5")
    )
    clear_error(lambda: pr.summarize(pq), pq, match="'P@5' has values outside its bounds")
    out = pr.summarize(pq, clip=False).filter(pl.col("measure") == "P@5")
    assert (out["ci_low"] <= out["mean"]).all() and (out["mean"] <= out["ci_high"]).all()


def test_summarize_bounds_let_rounding_pass() -> None:
    """A ratio equal to 1 in exact arithmetic may round past it: such a value is in its
    bounds (clipped as before), not refused."""
    pq = PER_QUERY.with_columns(
        pl.when(pl.col("query") == "q1").then(1.0 + 2e-16).otherwise("P@5").alias("P@5")
    )
    out = pr.summarize(pq).filter(pl.col("measure") == "P@5")
    assert (out["ci_high"] <= 1.0).all() and out.height == 2


# ------------------------------------------------------------ plots, curves


@pytest.mark.parametrize(
    ("per_query", "kwargs", "match"),
    [
        (PER_QUERY.rename({"query": "diff"}), {"query": "diff"}, "query column 'diff'"),
        (PER_QUERY.rename({"query": "a"}), {"query": "a"}, "query column 'a'"),
        (PER_QUERY, {"measure": "query"}, "measure 'query' is the query column"),
        (PER_QUERY.with_columns(pl.col("AP").cast(pl.String)), {}, "must be numeric"),
        (pl.concat([PER_QUERY, PER_QUERY.head(1)]), {}, "duplicate rows for"),
        (PER_QUERY.with_columns(AP=pl.lit(float("nan"))), {}, "NaN or infinite"),
        (PER_QUERY.with_columns(AP=pl.lit(None, pl.Float64)), {}, "null values"),
    ],
    ids=["query=diff", "query=a", "measure=query", "text", "duplicate", "nan", "null"],
)
def test_query_differences(per_query: pl.DataFrame, kwargs: dict[str, Any], match: str) -> None:
    """A query column named 'diff' was overwritten by the differences, a duplicate row
    gave a query twice, NaN differences were drawn as nothing."""
    from polars_rankeval.plots import query_differences

    kwargs = {"measure": "AP"} | kwargs
    clear_error(lambda: query_differences(per_query, **kwargs), per_query, match=match)


@pytest.mark.parametrize("name", ["recall", "precision"])
@pytest.mark.parametrize("role", ["query", "system"])
@pytest.mark.parametrize("points", [11, None])
def test_precision_recall_curve_key_named_like_an_output(
    role: str, name: str, points: int | None
) -> None:
    run = POOL_RUNS.rename({role: name})
    qrels = ALICE.rename({"query": name}) if role == "query" else ALICE
    clear_error(
        lambda: pr.precision_recall_curve(run, qrels, points=points, **{role: name}),
        run,
        qrels,
        match=f"{role} column '{name}' has the name of a column precision_recall_curve makes",
    )


# --------------------------------------------------------- explain, diversity


@pytest.mark.parametrize("name", ["n_queries", "contribution", "mean_difference"])
def test_explain_by_cause_system_named_like_an_output(name: str) -> None:
    runs = POOL_RUNS.rename({"system": name})
    clear_error(
        lambda: pr.explain(runs, ALICE, ["AP", "P@2"], per="cause", system=name),
        runs,
        match=f"system column '{name}' has the name of a column cause_contributions makes",
    )


def test_evaluate_diversity_compound_query() -> None:
    """A list of query columns ended in TypeError: unhashable type: 'list'."""
    run = POOL_RUNS.with_columns(session=pl.lit(1))
    qrels = pl.DataFrame(
        {"query": 1, "session": 1, "subtopic": [1, 2], "doc": ["a", "b"], "relevance": 1}
    )
    clear_error(
        lambda: pr.evaluate_diversity(run, qrels, ["alpha-nDCG@2"], query=["query", "session"]),
        run,
        qrels,
        match="query must be one column name",
    )


# ------------------------------------------------------------------------ io


@pytest.mark.parametrize(
    ("run", "kwargs", "match"),
    [
        (pl.concat([POOL_RUNS, POOL_RUNS.head(1)]), {}, "run to write has duplicate rows"),
        (POOL_RUNS.with_columns(pl.col("score") > 1), {}, "must be numeric"),
        (POOL_RUNS.with_columns(score=pl.lit("x")), {}, "must be numeric"),
        (POOL_RUNS.with_columns(query=pl.lit([1, 2])), {}, "an id of a TREC line is one value"),
        (POOL_RUNS.rename({"query": "q"}), {"query": "system"}, "query='system' is also the"),
        (POOL_RUNS, {"doc": "nope"}, "run is missing column 'nope'"),
    ],
    ids=["duplicate", "boolean", "text", "list", "query=system", "missing"],
)
def test_write_trec_run_refuses(
    tmp_path: Any, run: pl.DataFrame, kwargs: dict[str, Any], match: str
) -> None:
    """A duplicate row was written twice (trec_eval refuses the file; evaluate counts the
    document twice); the others ended in raw Polars errors or wrote Booleans as 1.0/0.0."""
    path = tmp_path / "run.txt"
    clear_error(lambda: pr.write_trec_run(run, path, **kwargs), run, match=match)
    assert not path.exists()


@pytest.mark.parametrize("role", ["query", "doc", "relevance"])
def test_merge_qrels_column_named_assessors(role: str) -> None:
    qrels = [ALICE.rename({role: "assessors"}), BOB.rename({role: "assessors"})]
    clear_error(
        lambda: pr.merge_qrels(qrels, **{role: "assessors"}),
        *qrels,
        match=f"{role} column 'assessors' has the name of a column merge_qrels makes",
    )


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"system": "query"}, "system='query' is also the query column"),
        ({"by": "status"}, "by column 'status' has the name of a column coverage makes"),
    ],
)
def test_coverage_roles(kwargs: dict[str, Any], match: str) -> None:
    run = POOL_RUNS.with_columns(status=pl.lit("x"))
    clear_error(lambda: pr.coverage(run, ALICE, **kwargs), run, match=match)


def test_coverage_query_named_status() -> None:
    run, qrels = POOL_RUNS.rename({"query": "status"}), ALICE.rename({"query": "status"})
    clear_error(
        lambda: pr.coverage(run, qrels, query="status"),
        run,
        qrels,
        match="query column 'status' has the name of a column coverage makes",
    )


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: pr.topic_set_size(0.1, 0.2, max_topics=0), "max_topics must be an int >= 2"),
        (lambda: pr.topic_set_size(0.1, 0.2, max_topics=2.5), "max_topics must be an int"),
        (lambda: pr.topic_set_size(float("inf"), 0.2), "must be non-zero and finite"),
        (lambda: pr.fit_pbm(click_log(), tol=-1.0), "tol must be a number >= 0"),
        (lambda: pr.fit_pbm(click_log(), tol=float("nan")), "tol must be a number >= 0"),
        (lambda: pr.position_bias(click_log(), tol=float("inf")), "tol must be a number >= 0"),
    ],
    ids=["max_topics=0", "max_topics=2.5", "diff=inf", "tol<0", "tol=nan", "tol=inf"],
)
def test_option_values_out_of_range(call: Callable[[], Any], match: str) -> None:
    """max_topics=0 said 'more than 0 topics are needed', 2.5 blamed n; a tol of -1 or NaN
    ran EM to max_iter and returned an unconverged fit."""
    clear_error(call, match=match)
