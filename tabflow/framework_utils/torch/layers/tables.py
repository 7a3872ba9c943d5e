"""Embedding tables for the categorical columns of a fitted workflow, fed by ``Loader`` batches.

:class:`EmbeddingTables` reads the output schema of a workflow (the ``cardinality`` and
``domain`` properties that :class:`~tabflow.ops.Categorify` writes) and builds one table per
vocabulary: a single column, or every column of a joint group (``[["a", "b"]] >>
Categorify(encode_type="joint")``) sharing one table. Its ``forward`` takes the dict batches
of :class:`tabflow.loader.torch.Loader` and returns one ``[batch, dim]`` tensor per feature:

- scalar (single-hot) columns are looked up row by row;
- list (multi-hot) columns are pooled with a combiner, ``"sum"``, ``"mean"`` or ``"sqrtn"``
  (sum divided by the square root of the number of elements), whether they arrive as
  ``name__values`` + ``name__offsets``, as a zero-padded ``[batch, width]`` tensor
  (``sparse_as_dense=True``) or as a sparse COO tensor, by the pooling function that
  :class:`~tabflow.framework_utils.torch.layers.MultiHotEmbeddings` uses too
  (:func:`~tabflow.framework_utils.torch.layers.pooling.pool`).

Index 0 (:data:`~tabflow.loader.keys.PAD_INDEX`) is padding (Categorify never produces it):
its row is zero, receives no gradient, and does not count as an element for ``"mean"`` or
``"sqrtn"``.

:func:`~tabflow.framework_utils.torch.layers.config.embedding_config` describes the same
tables as a plain mapping (and :meth:`EmbeddingTables.to_yaml` as YAML) for embedding
servers configured by a slot file.

Examples
--------
>>> import pandas as pd, pyarrow as pa, torch
>>> import tabflow as nvt
>>> from tabflow import ops
>>> from tabflow.framework_utils.torch import EmbeddingTables
>>> from tabflow.loader.torch import Loader
>>> df = pd.DataFrame({"user": ["u1", "u2", "u1"], "y": [0, 1, 1]})
>>> df["tags"] = pd.Series([["a", "b"], ["b"], []], dtype=pd.ArrowDtype(pa.list_(pa.string())))
>>> wf = nvt.Workflow((["user", "tags"] >> ops.Categorify()) + ["y"])
>>> out = wf.fit_transform(df)
>>> tables = EmbeddingTables.from_schema(wf.output_schema, dims=4, combiner="mean")
>>> with Loader(nvt.Dataset(out, schema=wf.output_schema), batch_size=3, labels=["y"]) as loader:
...     inputs, y = next(iter(loader))
>>> {name: tuple(t.shape) for name, t in tables(inputs).items()}
{'user': (3, 4), 'tags': (3, 4)}
"""

from __future__ import annotations

import math
import os
from typing import Any, Callable, Iterable, Mapping

import torch
import torch.nn.functional as F
from torch import nn

from tabflow.framework_utils.torch.layers.config import (
    COMBINERS,
    EmbeddingFeature,
    config_of,
    features_of,
    resolve_features,
)
from tabflow.framework_utils.torch.layers.pooling import pool
from tabflow.loader.keys import PAD_INDEX, ragged_pair
from tabflow.schema import Schema

__all__ = ["EmbeddingTables", "sparse_and_dense_parameters"]

class EmbeddingTables(nn.Module):
    """Embedding tables for the categorical features of loader batches.

    Build it with :meth:`from_schema` (from a fitted workflow's ``output_schema``) or
    :meth:`from_config`. A table whose features are all single-hot is an ``nn.Embedding``;
    one with a multi-hot feature is an ``nn.EmbeddingBag``. Weights start uniform in
    ``±1/sqrt(cardinality)`` (as in DLRM), with the padding row 0 set to zero.

    Parameters
    ----------
    features : list of EmbeddingFeature
    sparse : bool, default False
        Sparse gradients, for ``torch.optim.SparseAdam`` / ``SGD``; see
        :func:`sparse_and_dense_parameters`.
    concat : bool, default False
        ``forward`` returns one ``[batch, sum of dims]`` tensor (features in order) instead
        of a dict.

    Attributes
    ----------
    features : list of EmbeddingFeature
    tables : torch.nn.ModuleDict
        ``{table name: nn.Embedding or nn.EmbeddingBag}``.

    Examples
    --------
    >>> import torch
    >>> from tabflow.framework_utils.torch import EmbeddingFeature, EmbeddingTables
    >>> emb = EmbeddingTables([EmbeddingFeature("c", "c", 10, 3), EmbeddingFeature("l", "l", 5, 2, "mean", True)],
    ...                       concat=True)
    >>> batch = {"c": torch.tensor([1, 2]), "l__values": torch.tensor([3, 4, 4]), "l__offsets": torch.tensor([0, 2, 3])}
    >>> tuple(emb(batch).shape), emb.output_dim
    ((2, 5), 5)
    """

    def __init__(self, features: Iterable[EmbeddingFeature], sparse: bool = False, concat: bool = False) -> None:
        super().__init__()
        self.features = list(features)
        self.sparse = bool(sparse)
        self.concat = bool(concat)
        names = [f.name for f in self.features]
        if len(set(names)) != len(names):
            raise ValueError(f"feature names must be unique, got {names}")
        shapes: dict[str, tuple[int, int, bool]] = {}
        for f in self.features:
            if f.combiner not in COMBINERS:
                raise ValueError(f"combiner for {f.name!r} must be one of {COMBINERS}, got {f.combiner!r}")
            rows, dim, bag = shapes.get(f.table, (0, f.dim, False))
            if dim != f.dim:
                raise ValueError(f"features sharing table {f.table!r} need one dim; got {dim} and {f.dim}")
            shapes[f.table] = (max(rows, f.cardinality), dim, bag or f.multi_hot)
        self.tables = nn.ModuleDict()
        for table, (rows, dim, bag) in shapes.items():
            if bag:
                module: nn.Module = nn.EmbeddingBag(rows, dim, mode="sum", sparse=self.sparse, padding_idx=PAD_INDEX)
            else:
                module = nn.Embedding(rows, dim, sparse=self.sparse, padding_idx=PAD_INDEX)
            bound = 1.0 / math.sqrt(rows)
            with torch.no_grad():
                module.weight.uniform_(-bound, bound)
                module.weight[PAD_INDEX].zero_()
            self.tables[table] = module

    # ------------------------------------------------------------------ building
    @classmethod
    def from_schema(
        cls,
        schema: Schema,
        dims: int | Mapping[str, int] | None = None,
        combiner: str | Mapping[str, str] = "sum",
        sparse: bool = False,
        default_dim_rule: Callable[[int], int] | None = None,
        shared: Mapping[str, Iterable[str]] | None = None,
        columns: Iterable[str] | None = None,
        concat: bool = False,
    ) -> "EmbeddingTables":
        """Tables for the categorical columns of ``schema``.

        Parameters are those of :func:`embedding_config`, plus ``sparse`` and ``concat``
        (see the class).

        Examples
        --------
        >>> import pandas as pd
        >>> import tabflow as nvt
        >>> from tabflow import ops
        >>> from tabflow.framework_utils.torch import EmbeddingTables
        >>> df = pd.DataFrame({"src": ["a", "b"], "dst": ["b", "c"], "c": ["x", "y"]})
        >>> wf = nvt.Workflow(([["src", "dst"]] >> ops.Categorify(encode_type="joint")) + (["c"] >> ops.Categorify()))
        >>> wf = wf.fit(df)
        >>> emb = EmbeddingTables.from_schema(wf.output_schema, dims={"src_dst": 8, "c": 4})
        >>> {name: tuple(t.weight.shape) for name, t in emb.tables.items()}
        {'src_dst': (6, 8), 'c': (5, 4)}
        """
        features = resolve_features(schema, dims, combiner, default_dim_rule, shared, columns)
        return cls(features, sparse=sparse, concat=concat)

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | str | os.PathLike, sparse: bool = False, concat: bool = False) -> "EmbeddingTables":
        """Tables from an :func:`embedding_config` mapping, or a YAML file or string of one."""
        if not isinstance(config, Mapping):
            import yaml

            text = str(config)
            if os.path.exists(text):
                with open(text, encoding="utf-8") as handle:
                    text = handle.read()
            config = yaml.safe_load(text)
        return cls(features_of(config), sparse=sparse, concat=concat)

    # ------------------------------------------------------------------ describing
    @property
    def output_dim(self) -> int:
        """Width of the concatenated output."""
        return sum(f.dim for f in self.features)

    @property
    def feature_names(self) -> list[str]:
        return [f.name for f in self.features]

    def embedding_config(self) -> dict[str, Any]:
        """The configuration mapping (see :func:`embedding_config`)."""
        return config_of(self.features)

    def to_yaml(self, path: str | os.PathLike | None = None) -> str:
        """The configuration as YAML; also written to ``path`` when given.

        Examples
        --------
        >>> import yaml
        >>> from tabflow.framework_utils.torch import EmbeddingFeature, EmbeddingTables
        >>> emb = EmbeddingTables([EmbeddingFeature("c", "c", 10, 3)])
        >>> yaml.safe_load(emb.to_yaml())["slots_config"]["c"]["dim"]
        3
        """
        import yaml

        text = yaml.safe_dump(self.embedding_config(), sort_keys=False)
        if path is not None:
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
        return text

    def extra_repr(self) -> str:
        return f"features={self.feature_names}, sparse={self.sparse}, concat={self.concat}"

    # ------------------------------------------------------------------ forward
    def forward(self, batch: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor] | torch.Tensor:
        """Embed every feature of a loader batch.

        Parameters
        ----------
        batch : dict of tensors
            ``Loader`` inputs: ``name`` ([batch] indices) for single-hot features; for
            multi-hot ones ``name__values`` + ``name__offsets`` (``batch + 1`` offsets), or
            ``name`` as a zero-padded ``[batch, width]`` tensor or a sparse COO tensor.
            Other keys are ignored.

        Returns
        -------
        dict of ``[batch, dim]`` tensors, or one ``[batch, output_dim]`` tensor with ``concat``.
        """
        out = {f.name: self._embed(f, batch) for f in self.features}
        if self.concat:
            return torch.cat([out[f.name] for f in self.features], dim=1)
        return out

    def _embed(self, feature: EmbeddingFeature, batch: Mapping[str, torch.Tensor]) -> torch.Tensor:
        weight = self.tables[feature.table].weight
        name = feature.name
        pair = ragged_pair(batch, name)
        if pair is not None:
            return pool(weight, pair, feature.combiner, sparse=self.sparse, name=name)
        if name not in batch:
            raise KeyError(f"batch has no input for embedded feature {name!r}; its keys are {sorted(batch)}")
        data = batch[name]
        if data.dim() == 1 and not data.is_sparse:
            return F.embedding(data, weight, padding_idx=PAD_INDEX, sparse=self.sparse)
        if data.dim() == 2:
            return pool(weight, data, feature.combiner, sparse=self.sparse, name=name)
        raise ValueError(f"input {name!r} must be [batch] or [batch, width], got shape {tuple(data.shape)}")


def sparse_and_dense_parameters(model: nn.Module) -> tuple[list[nn.Parameter], list[nn.Parameter]]:
    """Split a model's trainable parameters into sparse-gradient tables and the rest.

    Sparse tables (``nn.Embedding`` / ``nn.EmbeddingBag`` built with ``sparse=True``) need an
    optimizer that accepts sparse gradients, such as ``torch.optim.SparseAdam``; the rest go
    to a dense one (``Adam``, ``Adagrad``).

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> from tabflow.framework_utils.torch import sparse_and_dense_parameters
    >>> model = nn.ModuleDict({"emb": nn.Embedding(10, 4, sparse=True), "mlp": nn.Linear(4, 1)})
    >>> sparse, dense = sparse_and_dense_parameters(model)
    >>> len(sparse), len(dense)
    (1, 2)
    >>> opts = [torch.optim.SparseAdam(sparse, lr=0.01), torch.optim.Adam(dense, lr=0.01)]
    """
    sparse_ids = {
        id(module.weight)
        for module in model.modules()
        if isinstance(module, (nn.Embedding, nn.EmbeddingBag)) and module.sparse
    }
    sparse, dense = [], []
    for parameter in model.parameters():
        if parameter.requires_grad:
            (sparse if id(parameter) in sparse_ids else dense).append(parameter)
    return sparse, dense
