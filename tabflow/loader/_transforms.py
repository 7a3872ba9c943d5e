"""``Loader(transforms=...)``: tabflow ops and nodes applied to the input columns, and
callables applied to the batches.

merlin's loader takes operators (or a graph) and runs them on the inputs of every batch.
tabflow's ops work on frames, so here they run on the input columns of each partition as it
is converted (the label columns pass unchanged), and the converted tensors are those of
their output columns: ``transforms=[ops.Rename(postfix="_x")]`` renames every input,
``transforms=["a"] >> ops.LogOp()`` keeps only ``a``, logged. Statistics ops must be
fitted already (pass a fitted :class:`~tabflow.Workflow`, or nodes of one). Ops must keep
every row: the epoch was planned from the partitions' row counts.

Callables take the ``(inputs, targets)`` pair of a batch and return a new pair, in order.

Examples
--------
>>> import pandas as pd
>>> from tabflow import ops
>>> from tabflow.loader._transforms import FrameTransform, split_transforms
>>> from tabflow.schema import Schema
>>> graph, callables = split_transforms([ops.Rename(postfix="_x"), lambda batch: batch])
>>> transform = FrameTransform(graph, Schema(["a", "y"]), inputs=["a"], labels=["y"])
>>> transform.read, transform.output_schema.column_names
(['a', 'y'], ['a_x'])
>>> transform(pd.DataFrame({"a": [1.0], "y": [0]})).columns.tolist(), len(callables)
(['a_x', 'y'], 1)
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from tabflow.backends import backend_for
from tabflow.graph import ColumnSelector, Node
from tabflow.ops.operator import Operator, StatOperator
from tabflow.schema import Schema
from tabflow.workflow import Workflow

__all__ = ["split_transforms", "FrameTransform", "TransformingBuilder"]

_GRAPH_TYPES = (Operator, Node, Workflow)


def split_transforms(transforms: Any) -> tuple[list[Any], list[Callable]]:
    """``transforms`` as (ops, nodes or a workflow to run on frames; callables for batches).

    A single op, node, workflow or callable counts as a list of one. Ops and nodes come
    first: they act on the data before it becomes the batches the callables see.
    """
    if transforms is None:
        return [], []
    if isinstance(transforms, _GRAPH_TYPES) or callable(transforms) or isinstance(transforms, type):
        transforms = [transforms]
    graph: list[Any] = []
    callables: list[Callable] = []
    for item in transforms:
        if isinstance(item, type) and issubclass(item, Operator):
            item = item()  # ``transforms=[ops.LogOp]``, as ``>> ops.LogOp`` allows
        if isinstance(item, _GRAPH_TYPES):
            if callables:
                raise TypeError(
                    f"transforms: {item!r} comes after a callable; ops and nodes act on the columns before "
                    "they become batches, so they must come first"
                )
            graph.append(item)
        elif callable(item):
            callables.append(item)
        else:
            raise TypeError(f"transforms must be tabflow ops, nodes, a Workflow or callables; got {item!r}")
    if len(graph) > 1 and any(isinstance(g, Workflow) for g in graph):
        raise TypeError("transforms: a Workflow must be the only op or node given")
    return graph, callables


class FrameTransform:
    """Ops run on the input columns of a frame; label columns are carried through.

    Parameters
    ----------
    graph : list
        Ops (chained in order after the inputs), one node, or one workflow.
    schema : Schema
        The loader's input schema.
    inputs, labels : list of str
    """

    def __init__(self, graph: Sequence[Any], schema: Schema, inputs: Sequence[str], labels: Sequence[str]) -> None:
        self.labels = list(labels)
        first = graph[0]
        if isinstance(first, Workflow):
            workflow = first
            if workflow.output_schema is None:
                workflow.fit_schema(schema)
        else:
            node: Any = first if isinstance(first, Node) else ColumnSelector(list(inputs)) >> first
            for op in graph[1:]:
                node = node >> op
            workflow = Workflow(node).fit_schema(schema)
        unfitted = [type(op).__name__ for op in workflow.ops if isinstance(op, StatOperator) and not op.fitted]
        if unfitted:
            raise ValueError(
                f"transforms: {unfitted} have no statistics; fit them in a Workflow first and pass it "
                "(or its nodes) as transforms"
            )
        read = workflow.input_schema.column_names
        if any(name in self.labels for name in read):
            raise ValueError(f"transforms read the label column(s) {[n for n in read if n in self.labels]}; they act on inputs only")
        self.workflow = workflow
        self.output_schema: Schema = workflow.output_schema
        self.read = list(dict.fromkeys([*read, *self.labels]))

    def __call__(self, frame: Any) -> Any:
        inputs = self.workflow.transform(frame[self.workflow.input_schema.column_names])
        if len(inputs) != len(frame):
            raise ValueError(
                f"transforms turned {len(frame)} rows into {len(inputs)}; loader transforms must keep "
                "every row (filter the data with a Workflow before loading it)"
            )
        if not self.labels:
            return inputs
        labels = frame[self.labels]
        if not inputs.index.equals(labels.index):
            labels = backend_for(frame).with_index(labels, inputs.index)
        return backend_for(frame).concat_columns([inputs, labels])


class TransformingBuilder:
    """A chunk builder that runs a :class:`FrameTransform` on the frame first."""

    def __init__(self, transform: FrameTransform, builder: Callable) -> None:
        self.transform, self.builder = transform, builder
        self.dense_only = getattr(builder, "dense_only", False)

    def __call__(self, frame: Any, allocate: Any = None) -> dict:
        return self.builder(self.transform(frame), allocate=allocate)
