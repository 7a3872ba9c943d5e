"""The ``workflow.json`` document: a graph of nodes, each op's parameters and fitted state,
and every node's schema.

:func:`write_graph` writes it (fitted tables go to parquet files beside it);
:func:`read_graph` rebuilds the nodes from a document that may come from anyone, checking
every field (see :mod:`tabflow.serialize` for what decoding guarantees). Format 2 stores
each node's resolved schemas, so loading computes nothing; format 1 files (no node schemas)
are still read, and their schemas computed by the caller.

Examples
--------
>>> import os, tempfile, pandas as pd
>>> import tabflow as nvt
>>> from tabflow import ops
>>> from tabflow.serialize.workflow_file import read_graph, write_graph
>>> wf = nvt.Workflow(["x"] >> ops.Clip(min_value=0)).fit(pd.DataFrame({"x": [1.0]}))
>>> d = tempfile.mkdtemp()
>>> write_graph(d, wf.output_node, wf.input_schema, wf.output_schema)
>>> graph = read_graph(d)
>>> graph.output_node.label, graph.output_schema.column_names
('Clip', ['x'])
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from tabflow._json import read_json
from tabflow.exceptions import LoadError
from tabflow.graph.node import Node
from tabflow.graph.steps import Group, Nested, Step, Subset
from tabflow.schema import Schema
from tabflow.serialize import decode, decode_op, decode_selector, encode, encode_op

__all__ = ["write_graph", "read_graph", "SavedGraph", "FORMAT", "VERSION", "DOCUMENT"]

FORMAT = "tabflow.workflow"
# 2: node schemas saved (load computes nothing), functions by registered name or as code.
# 3: a concatenation's operands are its parents then its dependencies (``a + b + c``: parent
#    ``a``, dependencies ``b`` and ``c``, as merlin builds it); a version 2 reader would drop
#    the dependencies' columns, so it is told to upgrade instead. A workflow saved before it
#    has seen data has ``"input_schema": null`` and no node schemas.
VERSION = 3
DOCUMENT = "workflow.json"
_NODE_KINDS = {"selection", "op", "concat", "group", "subset", "drop", "subgraph"}


@dataclass
class SavedGraph:
    """What :func:`read_graph` rebuilds: the output node and the workflow's schemas
    (``output_schema`` is None for format 1, whose node schemas must be computed; both are
    None for a workflow saved before it saw any data)."""

    output_node: Node
    input_schema: Schema | None
    output_schema: Schema | None
    #: ``{"updates": n, "rows": r}``: updates since the last fit and rows the statistics saw
    #: (rows None where unknown); zero updates and None rows for files that have no record.
    seen: dict[str, Any] | None = None


def write_graph(
    directory: str, output_node: Node, input_schema: Schema | None, output_schema: Schema | None,
    seen: dict[str, Any] | None = None,
) -> None:
    """Write ``directory/workflow.json`` (and op tables beside it) for a graph: resolved,
    with every node's schemas, or (schemas None) as described, before it has seen data.
    ``seen`` (``{"updates": n, "rows": r}``) records how many updates since the last fit and
    how many rows the fitted statistics come from."""
    nodes = [*output_node.ancestors(), output_node]
    index = {node.id: i for i, node in enumerate(nodes)}
    entries = []
    for i, node in enumerate(nodes):
        entry: dict[str, Any] = {
            "id": i,
            "kind": node.kind,
            "parents": [index[p.id] for p in node.parents],
            "dependencies": [index[d.id] for d in node.dependencies],
        }
        if input_schema is not None:
            entry["input_selector"] = node.input_selector.to_dict()
            entry["input_schema"] = node.input_schema.to_dict()
            entry["output_schema"] = node.output_schema.to_dict()
        if node.selector is not None:
            entry["selector"] = node.selector.to_dict()
        if node.dropped is not None:
            entry["dropped"] = node.dropped.to_dict()
        if node.step.op is not None:
            entry["op"] = encode_op(node.op, directory, f"node{i}", index)
        if isinstance(node.step, Nested):
            entry["subgraph"] = {
                "name": node.step.name,
                "loop_until": encode(node.step.loop_until, directory, f"node{i}.loop_until", index),
            }
        entries.append(entry)
    document = {
        "format": FORMAT,
        "version": VERSION,
        "nodes": entries,
        "output": index[output_node.id],
        "input_schema": input_schema.to_dict() if input_schema is not None else None,
        "output_schema": output_schema.to_dict() if output_schema is not None else None,
    }
    if seen is not None:
        document["seen"] = {"updates": int(seen.get("updates", 0)), "rows": seen.get("rows")}
    with open(os.path.join(directory, DOCUMENT), "w", encoding="utf-8") as handle:
        json.dump(document, handle, indent=1)


def read_graph(path: str, trust_code: bool = False) -> SavedGraph:
    """Rebuild the graph saved in ``path`` (LoadError naming the node and entry otherwise)."""
    file = os.path.join(path, DOCUMENT)
    if not os.path.exists(file):
        raise LoadError(f"{file} not found: {path!r} is not a saved tabflow workflow")
    document = read_json(file, "workflow file")
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise LoadError(f"{file} is not a tabflow workflow file")
    version = document.get("version", 0)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise LoadError(f"{file} has an invalid format version {version!r:.40}")
    if version > VERSION:
        raise LoadError(f"{file} was written by a newer tabflow (format version {version}); upgrade tabflow to load it")
    entries = document.get("nodes")
    if not isinstance(entries, list) or not entries:
        raise LoadError(f"{file} holds no nodes")
    # From version 3 a workflow may be saved before it has seen data: no schemas at all.
    resolved = version < 3 or document.get("input_schema") is not None
    built: list[Node] = []
    for i, entry in enumerate(entries):
        built.append(_read_node(entry, i, built, path, trust_code, with_schemas=resolved and version >= 2))
    output = document.get("output")
    if not isinstance(output, int) or isinstance(output, bool) or not 0 <= output < len(built):
        raise LoadError(f"{file}: the output node {output!r:.40} is not one of its {len(built)} nodes")
    if not resolved:
        return SavedGraph(built[output], None, None)
    input_schema = _read_schema(document.get("input_schema"), file)
    output_schema = _read_schema(document.get("output_schema"), file) if version >= 2 else None
    return SavedGraph(built[output], input_schema, output_schema, _read_seen(document.get("seen"), file))


def _read_seen(data: Any, where: str) -> dict[str, Any]:
    """The saved record of updates and rows (absent in files saved before it was kept)."""
    if data is None:
        return {"updates": 0, "rows": None}

    def count(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0

    if not isinstance(data, dict) or not count(data.get("updates")) or not (data.get("rows") is None or count(data.get("rows"))):
        raise LoadError(f"{where}: malformed record of updates and rows seen {data!r:.80}")
    return {"updates": data["updates"], "rows": data["rows"]}


def _read_node(entry: Any, i: int, built: list[Node], path: str, trust_code: bool, with_schemas: bool) -> Node:
    """One node, every field checked (the document may come from anyone)."""
    where = f"node {i}"
    if not isinstance(entry, dict):
        raise LoadError(f"{where}: malformed node {entry!r:.80}")
    kind = entry.get("kind")
    if kind not in _NODE_KINDS:
        raise LoadError(f"{where}: unknown node kind {kind!r:.40}")

    def earlier(key: str) -> list[Node]:
        indices = entry.get(key, [])
        if not isinstance(indices, list) or not all(
            isinstance(k, int) and not isinstance(k, bool) and 0 <= k < i for k in indices
        ):
            raise LoadError(f"{where}: its {key} must be indices of earlier nodes, got {indices!r:.80}")
        return [built[k] for k in indices]

    parents, dependencies = earlier("parents"), earlier("dependencies")
    selector = decode_selector(entry["selector"], where) if "selector" in entry else None
    dropped = decode_selector(entry["dropped"], where) if "dropped" in entry else None
    op = decode_op(entry["op"], path, trust_code=trust_code, owner=where, nodes=built) if "op" in entry else None
    try:
        step: Step | None = Group() if kind == "group" else Subset(selector) if kind == "subset" and selector is not None else None
        if kind == "subgraph":
            step = _read_subgraph(entry.get("subgraph"), where, path, trust_code)
        node = Node(selector=selector, op=op, parents=parents, dependencies=dependencies, dropped=dropped, step=step)
    except TypeError as err:
        raise LoadError(f"{where}: {err}") from None
    if node.kind != kind or (kind != "selection" and not parents):
        raise LoadError(f"{where}: its fields do not describe a {kind} node")
    if with_schemas:
        try:
            node.input_selector = decode_selector(entry["input_selector"], where)
            node.input_schema = _read_schema(entry["input_schema"], where)
            node.output_schema = _read_schema(entry["output_schema"], where)
        except KeyError as err:
            raise LoadError(f"{where}: the saved node lacks {err}") from None
    return node


def _read_subgraph(data: Any, where: str, path: str, trust_code: bool) -> Nested:
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        raise LoadError(f"{where}: a subgraph node needs its name, got {data!r:.80}")
    loop_until = decode(data.get("loop_until"), path, trust_code=trust_code, owner=f"{where} (subgraph {data['name']!r})")
    if loop_until is not None and not callable(loop_until):
        raise LoadError(f"{where}: the subgraph's loop_until must be a function, got {loop_until!r:.80}")
    return Nested(data["name"], loop_until)


def _read_schema(data: Any, where: str) -> Schema:
    try:
        schema = Schema.from_dict(data)
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise LoadError(f"{where}: malformed saved schema ({type(err).__name__}: {err})") from None
    for column in schema:
        if not isinstance(column.name, str) or not isinstance(column.dtype, str):
            raise LoadError(f"{where}: malformed saved column {column.name!r:.60}")
    return schema
