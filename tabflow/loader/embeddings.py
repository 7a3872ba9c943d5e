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
  (``sparse_as_dense=True``) or as a sparse COO tensor.

Index 0 is padding (Categorify never produces it): its row is zero, receives no gradient,
and does not count as an element for ``"mean"`` or ``"sqrtn"``.

:func:`embedding_config` describes the same tables as a plain mapping (and
:meth:`EmbeddingTables.to_yaml` as YAML) for embedding servers configured by a slot file.

Examples
--------
>>> import pandas as pd, pyarrow as pa, torch
>>> import tabflow as nvt
>>> from tabflow import ops
>>> from tabflow.loader.embeddings import EmbeddingTables
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
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

import torch
import torch.nn.functional as F
from torch import nn

from tabflow.schema import Schema, Tags

__all__ = [
    "COMBINERS",
    "EmbeddingFeature",
    "EmbeddingTables",
    "embedding_config",
    "sparse_and_dense_parameters",
]

COMBINERS = ("sum", "mean", "sqrtn")
PAD_INDEX = 0
_CONFIG_FORMAT = "tabflow.embeddings"
_CONFIG_VERSION = 1


@dataclass(frozen=True)
class EmbeddingFeature:
    """One input feature: which table it reads and how its elements are pooled.

    Parameters
    ----------
    name : str
        Column name (the key of single-hot columns and the prefix of ``__values`` /
        ``__offsets`` in loader batches).
    table : str
        Name of the table the feature reads; features with the same table share weights.
    cardinality : int
        Rows of the table (every index is below it).
    dim : int
        Embedding width.
    combiner : {"sum", "mean", "sqrtn"}
        Pooling of a multi-hot feature's elements (ignored for single-hot features).
    multi_hot : bool
        List column.

    Examples
    --------
    >>> from tabflow.loader.embeddings import EmbeddingFeature
    >>> EmbeddingFeature("genres", "genres", cardinality=20, dim=8, combiner="mean", multi_hot=True).table
    'genres'
    """

    name: str
    table: str
    cardinality: int
    dim: int
    combiner: str = "sum"
    multi_hot: bool = False


# ------------------------------------------------------------------------------ config


def _default_dim(cardinality: int) -> int:
    from tabflow.ops._vocab import embedding_dimension

    return embedding_dimension(cardinality)


def _per_feature(value: Any, name: str, table: str, default: Any) -> Any:
    """A setting given once for all, or as a dict by feature name, then by table name."""
    if isinstance(value, Mapping):
        if name in value:
            return value[name]
        return value.get(table, default)
    return default if value is None else value


def _schema_features(schema: Schema, columns: Iterable[str] | None) -> list[Any]:
    if columns is not None:
        picked = [schema[name] for name in columns]
    else:
        picked = [c for c in schema.select_by_tag(Tags.CATEGORICAL) if Tags.TARGET not in c.tags]
    out = []
    for column in picked:
        properties = column.properties
        sizes = properties.get("embedding_sizes") or {}
        cardinality = sizes.get("cardinality", properties.get("cardinality"))
        if cardinality is None:
            if columns is not None:
                raise ValueError(
                    f"column {column.name!r} has no cardinality in the schema; embed the output of a "
                    "fitted workflow (Categorify, HashBucket, ... record it)"
                )
            continue
        out.append((column, int(cardinality), sizes.get("dimension")))
    return out


def _resolve_features(
    schema: Schema,
    dims: int | Mapping[str, int] | None,
    combiner: str | Mapping[str, str],
    default_dim_rule: Callable[[int], int] | None,
    shared: Mapping[str, Iterable[str]] | None,
    columns: Iterable[str] | None,
) -> list[EmbeddingFeature]:
    entries = _schema_features(schema, columns)
    if not entries:
        raise ValueError("the schema has no categorical column with a cardinality: nothing to embed")
    names = [column.name for column, _, _ in entries]
    # Categorify names the vocabulary of each output column in ``domain.name``: the column
    # itself, or the group key of a joint group, which is how shared tables are found.
    tables = {column.name: (column.properties.get("domain") or {}).get("name") or column.name for column, _, _ in entries}
    for table, members in (shared or {}).items():
        members = [members] if isinstance(members, str) else list(members)
        unknown = [m for m in members if m not in tables]
        if unknown:
            raise KeyError(f"shared[{table!r}] names column(s) {unknown} that are not embedded; embedded: {names}")
        tables.update({member: table for member in members})

    features = []
    table_shape: dict[str, tuple[int, int]] = {}
    for column, cardinality, suggested in entries:
        name, table = column.name, tables[column.name]
        rule_dim = default_dim_rule(cardinality) if default_dim_rule is not None else suggested or _default_dim(cardinality)
        dim = int(_per_feature(dims, name, table, None) or rule_dim)
        how = _per_feature(combiner, name, table, "sum")
        if how not in COMBINERS:
            raise ValueError(f"combiner for {name!r} must be one of {COMBINERS}, got {how!r}")
        if dim < 1:
            raise ValueError(f"embedding dim for {name!r} must be positive, got {dim}")
        if table in table_shape and table_shape[table][1] != dim:
            raise ValueError(
                f"columns sharing table {table!r} need one dim; got {table_shape[table][1]} and {dim} (for {name!r})"
            )
        # A shared table is as large as the largest vocabulary among the columns using it.
        previous = table_shape.get(table, (0, dim))[0]
        table_shape[table] = (max(previous, cardinality), dim)
        features.append(EmbeddingFeature(name, table, cardinality, dim, how, bool(column.is_list)))
    return [
        EmbeddingFeature(f.name, f.table, table_shape[f.table][0], f.dim, f.combiner, f.multi_hot) for f in features
    ]


def embedding_config(
    schema: Schema,
    dims: int | Mapping[str, int] | None = None,
    combiner: str | Mapping[str, str] = "sum",
    default_dim_rule: Callable[[int], int] | None = None,
    shared: Mapping[str, Iterable[str]] | None = None,
    columns: Iterable[str] | None = None,
) -> dict[str, Any]:
    """The embedding configuration of a schema's categorical columns, as a plain mapping.

    The mapping (also what :meth:`EmbeddingTables.to_yaml` writes) is::

        format: tabflow.embeddings
        version: 1
        slots_config:               # one entry per input feature, in column order
          <feature>:
            dim: 16                 # embedding width
            cardinality: 1000       # rows of its table: every index is below it
            embedding_summation: true   # elements of a multi-hot feature are pooled
            combiner: sum           # pooling: sum, mean or sqrtn (sum / sqrt(count))
            multi_hot: false        # list column
            table: <table>          # table name; features with the same name share it
        feature_groups:             # only tables used by several features
          <table>: [<feature>, ...]

    ``slots_config`` with ``dim`` and ``embedding_summation`` is what slot-based embedding
    servers read; the other keys are ignored by them. Index 0 is padding in every table.

    Parameters
    ----------
    schema : Schema
        Output schema of a fitted workflow.
    dims : int or dict, optional
        Width of every table, or ``{feature or table: width}``; default: the schema's
        ``embedding_sizes`` suggestion (or ``default_dim_rule``).
    combiner : str or dict, default "sum"
        ``"sum"``, ``"mean"`` or ``"sqrtn"``, or ``{feature or table: combiner}``.
    default_dim_rule : callable, optional
        ``cardinality -> width`` for features without a ``dims`` entry.
    shared : dict, optional
        ``{table: [feature, ...]}``: make features share a table. Joint Categorify groups
        share a table without it (found from the ``domain`` property).
    columns : list of str, optional
        Features to embed; default: every categorical, non-target column with a cardinality.

    Returns
    -------
    dict

    Examples
    --------
    >>> from tabflow.schema import ColumnSchema, Schema, Tags
    >>> from tabflow.loader.embeddings import embedding_config
    >>> schema = Schema([ColumnSchema("c", dtype="int64", tags={Tags.CATEGORICAL}, properties={"cardinality": 10})])
    >>> embedding_config(schema, dims=8)["slots_config"]
    {'c': {'dim': 8, 'cardinality': 10, 'embedding_summation': True, 'combiner': 'sum', 'multi_hot': False, 'table': 'c'}}
    """
    features = _resolve_features(schema, dims, combiner, default_dim_rule, shared, columns)
    return _config_of(features)


def _config_of(features: Iterable[EmbeddingFeature]) -> dict[str, Any]:
    features = list(features)
    slots = {
        f.name: {
            "dim": f.dim,
            "cardinality": f.cardinality,
            "embedding_summation": True,
            "combiner": f.combiner,
            "multi_hot": f.multi_hot,
            "table": f.table,
        }
        for f in features
    }
    groups: dict[str, list[str]] = {}
    for f in features:
        groups.setdefault(f.table, []).append(f.name)
    config: dict[str, Any] = {"format": _CONFIG_FORMAT, "version": _CONFIG_VERSION, "slots_config": slots}
    config["feature_groups"] = {table: members for table, members in groups.items() if len(members) > 1}
    return config


def _features_of(config: Mapping[str, Any]) -> list[EmbeddingFeature]:
    if config.get("format", _CONFIG_FORMAT) != _CONFIG_FORMAT or config.get("version", 1) > _CONFIG_VERSION:
        raise ValueError(f"not a tabflow embedding configuration (version <= {_CONFIG_VERSION})")
    if "slots_config" not in config:
        raise ValueError("an embedding configuration needs a 'slots_config' mapping")
    features = []
    for name, slot in config["slots_config"].items():
        if not slot.get("embedding_summation", True):
            raise ValueError(f"slot {name!r}: only pooled features (embedding_summation: true) are supported")
        features.append(
            EmbeddingFeature(
                name=str(name),
                table=str(slot.get("table", name)),
                cardinality=int(slot["cardinality"]),
                dim=int(slot["dim"]),
                combiner=str(slot.get("combiner", "sum")),
                multi_hot=bool(slot.get("multi_hot", False)),
            )
        )
    return features


# ------------------------------------------------------------------------------ module


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
    >>> from tabflow.loader.embeddings import EmbeddingFeature, EmbeddingTables
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
        >>> from tabflow.loader.embeddings import EmbeddingTables
        >>> df = pd.DataFrame({"src": ["a", "b"], "dst": ["b", "c"], "c": ["x", "y"]})
        >>> wf = nvt.Workflow(([["src", "dst"]] >> ops.Categorify(encode_type="joint")) + (["c"] >> ops.Categorify()))
        >>> wf = wf.fit(df)
        >>> emb = EmbeddingTables.from_schema(wf.output_schema, dims={"src_dst": 8, "c": 4})
        >>> {name: tuple(t.weight.shape) for name, t in emb.tables.items()}
        {'src_dst': (6, 8), 'c': (5, 4)}
        """
        features = _resolve_features(schema, dims, combiner, default_dim_rule, shared, columns)
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
        return cls(_features_of(config), sparse=sparse, concat=concat)

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
        return _config_of(self.features)

    def to_yaml(self, path: str | os.PathLike | None = None) -> str:
        """The configuration as YAML; also written to ``path`` when given.

        Examples
        --------
        >>> import yaml
        >>> from tabflow.loader.embeddings import EmbeddingFeature, EmbeddingTables
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
        if f"{name}__values" in batch:
            values = batch[f"{name}__values"]
            offsets = batch.get(f"{name}__offsets")
            if offsets is None:
                raise KeyError(f"batch has {name}__values but no {name}__offsets")
            return _pool(values, offsets, weight, feature.combiner, self.sparse)
        if name not in batch:
            raise KeyError(f"batch has no input for embedded feature {name!r}; its keys are {sorted(batch)}")
        data = batch[name]
        if data.is_sparse:
            # A padded dense view costs one [batch, width] int tensor; padding then drops out
            # of the pooling as with sparse_as_dense batches.
            data = data.to_dense()
        if data.dim() == 1:
            return F.embedding(data, weight, padding_idx=PAD_INDEX, sparse=self.sparse)
        if data.dim() == 2:
            return _pool(data, None, weight, feature.combiner, self.sparse)
        raise ValueError(f"input {name!r} must be [batch] or [batch, width], got shape {tuple(data.shape)}")


def _pool(values: torch.Tensor, offsets: torch.Tensor | None, weight: torch.Tensor, combiner: str, sparse: bool) -> torch.Tensor:
    """Pool bags of indices: flat ``values`` cut by ``offsets``, or the rows of a 2-D tensor."""
    kwargs: dict[str, Any] = {"padding_idx": PAD_INDEX, "sparse": sparse}
    if offsets is not None:
        kwargs.update(offsets=offsets, include_last_offset=True)
    if combiner == "mean":
        # EmbeddingBag leaves padding entries out of the mean's count as well as the sum.
        return F.embedding_bag(values, weight, mode="mean", **kwargs)
    if combiner == "sum":
        return F.embedding_bag(values, weight, mode="sum", **kwargs)
    present = (values != PAD_INDEX).to(weight.dtype)
    if offsets is None:
        counts = present.sum(dim=1, keepdim=True)
        scale = present / counts.clamp(min=1).sqrt()
    else:
        lengths = offsets[1:] - offsets[:-1]
        bag = torch.repeat_interleave(torch.arange(len(lengths), device=values.device), lengths)
        counts = torch.zeros(len(lengths), dtype=weight.dtype, device=values.device).index_add_(0, bag, present)
        scale = present / counts.clamp(min=1).sqrt()[bag]
    return F.embedding_bag(values, weight, mode="sum", per_sample_weights=scale, **kwargs)


def sparse_and_dense_parameters(model: nn.Module) -> tuple[list[nn.Parameter], list[nn.Parameter]]:
    """Split a model's trainable parameters into sparse-gradient tables and the rest.

    Sparse tables (``nn.Embedding`` / ``nn.EmbeddingBag`` built with ``sparse=True``) need an
    optimizer that accepts sparse gradients, such as ``torch.optim.SparseAdam``; the rest go
    to a dense one (``Adam``, ``Adagrad``).

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> from tabflow.loader.embeddings import sparse_and_dense_parameters
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
