"""Rename: give columns new names, keeping their data, dtype, tags and properties."""

from __future__ import annotations

from typing import Callable

from tabflow.backends.protocol import Frame
from tabflow.graph.kernels import Kernel, renaming_kernels
from tabflow.graph.selector import ColumnSelector
from tabflow.ops.operator import Operator
from tabflow.schema import Schema

__all__ = ["Rename"]


class Rename(Operator):
    """Rename columns with a function, a postfix, or (for one column) a new name.

    Exactly as NVTabular: ``f`` wins over ``postfix``, which wins over ``name``; ``name``
    only applies to a single selected column.

    Parameters
    ----------
    f : callable, optional
        ``f(old_name) -> new_name``. Saved by name when registered with
        :func:`tabflow.register_function`, otherwise as code that runs after loading only
        with ``trust_code=True`` (see :meth:`tabflow.Workflow.load`).
    postfix : str, optional
        Appended to every name.
    name : str, optional
        New name of the single selected column.

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> df = pd.DataFrame({"a": [1], "b": [2]})
    >>> nvt.Workflow(["a", "b"] >> ops.Rename(postfix="_raw")).fit_transform(df).columns.tolist()
    ['a_raw', 'b_raw']
    >>> nvt.Workflow(["a"] >> ops.Rename(name="clicks")).fit_transform(df).columns.tolist()
    ['clicks']
    """

    row_wise = True

    def __init__(
        self, f: Callable[[str], str] | None = None, postfix: str | None = None, name: str | None = None
    ) -> None:
        self.f = f
        self.postfix = postfix
        self.name = name

    def validate_input(self, input_schema: Schema, col_selector: ColumnSelector) -> None:
        if self.f is None and self.postfix is None and self.name is None:
            raise ValueError("Rename needs one of f, postfix or name")
        if self.f is not None and not callable(self.f):
            raise TypeError(f"Rename f must be a callable taking a column name, got {self.f!r}")
        if self.f is None and self.postfix is None and len(col_selector.names) != 1:
            raise ValueError(
                f"Rename(name={self.name!r}) renames a single column but got {len(col_selector.names)} "
                "columns; use f or postfix to rename several"
            )
        new_names = list(self._mapping(col_selector).values())
        bad = [n for n in new_names if not isinstance(n, str) or not n]
        if bad:
            raise TypeError(f"Rename must produce non-empty string names, got {bad}")
        duplicated = sorted({n for n in new_names if new_names.count(n) > 1})
        if duplicated:
            raise ValueError(f"Rename maps several columns to the same name(s) {duplicated}")

    def transform(self, col_selector: ColumnSelector, df: Frame) -> Frame:
        return df[col_selector.names].rename(columns=self._mapping(col_selector))

    def array_kernels(self, col_selector: ColumnSelector, input_schema: Schema) -> list[Kernel] | None:
        return renaming_kernels(self._mapping(col_selector), input_schema)

    def column_mapping(self, col_selector: ColumnSelector) -> dict[str, list[str]]:
        return {new: [old] for old, new in self._mapping(col_selector).items()}

    def _mapping(self, col_selector: ColumnSelector) -> dict[str, str]:
        if self.f is not None:
            return {old: self.f(old) for old in col_selector.names}
        if self.postfix is not None:
            return {old: f"{old}{self.postfix}" for old in col_selector.names}
        return {old: str(self.name) for old in col_selector.names}
