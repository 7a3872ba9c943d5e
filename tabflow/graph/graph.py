"""A whole graph as one object (merlin's ``Graph``): its nodes, leaves, schemas and named
subgraphs, and the walks over nodes that custom tooling uses.

:class:`~tabflow.Workflow` holds one (``workflow.graph``); the graph knows structure and
schemas, the workflow adds data (fit, transform, save).

Examples
--------
>>> from tabflow.graph import Graph, Subgraph
>>> from tabflow import ops
>>> from tabflow.schema import Schema
>>> g = Graph(Subgraph("cats", ["c"] >> ops.Categorify()) + ["x"])
>>> g.construct_schema(Schema(["c", "x"])).output_schema.column_names
['c', 'x']
>>> list(g.subgraphs), [n.label for n in g.leaf_nodes]
(['cats'], ['c', 'x'])
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator

from tabflow.graph.node import Node, as_node
from tabflow.graph.schemas import (
    assign_schemas,
    compute_schemas,
    data_columns,
    observe_schemas,
    remove_inputs,
)
from tabflow.graph.steps import Nested
from tabflow.schema import Schema

__all__ = ["Graph", "iter_nodes", "postorder_iter_nodes", "preorder_iter_nodes"]


class Graph:
    """The graph ending at ``output_node``.

    Parameters
    ----------
    output_node : Node, ColumnSelector or list
        The graph's output.

    Attributes
    ----------
    output_node : Node
    """

    def __init__(self, output_node: Any) -> None:
        self.output_node = as_node(output_node)

    @property
    def nodes(self) -> list[Node]:
        """Every node in topological order, the output node last."""
        return [*self.output_node.ancestors(), self.output_node]

    @property
    def leaf_nodes(self) -> list[Node]:
        """The nodes that read the data (input selections), in graph order; once
        :meth:`remove_inputs` has taken every column of one, it reads nothing and is no leaf."""
        return [
            node
            for node in self.nodes
            if not node.parents and not node.dependencies and (node.output_schema is None or len(node.output_schema))
        ]

    @property
    def is_resolved(self) -> bool:
        """Whether every node has its schemas (after :meth:`construct_schema` or a fit)."""
        return all(node.output_schema is not None for node in self.nodes)

    @property
    def input_schema(self) -> Schema | None:
        """The columns the graph reads from the data (its leaves' selections, and columns
        an op's ``compute_input_schema`` takes from the data), None until resolved."""
        if not self.is_resolved:
            return None
        read = data_columns(self.nodes)
        schema = Schema()
        for node in self.nodes:
            columns = node.input_schema if node.step.op is not None else node.output_schema
            schema = schema + Schema([c for c in columns if c.name in read and c.name not in schema])
        return schema

    @property
    def output_schema(self) -> Schema | None:
        """The columns the graph produces, None until resolved."""
        return self.output_node.output_schema

    @property
    def input_dtypes(self) -> dict[str, Any]:
        """``{column: dtype}`` the graph reads (empty until resolved)."""
        schema = self.input_schema
        return schema.dtypes if schema is not None else {}

    @property
    def output_dtypes(self) -> dict[str, Any]:
        """``{column: dtype}`` the graph produces (empty until resolved)."""
        schema = self.output_schema
        return schema.dtypes if schema is not None else {}

    @property
    def column_mapping(self) -> dict[str, list[str]]:
        """``{output column: [input columns of the data it is computed from]}``, through
        every op of the graph (needs resolved schemas).

        Examples
        --------
        >>> from tabflow.graph import Graph
        >>> from tabflow import ops
        >>> from tabflow.schema import Schema
        >>> g = Graph(["a", "b"] >> ops.Rename(postfix="_r") >> ops.Rename(postfix="_s"))
        >>> g.construct_schema(Schema(["a", "b"])).column_mapping
        {'a_r_s': ['a'], 'b_r_s': ['b']}
        """
        if not self.is_resolved:
            raise ValueError("column_mapping needs resolved schemas: call construct_schema (or fit the workflow) first")
        sources: dict[int, dict[str, list[str]]] = {}
        for node in self.nodes:
            upstream = [sources[n.id] for n in [*node.parents, *node.dependencies]]
            if not upstream:
                sources[node.id] = {name: [name] for name in node.output_schema.column_names}
                continue
            mapping = node.column_mapping if node.step.op is not None else {n: [n] for n in node.output_schema.column_names}
            sources[node.id] = {
                name: list(dict.fromkeys(root for column in mapping.get(name, [name]) for root in _origin(column, upstream)))
                for name in node.output_schema.column_names
            }
        return sources[self.output_node.id]

    def construct_schema(self, root_schema: Schema, sample: Any = None) -> "Graph":
        """Resolve every node's schemas from the data's schema ``root_schema``; with
        ``sample`` (a few real rows of the data), the output dtypes of ops that learn them
        from the data are seen on it (:func:`~tabflow.graph.schemas.observe_schemas`)."""
        if sample is not None:
            observe_schemas(self.output_node, root_schema, sample)
        else:
            assign_schemas(self.nodes, compute_schemas(self.output_node, root_schema))
        return self

    def remove_inputs(self, names: Iterable[str]) -> "Graph":
        """Stop reading input columns ``names`` and drop every column computed from them
        (see :func:`tabflow.graph.schemas.remove_inputs`)."""
        remove_inputs(self.output_node, [names] if isinstance(names, str) else list(names))
        return self

    @property
    def subgraphs(self) -> dict[str, "Graph"]:
        """``{name: Graph}`` of the named subgraphs (:class:`~tabflow.graph.Subgraph`),
        nested ones included, in graph order."""
        found: dict[str, Graph] = {}
        for node in self.nodes:
            if isinstance(node.step, Nested):
                if node.step.name in found:
                    raise ValueError(f"the graph has two subgraphs named {node.step.name!r}; give them distinct names")
                found[node.step.name] = Graph(node.parents[0])
        return found

    def subgraph(self, name: str) -> "Graph":
        """The subgraph called ``name`` (ValueError naming the known ones otherwise)."""
        subgraphs = self.subgraphs
        if name not in subgraphs:
            raise ValueError(f"No subgraph named {name!r} in the graph; it has {sorted(subgraphs)}")
        return subgraphs[name]

    @classmethod
    def get_nodes_by_op_type(cls, nodes: Iterable[Node], op_type: type) -> set[Node]:
        """The nodes among ``nodes`` (and their ancestors) whose op is an ``op_type``."""
        return {node for node in iter_nodes(nodes) if isinstance(node.op, op_type)}

    def clear_stats(self) -> None:
        """Forget the fitted statistics of every op that has any."""
        for node in self.nodes:
            clear = getattr(node.op, "clear", None)  # statistics ops only
            if callable(clear):
                clear()

    def __repr__(self) -> str:
        return f"Graph(output={self.output_node!r}, nodes={len(self.nodes)})"


def _origin(column: str, upstream: list[dict[str, list[str]]]) -> list[str]:
    """The data columns of ``column`` as the first upstream node that has it traces them."""
    return next((traced[column] for traced in upstream if column in traced), [column])


def iter_nodes(nodes: Iterable[Node], flatten_subgraphs: bool = True) -> Iterator[Node]:
    """Every node reachable from ``nodes`` through parents and dependencies, each once,
    starting at ``nodes`` (breadth first). Subgraphs' nodes are ordinary ancestors here, so
    they are always included (``flatten_subgraphs`` is accepted for merlin's signature)."""
    queue = [as_node(node) for node in nodes]
    seen: set[int] = set()
    while queue:
        node = queue.pop(0)
        if node.id in seen:
            continue
        seen.add(node.id)
        yield node
        queue.extend([*node.parents, *node.dependencies])


def postorder_iter_nodes(nodes: Any, flatten_subgraphs: bool = True) -> Iterator[Node]:
    """Every node reachable from ``nodes``, each after everything it reads (the order in
    which fitting and transforming visit them)."""
    roots = [nodes] if isinstance(nodes, Node) else list(nodes)
    seen: set[int] = set()
    for root in roots:
        for node in [*as_node(root).ancestors(), as_node(root)]:
            if node.id not in seen:
                seen.add(node.id)
                yield node


def preorder_iter_nodes(nodes: Any, flatten_subgraphs: bool = True) -> Iterator[Node]:
    """Every node reachable from ``nodes``, each before what it reads (depth first)."""
    roots = [nodes] if isinstance(nodes, Node) else list(nodes)
    seen: set[int] = set()
    stack = [as_node(root) for root in reversed(roots)]
    while stack:
        node = stack.pop()
        if node.id in seen:
            continue
        seen.add(node.id)
        yield node
        stack.extend(reversed([*node.parents, *node.dependencies]))
