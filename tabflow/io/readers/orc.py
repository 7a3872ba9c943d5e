"""ORC: partitions planned from the stripes listed in each file's footer.

Examples
--------
>>> import os, tempfile, pyarrow as pa, pyarrow.orc as orc
>>> from tabflow.io.readers import ReadOptions, read_orc
>>> path = os.path.join(tempfile.mkdtemp(), "x.orc")
>>> orc.write_table(pa.table({"a": [1, 2, 3]}), path)
>>> source = read_orc([path], ReadOptions(cpu=True))
>>> source.num_rows, source.ddf.compute()["a"].tolist()
(3, [1, 2, 3])
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

from tabflow.backends import get_backend
from tabflow.io.fs import filesystem, is_remote, open_file
from tabflow.io.memory import release_freed_memory
from tabflow.io.readers._shared import (
    DatasetReadError,
    TypePlan,
    read_error,
    require_unique_names,
)
from tabflow.io.readers._source import ReadOptions, Source
from tabflow.schema.dtypes import arrow_canonical_dtype

__all__ = ["read_orc", "read_orc_ddf"]


def read_orc(paths: Sequence[str], options: ReadOptions) -> Source:
    """The ORC reader: stripes grouped into partitions of about ``part_size`` bytes."""
    options.require_no_hex("orc")
    options.take_extra("ORC")
    ddf, num_rows = read_orc_ddf(
        paths, options.partition_bytes(), options.backend, options.canonical_dtypes, options.storage_options
    )
    return Source(ddf, options.backend.name, num_rows=num_rows)


class OrcPartReader:
    """Reads one planned partition (a file and some of its stripes); URLs through fsspec."""

    def __init__(self, engine: str, dtypes: Mapping[str, str], storage_options: Mapping[str, Any] | None = None) -> None:
        self.engine = engine
        self.dtypes = dict(dtypes)
        self.storage_options = dict(storage_options) if storage_options else None

    def __call__(self, piece: tuple[str, tuple[int, ...]]) -> Any:
        path, stripes = piece
        backend = get_backend(self.engine)
        release_freed_memory()  # what the previous partition freed, before this one is read
        try:
            if not is_remote(path):
                return backend.read_orc_part(path, list(stripes), list(self.dtypes), self.dtypes)
            import pyarrow as pa
            import pyarrow.orc as orc

            with open_file(path, self.storage_options) as handle:
                reader = orc.ORCFile(handle)
                columns = list(self.dtypes)
                if not stripes:
                    table = reader.read(columns=columns)
                else:
                    table = pa.concat_tables([pa.Table.from_batches([reader.read_stripe(i, columns=columns)]) for i in stripes])
            return backend.from_arrow(table, self.dtypes)
        except (DatasetReadError, MemoryError, ImportError):  # an engine that cannot load is not a bad file
            raise
        except Exception as err:  # noqa: BLE001 - pyarrow and cuDF raise many types for bad files
            raise read_error("ORC", path, err, stripes[0] if len(stripes) == 1 else None, unit="stripe") from err


def read_orc_ddf(
    files: Sequence[str], part_size: int, backend: Any, dtypes: Mapping[str, str] | None = None,
    storage_options: Mapping[str, Any] | None = None,
):
    """A dask DataFrame over the files' stripes, and the row count from their footers."""
    pieces = []
    reference: list[str] | None = None
    plan = TypePlan("ORC", list(dtypes or {}))
    num_rows = 0
    for path in files:
        try:
            reader, size = _orc_footer(path, storage_options)
        except Exception as err:  # noqa: BLE001
            raise DatasetReadError(f"cannot read ORC file {path!r} ({err})") from err
        names = list(reader.schema.names)
        require_unique_names(
            names, f"ORC file {path!r}", "rewrite the file with the repeated column renamed or dropped", DatasetReadError
        )
        if reference is None:
            reference = names
        elif set(reference) != set(names):
            raise DatasetReadError(
                f"ORC file {path!r} has columns {sorted(names)}, unlike {files[0]!r} "
                f"({sorted(reference)}); all files of a dataset must share their columns"
            )
        plan.add(path, reader.schema, names)
        num_rows += reader.nrows
        if reader.nstripes == 0:
            continue
        # Stripes are stored compressed; about 4x is their in-memory size.
        bytes_per_stripe = max(1, size * 4 // reader.nstripes)
        per_part = max(1, part_size // bytes_per_stripe)
        stripes = list(range(reader.nstripes))
        for i in range(0, len(stripes), per_part):
            pieces.append((path, tuple(stripes[i : i + per_part])))
    if not pieces:
        pieces.append((files[0], ()))
    # ORC footers carry no per-column null counts that pyarrow exposes: integer columns are
    # planned as nullable so that every partition agrees.
    planned = {name: arrow_canonical_dtype(plan.types[name], True) for name in reference or []}
    planned.update(dtypes or {})
    ddf = backend.from_map_ddf(
        OrcPartReader(backend.name, planned, storage_options), pieces, backend.empty_frame(planned), "tabflow-read-orc"
    )
    return ddf, num_rows


def _orc_footer(path: str, storage_options: Mapping[str, Any] | None) -> tuple[Any, int]:
    """The ORC reader of ``path`` (its footer read) and the file's size in bytes."""
    import pyarrow.orc as orc

    if not is_remote(path):
        return orc.ORCFile(path), os.path.getsize(path)
    fs, fs_path = filesystem(path, storage_options)
    # The footer sits at the end of the file and pyarrow seeks around it: one ranged read
    # of the whole (small) tail is what fsspec's buffered file gives.
    with fs.open(fs_path, "rb") as handle:
        reader = orc.ORCFile(handle)
        reader.nrows, reader.nstripes, reader.schema  # noqa: B018 - read now, before the file closes
    return reader, int(fs.size(fs_path))
