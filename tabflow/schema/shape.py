"""Shapes of columns: the range of sizes of each dimension, as merlin's ``merlin.dtypes.shape``.

A scalar column has one dimension (the rows); a list column has a second one, the number of
values in a row, whose ``min`` and ``max`` are the column's ``value_count``; lists of lists
have a third, and so on: ``(None, 3, 2)`` is a column whose rows are 3 lists of 2 values,
``(None, None, 4)`` one whose rows are any number of lists of 4 values. A ``max`` of ``None``
is unbounded. A shape is *ragged* when a dimension after the rows has no fixed size.

Examples
--------
>>> from tabflow.schema.shape import Shape
>>> shape = Shape((None, (1, 5)))
>>> shape.is_list, shape.is_ragged, shape.dims[1].max, shape.as_tuple
(True, True, 5, ((0, None), (1, 5)))
>>> Shape((None, 3)).is_ragged, Shape((None,)).is_list
(False, False)
>>> Shape((None, 3, 2)).is_ragged, Shape((None, None, 4)).is_ragged, len(Shape((None, 3, 2)))
(False, True, 3)
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any, Optional

__all__ = ["DefaultShapes", "Dimension", "Shape"]


def _size(value: Any) -> Any:
    # NumPy integers (sizes taken from an array's shape) are sizes too; floats are not.
    if value is None or isinstance(value, (bool, float)):
        return value
    try:
        return operator.index(value)
    except TypeError:
        return value


class DefaultShapes(Enum):
    """The shapes of a list of any length and of a scalar, as merlin names them.

    Examples
    --------
    >>> from tabflow.schema.shape import DefaultShapes, Shape
    >>> Shape(DefaultShapes.LIST).is_ragged, Shape(DefaultShapes.SCALAR).as_tuple
    (True, ((0, None),))
    """

    LIST = (None, None)
    SCALAR = (None,)


@dataclass(frozen=True)
class Dimension:
    """The range of sizes of one dimension: ``min`` (at least 0) to ``max`` (None: unbounded).

    Examples
    --------
    >>> from tabflow.schema.shape import Dimension
    >>> Dimension(2, 2).is_fixed, int(Dimension(2, 2)), Dimension().is_unknown
    (True, 2, True)
    """

    min: int = 0
    max: Optional[int] = None

    def __post_init__(self) -> None:
        if self.min is None:
            raise ValueError("the minimum size of a dimension cannot be None")
        object.__setattr__(self, "min", _size(self.min))
        object.__setattr__(self, "max", _size(self.max))
        for which, value in (("minimum", self.min), ("maximum", self.max)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise ValueError(f"the {which} size of a dimension must be an integer, got {value!r}")
        if self.min < 0:
            raise ValueError(f"the minimum size of a dimension must be non-negative, got {self.min}")
        if self.max is not None and self.max < self.min:
            raise ValueError(f"the maximum size of a dimension ({self.max}) is below its minimum ({self.min})")

    def __int__(self) -> int:
        if not self.is_fixed:
            raise ValueError(f"{self} has no fixed size to convert to an integer")
        return int(self.max)  # type: ignore[arg-type]

    @property
    def is_bounded(self) -> bool:
        return self.max is not None

    @property
    def is_fixed(self) -> bool:
        return self.is_bounded and self.min == self.max

    @property
    def is_variable(self) -> bool:
        return not self.is_fixed

    @property
    def is_unknown(self) -> bool:
        return self.min == 0 and self.max is None

    def with_min(self, value: int) -> "Dimension":
        return replace(self, min=value)

    def with_max(self, value: Optional[int]) -> "Dimension":
        return replace(self, max=value)


def _dimension(dim: Any, dims: Any) -> Dimension:
    if isinstance(dim, Dimension):
        return dim
    if dim is None:
        return Dimension()
    dim = _size(dim)
    if isinstance(dim, int) and not isinstance(dim, bool):
        return Dimension(dim, dim)
    if isinstance(dim, (tuple, list)) and len(dim) == 2:
        return Dimension(0 if dim[0] is None else _size(dim[0]), _size(dim[1]))
    raise ValueError(
        f"invalid shape {dims!r}: each dimension is None, an integer or a (min, max) pair"
    )


@dataclass(frozen=True, eq=False)
class Shape:
    """The dimensions of a column; ``dims=None`` is a shape nobody has given.

    Parameters
    ----------
    dims : tuple, Shape or DefaultShapes, optional
        One entry per dimension, the rows first: ``None`` (any size), an integer (that
        size), a ``(min, max)`` pair or a :class:`Dimension`. Any number of dimensions.

    Examples
    --------
    >>> from tabflow.schema.shape import Dimension, Shape
    >>> Shape((None, 4)).as_tuple, Shape((None, 4)).max
    (((0, None), 4), (None, 4))
    >>> Shape() == Shape((None, 4))  # an unknown shape matches any
    True
    >>> Shape((None, 3, 4)) == Shape((Dimension(), Dimension(3, 3), 4)), Shape((None, 3, 4)).is_fixed
    (True, False)
    >>> Shape((None, 3, 4)).with_dim(0, 8).is_fixed  # every dimension fixed, the rows too
    True
    """

    dims: Any = None

    def __post_init__(self) -> None:
        dims = self.dims.dims if isinstance(self.dims, Shape) else self.dims
        if isinstance(dims, DefaultShapes):
            dims = dims.value
        if dims is not None:
            if isinstance(dims, (str, bytes)) or not hasattr(dims, "__iter__"):
                raise TypeError(f"a shape is a tuple of dimensions or a Shape, got {dims!r}")
            dims = tuple(_dimension(dim, dims) for dim in dims)
        object.__setattr__(self, "dims", dims)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Shape):
            return False
        return self.dims is None or other.dims is None or self.dims == other.dims

    def __hash__(self) -> int:
        return hash(self.dims)

    def __iter__(self) -> Any:
        return iter(self.dims or ())

    def __getitem__(self, index: int) -> Dimension:
        return self.dims[index]

    def __len__(self) -> int:
        return len(self.dims or ())

    def with_dim(self, index: int, value: Any) -> "Shape":
        dims = list(self.dims or ())
        dims[index] = value
        return Shape(tuple(dims))

    def with_dim_min(self, index: int, value: int) -> "Shape":
        return self.with_dim(index, self[index].with_min(value))

    def with_dim_max(self, index: int, value: Optional[int]) -> "Shape":
        return self.with_dim(index, self[index].with_max(value))

    @property
    def min(self) -> tuple:
        return tuple(dim.min for dim in self)

    @property
    def max(self) -> tuple:
        return tuple(dim.max for dim in self)

    @property
    def is_bounded(self) -> bool:
        return all(dim.is_bounded for dim in self)

    @property
    def is_fixed(self) -> bool:
        return all(dim.is_fixed for dim in self)

    @property
    def is_variable(self) -> bool:
        return not self.is_fixed

    @property
    def is_list(self) -> bool:
        return self.dims is not None and len(self.dims) > 1

    @property
    def is_ragged(self) -> bool:
        return self.is_list and any(dim.min != dim.max for dim in self.dims[1:])

    @property
    def is_unknown(self) -> bool:
        return self.dims is None

    @property
    def as_tuple(self) -> tuple | None:
        """The dimensions as plain values: an integer for a fixed size, ``(min, max)`` otherwise."""
        if not self.dims:
            return None
        return tuple(dim.max if dim.is_fixed else (dim.min, dim.max) for dim in self.dims)
