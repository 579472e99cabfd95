r"""The results table of a paper: means per system and measure, marked against a baseline.

:func:`report` runs :func:`polars_rankeval.compare` against the baseline and keeps,
for every system and measure, the mean, the difference to the baseline and
whether it is significant. The :class:`Report` it returns holds that as a tidy
Polars frame and renders it as Markdown or LaTeX (booktabs), with ▲ / ▼ for a
significant gain / loss and the best mean of each measure in bold.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from polars_rankeval._typing import FrameT, Missing
from polars_rankeval.compare import Test, compare
from polars_rankeval.stats import Correction

UP, DOWN = "▲", "▼"
LATEX_MARKERS = {UP: r"$^{\blacktriangle}$", DOWN: r"$^{\blacktriangledown}$"}
TEST_NAMES = {
    "t": "paired t-test",
    "wilcoxon": "Wilcoxon signed-rank test",
    "randomization": "randomization test",
    "bootstrap": "paired bootstrap test",
}
CORRECTION_NAMES = {
    "none": "no correction",
    "bonferroni": "Bonferroni correction",
    "holm": "Holm correction",
}
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


@dataclass(frozen=True)
class Report:
    """Means per system and measure, with significance against a baseline.

    Attributes
    ----------
    frame
        One row per system and measure: ``system, measure, mean, diff`` (to the
        baseline), ``p_value, p_adjusted, significant, marker`` (``"▲"``,
        ``"▼"`` or ``""``) and ``best`` (highest mean of the measure at the
        printed precision, so printed ties are all bold). The
        baseline's rows come first, with diff 0 and null p-values.
    baseline, test, correction, alpha, n_queries, digits
        What was compared and how the means are printed.
    """

    frame: pl.DataFrame
    baseline: Any
    test: str
    correction: str
    alpha: float
    n_queries: int
    digits: int = 4

    @property
    def measures(self) -> list[str]:
        """Measures in column order."""
        return self.frame["measure"].unique(maintain_order=True).to_list()

    @property
    def systems(self) -> list[Any]:
        """Systems in row order (the baseline first)."""
        return self.frame["system"].unique(maintain_order=True).to_list()

    def note(self) -> str:
        """One sentence saying what the markers mean."""
        correction = CORRECTION_NAMES[self.correction]
        return (
            f"{UP}/{DOWN}: significantly higher/lower than the baseline {self.baseline} "
            f"({TEST_NAMES[self.test]}, {correction}, alpha = {self.alpha}, "
            f"{self.n_queries} queries); bold: best per measure."
        )

    def table(
        self, *, markers: Mapping[str, str] | None = None, bold: str = "**{}**"
    ) -> pl.DataFrame:
        """Wide text table: ``system`` and one formatted column per measure.

        Parameters
        ----------
        markers
            Replacement text for ``"▲"`` and ``"▼"`` (default: unchanged).
        bold
            Format of the best mean of a measure; ``"{}"`` for none.
        """
        markers = dict(markers or {})
        cells = self.frame.with_columns(
            cell=pl.struct("mean", "marker", "best").map_elements(
                lambda r: (
                    (bold if r["best"] else "{}").format(f"{r['mean']:.{self.digits}f}")
                    + markers.get(r["marker"], r["marker"])
                ),
                return_dtype=pl.String,
            )
        )
        return cells.pivot(on="measure", index="system", values="cell").select(
            "system", *self.measures
        )

    def to_markdown(self) -> str:
        """A Markdown (GitHub) table, then the note on markers."""
        table = self.table()
        header = ["system", *self.measures]
        lines = [
            "| " + " | ".join(h.replace("|", r"\|") for h in header) + " |",
            "|" + "|".join([":---", *("---:" for _ in self.measures)]) + "|",
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
        table = self.table(markers=LATEX_MARKERS, bold=r"\textbf{{{}}}")
        note = latex_escape(self.note()).replace(UP, LATEX_MARKERS[UP])
        note = note.replace(DOWN, LATEX_MARKERS[DOWN]).replace("alpha", r"$\alpha$")
        lines = [
            r"% \usepackage{booktabs,amssymb}",
            r"\begin{table}",
            r"\centering",
            r"\begin{tabular}{l" + "r" * len(self.measures) + "}",
            r"\toprule",
            " & ".join(latex_escape(h) for h in ["System", *self.measures]) + r" \\",
            r"\midrule",
        ]
        for system, *cells in table.iter_rows():
            lines.append(" & ".join([latex_escape(str(system)), *cells]) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}", rf"\caption{{{caption or note}}}"]
        if label:
            lines.append(rf"\label{{{label}}}")
        lines.append(r"\end{table}")
        return "\n".join(lines) + "\n"

    def __str__(self) -> str:
        return self.to_markdown()

    def _repr_markdown_(self) -> str:
        return self.to_markdown()


def report(
    per_query: FrameT,
    measures: str | Iterable[str] | None = None,
    *,
    baseline: Any,
    test: Test = "t",
    correction: Correction = "none",
    alpha: float = 0.05,
    n_resamples: int = 10_000,
    seed: int | None = 0,
    system: str = "system",
    query: str = "query",
    missing: Missing = "error",
    digits: int = 4,
) -> Report:
    """Means per system and measure, marked where they differ significantly from ``baseline``.

    Runs :func:`polars_rankeval.compare` (every system against ``baseline``,
    two-sided) and keeps the means; the options are compare's. Means are over
    the paired query set, the same queries the tests use.

    Parameters
    ----------
    per_query
        Long per-query frame from :func:`polars_rankeval.evaluate`.
    measures
        Measure columns, in the order of the table; default all.
    baseline
        The system the others are tested against.
    test, correction, alpha, n_resamples, seed, system, query, missing
        As in :func:`polars_rankeval.compare`.
    digits
        Decimals printed in the Markdown and LaTeX tables.

    Returns
    -------
    Report
        ``.frame`` (tidy Polars frame), ``.table()``, ``.to_markdown()``,
        ``.to_latex()``.

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
    """
    result = compare(
        per_query,
        measures,
        baseline=baseline,
        test=test,
        correction=correction,
        alpha=alpha,
        n_resamples=n_resamples,
        seed=seed,
        system=system,
        query=query,
        missing=missing,
    )
    base = result.group_by("measure", maintain_order=True).agg(
        system=pl.col("system_b").first(),
        mean=pl.col("mean_b").first(),
        diff=pl.lit(0.0),
        p_value=pl.lit(None, dtype=pl.Float64),
        p_adjusted=pl.lit(None, dtype=pl.Float64),
        significant=pl.lit(False),
    )
    others = result.select(
        system="system_a",
        measure="measure",
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
    order = {m: i for i, m in enumerate(result["measure"].unique(maintain_order=True))}
    frame = frame.with_columns(
        marker=marker,
        best=pl.col("mean").round(digits) == pl.col("mean").round(digits).max().over("measure"),
        _order=pl.col("measure").replace_strict(order, return_dtype=pl.UInt32),
    )
    first = pl.col("system") != baseline
    frame = frame.sort(first, "system", "_order").drop("_order")
    return Report(
        frame=frame,
        baseline=baseline,
        test=test,
        correction=correction,
        alpha=alpha,
        n_queries=int(result["n"][0]) if result.height else 0,
        digits=digits,
    )
