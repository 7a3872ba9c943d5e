"""Column selection and the graph language, where NVTabular scripts import them from.

:class:`ColumnSelector` lives in :mod:`tabflow.graph.selector`, :class:`Node` and
:func:`as_node` in :mod:`tabflow.graph.node`; this module gathers them under the path that
ops and users import (``from tabflow.selector import ColumnSelector``).

Examples
--------
>>> from tabflow.selector import ColumnSelector, as_node
>>> as_node(ColumnSelector(["a"])).selector.names
['a']
"""

from __future__ import annotations

from tabflow.graph.node import Node, as_node
from tabflow.graph.selector import ColumnGroup, ColumnSelector

__all__ = ["ColumnSelector", "ColumnGroup", "Node", "as_node"]
