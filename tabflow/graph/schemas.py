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

from typing import Any, Mapping

from tabflow.graph.steps import NodeSchema
from tabflow.schema import Schema

__all__ = ["compute_schemas", "assign_schemas"]


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
