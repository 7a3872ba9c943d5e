"""Framework glue with the import paths of ``nvtabular.framework_utils``, and tabflow's
one home for torch modules.

NVTabular's PyTorch examples import a small model and training helpers from
``nvtabular.framework_utils.torch``; the same names live under
``tabflow.framework_utils.torch`` (importing this package does not import torch):

- ``torch.models.Model``: embeddings + MLP over ``(x_cat, x_cont)``; ``torch.models.DLRM``
  over dict batches;
- ``torch.layers.ConcatenatedEmbeddings`` / ``MultiHotEmbeddings``: ``Model``'s embedding
  layers; ``torch.layers.EmbeddingTables``: tables from a fitted workflow's schema;
- ``torch.utils.process_epoch``, ``DictTransform``, ``FastaiTransform``: one training or
  evaluation pass, and the batch converters it and fastai use.

Examples
--------
>>> import tabflow.framework_utils
>>> tabflow.framework_utils.__all__
[]
"""

from __future__ import annotations

__all__: list[str] = []
