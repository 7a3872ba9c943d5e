"""Embedding layers: one home for embedding tables, with one pooling function.

- :class:`ConcatenatedEmbeddings` / :class:`MultiHotEmbeddings`: NVTabular's layers of
  :class:`~tabflow.framework_utils.torch.models.Model`, over ``(x_cat, multi-hot dict)``;
- :class:`EmbeddingTables`: tables for the dict batches of :class:`~tabflow.loader.torch.Loader`,
  built from a fitted workflow's schema (shared tables for joint vocabularies, YAML export
  via :func:`embedding_config`, in ``layers.config``), and :func:`sparse_and_dense_parameters`
  for its optimizers;
- :func:`~tabflow.framework_utils.torch.layers.pooling.pool`: the pooling of list columns
  that both multi-hot layers use.

Examples
--------
>>> import torch
>>> from tabflow.framework_utils.torch.layers import ConcatenatedEmbeddings
>>> ConcatenatedEmbeddings({"a": (5, 2), "b": (3, 4)})(torch.tensor([[1, 2], [4, 0]])).shape
torch.Size([2, 6])
"""

from __future__ import annotations

from tabflow.framework_utils.torch.layers.config import (
    COMBINERS,
    EmbeddingFeature,
    embedding_config,
)
from tabflow.framework_utils.torch.layers.embeddings import (
    ConcatenatedEmbeddings,
    MultiHotEmbeddings,
)
from tabflow.framework_utils.torch.layers.pooling import POOLING_MODES, pool
from tabflow.framework_utils.torch.layers.tables import (
    EmbeddingTables,
    sparse_and_dense_parameters,
)

__all__ = [
    "COMBINERS",
    "ConcatenatedEmbeddings",
    "EmbeddingFeature",
    "EmbeddingTables",
    "MultiHotEmbeddings",
    "POOLING_MODES",
    "embedding_config",
    "pool",
    "sparse_and_dense_parameters",
]
