"""Tables of arrays or tensors: merlin's ``TensorTable`` and ``TensorColumn``.

A :class:`TensorColumn` is one column of a batch held as an array of a framework (NumPy,
CuPy or PyTorch): ``values`` alone for a scalar or fixed-shape column, ``values`` and
``offsets`` for a ragged list column, where row ``i`` is ``values[offsets[i]:offsets[i + 1]]``
(``values`` may have more dimensions, e.g. one embedding vector per item). A
:class:`TensorTable` is named columns of one framework on one device; it converts to and
from a flat dict (list columns as ``name__values`` / ``name__offsets``, the spelling of
:mod:`tabflow.backends.list_keys`) and to and from data frames.

Nothing here imports a framework: arrays are recognised by the package that defines their
type and moved with their own methods, so the ETL keeps running without PyTorch or CuPy.

Examples
--------
>>> import numpy as np
>>> from tabflow.table import TensorTable
>>> table = TensorTable({"item": np.array([3, 1]), "tags__values": np.array([5, 6, 7]),
...                      "tags__offsets": np.array([0, 2, 3])})
>>> table["tags"][0].tolist(), table["tags"].is_ragged, table.columns
([5, 6], True, ['item', 'tags'])
>>> table.to_df()["tags"].tolist()
[[5, 6], [7]]
"""

from __future__ import annotations

import enum
from typing import Any, Iterator, Mapping

import numpy as np

from tabflow import dtypes as _dtypes
from tabflow.backends import array_library, backend_for, get_backend
from tabflow.backends.list_keys import list_column, offsets_key, values_key
from tabflow.schema import Shape
from tabflow.schema import dtypes as schema_dtypes

__all__ = ["Device", "TensorColumn", "TensorTable"]

_FRAMEWORKS = ("numpy", "cupy", "torch")


class Device(enum.Enum):
    """Where a column's memory is: host (``CPU``) or accelerator (``GPU``)."""

    CPU = 0
    GPU = 1


def _framework(array: Any) -> str:
    package = type(array).__module__.split(".", 1)[0]
    if package not in _FRAMEWORKS:
        raise TypeError(
            f"TensorColumn holds NumPy, CuPy or PyTorch arrays, got {type(array).__module__}.{type(array).__name__}; "
            "convert it first (e.g. np.asarray(...))"
        )
    return package


def _device(array: Any) -> Device:
    framework = _framework(array)
    if framework == "cupy" or (framework == "torch" and array.device.type == "cuda"):
        return Device.GPU
    return Device.CPU


def _host(array: Any) -> np.ndarray:
    """The array as NumPy in host memory (a view where it already is one)."""
    framework = _framework(array)
    if framework == "numpy":
        return array
    if framework == "cupy":
        return array.get()
    return array.detach().cpu().numpy()


def _cupy() -> Any:
    return array_library("cudf")


def _to_cpu(array: Any) -> Any:
    framework = _framework(array)
    if framework == "torch":
        return array.cpu()
    return _host(array)


def _to_gpu(array: Any) -> Any:
    framework = _framework(array)
    if framework == "torch":
        return array.cuda()
    return _cupy().asarray(array)


def _dtype_name(array: Any) -> str:
    if _framework(array) == "torch":
        return str(array.dtype).replace("torch.", "")
    return np.dtype(array.dtype).name


class TensorColumn:
    """One column of a :class:`TensorTable`: ``values``, plus ``offsets`` for a ragged list.

    Parameters
    ----------
    values : array or list of lists
        A NumPy, CuPy or PyTorch array: ``[rows, ...]`` without offsets, the items of every
        row one after the other with them. A list of lists (no ``offsets``) is made into
        NumPy values and offsets.
    offsets : array, optional
        ``rows + 1`` non-decreasing integers from 0 to ``len(values)``, of the same framework
        and device as ``values``.
    dtype : optional
        The element type to report (``values.dtype`` by default).

    Attributes
    ----------
    values, offsets, dtype, device, shape, is_list, is_ragged, is_fixed

    Examples
    --------
    >>> import numpy as np
    >>> from tabflow.table import TensorColumn
    >>> column = TensorColumn(np.arange(6.0).reshape(3, 2), offsets=np.array([0, 1, 3]))
    >>> len(column), column.shape.as_tuple, column[1].tolist()
    (2, (2, (0, None), 2), [[2.0, 3.0], [4.0, 5.0]])
    >>> TensorColumn([[1, 2], [3]]) == TensorColumn(np.array([1, 2, 3]), offsets=np.array([0, 2, 3]))
    True
    """

    def __init__(self, values: Any, offsets: Any = None, dtype: Any = None) -> None:
        if isinstance(values, list):
            if offsets is not None:
                raise ValueError("TensorColumn: give either nested lists, or flat values with offsets, not both")
            lengths = [len(row) for row in values]
            flat = [item for row in values for item in row]
            values, offsets = np.asarray(flat), np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        framework = _framework(values)
        if offsets is not None:
            if _framework(offsets) != framework or _device(offsets) != _device(values):
                raise TypeError(
                    f"TensorColumn: offsets ({type(offsets).__module__}, {_device(offsets).name}) must be of the same "
                    f"framework and device as values ({type(values).__module__}, {_device(values).name})"
                )
            host = _host(offsets)
            if host.ndim != 1 or len(host) == 0 or host.dtype.kind not in "iu":
                raise ValueError(f"TensorColumn: offsets must be a non-empty 1-D integer array, got shape {host.shape} of {host.dtype}")
            if np.any(np.diff(host) < 0):
                raise ValueError("TensorColumn: offsets must be non-decreasing")
            if int(host[-1]) != len(values):
                raise ValueError(f"TensorColumn: the last offset ({int(host[-1])}) must be the number of values ({len(values)})")
        self._values = values
        self._offsets = offsets
        self._dtype = dtype

    # -------------------------------------------------------------- contents
    @property
    def values(self) -> Any:
        return self._values

    @property
    def offsets(self) -> Any:
        return self._offsets

    @property
    def dtype(self) -> Any:
        """The element type as a :class:`tabflow.dtypes.DType`, with the column's shape."""
        return _dtypes.dtype(self._dtype if self._dtype is not None else _dtype_name(self._values)).with_shape(self.shape)

    @property
    def device(self) -> Device:
        return _device(self._values)

    @property
    def framework(self) -> str:
        """``"numpy"``, ``"cupy"`` or ``"torch"``."""
        return _framework(self._values)

    @property
    def shape(self) -> Shape:
        """``(rows, row length or ragged, *item shape)`` for a list, the array's shape otherwise."""
        if self._offsets is None:
            return Shape(tuple(self._values.shape))
        lengths = np.diff(_host(self._offsets))
        width = int(lengths[0]) if len(lengths) and bool((lengths == lengths[0]).all()) else None
        return Shape((len(lengths), width, *self._values.shape[1:]))

    @property
    def is_list(self) -> bool:
        return self.shape.is_list

    @property
    def is_ragged(self) -> bool:
        return self.shape.is_ragged

    @property
    def is_fixed(self) -> bool:
        return self.shape.is_fixed

    def __len__(self) -> int:
        return len(self._offsets) - 1 if self._offsets is not None else len(self._values)

    def __getitem__(self, index: int) -> Any:
        """Row ``index``: an element, or the items of a list row."""
        if self._offsets is None:
            return self._values[index]
        rows = len(self)
        position = index + rows if index < 0 else index
        if not 0 <= position < rows:
            raise IndexError(f"row {index} is out of range for a column of {rows} rows")
        start, stop = (int(x) for x in _host(self._offsets[position : position + 2]))
        return self._values[start:stop]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TensorColumn) or self.framework != other.framework or self.device != other.device:
            return False
        if (self._offsets is None) != (other._offsets is None):
            return False
        same = _arrays_equal(self._values, other._values)
        return same and (self._offsets is None or _arrays_equal(self._offsets, other._offsets))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        offsets = "" if self._offsets is None else f", offsets={self._offsets!r}"
        return f"TensorColumn({self._values!r}{offsets})"

    # -------------------------------------------------------------- moving
    def cpu(self) -> "TensorColumn":
        """The column in host memory: NumPy for CuPy, a CPU tensor for PyTorch (itself if already there)."""
        if self.device is Device.CPU:
            return self
        offsets = None if self._offsets is None else _to_cpu(self._offsets)
        return TensorColumn(_to_cpu(self._values), offsets, dtype=self._dtype)

    def gpu(self) -> "TensorColumn":
        """The column in GPU memory: CuPy for NumPy, a CUDA tensor for PyTorch (itself if already there)."""
        if self.device is Device.GPU:
            return self
        offsets = None if self._offsets is None else _to_gpu(self._offsets)
        return TensorColumn(_to_gpu(self._values), offsets, dtype=self._dtype)


def _arrays_equal(left: Any, right: Any) -> bool:
    a, b = _host(left), _host(right)
    return a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(a, b))


def _column(value: Any) -> TensorColumn:
    if isinstance(value, TensorColumn):
        return value
    if isinstance(value, tuple) and len(value) == 2:
        return TensorColumn(value[0], value[1])
    return TensorColumn(value)


class TensorTable:
    """Named :class:`TensorColumn` s of one framework, on one device, with the same rows.

    Parameters
    ----------
    columns : mapping, optional
        Column name to a :class:`TensorColumn`, an array, a ``(values, offsets)`` pair, or
        flat ``name__values`` / ``name__offsets`` entries (a loader batch, :meth:`to_dict`).

    Notes
    -----
    As merlin's table, ``len(table)`` is the number of columns and iterating gives their
    names; :attr:`num_rows` counts rows.

    Examples
    --------
    >>> import numpy as np
    >>> from tabflow.table import TensorTable
    >>> table = TensorTable({"a": np.array([1, 2]), "b": (np.array([0.5, 1.5, 2.5]), np.array([0, 1, 3]))})
    >>> sorted(table.to_dict()), table.num_rows, table.device
    (['a', 'b__offsets', 'b__values'], 2, <Device.CPU: 0>)
    >>> TensorTable.from_df(table.to_df()) == table
    True
    """

    def __init__(self, columns: Mapping[str, Any] | None = None) -> None:
        grouped: dict[str, Any] = {}
        pairs: dict[str, dict[str, Any]] = {}
        for key, value in (columns or {}).items():
            name = list_column(key)
            if name is None:
                grouped[key] = value
            else:
                pairs.setdefault(name, {})["offsets" if key == offsets_key(name) else "values"] = value
                grouped.setdefault(name, None)
        for name, pair in pairs.items():
            if set(pair) != {"values", "offsets"}:
                raise ValueError(f"TensorTable: {name!r} needs both {values_key(name)!r} and {offsets_key(name)!r}")
            grouped[name] = (pair["values"], pair["offsets"])
        self._columns: dict[str, TensorColumn] = {}
        for name, value in grouped.items():
            self[name] = value

    @classmethod
    def from_df(cls, df: Any) -> "TensorTable":
        """A table of a pandas (NumPy columns) or cuDF frame (CuPy columns).

        Scalar columns keep their dtype; a list column becomes values and offsets, and a
        list of fixed-length lists (embeddings) becomes ``[items, length]`` values. A null
        is a ``ValueError`` naming the column.
        """
        backend = backend_for(df)
        # A pandas frame's columns become NumPy arrays whatever wraps the engine's arrays (the
        # strict engine's stand-ins for CuPy); a cuDF frame's stay CuPy arrays on the GPU.
        tensor = backend.to_host if backend.name == "pandas" else (lambda array: array)
        columns: dict[str, Any] = {}
        for name in df.columns:
            series = df[name]
            if not backend.is_list_dtype(series.dtype):
                columns[name] = tensor(backend.column_values(series, backend.canonical_dtype(series.dtype)))
                continue
            element = backend.canonical_dtype(series.dtype)
            while schema_dtypes.is_list(element):
                element = schema_dtypes.element_dtype(element)
            values, levels = backend.list_column_levels(series, element)
            inner = []
            for level in levels[1:]:
                lengths = level[1:] - level[:-1]
                if len(lengths) and not bool((lengths == lengths[0]).all()):
                    raise ValueError(f"TensorTable.from_df: column {name!r} has lists of ragged lists; only the outer level may be ragged")
                inner.append(int(lengths[0]) if len(lengths) else 0)
            columns[name] = TensorColumn(tensor(values.reshape(-1, *inner)), tensor(levels[0]))
        return cls(columns)

    def _check(self, name: str, column: TensorColumn) -> None:
        others = [c for key, c in self._columns.items() if key != name]
        if not others:
            return
        first = others[0]
        if column.framework != first.framework or column.device != first.device:
            raise TypeError(
                f"TensorTable: column {name!r} is {column.framework} on {column.device.name}, the others "
                f"{first.framework} on {first.device.name}; a table holds one framework on one device"
            )
        if len(column) != len(first):
            raise ValueError(f"TensorTable: column {name!r} has {len(column)} rows, the others {len(first)}")

    # ------------------------------------------------------------ mapping
    def __getitem__(self, key: Any) -> Any:
        """A column by name, or a table of the columns of a list of names."""
        if isinstance(key, list):
            return TensorTable({name: self._columns[name] for name in key})
        return self._columns[key]

    def __setitem__(self, key: str, value: Any) -> None:
        column = _column(value)
        self._check(key, column)
        self._columns[key] = column

    def __delitem__(self, key: str) -> None:
        del self._columns[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._columns)

    def __len__(self) -> int:
        return len(self._columns)

    def __contains__(self, key: object) -> bool:
        return key in self._columns

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TensorTable) and self._columns == other._columns

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"TensorTable({self._columns!r})"

    def keys(self) -> Any:
        return self._columns.keys()

    def items(self) -> Any:
        return self._columns.items()

    def values(self) -> Any:
        return self._columns.values()

    def pop(self, key: str) -> TensorColumn:
        return self._columns.pop(key)

    def update(self, other: "TensorTable") -> None:
        for name, column in other.items():
            self[name] = column

    def copy(self) -> "TensorTable":
        """A new table holding the same columns."""
        return TensorTable(dict(self._columns))

    @property
    def columns(self) -> list[str]:
        return list(self._columns)

    @columns.setter
    def columns(self, names: list[str]) -> None:
        names = list(names)
        if len(names) != len(self._columns):
            raise ValueError(f"TensorTable: {len(names)} names given for {len(self._columns)} columns")
        self._columns = dict(zip(names, self._columns.values()))

    @property
    def num_rows(self) -> int:
        return len(next(iter(self._columns.values()))) if self._columns else 0

    @property
    def device(self) -> Device | None:
        return next(iter(self._columns.values())).device if self._columns else None

    @property
    def column_type(self) -> str | None:
        """The framework of the columns (``"numpy"``, ``"cupy"`` or ``"torch"``)."""
        return next(iter(self._columns.values())).framework if self._columns else None

    def dtypes(self) -> list[Any]:
        return [column.dtype for column in self._columns.values()]

    # ------------------------------------------------------------ conversions
    def to_dict(self) -> dict[str, Any]:
        """A flat dict of arrays: list columns as ``name__values`` and ``name__offsets``."""
        out: dict[str, Any] = {}
        for name, column in self._columns.items():
            if column.offsets is None:
                out[name] = column.values
            else:
                out[values_key(name)] = column.values
                out[offsets_key(name)] = column.offsets
        return out

    def cpu(self) -> "TensorTable":
        return TensorTable({name: column.cpu() for name, column in self._columns.items()})

    def gpu(self) -> "TensorTable":
        return TensorTable({name: column.gpu() for name, column in self._columns.items()})

    def to_df(self) -> Any:
        """A data frame: pandas for columns in host memory, cuDF for GPU ones.

        ``values`` with more than one dimension become lists (of lists) per row.
        """
        engine = "cudf" if self.device is Device.GPU else "pandas"
        backend = get_backend(engine)
        series = {}
        for name, column in self._columns.items():
            values = column.values
            if column.framework == "torch":
                values = _cupy().from_dlpack(values) if engine == "cudf" else _host(values)
            item = _nested(backend, values)
            if column.offsets is not None:
                item = backend.list_from_values_offsets(item, _host(column.offsets))
            series[name] = item
        return backend.frame_from_dict(series)


def _nested(backend: Any, values: Any) -> Any:
    """``[n, a, b, ...]`` values as ``n`` rows of nested lists (a 1-D array as it is)."""
    item, shape = values.reshape(-1), values.shape
    for depth in range(len(shape) - 1, 0, -1):
        lists = int(np.prod(shape[:depth]))
        item = backend.list_from_values_offsets(item, np.arange(lists + 1, dtype=np.int64) * shape[depth])
    return item
