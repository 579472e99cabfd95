"""What a scoring left out, reported once: queries without qrels, queries absent from the run.

Shared by every way in (in-memory pieces, lazy runs bucket by bucket, Dask and
Spark): each piece counts, and the caller warns or raises once for the whole run.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

import polars as pl

_LISTS_SCORED: ContextVar[tuple[tuple[str, ...], tuple[str, ...]]] = ContextVar(
    "lists_scored", default=((), ())
)
"""The measures of lists and the judged measures of the call being scored (see
:func:`lists_score_every_query`)."""


class UnscoredQueriesWarning(UserWarning):
    """Some queries were left out of the evaluation; the message says which and why."""


def readable(ids: pl.Series) -> list[str]:
    """Ids as text for a message; a compound id's parts separated by " / "."""
    text = ids.cast(pl.String)
    return text.str.replace_all("\x00\x00", " / ", literal=True).to_list()


def raise_absent_queries(absent: pl.Series | pl.DataFrame) -> None:
    """missing='error': raise naming the qrels queries absent from the run (if any).

    ``absent``: the queries, or the rankings (``[*by], [system], query``, query last)
    the run lacks: each segment and system is named with its queries.

    Examples
    --------
    >>> lacking = pl.DataFrame({"system": ["b", "b"], "query": ["q2", "q3"]})
    >>> raise_absent_queries(lacking)
    Traceback (most recent call last):
    ...
    ValueError: 2 qrels queries are not in the run (system='b': q2, q3). ...
    """
    if isinstance(absent, pl.Series) or absent.width == 1:
        queries = absent if isinstance(absent, pl.Series) else absent.to_series()
        shown = ", ".join(readable(queries.head(10)))
        more = queries.len() > 10
    else:
        *where, query = absent.columns
        parts = absent.group_by(where, maintain_order=True).agg(pl.col(query))
        texts = [
            ", ".join(f"{c}={row[c]!r}" for c in where)
            + ": "
            + ", ".join(readable(pl.Series(row[query][:10])))
            + (", ..." if len(row[query]) > 10 else "")
            for row in parts.head(10).iter_rows(named=True)
        ]
        shown, more = "; ".join(texts), parts.height > 10
    if absent.shape[0]:
        msg = (
            f"{absent.shape[0]} qrels queries are not in the run ({shown}"
            f"{'; ...' if more else ''}). Pass missing='drop' to leave them out "
            f"or missing='zero' to score them as empty rankings (trec_eval -c)."
        )
        raise ValueError(msg)


def warn_unjudged_queries(unjudged: pl.Series) -> None:
    """Warn naming the queries of a judged table (one entry per ranking) with no judged row."""
    _warn(unjudged, "queries have no judged row (every grade is null) and were not scored",
          "as evaluate leaves out a run query without qrels")  # fmt: skip


@contextmanager
def lists_score_every_query(lists: Sequence[str], judged: Sequence[str]) -> Iterator[None]:
    """Within it, :func:`warn_unscored_queries` says what is true of a call with measures
    of lists: those score every list of the run, only the ``judged`` measures leave out a
    query without qrels."""
    token = _LISTS_SCORED.set((tuple(lists), tuple(judged)))
    try:
        yield
    finally:
        _LISTS_SCORED.reset(token)


def warn_unscored_queries(no_qrels: pl.Series) -> None:
    """Warn naming the run queries (one entry per ranking) that have no qrels, if any.

    Examples
    --------
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     with lists_score_every_query(["Novelty@10"], ["nDCG@10"]):
    ...         warn_unscored_queries(pl.Series(["u7"]))
    >>> print(caught[0].message)
    1 run queries have no qrels (u7), so nDCG@10 did not score them (null), as trec_eval \
does; Novelty@10 did. pr.coverage(run, qrels) lists them.
    """
    lists, judged = _LISTS_SCORED.get()
    if not lists:
        _warn(no_qrels, "run queries have no qrels and were not scored",
              "as trec_eval does. pr.coverage(run, qrels) lists them")  # fmt: skip
        return
    if no_qrels.len():
        shown = ", ".join(readable(no_qrels.unique(maintain_order=True).head(5)))
        more = ", ..." if no_qrels.len() > 5 else ""
        message = (
            f"{no_qrels.len()} run queries have no qrels ({shown}{more}), so "
            f"{_names(judged)} did not score them (null), as trec_eval does; "
            f"{_names(lists)} did. pr.coverage(run, qrels) lists them."
        )
        warnings.warn(message, UnscoredQueriesWarning, stacklevel=4)


def _names(measures: Sequence[str]) -> str:
    """The first three of ``measures``, comma-separated."""
    return ", ".join(measures[:3]) + (", ..." if len(measures) > 3 else "")


def _warn(ids: pl.Series, what: str, why: str) -> None:
    if ids.len():
        shown = ", ".join(readable(ids.unique(maintain_order=True).head(5)))
        more = ", ..." if ids.len() > 5 else ""
        message = f"{ids.len()} {what} ({shown}{more}), {why}."
        warnings.warn(message, UnscoredQueriesWarning, stacklevel=5)
