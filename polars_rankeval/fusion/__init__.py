"""Rank fusion: many runs in, one run out, as lazy Polars (:func:`fuse`), and the search
for the best fusion parameters on qrels (:func:`optimize_fusion`).

The methods and normalisations are ranx's, by the same names and defaults
(:mod:`~polars_rankeval.fusion.methods`, :mod:`~polars_rankeval.fusion.normalize`);
trectools' ``combos`` and reciprocal rank fusion are the same methods with
``norm=None``, ``depth``, ``max_docs`` and ``doc_order="asc"``.
"""

from polars_rankeval.fusion.fuse import fuse
from polars_rankeval.fusion.methods import METHODS
from polars_rankeval.fusion.normalize import NORMALIZATIONS
from polars_rankeval.fusion.optimize import optimize_fusion

__all__ = ["METHODS", "NORMALIZATIONS", "fuse", "optimize_fusion"]
