"""PyTorch model and training helpers, importable where NVTabular scripts expect them.

``from nvtabular.framework_utils.torch.models import Model`` becomes
``from tabflow.framework_utils.torch.models import Model``, and likewise for ``layers`` and
``utils``. The helpers accept the batches of both tabflow loaders: the ``(x_cat, x_cont, y)``
tuples of :class:`~tabflow.loader.torch.TorchAsyncItr` and the ``(dict, targets)`` pairs of
:class:`~tabflow.loader.torch.Loader`.

Examples
--------
>>> from tabflow.framework_utils.torch import Model, process_epoch
>>> Model({"item": (10, 4)}, num_continuous=1, emb_dropout=0.0, layer_hidden_dims=[8],
...       layer_dropout_rates=[0.0]).output_layer
Linear(in_features=8, out_features=1, bias=True)
"""

from __future__ import annotations

from tabflow.framework_utils.torch.layers import (
    ConcatenatedEmbeddings,
    MultiHotEmbeddings,
)
from tabflow.framework_utils.torch.models import Model
from tabflow.framework_utils.torch.utils import (
    DictTransform,
    FastaiTransform,
    process_epoch,
)

__all__ = [
    "ConcatenatedEmbeddings",
    "DictTransform",
    "FastaiTransform",
    "Model",
    "MultiHotEmbeddings",
    "process_epoch",
]
