"""LambdaOp: apply a user function to each selected column."""

from __future__ import annotations

import inspect
from typing import Any, Callable

from tabflow.backends import SAMPLE_VARIANTS, backend_for, get_backend
from tabflow.exceptions import UntrustedCodeError
from tabflow.graph.node import Node, register_function_op
from tabflow.graph.selector import ColumnSelector
from tabflow.ops.operator import Operator
from tabflow.schema import Schema

__all__ = ["LambdaOp"]


@register_function_op
class LambdaOp(Operator):
    """Replace each selected column ``col`` by ``f(col)``, or ``f(col, dep)`` with a dependency.

    ``selector >> (lambda col: ...)`` (a ColumnSelector or node on the left; a plain list of
    names cannot take ``>>`` with a function) builds this op implicitly.

    Output dtype: ``dtype`` when given. Otherwise it is inferred once, when the workflow
    resolves its schema, by calling ``f`` on a two-row frame of ordinary values of the input
    dtypes (CPU, never real data; strings are tried as letters, digits, then date-times).
    A function returning lists (``col.str.split("|")``) makes a list column, which
    ``Categorify`` encodes as multi-hot. Pass ``dtype`` when ``f`` only works on other
    particular values or only on the GPU engine.

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
        Name for graph displays.
    dtype : str or numpy dtype, optional
        Output dtype of every column.
    tags : list of Tags, optional
        Tags added to the output columns.
    properties : dict, optional
        Properties added to the output columns.

    Examples
    --------
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

    # The base class derives ``label`` from the class name; here it is also a parameter.
    @property
    def label(self) -> str | None:
        return self._label

    @label.setter
    def label(self, value: str | None) -> None:
        self._label = value

    @property
    def dependencies(self) -> list[Any] | None:
        if self.dependency is None:
            return None
        if isinstance(self.dependency, (str, ColumnSelector, Node)):
            return [self.dependency]
        return [ColumnSelector(list(self.dependency))]

    def validate_input(self, input_schema: Schema, col_selector: ColumnSelector) -> None:
        if not callable(self.f):
            raise TypeError(f"LambdaOp needs a callable f, got {self.f!r}")

    def transform(self, col_selector: ColumnSelector, df: Any) -> Any:
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
        if self.dependency is None and not _takes_two_arguments(self.f):
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
        if self.dtype is not None:
            return Schema([column.with_dtype(_canonical(self.dtype)) for column in declared])
        inferred = self._infer_dtypes(input_schema, col_selector)
        return Schema([column.with_dtype(inferred[column.name]) for column in declared])

    @property
    def runs_user_code(self) -> bool:
        return True

    @property
    def infers_own_dtypes(self) -> bool:
        """Its output dtypes come from ``dtype`` or its own sampling (no second sampling)."""
        return True

    def _infer_dtypes(self, input_schema: Schema, col_selector: ColumnSelector) -> dict[str, str]:
        backend = get_backend("pandas")
        samples = [backend.sample_frame(input_schema.dtypes, variant) for variant in range(SAMPLE_VARIANTS)]
        dtypes = {}
        for name in col_selector.names:
            errors = []
            for sample in samples:  # letters first, then digits and date-times for picky functions
                try:
                    dtypes[name] = backend.observed_dtype(self._call(sample, name, col_selector))
                    break
                except UntrustedCodeError:
                    raise
                except Exception as err:  # noqa: BLE001 - user code; the next sample may suit it
                    errors.append(err)
            else:
                first = errors[0]
                raise TypeError(
                    f"LambdaOp could not infer the output dtype of column {name!r}: calling {self.f!r} on "
                    f"sample values of dtype {input_schema[name].dtype} raised {type(first).__name__}: {first}. "
                    "Pass dtype=... to LambdaOp."
                ) from first
        return dtypes

    @property
    def output_tags(self) -> list[Any]:
        return list(self.tags or [])

    @property
    def output_properties(self) -> dict[str, Any]:
        return dict(self.properties or {})


def _canonical(dtype: Any) -> str:
    return get_backend("pandas").canonical_dtype(dtype)


def _takes_two_arguments(f: Callable[..., Any]) -> bool:
    try:
        parameters = inspect.signature(f).parameters.values()
    except (TypeError, ValueError):  # builtins and ufuncs without a signature take one column
        return False
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    return len(required) >= 2
