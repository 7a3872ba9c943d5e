"""Dropna: drop the rows that hold a null in any selected column."""

from __future__ import annotations

from typing import Any

from tabflow.ops.operator import Operator

__all__ = ["Dropna"]


class Dropna(Operator):
    """Drop every row with a null (None, NA or NaN) in any of the selected columns.

    A row filter changes the number of rows, so it must see every column the workflow
    outputs: use it on the whole selection (``all_columns >> ops.Dropna()``) or after the
    concatenation (``(cats + conts) >> ops.Dropna()``). Combining a filtered branch with an
    unfiltered one (``(a >> ops.Dropna()) + b``) raises a clear error when the row counts
    differ. A null list counts as null; an empty list does not. The rows kept get a new
    index ``0 .. n-1`` (per partition), as in NVTabular 23.08.

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> df = pd.DataFrame({"a": [1.0, None, 3.0], "b": ["x", "y", None]})
    >>> nvt.Workflow(["a", "b"] >> ops.Dropna()).fit_transform(df).to_dict("list")
    {'a': [1.0], 'b': ['x']}
    """

    def __init__(self) -> None:
        pass

    def transform(self, col_selector: Any, df: Any) -> Any:
        # The kept rows are renumbered from 0, as NVTabular 23.08's Dropna does.
        return df[col_selector.names].dropna().reset_index(drop=True)
