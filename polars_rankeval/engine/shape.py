"""The one intermediate shape: what every input becomes and every measure reads.

Whatever comes in (a run and qrels as DataFrames, LazyFrames or TREC files,
a pre-judged log, one piece of a Dask or Spark job), it is turned into a
:class:`Judged`:

* ``keys``: one row per ranking, the user's columns that identify it
  (``[system], query``), in ranking-id order;
* ``rankings``: per ranking, its id, the id of its query's judgments
  (``FACT``, null when the query has no qrels row), how many documents it
  retrieved after the depth cut (``NRET``), and whether it is scored;
* ``rows``: the retrieved documents that have a qrels row (any grade, 0 and
  negative included), each with its ranking, rank and grade, sorted by
  ranking then rank;
* ``judgments``: every qrels row of each query (``FACT``, grade): what |R|,
  the judged non-relevant count and the ideal ranking are taken from.

The rows and judgments hold only the grades the measures read (see
:class:`polars_rankeval.engine.select.Reads`). Rows of a lower grade that a
measure reads only as counts (bpref and infAP: how many judged non-relevant
documents lie above each relevant one) are left out and counted instead: each
row then says how many of them lie above it (:data:`LEFT_NONREL_ABOVE`,
:data:`LEFT_UNJUDGED_ABOVE`), and each ranking how many it retrieved
(:data:`LEFT_NONREL_RET`) and how many its query's judgments hold
(:data:`LEFT_NONREL_JUDGED`).

Every measure trec_eval has is a function of these: the unjudged retrieved
documents matter only through their ranks (which shift the judged ones) and
their number (``NRET``). Internal column names start with ``__rk_`` and never
meet a user's column: user columns live only in ``keys``.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

RANKING = "__rk_ranking"
"""Ranking id (UInt32), dense from 0, in ``rows`` and ``rankings``."""
RANK = "__rk_rank"
"""Rank of a retrieved document (UInt32, 1 = top)."""
GRADE = "__rk_grade"
"""qrels grade (Int64)."""
FACT = "__rk_fact"
"""Id of a query's judgments (UInt32): ``judgments`` rows of that query."""
NRET = "__rk_nret"
"""Documents the ranking retrieved, after the depth cut (Int64)."""
SCORED = "__rk_scored"
"""Whether the ranking gets a row in the output (Boolean)."""
HAS_RUN = "__rk_has_run"
"""Whether the ranking comes from the run (False: an empty ranking added by missing='zero')."""
N_REL = "__rk_n_rel"
"""A given |R| per ranking (evaluate_judged's ``n_rel``), overriding the count of judgments."""

TIE_FIRST = "__rk_tie_first"
"""First rank of a row's tie group (UInt32): the rows of its ranking with its exact score.
Only in ``rows`` when a measure averages over ties (``nDCG(ties=average)``)."""
TIE_LAST = "__rk_tie_last"
"""Last rank of a row's tie group (UInt32), with :data:`TIE_FIRST`."""

JUDGMENT_ROW = "__rk_judgment"
"""The qrels row (UInt32, 0 = first) of a judged retrieved row's judgment, in ``rows``, and
of each judgment, in ``judgments``. Only in ``rows`` when a measure reads the qrels' row
order (``Compat(ties=doc_asc)``, ir_measures' compat provider), with :data:`SCORE_SIGN`."""
SCORE_SIGN = "__rk_score_sign"
"""The sign of a judged retrieved row's score (Int8: -1, 0 or 1; 1 for a run ranked by its
ranks or row order), with :data:`JUDGMENT_ROW`."""

LEFT_NONREL_ABOVE = "__rk_left_nonrel_above"
"""Rows left out of ``rows`` (their grade is under the lowest the measures read) of grade 0
or more (judged non-relevant for every measure asked) that lie above a row in its ranking
(UInt32). Only in ``rows`` when rows were left out and counted."""
LEFT_UNJUDGED_ABOVE = "__rk_left_unjudged_above"
"""Rows left out of ``rows`` of a negative grade (pooled but unjudged) that lie above a row
in its ranking (UInt32), with :data:`LEFT_NONREL_ABOVE`."""
LEFT_NONREL_RET = "__rk_left_nonrel_ret"
"""Rows left out of ``rows`` of grade 0 or more that a ranking retrieved (Int64), in
``rankings`` with :data:`LEFT_NONREL_ABOVE`."""
LEFT_NONREL_JUDGED = "__rk_left_nonrel_judged"
"""Judgments left out of ``judgments`` of grade 0 or more, of a ranking's query (Int64), in
``rankings`` with :data:`LEFT_NONREL_ABOVE`: the rest of its judged non-relevant count."""

IDEAL_POS = "__rk_ideal_pos"
"""Position (1, 2, ...) in a query's ideal ranking (Float64)."""
IDEAL_GAIN = "__rk_ideal_gain"
"""Gain at a position of a query's ideal ranking (Float64)."""

ROW_SCHEMA = {RANKING: pl.UInt32, RANK: pl.UInt32, GRADE: pl.Int64}
JUDGMENT_SCHEMA = {FACT: pl.UInt32, GRADE: pl.Int64}


@dataclass(frozen=True)
class Judged:
    """Rankings, their judged retrieved rows and their queries' judgments."""

    keys: pl.DataFrame
    """The user's key columns, one row per ranking, row i = ranking i."""
    rankings: pl.DataFrame
    """``RANKING, FACT, NRET, SCORED, HAS_RUN`` (and ``N_REL`` when given,
    ``LEFT_NONREL_RET, LEFT_NONREL_JUDGED`` when rows were left out), one row per
    ranking."""
    rows: pl.DataFrame
    """``RANKING, RANK, GRADE`` (and ``TIE_FIRST, TIE_LAST``, ``JUDGMENT_ROW, SCORE_SIGN``
    when asked for, ``LEFT_NONREL_ABOVE, LEFT_UNJUDGED_ABOVE`` when rows were left out):
    judged retrieved rows, sorted by ranking then rank."""
    judgments: pl.DataFrame
    """``FACT, GRADE``: the judged documents of every query (in any order)."""

    def __post_init__(self) -> None:
        if self.keys.height != self.rankings.height:
            msg = "keys and rankings must have one row per ranking each"
            raise AssertionError(msg)
