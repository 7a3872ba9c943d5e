"""Pooling of multi-hot (list) columns: the one function every embedding layer here uses.

A list column reaches a model in one of the forms tabflow's
:class:`~tabflow.loader.torch.Loader` delivers, or the one NVTabular's loaders did:

- ``(values, offsets)``, offsets of ``rows + 1`` entries (row ``i`` is
  ``values[offsets[i]:offsets[i + 1]]``): the loader's ``name__values`` / ``name__offsets``;
- ``(values, starts)`` with ``starts`` of shape ``[rows, 1]`` (each row's first position) and
  ``values`` possibly ``[n, 1]``: NVTabular's layout;
- a dense ``[rows, width]`` tensor padded with :data:`~tabflow.loader.keys.PAD_INDEX`
  (``sparse_as_dense=True``); a 1-D tensor is one element per row;
- a sparse COO ``[rows, width]`` tensor (``sparse_names=[...]``).

:func:`pool` turns any of them into one ``[rows, dim]`` tensor, with ``"sum"``, ``"mean"``,
``"max"`` or ``"sqrtn"`` (the sum divided by the square root of the element count). Index
``PAD_INDEX`` (0, which ``Categorify`` never produces) is padding in every form: it is left
out of the pooling and of the count, and receives no gradient. A row without elements pools
to zeros.

Examples
--------
>>> import torch
>>> from tabflow.framework_utils.torch.layers.pooling import pool
>>> weight = torch.arange(12.0).reshape(6, 2)
>>> flat = pool(weight, (torch.tensor([1, 2, 5]), torch.tensor([0, 2, 3])), "mean")
>>> padded = pool(weight, torch.tensor([[1, 2], [5, 0]]), "mean")
>>> flat.tolist(), torch.equal(flat, padded)
([[3.0, 4.0], [10.0, 11.0]], True)
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from tabflow.loader.keys import PAD_INDEX

__all__ = ["POOLING_MODES", "pool", "as_bags"]

#: How the elements of a row can be pooled.
POOLING_MODES = ("sum", "mean", "max", "sqrtn")


def as_bags(data: Any, name: str = "input") -> tuple[torch.Tensor, torch.Tensor | None]:
    """``(values, offsets)`` with ``rows + 1`` offsets, or ``(dense [rows, width], None)``."""
    if isinstance(data, (tuple, list)):
        if len(data) != 2:
            raise ValueError(f"multi-hot column {name!r}: expected (values, offsets), got {len(data)} tensors")
        values, offsets = data
        # NVTabular's loaders gave values as [n, 1]; the bags want them flat.
        values = values.reshape(-1)
        offsets = offsets.to(values.dtype)
        if offsets.dim() == 2 and offsets.shape[1] == 1:
            end = torch.full((1,), values.shape[0], dtype=values.dtype, device=values.device)
            return values, torch.cat([offsets[:, 0], end])
        if offsets.dim() != 1:
            raise ValueError(
                f"multi-hot column {name!r}: offsets must be [batch + 1] or [batch, 1], got shape {tuple(offsets.shape)}"
            )
        return values, offsets
    if not isinstance(data, torch.Tensor):
        raise TypeError(f"multi-hot column {name!r}: expected a tensor or (values, offsets), got {type(data).__name__}")
    if data.is_sparse:
        data = data.coalesce()
        # Coalesced indices are sorted by row, so a row's elements are contiguous in values().
        counts = torch.bincount(data.indices()[0], minlength=data.shape[0])
        offsets = torch.zeros(data.shape[0] + 1, dtype=data.values().dtype, device=data.device)
        offsets[1:] = torch.cumsum(counts, 0)
        return data.values(), offsets
    if data.dim() == 1:
        data = data.unsqueeze(1)
    if data.dim() != 2:
        raise ValueError(f"multi-hot column {name!r}: a dense input must be [batch, width], got {tuple(data.shape)}")
    return data, None


def pool(weight: torch.Tensor, data: Any, mode: str = "sum", sparse: bool = False, name: str = "input") -> torch.Tensor:
    """Pool every row of ``data`` (any form in the module docstring) over the rows of ``weight``.

    Parameters
    ----------
    weight : torch.Tensor
        ``[cardinality, dim]`` table.
    data : tensor or (values, offsets)
    mode : {"sum", "mean", "max", "sqrtn"}
    sparse : bool
        Sparse gradient for ``weight``.
    name : str
        Named in error messages.

    Returns
    -------
    torch.Tensor
        ``[rows, dim]``.
    """
    if mode not in POOLING_MODES:
        raise ValueError(f"pooling mode must be one of {POOLING_MODES}, got {mode!r}")
    values, offsets = as_bags(data, name)
    kwargs: dict[str, Any] = {"padding_idx": PAD_INDEX, "sparse": sparse}
    if offsets is not None:
        kwargs.update(offsets=offsets, include_last_offset=True)
    if mode != "sqrtn":
        # EmbeddingBag leaves padding entries out of the mean's count as well as the sum.
        return F.embedding_bag(values, weight, mode=mode, **kwargs)
    present = (values != PAD_INDEX).to(weight.dtype)
    if offsets is None:
        scale = present / present.sum(dim=1, keepdim=True).clamp(min=1).sqrt()
    else:
        lengths = offsets[1:] - offsets[:-1]
        bag = torch.repeat_interleave(torch.arange(len(lengths), device=values.device), lengths)
        counts = torch.zeros(len(lengths), dtype=weight.dtype, device=values.device).index_add_(0, bag, present)
        scale = present / counts.clamp(min=1).sqrt()[bag]
    return F.embedding_bag(values, weight, mode="sum", per_sample_weights=scale, **kwargs)
