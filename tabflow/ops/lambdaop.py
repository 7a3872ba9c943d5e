"""LambdaOp: apply a user function to each selected column."""

from __future__ import annotations

import inspect
from typing import Any, Callable

from tabflow.backends import backend_for
from tabflow.backends.protocol import Frame
from tabflow.graph.node import Node, register_function_op
from tabflow.graph.selector import ColumnSelector
from tabflow.ops.operator import Operator
from tabflow.schema import Schema
from tabflow.schema.dtypes import UNKNOWN, canonical_dtype

__all__ = ["LambdaOp"]


@register_function_op
class LambdaOp(Operator):
    """Replace each selected column ``col`` by ``f(col)``, or ``f(col, dep)`` with a dependency.

    ``selector >> (lambda col: ...)`` (a ColumnSelector or node on the left; a plain list of
    names cannot take ``>>`` with a function) builds this op implicitly.

    Output dtype: ``dtype`` when given. Otherwise it is learned from the data, as NVTabular
    does: ``Workflow.fit`` (or the first ``transform`` of a workflow never fitted) calls ``f``
    on the first rows of the first non-empty partition and records the dtype it returns.
    Until then the schema plans ``"unknown"`` (``Workflow.fit_schema`` without data,
    ``Graph.construct_schema``). A function returning lists (``col.str.split("|")``) makes a
    list column, which ``Categorify`` encodes as multi-hot. Pass ``dtype`` to skip the
    observation.

    Saving: a function registered with :func:`tabflow.register_function` is saved by name;
    any other (a lambda, a nested function, one defined in a notebook) is saved as its
    source code with the plain values it uses, and runs after :meth:`Workflow.load` only
    with ``trust_code=True``.

    Parameters
    ----------
    f : callable
        ``f(series) -> series`` (or array of the same length); with a dependency, or when
        ``f`` takes two arguments, ``f(series, frame)`` where the frame holds the dependency
        columns (without a dependency: the op's input columns).
    dependency : str, list of str, ColumnSelector or Node, optional
        Extra columns passed to ``f`` as the second argument (a node's output columns when
        it is a node).
    label : str, optional
        Name for graph displays. When None, :attr:`label` is, as in NVTabular 23.08, the
        function's name, or the source of a lambda written on one line (``"lambda col: col
        + 1"``), else ``"LambdaOp"``.
    dtype : str or numpy dtype, optional
        Output dtype of every column.
    tags : list of Tags, optional
        Tags added to the output columns.
    properties : dict, optional
        Properties added to the output columns.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> df = pd.DataFrame({"price": [1.0, 2.0], "qty": [3, 4]})
    >>> wf = nvt.Workflow(["price"] >> ops.LambdaOp(lambda col, dep: col * dep["qty"], dependency=["qty"]))
    >>> wf.fit_transform(df)["price"].tolist()
    [3.0, 8.0]
    >>> even = nvt.ColumnSelector(["qty"]) >> (lambda col: col % 2 == 0)
    >>> nvt.Workflow(even).fit_transform(df)["qty"].tolist()
    [False, True]
    >>> ops.LambdaOp(lambda col: col + 1).label, ops.LambdaOp(np.log1p).label
    ('lambda col: col + 1', 'log1p')
    """

    def __init__(
        self,
        f: Callable[..., Any],
        dependency: Any = None,
        label: str | None = None,
        dtype: Any = None,
        tags: list[Any] | None = None,
        properties: dict[str, Any] | None = None,
    ) -> None:
        self.f = f
        self.dependency = dependency
        self.label = label
        self.dtype = dtype
        self.tags = tags
        self.properties = properties

    # ``label`` is a parameter (stored unchanged, as ``_label``) and, read, the display name.
    @property
    def label(self) -> str:
        if self._label:
            return self._label
        return _function_label(self.f)

    @label.setter
    def label(self, value: str | None) -> None:
        self._label = value

    def get_params(self) -> dict[str, Any]:
        params = super().get_params()
        params["label"] = self._label  # the parameter as given, not the derived display name
        return params

    @property
    def dependencies(self) -> list[Any] | None:
        if self.dependency is None:
            return None
        if isinstance(self.dependency, (str, ColumnSelector, Node)):
            return [self.dependency]
        return [ColumnSelector(list(self.dependency))]

    def validate_input(self, input_schema: Schema, col_selector: ColumnSelector) -> None:
        if self.f is None:
            raise ValueError("LambdaOp needs a function f(col) or f(col, df); f is None")
        if not callable(self.f):
            raise TypeError(f"LambdaOp needs a callable f, got {self.f!r}")
        _arity(self.f)  # a function that takes neither one nor two arguments is a ValueError

    def transform(self, col_selector: ColumnSelector, df: Frame) -> Frame:
        backend = backend_for(df)
        out = {}
        for name in col_selector.names:
            result = self._call(df, name, col_selector)
            if not backend.is_series(result):
                result = backend.series(result, name=name, index=df.index)
            if self.dtype is not None:
                result = backend.astype(result, _canonical(self.dtype))
            out[name] = result
        return backend.frame_from_dict(out, index=df.index)

    def _call(self, df: Any, name: str, col_selector: ColumnSelector) -> Any:
        if _arity(self.f, self.dependency is not None) == 1:
            return self.f(df[name])
        return self.f(df[name], df[self._dependency_names(df, col_selector)])

    def _dependency_names(self, df: Any, col_selector: ColumnSelector) -> list[str]:
        if self.dependency is None:
            return list(col_selector.names)
        if isinstance(self.dependency, (str, ColumnSelector)) or (
            isinstance(self.dependency, (list, tuple)) and all(isinstance(d, str) for d in self.dependency)
        ):
            return ColumnSelector(self.dependency).names
        # A node dependency: its columns are whatever the input holds beyond the selection.
        selected = set(col_selector.names)
        return [c for c in df.columns if c not in selected]

    # ----------------------------------------------------------------- schema
    def compute_output_schema(self, input_schema: Schema, col_selector: ColumnSelector, prev_output_schema: Any = None) -> Schema:
        declared = super().compute_output_schema(input_schema, col_selector)
        # Without a dtype, the function's result is only known from the data
        # (tabflow.graph.schemas.observe_schemas records it once the workflow sees data).
        dtype = _canonical(self.dtype) if self.dtype is not None else UNKNOWN
        return Schema([column.with_dtype(dtype) for column in declared])

    @property
    def runs_user_code(self) -> bool:
        return True

    @property
    def observes_dtypes(self) -> bool:
        """Without ``dtype``, its output dtypes are learned from the data."""
        return self.dtype is None

    @property
    def output_tags(self) -> list[Any]:
        return list(self.tags or [])

    @property
    def output_properties(self) -> dict[str, Any]:
        return dict(self.properties or {})


def _canonical(dtype: Any) -> str:
    return canonical_dtype(dtype)


def _arity(f: Callable[..., Any], has_dependency: bool = False) -> int:
    """How many arguments ``f`` is called with: 1 (``f(col)``) or 2 (``f(col, df)``).

    Two when ``f`` requires two, or when there is a dependency and ``f`` can take a second
    positional argument; one otherwise. So, as in NVTabular 23.08, a one-parameter function
    gets only the column even with a dependency, and a two-parameter one gets the frame;
    a second parameter with a default (``def f(col, edges=(0, 5))``) is left to its default
    unless a dependency asks for the frame. ValueError when ``f`` can take neither one nor
    two arguments (NVTabular 23.08 refused those too).
    """
    nin = getattr(f, "nin", None)  # a numpy ufunc: its signature lists out=, where=, ...
    if isinstance(nin, int):
        return 2 if nin >= 2 and has_dependency else 1
    try:
        parameters = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):  # builtins without a signature take one column
        return 1
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    varargs = any(p.kind is p.VAR_POSITIONAL for p in parameters)
    if len(required) > 2 or (not positional and not varargs):
        described = ", ".join(p.name for p in parameters) or "no parameters"
        raise ValueError(
            f"LambdaOp's function must take one argument (the column) or two (the column and the frame), "
            f"but {_function_label(f)!r} takes ({described})"
        )
    if len(required) == 2:
        return 2
    return 2 if has_dependency and (len(positional) >= 2 or varargs) else 1


def _function_label(f: Any) -> str:
    """NVTabular 23.08's label of a user function: its name, or a one-line lambda's source."""
    name = getattr(f, "__name__", None)
    if name and name != "<lambda>":
        return name
    try:
        line = inspect.getsourcelines(f)[0][0]
    except (OSError, TypeError):  # no source (a REPL, a loaded workflow's code): no label
        return "LambdaOp"
    lambdas = [part.strip() for part in line.split(">>") if "lambda " in part]
    if len(lambdas) == 1 and lambdas[0].count("lambda") == 1:
        return _balanced(lambdas[0])
    return "LambdaOp"


def _balanced(source: str) -> str:
    """The lambda out of its line: the text up to where a bracket opened before it closes,
    so ``ops.LambdaOp(lambda col: col + 1)`` labels ``lambda col: col + 1``."""
    start = source.index("lambda ")
    depth, in_body = 0, False
    for position in range(start, len(source)):
        char = source[position]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            if depth == 0:
                return source[start:position].strip()
            depth -= 1
        elif char == ":" and depth == 0:
            in_body = True
        elif char == "," and depth == 0 and in_body:  # commas before the colon separate parameters
            return source[start:position].strip()
    return source[start:].strip()
