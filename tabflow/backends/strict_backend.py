"""The strict engine: the pandas engine with engine arrays that behave like GPU arrays.

On the cuDF engine an ``EngineArray`` (:mod:`tabflow.backends.protocol`) is a CuPy array in
GPU memory: CuPy functions refuse NumPy arrays, NumPy refuses to convert a CuPy array
implicitly, and an expression mixing the two is a ``TypeError``. On the pandas engine both
kinds are NumPy arrays, so code that mixes them runs on a laptop and fails only on a GPU.
The strict engine closes that gap for tests: it is the pandas engine (same frames, same
results), but every ``EngineArray`` it hands out is a :class:`DeviceArray` and its
:attr:`~StrictBackend.xp` is a NumPy namespace with CuPy's rules:

- ``xp`` functions, ufuncs and a :class:`DeviceArray`'s methods and operators take device
  arrays and scalars; a :class:`numpy.ndarray` among their arguments is a ``TypeError``;
- a :class:`DeviceArray` does not turn into a NumPy array implicitly (``numpy.asarray``,
  pyarrow, NumPy functions beside host arrays): :meth:`~StrictBackend.to_host` moves it,
  ``float()`` / ``int()`` / ``bool()`` / ``.item()`` / ``.tolist()`` read values out, as CuPy
  allows;
- pandas objects accept device arrays (``series[mask]``, ``Series(values)``), as cuDF's
  accept CuPy arrays.

Turned on with :func:`tabflow.backends.strict_engine`; the test suite runs every
engine-parametrised test on it too, so an op that mixes host and device arrays fails on the
CPU, in CI, before a user's GPU sees it.

Examples
--------
>>> import numpy as np
>>> import pandas as pd
>>> from tabflow.backends import backend_for, strict_engine
>>> with strict_engine():
...     backend = backend_for(pd.Series([1.0, np.nan]))
...     values = backend.column_values(pd.Series([1.0, np.nan]), "float64", na_value=np.nan)
...     kept = values[backend.xp.isfinite(values)]
...     print(type(values).__name__, float(kept.sum()), backend.to_host(kept).tolist())
DeviceArray 1.0 [1.0]
>>> with strict_engine():
...     backend.xp.isfinite(np.array([1.0]))  # a host array given to the device's functions
Traceback (most recent call last):
...
TypeError: a host (NumPy) array was given where a device array is expected (strict engine, as CuPy on a GPU): move it with backend.from_host(...), or compute on the host with NumPy
"""

from __future__ import annotations

import sys
import types
from types import ModuleType
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from tabflow.backends.pandas_backend import PandasBackend
from tabflow.backends.protocol import Allocate

__all__ = ["DeviceArray", "StrictBackend", "BACKEND", "device_namespace"]

_HOST_ARGUMENT = (
    "a host (NumPy) array was given where a device array is expected (strict engine, as CuPy on a GPU): "
    "move it with backend.from_host(...), or compute on the host with NumPy"
)
_IMPLICIT_HOST = (
    "a device array cannot become a host (NumPy) array implicitly (strict engine, as CuPy on a GPU): "
    "move it with backend.to_host(...), or compute with backend.xp"
)
#: Modules whose own conversions of device arrays are allowed: pandas objects accept
#: device arrays as cuDF objects accept CuPy arrays.
_FRAME_LIBRARIES = ("pandas",)


class DeviceArray(np.lib.mixins.NDArrayOperatorsMixin):
    """An array the strict engine treats as living in device memory.

    It holds a NumPy array and follows CuPy's rules (see the module's docstring): operators,
    methods and NumPy functions work on device arrays and scalars and return device arrays
    (reductions give 0-d arrays, as CuPy's do); a host array among the operands, or an
    implicit conversion to NumPy outside pandas, is a ``TypeError``.

    Examples
    --------
    >>> import numpy as np
    >>> from tabflow.backends.strict_backend import DeviceArray
    >>> a = DeviceArray(np.arange(4))
    >>> (a * 2)[a > 1].tolist(), int(a.sum()), a.get().tolist()
    ([4, 6], 6, [0, 1, 2, 3])
    >>> a + np.ones(4)
    Traceback (most recent call last):
    ...
    TypeError: a host (NumPy) array was given where a device array is expected (strict engine, as CuPy on a GPU): move it with backend.from_host(...), or compute on the host with NumPy
    """

    __slots__ = ("_array",)

    def __init__(self, array: np.ndarray) -> None:
        self._array = array

    # ------------------------------------------------------------- attributes
    @property
    def shape(self) -> tuple[int, ...]:
        return self._array.shape

    @property
    def dtype(self) -> np.dtype:
        return self._array.dtype

    @property
    def ndim(self) -> int:
        return self._array.ndim

    @property
    def size(self) -> int:
        return self._array.size

    @property
    def nbytes(self) -> int:
        return self._array.nbytes

    @property
    def itemsize(self) -> int:
        return self._array.itemsize

    @property
    def strides(self) -> tuple[int, ...]:
        return self._array.strides

    @property
    def T(self) -> "DeviceArray":  # noqa: N802 - NumPy's name
        return DeviceArray(self._array.T)

    def __len__(self) -> int:
        return len(self._array)

    def __iter__(self) -> Any:
        return (_to_device(item) for item in self._array)

    def __repr__(self) -> str:
        return f"DeviceArray({self._array!r})"

    # ------------------------------------------------ values out, as CuPy allows
    def get(self) -> np.ndarray:
        """A host copy (CuPy's name)."""
        return self._array.copy()

    def tolist(self) -> Any:
        return self._array.tolist()

    def item(self, *args: Any) -> Any:
        return self._array.item(*args)

    def __float__(self) -> float:
        return float(self._array)

    def __int__(self) -> int:
        return int(self._array)

    def __index__(self) -> int:
        return self._array.__index__()

    def __bool__(self) -> bool:
        return bool(self._array)

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._array.__dlpack_device__()

    # ------------------------------------------------------ indexing and methods
    def __getitem__(self, key: Any) -> "DeviceArray":
        return _to_device(self._array[_index(key)])

    def __setitem__(self, key: Any, value: Any) -> None:
        self._array[_index(key)] = _on_device(value)

    def __getattr__(self, name: str) -> Any:
        # ndarray's other methods (astype, sum, cumsum, reshape, ...) with CuPy's rules. Not
        # its protocols: NumPy would read ``__array_interface__`` and convert without a word.
        if name.startswith("__"):
            raise AttributeError(name)
        attribute = getattr(self._array, name)
        if not callable(attribute):
            return _to_device(attribute)
        return _device_function(attribute)

    # ---------------------------------------------------------- NumPy protocols
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if not _called_by_frame_library():
            raise TypeError(_IMPLICIT_HOST)
        return self._array if dtype is None else self._array.astype(dtype, copy=False)

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if _called_by_frame_library():
            return _host_call(getattr(ufunc, method), inputs, kwargs)
        if "out" in kwargs:
            kwargs["out"] = tuple(_on_device(o) for o in kwargs["out"])
        return _to_device(getattr(ufunc, method)(*(_on_device(i) for i in inputs), **kwargs))

    def __array_function__(self, func: Callable[..., Any], types: Any, args: Any, kwargs: Any) -> Any:
        if _called_by_frame_library():
            return _host_call(func, args, kwargs)
        return _to_device(func(*_on_device(args), **_on_device(kwargs)))


def _called_by_frame_library() -> bool:
    """True when the code that reached a NumPy entry point is pandas' own (NumPy's and this
    module's frames skipped)."""
    frame: types.FrameType | None = sys._getframe(2)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module != __name__ and not module.startswith("numpy"):
            return module.startswith(_FRAME_LIBRARIES)
        frame = frame.f_back
    return False


def _host_call(func: Callable[..., Any], args: Any, kwargs: Any) -> Any:
    return func(*_unwrap(args), **_unwrap(kwargs))


def _unwrap(value: Any) -> Any:
    """Device arrays as the NumPy arrays they hold (containers walked), nothing checked."""
    if isinstance(value, DeviceArray):
        return value._array
    if isinstance(value, (list, tuple)):
        return type(value)(_unwrap(v) for v in value)
    if isinstance(value, dict):
        return {k: _unwrap(v) for k, v in value.items()}
    return value


def _on_device(value: Any) -> Any:
    """An operand of a device computation as NumPy: device arrays unwrapped, scalars kept, a
    host array refused (containers walked)."""
    if isinstance(value, DeviceArray):
        return value._array
    if isinstance(value, np.ndarray) and value.ndim:
        # 0-d arrays pass as the scalars they are: NumPy makes one of a scalar (np.uint64(3) == x).
        raise TypeError(_HOST_ARGUMENT)
    if isinstance(value, (list, tuple)):
        return type(value)(_on_device(v) for v in value)
    if isinstance(value, dict):
        return {k: _on_device(v) for k, v in value.items()}
    return value


def _index(key: Any) -> Any:
    """An index expression: device arrays unwrapped; host index arrays are accepted, as
    CuPy copies them to the device."""
    if isinstance(key, tuple):
        return tuple(_index(k) for k in key)
    return key._array if isinstance(key, DeviceArray) else key


def _to_device(value: Any) -> Any:
    """A result as device arrays: NumPy arrays and NumPy scalars (0-d, as CuPy returns
    reductions) become :class:`DeviceArray`; containers are walked, other values kept."""
    if isinstance(value, np.ndarray):
        return DeviceArray(value)
    if isinstance(value, np.generic):
        return DeviceArray(np.asarray(value))
    if isinstance(value, tuple):
        return tuple(_to_device(v) for v in value)
    if isinstance(value, list):
        return [_to_device(v) for v in value]
    return value


def _device_function(function: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        return _to_device(function(*_on_device(args), **_on_device(kwargs)))

    call.__name__ = getattr(function, "__name__", "function")
    call.__doc__ = getattr(function, "__doc__", None)
    return call


class _DeviceNamespace(ModuleType):
    """NumPy (or one of its submodules) with CuPy's rules: functions take device arrays and
    scalars and return device arrays; dtypes and constants are NumPy's."""

    def __init__(self, module: ModuleType) -> None:
        super().__init__(f"strict:{module.__name__}")
        self._module = module

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._module, name)
        if name == "ndarray":
            return DeviceArray
        if name in ("asarray", "array", "ascontiguousarray"):
            return _from_any  # CuPy copies host data to the device here
        if isinstance(value, ModuleType):
            return _DeviceNamespace(value)
        if isinstance(value, type) or not callable(value):
            return value  # dtypes (xp.int64), constants (xp.nan), classes
        return _device_function(value)


def _from_any(value: Any, dtype: Any = None, **kwargs: Any) -> DeviceArray:
    return DeviceArray(np.array(_unwrap(value), dtype=dtype, **kwargs))


#: The strict engine's ``xp``: NumPy with CuPy's rules (see :class:`DeviceArray`).
device_namespace = _DeviceNamespace(np)


class _DeviceRandomState:
    """NumPy's global ``RandomState`` drawing device arrays (as CuPy's does)."""

    def __init__(self, state: np.random.RandomState) -> None:
        self._state = state

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._state, name)
        return _device_function(attribute) if callable(attribute) else attribute


class StrictBackend(PandasBackend):
    """The pandas engine whose engine arrays are :class:`DeviceArray` (see the module).

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.backends.strict_backend import BACKEND
    >>> mask = BACKEND.null_mask(pd.Series([1.0, None]))
    >>> type(mask).__name__, BACKEND.to_host(mask).tolist()
    ('DeviceArray', [False, True])
    """

    @property
    def xp(self) -> Any:
        """NumPy with CuPy's rules: functions take and return :class:`DeviceArray`."""
        return device_namespace

    # ----------------------------------------------------------- host moves
    def to_host(self, obj: Any) -> Any:
        return obj.get() if isinstance(obj, DeviceArray) else obj

    def from_host(self, obj: Any) -> Any:
        return DeviceArray(obj) if isinstance(obj, np.ndarray) else obj

    # ------------------------------------------------ what takes engine arrays
    def frame_from_dict(self, columns: Mapping[str, Any], index: Any = None) -> pd.DataFrame:
        return super().frame_from_dict({k: _unwrap(v) for k, v in columns.items()}, index=_unwrap(index))

    def series(self, values: Any, name: str | None = None, index: Any = None, dtype: Any = None) -> pd.Series:
        return super().series(_unwrap(values), name=name, index=_unwrap(index), dtype=dtype)

    def take_rows(self, frame: pd.DataFrame, positions: Any) -> pd.DataFrame:
        return super().take_rows(frame, _unwrap(positions))

    def list_from_values_offsets(self, values: Any, offsets: Any, index: Any = None, name: str | None = None) -> pd.Series:
        return super().list_from_values_offsets(_unwrap(values), _unwrap(offsets), index=index, name=name)

    def coo_matrix(self, data: Any, row: Any, col: Any, shape: tuple[int, int] | None = None) -> Any:
        return super().coo_matrix(_unwrap(data), _unwrap(row), _unwrap(col), shape=shape)

    # ------------------------------------------------ what returns engine arrays
    def list_offsets(self, series: pd.Series) -> Any:
        return _to_device(super().list_offsets(series))

    def list_lengths(self, series: pd.Series) -> Any:
        return _to_device(_unwrap(super().list_lengths(series)))

    def column_values(self, series: pd.Series, dtype: str, na_value: float | None = None) -> Any:
        return _to_device(super().column_values(series, dtype, na_value=na_value))

    def columns_matrix(
        self, frame: pd.DataFrame, names: Sequence[str], dtype: str, na_value: float | None = None,
        allocate: Allocate | None = None,
    ) -> Any:
        return _to_device(super().columns_matrix(frame, names, dtype, na_value=na_value, allocate=allocate))

    def list_column_values(self, series: pd.Series, dtype: str) -> tuple[Any, Any]:
        return _to_device(super().list_column_values(series, dtype))

    def list_column_levels(self, series: pd.Series, dtype: str) -> tuple[Any, tuple[Any, ...]]:
        values, levels = super().list_column_levels(series, dtype)
        return _to_device(values), tuple(_to_device(level) for level in levels)

    def lookup(self, table: Any, keys: Any) -> Any:
        return _to_device(super().lookup(table, keys))

    def map_distinct(self, series: Any, function: Callable[[Any], Any], dtype: str) -> Any:
        """The pandas engine's answers, as a device array."""
        answers = super().map_distinct(series, function, dtype)
        return None if answers is None else _to_device(answers)

    def null_mask(self, obj: Any) -> Any:
        return _to_device(super().null_mask(obj))

    def hash_rows(self, frame: pd.DataFrame) -> Any:
        return _to_device(super().hash_rows(frame))

    def hash_values(self, series: pd.Series) -> Any:
        return _to_device(super().hash_values(series))

    def sparse_rowwise_dot(self, left: Any, left_rows: Any, right: Any, right_rows: Any) -> Any:
        return _to_device(super().sparse_rowwise_dot(left, _unwrap(left_rows), right, _unwrap(right_rows)))

    def global_random_state(self) -> Any:
        return _DeviceRandomState(super().global_random_state())


BACKEND = StrictBackend()
