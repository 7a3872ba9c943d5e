"""Data loaders that feed tabflow datasets to deep-learning frameworks; they only move data
(the torch modules that consume their batches live in :mod:`tabflow.framework_utils.torch`).

The PyTorch loaders live in :mod:`tabflow.loader.torch` (importing this package does not
import torch):

- ``TorchAsyncItr``: ``(x_cat, x_cont, y)`` tuples for fastai-style tabular models;
- ``Loader``: ``(dict of named tensors, targets)``, with multi-hot columns;
- ``DLDataLoader``: a ``torch.utils.data.DataLoader`` around either, usable by fastai.

Both share one :class:`~tabflow.loader.options.LoaderOptions` and one pipeline of small
parts, each taking its source (``reset`` / ``next`` / ``get_state`` / ``shutdown``):
``_read.PartitionReader`` -> ``_chunks.ChunkMaker`` -> ``_prefetch.Prefetcher`` ->
``_batch.Batcher``, wired in ``_pipeline`` and driven by ``_loader.LoaderBase``.
:mod:`tabflow.loader.keys` spells the batch layout (``name__values`` / ``name__offsets``,
the padding index).

Examples
--------
>>> import tabflow.loader
>>> tabflow.loader.__all__
[]
"""

from __future__ import annotations

__all__: list[str] = []
