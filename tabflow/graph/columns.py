"""Columns meeting in a node: schemas united, frames put side by side, dtypes declared or observed.

Shared by the steps (:mod:`tabflow.graph.steps`): the same rules decide which columns a node
has (:func:`merge_schemas`) and how its frames are joined (:func:`concat_unique`).

Examples
--------
>>> from tabflow.graph.columns import merge_schemas
>>> from tabflow.schema import Schema
>>> merge_schemas([Schema(["a", "b"]), Schema(["b", "c"])]).column_names
['a', 'b', 'c']
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import operator
from typing import Any, Iterator, Sequence

from tabflow.backends import backend_for
from tabflow.graph.selector import ColumnSelector
from tabflow.schema import Schema
from tabflow.schema.dtypes import is_unknown

__all__ = [
    "merge_schemas", "combine_selectors", "concat_unique", "input_frame", "observes_dtypes",
    "declares_dtypes", "cast_to_schema", "planned_inputs", "input_dtype",
]


def merge_schemas(schemas: Sequence[Schema]) -> Schema:
    """The schemas of the columns reaching a node along several paths, as one: added left to
    right, as merlin combines them (``Schema.__add__``).

    A column that several of them have is merged: the later one's dtype and shape win, its
    tags are added (a tag it contradicts is dropped) and its properties are merged over the
    earlier ones. Its values are the later path's too (:func:`concat_unique`). So
    ``cat + (cat["a"] >> ops.TagAsItemID())`` gives ``a`` the tags ``categorical``, ``item``
    and ``id``, and ``encoded + ["a"]`` gives the raw ``a``.

    Examples
    --------
    >>> from tabflow.graph.columns import merge_schemas
    >>> from tabflow.schema import ColumnSchema, Schema
    >>> encoded = Schema([ColumnSchema("a", tags=["categorical"], dtype="int64", properties={"num_buckets": None})])
    >>> tagged = Schema([ColumnSchema("a", tags=["item_id"], dtype="int64")])
    >>> merged = merge_schemas([encoded, tagged])["a"]
    >>> sorted(map(str, merged.tags)), merged.properties
    (['categorical', 'id', 'item'], {'num_buckets': None})
    """
    return functools.reduce(operator.add, schemas, Schema())


def combine_selectors(selectors: Sequence[ColumnSelector]) -> ColumnSelector:
    """Several selectors as one: names in order (each once), then every column group."""
    combined = ColumnSelector()
    for selector in selectors:
        combined = combined + selector
    return combined


def observes_dtypes(op: Any) -> bool:
    """Whether an op's output dtypes are learned from the data rather than planned: a
    user-defined op that states none (see :func:`declares_dtypes`), and a ``LambdaOp``
    without ``dtype`` (its ``observes_dtypes``).

    NVTabular learned such dtypes by running the op on the data while fitting; so does
    tabflow, on the first rows of the first non-empty partition
    (:func:`tabflow.graph.schemas.observe_schemas`). Until then the op's planned schema stands
    (``"unknown"`` for a ``LambdaOp``, whose function may return any dtype).
    """
    declared = getattr(op, "observes_dtypes", None)
    if isinstance(declared, bool):
        return declared
    return bool(getattr(op, "runs_user_code", False)) and not declares_dtypes(op)


#: The schema hooks through which an op states its output dtypes.
_DTYPE_HOOKS = ("compute_output_schema", "compute_column_schema", "_compute_dtype")


def declares_dtypes(op: Any) -> bool:
    """Whether an op states its output dtypes: an ``output_dtype``, or a schema hook of its
    own (``compute_output_schema``, ``compute_column_schema``, ``_compute_dtype`` defined
    outside tabflow), unless ``dynamic_dtypes`` says they are only known from the data.

    A user op that states them gets them (its output is cast to them), as in merlin, where
    declared dtypes won; one that states none has them observed on the data.
    """
    if getattr(op, "dynamic_dtypes", False):
        return False
    if op.output_dtype is not None:
        return True
    return any(not getattr(type(op), hook).__module__.startswith("tabflow.") for hook in _DTYPE_HOOKS if hasattr(type(op), hook))


#: The input schema of the node whose op is running in this thread (see :func:`planned_inputs`).
_PLANNED_INPUTS: contextvars.ContextVar[Schema | None] = contextvars.ContextVar("tabflow_planned_inputs", default=None)


@contextlib.contextmanager
def planned_inputs(schema: Schema | None) -> Iterator[None]:
    """While the block runs, :func:`input_dtype` answers from ``schema``: the graph opens it
    around an op's ``transform`` and ``fit_partition`` with the node's input schema."""
    token = _PLANNED_INPUTS.set(schema)
    try:
        yield
    finally:
        _PLANNED_INPUTS.reset(token)


def input_dtype(frame: Any, name: str) -> str:
    """The canonical dtype an op plans column ``name``'s output from, as the schema pass did.

    Inside a workflow it is the node's planned input dtype, where the engine holds that dtype
    as the column holds its values: on cuDF a column planned ``"Int64"`` is an ``int64``
    column, which says nothing of nulls, and one partition of it may have none, yet the
    op's output dtype (``FillMissing(0.5)``: ``float64``) must be the one planned. Elsewhere
    (an op's ``transform`` called by a script), or where the data differs from the plan, it
    is the column's dtype by the nullable-integer rule (:meth:`Backend.column_dtype`).

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.graph.columns import input_dtype, planned_inputs
    >>> from tabflow.schema import ColumnSchema, Schema
    >>> frame = pd.DataFrame({"x": [1, 2]})
    >>> input_dtype(frame, "x")
    'int64'
    >>> with planned_inputs(Schema([ColumnSchema("x", dtype="float64")])):
    ...     input_dtype(frame, "x")  # a plan the engine would hold otherwise: the data's dtype
    'int64'
    """
    backend = backend_for(frame)
    column = frame[name]
    planned = _PLANNED_INPUTS.get()
    if planned is not None and name in planned:
        dtype = str(planned[name].dtype)
        if not is_unknown(dtype) and backend.canonical_dtype(backend.engine_dtype(dtype)) == backend.canonical_dtype(column.dtype):
            return dtype
    return backend.column_dtype(column)


def cast_to_schema(frame: Any, schema: Schema) -> Any:
    """``frame`` with each scalar column cast to its dtype in ``schema`` where it differs."""
    backend = backend_for(frame)
    changed = {
        column.name: backend.astype(frame[column.name], str(column.dtype))
        for column in schema
        if column.name in frame.columns
        and not column.is_list
        and not is_unknown(column.dtype)
        and backend.canonical_dtype(frame[column.name].dtype) != str(column.dtype)
    }
    return frame.assign(**changed) if changed else frame


def concat_unique(frames: Sequence[Any], names: Sequence[str]) -> Any:
    """The columns ``names`` of several frames of the same rows, each taken from the last
    frame that has it (merlin's rule for a column that several operands of ``+`` give, and
    for the inputs of an op that its parents and dependencies both give)."""
    names = list(names)
    if len(frames) == 1:
        out = frames[0]
        return out if list(out.columns) == names else out[names]
    backend = backend_for(frames[0])
    picked, seen = [], set()
    for frame in reversed(frames):
        keep = [c for c in frame.columns if c not in seen and c in names]
        seen.update(keep)
        if keep:
            picked.append(frame[keep] if len(keep) != len(frame.columns) else frame)
    picked.reverse()
    _check_same_rows(picked)
    out = backend.concat_columns(picked)
    return out if list(out.columns) == names else out[names]


def input_frame(frames: Sequence[Any], names: Sequence[str], source: Any) -> Any:
    """What an op receives: columns ``names`` from its parents' and dependencies' ``frames``
    (each from the last that has it, see :func:`concat_unique`), and from ``source``, the
    data, those none of them brings (an op's ``compute_input_schema`` may ask for such
    columns, as in merlin)."""
    brought = {name for frame in frames for name in frame.columns}
    extra = [name for name in names if name not in brought]
    frame = concat_unique([source[extra], *frames] if extra else list(frames), names)
    # Ops may assign into the frame they get (``df[col] = ...``, as NVTabular ops do). pandas 2
    # marks a column subset as a copy of a slice of the frame it came from, and where
    # mode.chained_assignment is "raise" (fastai sets it) such an assignment raises
    # SettingWithCopyError. A shallow copy is a frame of its own, without that mark and
    # without copying any column; the subset's columns are already its own (pandas 2 copies
    # them; copy-on-write pandas copies a column only when it is written).
    return frame.copy(deep=False)


def _check_same_rows(frames: Sequence[Any]) -> None:
    """Columns side by side must describe the same rows; a row filter (ops.Filter,
    ops.Dropna) in one branch of ``+`` only would otherwise pair unrelated rows or pad with
    nulls."""
    for frame in frames[1:]:
        first = frames[0]
        if len(frame) != len(first) or not frame.index.equals(first.index):
            raise ValueError(
                f"cannot put columns {list(first.columns)} and {list(frame.columns)} side by side: they "
                f"hold different rows ({len(first)} vs {len(frame)}). A row filter (ops.Filter, ops.Dropna) "
                "inside one branch of `+` is ambiguous; apply it to the whole selection instead, e.g. "
                "(cats + conts) >> ops.Filter(f)"
            )
