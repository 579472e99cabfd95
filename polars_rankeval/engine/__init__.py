"""The evaluation engine: scope -> rank -> select rows -> aggregate.

* :mod:`~polars_rankeval.engine.plan`: what it reads of a call (options, measures as
  formulas over features); it imports nothing of the API boundary or the catalogue;
* :mod:`~polars_rankeval.engine.shape`: the one intermediate shape every input becomes;
* :mod:`~polars_rankeval.engine.rank`: trec_eval's order from one sort of packed integers;
* :mod:`~polars_rankeval.engine.join`: the run rows paired with their qrels rows, exactly;
* :mod:`~polars_rankeval.engine.select`: run + qrels (or a pre-judged table) -> that shape;
* :mod:`~polars_rankeval.engine.features`: the columns measure formulas read, and how
  they are aggregated;
* :mod:`~polars_rankeval.engine.pipeline`: the stages in order, for one in-memory piece;
* :mod:`~polars_rankeval.engine.buckets`: lazy inputs, bucket by bucket, in bounded memory.
"""
