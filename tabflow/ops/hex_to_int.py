"""HexToInt: parse hexadecimal id strings (raw Criteo categoricals) into integers."""

from __future__ import annotations

from tabflow.backends import backend_for
from tabflow.backends.protocol import Frame
from tabflow.graph.selector import ColumnSelector
from tabflow.ops.operator import Operator
from tabflow.schema import Schema

__all__ = ["HexToInt"]


class HexToInt(Operator):
    """Convert hexadecimal strings such as ``"68fd1e64"`` to integers.

    Each value is 1 to 16 hex digits (either case, optional ``0x`` prefix). Criteo's 8-digit
    ids are 32-bit and always come out positive; a 16-digit value of ``2**63`` or more wraps
    to the negative int64 with the same 64 bits (``"ffffffffffffffff"`` gives -1), so every
    64-bit id stays distinct. Nulls and empty strings become null: the output dtype is the
    nullable ``Int64`` whether or not a partition holds a null. Any other value raises
    ValueError naming the column and quoting the value.

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> df = pd.DataFrame({"C1": ["68fd1e64", "0x1F", None, ""]})
    >>> nvt.Workflow(["C1"] >> ops.HexToInt()).fit_transform(df)["C1"].tolist()
    [1761418852, 31, <NA>, <NA>]
    """

    row_wise = True

    def __init__(self) -> None:
        pass

    def validate_input(self, input_schema: Schema, col_selector: ColumnSelector) -> None:
        for name in col_selector.names:
            if input_schema[name].dtype != "string":
                raise TypeError(f"HexToInt needs string columns but {name!r} has dtype {input_schema[name].dtype}")

    def transform(self, col_selector: ColumnSelector, df: Frame) -> Frame:
        backend = backend_for(df)
        out = {}
        for name in col_selector.names:
            try:
                out[name] = backend.hex_to_int(df[name])
            except ValueError as err:
                raise ValueError(f"HexToInt: column {name!r}: {err}") from None
        return backend.frame_from_dict(out, index=df.index)

    @property
    def output_dtype(self) -> str:
        return "Int64"
