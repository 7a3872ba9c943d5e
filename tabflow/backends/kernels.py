"""The host kernels of the backends that layers above may call: the one public door to them.

Ops, the graph's serving plan and the readers work through the :class:`Backend` protocol;
a few host-side algorithms are shared with them as plain functions on NumPy arrays and
pandas host frames. They are named here, so that the modules holding them
(``_hashing``, ``_string_table``, ``_host_arrays``, ``pandas_backend``) stay private and can
be reorganised behind this list. Each name is imported from its module when first read:
the numba kernels compile on first use, not when tabflow is imported.

Examples
--------
>>> import numpy as np
>>> from tabflow.backends import kernels
>>> kernels.is_sorted_unique(np.frombuffer(b"abc", dtype=np.uint8), np.array([0, 1, 2, 3]))
True
"""

from __future__ import annotations

import importlib
from typing import Any

# name -> the private module that holds it.
_HOMES = {
    # stable hashing (numba)
    "hash_combine": "tabflow.backends._hashing",
    # string hash tables (numba)
    "is_sorted_unique": "tabflow.backends._string_table",
    "key_strings": "tabflow.backends._string_table",
    "short_string_keys": "tabflow.backends._string_table",
    "sorted_key_counts": "tabflow.backends._string_table",
    # pandas host columns as Arrow buffers; parquet files opened for dictionary strings
    "string_buffers": "tabflow.backends.pandas_backend",
    "short_string_lookup": "tabflow.backends.pandas_backend",
    "short_string_key_rows": "tabflow.backends.pandas_backend",
    "open_parquet": "tabflow.backends.pandas_backend",
    "concat_tables": "tabflow.backends.pandas_backend",
    # columns as host NumPy values and null masks (the serving plan's only contact with pandas)
    "column_labels": "tabflow.backends._host_arrays",
    "frame": "tabflow.backends._host_arrays",
    "hash_values": "tabflow.backends._host_arrays",
    "is_request": "tabflow.backends._host_arrays",
    "request_frame": "tabflow.backends._host_arrays",
    "to_pandas": "tabflow.backends._host_arrays",
    "value_dtype": "tabflow.backends._host_arrays",
    "SEQUENCES": "tabflow.backends._host_arrays",
    "canonical_dtype": "tabflow.backends._host_arrays",
    "conform": "tabflow.backends._host_arrays",
    "conform_array": "tabflow.backends._host_arrays",
    "conform_pandas": "tabflow.backends._host_arrays",
    "frame_cells": "tabflow.backends._host_arrays",
    "frame_column": "tabflow.backends._host_arrays",
    "frame_layout": "tabflow.backends._host_arrays",
    "frame_of_parts": "tabflow.backends._host_arrays",
    "from_cells": "tabflow.backends._host_arrays",
    "from_pandas": "tabflow.backends._host_arrays",
    "from_python": "tabflow.backends._host_arrays",
    "has_mask": "tabflow.backends._host_arrays",
    "is_frame": "tabflow.backends._host_arrays",
    "range_index": "tabflow.backends._host_arrays",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))
