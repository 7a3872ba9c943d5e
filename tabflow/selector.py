"""Column selection and the ``>>`` / ``+`` / ``-`` graph language.

``["C1", "C2"] >> ops.Categorify()`` builds a :class:`Node` whose op sees only C1 and C2;
``a + b`` concatenates the columns of two nodes; ``a - ["x"]`` drops columns. Nested lists
(``[["a", "b"], "c"]``) keep column groups together for ops that work on groups, such as
crosses.

Examples
--------
>>> from tabflow import ColumnSelector
>>> sel = ColumnSelector(["c", ["a", "b"]])
>>> sel.names, sel.grouped_names
(['c', 'a', 'b'], ['c', ('a', 'b')])
"""

from __future__ import annotations

import itertools
from typing import Any, Iterable, Sequence

from tabflow.schema import Schema, Tags, _normalize_tags

__all__ = ["ColumnSelector", "ColumnGroup", "Node", "as_node"]


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
        if isinstance(other, Node):
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

    def __rshift__(self, op: Any) -> "Node":
        return Node(selector=self) >> op

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

_node_ids = itertools.count()


class Node:
    """One step of a workflow graph.

    A node is one of: a *selection* of input columns (``selector``), an *op* applied to the
    columns of its parents, a *concatenation* of its parents (``a + b``), or a parent with
    columns *dropped* (``a - cols``). Users build nodes with the operators rather than
    calling this constructor.

    Examples
    --------
    >>> from tabflow import ops
    >>> node = ["x"] >> ops.LogOp()
    >>> node.op.__class__.__name__, node.parents[0].selector.names
    ('LogOp', ['x'])
    """

    def __init__(
        self,
        selector: ColumnSelector | None = None,
        op: Any = None,
        parents: Sequence["Node"] = (),
        dependencies: Sequence["Node"] = (),
        dropped: ColumnSelector | None = None,
    ) -> None:
        self.selector = selector
        self.op = op
        self.parents = list(parents)
        self.dependencies = list(dependencies)
        self.dropped = dropped
        self.id = next(_node_ids)
        # Resolved by Workflow when it sees an input schema.
        self.input_schema: Schema | None = None
        self.output_schema: Schema | None = None
        self.input_selector: ColumnSelector | None = None
        # Which node computed each output column (duplicate detection across branches).
        self.column_origins: dict[str, tuple] = {}

    # ----------------------------------------------------------------- language
    def __rshift__(self, op: Any) -> "Node":
        from tabflow.ops.operator import Operator  # ops import this module

        op = _as_operator(op, Operator)
        declared = op.dependencies
        if callable(declared):  # NVTabular-era custom ops define ``def dependencies(self)`` as a method
            declared = declared()
        dependencies = [as_node(dep) for dep in declared] if declared else []
        return Node(op=op, parents=[self], dependencies=dependencies)

    def __add__(self, other: Any) -> "Node":
        return Node(parents=[self, as_node(other)])

    def __radd__(self, other: Any) -> "Node":
        return Node(parents=[as_node(other), self])

    def __sub__(self, other: Any) -> "Node":
        dropped = other if isinstance(other, ColumnSelector) else ColumnSelector(
            other.output_columns.names if isinstance(other, Node) else other
        )
        return Node(parents=[self], dropped=dropped)

    # ------------------------------------------------------------------ facts
    @property
    def kind(self) -> str:
        if self.op is not None:
            return "op"
        if self.dropped is not None:
            return "drop"
        if self.parents:
            return "concat"
        return "selection"

    @property
    def output_columns(self) -> ColumnSelector:
        if self.output_schema is None:
            if self.kind == "selection":
                return self.selector
            raise ValueError("the node's output columns are known once the workflow has seen an input schema")
        return ColumnSelector(self.output_schema.column_names)

    def ancestors(self) -> list["Node"]:
        """Every node this one depends on (parents and dependencies), in topological order."""
        order: list[Node] = []
        seen: set[int] = set()

        def visit(node: Node) -> None:
            if node.id in seen:
                return
            seen.add(node.id)
            for upstream in [*node.parents, *node.dependencies]:
                visit(upstream)
            order.append(node)

        for upstream in [*self.parents, *self.dependencies]:
            visit(upstream)
        return order

    @property
    def graph(self) -> Any:
        """A picture of the graph ending at this node (shown inline by Jupyter), as in NVTabular.

        See :class:`tabflow.viz.GraphPicture`.
        """
        from tabflow.viz import GraphPicture

        return GraphPicture(self)

    def __repr__(self) -> str:
        if self.kind == "op":
            return f"<Node {self.id}: {self.op!r}>"
        if self.kind == "selection":
            return f"<Node {self.id}: {self.selector!r}>"
        return f"<Node {self.id}: {self.kind}>"

    @property
    def label(self) -> str:
        if self.kind == "op":
            return type(self.op).__name__
        if self.kind == "selection":
            return ", ".join(map(str, self.selector.grouped_names)) or ", ".join(map(str, self.selector.tags))
        if self.kind == "drop":
            return "- " + ", ".join(self.dropped.names)
        return "+"


def _as_operator(op: Any, operator_cls: type) -> Any:
    if isinstance(op, type) and issubclass(op, operator_cls):
        return op()
    if isinstance(op, operator_cls):
        return op
    if callable(op):
        from tabflow.ops.lambdaop import LambdaOp

        return LambdaOp(op)
    raise TypeError(f"`>>` expects an op (e.g. ops.Normalize()), got {op!r}")


def as_node(obj: Any) -> Node:
    """A Node from a Node, a ColumnSelector, a column name or a (nested) list of them.

    Examples
    --------
    >>> from tabflow.selector import as_node
    >>> as_node(["a", "b"]).selector.names
    ['a', 'b']
    """
    if isinstance(obj, Node):
        return obj
    if isinstance(obj, ColumnSelector):
        return Node(selector=obj)
    if isinstance(obj, (str, Tags)):
        return Node(selector=ColumnSelector([obj]))
    if isinstance(obj, (list, tuple)):
        nodes = [o for o in obj if isinstance(o, Node)]
        if not nodes:
            return Node(selector=ColumnSelector(list(obj)))
        # A list mixing names and nodes concatenates them in order.
        parts = [as_node(o) if isinstance(o, Node) else Node(selector=ColumnSelector([o])) for o in obj]
        return Node(parents=parts)
    raise TypeError(f"cannot build a column graph node from {obj!r}")
