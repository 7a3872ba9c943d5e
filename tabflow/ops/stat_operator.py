"""NVTabular 23.08's module of the statistics base class (``nvtabular.ops.stat_operator``), re-exported.

Examples
--------
>>> from tabflow.ops.stat_operator import StatOperator
>>> from tabflow import ops
>>> StatOperator is ops.StatOperator
True
"""

from __future__ import annotations

from tabflow.ops.operator import StatOperator

__all__ = ["StatOperator"]
