"""Read, scan and write TREC run and qrels files.

A run file has six whitespace-separated fields per line,
``qid Q0 docno rank score tag``; a qrels file has four, ``qid iter docno rel``.
Fields may be separated by any run of whitespace (space, tab, ``\r``, ``\v``,
``\f``: C's ``isspace``, which is what trec_eval splits on), lines may start or
end with whitespace, and blank lines are skipped. Files compressed with gzip (or
any codec Polars detects) are read as they are.

As trec_eval 10.0 reads them:

* a line whose first non-blank character is ``#`` is a comment and is skipped
  (a ``#`` inside a field, as in ``msmarco_doc_00#4``, is data);
* in a run file, text after the sixth field is ignored (trec_eval's own
  ``results.trunc`` has it); a qrels line must have exactly four fields;
* a grade or rank with a zero fraction (``1.0``, ``2.``) is the integer
  (trec_eval reads grades with C's ``atol`` and skips the rank field); a
  grade or rank with another fraction or an exponent (``1.5``, ``1e2``,
  which ``atol`` would cut to 1) is refused as malformed.

A path that names a directory raises :class:`IsADirectoryError`; a path that
is not a regular file (``/dev/stdin``, a named pipe) is read through Python,
since Polars reads such a path as empty. A file with no data lines reads as an
empty frame; :func:`require_data` turns that into an error naming the file.

The readers are built on :func:`polars.scan_lines` and vectorised string
expressions, so a scan is lazy and fast: nothing is read until the frame is
collected. A malformed line (wrong number of fields, a score that is not a
number, a rank or grade that is not an integer) raises a :class:`ValueError`
that names the file, the 1-based line number and the line's text. The plan
only flags malformed lines; the two entry points raise at different times:

* ``scan_*`` check each batch inside the plan, as it is read, so only the
  lines a query reads are checked;
* ``read_*`` collect the whole file with its flags and raise afterwards for
  the file's first malformed line; without a Python call per batch in the
  plan they are about a quarter faster than collecting a scan.

Query and document ids are always kept as strings (``"0301"`` stays
``"0301"``); the run's ``tag`` becomes the ``system`` column, so a file that
holds several runs scores all of them in one call to
:func:`polars_rankeval.evaluate`.
"""

from __future__ import annotations

import glob
import gzip
import io
import zlib
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import BinaryIO, Literal, TypeAlias

import polars as pl

from polars_rankeval._typing import PolarsFrame
from polars_rankeval.inputs import run_keys
from polars_rankeval.options import Options
from polars_rankeval.ranking import rank_rows
from polars_rankeval.validation import (
    check_choice,
    check_columns,
    check_duplicates,
    check_score_dtype,
    fresh_name,
    system_column,
)

Source: TypeAlias = str | Path | bytes
"""A path to a (possibly gzip-compressed) file, or the file's bytes."""

Encoding: TypeAlias = Literal["utf-8", "latin-1"]
"""How a TREC text file's bytes are read: as UTF-8 text (the default), or ``latin-1``:
each byte one character (U+0000-U+00FF), so that any bytes are read and ids compare
as their bytes do, as trec_eval's ``strcmp`` compares them."""


class NotUtf8Error(ValueError):
    """A TREC text file that is not UTF-8 text (``encoding="latin-1"`` reads it)."""


_LINE = "__line"
_LINENO = "__lineno"
_FIELDS = "__fields"
_PROBLEM = "__problem"
_BAD = "__bad"
_MAX_SHOWN = 200
_OTHER_SPACES = r"[\t\r\x0B\x0C]"
"""A regex class of the C ``isspace`` characters other than space and newline."""


@dataclass(frozen=True)
class _Format:
    """One TREC file layout: its field names and which fields are typed."""

    kind: str
    fields: tuple[str, ...]
    layout: str
    floats: tuple[str, ...] = ()
    ints: tuple[str, ...] = ()
    keep: tuple[str, ...] = ()
    extra_fields: bool = False
    """Whether fields after the last one are allowed (and ignored)."""


_RUN = _Format(
    kind="run",
    fields=("query", "q0", "doc", "rank", "score", "system"),
    layout="qid Q0 docno rank score tag",
    floats=("score",),
    ints=("rank",),
    keep=("query", "doc", "rank", "score", "system"),
    extra_fields=True,
)
_QRELS = _Format(
    kind="qrels",
    fields=("query", "iteration", "doc", "relevance"),
    layout="qid iter docno rel",
    ints=("relevance",),
    keep=("query", "doc", "relevance"),
)
_WHAT = {"rank": "an integer rank", "score": "a number", "relevance": "an integer grade"}


_GZIP_MAGIC = b"\x1f\x8b"


def _files(source: Source) -> list[Source]:
    """The files a source names: a glob pattern's matches (sorted), else the source itself."""
    if isinstance(source, bytes) or not glob.has_magic(str(source)) or Path(source).exists():
        return [source]
    found = sorted(p for p in glob.glob(str(source)) if Path(p).is_file())
    if not found:
        msg = f"{source}: no file matches this pattern"
        raise FileNotFoundError(msg)
    return list(found)


def _source_name(source: Source, name: str | None = None) -> str:
    if name is not None:
        return name
    return "<bytes>" if isinstance(source, bytes) else str(source)


def _wrong_count(fmt: _Format) -> pl.Expr:
    """The line has too few fields (or too many, where extra fields are not allowed)."""
    n = pl.col(_FIELDS).list.len()
    return n < len(fmt.fields) if fmt.extra_fields else n != len(fmt.fields)


def _problem(fmt: _Format) -> pl.Expr:
    """Why a line is malformed (a short text), or null when it is fine."""
    n = pl.col(_FIELDS).list.len()
    count = pl.format(f"expected {len(fmt.fields)} fields ({fmt.layout}), found {{}}", n)
    problems = [pl.when(_wrong_count(fmt)).then(count)]
    for name in _typed(fmt):
        field = pl.col(_FIELDS).list.get(_index(fmt, name), null_on_oob=True)
        problems.append(
            pl.when(_invalid(fmt, name)).then(pl.format(f"{name} {{}} is not {_WHAT[name]}", field))
        )
    return pl.coalesce(problems)  # the first that applies


def _is_bad(fmt: _Format) -> pl.Expr:
    """Whether a line is malformed: true exactly where :func:`_problem` is not null."""
    return pl.any_horizontal(_wrong_count(fmt), *(_invalid(fmt, name) for name in _typed(fmt)))


def _typed(fmt: _Format) -> tuple[str, ...]:
    """The typed fields, in the order :func:`_problem` reports them."""
    return (*fmt.ints, *fmt.floats)


def _invalid(fmt: _Format, name: str) -> pl.Expr:
    """Whether a typed field failed to parse (a null cast, or NaN for a float)."""
    bad = pl.col(name).is_null()
    return bad | pl.col(name).is_nan() if name in fmt.floats else bad


def _index(fmt: _Format, name: str) -> int:
    return fmt.fields.index(name)


def _describe(bad: pl.DataFrame, *, name: str, fmt: _Format) -> ValueError:
    """A ValueError naming the first of some malformed rows of :func:`_parse`."""
    row = bad.head(1).with_columns(_problem(fmt).alias(_PROBLEM)).row(0, named=True)
    text = row[_LINE]
    shown = text if len(text) <= _MAX_SHOWN else text[:_MAX_SHOWN] + "..."
    return ValueError(f"{name}, line {row[_LINENO]}: {row[_PROBLEM]}: {shown!r}")


def _check(rows: pl.Series, *, data: str | bytes, name: str, fmt: _Format) -> pl.Series:
    """All-true filter mask, or a ValueError naming the file's first malformed line.

    Batches may be checked in any order (the streaming engine runs them in
    parallel), so a batch that holds a malformed line looks for the first one
    of the whole file, up to its own: the error is the same on every run.
    """
    frame = rows.struct.unnest()
    if frame[_BAD].any():
        here = frame.filter(pl.col(_BAD)).head(1)
        first = _parse(data, fmt).filter(pl.col(_BAD) & (pl.col(_LINENO) <= here[_LINENO][0]))
        raise _describe(first.head(1).collect(), name=name, fmt=fmt)
    return pl.repeat(True, rows.len(), eager=True)


def _split_fields(line: pl.Expr) -> pl.Expr:
    """Split on runs of ASCII whitespace (C ``isspace``, as trec_eval does); no empty fields.

    One regex replace of the other whitespace characters by spaces, then a
    literal split; the regex replace costs about a third of four literal ones.
    """
    spaced = line.str.replace_all(_OTHER_SPACES, " ")
    return spaced.str.split(" ").list.eval(pl.element().filter(pl.element() != ""))


_ZERO_FRACTION = r"^([+-]?[0-9]+)\.0*$"


def _integer(field: pl.Expr) -> pl.Expr:
    """An integer field as an Int64, null if it is not one; ``1.0`` and ``2.`` are integers.

    trec_eval reads a grade with C's ``atol`` (``1.0`` is 1) and skips the
    rank field: a zero fraction is read, any other fraction (``1.5``, which
    ``atol`` would cut to 1) or exponent (``1e2``, read as 1) is left null, to
    be named as a malformed line.

    Examples
    --------
    >>> texts = pl.Series(["1", "+2", "1.0", "-3.", "1.5", "1e2", "x"])
    >>> pl.select(_integer(pl.lit(texts))).to_series().to_list()
    [1, 2, 1, -3, None, None, None]
    """
    plain = field.cast(pl.Int64, strict=False)
    fraction = field.str.replace(_ZERO_FRACTION, "${1}").cast(pl.Int64, strict=False)
    return pl.when(plain.is_null()).then(fraction).otherwise(plain)  # 8x faster than fraction


def _readable(source: Source, name: str) -> str | bytes:
    """What :func:`polars.scan_lines` is given: a regular file's path, else bytes.

    A directory raises :class:`IsADirectoryError` (Polars would read it as an
    empty dataset); ``/dev/stdin``, a named pipe or another special file is
    read here, since Polars reads such a path as empty. A gzip stream that
    ends early (a truncated download) is refused, naming the file: its
    lines up to the cut would otherwise be read as the whole file.
    """
    if isinstance(source, bytes):
        _check_gzip_stream(io.BytesIO(source), name)
        return source
    path = Path(source)
    if path.is_dir():
        msg = f"{source}: is a directory, not a TREC file"
        raise IsADirectoryError(msg)
    if path.exists() and not path.is_file():
        data = path.read_bytes()
        _check_gzip_stream(io.BytesIO(data), name)
        return data
    if path.is_file():
        with path.open("rb") as stream:
            _check_gzip_stream(stream, name)
    return str(source)


def _check_gzip_stream(stream: BinaryIO, name: str) -> None:
    """Raise a ValueError naming the file if it is gzip data that is truncated or corrupt.

    The stream is decompressed in 1 MiB chunks and the output dropped: memory
    stays small whatever the file's size (the one cost is the CPU of a second
    decompression, for gzip files only).
    """
    head = stream.read(2)
    if head != _GZIP_MAGIC:
        return
    decompressor = zlib.decompressobj(wbits=31)
    pending = head
    try:
        while True:
            chunk = pending + stream.read(1 << 20)
            pending = b""
            if not chunk:
                break
            decompressor.decompress(chunk, 0)
            while decompressor.eof and decompressor.unused_data:  # another gzip member
                rest = decompressor.unused_data
                decompressor = zlib.decompressobj(wbits=31)
                decompressor.decompress(rest, 0)
    except zlib.error as exc:
        msg = f"{name}: corrupt gzip data ({exc}); the file cannot be read"
        raise ValueError(msg) from None
    if not decompressor.eof:
        msg = f"{name}: the gzip data ends early (a truncated file?); the file cannot be read"
        raise ValueError(msg)


def _parse(data: str | bytes, fmt: _Format) -> pl.LazyFrame:
    """The data lines (not blank, not ``#`` comments) of a :func:`_readable`
    source, split and typed, with their number and a ``__bad`` flag."""
    fields = pl.col(_FIELDS)
    wanted = {*fmt.keep, *_typed(fmt)}
    lines = pl.scan_lines(data, name=_LINE, row_index_name=_LINENO, row_index_offset=1)
    return (
        lines.with_columns(_split_fields(pl.col(_LINE)).alias(_FIELDS))
        .filter((fields.list.len() > 0) & ~fields.list.first().str.starts_with("#"))
        .with_columns(
            fields.list.get(i, null_on_oob=True).alias(col)
            for i, col in enumerate(fmt.fields)
            if col in wanted
        )
        .with_columns(
            *(pl.col(c).cast(pl.Float64, strict=False) for c in fmt.floats),
            *(_integer(pl.col(c)) for c in fmt.ints),
        )
        .with_columns(_is_bad(fmt).alias(_BAD))
    )


def _scan(source: Source, fmt: _Format, encoding: Encoding) -> pl.LazyFrame:
    """The lazy reader: each batch is checked inside the plan, as it is read; a glob's
    files one after another, each error naming its own file and line."""
    check_choice("encoding", encoding, Encoding)
    files = _files(source)
    if len(files) > 1:
        return pl.concat([_scan_file(f, fmt, encoding) for f in files])
    return _scan_file(files[0], fmt, encoding)


def _scan_file(source: Source, fmt: _Format, encoding: Encoding) -> pl.LazyFrame:
    name = _source_name(source)
    data = _as_utf8(_readable(source, name), encoding)
    check = pl.struct(_LINENO, _LINE, _FIELDS, *_typed(fmt), _BAD).map_batches(
        partial(_check, data=data, name=name, fmt=fmt),
        return_dtype=pl.Boolean,
        is_elementwise=True,
    )
    return _parse(data, fmt).filter(check).select(fmt.keep)


def _utf8_error(source: str | bytes, name: str) -> NotUtf8Error | None:
    """A :class:`NotUtf8Error` naming the first line that is not UTF-8 (None if all
    lines are)."""
    data = source if isinstance(source, bytes) else Path(source).read_bytes()
    if data[:2] == _GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError):
            return None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        lineno = data.count(b"\n", 0, exc.start) + 1
        start = data.rfind(b"\n", 0, exc.start) + 1
        end = data.find(b"\n", exc.start)
        text = data[start : end if end >= 0 else len(data)][:_MAX_SHOWN]
        return NotUtf8Error(
            f"{name}, line {lineno}: not valid UTF-8 text: {text!r} (encoding='latin-1' "
            f"reads any bytes, each byte one character, as trec_eval does)"
        )
    return None


def _first_paragraph(exc: Exception) -> str:
    return str(exc).strip().split("\n\n")[0]


def _read(
    source: Source, fmt: _Format, name: str | None = None, encoding: Encoding = "utf-8"
) -> pl.DataFrame:
    """The eager reader (a glob's files one after another, each named in its errors)."""
    check_choice("encoding", encoding, Encoding)
    files = _files(source)
    if len(files) > 1:
        return pl.concat([_read_file(f, fmt, encoding=encoding) for f in files])
    return _read_file(files[0], fmt, name, encoding)


def _as_utf8(data: str | bytes, encoding: Encoding) -> str | bytes:
    """What the parser reads (:func:`_readable`'s path or bytes): as given for UTF-8;
    for ``latin-1``, the (decompressed) bytes decoded one byte a character and written
    as UTF-8. UTF-8 keeps the order of the characters, so ids still compare as their
    bytes do.

    Examples
    --------
    >>> _as_utf8(b"q d\\xe9", "latin-1").decode()
    'q dé'
    """
    if encoding == "utf-8":
        return data
    raw = data if isinstance(data, bytes) else Path(data).read_bytes()
    if raw[:2] == _GZIP_MAGIC:
        raw = gzip.decompress(raw)
    return raw.decode("latin-1").encode("utf-8")


def _read_file(
    source: Source, fmt: _Format, name: str | None = None, encoding: Encoding = "utf-8"
) -> pl.DataFrame:
    """One file: bad lines are only flagged in the plan and raised after it.

    The in-plan check of :func:`_scan` made a two-million-line run take
    0.65 s instead of 0.49 s, so the whole file is collected with its
    ``__bad`` flags first; a malformed line is then parsed again on its own
    to describe it.
    """
    name = _source_name(source, name)
    data = _as_utf8(_readable(source, name), encoding)
    try:
        frame = _parse(data, fmt).select(*fmt.keep, _LINENO, _BAD).collect()
    except (FileNotFoundError, PermissionError, IsADirectoryError):
        raise
    except (pl.exceptions.PolarsError, OSError) as exc:
        # Corrupt compressed data surfaces as OSError, bad text as ComputeError.
        if isinstance(exc, pl.exceptions.ComputeError) and "utf" in str(exc).lower():
            utf8 = _utf8_error(data, name)
            if utf8 is not None:
                raise utf8 from None
        detail = _first_paragraph(exc).splitlines()[0] or type(exc).__name__
        msg = f"{name}: cannot read as a TREC {fmt.kind} file: {detail}"
        raise ValueError(msg) from None
    if frame[_BAD].any():
        lineno = frame.filter(pl.col(_BAD))[_LINENO][0]
        bad = _parse(data, fmt).filter(pl.col(_LINENO) == lineno).collect()
        raise _describe(bad, name=name, fmt=fmt)
    return frame.select(fmt.keep)


def scan_trec_run(source: Source, *, encoding: Encoding = "utf-8") -> pl.LazyFrame:
    """Lazily scan a TREC run file: ``qid Q0 docno rank score tag`` per line.

    Parameters
    ----------
    source
        Path to the run file (plain or gzip-compressed), or its bytes.
    encoding
        ``"utf-8"`` (default) or ``"latin-1"`` (any bytes, each byte one character, as
        for :func:`read_trec_run`). A ``"latin-1"`` file is read into memory and
        turned into UTF-8 when the scan is made; its lines are parsed and checked at
        collection, as a UTF-8 file's are.

    Returns
    -------
    pl.LazyFrame
        ``query`` (str), ``doc`` (str), ``rank`` (i64), ``score`` (f64) and
        ``system`` (str, the run tag), in file order. The ``Q0`` field is dropped.

    Notes
    -----
    Nothing is read until the frame is collected. A malformed line raises a
    :class:`ValueError` at collection time naming the file, the line number and
    the text; only lines that the query reads are checked (``head(10)`` checks
    ten lines). A file that is not UTF-8 text, scanned as ``"utf-8"``, raises
    Polars' ``ComputeError`` ("invalid utf8") at collection, without a line:
    :func:`read_trec_run` names the line; pass ``encoding="latin-1"`` for such a file.

    Examples
    --------
    >>> import polars_rankeval as pr
    >>> lf = pr.scan_trec_run(b"301 Q0 d1 1 2.5 bm25\\n301\\tQ0\\td2\\t2\\t1.5\\tbm25\\n")
    >>> lf.collect()
    shape: (2, 5)
    ┌───────┬─────┬──────┬───────┬────────┐
    │ query ┆ doc ┆ rank ┆ score ┆ system │
    │ ---   ┆ --- ┆ ---  ┆ ---   ┆ ---    │
    │ str   ┆ str ┆ i64  ┆ f64   ┆ str    │
    ╞═══════╪═════╪══════╪═══════╪════════╡
    │ 301   ┆ d1  ┆ 1    ┆ 2.5   ┆ bm25   │
    │ 301   ┆ d2  ┆ 2    ┆ 1.5   ┆ bm25   │
    └───────┴─────┴──────┴───────┴────────┘
    """
    return _scan(source, _RUN, encoding)


def read_trec_run(
    source: Source, *, name: str | None = None, encoding: Encoding = "utf-8"
) -> pl.DataFrame:
    """Read a TREC run file: ``qid Q0 docno rank score tag`` per line.

    The eager form of :func:`scan_trec_run`: every line is checked. Lines
    starting with ``#`` are comments; text after the sixth field is ignored.

    Parameters
    ----------
    source
        Path to the run file (plain or gzip-compressed), or its bytes.
    name
        What error messages call the source (default: the path, or
        ``<bytes>``); e.g. ``"<stdin>"`` for bytes read from standard input.
    encoding
        ``"utf-8"`` (default): the file is UTF-8 text, else a :class:`NotUtf8Error` (a
        ValueError) names the first line that is not. ``"latin-1"``: any bytes, each
        byte one character (U+0000-U+00FF), so that ids compare as their bytes do, as
        trec_eval reads them (the ``eval`` command reads every input so when one is not
        UTF-8).

    Returns
    -------
    pl.DataFrame
        ``query`` (str), ``doc`` (str), ``rank`` (i64), ``score`` (f64) and
        ``system`` (str, the run tag), in file order.

    Raises
    ------
    ValueError
        For a malformed line, naming the file, the 1-based line number and the
        text: fewer than six fields, a rank that is not an integer, a score
        that is not a number (``nan`` included); or for bytes that are not
        UTF-8 text.
    IsADirectoryError
        If ``source`` names a directory.

    Examples
    --------
    >>> import polars_rankeval as pr
    >>> pr.read_trec_run(b"301 Q0 d1 1 2.5 bm25\\n  302  Q0 d7 1 -0.5e1 bm25  \\n")
    shape: (2, 5)
    ┌───────┬─────┬──────┬───────┬────────┐
    │ query ┆ doc ┆ rank ┆ score ┆ system │
    │ ---   ┆ --- ┆ ---  ┆ ---   ┆ ---    │
    │ str   ┆ str ┆ i64  ┆ f64   ┆ str    │
    ╞═══════╪═════╪══════╪═══════╪════════╡
    │ 301   ┆ d1  ┆ 1    ┆ 2.5   ┆ bm25   │
    │ 302   ┆ d7  ┆ 1    ┆ -5.0  ┆ bm25   │
    └───────┴─────┴──────┴───────┴────────┘
    >>> pr.read_trec_run(b"301 Q0 d1 1 2.5 bm25\\n301 Q0 d2 2 high bm25\\n")
    Traceback (most recent call last):
    ...
    ValueError: <bytes>, line 2: score high is not a number: '301 Q0 d2 2 high bm25'
    >>> run = pr.read_trec_run(b"# a comment\\n301 Q0 d1 1 2.5 bm25 more text\\n")
    >>> run["doc"].to_list()
    ['d1']
    """
    return _read(source, _RUN, name, encoding)


def scan_trec_qrels(source: Source, *, encoding: Encoding = "utf-8") -> pl.LazyFrame:
    """Lazily scan a TREC qrels file: ``qid iter docno rel`` per line.

    Parameters
    ----------
    source
        Path to the qrels file (plain or gzip-compressed), or its bytes.
    encoding
        ``"utf-8"`` (default) or ``"latin-1"``, as for :func:`scan_trec_run`.

    Returns
    -------
    pl.LazyFrame
        ``query`` (str), ``doc`` (str), ``relevance`` (i64); the ``iter``
        field is dropped. Malformed lines (and text that is not UTF-8 under
        ``"utf-8"``) raise at collection, as for :func:`scan_trec_run`.

    Examples
    --------
    >>> import polars_rankeval as pr
    >>> pr.scan_trec_qrels(b"301 0 d1 2\\n301 0 d2 -1\\n").collect()
    shape: (2, 3)
    ┌───────┬─────┬───────────┐
    │ query ┆ doc ┆ relevance │
    │ ---   ┆ --- ┆ ---       │
    │ str   ┆ str ┆ i64       │
    ╞═══════╪═════╪═══════════╡
    │ 301   ┆ d1  ┆ 2         │
    │ 301   ┆ d2  ┆ -1        │
    └───────┴─────┴───────────┘
    """
    return _scan(source, _QRELS, encoding)


def read_trec_qrels(
    source: Source, *, name: str | None = None, encoding: Encoding = "utf-8"
) -> pl.DataFrame:
    """Read a TREC qrels file: ``qid iter docno rel`` per line.

    Lines starting with ``#`` are comments.

    Parameters
    ----------
    source
        Path to the qrels file (plain or gzip-compressed), or its bytes.
    name
        What error messages call the source (default: the path, or ``<bytes>``).
    encoding
        ``"utf-8"`` (default) or ``"latin-1"``, as for :func:`read_trec_run`.

    Returns
    -------
    pl.DataFrame
        ``query`` (str), ``doc`` (str), ``relevance`` (i64).

    Raises
    ------
    ValueError
        For a malformed line (a wrong number of fields or a grade that is not
        an integer, such as ``1.5``; ``1.0`` is 1, as trec_eval reads it),
        naming the file, line number and text.

    Examples
    --------
    >>> import polars_rankeval as pr
    >>> pr.read_trec_qrels(b"301 0 d1 1\\n301 0 d2 yes\\n")
    Traceback (most recent call last):
    ...
    ValueError: <bytes>, line 2: relevance yes is not an integer grade: '301 0 d2 yes'
    """
    return _read(source, _QRELS, name, encoding)


def require_data(
    frame: pl.DataFrame, source: Source, kind: str, *, name: str | None = None
) -> None:
    """Raise unless a frame read from ``source`` has rows; the error names the file.

    The readers give an empty frame for an empty file (or one holding only
    blank and comment lines); a caller that needs data, such as the command
    line, calls this to say so in one line.

    Examples
    --------
    >>> import polars_rankeval as pr
    >>> require_data(pr.read_trec_run(b"# nothing yet\\n"), b"", "run", name="empty.run")
    Traceback (most recent call last):
    ...
    ValueError: empty.run: no data lines (the run file is empty or holds only blank ...
    """
    if frame.height == 0:
        msg = (
            f"{_source_name(source, name)}: no data lines (the {kind} file is empty or holds "
            "only blank and comment lines)"
        )
        raise ValueError(msg)


def _ranked_lines(
    run: pl.DataFrame, *, query: str, doc: str, score: str, system: str | None, tag: str
) -> pl.DataFrame:
    """The run in trec_eval order with ranks 1..n, rankings sorted by id, as the six TREC
    fields: ordered as
    :func:`polars_rankeval.rank_run` orders it (ties by doc id as strings, integer doc
    ids too), so that the rank column agrees with the order trec_eval reads."""
    by_rank, ranks = rank_rows(run, Options(query=query, doc=doc, score=score, system=system))
    tag_expr = pl.col(system).cast(pl.String) if system else pl.lit(tag)
    keys = run_keys(query, system)
    rank = fresh_name("__rk_rank", run.columns)
    ranked = run[by_rank].with_columns(pl.Series(rank, ranks, dtype=pl.UInt32))
    return ranked.sort(keys, maintain_order=True).select(
        pl.col(query).cast(pl.String).alias("query"),
        pl.lit("Q0").alias("q0"),
        pl.col(doc).cast(pl.String).alias("doc"),
        pl.col(rank).alias("rank"),
        pl.col(score).cast(_exact_score(run.schema[score])).alias("score"),
        tag_expr.alias("system"),
    )


_UNWRITABLE = r"[ \t\n\r\x0B\x0C\x00]"
"""What no id of a TREC file can hold: C's ``isspace`` characters (trec_eval's field
separators, the line end among them) and NUL (the end of a C string)."""


def _unwritable(text: pl.Series, *, first_field: bool) -> pl.Series:
    """Why each id cannot be written (null where it can): empty, whitespace or NUL, or,
    for the first field of a line, a leading ``#`` that makes the line a comment.

    Examples
    --------
    >>> ids = pl.Series(["a", "#a", "a b", ""])
    >>> for reason in _unwritable(ids, first_field=True):
    ...     print(reason)
    None
    starts with #, so trec_eval and read_trec_run would skip its lines as comments
    contains whitespace or NUL, which split a TREC line
    is empty
    """
    text_id = pl.col("id")
    checks = [
        (text_id.is_null(), "is null"),
        (text_id == "", "is empty"),
        (text_id.str.contains(_UNWRITABLE), "contains whitespace or NUL, which split a TREC line"),
    ]
    if first_field:
        checks.append(
            (
                text_id.str.starts_with("#"),
                "starts with #, so trec_eval and read_trec_run would skip its lines as comments",
            )
        )
    reasons = pl.coalesce([pl.when(bad).then(pl.lit(why)) for bad, why in checks])
    return pl.DataFrame({"id": text}).select(reasons).to_series()


def check_writable_ids(frame: pl.DataFrame, ids: dict[str, str], what: str) -> None:
    """Refuse the ids a TREC file cannot hold (``ids``: field name -> column, the first
    field of the line first): ids of :func:`_unwritable`. The error names the id, its
    column and its row.

    Examples
    --------
    >>> pool = pl.DataFrame({"query": [1], "doc": ["a b"]})
    >>> check_writable_ids(pool, {"query": "query", "doc": "doc"}, "pool")
    Traceback (most recent call last):
    ...
    ValueError: Cannot write a TREC pool: doc 'a b' (column 'doc', row 0) contains ...
    """
    for i, (field_name, column) in enumerate(ids.items()):
        reasons = _unwritable(frame[column].cast(pl.String), first_field=i == 0)
        bad = reasons.is_not_null()
        if bad.any():
            row = int(bad.arg_true()[0])
            msg = (
                f"Cannot write a TREC {what}: {field_name} "
                f"{frame[column].cast(pl.String)[row]!r} (column {column!r}, row {row}) "
                f"{reasons[row]}."
            )
            raise ValueError(msg)


def _check_writable(run: pl.DataFrame, ids: dict[str, str], score: str) -> None:
    """Refuse what a TREC run file cannot hold (``ids``: field name -> column, the query
    first): ids of :func:`_unwritable`, null or NaN scores. The error names the id, its
    column and its row."""
    check_writable_ids(run, ids, "run")
    values = run[score]
    if values.is_null().any() or (values.dtype.is_float() and values.is_nan().any()):
        msg = f"Cannot write a TREC run: the score column {score!r} holds null or NaN values."
        raise ValueError(msg)


def _exact_score(dtype: pl.DataType) -> pl.DataType:
    """The type a score is written as: integers and decimals as they are (their text is
    exact), anything else as a float64 (written with full precision)."""
    return dtype if dtype.is_integer() or dtype.is_decimal() else pl.Float64()


def _check_run_to_write(
    run: pl.DataFrame, *, query: str, doc: str, score: str, system: str | None
) -> None:
    """The columns a TREC run is written from: present, one role each, ids single values,
    a numeric score, one row per (system, query, doc) as trec_eval requires.

    Examples
    --------
    >>> run = pl.DataFrame({"system": ["a"], "doc": ["d"], "score": [1.0]})
    >>> _check_run_to_write(run, query="system", doc="doc", score="score", system="system")
    Traceback (most recent call last):
    ...
    ValueError: query='system' is also the system column (the tag): pass system=None ...
    """
    check_columns(run.schema, {"query": query, "doc": doc, "score": score}, "run")
    for option, column in (("query", query), ("doc", doc), ("score", score)):
        if column == system:
            msg = (
                f"{option}={column!r} is also the system column (the tag): pass system=None "
                f"(the tag then comes from tag=) or name another system column."
            )
            raise ValueError(msg)
    for column in (query, doc, *([system] if system else [])):
        if run.schema[column].is_nested():
            msg = (
                f"run column {column!r} is {run.schema[column]}: an id of a TREC line is one "
                f"value. Join the parts into one string first, e.g. pl.concat_str([...])."
            )
            raise TypeError(msg)
    check_score_dtype(run.schema, score)
    check_duplicates(run.lazy(), [*([system] if system else []), query, doc], "run to write")


def write_trec_run(
    run: PolarsFrame,
    path: str | Path,
    *,
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    system: str | None = "system",
    tag: str = "polars_rankeval",
    encoding: Encoding = "utf-8",
) -> None:
    """Write a run as a TREC run file (``qid Q0 docno rank score tag``).

    Rows are written ranking by ranking in trec_eval order (score descending,
    ties by doc id descending), numbered 1..n, so the file's rank column agrees
    with the order trec_eval reads. Float scores are written with full
    precision, so :func:`read_trec_run` gives the same frame back; integer
    and decimal scores are written exactly as they are (``9007199254740993``,
    ``0.10000000000000000002``). trec_eval and :func:`read_trec_run` read
    scores as float64 (C's ``atof``), so integers past 2**53, or decimals
    that differ past 17 significant digits, read back tied; the file itself
    holds them exactly. A path ending in ``.gz`` is gzip-compressed.

    Parameters
    ----------
    run
        ``query, doc, score`` (optionally ``system``); DataFrame or LazyFrame.
    path
        The file to write.
    query, doc, score, system
        Column names. The ``system`` column, when the run has it, becomes the
        tag; otherwise ``tag`` is used.
    tag
        The run tag when the run has no ``system`` column.
    encoding
        ``"utf-8"`` (default), or ``"latin-1"`` for ids read so
        (:func:`read_trec_run`): each character written back as its one byte.

    Raises
    ------
    ValueError
        Naming the id, its column and row, if an id or tag is null, empty or
        holds whitespace or NUL (which split a TREC line), or a query id starts
        with ``#`` (its lines would read back as comments, in trec_eval too);
        or if a score is null or NaN.

    Examples
    --------
    >>> import tempfile, pathlib, polars as pl
    >>> import polars_rankeval as pr
    >>> run = pl.DataFrame({"query": ["q1", "q1"], "doc": ["a", "b"], "score": [1.0, 2.0]})
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "my.run"
    >>> pr.write_trec_run(run, path, tag="demo")
    >>> print(path.read_text(), end="")
    q1 Q0 b 1 2.0 demo
    q1 Q0 a 2 1.0 demo
    """
    check_choice("encoding", encoding, Encoding)
    frame = run.lazy().collect()
    system = system_column(system, frame.columns)
    _check_run_to_write(frame, query=query, doc=doc, score=score, system=system)
    ids = {"query": query, "doc": doc} | ({"tag": system} if system else {})
    _check_writable(frame, ids, score)
    reason = None if system else _unwritable(pl.Series([tag]), first_field=False)[0]
    if reason is not None:
        msg = f"Cannot write a TREC run: tag {tag!r} {reason}."
        raise ValueError(msg)
    lines = _ranked_lines(frame, query=query, doc=doc, score=score, system=system, tag=tag)
    text = lines.write_csv(separator=" ", include_header=False, quote_style="never")
    data = text.encode(encoding)
    path = Path(path)
    if path.suffix == ".gz":
        data = gzip.compress(data)
    path.write_bytes(data)


__all__ = [
    "Encoding",
    "NotUtf8Error",
    "Source",
    "read_trec_qrels",
    "read_trec_run",
    "require_data",
    "scan_trec_qrels",
    "scan_trec_run",
    "write_trec_run",
]
