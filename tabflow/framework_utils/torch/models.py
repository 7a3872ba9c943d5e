"""``Model``: the embeddings + MLP network of NVTabular's PyTorch examples.

Single-hot categorical columns go through :class:`ConcatenatedEmbeddings`, list columns
through :class:`MultiHotEmbeddings`, continuous columns through a ``BatchNorm1d``; the
concatenation feeds blocks of ``Linear -> ReLU -> BatchNorm1d -> Dropout`` and a final
``Linear`` to one output per row.

Examples
--------
>>> import torch
>>> from tabflow.framework_utils.torch.models import Model
>>> model = Model({"store": (12, 4), "day": (8, 3)}, num_continuous=2, emb_dropout=0.0,
...               layer_hidden_dims=[16, 8], layer_dropout_rates=[0.0, 0.0], max_output=5.0)
>>> x_cat, x_cont = torch.tensor([[3, 1], [7, 2], [1, 1]]), torch.randn(3, 2)
>>> out = model(x_cat, x_cont)
>>> out.shape, bool(((out >= 0) & (out <= 5)).all())
(torch.Size([3]), True)
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import torch
from torch import nn

from tabflow.framework_utils.torch.layers import (
    ConcatenatedEmbeddings,
    MultiHotEmbeddings,
)

__all__ = ["Model"]

EmbeddingShapes = Mapping[str, Sequence[int]]


class Model(nn.Module):
    """Embeddings for categorical columns, batch-normalised continuous columns, an MLP.

    Parameters
    ----------
    embedding_table_shapes : dict or tuple of two dicts
        ``{column: (cardinality, width)}`` for the single-hot columns, in the loader's
        ``cats`` order; or ``(single_hot, multi_hot)``, the pair
        :func:`tabflow.ops.get_embedding_sizes` returns when the workflow has list columns.
        Either half may be empty.
    num_continuous : int
        Number of continuous columns (``x_cont`` width).
    emb_dropout : float
        Dropout on the concatenated embeddings (0 - 1).
    layer_hidden_dims : list of int
        Widths of the hidden layers.
    layer_dropout_rates : list of float
        Dropout after each hidden layer; one per entry of ``layer_hidden_dims``.
    max_output : float, optional
        When set, outputs are ``max_output * sigmoid(logit)``, in ``(0, max_output)``
        (e.g. a bound on log sales); otherwise the raw logit.
    bag_mode : {"sum", "mean", "max"}, default "sum"
        Pooling of multi-hot columns.

    Attributes
    ----------
    initial_cat_layer : ConcatenatedEmbeddings
        Present when there are single-hot columns.
    mh_cat_layer : MultiHotEmbeddings
        Present when there are multi-hot columns.
    initial_cont_layer : torch.nn.BatchNorm1d
    layers : torch.nn.ModuleList
    output_layer : torch.nn.Linear

    Notes
    -----
    ``forward(x_cat, x_cont)`` takes:

    - ``x_cat``: int ``[batch, n_single_hot]`` (``TorchAsyncItr``'s first tensor), or a pair
      ``(x_single, {column: multi_hot_data})`` as :class:`~tabflow.framework_utils.torch.utils.DictTransform`
      builds it from ``Loader`` batches (``multi_hot_data`` in any form
      :class:`MultiHotEmbeddings` accepts), or None;
    - ``x_cont``: float ``[batch, num_continuous]`` or None (a ``[batch, 0]`` tensor counts
      as none).

    It returns ``[batch]`` outputs. The module names (``initial_cat_layer``, ...) are those
    of NVTabular, so state dicts keep their keys.

    Examples
    --------
    >>> import torch
    >>> from tabflow.framework_utils.torch.models import Model
    >>> shapes = ({"user": (10, 4)}, {"genres": (6, 2)})   # get_embedding_sizes with a list column
    >>> model = Model(shapes, num_continuous=0, emb_dropout=0.0, layer_hidden_dims=[8],
    ...               layer_dropout_rates=[0.0])
    >>> genres = (torch.tensor([1, 2, 3, 4]), torch.tensor([0, 1, 4]))  # rows [1] and [2, 3, 4]
    >>> model((torch.tensor([[3], [5]]), {"genres": genres}), None).shape
    torch.Size([2])
    """

    def __init__(
        self,
        embedding_table_shapes: EmbeddingShapes | tuple[EmbeddingShapes, EmbeddingShapes],
        num_continuous: int,
        emb_dropout: float,
        layer_hidden_dims: Sequence[int],
        layer_dropout_rates: Sequence[float],
        max_output: float | None = None,
        bag_mode: str = "sum",
    ) -> None:
        super().__init__()
        single_shapes, multi_shapes = _split_shapes(embedding_table_shapes)
        layer_hidden_dims, layer_dropout_rates = list(layer_hidden_dims), list(layer_dropout_rates)
        if not layer_hidden_dims:
            raise ValueError("layer_hidden_dims must name at least one hidden layer")
        if len(layer_dropout_rates) != len(layer_hidden_dims):
            raise ValueError(
                f"layer_dropout_rates needs one rate per hidden layer: {len(layer_hidden_dims)} layers "
                f"{layer_hidden_dims}, {len(layer_dropout_rates)} rates {layer_dropout_rates}"
            )
        self.max_output = max_output
        input_width = int(num_continuous)
        if single_shapes:
            self.initial_cat_layer = ConcatenatedEmbeddings(single_shapes, dropout=emb_dropout)
            input_width += self.initial_cat_layer.output_dim
        if multi_shapes:
            self.mh_cat_layer = MultiHotEmbeddings(multi_shapes, dropout=emb_dropout, mode=bag_mode)
            input_width += self.mh_cat_layer.output_dim
        if input_width == 0:
            raise ValueError("Model has no input: no embedding tables and num_continuous=0")
        self.initial_cont_layer = nn.BatchNorm1d(int(num_continuous))
        widths = [input_width, *layer_hidden_dims]
        self.layers = nn.ModuleList(
            nn.Sequential(
                nn.Linear(fan_in, fan_out),
                nn.ReLU(inplace=True),
                nn.BatchNorm1d(fan_out),
                nn.Dropout(rate),
            )
            for fan_in, fan_out, rate in zip(widths[:-1], widths[1:], layer_dropout_rates)
        )
        self.output_layer = nn.Linear(widths[-1], 1)

    def forward(self, x_cat: Any, x_cont: torch.Tensor | None) -> torch.Tensor:
        """Outputs, ``[batch]``, for one batch (see Notes of the class)."""
        single, multi = (x_cat if isinstance(x_cat, tuple) else (x_cat, None))
        # A missing or unexpected input would otherwise surface as a shape error in the first
        # Linear layer; name the part instead.
        _check_input("multi-hot columns", bool(multi), hasattr(self, "mh_cat_layer"))
        _check_input("single-hot categorical columns", _has_columns(single), hasattr(self, "initial_cat_layer"))
        _check_input("continuous columns", _has_columns(x_cont), self.initial_cont_layer.num_features > 0)
        features = []
        # NVTabular's order: multi-hot bags, then single-hot embeddings, then continuous.
        if multi:
            features.append(self.mh_cat_layer(multi))
        if _has_columns(single):
            features.append(self.initial_cat_layer(single))
        if _has_columns(x_cont):
            features.append(self.initial_cont_layer(x_cont))
        x = torch.cat(features, dim=1) if len(features) > 1 else features[0]
        for layer in self.layers:
            x = layer(x)
        x = self.output_layer(x)
        if self.max_output:
            x = self.max_output * torch.sigmoid(x)
        return x.view(-1)


def _split_shapes(shapes: Any) -> tuple[dict, dict]:
    if isinstance(shapes, tuple):
        if len(shapes) != 2:
            raise ValueError(f"embedding_table_shapes as a tuple must be (single_hot, multi_hot), got {len(shapes)} items")
        single, multi = shapes
        return dict(single or {}), dict(multi or {})
    if isinstance(shapes, Mapping):
        return dict(shapes), {}
    raise TypeError(
        "embedding_table_shapes must be {column: (cardinality, width)} or the (single_hot, multi_hot) pair "
        f"of get_embedding_sizes, got {type(shapes).__name__}"
    )


def _check_input(part: str, in_batch: bool, in_model: bool) -> None:
    if in_batch and not in_model:
        raise ValueError(f"the batch has {part} but the model was built without them")
    if in_model and not in_batch:
        raise ValueError(f"the model expects {part} but the batch has none")


def _has_columns(x: Any) -> bool:
    """A tensor with at least one column, or a non-empty sequence (NVTabular passed [] for none)."""
    if x is None:
        return False
    if isinstance(x, torch.Tensor):
        return x.dim() == 1 or x.shape[-1] > 0
    return len(x) > 0
