"""Delimited text parsed by pyarrow's multithreaded CSV reader, with pandas' ``read_csv`` semantics.

The CSV and Criteo readers read text this way whenever pyarrow can say what the options
say (:func:`text_syntax`); anything else goes through dask's pandas-based reader unchanged.

What the frames hold is defined by ``pandas.read_csv`` as tabflow has always called it, and
this module reproduces it:

- columns without a dtype get the dtype pandas infers from the first 10 rows of the first
  file that holds any (as dask's reader plans them), integers and booleans as their nullable
  dtypes; every block is then parsed with these dtypes;
- nulls are pandas' default null strings (``""``, ``"NA"``, ``"null"``, ``"nan"``, ...) plus
  ``na_values=``, in every column, strings included;
- files are split into byte ranges of about ``part_size`` bytes, each starting after a line
  break, with the same arithmetic as ``dask.dataframe.read_csv(blocksize=part_size)``;
  compressed files (``.gz``, ``.bz2``, ``.xz``, ``.zst``) are one partition each.

A block pyarrow refuses (a field it cannot convert, such as ``"+5"`` or ``"1.0"`` in an
integer column, a row with too few fields, which pandas fills with nulls, a whitespace-only
line) is parsed again by pandas with the same dtypes, so it reads exactly as before; what
pandas refuses too is an error naming the file and the column or line. A line with more
fields than the file has columns is always an error naming the file and the line (pandas
took the first field of a file's first such line as the row index, silently shifting the
columns).

Examples
--------
>>> import pathlib, tempfile
>>> from tabflow.io.readers import ReadOptions, read_csv
>>> path = pathlib.Path(tempfile.mkdtemp(), "x.csv")
>>> _ = path.write_text('id,name,n\\n1,"a, b",2.5\\n2,,\\n')
>>> frame = read_csv([str(path)], ReadOptions(cpu=True)).ddf.compute()
>>> frame.dtypes.astype(str).tolist(), frame["name"].tolist()
(['Int64', 'str', 'float64'], ['a, b', nan])
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import io
import re
import threading
from typing import Any, Iterator, Mapping, Sequence

import pandas as pd

from tabflow.backends import backend_for, get_backend
from tabflow.io.fs import filesystem, is_remote, local_path, open_file
from tabflow.io.memory import release_freed_memory
from tabflow.io.readers._shared import DatasetReadError, require_unique_names
from tabflow.schema import dtypes as dtype_names

__all__ = ["TextSyntax", "text_syntax", "read_text_ddf", "TextPartReader", "parse_hex_columns", "check_csv_header", "COMPRESSED_SUFFIXES"]

#: File name endings read as compressed text (one partition per file: no byte ranges).
COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz", ".zst")

# pandas' default null strings (``pandas.read_csv``'s ``na_values`` documentation).
_PANDAS_NULLS = (
    "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
    "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null",
)
# dask's dtype sample: the first 256,000 bytes of the first file, of which 10 rows are parsed.
_SAMPLE_BYTES = 256_000
_SAMPLE_ROWS = 10
# Options pyarrow expresses the way pandas means them (beyond sep, names, header, dtypes).
_EXPRESSIBLE = ("skiprows", "usecols", "quotechar", "quoting", "doublequote", "escapechar", "na_values", "encoding")
_UTF8 = ("utf-8", "utf8", "utf_8")
# pyarrow's own text blocks inside one partition: parsed by its thread pool in parallel.
_ARROW_BLOCK_BYTES = 4 << 20
# One large partition is read at a time in a process: pyarrow already keeps every core busy
# parsing it, and two read at once (dask's threads, the loader's prefetch) only hold twice the
# memory and contend in the kernel for fresh pages (measured on 2 cores: 2-4x the system time,
# up to 1.5x the wall time).
_LARGE_READ = threading.Lock()


@dataclasses.dataclass(frozen=True)
class TextSyntax:
    """How lines split into fields, in terms both ``pandas.read_csv`` and pyarrow express.

    Parameters
    ----------
    sep : str
        The one-character field separator.
    quotechar : str or None
        The quote character; None: quotes are ordinary characters (``csv.QUOTE_NONE``).
    doublequote : bool
        A doubled quote inside a quoted field is one quote.
    escapechar : str or None
        The character that escapes the next one.
    null_values : tuple of str
        Fields read as null (pandas' defaults plus ``na_values=``).
    extra_nulls : tuple of str
        The ``na_values=`` part of ``null_values`` (what pandas is told).
    skiprows : int
        Lines skipped at the start of every file.
    header : bool
        The first line (after ``skiprows`` and blank lines) names the columns.
    """

    sep: str = ","
    quotechar: str | None = '"'
    doublequote: bool = True
    escapechar: str | None = None
    null_values: tuple[str, ...] = _PANDAS_NULLS
    extra_nulls: tuple[str, ...] = ()
    skiprows: int = 0
    header: bool = True

    @property
    def quote_bytes(self) -> bytes | None:
        """The quote character as UTF-8 bytes (None: no quoting)."""
        return None if self.quotechar is None else self.quotechar.encode()

    def pandas_options(self) -> dict[str, Any]:
        """The same syntax as ``pandas.read_csv`` keyword arguments."""
        options: dict[str, Any] = {"sep": self.sep, "doublequote": self.doublequote, "escapechar": self.escapechar}
        if self.quotechar is None:
            options["quoting"] = csv.QUOTE_NONE
        else:
            options["quotechar"] = self.quotechar
        if self.extra_nulls:
            options["na_values"] = list(self.extra_nulls)
        return options

    def parse_options(self, quoted_line_breaks: bool) -> Any:
        """pyarrow's ``ParseOptions``; ``quoted_line_breaks``: quoted values may hold line breaks."""
        import pyarrow.csv as pcsv

        return pcsv.ParseOptions(
            delimiter=self.sep, quote_char=self.quotechar or False, double_quote=self.doublequote,
            escape_char=self.escapechar or False, newlines_in_values=quoted_line_breaks,
        )


def text_syntax(sep: str, names: Sequence[Any] | None, header: Any, extra: Mapping[str, Any]) -> TextSyntax | None:
    """The :class:`TextSyntax` of these ``read_csv`` options, or None when pyarrow cannot
    read them as pandas does (the caller then reads with pandas).

    Read by pyarrow: a one-character ``sep``; ``names`` of distinct strings; ``header`` of
    ``"infer"``, ``0`` (with ``names``: the line is replaced) or None with ``names``; and
    ``skiprows`` (an int), ``usecols`` (column names, without ``names``), ``quotechar``,
    ``quoting`` (``csv.QUOTE_MINIMAL`` or ``csv.QUOTE_NONE``), ``doublequote``, ``escapechar``,
    ``na_values`` (a string or a list of them) and ``encoding="utf-8"``. Anything else
    (``comment=``, ``thousands=``, ``skipinitialspace=``, ``lineterminator=``, a regex ``sep``,
    ``skiprows`` as a list, ``na_values`` as a dict, ...) is pandas' alone.

    Examples
    --------
    >>> from tabflow.io.readers._arrow_text import text_syntax
    >>> text_syntax("\\t", None, "infer", {"na_values": ["-"]}).null_values[-1]
    '-'
    >>> text_syntax(",", None, "infer", {"comment": "#"}) is None
    True
    """
    if set(extra) - set(_EXPRESSIBLE):
        return None
    if not isinstance(sep, str) or len(sep) != 1 or sep in "\r\n":
        return None
    if names is not None and not (all(isinstance(n, str) for n in names) and len(set(names)) == len(names)):
        return None
    if isinstance(header, str) and header == "infer":
        has_header = names is None
    elif header is None:
        if names is None:
            return None  # numbered columns (0, 1, ...): pandas names them with ints
        has_header = False
    elif isinstance(header, int) and not isinstance(header, bool) and header == 0:
        has_header = True
    else:
        return None
    skiprows = extra.get("skiprows") or 0
    usecols = extra.get("usecols")
    if isinstance(skiprows, bool) or not isinstance(skiprows, int) or skiprows < 0:
        return None
    if usecols is not None and (names is not None or isinstance(usecols, str) or not all(isinstance(c, str) for c in usecols)):
        return None
    quoting = extra.get("quoting", csv.QUOTE_MINIMAL)
    quotechar = extra.get("quotechar", '"')
    escapechar = extra.get("escapechar")
    doublequote = extra.get("doublequote", True)
    if quoting not in (csv.QUOTE_MINIMAL, csv.QUOTE_NONE) or not isinstance(doublequote, bool):
        return None
    for char in (quotechar, escapechar):
        if char is not None and not (isinstance(char, str) and len(char) == 1 and char != sep and char not in "\r\n"):
            return None
    if str(extra.get("encoding", "utf-8")).lower() not in _UTF8:
        return None
    na_values = extra.get("na_values")
    if na_values is None:
        extra_nulls: tuple[str, ...] = ()
    elif isinstance(na_values, str):
        extra_nulls = (na_values,)
    elif isinstance(na_values, (list, tuple, set, frozenset)) and all(isinstance(v, str) for v in na_values):
        extra_nulls = tuple(sorted(na_values))
    else:
        return None
    return TextSyntax(
        sep=sep, quotechar=None if quoting == csv.QUOTE_NONE else quotechar, doublequote=doublequote,
        escapechar=escapechar, null_values=_PANDAS_NULLS + extra_nulls, extra_nulls=extra_nulls,
        skiprows=skiprows, header=has_header,
    )


# --------------------------------------------------------------------------- planning
def read_text_ddf(
    files: Sequence[str], syntax: TextSyntax, part_size: int, backend: Any, names: Sequence[str] | None = None,
    dtypes: Mapping[str, str] | None = None, hex_columns: Sequence[str] = (), usecols: Sequence[str] | None = None,
    storage_options: Mapping[str, Any] | None = None,
):
    """A dask DataFrame over the text files and ``(reader, pieces)``, or None when a column's
    dtype is one pyarrow does not parse as pandas does (``float16``, ...: the caller reads
    with pandas).

    ``dtypes`` are canonical (nullable) dtypes of some columns; the others are inferred from a
    sample. ``hex_columns`` are read as strings and parsed to nullable int64.
    """
    compressions = [_compression(path) for path in files]
    sample_path, sample = _first_sample(files, compressions, storage_options)
    if names is None:
        if sample_path is None:
            raise DatasetReadError(
                f"CSV file(s) {list(files)[:3]} hold no header line to take the column names from: "
                "pass names=[...] (and header=None), or leave empty files out of the dataset"
            )
        check_csv_header(sample_path, syntax.sep, 0, compressions[files.index(sample_path)], {
            **syntax.pandas_options(), "skiprows": syntax.skiprows, "storage_options": storage_options,
        })
    read_dtypes = {**(dtypes or {}), **{name: dtype_names.STRING for name in hex_columns}}
    file_columns, planned = _plan_columns(sample_path or files[0], sample, syntax, names, read_dtypes, usecols, backend)
    if not all(_arrow_type(dtype) is not None for dtype in planned.values()):
        return None
    final = {name: ("Int64" if name in hex_columns else dtype) for name, dtype in planned.items()}
    pieces = []
    for path, compression in zip(files, compressions):
        pieces.extend(_pieces(path, compression, part_size, storage_options))
    if not pieces:  # every file empty: one empty partition
        pieces.append((files[0], 0, 0, True, None))
    reader = TextPartReader(
        backend.name, syntax, file_columns, planned, [n for n in hex_columns if n in planned], storage_options,
        check_header=names is None,
    )
    ddf = backend.from_map_ddf(reader, pieces, backend.empty_frame(final), "tabflow-read-text")
    return ddf, (reader, pieces)


def _compression(path: str) -> str | None:
    from fsspec.utils import infer_compression

    return infer_compression(path) if path.lower().endswith(COMPRESSED_SUFFIXES) else None


def _first_sample(
    files: Sequence[str], compressions: Sequence[str | None], storage_options: Mapping[str, Any] | None
) -> tuple[str | None, bytes]:
    """The first file holding any text and its first ``_SAMPLE_BYTES`` (to a line break)."""
    for path, compression in zip(files, compressions):
        with _open_text(path, compression, storage_options) as handle:
            sample = handle.read(_SAMPLE_BYTES)
            while sample and not sample.endswith(b"\n"):
                more = handle.read(_SAMPLE_BYTES)
                if not more:
                    break
                cut = more.find(b"\n")
                sample += more if cut < 0 else more[: cut + 1]
        if sample.strip():
            return path, sample
    return None, b""


def _plan_columns(
    sample_path: str, sample: bytes, syntax: TextSyntax, names: Sequence[str] | None, dtypes: Mapping[str, str],
    usecols: Sequence[str] | None, backend: Any,
) -> tuple[list[str], dict[str, str]]:
    """The file's columns and each read column's canonical dtype: given, or as pandas infers
    it from the sample's first rows (integers and booleans nullable)."""
    block = Block(sample_path)
    if names is None:
        options = {**syntax.pandas_options(), "skiprows": syntax.skiprows or None}
        try:
            file_columns = list(pd.read_csv(io.BytesIO(sample), nrows=0, **options).columns)
        except _PANDAS_FAILURES as err:
            raise read_failure(block, err, sample, 0, 0, syntax, [], dtypes) from err
    else:
        file_columns = list(names)
    if usecols is not None:
        missing = [name for name in usecols if name not in file_columns]
        if missing:
            raise DatasetReadError(
                f"usecols= names column(s) {missing} that CSV file {sample_path!r} lacks; its columns are {file_columns}"
            )
    read = [name for name in file_columns if usecols is None or name in usecols]  # pandas keeps the file's order
    known = {name: dtype for name, dtype in dtypes.items() if name in read}
    try:
        head = read_with_pandas(sample, True, syntax, file_columns, read, known, nrows=_SAMPLE_ROWS)
    except _PANDAS_FAILURES as err:
        start = _rows_start(sample, 0, len(sample), syntax)[1]
        raise read_failure(block, err, sample, start, len(sample), syntax, file_columns, dtypes) from err
    return file_columns, {
        name: known[name] if name in known else dtype_names.nullable_dtype(backend.canonical_dtype(dtype))
        for name, dtype in head.dtypes.items()
    }


def _pieces(
    path: str, compression: str | None, part_size: int, storage_options: Mapping[str, Any] | None
) -> list[tuple[str, int, int | None, bool, str | None]]:
    """``(path, offset, length, first, compression)`` of each partition of one file.

    Byte ranges as ``dask.dataframe.read_csv(blocksize=part_size)`` cuts them (the spare
    bytes spread over the blocks, an empty file left out); a block reads from the line
    break after ``offset`` to the one after ``offset + length``.
    """
    if compression is not None:
        return [(path, 0, None, True, compression)]
    if is_remote(path):
        fs, fs_path = filesystem(path, storage_options)
        size = int(fs.size(fs_path))
    else:
        import os

        size = os.path.getsize(local_path(path))
    if size == 0:
        return []
    step = size / (size // part_size) if size % part_size and size > part_size else part_size
    offsets, place = [0], 0.0
    while size - place > step * 2 - 1:
        place += step
        offsets.append(int(place))
    ends = offsets[1:] + [size]
    return [(path, start, end - start, start == 0, None) for start, end in zip(offsets, ends)]


# ---------------------------------------------------------------------------- reading
class TextPartReader:
    """Reads one planned partition: a byte range of a text file (or a whole compressed file).

    Parameters
    ----------
    engine : str
        The backend the frames are made for.
    syntax : TextSyntax
        How the text splits into fields.
    file_columns : list of str
        Every column of the files, in file order.
    dtypes : mapping
        Canonical dtype each read column is parsed as (hex columns: ``"string"``), in the
        order of the frame's columns.
    hex_columns : list of str
        Columns of hexadecimal strings, turned into nullable int64 after parsing.
    storage_options : mapping, optional
        fsspec options for URLs.
    check_header : bool, default True
        Whether each file's header line must name ``file_columns`` (False when ``names=``
        replaces the header line).

    Notes
    -----
    A process reads one large partition (at least one pyarrow block per core) at a time:
    pyarrow parses it on every core already, and two at once only hold twice the memory.
    """

    def __init__(
        self, engine: str, syntax: TextSyntax, file_columns: Sequence[str], dtypes: Mapping[str, str],
        hex_columns: Sequence[str] = (), storage_options: Mapping[str, Any] | None = None, check_header: bool = True,
    ) -> None:
        self.engine = engine
        self.syntax = syntax
        self.file_columns = list(file_columns)
        self.dtypes = dict(dtypes)
        self.hex_columns = list(hex_columns)
        self.storage_options = dict(storage_options) if storage_options else None
        self.check_header = check_header

    def with_columns(self, columns: Sequence[str]) -> "TextPartReader":
        """The same reader for ``columns`` only (in that order): the others are not converted."""
        return TextPartReader(
            self.engine, self.syntax, self.file_columns, {c: self.dtypes[c] for c in columns},
            [c for c in self.hex_columns if c in columns], self.storage_options, self.check_header,
        )

    def __call__(self, piece: tuple[str, int, int | None, bool, str | None]) -> Any:
        import pyarrow as pa

        length, compression = piece[2], piece[4]
        release_freed_memory()  # what the previous partition freed, before this one is read
        # (Decompressing is one thread's work: compressed files are read side by side.)
        large = compression is None and length is not None and length >= _ARROW_BLOCK_BYTES * pa.cpu_count()
        with _LARGE_READ if large else contextlib.nullcontext():
            return self._read(piece)

    def _read(self, piece: tuple[str, int, int | None, bool, str | None]) -> Any:
        path, offset, length, first, compression = piece
        backend = get_backend(self.engine)
        try:
            data, begin, end = _piece_text(path, offset, length, compression, self.storage_options)
        except OSError as err:
            raise DatasetReadError(f"cannot read CSV file {path!r}: {err}") from err
        start = begin
        if first:
            header_start, start = _rows_start(data, begin, end, self.syntax)
            if self.check_header:
                self._check_header(data[header_start:start], path)
        where = Block(path, offset, first, self.storage_options)
        frame, refused = None, None
        if self._lines_end_rows(data, begin, start):
            try:
                frame = backend.from_arrow(self._parse(data, start, end), self.dtypes)
            except (ValueError, TypeError, ArithmeticError, NotImplementedError) as err:
                if _more_fields(err):
                    raise read_failure(where, err, data, start, end, self.syntax, self.file_columns, self.dtypes) from err
                refused = err  # pyarrow's ArrowInvalid is a ValueError: pandas decides below
        if frame is None:
            try:
                frame = read_with_pandas(data[begin:end], first, self.syntax, self.file_columns, list(self.dtypes), self.dtypes)
                frame = backend.from_host(frame)
            except _PANDAS_FAILURES as err:
                failure = read_failure(where, err, data, start, end, self.syntax, self.file_columns, self.dtypes, refused)
                raise failure from err
        if not self.hex_columns:
            return frame
        try:
            return parse_hex_columns(frame, self.hex_columns)
        except ValueError as err:
            raise ValueError(f"CSV file {path!r}: {err}") from None

    def _lines_end_rows(self, data: Any, begin: int, start: int) -> bool:
        """Whether the lines before ``start`` (skipped lines, the header) end where their rows
        end, so that the rows start at ``start``: no quote in them opens a quoted line break
        (each line holds an even number of quote characters, and none is escaped)."""
        quote = self.syntax.quote_bytes
        if quote is None or data.find(quote, begin, start) < 0:
            return True
        if self.syntax.escapechar is not None:
            return False
        lines = data[begin:start].split(b"\n")
        return all(line.count(quote) % 2 == 0 for line in lines)

    def _check_header(self, line: bytes, path: str) -> None:
        """DatasetReadError unless the header line names the planned columns, in order."""
        if not line.strip():
            return  # no header line: an empty file
        try:
            found = list(pd.read_csv(io.BytesIO(line), nrows=0, **self.syntax.pandas_options()).columns)
        except (ValueError, pd.errors.ParserError):
            return  # pandas reports it, with its context, reading the block
        if found != self.file_columns:
            raise DatasetReadError(
                f"CSV file {path!r} has the header {found}, unlike the dataset's first file {self.file_columns}: "
                "all files of a dataset must name the same columns in the same order; rewrite the file, or pass "
                "names=[...] with header=0 to name the columns of every file"
            )

    def _parse(self, data: Any, start: int, end: int) -> Any:
        """The rows of ``data[start:end]`` as an Arrow table of the planned types (ValueError
        when pyarrow refuses a row or a value)."""
        import pyarrow as pa
        import pyarrow.csv as pcsv

        columns = list(self.dtypes)
        types = {name: _arrow_type(dtype) for name, dtype in self.dtypes.items()}
        if start >= end:  # pyarrow refuses an empty text; a header-only file has no rows
            return pa.table({name: pa.array([], types[name]) for name in columns})

        def parse(quoted_line_breaks: bool) -> Any:
            return pcsv.read_csv(
                pa.BufferReader(pa.py_buffer(data).slice(start, end - start)),
                read_options=pcsv.ReadOptions(column_names=self.file_columns, block_size=_ARROW_BLOCK_BYTES),
                parse_options=self.syntax.parse_options(quoted_line_breaks),
                convert_options=pcsv.ConvertOptions(
                    column_types=types, null_values=list(self.syntax.null_values), strings_can_be_null=True,
                    quoted_strings_can_be_null=True, include_columns=columns,
                ),
            )

        try:
            # Finding row ends in parallel is much slower when quoted values may hold line
            # breaks; pyarrow notices when one crosses its parsing blocks, and only then is the
            # text parsed again that way.
            return parse(quoted_line_breaks=False)
        except pa.ArrowInvalid as err:
            if "out of sync with chunker" not in str(err):
                raise
            return parse(quoted_line_breaks=True)


def read_with_pandas(
    data: bytes, first: bool, syntax: TextSyntax, file_columns: Sequence[str], columns: Sequence[str] | None = None,
    dtypes: Mapping[str, str] | None = None, nrows: int | None = None,
) -> Any:
    """Text read by ``pandas.read_csv`` as dask's reader read each block: ``first`` tells
    whether it starts a file (skipped lines, header line); ``columns`` are read in that order
    (None: all), with the canonical ``dtypes`` given (the others inferred).

    A line with more fields than the file has columns raises ValueError: pandas takes the first
    fields of the first line as the row index then, silently shifting the columns.
    """
    pandas = get_backend("pandas")
    options = syntax.pandas_options()
    options.update(header=0 if first and syntax.header else None, skiprows=(syntax.skiprows or None) if first else None)
    selected = list(columns) if columns is not None and list(columns) != list(file_columns) else None
    engine_dtypes = {name: pandas.engine_dtype(dtype) for name, dtype in (dtypes or {}).items()}
    frame = pd.read_csv(
        io.BytesIO(data), names=list(file_columns), usecols=selected, dtype=engine_dtypes or None, nrows=nrows, **options
    )
    if not isinstance(frame.index, pd.RangeIndex):
        raise ValueError(f"a line has more fields than the file has columns ({len(file_columns)})")
    return frame[selected] if selected else frame


def _rows_start(data: Any, begin: int, end: int, syntax: TextSyntax) -> tuple[int, int]:
    """Where a file's header line starts and where its rows start, in ``data[begin:end]`` (the
    file's first block): after a byte-order mark, ``skiprows`` lines, the blank lines before
    the header (pandas skips them) and the header line."""
    start = begin + 3 if data[begin : begin + 3] == b"\xef\xbb\xbf" else begin
    for _ in range(syntax.skiprows):
        start = _next_line(data, start, end)
    if not syntax.header:
        return start, start
    while start < end and data[start : start + 1] in (b"\n", b"\r"):
        start += 1
    return start, _next_line(data, start, end)


def _next_line(data: Any, start: int, end: int) -> int:
    """The position after the line break that ends the line at ``start`` (``end`` if none)."""
    found = data.find(b"\n", start, end)
    return end if found < 0 else found + 1


@dataclasses.dataclass(frozen=True)
class Block:
    """Where a block of text comes from (for error messages)."""

    path: str
    offset: int = 0
    first: bool = True
    storage_options: Mapping[str, Any] | None = None


# What pandas raises for text it cannot read with the planned dtypes.
_PANDAS_FAILURES = (ValueError, TypeError, OverflowError, pd.errors.ParserError)
_MORE_FIELDS = re.compile(r"Expected (\d+) columns, got (\d+)")
_FIELD_COUNT = re.compile(r"Expected \d+ fields in line \d+, saw \d+|a line has more fields than the file has columns")
_CONVERSION = re.compile(r"In CSV column #(\d+): .*CSV conversion error to [^:]+: invalid value '(.*)'", re.S)


def _more_fields(err: BaseException) -> bool:
    """Whether pyarrow refused a row for holding more fields than the file has columns."""
    found = _MORE_FIELDS.search(str(err))
    return found is not None and int(found.group(2)) > int(found.group(1))


def read_failure(
    block: Block, err: BaseException, data: Any, start: int, end: int, syntax: TextSyntax,
    file_columns: Sequence[str], dtypes: Mapping[str, str], refused: BaseException | None = None,
) -> DatasetReadError:
    """A DatasetReadError naming the file, the line or the column, and the fix, for the
    error ``err`` (and pyarrow's, ``refused``) reading the rows ``data[start:end]`` of ``block``."""
    detail = " ".join(str(err).split())
    if _more_fields(err) or _FIELD_COUNT.search(detail):
        found = _first_long_row(data, start, end, syntax, len(file_columns))
        if found is not None:
            number, fields = found
            if block.first:
                before = data[:start].count(b"\n")
            else:  # a later partition starts after the first line break at or after its offset
                before = _lines_before(block.path, block.offset, block.storage_options) + 1
            shown = list(file_columns)[:5] + (["..."] if len(file_columns) > 5 else [])
            return DatasetReadError(
                f"cannot read CSV file {block.path!r}: line {before + number} has {fields} fields, but the file "
                f"has {len(file_columns)} columns {shown}; quote values that hold the separator, fix or remove the "
                "line, or pass names=[...] naming every field"
            )
    converted = _CONVERSION.search(str(refused)) if refused is not None else None
    if converted is not None and int(converted.group(1)) < len(file_columns):
        name = file_columns[int(converted.group(1))]
        if name in dtypes:
            return DatasetReadError(
                f"cannot read CSV file {block.path!r}: column {name!r} holds {converted.group(2)!r}, which is not "
                f"a {dtypes[name]} value (the column's dtype, from dtypes= or inferred from the first "
                f"{_SAMPLE_ROWS} rows of the first file); pass dtypes={{{name!r}: 'string'}} (or a dtype that "
                "holds every value) to read the column as that"
            )
    where = "" if block.first else f" (the partition from byte {block.offset})"
    message = (
        f"cannot read CSV file {block.path!r}{where}: {detail}; check the file's values against the columns' "
        "dtypes, or pass dtypes={column: 'string'} to read a column as text"
    )
    quote = syntax.quote_bytes
    if not block.first and quote is not None and data.find(quote, start, end) >= 0:
        message += (
            "; a quoted value that holds a line break may also have been cut by a partition boundary (files "
            "are split at line breaks): pass a part_size larger than the file"
        )
    return DatasetReadError(message)


def _first_long_row(data: Any, start: int, end: int, syntax: TextSyntax, width: int) -> tuple[int, int] | None:
    """``(line number from start, field count)`` of the first line of ``data[start:end]`` with
    more than ``width`` fields, or None. Parsed again on one thread, blank lines kept: only
    then does pyarrow number the lines as the file does."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    found: list[tuple[int, int]] = []

    def note(row: Any) -> str:
        if not found and row.actual_columns > width and row.number is not None:
            found.append((row.number, row.actual_columns))
        return "skip"

    names = [f"f{i}" for i in range(width)]
    parse = syntax.parse_options(quoted_line_breaks=True)
    parse.invalid_row_handler = note
    parse.ignore_empty_lines = False
    try:
        pcsv.read_csv(
            pa.BufferReader(pa.py_buffer(data).slice(start, end - start)),
            read_options=pcsv.ReadOptions(column_names=names, use_threads=False),
            parse_options=parse,
            convert_options=pcsv.ConvertOptions(column_types={name: pa.string() for name in names}),
        )
    except (ValueError, TypeError):
        pass  # text pyarrow cannot split at all: the caller reports pandas' error
    return found[0] if found else None


def _lines_before(path: str, offset: int, storage_options: Mapping[str, Any] | None) -> int:
    """Line breaks in the first ``offset`` bytes of an uncompressed file (for error messages)."""
    count, left = 0, offset
    with open_file(path, storage_options) as handle:
        while left > 0:
            chunk = handle.read(min(left, 16 << 20))
            if not chunk:
                break
            count += chunk.count(b"\n")
            left -= len(chunk)
    return count


@contextlib.contextmanager
def _open_text(path: str, compression: str | None, storage_options: Mapping[str, Any] | None) -> Iterator[Any]:
    """A binary file object of the (decompressed) text."""
    from fsspec.compression import compr

    with open_file(path, storage_options) as raw:
        if compression is None:
            yield raw
        else:
            with compr[compression](raw, mode="rb") as stream:
                yield stream


def _piece_text(
    path: str, offset: int, length: int | None, compression: str | None, storage_options: Mapping[str, Any] | None
) -> tuple[Any, int, int]:
    """``(data, begin, end)``: the text of one partition is ``data[begin:end]``, from the line
    after ``offset`` to the line after ``offset + length`` (as ``fsspec.utils.read_block``
    cuts it). ``data`` is ``bytes``, or a memory map of a local file: pyarrow parses the
    page cache directly, without copying the block first."""
    if compression is None and length is not None and not is_remote(path):
        if length == 0:
            return b"", 0, 0
        import mmap

        with open(local_path(path), "rb") as handle:
            data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        size = len(data)
        begin = 0 if offset == 0 else _next_line(data, offset, size)
        stop = offset + length
        return data, begin, size if stop >= size else _next_line(data, stop, size)
    from fsspec.utils import read_block

    with _open_text(path, compression, storage_options) as handle:
        text = handle.read() if length is None else read_block(handle, offset, length, delimiter=b"\n")
    return text, 0, len(text)


def _arrow_type(canonical: str) -> Any:
    """The Arrow type a canonical dtype is parsed as, or None for one pyarrow does not parse
    the way pandas does. Floats are parsed as float64 and then rounded, as pandas does."""
    import pyarrow as pa

    if dtype_names.is_string(canonical):
        return pa.large_string()  # what pandas' Arrow string dtype holds: no cast after parsing
    name = canonical.lower()
    if name in ("bool", "boolean"):
        return pa.bool_()
    if name in ("float32", "float64"):
        return pa.float64()
    if name in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"):
        return pa.from_numpy_dtype(name)
    return None


def parse_hex_columns(frame: Any, names: Sequence[str]) -> Any:
    """``frame`` with its columns ``names`` of hexadecimal strings as nullable int64."""
    backend = backend_for(frame)
    parsed = {}
    for name in names:
        try:
            parsed[name] = backend.hex_to_int(frame[name])
        except ValueError as err:
            raise ValueError(f"column {name!r} read with dtype 'hex': {err}") from None
    return frame.assign(**parsed)


def check_csv_header(path: str, sep: str, header: Any, compression: Any, options: Mapping[str, Any]) -> None:
    """DatasetReadError naming a column name that the header line of ``path`` repeats.

    The CSV parsers rename a repeated name (``a``, ``a.1``), which would silently hand the
    second column to code that asks for the first; the header line is read raw to see it.
    """
    import pandas as pd

    if not isinstance(header, int) and header != "infer":
        return  # a multi-line header: the parser reports its own problems
    skip = options.get("skiprows", 0) or 0
    if not isinstance(skip, int):
        return  # rows skipped by a list or a function: the header line is not known here
    skip += 0 if header == "infer" else header
    passed = {
        k: options[k] for k in ("quotechar", "quoting", "escapechar", "comment", "encoding", "skipinitialspace", "storage_options")
        if k in options
    }
    try:
        first = pd.read_csv(
            path, sep=sep, header=None, nrows=1, dtype=str, keep_default_na=False,
            skiprows=skip, compression=compression or "infer", **passed,
        )
    except Exception:  # noqa: BLE001 - unreadable or empty: the real read reports it with its context
        return
    if len(first):
        require_unique_names(
            first.iloc[0].tolist(), f"the header of CSV file {path!r}",
            "rename the repeated column in the file, or pass names=[...] with distinct names and header=0",
            DatasetReadError,
        )
