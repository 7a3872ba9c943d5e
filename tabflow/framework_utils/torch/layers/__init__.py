"""Embedding layers of :class:`tabflow.framework_utils.torch.models.Model`.

Examples
--------
>>> import torch
>>> from tabflow.framework_utils.torch.layers import ConcatenatedEmbeddings
>>> ConcatenatedEmbeddings({"a": (5, 2), "b": (3, 4)})(torch.tensor([[1, 2], [4, 0]])).shape
torch.Size([2, 6])
"""

from __future__ import annotations

from tabflow.framework_utils.torch.layers.embeddings import (
    ConcatenatedEmbeddings,
    MultiHotEmbeddings,
)

__all__ = ["ConcatenatedEmbeddings", "MultiHotEmbeddings"]
