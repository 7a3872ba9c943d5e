"""merlin's ``merlin.dag.ops``: the ops merlin kept with its graph, under their merlin names.

``UDF`` is :class:`tabflow.ops.LambdaOp`; ``Subgraph`` is :class:`tabflow.graph.Subgraph`;
the schema ops are :mod:`tabflow.ops.add_metadata`'s. merlin's structural ops
(``SelectionOp``, ``ConcatColumns``, ``SubsetColumns``, ``SubtractionOp``) describe the steps of
tabflow's structural nodes (``node.step``: :class:`~tabflow.graph.Select`,
:class:`~tabflow.graph.Concat` and its ``Group``, ``Subset``, :class:`~tabflow.graph.Drop`):
``node.op`` of such a node is one (:mod:`tabflow.graph.structural`), and a node built by hand
with one takes that step.

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
from tabflow.graph.structural import ConcatColumns, SelectionOp, SubsetColumns, SubtractionOp
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
    "SelectionOp",
    "ConcatColumns",
    "SubsetColumns",
    "SubtractionOp",
]
