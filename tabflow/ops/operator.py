"""NVTabular's module of the op base classes (``nvtabular.ops.operator``).

They live in :mod:`tabflow.graph.operator`, as merlin's live in ``merlin.dag``: the graph
calls their schema hooks. See there for the op contract.

Examples
--------
>>> from tabflow.ops.operator import ColumnSelector, Operator
>>> from tabflow import graph, ops
>>> Operator is ops.Operator is graph.Operator, ColumnSelector is graph.ColumnSelector
(True, True)
"""

from __future__ import annotations

from tabflow.graph.operator import (
    OPERATOR_REGISTRY,
    NotFittedError,
    NotUpdatableError,
    Operator,
    StatOperator,
)
from tabflow.graph.selector import ColumnSelector

__all__ = ["Operator", "StatOperator", "NotFittedError", "NotUpdatableError", "OPERATOR_REGISTRY", "ColumnSelector"]
