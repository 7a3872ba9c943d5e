"""Small pandas frames read and built through their blocks: the serving plan's fast route
into and out of pandas.

A pandas frame stores its columns in *blocks*: one 2-D NumPy array per run of NumPy columns
of one dtype, one array per extension column (``Int64``, ``string``, ...). Reading a one-row
request of 39 columns through pandas' public calls takes ~0.2 ms (``frame.dtypes`` builds a
Series, ``frame.iat`` costs ~4 us a cell), many times the plan's own work; reading the same
dtypes and cells from the blocks takes ~1 us a column, and building the answer frame from
its blocks ~10 us instead of ~50 us.

Blocks are pandas internals (``DataFrame._mgr``; the buffers of masked and Arrow string
arrays), so this module keeps to rules that make the fast route safe:

- it reads them only on the pandas versions the test suite runs against
  (:data:`READS_BLOCKS`, 2.2 to 3.x), and only when a frame holds what it expects; otherwise
  it returns None and the caller takes the public route;
- a cell read here is the value ``frame.iat`` gives, and a dtype the one ``frame.dtypes``
  gives: the extension arrays it does not know are read through their public ``[]``, as
  ``iat`` reads them, and ``tests/backends/test_pandas_blocks.py`` compares both routes on
  every kind of column pandas stores;
- frames are built by ``pandas.api.internals.create_dataframe_from_blocks`` (pandas >= 3.0),
  the function pandas provides to libraries that build frames from arrays.

Examples
--------
>>> import pandas as pd
>>> from tabflow.backends import _pandas_blocks
>>> frame = pd.DataFrame({"s": pd.array(["a", None], dtype="string"), "n": [3, 4]})
>>> _pandas_blocks.dtypes(frame) == frame.dtypes.tolist()
True
>>> _pandas_blocks.cells(frame, [0, 1])
[{0: 'a', 1: np.int64(3)}, {0: <NA>, 1: np.int64(4)}]
"""

from __future__ import annotations

import re
from typing import Any, Sequence

import numpy as np
import pandas as pd

__all__ = ["READS_BLOCKS", "BUILDS_BLOCKS", "dtypes", "cells", "frame_from_columns", "masked_parts"]


def _version(text: str) -> tuple[int, int]:
    found = re.match(r"(\d+)\.(\d+)", text)
    return (int(found.group(1)), int(found.group(2))) if found else (0, 0)


#: Whether frames are read through their blocks: the pandas versions the suite tests it on.
READS_BLOCKS = (2, 2) <= _version(pd.__version__) < (4, 0)

try:  # pandas >= 3.0
    from pandas.api.internals import create_dataframe_from_blocks as _create_from_blocks
except ImportError:  # pragma: no cover - pandas 2.x builds frames the public way
    _create_from_blocks = None

#: Whether answer frames are built from blocks (pandas >= 3.0, within the tested versions).
BUILDS_BLOCKS = READS_BLOCKS and _create_from_blocks is not None

# Extension arrays whose cells are read from their buffers: each reads as its ``[]`` does
# (masked: the stored value, or the dtype's NA under the mask; Arrow strings: the Python
# str, or the dtype's NA for a null). Exact types: a subclass may read otherwise.
_MASKED = (pd.arrays.IntegerArray, pd.arrays.FloatingArray, pd.arrays.BooleanArray)
_ARROW_STRINGS = getattr(pd.arrays, "ArrowStringArray", None)


def _stored(frame: Any) -> tuple[Sequence[Any], list[int], list[int]] | None:
    """A frame's block arrays, and per column its block and its row in that block; None
    when the frame does not hold them as expected."""
    if not READS_BLOCKS or type(frame) is not pd.DataFrame:
        return None
    try:
        manager = frame._mgr
        blocks = manager.blocks
        numbers, rows = manager.blknos.tolist(), manager.blklocs.tolist()
    except AttributeError:
        return None
    if len(numbers) != len(frame.columns) or len(rows) != len(numbers):
        return None
    return [block.values for block in blocks], numbers, rows


def dtypes(frame: Any) -> list[Any] | None:
    """``frame.dtypes.tolist()`` from the blocks; None when they cannot tell.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.backends._pandas_blocks import dtypes
    >>> dtypes(pd.DataFrame({"a": [1], "b": [0.5], "c": [2]}))
    [dtype('int64'), dtype('float64'), dtype('int64')]
    """
    stored = _stored(frame)
    if stored is None:
        return None
    arrays, numbers, _ = stored
    block_dtypes = [array.dtype for array in arrays]
    return [block_dtypes[number] for number in numbers]


def cells(frame: Any, positions: Sequence[int]) -> list[dict[int, Any]] | None:
    """The cells of every row at column ``positions``, ``cells[row][position]``, each the
    value ``frame.iat[row, position]`` gives; None when the blocks cannot tell.

    Meant for frames of a few rows: a column's cells are read one by one.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.backends._pandas_blocks import cells
    >>> frame = pd.DataFrame({"n": pd.array([None, 7], dtype="Int64"), "f": [0.5, 1.5]})
    >>> cells(frame, [1, 0])
    [{1: np.float64(0.5), 0: <NA>}, {1: np.float64(1.5), 0: np.int64(7)}]
    """
    stored = _stored(frame)
    if stored is None:
        return None
    arrays, numbers, block_rows = stored
    columns = [(arrays[numbers[position]], block_rows[position], position) for position in positions]
    return [{position: _cell(array, block_row, row) for array, block_row, position in columns} for row in range(len(frame))]


def _cell(array: Any, block_row: int, row: int) -> Any:
    """One cell of a block array, as ``iat`` reads it."""
    kind = type(array)
    if kind is np.ndarray:
        return array[block_row, row]
    if kind is _ARROW_STRINGS:
        value = array._pa_array[row].as_py()
        return array.dtype.na_value if value is None else value
    if kind in _MASKED:
        return array.dtype.na_value if array._mask[row] else array._data[row]
    return (array if array.ndim == 1 else array[block_row])[row]


def masked_parts(array: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """The values and the missing-value mask a pandas masked array (``Int64``, ``Float64``,
    ``boolean``) holds, not copied (a value under the mask is whatever is stored there); None
    for any other array.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.backends._pandas_blocks import masked_parts
    >>> values, mask = masked_parts(pd.array([3, None], dtype="Int64"))
    >>> values.dtype.name, mask.tolist()
    ('int64', [False, True])
    >>> masked_parts(pd.array(["x"], dtype="str")) is None
    True
    """
    if type(array) not in _MASKED:
        return None
    return array._data, array._mask


def frame_from_columns(parts: Sequence[tuple[Any, int]], columns: pd.Index, index: pd.Index) -> pd.DataFrame | None:
    """A frame whose blocks are ``parts``: ``(array, first position)`` pairs in column order,
    each a 2-D NumPy array (one row per column: taken over, not copied), a 1-D NumPy array or
    a pandas array (one column); None on pandas versions without the builder.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from tabflow.backends._pandas_blocks import BUILDS_BLOCKS, frame_from_columns
    >>> parts = [(np.array([[1, 2], [3, 4]]), 0), (pd.array(["x", None], dtype="string"), 2)]
    >>> out = frame_from_columns(parts, pd.Index(["a", "b", "s"]), pd.RangeIndex(2))
    >>> out is None or out.equals(pd.DataFrame({"a": [1, 2], "b": [3, 4], "s": pd.array(["x", None], dtype="string")}))
    True
    """
    if not BUILDS_BLOCKS:
        return None
    blocks = []
    for array, start in parts:
        if type(array) is pd.arrays.NumpyExtensionArray:  # not its subclasses (python strings)
            array = array.to_numpy()
        if isinstance(array, np.ndarray):
            if array.ndim == 1:
                array = array.reshape(1, -1)
            blocks.append((array, np.arange(start, start + len(array))))
        else:
            blocks.append((array, np.array([start])))
    return _create_from_blocks(blocks, index, columns)
