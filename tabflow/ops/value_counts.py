"""NVTabular 23.08's module name for ``ValueCount`` (``nvtabular.ops.value_counts``), re-exported.

Examples
--------
>>> from tabflow.ops.value_counts import ValueCount
>>> from tabflow import ops
>>> ValueCount is ops.ValueCount
True
"""

from __future__ import annotations

from tabflow.ops.value_count import ValueCount

__all__ = ["ValueCount"]
