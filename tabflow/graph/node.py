"""Nodes of a workflow graph and the ``>>`` / ``+`` / ``-`` language that builds them.

``["C1", "C2"] >> ops.Categorify()`` makes a node whose op sees only C1 and C2; ``a + b``
concatenates the columns of two nodes; ``a - ["x"]`` drops columns. Each node does one
:mod:`step <tabflow.graph.steps>`: select input columns, apply an op, concatenate its
parents, or drop columns. Resolving schemas (:mod:`tabflow.graph.schemas`) and running the
graph (:mod:`tabflow.graph.executor`) ask the step; nothing branches on what kind of node it
is.

The graph layer knows ops only by their interface (``transform``, ``compute_output_schema``,
``dependencies``, ...), so it does not import them: the op that wraps a plain function
(:class:`tabflow.ops.LambdaOp`) registers itself with :func:`register_function_op`.

Examples
--------
>>> from tabflow import ops
>>> node = ["x"] >> ops.LogOp()
>>> node.op.__class__.__name__, node.parents[0].selector.names
('LogOp', ['x'])
"""

from __future__ import annotations

import itertools
from typing import Any, Callable, Sequence

from tabflow.graph.schemas import assign_schemas, compute_schemas, remove_inputs
from tabflow.graph.selector import ColumnSelector, register_node_class
from tabflow.graph.steps import Apply, Concat, Drop, Group, Nested, Select, Step, Subset
from tabflow.graph.structural import ConcatColumns, SelectionOp, StructuralOp, SubsetColumns, SubtractionOp
from tabflow.schema import Schema, Tags

__all__ = ["Node", "Subgraph", "as_node", "register_function_op"]

_node_ids = itertools.count()
# The op class that wraps a plain function given to ``>>`` (set by tabflow.ops.LambdaOp).
_FUNCTION_OP: list[Callable[[Callable], Any]] = []


def register_function_op(op_class: Callable[[Callable], Any]) -> Callable[[Callable], Any]:
    """Make ``op_class(function)`` the op that ``node >> function`` builds."""
    _FUNCTION_OP[:] = [op_class]
    return op_class


@register_node_class
class Node:
    """One step of a workflow graph (NVTabular's ``WorkflowNode``).

    A node selects input columns (``selector``), applies an op to the columns of its
    parents (``op``), concatenates its parents (``a + b``) or drops columns from its parent
    (``a - cols``). Users build nodes with the operators; ``Node(["a", "b"])`` is a
    selection of input columns, as ``WorkflowNode(["a", "b"])`` is in NVTabular.

    Once a workflow has seen an input schema, ``input_selector``, ``input_schema`` and
    ``output_schema`` hold the node's resolved columns.

    Examples
    --------
    >>> from tabflow import Node, ops
    >>> node = Node(["a", "b"]) >> ops.Clip(min_value=0)
    >>> node.parents[0].selector.names, node.label
    (['a', 'b'], 'Clip')
    """

    def __init__(
        self,
        selector: ColumnSelector | Sequence[Any] | str | None = None,
        op: Any = None,
        parents: Sequence["Node"] = (),
        dependencies: Sequence["Node"] = (),
        dropped: ColumnSelector | None = None,
        step: Step | None = None,
    ) -> None:
        self.step: Step = step if step is not None else _step_for(selector, op, parents, dropped)
        self.parents = list(parents)
        self.dependencies = list(dependencies)
        self.id = next(_node_ids)
        #: The nodes that read this one's columns (as parent or dependency), as in merlin.
        self.children: list[Node] = []
        for upstream in [*self.parents, *self.dependencies]:
            upstream.children.append(self)
        # Resolved by the workflow when it sees an input schema (tabflow.graph.schemas).
        self.input_schema: Schema | None = None
        self.output_schema: Schema | None = None
        self.input_selector: ColumnSelector | None = None

    # ------------------------------------------------------------------- step facts
    @property
    def op(self) -> Any:
        """The op of an op node; for a structural node, merlin's op describing its step
        (:mod:`tabflow.graph.structural`: ``SelectionOp``, ``ConcatColumns``, ``SubsetColumns``,
        ``SubtractionOp``), None for a subgraph's node."""
        return self.step.op if self.step.op is not None else self.step.structural_op()

    @property
    def selector(self) -> ColumnSelector | None:
        """The columns a selection node reads, None for other nodes.

        Settable on a selection node (a name, a list or a selector), as in merlin.
        """
        return self.step.selector

    @selector.setter
    def selector(self, value: Any) -> None:
        if not isinstance(self.step, Select):
            raise TypeError(
                f"only a node that selects input columns has a settable selector; {self!r} applies "
                f"{self.label!r}: select the columns before it instead (columns >> op)"
            )
        self.step = Select(value if isinstance(value, ColumnSelector) else ColumnSelector(_names(value)))

    @property
    def dropped(self) -> ColumnSelector | None:
        """The columns a drop node removes, None for other nodes."""
        return self.step.dropped

    @property
    def kind(self) -> str:
        """The step's name: ``"selection"``, ``"op"``, ``"concat"`` or ``"drop"``."""
        return self.step.kind

    @property
    def label(self) -> str:
        return self.step.label

    # ----------------------------------------------------------------- language
    def __rshift__(self, op: Any) -> "Node":
        if isinstance(op, Node) and isinstance(op.step, Nested):
            # ``node >> Subgraph(...)``: the subgraph reads this node's columns, not the data's.
            return Node(parents=[_rebind(op.parents[0], self)], dependencies=[self], step=Nested(op.step.name, op.step.loop_until))
        op = _as_op(op)
        declared = op.dependencies
        if callable(declared):  # NVTabular-era custom ops define ``def dependencies(self)`` as a method
            declared = declared()
        return Node(op=op, parents=[self], dependencies=_dependency_nodes(declared))

    def __add__(self, other: Any) -> "Node":
        # As merlin builds ``+``: one concatenation node per chain, whose parent is the
        # leftmost operand and whose dependencies are the others, in order. ``a + b + c``
        # and ``a + (b + c)`` give one node with parent ``a`` and dependencies ``b``, ``c``.
        # Unlike merlin, neither operand is changed: ``total = a + b; total + c`` leaves
        # ``total`` as it was.
        if _is_empty(other):
            return self
        operand = _operand(other)
        if _is_plus(self):
            parents, dependencies = self.parents, self.dependencies
        else:
            parents, dependencies = [self], []
        added = [*operand.parents, *operand.dependencies] if _is_plus(operand) else [operand]
        return Node(parents=parents, dependencies=[*dependencies, *added], step=Concat())

    def __radd__(self, other: Any) -> "Node":
        if _is_empty(other):
            return self
        return _operand(other) + self

    def __sub__(self, other: Any) -> "Node":
        # Columns named here are dropped; nodes' output columns too, known once resolved.
        items = other if isinstance(other, (list, tuple)) else [other]
        nodes = [item for item in items if isinstance(item, Node)]
        names = [item for item in items if not isinstance(item, Node)]
        if isinstance(other, ColumnSelector):
            dropped = other
        else:
            dropped = ColumnSelector(_names(names))
        return Node(parents=[self], dependencies=nodes, dropped=dropped)

    def __rrshift__(self, other: Any) -> "Node":
        return as_node(other) >> self

    def __rsub__(self, other: Any) -> "Node":
        return as_node(other) - self

    def __getitem__(self, columns: Any) -> "Node":
        """The node's output columns ``columns`` (a name or a list, nested lists as groups)."""
        selector = columns if isinstance(columns, ColumnSelector) else ColumnSelector(_names(columns))
        return Node(parents=[self], step=Subset(selector))

    # -------------------------------------------------------------------- graph
    @property
    def output_columns(self) -> ColumnSelector:
        if self.output_schema is None:
            if self.selector is not None:
                return self.selector
            raise ValueError("the node's output columns are known once the workflow has seen an input schema")
        return ColumnSelector(self.output_schema.column_names)

    @property
    def input_columns(self) -> ColumnSelector:
        """The columns the node reads, with their groups, once resolved."""
        if self.input_selector is None:
            raise ValueError("the node's input columns are known once the workflow has seen an input schema")
        return self.input_selector

    @property
    def parents_with_dependencies(self) -> list["Node"]:
        """Parents, then dependencies: every node whose columns this one reads."""
        return [*self.parents, *self.dependencies]

    grouped_parents_with_dependencies = parents_with_dependencies

    @property
    def dependency_columns(self) -> ColumnSelector:
        """The output columns of the node's dependencies (once resolved)."""
        return ColumnSelector([name for d in self.dependencies for name in d.output_columns.names])

    @property
    def column_mapping(self) -> dict[str, list[str]]:
        """``{output column: [input columns it is computed from]}`` of an op node."""
        if self.op is None:
            return {name: [name] for name in self.output_columns.names}
        return self.op.column_mapping(self.input_columns)

    @classmethod
    def construct_from(cls, nodable: Any) -> "Node":
        """A node from a name, list, selector, op or node (as ``>>`` and ``+`` take them)."""
        return as_node(nodable)

    def add_parent(self, parent: Any) -> None:
        """Read ``parent``'s columns too (a node, selector or names)."""
        parent = as_node(parent)
        self.parents.append(parent)
        parent.children.append(self)

    def add_dependency(self, dependency: Any) -> None:
        """Depend on ``dependency``'s columns too (a node, selector or names)."""
        dependency = as_node(dependency)
        self.dependencies.append(dependency)
        dependency.children.append(self)

    def add_child(self, child: Any) -> None:
        """Make ``child`` (a node, selector or names) read this node's columns as a parent."""
        child = as_node(child)
        child.parents.append(self)
        self.children.append(child)

    def remove_child(self, child: Any) -> None:
        """Stop ``child`` from reading this node's columns as a parent."""
        if child in self.children:
            self.children.remove(child)
        if isinstance(child, Node) and self in child.parents:
            child.parents.remove(self)

    def validate_schemas(self, root_schema: Schema, strict_dtypes: bool = False) -> None:
        """Check the resolved input columns against what the data and the upstream nodes
        provide (a missing column, or with ``strict_dtypes`` a dtype that differs, is a
        ValueError), then let the op check its schemas (``op.validate_schemas``)."""
        if self.input_schema is None or self.output_schema is None:
            raise ValueError("validate_schemas needs resolved schemas: call compute_schemas (or fit the workflow) first")
        upstream = [n.output_schema for n in [*self.parents, *self.dependencies] if n.output_schema is not None]
        for column in self.input_schema:
            source = next((s[column.name] for s in upstream if column.name in s), root_schema.get(column.name))
            if source is None:
                raise ValueError(f"Missing column {column.name!r} at the input to {self.label!r}")
            if strict_dtypes and source.dtype != column.dtype:
                raise ValueError(
                    f"Mismatched dtypes for column {column.name!r} provided to {self.label!r}: upstream nodes "
                    f"provide {source.dtype!r}, the node expects {column.dtype!r}"
                )
        if self.op is not None:
            parents_schema = Schema([c for n in self.parents for c in n.output_schema])
            deps_schema = Schema([c for n in self.dependencies for c in n.output_schema])
            self.op.validate_schemas(parents_schema, deps_schema, self.input_schema, self.output_schema, strict_dtypes)

    def compute_schemas(self, root_schema: Schema) -> None:
        """Resolve the schemas of this node and its ancestors from the data's schema."""
        assign_schemas([*self.ancestors(), self], compute_schemas(self, root_schema))

    def remove_inputs(self, input_cols: Sequence[str]) -> list[str]:
        """Stop reading ``input_cols`` (see :meth:`tabflow.Workflow.remove_inputs`); returns
        the output columns removed."""
        return remove_inputs(self, [input_cols] if isinstance(input_cols, str) else list(input_cols))

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
        """A picture of the graph ending at this node, shown inline by Jupyter, as in NVTabular.

        A Graphviz SVG when the ``graphviz`` package and ``dot`` program are installed, else
        a matplotlib drawing, else a text description. NVTabular returned the
        ``graphviz.Digraph`` itself: ``node.graph.to_graphviz()`` gives it. See
        :class:`tabflow.viz.GraphPicture`.
        """
        from tabflow.graph.picture import GraphPicture

        return GraphPicture(self)

    def __repr__(self) -> str:
        return f"<Node {self.id}: {self.step!r}>"


class Subgraph(Node):
    """A named part of a graph, as merlin's ``Subgraph`` op: ``Subgraph("cats", cats_node)``.

    It stands for its output node's columns; the workflow fits, saves and runs the part with
    the rest, and ``Workflow.get_subworkflow(name)`` returns it as a workflow of its own (to
    transform a request with just that part). ``node >> Subgraph(...)`` feeds the part with
    ``node``'s columns instead of the data's. With ``loop_until``, the part runs again on its
    own output until ``loop_until(frame)`` is true.

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> cats = nvt.graph.Subgraph("cats", ["c"] >> ops.Categorify())
    >>> wf = nvt.Workflow(cats + (["x"] >> ops.Normalize())).fit(pd.DataFrame({"c": ["a", "b"], "x": [1.0, 3.0]}))
    >>> wf.subworkflows, wf.get_subworkflow("cats").transform(pd.DataFrame({"c": ["b"]}))["c"].tolist()
    (['cats'], [4])
    """

    def __init__(self, name: str, output_node: Any, loop_until: Any = None) -> None:
        super().__init__(parents=[as_node(output_node)], step=Nested(name, loop_until))

    @property
    def name(self) -> str:
        assert isinstance(self.step, Nested)  # set so in __init__
        return self.step.name


def _rebind(output: Node, source: Node) -> Node:
    """A copy of the graph ending at ``output`` whose input selections select from
    ``source``'s columns instead of the data's (ops and steps are shared, nodes are new)."""
    copies: dict[int, Node] = {}
    for node in [*output.ancestors(), output]:
        if isinstance(node.step, Select) and node.step.selector is not None:
            copies[node.id] = Node(parents=[source], step=Subset(node.step.selector))
        else:
            copies[node.id] = Node(
                parents=[copies[p.id] for p in node.parents],
                dependencies=[copies[d.id] for d in node.dependencies],
                step=node.step,
            )
    return copies[output.id]


def _is_list_like(obj: Any) -> bool:
    return hasattr(obj, "tolist") and not isinstance(obj, (str, bytes, ColumnSelector))


def _names(columns: Any) -> Any:
    """Names as ColumnSelector takes them (list-likes such as a pandas Index become lists)."""
    if _is_list_like(columns):
        return columns.tolist()
    return columns


def _step_for(selector: Any, op: Any, parents: Sequence[Node], dropped: Any) -> Step:
    if isinstance(op, StructuralOp):
        return _structural_step(op, selector, dropped)
    if op is not None:
        return Apply(op)
    if dropped is not None:
        return Drop(dropped if isinstance(dropped, ColumnSelector) else ColumnSelector(dropped))
    if parents:
        return Concat()
    if selector is None:
        raise TypeError("a Node needs input columns, an op, parents or columns to drop")
    return Select(selector if isinstance(selector, ColumnSelector) else ColumnSelector(selector))


def _structural_step(op: StructuralOp, selector: Any, dropped: Any) -> Step:
    """The step a node built by hand with one of merlin's structural ops takes."""
    def as_selector(value: Any) -> ColumnSelector:
        return value if isinstance(value, ColumnSelector) else ColumnSelector(value)

    if isinstance(op, SelectionOp):
        chosen = op.selector if op.selector is not None else selector
        if chosen is None:
            raise TypeError("a SelectionOp node needs columns: SelectionOp(selector) or Node(selector, op=...)")
        return Select(as_selector(chosen))
    if isinstance(op, ConcatColumns):
        return Concat()
    if isinstance(op, SubsetColumns):
        if selector is None:
            raise TypeError("a SubsetColumns node needs the columns it keeps: Node(selector, op=SubsetColumns())")
        return Subset(as_selector(selector))
    if isinstance(op, SubtractionOp):
        chosen = op.selector if op.selector is not None else (dropped if dropped is not None else selector)
        return Drop(as_selector(chosen if chosen is not None else []))
    raise TypeError(f"{type(op).__name__} is no structural step tabflow knows")


def _dependency_nodes(declared: Any) -> list[Node]:
    """One node per dependency an op declares, as merlin reads ``op.dependencies``: a list
    (each item a name, a list of names, a selector or a node), or a single one of these."""
    if declared is None or (isinstance(declared, (list, tuple)) and not declared):
        return []
    items = declared if isinstance(declared, (list, tuple)) else [declared]
    return [as_node(item) for item in items]


def _is_op(obj: Any) -> bool:
    return hasattr(obj, "transform") and hasattr(obj, "compute_output_schema") and hasattr(obj, "dependencies")


def _as_op(op: Any) -> Any:
    """An op instance from an op, an op class, or a plain function (wrapped in LambdaOp)."""
    if isinstance(op, type) and _is_op(op):
        return op()
    if not isinstance(op, type) and _is_op(op):
        return op
    if callable(op) and _FUNCTION_OP:
        return _FUNCTION_OP[0](op)
    raise TypeError(f"`>>` expects an op (e.g. ops.Normalize()), got {op!r}")


def _operand(other: Any) -> Node:
    """An operand of ``+``: a list that is not all names is one column group, as in
    NVTabular (``node + [other_node, "c"]``); a list of names is a plain selection."""
    if isinstance(other, (list, tuple)) and not all(isinstance(o, (str, Tags)) for o in other):
        return as_group(other)
    return as_node(other)


def _is_empty(other: Any) -> bool:
    """Whether ``+`` adds nothing (``node + []``), which merlin answers with the node itself."""
    if isinstance(other, ColumnSelector):
        return not (other.names or other.tags or other.all)
    return other is None or (isinstance(other, (list, tuple)) and not other)


def _is_plus(node: Node) -> bool:
    """Whether ``node`` is a concatenation that ``+`` made (a column group is not)."""
    return type(node.step) is Concat


def _carries_groups(node: Node) -> bool:
    """Whether ``node``'s columns reach the next op with column groups (known from the
    graph's structure: only selections, ``+``, subsets and subgraphs pass groups on)."""
    step = node.step
    if isinstance(step, Group):
        return True
    if isinstance(step, (Select, Subset)):
        return bool(step.selector.subgroups)
    if isinstance(step, Concat):
        return any(_carries_groups(upstream) for upstream in [*node.parents, *node.dependencies])
    if isinstance(step, Nested):
        return _carries_groups(node.parents[0])
    return False


def as_group(items: Sequence[Any]) -> Node:
    """One column group of the columns of ``items`` (names, lists of names, selectors and
    nodes), as a list holding a node is wherever NVTabular takes one: the operand of ``+``
    (``node + [other_node, "c"]``) and the input of an op (``[a_node, "c"] >> op``).

    Groups nest one level deep, as selectors do: an item whose columns already carry a
    column group (a ``[...]`` of nodes, a nested list of names) is a ValueError.

    Examples
    --------
    >>> from tabflow import ops
    >>> from tabflow.graph.node import as_group
    >>> country = ["geo"] >> ops.Rename(postfix="_country")
    >>> as_group([country, "user"]).label
    '[ ]'
    >>> as_group([country + [country, "user"]])
    Traceback (most recent call last):
    ...
    ValueError: column groups nest one level deep: ...
    """
    parts = [as_node(item) for item in items]
    nested = [part for part in parts if _carries_groups(part)]
    if nested:
        raise ValueError(
            f"column groups nest one level deep: the group {list(items)!r} holds {nested[0]!r}, whose columns "
            "already carry a column group. Group the columns once: [a, b, c] >> op, or a + [b, c], not [a + [b, c]] >> op"
        )
    return Node(parents=parts, step=Group())


def as_node(obj: Any) -> Node:
    """A Node from a Node, a ColumnSelector, a column name or a (nested) list of them.

    Examples
    --------
    >>> from tabflow.graph import as_node
    >>> as_node(["a", "b"]).selector.names
    ['a', 'b']
    """
    if isinstance(obj, Node):
        return obj
    if isinstance(obj, ColumnSelector):
        return Node(selector=obj)
    if isinstance(obj, (str, Tags)):
        return Node(selector=ColumnSelector([obj]))
    if _is_list_like(obj):
        obj = obj.tolist()  # a pandas Index (``df.columns >> op``) or a NumPy array of names
    if isinstance(obj, (list, tuple)):
        nodes = [o for o in obj if isinstance(o, Node)]
        if not nodes:
            return Node(selector=ColumnSelector(list(obj)))
        # A list mixing names and nodes concatenates them in order.
        parts = [as_node(o) if isinstance(o, Node) else Node(selector=ColumnSelector([o])) for o in obj]
        return Node(parents=parts)
    raise TypeError(f"cannot build a column graph node from {obj!r}")
