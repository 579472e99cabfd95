"""Conventions: which trec_eval the numbers reproduce, as data.

trec_eval is the reference, in two releases that differ in small ways. Each
:class:`Conventions` value lists, as data, every choice that makes a value or a
printed line differ between them; :func:`polars_rankeval.evaluate` and the
command line (``polars-rankeval eval --conventions``) read them from here.

==================================  ========================  =========================
choice                              ``"trec_eval-10"``        ``"trec_eval-9"``
                                    (default)                 (pytrec_eval, ir_measures)
==================================  ========================  =========================
scores compared as                  doubles (float64)         single-precision floats:
                                                              equal in float32 -> tie,
                                                              the doc id decides
IPrec@r, 11pt_avg: relevant docs   ``lround(r * |R|)``       ``(long)(r * |R| + 0.9)``
all_trec                            + rbp, rbp_resid, unj     without them
``-c -q``: qrels queries the run    printed, every measure    not printed (still in the
lacks                               0 but num_rel             ``all`` lines as zeros)
``-c``: ``num_rel`` on ``all``      qrels rows with grade>0   the same
                                    (``-l`` ignored)
qrels query with no run lines,      left out (10.0 itself     left out
no ``-c``                           exits 4: not copied)
==================================  ========================  =========================

Both read ``#`` comment lines, run-file fields after the sixth and a run
from standard input (``-``), which only 10.0 itself does: inputs, not scores.

pytrec_eval (``pytrec-eval-terrier``) and ir_measures wrap trec_eval 9.x:
pass ``conventions="trec_eval-9"`` to reproduce their numbers bit for bit.

Examples
--------
>>> get_conventions("trec_eval-9").score_precision
'float32'
>>> get_conventions().name
'trec_eval-10'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from polars_rankeval import trec_names
from polars_rankeval._typing import Rounding
from polars_rankeval.validation import check_choice

ConventionsName = Literal["trec_eval-10", "trec_eval-9"]


@dataclass(frozen=True)
class Conventions:
    """Every choice that differs between the trec_eval releases the library reproduces."""

    name: str
    version: str
    """The trec_eval release whose printed lines these conventions reproduce."""
    score_precision: Literal["float64", "float32"]
    """How run scores are compared when ordering a ranking. trec_eval 9.x reads
    scores into C ``float`` (single precision), so scores equal after rounding to
    float32 tie and the doc id breaks the tie; 10.0 keeps doubles."""
    iprec_rounding: Rounding
    """How many relevant documents a recall level r stands for in ``IPrec`` and
    ``IPrecAvg`` (trec_eval ``iprec_at_recall``, ``11pt_avg``): 9.x truncates
    ``r * |R| + 0.9``, 10.0 rounds ``r * |R|`` to the nearest integer."""
    measure_order: tuple[str, ...]
    """trec_eval's measure list: the order of its output lines."""
    nicknames: Mapping[str, tuple[str, ...]] = field(repr=False)
    """``-m`` nicknames (``all_trec``, ``official``, ...) and what they stand for."""
    complete_prints_absent: bool
    """Whether ``-c -q`` prints per-query lines for the qrels queries the run lacks."""
    complete_num_rel: Literal["positive_grades"] = "positive_grades"
    """``-c``: the ``all`` line of num_rel counts every qrels row with grade > 0,
    whatever ``-l`` says (trec_eval's ``te_calc_avg_num_rel``)."""
    absent_without_complete: Literal["drop"] = "drop"
    """A qrels query with no run lines, without ``-c``: left out of the scores.
    trec_eval 10.0 stops with status 4 there; 9.x leaves the query out."""

    @property
    def all_trec(self) -> tuple[str, ...]:
        """The measures of ``-m all_trec``."""
        return self.nicknames["all_trec"]


CONVENTIONS: dict[str, Conventions] = {
    "trec_eval-10": Conventions(
        name="trec_eval-10",
        version="10.0",
        score_precision="float64",
        iprec_rounding="v10",
        measure_order=trec_names.ORDER_10,
        nicknames=trec_names.NICKNAMES_10,
        complete_prints_absent=True,
    ),
    "trec_eval-9": Conventions(
        name="trec_eval-9",
        version="9.0.8",
        score_precision="float32",
        iprec_rounding="v9",
        measure_order=trec_names.ORDER_9,
        nicknames=trec_names.NICKNAMES_9,
        complete_prints_absent=False,
    ),
}
DEFAULT: ConventionsName = "trec_eval-10"
"""trec_eval 10.0 is the current release (2026-06-18)."""


def get_conventions(conventions: str | Conventions | None = None) -> Conventions:
    """The :class:`Conventions` of a name (None: the default, ``"trec_eval-10"``).

    Examples
    --------
    >>> get_conventions("trec_eval-9").iprec_rounding
    'v9'
    >>> get_conventions("trec_eval-8")
    Traceback (most recent call last):
    ...
    ValueError: conventions must be one of 'trec_eval-10', 'trec_eval-9'. Got 'trec_eval-8' instead.
    """
    if isinstance(conventions, Conventions):
        return conventions
    name = DEFAULT if conventions is None else conventions
    check_choice("conventions", name, CONVENTIONS)
    return CONVENTIONS[name]


__all__ = ["CONVENTIONS", "DEFAULT", "Conventions", "ConventionsName", "get_conventions"]
