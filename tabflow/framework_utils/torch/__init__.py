"""PyTorch modules and training helpers: the one home for torch modules in tabflow.

NVTabular's paths keep working: ``from nvtabular.framework_utils.torch.models import Model``
becomes ``from tabflow.framework_utils.torch.models import Model``, and likewise for
``layers`` and ``utils``. The same package holds the embedding tables and DLRM for dict
batches (before, ``tabflow.loader.torch``; the loader now only moves data).

- :mod:`~tabflow.framework_utils.torch.layers`: ``ConcatenatedEmbeddings``,
  ``MultiHotEmbeddings``, ``EmbeddingTables`` (+ ``EmbeddingFeature``, ``embedding_config``,
  ``sparse_and_dense_parameters``), all pooling list columns with one function;
- :mod:`~tabflow.framework_utils.torch.models`: ``Model`` and ``DLRM``;
- :mod:`~tabflow.framework_utils.torch.growth`: ``grow_embeddings``, a trained model's
  tables (and its optimizer's state) grown to a workflow's new cardinalities after
  :meth:`tabflow.Workflow.partial_fit`;
- :mod:`~tabflow.framework_utils.torch.utils`: ``process_epoch``, ``DictTransform``,
  ``FastaiTransform``.

The helpers accept the batches of both tabflow loaders: the ``(x_cat, x_cont, y)`` tuples of
:class:`~tabflow.loader.torch.TorchAsyncItr` and the ``(dict, targets)`` pairs of
:class:`~tabflow.loader.torch.Loader`.

Examples
--------
>>> from tabflow.framework_utils.torch import Model, process_epoch
>>> Model({"item": (10, 4)}, num_continuous=1, emb_dropout=0.0, layer_hidden_dims=[8],
...       layer_dropout_rates=[0.0]).output_layer
Linear(in_features=8, out_features=1, bias=True)
"""

from __future__ import annotations

from tabflow.framework_utils.torch.growth import grow_embeddings
from tabflow.framework_utils.torch.layers import (
    ConcatenatedEmbeddings,
    EmbeddingFeature,
    EmbeddingTables,
    MultiHotEmbeddings,
    embedding_config,
    sparse_and_dense_parameters,
)
from tabflow.framework_utils.torch.models import DLRM, Model
from tabflow.framework_utils.torch.utils import (
    DictTransform,
    FastaiTransform,
    process_epoch,
)

__all__ = [
    "ConcatenatedEmbeddings",
    "DLRM",
    "DictTransform",
    "EmbeddingFeature",
    "EmbeddingTables",
    "FastaiTransform",
    "Model",
    "MultiHotEmbeddings",
    "embedding_config",
    "grow_embeddings",
    "process_epoch",
    "sparse_and_dense_parameters",
]
