"""Errors and column-type unification shared by the readers of every format.

A column's type is unified over the files' footers as Arrow's permissive schema
unification does (``pyarrow.unify_schemas(promote_options="permissive")``): int32 and int64
read as int64, int64 and float64 as float64, a null-typed column takes the other files' type,
dictionary-encoded strings are strings. Every partition is read with the unified dtypes, and
a value that does not fit them (uint64 above the int64 range, an integer beyond 2**53 read as
float64) is an error naming the file, never a silently changed value. Types that do not unify
(a string column in one file and a number in another) are an error naming both files.

Examples
--------
>>> from tabflow.io.readers import DatasetReadError
>>> issubclass(DatasetReadError, OSError)
True
"""

from __future__ import annotations

from typing import Any, Sequence

__all__ = ["DatasetReadError", "DatasetChangedError", "check_unchanged", "read_error", "require_unique_names", "unify_types", "TypePlan"]


class DatasetReadError(OSError):
    """A dataset file that is missing, unreadable, or inconsistent with the others."""


class DatasetChangedError(DatasetReadError):
    """A dataset's file was replaced or changed after the dataset was opened (another
    writer published into it meanwhile): reading on would mix two versions of the data."""


def check_unchanged(path: str, pinned: Any, storage_options: Any = None) -> None:
    """Raise :class:`DatasetChangedError` unless the file at ``path`` is still the one whose
    :func:`tabflow.io.fs.file_version` was ``pinned`` when the dataset was opened (None:
    nothing pinned).

    Examples
    --------
    >>> import os, tempfile
    >>> from tabflow.io.fs import file_version
    >>> path = os.path.join(tempfile.mkdtemp(), "part_0.parquet")
    >>> _ = open(path, "wb").write(b"old")
    >>> pinned = file_version(path)
    >>> check_unchanged(path, pinned)
    >>> _ = open(path + ".new", "wb").write(b"new")
    >>> os.replace(path + ".new", path)
    >>> check_unchanged(path, pinned)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    tabflow.io.readers._shared.DatasetChangedError: '...part_0.parquet' changed after the dataset was opened ...
    """
    if pinned is None:
        return
    from tabflow.io.fs import file_version

    try:
        now = file_version(path, storage_options)
    except FileNotFoundError:
        now = None
    if now != tuple(pinned):
        raise DatasetChangedError(
            f"{path!r} changed after the dataset was opened (it was written again, or removed, while the dataset was "
            "being read): reading on would mix the old and the new data. Open the dataset again (Dataset(path)) "
            "once the writer has finished"
        )


def read_error(kind: str, path: str, err: BaseException, row_group: int | None = None, unit: str = "row group") -> DatasetReadError:
    """A :class:`DatasetReadError` naming the file (and row group) that ``err`` came from.

    The original error is kept as ``__cause__`` by the ``raise ... from err`` of the caller.

    Examples
    --------
    >>> from tabflow.io.readers import read_error
    >>> str(read_error("parquet", "a.parquet", OSError("Corrupt snappy compressed data."), 2))[:60]
    "cannot read parquet file 'a.parquet' (row group 2): Corrupt "
    """
    where = f" ({unit} {row_group})" if row_group is not None else ""
    detail = " ".join(str(err).split()) or type(err).__name__
    message = f"cannot read {kind} file {path!r}{where}: {detail}"
    if type(err) is not ValueError:
        # A plain ValueError is tabflow's own (a value that does not fit the planned dtype)
        # and already says what to do; the readers' errors (pyarrow, cuDF) mean a bad file.
        message += " (the file looks truncated or corrupt: rewrite it, or leave it out of the dataset's paths)"
    return DatasetReadError(message)


def require_unique_names(names: Sequence[Any], where: str, fix: str, error: type[Exception] = ValueError) -> None:
    """``error`` (ValueError) naming the column names that ``names`` holds more than once.

    Examples
    --------
    >>> from tabflow.io.readers import require_unique_names
    >>> require_unique_names(["a", "b", "a"], "the frame", "rename one")
    Traceback (most recent call last):
    ...
    ValueError: the frame has the column name(s) ['a'] more than once (columns ['a', 'b', 'a']); tabflow needs distinct column names: rename one
    """
    seen: set = set()
    duplicates = []
    for name in names:
        if name in seen:
            duplicates.append(name)
        seen.add(name)
    if duplicates:
        raise error(
            f"{where} has the column name(s) {list(dict.fromkeys(duplicates))} more than once "
            f"(columns {list(names)}); tabflow needs distinct column names: {fix}"
        )


def _read_type(arrow_type: Any) -> Any:
    """The type a column is read as: dictionary-encoded values as their values."""
    import pyarrow as pa

    while pa.types.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    return arrow_type


def unify_types(first: Any, second: Any) -> Any:
    """The type both Arrow types read as, or None when they do not unify.

    Arrow's permissive schema unification: integers widen (int32 + int64 -> int64, int32 +
    uint32 -> int64), integers and floats give a float wide enough for both (int64 +
    float64 -> float64), a null type takes the other type, string + large_string is a string.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from tabflow.io.readers import unify_types
    >>> unify_types(pa.int32(), pa.int64()), unify_types(pa.int64(), pa.float64()), unify_types(pa.string(), pa.int64())
    (DataType(int64), DataType(double), None)
    """
    import pyarrow as pa

    first, second = _read_type(first), _read_type(second)
    if first == second:
        return first
    if pa.types.is_null(first) or pa.types.is_null(second):
        return second if pa.types.is_null(first) else first
    try:
        schemas = [pa.schema([pa.field("c", first)]), pa.schema([pa.field("c", second)])]
        return pa.unify_schemas(schemas, promote_options="permissive").field(0).type
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return None


class TypePlan:
    """Each column's type unified over the files seen so far, and the file it came from."""

    def __init__(self, kind: str, fixed: Sequence[str] = ()) -> None:
        self.kind = kind
        self.fixed = set(fixed)  # columns whose dtype the user gave: read as that, whatever the files hold
        self.types: dict[str, Any] = {}
        self.sources: dict[str, str] = {}
        self._last: Any = None

    def add(self, path: str, schema: Any, names: Sequence[str]) -> None:
        # Files of one dataset nearly always share one schema: comparing it whole is one
        # call per file instead of one per column and file.
        if self._last is not None and schema.equals(self._last, check_metadata=False):
            return
        self._last = schema
        for name in names:
            new = _read_type(schema.field(name).type)
            old = self.types.get(name)
            if old is None:
                self.types[name], self.sources[name] = new, path
                continue
            if new == old:
                continue
            merged = unify_types(old, new)
            if merged is None:
                if name in self.fixed:
                    continue
                raise DatasetReadError(
                    f"column {name!r} is {old} in {self.kind} file {self.sources[name]!r} but {new} in {path!r}, "
                    "and these types do not unify (strings, numbers, booleans and dates do not mix); "
                    f"pass dtypes={{{name!r}: 'string'}} (or another dtype every file's values convert to) to read "
                    "the column with one dtype, or rewrite the files so that the column has one type"
                )
            if merged != old:
                self.types[name], self.sources[name] = merged, path
