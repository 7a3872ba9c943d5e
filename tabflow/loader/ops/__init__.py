"""Ops made for ``Loader(transforms=...)``: they act on the input columns of every partition
the loader converts (see :mod:`tabflow.loader._transforms`).

Examples
--------
>>> from tabflow.loader.ops import Padding
>>> Padding(3, -1).padding_size
3
"""

from __future__ import annotations

from tabflow.loader.ops.embeddings import EmbeddingOperator
from tabflow.loader.ops.padding import Padding

__all__ = ["EmbeddingOperator", "Padding"]
