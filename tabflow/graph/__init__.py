"""The column graph: nodes and the ``>>`` / ``+`` / ``-`` language, the steps they take, the
pure schema pass and the executor.

- :mod:`~tabflow.graph.selector`: :class:`ColumnSelector`, names, groups and tags of columns;
- :mod:`~tabflow.graph.node`: :class:`Node` (NVTabular's ``WorkflowNode``) and :func:`as_node`;
- :mod:`~tabflow.graph.operator`: :class:`Operator` and :class:`StatOperator`, the base
  classes of ops, whose schema hooks the graph calls (merlin's ``merlin.dag.Operator``);
- :mod:`~tabflow.graph.steps`: select, apply an op, concatenate, drop;
- :mod:`~tabflow.graph.structural`: merlin's ops of the structural steps (``ConcatColumns``, ...);
- :mod:`~tabflow.graph.schemas`: every node's schema from the data's, as a pure function;
- :mod:`~tabflow.graph.executor`: one function per partition, for dask and in-memory frames;
- :mod:`~tabflow.graph.executors`: merlin's ``LocalExecutor`` and ``DaskExecutor`` on it;
- :mod:`~tabflow.graph.graph`: :class:`Graph`, a whole graph (leaves, schemas, subgraphs);
- :mod:`~tabflow.graph.picture`: drawings of the graph (``node.graph``).

Examples
--------
>>> from tabflow.graph import Node, as_node
>>> (as_node(["a"]) + as_node(["b"])).label
'+'
"""

from __future__ import annotations

from tabflow.graph.executors import DaskExecutor, LocalExecutor
from tabflow.graph.graph import (
    Graph,
    iter_nodes,
    postorder_iter_nodes,
    preorder_iter_nodes,
)
from tabflow.graph.node import Node, Subgraph, as_node, register_function_op
from tabflow.graph.operator import BaseOperator, DataFormats, Operator, Supports
from tabflow.graph.selector import ColumnGroup, ColumnSelector
from tabflow.graph.steps import Apply, Concat, Drop, Nested, NodeSchema, Select, Step
from tabflow.graph.structural import ConcatColumns, SelectionOp, StructuralOp, SubsetColumns, SubtractionOp

__all__ = [
    "ColumnSelector",
    "ColumnGroup",
    "Node",
    "Subgraph",
    "Operator",
    "BaseOperator",
    "DataFormats",
    "Supports",
    "Graph",
    "iter_nodes",
    "postorder_iter_nodes",
    "preorder_iter_nodes",
    "as_node",
    "register_function_op",
    "NodeSchema",
    "Step",
    "Select",
    "Apply",
    "Concat",
    "Drop",
    "Nested",
    "StructuralOp",
    "SelectionOp",
    "ConcatColumns",
    "SubsetColumns",
    "SubtractionOp",
    "LocalExecutor",
    "DaskExecutor",
]
