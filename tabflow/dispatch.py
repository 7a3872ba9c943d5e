"""``nvt.dispatch``: NVTabular 23.08's dispatch helpers (``nvtabular.dispatch``, ``merlin.core.dispatch``).

Scripts and custom ops that call them need only their imports changed: ``import tabflow as
nvt`` then ``nvt.dispatch.make_df(...)``, or ``from tabflow.dispatch import make_df``. The
functions live in :mod:`tabflow.compat.dispatch`, built on the engine backends and `tabflow.io`; this module
is their public name.

Examples
--------
>>> import tabflow as nvt
>>> type(nvt.dispatch.make_df({"a": [1]}, device="cpu")).__name__
'DataFrame'
"""

from __future__ import annotations

from tabflow.compat import dispatch as _implementation
from tabflow.compat.dispatch import __getattr__  # noqa: F401  (HAS_GPU, DataFrameType, SeriesType when first read)

__all__ = list(_implementation.__all__)

# Every name is taken from its one home, listed once there. Names the implementation computes
# on first read (HAS_GPU probes the GPU) are left to __getattr__, so importing stays cheap.
globals().update({name: vars(_implementation)[name] for name in __all__ if name in vars(_implementation)})
