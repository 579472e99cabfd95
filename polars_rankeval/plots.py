"""Plots as PNG, SVG or PDF files: precision-recall curves, per-query
differences, and means with their confidence intervals.

Drawn offline with matplotlib's Agg canvas (no window, no pyplot state, so a
notebook's backend is left alone). The suffix of the path says the format:
``.png`` (a raster image), ``.svg`` or ``.pdf`` (vector figures, as papers want
them); SVG and PDF files carry no creation date, so the same plot gives the same
bytes. matplotlib is the optional extra
``polars-rankeval[plot]``: this module imports without it, and a plotting
function called without it raises an ImportError that says what to install.

* :func:`plot_precision_recall` draws a curve frame (``[system], [query],
  recall, precision``), one line per system (and per query, if the frame has a
  ``query`` column).
* :func:`plot_pr_curves` computes the curves of a run with
  :func:`polars_rankeval.curves.precision_recall_curve` and draws them:
  11-point interpolated curves by default (``points=11``), or raw ones
  (``points=None``).
* :func:`plot_query_differences` draws, for one measure, the per-query
  difference between two systems as sorted bars: where one system wins, where
  it loses, and by how much.
* :func:`plot_means` draws :func:`polars_rankeval.summarize`'s output: for
  each measure (one panel each) every system's score and its confidence
  interval.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from polars_rankeval._typing import IntoFrameOrDict, PolarsFrame
from polars_rankeval.compare import check_values
from polars_rankeval.measures import measure_better
from polars_rankeval.validation import check_duplicates, check_reserved

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.typing import ColorType

FIGSIZE = (6.4, 4.8)
DPI = 100
FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}
"""The file formats a plot is written in, by the path's suffix."""
_NO_DATE = {"svg": {"Date": None}, "pdf": {"CreationDate": None}, "png": {}}
"""Metadata that would make two writes of the same plot differ."""


def _canvas(figsize: tuple[float, float] = FIGSIZE) -> Figure:
    """An empty figure on an Agg canvas (offline), without touching pyplot."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        msg = (
            "Plotting needs matplotlib, which is not installed. "
            "Install it with: pip install 'polars-rankeval[plot]'"
        )
        raise ImportError(msg) from None
    fig = Figure(figsize=figsize, dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _new_figure(figsize: tuple[float, float] = FIGSIZE) -> tuple[Figure, Axes]:
    """A figure with one axes on an Agg canvas."""
    fig = _canvas(figsize)
    return fig, fig.add_subplot()


def plot_format(path: str | Path) -> str:
    """The format a plot is written in, from the path's suffix (``.png``, ``.svg``
    or ``.pdf``, any case).

    Examples
    --------
    >>> plot_format("figures/map.PDF")
    'pdf'
    """
    kind = FORMATS.get(Path(path).suffix.lower())
    if kind is None:
        msg = (
            "Plots are written as PNG, SVG or PDF files: the path must end in .png, .svg "
            f"or .pdf. Got {str(path)!r}."
        )
        raise ValueError(msg)
    return kind


def _save(fig: Figure, path: str | Path) -> Path:
    path = Path(path)
    kind = plot_format(path)
    from matplotlib import rc_context

    with rc_context({"svg.hashsalt": "polars-rankeval"}):  # the same ids in every write
        fig.savefig(path, format=kind, metadata=_NO_DATE[kind])
    return path


def _require(frame: pl.DataFrame, columns: list[str], what: str) -> None:
    for col in columns:
        if col not in frame.columns:
            have = ", ".join(repr(c) for c in frame.columns)
            msg = f"{what} is missing column {col!r} (it has: {have})."
            raise ValueError(msg)


def plot_precision_recall(
    curves: PolarsFrame,
    path: str | Path,
    *,
    title: str | None = None,
    system: str = "system",
    query: str = "query",
    recall: str = "recall",
    precision: str = "precision",
) -> Path:
    """Draw precision-recall curves from a curve frame to a PNG, SVG or PDF file.

    Parameters
    ----------
    curves
        ``recall, precision`` points, optionally with ``system`` and ``query``
        columns: one line per system (per system and query when the frame has a
        ``query`` column), points joined in recall order.
    path
        The file to write: ``.png``, ``.svg`` or ``.pdf`` (its suffix says which).
    title
        Figure title; default "Precision-recall".
    system, query, recall, precision
        Column names.

    Returns
    -------
    Path
        The file written.

    Examples
    --------
    >>> import tempfile, pathlib, polars as pl
    >>> from polars_rankeval.plots import plot_precision_recall
    >>> curves = pl.DataFrame({"system": ["a"] * 3 + ["b"] * 3,
    ...                        "recall": [0.0, 0.5, 1.0] * 2,
    ...                        "precision": [1.0, 0.6, 0.3, 0.9, 0.7, 0.5]})
    >>> out = plot_precision_recall(curves, pathlib.Path(tempfile.mkdtemp()) / "pr.png")
    >>> out.read_bytes()[:4]
    b'\\x89PNG'
    """
    plot_format(path)
    frame = curves.lazy().collect()
    _require(frame, [recall, precision], "the curve frame")
    keys = [c for c in (system, query) if c in frame.columns]
    fig, ax = _new_figure()
    groups = frame.sort([*keys, recall]).partition_by(keys, as_dict=True) if keys else {(): frame}
    many = query in keys and len(groups) > 12
    colors: dict[Any, ColorType] = {}
    for key, group in groups.items():
        sys_id = key[0] if system in keys else None
        label = " / ".join(str(k) for k in key) if not many else str(sys_id)
        color = colors.get(sys_id)
        (line,) = ax.plot(
            group[recall].to_numpy(),
            group[precision].to_numpy(),
            marker="o" if group.height <= 11 else None,
            markersize=3,
            linewidth=0.8 if many else 1.5,
            alpha=0.35 if many else 1.0,
            color=color,
            label=None if (many and sys_id in colors) else label,
        )
        colors.setdefault(sys_id, line.get_color())
    ax.set(xlabel="Recall", ylabel="Precision", xlim=(0, 1), ylim=(0, 1.02))
    ax.set_title(title or "Precision-recall")
    ax.grid(alpha=0.3)
    if keys:
        ax.legend(loc="upper right", fontsize="small")
    return _save(fig, path)


def plot_pr_curves(
    run: IntoFrameOrDict,
    qrels: IntoFrameOrDict,
    path: str | Path,
    *,
    points: int | None = 11,
    rel_level: int = 1,
    title: str | None = None,
) -> Path:
    """Compute and draw the precision-recall curves of every system in a run.

    Parameters
    ----------
    run, qrels
        As for :func:`polars_rankeval.evaluate`; a ``system`` column gives one
        curve per system.
    path
        The file to write: ``.png``, ``.svg`` or ``.pdf`` (its suffix says which).
    points
        11 (default): trec_eval's 11-point interpolated curve, one line per
        system: the mean over queries of interpolated precision at recall 0.0,
        0.1, ..., 1.0 (any n >= 2 gives n levels). None: the raw curves, one
        faint line per query, colored by system: the (recall, precision) point
        of every relevant document retrieved.
    rel_level
        Minimum grade that counts as relevant.
    title
        Figure title; by default it says which curve is drawn.

    Returns
    -------
    Path
        The file written.

    See Also
    --------
    polars_rankeval.curves.precision_recall_curve : the points, as a frame.

    Examples
    --------
    >>> import tempfile, pathlib, polars as pl
    >>> from polars_rankeval.plots import plot_pr_curves
    >>> run = pl.DataFrame({"query": ["q"] * 4, "doc": ["a", "b", "c", "d"],
    ...                     "score": [4.0, 3.0, 2.0, 1.0]})
    >>> qrels = pl.DataFrame({"query": ["q", "q"], "doc": ["b", "d"], "relevance": [1, 1]})
    >>> plot_pr_curves(run, qrels, pathlib.Path(tempfile.mkdtemp()) / "pr.png").name
    'pr.png'
    """
    from polars_rankeval.curves import precision_recall_curve

    plot_format(path)
    curves = precision_recall_curve(
        run, qrels, points=points, per_query=points is None, rel_level=rel_level
    )
    if points is None:
        default = "Precision-recall (raw, per query)"
    else:
        default = f"{points}-point interpolated precision-recall (mean over queries)"
    return plot_precision_recall(curves, path, title=title or default)


def query_differences(
    per_query: PolarsFrame,
    measure: str,
    *,
    system_a: str | None = None,
    system_b: str | None = None,
    system: str = "system",
    query: str = "query",
) -> pl.DataFrame:
    """Per-query difference ``a - b`` of one measure between two systems.

    Parameters
    ----------
    per_query
        Output of :func:`polars_rankeval.evaluate` with a ``system`` column.
    measure
        The measure column, e.g. ``"AP"``.
    system_a, system_b
        The two systems; by default the two systems of the frame in sorted
        order (an error if it holds another number of systems).
    system, query
        Column names.

    Returns
    -------
    pl.DataFrame
        ``query, a, b, diff`` sorted by ``diff`` descending (ties by query).

    Examples
    --------
    >>> import polars as pl
    >>> pq = pl.DataFrame({"system": ["x", "x", "y", "y"], "query": ["1", "2"] * 2,
    ...                    "AP": [0.5, 0.2, 0.25, 0.4]})
    >>> query_differences(pq, "AP")
    shape: (2, 4)
    ┌───────┬─────┬──────┬──────┐
    │ query ┆ a   ┆ b    ┆ diff │
    │ ---   ┆ --- ┆ ---  ┆ ---  │
    │ str   ┆ f64 ┆ f64  ┆ f64  │
    ╞═══════╪═════╪══════╪══════╡
    │ 1     ┆ 0.5 ┆ 0.25 ┆ 0.25 │
    │ 2     ┆ 0.2 ┆ 0.4  ┆ -0.2 │
    └───────┴─────┴──────┴──────┘
    """
    frame = per_query.lazy().collect()
    _require(frame, [system, query, measure], "per_query")
    check_reserved({"query": query}, ("a", "b", "diff"), "query_differences")
    if measure in (system, query):
        msg = f"measure {measure!r} is the {'system' if measure == system else 'query'} column."
        raise ValueError(msg)
    if not (frame.schema[measure].is_numeric() or frame.schema[measure] == pl.Boolean):
        msg = f"measure column {measure!r} must be numeric. Got dtype {frame.schema[measure]}."
        raise TypeError(msg)
    systems = frame[system].unique().sort().to_list()
    if (system_a is None) != (system_b is None):
        msg = "Name both systems (system_a= and system_b=) or neither."
        raise ValueError(msg)
    if system_a is None and system_b is None:
        if len(systems) != 2:
            msg = (
                f"per_query holds {len(systems)} systems ({', '.join(map(str, systems[:10]))}); "
                "name the two to compare with system_a= and system_b=."
            )
            raise ValueError(msg)
        system_a, system_b = systems
    for name in (system_a, system_b):
        if name not in systems:
            msg = f"System {name!r} is not in per_query (systems: {', '.join(map(str, systems))})."
            raise ValueError(msg)
    pick = frame.select(system, query, measure).filter(pl.col(system).is_in([system_a, system_b]))
    check_duplicates(pick.lazy(), [system, query], "per_query")
    check_values(pick, [measure], system=system, query=query)
    a = pick.filter(pl.col(system) == system_a).select(query, pl.col(measure).alias("a"))
    b = pick.filter(pl.col(system) == system_b).select(query, pl.col(measure).alias("b"))
    paired = a.join(b, on=query, how="full", coalesce=True)
    unpaired = paired.filter(pl.col("a").is_null() | pl.col("b").is_null())
    if unpaired.height:
        shown = ", ".join(str(q) for q in unpaired[query].head(5).to_list())
        msg = (
            f"{unpaired.height} queries are scored for only one of {system_a!r} and "
            f"{system_b!r} ({shown}); evaluate with missing='zero' to pair them."
        )
        raise ValueError(msg)
    return paired.with_columns(diff=pl.col("a") - pl.col("b")).sort(
        ["diff", query], descending=[True, False]
    )


def plot_query_differences(
    per_query: PolarsFrame,
    measure: str,
    path: str | Path,
    *,
    system_a: str | None = None,
    system_b: str | None = None,
    system: str = "system",
    query: str = "query",
    title: str | None = None,
) -> Path:
    """Draw the per-query differences ``a - b`` of one measure as sorted bars.

    Bars above zero are queries where ``system_a`` scores higher; green bars are its
    wins, red its losses: higher, or lower for a measure declared ``better="lower"``
    (FallOut, Unjudged, ...), as :func:`~polars_rankeval.compare` counts them. The
    title gives the counts of wins, ties and losses and the mean difference.

    Parameters
    ----------
    per_query, measure, system_a, system_b, system, query
        As for :func:`query_differences`.
    path
        The file to write: ``.png``, ``.svg`` or ``.pdf`` (its suffix says which).
    title
        Figure title; by default it names the systems, measure and counts.

    Returns
    -------
    Path
        The file written.

    Examples
    --------
    >>> import tempfile, pathlib, polars as pl
    >>> from polars_rankeval.plots import plot_query_differences
    >>> pq = pl.DataFrame({"system": ["x", "x", "y", "y"], "query": ["1", "2"] * 2,
    ...                    "AP": [0.5, 0.2, 0.25, 0.4]})
    >>> out = plot_query_differences(pq, "AP", pathlib.Path(tempfile.mkdtemp()) / "d.png")
    >>> out.suffix
    '.png'
    """
    plot_format(path)
    diffs = query_differences(
        per_query, measure, system_a=system_a, system_b=system_b, system=system, query=query
    )
    if system_a is None and system_b is None:
        systems = per_query.lazy().select(pl.col(system).unique().sort()).collect()[system]
        system_a, system_b = systems.to_list()
    d = diffs["diff"].to_numpy()
    gain = -d if measure_better(measure) == "lower" else d  # > 0: a query system_a wins
    wins, ties, losses = int((gain > 0).sum()), int((gain == 0).sum()), int((gain < 0).sum())
    fig, ax = _new_figure((max(6.4, min(0.12 * len(d), 16.0)), 4.8))
    colors = ["tab:green" if v > 0 else "tab:red" if v < 0 else "tab:gray" for v in gain]
    ax.bar(range(len(d)), d, color=colors, width=0.85)
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(d)))
    ax.set_xticklabels([str(q) for q in diffs[query].to_list()], rotation=90, fontsize="x-small")
    ax.set(xlabel="Query (sorted by difference)", ylabel=f"{measure}: {system_a} - {system_b}")
    mean = float(d.mean()) if len(d) else float("nan")
    ax.set_title(
        title
        or f"{measure}, {system_a} vs {system_b}: {wins} wins, {ties} ties, {losses} losses, "
        f"mean diff {mean:+.4f}",
        fontsize="medium",
    )
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


SUMMARY_COLUMNS = (
    "measure",
    "aggregate",
    "mean",
    "std",
    "stderr",
    "ci_low",
    "ci_high",
    "n",
    "clipped",
)
"""Columns of :func:`polars_rankeval.summarize`'s output other than system and segments."""
_AGGREGATES = {"gmean": "geometric mean", "sum": "total"}


def plot_means(
    summary: PolarsFrame,
    path: str | Path,
    *,
    measures: list[str] | None = None,
    system: str = "system",
    title: str | None = None,
) -> Path:
    r"""Draw each system's score with its confidence interval, one panel per measure.

    A dot at the score (``mean``: the mean, or the geometric mean or total that
    :func:`polars_rankeval.summarize` combines it as) and a line from
    ``ci_low`` to ``ci_high``, one row per system (per segment and system for
    a summary with ``by=``), the systems in the order of the frame from top to
    bottom, one color each. Each measure has its own panel and scale (a count
    is not drawn on the scale of AP). An interval that is NaN (fewer than two
    queries) is not drawn.

    Parameters
    ----------
    summary
        Output of :func:`polars_rankeval.summarize` (any interval kind and
        level): ``[segments], [system], measure, mean, ci_low, ci_high``;
        columns other than summarize's own name the segments.
    path
        The file to write: ``.png``, ``.svg`` or ``.pdf`` (its suffix says which).
    measures
        Measures to draw, in panel order; default every measure of the summary.
    system
        The system column (optional in ``summary``).
    title
        Figure title; default "Scores with confidence intervals".

    Returns
    -------
    Path
        The file written.

    Examples
    --------
    >>> import tempfile, pathlib, polars as pl
    >>> import polars_rankeval as pr
    >>> from polars_rankeval.plots import plot_means
    >>> pq = pl.DataFrame({"system": ["x"] * 4 + ["y"] * 4, "query": ["1", "2", "3", "4"] * 2,
    ...                    "AP": [0.5, 0.2, 0.3, 0.4, 0.25, 0.4, 0.3, 0.6],
    ...                    "RR": [1.0, 0.5, 1.0, 0.5, 0.5, 1.0, 1.0, 1.0]})
    >>> out = plot_means(pr.summarize(pq, interval="t"), pathlib.Path(tempfile.mkdtemp()) / "m.pdf")
    >>> out.read_bytes()[:5]
    b'%PDF-'
    """
    plot_format(path)
    frame = summary.lazy().collect()
    fig = _means_figure(frame, measures=measures, system=system, title=title)
    return _save(fig, path)


def _means_figure(
    frame: pl.DataFrame, *, measures: list[str] | None, system: str, title: str | None
) -> Figure:
    """The figure of :func:`plot_means`: one axes per measure, in order."""
    need = ["measure", "mean", "ci_low", "ci_high"]
    if any(c not in frame.columns for c in need):
        have = ", ".join(repr(c) for c in frame.columns)
        msg = (
            f"plot_means draws pr.summarize's output ({', '.join(need)}); the frame has "
            f"{have}: pass pr.summarize(per_query, ...)."
        )
        raise ValueError(msg)
    present = frame["measure"].unique(maintain_order=True).to_list()
    measures = present if measures is None else list(measures)
    for name in measures:
        if name not in present:
            msg = f"Measure {name!r} is not in the summary (measures: {', '.join(present)})."
            raise ValueError(msg)
    if not measures:
        msg = "The summary has no rows: there is nothing to draw."
        raise ValueError(msg)
    keys = [c for c in frame.columns if c not in SUMMARY_COLUMNS and c != system]
    keys += [system] if system in frame.columns else []
    label = (
        pl.concat_str([pl.col(k).cast(pl.String) for k in keys], separator=" / ", ignore_nulls=True)
        if keys
        else pl.lit("")
    )
    frame = frame.with_columns(label.alias("__label"))
    rows = frame["__label"].unique(maintain_order=True).to_list()
    position = {name: i for i, name in enumerate(rows)}
    width = min(1.5 + 3.2 * len(measures), 16.0)
    height = max(2.4, 1.2 + 0.45 * len(rows))
    fig = _canvas((width, height))
    axes = list(fig.subplots(1, len(measures), sharey=True, squeeze=False)[0])
    by = system if system in frame.columns else "__label"  # one color per system
    hues = {v: f"C{i % 10}" for i, v in enumerate(frame[by].unique(maintain_order=True))}
    for ax, name in zip(axes, measures, strict=True):
        part = frame.filter(pl.col("measure") == name)
        y = [position[r] for r in part["__label"].to_list()]
        color = [hues[v] for v in part[by].to_list()]
        ax.hlines(
            y, part["ci_low"].to_numpy(), part["ci_high"].to_numpy(), colors=color, linewidth=2
        )
        ax.scatter(part["mean"].to_numpy(), y, c=color, zorder=3, s=24)
        kind = part["aggregate"][0] if "aggregate" in part.columns and part.height else "mean"
        ax.set_xlabel(f"{name} ({_AGGREGATES[kind]})" if kind in _AGGREGATES else name)
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(range(len(rows)), [str(r) for r in rows])
    axes[0].set_ylim(len(rows) - 0.5, -0.5)  # the first row on top
    for ax in axes[1:]:
        ax.tick_params(labelleft=False)
    fig.suptitle(title or "Scores with confidence intervals", fontsize="medium")
    return fig
