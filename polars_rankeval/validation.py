"""Input checks that run before any work, with errors that name what is wrong."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from polars_rankeval._typing import FrameT, Order


def check_columns(schema: pl.Schema, required: Mapping[str, str], table: str) -> None:
    """Raise if a required column is missing; ``required`` maps keyword -> column name.

    Examples
    --------
    >>> check_columns(pl.Schema({"qid": pl.String}), {"query": "query"}, "run")
    Traceback (most recent call last):
    ...
    ValueError: run is missing column 'query' (it has: 'qid'). If it is named otherwise, ...
    """
    for keyword, name in required.items():
        if name not in schema:
            have = ", ".join(repr(c) for c in schema.names()) or "no columns"
            msg = (
                f"{table} is missing column {name!r} (it has: {have}). "
                f'If it is named otherwise, pass {keyword}="<name>".'
            )
            raise ValueError(msg)


def check_id_dtypes(run_schema: pl.Schema, qrels_schema: pl.Schema, ids: Sequence[str]) -> None:
    """Raise when run and qrels ids cannot be matched safely.

    Equal dtypes match as they are; integers and strings (or categoricals) are
    compared as strings, which is exact. Floating-point ids are refused: 1.0 and
    "1" would not match, and silently losing judgments is worse than an error.
    """
    for name in ids:
        a, b = run_schema[name], qrels_schema[name]
        if a == b:
            continue
        if a.is_float() or b.is_float():
            msg = (
                f"Column {name!r} is {a} in the run and {b} in qrels; floating-point ids "
                f"cannot be matched safely. Cast both to pl.String or pl.Int64 first."
            )
            raise TypeError(msg)
        for dtype in (a, b):
            if not (
                dtype.is_integer()
                or dtype in (pl.String, pl.Categorical)
                or isinstance(dtype, pl.Enum | pl.Categorical)
            ):
                msg = (
                    f"Column {name!r} is {a} in the run and {b} in qrels; ids must be "
                    f"integers or strings. Cast both to pl.String first."
                )
                raise TypeError(msg)


def check_score_dtype(schema: pl.Schema, score: str) -> None:
    """Raise if the score column is not numeric."""
    dtype = schema[score]
    if not dtype.is_numeric():
        msg = (
            f"run column {score!r} must be numeric (higher is better). Got dtype {dtype}. "
            f"Cast it first, e.g. pl.col({score!r}).cast(pl.Float64)."
        )
        raise TypeError(msg)


def check_grade_dtype(schema: pl.Schema, relevance: str) -> None:
    """Raise if the relevance column cannot hold integer grades."""
    dtype = schema[relevance]
    if not (dtype.is_integer() or dtype.is_float() or dtype == pl.Boolean):
        msg = f"qrels column {relevance!r} must hold integer relevance grades. Got dtype {dtype}."
        raise TypeError(msg)


def key_hash(keys: Sequence[str]) -> pl.Expr:
    """A 64-bit hash of the row's ``keys``: equal keys, equal hashes."""
    hashed = pl.col(keys[0]).hash(seed=0)
    for i, key in enumerate(keys[1:], start=1):
        hashed = hashed ^ pl.col(key).hash(seed=i)
    return hashed


def _all_distinct_by_hash(frame: pl.LazyFrame, keys: Sequence[str]) -> bool:
    """True when the rows' key hashes are all distinct, so the keys are too.

    Equal keys hash equally, so distinct hashes prove there is no duplicate; a
    collision proves nothing and the caller falls back to the exact check. One
    hash and one n_unique of a u64 column cost a fraction of a group_by on strings.
    """
    return bool(frame.select(key_hash(keys).n_unique() == pl.len()).collect().item())


def check_duplicates(
    frame: pl.LazyFrame,
    keys: Sequence[str],
    table: str,
    *,
    keep_best: str = "error",
    hashes: pl.Series | None = None,
) -> None:
    """Raise if ``keys`` are not unique in ``frame`` (unless ``keep_best``).

    ``hashes``, the rows' :func:`key_hash` of ``keys`` in any key order, saves
    hashing again when the caller has them.

    Examples
    --------
    >>> run = pl.LazyFrame({"query": ["q", "q"], "doc": ["a", "a"], "score": [1.0, 2.0]})
    >>> check_duplicates(run, ["query", "doc"], "run")
    Traceback (most recent call last):
    ...
    ValueError: run has duplicate rows for (query='q', doc='a') (2 rows). trec_eval ...
    """
    if keep_best == "keep_best":
        return
    if hashes is not None and hashes.n_unique() == hashes.len():
        return
    if hashes is None and _all_distinct_by_hash(frame, keys):
        return
    dup = frame.group_by(keys).agg(pl.len().alias("_n")).filter(pl.col("_n") > 1).head(3).collect()
    if dup.height:
        first = dup.row(0, named=True)
        where = ", ".join(f"{k}={first[k]!r}" for k in keys)
        msg = f"{table} has duplicate rows for ({where}) ({first['_n']} rows)."
        if table == "run":
            msg += (
                " trec_eval refuses such runs; pass duplicates='keep_best'"
                " to keep the best-scored row."
            )
        raise ValueError(msg)


def _raise_first(frame: pl.LazyFrame, problems: Sequence[tuple[pl.Expr, str]], table: str) -> None:
    """One pass counts every problem; only on failure find the first offending row."""
    if not problems:
        return
    counts = (
        frame.select(cond.sum().alias(str(i)) for i, (cond, _) in enumerate(problems))
        .collect()
        .row(0)
    )
    for (condition, problem), count in zip(problems, counts, strict=True):
        if count:
            hit = frame.with_row_index("__row").filter(condition).head(1).collect()
            row = hit.row(0, named=True)
            index = row.pop("__row")
            msg = f"{table} row {index} (0-based) {problem} ({count} such rows): {row}."
            raise ValueError(msg)


def check_run_values(
    run: pl.LazyFrame, *, ids: Sequence[str], score: str | None, rank: str | None
) -> None:
    """Null ids, NaN or null scores, null ranks: raise naming the first bad row."""
    problems = [(pl.col(name).is_null(), f"has a null {name!r}") for name in ids]
    if score is not None:
        problems.append((pl.col(score).is_null(), f"has a null score {score!r}"))
        if run.collect_schema()[score].is_float():
            problems.append(
                (
                    pl.col(score).is_nan(),
                    f"has a NaN score {score!r} (NaN cannot be ranked; infinite scores are fine)",
                )
            )
    if rank is not None:
        problems.append((pl.col(rank).is_null(), f"has a null rank {rank!r}"))
    _raise_first(run, problems, "run")


def check_qrels_values(qrels: pl.LazyFrame, *, ids: Sequence[str], relevance: str) -> None:
    """Null ids or grades, grades that are not integers: raise naming the first bad row."""
    problems = [(pl.col(name).is_null(), f"has a null {name!r}") for name in ids]
    problems.append((pl.col(relevance).is_null(), f"has a null grade {relevance!r}"))
    if qrels.collect_schema()[relevance].is_float():
        grade = pl.col(relevance)
        problems.append(
            (
                (grade.is_nan() | grade.is_infinite() | (grade != grade.round(0))).fill_null(False),
                f"has a grade {relevance!r} that is not an integer",
            )
        )
    _raise_first(qrels, problems, "qrels")


def checks_data(run: FrameT, validate: bool | None) -> bool:
    """Whether the data checks run: ``validate``, or by default for a DataFrame run."""
    return isinstance(run, pl.DataFrame) if validate is None else validate


def prepare_inputs(
    run: FrameT,
    qrels: FrameT,
    *,
    query: str,
    doc: str,
    score: str,
    relevance: str,
    rank: str,
    system: str | None,
    order: Order,
    duplicates: str,
    validate: bool | None = None,
    duplicate_rows: bool = True,
) -> str | None:
    """Validate run and qrels before any work; return the system column in use (or None).

    Columns, dtypes, id compatibility and options are checked on the schemas
    (free, also for a LazyFrame). The data checks (null ids, NaN scores, grades
    that are not integers, duplicate (query, doc) rows) need a pass over the
    data: they run when ``validate`` is True, which is the default for a
    DataFrame run; for a LazyFrame they run only when asked (``validate=True``),
    so a lazy plan over a large Parquet dataset is not scanned twice.
    ``duplicate_rows=False`` leaves the duplicate check to a caller that
    hashes the ids anyway (:mod:`polars_rankeval.judged_rows`).
    """
    if order not in ("score", "rank", "presorted"):
        msg = f"order must be 'score', 'rank' or 'presorted'. Got {order!r} instead."
        raise ValueError(msg)
    if duplicates not in ("error", "keep_best"):
        msg = f"duplicates must be 'error' or 'keep_best'. Got {duplicates!r} instead."
        raise ValueError(msg)
    for name, frame in (("run", run), ("qrels", qrels)):
        if not isinstance(frame, pl.DataFrame | pl.LazyFrame):
            msg = f"{name} must be a polars DataFrame or LazyFrame. Got {type(frame).__name__}."
            raise TypeError(msg)
    run_schema = run.lazy().collect_schema()
    qrels_schema = qrels.lazy().collect_schema()
    system = system if system is not None and system in run_schema else None
    needed = {"query": query, "doc": doc}
    needed |= {"score": {"score": score}, "rank": {"rank": rank}, "presorted": {}}[order]
    check_columns(run_schema, needed, "run")
    check_columns(qrels_schema, {"query": query, "doc": doc, "relevance": relevance}, "qrels")
    if order == "score":
        check_score_dtype(run_schema, score)
    check_grade_dtype(qrels_schema, relevance)
    check_id_dtypes(run_schema, qrels_schema, [query, doc])
    if checks_data(run, validate):
        ids = [query, doc] if system is None else [system, query, doc]
        check_run_values(
            run.lazy(),
            ids=ids,
            score=score if order == "score" else None,
            rank=rank if order == "rank" else None,
        )
        check_qrels_values(qrels.lazy(), ids=[query, doc], relevance=relevance)
        if duplicate_rows:
            check_duplicates(run.lazy(), ids, "run", keep_best=duplicates)
            check_duplicates(qrels.lazy(), [query, doc], "qrels")
    return system
