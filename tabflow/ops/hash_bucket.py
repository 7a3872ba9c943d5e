"""HashBucket: map categorical values to ``hash(value) % num_buckets`` without a vocabulary."""

from __future__ import annotations

from numbers import Integral
from typing import Any, Mapping

import numpy as np

from tabflow.backends import backend_for
from tabflow.backends.protocol import Frame
from tabflow.graph.kernels import Block, Kernel, elementwise_kernels, hashes
from tabflow.graph.selector import ColumnSelector
from tabflow.ops._schema_hooks import SchemaFromColumns
from tabflow.ops._vocab import embedding_dimension
from tabflow.ops.operator import Operator
from tabflow.schema import ColumnSchema, Schema, Tags

__all__ = ["HashBucket"]


class HashBucket(SchemaFromColumns, Operator):
    """Replace each value by ``xxhash64(value) % num_buckets``, an int32 in ``[0, num_buckets)``.

    The hash is tabflow's stable hash (:mod:`tabflow.backends._hashing`): the same value gets
    the same bucket on every run, machine, partitioning and engine. String, integer, boolean
    and float columns are accepted; list columns are hashed element by element into a
    ``list<int32>`` column. The output is int32 as in NVTabular 23.08 (int64 only when
    ``num_buckets`` exceeds ``2**31``, where int32 would overflow). An integral float hashes as its integer (``10.0`` as ``10``);
    any other float (``10.5``, ``inf``) hashes the 8 little-endian bytes of its float64, so
    ``10.5`` and ``10.9`` do not share ``10``'s bucket. A null value hashes to ``2**64 - 1``, so all nulls share the
    fixed bucket ``(2**64 - 1) % num_buckets`` (a null *list* becomes an empty list).

    The output columns are tagged categorical (which replaces a continuous tag) and carry the
    properties ``num_buckets``, ``cardinality`` (= ``num_buckets``), ``domain`` (``min`` 0,
    ``max`` ``num_buckets - 1``, the largest value) and ``embedding_sizes`` that
    embedding-size helpers read.

    Parameters
    ----------
    num_buckets : int or dict
        Number of buckets, for every column or per column name.

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> df = pd.DataFrame({"user": ["alice", "bob", "alice", None]})
    >>> wf = nvt.Workflow(["user"] >> ops.HashBucket(10))
    >>> out = wf.fit_transform(df)["user"]
    >>> int(out[0]) == int(out[2]), bool(out.between(0, 9).all())
    (True, True)
    >>> wf.output_schema["user"].properties["embedding_sizes"]
    {'cardinality': 10, 'dimension': 16}
    """

    row_wise = True

    def __init__(self, num_buckets: int | Mapping[str, int]) -> None:
        self.num_buckets = num_buckets

    def validate_input(self, input_schema: Schema, col_selector: ColumnSelector) -> None:
        for name in col_selector.names:
            buckets_for(self.num_buckets, name, "HashBucket")
            require_hashable(input_schema[name], "HashBucket")

    def transform(self, col_selector: ColumnSelector, df: Frame) -> Frame:
        backend = backend_for(df)
        out = {}
        for name in col_selector.names:
            count = buckets_for(self.num_buckets, name, "HashBucket")
            buckets, dtype = np.uint64(count), bucket_dtype(count)
            column = df[name]
            if backend.is_list_dtype(column.dtype):
                offsets = backend.list_offsets(column)
                hashed = backend.hash_values(backend.list_values_series(column))
                out[name] = backend.list_from_values_offsets(
                    (hashed % buckets).astype(dtype), offsets, index=df.index, name=name
                )
            else:
                hashed = backend.hash_values(column)
                out[name] = backend.series((hashed % buckets).astype(dtype), index=df.index, name=name)
        return backend.frame_from_dict(out, index=df.index)

    def array_kernels(self, col_selector: ColumnSelector, input_schema: Schema) -> list[Kernel] | None:
        def make(names: list[str], source: str, target: str) -> Any:
            counts = np.array([[buckets_for(self.num_buckets, name, "HashBucket")] for name in names], dtype=np.uint64)
            return lambda block: Block((hashes(block, source) % counts).astype(target))

        return elementwise_kernels(
            col_selector.names, input_schema, lambda name, source: bucket_dtype(buckets_for(self.num_buckets, name, "HashBucket")), make
        )

    def _full_column_schema(self, col_name: str, input_schema: Schema) -> ColumnSchema:
        column = self._source_column_schema(col_name, input_schema)
        count = buckets_for(self.num_buckets, col_name, "HashBucket")
        return categorical_column(column, count, bool(column.is_list), dtype=bucket_dtype(count))


def bucket_dtype(num_buckets: int) -> str:
    """NVTabular's int32 for bucket numbers, or int64 when ``num_buckets`` exceeds int32."""
    return "int32" if num_buckets <= 2**31 else "int64"


def buckets_for(num_buckets: Any, key: Any, op_name: str) -> int:
    """``num_buckets`` for one column (or cross), checked: an int >= 1."""
    if isinstance(num_buckets, Mapping):
        if key not in num_buckets:
            raise KeyError(f"{op_name} num_buckets has no entry for column {key!r}; it has {sorted(map(str, num_buckets))}")
        value = num_buckets[key]
    else:
        value = num_buckets
    if not isinstance(value, Integral) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{op_name} num_buckets for column {key!r} must be an integer >= 1, got {value!r}")
    return int(value)


def require_hashable(column: ColumnSchema, op_name: str) -> None:
    """TypeError naming the column unless its (element) dtype has a stable hash."""
    dtype = column.element_dtype.lower()
    if dtype == "string" or dtype.lstrip("u").startswith(("int", "float")) or dtype in ("bool", "boolean"):
        return
    raise TypeError(
        f"{op_name} hashes strings, integers, booleans and floats, but column {column.name!r} "
        f"has dtype {column.dtype}"
    )


def categorical_column(column: ColumnSchema, cardinality: int, is_list: bool, dtype: str) -> ColumnSchema:
    """A categorical output column with ``cardinality`` distinct indices ``0..n-1``."""
    column = column.with_dtype(f"list<{dtype}>" if is_list else dtype)
    # NVTabular 23.08's tags: CATEGORICAL (+ LIST); it had no "hashed" tag.
    column = column.with_tags([Tags.CATEGORICAL, *([Tags.LIST] if is_list else [])])
    return column.with_properties(
        num_buckets=cardinality,
        cardinality=cardinality,
        domain={"min": 0, "max": cardinality - 1, "name": column.name},
        embedding_sizes={"cardinality": cardinality, "dimension": embedding_dimension(cardinality)},
    )
