"""Canonical dtype names: the one place that says what a dtype name means.

A schema names each column's dtype without naming an engine, and both engines read the
same names:

- numpy names for plain columns: ``"int64"``, ``"float32"``, ``"bool"``, ``"datetime64[ns]"``;
- masked names for integer and boolean columns that hold nulls: ``"Int64"``, ``"UInt8"``,
  ``"boolean"`` (pandas' masked dtypes, also ``"Float32"``/``"Float64"``). cuDF columns are
  all nullable, so on that engine a masked name means its plain dtype;
- ``"string"`` for text (``"str"``, ``"object"`` and the Arrow spellings are aliases);
- ``"list<element>"`` for list (multi-hot) columns, e.g. ``"list<int64>"``;
- ``"unknown"`` for a column whose dtype nobody has said (a schema written by hand without
  dtypes, as merlin's ``dtype=None``). Data always has a dtype, so a schema read from data
  never holds it.

:func:`canonical_dtype` turns what users write (numpy dtypes and types, Python ``int``,
``float``, ``str``, ``bool``, pandas and Arrow dtypes, aliases such as ``"float"``) into
these names.

The **nullable-integer rule**: an integer or boolean column that holds (or, read from a text
file, may hold) a null is named by its masked dtype, so that a column's dtype never depends on
whether one partition happens to hold a null. Floats hold nulls as NaN and keep numpy names.

Everything here works on names alone (and on Arrow types, which are engine-neutral);
turning a name into a pandas or cuDF dtype object is the backends' job.

Examples
--------
>>> from tabflow.schema import dtypes
>>> dtypes.nullable_dtype("int32"), dtypes.nullable_dtype("bool"), dtypes.nullable_dtype("float32")
('Int32', 'boolean', 'float32')
>>> dtypes.list_dtype("int64"), dtypes.element_dtype("list<int64>"), dtypes.is_list("list<int64>")
('list<int64>', 'int64', True)
>>> dtypes.is_integer("UInt8"), dtypes.is_float("Float64"), dtypes.is_string("str")
(True, True, True)
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pyarrow as pa

__all__ = [
    "UNKNOWN",
    "canonical_dtype",
    "is_unknown",
    "STRING",
    "STRING_NAMES",
    "MASKED",
    "is_list",
    "list_dtype",
    "element_dtype",
    "nullable_dtype",
    "unmasked_dtype",
    "is_masked",
    "is_string",
    "numpy_kind",
    "is_integer",
    "is_float",
    "is_bool",
    "is_numeric",
    "arrow_dtype_name",
    "arrow_canonical_dtype",
    "arrow_type",
]

#: The name of a dtype nobody has given (merlin's ``md.unknown``).
UNKNOWN = "unknown"
#: The canonical name of a string column.
STRING = "string"
#: Names that all mean a string column.
STRING_NAMES = frozenset({"string", "str", "object", "large_string", "string[pyarrow]", "string[python]"})

# Plain integer and boolean names and the masked name the nullable-integer rule gives them.
_NULLABLE = {
    "int8": "Int8", "int16": "Int16", "int32": "Int32", "int64": "Int64",
    "uint8": "UInt8", "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64",
    "bool": "boolean",
}
#: Masked (nullable) names and the numpy dtype name each stands for.
MASKED = {**{masked: plain for plain, masked in _NULLABLE.items()}, "Float32": "float32", "Float64": "float64"}

_LIST_RE = re.compile(r"^list<(.+)>$")


# --------------------------------------------------------------------- canonical names
def canonical_dtype(dtype: Any) -> str:
    """The canonical name of a dtype given in any of the ways users write one.

    ``None`` is :data:`UNKNOWN`. Strings numpy does not know (such as pandas'
    ``"datetime64[ns, UTC]"``) are kept as given: an engine may know them.

    Raises
    ------
    TypeError
        For an object that is no dtype at all (a list of tags given where the dtype goes).

    Examples
    --------
    >>> import numpy as np
    >>> from tabflow.schema.dtypes import canonical_dtype
    >>> [canonical_dtype(d) for d in (np.int32, np.dtype("float32"), int, float, str, bool)]
    ['int32', 'float32', 'int64', 'float64', 'string', 'bool']
    >>> [canonical_dtype(d) for d in ("float", "f4", "object", "Int64", "list<i8>", None)]
    ['float64', 'float32', 'string', 'Int64', 'list<int64>', 'unknown']
    """
    if dtype is None:
        return UNKNOWN
    if isinstance(dtype, str):
        if dtype == UNKNOWN or dtype in MASKED:
            return dtype
        if is_string(dtype):
            return STRING
        if is_list(dtype):
            return list_dtype(canonical_dtype(element_dtype(dtype)))
        try:
            return _numpy_name(np.dtype(dtype))
        except TypeError:
            return dtype
    if isinstance(dtype, pa.DataType):
        return arrow_dtype_name(dtype)
    if isinstance(getattr(dtype, "pyarrow_dtype", None), pa.DataType):  # pandas.ArrowDtype
        return arrow_dtype_name(dtype.pyarrow_dtype)
    if dtype is str:
        return STRING
    canonical = getattr(dtype, "canonical_name", None)  # tabflow.dtypes.DType
    if isinstance(canonical, str):
        return canonical
    if getattr(dtype, "element_type", None) is not None and str(dtype) == "list":  # cudf.ListDtype
        return list_dtype(canonical_dtype(dtype.element_type))
    if type(dtype).__module__ == "torch":
        return canonical_dtype(str(dtype).rpartition(".")[2])
    try:
        return _numpy_name(np.dtype(dtype))
    except TypeError:
        pass
    name = getattr(dtype, "name", None)  # pandas extension dtypes: "Int64", "string", "boolean"
    if isinstance(name, str):
        return canonical_dtype(name)
    raise TypeError(f"{dtype!r} ({type(dtype).__name__}) is not a dtype")


def _numpy_name(dtype: np.dtype) -> str:
    # numpy holds text as objects, fixed-width unicode or bytes: all are string columns here.
    return STRING if dtype.kind in "OUS" else dtype.name


def is_unknown(name: str) -> bool:
    """True for :data:`UNKNOWN` (also as a list's element).

    Examples
    --------
    >>> from tabflow.schema.dtypes import is_unknown
    >>> is_unknown("unknown"), is_unknown("list<unknown>"), is_unknown("int64")
    (True, True, False)
    """
    return element_dtype(str(name)) == UNKNOWN


# ------------------------------------------------------------------------------- lists
def is_list(name: str) -> bool:
    """True for a list column's name (``"list<...>"``).

    Examples
    --------
    >>> from tabflow.schema.dtypes import is_list
    >>> is_list("list<string>"), is_list("string")
    (True, False)
    """
    return _LIST_RE.match(str(name)) is not None


def list_dtype(element: str) -> str:
    """The name of a list column whose elements are named ``element``.

    Examples
    --------
    >>> from tabflow.schema.dtypes import list_dtype
    >>> list_dtype("float32")
    'list<float32>'
    """
    return f"list<{element}>"


def element_dtype(name: str) -> str:
    """The dtype of one element: the inner name of a list, the name itself otherwise.

    Examples
    --------
    >>> from tabflow.schema.dtypes import element_dtype
    >>> element_dtype("list<list<int8>>"), element_dtype("int8")
    ('list<int8>', 'int8')
    """
    match = _LIST_RE.match(str(name))
    return match.group(1) if match else str(name)


# ------------------------------------------------------------------------ masked names
def nullable_dtype(name: str) -> str:
    """The nullable-integer rule: the masked name of an integer or boolean dtype.

    Every other name (floats, strings, lists, names that are masked already) is returned
    unchanged.

    Examples
    --------
    >>> from tabflow.schema.dtypes import nullable_dtype
    >>> [nullable_dtype(n) for n in ("int64", "uint16", "bool", "Int8", "float64", "string")]
    ['Int64', 'UInt16', 'boolean', 'Int8', 'float64', 'string']
    """
    return _NULLABLE.get(name, name)


def unmasked_dtype(name: str) -> str:
    """The numpy name a masked name stands for (other names unchanged, list elements too).

    Examples
    --------
    >>> from tabflow.schema.dtypes import unmasked_dtype
    >>> unmasked_dtype("UInt32"), unmasked_dtype("boolean"), unmasked_dtype("list<Int64>"), unmasked_dtype("int8")
    ('uint32', 'bool', 'list<int64>', 'int8')
    """
    if is_list(name):
        return list_dtype(unmasked_dtype(element_dtype(name)))
    return MASKED.get(name, name)


def is_masked(name: str) -> bool:
    """True for a masked (nullable) name such as ``"Int64"`` or ``"boolean"``.

    Examples
    --------
    >>> from tabflow.schema.dtypes import is_masked
    >>> is_masked("Int64"), is_masked("int64")
    (True, False)
    """
    return name in MASKED


# -------------------------------------------------------------------------- predicates
def is_string(name: str) -> bool:
    """True for a string column's name or one of its aliases.

    Examples
    --------
    >>> from tabflow.schema.dtypes import is_string
    >>> is_string("string"), is_string("object"), is_string("list<string>")
    (True, True, False)
    """
    return name in STRING_NAMES


def numpy_kind(name: str) -> str:
    """The numpy kind letter of a scalar dtype name (masked names count as their plain
    dtype); ``""`` for strings, lists and names numpy does not know.

    Examples
    --------
    >>> from tabflow.schema.dtypes import numpy_kind
    >>> numpy_kind("Int64"), numpy_kind("float32"), numpy_kind("boolean"), numpy_kind("string")
    ('i', 'f', 'b', '')
    """
    if not isinstance(name, str) or is_string(name) or is_list(name):
        return ""
    try:
        return np.dtype(MASKED.get(name, name)).kind
    except TypeError:
        return ""


def is_integer(name: str) -> bool:
    """True for signed and unsigned integer names, plain or masked.

    Examples
    --------
    >>> from tabflow.schema.dtypes import is_integer
    >>> is_integer("uint8"), is_integer("Int64"), is_integer("bool")
    (True, True, False)
    """
    kind = numpy_kind(name)
    return kind != "" and kind in "iu"


def is_float(name: str) -> bool:
    """True for float names, plain or masked.

    Examples
    --------
    >>> from tabflow.schema.dtypes import is_float
    >>> is_float("float32"), is_float("Float64"), is_float("int64")
    (True, True, False)
    """
    return numpy_kind(name) == "f"


def is_bool(name: str) -> bool:
    """True for ``"bool"`` and ``"boolean"``.

    Examples
    --------
    >>> from tabflow.schema.dtypes import is_bool
    >>> is_bool("boolean"), is_bool("int8")
    (True, False)
    """
    return numpy_kind(name) == "b"


def is_numeric(name: str) -> bool:
    """True for integers, floats and complex numbers, plain or masked (booleans, strings,
    lists and date-times are not numeric).

    Examples
    --------
    >>> from tabflow.schema.dtypes import is_numeric
    >>> is_numeric("Int64"), is_numeric("float32"), is_numeric("bool"), is_numeric("datetime64[ns]")
    (True, True, False, False)
    """
    kind = numpy_kind(name)
    return kind != "" and kind in "iufc"


# ------------------------------------------------------------------------------- Arrow
def arrow_dtype_name(arrow_type: pa.DataType) -> str:
    """The canonical name of an Arrow type (dictionaries as their values, no masked names).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from tabflow.schema.dtypes import arrow_dtype_name
    >>> arrow_dtype_name(pa.large_list(pa.dictionary(pa.int8(), pa.large_string()))), arrow_dtype_name(pa.int16())
    ('list<string>', 'int16')
    """
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return list_dtype(arrow_dtype_name(arrow_type.value_type))
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return STRING
    if pa.types.is_dictionary(arrow_type):
        return arrow_dtype_name(arrow_type.value_type)
    return str(np.dtype(arrow_type.to_pandas_dtype()))


def arrow_canonical_dtype(arrow_type: pa.DataType, has_nulls: bool) -> str:
    """The canonical name planned for a column of ``arrow_type``: the nullable-integer rule
    applied to integer and boolean columns that hold nulls.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from tabflow.schema.dtypes import arrow_canonical_dtype
    >>> arrow_canonical_dtype(pa.uint32(), True), arrow_canonical_dtype(pa.uint32(), False)
    ('UInt32', 'uint32')
    >>> arrow_canonical_dtype(pa.bool_(), True), arrow_canonical_dtype(pa.float32(), True)
    ('boolean', 'float32')
    """
    canonical = arrow_dtype_name(arrow_type)
    if has_nulls and (pa.types.is_integer(arrow_type) or pa.types.is_boolean(arrow_type)):
        return nullable_dtype(canonical)
    return canonical


def arrow_type(name: str) -> pa.DataType:
    """The Arrow type of a canonical name (masked names as their plain type).

    Examples
    --------
    >>> from tabflow.schema.dtypes import arrow_type
    >>> arrow_type("list<string>"), arrow_type("Int32"), arrow_type("boolean")
    (ListType(list<item: string>), DataType(int32), DataType(bool))
    """
    if is_list(name):
        return pa.list_(arrow_type(element_dtype(name)))
    if is_string(name):
        return pa.string()
    if name == "boolean":
        return pa.bool_()
    return pa.from_numpy_dtype(np.dtype(name.lower()))
