"""Column selection: names, nested groups of names and tags that pick columns.

``ColumnSelector(["C1", ["C2", "C3"]])`` names C1 and a group of C2 and C3 (kept together,
e.g. for a cross); tags pick every column of the input schema that carries them. ``>>``
on a selector starts a graph (:mod:`tabflow.graph.node`).

Examples
--------
>>> from tabflow import ColumnSelector
>>> sel = ColumnSelector(["c", ["a", "b"]])
>>> sel.names, sel.grouped_names
(['c', 'a', 'b'], ['c', ('a', 'b')])
"""

from __future__ import annotations

import warnings
from typing import Any, Iterable

from tabflow.exceptions import MissingColumnError
from tabflow.schema import Schema, Tags
from tabflow.schema.tags import to_tag

__all__ = ["ColumnSelector", "ColumnGroup", "register_node_class"]

# ``selector >> op`` and ``selector + node`` build graph nodes. The Node class lives in
# tabflow.graph.node, which imports this module, so it registers itself here instead of
# being imported (the language is completed by the graph layer, dependency-inverted).
_NODE_CLASS: list[type] = []


def register_node_class(cls: type) -> type:
    """Make ``cls`` the node class that ``ColumnSelector >> op`` builds (tabflow.graph.node)."""
    _NODE_CLASS[:] = [cls]
    return cls


def _node_class() -> type:
    if not _NODE_CLASS:  # pragma: no cover - tabflow/__init__ imports the graph first
        raise RuntimeError("tabflow.graph.node has not been imported: import tabflow first")
    return _NODE_CLASS[0]


def _is_node(obj: Any) -> bool:
    return bool(_NODE_CLASS) and isinstance(obj, _NODE_CLASS[0])


class _NodeInSelectorError(TypeError, ValueError):
    """A node among a selector's names: merlin raises ValueError, tabflow raised TypeError."""


class ColumnSelector:
    """Names, nested groups of names, and/or tags that pick columns.

    Parameters
    ----------
    names : list of str or nested lists, optional
        A nested list becomes a subgroup (kept together, e.g. for a cross).
    subgroups : list of ColumnSelector, optional
    tags : list of Tags, optional
        Resolved against the input schema: every column carrying any of the tags.

    Examples
    --------
    >>> from tabflow import ColumnSelector
    >>> (ColumnSelector(["a"]) + ColumnSelector(["b"])).names
    ['a', 'b']
    """

    def __init__(
        self,
        names: Iterable[Any] | str | None = None,
        subgroups: Iterable["ColumnSelector"] | None = None,
        tags: Iterable[Any] | None = None,
    ) -> None:
        # "*" selects every column of the input, whatever it is (merlin's wildcard).
        self._all = isinstance(names, str) and names == "*"
        if self._all:
            names, subgroups, tags = None, None, None
        if isinstance(names, str):
            names = [names]
        if _is_node(names):
            raise TypeError("a ColumnSelector holds column names, not a Node; combine nodes with + instead")
        self._names: list[str] = []
        # merlin takes one selector as the only subgroup.
        self.subgroups: list[ColumnSelector] = [subgroups] if isinstance(subgroups, ColumnSelector) else list(subgroups or [])
        for item in names or []:
            if isinstance(item, ColumnSelector):
                self.subgroups.append(item)
            elif isinstance(item, (list, tuple)):
                self.subgroups.append(ColumnSelector(list(item)))
            elif isinstance(item, Tags):  # before str: Tags are strings too
                tags = [*(tags or []), item]
            elif isinstance(item, str):
                if item not in self._names:
                    self._names.append(item)
            elif _is_node(item):
                raise _NodeInSelectorError(f"a ColumnSelector holds column names, not a Node ({item!r}); combine nodes with +")
            else:
                raise TypeError(f"column names must be strings, got {item!r} ({type(item).__name__})")
        # Strings naming a standard tag become Tags members (any case); order kept, no repeats.
        single = isinstance(tags, (str, Tags))
        self.tags = list(dict.fromkeys(map(to_tag, [tags] if single else tags or [])))

    @property
    def names(self) -> list[str]:
        """Every column name, subgroups flattened, first occurrence kept."""
        out = list(self._names)
        for group in self.subgroups:
            out.extend(n for n in group.names if n not in out)
        return out

    @property
    def top_level_names(self) -> list[str]:
        return list(self._names)

    @property
    def grouped_names(self) -> list[str | tuple[str, ...]]:
        """Top-level names, then one tuple per subgroup (a group given twice once, as in merlin)."""
        return list(dict.fromkeys([*self._names, *(tuple(g.names) for g in self.subgroups)]))

    @property
    def all(self) -> bool:
        """Whether this is ``ColumnSelector("*")``, every column of the input."""
        return self._all

    def resolve(self, schema: Schema) -> "ColumnSelector":
        """Replace tags by the names of the schema's columns that carry them (and ``"*"`` by
        every column); check names exist."""
        if self._all:
            return ColumnSelector(schema.column_names)
        missing = [n for n in self.names if n not in schema]
        if missing:
            raise MissingColumnError(
                f"Missing column(s) {missing} in the input; available columns are "
                f"{schema.column_names}. Check the spelling or add the column to the dataset."
            )
        if not self.tags:
            return self
        tagged = [c.name for c in schema.select_by_tag(*self.tags) if c.name not in self._names]
        return ColumnSelector([*self._names, *tagged], subgroups=self.subgroups)

    def filter_columns(self, other: "ColumnSelector") -> "ColumnSelector":
        """This selector without ``other``'s names (a group holding any of them goes whole);
        ``"*"`` filtered by ``other`` is ``other``, as in merlin.

        Examples
        --------
        >>> from tabflow import ColumnSelector
        >>> ColumnSelector(["a", "b", ["c", "d"]]).filter_columns(ColumnSelector(["a", "c"])).grouped_names
        ['b']
        """
        other = other if isinstance(other, ColumnSelector) else ColumnSelector(other)
        if self._all:
            return other
        drop = set(other.names)
        return ColumnSelector(
            [n for n in self._names if n not in drop],
            subgroups=[g for g in self.subgroups if g not in other.subgroups and not drop & set(g.names)],
        )

    def __add__(self, other: Any) -> "ColumnSelector":
        if _is_node(other):
            return NotImplemented
        if other is None:
            return self
        if isinstance(other, Tags):  # ``selector + Tags.CATEGORICAL`` adds a tag
            other = ColumnSelector(tags=[other])
        other = other if isinstance(other, ColumnSelector) else ColumnSelector(other)
        if self._all or other._all:
            return ColumnSelector("*")
        return ColumnSelector(
            [*self._names, *(n for n in other._names if n not in self._names)],
            subgroups=[*self.subgroups, *other.subgroups],
            tags=[*self.tags, *other.tags],
        )

    def __radd__(self, other: Any) -> "ColumnSelector":
        if isinstance(other, Tags):
            return ColumnSelector(tags=[other]) + self
        return ColumnSelector(other) + self

    def __sub__(self, other: Any) -> "ColumnSelector":
        if self._all:
            raise ValueError('cannot subtract names from ColumnSelector("*") before the input is known; use node - [names]')
        drop = set(other.names if isinstance(other, ColumnSelector) else ColumnSelector(other).names)
        return ColumnSelector(
            [n for n in self._names if n not in drop],
            subgroups=[g for g in self.subgroups if not drop & set(g.names)],
            tags=self.tags,
        )

    def __rshift__(self, op: Any) -> Any:
        if isinstance(op, type) and hasattr(op, "create_node"):
            op = op()  # an op class, as NVTabular allows
        # An op makes the node that selects its input (merlin's ``create_node`` hook).
        create_node = getattr(op, "create_node", None)
        node = create_node(self) if callable(create_node) and not _is_node(op) else _node_class()(selector=self)
        return node >> op

    def __bool__(self) -> bool:
        return bool(self._all or self._names or self.subgroups or self.tags)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ColumnSelector):
            return False
        return (self._all, self.grouped_names, set(self.tags)) == (other._all, other.grouped_names, set(other.tags))

    def __hash__(self) -> int:
        return hash((self._all, tuple(self.grouped_names), frozenset(self.tags)))

    def __iter__(self):
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)

    def __repr__(self) -> str:
        if self._all:
            return 'ColumnSelector("*")'
        tags = f", tags={[str(t) for t in self.tags]}" if self.tags else ""
        return f"ColumnSelector({self.grouped_names}{tags})"

    def to_dict(self) -> dict:
        if self._all:
            return {"all": True, "names": [], "subgroups": [], "tags": []}
        return {"names": list(self._names), "subgroups": [g.to_dict() for g in self.subgroups], "tags": [str(t) for t in self.tags]}

    @classmethod
    def from_dict(cls, data: dict) -> "ColumnSelector":
        if data.get("all") is True:
            return cls("*")
        return cls(data["names"], subgroups=[cls.from_dict(g) for g in data["subgroups"]], tags=data["tags"] or None)


def ColumnGroup(columns: Any) -> ColumnSelector:  # noqa: N802 - NVTabular's name
    """NVTabular < 0.6's name of :class:`ColumnSelector`: returns ``ColumnSelector(columns)``
    with a DeprecationWarning, as NVTabular 23.08 did.

    Examples
    --------
    >>> import warnings
    >>> from tabflow import ColumnGroup
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     selector = ColumnGroup(["a"])
    >>> selector.names, caught[0].category.__name__
    (['a'], 'DeprecationWarning')
    """
    warnings.warn("ColumnGroup is deprecated, use ColumnSelector instead", DeprecationWarning, stacklevel=2)
    return ColumnSelector(columns)
