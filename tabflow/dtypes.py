"""merlin's ``merlin.dtypes``: dtype objects over tabflow's canonical dtype names.

A schema names each column's dtype by its canonical name (:mod:`tabflow.schema.dtypes`, the
one place a dtype gets its name). Scripts written for merlin 23.08 compare and convert dtypes
as :class:`DType` objects instead: ``md.dtype(np.int32) == md.int32``, ``md.int32.to_numpy``,
``md.float32.element_type``. This module gives them those objects, each one a view of a
canonical name:

- :func:`dtype` turns anything :func:`~tabflow.schema.dtypes.canonical_dtype` reads (numpy,
  Python, pandas, Arrow and torch dtypes, names) into a :class:`DType`;
- the named dtypes (``int8`` ... ``uint64``, ``float16``/``32``/``64``, ``datetime64`` and its
  units, ``string``, ``boolean``, ``object_``, ``struct``, ``unknown``) are merlin's, with
  merlin's names (``string.name == "str"``, ``boolean.name == "bool"``);
- a :class:`DType` compares equal to the dtype forms it stands for (``md.int64 == "int64"``,
  ``md.int64 == np.int64``), so ``schema["x"].dtype == md.int64`` holds for a tabflow schema
  whose dtype is the name ``"int64"``; ``ColumnSchema(dtype=md.int64)`` stores ``"int64"``.

Masked names (``"Int64"``, ``"boolean"``) are their plain dtype here: merlin has no masked
dtypes, and a masked name only says the column may hold nulls. A list name (``"list<int64>"``)
is its element's dtype with a ragged two-dimensional :attr:`DType.shape`; fixed list lengths
and deeper shapes are the column's (``ColumnSchema.shape``), which
:meth:`DType.with_shape` takes.

Examples
--------
>>> import numpy as np
>>> import tabflow.dtypes as md
>>> md.dtype(np.int32) == md.int32, md.dtype("string") is md.string, md.int32.element_size
(True, True, 32)
>>> md.dtype("Float64").name, md.int64 == "int64", md.float32.to_numpy
('float64', True, dtype('float32'))
>>> md.dtype("list<int8>").shape.is_ragged, md.dtype("list<int8>").canonical_name
(True, 'list<int8>')
"""

from __future__ import annotations

import datetime
import enum
import re
from dataclasses import dataclass, field, replace
from typing import Any, Optional, Tuple, Union

import numpy as np

from tabflow.schema import dtypes as _names
from tabflow.schema.shape import Shape

__all__ = [
    "DType",
    "ElementType",
    "ElementUnit",
    "dtype",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "int8",
    "int16",
    "int32",
    "int64",
    "float16",
    "float32",
    "float64",
    "datetime64",
    "datetime64Y",
    "datetime64M",
    "datetime64D",
    "datetime64h",
    "datetime64m",
    "datetime64s",
    "datetime64ms",
    "datetime64us",
    "datetime64ns",
    "string",
    "boolean",
    "object_",
    "struct",
    "unknown",
]


class ElementType(enum.Enum):
    """The kind of one value (a scalar, or one element of a list).

    Examples
    --------
    >>> from tabflow.dtypes import ElementType, uint8
    >>> uint8.element_type is ElementType.UInt, ElementType("float")
    (True, <ElementType.Float: 'float'>)
    """

    Bool = "bool"
    Int = "int"
    UInt = "uint"
    Float = "float"
    String = "string"
    DateTime = "datetime"
    Object = "object"
    Unknown = "unknown"
    Struct = "struct"


class ElementUnit(enum.Enum):
    """The unit of a date-time value.

    Examples
    --------
    >>> from tabflow.dtypes import ElementUnit, datetime64ms
    >>> datetime64ms.element_unit is ElementUnit.Millisecond
    True
    """

    Year = "year"
    Month = "month"
    Day = "day"
    Hour = "hour"
    Minute = "minute"
    Second = "second"
    Millisecond = "millisecond"
    Microsecond = "microsecond"
    Nanosecond = "nanosecond"


_PYTHON_TYPES = {
    ElementType.Bool: bool, ElementType.Int: int, ElementType.UInt: int, ElementType.Float: float,
    ElementType.String: str, ElementType.DateTime: datetime.datetime, ElementType.Object: object,
}


@dataclass(eq=False, frozen=True)
class DType:
    """A dtype as merlin describes one: a name, the kind and size of its elements, and a shape.

    Parameters
    ----------
    name : str
        merlin's name (``"int32"``, ``"str"``, ``"datetime64[ms]"``).
    element_type : ElementType
    element_size : int, optional
        Bits per element.
    element_unit : ElementUnit, optional
        The unit of date-times.
    signed : bool, optional
    shape : Shape, optional
        The dimensions of a column of this dtype (:class:`tabflow.schema.Shape`); empty (unknown)
        unless given, a ragged ``(None, None)`` for a list dtype name.

    Examples
    --------
    >>> from tabflow.dtypes import DType, ElementType, int16
    >>> DType("int16", ElementType.Int, 16, signed=True) == int16
    True
    >>> int16.with_shape((None, 3)).shape.as_tuple, int16.with_shape((None, 3)).without_shape == int16
    (((0, None), 3), True)
    """

    name: str
    element_type: ElementType
    element_size: Optional[int] = None
    element_unit: Optional[ElementUnit] = None
    signed: Optional[bool] = None
    shape: Shape = field(default_factory=Shape)

    def __post_init__(self) -> None:
        if not self.shape:  # merlin code passes shape=None for an unknown shape
            object.__setattr__(self, "shape", Shape())

    def _key(self) -> tuple:
        return (self.name, self.element_type, self.element_size, self.element_unit, self.signed, self.shape)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DType):
            # A schema holds canonical names: "int64" and np.int64 stand for md.int64.
            try:
                other = dtype(other)
            except TypeError:
                return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash((self.name, self.element_type, self.element_size, self.element_unit, self.signed))

    def __repr__(self) -> str:
        shape = "" if self.shape.is_unknown else f", shape={self.shape.as_tuple}"
        return f"DType({self.name!r}{shape})"

    @property
    def canonical_name(self) -> str:
        """The canonical name a schema stores for this dtype (``"list<...>"`` for a list shape).

        Examples
        --------
        >>> from tabflow.dtypes import string, float32
        >>> string.canonical_name, float32.with_shape((None, None)).canonical_name
        ('string', 'list<float32>')
        """
        name = _names.STRING if self.element_type is ElementType.String else self.name
        return _names.list_dtype(name) if self.shape.is_list else name

    def to(self, mapping_name: str) -> Any:
        """This dtype in another library's terms: ``"numpy"``, ``"python"`` or ``"tabflow"``
        (the canonical name).

        Raises
        ------
        ValueError
            For another library, or a dtype that library has no equivalent of.

        Examples
        --------
        >>> from tabflow.dtypes import int8, string
        >>> int8.to("numpy"), int8.to("python"), string.to("tabflow")
        (dtype('int8'), <class 'int'>, 'string')
        """
        if mapping_name == "tabflow":
            return self.canonical_name
        if mapping_name == "python":
            if self.element_type not in _PYTHON_TYPES:
                raise ValueError(f"Python has no type for the dtype {self.name!r}")
            return _PYTHON_TYPES[self.element_type]
        if mapping_name == "numpy":
            if self.element_type is ElementType.String:
                return np.dtype("str")
            if self.element_type in (ElementType.Unknown, ElementType.Struct):
                raise ValueError(f"numpy has no dtype for the dtype {self.name!r}")
            return np.dtype(self.name)
        raise ValueError(
            f"no dtype mapping named {mapping_name!r}: tabflow converts its dtypes to 'numpy', "
            "'python' and 'tabflow' (canonical names); pandas, cuDF and torch dtypes come from "
            "the canonical name through the engine or the loader"
        )

    @property
    def to_numpy(self) -> np.dtype:
        """:meth:`to` ``("numpy")``."""
        return self.to("numpy")

    @property
    def to_python(self) -> type:
        """:meth:`to` ``("python")``."""
        return self.to("python")

    @property
    def is_integer(self) -> bool:
        """True for signed and unsigned integers (of a scalar or of one list element)."""
        return self.element_type in (ElementType.Int, ElementType.UInt)

    @property
    def is_float(self) -> bool:
        """True for floats (of a scalar or of one list element)."""
        return self.element_type is ElementType.Float

    def with_shape(self, shape: Union[Tuple, Shape]) -> "DType":
        """A copy with ``shape`` (a tuple of dimensions or a :class:`~tabflow.schema.Shape`).

        Raises
        ------
        TypeError
            For anything else.
        """
        if isinstance(shape, tuple):
            shape = Shape(shape)
        if not isinstance(shape, Shape):
            raise TypeError(f"a DType's shape is a tuple or a Shape, got {shape!r} ({type(shape).__name__})")
        return replace(self, shape=shape)

    @property
    def without_shape(self) -> "DType":
        """A copy whose shape is unknown."""
        return self if self.shape.is_unknown else replace(self, shape=Shape())


uint8 = DType("uint8", ElementType.UInt, 8)
uint16 = DType("uint16", ElementType.UInt, 16)
uint32 = DType("uint32", ElementType.UInt, 32)
uint64 = DType("uint64", ElementType.UInt, 64)
int8 = DType("int8", ElementType.Int, 8, signed=True)
int16 = DType("int16", ElementType.Int, 16, signed=True)
int32 = DType("int32", ElementType.Int, 32, signed=True)
int64 = DType("int64", ElementType.Int, 64, signed=True)
float16 = DType("float16", ElementType.Float, 16, signed=True)
float32 = DType("float32", ElementType.Float, 32, signed=True)
float64 = DType("float64", ElementType.Float, 64, signed=True)
datetime64 = DType("datetime64", ElementType.DateTime, 64)
datetime64Y = DType("datetime64[Y]", ElementType.DateTime, 64, ElementUnit.Year)
datetime64M = DType("datetime64[M]", ElementType.DateTime, 64, ElementUnit.Month)
datetime64D = DType("datetime64[D]", ElementType.DateTime, 64, ElementUnit.Day)
datetime64h = DType("datetime64[h]", ElementType.DateTime, 64, ElementUnit.Hour)
datetime64m = DType("datetime64[m]", ElementType.DateTime, 64, ElementUnit.Minute)
datetime64s = DType("datetime64[s]", ElementType.DateTime, 64, ElementUnit.Second)
datetime64ms = DType("datetime64[ms]", ElementType.DateTime, 64, ElementUnit.Millisecond)
datetime64us = DType("datetime64[us]", ElementType.DateTime, 64, ElementUnit.Microsecond)
datetime64ns = DType("datetime64[ns]", ElementType.DateTime, 64, ElementUnit.Nanosecond)
string = DType("str", ElementType.String)
boolean = DType("bool", ElementType.Bool)
object_ = DType("object", ElementType.Object)
struct = DType("struct", ElementType.Struct)
unknown = DType("unknown", ElementType.Unknown)

# The named dtypes by the canonical name each stands for.
_BY_NAME = {
    d.canonical_name: d
    for d in (
        uint8, uint16, uint32, uint64, int8, int16, int32, int64, float16, float32, float64,
        datetime64, datetime64Y, datetime64M, datetime64D, datetime64h, datetime64m,
        datetime64s, datetime64ms, datetime64us, datetime64ns, string, boolean, struct, unknown,
    )
}
_DATETIME_RE = re.compile(r"^datetime64(?:\[(\w+)(?:,.*)?\])?$")


def dtype(external_dtype: Any) -> DType:
    """The :class:`DType` of a dtype given in any form a schema takes.

    Numpy, Python, pandas, Arrow and torch dtypes and dtype names (canonical names, their
    aliases and merlin's names) are read as :func:`~tabflow.schema.dtypes.canonical_dtype`
    reads them; a masked name is its plain dtype; a list name is its element's dtype with a
    ragged list shape; a date-time with a time zone is the date-time of its unit. A type that
    names no dtype (a class of the user's) is :data:`unknown`.

    Raises
    ------
    TypeError
        For ``None``: whether a missing dtype means "unknown" or is a mistake is the
        caller's decision (merlin raises here too; ``ColumnSchema(dtype=None)`` is unknown).

    Examples
    --------
    >>> import numpy as np, pyarrow as pa
    >>> import tabflow.dtypes as md
    >>> [md.dtype(d).name for d in (int, np.float32, "str", "boolean", pa.int16(), "Int8")]
    ['int64', 'float32', 'str', 'bool', 'int16', 'int8']
    >>> md.dtype("datetime64[ms, UTC]") == md.datetime64ms, md.dtype(type("Mine", (), {})) == md.unknown
    (True, True)
    """
    if external_dtype is None:
        raise TypeError(
            "None names no dtype (numpy would read it as float64): give a dtype, or use "
            "tabflow.dtypes.unknown where the dtype is not known"
        )
    if isinstance(external_dtype, DType):
        return external_dtype
    if isinstance(external_dtype, str) and external_dtype == "struct":
        return struct
    if isinstance(external_dtype, type) and not _is_dtype_type(external_dtype):
        return unknown
    try:
        name = _names.canonical_dtype(external_dtype)
    except TypeError:
        return unknown
    if _names.is_list(name):
        return dtype(_names.element_dtype(name)).with_shape((None, None))
    name = _names.unmasked_dtype(name)
    if name in _BY_NAME:
        return _BY_NAME[name]
    match = _DATETIME_RE.match(name)
    if match:
        return _BY_NAME.get(f"datetime64[{match.group(1)}]" if match.group(1) else "datetime64", unknown)
    return unknown


def _is_dtype_type(cls: type) -> bool:
    # numpy reads any class as the object dtype; only scalar types name a dtype of their own.
    return issubclass(cls, (np.generic, bool, int, float, str, bytes)) or cls is object
