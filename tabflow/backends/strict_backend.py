"""The strict engine: the pandas engine with cuDF's and CuPy's rules, for the CPU tests.

On the cuDF engine an ``EngineArray`` (:mod:`tabflow.backends.protocol`) is a CuPy array in
GPU memory, and frames follow cuDF's rules where pandas is lenient. Code that breaks those
rules runs on a laptop and fails only on a GPU. The strict engine closes the gap where the
rules can be modelled on pandas: it is the pandas engine (same frames, same results), with
the rules below. Each names the cuDF source it models: rapidsai/cudf, ``python/cudf/cudf/``,
at 6a22d1d (the 26.10 line; the lines may move in later releases).

Engine arrays (CuPy's rules). Every ``EngineArray`` the engine hands out is a
:class:`DeviceArray` and :attr:`~StrictBackend.xp` is a NumPy namespace with CuPy's rules:

- ``xp`` functions, ufuncs and a :class:`DeviceArray`'s methods and operators take device
  arrays and scalars; a :class:`numpy.ndarray` among their arguments is a ``TypeError``;
- a :class:`DeviceArray` does not turn into a NumPy array implicitly anywhere (``numpy.asarray``,
  pyarrow, NumPy functions beside host arrays): :meth:`~StrictBackend.to_host` moves it,
  ``float()`` / ``int()`` / ``bool()`` / ``.item()`` / ``.tolist()`` read values out, as CuPy
  allows; only pandas may take one (``series[mask]``, ``Series(values)``), as cuDF's objects
  take CuPy arrays;
- ``xp`` has only the functions CuPy's namespace has (:data:`CUPY_NAMES`, CuPy 14.2's).

Frames (cuDF's rules):

- **No masked dtypes in what ops see.** cuDF columns are all nullable and carry NumPy dtypes
  (``ColumnBase.from_arrow``, ``core/column/column.py``), so the cuDF engine names an
  ``Int64`` column ``int64``. Here :meth:`~StrictBackend.canonical_dtype`, asked by an op
  (a module of ``tabflow.ops`` or ``tabflow.loader.ops``), answers the plain name too: an op
  that plans a dtype from the column's runtime dtype instead of its planned one
  (:func:`tabflow.graph.columns.input_dtype`) plans what it would plan on cuDF.
- **Lossy fills refused.** cuDF fills nulls in the column's own dtype and refuses a value that
  dtype cannot hold exactly: ``NumericalColumn._validate_fillna_value``
  (``core/column/numerical.py:1183``) raises "Cannot safely cast non-equivalent float to
  int64" when ``can_cast_safely`` (``numerical.py:1211``) says no (0.5 into integers, 2 into
  booleans); a column without nulls is copied unchecked (``ColumnBase.fillna``,
  ``core/column/column.py:1943``). :meth:`~StrictBackend.fill_nulls` refuses the same fills.
- **Frames built from series aligned by index.** ``cudf.DataFrame(columns, index=index)``
  reindexes every series to ``index`` (``_mapping_to_column_accessor``,
  ``core/dataframe.py:905``), and reindexing refuses repeated labels even where they equal
  the target's (``IndexedFrame._reindex``, ``core/indexed_frame.py:4048``); the cuDF engine
  takes series that hold ``index`` itself as they are. Here
  :meth:`~StrictBackend.frame_from_dict` refuses, with an index of repeated labels (a
  partition after ``Dataset.shuffle_by_keys``), a series that does not hold that index (the
  object or a view of it, pandas' ``Index.is_``).
- **Group and merge output in no particular order.** cuDF's ``groupby(sort=False)`` gives
  groups in libcudf's hash order (``core/groupby/groupby.py:339``, ``:1392``) and a merge
  without ``sort`` its rows in the hash join's order (``Merge._gather_maps``,
  ``core/join/join.py:260``); pandas gives first appearance and the left order. While the
  engine is on, those calls made by tabflow's code outside the backends (ops, the graph,
  readers) return their rows reversed.
- **List casts refused.** ``ColumnBase.astype`` raises ``NotImplementedError`` for a list
  column cast to another list dtype (``core/column/column.py:2319``); so does a list
  series' ``astype`` called by tabflow's code outside the backends while the engine is on
  (:meth:`Backend.astype` itself casts lists on either engine).

What the model cannot see: the cuDF backend's own code (``cudf_backend.py`` never runs here:
its tests need a GPU, ``pytest -m gpu``); dtypes an op reads without asking its backend
(``series.dtype`` itself, :func:`tabflow.schema.dtypes.canonical_dtype`), which stay pandas'
masked ones; pandas' methods called inside the backends or by pandas itself, and by code
outside tabflow; pandas objects converting themselves to the host,
which cuDF refuses (``Series.tolist``, ``core/single_column_frame.py:225``; ``__array__``,
``core/frame.py:603``; iteration, ``core/mixins/notiterable.py``): the scan of frame methods
in ``tests/backends/test_protocol.py`` flags such calls instead, as it flags
``sort_values(kind=...)``, which cuDF warns about (``core/indexed_frame.py:3810``); NaN made
null when cuDF builds a column from an array (``as_column``, ``core/column/column.py:3367``),
where pandas' NaN already is its missing value (``isna``, ``count``, ``sum``, ``fillna``
treat both alike), and NaN read from files, which cuDF counts as a value (``Backend.to_float``
makes it null, tested on cuDF); float sums in another order (cuDF's hash group-by adds a
group's values in no fixed order); pandas extension dtypes inside cuDF frames after
``cudf.from_pandas`` (``core/column/column.py:3447``), which the cuDF backend turns into
cuDF's own (:meth:`Backend.with_list_columns`).

Turned on with :func:`tabflow.backends.strict_engine`; the test suite runs every
engine-parametrised test on it too, and ``--strict-engine`` runs the whole suite on it.

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
from tabflow.schema import dtypes as dtype_names

__all__ = ["DeviceArray", "StrictBackend", "BACKEND", "device_namespace", "CUPY_NAMES", "frame_rules"]

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


#: The public names of CuPy's top-level namespace (``cupy/__init__.py`` of CuPy 14.2.0): the
#: strict engine's ``xp`` offers a NumPy function only under one of these names, so code that
#: calls a NumPy function CuPy lacks (``xp.insert``, ``xp.nanpercentile``, ``xp.geomspace``)
#: fails on the CPU as it would on a GPU.
CUPY_NAMES = frozenset("""
    AxisError ComplexWarning DataSource ElementwiseKernel Inf Infinity ModuleDeprecationWarning NAN NINF
    NZERO NaN PINF PZERO RankWarning RawKernel RawModule ReductionKernel TooHardError
    VisibleDeprecationWarning abs absolute acos acosh add all allclose alltrue amax amin angle
    annotations any append apply_along_axis apply_over_axes arange arccos arccosh arcsin arcsinh arctan
    arctan2 arctanh argmax argmin argpartition argsort argwhere around array array2string array_equal
    array_equiv array_repr array_split array_str asanyarray asarray asarray_chkfinite ascontiguousarray
    asfarray asfortranarray asin asinh asnumpy astype atan atan2 atanh atleast_1d atleast_2d atleast_3d
    average bartlett base_repr binary_repr bincount bitwise_and bitwise_count bitwise_invert
    bitwise_left_shift bitwise_not bitwise_or bitwise_right_shift bitwise_xor blackman bool bool_
    broadcast broadcast_arrays broadcast_shapes broadcast_to byte byte_bounds c_ can_cast cbrt cdouble
    ceil cfloat choose clear_memo clip column_stack common_type complex128 complex64 complex_
    complexfloating compress concat concatenate conj conjugate convolve copy copysign copyto corrcoef
    correlate cos cosh count_nonzero cov cross csingle cuda cumprod cumproduct cumsum cumulative_prod
    cumulative_sum deg2rad degrees delete diag diag_indices diag_indices_from diagflat diagonal diff
    digitize disable_experimental_feature_warning disp divide divmod dot double dsplit dstack dtype e
    ediff1d einsum empty empty_like equal euler_gamma exceptions exp exp2 expand_dims expm1 extract eye
    fabs fft fill_diagonal find_common_type finfo fix flatiter flatnonzero flip fliplr flipud float16
    float32 float64 float_ float_power floating floor floor_divide fmax fmin fmod
    format_float_positional format_float_scientific format_parser frexp fromDlpack from_dlpack
    frombuffer fromfile fromfunction fromiter fromstring full full_like fuse gcd generic genfromtxt
    get_array_module get_array_wrap get_default_memory_pool get_default_pinned_memory_pool
    get_printoptions gradient greater greater_equal half hamming hanning heaviside histogram histogram2d
    histogramdd hsplit hstack hypot i0 identity iinfo imag in1d index_exp indices inexact inf infty
    inner int16 int32 int64 int8 int_ intc integer interp intersect1d intp invert is_available isclose
    iscomplex iscomplexobj isdtype isfinite isfortran isin isinf isnan isneginf isposinf isreal
    isrealobj isscalar issctype issubclass_ issubdtype issubsctype iterable ix_ kaiser kron lcm ldexp
    left_shift less less_equal lexsort linalg linspace load loadtxt log log10 log1p log2 logaddexp
    logaddexp2 logical_and logical_not logical_or logical_xor logspace long longlong make_aligned_dtype
    mask_indices matmul matrix_transpose max maximum may_share_memory mean median memoize meshgrid mgrid
    min min_scalar_type minimum mintypecode mod modf moveaxis msort multiply nan nan_to_num nanargmax
    nanargmin nancumprod nancumsum nanmax nanmean nanmedian nanmin nanprod nanstd nansum nanvar ndarray
    ndim ndindex negative newaxis nextafter nonzero not_equal number obj2sctype ogrid ones ones_like
    outer packbits pad partition percentile permute_dims pi piecewise place poly poly1d polyadd polyfit
    polymul polynomial polysub polyval positive pow power printoptions prod product promote_types ptp
    put put_along_axis putmask quantile r_ rad2deg radians random ravel ravel_multi_index real
    real_if_close reciprocal remainder repeat require reshape resize result_type right_shift rint roll
    rollaxis roots rot90 round round_ row_stack s_ safe_eval save savetxt savez savez_compressed
    sctype2char searchsorted select set_printoptions set_string_function setdiff1d setxor1d shape
    shares_memory short show_config sign signbit signedinteger sin sinc single singlecomplex sinh size
    sometrue sort sort_complex split sqrt square squeeze stack std subtract sum swapaxes take
    take_along_axis tan tanh tensordot testing tile trace transpose trapezoid trapz tri tril
    tril_indices tril_indices_from trim_zeros triu triu_indices triu_indices_from true_divide trunc
    typename ubyte ufunc uint uint16 uint32 uint64 uint8 uintc uintp ulong ulonglong union1d unique
    unique_all unique_counts unique_inverse unique_values unpackbits unravel_index unsignedinteger
    unwrap ushort vander var vdot vectorize vsplit vstack where who zeros zeros_like
""".split())
_NOT_IN_CUPY = (
    "{name}() is not in CuPy's namespace (strict engine, as backend.xp is CuPy on a GPU): use a function CuPy "
    "has, or compute on the host with NumPy"
)


class _DeviceNamespace(ModuleType):
    """NumPy (or one of its submodules) with CuPy's rules: functions take device arrays and
    scalars and return device arrays; dtypes and constants are NumPy's. At the top level only
    the functions CuPy has (:data:`CUPY_NAMES`) are there; submodules (``xp.random``,
    ``xp.linalg``) are NumPy's whole."""

    def __init__(self, module: ModuleType, top_level: bool = False) -> None:
        super().__init__(f"strict:{module.__name__}")
        self._module = module
        self._top_level = top_level

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
        if self._top_level and name not in CUPY_NAMES:
            raise AttributeError(_NOT_IN_CUPY.format(name=name))
        return _device_function(value)


def _from_any(value: Any, dtype: Any = None, **kwargs: Any) -> DeviceArray:
    return DeviceArray(np.array(_unwrap(value), dtype=dtype, **kwargs))


#: The strict engine's ``xp``: NumPy with CuPy's rules (see :class:`DeviceArray`).
device_namespace = _DeviceNamespace(np, top_level=True)


class _DeviceRandomState:
    """NumPy's global ``RandomState`` drawing device arrays (as CuPy's does)."""

    def __init__(self, state: np.random.RandomState) -> None:
        self._state = state

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._state, name)
        return _device_function(attribute) if callable(attribute) else attribute


# ------------------------------------------------------------------- cuDF's rules
#: Modules whose questions about dtypes get cuDF's answers (no masked names): the ops.
_OP_MODULES = ("tabflow.ops.", "tabflow.loader.ops.")
_REPEATED_LABELS = (
    "cannot reindex on an axis with duplicate labels (strict engine, as cuDF: a frame built from series "
    "reindexes each one that does not hold the index itself): build the column{s} {names} on the frame's "
    "own index (the series of the frame, or backend.with_index(result, frame.index))"
)


def _asked_by(prefixes: tuple[str, ...], depth: int = 2) -> bool:
    """Whether the code that called the function ``depth - 1`` frames up is in a module whose
    name starts with one of ``prefixes``."""
    return sys._getframe(depth).f_globals.get("__name__", "").startswith(prefixes)


def _fill_is_exact(value: Any, dtype: np.dtype) -> bool:
    """Whether cuDF takes ``value`` as a fill of a column of NumPy ``dtype``: the value's
    Arrow scalar casts to it without change (``NumericalColumn.can_cast_safely``)."""
    kind = dtype.kind
    if isinstance(value, (bool, np.bool_)):
        return kind == "b"
    if kind == "b" or not isinstance(value, (int, float, np.integer, np.floating)):
        return kind not in "iufb"
    if kind in "iu":
        if isinstance(value, (float, np.floating)) and not float(value).is_integer():
            return False
        info = np.iinfo(dtype)
        return bool(info.min <= value <= info.max)
    if kind == "f" and isinstance(value, (int, np.integer)):
        return abs(int(value)) <= 2 ** (np.finfo(dtype).nmant + 1)
    return True


#: Group-by methods whose output rows are the groups (reversed while the rules are on).
_GROUP_METHODS = (
    "agg", "aggregate", "sum", "count", "size", "mean", "min", "max", "first", "last", "std", "var", "nunique",
    "median", "prod",
)
_LIST_CAST = (
    "Casting {dtype} columns not currently supported (strict engine, as cuDF refuses list casts): cast list "
    "columns with backend.astype, which casts them on either engine"
)
#: ``(owner, name, what the owner's own dict held)`` of every pandas method replaced while
#: the rules are on.
_REPLACED: list[tuple[type, str, Any]] = []


def _asked_by_tabflow(depth: int = 2) -> bool:
    """Whether the caller ``depth - 1`` frames up is tabflow's code outside the backends (the
    backends implement the engines and may rely on pandas' own behaviour)."""
    module = sys._getframe(depth).f_globals.get("__name__", "")
    return module.startswith("tabflow.") and not module.startswith("tabflow.backends.")


def _groups_unordered(method: Callable[..., Any]) -> Callable[..., Any]:
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = method(self, *args, **kwargs)
        if not self.sort and _asked_by_tabflow() and isinstance(out, (pd.DataFrame, pd.Series)):
            return out.iloc[::-1]  # cuDF: libcudf's hash order, not first appearance
        return out

    call.__name__, call.__doc__ = method.__name__, method.__doc__
    return call


def _merge_unordered(method: Callable[..., Any]) -> Callable[..., Any]:
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = method(self, *args, **kwargs)
        by_index = kwargs.get("left_index") or kwargs.get("right_index")
        if not kwargs.get("sort") and not by_index and _asked_by_tabflow():
            return out.iloc[::-1].reset_index(drop=True)  # cuDF: the hash join's order
        return out

    call.__name__, call.__doc__ = method.__name__, method.__doc__
    return call


def _list_casts_refused(method: Callable[..., Any]) -> Callable[..., Any]:
    def call(self: Any, dtype: Any, *args: Any, **kwargs: Any) -> Any:
        if _is_arrow_list(self.dtype) and _asked_by_tabflow():
            target = pd.api.types.pandas_dtype(dtype)
            if target != self.dtype and _is_arrow_list(target):
                raise NotImplementedError(_LIST_CAST.format(dtype=self.dtype))
        return method(self, dtype, *args, **kwargs)

    call.__name__, call.__doc__ = method.__name__, method.__doc__
    return call


def _is_arrow_list(dtype: Any) -> bool:
    import pyarrow as pa

    return isinstance(dtype, pd.ArrowDtype) and (pa.types.is_list(dtype.pyarrow_dtype) or pa.types.is_large_list(dtype.pyarrow_dtype))


def frame_rules(on: bool) -> None:
    """Turn on (or off) cuDF's rules for pandas' own methods called by tabflow's code outside
    the backends (see the module): group-bys without ``sort`` and merges without ``sort``
    give their rows reversed, a list series' ``astype`` to another list dtype is a
    ``NotImplementedError``. :func:`tabflow.backends.strict_engine` turns them on for as long
    as a strict block is open.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.backends import strict_engine
    >>> with strict_engine():  # turns the rules on; asked from outside tabflow: pandas' order
    ...     pd.DataFrame({"k": [2, 1, 2]}).groupby("k", sort=False).size().index.tolist()
    [2, 1]
    """
    from pandas.api.typing import DataFrameGroupBy, SeriesGroupBy

    if not on:
        while _REPLACED:
            owner, name, original = _REPLACED.pop()
            if original is None:
                delattr(owner, name)
            else:
                setattr(owner, name, original)
        return
    if _REPLACED:
        return
    replacements = [(owner, name, _groups_unordered) for owner in (DataFrameGroupBy, SeriesGroupBy) for name in _GROUP_METHODS]
    replacements += [(pd.DataFrame, "merge", _merge_unordered), (pd.Series, "astype", _list_casts_refused)]
    for owner, name, rule in replacements:
        _REPLACED.append((owner, name, owner.__dict__.get(name)))
        setattr(owner, name, rule(getattr(owner, name)))


class StrictBackend(PandasBackend):
    """The pandas engine with cuDF's and CuPy's rules (see the module): engine arrays are
    :class:`DeviceArray`.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.backends.strict_backend import BACKEND
    >>> mask = BACKEND.null_mask(pd.Series([1.0, None]))
    >>> type(mask).__name__, BACKEND.to_host(mask).tolist()
    ('DeviceArray', [False, True])
    >>> BACKEND.fill_nulls(pd.Series([1, None], dtype="Int64"), 0.5, "float64")
    Traceback (most recent call last):
    ...
    TypeError: Cannot safely cast non-equivalent float to int64 (strict engine, as cuDF fills nulls in the column's dtype): convert the column first (backend.to_float) or fill with a value it holds
    """

    @property
    def xp(self) -> Any:
        """NumPy with CuPy's rules: functions take and return :class:`DeviceArray`."""
        return device_namespace

    # ----------------------------------------------------------- cuDF's rules
    def canonical_dtype(self, dtype: Any) -> str:
        """The pandas engine's name; asked by an op, the plain name of a masked dtype, as the
        cuDF engine names its columns (``"int64"`` for ``Int64``)."""
        name = super().canonical_dtype(dtype)
        return dtype_names.unmasked_dtype(name) if _asked_by(_OP_MODULES) else name

    def fill_nulls(self, series: pd.Series, value: Any, canonical: str) -> pd.Series:
        """The pandas engine's fill, refusing what cuDF refuses: a value the column's own
        dtype cannot hold exactly, where the column holds a null."""
        dtype = getattr(series.dtype, "numpy_dtype", series.dtype)
        if isinstance(dtype, np.dtype) and not _fill_is_exact(value, dtype) and bool(series.isna().any()):
            raise TypeError(
                f"Cannot safely cast non-equivalent {type(value).__name__} to {dtype.name} (strict engine, as cuDF "
                "fills nulls in the column's dtype): convert the column first (backend.to_float) or fill with a "
                "value it holds"
            )
        return super().fill_nulls(series, value, canonical)

    def frame_from_dict(self, columns: Mapping[str, Any], index: Any = None) -> pd.DataFrame:
        """The pandas engine's frame, refusing what cuDF refuses: with an index of repeated
        labels, a series that does not hold that index object (cuDF would reindex it)."""
        columns = {k: _unwrap(v) for k, v in columns.items()}
        index = _unwrap(index)
        if index is not None and not index.is_unique:
            # ``is_``: the same index through pandas' views (``frame[name].index`` is a view).
            foreign = [name for name, value in columns.items() if isinstance(value, pd.Series) and not value.index.is_(index)]
            if foreign:
                raise ValueError(_REPEATED_LABELS.format(s="s" if len(foreign) > 1 else "", names=foreign))
        return super().frame_from_dict(columns, index=index)

    # ----------------------------------------------------------- host moves
    def to_host(self, obj: Any) -> Any:
        return obj.get() if isinstance(obj, DeviceArray) else obj

    def from_host(self, obj: Any) -> Any:
        return DeviceArray(obj) if isinstance(obj, np.ndarray) else obj

    # ------------------------------------------------ what takes engine arrays
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
