"""The schema of a dataset: an ordered collection of :class:`ColumnSchema`, as merlin 23.08's.

``tabflow.schema.schema`` also holds :class:`ColumnSchema` and :class:`Domain`, as
``merlin.schema.schema`` does.

Examples
--------
>>> from tabflow.schema.schema import ColumnSchema, Schema
>>> from tabflow.schema import Tags
>>> s = Schema({"label": ColumnSchema("label", dtype="int8")})
>>> s["label"] = s["label"].with_tags(Tags.TARGET)
>>> s.select_by_tag(Tags.TARGET).column_names
['label']
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Callable, Iterator, Sequence

from tabflow._files import write_atomically
from tabflow.schema.column import ColumnSchema, Domain
from tabflow.schema.tags import Tags, _as_list, _atomize

__all__ = ["Schema", "ColumnSchema", "Domain"]

#: The version :meth:`Schema.to_dict` writes. Version 1 (before merlin's tag rules) wrote
#: MULTI_CLASS_CLASSIFICATION as "multi_class", which is now MULTI_CLASS.
SCHEMA_VERSION = 2


def _name_list(names: str | Iterable[str]) -> list[str]:
    # A single name is one column, not the characters of its name.
    return [names] if isinstance(names, str) else list(names)


def _flatten_tags(tags: Sequence[Any]) -> list[Any]:
    return [tag for arg in tags for tag in _as_list(arg)]


def _is_selector(obj: Any) -> bool:
    # A ColumnSelector (tabflow's or merlin's) without importing one: the graph layer sits
    # above the schema.
    return not isinstance(obj, (str, Mapping)) and hasattr(obj, "names") and hasattr(obj, "tags")


def _checked(name: Any, column: Any) -> ColumnSchema:
    if not isinstance(column, ColumnSchema):
        raise TypeError(f"a schema holds ColumnSchema objects, got {type(column).__name__} for {name!r}")
    if column.name != name:
        raise ValueError(
            f"column schema named {column.name!r} stored under {name!r}; use column.with_name({name!r})"
        )
    return column


class _Columns(dict):
    """``Schema.column_schemas``: the schema's own ``{name: ColumnSchema}`` (edits change
    the schema) that checks what is put in."""

    def __setitem__(self, name: str, column: ColumnSchema) -> None:
        dict.__setitem__(self, name, _checked(name, column))

    def update(self, *args: Any, **kwargs: Any) -> None:
        for name, column in dict(*args, **kwargs).items():
            self[name] = column

    def setdefault(self, name: str, column: Any = None) -> Any:
        if name not in self:
            self[name] = column
        return self[name]


class Schema:
    """An ordered collection of :class:`ColumnSchema`.

    Parameters
    ----------
    column_schemas : list of ColumnSchema or str, dict of name to ColumnSchema, or None
        A string is a column with nothing known but its name.

    Examples
    --------
    >>> from tabflow.schema import ColumnSchema, Schema
    >>> s = Schema([ColumnSchema("a", dtype="int64"), ColumnSchema("b", dtype="float32")])
    >>> s["b"].dtype, len(s), s.column_names
    ('float32', 2, ['a', 'b'])
    >>> s.column_schemas["c"] = ColumnSchema("c")  # the live mapping
    >>> s.column_names
    ['a', 'b', 'c']
    """

    def __init__(self, column_schemas: Iterable[ColumnSchema | str] | Mapping[str, ColumnSchema] | None = None) -> None:
        self._columns = _Columns()
        if column_schemas is None:
            return
        if isinstance(column_schemas, Mapping):
            for name, column in column_schemas.items():
                self._columns[name] = column
            return
        if isinstance(column_schemas, str):
            raise TypeError("Schema takes a list or dict of column schemas, not one string; use Schema([name])")
        if not isinstance(column_schemas, Iterable):
            raise TypeError(
                f"Schema(column_schemas) takes a list of ColumnSchema objects or names, or a dict of them by name; "
                f"got {type(column_schemas).__name__}"
            )
        for column in column_schemas:
            column = ColumnSchema(column) if isinstance(column, str) else column
            if not isinstance(column, ColumnSchema):
                raise TypeError(f"a schema holds ColumnSchema objects or names, got {type(column).__name__}")
            self._columns[column.name] = column

    # --------------------------------------------------------------------------- access
    @property
    def column_schemas(self) -> dict[str, ColumnSchema]:
        """The schema's ``{name: ColumnSchema}`` itself: setting or deleting an entry edits the schema."""
        return self._columns

    @column_schemas.setter
    def column_schemas(self, value: Mapping[str, ColumnSchema]) -> None:
        columns = _Columns()
        columns.update(value)
        self._columns = columns

    @property
    def column_names(self) -> list[str]:
        return list(self._columns)

    def __getitem__(self, name: str | Sequence[str]) -> Any:
        """One column's schema by name, or a :class:`Schema` of several (a list of names)."""
        if not isinstance(name, str):
            return self.select(name)
        try:
            return self._columns[name]
        except KeyError:
            raise KeyError(f"column {name!r} is not in the schema; columns are {self.column_names}") from None

    def __setitem__(self, name: str, column: ColumnSchema) -> None:
        """Add column ``name`` or replace its schema (merlin's way to tag a target).

        Examples
        --------
        >>> from tabflow.schema import ColumnSchema, Schema, Tags
        >>> s = Schema([ColumnSchema("label", dtype="int8")])
        >>> s["label"] = s["label"].with_tags(Tags.TARGET)
        >>> [str(t) for t in s["label"].tags]
        ['target']
        """
        self._columns[name] = column

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

    @property
    def dtypes(self) -> dict[str, str]:
        return {c.name: c.dtype for c in self}

    # ------------------------------------------------------------------------ operators
    def __eq__(self, other: object) -> bool:
        return isinstance(other, Schema) and [c.to_dict() for c in self] == [c.to_dict() for c in other]

    def __add__(self, other: "Schema | None") -> "Schema":
        """The columns of both; a column in both is merged, ``other``'s dtype, shape and tags
        winning and properties combined (merlin's rule and column order).

        Examples
        --------
        >>> from tabflow.schema import ColumnSchema, Schema, Tags
        >>> a = Schema([ColumnSchema("x", dtype="int64", properties={"p": 1}), ColumnSchema("y")])
        >>> b = Schema([ColumnSchema("x", tags=[Tags.CATEGORICAL], dtype="int32", properties={"q": 2})])
        >>> merged = a + b
        >>> merged.column_names, merged["x"].dtype, merged["x"].properties, [str(t) for t in merged["x"].tags]
        (['y', 'x'], 'int32', {'p': 1, 'q': 2}, ['categorical'])
        >>> (a + None) is a
        True
        """
        if other is None:
            return self
        if not isinstance(other, Schema):
            return NotImplemented
        columns = [c for c in self if c.name not in other]
        columns += [self._columns[c.name].__merge__(c) if c.name in self else c for c in other]
        return Schema(columns)

    def __radd__(self, other: "Schema | None") -> "Schema":
        return self.__add__(other)

    def __sub__(self, other: "Schema | None") -> "Schema":
        if other is None:
            return self
        if not isinstance(other, Schema):
            return NotImplemented
        return self.without(other.column_names)

    def copy(self) -> "Schema":
        return Schema(self._columns)

    # ------------------------------------------------------------------------ selection
    def select(self, selector: Any) -> "Schema":
        """The columns a selector picks, or the named ones.

        ``selector`` is a ColumnSelector (its names, which the schema may lack, and its
        tags, as merlin's ``select``), None (everything), a name, or a list of names (in the
        order given; an unknown name is a ``KeyError``).

        Examples
        --------
        >>> from tabflow.schema import Schema
        >>> s = Schema(["genres", "g", "x"])
        >>> s.select("genres").column_names, s.without("genres").column_names
        (['genres'], ['g', 'x'])
        >>> s.select_by_name(["x", "missing"]).column_names  # skips names it lacks
        ['x']
        """
        if selector is None:
            return self
        if _is_selector(selector):
            if getattr(selector, "all", False) is True:
                return self
            schema = Schema()
            if selector.names:
                schema += self.select_by_name(selector.names)
            if selector.tags:
                schema += self.select_by_tag(list(selector.tags))
            return schema
        return Schema([self[name] for name in _name_list(selector)])

    apply = select

    def excluding(self, selector: Any) -> "Schema":
        """Every column but those a selector picks (or the named ones).

        Examples
        --------
        >>> from tabflow import ColumnSelector
        >>> from tabflow.schema import ColumnSchema, Schema, Tags
        >>> s = Schema([ColumnSchema("a"), ColumnSchema("b", tags=[Tags.CONTINUOUS])])
        >>> s.excluding(ColumnSelector(tags=[Tags.CONTINUOUS])).column_names, s.apply(ColumnSelector(["b"])).column_names
        (['a'], ['b'])
        """
        if selector is None:
            return self
        if not _is_selector(selector):
            return self.without(selector)
        if getattr(selector, "all", False) is True:
            return Schema()
        schema = self
        if selector.names:
            schema = schema.excluding_by_name(selector.names)
        if selector.tags:
            schema = schema.excluding_by_tag(list(selector.tags))
        return schema

    apply_inverse = excluding

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

    def _tag_matches(self, tags: tuple, pred_fn: Callable[[Iterable[bool]], bool] | None) -> list[bool]:
        args = list(tags)
        if pred_fn is None and len(args) > 1 and callable(args[-1]) and not isinstance(args[-1], (str, Tags)):
            pred_fn = args.pop()  # merlin's positional form: select_by_tag(tags, all)
        given = _flatten_tags(args)
        wanted = _atomize(given)
        # One compound tag (USER_ID) asks for all its parts (USER and ID), as in merlin.
        pred = all if len(given) == 1 and len(wanted) > 1 else (pred_fn or any)
        return [bool(wanted) and pred(tag in c.tags for tag in wanted) for c in self]

    def select_by_tag(self, *tags: Any, pred_fn: Callable[[Iterable[bool]], bool] | None = None) -> "Schema":
        """Columns carrying any of ``tags`` (``pred_fn=all``: all of them).

        Tags may be given as one tag, one list or several arguments; strings in any case. A
        single compound tag selects the columns carrying all its parts.

        Examples
        --------
        >>> from tabflow.schema import ColumnSchema, Schema, Tags
        >>> s = Schema([
        ...     ColumnSchema("c", dtype="int64", tags=[Tags.CATEGORICAL]),
        ...     ColumnSchema("u", dtype="int64", tags=[Tags.USER_ID, Tags.CATEGORICAL]),
        ...     ColumnSchema("x", dtype="float32", tags=["continuous", Tags.USER]),
        ... ])
        >>> s.select_by_tag([Tags.CATEGORICAL, "CONTINUOUS"]).column_names
        ['c', 'u', 'x']
        >>> s.select_by_tag(Tags.USER_ID).column_names, s.select_by_tag([Tags.USER, Tags.CATEGORICAL], pred_fn=all).column_names
        (['u'], ['u'])
        >>> s.excluding_by_tag(Tags.CATEGORICAL).column_names
        ['x']
        """
        return Schema([c for c, hit in zip(self, self._tag_matches(tags, pred_fn)) if hit])

    def excluding_by_tag(self, *tags: Any, pred_fn: Callable[[Iterable[bool]], bool] | None = None) -> "Schema":
        """Columns :meth:`select_by_tag` would not select."""
        return Schema([c for c, hit in zip(self, self._tag_matches(tags, pred_fn)) if not hit])

    remove_by_tag = excluding_by_tag

    # ---------------------------------------------------------------------------- views
    def __repr__(self) -> str:
        rows = ", ".join(f"{c.name}:{c.dtype}" for c in self)
        return f"Schema([{rows}])"

    def to_pandas(self) -> Any:
        """One row per column: name, tags, dtype, list flags and one ``properties.*`` column
        per property (nested ones flattened), as merlin's.

        Examples
        --------
        >>> from tabflow.schema import ColumnSchema, Schema, Tags
        >>> s = Schema([ColumnSchema("c", tags=[Tags.CATEGORICAL], dtype="int64", properties={"cardinality": 5})])
        >>> s.to_pandas().columns.tolist()
        ['name', 'tags', 'dtype', 'is_list', 'is_ragged', 'properties.cardinality']
        """
        import pandas as pd

        rows = [
            {
                "name": c.name,
                "tags": sorted(str(t) for t in c.tags),
                "dtype": c.dtype,
                "is_list": c.is_list,
                "is_ragged": c.is_ragged,
                "properties": dict(c.properties),
            }
            for c in self
        ]
        if not rows:
            return pd.DataFrame(columns=["name", "tags", "dtype", "is_list", "is_ragged"])
        return pd.json_normalize(rows)

    def _repr_html_(self) -> str:
        # The table Jupyter shows for a schema.
        return self.to_pandas()._repr_html_()

    # ------------------------------------------------------------------------ documents
    def to_dict(self) -> dict:
        return {"format": "tabflow.schema", "version": SCHEMA_VERSION, "columns": [c.to_dict() for c in self]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Schema":
        """The schema :meth:`to_dict` wrote, in this or an earlier version."""
        version = data.get("version", 1)
        columns = data["columns"]
        if version < 2:
            columns = [_upgrade_v1(c) for c in columns]
        return cls([ColumnSchema.from_dict(c) for c in columns])

    def to_json(self, path: str) -> None:
        """Write the schema as JSON (atomically: temp name, then rename)."""
        def write(tmp: str) -> None:
            with open(tmp, "w", encoding="utf-8") as handle:
                json.dump(self.to_dict(), handle, indent=2)

        write_atomically(path, write)

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


def _upgrade_v1(column: Mapping[str, Any]) -> Mapping[str, Any]:
    tags = column.get("tags")
    if not isinstance(tags, list) or "multi_class" not in tags:
        return column
    renamed = [Tags.MULTI_CLASS_CLASSIFICATION.value if t == "multi_class" else t for t in tags]
    return {**column, "tags": renamed}
