"""Input checks that run before any work, with errors that name what is wrong."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, get_args, overload

import polars as pl


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


def check_choice(name: str, value: object, allowed: Any) -> None:
    """Raise unless ``value`` is one of ``allowed``: the values of a ``Literal`` type, or
    the names of a registry (a dict's keys, a tuple of names).

    Examples
    --------
    >>> from typing import Literal
    >>> check_choice("order", "scores", Literal["score", "rank", "presorted"])
    Traceback (most recent call last):
    ...
    ValueError: order must be one of 'score', 'rank', 'presorted'. Got 'scores' instead.
    >>> check_choice("test", "ttest", {"t": ..., "wilcoxon": ...})
    Traceback (most recent call last):
    ...
    ValueError: test must be one of 't', 'wilcoxon'. Got 'ttest' instead.
    """
    choices = get_args(allowed) or tuple(allowed)
    if isinstance(value, bool) or value not in choices:
        listed = ", ".join(repr(c) for c in choices)
        msg = f"{name} must be one of {listed}. Got {value!r} instead."
        raise ValueError(msg)


def check_int(name: str, value: Any, *, minimum: int, allow_none: bool = False) -> None:
    """Raise unless ``value`` is an int >= ``minimum`` (or None when allowed).

    Examples
    --------
    >>> check_int("depth", -1, minimum=0)
    Traceback (most recent call last):
    ...
    ValueError: depth must be an int >= 0. Got -1 instead.
    """
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        msg = f"{name} must be an int >= {minimum}{' or None' if allow_none else ''}. "
        msg += f"Got {value!r} instead."
        raise ValueError(msg)


def system_column(system: str | None, names: Iterable[str]) -> str | None:
    """The system column in use: ``system`` when the frame has it, else None (one system).

    Examples
    --------
    >>> system_column("system", ["query", "doc"]), system_column("tag", ["tag", "query"])
    (None, 'tag')
    """
    return system if system is not None and system in names else None


def check_reserved(
    roles: Mapping[str, str | Sequence[str] | None],
    reserved: Iterable[str],
    function: str,
    *,
    prefix: str | None = None,
) -> None:
    """Raise when a column the caller names has the name of one of ``function``'s own
    output or working columns (``reserved``), which would otherwise end in a raw
    Polars ``DuplicateError``: ``roles`` maps each option (``"by"``, ``"query"``, ...)
    to the column name(s) it was given. With ``prefix``, every name starting with it
    is the function's too (its working columns).

    Examples
    --------
    >>> check_reserved({"by": ["day", "clicks"], "position": "position"},
    ...                ("impressions", "clicks", "ctr"), "ctr_by_position")
    Traceback (most recent call last):
    ...
    ValueError: by column 'clicks' has the name of a column ctr_by_position makes ...
    """
    taken = list(dict.fromkeys(reserved))
    for option, value in roles.items():
        names = [] if value is None else [value] if isinstance(value, str) else list(value)
        for name in names:
            if name in taken or (prefix is not None and name.startswith(prefix)):
                listed = [repr(t) for t in taken if not t.startswith("__")]
                if prefix is not None:
                    listed.append(f"working columns starting with {prefix!r}")
                msg = (
                    f"{option} column {name!r} has the name of a column {function} makes "
                    f"({', '.join(listed) or 'working columns'}). Rename it first, e.g. "
                    f"frame.rename({{{name!r}: {name + '_'!r}}}), and pass "
                    f"{option}={name + '_'!r}."
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
        if a.is_nested() or b.is_nested() or a == pl.Object or b == pl.Object:
            msg = (
                f"Column {name!r} is {a} in the run and {b} in qrels; an id must be one value "
                f"(an integer or a string), not a list or a struct. For an id made of several "
                f"columns, pass their names as a list ({name}=[...])."
            )
            raise TypeError(msg)
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


def check_same_dtypes(
    left: tuple[str, pl.Schema],
    right: tuple[str, pl.Schema],
    names: Iterable[str] | Mapping[str, str],
    *,
    integers_match: bool = False,
) -> None:
    """Raise when an id column to be joined has another dtype on each side; ``left`` and
    ``right`` are (table name, schema) pairs, ``names`` the columns joined (or a mapping:
    the left table's column -> the right table's column it is joined with).
    ``integers_match``: integer dtypes of different widths or signs are joined as they
    are (Polars casts them).

    Examples
    --------
    >>> check_same_dtypes(("log", pl.Schema({"doc": pl.Int64})),
    ...                   ("run", pl.Schema({"doc": pl.String})), ["doc"])
    Traceback (most recent call last):
    ...
    TypeError: Column 'doc' is Int64 in the log and String in the run; ids are matched ...
    >>> check_same_dtypes(("train", pl.Schema({"item": pl.String})),
    ...                   ("run", pl.Schema({"doc": pl.Int32})), {"item": "doc"})
    Traceback (most recent call last):
    ...
    TypeError: Column 'item' is String in the train and column 'doc' is Int32 in the run; ...
    """
    (left_name, left_schema), (right_name, right_schema) = left, right
    pairs = names if isinstance(names, Mapping) else {name: name for name in names}
    for name, other in pairs.items():
        a, b = left_schema[name], right_schema[other]
        if a == b or (integers_match and a.is_integer() and b.is_integer()):
            continue
        theirs = f"{b}" if name == other else f"column {other!r} is {b}"
        msg = (
            f"Column {name!r} is {a} in the {left_name} and {theirs} in the {right_name}; ids "
            f"are matched by value, so cast one to the other's dtype first, e.g. "
            f"pl.col({name!r}).cast(pl.{b})."
        )
        raise TypeError(msg)


def check_one_system(frame: pl.LazyFrame, system: str | None, table: str, function: str) -> None:
    """Raise when ``frame`` has a ``system`` column holding more than one system: ``function``
    ranks one list per query, and several systems' rows would merge into one ranking.

    Examples
    --------
    >>> run = pl.LazyFrame({"system": ["a", "b"], "query": 1, "doc": ["x", "y"]})
    >>> check_one_system(run, "system", "run", "interleave")
    Traceback (most recent call last):
    ...
    ValueError: run column 'system' holds 2 systems; interleave ranks one list per query: ...
    """
    if system is None or system not in frame.collect_schema():
        return
    systems = frame.select(pl.col(system).n_unique()).collect().item()
    if systems > 1:
        msg = (
            f"{table} column {system!r} holds {systems} systems; {function} ranks one list "
            f"per query: filter one system first, e.g. {table}.filter(pl.col({system!r}) "
            f"== ...)."
        )
        raise ValueError(msg)


def check_score_dtype(schema: pl.Schema, score: str) -> None:
    """Raise if the score column is not numeric."""
    dtype = schema[score]
    if not dtype.is_numeric():
        msg = (
            f"run column {score!r} must be numeric (higher is better). Got dtype {dtype}. "
            f"Cast it first, e.g. pl.col({score!r}).cast(pl.Float64)."
        )
        raise TypeError(msg)


def check_grade_dtype(schema: pl.Schema, relevance: str, *, table: str = "qrels") -> None:
    """Raise if the relevance column cannot hold integer grades."""
    dtype = schema[relevance]
    if not (dtype.is_integer() or dtype.is_float() or dtype == pl.Boolean):
        msg = f"{table} column {relevance!r} must hold integer relevance grades. Got dtype {dtype}."
        raise TypeError(msg)


MAX_GRADE = 2**53
"""The largest grade accepted: grades are read as 64-bit integers and as doubles."""


def fresh_name(base: str, taken: Iterable[str]) -> str:
    """A column name like ``base`` that none of ``taken`` has: internal columns added to
    a user's frame never meet the user's own, whatever those are called.

    Examples
    --------
    >>> fresh_name("__row", ["query", "__row", "__row_1"])
    '__row_2'
    """
    names = set(taken)
    name, i = base, 0
    while name in names:
        i += 1
        name = f"{base}_{i}"
    return name


def key_hash(keys: Sequence[str]) -> pl.Expr:
    """A 64-bit hash of the row's ``keys``: equal keys, equal hashes."""
    hashed = pl.col(keys[0]).hash(seed=0)
    for i, key in enumerate(keys[1:], start=1):
        hashed = hashed ^ pl.col(key).hash(seed=i)
    return hashed


def distinct(hashes: pl.Series) -> bool:
    """Whether no two of ``hashes`` (an integer Series) are equal.

    Sorted on one thread, then each compared with the next. Polars' ``n_unique``
    takes as long alone (17 ms at 1M rows) but spreads over every thread, and the
    engine hashes and joins on a second thread while it ranks on the first: at
    1M rows the sort made a whole call 6-7% faster.

    Examples
    --------
    >>> distinct(pl.Series([3, 1, 2])), distinct(pl.Series([3, 1, 3]))
    (True, False)
    """
    ordered = hashes.sort(multithreaded=False).to_numpy()
    return not bool((ordered[1:] == ordered[:-1]).any())


def _all_distinct_by_hash(frame: pl.LazyFrame, keys: Sequence[str]) -> bool:
    """True when the rows' key hashes are all distinct, so the keys are too.

    Equal keys hash equally, so distinct hashes prove there is no duplicate; a
    collision proves nothing and the caller falls back to the exact check. One
    hash and one n_unique of a u64 column cost a fraction of a group_by on strings.
    """
    return bool(frame.select(key_hash(keys).n_unique() == pl.len()).collect().item())


def check_duplicates(frame: pl.LazyFrame, keys: Sequence[str], table: str) -> None:
    """Raise if ``keys`` are not unique in ``frame``, naming the first duplicated keys.

    Examples
    --------
    >>> run = pl.LazyFrame({"query": ["q", "q"], "doc": ["a", "a"], "score": [1.0, 2.0]})
    >>> check_duplicates(run, ["query", "doc"], "run")
    Traceback (most recent call last):
    ...
    ValueError: run has duplicate rows for (query='q', doc='a') (2 rows). trec_eval ...
    """
    if _all_distinct_by_hash(frame, keys):
        return
    count = fresh_name("__n", keys)
    counts = frame.group_by(keys).agg(pl.len().alias(count))
    dup = counts.filter(pl.col(count) > 1).head(3).collect()
    if dup.height:
        first = dup.row(0, named=True)
        where = ", ".join(f"{k}={first[k]!r}" for k in keys)
        msg = f"{table} has duplicate rows for ({where}) ({first[count]} rows)."
        if table == "run":
            msg += (
                " trec_eval refuses such runs; pass duplicates='keep_best'"
                " to keep the best-scored row."
            )
        raise ValueError(msg)


def _raise_first(
    frame: pl.DataFrame,
    problems: Sequence[tuple[pl.Expr, str]],
    table: str,
    *,
    offset: int = 0,
) -> None:
    """One pass counts every problem; only on failure find the first offending row.

    ``offset`` is the frame's first row number in the whole input (for batches).
    The frame is counted eagerly, on Polars' in-memory engine: a lazy run's batches
    are checked as they are read, inside the query that reads them, and a nested
    lazy collect there waited for the reader's threads (25 ms a batch of 524k rows,
    against 0.7 ms alone; 5% of a 10M-row scan).
    """
    if not problems:
        return
    counts = frame.select(cond.sum().alias(str(i)) for i, (cond, _) in enumerate(problems))
    for (condition, problem), count in zip(problems, counts.row(0), strict=True):
        if count:
            at = fresh_name("__row", frame.columns)
            hit = frame.lazy().with_row_index(at).filter(condition).head(1).collect()
            row = hit.row(0, named=True)
            index = row.pop(at) + offset
            msg = f"{table} row {index} (0-based) {problem} ({count} such rows): {row}."
            raise ValueError(msg)


def check_run_values(
    run: pl.DataFrame,
    *,
    ids: Sequence[str],
    score: str | None,
    rank: str | None,
    offset: int = 0,
) -> None:
    """Null ids, NaN or null scores, null ranks: raise naming the first bad row."""
    problems = [(pl.col(name).is_null(), f"has a null {name!r}") for name in ids]
    if score is not None:
        problems.append((pl.col(score).is_null(), f"has a null score {score!r}"))
        if run.schema[score].is_float():
            problems.append(
                (
                    pl.col(score).is_nan(),
                    f"has a NaN score {score!r} (NaN cannot be ranked; infinite scores are fine)",
                )
            )
    if rank is not None:
        problems.append((pl.col(rank).is_null(), f"has a null rank {rank!r}"))
    _raise_first(run, problems, "run", offset=offset)


def null_values(table: str, name: str, why: str = "every row needs its id") -> ValueError:
    """The refusal of a column's null values: rows without an id would be one more group
    of their own, or match nothing.

    Examples
    --------
    >>> print(null_values("log", "session"))
    log column 'session' has null values: every row needs its id (drop or fill them first).
    """
    return ValueError(f"{table} column {name!r} has null values: {why} (drop or fill them first).")


@overload
def checked_run_rows(
    run: pl.DataFrame, *, ids: Sequence[str], score: str | None, rank: str | None, table: str
) -> pl.DataFrame: ...
@overload
def checked_run_rows(
    run: pl.LazyFrame, *, ids: Sequence[str], score: str | None, rank: str | None, table: str
) -> pl.LazyFrame: ...
def checked_run_rows(
    run: pl.DataFrame | pl.LazyFrame,
    *,
    ids: Sequence[str],
    score: str | None,
    rank: str | None,
    table: str,
) -> pl.DataFrame | pl.LazyFrame:
    """``run`` with the checks of :func:`check_run_values` made as its rows are read,
    batch by batch inside the query (a LazyFrame stays lazy; no row number: a batch
    does not know its place): a null id, a null or NaN score, a null rank raises
    naming the column.

    Examples
    --------
    >>> run = pl.LazyFrame({"query": ["q", None], "doc": ["a", "b"], "score": [1.0, 2.0]})
    >>> checked_run_rows(run, ids=["query", "doc"], score="score", rank=None,
    ...                  table="recs").collect()
    Traceback (most recent call last):
    ...
    ValueError: recs column 'query' has null values: every row needs its id (drop or fill ...
    """

    def check(name: str, why: str | None, nan: bool) -> Any:
        def checked(values: pl.Series) -> pl.Series:
            if values.null_count() or (nan and bool(values.is_nan().any())):
                if why is None:
                    raise null_values(table, name)
                msg = f"{table} column {name!r} has {why} (drop or fill them first)."
                raise ValueError(msg)
            return values

        return checked

    schema = run.collect_schema()
    columns: list[tuple[str, str | None, bool]] = [(name, None, False) for name in ids]
    if score is not None:
        nan = schema[score].is_float()
        what = "null or NaN scores (NaN cannot be ranked)" if nan else "null scores"
        columns.append((score, what, nan))
    if rank is not None:
        columns.append((rank, "null ranks", False))
    return run.with_columns(
        pl.col(name).map_batches(check(name, why, nan), return_dtype=schema[name],
                                 is_elementwise=True)
        for name, why, nan in columns
    )  # fmt: skip


def check_qrels_values(
    qrels: pl.DataFrame,
    *,
    ids: Sequence[str],
    relevance: str,
    offset: int = 0,
    fractional: bool = False,
) -> None:
    """Null ids or grades, grades that are not integers: raise naming the first bad row.

    ``offset`` is the frame's first row number in the whole input (for batches).
    ``fractional`` lets finite grades with a fraction through (``evaluate``: the
    measures that read grades as gains take them).
    """
    problems = [(pl.col(name).is_null(), f"has a null {name!r}") for name in ids]
    problems.append((pl.col(relevance).is_null(), f"has a null grade {relevance!r}"))
    dtype = qrels.schema[relevance]
    grade = pl.col(relevance)
    if dtype.is_float():
        bad = grade.is_nan() | grade.is_infinite()
        what = "that is not a finite number" if fractional else "that is not an integer"
        if not fractional:
            bad = bad | (grade != grade.round(0))
        problems.append((bad.fill_null(False), f"has a grade {relevance!r} {what}"))
    if dtype.is_float() or dtype in (pl.UInt64, pl.Int128, pl.UInt128):
        within = grade.is_between(-MAX_GRADE, MAX_GRADE) | grade.is_nan() | grade.is_infinite()
        problems.append(
            (
                (~within).fill_null(False),
                f"has a grade {relevance!r} beyond +-{MAX_GRADE:.0e} (grades are small integers)",
            )
        )
    _raise_first(qrels, problems, "qrels", offset=offset)


def check_output_names(keys: Sequence[str], measures: Sequence[str]) -> None:
    """Raise when a key column would share its name with a measure's output column."""
    clash = sorted(set(keys) & set(measures))
    if clash:
        msg = (
            f"The column {clash[0]!r} of the input has the name of a measure's output "
            f"column; rename it first."
        )
        raise ValueError(msg)


def check_judged_values(
    table: pl.DataFrame, *, keys: Sequence[str], rank: str, relevance: str, offset: int = 0
) -> None:
    """A pre-judged table: ranks integers >= 1, grades integers (two rows at one rank are
    found when the table is ranked, see :func:`polars_rankeval.engine.select.judged_from_table`).

    Null ranks (judged but not shown) and null grades (shown but not judged)
    are allowed, as in the table :func:`polars_rankeval.judge` returns. ``offset``
    is the table's first row number in the whole input (for batches).

    Examples
    --------
    >>> log = pl.DataFrame({"query": ["u", "u"], "rank": [0, 1], "relevance": [1, 0]})
    >>> check_judged_values(log, keys=["query"], rank="rank", relevance="relevance")
    Traceback (most recent call last):
    ...
    ValueError: judged row 0 (0-based) has a rank 'rank' below 1 (ranks start at 1; ...
    """
    dtype = table.schema[rank]
    if not dtype.is_integer() and not dtype.is_float():
        msg = f"judged column {rank!r} must hold integer ranks (1 = top). Got dtype {dtype}."
        raise TypeError(msg)
    r = pl.col(rank)
    problems = [(pl.col(k).is_null(), f"has a null {k!r}") for k in keys]
    if dtype.is_float():
        whole = (r.is_nan() | r.is_infinite() | (r != r.round(0))).fill_null(False)
        problems.append((whole, f"has a rank {rank!r} that is not an integer"))
    problems.append(
        (
            (r < 1).fill_null(False),
            f"has a rank {rank!r} below 1 (ranks start at 1; for 0-based logs pass "
            f"pl.col({rank!r}) + 1)",
        )
    )
    if table.schema[relevance].is_float():
        grade = pl.col(relevance)
        fractional = grade.is_nan() | grade.is_infinite() | (grade != grade.round(0))
        problems.append(
            (fractional.fill_null(False), f"has a grade {relevance!r} that is not an integer")
        )
    _raise_first(table, problems, "judged", offset=offset)


def check_n_rel(
    table: pl.DataFrame, *, keys: Sequence[str], relevance: str, n_rel: str, rel_level: int
) -> None:
    """A pre-judged table's ``n_rel`` (|R| of each ranking): one value per ranking, not
    negative, and not below the ranking's relevant rows (grade >= ``rel_level``, shown
    or not), which are relevant documents of it. Null: counted from the rows.

    ``table`` holds whole rankings (a batch of a lazy table may not: check its pieces).

    Examples
    --------
    >>> log = pl.DataFrame({"query": ["u", "u"], "rank": [1, 2], "relevance": [1, 1],
    ...                     "n_rel": [1, 1]})
    >>> check_n_rel(log, keys=["query"], relevance="relevance", n_rel="n_rel", rel_level=1)
    Traceback (most recent call last):
    ...
    ValueError: judged column 'n_rel' is 1 for ranking {'query': 'u'}, which has 2 relevant ...
    """
    grade = pl.col(relevance).cast(pl.Int64)
    per_ranking = table.group_by(keys, maintain_order=True).agg(
        pl.col(n_rel).min().alias("low"),
        pl.col(n_rel).max().alias("high"),
        pl.col(n_rel).null_count().alias("nulls"),
        pl.len().alias("rows"),
        (grade >= rel_level).sum().alias("relevant"),
    )
    problems = [
        (
            (pl.col("low") != pl.col("high")) | pl.col("nulls").is_between(1, pl.col("rows") - 1),
            "varies within ranking {where} ({low} to {high}, nulls: {nulls}): give each "
            "ranking one |R|",
        ),
        (pl.col("low") < 0, "is {low} for ranking {where}: |R| cannot be negative"),
        (
            pl.col("low") < pl.col("relevant"),
            "is {low} for ranking {where}, which has {relevant} relevant rows (relevance "
            f"{relevance!r} >= {rel_level}): |R| counts every relevant document, shown or not",
        ),
    ]
    for bad, text in problems:
        found = per_ranking.filter(bad.fill_null(False))
        if found.height:
            row = found.row(0, named=True)
            where = {k: row[k] for k in keys}
            msg = f"judged column {n_rel!r} " + text.format(where=where, **row)
            more = f" ({found.height} rankings so)" if found.height > 1 else ""
            raise ValueError(msg + more + ".")


@contextmanager
def where_named(where: str | None) -> Iterator[None]:
    """Add ``where`` (a file, a piece) to the message of a ValueError raised inside.

    Examples
    --------
    >>> with where_named("part-0.parquet"):
    ...     raise ValueError("run has a null 'doc' at row 3.")
    Traceback (most recent call last):
    ...
    ValueError: run has a null 'doc' at row 3. (in part-0.parquet)
    """
    try:
        yield
    except ValueError as err:
        if where is None:
            raise
        raise ValueError(f"{err} (in {where})") from None
