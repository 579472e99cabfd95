r"""Off-policy estimates of a ranking policy from a log of slates: Open Bandit Pipeline's
slate estimators (``sips``, ``iips``, ``rips`` and their self-normalised versions), as
two streaming passes over the log and a bootstrap over per-slate sums.

The log has one row per (slate, position) with the observed reward and, for each
estimator, the propensity of the logged item(s) under the behaviour policy and under the
evaluation policy, with Open Bandit Pipeline's column names:

=========  ===========================  ==========================================
estimator  behaviour policy             evaluation policy
=========  ===========================  ==========================================
sips       ``pscore``                   ``evaluation_policy_pscore``
iips       ``pscore_item_position``     ``evaluation_policy_pscore_item_position``
rips       ``pscore_cascade``           ``evaluation_policy_pscore_cascade``
=========  ===========================  ==========================================

``snsips``, ``sniips`` and ``snrips`` read the same pairs as ``sips``, ``iips`` and
``rips``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Final, Literal, overload

import numpy as np
import polars as pl

from polars_rankeval._typing import ArrowStreamExportable, FrameT, IntoFrame
from polars_rankeval.clicks import checked_clicks
from polars_rankeval.inputs import as_frame
from polars_rankeval.validation import (
    check_columns,
    check_duplicates,
    check_int,
    check_one_system,
    check_reserved,
    check_same_dtypes,
    null_values,
)

Normalisation = Literal["none", "all", "position"]
Draws = Literal["fast", "obp"]
"""How the bootstrap draws its resamples: numpy's default generator, or as OBP does."""
Seed = int | np.random.Generator | np.random.RandomState | None

ESTIMATORS: Final[dict[str, tuple[str, str, Normalisation]]] = {
    "sips": ("pscore", "evaluation_policy_pscore", "none"),
    "iips": ("pscore_item_position", "evaluation_policy_pscore_item_position", "none"),
    "rips": ("pscore_cascade", "evaluation_policy_pscore_cascade", "none"),
    "snsips": ("pscore", "evaluation_policy_pscore", "all"),
    "sniips": ("pscore_item_position", "evaluation_policy_pscore_item_position", "position"),
    "snrips": ("pscore_cascade", "evaluation_policy_pscore_cascade", "position"),
}
"""Estimator name -> (behaviour propensity column, evaluation propensity column,
self-normalisation: none, by the mean weight over all rows, or per position)."""

_CHUNK: Final = 1 << 22  # bootstrap draws at once (32 MiB of ones, <= 32 MiB of indices)


def off_policy(
    log: IntoFrame,
    estimators: Sequence[str] = ("sips", "iips", "rips", "snsips", "sniips", "snrips"),
    *,
    slate: str = "slate_id",
    position: str = "position",
    reward: str = "reward",
    alpha: float = 0.05,
    n_bootstrap: int = 10_000,
    seed: Seed = 0,
    by: str | Sequence[str] | None = None,
    position_weights: Mapping[int, float] | str | None = None,
    draws: Draws = "fast",
) -> pl.DataFrame:
    r"""Estimate the value of an evaluation policy from slates logged by a behaviour policy.

    With :math:`n` slates :math:`i`, positions :math:`l`, rewards :math:`r_i(l)` and the
    importance weight of each row :math:`w_i(l) = \pi_e / \pi_b` read from the
    estimator's pair of propensity columns,

    .. math::

        \hat V = \frac{1}{n} \sum_{i=1}^{n} \sum_{l} v_l \, r_i(l) \, \frac{w_i(l)}{c_i(l)}

    where :math:`v_l` is the position weight (1 unless ``position_weights`` says
    otherwise) and :math:`c` the self-normalisation: 1 for ``sips``, ``iips``,
    ``rips``; the mean weight over all rows for ``snsips``; the mean weight over the
    rows at position :math:`l` for ``sniips`` and ``snrips``. ``sips`` uses the joint
    propensity of the slate (the same on each of its rows), ``iips`` the marginal
    propensity of the item at its position (Li et al. 2018), ``rips`` the propensity
    of the items down to the position (cascade; McInerney et al. 2020). These are Open
    Bandit Pipeline 0.5's ``SlateStandardIPS``, ``SlateIndependentIPS``,
    ``SlateRewardInteractionIPS`` and their ``SelfNormalized...`` versions
    (``obp/ope/estimators_slate.py``).

    The interval is OBP's percentile bootstrap (``estimate_confidence_interval_by_bootstrap``
    in ``obp/utils.py``): the per-slate sums (slates in ascending id order) are resampled
    with replacement ``n_bootstrap`` times, and the :math:`\alpha/2` and
    :math:`1-\alpha/2` percentiles of the resampled means are the bounds. With
    ``draws="obp"`` the resamples are the ones ``numpy.random.RandomState(seed)`` draws
    for OBP, so an int seed gives the interval OBP gives with ``random_state=seed``;
    with ``draws="fast"`` (the default) they come from ``numpy.random.default_rng(seed)``,
    which draws them two to five times faster than numpy's legacy generator: the same
    bootstrap, an interval within Monte-Carlo error of OBP's. The self-normalisation is
    computed once on the whole log, as OBP does.

    Parameters
    ----------
    log
        One row per (slate, position): a Polars DataFrame or LazyFrame (scanned in two
        streaming passes), a pandas DataFrame, a pyarrow Table, ...
    estimators
        Names from ``sips``, ``iips``, ``rips``, ``snsips``, ``sniips``, ``snrips``.
        Each reads its pair of propensity columns; a log without them is refused.
    slate, position, reward
        Column names. ``position`` is an integer column; the rewards are numbers.
    alpha
        Significance level of the interval, in (0, 1).
    n_bootstrap
        Bootstrap resamples (>= 1). The cost is ``n_bootstrap`` x the number of slates.
    seed
        An int (default 0, as the library's other resampling: the same intervals at
        every call), None (fresh entropy), or a generator to draw from: a
        ``numpy.random.Generator`` with ``draws="fast"``, a ``numpy.random.RandomState``
        with ``draws="obp"``. With an int, each segment starts from the same seed; a
        generator goes on from segment to segment.
    by
        Segment column(s): one set of estimates per segment.
    position_weights
        A ``{position: weight}`` mapping or a column name: rewards are multiplied by it
        (positions missing from a mapping weigh 0). None: every reward weighs 1 (OBP).
    draws
        ``"fast"``: resample :math:`b` is row :math:`b` of
        ``default_rng(seed).integers(0, n, size=(n_bootstrap, n), dtype=np.int32)``.
        ``"obp"``: the rows ``RandomState(seed).choice(n, size=n)`` gives on its
        :math:`b`-th call, as OBP draws them (slower to draw).

    Returns
    -------
    pl.DataFrame
        One row per segment and estimator: ``by...``, ``estimator``, ``estimate``,
        ``lower``, ``upper``, ``n_slates``.

    References
    ----------
    McInerney, Brost, Chandar, Mehrotra, Carterette. Counterfactual Evaluation of Slate
    Recommendations with Sequential Reward Interactions. KDD 2020.
    Li, Abbasi-Yadkori, Kveton, Muthukrishnan, Vinay, Wen. Offline Evaluation of Ranking
    Policies with Click Models. KDD 2018.
    Saito, Aihara, Matsutani, Narita. Open Bandit Dataset and Pipeline. NeurIPS 2021
    Datasets and Benchmarks.

    Examples
    --------
    Two slates of two positions. sips: slate 1 weighs 0.5/0.25 = 2 and earns 1 + 0,
    slate 2 weighs 0.5/0.5 = 1 and earns 1 + 1, so (2 * 1 + 1 * 2) / 2 = 2.

    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> log = pl.DataFrame({
    ...     "slate_id": [1, 1, 2, 2], "position": [0, 1, 0, 1],
    ...     "reward": [1, 0, 1, 1],
    ...     "pscore": [0.25, 0.25, 0.5, 0.5],
    ...     "evaluation_policy_pscore": [0.5, 0.5, 0.5, 0.5],
    ... })
    >>> out = pr.off_policy(log, ["sips", "snsips"], n_bootstrap=100, seed=0)
    >>> out.select("estimator", "estimate", "n_slates")
    shape: (2, 3)
    ┌───────────┬──────────┬──────────┐
    │ estimator ┆ estimate ┆ n_slates │
    │ ---       ┆ ---      ┆ ---      │
    │ str       ┆ f64      ┆ u32      │
    ╞═══════════╪══════════╪══════════╡
    │ sips      ┆ 2.0      ┆ 2        │
    │ snsips    ┆ 1.333333 ┆ 2        │
    └───────────┴──────────┴──────────┘

    snsips divides each weight by their mean over the rows, (2 + 2 + 1 + 1) / 4 = 1.5.
    """
    frame = as_frame(log, "log").lazy()
    schema = frame.collect_schema()
    keys = _segments(by)
    names = _check_estimators(estimators)
    _check_arguments(alpha, n_bootstrap, seed, draws)
    weight_column = position_weights if isinstance(position_weights, str) else None
    required = {"slate": slate, "position": position, "reward": reward}
    if weight_column is not None:
        required["position_weights"] = weight_column
    check_columns(schema, required, "log")
    for key in keys:
        check_columns(schema, {"by": key}, "log")
    for name in names:
        behaviour, evaluation, _ = ESTIMATORS[name]
        for column in (behaviour, evaluation):
            if column not in schema:
                msg = f"estimator {name!r} needs column {column!r}, which the log lacks."
                raise ValueError(msg)
    if not schema[position].is_integer():
        msg = f"position column {position!r} must hold integers. Got {schema[position]}."
        raise TypeError(msg)
    pairs = sorted({ESTIMATORS[n][:2] for n in names})
    if not (schema[reward].is_numeric() or schema[reward] == pl.Boolean):
        msg = f"column {reward!r} must hold numbers. Got {schema[reward]}."
        raise TypeError(msg)
    for column in (c for pair in pairs for c in pair):
        if not schema[column].is_numeric():
            msg = f"column {column!r} must hold probabilities (numbers). Got {schema[column]}."
            raise TypeError(msg)
    outputs = ("estimator", "estimate", "lower", "upper", "n_slates")
    check_reserved({"by": keys, "position": position}, outputs, "off_policy", prefix="__")
    others = {"slate": slate, "reward": reward, "position_weights": weight_column}
    check_reserved(others, (), "off_policy", prefix="__")
    pairs = sorted({ESTIMATORS[n][:2] for n in names})
    needed = [*keys, slate, position, reward, *([weight_column] if weight_column else [])]
    needed += [c for pair in pairs for c in pair if c not in needed]
    rows = frame.select(needed).with_columns(
        (pl.col(reward) * _weight(position, position_weights)).alias("__reward"),
        *(_iw(pair).alias(_iw_name(pair)) for pair in pairs),
    )
    norms = _normalisers(rows, names, keys, position, reward, pairs)
    per_slate = _per_slate_sums(rows, norms, names, keys, slate, position)
    return _estimates(per_slate, names, keys, slate, alpha, n_bootstrap, seed, draws)


def _segments(by: str | Sequence[str] | None) -> list[str]:
    if by is None:
        return []
    return [by] if isinstance(by, str) else list(by)


def _check_estimators(estimators: Sequence[str]) -> list[str]:
    names = [estimators] if isinstance(estimators, str) else list(estimators)
    if not names:
        raise ValueError("estimators must name at least one estimator.")
    for name in names:
        if name not in ESTIMATORS:
            listed = ", ".join(repr(n) for n in ESTIMATORS)
            msg = f"estimators must be among {listed}. Got {name!r}."
            raise ValueError(msg)
    if len(set(names)) < len(names):
        msg = f"estimators names one estimator twice: {names}."
        raise ValueError(msg)
    return names


def _check_arguments(alpha: float, n_bootstrap: int, seed: Seed, draws: Draws) -> None:
    if isinstance(alpha, bool) or not isinstance(alpha, float | int) or not 0 < alpha < 1:
        msg = f"alpha must be a number strictly between 0 and 1. Got {alpha!r}."
        raise ValueError(msg)
    check_int("n_bootstrap", n_bootstrap, minimum=1)
    _check_draws(seed, draws)


def _check_draws(seed: Seed, draws: Draws) -> None:
    if draws not in ("fast", "obp"):
        msg = f"draws must be 'fast' or 'obp'. Got {draws!r}."
        raise ValueError(msg)
    generator = np.random.Generator if draws == "fast" else np.random.RandomState
    if isinstance(seed, np.random.Generator | np.random.RandomState):
        if not isinstance(seed, generator):
            msg = (
                f"seed: draws={draws!r} draws with a numpy.random.{generator.__name__}. "
                f"Got a {type(seed).__name__}."
            )
            raise TypeError(msg)
    elif seed is not None:
        check_int("seed", seed, minimum=0)


def _weight(position: str, weights: Mapping[int, float] | str | None) -> pl.Expr:
    if weights is None:
        return pl.lit(1.0)
    if isinstance(weights, str):
        return pl.col(weights).cast(pl.Float64)
    return pl.col(position).replace_strict(dict(weights), default=0.0, return_dtype=pl.Float64)


def _iw_name(pair: tuple[str, str]) -> str:
    return f"__iw:{pair[0]}"


def _iw(pair: tuple[str, str]) -> pl.Expr:
    behaviour, evaluation = pair
    return pl.col(evaluation).cast(pl.Float64) / pl.col(behaviour).cast(pl.Float64)


def _normalisers(
    rows: pl.LazyFrame,
    names: list[str],
    keys: list[str],
    position: str,
    reward: str,
    pairs: list[tuple[str, str]],
) -> pl.DataFrame:
    """One streaming pass: per (segment, position) row counts and weight sums (the
    self-normalisers), and the checks of the propensities and rewards."""
    aggs: list[pl.Expr] = [pl.len().alias("__n"), pl.col(reward).is_null().sum().alias("__null")]
    aggs.append(pl.col(reward).cast(pl.Float64).is_nan().sum().alias("__nan"))
    for pair in pairs:
        aggs.append(pl.col(_iw_name(pair)).sum().alias(f"__sum{_iw_name(pair)}"))
        for column in pair:
            aggs += [
                pl.col(column).min().alias(f"__min:{column}"),
                pl.col(column).max().alias(f"__max:{column}"),
                pl.col(column).is_null().sum().alias(f"__null:{column}"),
            ]
    stats = rows.group_by(*keys, position).agg(aggs).collect(engine="streaming")
    if stats.height == 0:
        raise ValueError("the log has no rows: nothing to estimate.")
    _check_no_null_ids(stats, position, "every row is shown at a position")
    _check_values(stats, reward, pairs)
    means: list[pl.Expr] = []
    for name in names:
        pair, how = ESTIMATORS[name][:2], ESTIMATORS[name][2]
        total = pl.col(f"__sum{_iw_name(pair)}")
        if how == "none":
            mean = pl.lit(1.0)
        elif how == "position":
            mean = total / pl.col("__n")
        elif keys:
            mean = total.sum().over(keys) / pl.col("__n").sum().over(keys)
        else:
            mean = total.sum() / pl.col("__n").sum()
        means.append((1.0 / mean).alias(f"__norm:{name}"))
    out = stats.with_columns(means).select(*keys, position, *(f"__norm:{n}" for n in names))
    return out


def _check_no_null_ids(groups: pl.DataFrame, column: str, why: str) -> None:
    """Raise when a group of the log's rows has a null ``column``: such rows would be
    taken as one more slate, or one more position, of their own."""
    if groups[column].null_count():
        raise null_values("log", column, why)


def _check_values(stats: pl.DataFrame, reward: str, pairs: list[tuple[str, str]]) -> None:
    if stats["__null"].sum() or stats["__nan"].sum():
        msg = f"reward column {reward!r} holds null or NaN values."
        raise ValueError(msg)
    for behaviour, evaluation in pairs:
        for column, low_open in ((behaviour, True), (evaluation, False)):
            nulls = stats[f"__null:{column}"].sum()
            low = float(stats[f"__min:{column}"].cast(pl.Float64).min())  # type: ignore[arg-type]
            high = float(stats[f"__max:{column}"].cast(pl.Float64).max())  # type: ignore[arg-type]
            if nulls:
                msg = f"{column!r} holds {nulls} null values."
                raise ValueError(msg)
            bad = (low <= 0 if low_open else low < 0) or high > 1
            if bad or np.isnan(low) or np.isnan(high):
                where = "(0, 1]" if low_open else "[0, 1]"
                msg = f"{column!r} must be a probability in {where}. Got values in [{low}, {high}]."
                raise ValueError(msg)


def _distinct_positions(positions: pl.Series, position: str) -> pl.Expr:
    """The distinct positions of a slate, for the check that none repeats: with fewer
    than 63 position values, the OR of one bit per position (its bits are counted
    afterwards; far lighter to hold per slate than ``n_unique``), else ``n_unique``."""
    low, high = positions.cast(pl.Int64).min(), positions.cast(pl.Int64).max()
    if high - low > 62:  # type: ignore[operator]
        return pl.col(position).n_unique().alias("__positions")
    shift = pl.col(position).cast(pl.Int64) - low
    return pl.lit(2, dtype=pl.Int64).pow(shift).bitwise_or().alias("__positions")


def _per_slate_sums(
    rows: pl.LazyFrame,
    norms: pl.DataFrame,
    names: list[str],
    keys: list[str],
    slate: str,
    position: str,
) -> pl.DataFrame:
    """The second streaming pass: each slate's sum of weighted rewards per estimator,
    and the checks that need a slate (one joint propensity, no repeated position)."""
    joined = rows.join(norms.lazy(), on=[*keys, position], how="left")
    aggs = [
        (pl.col("__reward") * pl.col(_iw_name(ESTIMATORS[n][:2])) * pl.col(f"__norm:{n}"))
        .sum()
        .alias(n)
        for n in names
    ]
    aggs += [pl.len().alias("__rows"), _distinct_positions(norms[position], position)]
    joint = [ESTIMATORS[n][0] for n in names if ESTIMATORS[n][0] == "pscore"]
    joint += [ESTIMATORS[n][1] for n in names if ESTIMATORS[n][0] == "pscore"]
    for column in sorted(set(joint)):
        aggs.append((pl.col(column).max() - pl.col(column).min()).alias(f"__spread:{column}"))
    sums = joined.group_by(*keys, slate).agg(aggs).collect(engine="streaming")
    _check_no_null_ids(sums, slate, "every row belongs to a slate")
    if sums.schema["__positions"] != pl.UInt32:  # a bit per position: count the bits
        sums = sums.with_columns(pl.col("__positions").bitwise_count_ones())
    repeated = sums.filter(pl.col("__rows") > pl.col("__positions"))
    if repeated.height:
        msg = f"slate {repeated[slate][0]!r} shows a position twice: one row per (slate, position)."
        raise ValueError(msg)
    for column in sorted(set(joint)):
        varying = sums.filter(pl.col(f"__spread:{column}") > 0)
        if varying.height:
            msg = (
                f"{column!r} is the joint propensity of the slate and must be the same on "
                f"each of its rows; slate {varying[slate][0]!r} has several values."
            )
            raise ValueError(msg)
    return sums.select(*keys, slate, *names).sort(*keys, slate)


def _estimates(
    per_slate: pl.DataFrame,
    names: list[str],
    keys: list[str],
    slate: str,
    alpha: float,
    n_bootstrap: int,
    seed: Seed,
    draws: Draws,
) -> pl.DataFrame:
    parts = (
        per_slate.partition_by(keys, maintain_order=True, as_dict=True) if keys else {(): per_slate}
    )
    out = []
    for segment, part in parts.items():
        values = part.select(names).to_numpy().astype(np.float64, copy=False)
        n = values.shape[0]
        estimate = values.sum(axis=0) / n
        lower, upper = bootstrap_interval(values, alpha, n_bootstrap, seed, draws)
        frame = pl.DataFrame(
            {
                "estimator": names,
                "estimate": estimate,
                "lower": lower,
                "upper": upper,
                "n_slates": pl.Series([n] * len(names), dtype=pl.UInt32),
            }
        )
        segment_values = segment if isinstance(segment, tuple) else (segment,)
        out.append(
            frame.select(
                *(
                    pl.lit(v, dtype=per_slate.schema[k]).alias(k)
                    for k, v in zip(keys, segment_values, strict=True)
                ),
                pl.all(),
            )
        )
    return pl.concat(out) if out else _empty(per_slate, keys)


def _empty(per_slate: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    schema = {k: per_slate.schema[k] for k in keys} | {
        "estimator": pl.String,
        "estimate": pl.Float64,
        "lower": pl.Float64,
        "upper": pl.Float64,
        "n_slates": pl.UInt32,
    }
    return pl.DataFrame(schema=schema)


def bootstrap_interval(
    values: np.ndarray,
    alpha: float,
    n_bootstrap: int,
    seed: Seed,
    draws: Draws = "obp",
) -> tuple[np.ndarray, np.ndarray]:
    r"""Percentile bootstrap interval of the mean of each column of ``values``, the
    resamples drawn as Open Bandit Pipeline draws them or by numpy's default generator.

    Resample :math:`b` takes, for every column, the same rows: with ``draws="obp"``
    those ``RandomState(seed).choice(n, size=n)`` gives on its :math:`b`-th call (drawn
    a block of resamples at a time, which numpy's legacy generator makes identical);
    with ``draws="fast"`` row :math:`b` of ``default_rng(seed).integers(0, n,
    size=(n_bootstrap, n), dtype=np.int32)`` (drawn in blocks too, the same numbers:
    the generator keeps its state between calls). Each resample's sums are one product
    of a sparse matrix (resamples x rows, a 1 per draw) with ``values``, over :math:`n`
    (equal to the mean of the drawn values up to rounding); the bounds are
    ``numpy.percentile`` (linear interpolation) at :math:`100\,\alpha/2` and
    :math:`100\,(1-\alpha/2)` of the resampled means.

    .. math:: \text{lower} = Q_{\alpha/2}\big(\{\bar x^{*}_b\}_{b=1}^{B}\big), \qquad
              \text{upper} = Q_{1-\alpha/2}\big(\{\bar x^{*}_b\}_{b=1}^{B}\big)

    Parameters
    ----------
    values
        ``(n, m)`` array: n samples of m statistics.
    alpha, n_bootstrap, seed, draws
        As in :func:`off_policy` (here ``draws`` defaults to ``"obp"``).

    Returns
    -------
    tuple of two arrays
        Lower and upper bounds, one per column.

    Examples
    --------
    Three samples, 1000 resamples of their mean; the 5% and 95% percentiles:

    >>> import numpy as np
    >>> lo, hi = bootstrap_interval(np.array([[0.0], [1.0], [4.0]]), 0.1, 1000, seed=1)
    >>> round(float(lo[0]), 6), round(float(hi[0]), 6)
    (0.333333, 3.0)
    """
    _check_draws(seed, draws)
    from scipy import sparse  # imported when used: it takes a while to import

    n, m = values.shape
    values = np.ascontiguousarray(values, dtype=np.float64)
    draw = _drawer(seed, draws)
    means = np.empty((n_bootstrap, m))
    block = max(1, min(n_bootstrap, _CHUNK // max(n, 1)))
    ones = np.ones(block * n)
    for start in range(0, n_bootstrap, block):
        size = min(block, n_bootstrap - start)
        rows = draw(n, size * n)
        # row b of the matrix holds a 1 per draw of resample b (repeats add up): its
        # product with the values is each resample's sum, one pass over the draws
        draw_matrix = sparse.csr_matrix(
            (ones[: size * n], rows, np.arange(0, size * n + 1, n, dtype=rows.dtype)),
            shape=(size, n),
        )
        means[start : start + size] = (draw_matrix @ values) / n
    lower = np.percentile(means, 100 * (alpha / 2), axis=0)
    upper = np.percentile(means, 100 * (1.0 - alpha / 2), axis=0)
    return lower, upper


def _drawer(seed: Seed, draws: Draws) -> Callable[[int, int], np.ndarray]:
    """``draw(n, size)``: ``size`` row numbers in ``[0, n)``, from the seed's generator
    (``seed`` already checked against ``draws``)."""
    if draws == "obp":
        if not isinstance(seed, np.random.RandomState):
            seed = np.random.RandomState(seed if isinstance(seed, int) else None)
        legacy = seed
        return lambda n, size: legacy.randint(0, n, size=size)
    generator = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    return lambda n, size: generator.integers(0, n, size=size, dtype=np.int32)


@overload
def click_metrics(
    log: FrameT,
    run: IntoFrame,
    examination: IntoFrame,
    *,
    k: int = 10,
    session: str = "session",
    query: str = "query",
    doc: str = "doc",
    position: str = "position",
    clicked: str = "clicked",
    score: str = "score",
    system: str | None = "system",
) -> FrameT: ...
@overload
def click_metrics(
    log: ArrowStreamExportable,
    run: IntoFrame,
    examination: IntoFrame,
    *,
    k: int = 10,
    session: str = "session",
    query: str = "query",
    doc: str = "doc",
    position: str = "position",
    clicked: str = "clicked",
    score: str = "score",
    system: str | None = "system",
) -> pl.DataFrame: ...
def click_metrics(
    log: IntoFrame,
    run: IntoFrame,
    examination: IntoFrame,
    *,
    k: int = 10,
    session: str = "session",
    query: str = "query",
    doc: str = "doc",
    position: str = "position",
    clicked: str = "clicked",
    score: str = "score",
    system: str | None = "system",
) -> pl.DataFrame | pl.LazyFrame:
    r"""Click metrics of a new ranking, estimated from a click log under the
    position-based model (counterfactual learning to rank).

    Each click of the log is an unbiased sample of relevance once divided by the
    examination propensity of the position where it happened (Joachims et al. 2017):

    .. math::

        \hat r_{q,d} = \frac{1}{N_q} \sum_{s \in S_q} \frac{c_{s,d}}{\theta_{k_s(d)}}

    over the :math:`N_q` sessions of query :math:`q`, with :math:`k_s(d)` the logged
    position of :math:`d`. With :math:`\rho(d)` the new ranking's rank of :math:`d`:

    .. math::

        \mathrm{clicks@}k = \sum_{\rho(d) \le k} \theta_{\rho(d)}\, \hat r_{q,d}, \qquad
        \mathrm{click\_P@}k = \frac{1}{k} \sum_{\rho(d) \le k} \hat r_{q,d}, \qquad
        \mathrm{click\_nDCG@}k = \frac{\sum_{\rho(d) \le k} \hat r_{q,d} / \log_2(\rho(d) + 1)}
            {\sum_{i \le k} \hat r_{q,(i)} / \log_2(i + 1)}

    the expected clicks per session on the new top :math:`k` under the model, the
    IPS precision, and the IPS DCG normalised by the DCG of the estimated relevances
    sorted decreasingly (:math:`\hat r_{q,(i)}`; nDCG is 0 for a query without a click).

    Parameters
    ----------
    log
        One row per result shown, with a ``session`` id (one ranked list shown once).
        A LazyFrame gives a LazyFrame.
    run
        The new ranking: ``query, doc, score`` (ranked as :func:`~polars_rankeval.rank_run`
        ranks: score descending, ties by doc id descending).
    examination
        ``position, examination``, e.g. from :func:`~polars_rankeval.position_bias`;
        must cover every position of the log and 1..k.
    k
        Cutoff.
    session, query, doc, position, clicked, score
        Column names.
    system
        The run's system column, if it has one: a run of several systems is refused
        (one ranking per query is scored; filter one system first). None: no check.

    Returns
    -------
    DataFrame or LazyFrame
        One row per query of the log: ``query, sessions, clicks@k, click_P@k,
        click_nDCG@k``. A log query the run does not rank scores 0.

    References
    ----------
    Joachims, Swaminathan, Schnabel. Unbiased Learning-to-Rank with Biased Feedback.
    WSDM 2017.
    Agarwal, Takatsu, Zaitsev, Joachims. A General Framework for Counterfactual
    Learning-to-Rank. SIGIR 2019.

    Examples
    --------
    One query, two sessions; d2 was clicked once at position 2 (examined half the
    time), so its estimated relevance is (1 / 0.5) / 2 = 1; d1 was never clicked.
    The new ranking puts d2 first: clicks@2 = 1 * 1 = 1, P@2 = 1 / 2, nDCG@2 = 1.

    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> log = pl.DataFrame({"session": [1, 1, 2, 2], "query": "q",
    ...                     "doc": ["d1", "d2"] * 2, "position": [1, 2] * 2,
    ...                     "clicked": [0, 1, 0, 0]})
    >>> run = pl.DataFrame({"query": "q", "doc": ["d1", "d2"], "score": [1.0, 2.0]})
    >>> bias = pl.DataFrame({"position": [1, 2], "examination": [1.0, 0.5]})
    >>> pr.click_metrics(log, run, bias, k=2)
    shape: (1, 5)
    ┌───────┬──────────┬──────────┬───────────┬──────────────┐
    │ query ┆ sessions ┆ clicks@2 ┆ click_P@2 ┆ click_nDCG@2 │
    │ ---   ┆ ---      ┆ ---      ┆ ---       ┆ ---          │
    │ str   ┆ u32      ┆ f64      ┆ f64       ┆ f64          │
    ╞═══════╪══════════╪══════════╪═══════════╪══════════════╡
    │ q     ┆ 2        ┆ 1.0      ┆ 0.5       ┆ 1.0          │
    └───────┴──────────┴──────────┴───────────┴──────────────┘
    """
    from polars_rankeval.ranking import rank_run

    frame = as_frame(log, "log")
    lazy = frame.lazy()
    check_int("k", k, minimum=1)
    columns = {"session": session, "query": query, "doc": doc}
    check_columns(
        lazy.collect_schema(), columns | {"position": position, "clicked": clicked}, "log"
    )
    run_frame = as_frame(run, "run").lazy()
    run_schema = run_frame.collect_schema()
    check_columns(run_schema, {"query": query, "doc": doc, "score": score}, "run")
    check_same_dtypes(("log", lazy.collect_schema()), ("run", run_schema), [query, doc])
    check_reserved(
        {"session": session, "query": query, "doc": doc, "score": score},
        (
            "sessions",
            f"clicks@{k}",
            f"click_P@{k}",
            f"click_nDCG@{k}",
            "ips",
            "unmatched",
            "rel",
            "rank",
            "examination",
            "position",
        ),
        "click_metrics",
        prefix="__",
    )
    check_one_system(run_frame, system, "run", "click_metrics")
    check_duplicates(run_frame, [query, doc], "run")
    lazy = checked_clicks(lazy, clicked, position, [session, query, doc])
    theta = as_frame(examination, "examination").lazy().collect()
    check_columns(
        theta.schema, {"position": "position", "examination": "examination"}, "examination"
    )
    theta = theta.select(pl.col("position").cast(pl.Int64), pl.col("examination").cast(pl.Float64))
    missing = set(range(1, k + 1)) - set(theta["position"].to_list())
    if missing:
        msg = f"examination lacks positions {sorted(missing)} (needed up to k={k})."
        raise ValueError(msg)
    if (theta["examination"] <= 0).any() or theta["examination"].is_null().any():
        raise ValueError("examination must be positive at every position.")
    clicks = (
        lazy.filter(pl.col(clicked).cast(pl.Boolean))
        .with_columns(pl.col(position).cast(pl.Int64))
        .join(theta.lazy(), left_on=position, right_on="position", how="left")
    )
    sessions = lazy.group_by(query).agg(sessions=pl.col(session).n_unique())
    rel = (
        clicks.group_by(query, doc)
        .agg(
            ips=(1.0 / pl.col("examination")).sum(), unmatched=pl.col("examination").is_null().sum()
        )
        .join(sessions, on=query)
        .with_columns(rel=pl.col("ips") / pl.col("sessions"))
    )
    ranked = (
        rank_run(run_frame, query=query, doc=doc, score=score, system=None, depth=k)
        .select(query, doc, pl.col("rank").cast(pl.Int64))
        .join(rel.select(query, doc, "rel"), on=[query, doc], how="left")
        .join(theta.lazy(), left_on="rank", right_on="position", how="left")
        .with_columns(pl.col("rel").fill_null(0.0))
    )
    discount = 1.0 / (pl.col("rank") + 1).cast(pl.Float64).log(2)
    new = ranked.group_by(query).agg(
        (pl.col("examination") * pl.col("rel")).sum().alias(f"clicks@{k}"),
        (pl.col("rel").sum() / k).alias(f"click_P@{k}"),
        (pl.col("rel") * discount).sum().alias("__dcg"),
    )
    ideal_discount = 1.0 / (pl.int_range(1, pl.len() + 1) + 1).cast(pl.Float64).log(2)
    ideal = rel.group_by(query).agg(
        __idcg=(pl.col("rel").sort(descending=True).head(k) * ideal_discount.head(k)).sum(),
        __unmatched=pl.col("unmatched").sum(),
    )
    out = (
        sessions.join(new, on=query, how="left")
        .join(ideal, on=query, how="left")
        .with_columns(pl.col(f"clicks@{k}", f"click_P@{k}", "__dcg", "__idcg").fill_null(0.0))
        .with_columns(
            pl.when(pl.col("__idcg") > 0)
            .then(pl.col("__dcg") / pl.col("__idcg"))
            .otherwise(0.0)
            .alias(f"click_nDCG@{k}")
        )
        .sort(query)
    )
    collected = out.collect()
    if collected["__unmatched"].fill_null(0).sum():
        msg = "a click happened at a position that examination does not list."
        raise ValueError(msg)
    result = collected.drop("__dcg", "__idcg", "__unmatched")
    return result.lazy() if isinstance(frame, pl.LazyFrame) else result
