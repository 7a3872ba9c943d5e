"""Base classes for ops: :class:`Operator` (stateless) and :class:`StatOperator` (fitted).

The contract, shared by every op and by users' subclasses:

- ``__init__`` stores its keyword parameters unchanged (no logic, no validation), so
  :meth:`Operator.get_params` can read them back and saving needs no per-op code.
- ``transform(col_selector, df)`` receives a frame holding the op's input columns (plus its
  ``dependencies``) and returns a frame holding its output columns.
- ``output_column_names`` / ``column_mapping`` and ``output_dtype`` / ``output_tags`` /
  ``output_properties`` declare the output schema, which becomes dask's ``meta``.
- A :class:`StatOperator` is fitted as map (``fit_partition``), combine
  (``combine_partials``) and finalize (``fit_finalize``); fitted attributes end in ``_``.
  ``validate_input`` checks the input schema before any data is read.

Examples
--------
>>> import pandas as pd
>>> from tabflow import ops
>>> class AddOne(ops.Operator):
...     def transform(self, col_selector, df):
...         return df[col_selector.names] + 1
>>> wf = __import__("tabflow").Workflow(["x"] >> AddOne())
>>> wf.fit_transform(pd.DataFrame({"x": [1, 2]}))["x"].tolist()
[2, 3]
"""

from __future__ import annotations

import inspect
from typing import Any

from tabflow.graph.node import Node, as_node
from tabflow.graph.selector import ColumnSelector
from tabflow.schema import ColumnSchema, Schema

__all__ = ["Operator", "StatOperator", "NotFittedError", "OPERATOR_REGISTRY"]

#: Every Operator subclass by name; Workflow.load only instantiates classes found here.
OPERATOR_REGISTRY: dict[str, type] = {}


class NotFittedError(RuntimeError):
    """Raised when a statistics op is used before the workflow was fitted."""


class _OperatorMeta(type):
    """Lets an op *class* follow ``>>`` (``["x"] >> ops.Normalize``), as in NVTabular."""

    def __rrshift__(cls, other: Any) -> Node:
        return as_node(other) >> cls()


class Operator(metaclass=_OperatorMeta):
    """Base class of every op.

    Subclasses override :meth:`transform` and, when the output columns differ from the
    input ones, :meth:`output_column_names` or :meth:`column_mapping`.

    Examples
    --------
    >>> from tabflow import ops
    >>> ops.Clip(min_value=0).get_params()
    {'min_value': 0, 'max_value': None}
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        OPERATOR_REGISTRY[cls.registry_name()] = cls

    @classmethod
    def registry_name(cls) -> str:
        if cls.__module__.startswith("tabflow.ops."):
            return cls.__name__
        return f"{cls.__module__}.{cls.__qualname__}"

    # -------------------------------------------------------------- parameters
    @classmethod
    def _param_names(cls) -> list[str]:
        signature = inspect.signature(cls.__init__)
        return [
            p.name
            for p in signature.parameters.values()
            if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]

    def get_params(self) -> dict[str, Any]:
        """The constructor's parameters as stored on the instance."""
        missing = [n for n in self._param_names() if not hasattr(self, n)]
        if missing:
            raise AttributeError(
                f"{type(self).__name__}.__init__ must store its parameters unchanged as attributes "
                f"(missing: {missing}) so that the op can be saved and cloned"
            )
        return {name: getattr(self, name) for name in self._param_names()}

    def clone(self) -> "Operator":
        """A new, unfitted op with the same parameters."""
        return type(self)(**self.get_params())

    def __repr__(self) -> str:
        try:
            params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        except AttributeError:
            params = "..."
        return f"{type(self).__name__}({params})"

    @property
    def label(self) -> str:
        return type(self).__name__

    # ------------------------------------------------------------------ graph
    def __rrshift__(self, other: Any) -> Node:
        return as_node(other) >> self

    @property
    def dependencies(self) -> list[Any] | None:
        """Extra input columns (names, selectors or nodes) passed to transform but not
        part of the op's selector, e.g. the target column of a target encoding."""
        return None

    # ---------------------------------------------------------------- transform
    def transform(self, col_selector: ColumnSelector, df: Any) -> Any:
        """Return a frame with the op's output columns. The default passes columns through."""
        return df[col_selector.names]

    def validate_input(self, input_schema: Schema, col_selector: ColumnSelector) -> None:
        """Raise a clear error when the input columns cannot be handled (e.g. dtypes)."""

    # ----------------------------------------------------------------- schema
    def output_column_names(self, col_selector: ColumnSelector) -> ColumnSelector:
        """Names of the output columns (default: the input names, or ``column_mapping``).

        An override may return a :class:`ColumnSelector` or a plain list of names.
        """
        if type(self).column_mapping is not Operator.column_mapping:
            return ColumnSelector(list(self.column_mapping(col_selector)))
        return ColumnSelector(col_selector.names)

    def column_mapping(self, col_selector: ColumnSelector) -> dict[str, list[str]]:
        """``{output column: [input columns it is computed from]}``."""
        out_names = _names_of(self.output_column_names(col_selector))
        inputs = col_selector.names
        return {name: [name] if name in inputs else list(inputs) for name in out_names}

    @property
    def output_dtype(self) -> Any:
        """Dtype of every output column, or None to keep the input dtype.

        Any spelling NVTabular ops used is accepted (``"float32"``, ``np.float32``,
        ``np.dtype("int32")``, ``float``); the schema holds its canonical name, and the columns
        a user-defined op's transform returns are cast to it.
        """
        return None

    @property
    def output_tags(self) -> list[Any]:
        return []

    @property
    def output_properties(self) -> dict[str, Any]:
        return {}

    def compute_column_schema(self, col_name: str, input_schema: Schema) -> ColumnSchema:
        """Schema of one output column; ``input_schema`` holds the columns it is computed from.

        (As in NVTabular, the schema passed is the fragment of the op's input schema that
        ``column_mapping`` names for this column.)
        """
        sources = list(input_schema)
        base = sources[0] if len(sources) == 1 else ColumnSchema(col_name, dtype=sources[0].dtype if sources else "float64")
        column = base.with_name(col_name)
        if len(sources) > 1:
            # Source by source: a later source's tag displaces a contradictory earlier one
            # (CONTINUOUS after CATEGORICAL) instead of making one impossible tag set.
            for source in sources:
                column = column.with_tags(source.tags)
        if self.output_dtype is not None:
            column = column.with_dtype(self.output_dtype)
        if self.output_tags:
            column = column.with_tags(*self.output_tags)
        if self.output_properties:
            column = column.with_properties(**self.output_properties)
        return column

    def compute_output_schema(self, input_schema: Schema, col_selector: ColumnSelector, prev_output_schema: Any = None) -> Schema:
        """Output schema of the op given its input schema (dependencies included).

        A pure function of its arguments: nothing is stored on the op, so one op object may
        be used in several nodes. ``prev_output_schema`` is accepted for NVTabular's signature.
        """
        mapping = self.column_mapping(col_selector)
        return Schema(
            [self.compute_column_schema(name, input_schema.select_by_name(sources)) for name, sources in mapping.items()]
        )

    @property
    def runs_user_code(self) -> bool:
        """True for ops defined outside tabflow (and for LambdaOp, which calls a user
        function): their output dtypes may be observed on a sample, and lists they return
        become list columns."""
        return not type(self).__module__.startswith("tabflow.")

    # -------------------------------------------------------------- fitted state
    def fitted_state(self) -> dict[str, Any]:
        """Attributes set by fitting (names ending in ``_``)."""
        return {k: v for k, v in vars(self).items() if k.endswith("_") and not k.startswith("_")}


class StatOperator(Operator):
    """An op with statistics fitted as an explicit map / combine / finalize.

    Subclasses implement :meth:`fit_partition` (per partition, returns a small partial
    result), :meth:`combine_partials` (merges partials; must be associative, it runs as a
    tree) and :meth:`fit_finalize` (sets attributes ending in ``_``). NVTabular-style
    subclasses that override ``fit(col_selector, ddf)`` (returning dask objects) keep working:
    the workflow computes what ``fit`` returns and passes it to ``fit_finalize``.

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> class Center(ops.StatOperator):
    ...     def fit_partition(self, col_selector, df):
    ...         return df[col_selector.names].sum(), len(df)
    ...     def combine_partials(self, partials):
    ...         return sum(p[0] for p in partials), sum(p[1] for p in partials)
    ...     def fit_finalize(self, partial):
    ...         self.means_ = (partial[0] / partial[1]).to_dict()
    ...     def transform(self, col_selector, df):
    ...         return df[col_selector.names] - pd.Series(self.means_)
    >>> nvt.Workflow(["x"] >> Center()).fit_transform(pd.DataFrame({"x": [1.0, 3.0]}))["x"].tolist()
    [-1.0, 1.0]
    """

    def fit_partition(self, col_selector: ColumnSelector, df: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement fit_partition or fit")

    def combine_partials(self, partials: list[Any]) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement combine_partials")

    def fit_finalize(self, partial: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement fit_finalize")

    def fit(self, col_selector: ColumnSelector, ddf: Any) -> Any:
        """NVTabular-style hook; tabflow's own ops use fit_partition/combine/finalize."""
        raise NotImplementedError

    def fitted_state(self) -> dict[str, Any]:
        """Attributes set by fitting: names ending in ``_``, plus what a legacy ``fit_finalize`` set."""
        state = super().fitted_state()
        for name in getattr(self, "_state_names", ()):
            if hasattr(self, name):
                state[name] = getattr(self, name)
        return state

    @property
    def uses_legacy_fit(self) -> bool:
        return type(self).fit is not StatOperator.fit and type(self).fit_partition is StatOperator.fit_partition

    @property
    def fitted(self) -> bool:
        # Legacy subclasses may keep state under names without "_": the workflow marks them.
        return bool(self.fitted_state()) or getattr(self, "_fitted_by_workflow", False)

    def clear(self) -> None:
        """Forget fitted statistics."""
        for name in list(self.fitted_state()):
            delattr(self, name)
        self._state_names = []
        self._fitted_by_workflow = False

    def check_is_fitted(self) -> None:
        if not self.fitted:
            raise NotFittedError(
                f"{type(self).__name__} has no statistics yet: call workflow.fit(dataset) "
                "(or fit_transform) before transform"
            )


# The base classes are usable as ops themselves (``Operator()`` passes columns through).
OPERATOR_REGISTRY[Operator.registry_name()] = Operator
OPERATOR_REGISTRY[StatOperator.registry_name()] = StatOperator


def _names_of(columns: Any) -> list[str]:
    """Column names from a selector, a list of names or a single name."""
    if isinstance(columns, ColumnSelector):
        return columns.names
    if isinstance(columns, str):
        return [columns]
    return [str(name) for name in columns]
