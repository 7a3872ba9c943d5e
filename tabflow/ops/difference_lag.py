"""DifferenceLag: change of a column since ``shift`` rows earlier within the same group."""

from __future__ import annotations

from typing import Any, Sequence

from tabflow.backends import backend_for
from tabflow.backends.protocol import Frame
from tabflow.graph.selector import ColumnSelector
from tabflow.ops import _groupstats as gs
from tabflow.ops._numeric import require_numeric
from tabflow.ops.operator import Operator
from tabflow.schema import Schema, Tags

__all__ = ["DifferenceLag"]


class DifferenceLag(Operator):
    """``x[i] - x[i - shift]``, null where row ``i - shift`` belongs to another group.

    The data must be sorted by ``partition_cols`` (and by time within each group): the op
    compares each row with the row ``shift`` places earlier in the same partition of the
    dataset, and rows of one group must not span two partitions, otherwise the first rows
    of a group in a partition get nulls. Make that so with
    ``dataset.shuffle_by_keys(partition_cols)`` followed by a per-partition sort, or write
    the data sorted by key into files split at key boundaries. A null key never matches
    (its rows get nulls). Output columns are ``<col>_difference_lag_<shift>`` (float32, as in
    NVTabular 23.08; the difference is computed in float64 first);
    the op outputs only these columns.

    Parameters
    ----------
    partition_cols : str or list of str
        Group (e.g. session or user) column(s); read as dependencies.
    shift : int or list of int, default 1
        Lag(s) in rows; negative values look ahead.

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> df = pd.DataFrame({"user": [1, 1, 1, 2, 2], "ts": [10, 15, 30, 5, 9]})
    >>> wf = nvt.Workflow(["ts"] >> ops.DifferenceLag("user"))
    >>> wf.fit_transform(df)["ts_difference_lag_1"].tolist()
    [nan, 5.0, 15.0, nan, 4.0]
    """

    def __init__(self, partition_cols: str | Sequence[str], shift: int | Sequence[int] = 1) -> None:
        self.partition_cols = partition_cols
        self.shift = shift

    @property
    def dependencies(self) -> list[Any]:
        # Each entry is a dependency of its own (a name or a node), as NVTabular read them.
        return list(self.partition_cols) if isinstance(self.partition_cols, (list, tuple)) else [self.partition_cols]

    def _shifts(self) -> list[int]:
        return [self.shift] if isinstance(self.shift, int) else list(self.shift)

    def validate_input(self, input_schema: Schema, col_selector: ColumnSelector) -> None:
        if not self._shifts() or not all(isinstance(s, int) and s != 0 for s in self._shifts()):
            raise ValueError(f"DifferenceLag shift must be a non-zero integer or a list of them, got {self.shift!r}")
        gs.require_columns(input_schema, gs.as_names(self.partition_cols), "partition_cols", "DifferenceLag")
        require_numeric(input_schema, col_selector, "DifferenceLag")

    def transform(self, col_selector: ColumnSelector, df: Frame) -> Frame:
        backend = backend_for(df)
        keys = gs.as_names(self.partition_cols)
        out = {}
        for shift in self._shifts():
            same = None
            for key in keys:
                # Null keys compare as unequal, so their rows (and rows next to them) get nulls.
                equal = (df[key] == df[key].shift(shift)).fillna(False).astype(bool)
                same = equal if same is None else same & equal
            for name in col_selector.names:
                values = backend.to_float(df[name], "float64")
                out[f"{name}_difference_lag_{shift}"] = backend.astype((values - values.shift(shift)).where(same), "float32")
        return backend.frame_from_dict(out, index=df.index)

    def column_mapping(self, col_selector: ColumnSelector) -> dict[str, list[str]]:
        return {f"{n}_difference_lag_{s}": [n] for s in self._shifts() for n in col_selector.names}

    # Each difference keeps its source column's tags and properties, as in NVTabular, and
    # becomes a CONTINUOUS float32 whatever the source dtype.
    @property
    def output_dtype(self) -> str:
        return "float32"

    @property
    def output_tags(self) -> list[Any]:
        return [Tags.CONTINUOUS]
