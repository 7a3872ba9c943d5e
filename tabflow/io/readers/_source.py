"""What every reader takes (:class:`ReadOptions`) and what it gives back (:class:`Source`).

Examples
--------
>>> import pandas as pd, dask.dataframe as dd
>>> from tabflow.io.readers import ReadOptions, Source
>>> options = ReadOptions(cpu=True, part_size="1KB", dtypes={"id": "hex", "x": "int32"})
>>> options.partition_bytes(), options.hex_columns, options.canonical_dtypes
(1000, ('id',), {'x': 'int32'})
>>> source = Source(dd.from_pandas(pd.DataFrame({"x": [1, 2]}), npartitions=1), "pandas", num_rows=2)
>>> source.ddf.npartitions, source.paths, source.direct is None
(1, (), True)
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Mapping, Sequence

from dask.utils import parse_bytes

from tabflow.backends import default_engine, get_backend
from tabflow.schema import Schema

__all__ = ["Source", "ReadOptions", "check_part_size", "HEX_DTYPES"]

#: ``dtypes=`` values that read a CSV column of hexadecimal strings as (nullable) int64.
HEX_DTYPES = ("hex", "hex32", "hex64")

_DEFAULT_PART_SIZE = "128MB"


@dataclass(frozen=True, eq=False)  # dask frames do not compare to a bool
class Source:
    """A reader's result: the partitioned frame and what is known about it without reading it.

    ``Dataset`` is built from a ``Source`` and nothing else, whatever the file format or
    in-memory frame it came from.

    Parameters
    ----------
    ddf : dask DataFrame
        The partitions, with the dtypes every partition has.
    engine : {"pandas", "cudf"}
        The engine the partitions are read into.
    num_rows : int, optional
        Row count, when the files' metadata tell it (counted on demand otherwise).
    partition_lengths : list of int, optional
        Rows of each partition, when the files' metadata tell it.
    direct : (reader, pieces), optional
        ``reader(pieces[i])`` reads partition ``i`` without building a dask graph (the data
        loader reads every epoch this way); ``reader.with_columns(names)`` is the same reader
        for some columns. Only for formats that plan their partitions themselves.
    partition_sources : callable, optional
        Returns the file each partition comes from, one entry per partition: a path, or a
        tuple of paths for a partition that gathers several files
        (``to_parquet(preserve_files=True)``); called only when needed.
    partition_bytes : list of float, optional
        Estimated in-memory bytes of each partition, where the files' metadata tell it.
    part_size : int, optional
        The bytes partitions were planned to (with ``partition_bytes``, a dataset can gather
        small partitions for a computation whose result does not depend on them).
    schema : Schema, optional
        Column tags and properties stored with the data (``_schema.json`` next to the files).
    dtypes : mapping of str to str, optional
        The canonical dtypes the columns were planned with, where they say more than the
        engine's dtypes: cuDF has no masked integer dtypes, so an integer column with nulls
        is ``"Int64"`` here and in the dataset's schema (as on pandas) while its partitions
        hold cuDF ``int64``.
    paths : tuple of str
        The files read (empty for in-memory frames).
    format : str, optional
        The registered format that read the files (``"parquet"``, ``"csv"``, ...).
    """

    ddf: Any
    engine: str
    num_rows: int | None = None
    partition_lengths: list[int] | None = None
    dtypes: Mapping[str, str] | None = None
    direct: tuple[Any, list] | None = None
    partition_sources: Callable[[], list[str | tuple[str, ...]]] | None = None
    partition_bytes: list[float] | None = None
    part_size: int | None = None
    schema: Schema | None = None
    paths: tuple[str, ...] = ()
    format: str | None = None


@dataclass(frozen=True)
class ReadOptions:
    """How to read a source: ``Dataset``'s arguments, as one object that every reader takes.

    Parameters
    ----------
    cpu : bool, optional
        True: pandas; False: cuDF; None: cuDF when a GPU and cuDF are available.
    npartitions : int, optional
        For in-memory frames: how many partitions to split them into.
    part_size : int or str, optional
        Target in-memory size of one partition (bytes, or a string such as ``"64MB"``).
    part_mem_fraction : float, optional
        Partition size as a fraction of the engine's memory, in (0, 1].
    dtypes : mapping, optional
        Column dtypes to read with, as the user wrote them (``"int32"``, ``np.int32``, ``"hex"``).
    sep, names, header :
        Text formats' separator, column names and header line.
    storage_options : mapping, optional
        fsspec options (credentials, endpoint, ...) for paths with a protocol
        (``s3://``, ``gs://``, ``memory://``, ...).
    extra : mapping, optional
        Further keyword arguments: each format takes the ones it knows (the text parser's
        options, parquet's ``filters=``) and refuses the others (:meth:`take_extra`).

    Raises
    ------
    ValueError
        When ``part_size`` or ``part_mem_fraction`` is unusable (see :func:`check_part_size`).
    """

    cpu: bool | None = None
    npartitions: int | None = None
    part_size: int | str | None = None
    part_mem_fraction: float | None = None
    dtypes: Mapping[str, Any] | None = None
    sep: str | None = None
    names: Sequence[str] | None = None
    header: Any = "infer"
    storage_options: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_part_size(self.part_size, self.part_mem_fraction)

    @cached_property
    def backend(self) -> Any:
        """The backend files are read into (``cpu=None`` looks for a GPU once, here)."""
        return get_backend(default_engine(self.cpu))

    def partition_bytes(self, backend: Any = None) -> int:
        """Target bytes per partition; ``part_mem_fraction`` is of ``backend``'s memory."""
        if self.part_size is not None:
            return int(parse_bytes(self.part_size)) if isinstance(self.part_size, str) else int(self.part_size)
        if self.part_mem_fraction is not None:
            return max(1, int((backend or self.backend).total_memory() * self.part_mem_fraction))
        return int(parse_bytes(_DEFAULT_PART_SIZE))

    @cached_property
    def hex_columns(self) -> tuple[str, ...]:
        """Columns asked for as hexadecimal strings (``dtypes={"id": "hex"}``)."""
        return tuple(k for k, v in (self.dtypes or {}).items() if isinstance(v, str) and v.lower() in HEX_DTYPES)

    @cached_property
    def canonical_dtypes(self) -> dict[str, str]:
        """The other asked-for dtypes, as canonical names (``np.int32`` -> ``"int32"``)."""
        return {k: self.backend.canonical_dtype(v) for k, v in (self.dtypes or {}).items() if k not in self.hex_columns}

    def take_extra(self, kind: str, known: tuple[str, ...] = (), text: bool = False) -> dict[str, Any]:
        """The ``extra`` options a ``kind`` reader knows; TypeError naming any other.

        ``text=False``: ``sep``, ``names`` and a ``header`` other than ``"infer"`` are refused
        too (they only mean something to text formats).
        """
        unknown = sorted(set(self.extra) - set(known))
        if not text:
            given = {"sep": self.sep is not None, "names": self.names is not None, "header": self.header != "infer"}
            unknown += sorted(name for name, passed in given.items() if passed)
        if unknown:
            accepted = f"it accepts {', '.join(f'{k}=' for k in known)}" if known else "it takes no further options"
            raise TypeError(
                f"Dataset got option(s) {unknown} that the {kind} reader does not use ({accepted}); "
                "tabflow refuses them rather than ignore them"
            )
        return {k: self.extra[k] for k in known if k in self.extra}

    def require_no_hex(self, kind: str) -> None:
        """ValueError when hex columns were asked of a format that stores typed columns."""
        if self.hex_columns:
            raise ValueError(f"dtype 'hex' (columns {list(self.hex_columns)}) only applies to CSV files, not {kind}")


def check_part_size(part_size: Any, part_mem_fraction: Any) -> None:
    """ValueError naming ``part_size`` or ``part_mem_fraction`` unless it is usable.

    Examples
    --------
    >>> from tabflow.io.readers import check_part_size
    >>> check_part_size("-5MB", None)
    Traceback (most recent call last):
    ...
    ValueError: part_size must be a positive number of bytes (an int such as 134217728, or a string such as '128MB' or '1GiB'), got '-5MB'
    """
    if part_size is not None:
        accepted = "a positive number of bytes (an int such as 134217728, or a string such as '128MB' or '1GiB')"
        size: float | None = None
        if isinstance(part_size, str):
            try:
                size = parse_bytes(part_size)
            except (ValueError, TypeError):
                size = None
        elif isinstance(part_size, numbers.Real) and not isinstance(part_size, bool):
            size = float(part_size)
        if size is None or not size >= 1:  # ``not >=`` also rejects NaN
            raise ValueError(f"part_size must be {accepted}, got {part_size!r}")
    if part_mem_fraction is not None:
        fraction = float(part_mem_fraction) if isinstance(part_mem_fraction, numbers.Real) and not isinstance(part_mem_fraction, bool) else None
        if fraction is None or not 0 < fraction <= 1:
            raise ValueError(
                f"part_mem_fraction must be a number in (0, 1], the share of memory one partition may use "
                f"(such as 0.1), got {part_mem_fraction!r}"
            )
