"""NVTabular 23.08's module of the fill ops (``nvtabular.ops.fill``), re-exported.

Examples
--------
>>> from tabflow.ops.fill import FillMedian, FillMissing
>>> from tabflow import ops
>>> FillMedian is ops.FillMedian and FillMissing is ops.FillMissing
True
"""

from __future__ import annotations

from tabflow.ops.fill_median import FillMedian
from tabflow.ops.fill_missing import FillMissing

__all__ = ["FillMissing", "FillMedian"]
