"""Embedding configuration: which table each categorical feature reads, its width and pooling.

:func:`embedding_config` reads the output schema of a fitted workflow (the ``cardinality``,
``embedding_sizes`` and ``domain`` properties that :class:`~tabflow.ops.Categorify` writes)
and describes one table per vocabulary: a single column, or every column of a joint group
(``[["a", "b"]] >> Categorify(encode_type="joint")``) sharing one table, as a plain mapping
that embedding servers configured by a slot file read.
:class:`~tabflow.framework_utils.torch.layers.EmbeddingTables` builds its tables from the
same :class:`EmbeddingFeature` list.

Examples
--------
>>> from tabflow.framework_utils.torch.layers.config import resolve_features
>>> from tabflow.schema import ColumnSchema, Schema, Tags
>>> schema = Schema([ColumnSchema("c", dtype="int64", tags={Tags.CATEGORICAL}, properties={"cardinality": 10})])
>>> resolve_features(schema, dims=4)
[EmbeddingFeature(name='c', table='c', cardinality=10, dim=4, combiner='sum', multi_hot=False)]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from tabflow.schema import Schema, Tags

__all__ = ["COMBINERS", "EmbeddingFeature", "embedding_config", "resolve_features", "config_of", "features_of"]

#: Poolings an embedding configuration can name (the ones slot-based embedding servers know).
COMBINERS = ("sum", "mean", "sqrtn")
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
    >>> from tabflow.framework_utils.torch import EmbeddingFeature
    >>> EmbeddingFeature("genres", "genres", cardinality=20, dim=8, combiner="mean", multi_hot=True).table
    'genres'
    """

    name: str
    table: str
    cardinality: int
    dim: int
    combiner: str = "sum"
    multi_hot: bool = False


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


def resolve_features(
    schema: Schema,
    dims: int | Mapping[str, int] | None = None,
    combiner: str | Mapping[str, str] = "sum",
    default_dim_rule: Callable[[int], int] | None = None,
    shared: Mapping[str, Iterable[str]] | None = None,
    columns: Iterable[str] | None = None,
) -> list[EmbeddingFeature]:
    """The features :func:`embedding_config` describes (same parameters)."""
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
    >>> from tabflow.framework_utils.torch import embedding_config
    >>> schema = Schema([ColumnSchema("c", dtype="int64", tags={Tags.CATEGORICAL}, properties={"cardinality": 10})])
    >>> embedding_config(schema, dims=8)["slots_config"]
    {'c': {'dim': 8, 'cardinality': 10, 'embedding_summation': True, 'combiner': 'sum', 'multi_hot': False, 'table': 'c'}}
    """
    features = resolve_features(schema, dims, combiner, default_dim_rule, shared, columns)
    return config_of(features)


def config_of(features: Iterable[EmbeddingFeature]) -> dict[str, Any]:
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


def features_of(config: Mapping[str, Any]) -> list[EmbeddingFeature]:
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
