"""Models over tabflow's loader batches.

:class:`Model` is the embeddings + MLP network of NVTabular's PyTorch examples: single-hot
categorical columns go through :class:`ConcatenatedEmbeddings`, list columns through
:class:`MultiHotEmbeddings`, continuous columns through a ``BatchNorm1d``; the
concatenation feeds blocks of ``Linear -> ReLU -> BatchNorm1d -> Dropout`` and a final
``Linear`` to one output per row. It takes ``(x_cat, x_cont)``.

:class:`DLRM` is the deep learning recommendation model of Naumov et al. (2019) over the
dict batches of :class:`~tabflow.loader.torch.Loader`: a bottom MLP turns the continuous
features into one vector of the embedding width, every pair of (embedding, bottom output)
vectors interacts by a dot product, and a top MLP maps the bottom output plus the
interactions to a click logit. Its embeddings are an :class:`EmbeddingTables`.

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

from typing import Any, Iterable, Mapping, Sequence

import torch
from torch import nn

from tabflow.framework_utils.torch.layers import (
    ConcatenatedEmbeddings,
    EmbeddingTables,
    MultiHotEmbeddings,
)
from tabflow.schema import Schema, Tags

__all__ = ["Model", "DLRM"]

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


def _mlp(sizes: Sequence[int], final_activation: bool) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(fan_in, fan_out))
        if i < len(sizes) - 2 or final_activation:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class DLRM(nn.Module):
    """DLRM: bottom MLP, embeddings, pairwise dot interactions, top MLP to a logit.

    Parameters
    ----------
    embeddings : EmbeddingTables
        Every feature must have the same width, ``bottom_mlp[-1]``; ``concat`` must be False.
    continuous : list of str
        Continuous input columns (``[batch]`` float tensors in the batch dict); may be empty.
    bottom_mlp : list of int
        Hidden widths of the bottom MLP; the last is the embedding width.
    top_mlp : list of int
        Hidden widths of the top MLP (a final 1-unit layer is added).

    Examples
    --------
    >>> import torch
    >>> from tabflow.framework_utils.torch import DLRM, EmbeddingFeature, EmbeddingTables
    >>> tables = EmbeddingTables([EmbeddingFeature("a", "a", 10, 2), EmbeddingFeature("b", "b", 5, 2)])
    >>> model = DLRM(tables, continuous=[], bottom_mlp=[2], top_mlp=[4])
    >>> model({"a": torch.tensor([1, 2]), "b": torch.tensor([3, 4])}).shape
    torch.Size([2])
    """

    def __init__(
        self,
        embeddings: EmbeddingTables,
        continuous: Sequence[str],
        bottom_mlp: Sequence[int] = (64, 16),
        top_mlp: Sequence[int] = (64, 32),
    ) -> None:
        super().__init__()
        if embeddings.concat:
            raise ValueError("DLRM needs one tensor per feature: build the EmbeddingTables with concat=False")
        self.embeddings = embeddings
        self.continuous = list(continuous)
        self.dim = int(bottom_mlp[-1])
        widths = {f.name: f.dim for f in embeddings.features if f.dim != self.dim}
        if widths:
            raise ValueError(f"every embedding must be {self.dim} wide (bottom_mlp[-1]); these are not: {widths}")
        self.bottom = _mlp([len(self.continuous), *bottom_mlp], final_activation=True) if self.continuous else None
        n_vectors = len(embeddings.features) + (1 if self.continuous else 0)
        n_pairs = n_vectors * (n_vectors - 1) // 2
        dense_width = self.dim if self.continuous else 0
        if dense_width + n_pairs == 0:
            raise ValueError("DLRM needs continuous features or at least two embedded features to interact")
        self.top = _mlp([dense_width + n_pairs, *top_mlp, 1], final_activation=False)
        # Pairs (i, j) with i > j: each interaction once, no self products.
        rows, cols = torch.tril_indices(n_vectors, n_vectors, offset=-1)
        self.register_buffer("_pair_rows", rows, persistent=False)
        self.register_buffer("_pair_cols", cols, persistent=False)

    @classmethod
    def from_schema(
        cls,
        schema: Schema,
        embedding_dim: int = 16,
        continuous: Iterable[str] | None = None,
        bottom_mlp: Sequence[int] = (64,),
        top_mlp: Sequence[int] = (64, 32),
        combiner: str | Mapping[str, str] = "sum",
        sparse: bool = True,
        **embedding_kwargs: Any,
    ) -> "DLRM":
        """A DLRM for the columns of a fitted workflow's output schema.

        Parameters
        ----------
        schema : Schema
        embedding_dim : int
            Width of every table and of the bottom MLP output.
        continuous : list of str, optional
            Default: the columns tagged CONTINUOUS (targets excluded).
        bottom_mlp : list of int
            Hidden widths before the final ``embedding_dim`` layer.
        top_mlp : list of int
        combiner, sparse, **embedding_kwargs
            Passed to :meth:`EmbeddingTables.from_schema`.
        """
        if continuous is None:
            continuous = [c.name for c in schema.select_by_tag(Tags.CONTINUOUS) if Tags.TARGET not in c.tags]
        tables = EmbeddingTables.from_schema(schema, dims=embedding_dim, combiner=combiner, sparse=sparse, **embedding_kwargs)
        return cls(tables, list(continuous), bottom_mlp=[*bottom_mlp, embedding_dim], top_mlp=top_mlp)

    def forward(self, batch: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """Logits, ``[batch]``, for the batch dict of a ``Loader``."""
        embedded = self.embeddings(batch)
        vectors = [embedded[f.name] for f in self.embeddings.features]
        dense = None
        if self.bottom is not None:
            x = torch.stack([batch[name].to(torch.float32) for name in self.continuous], dim=1)
            dense = self.bottom(x)
            vectors.insert(0, dense)
        stacked = torch.stack(vectors, dim=1)  # [batch, vectors, dim]
        products = torch.bmm(stacked, stacked.transpose(1, 2))
        pairs = products[:, self._pair_rows, self._pair_cols]
        top_input = pairs if dense is None else torch.cat([dense, pairs], dim=1)
        return self.top(top_input).squeeze(1)
