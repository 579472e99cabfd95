r"""The results table of a paper: scores per system and measure, marked by significance.

:func:`report` runs :func:`polars_rankeval.compare` and keeps, for every system
and measure, the score (combined over queries as trec_eval does) and what the
test found. The :class:`Report` it returns holds that as a tidy Polars frame and
renders it as Markdown or LaTeX (booktabs), each score optionally followed by
its confidence interval (``interval=``, as :func:`polars_rankeval.summarize`
computes it), with the best score of each measure in bold (the highest, or the
lowest for a measure declared ``better="lower"``: FallOut, Unjudged, RBPResid,
...), in one of two styles:

- **arrows**, against one baseline: ▲ / ▼ for a significantly higher / lower score;
- **letters**, for several systems (no baseline, or several baselines), as ranx
  prints them: each system gets a letter, and a score carries as superscripts the
  letters of the systems it is significantly better than (higher, or lower where
  lower is better).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import polars as pl

from polars_rankeval._typing import AggregateMode, IntoFrame, Missing
from polars_rankeval.compare import (
    align,
    collected,
    compare,
    in_segment,
    measure_better,
    measure_bounds,
)
from polars_rankeval.inputs import run_keys
from polars_rankeval.measures import measure_kind
from polars_rankeval.options import segment_columns
from polars_rankeval.stats import (
    CORRECTIONS,
    TESTS,
    Correction,
    IntervalKind,
    Test,
    check_interval,
    check_level,
    interval_matrix,
)
from polars_rankeval.validation import check_int

UP, DOWN = "▲", "▼"
LATEX_MARKERS = {UP: r"$^{\blacktriangle}$", DOWN: r"$^{\blacktriangledown}$"}
LETTERS = "abcdefghijklmnopqrstuvwxyz"
SUPERSCRIPTS = dict(zip(LETTERS, "ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖ𐞥ʳˢᵗᵘᵛʷˣʸᶻ", strict=True))
"""Unicode modifier letters for a-z (q is U+107A5, which some fonts lack)."""
AGGREGATE_NAMES = {"gmean": "geometric mean", "sum": "total over queries"}
INTERVAL_NAMES = {
    "normal": "normal",
    "t": "t",
    "bootstrap": "percentile bootstrap",
    "bca": "BCa bootstrap",
}
"""How the note under a table names each interval kind of :func:`summarize`."""
_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def latex_escape(text: str) -> str:
    r"""Escape LaTeX's special characters in plain text.

    Examples
    --------
    >>> latex_escape("run_1 & 50%")
    'run\\_1 \\& 50\\%'
    """
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


def superscript(letters: str) -> str:
    """Letters a-z as Unicode superscripts.

    Examples
    --------
    >>> superscript("abc")
    'ᵃᵇᶜ'
    """
    return "".join(SUPERSCRIPTS[ch] for ch in letters)


@dataclass(frozen=True)
class Report:
    """Scores per system and measure, with what the significance tests found.

    Attributes
    ----------
    frame
        One row per system and measure: ``system``, (letters style) ``label``,
        ``measure, aggregate`` (``"mean"``, ``"gmean"`` or ``"sum"``), ``mean``
        (the combined score), ``ci_low, ci_high`` (with ``interval``: the
        score's confidence interval), then

        - arrows style (one baseline): ``diff`` (to the baseline), ``p_value,
          p_adjusted, significant, marker`` (``"▲"``, ``"▼"`` or ``""``); the
          baseline's rows come first, with diff 0 and null p-values;
        - letters style: ``beats`` (labels of the systems it is significantly
          better than) and ``marker`` (those labels joined);

        and ``best`` (highest score of the measure at the printed precision, so
        printed ties are all bold; lowest for a measure whose lower values are
        better, declared ``better="lower"``: FallOut, Unjudged, RBPResid, ...).
    baseline
        None, one system or a list of systems, as passed to :func:`report`.
    test, correction, alpha, n_queries, digits
        What was compared and how the scores are printed.
    labels
        Letters style: system -> letter; empty in arrows style.
    comparisons
        The :func:`~polars_rankeval.compare` frame the markers come from.
    interval, level
        The kind of interval printed after each score (``"normal"``, ``"t"``,
        ``"bootstrap"``, ``"bca"``) and its coverage; ``interval`` None: none.
    """

    frame: pl.DataFrame
    baseline: Any
    test: str
    correction: str
    alpha: float
    n_queries: int
    digits: int = 4
    labels: dict[Any, str] = field(default_factory=dict)
    comparisons: pl.DataFrame | None = None
    interval: str | None = None
    level: float = 0.95

    @property
    def style(self) -> Literal["arrows", "letters"]:
        """``"arrows"`` against one baseline, ``"letters"`` otherwise."""
        return "letters" if self.labels else "arrows"

    @property
    def measures(self) -> list[str]:
        """Measures in column order."""
        return self.frame["measure"].unique(maintain_order=True).to_list()

    @property
    def systems(self) -> list[Any]:
        """Systems in row order (the baseline(s) first)."""
        return self.frame["system"].unique(maintain_order=True).to_list()

    def _how(self) -> str:
        info = TESTS[self.test]
        if info.familywise:
            family = f"family-wise over the {len(self.systems)} systems"
        else:
            family = CORRECTIONS[self.correction].title
        return f"{info.title}, {family}, alpha = {self.alpha}, {self.n_queries} queries"

    def _aggregates(self) -> str:
        kinds = self.frame.select("measure", "aggregate").unique(maintain_order=True)
        parts = [
            f"{measure}: {AGGREGATE_NAMES[kind]}"
            for measure, kind in kinds.iter_rows()
            if kind in AGGREGATE_NAMES
        ]
        return f" {'; '.join(parts)}." if parts else ""

    def _lower_better(self) -> str:
        lower = [m for m in self.measures if measure_better(m) == "lower"]
        if not lower:
            return ""
        return f" Lower is better for {', '.join(lower)}: bold marks the lowest{{}}."

    def _interval_note(self) -> str:
        if self.interval is None:
            return ""
        return (
            f" In brackets: the {self.level * 100:g}% {INTERVAL_NAMES[self.interval]} "
            "confidence interval of each score."
        )

    def note(self) -> str:
        """One sentence saying what the markers mean (and how scores and intervals were
        computed)."""
        lower = self._lower_better()
        if self.style == "arrows":
            text = (
                f"{UP}/{DOWN}: significantly higher/lower than the baseline {self.baseline} "
                f"({self._how()}); bold: best per measure."
            ) + lower.format("")
        else:
            tested = ""
            if self.baseline is not None:
                bases = ", ".join(self.labels[b] for b in self.baseline)
                tested = f"; systems were tested against {bases} only"
            text = (
                f"Superscripts: significantly higher than the system of that letter "
                f"({self._how()}{tested}); bold: best per measure."
            ) + lower.format(", and superscripts the systems significantly higher")
        return text + self._aggregates() + self._interval_note()

    def _cells(self, marker_text: Any, bold: str) -> pl.DataFrame:
        def cell(row: dict[str, Any]) -> str:
            score = (bold if row["best"] else "{}").format(self._number(row))
            return score + marker_text(row) + self._bounds(row)

        cells = self.frame.with_columns(
            cell=pl.struct(pl.all()).map_elements(cell, return_dtype=pl.String)
        )
        index = ["label", "system"] if self.style == "letters" else ["system"]
        wide = cells.pivot(on="measure", index=index, values="cell")
        return wide.select(*index, *self.measures)

    def _bounds(self, row: dict[str, Any]) -> str:
        """`` [low, high]`` after a score, with ``digits`` decimals; empty without interval."""
        if self.interval is None:
            return ""
        return f" [{row['ci_low']:.{self.digits}f}, {row['ci_high']:.{self.digits}f}]"

    def _number(self, row: dict[str, Any]) -> str:
        """A score with ``digits`` decimals; a total of whole counts without decimals."""
        value = row["mean"]
        if row["aggregate"] == "sum" and float(value).is_integer():
            return str(int(value))
        return f"{value:.{self.digits}f}"

    def table(
        self, *, markers: Mapping[str, str] | None = None, bold: str = "**{}**"
    ) -> pl.DataFrame:
        """Wide text table: (``label``,) ``system`` and one formatted column per measure
        (the score, its marker, and with ``interval`` its bounds in brackets).

        Parameters
        ----------
        markers
            Arrows style: replacement text for ``"▲"`` and ``"▼"`` (default:
            unchanged). Letters style: ignored; the letters are superscripts.
        bold
            Format of the best score of a measure; ``"{}"`` for none.
        """
        if self.style == "letters":
            return self._cells(lambda r: superscript(r["marker"]), bold)
        replace = dict(markers or {})
        return self._cells(lambda r: replace.get(r["marker"], r["marker"]), bold)

    def _latex_letters(self, row: dict[str, Any]) -> str:
        """``$^{bc}$\\hphantom{$^{ad}$}``: the beaten letters, then room for the others
        so that the scores stay aligned (as ranx does)."""
        others = "".join(
            label
            for system, label in self.labels.items()
            if system != row["system"] and label not in row["beats"]
        )
        shown = f"$^{{{row['marker']}}}$" if row["marker"] else ""
        return shown + (rf"\hphantom{{$^{{{others}}}$}}" if others else "")

    def to_markdown(self) -> str:
        """A Markdown (GitHub) table, then the note on markers."""
        table = self.table()
        header = ["#", *table.columns[1:]] if self.style == "letters" else table.columns
        lines = [
            "| " + " | ".join(h.replace("|", r"\|") for h in header) + " |",
            "|"
            + "|".join(
                [":---"] * (len(header) - len(self.measures)) + ["---:"] * len(self.measures)
            )
            + "|",
        ]
        for row in table.iter_rows():
            lines.append("| " + " | ".join(str(v).replace("|", r"\|") for v in row) + " |")
        return "\n".join(lines) + "\n\n" + self.note() + "\n"

    def to_latex(self, *, caption: str | None = None, label: str | None = None) -> str:
        r"""A LaTeX ``table`` with a booktabs ``tabular``; needs ``booktabs`` and ``amssymb``.

        Parameters
        ----------
        caption
            Caption text (LaTeX, not escaped); default the note on markers.
        label
            ``\label`` of the table, if given.
        """
        if self.style == "letters":
            table = self._cells(self._latex_letters, r"\textbf{{{}}}")
            head = ["\\#", "System"]
        else:
            table = self.table(markers=LATEX_MARKERS, bold=r"\textbf{{{}}}")
            head = ["System"]
        note = latex_escape(self.note()).replace(UP, LATEX_MARKERS[UP])
        note = note.replace(DOWN, LATEX_MARKERS[DOWN]).replace("alpha", r"$\alpha$")
        keys = len(head)
        lines = [
            r"% \usepackage{booktabs,amssymb}",
            r"\begin{table}",
            r"\centering",
            r"\begin{tabular}{" + "l" * keys + "r" * len(self.measures) + "}",
            r"\toprule",
            " & ".join([*head, *(latex_escape(m) for m in self.measures)]) + r" \\",
            r"\midrule",
        ]
        for row in table.iter_rows():
            ids = [latex_escape(str(v)) for v in row[:keys]]
            lines.append(" & ".join([*ids, *row[keys:]]) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}", rf"\caption{{{caption or note}}}"]
        if label:
            lines.append(rf"\label{{{label}}}")
        lines.append(r"\end{table}")
        return "\n".join(lines) + "\n"

    def __str__(self) -> str:
        return self.to_markdown()

    def _repr_markdown_(self) -> str:
        return self.to_markdown()


def _lower_is_better(result: pl.DataFrame) -> pl.Expr:
    """True on the rows of a measure declared ``better="lower"`` (FallOut, ...)."""
    lower = {m: measure_better(m) == "lower" for m in result["measure"].unique()}
    return pl.col("measure").replace_strict(lower, return_dtype=pl.Boolean)


def _best(digits: int, lower: pl.Expr) -> pl.Expr:
    """The best score of each measure at the printed precision: the highest, or the
    lowest where ``lower`` (the measure's lower values are better)."""
    rounded = pl.col("mean").round(digits)
    best = pl.when(lower).then(rounded.min()).otherwise(rounded.max()).over("measure")
    return rounded == best


def _measure_order(result: pl.DataFrame) -> pl.Expr:
    order = {m: i for i, m in enumerate(result["measure"].unique(maintain_order=True))}
    return pl.col("measure").replace_strict(order, return_dtype=pl.UInt32)


def _arrows_frame(result: pl.DataFrame, baseline: Any, digits: int) -> pl.DataFrame:
    """One baseline: every other system's score, diff and marker against it."""
    base = result.group_by("measure", maintain_order=True).agg(
        system=pl.col("system_b").first(),
        aggregate=pl.col("aggregate").first(),
        mean=pl.col("mean_b").first(),
        diff=pl.lit(0.0),
        p_value=pl.lit(None, dtype=pl.Float64),
        p_adjusted=pl.lit(None, dtype=pl.Float64),
        significant=pl.lit(False),
    )
    others = result.select(
        system="system_a",
        measure="measure",
        aggregate="aggregate",
        mean="mean_a",
        diff="diff",
        p_value="p_value",
        p_adjusted="p_adjusted",
        significant="significant",
    )
    frame = pl.concat([base.select(others.columns), others])
    marker = (
        pl.when(pl.col("significant") & (pl.col("diff") > 0))
        .then(pl.lit(UP))
        .when(pl.col("significant") & (pl.col("diff") < 0))
        .then(pl.lit(DOWN))
        .otherwise(pl.lit(""))
    )
    frame = frame.with_columns(
        marker=marker,
        best=_best(digits, _lower_is_better(result)),
        _order=_measure_order(result),
    )
    first = pl.col("system") != baseline
    return frame.sort(first, "system", "_order").drop("_order")


def _label(expr: pl.Expr, labels: dict[Any, str], dtype: pl.DataType) -> pl.Expr:
    return expr.replace_strict(
        pl.Series(list(labels), dtype=dtype), pl.Series(list(labels.values()))
    )


def _letters_frame(
    result: pl.DataFrame, baseline: list[Any] | None, digits: int
) -> tuple[pl.DataFrame, dict[Any, str]]:
    """Several systems: each gets a letter; a score lists the letters it beats."""
    systems = pl.concat([result["system_a"], result["system_b"]]).unique().sort().to_list()
    bases = list(dict.fromkeys(baseline or []))
    order = bases + [s for s in systems if s not in bases]
    if len(order) > len(LETTERS):
        msg = (
            f"report marks systems with the letters a-z, so at most {len(LETTERS)} systems "
            f"without a single baseline; per_query has {len(order)}. Pass baseline=<system> "
            f"(arrows), fewer systems, or read every pair from pr.compare(...)."
        )
        raise ValueError(msg)
    labels = {s: LETTERS[i] for i, s in enumerate(order)}
    sys_dtype = result.schema["system_a"]
    a_wins = (pl.col("diff") > 0) != _lower_is_better(result)  # a better: higher, or lower
    wins = (
        result.filter(pl.col("significant") & (pl.col("diff") != 0))
        .with_columns(
            system=pl.when(a_wins).then("system_a").otherwise("system_b"),
            beaten=pl.when(a_wins).then("system_b").otherwise("system_a"),
        )
        .with_columns(beaten=_label(pl.col("beaten"), labels, sys_dtype))
        .group_by("system", "measure")
        .agg(beats=pl.col("beaten").sort())
    )
    scores = pl.concat(
        [
            result.select(
                system="system_a", measure="measure", aggregate="aggregate", mean="mean_a"
            ),
            result.select(
                system="system_b", measure="measure", aggregate="aggregate", mean="mean_b"
            ),
        ]
    ).unique(["system", "measure"], maintain_order=True)
    frame = (
        scores.join(wins, on=["system", "measure"], how="left")
        .with_columns(
            label=_label(pl.col("system"), labels, sys_dtype),
            beats=pl.col("beats").fill_null(pl.lit([], dtype=pl.List(pl.String))),
        )
        .with_columns(
            marker=pl.col("beats").list.join(""),
            best=_best(digits, _lower_is_better(result)),
            _order=_measure_order(result),
        )
        .sort("label", "_order")
        .select("system", "label", "measure", "aggregate", "mean", "beats", "marker", "best")
    )
    return frame, labels


def reports(
    per_query: IntoFrame,
    by: str | Sequence[str],
    measures: str | Iterable[str] | None = None,
    **options: Any,
) -> dict[tuple[Any, ...], Report]:
    """One :func:`report` per segment: each value of the ``by`` columns is its own
    experiment (its comparisons are one family for the corrections), keyed by the
    segment's values, in sorted order.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> pq = pl.DataFrame({
    ...     "day": ["mon"] * 6 + ["tue"] * 6,
    ...     "system": (["a"] * 3 + ["b"] * 3) * 2,
    ...     "query": ["q1", "q2", "q3"] * 4,
    ...     "AP": [0.2, 0.5, 0.1, 0.3, 0.7, 0.2, 0.4, 0.4, 0.3, 0.1, 0.5, 0.2],
    ... })
    >>> by_day = pr.reports(pq, "day", baseline="a", digits=2)
    >>> list(by_day)
    [('mon',), ('tue',)]
    >>> by_day[("tue",)].frame["mean"].to_list()
    [0.3666..., 0.2666...]
    """
    options.pop("by", None)
    frame = collected(per_query)
    system, query = options.get("system", "system"), options.get("query", "query")
    segments = list(segment_columns(by, frame.schema, taken=run_keys(query, system)))
    parts = frame.partition_by(segments, as_dict=True, include_key=False)
    order = sorted(parts, key=lambda key: tuple((v is None, v) for v in key))
    out = {}
    for key in order:
        with in_segment(segments, key):
            out[key] = report(parts[key], measures, **options)
    return out


def report(
    per_query: IntoFrame,
    measures: str | Iterable[str] | None = None,
    *,
    baseline: Any = None,
    test: Test = "t",
    correction: Correction = "none",
    alpha: float = 0.05,
    n_resamples: int = 10_000,
    seed: int | None = 0,
    aggregate: AggregateMode = "trec",
    system: str = "system",
    query: str | Sequence[str] = "query",
    missing: Missing = "error",
    digits: int = 4,
    interval: IntervalKind | bool = False,
    level: float = 0.95,
) -> Report:
    """Scores per system and measure, marked where they differ significantly.

    For segments (a day, a country: the ``by`` columns of
    :func:`polars_rankeval.evaluate`), :func:`reports` gives one report per
    segment.

    Runs :func:`polars_rankeval.compare` (two-sided) and keeps the scores; the
    options are compare's. Scores are combined over the paired query set (the
    queries the tests use) as trec_eval's ``all`` line combines them: means,
    geometric means for GMAP and GMBpref, totals for the counts.

    - ``baseline`` one system: every other system against it, marked ▲ / ▼.
    - ``baseline`` None (default): every pair of systems; each system gets a
      letter, and each score the superscript letters of the systems it beats
      (higher score, significant difference; lower score for a measure declared
      ``better="lower"``), as ranx prints them. The best score of each measure is
      bold: the highest, or the lowest where lower is better.
    - ``baseline`` a list: every system against each baseline, marked with
      letters as above (only those pairs are tested).

    Parameters
    ----------
    per_query
        Long per-query frame from :func:`polars_rankeval.evaluate`.
    measures
        Measure columns, in the order of the table; default all.
    baseline
        None, a system, or a list of systems (see above).
    test, correction, alpha, n_resamples, seed, aggregate, system, query, missing
        As in :func:`polars_rankeval.compare`.
    digits
        Decimals printed in the Markdown and LaTeX tables.
    interval
        False (default): scores alone. ``"normal"``, ``"t"``, ``"bootstrap"``
        or ``"bca"`` (True: ``"normal"``): each score's confidence interval, as
        :func:`polars_rankeval.summarize` computes it (GMAP's on the log scale,
        a count's as a total; clipped to the measure's range), on the queries
        the score is combined over (so after ``missing="drop"`` or ``"zero"``
        the paired set); ``n_resamples`` and ``seed`` serve the bootstrap
        intervals too. Columns ``ci_low, ci_high`` in ``.frame``, ``[low,
        high]`` after each score in every table, and the note names it.
    level
        Coverage of the interval, strictly between 0 and 1.

    Returns
    -------
    Report
        ``.frame`` (tidy Polars frame), ``.table()``, ``.to_markdown()``,
        ``.to_latex()``, ``.comparisons`` (the compare frame).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as pr
    >>> pq = pl.DataFrame({
    ...     "system": ["bm25"] * 5 + ["dense"] * 5,
    ...     "query": ["q1", "q2", "q3", "q4", "q5"] * 2,
    ...     "AP": [0.2, 0.5, 0.1, 0.4, 0.3, 0.3, 0.7, 0.2, 0.6, 0.4],
    ... })
    >>> rep = pr.report(pq, baseline="bm25", digits=2)
    >>> rep.frame.select("system", "measure", "mean", "significant", "marker")
    shape: (2, 5)
    ┌────────┬─────────┬──────┬─────────────┬────────┐
    │ system ┆ measure ┆ mean ┆ significant ┆ marker │
    │ ---    ┆ ---     ┆ ---  ┆ ---         ┆ ---    │
    │ str    ┆ str     ┆ f64  ┆ bool        ┆ str    │
    ╞════════╪═════════╪══════╪═════════════╪════════╡
    │ bm25   ┆ AP      ┆ 0.3  ┆ false       ┆        │
    │ dense  ┆ AP      ┆ 0.44 ┆ true        ┆ ▲      │
    └────────┴─────────┴──────┴─────────────┴────────┘
    >>> print(rep.to_markdown())
    | system | AP |
    |:---|---:|
    | bm25 | 0.30 |
    | dense | **0.44**▲ |
    <BLANKLINE>
    ▲/▼: significantly higher/lower than the baseline bm25 (paired t-test,
    no correction, alpha = 0.05, 5 queries); bold: best per measure.
    <BLANKLINE>

    Without a baseline, every pair is tested and letters mark the wins:

    >>> three = pl.concat([pq, pq.filter(pl.col("system") == "dense").with_columns(
    ...     system=pl.lit("hybrid"), AP=pl.col("AP") + pl.Series([0.1, 0.1, 0.2, 0.1, 0.1]))])
    >>> print(pr.report(three, test="tukey", digits=2).to_markdown())
    | # | system | AP |
    |:---|:---|---:|
    | a | bm25 | 0.30 |
    | b | dense | 0.44ᵃ |
    | c | hybrid | **0.56**ᵃᵇ |
    <BLANKLINE>
    Superscripts: significantly higher than the system of that letter (Tukey's HSD
    test, family-wise over the 3 systems, alpha = 0.05, 5 queries); bold: best per
    measure.
    <BLANKLINE>

    With each score's 95% t interval:

    >>> print(pr.report(pq, baseline="bm25", digits=2, interval="t").to_markdown())
    | system | AP |
    |:---|---:|
    | bm25 | 0.30 [0.10, 0.50] |
    | dense | **0.44**▲ [0.18, 0.70] |
    <BLANKLINE>
    ▲/▼: significantly higher/lower than the baseline bm25 (paired t-test,
    no correction, alpha = 0.05, 5 queries); bold: best per measure. In brackets:
    the 95% t confidence interval of each score.
    <BLANKLINE>
    """
    check_int("digits", digits, minimum=0)
    kind = _interval_kind(interval, level)
    if kind is not None:  # read once: compare and the intervals both use it
        per_query = collected(per_query)
    result = compare(
        per_query,
        measures,
        baseline=baseline,
        test=test,
        correction=correction,
        alpha=alpha,
        n_resamples=n_resamples,
        seed=seed,
        aggregate=aggregate,
        system=system,
        query=query,
        missing=missing,
    )
    several = baseline is None or isinstance(baseline, list | tuple)
    if several:
        bases = None if baseline is None else list(baseline)
        frame, labels = _letters_frame(result, bases, digits)
        baseline = bases
    else:
        frame, labels = _arrows_frame(result, baseline, digits), {}
    if kind is not None:
        bounds = _intervals(
            per_query,
            result["measure"].unique(maintain_order=True).to_list(),
            interval=kind,
            level=level,
            n_resamples=n_resamples,
            seed=seed,
            aggregate=aggregate,
            system=system,
            query=query,
            missing=missing,
        )
        at = frame.columns.index("mean") + 1
        joined = frame.join(bounds, on=["system", "measure"], how="left", maintain_order="left")
        frame = joined.select(*frame.columns[:at], "ci_low", "ci_high", *frame.columns[at:])
    return Report(
        frame=frame,
        baseline=baseline,
        test=test,
        correction=correction,
        alpha=alpha,
        n_queries=int(result["n"][0]) if result.height else 0,
        digits=digits,
        labels=labels,
        comparisons=result,
        interval=kind,
        level=level,
    )


def _interval_kind(interval: IntervalKind | bool, level: float) -> IntervalKind | None:
    """The interval kind ``report`` prints (None: none), checked with its level."""
    if interval is False or interval is None:
        return None
    kind: IntervalKind = "normal" if interval is True else interval
    check_interval(kind)
    check_level(level)
    return kind


def _intervals(
    per_query: IntoFrame,
    measures: list[str],
    *,
    system: str,
    query: str | Sequence[str],
    missing: Missing,
    aggregate: AggregateMode,
    **options: Any,
) -> pl.DataFrame:
    """``system, measure, ci_low, ci_high``: the intervals :func:`summarize` gives, on
    the queries the report's scores are combined over (:func:`align`'s, as
    :func:`compare` pairs them: after ``missing="drop"`` the common ones, after
    ``"zero"`` all, absent ones 0). summarize's own :func:`interval_matrix` with its
    arguments: one call per measure for every system at once (the percentile
    bootstrap's resamples depend only on the number of queries and the seed, so each
    column gets the ones summarize draws for it), one per system for BCa (scipy's
    resamples depend on the columns drawn together)."""
    aligned = align(per_query, measures, system=system, query=query, missing=missing)
    systems = pl.Series("system", aligned.systems)
    resampled = options["interval"] == "bca"
    parts = []
    for m, values in aligned.values.items():
        kw = dict(options, aggregate=measure_kind(m, aggregate), bounds=measure_bounds(m))
        columns = [values[:, [j]] for j in range(values.shape[1])] if resampled else [values]
        each = [interval_matrix(x, **kw, names=[m] * x.shape[1]) for x in columns]
        out = {k: np.concatenate([e[k] for e in each]) for k in ("ci_low", "ci_high")}
        parts.append(
            pl.DataFrame(
                {"system": systems, "ci_low": out["ci_low"], "ci_high": out["ci_high"]}
            ).with_columns(measure=pl.lit(m))
        )
    return pl.concat(parts).select("system", "measure", "ci_low", "ci_high")
