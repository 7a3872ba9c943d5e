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

from dataclasses import replace
from typing import Any, Mapping, Sequence

from tabflow.backends import backend_for
from tabflow.graph.columns import input_frame, observes_dtypes
from tabflow.graph.executor import conform, evaluate
from tabflow.graph.selector import ColumnSelector
from tabflow.graph.steps import Nested, NodeSchema
from tabflow.schema import Schema
from tabflow.schema.dtypes import is_string

__all__ = [
    "compute_schemas", "observe_schemas", "assign_schemas", "data_columns", "dictionary_string_inputs", "remove_inputs", "filter_selector",
]


def compute_schemas(
    output_node: Any, source: Schema, observed: Mapping[int, Mapping[str, str]] | None = None
) -> dict[int, NodeSchema]:
    """``{node id: NodeSchema}`` for the graph ending at ``output_node``.

    ``observed`` gives, by node id, output dtypes seen on the data (see
    :func:`observe_schemas`): they replace what those nodes' ops plan, and the nodes downstream
    are resolved from them.
    """
    schemas: dict[int, NodeSchema] = {}
    for node in [*output_node.ancestors(), output_node]:
        resolved = node.step.resolve(node, schemas, source)
        seen = (observed or {}).get(node.id)
        if seen:
            output = Schema(
                [column.with_dtype(seen[column.name]) if column.name in seen else column for column in resolved.output_schema]
            )
            resolved = replace(resolved, output_schema=output)
        schemas[node.id] = resolved
    return schemas


def observe_schemas(output_node: Any, source: Schema, sample: Any) -> dict[int, NodeSchema]:
    """:func:`compute_schemas`, with the output dtypes of ops that learn them from the data
    (:func:`~tabflow.graph.columns.observes_dtypes`: a ``LambdaOp`` without ``dtype``, a user
    op that declares none) seen by running them on ``sample``, a few real rows of the data.

    An op is run once every op upstream of it (and itself) is fitted, on what the graph
    makes of the sample up to it; ops further down are resolved from the dtypes seen. One
    whose inputs are not fitted yet keeps its planned schema until a later call (the
    workflow calls this again after each fit pass). Records the schemas on the nodes, as
    :func:`assign_schemas` does.
    """
    nodes = [*output_node.ancestors(), output_node]
    observing = [node for node in nodes if node.step.op is not None and observes_dtypes(node.step.op)]
    observed: dict[int, dict[str, str]] = {}
    schemas = compute_schemas(output_node, source)
    frame = None
    for node in observing:
        if not all(getattr(n.step.op, "fitted", True) for n in [*node.ancestors(), node]):
            continue
        assign_schemas(nodes, schemas)
        if frame is None:
            frame = conform(sample[[n for n in source.column_names if n in sample.columns]], source)
        cache: dict[int, Any] = {}
        upstream = [evaluate(n, frame, cache) for n in [*node.parents, *node.dependencies]]
        op = node.step.op
        try:
            # The op itself, not its step: the step casts a user op's output to the planned dtypes.
            out = op.transform(node.input_selector, input_frame(upstream, node.input_schema.column_names, frame))
        except Exception as err:
            err.add_note(
                f"(while {type(op).__name__} on column(s) {node.input_selector.names} ran on the first rows of the "
                "data to learn its output dtypes; give it its dtypes to skip this, e.g. LambdaOp(f, dtype=...))"
            )
            raise
        backend = backend_for(out)
        out = backend.with_list_columns(out)
        observed[node.id] = {name: backend.observed_dtype(out[name]) for name in out.columns}
        schemas = compute_schemas(output_node, source, observed)
    assign_schemas(nodes, schemas)
    return schemas


def assign_schemas(nodes: Any, schemas: Mapping[int, NodeSchema]) -> None:
    """Record each node's resolved schema on it (``input_selector``, ``input_schema``, ...)."""
    for node in nodes:
        resolved = schemas[node.id]
        node.input_selector = resolved.input_selector
        node.input_schema = resolved.input_schema
        node.output_schema = resolved.output_schema


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
