"""Expected values under a random ranking: the chance level of P@k and AP."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from polars_rankeval._typing import IntoExpr
from polars_rankeval.catalogue import (
    REL,
    UNIT,
    columns,
    declare,
    declare_relevant,
    reads_relevant,
    required_k,
)
from polars_rankeval.engine.shape import NRET
from polars_rankeval.metrics._common import (
    check_cutoff,
    col,
    num_relevant,
    relevant_retrieved,
    retrieved,
    safe_div,
)

if TYPE_CHECKING:
    from polars_rankeval.engine.features import Built, Features


def expected_precision(
    k: int,
    *,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
    rel_level: int = 1,
) -> pl.Expr:
    r"""Expected P@k when the retrieved documents are put in random order (``ExpectedP@k``).

    .. math:: E[P@k] = \frac{\min(k, n)}{k} \cdot \frac{r}{n}

    where n is the number of retrieved documents and r the number of relevant
    ones among them. Read P@k against it: it is what the same set of documents
    scores by chance, whatever the ranker did.

    References
    ----------
    Bestgen, "Exact expected average precision of the random baseline for
    system evaluation", Prague Bulletin of Mathematical Linguistics 103, 2015.

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2, 3, 4], "relevance": [1, 0, 0, 1]})
    >>> judged.select(expected_precision(2)).item()
    0.5
    """
    check_cutoff(k, "ExpectedP", allow_none=False)
    n = retrieved(rank).sum().cast(pl.Float64)
    r = relevant_retrieved(rank, relevance, rel_level).sum().cast(pl.Float64)
    return safe_div(pl.min_horizontal(n, pl.lit(float(k))) * r, n * k)


def expected_ap(
    *,
    rank: IntoExpr = "rank",
    relevance: IntoExpr = "relevance",
    rel_level: int = 1,
    n_rel: IntoExpr | None = None,
) -> pl.Expr:
    r"""Expected AP when the retrieved documents are put in random order (``ExpectedAP``).

    .. math:: E[AP] = \frac{r}{n \, |R|} \sum_{i=1}^{n}
              \frac{1 + (i - 1) a}{i} = \frac{r}{n \, |R|}
              \left(n a + (1 - a) H_n\right), \quad a = \frac{r - 1}{n - 1}

    where n is the number of retrieved documents, r the relevant ones among
    them, |R| the relevant documents of the query, :math:`H_n` the n-th
    harmonic number (a = 0 when n = 1). Term i is the chance that rank i holds a
    relevant document (r/n) times the expected precision there given that it
    does.

    References
    ----------
    Bestgen, "Exact expected average precision of the random baseline for
    system evaluation", Prague Bulletin of Mathematical Linguistics 103, 2015.

    Examples
    --------
    >>> import polars as pl
    >>> judged = pl.DataFrame({"rank": [1, 2], "relevance": [1, 0]})
    >>> judged.select(expected_ap()).item()  # AP is 1 or 1/2, equally likely
    0.75
    """
    ret = retrieved(rank)
    n = ret.sum().cast(pl.Float64)
    r = relevant_retrieved(rank, relevance, rel_level).sum().cast(pl.Float64)
    harmonic = (1.0 / col(rank).cast(pl.Float64)).filter(ret).sum()
    a = safe_div(r - 1.0, n - 1.0)
    total = n * a + (1.0 - a) * harmonic
    return safe_div(r * total, n * num_relevant(relevance, rel_level, n_rel))


# ---------------------------------------------------------------------- formulas
# The same measures over the engine's features (see polars_rankeval.engine.features).


def expected_precision_formula(f: Features, k: int, rel_level: int) -> pl.Expr:
    """ExpectedP@k: min(k, n) r / (n k), n retrieved, r relevant retrieved."""
    n, r = f.nret, f.hits(rel_level)
    return safe_div(pl.min_horizontal(n, pl.lit(float(k))) * r, n * k)


def expected_ap_formula(f: Features, rel_level: int) -> pl.Expr:
    """ExpectedAP over the engine's features (see :func:`expected_ap`)."""
    n, r = f.nret, f.hits(rel_level)
    harmonic = f.late("harmonic", _harmonic_of_nret)
    a = safe_div(r - 1.0, n - 1.0)
    total = n * a + (1.0 - a) * harmonic
    return safe_div(r * total, n * f.nrel(rel_level))


def _harmonic_of_nret(built: Built) -> pl.Series:
    """H_n = 1 + 1/2 + ... + 1/n of each ranking's number of retrieved documents."""
    n = built.per_ranking[NRET].to_numpy().astype(np.int64)
    table = np.concatenate(
        [[0.0], np.cumsum(1.0 / np.arange(1, max(int(n.max(initial=0)), 0) + 1))]
    )
    return pl.Series(table[n], dtype=pl.Float64)


# --------------------------------------------------------------------------- declarations

declare(
    "ExpectedP",
    lambda x, c: expected_precision(required_k(x), **columns(x, c)),
    "required",
    REL,
    summary="expected P@k under a random order of the retrieved documents",
    reads=reads_relevant,
    formula=lambda x, f: expected_precision_formula(f, required_k(x), x.rel_level(f.ctx)),
    bounds=UNIT,
    order=33,
)
declare_relevant(
    "ExpectedAP",
    expected_ap,
    expected_ap_formula,
    summary="expected AP under a random order of the retrieved documents",
    bounds=UNIT,
    order=34,
)
