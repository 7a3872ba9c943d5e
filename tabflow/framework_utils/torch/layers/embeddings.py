"""Embedding layers over positional categorical batches, with NVTabular's public API.

:class:`ConcatenatedEmbeddings` embeds the columns of a stacked ``[batch, n_columns]`` index
tensor (the ``x_cat`` of :class:`~tabflow.loader.torch.TorchAsyncItr`), one table per column,
and concatenates the results. :class:`MultiHotEmbeddings` pools list (multi-hot) columns, one
bag per row, from a dict ``{name: column}`` in any of the forms tabflow's
:class:`~tabflow.loader.torch.Loader` delivers.

Both take ``embedding_table_shapes``, ``{column: (cardinality, width)}``, which is what
:func:`tabflow.ops.get_embedding_sizes` returns (the single-hot or the multi-hot half).

Examples
--------
>>> import torch
>>> from tabflow.framework_utils.torch.layers import ConcatenatedEmbeddings, MultiHotEmbeddings
>>> single = ConcatenatedEmbeddings({"user": (10, 4), "item": (20, 3)})
>>> single(torch.tensor([[1, 5], [2, 7]])).shape
torch.Size([2, 7])
>>> multi = MultiHotEmbeddings({"genres": (8, 2)}, mode="mean")
>>> bags = {"genres": (torch.tensor([3, 4, 5]), torch.tensor([0, 2, 3]))}  # rows [3, 4] and [5]
>>> multi(bags).shape
torch.Size([2, 2])
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import torch
from torch import nn

from tabflow.framework_utils.torch.layers.pooling import POOLING_MODES, pool

__all__ = ["ConcatenatedEmbeddings", "MultiHotEmbeddings"]


def _table_shapes(embedding_table_shapes: Mapping[str, Sequence[int]], layer: str) -> dict[str, tuple[int, int]]:
    """``{column: (cardinality, width)}`` as ints; lists (from JSON files) are accepted too."""
    if not isinstance(embedding_table_shapes, Mapping):
        raise TypeError(
            f"{layer} takes a dict {{column: (cardinality, width)}}, got {type(embedding_table_shapes).__name__}; "
            "for the (single_hot, multi_hot) pair of get_embedding_sizes use Model, or pass each half to its layer"
        )
    if not embedding_table_shapes:
        raise ValueError(f"{layer} needs at least one table; embedding_table_shapes is empty")
    shapes = {}
    for name, shape in embedding_table_shapes.items():
        try:
            cardinality, width = (int(v) for v in shape)
        except (TypeError, ValueError):
            raise ValueError(f"table {name!r}: expected (cardinality, width), got {shape!r}") from None
        if cardinality < 1 or width < 1:
            raise ValueError(f"table {name!r}: cardinality and width must be positive, got {shape!r}")
        shapes[str(name)] = (cardinality, width)
    return shapes


class ConcatenatedEmbeddings(nn.Module):
    """One embedding table per categorical column, outputs concatenated in column order.

    Parameters
    ----------
    embedding_table_shapes : dict
        ``{column: (cardinality, width)}``; column ``i`` of the input is looked up in the
        ``i``-th table, so the order must be the loader's ``cats`` order.
    dropout : float, default 0.0
        Dropout applied to the concatenated embeddings.
    sparse_columns : iterable of str, default ()
        Columns whose tables produce sparse gradients (for ``torch.optim.SparseAdam``).

    Attributes
    ----------
    embedding_names : list of str
    embedding_layers : torch.nn.ModuleList
        ``nn.Embedding`` per column (default PyTorch initialisation, as in NVTabular).
    dropout : torch.nn.Dropout

    Examples
    --------
    >>> import torch
    >>> from tabflow.framework_utils.torch.layers import ConcatenatedEmbeddings
    >>> emb = ConcatenatedEmbeddings({"a": (5, 2), "b": (3, 4)}, sparse_columns=["a"])
    >>> emb(torch.tensor([[1, 2], [4, 0], [3, 1]])).shape, emb.embedding_layers[0].sparse
    (torch.Size([3, 6]), True)
    """

    def __init__(
        self,
        embedding_table_shapes: Mapping[str, Sequence[int]],
        dropout: float = 0.0,
        sparse_columns: Iterable[str] = (),
    ) -> None:
        super().__init__()
        shapes = _table_shapes(embedding_table_shapes, "ConcatenatedEmbeddings")
        sparse_columns = [sparse_columns] if isinstance(sparse_columns, str) else list(sparse_columns)
        unknown = [name for name in sparse_columns if name not in shapes]
        if unknown:
            raise ValueError(f"sparse_columns {unknown} have no table; the tables are {list(shapes)}")
        self.embedding_names = list(shapes)
        self.embedding_layers = nn.ModuleList(
            nn.Embedding(cardinality, width, sparse=name in sparse_columns) for name, (cardinality, width) in shapes.items()
        )
        self.dropout = nn.Dropout(p=dropout)

    @property
    def output_dim(self) -> int:
        """Width of the concatenated output."""
        return sum(layer.embedding_dim for layer in self.embedding_layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Embed ``x``, int ``[batch, n_columns]``; returns ``[batch, output_dim]``.

        A 1-D ``x`` with one index per table is a single example (NVTabular's convention);
        with a single table, a 1-D ``x`` is a batch of that column.
        """
        n_tables = len(self.embedding_layers)
        if x.dim() == 1:
            x = x.unsqueeze(0) if len(x) == n_tables else x.unsqueeze(1)
        if x.dim() != 2 or x.shape[1] != n_tables:
            raise ValueError(
                f"ConcatenatedEmbeddings expects [batch, {n_tables}] indices (one column per table "
                f"{self.embedding_names}), got shape {tuple(x.shape)}"
            )
        embedded = [layer(x[:, i]) for i, layer in enumerate(self.embedding_layers)]
        return self.dropout(torch.cat(embedded, dim=1))


class MultiHotEmbeddings(nn.Module):
    """One pooled embedding bag per list (multi-hot) column, outputs concatenated.

    Parameters
    ----------
    embedding_table_shapes : dict
        ``{column: (cardinality, width)}``.
    dropout : float, default 0.0
        Dropout applied to the concatenated output.
    mode : {"sum", "mean", "max", "sqrtn"}, default "sum"
        How a row's embeddings are pooled (``nn.EmbeddingBag``'s modes, and ``"sqrtn"``, the
        sum over the square root of the element count).

    Attributes
    ----------
    embedding_names : list of str
    embedding_layers : torch.nn.ModuleList
        ``nn.EmbeddingBag`` per column.
    dropout : torch.nn.Dropout

    Notes
    -----
    ``forward`` takes ``{column: data}`` where ``data`` is any of:

    - ``(values, offsets)`` with 1-D ``offsets`` of ``batch + 1`` entries (row ``i`` is
      ``values[offsets[i]:offsets[i + 1]]``): tabflow's ``name__values`` / ``name__offsets``;
    - ``(values, offsets)`` with ``offsets`` of shape ``[batch, 1]`` holding each row's start,
      the layout of NVTabular's loaders;
    - a zero-padded ``[batch, width]`` tensor (``Loader(..., sparse_as_dense=True)``);
    - a sparse COO ``[batch, width]`` tensor (``Loader(..., sparse_names=[...])``).

    Pooling is :func:`~tabflow.framework_utils.torch.layers.pooling.pool`, the one
    :class:`~tabflow.framework_utils.torch.layers.EmbeddingTables` uses: index 0 is padding
    in every form (left out of the pooling and the count; ``Categorify`` never produces it)
    and a row without elements embeds to zeros.

    Examples
    --------
    >>> import torch
    >>> from tabflow.framework_utils.torch.layers import MultiHotEmbeddings
    >>> emb = MultiHotEmbeddings({"tags": (6, 3)})
    >>> flat = emb({"tags": (torch.tensor([1, 2, 5]), torch.tensor([0, 2, 3]))})
    >>> padded = emb({"tags": torch.tensor([[1, 2], [5, 0]])})
    >>> torch.equal(flat, padded), tuple(flat.shape)
    (True, (2, 3))
    """

    def __init__(self, embedding_table_shapes: Mapping[str, Sequence[int]], dropout: float = 0.0, mode: str = "sum") -> None:
        super().__init__()
        if mode not in POOLING_MODES:
            raise ValueError(f"mode must be one of {POOLING_MODES}, got {mode!r}")
        shapes = _table_shapes(embedding_table_shapes, "MultiHotEmbeddings")
        self.mode = mode
        self.embedding_names = list(shapes)
        # nn.EmbeddingBag holds the table (NVTabular's state-dict keys); pooling is pool()'s.
        bag_mode = "sum" if mode == "sqrtn" else mode
        self.embedding_layers = nn.ModuleList(
            nn.EmbeddingBag(cardinality, width, mode=bag_mode) for cardinality, width in shapes.values()
        )
        self.dropout = nn.Dropout(p=dropout)

    @property
    def output_dim(self) -> int:
        """Width of the concatenated output."""
        return sum(layer.embedding_dim for layer in self.embedding_layers)

    def forward(self, x: Mapping[str, Any]) -> torch.Tensor:
        """Pool every column of ``x`` (see Notes); returns ``[batch, output_dim]``."""
        missing = [name for name in self.embedding_names if name not in x]
        if missing:
            raise KeyError(f"multi-hot input has no column(s) {missing}; it has {sorted(x)}")
        pooled = [
            pool(layer.weight, x[name], self.mode, sparse=layer.sparse, name=name)
            for name, layer in zip(self.embedding_names, self.embedding_layers)
        ]
        return self.dropout(torch.cat(pooled, dim=1))
