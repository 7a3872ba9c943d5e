"""Filter: keep the rows for which a user function returns True."""

from __future__ import annotations

from typing import Any, Callable

from tabflow.backends import backend_for
from tabflow.backends.protocol import Frame
from tabflow.graph.selector import ColumnSelector
from tabflow.ops.operator import Operator

__all__ = ["Filter"]


class Filter(Operator):
    """Keep the rows where ``f(df)`` is True.

    ``f`` receives the frame of the selected columns (pandas or cuDF, one partition at a
    time) and returns a boolean mask of the same length (a series or array; null counts as
    False) or an already filtered frame. The rows kept get a new index ``0 .. n-1`` (per
    partition), as in NVTabular 23.08. As with :class:`Dropna`, a row filter must see
    every output column: apply it to the whole selection, not to one branch of a ``+``.

    Saving: as for :class:`LambdaOp`, ``f`` is saved by name when registered with
    :func:`tabflow.register_function`, otherwise as code that runs after loading only with
    ``trust_code=True``.

    Parameters
    ----------
    f : callable
        ``f(frame) -> boolean mask or frame``.

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> df = pd.DataFrame({"price": [5.0, -1.0, 3.0], "item": ["a", "b", "c"]})
    >>> wf = nvt.Workflow(["price", "item"] >> ops.Filter(lambda df: df["price"] > 0))
    >>> wf.fit_transform(df)["item"].tolist()
    ['a', 'c']
    """

    def __init__(self, f: Callable[[Any], Any]) -> None:
        self.f = f

    def validate_input(self, input_schema: Any, col_selector: ColumnSelector) -> None:
        if not callable(self.f):
            raise TypeError(f"Filter needs a function f(df) -> boolean mask, got {self.f!r}")

    def transform(self, col_selector: ColumnSelector, df: Frame) -> Frame:
        backend = backend_for(df)
        frame = df[col_selector.names]
        result = self.f(frame)
        # The kept rows are renumbered from 0, as NVTabular 23.08's Filter does
        # (``reset_index(drop=True)``), so each output partition has a fresh range index.
        if backend.is_frame(result):
            return result[col_selector.names].reset_index(drop=True)
        if len(result) != len(frame):
            raise ValueError(
                f"Filter function {getattr(self.f, '__name__', self.f)!r} returned {len(result)} values "
                f"for {len(frame)} rows; it must return one boolean per row"
            )
        if backend.is_series(result):
            result = result.fillna(False).astype(bool).values
        return frame[result].reset_index(drop=True)

    @property
    def label(self) -> str:
        return f"Filter({getattr(self.f, '__name__', 'f')})"
