"""The schema pass: every node's columns from the input data's schema, as a pure function.

:func:`compute_schemas` asks each node's step for its :class:`~tabflow.graph.steps.NodeSchema`
given the schemas upstream of it, in topological order, and returns them all. Nothing is
stored on nodes or ops while computing, so one op object may sit in two nodes (each gets its
own schema); :func:`assign_schemas` then records the result on the nodes, where the executor
and users (``node.output_schema``) read it.

Examples
--------
>>> from tabflow import ops
>>> from tabflow.graph.schemas import compute_schemas
>>> from tabflow.schema import ColumnSchema, Schema
>>> node = ["x"] >> ops.LogOp()
>>> compute_schemas(node, Schema([ColumnSchema("x", dtype="int64")]))[node.id].output_schema.dtypes
{'x': 'float32'}
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from tabflow.graph.selector import ColumnSelector
from tabflow.graph.steps import Nested, NodeSchema
from tabflow.schema import Schema
from tabflow.schema.dtypes import is_string

__all__ = [
    "compute_schemas", "assign_schemas", "data_columns", "dictionary_string_inputs", "remove_inputs", "filter_selector",
]


def compute_schemas(output_node: Any, source: Schema) -> dict[int, NodeSchema]:
    """``{node id: NodeSchema}`` for the graph ending at ``output_node``."""
    schemas: dict[int, NodeSchema] = {}
    for node in [*output_node.ancestors(), output_node]:
        schemas[node.id] = node.step.resolve(node, schemas, source)
    return schemas


def assign_schemas(nodes: Any, schemas: Mapping[int, NodeSchema]) -> None:
    """Record each node's resolved schema on it (``input_selector``, ``input_schema``, ...)."""
    for node in nodes:
        resolved = schemas[node.id]
        node.input_selector = resolved.input_selector
        node.input_schema = resolved.input_schema
        node.output_schema = resolved.output_schema
        node.column_origins = dict(resolved.origins)


def data_columns(nodes: Any) -> set[str]:
    """The names resolved ``nodes`` read from the data: what input selections select, and
    what an op's ``compute_input_schema`` takes that no node upstream of it brings."""
    names: set[str] = set()
    for node in nodes:
        upstream = [*node.parents, *node.dependencies]
        if not upstream:
            names.update(node.output_schema.column_names)
        elif node.step.op is not None:
            brought = {name for up in upstream for name in up.output_schema.column_names}
            names.update(name for name in node.input_schema.column_names if name not in brought)
    return names


def dictionary_string_inputs(nodes: Sequence[Any]) -> list[str]:
    """The string columns a resolved graph can read dictionary-encoded (see
    ``Operator.dictionary_string_columns``): those of the data whose every reader is an op
    that lists them. A column also selected into the output, read by another op, or taken
    from the data by ``compute_input_schema`` is read as ``str``; so is every column of a
    graph with subgraphs (a looping subgraph reads its own output again).

    ``nodes`` are all the graph's nodes, the output node last.

    Examples
    --------
    >>> from tabflow import ops
    >>> from tabflow.graph import Graph
    >>> from tabflow.graph.schemas import dictionary_string_inputs
    >>> from tabflow.schema import ColumnSchema, Schema
    >>> graph = Graph((["a", "b"] >> ops.Categorify()) + (["b"] >> ops.HashBucket(10) >> ops.Rename(postfix="_h")) + ["c"])
    >>> source = Schema([ColumnSchema(n, dtype="str") for n in "abc"])
    >>> dictionary_string_inputs(graph.construct_schema(source).nodes)
    ['a']
    """
    nodes = list(nodes)
    if not nodes or any(isinstance(node.step, Nested) for node in nodes):
        return []
    candidates: list[str] = []
    refused: set[str] = set()
    for node in nodes:
        upstream = [*node.parents, *node.dependencies]
        if not upstream:
            candidates += [c.name for c in node.output_schema if is_string(c.dtype) and c.name not in candidates]
            if node is nodes[-1]:
                refused.update(node.output_schema.column_names)
            continue
        accepted = set(node.op.dictionary_string_columns(node.input_selector)) if node.step.op is not None else set()
        for up in upstream:
            if not up.parents and not up.dependencies:
                refused.update(name for name in up.output_schema.column_names if name not in accepted)
        if node.step.op is not None:
            brought = {name for up in upstream for name in up.output_schema.column_names}
            refused.update(name for name in node.input_schema.column_names if name not in brought)
    return [name for name in candidates if name not in refused]


def remove_inputs(output_node: Any, names: Any) -> list[str]:
    """Remove input columns ``names``, and every column computed from them, from a resolved
    graph (as merlin's ``Graph.remove_inputs``); returns the output columns removed.

    Each node's recorded schemas and selector lose the removed columns, so the graph no
    longer reads them nor produces what depends on them: the usual use is dropping the label
    of a fitted workflow before serving. A column group or a cross that involves a removed
    column goes as a whole.
    """
    gone_inputs = set(names)
    removed: dict[int, set[str]] = {}
    for node in [*output_node.ancestors(), output_node]:
        if node.output_schema is None:
            raise ValueError("remove_inputs needs a resolved graph: fit the workflow (or call fit_schema) first")
        if not node.parents and not node.dependencies:
            # A selection's input and output are the same columns, but a node built by
            # hand may record others: it reads its input schema.
            read = node.input_schema if node.input_schema is not None else node.output_schema
            lost = gone_inputs & set(read.column_names)
            lost_outputs = lost & set(node.output_schema.column_names)
        else:
            upstream = set().union(*(removed[n.id] for n in [*node.parents, *node.dependencies]))
            lost = upstream & set(node.input_schema.column_names)
            lost_outputs = _lost_outputs(node, lost)
        removed[node.id] = lost_outputs
        if lost or lost_outputs:
            node.input_selector = filter_selector(node.input_selector, lost)
            node.input_schema = node.input_schema.without(lost)
            node.output_schema = node.output_schema.without(lost_outputs)
            node.column_origins = {k: v for k, v in node.column_origins.items() if k not in lost_outputs}
    return sorted(removed[output_node.id])


def _lost_outputs(node: Any, lost: set[str]) -> set[str]:
    """Output columns of ``node`` computed from any of the ``lost`` input columns."""
    if not lost:
        return set()
    outputs = node.output_schema.column_names
    if node.step.op is None:  # structural steps pass columns through by name
        return lost & set(outputs)
    mapping = node.op.column_mapping(node.input_selector)
    derived = {name for name, sources in mapping.items() if lost & set(sources)}
    return (derived | (lost & set(outputs))) & set(outputs)


def filter_selector(selector: Any, names: set[str]) -> Any:
    """``selector`` without ``names``; a column group holding any of them goes whole."""
    if not names or selector is None:  # a node built by hand may have no recorded selector
        return selector
    kept_groups = [group for group in selector.subgroups if not names & set(group.names)]
    return ColumnSelector([n for n in selector.top_level_names if n not in names], subgroups=kept_groups, tags=selector.tags)
