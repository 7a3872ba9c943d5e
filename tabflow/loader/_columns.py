"""What each loader reads and delivers: column roles from the arguments or the schema's tags,
the chunk builder that converts them, and the batch format.

A *columns* object is made from the loader's input schema and its own arguments (everything
but the shared :class:`~tabflow.loader.options.LoaderOptions`). It has ``read`` (the columns
to read), ``builder`` (frame -> named tensors, see :mod:`tabflow.loader._builders`),
``format(batch)`` (named tensors -> what the loader yields), ``cat_names``, ``cont_names``,
``label_names`` and ``output_schema``.

Examples
--------
>>> from tabflow.loader._columns import TupleColumns
>>> from tabflow.schema import ColumnSchema, Schema
>>> schema = Schema([ColumnSchema("c", dtype="int32"), ColumnSchema("y", dtype="int64")])
>>> columns = TupleColumns(schema, cats=["c"], conts=[], labels=["y"])
>>> columns.read, columns.output_schema.dtypes
(['c', 'y'], {'c': 'int64', 'y': 'float32'})
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import torch

from tabflow.loader._builders import (
    ColumnSpec,
    DictBuilder,
    TupleBuilder,
    natural_dtype,
    ragged_coordinates,
    widths,
)
from tabflow.loader._tensors import Ragged
from tabflow.loader._transforms import (
    FrameTransform,
    TransformingBuilder,
    split_transforms,
)
from tabflow.loader.keys import offsets_key, values_key
from tabflow.schema import Schema, Tags

__all__ = ["TupleColumns", "DictColumns", "async_itr_columns"]


def _check_columns(schema: Schema, names: Any, role: str) -> list[str]:
    if isinstance(names, (int, float)) or not (isinstance(names, str) or hasattr(names, "__iter__")):
        raise TypeError(
            f"{role} columns must be column names, got {names!r}; the arguments come in NVTabular's "
            "order (dataset, cats, conts, labels, batch_size, ...): pass batch_size=... by keyword"
        )
    names = [names] if isinstance(names, str) else list(names)
    missing = [n for n in names if n not in schema]
    if missing:
        raise KeyError(f"{role} column(s) {missing} are not in the dataset; its columns are {schema.column_names}")
    return names


def _tagged(schema: Schema, tag: Tags) -> list[str]:
    return schema.select_by_tag(tag).column_names


def _schema_of(schema: Schema, dtypes: Mapping[str, str]) -> Schema:
    """The columns of ``dtypes`` from ``schema``, with the dtypes their tensors have."""
    return Schema([schema[name].with_dtype(dtype, is_list=schema[name].is_list) for name, dtype in dtypes.items()])


def async_itr_columns(schema: Schema, cats: Sequence[str] | None = None, conts: Sequence[str] | None = None,
                      labels: Sequence[str] | None = None, sparse_names: Sequence[str] | None = None,
                      sparse_max: Mapping[str, int] | None = None, sparse_as_dense: bool = False) -> Any:
    """``TorchAsyncItr``'s columns: the ``(x_cat, x_cont, y)`` tuples of scalar columns, or, when
    a chosen column is a list or a sparse argument is given, the ``(inputs, targets)`` dicts
    NVTabular 23.08's ``TorchAsyncItr`` gave (those of :class:`DictColumns`)."""
    cat_names = _check_columns(schema, _tagged(schema, Tags.CATEGORICAL) if cats is None else cats, "categorical")
    cont_names = _check_columns(schema, _tagged(schema, Tags.CONTINUOUS) if conts is None else conts, "continuous")
    label_names = _check_columns(schema, _tagged(schema, Tags.TARGET) if labels is None else labels, "label")
    lists = any(schema[name].is_list for name in [*cat_names, *cont_names])
    if lists or sparse_names or sparse_max or sparse_as_dense:
        return DictColumns(schema, cats=cat_names, conts=cont_names, labels=label_names, sparse_names=sparse_names,
                           sparse_max=sparse_max, sparse_as_dense=sparse_as_dense)
    return TupleColumns(schema, cat_names, cont_names, label_names)


class TupleColumns:
    """``TorchAsyncItr``: ``(x_cat int64, x_cont float32, y float32)``; scalar columns only."""

    #: How many leading elements of a batch are model inputs (fastai's ``n_inp``).
    n_inp = 2

    def __init__(self, schema: Schema, cats: Sequence[str] | None = None, conts: Sequence[str] | None = None,
                 labels: Sequence[str] | None = None) -> None:
        self.cat_names = _check_columns(schema, _tagged(schema, Tags.CATEGORICAL) if cats is None else cats, "categorical")
        self.cont_names = _check_columns(schema, _tagged(schema, Tags.CONTINUOUS) if conts is None else conts, "continuous")
        self.label_names = _check_columns(schema, _tagged(schema, Tags.TARGET) if labels is None else labels, "label")
        for name in [*self.cat_names, *self.cont_names, *self.label_names]:
            column = schema[name]
            if column.is_list:
                raise TypeError(
                    f"column {name!r} is a list (multi-hot) column; the (x_cat, x_cont, y) tuples hold "
                    "scalar columns only, and a target must be scalar"
                )
            natural_dtype(str(column.dtype))  # raises for strings, naming the dtype
        self.read = list(dict.fromkeys([*self.cat_names, *self.cont_names, *self.label_names]))
        self.builder = TupleBuilder(self.cat_names, self.cont_names, self.label_names)
        delivered = {**{n: "int64" for n in self.cat_names}, **{n: "float32" for n in [*self.cont_names, *self.label_names]}}
        self.output_schema = _schema_of(schema, delivered)

    def format(self, batch: Mapping[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return batch["cats"], batch["conts"], batch["labels"]


class DictColumns:
    """``Loader``: ``(inputs, targets)``, list columns as values/offsets, padded or sparse,
    or dense ``[bs, *inner]`` where the schema fixes their shape."""

    n_inp = 1

    def __init__(self, schema: Schema, cats: Sequence[str] | None = None, conts: Sequence[str] | None = None,
                 labels: Sequence[str] | None = None, transforms: Any = None, sparse_names: Sequence[str] | None = None,
                 sparse_max: Mapping[str, int] | None = None, sparse_as_dense: bool = False) -> None:
        self.label_names = _check_columns(schema, _tagged(schema, Tags.TARGET) if labels is None else labels, "label")
        if cats is None and conts is None:
            # The dict form feeds every column to the model unless told otherwise.
            self.cat_names = [n for n in _tagged(schema, Tags.CATEGORICAL) if n not in self.label_names]
            self.cont_names = [n for n in _tagged(schema, Tags.CONTINUOUS) if n not in self.label_names]
            self.input_names = [n for n in schema.column_names if n not in self.label_names]
        else:
            self.cat_names = _check_columns(schema, cats or [], "categorical")
            self.cont_names = _check_columns(schema, conts or [], "continuous")
            self.input_names = list(dict.fromkeys([*self.cat_names, *self.cont_names]))
        self.sparse_names = list(sparse_names or [])
        self.sparse_max = widths(sparse_max)
        self.sparse_as_dense = bool(sparse_as_dense)
        graph, self.batch_functions = split_transforms(transforms)
        roles = {**{n: "int64" for n in self.cat_names}, **{n: "float32" for n in self.cont_names}}
        transform = None
        if graph:
            transform = FrameTransform(graph, schema, self.input_names, self.label_names)
            # The ops' outputs are the inputs now; a column they pass through keeps its role.
            self.input_names = transform.output_schema.column_names
            schema = Schema([*transform.output_schema, *(schema[name] for name in self.label_names)])
        specs = [self._spec(schema[name], name, roles) for name in dict.fromkeys([*self.input_names, *self.label_names])]
        unknown = [n for n in self.sparse_names if n not in schema]
        if unknown:
            raise KeyError(f"sparse_names {unknown} are not in the dataset; its columns are {schema.column_names}")
        self.specs = {spec.name: spec for spec in specs}
        builder: Callable = DictBuilder(specs)
        self.read = [spec.name for spec in specs]
        if transform is not None:
            builder, self.read = TransformingBuilder(transform, builder), transform.read
        self.builder = builder
        self.output_schema = _schema_of(schema, {spec.name: spec.dtype for spec in specs})

    def _spec(self, column: Any, name: str, roles: Mapping[str, str]) -> ColumnSpec:
        natural = natural_dtype(column.element_dtype)  # raises for strings, naming the dtype
        dtype = natural if name in self.label_names else roles.get(name, natural)
        if not column.is_list:
            if name in self.sparse_names:
                raise TypeError(f"sparse_names lists {name!r}, which is not a list (multi-hot) column")
            return ColumnSpec(name, dtype)
        shape = column.shape
        if name in self.label_names:
            if shape.is_ragged:
                raise TypeError(f"target column {name!r} is a ragged list column; targets must be scalar columns or lists of a fixed shape")
            return ColumnSpec(name, dtype, is_list=True, inner=tuple(int(dim) for dim in shape.dims[1:]))
        padded = self.sparse_as_dense and name in self.sparse_max
        if name in self.sparse_names or padded:
            if len(shape) > 2:
                raise TypeError(
                    f"list column {name!r} has shape {shape.as_tuple} (lists of lists); sparse and padded tensors "
                    "are [batch, width]: leave it out of sparse_names and sparse_max to load it "
                    + ("as one dense tensor" if not shape.is_ragged else "as values and offsets")
                )
            return ColumnSpec(name, dtype, is_list=True, width=self.sparse_max.get(name), dense=padded)
        if not shape.is_ragged:
            # The schema fixes every dimension of a row: one dense [rows, *inner] tensor,
            # as merlin's loader gives a column that is not ragged.
            return ColumnSpec(name, dtype, is_list=True, inner=tuple(int(dim) for dim in shape.dims[1:]))
        if self.sparse_as_dense:
            raise ValueError(f"sparse_as_dense=True needs the padded width of list column {name!r}: pass sparse_max={{{name!r}: ...}}")
        return ColumnSpec(name, dtype, is_list=True)

    def format(self, batch: Mapping[str, Any]) -> tuple[dict[str, torch.Tensor], Any]:
        inputs: dict[str, torch.Tensor] = {}
        for name in self.input_names:
            column = batch[name]
            if not isinstance(column, Ragged):
                inputs[name] = column
            elif name in self.sparse_names:
                inputs[name] = _to_sparse(column, self.specs[name].width)
            else:
                inputs[values_key(name)] = column.values
                inputs[offsets_key(name)] = column.offsets
        if not self.label_names:
            targets = None
        elif len(self.label_names) == 1:
            targets = batch[self.label_names[0]]
        else:
            targets = {name: batch[name] for name in self.label_names}
        out: Any = (inputs, targets)
        for function in self.batch_functions:
            out = function(out)
        return out


def _to_sparse(column: Ragged, width: int | None) -> torch.Tensor:
    rows, cols = ragged_coordinates(column)
    nrows = len(column.host_offsets) - 1
    if width is None:
        width = int((column.host_offsets[1:] - column.host_offsets[:-1]).max()) if nrows else 0
    # Coordinates come sorted by (row, position) without duplicates: the tensor is coalesced
    # by construction, so the invariant check would only cost time.
    return torch.sparse_coo_tensor(
        torch.stack([rows, cols]), column.values, size=(nrows, width), check_invariants=False, is_coalesced=True
    )
