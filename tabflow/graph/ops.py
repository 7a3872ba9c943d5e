"""merlin's ``merlin.dag.ops``: the ops merlin kept with its graph, under their merlin names.

``UDF`` is :class:`tabflow.ops.LambdaOp`; ``Subgraph`` is :class:`tabflow.graph.Subgraph`;
the schema ops are :mod:`tabflow.ops.add_metadata`'s. merlin's structural ops
(``SelectionOp``, ``ConcatColumns``, ``GroupingOp``, ``SubsetColumns``, ``SubtractionOp``)
are the steps of tabflow's nodes instead (``node.step``: :class:`~tabflow.graph.Select`,
:class:`~tabflow.graph.Concat`, ``Group``, ``Subset``, :class:`~tabflow.graph.Drop`), so a
structural node has no op.

Examples
--------
>>> import pandas as pd
>>> import tabflow as nvt
>>> from tabflow.graph import ops as graph_ops
>>> node = ["x"] >> graph_ops.UDF(lambda col: col + 1) >> graph_ops.Rename(postfix="_1")
>>> nvt.Workflow(node).fit_transform(pd.DataFrame({"x": [1, 2]}))["x_1"].tolist()
[2, 3]
"""

from __future__ import annotations

from tabflow.graph.node import Subgraph
from tabflow.graph.operator import StatOperator
from tabflow.ops.add_metadata import (
    AddMetadata,
    AddProperties,
    AddTags,
    TagAsItemFeatures,
    TagAsItemID,
    TagAsUserFeatures,
    TagAsUserID,
)
from tabflow.ops.lambdaop import LambdaOp as UDF
from tabflow.ops.rename import Rename

__all__ = [
    "AddMetadata",
    "AddProperties",
    "AddTags",
    "TagAsItemFeatures",
    "TagAsItemID",
    "TagAsUserFeatures",
    "TagAsUserID",
    "Rename",
    "UDF",
    "Subgraph",
    "StatOperator",
]
