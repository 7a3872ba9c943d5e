"""One column's schema (:class:`ColumnSchema`) and value ranges (:class:`Domain`), as merlin 23.08's.

Examples
--------
>>> import numpy as np
>>> from tabflow.schema import ColumnSchema, Tags
>>> c = ColumnSchema("genres", [Tags.CATEGORICAL], {"value_count": {"min": 1, "max": 4}}, np.int32)
>>> c.dtype, c.is_list, c.is_ragged, c.value_count.max, c.shape.as_tuple
('list<int32>', True, True, 4, ((0, None), (1, 4)))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import InitVar, dataclass, field, replace
from typing import Any, Iterator, Optional, Union

from tabflow.schema import dtypes
from tabflow.schema.shape import Shape
from tabflow.schema.tags import TagSet, _as_list

__all__ = ["Domain", "ColumnSchema"]

_DOMAIN_KEYS = ("min", "max", "name")


@dataclass(frozen=True)
class Domain(Mapping):
    """A range of values or of list lengths: ``min``, ``max`` (None: unbounded) and a ``name``.

    Read by attribute as merlin's ``Domain`` is, and also as the read-only mapping
    ``{"min": ..., "max": ...}`` tabflow's ``value_count`` used to be (``name`` appears as a
    key only when it is set).

    Examples
    --------
    >>> from tabflow.schema import Domain
    >>> d = Domain(0, 9)
    >>> d.max, d["max"], dict(d), d == {"min": 0, "max": 9}, d.is_bounded
    (9, 9, {'min': 0, 'max': 9}, True, True)
    """

    min: Optional[Union[int, float]] = None
    max: Optional[Union[int, float]] = None
    name: Optional[str] = None

    @classmethod
    def of(cls, value: Any) -> "Domain | None":
        """``value`` (a Domain or a mapping with ``min``/``max``/``name``) as a Domain; None when empty."""
        if not value:
            return None
        if isinstance(value, Domain):
            return value
        if not isinstance(value, Mapping):
            raise TypeError(f"a domain or value count is a mapping with 'min' and 'max', got {value!r}")
        unknown = set(value) - set(_DOMAIN_KEYS)
        if unknown:
            raise ValueError(f"a domain or value count has only 'min', 'max' and 'name', got {sorted(unknown)}")
        return cls(**value)

    @property
    def is_bounded(self) -> bool:
        """True when both ``min`` and ``max`` are known."""
        return self.min is not None and self.max is not None

    def keys(self) -> Any:
        return [key for key in _DOMAIN_KEYS if key != "name" or self.name is not None]

    def __getitem__(self, key: str) -> Any:
        if key not in self.keys():
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.keys())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return dict(self) == dict(other)
        return NotImplemented


def _leaf(dtype: str) -> str:
    """The dtype of the values inside any number of list levels."""
    while dtypes.is_list(dtype):
        dtype = dtypes.element_dtype(dtype)
    return dtype


def _depth(dtype: str) -> int:
    depth = 0
    while dtypes.is_list(dtype):
        dtype, depth = dtypes.element_dtype(dtype), depth + 1
    return depth


def _nested(leaf: str, depth: int) -> str:
    for _ in range(depth):
        leaf = dtypes.list_dtype(leaf)
    return leaf


def _flatten(tags: tuple) -> list[Any]:
    # with_tags(a, b), with_tags([a, b]) and with_tags(a, [b]) all mean the tags a and b.
    return [tag for arg in tags for tag in _as_list(arg)]


@dataclass(frozen=True)
class ColumnSchema:
    """One column: name, tags, properties, canonical dtype and list shape.

    The positional order is merlin 23.08's: ``ColumnSchema(name, tags, properties, dtype,
    is_list, is_ragged, dims)``.

    Parameters
    ----------
    name : str
    tags : tag, list of tags or TagSet
        Normalised into a :class:`~tabflow.schema.TagSet`: strings in any case, compound
        tags split, contradictory tags (``CATEGORICAL`` and ``CONTINUOUS``) refused.
    properties : dict
        JSON-serialisable; Categorify stores ``cardinality``, ``num_buckets``, index
        conventions and an embedding size suggestion here. A ``"value_count"`` entry
        (``{"min": ..., "max": ...}``) makes the column a list of that many values.
    dtype : str, numpy dtype or type, Python type, pandas or Arrow dtype, optional
        Stored as its canonical name (:mod:`tabflow.schema.dtypes`): ``"int64"``,
        ``"float32"``, masked ``"Int64"``, ``"string"``, and ``"list<int64>"`` for a list
        column (a list's dtype name says it is a list; ``"list<list<int64>>"`` for lists of
        lists). None is ``"unknown"``.
    is_list, is_ragged : bool, optional
        Whether rows hold lists, and lists of varying length; derived from the dtype, the
        value count or ``dims`` when not given (an inconsistent value is a ``ValueError``).
    dims : tuple or Shape, optional
        ``(None,)`` for a scalar, ``(None, n)`` for lists of n values, ``(None, (lo, hi))``
        for lists of lo to hi values, ``(None, None)`` for lists of any length; more
        dimensions for lists of lists: ``(None, 3, 2)`` (3 lists of 2 values per row),
        ``(None, None, 4)`` (any number of lists of 4). The dtype gets one ``list<...>``
        level per dimension after the rows; the value count is the second dimension.
    value_count : dict or Domain, keyword only
        The list lengths (tabflow's spelling; also read from ``properties``). Read back as a
        :class:`Domain` that also answers ``value_count["max"]``.

    Examples
    --------
    >>> import numpy as np
    >>> from tabflow.schema import ColumnSchema, Tags
    >>> c = ColumnSchema("C1", dtype=np.int64).with_tags(Tags.CATEGORICAL)
    >>> sorted(str(t) for t in c.tags), c.dtype
    (['categorical'], 'int64')
    >>> c.with_tags(Tags.CONTINUOUS).tags == {Tags.CONTINUOUS}  # CONTINUOUS displaces CATEGORICAL
    True
    >>> ColumnSchema("u", tags=["USER_ID"]).tags == {Tags.USER, Tags.ID}, ColumnSchema("x").dtype
    (True, 'unknown')
    >>> ColumnSchema("l", dtype="int64", dims=(None, 3)).value_count
    Domain(min=3, max=3, name=None)
    >>> import tabflow.dtypes as md
    >>> ColumnSchema("m", dtype=md.float32.with_shape((None, 3, 2))).dtype  # a DType's shape is the column's
    'list<list<float32>>'
    """

    name: str
    tags: Any = field(default_factory=TagSet)
    properties: Mapping[str, Any] = field(default_factory=dict)
    dtype: Any = None
    is_list: Optional[bool] = None
    is_ragged: Optional[bool] = None
    dims: InitVar[Any] = None
    value_count: Any = field(default=None, kw_only=True)
    # The whole shape, kept so that copies (dataclasses.replace) carry the dimensions the
    # list fields do not describe; recomputed from those fields on every construction.
    _dims: Any = field(default=None, kw_only=True, repr=False)

    def __post_init__(self, dims: Any) -> None:
        properties = dict(self.properties or {})
        if dims is None and isinstance(getattr(self.dtype, "shape", None), Shape) and self.dtype.shape.dims is not None:
            # A merlin DType with a shape (md.int32.with_shape((None, 3))) gives the column that
            # shape, as in merlin, unless dims says otherwise.
            dims = self.dtype.shape
        dtype = dtypes.canonical_dtype(self.dtype)
        shape = Shape(dims) if dims is not None else Shape()
        if shape.dims is not None:
            is_list, is_ragged, counts = self._shape_from_dims(shape, properties)
        else:
            is_list, is_ragged, counts = self._shape_from_fields(dtype, properties)
            shape = self._derived_shape(dtype, is_list, counts)
            if len(shape) > 2:
                is_ragged = shape.is_ragged
        # The dtype name says whether the column is a list and how deeply its lists nest
        # ("list<int64>", "list<list<int64>>" for rows of lists of lists), so that engines
        # and the loader read list-ness from the dtype alone: one level per dimension after
        # the rows.
        dtype = _nested(_leaf(dtype), len(shape) - 1)
        if counts is not None:
            properties["value_count"] = {"min": counts.min, "max": counts.max}
        else:
            properties.pop("value_count", None)
        set_ = object.__setattr__
        set_(self, "tags", TagSet(self.tags))
        set_(self, "properties", properties)
        set_(self, "dtype", dtype)
        set_(self, "is_list", is_list)
        set_(self, "is_ragged", is_ragged)
        set_(self, "value_count", counts)
        set_(self, "_dims", shape.dims)

    # ------------------------------------------------------------------ shape resolution
    def _given_counts(self, properties: Mapping[str, Any]) -> "Domain | None":
        return Domain.of(self.value_count) if self.value_count is not None else Domain.of(properties.get("value_count"))

    def _shape_from_dims(self, shape: Shape, properties: Mapping[str, Any]) -> tuple[bool, bool, "Domain | None"]:
        if len(shape) == 0:
            raise ValueError(f"column {self.name!r}: a shape has at least one dimension (the rows), got ()")
        is_list, is_ragged = shape.is_list, shape.is_ragged
        if self.is_list is not None and self.is_list != is_list:
            raise ValueError(f"column {self.name!r}: is_list={self.is_list} is inconsistent with shape {shape.as_tuple}")
        if self.is_ragged is not None and self.is_ragged != is_ragged:
            raise ValueError(f"column {self.name!r}: is_ragged={self.is_ragged} is inconsistent with shape {shape.as_tuple}")
        given = self._given_counts(properties)
        inner = shape[1] if is_list else None
        if given is not None and (inner is None or (given.min and given.min != inner.min) or (given.max and given.max != inner.max)):
            raise ValueError(f"column {self.name!r}: value counts {dict(given)} are inconsistent with shape {shape.as_tuple}")
        counts = None if inner is None or inner.is_unknown else Domain(inner.min, inner.max)
        return is_list, is_ragged, counts

    def _shape_from_fields(self, dtype: str, properties: Mapping[str, Any]) -> tuple[bool, bool, "Domain | None"]:
        if dtypes.is_list(dtype) and self.is_list is False:
            raise ValueError(f"column {self.name!r}: is_list=False is inconsistent with the list dtype {dtype!r}")
        counts = self._given_counts(properties)
        # A value count makes a list, as in merlin (where it also overrides is_list=False).
        is_list = dtypes.is_list(dtype) or counts is not None or bool(self.is_list)
        if not is_list:
            if self.is_ragged:
                raise ValueError(f"column {self.name!r}: a column that is not a list cannot be ragged")
            return False, False, None
        if counts is None:
            # Lists of unknown length: ragged unless the caller says they are fixed.
            return True, True if self.is_ragged is None else bool(self.is_ragged), None
        low, high = counts.min, counts.max
        if self.is_ragged is False:
            # merlin's reading of fixed-length lists given one bound: both are that bound.
            low, high = (high if low is None else low), (low if high is None else high)
        # A missing minimum is 0 (merlin stores it so). The counts decide raggedness: a copy
        # made with dataclasses.replace carries the old is_ragged along with new counts.
        counts = Domain(low or 0, high)
        return True, counts.min != counts.max, counts

    def _derived_shape(self, dtype: str, is_list: bool, counts: "Domain | None") -> Shape:
        """The shape the list fields describe, with the dimensions they do not (the rows',
        those inside each list) kept from the shape this column was copied from."""
        kept = Shape(self._dims) if self._dims is not None else Shape()
        rows = kept[0] if len(kept) else None
        if not is_list:
            return Shape((rows,))
        if len(kept) > 2:
            inner = kept.dims[2:]
        else:
            # Lists of lists whose inner lengths nobody gave: any length.
            inner = (None,) * (_depth(dtype) - 1)
        values = (counts.min, counts.max) if counts is not None else None
        return Shape((rows, values, *inner))

    # ------------------------------------------------------------------------ properties
    @property
    def element_dtype(self) -> str:
        """Dtype of one value: the dtype itself for scalars, the innermost one for lists
        (``"int64"`` for ``"list<int64>"`` and ``"list<list<int64>>"``)."""
        return _leaf(self.dtype)

    @property
    def shape(self) -> Shape:
        """``(rows,)`` for a scalar, ``(rows, list length)`` for a list column, one more
        dimension per level of lists inside the lists.

        Examples
        --------
        >>> from tabflow.schema import ColumnSchema
        >>> c = ColumnSchema("m", dtype="float32", dims=(None, 3, 2))
        >>> c.shape.as_tuple, c.dtype, c.is_ragged, c.value_count
        (((0, None), 3, 2), 'list<list<float32>>', False, Domain(min=3, max=3, name=None))
        >>> ColumnSchema("n", dtype="list<list<int64>>").shape.as_tuple
        ((0, None), (0, None), (0, None))
        """
        return Shape(self._dims)

    @property
    def int_domain(self) -> "Domain | None":
        """``properties["domain"]`` of an integer column (None for other dtypes)."""
        return Domain.of(self.properties.get("domain")) if dtypes.is_integer(self.element_dtype) else None

    @property
    def float_domain(self) -> "Domain | None":
        """``properties["domain"]`` of a float column (None for other dtypes)."""
        return Domain.of(self.properties.get("domain")) if dtypes.is_float(self.element_dtype) else None

    # -------------------------------------------------------------------------- copies
    def with_name(self, name: str) -> "ColumnSchema":
        return replace(self, name=name)

    def with_tags(self, *tags: Any) -> "ColumnSchema":
        """A copy with ``tags`` added; tags they contradict are removed (``TagSet.override``).

        One tag, a list, or several arguments (which are added together).

        Examples
        --------
        >>> from tabflow.schema import ColumnSchema, Tags
        >>> c = ColumnSchema("x", tags=[Tags.CONTINUOUS, Tags.USER])
        >>> sorted(map(str, c.with_tags(Tags.CATEGORICAL).tags)), sorted(map(str, c.with_tags(["item", Tags.TARGET]).tags))
        (['categorical', 'user'], ['continuous', 'item', 'target', 'user'])
        """
        return replace(self, tags=self.tags.override(_flatten(tags)))

    def without_tags(self, *tags: Any) -> "ColumnSchema":
        return replace(self, tags=self.tags - _flatten(tags))

    def with_properties(self, properties: Mapping[str, Any] | None = None, /, **kwargs: Any) -> "ColumnSchema":
        """A copy with ``properties`` (a dict, merlin's form) and/or keyword properties added.

        A ``"value_count"`` entry sets the list lengths (and makes the column a list).

        Examples
        --------
        >>> from tabflow.schema import ColumnSchema
        >>> ColumnSchema("a").with_properties({"p": 1}, q=2).properties
        {'p': 1, 'q': 2}
        >>> ColumnSchema("a", dtype="int64").with_properties({"value_count": {"min": 2, "max": 2}}).dtype
        'list<int64>'
        """
        if properties is not None and not isinstance(properties, Mapping):
            raise TypeError(f"ColumnSchema properties must be a dictionary, got {type(properties).__name__}")
        update = {**(properties or {}), **kwargs}
        merged = {**self.properties, **update}
        if "value_count" not in update:
            return replace(self, properties=merged)
        counts = Domain.of(merged.pop("value_count"))
        if counts is None:
            return replace(self, properties=merged, value_count=None, is_ragged=None)
        return replace(self, properties=merged, value_count=counts, is_list=None, is_ragged=None)

    def with_dtype(self, dtype: Any, is_list: bool | None = None, is_ragged: bool | None = None) -> "ColumnSchema":
        """A copy with another dtype (any form :func:`~tabflow.schema.dtypes.canonical_dtype` takes).

        The dtype name decides list-ness (``"list<int32>"`` is a list, ``"int32"`` a scalar)
        unless ``is_list`` is given. A list keeps its value count unless ``is_ragged`` is given.

        Examples
        --------
        >>> import numpy as np
        >>> from tabflow.schema import ColumnSchema
        >>> ColumnSchema("a").with_dtype(np.float32).dtype
        'float32'
        >>> ColumnSchema("l", dtype="list<int64>", value_count={"min": 2, "max": 2}).with_dtype("int32", is_list=True).value_count
        Domain(min=2, max=2, name=None)
        """
        name = dtypes.canonical_dtype(dtype)
        if is_list is None:
            is_list = dtypes.is_list(name)
        if is_list and not dtypes.is_list(name):
            name = dtypes.list_dtype(name)
        elif not is_list:
            name = dtypes.element_dtype(name)
        properties = {k: v for k, v in self.properties.items() if k != "value_count"}
        if not is_list:
            return replace(self, dtype=name, properties=properties, is_list=False, is_ragged=None, value_count=None)
        if is_ragged is not None:
            # New list flags describe a new shape (merlin drops the old one too).
            return replace(self, dtype=name, properties=properties, is_list=True, is_ragged=is_ragged, value_count=None, _dims=None)
        keep = self.is_list
        return replace(
            self,
            dtype=name,
            properties=properties,
            is_list=True,
            is_ragged=self.is_ragged if keep else None,
            value_count=self.value_count if keep else None,
        )

    def with_shape(self, shape: Any) -> "ColumnSchema":
        """A copy with another shape (a tuple such as ``(None, 3)`` or a :class:`Shape`).

        Examples
        --------
        >>> from tabflow.schema import ColumnSchema
        >>> c = ColumnSchema("a", dtype="int64").with_shape((None, (1, 4)))
        >>> c.dtype, c.is_ragged, c.value_count.max, c.with_shape((None,)).dtype
        ('list<int64>', True, 4, 'int64')
        """
        shape = Shape(shape)
        if shape.dims is None:
            return self
        properties = {k: v for k, v in self.properties.items() if k != "value_count"}
        return replace(self, dims=shape, properties=properties, is_list=None, is_ragged=None, value_count=None)

    def __merge__(self, other: "ColumnSchema") -> "ColumnSchema":
        """This column with ``other``'s name, dtype and shape, its tags added (overriding) and
        its properties merged over these (merlin's rule for a column in both of ``a + b``)."""
        properties = {k: v for k, v in self.properties.items() if k != "value_count"}
        return replace(
            self,
            name=other.name,
            dtype=other.dtype,
            tags=self.tags.override(other.tags),
            properties={**properties, **other.properties},
            is_list=other.is_list,
            is_ragged=other.is_ragged,
            value_count=other.value_count,
            _dims=other._dims,
        )

    def __str__(self) -> str:
        return self.name

    # ----------------------------------------------------------------------- documents
    def to_dict(self) -> dict:
        """The column as JSON-ready values (:meth:`from_dict` reads them back).

        ``dims`` (the shape, one entry per dimension: a size, or ``[min, max]``) is written
        when the shape says more than the list fields: lists of lists, or bounds on the rows.

        Examples
        --------
        >>> from tabflow.schema import ColumnSchema
        >>> d = ColumnSchema("m", dtype="float32", dims=(None, 3, 2)).to_dict()
        >>> d["dtype"], d["value_count"], d["dims"]
        ('list<list<float32>>', {'min': 3, 'max': 3}, [[0, None], 3, 2])
        >>> ColumnSchema.from_dict(d).shape.as_tuple
        ((0, None), 3, 2)
        """
        out = {
            "name": self.name,
            "dtype": self.dtype,
            "tags": sorted(str(t) for t in self.tags),
            "properties": dict(self.properties),
            "is_list": self.is_list,
            "is_ragged": self.is_ragged,
            "value_count": dict(self.value_count) if self.value_count else None,
        }
        shape = self.shape
        if len(shape) > 2 or not shape[0].is_unknown:
            out["dims"] = [list(dim) if isinstance(dim, tuple) else dim for dim in shape.as_tuple or ()]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ColumnSchema":
        """The column :meth:`to_dict` wrote (also as earlier tabflow versions wrote it).

        Tags are taken as written, even contradictory ones (files written before tabflow
        resolved tag conflicts hold some), and a dtype left out means ``float64``, as it did.
        """
        properties = dict(data.get("properties") or {})
        dims = data.get("dims")
        if dims is not None:
            # The shape says everything the list fields say.
            if not isinstance(dims, list):
                raise ValueError(f"column {data['name']!r}: 'dims' must be a list of dimensions, got {dims!r}")
            properties.pop("value_count", None)
            shape: dict[str, Any] = {"dims": tuple(tuple(dim) if isinstance(dim, list) else dim for dim in dims)}
        else:
            shape = {"is_list": data.get("is_list"), "is_ragged": data.get("is_ragged"), "value_count": data.get("value_count")}
            if shape["is_list"] is False:
                # Earlier versions left a list's value count in the properties when a column
                # was made scalar.
                properties.pop("value_count", None)
        return cls(
            name=data["name"],
            tags=TagSet._unchecked(data.get("tags", ())),
            properties=properties,
            dtype=data.get("dtype", "float64"),
            **shape,
        )

