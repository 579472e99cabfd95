r"""Interleaving: two rankers compared on the same traffic.

:func:`interleave` makes the lists to serve (team-draft or balanced interleaving), with
the team (team-draft) and each result's rank in both input rankings (balanced) written
next to each result; :func:`interleaving_outcomes` credits each logged impression's
clicks to a ranker; :func:`interleaving_test` counts wins, ties and losses and tests the
preference.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal, overload

import numpy as np
import polars as pl

from polars_rankeval._typing import ArrowStreamExportable, FrameT, IntoFrame
from polars_rankeval.clicks import checked_clicks
from polars_rankeval.inputs import as_frame
from polars_rankeval.ranking import rank_run
from polars_rankeval.validation import (
    check_choice,
    check_columns,
    check_duplicates,
    check_int,
    check_one_system,
    check_reserved,
    check_same_dtypes,
)

Method = Literal["team_draft", "balanced"]
TestKind = Literal["binomial", "bootstrap"]


def _keys(by: str | Sequence[str] | None) -> list[str]:
    if by is None:
        return []
    return [by] if isinstance(by, str) else list(by)


def team_draft(a: Sequence[object], b: Sequence[object], coins: Sequence[bool]) -> list[tuple]:
    """Team-draft interleaving of two rankings (Radlinski, Kurup, Joachims 2008).

    While both rankings have a document not yet shown, the team with fewer picks (on a
    tie, team A when the next coin is True) appends its highest-ranked document not
    yet shown. ``coins`` holds one coin per pick (only ties read theirs).

    Returns
    -------
    list of tuple
        ``(doc, team)`` in interleaved order, team ``"a"`` or ``"b"``.

    Examples
    --------
    A picks first (coin True), then B (fewer picks), then A on the next tie; on the
    third tie the coin is False and B picks first:

    >>> coins = [True, False, True, True, False, True]
    >>> team_draft(list("abcd"), list("beaf"), coins)
    [('a', 'a'), ('b', 'b'), ('c', 'a'), ('e', 'b'), ('f', 'b')]

    B's ranking is then all shown, so the list stops (d is left out).
    """
    shown: set[object] = set()
    out: list[tuple] = []
    size = {"a": 0, "b": 0}
    ia = ib = 0
    for coin in coins:
        while ia < len(a) and a[ia] in shown:
            ia += 1
        while ib < len(b) and b[ib] in shown:
            ib += 1
        if ia == len(a) or ib == len(b):
            break
        if size["a"] < size["b"] or (size["a"] == size["b"] and coin):
            team, pick = "a", a[ia]
        else:
            team, pick = "b", b[ib]
        shown.add(pick)
        size[team] += 1
        out.append((pick, team))
    return out


def balanced(a: Sequence[object], b: Sequence[object], a_first: bool) -> list[object]:
    """Balanced interleaving of two rankings (Joachims 2003).

    Two pointers walk down A and B; the one behind (A on a tie when ``a_first``)
    appends its document unless already shown, and moves on; stop when either ranking
    is exhausted. Every prefix of the result holds the top :math:`k_a` of A and the top
    :math:`k_b` of B with :math:`|k_a - k_b| \\le 1`.

    Examples
    --------
    Two rankings that share a, b, g and h; A first: a (A1), b (B1), then B2 = e,
    A3 = c (A2 = b is shown), A4 = d (B3 = a is shown), B4 = f, A5 = g, A6 = h:

    >>> a, b = list("abcdgh"), list("beafgh")
    >>> "".join(balanced(a, b, a_first=True)), "".join(balanced(a, b, a_first=False))
    ('abecdfgh', 'baecfdgh')
    """
    shown: set[object] = set()
    out: list[object] = []
    ka = kb = 0
    while ka < len(a) and kb < len(b):
        if ka < kb or (ka == kb and a_first):
            if a[ka] not in shown:
                shown.add(a[ka])
                out.append(a[ka])
            ka += 1
        else:
            if b[kb] not in shown:
                shown.add(b[kb])
                out.append(b[kb])
            kb += 1
    return out


def interleave(
    run_a: IntoFrame,
    run_b: IntoFrame,
    *,
    method: Method = "team_draft",
    seed: int | None = 0,
    k: int | None = None,
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
) -> pl.DataFrame:
    r"""The interleaved list to serve for each query ranked by both runs.

    ``"team_draft"`` (Radlinski, Kurup, Joachims 2008): the two rankers pick in turns,
    a coin deciding who picks first whenever they have picked equally often; each
    result belongs to the team that picked it. ``"balanced"`` (Joachims 2003): the
    rankings are merged so that every prefix holds the top results of both, A or B
    first by a coin per query. See :func:`team_draft` and :func:`balanced`.

    Parameters
    ----------
    run_a, run_b
        Runs (``query, doc, score``), ranked as :func:`~polars_rankeval.rank_run` ranks.
    method
        ``"team_draft"`` or ``"balanced"``.
    seed
        Seed of the coins (``numpy.random.default_rng``); the same seed gives the same
        lists. Default 0, as the library's other random draws: every call gives the
        same lists; None draws fresh entropy (coins that differ from call to call, as
        an online experiment's do).
    k
        Cut each interleaved list to its top k (None: as long as the method goes).
    query, doc, score
        Column names.

    Returns
    -------
    pl.DataFrame
        ``query, position, doc, team, rank_a, rank_b``: position 1 = top; ``team`` is
        ``"a"`` or ``"b"`` (team-draft) or null (balanced); ``rank_a`` and ``rank_b``
        are the doc's ranks in each run (null where it is not ranked). Queries ranked
        by only one run are left out. Join the served lists with their clicks to get
        the log :func:`interleaving_outcomes` reads.

    Notes
    -----
    Building the lists walks each query's two rankings in Python (the method is
    sequential); it serves candidate lists, not logs. Crediting the clicks
    (:func:`interleaving_outcomes`) is a Polars group_by over the log.

    References
    ----------
    Radlinski, Kurup, Joachims. How Does Clickthrough Data Reflect Retrieval Quality?
    CIKM 2008.
    Joachims. Evaluating Retrieval Performance Using Clickthrough Data. In Text Mining,
    2003.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> a = pl.DataFrame({"query": "q", "doc": ["d1", "d2", "d3"], "score": [3.0, 2.0, 1.0]})
    >>> b = pl.DataFrame({"query": "q", "doc": ["d2", "d4", "d1"], "score": [3.0, 2.0, 1.0]})

    The coin puts B first; B's ranking runs out after its third pointer step, which
    ends the list (A's d3 is not shown):

    >>> pr.interleave(a, b, method="balanced", seed=1)
    shape: (3, 6)
    ┌───────┬──────────┬─────┬──────┬────────┬────────┐
    │ query ┆ position ┆ doc ┆ team ┆ rank_a ┆ rank_b │
    │ ---   ┆ ---      ┆ --- ┆ ---  ┆ ---    ┆ ---    │
    │ str   ┆ i64      ┆ str ┆ str  ┆ i64    ┆ i64    │
    ╞═══════╪══════════╪═════╪══════╪════════╪════════╡
    │ q     ┆ 1        ┆ d2  ┆ null ┆ 2      ┆ 1      │
    │ q     ┆ 2        ┆ d1  ┆ null ┆ 1      ┆ 3      │
    │ q     ┆ 3        ┆ d4  ┆ null ┆ null   ┆ 2      │
    └───────┴──────────┴─────┴──────┴────────┴────────┘
    """
    check_choice("method", method, Method)
    check_int("k", k, minimum=1, allow_none=True)
    check_reserved(
        {"query": query, "doc": doc}, ("position", "team", "rank_a", "rank_b"), "interleave"
    )
    frames = {
        name: as_frame(run, name).lazy() for name, run in (("run_a", run_a), ("run_b", run_b))
    }
    for name, frame in frames.items():
        check_columns(frame.collect_schema(), {"query": query, "doc": doc, "score": score}, name)
        own = "system" if "system" not in (query, doc, score) else None
        check_one_system(frame, own, name, "interleave")
        check_duplicates(frame, [query, doc], name)
    check_same_dtypes(
        ("run_a", frames["run_a"].collect_schema()),
        ("run_b", frames["run_b"].collect_schema()),
        [query, doc],
    )
    lists = []
    for frame in frames.values():
        ranked = rank_run(frame, query=query, doc=doc, score=score, system=None).collect()
        lists.append(ranked.group_by(query, maintain_order=True).agg(doc).sort(query))
    both = lists[0].join(lists[1], on=query, how="inner", suffix="__b").sort(query)
    rng = np.random.default_rng(seed)
    rows: list[tuple] = []
    for q, a, b in both.iter_rows():
        if method == "team_draft":
            coins = rng.random(len(a) + len(b)) < 0.5
            picked = team_draft(a, b, coins.tolist())
        else:
            picked = [(d, None) for d in balanced(a, b, bool(rng.random() < 0.5))]
        rank_a = {d: i + 1 for i, d in enumerate(a)}
        rank_b = {d: i + 1 for i, d in enumerate(b)}
        rows += [
            (q, i + 1, d, team, rank_a.get(d), rank_b.get(d))
            for i, (d, team) in enumerate(picked[:k] if k else picked)
        ]
    schema = {
        query: both.schema[query],
        "position": pl.Int64,
        doc: both.schema[doc].inner,  # type: ignore[attr-defined]
        "team": pl.String,
        "rank_a": pl.Int64,
        "rank_b": pl.Int64,
    }
    return pl.DataFrame(rows, schema=schema, orient="row")


def _checked_team(team: str) -> Callable[[pl.Series], pl.Series]:
    """A check of a team-draft log's ``team`` column batch: ``"a"`` or ``"b"`` (or
    null, a result no team put there), else raise naming the value."""

    def check(values: pl.Series) -> pl.Series:
        bad = values.is_not_null() & ~values.cast(pl.String).is_in(["a", "b"])
        if bad.any():
            msg = f"team column {team!r} must hold 'a' or 'b' (the team of each result). "
            msg += f"Got {values.filter(bad)[0]!r}."
            raise ValueError(msg)
        return values

    return check


@overload
def interleaving_outcomes(
    log: FrameT,
    *,
    method: Method = "team_draft",
    impression: str = "impression",
    position: str = "position",
    clicked: str = "clicked",
    team: str = "team",
    rank_a: str = "rank_a",
    rank_b: str = "rank_b",
    by: str | Sequence[str] | None = None,
) -> FrameT: ...
@overload
def interleaving_outcomes(
    log: ArrowStreamExportable,
    *,
    method: Method = "team_draft",
    impression: str = "impression",
    position: str = "position",
    clicked: str = "clicked",
    team: str = "team",
    rank_a: str = "rank_a",
    rank_b: str = "rank_b",
    by: str | Sequence[str] | None = None,
) -> pl.DataFrame: ...
def interleaving_outcomes(
    log: IntoFrame,
    *,
    method: Method = "team_draft",
    impression: str = "impression",
    position: str = "position",
    clicked: str = "clicked",
    team: str = "team",
    rank_a: str = "rank_a",
    rank_b: str = "rank_b",
    by: str | Sequence[str] | None = None,
) -> pl.DataFrame | pl.LazyFrame:
    r"""Credit each interleaved impression's clicks to ranker A or B.

    Team-draft: each ranker is credited with the clicks on its team's results,
    :math:`h_a = |\{c : \mathrm{team}(c) = a\}|`. Balanced (Joachims 2003): with
    :math:`d` the lowest clicked result of the impression and
    :math:`k = \min(\mathrm{rank}_a(d), \mathrm{rank}_b(d))` (a rank the doc lacks
    does not count),

    .. math:: h_a = |\{c : \mathrm{rank}_a(c) \le k\}|, \qquad
              h_b = |\{c : \mathrm{rank}_b(c) \le k\}|

    over the clicked results :math:`c`. A wins when :math:`h_a > h_b`, B when
    :math:`h_b > h_a`, else a tie; an impression without a click has no winner.

    Parameters
    ----------
    log
        One row per result shown in an interleaved list (e.g. :func:`interleave`'s
        output joined with the clicks). A LazyFrame gives a LazyFrame.
    method
        ``"team_draft"`` (reads ``team``: ``"a"`` or ``"b"``) or ``"balanced"`` (reads
        ``position``, ``rank_a`` and ``rank_b``).
    impression, position, clicked, team, rank_a, rank_b
        Column names. ``impression`` identifies one list shown once.
    by
        Segment column(s) kept in the output.

    Returns
    -------
    DataFrame or LazyFrame
        ``by..., impression, clicks, credit_a, credit_b, winner`` (``"a"``, ``"b"``,
        ``"tie"``, or null without clicks), sorted by segment and impression.

    Examples
    --------
    Team-draft (Radlinski et al. 2008): A's team holds d1 and d3, B's d2; the clicks
    on d2 and d3 are one each, a tie; a click on d1 alone is a win for A.

    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> log = pl.DataFrame({
    ...     "impression": [1, 1, 1, 2, 2, 2], "position": [1, 2, 3] * 2,
    ...     "team": ["a", "b", "a"] * 2, "clicked": [0, 1, 1, 1, 0, 0]})
    >>> pr.interleaving_outcomes(log)
    shape: (2, 5)
    ┌────────────┬────────┬──────────┬──────────┬────────┐
    │ impression ┆ clicks ┆ credit_a ┆ credit_b ┆ winner │
    │ ---        ┆ ---    ┆ ---      ┆ ---      ┆ ---    │
    │ i64        ┆ i64    ┆ i64      ┆ i64      ┆ str    │
    ╞════════════╪════════╪══════════╪══════════╪════════╡
    │ 1          ┆ 2      ┆ 1        ┆ 1        ┆ tie    │
    │ 2          ┆ 1      ┆ 1        ┆ 0        ┆ a      │
    └────────────┴────────┴──────────┴──────────┴────────┘
    """
    check_choice("method", method, Method)
    frame = as_frame(log, "log")
    keys = _keys(by)
    schema = frame.collect_schema()
    needed = {"impression": impression, "clicked": clicked}
    if method == "team_draft":
        needed["team"] = team
    else:
        needed |= {"position": position, "rank_a": rank_a, "rank_b": rank_b}
    check_columns(schema, needed, "log")
    for key in keys:
        check_columns(schema, {"by": key}, "log")
    check_reserved(
        {"by": keys, "impression": impression},
        ("clicks", "credit_a", "credit_b", "winner"),
        "interleaving_outcomes",
    )
    if not (schema[clicked] == pl.Boolean or schema[clicked].is_integer()):
        msg = f"clicked column {clicked!r} must be Boolean or 0/1 integers. Got {schema[clicked]}."
        raise TypeError(msg)
    frame = checked_clicks(frame, clicked, position if method != "team_draft" else None,
                           [impression])  # fmt: skip
    if method == "team_draft":
        frame = frame.with_columns(
            pl.col(team).map_batches(
                _checked_team(team), return_dtype=schema[team], is_elementwise=True
            )
        )
    click = pl.col(clicked).cast(pl.Int64)
    is_click = click == 1
    if method == "team_draft":
        credit_a = (is_click & (pl.col(team) == "a")).sum()
        credit_b = (is_click & (pl.col(team) == "b")).sum()
    else:
        last = pl.col(position).filter(is_click).max()
        at_last = pl.col(position) == last
        cut = pl.min_horizontal(
            pl.col(rank_a).filter(at_last).first(), pl.col(rank_b).filter(at_last).first()
        )
        credit_a = (is_click & (pl.col(rank_a) <= cut)).sum()
        credit_b = (is_click & (pl.col(rank_b) <= cut)).sum()
    out = (
        frame.group_by(*keys, impression)
        .agg(clicks=click.sum(), credit_a=credit_a.cast(pl.Int64), credit_b=credit_b.cast(pl.Int64))
        .with_columns(
            winner=pl.when(pl.col("clicks") == 0)
            .then(pl.lit(None, dtype=pl.String))
            .when(pl.col("credit_a") > pl.col("credit_b"))
            .then(pl.lit("a"))
            .when(pl.col("credit_b") > pl.col("credit_a"))
            .then(pl.lit("b"))
            .otherwise(pl.lit("tie"))
        )
        .sort(*keys, impression)
    )
    return out


def interleaving_test(
    outcomes: IntoFrame,
    *,
    test: TestKind = "binomial",
    alpha: float = 0.05,
    n_bootstrap: int = 10_000,
    seed: int | None = 0,
    winner: str = "winner",
    by: str | Sequence[str] | None = None,
) -> pl.DataFrame:
    r"""Wins, ties and losses of ranker A against B, the preference and its test.

    Over the impressions with a click (:func:`interleaving_outcomes`), with
    :math:`w_a`, :math:`w_b` and :math:`t` the wins of A, of B and the ties, the
    preference of Chapelle et al. (2012) is

    .. math:: \Delta_{AB} = \frac{w_a + t/2}{w_a + w_b + t} - \frac{1}{2}

    (positive: A preferred). ``"binomial"``: two-sided exact binomial test of
    :math:`w_a` out of :math:`w_a + w_b` against 1/2 (ties left out;
    ``scipy.stats.binomtest``). ``"bootstrap"``: impressions are resampled
    ``n_bootstrap`` times (multinomial counts of the three outcomes, which is the same
    distribution as resampling the impressions); the p-value is twice the share of
    resampled :math:`\Delta` on the far side of 0 (capped at 1). The interval of
    :math:`\Delta` is always the bootstrap percentile interval.

    Parameters
    ----------
    outcomes
        One row per impression with a ``winner`` column (``"a"``, ``"b"``, ``"tie"``,
        null for no click).
    test
        ``"binomial"`` or ``"bootstrap"``.
    alpha
        1 - coverage of the interval, in (0, 1).
    n_bootstrap, seed
        Resamples and seed (``numpy.random.default_rng``; default 0, as the library's
        other resampling: the same interval at every call; None: fresh entropy).
    winner
        Column name.
    by
        Segment column(s): one test per segment.

    Returns
    -------
    pl.DataFrame
        ``by..., impressions, wins_a, wins_b, ties, preference, lower, upper, p_value``
        (``impressions`` counts those with a click).

    References
    ----------
    Chapelle, Joachims, Radlinski, Yue. Large-Scale Validation and Analysis of
    Interleaved Search Evaluation. ACM TOIS 30(1), 2012.

    Examples
    --------
    Six wins for A, two for B, two ties: (6 + 1) / 10 - 1/2 = 0.2; the binomial
    p-value of 6 out of 8 is 2 * (28 + 8 + 1) / 256 = 0.289.

    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> outcomes = pl.DataFrame({"winner": ["a"] * 6 + ["b"] * 2 + ["tie"] * 2 + [None]})
    >>> out = pr.interleaving_test(outcomes, seed=0)
    >>> out.select("impressions", "wins_a", "wins_b", "ties", "preference",
    ...            pl.col("p_value").round(4))
    shape: (1, 6)
    ┌─────────────┬────────┬────────┬──────┬────────────┬─────────┐
    │ impressions ┆ wins_a ┆ wins_b ┆ ties ┆ preference ┆ p_value │
    │ ---         ┆ ---    ┆ ---    ┆ ---  ┆ ---        ┆ ---     │
    │ u32         ┆ u32    ┆ u32    ┆ u32  ┆ f64        ┆ f64     │
    ╞═════════════╪════════╪════════╪══════╪════════════╪═════════╡
    │ 10          ┆ 6      ┆ 2      ┆ 2    ┆ 0.2        ┆ 0.2891  │
    └─────────────┴────────┴────────┴──────┴────────────┴─────────┘
    """
    check_choice("test", test, TestKind)
    check_int("n_bootstrap", n_bootstrap, minimum=1)
    if isinstance(alpha, bool) or not isinstance(alpha, float | int) or not 0 < alpha < 1:
        msg = f"alpha must be a number strictly between 0 and 1. Got {alpha!r}."
        raise ValueError(msg)
    frame = as_frame(outcomes, "outcomes").lazy()
    keys = _keys(by)
    schema = frame.collect_schema()
    check_columns(schema, {"winner": winner}, "outcomes")
    for key in keys:
        check_columns(schema, {"by": key}, "outcomes")
    check_reserved(
        {"by": keys},
        (
            "impressions",
            "wins_a",
            "wins_b",
            "ties",
            "preference",
            "lower",
            "upper",
            "p_value",
            "bad",
        ),
        "interleaving_test",
        prefix="__",
    )
    counts = (
        frame.filter(pl.col(winner).is_not_null())
        .group_by(keys or pl.lit(0).alias("__all"))
        .agg(
            wins_a=(pl.col(winner) == "a").sum(),
            wins_b=(pl.col(winner) == "b").sum(),
            ties=(pl.col(winner) == "tie").sum(),
            impressions=pl.len(),
            bad=(~pl.col(winner).is_in(["a", "b", "tie"])).sum(),
        )
        .collect()
    )
    if counts.height and int(counts["bad"].sum()):
        msg = f"winner column {winner!r} must hold 'a', 'b', 'tie' or null."
        raise ValueError(msg)
    counts = counts.sort(keys) if keys else counts
    rng = np.random.default_rng(seed)
    rows = []
    for row in counts.iter_rows(named=True):
        wa, wb, t, n = row["wins_a"], row["wins_b"], row["ties"], row["impressions"]
        if n == 0:
            msg = f"outcomes column {winner!r} holds no 'a', 'b' or 'tie' (no impression "
            msg += "with a click): nothing to test."
            raise ValueError(msg)
        preference = (wa + t / 2) / n - 0.5
        draws = rng.multinomial(n, [wa / n, wb / n, t / n], size=n_bootstrap)
        boot = (draws[:, 0] + draws[:, 2] / 2) / n - 0.5
        lower, upper = np.percentile(boot, [100 * alpha / 2, 100 * (1 - alpha / 2)])
        if test == "binomial":
            from scipy import stats  # imported when used: it takes a second to import

            p_value = stats.binomtest(wa, wa + wb, 0.5).pvalue if wa + wb else 1.0
        else:
            p_value = min(1.0, 2 * min(np.mean(boot <= 0), np.mean(boot >= 0)))
        rows.append(
            {k: row[k] for k in keys}
            | {
                "impressions": n,
                "wins_a": wa,
                "wins_b": wb,
                "ties": t,
                "preference": preference,
                "lower": float(lower),
                "upper": float(upper),
                "p_value": float(p_value),
            }
        )
    schema_out = {k: counts.schema[k] for k in keys} | {
        "impressions": pl.UInt32,
        "wins_a": pl.UInt32,
        "wins_b": pl.UInt32,
        "ties": pl.UInt32,
        "preference": pl.Float64,
        "lower": pl.Float64,
        "upper": pl.Float64,
        "p_value": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema_out)
