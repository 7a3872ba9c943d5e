"""``EmbeddingOperator``: a column of pretrained embedding vectors looked up by id."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from tabflow.backends import backend_for
from tabflow.backends.protocol import Frame
from tabflow.graph.selector import ColumnSelector
from tabflow.ops.operator import Operator
from tabflow.schema import ColumnSchema, Schema, Tags

__all__ = ["EmbeddingOperator"]

# Tags of the id column that still describe its embedding.
_KEPT_TAGS = (Tags.LIST, Tags.SEQUENCE, Tags.USER, Tags.ITEM, Tags.CONTEXT, Tags.SESSION)


class LookupTableMismatch(ValueError, AssertionError):
    """The ids given for the embedding rows do not match the table (an ``AssertionError``
    too: merlin asserted it, and code written for merlin catches that)."""


class EmbeddingOperator(Operator):
    """Add a column of embedding vectors, one per id of the ``lookup_key`` column, as
    merlin-dataloader's ``EmbeddingOperator`` does.

    The vectors come from a ``[n, dim]`` table held in memory or in a ``.npy`` file (read
    whole, or memory-mapped with ``mmap=True`` so that only the rows looked up are read).
    Without ``id_lookup_table`` an id is a row number of the table; with it, row ``i`` is the
    vector of id ``id_lookup_table[i]`` (any dtype, strings included; a repeated id takes its
    last row). An id with no row (not in ``id_lookup_table``, a row number outside the
    table, or a null) gets ``unknown_value``. A list column of ids gives a list of vectors
    per row (ragged as the ids are, or fixed after ``Padding``).

    The new column ``embedding_name`` has the table's dtype and shape
    ``(None, dim)`` (``(None, length, dim)`` for lists of ids), is tagged ``embedding`` and
    keeps the id column's list / sequence / user / item / context / session tags. The
    op's input columns pass through. It works in ``Loader(transforms=[...])`` (the array
    loader keeps the table's dtype; the torch ``Loader`` gives float32 tensors) and in a
    ``Workflow``.

    Parameters
    ----------
    embeddings : numpy.ndarray or path
        The ``[n, dim]`` table, or the path of a ``.npy`` file holding it.
    lookup_key : str, default "id"
        The column of ids; it must be one of the op's input columns.
    embedding_name : str, default "embeddings"
        The name of the new column.
    id_lookup_table : numpy.ndarray or path, optional
        ``n`` ids, one per row of the table (or the path of a ``.npy`` file of them).
    mmap : bool, default False
        Memory-map ``embeddings`` when it is a path.
    unknown_value : scalar or array of ``dim`` values, default 0
        The vector of an id without a row.

    Raises
    ------
    ValueError
        When ``id_lookup_table`` does not hold one id per row of the table (also an
        ``AssertionError``), or the table is not two-dimensional.
    TypeError
        When ``embeddings`` or ``id_lookup_table`` is neither an array nor a path.

    Notes
    -----
    Unlike merlin's, a row number outside the table or a null id gets ``unknown_value``
    (merlin raised, or took a row counted from the end for a negative id), and ids are
    found by a sorted search rather than a Python dict built from every id.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow.loader.ops import EmbeddingOperator
    >>> table = np.array([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]])
    >>> op = EmbeddingOperator(table, lookup_key="item", id_lookup_table=np.array([30, 10, 20]), unknown_value=-1.0)
    >>> out = nvt.Workflow(["item"] >> op).fit_transform(pd.DataFrame({"item": [10, 20, 99]}))
    >>> [row.tolist() for row in out["embeddings"]]
    [[0.3, 0.4], [0.5, 0.6], [-1.0, -1.0]]
    """

    _derived_attributes = ("_lookup",)

    def __init__(
        self,
        embeddings: Any,
        lookup_key: str = "id",
        embedding_name: str = "embeddings",
        id_lookup_table: Any = None,
        mmap: bool = False,
        unknown_value: Any = 0,
    ) -> None:
        self.embeddings = embeddings
        self.lookup_key = lookup_key
        self.embedding_name = embedding_name
        self.id_lookup_table = id_lookup_table
        self.mmap = mmap
        self.unknown_value = unknown_value
        # merlin checks the tables when the op is made: a mismatch surfaces at once, not at
        # the first batch in a loader thread.
        self._tables()

    # ------------------------------------------------------------------ tables
    def _tables(self) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """The table, and the sorted lookup ids with the table row of each (derived once)."""
        return self._derived("_lookup", "tables", self._load_tables)

    def _load_tables(self) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        table = _load(self.embeddings, "embeddings", mmap_mode="r" if self.mmap else None)
        if table.ndim != 2:
            raise ValueError(f"EmbeddingOperator: embeddings must be a [rows, dim] table, got shape {table.shape}")
        sorted_ids = rows = None
        if self.id_lookup_table is not None:
            ids = _load(self.id_lookup_table, "id_lookup_table", mmap_mode=None)
            if ids.shape != (table.shape[0],):
                raise LookupTableMismatch(
                    f"EmbeddingOperator: id_lookup_table has shape {ids.shape}, but the IDs provided must match the number "
                    f"of embeddings. Expected IDs with shape ({table.shape[0]},): one id per row of the "
                    f"{table.shape[0]} x {table.shape[1]} table"
                )
            if ids.dtype == object:
                ids = ids.astype(str)
            order = np.argsort(ids, kind="stable")
            sorted_ids, rows = ids[order], order
        return table, sorted_ids, rows

    def _rows(self, valid: np.ndarray, null: np.ndarray) -> np.ndarray:
        """The table row of every id, -1 where there is none (``valid``: the ids that are not null)."""
        table, sorted_ids, rows = self._tables()
        out = np.full(len(null), -1, dtype=np.int64)
        if sorted_ids is None:
            if valid.dtype.kind not in "iu":
                raise TypeError(
                    f"EmbeddingOperator: column {self.lookup_key!r} holds {valid.dtype} ids, which are not row numbers "
                    "of the table; pass id_lookup_table with the id of every row"
                )
            found = valid.astype(np.int64)
            found[(found < 0) | (found >= table.shape[0])] = -1
        else:
            keys = valid.astype(str) if sorted_ids.dtype.kind in "US" else valid
            if (sorted_ids.dtype.kind in "US") != (keys.dtype.kind in "US"):
                raise TypeError(
                    f"EmbeddingOperator: column {self.lookup_key!r} holds {valid.dtype} ids but id_lookup_table holds "
                    f"{sorted_ids.dtype} ones; cast one of them so that the ids compare"
                )
            position = np.searchsorted(sorted_ids, keys, side="right") - 1
            clipped = np.clip(position, 0, None)
            hit = (position >= 0) & (sorted_ids[clipped] == keys) if len(sorted_ids) else np.zeros(len(keys), bool)
            found = np.where(hit, rows[clipped] if len(rows) else -1, -1)
        out[~null] = found
        return out

    def _vectors(self, valid: np.ndarray, null: np.ndarray) -> np.ndarray:
        table = self._tables()[0]
        index = self._rows(valid, null)
        unknown = index < 0
        vectors = table[np.where(unknown, 0, index)] if len(table) else np.empty((len(index), table.shape[1]), table.dtype)
        if unknown.any():
            try:
                fill = np.broadcast_to(np.asarray(self.unknown_value, dtype=table.dtype), (table.shape[1],))
            except ValueError:
                raise ValueError(
                    f"EmbeddingOperator: unknown_value must be a scalar or {table.shape[1]} values (one per embedding "
                    f"dimension), got shape {np.shape(self.unknown_value)}"
                ) from None
            vectors[unknown] = fill
        return vectors

    # --------------------------------------------------------------- transform
    def transform(self, col_selector: ColumnSelector, df: Frame) -> Frame:
        self._check_key(col_selector.names)
        backend = backend_for(df)
        key = df[self.lookup_key]
        offsets = None
        if backend.is_list_dtype(key.dtype):
            offsets = np.asarray(backend.to_host(backend.list_offsets(key)), dtype=np.int64)
            key = backend.list_values_series(key)
            if backend.is_list_dtype(key.dtype):
                raise TypeError(f"EmbeddingOperator: column {self.lookup_key!r} holds lists of lists; ids must be scalars or lists of scalars")
        host = backend.to_host(key)
        null = np.asarray(host.isna(), dtype=bool)
        vectors = self._vectors(host[~null].to_numpy() if null.any() else host.to_numpy(), null)
        rows, dim = vectors.shape
        series = backend.list_from_values_offsets(backend.from_host(vectors.reshape(-1)), np.arange(rows + 1, dtype=np.int64) * dim)
        if offsets is not None:
            series = backend.list_from_values_offsets(series, offsets)
        out = {name: df[name] for name in col_selector.names if name != self.embedding_name}
        out[self.embedding_name] = backend.with_index(series, df.index)
        return backend.frame_from_dict(out, index=df.index)

    def _check_key(self, names: list[str]) -> None:
        if self.lookup_key not in names:
            raise KeyError(
                f"EmbeddingOperator: lookup_key {self.lookup_key!r} is not among the op's input columns {names}; "
                f"select it (e.g. [{self.lookup_key!r}, ...] >> EmbeddingOperator(...))"
            )

    # ------------------------------------------------------------------ schema
    def output_column_names(self, col_selector: ColumnSelector) -> ColumnSelector:
        return ColumnSelector([*(n for n in col_selector.names if n != self.embedding_name), self.embedding_name])

    def column_mapping(self, col_selector: ColumnSelector) -> dict[str, list[str]]:
        mapping = {name: [name] for name in col_selector.names if name != self.embedding_name}
        mapping[self.embedding_name] = [self.lookup_key]
        return mapping

    def compute_output_schema(
        self, input_schema: Schema, col_selector: ColumnSelector | None, prev_output_schema: Schema | None = None
    ) -> Schema:
        if not col_selector:
            col_selector = ColumnSelector(input_schema.column_names)
        if col_selector.tags or col_selector.all:
            col_selector = col_selector.resolve(input_schema)
        self._check_key(col_selector.names)
        table = self._tables()[0]
        ids = input_schema[self.lookup_key]
        if not ids.is_list:
            dims: tuple[Any, ...] = (None, table.shape[1])
        elif ids.shape.dims is not None and len(ids.shape.dims) == 2:
            dims = (*ids.shape.as_tuple, table.shape[1])
        else:
            dims = (None, None, table.shape[1])
        tags = [Tags.EMBEDDING, *(tag for tag in _KEPT_TAGS if tag in ids.tags)]
        embedding = ColumnSchema(self.embedding_name, tags=tags, dtype=table.dtype.name, dims=dims)
        kept = [input_schema[name] for name in col_selector.names if name != self.embedding_name]
        return Schema([*kept, embedding])


def _load(source: Any, argument: str, mmap_mode: str | None) -> np.ndarray:
    if isinstance(source, np.ndarray):
        return source
    if isinstance(source, (str, os.PathLike)):
        # allow_pickle=False: reading a table never runs code from the file.
        return np.load(source, mmap_mode=mmap_mode, allow_pickle=False)
    raise TypeError(
        f"EmbeddingOperator: {argument} must be a numpy array or the path of a .npy file, got {type(source).__name__}"
    )
