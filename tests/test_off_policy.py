"""pr.off_policy against Open Bandit Pipeline 0.5's slate estimators.

OBP 0.5.7 needs Python < 3.11 and does not install here, so its code is transcribed
below (Apache License 2.0, Copyright (c) Yuta Saito, Yusuke Narita, and ZOZO
Technologies, Inc.), from ``obp/ope/estimators_slate.py`` (``BaseSlateInverseProbabilityWeighting.
_estimate_round_rewards`` and ``_estimate_slate_confidence_interval_by_bootstrap``,
``BaseSlateSelfNormalizedInverseProbabilityWeighting._estimate_round_rewards``,
``SelfNormalizedSlateStandardIPS._estimate_round_rewards``, ``estimate_policy_value``)
and ``obp/utils.py`` (``estimate_confidence_interval_by_bootstrap``), with only the
class scaffolding removed. The log is built as OBP's ``SyntheticSlateBanditDataset``
builds its own: Plackett-Luce behaviour and evaluation policies over a few actions, with
the joint, item-position and cascade propensities computed exactly by enumerating the
slates, and Bernoulli rewards per slot. OBP's own generator (``obp/dataset/synthetic_slate.py``,
``SyntheticSlateBanditDataset.sample_action_and_obtain_pscore`` and the reward sampling
with its click models) is transcribed at the end: the test log's propensities equal
OBP's on the slates OBP samples, and the estimators equal OBP's on OBP's own logs.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats

import polars_rankeval as pr
from polars_rankeval.off_policy import ESTIMATORS

# --- Open Bandit Pipeline 0.5.7, transcribed ------------------------------------------


def obp_round_rewards(reward, position, behavior_policy_pscore, evaluation_policy_pscore):
    """BaseSlateInverseProbabilityWeighting._estimate_round_rewards."""
    iw = evaluation_policy_pscore / behavior_policy_pscore
    estimated_rewards = reward * iw
    return estimated_rewards


def obp_sn_round_rewards(
    reward, position, behavior_policy_pscore, evaluation_policy_pscore, len_list
):
    """BaseSlateSelfNormalizedInverseProbabilityWeighting._estimate_round_rewards
    (SelfNormalizedSlateIndependentIPS, SelfNormalizedSlateRewardInteractionIPS)."""
    estimated_rewards = np.zeros_like(behavior_policy_pscore)
    iw = np.zeros_like(behavior_policy_pscore)
    for pos_ in range(len_list):
        idx = position == pos_
        iw[idx] = evaluation_policy_pscore[idx] / behavior_policy_pscore[idx]
        estimated_rewards[idx] = reward[idx] * iw[idx] / iw[idx].mean()
    return estimated_rewards


def obp_snsips_round_rewards(reward, position, behavior_policy_pscore, evaluation_policy_pscore):
    """SelfNormalizedSlateStandardIPS._estimate_round_rewards."""
    estimated_rewards = np.zeros_like(behavior_policy_pscore)
    iw = evaluation_policy_pscore / behavior_policy_pscore
    estimated_rewards = reward * iw / iw.mean()
    return estimated_rewards


def obp_estimate_confidence_interval_by_bootstrap(
    samples, alpha, n_bootstrap_samples, random_state
):
    """obp/utils.py estimate_confidence_interval_by_bootstrap (sklearn's
    check_random_state(int) is np.random.RandomState(int))."""
    boot_samples = list()
    random_ = np.random.RandomState(random_state)
    for _ in np.arange(n_bootstrap_samples):
        boot_samples.append(np.mean(random_.choice(samples, size=samples.shape[0])))
    lower_bound = np.percentile(boot_samples, 100 * (alpha / 2))
    upper_bound = np.percentile(boot_samples, 100 * (1.0 - alpha / 2))
    return {
        "mean": np.mean(boot_samples),
        f"{100 * (1.0 - alpha)}% CI (lower)": lower_bound,
        f"{100 * (1.0 - alpha)}% CI (upper)": upper_bound,
    }


def obp_slate_interval(slate_id, estimated_rewards, alpha, n_bootstrap_samples, random_state):
    """BaseSlateInverseProbabilityWeighting._estimate_slate_confidence_interval_by_bootstrap."""
    unique_slate = np.unique(slate_id)
    estimated_round_rewards = list()
    for slate in unique_slate:
        estimated_round_rewards.append(estimated_rewards[slate_id == slate].sum())
    estimated_round_rewards = np.array(estimated_round_rewards)
    return estimate_interval_dict_to_pair(
        obp_estimate_confidence_interval_by_bootstrap(
            estimated_round_rewards, alpha, n_bootstrap_samples, random_state
        ),
        alpha,
    )


def estimate_interval_dict_to_pair(ci: dict[str, float], alpha: float) -> tuple[float, float]:
    return ci[f"{100 * (1.0 - alpha)}% CI (lower)"], ci[f"{100 * (1.0 - alpha)}% CI (upper)"]


def obp(name: str, log: dict[str, np.ndarray], len_list: int, alpha: float, n_boot: int, seed: int):
    """What OBP's estimator ``name`` returns: (estimate_policy_value, interval)."""
    behaviour, evaluation, _ = ESTIMATORS[name]
    args = (log["reward"], log["position"], log[behaviour], log[evaluation])
    if name in ("sips", "iips", "rips"):
        rewards = obp_round_rewards(*args)
    elif name == "snsips":
        rewards = obp_snsips_round_rewards(*args)
    else:
        rewards = obp_sn_round_rewards(*args, len_list)
    value = rewards.sum() / np.unique(log["slate_id"]).shape[0]
    return value, obp_slate_interval(log["slate_id"], rewards, alpha, n_boot, seed)


# --- a synthetic slate log, as OBP's SyntheticSlateBanditDataset builds one -------------


def plackett_luce(logits: np.ndarray, len_list: int) -> dict[tuple[int, ...], float]:
    """Exact probability of every slate (ordered, without replacement)."""
    weights = np.exp(logits)
    probs = {}
    for slate in itertools.permutations(range(len(logits)), len_list):
        p, left = 1.0, weights.sum()
        for a in slate:
            p *= weights[a] / left
            left -= weights[a]
        probs[slate] = p
    return probs


def propensities(
    probs: dict[tuple[int, ...], float], slate: tuple[int, ...]
) -> dict[str, list[float]]:
    """Joint, item-position and cascade propensities of each slot of ``slate``."""
    joint = probs[slate]
    out: dict[str, list[float]] = {"joint": [], "item_position": [], "cascade": []}
    for k, a in enumerate(slate):
        out["joint"].append(joint)
        out["item_position"].append(sum(p for s, p in probs.items() if s[k] == a))
        out["cascade"].append(sum(p for s, p in probs.items() if s[: k + 1] == slate[: k + 1]))
    return out


def synthetic_slate_log(
    n_rounds: int, n_actions: int = 5, len_list: int = 3, seed: int = 0, n_contexts: int = 3
) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    contexts = []
    for _ in range(n_contexts):
        behaviour = plackett_luce(rng.normal(size=n_actions), len_list)
        evaluation = plackett_luce(rng.normal(size=n_actions) * 2, len_list)
        relevance = rng.uniform(0.05, 0.6, size=n_actions)
        contexts.append((behaviour, evaluation, relevance))
    cols: dict[str, list[float]] = {c: [] for c in ("slate_id", "position", "reward", "segment")}
    for c in ESTIMATORS.values():
        cols.setdefault(c[0], [])
        cols.setdefault(c[1], [])
    slate_ids = rng.permutation(n_rounds) * 7 + 3  # not in log order, not contiguous
    for i in range(n_rounds):
        x = int(rng.integers(n_contexts))
        behaviour, evaluation, relevance = contexts[x]
        slates = list(behaviour)
        slate = slates[rng.choice(len(slates), p=np.array(list(behaviour.values())))]
        pb, pe = propensities(behaviour, slate), propensities(evaluation, slate)
        for k, a in enumerate(slate):
            cols["slate_id"].append(slate_ids[i])
            cols["position"].append(k)
            # rewards depend on the item and (cascade-like) on the slot above it
            cols["reward"].append(float(rng.random() < relevance[a] * (0.9**k)))
            cols["segment"].append(x)
            cols["pscore"].append(pb["joint"][k])
            cols["evaluation_policy_pscore"].append(pe["joint"][k])
            cols["pscore_item_position"].append(pb["item_position"][k])
            cols["evaluation_policy_pscore_item_position"].append(pe["item_position"][k])
            cols["pscore_cascade"].append(pb["cascade"][k])
            cols["evaluation_policy_pscore_cascade"].append(pe["cascade"][k])
    arrays = {k: np.asarray(v) for k, v in cols.items()}
    order = rng.permutation(len(arrays["reward"]))  # rows shuffled: slates interleaved
    return {k: v[order] for k, v in arrays.items()}


@pytest.fixture(scope="module")
def slates() -> dict[str, np.ndarray]:
    return synthetic_slate_log(600)


ALL = tuple(ESTIMATORS)


def test_every_estimator_equals_obp_with_its_interval(slates: dict[str, np.ndarray]) -> None:
    got = pr.off_policy(pl.DataFrame(slates), ALL, alpha=0.1, n_bootstrap=300, seed=12, draws="obp")
    assert got["estimator"].to_list() == list(ALL)
    assert got["n_slates"].to_list() == [600] * 6
    for row in got.iter_rows(named=True):
        value, (lower, upper) = obp(row["estimator"], slates, 3, 0.1, 300, 12)
        assert row["estimate"] == pytest.approx(value, abs=1e-9, rel=0), row["estimator"]
        assert row["lower"] == pytest.approx(lower, abs=1e-9, rel=0), row["estimator"]
        assert row["upper"] == pytest.approx(upper, abs=1e-9, rel=0), row["estimator"]
        assert lower < value < upper


def test_estimates_differ_between_estimators(slates: dict[str, np.ndarray]) -> None:
    # the six are six different numbers here: each reads its own columns
    got = pr.off_policy(pl.DataFrame(slates), ALL, n_bootstrap=10, seed=0)
    assert got["estimate"].n_unique() == 6


@pytest.mark.parametrize("seed", [0, 1, 2024])
def test_interval_seed_semantics_and_default_n_bootstrap(seed: int) -> None:
    small = synthetic_slate_log(40, seed=seed)
    got = pr.off_policy(pl.DataFrame(small), ["iips", "snrips"], seed=seed, draws="obp")  # 10000
    for row in got.iter_rows(named=True):
        _, (lower, upper) = obp(row["estimator"], small, 3, 0.05, 10_000, seed)
        assert (row["lower"], row["upper"]) == pytest.approx((lower, upper), abs=1e-12)


def test_lazy_parquet_and_pandas_inputs_agree(
    slates: dict[str, np.ndarray], tmp_path: Path
) -> None:
    frame = pl.DataFrame(slates)
    before = frame.clone()
    want = pr.off_policy(frame, ALL, n_bootstrap=50, seed=3)
    frame.write_parquet(tmp_path / "log.parquet", row_group_size=500)
    scanned = pr.off_policy(pl.scan_parquet(tmp_path / "log.parquet"), ALL, n_bootstrap=50, seed=3)
    from_pandas = pr.off_policy(frame.to_pandas(), ALL, n_bootstrap=50, seed=3)
    for other in (scanned, from_pandas):
        assert other["estimator"].to_list() == want["estimator"].to_list()
        for column in ("estimate", "lower", "upper"):
            assert other[column].to_numpy() == pytest.approx(want[column].to_numpy(), abs=1e-12)
    assert frame.equals(before)


def test_segments_are_separate_obp_calls(slates: dict[str, np.ndarray]) -> None:
    got = pr.off_policy(
        pl.DataFrame(slates), ALL, by="segment", n_bootstrap=100, seed=5, draws="obp"
    )
    assert got.height == 3 * 6
    assert got["segment"].unique().sort().to_list() == [0, 1, 2]
    for row in got.iter_rows(named=True):
        keep = slates["segment"] == row["segment"]
        part = {k: v[keep] for k, v in slates.items()}
        value, (lower, upper) = obp(row["estimator"], part, 3, 0.05, 100, 5)
        assert row["estimate"] == pytest.approx(value, abs=1e-9, rel=0)
        assert (row["lower"], row["upper"]) == pytest.approx((lower, upper), abs=1e-9, rel=0)
        assert row["n_slates"] == len(np.unique(part["slate_id"]))


def test_position_weights_multiply_the_rewards(slates: dict[str, np.ndarray]) -> None:
    weights = {0: 1.0, 1: 0.5, 2: 0.25}
    got = pr.off_policy(pl.DataFrame(slates), ALL, n_bootstrap=20, seed=0, position_weights=weights)
    weighted = dict(slates, reward=slates["reward"] * np.vectorize(weights.get)(slates["position"]))
    for row in got.iter_rows(named=True):
        value, _ = obp(row["estimator"], weighted, 3, 0.05, 20, 0)
        assert row["estimate"] == pytest.approx(value, abs=1e-9, rel=0)
    by_column = pr.off_policy(
        pl.DataFrame(slates).with_columns(w=pl.col("position").replace_strict(weights)),
        ALL,
        n_bootstrap=20,
        seed=0,
        position_weights="w",
    )
    assert by_column["estimate"].to_list() == pytest.approx(got["estimate"].to_list(), abs=1e-12)


def test_hand_worked_snsips_and_sniips() -> None:
    # two slates of two positions; weights slate 1: 0.5/0.25 = 2 (both rows),
    # slate 2: 0.5/0.5 = 1; rewards (1, 0) and (1, 1)
    log = pl.DataFrame(
        {
            "slate_id": [1, 1, 2, 2],
            "position": [0, 1, 0, 1],
            "reward": [1.0, 0.0, 1.0, 1.0],
            "pscore": [0.25, 0.25, 0.5, 0.5],
            "evaluation_policy_pscore": [0.5, 0.5, 0.5, 0.5],
            "pscore_item_position": [0.5, 0.25, 0.5, 0.5],
            "evaluation_policy_pscore_item_position": [0.25, 0.5, 1.0, 0.5],
        }
    )
    got = pr.off_policy(log, ["sips", "snsips", "iips", "sniips"], n_bootstrap=10, seed=0)
    est = dict(zip(got["estimator"], got["estimate"], strict=True))
    assert est["sips"] == pytest.approx((2 * 1 + 1 * 2) / 2)
    assert est["snsips"] == pytest.approx((2 * 1 / 1.5 + 1 * 2 / 1.5) / 2)
    # iips weights: pos 0: 0.5, 2; pos 1: 2, 1
    assert est["iips"] == pytest.approx((0.5 * 1 + 2 * 0 + 2 * 1 + 1 * 1) / 2)
    # sniips: mean weight at pos 0 is 1.25, at pos 1 is 1.5
    assert est["sniips"] == pytest.approx((0.5 / 1.25 + 2 / 1.25 + 1 / 1.5) / 2)


def test_an_estimator_refuses_a_log_without_its_columns(slates: dict[str, np.ndarray]) -> None:
    log = pl.DataFrame(slates).drop("pscore_cascade")
    assert pr.off_policy(log, ["sips", "iips"], n_bootstrap=5).height == 2
    with pytest.raises(ValueError, match="estimator 'rips' needs column 'pscore_cascade'"):
        pr.off_policy(log, ["sips", "rips"])
    with pytest.raises(ValueError, match="estimator 'snrips' needs column 'pscore_cascade'"):
        pr.off_policy(log.lazy(), ["snrips"])


@pytest.mark.parametrize(
    ("change", "kwargs", "match"),
    [
        (pl.col("pscore") * 0, {}, r"'pscore' must be a probability in \(0, 1\]"),
        (pl.col("pscore") + 1, {}, r"'pscore' must be a probability"),
        (None, {"estimators": ["dr"]}, "estimators must be among"),
        (None, {"estimators": []}, "at least one"),
        (None, {"estimators": ["sips", "sips"]}, "twice"),
        (None, {"alpha": 1.5}, "alpha must be"),
        (None, {"n_bootstrap": 0}, "n_bootstrap must be an int >= 1"),
        (None, {"draws": "legacy"}, "draws must be 'fast' or 'obp'. Got 'legacy'"),
        (None, {"slate": "session"}, "missing column 'session'"),
        (None, {"by": "country"}, "missing column 'country'"),
    ],
)
def test_bad_input_is_refused_by_name(
    slates: dict[str, np.ndarray], change: pl.Expr | None, kwargs: dict[str, object], match: str
) -> None:
    log = pl.DataFrame(slates)
    if change is not None:
        log = log.with_columns(change.alias("pscore"))
    with pytest.raises(ValueError, match=match):
        pr.off_policy(log, **kwargs)  # type: ignore[arg-type]


def test_joint_propensity_must_be_constant_in_a_slate_and_positions_unique() -> None:
    log = pl.DataFrame(
        {
            "slate_id": [1, 1, 2, 2],
            "position": [0, 1, 0, 1],
            "reward": [1.0, 0.0, 1.0, 1.0],
            "pscore": [0.25, 0.5, 0.5, 0.5],
            "evaluation_policy_pscore": [0.5, 0.5, 0.5, 0.5],
        }
    )
    with pytest.raises(ValueError, match="slate 1 has several values"):
        pr.off_policy(log, ["sips"])
    twice = log.with_columns(position=pl.lit(0), pscore=pl.lit(0.5))
    with pytest.raises(ValueError, match="slate 1 shows a position twice"):
        pr.off_policy(twice, ["sips"])
    # positions far apart (a bit per position no longer fits): counted another way
    wide = log.with_columns(position=pl.Series([100, 100, 0, 1]), pscore=pl.lit(0.5))
    with pytest.raises(ValueError, match="slate 1 shows a position twice"):
        pr.off_policy(wide, ["sips"])
    assert pr.off_policy(wide.with_columns(position=pl.Series([100, 0, 0, 1])), ["sips"]).height
    nulls = log.with_columns(pscore=pl.lit(0.5), reward=pl.Series([1.0, None, 0.0, 1.0]))
    with pytest.raises(ValueError, match="reward column 'reward' holds null"):
        pr.off_policy(nulls, ["sips"])
    with pytest.raises(TypeError, match="position column 'position' must hold integers"):
        pr.off_policy(log.with_columns(pl.col("position").cast(pl.Float64)), ["sips"])


def test_resamples_drawn_block_by_block_are_obps(
    slates: dict[str, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib

    module = importlib.import_module("polars_rankeval.off_policy")
    monkeypatch.setattr(module, "_CHUNK", 7 * 600)  # blocks of 7 resamples, the last of 2
    got = pr.off_policy(
        pl.DataFrame(slates), ["sips", "sniips"], n_bootstrap=30, seed=11, draws="obp"
    )
    for row in got.iter_rows(named=True):
        _, (lower, upper) = obp(row["estimator"], slates, 3, 0.05, 30, 11)
        assert (row["lower"], row["upper"]) == pytest.approx((lower, upper), abs=1e-12)


def test_a_given_random_state_gives_obps_sequence_across_segments(
    slates: dict[str, np.ndarray],
) -> None:
    # one RandomState shared by the segments, in segment order, as successive OBP calls
    got = pr.off_policy(
        pl.DataFrame(slates),
        ["iips"],
        by="segment",
        n_bootstrap=50,
        seed=np.random.RandomState(4),
        draws="obp",
    )
    state = np.random.RandomState(4)
    for row in got.sort("segment").iter_rows(named=True):
        keep = slates["segment"] == row["segment"]
        part = {k: v[keep] for k, v in slates.items()}
        rewards = obp_round_rewards(
            part["reward"],
            part["position"],
            part["pscore_item_position"],
            part["evaluation_policy_pscore_item_position"],
        )
        per_slate = np.array(
            [rewards[part["slate_id"] == s].sum() for s in np.unique(part["slate_id"])]
        )
        boot = [np.mean(state.choice(per_slate, size=per_slate.shape[0])) for _ in range(50)]
        assert row["lower"] == pytest.approx(np.percentile(boot, 2.5), abs=1e-12)
        assert row["upper"] == pytest.approx(np.percentile(boot, 97.5), abs=1e-12)


def test_empty_logs_and_text_columns_are_refused(slates: dict[str, np.ndarray]) -> None:
    log = pl.DataFrame(slates)
    with pytest.raises(ValueError, match="the log has no rows"):
        pr.off_policy(log.head(0), ["sips"])
    with pytest.raises(TypeError, match="column 'reward' must hold numbers"):
        pr.off_policy(log.with_columns(pl.col("reward").cast(pl.String)), ["sips"])


# --- draws="fast": numpy's default generator, within Monte-Carlo error of OBP ---------


def per_slate_sums(name: str, log: dict[str, np.ndarray], len_list: int = 3) -> np.ndarray:
    """OBP's estimated round rewards summed per slate (ascending slate id)."""
    behaviour, evaluation, _ = ESTIMATORS[name]
    args = (log["reward"], log["position"], log[behaviour], log[evaluation])
    if name in ("sips", "iips", "rips"):
        rewards = obp_round_rewards(*args)
    elif name == "snsips":
        rewards = obp_snsips_round_rewards(*args)
    else:
        rewards = obp_sn_round_rewards(*args, len_list)
    return np.array([rewards[log["slate_id"] == s].sum() for s in np.unique(log["slate_id"])])


@pytest.mark.parametrize("chunk", [None, 7 * 600])
def test_fast_draws_are_the_default_generator_rows(
    slates: dict[str, np.ndarray], chunk: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # resample b is row b of default_rng(seed).integers(0, n, (B, n), int32), whatever
    # the block size (blocks of 7 resamples, the last of 2)
    import importlib

    if chunk is not None:
        module = importlib.import_module("polars_rankeval.off_policy")
        monkeypatch.setattr(module, "_CHUNK", chunk)
    got = pr.off_policy(pl.DataFrame(slates), ["sips", "sniips"], n_bootstrap=30, seed=11)
    rows = np.random.default_rng(11).integers(0, 600, size=(30, 600), dtype=np.int32)
    for row in got.iter_rows(named=True):
        means = per_slate_sums(row["estimator"], slates)[rows].mean(axis=1)
        want = np.percentile(means, [2.5, 97.5])
        assert (row["lower"], row["upper"]) == pytest.approx(tuple(want), abs=1e-12)


def test_a_given_generator_goes_on_across_segments(slates: dict[str, np.ndarray]) -> None:
    got = pr.off_policy(
        pl.DataFrame(slates), ["iips"], by="segment", n_bootstrap=40, seed=np.random.default_rng(4)
    )
    generator = np.random.default_rng(4)
    for row in got.sort("segment").iter_rows(named=True):
        keep = slates["segment"] == row["segment"]
        sums = per_slate_sums("iips", {k: v[keep] for k, v in slates.items()})
        rows = generator.integers(0, len(sums), size=(40, len(sums)), dtype=np.int32)
        want = np.percentile(sums[rows].mean(axis=1), [2.5, 97.5])
        assert (row["lower"], row["upper"]) == pytest.approx(tuple(want), abs=1e-12)


def test_fast_interval_is_obps_within_monte_carlo_error(slates: dict[str, np.ndarray]) -> None:
    """Both bounds are percentiles of B resampled means, OBP's from its own draws and
    ours from another generator. The resampled mean is close to normal with standard
    deviation s / sqrt(n) (s: the standard deviation of the n per-slate sums), so a
    percentile q of B draws has a Monte-Carlo standard error of
    sqrt(q (1 - q) / B) / phi(z_q) * s / sqrt(n) (the asymptotic variance of a sample
    quantile); two independent ones differ by sqrt(2) times that. The tolerance is 4.5
    of those standard errors (a chance of about 7e-6 per bound to exceed it)."""
    n_boot, alpha = 10_000, 0.05
    got = pr.off_policy(pl.DataFrame(slates), ALL, alpha=alpha, n_bootstrap=n_boot, seed=1)
    q = alpha / 2
    z = stats.norm.ppf(1 - q)
    quantile_se = np.sqrt(q * (1 - q) / n_boot) / stats.norm.pdf(z)
    for row in got.iter_rows(named=True):
        name = row["estimator"]
        sums = per_slate_sums(name, slates)
        # OBP's resampled means (estimate_confidence_interval_by_bootstrap, seed 12)
        state = np.random.RandomState(12)
        boot = [np.mean(state.choice(sums, size=sums.shape[0])) for _ in range(n_boot)]
        lower, upper = np.percentile(boot, [100 * q, 100 * (1 - q)])
        tolerance = 4.5 * np.sqrt(2) * quantile_se * sums.std(ddof=1) / np.sqrt(len(sums))
        assert abs(row["lower"] - lower) < tolerance, name
        assert abs(row["upper"] - upper) < tolerance, name
        # the tolerance is tight: a fifth of the interval's width or less, and OBP's
        # bounds at alpha = 0.1 lie outside it
        assert tolerance < (upper - lower) / 5, name
        lower_10, upper_10 = np.percentile(boot, [5, 95])
        assert abs(row["lower"] - lower_10) > tolerance, name
        assert abs(row["upper"] - upper_10) > tolerance, name


def test_a_generator_of_the_other_kind_is_refused(slates: dict[str, np.ndarray]) -> None:
    log = pl.DataFrame(slates)
    with pytest.raises(TypeError, match=r"draws=.fast. draws with a numpy\.random\.Generator"):
        pr.off_policy(log, ["sips"], seed=np.random.RandomState(0))
    with pytest.raises(TypeError, match=r"draws=.obp. draws with a numpy\.random\.RandomState"):
        pr.off_policy(log, ["sips"], seed=np.random.default_rng(0), draws="obp")
    with pytest.raises(ValueError, match="seed must be an int >= 0"):
        pr.off_policy(log, ["sips"], seed=-1)


# --- OBP's SyntheticSlateBanditDataset, transcribed (obp/dataset/synthetic_slate.py) ---
# The context-free case (``base_reward_function=None``) with the behaviour policy's logits
# given per round: ``sample_action_and_obtain_pscore`` (sampling and the three
# propensities), ``_calc_pscore_given_action_list``, ``sample_contextfree_expected_reward``
# and ``sample_reward_given_expected_reward`` (binary rewards, click models None, "pbm"
# and "cascade"), with ``obp/utils.py`` ``softmax``. Apache License 2.0, Copyright (c)
# Yuta Saito, Yusuke Narita, and ZOZO Technologies, Inc.; only the class scaffolding and
# the progress bar are removed.


def obp_softmax(x: np.ndarray) -> np.ndarray:
    b = np.max(x, axis=1)[:, np.newaxis]
    numerator = np.exp(x - b)
    denominator = np.sum(numerator, axis=1)[:, np.newaxis]
    return numerator / denominator


def obp_calc_pscore_given_action_list(action_list, policy_logit_i_, n_unique_action):
    unique_action_set = np.arange(n_unique_action)
    pscore_ = 1.0
    for action in action_list:
        score_ = obp_softmax(policy_logit_i_[:, unique_action_set])[0]
        action_index = np.where(unique_action_set == action)[0][0]
        pscore_ *= score_[action_index]
        unique_action_set = np.delete(unique_action_set, unique_action_set == action)
    return pscore_


def obp_sample_action_and_obtain_pscore(
    behavior_policy_logit_, n_rounds, n_unique_action, len_list, random_
):
    action = np.zeros(n_rounds * len_list, dtype=int)
    pscore_cascade = np.zeros(n_rounds * len_list)
    pscore = np.zeros(n_rounds * len_list)
    pscore_item_position = np.zeros(n_rounds * len_list)
    for i in np.arange(n_rounds):
        unique_action_set = np.arange(n_unique_action)
        pscore_i = 1.0
        for position_ in np.arange(len_list):
            score_ = obp_softmax(behavior_policy_logit_[i : i + 1, unique_action_set])[0]
            sampled_action = random_.choice(unique_action_set, p=score_, replace=False)
            action[i * len_list + position_] = sampled_action
            sampled_action_index = np.where(unique_action_set == sampled_action)[0][0]
            pscore_i *= score_[sampled_action_index]
            pscore_cascade[i * len_list + position_] = pscore_i
            unique_action_set = np.delete(unique_action_set, unique_action_set == sampled_action)
            if position_ == 0:
                pscore_item_position_i_l = pscore_i
            else:
                pscore_item_position_i_l = 0.0
                for action_list in itertools.permutations(np.arange(n_unique_action), len_list):
                    if sampled_action != action_list[position_]:
                        continue
                    pscore_item_position_i_l += obp_calc_pscore_given_action_list(
                        action_list, behavior_policy_logit_[i : i + 1], n_unique_action
                    )
            pscore_item_position[i * len_list + position_] = pscore_item_position_i_l
        start_idx = i * len_list
        end_idx = start_idx + len_list
        pscore[start_idx:end_idx] = pscore_i
    return action, pscore_cascade, pscore, pscore_item_position


def obp_sample_reward_given_expected_reward(
    expected_reward_factual, len_list, exam_weight, attractiveness, random_
):
    expected_reward_factual *= exam_weight
    sampled_reward_list = list()
    discount_factors = np.ones(expected_reward_factual.shape[0])
    sampled_rewards_at_position = np.zeros(expected_reward_factual.shape[0])
    for position_ in np.arange(len_list):
        discount_factors *= sampled_rewards_at_position * attractiveness[position_] + (
            1 - sampled_rewards_at_position
        )
        expected_reward_factual_at_position = (
            discount_factors * expected_reward_factual[:, position_]
        )
        sampled_rewards_at_position = random_.binomial(n=1, p=expected_reward_factual_at_position)
        sampled_reward_list.append(sampled_rewards_at_position)
    return np.array(sampled_reward_list).T


def obp_synthetic_slate_feedback(
    n_rounds: int,
    behaviour_logit: np.ndarray,
    evaluation_logit: np.ndarray,
    len_list: int = 3,
    click_model: str | None = None,
    eta: float = 1.0,
    random_state: int = 12345,
) -> dict[str, np.ndarray]:
    """``SyntheticSlateBanditDataset(n_unique_action, len_list, click_model, eta,
    random_state).obtain_batch_bandit_feedback(n_rounds)`` with a behaviour policy
    returning ``behaviour_logit`` for every context, and the evaluation policy's three
    propensities of the logged slates from ``evaluation_logit``, computed as OBP computes
    the behaviour policy's (``_calc_pscore_given_action_list`` summed over the slates)."""
    n_unique_action = len(behaviour_logit)
    random_ = np.random.RandomState(random_state)  # check_random_state(int)
    if click_model == "pbm":
        exam_weight = (1.0 / np.arange(1, len_list + 1)) ** eta
        attractiveness = np.ones(len_list, dtype=float)
    elif click_model == "cascade":
        attractiveness = (1.0 / np.arange(1, len_list + 1)) ** eta
        exam_weight = np.ones(len_list, dtype=float)
    else:
        attractiveness = np.ones(len_list, dtype=float)
        exam_weight = np.ones(len_list, dtype=float)
    random_.normal(size=(n_rounds, 1))  # the contexts (dim_context=1), unused here
    behavior_policy_logit_ = np.tile(behaviour_logit, (n_rounds, 1))
    action, pscore_cascade, pscore, pscore_item_position = obp_sample_action_and_obtain_pscore(
        behavior_policy_logit_, n_rounds, n_unique_action, len_list, random_
    )
    # sample_contextfree_expected_reward(random_state=self.random_state)
    expected_reward = np.random.RandomState(random_state).uniform(size=(n_unique_action, len_list))
    expected_reward_tile = np.tile(expected_reward, (n_rounds, 1, 1))
    action_2d = action.reshape((n_rounds, len_list))
    expected_reward_factual = np.array(
        [
            expected_reward_tile[np.arange(n_rounds), action_2d[:, position_], position_]
            for position_ in np.arange(len_list)
        ]
    ).T
    expected_reward_factual = np.clip(expected_reward_factual, 0, None)
    reward = obp_sample_reward_given_expected_reward(
        expected_reward_factual, len_list, exam_weight, attractiveness, random_
    )
    evaluation: dict[str, list[float]] = {"joint": [], "item_position": [], "cascade": []}
    logit = evaluation_logit[np.newaxis, :]
    slates = {
        s: obp_calc_pscore_given_action_list(s, logit, n_unique_action)
        for s in itertools.permutations(range(n_unique_action), len_list)
    }
    for slate in map(tuple, action_2d.tolist()):
        for k in range(len_list):
            evaluation["joint"].append(slates[slate])
            evaluation["cascade"].append(
                sum(p for s, p in slates.items() if s[: k + 1] == slate[: k + 1])
            )
            evaluation["item_position"].append(
                sum(p for s, p in slates.items() if s[k] == slate[k])
            )
    return {
        "slate_id": np.repeat(np.arange(n_rounds), len_list),
        "action": action,
        "position": np.tile(np.arange(len_list), n_rounds),
        "reward": reward.reshape(action.shape[0]).astype(float),
        "pscore": pscore,
        "pscore_item_position": pscore_item_position,
        "pscore_cascade": pscore_cascade,
        "evaluation_policy_pscore": np.array(evaluation["joint"]),
        "evaluation_policy_pscore_item_position": np.array(evaluation["item_position"]),
        "evaluation_policy_pscore_cascade": np.array(evaluation["cascade"]),
    }


@pytest.fixture(scope="module")
def obp_logits() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    return rng.normal(size=5), rng.normal(size=5) * 2


def test_the_test_generators_propensities_are_obps(
    obp_logits: tuple[np.ndarray, np.ndarray],
) -> None:
    # synthetic_slate_log's propensities (plackett_luce + propensities) against OBP's
    # sample_action_and_obtain_pscore on the slates OBP samples
    behaviour, evaluation = obp_logits
    log = obp_synthetic_slate_feedback(40, behaviour, evaluation)
    mine_b, mine_e = plackett_luce(behaviour, 3), plackett_luce(evaluation, 3)
    slates = log["action"].reshape(40, 3)
    for name, theirs_b, theirs_e in (
        ("joint", "pscore", "evaluation_policy_pscore"),
        ("item_position", "pscore_item_position", "evaluation_policy_pscore_item_position"),
        ("cascade", "pscore_cascade", "evaluation_policy_pscore_cascade"),
    ):
        ours_b = [p for s in slates for p in propensities(mine_b, tuple(s))[name]]
        ours_e = [p for s in slates for p in propensities(mine_e, tuple(s))[name]]
        assert np.asarray(ours_b) == pytest.approx(log[theirs_b], abs=1e-12, rel=0), name
        assert np.asarray(ours_e) == pytest.approx(log[theirs_e], abs=1e-12, rel=0), name


@pytest.mark.parametrize("click_model", [None, "pbm", "cascade"])
def test_every_estimator_equals_obp_on_obps_synthetic_slates(
    obp_logits: tuple[np.ndarray, np.ndarray], click_model: str | None
) -> None:
    behaviour, evaluation = obp_logits
    log = obp_synthetic_slate_feedback(150, behaviour, evaluation, click_model=click_model)
    assert 0 < log["reward"].mean() < 1
    got = pr.off_policy(pl.DataFrame(log), ALL, n_bootstrap=200, seed=3, draws="obp")
    for row in got.iter_rows(named=True):
        value, (lower, upper) = obp(row["estimator"], log, 3, 0.05, 200, 3)
        assert row["estimate"] == pytest.approx(value, abs=1e-9, rel=0), row["estimator"]
        assert (row["lower"], row["upper"]) == pytest.approx((lower, upper), abs=1e-9, rel=0)
