"""get_embedding_sizes: embedding table shapes of a fitted workflow's categorical outputs."""

from __future__ import annotations

from typing import Any, Mapping

from tabflow.ops._vocab import embedding_dimension
from tabflow.ops.operator import NotFittedError
from tabflow.schema import Schema, Tags

__all__ = ["get_embedding_sizes"]

EmbeddingSizes = dict[str, tuple[int, int]]


def get_embedding_sizes(
    source: Any, output_dtypes: Mapping[str, Any] | bool | None = False
) -> EmbeddingSizes | tuple[EmbeddingSizes, EmbeddingSizes]:
    """``{column: (cardinality, dimension)}`` for the categorical output columns of ``source``.

    Read from the output schema properties that :class:`~tabflow.ops.Categorify` (or any op
    that writes ``embedding_sizes`` or ``cardinality``) sets. ``cardinality`` is the number of
    embedding rows, so every index the workflow produces is below it; ``dimension`` is the
    suggested width, ``min(max(16, round(1.6 * cardinality ** 0.56)), 512)`` unless the op
    says otherwise. Categorical columns without a cardinality are left out.

    Parameters
    ----------
    source : Workflow, Node or Schema
        A fitted workflow (its output schema), a node of one, or a schema.
    output_dtypes : dict, optional
        ``{column: dtype}``; a column whose dtype is a list dtype counts as multi-hot. By
        default the schema's ``is_list`` decides.

    Returns
    -------
    dict, or tuple of two dicts
        One dict when every categorical column is single-hot; otherwise
        ``(single_hot, multi_hot)``, as NVTabular returns.

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> df = pd.DataFrame({"user": ["u1", "u2", "u1"], "x": [1.0, 2.0, 3.0]})
    >>> wf = nvt.Workflow((["user"] >> ops.Categorify()) + ["x"]).fit(df)
    >>> ops.get_embedding_sizes(wf)
    {'user': (5, 16)}
    """
    schema = _output_schema(source)
    dtypes = output_dtypes if isinstance(output_dtypes, Mapping) else {}
    single: dict[str, Any] = {}
    multi: dict[str, Any] = {}
    for column in schema.select_by_tag(Tags.CATEGORICAL):
        properties = column.properties
        sizes = properties.get("embedding_sizes") or {}
        cardinality = sizes.get("cardinality", properties.get("cardinality"))
        if cardinality is None:
            continue
        cardinality = int(cardinality)
        dimension = int(sizes.get("dimension") or embedding_dimension(cardinality))
        dtype = dtypes.get(column.name)
        is_list = str(dtype).startswith("list") if dtype is not None else column.is_list
        (multi if is_list else single)[column.name] = (cardinality, dimension)
    return (single, multi) if multi else single


def _output_schema(source: Any) -> Schema:
    if isinstance(source, Schema):
        return source
    schema = getattr(source, "output_schema", None)
    if schema is None:
        raise NotFittedError(
            f"get_embedding_sizes needs a fitted workflow (or a schema); {type(source).__name__} "
            "has no output schema yet: call workflow.fit(dataset) first"
        )
    return schema
