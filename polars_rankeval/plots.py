"""Plots as PNG files: precision-recall curves and per-query differences.

Drawn offline with matplotlib's Agg canvas (no window, no pyplot state, so a
notebook's backend is left alone). matplotlib is the optional extra
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
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from polars_rankeval._typing import IntoFrameOrDict, PolarsFrame

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.typing import ColorType

FIGSIZE = (6.4, 4.8)
DPI = 100


def _new_figure(figsize: tuple[float, float] = FIGSIZE) -> tuple[Figure, Axes]:
    """A figure on an Agg canvas (offline PNG), without touching pyplot."""
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
    return fig, fig.add_subplot()


def _save(fig: Figure, path: str | Path) -> Path:
    path = Path(path)
    if path.suffix.lower() != ".png":
        msg = f"Plots are written as PNG files: the path must end in .png. Got {str(path)!r}."
        raise ValueError(msg)
    fig.savefig(path, format="png")
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
    """Draw precision-recall curves from a curve frame to a PNG file.

    Parameters
    ----------
    curves
        ``recall, precision`` points, optionally with ``system`` and ``query``
        columns: one line per system (per system and query when the frame has a
        ``query`` column), points joined in recall order.
    path
        The PNG file to write.
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
        The PNG file to write.
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
    pick = frame.select(system, query, measure)
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

    Bars above zero are queries where ``system_a`` scores higher. The title
    gives the counts of wins, ties and losses and the mean difference.

    Parameters
    ----------
    per_query, measure, system_a, system_b, system, query
        As for :func:`query_differences`.
    path
        The PNG file to write.
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
    diffs = query_differences(
        per_query, measure, system_a=system_a, system_b=system_b, system=system, query=query
    )
    if system_a is None and system_b is None:
        systems = per_query.lazy().select(pl.col(system).unique().sort()).collect()[system]
        system_a, system_b = systems.to_list()
    d = diffs["diff"].to_numpy()
    wins, ties, losses = int((d > 0).sum()), int((d == 0).sum()), int((d < 0).sum())
    fig, ax = _new_figure((max(6.4, min(0.12 * len(d), 16.0)), 4.8))
    colors = ["tab:green" if v > 0 else "tab:red" if v < 0 else "tab:gray" for v in d]
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
