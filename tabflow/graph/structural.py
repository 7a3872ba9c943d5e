"""merlin's structural ops: what a node that runs no op of its own does, under merlin's names.

In tabflow a node does one :mod:`step <tabflow.graph.steps>`; a node that selects, concatenates,
subsets or drops columns runs no op. merlin gives those nodes ops instead (``SelectionOp``,
``ConcatColumns``, ``SubsetColumns``, ``SubtractionOp``), and scripts test for them
(``isinstance(node.op, ConcatColumns)``), so ``node.op`` of a structural node is one of these:
a description of its step, which the step, not the op, carries out.

Examples
--------
>>> from tabflow.graph import ColumnSelector, Node
>>> from tabflow.graph.structural import ConcatColumns, SelectionOp, SubsetColumns, SubtractionOp
>>> node = Node(["a", "b"]) >> (lambda col: col)
>>> isinstance((node + "c").op, ConcatColumns), isinstance((node - "a").op, SubtractionOp)
(True, True)
>>> isinstance(node["a"].op, SubsetColumns), node.parents[0].op == SelectionOp(ColumnSelector(["a", "b"]))
(True, True)
"""

from __future__ import annotations

from typing import Any

from tabflow.graph.selector import ColumnSelector

__all__ = ["StructuralOp", "SelectionOp", "ConcatColumns", "SubsetColumns", "SubtractionOp"]


class StructuralOp:
    """Base of the structural ops: equal when of one class with equal parameters.

    Parameters
    ----------
    label : str, optional
        The name graph displays show (the class name when None), as merlin's.

    Examples
    --------
    >>> from tabflow.graph.structural import ConcatColumns
    >>> ConcatColumns() == ConcatColumns(), ConcatColumns().label, ConcatColumns(label="join").label
    (True, 'ConcatColumns', 'join')
    """

    def __init__(self, label: str | None = None) -> None:
        self._label = label

    @property
    def label(self) -> str:
        return self._label or type(self).__name__

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    def __hash__(self) -> int:
        return hash(type(self))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class SelectionOp(StructuralOp):
    """A node that selects input columns (by name, group or tag): ``Node(selector)``.

    Examples
    --------
    >>> from tabflow.graph import ColumnSelector
    >>> from tabflow.graph.structural import SelectionOp
    >>> SelectionOp(ColumnSelector(["a"])).selector.names, SelectionOp(["a"]) == SelectionOp(ColumnSelector(["a"]))
    (['a'], True)
    """

    def __init__(self, selector: Any = None, label: str | None = None) -> None:
        super().__init__(label)
        self.selector = selector if selector is None or isinstance(selector, ColumnSelector) else ColumnSelector(selector)


class ConcatColumns(StructuralOp):
    """A node that puts its parents' columns side by side: ``a + b`` (and the column groups
    of ``a + [b, "c"]``)."""


class SubsetColumns(StructuralOp):
    """A node that keeps some of its parent's columns: ``node["a"]``, ``node[["a", "b"]]``."""


class SubtractionOp(StructuralOp):
    """A node that drops columns from its parent's: ``node - ["a"]`` (names in ``selector``)
    or ``node - other_node`` (the other node's output columns)."""

    def __init__(self, selector: Any = None, label: str | None = None) -> None:
        super().__init__(label)
        self.selector = selector if selector is None or isinstance(selector, ColumnSelector) else ColumnSelector(selector)
