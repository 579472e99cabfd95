"""What a scoring left out, reported once: queries without qrels, queries absent from the run.

Shared by every way in (in-memory pieces, lazy runs bucket by bucket, Dask and
Spark): each piece counts, and the caller warns or raises once for the whole run.
"""

from __future__ import annotations

import warnings

import polars as pl


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


def warn_unscored_queries(no_qrels: pl.Series) -> None:
    """Warn naming the run queries (one entry per ranking) that have no qrels, if any."""
    _warn(no_qrels, "run queries have no qrels and were not scored",
          "as trec_eval does. pr.coverage(run, qrels) lists them")  # fmt: skip


def _warn(ids: pl.Series, what: str, why: str) -> None:
    if ids.len():
        shown = ", ".join(readable(ids.unique(maintain_order=True).head(5)))
        more = ", ..." if ids.len() > 5 else ""
        message = f"{ids.len()} {what} ({shown}{more}), {why}."
        warnings.warn(message, UnscoredQueriesWarning, stacklevel=5)
