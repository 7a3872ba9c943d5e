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

from typing import Any, Iterable

from tabflow.schema import Schema, Tags, _normalize_tags

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
        if isinstance(names, str):
            names = [names]
        self._names: list[str] = []
        self.subgroups: list[ColumnSelector] = list(subgroups or [])
        for item in names or []:
            if isinstance(item, ColumnSelector):
                self.subgroups.append(item)
            elif isinstance(item, (list, tuple)):
                self.subgroups.append(ColumnSelector(list(item)))
            elif isinstance(item, str):
                if item not in self._names:
                    self._names.append(item)
            elif isinstance(item, Tags):
                tags = [*(tags or []), item]
            else:
                raise TypeError(f"column names must be strings, got {item!r} ({type(item).__name__})")
        self.tags = list(_normalize_tags(tags)) if tags else []

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
        """Top-level names, then one tuple per subgroup."""
        return [*self._names, *(tuple(g.names) for g in self.subgroups)]

    @property
    def all(self) -> list[str]:
        return self.names

    def resolve(self, schema: Schema) -> "ColumnSelector":
        """Replace tags by the names of the schema's columns that carry them; check names exist."""
        missing = [n for n in self.names if n not in schema]
        if missing:
            raise KeyError(
                f"column(s) {missing} not found in the input; available columns are "
                f"{schema.column_names}. Check the spelling or add the column to the dataset."
            )
        if not self.tags:
            return self
        tagged = [c.name for c in schema.select_by_tag(*self.tags) if c.name not in self._names]
        return ColumnSelector([*self._names, *tagged], subgroups=self.subgroups)

    def __add__(self, other: Any) -> "ColumnSelector":
        if _is_node(other):
            return NotImplemented
        other = other if isinstance(other, ColumnSelector) else ColumnSelector(other)
        return ColumnSelector(
            [*self._names, *(n for n in other._names if n not in self._names)],
            subgroups=[*self.subgroups, *other.subgroups],
            tags=[*self.tags, *other.tags],
        )

    def __radd__(self, other: Any) -> "ColumnSelector":
        return ColumnSelector(other) + self

    def __sub__(self, other: Any) -> "ColumnSelector":
        drop = set(other.names if isinstance(other, ColumnSelector) else ColumnSelector(other).names)
        return ColumnSelector(
            [n for n in self._names if n not in drop],
            subgroups=[g for g in self.subgroups if not drop & set(g.names)],
            tags=self.tags,
        )

    def __rshift__(self, op: Any) -> Any:
        return _node_class()(selector=self) >> op

    def __bool__(self) -> bool:
        return bool(self._names or self.subgroups or self.tags)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ColumnSelector):
            return False
        return self.grouped_names == other.grouped_names and set(self.tags) == set(other.tags)

    def __hash__(self) -> int:
        return hash((tuple(self.grouped_names), frozenset(self.tags)))

    def __iter__(self):
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)

    def __repr__(self) -> str:
        tags = f", tags={[str(t) for t in self.tags]}" if self.tags else ""
        return f"ColumnSelector({self.grouped_names}{tags})"

    def to_dict(self) -> dict:
        return {"names": list(self._names), "subgroups": [g.to_dict() for g in self.subgroups], "tags": [str(t) for t in self.tags]}

    @classmethod
    def from_dict(cls, data: dict) -> "ColumnSelector":
        return cls(data["names"], subgroups=[cls.from_dict(g) for g in data["subgroups"]], tags=data["tags"] or None)


#: NVTabular < 0.6 name of :class:`ColumnSelector`, kept so old scripts run unchanged.
ColumnGroup = ColumnSelector
