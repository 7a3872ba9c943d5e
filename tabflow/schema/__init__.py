"""Column schemas: dtype, tags and properties of every column a workflow reads or writes.

The schema travels with the data: :meth:`Dataset.to_parquet` writes it next to the parquet
files as ``_schema.json`` (the leading underscore makes pandas, pyarrow and Spark skip it when
they read the directory) and the loader reads it to find column roles and cardinalities.

Examples
--------
>>> from tabflow.schema import ColumnSchema, Schema, Tags
>>> s = Schema([ColumnSchema("C1", dtype="int64", tags={Tags.CATEGORICAL})])
>>> s.select_by_tag(Tags.CATEGORICAL).column_names
['C1']
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from tabflow.schema import dtypes
from tabflow.schema.tags import Tags

__all__ = ["Tags", "ColumnSchema", "Schema", "SCHEMA_FILENAME", "SCHEMA_FILENAMES", "dtypes"]

SCHEMA_FILENAME = "_schema.json"
#: Names a schema is looked for under next to data files, in order.
SCHEMA_FILENAMES = (SCHEMA_FILENAME, "schema.json")


def _name_list(names: str | Iterable[str]) -> list[str]:
    # A single name is one column, not the characters of its name.
    return [names] if isinstance(names, str) else list(names)


def _flatten_tags(tags: Sequence[Any]) -> list[Any]:
    flat: list[Any] = []
    for tag in tags:
        flat.extend(tag if isinstance(tag, (list, tuple, set, frozenset)) else [tag])
    return flat


def _normalize_tags(tags: Iterable[Any] | None) -> frozenset:
    if not tags:
        return frozenset()
    if isinstance(tags, (str, Tags)):
        tags = [tags]
    return frozenset(Tags(t) if t in Tags._value2member_map_ else str(t) for t in tags)


@dataclass(frozen=True)
class ColumnSchema:
    """One column: name, canonical dtype, tags, free-form properties and list-ness.

    Parameters
    ----------
    name : str
    dtype : str
        Engine-neutral dtype name (:mod:`tabflow.schema.dtypes`): numpy names (``"int64"``,
        ``"float32"``), masked ``"Int64"``, ``"string"``, or ``"list<int64>"`` for list columns.
    tags : set of Tags or str
    properties : dict
        JSON-serialisable; Categorify stores ``cardinality``, ``num_buckets``, index
        conventions and an embedding size suggestion here.
    is_list : bool
        Multi-hot column; ``value_count`` holds ``{"min": ..., "max": ...}`` when known.

    Examples
    --------
    >>> from tabflow.schema import ColumnSchema, Tags
    >>> c = ColumnSchema("C1", dtype="int64").with_tags(Tags.CATEGORICAL)
    >>> sorted(str(t) for t in c.tags)
    ['categorical']
    """

    name: str
    dtype: str = "float64"
    tags: frozenset = field(default_factory=frozenset)
    properties: Mapping[str, Any] = field(default_factory=dict)
    is_list: bool = False
    value_count: Mapping[str, int] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "tags", _normalize_tags(self.tags))
        object.__setattr__(self, "properties", dict(self.properties or {}))
        if dtypes.is_list(str(self.dtype)):
            object.__setattr__(self, "is_list", True)

    @property
    def element_dtype(self) -> str:
        """Dtype of one element: the dtype itself for scalars, the inner one for lists."""
        return dtypes.element_dtype(str(self.dtype))

    def with_tags(self, *tags: Any) -> "ColumnSchema":
        flat = []
        for t in tags:
            flat.extend(t if isinstance(t, (list, tuple, set, frozenset)) else [t])
        return replace(self, tags=self.tags | _normalize_tags(flat))

    def without_tags(self, *tags: Any) -> "ColumnSchema":
        return replace(self, tags=self.tags - _normalize_tags(tags))

    def with_properties(self, **properties: Any) -> "ColumnSchema":
        return replace(self, properties={**self.properties, **properties})

    def with_name(self, name: str) -> "ColumnSchema":
        return replace(self, name=name)

    def with_dtype(self, dtype: str, is_list: bool | None = None) -> "ColumnSchema":
        is_list = dtypes.is_list(str(dtype)) if is_list is None else is_list
        return replace(self, dtype=str(dtype), is_list=is_list, value_count=self.value_count if is_list else None)

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "dtype": str(self.dtype),
            "tags": sorted(str(t) for t in self.tags),
            "properties": dict(self.properties),
            "is_list": self.is_list,
            "value_count": dict(self.value_count) if self.value_count else None,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ColumnSchema":
        return cls(
            name=data["name"],
            dtype=data.get("dtype", "float64"),
            tags=data.get("tags", ()),
            properties=data.get("properties", {}),
            is_list=data.get("is_list", False),
            value_count=data.get("value_count"),
        )


class Schema:
    """An ordered collection of :class:`ColumnSchema`.

    Examples
    --------
    >>> from tabflow.schema import ColumnSchema, Schema
    >>> s = Schema([ColumnSchema("a", dtype="int64"), ColumnSchema("b", dtype="float32")])
    >>> s["b"].dtype, len(s)
    ('float32', 2)
    """

    def __init__(self, columns: Iterable[ColumnSchema | str] = ()) -> None:
        self._columns: dict[str, ColumnSchema] = {}
        for column in columns:
            column = ColumnSchema(column) if isinstance(column, str) else column
            self._columns[column.name] = column

    @property
    def column_names(self) -> list[str]:
        return list(self._columns)

    @property
    def column_schemas(self) -> dict[str, ColumnSchema]:
        return dict(self._columns)

    def __getitem__(self, name: str | Sequence[str]) -> Any:
        """One column's schema by name, or a :class:`Schema` of several (a list of names)."""
        if not isinstance(name, str):
            return self.select(name)
        try:
            return self._columns[name]
        except KeyError:
            raise KeyError(f"column {name!r} is not in the schema; columns are {self.column_names}") from None

    def get(self, name: str, default: ColumnSchema | None = None) -> ColumnSchema | None:
        """The schema of column ``name``, or ``default`` when there is none."""
        return self._columns.get(name, default)

    @property
    def first(self) -> ColumnSchema:
        """The first column's schema (e.g. after selecting down to one column)."""
        if not self._columns:
            raise ValueError("the schema has no columns, so it has no first column")
        return next(iter(self._columns.values()))

    def __contains__(self, name: object) -> bool:
        return name in self._columns

    def __iter__(self) -> Iterator[ColumnSchema]:
        return iter(self._columns.values())

    def __len__(self) -> int:
        return len(self._columns)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Schema) and [c.to_dict() for c in self] == [c.to_dict() for c in other]

    def __add__(self, other: "Schema") -> "Schema":
        return Schema([*self, *(c for c in other if c.name not in self._columns)])

    def __sub__(self, other: "Schema") -> "Schema":
        return self.without(other.column_names)

    def __repr__(self) -> str:
        rows = ", ".join(f"{c.name}:{c.dtype}" for c in self)
        return f"Schema([{rows}])"

    def copy(self) -> "Schema":
        return Schema(self)

    def select(self, names: str | Iterable[str]) -> "Schema":
        """The named columns, in the order given; an unknown name is a ``KeyError``.

        Examples
        --------
        >>> from tabflow.schema import Schema
        >>> s = Schema(["genres", "g", "x"])
        >>> s.select("genres").column_names, s.without("genres").column_names
        (['genres'], ['g', 'x'])
        >>> s.select_by_name(["x", "missing"]).column_names  # skips names it lacks
        ['x']
        """
        return Schema([self[name] for name in _name_list(names)])

    def select_by_name(self, names: str | Iterable[str]) -> "Schema":
        """The named columns the schema has, in the order given (others are skipped)."""
        return Schema([self._columns[name] for name in _name_list(names) if name in self._columns])

    def without(self, names: str | Iterable[str]) -> "Schema":
        """Every column but the named ones (names the schema lacks are ignored)."""
        drop = set(_name_list(names))
        return Schema([c for c in self if c.name not in drop])

    excluding_by_name = without

    def remove_col(self, name: str) -> "Schema":
        return self.without([name])

    def select_by_tag(self, *tags: Any, pred_fn: Callable[[Iterable[bool]], bool] = any) -> "Schema":
        """Columns carrying any of ``tags`` (``pred_fn=all``: all of them).

        Tags may be given as several arguments or as one list.

        Examples
        --------
        >>> from tabflow.schema import ColumnSchema, Schema, Tags
        >>> s = Schema([ColumnSchema("c", dtype="int64", tags=[Tags.CATEGORICAL]), ColumnSchema("x", dtype="float32")])
        >>> s.select_by_tag([Tags.CATEGORICAL, Tags.CONTINUOUS]).column_names
        ['c']
        >>> s.excluding_by_tag(Tags.CATEGORICAL).column_names
        ['x']
        """
        wanted = _normalize_tags(_flatten_tags(tags))
        return Schema([c for c in self if wanted and pred_fn(tag in c.tags for tag in wanted)])

    def excluding_by_tag(self, *tags: Any) -> "Schema":
        """Columns carrying none of ``tags``."""
        unwanted = _normalize_tags(_flatten_tags(tags))
        return Schema([c for c in self if not unwanted & c.tags])

    remove_by_tag = excluding_by_tag

    @property
    def dtypes(self) -> dict[str, str]:
        return {c.name: str(c.dtype) for c in self}

    def to_dict(self) -> dict:
        return {"format": "tabflow.schema", "version": 1, "columns": [c.to_dict() for c in self]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Schema":
        return cls([ColumnSchema.from_dict(c) for c in data["columns"]])

    def to_json(self, path: str) -> None:
        """Write the schema as JSON (atomically: temp name, then rename)."""
        tmp = f"{path}.tmp-{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(self.to_dict(), handle, indent=2)
        os.replace(tmp, path)

    @classmethod
    def from_json(cls, path: str) -> "Schema":
        """Read a schema file (size, nesting and numbers bounded; a bad file is a
        :class:`~tabflow.exceptions.LoadError` naming it)."""
        from tabflow._json import read_json
        from tabflow.exceptions import LoadError

        document = read_json(path, "schema file")
        try:
            return cls.from_dict(document)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise LoadError(f"schema file {path} is malformed ({type(err).__name__}: {err})") from None
