"""Framework-neutral batches: NumPy arrays on the CPU, CuPy arrays on a GPU.

:class:`Loader` (also importable as ``LoaderBase``, merlin-dataloader's name for it) reads
a dataset through the same pipeline as the PyTorch loaders (:mod:`tabflow.loader._loader`):
the same partition plan, shuffling, rank split, read-ahead thread, ``peek``, ``epochs``,
``map`` and state. Only the last step differs: the chunk's columns are handed over as
arrays of the framework-neutral kind (views of the loader's buffers, no copy) instead of
tensors. The loader itself runs on PyTorch's CPU kernels, so PyTorch must be installed.

Examples
--------
>>> import pandas as pd
>>> import tabflow as nvt
>>> from tabflow.loader.array import Loader
>>> from tabflow.schema import Tags
>>> ds = nvt.Dataset(pd.DataFrame({"a": [1, 2, 3], "y": [0.0, 1.0, 0.0]}))
>>> ds.schema["y"] = ds.schema["y"].with_tags(Tags.TARGET)
>>> inputs, y = next(iter(Loader(ds, batch_size=2)))
>>> type(inputs["a"]).__name__, inputs["a"].tolist(), y.tolist()
('ndarray', [1, 2], [0.0, 1.0])
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

from tabflow.backends import array_library
from tabflow.loader._builders import ColumnSpec
from tabflow.loader._columns import DictColumns
from tabflow.loader._loader import LoaderBase as _LoaderBase
from tabflow.loader._loader import arguments_of
from tabflow.loader._tensors import Ragged
from tabflow.loader.keys import offsets_key, values_key
from tabflow.schema import Schema
from tabflow.schema import dtypes as schema_dtypes
from tabflow.table import TensorColumn, TensorTable

__all__ = ["Loader", "LoaderBase"]

# torch has no gather for these (index_select is not implemented): delivered as int64.
_WIDENED = {"uint16": "int64", "uint32": "int64", "uint64": "int64"}


class ArrayColumns(DictColumns):
    """Every column of the schema in its own dtype (strings as host arrays); targets are
    the columns tagged TARGET."""

    def __init__(self, schema: Schema, transforms: Any = None) -> None:
        if not schema.column_names:
            raise ValueError(
                "the dataset has no columns to load: Neither Categorical or Continuous columns were found by "
                "the dataloader. Give the Dataset a frame or files with columns (and tag the targets TARGET)."
            )
        self._transformed = transforms is not None
        super().__init__(schema, transforms=transforms)
        # A ragged list of fixed-shape items (embeddings of a list of ids): its values come
        # flat from the builder and are given back their item shape.
        self._items: dict[str, tuple[int, ...]] = {}
        for column in self.output_schema:
            dims = column.shape.dims
            if column.is_list and column.shape.is_ragged and dims is not None and len(dims) > 2:
                inner = [dim.max for dim in dims[2:]]
                if all(size is not None and dim.min == size for size, dim in zip(inner, dims[2:])):
                    self._items[column.name] = tuple(int(size) for size in inner)
        if self._transformed:
            # merlin's output schema after transforms is that of the inputs only.
            self.output_schema = Schema([c for c in self.output_schema if c.name not in self.label_names])

    def _spec(self, column: Any, name: str, roles: Mapping[str, str]) -> ColumnSpec:
        element = schema_dtypes.unmasked_dtype(column.element_dtype)
        if schema_dtypes.is_string(element):
            if column.is_list:
                raise TypeError(f"column {name!r} holds lists of strings; encode them first (e.g. with Categorify)")
            return ColumnSpec(name, "string")
        spec = super()._spec(column, name, {})
        if schema_dtypes.is_numeric(element) or schema_dtypes.is_bool(element):
            spec.dtype = _WIDENED.get(element, element)
        return spec

    def format(self, batch: Mapping[str, Any]) -> Any:
        columns: dict[str, Any] = {}
        for name in self.input_names:
            column = batch[name]
            if isinstance(column, Ragged):
                values, offsets = _array(column.values), _array(column.offsets)
                inner = self._items.get(name)
                if inner is not None:
                    size = int(np.prod(inner))
                    values, offsets = values.reshape(-1, *inner), offsets // size
                columns[name] = (values, offsets)
            else:
                columns[name] = _array(column)
        inputs: Any
        if self._transformed:
            inputs = TensorTable({name: TensorColumn(*c) if isinstance(c, tuple) else c for name, c in columns.items()})
        else:
            inputs = {}
            for name, column in columns.items():
                if isinstance(column, tuple):
                    inputs[values_key(name)], inputs[offsets_key(name)] = column
                else:
                    inputs[name] = column
        if not self.label_names:
            targets = None
        elif len(self.label_names) == 1:
            targets = _array(batch[self.label_names[0]])
        else:
            targets = {name: _array(batch[name]) for name in self.label_names}
        out: Any = (inputs, targets)
        for function in self.batch_functions:
            out = function(out)
        return out


def _array(tensor: Any) -> Any:
    """A batch tensor as NumPy (host) or CuPy (GPU), sharing its memory."""
    if isinstance(tensor, np.ndarray):
        return tensor
    if tensor.device.type == "cpu":
        return tensor.numpy()
    return array_library("cudf").from_dlpack(tensor)


def _device(dataset: Any, device: Any) -> Any:
    # As merlin: a dataset in host memory is loaded on the CPU whatever the device says.
    if getattr(dataset, "engine", "pandas") != "cudf":
        return "cpu"
    if device is None or device == "cpu":
        return device
    if isinstance(device, str) and device.isdigit():
        return int(device)
    return device


class Loader(_LoaderBase):
    """Batches ``(inputs, targets)`` of NumPy arrays (CuPy on a GPU), with merlin's signature.

    ``inputs`` holds every column not tagged TARGET in its own dtype (unsigned integers of
    16 bits and more as int64; strings as an object array): a scalar column as ``[bs]``, a
    column whose schema fixes its shape as ``[bs, *shape]``, a ragged list column as
    ``name__values`` and ``name__offsets`` (``bs + 1`` int64 offsets). With ``transforms``,
    ``inputs`` is a :class:`~tabflow.table.TensorTable` of the transformed columns, as
    merlin's loader gives it (``inputs["a"].values``, ``.offsets``). ``targets`` is the one
    TARGET column, a dict of them, or None.

    Parameters
    ----------
    dataset : tabflow.Dataset
    batch_size : int
    shuffle : bool, default False
    seed_fn : callable, optional
    parts_per_chunk : int, default 1
    global_size, global_rank : int, optional
    drop_last : bool, default False
    transforms : op, node, Workflow, callable, or a list of them, optional
        As :class:`~tabflow.loader.torch.Loader`'s (e.g. ``[EmbeddingOperator(...)]``,
        ``["a"] >> Padding(5)``); they act on the input columns.
    device : optional
        Ignored for a dataset in host memory (the batches are NumPy, as in merlin); for a
        cuDF dataset, the GPU (an index, ``"0"``, ``"cuda:1"``) or ``"cpu"``.

    Attributes
    ----------
    input_schema, output_schema : Schema
        The dataset's columns, and those delivered (without the targets when there are
        transforms, as in merlin).

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow.loader.array import Loader
    >>> from tabflow.loader.ops import Padding
    >>> df = pd.DataFrame({"a": [[1], [1, 2], [1, 2, 3]]})
    >>> with Loader(nvt.Dataset(df), batch_size=3) as loader:
    ...     inputs, _ = loader.peek()
    >>> inputs["a__values"].tolist(), inputs["a__offsets"].tolist()
    ([1, 1, 2, 1, 2, 3], [0, 1, 3, 6])
    >>> with Loader(nvt.Dataset(df), batch_size=3, transforms=["a"] >> Padding(3)) as loader:
    ...     inputs, _ = loader.peek()
    >>> inputs["a"].values.tolist()
    [[1, 0, 0], [1, 2, 0], [1, 2, 3]]
    """

    def __init__(
        self,
        dataset: Any,
        batch_size: int,
        shuffle: bool = False,
        seed_fn: Callable[[], int] | None = None,
        parts_per_chunk: int = 1,
        global_size: int | None = None,
        global_rank: int | None = None,
        drop_last: bool = False,
        transforms: Any = None,
        device: Any = None,
    ) -> None:
        device = _device(dataset, device)
        super().__init__(dataset, arguments_of(locals()), ArrayColumns)

    @property
    def transforms(self) -> Any:
        """``transforms`` as given."""
        return self._arguments["transforms"]

    @property
    def _output_schema(self) -> Schema:
        # merlin's tests and scripts read the private name.
        return self.output_schema


#: merlin-dataloader's name of the framework-neutral loader.
LoaderBase = Loader
