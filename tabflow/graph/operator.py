"""Base classes of ops: :class:`Operator` (stateless) and :class:`StatOperator` (fitted).

They live with the graph, as merlin's ``merlin.dag.Operator`` does, because the graph calls
their hooks; :mod:`tabflow.ops` re-exports them (``nvtabular.ops.Operator``).

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

The schema hooks are merlin 23.08's and the graph calls them in merlin's order, so an
NVTabular custom op that overrides any of them behaves as it did there: when the graph meets
``node >> op`` it asks ``op.compute_input_schema`` for the columns the op receives,
``op.compute_selector`` for the columns it applies to, ``op.compute_output_schema`` (which
calls ``column_mapping`` and ``compute_column_schema``, itself built from
``_compute_dtype`` / ``_compute_tags`` / ``_compute_properties`` / ``_compute_shape``) for
what it produces, then ``op.validate_schemas``. ``names >> op`` builds its input node with
``op.create_node``, and ``op.dependencies`` (names, selectors, nodes or a mix) is read when
the op joins the graph.

Examples
--------
>>> import pandas as pd
>>> import tabflow as nvt
>>> from tabflow import ops
>>> class AddOne(ops.Operator):
...     def transform(self, col_selector, df):
...         return df[col_selector.names] + 1
>>> nvt.Workflow(["x"] >> AddOne()).fit_transform(pd.DataFrame({"x": [1, 2]}))["x"].tolist()
[2, 3]
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import os
import threading
from enum import Flag, auto
from typing import Any, Callable, Iterable, Iterator, Sequence

from tabflow.backends import backend_for
from tabflow.backends.protocol import Frame
from tabflow.graph.kernels import Kernel, renaming_kernels
from tabflow.graph.node import Node, as_group
from tabflow.graph.selector import ColumnSelector
from tabflow.schema import ColumnSchema, Schema

# One lock per derived entry being built (see Operator._derived), keyed by (op, attribute,
# entry) and dropped when no thread waits on it: entries of one op (a table per column) build
# side by side, and an RLock lets a build use another derived entry.
_DERIVED_LOCKS_GUARD = threading.Lock()
_DERIVED_LOCKS: dict[tuple[int, str, Any], list[Any]] = {}

__all__ = [
    "Operator",
    "StatOperator",
    "NotFittedError",
    "NotUpdatableError",
    "OPERATOR_REGISTRY",
    "Supports",
    "DataFormats",
    "BaseOperator",
    "register_construction_check",
    "register_attribute_alias",
    "keeping_update_state",
    "keep_update_state",
]


def _is_fitted_name(name: str) -> bool:
    """Whether attribute ``name`` names fitted state (``means_``), not a parameter or a private one."""
    return name.endswith("_") and not name.startswith("_")


#: Every Operator subclass by name; Workflow.load only instantiates classes found here.
OPERATOR_REGISTRY: dict[str, type[Operator]] = {}

_rebuilding = threading.local()


@contextlib.contextmanager
def rebuilding_ops() -> Iterator[None]:
    """Ops built in this thread inside the block are rebuilt from parameters an op already
    had (``Workflow.load``, ``clone``), not written by a user: what their constructors warn
    about was heard when the original was built, so :func:`is_rebuilding` tells them to be quiet.

    Examples
    --------
    >>> from tabflow.graph.operator import is_rebuilding, rebuilding_ops
    >>> with rebuilding_ops():
    ...     inside = is_rebuilding()
    >>> inside, is_rebuilding()
    (True, False)
    """
    depth = getattr(_rebuilding, "depth", 0)
    _rebuilding.depth = depth + 1
    try:
        yield
    finally:
        _rebuilding.depth = depth


def is_rebuilding() -> bool:
    """True inside :func:`rebuilding_ops` (in this thread)."""
    return getattr(_rebuilding, "depth", 0) > 0


_CONSTRUCTION_CHECKS: list[Callable[[Any], None]] = []


def register_construction_check(check: Callable[[Any], None]) -> None:
    """Call ``check(op)`` on every op a user builds, once its ``__init__`` has returned.

    Ops rebuilt from parameters an op already had (inside :func:`rebuilding_ops`) are not
    checked. A warning ``check`` gives with ``stacklevel=3`` points at the line that built
    the op. This is how arguments an op accepts for another library's sake are reported
    without the op's own code naming them (``tabflow.compat.op_arguments``).

    Examples
    --------
    >>> from tabflow import ops
    >>> from tabflow.graph import operator
    >>> built = []
    >>> operator.register_construction_check(built.append)
    >>> op = ops.Clip(min_value=0)
    >>> clone = op.clone()
    >>> operator._CONSTRUCTION_CHECKS.remove(built.append)
    >>> built == [op]
    True
    """
    _CONSTRUCTION_CHECKS.append(check)


class _Alias:
    """A read-only class attribute computed from the op (an instance attribute of the same
    name, set by a subclass, takes precedence)."""

    def __init__(self, read: Callable[[Any], Any]) -> None:
        self.read = read

    def __get__(self, op: Any, owner: type | None = None) -> Any:
        return self if op is None else self.read(op)


def register_attribute_alias(cls: type, name: str, read: Callable[[Any], Any]) -> None:
    """``op.<name>`` reads ``read(op)`` on ops of ``cls`` and its subclasses (another
    library's name for a fitted attribute).

    Examples
    --------
    >>> from tabflow import ops
    >>> from tabflow.graph.operator import register_attribute_alias
    >>> class Offset(ops.Operator):
    ...     def __init__(self, by=1):
    ...         self.by = by
    >>> register_attribute_alias(Offset, "amount", lambda op: op.by)
    >>> Offset(by=3).amount
    3
    """
    setattr(cls, name, _Alias(read))


def _lists_in_the_form_given(transform: Callable[..., Any]) -> Callable[..., Any]:
    """``transform`` run on list columns as the engine holds them, whatever form they came in.

    A workflow hands ops Arrow list columns. A script that calls ``op.transform(selector,
    df)`` itself, as NVTabular's tests do, may pass a pandas frame whose list columns hold
    Python lists or NumPy arrays (``object``): the op gets them as list columns, and the
    frame it returns holds its list columns in pandas' form again (one NumPy array per row,
    as ``Dataset.to_ddf`` gives them). Frames without such columns pass through untouched.
    """
    if getattr(transform, "_lists_in_the_form_given", False):
        return transform

    @functools.wraps(transform)
    def wrapped(self: Any, col_selector: Any, df: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            backend = backend_for(df)
        except TypeError:  # not an engine's frame: the op's own error says what it takes
            return transform(self, col_selector, df, *args, **kwargs)
        listed = backend.with_list_columns(df) if backend.is_frame(df) else df
        if listed is df:
            return transform(self, col_selector, df, *args, **kwargs)
        out = transform(self, col_selector, listed, *args, **kwargs)
        return backend.lists_as_arrays(out) if backend.is_frame(out) else out

    wrapped._lists_in_the_form_given = True  # type: ignore[attr-defined]
    return wrapped


class NotFittedError(RuntimeError):
    """Raised when a statistics op is used before the workflow was fitted."""


class NotUpdatableError(ValueError):
    """Raised when a fitted statistics op cannot be continued with new data
    (:meth:`tabflow.Workflow.partial_fit`); the message names the op and why."""


_KEEPING_UPDATE_STATE: contextvars.ContextVar[bool] = contextvars.ContextVar("tabflow_keep_update_state", default=False)


@contextlib.contextmanager
def keep_update_state() -> Iterator[None]:
    """Inside the block, ops' ``fit_finalize`` keep what a later update needs besides their
    statistics (:func:`keeping_update_state`); :meth:`tabflow.Workflow.partial_fit` finalizes
    in one.

    Examples
    --------
    >>> from tabflow.graph.operator import keep_update_state, keeping_update_state
    >>> with keep_update_state():
    ...     inside = keeping_update_state()
    >>> inside, keeping_update_state()
    (True, False)
    """
    token = _KEEPING_UPDATE_STATE.set(True)
    try:
        yield
    finally:
        _KEEPING_UPDATE_STATE.reset(token)


def keeping_update_state() -> bool:
    """Whether the ``fit_finalize`` running in this thread belongs to a fit that will be
    continued with new data (:meth:`tabflow.Workflow.partial_fit`).

    Most ops' fitted statistics are all an update needs. A few need more, as large as the
    data's distinct values: the counts of values still below Categorify's ``freq_threshold``,
    FillMedian's value counts, JoinGroupby's and DataStats' mergeable moments. They keep it
    only then, so that a plain :meth:`~tabflow.Workflow.fit` holds and saves no more than it
    did.
    """
    return _KEEPING_UPDATE_STATE.get()


class Supports(Flag):
    """What data an op transforms (merlin's deprecated flag, kept for scripts that read it)."""

    CPU_DATAFRAME = auto()
    GPU_DATAFRAME = auto()
    CPU_DICT_ARRAY = auto()
    GPU_DICT_ARRAY = auto()


class DataFormats(Flag):
    """The data formats merlin could hand an op; tabflow hands ops data frames only."""

    CUDF_DATAFRAME = auto()
    PANDAS_DATAFRAME = auto()
    NUMPY_TENSOR_TABLE = auto()
    CUPY_TENSOR_TABLE = auto()
    TF_TENSOR_TABLE = auto()
    TORCH_TENSOR_TABLE = auto()
    NUMPY_DICT_ARRAY = auto()
    CUPY_DICT_ARRAY = auto()


class _OperatorMeta(type):
    """Lets an op *class* follow ``>>`` (``["x"] >> ops.Normalize``), as in NVTabular."""

    def __rrshift__(cls, other: Any) -> Node:
        op = cls()
        return op.__rrshift__(other)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        op = super().__call__(*args, **kwargs)
        if _CONSTRUCTION_CHECKS and not is_rebuilding():
            for check in _CONSTRUCTION_CHECKS:
                check(op)
        return op


class Operator(metaclass=_OperatorMeta):
    """Base class of every op.

    Subclasses override :meth:`transform` and, when the output columns differ from the
    input ones, :meth:`output_column_names` or :meth:`column_mapping`. The schema hooks
    (:meth:`compute_input_schema`, :meth:`compute_selector`, :meth:`compute_output_schema`,
    :meth:`compute_column_schema`, :meth:`validate_schemas`, :meth:`create_node`) may be
    overridden as in merlin; the graph calls them.

    Examples
    --------
    >>> from tabflow import ops
    >>> ops.Clip(min_value=0).get_params()
    {'min_value': 0, 'max_value': None}
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        OPERATOR_REGISTRY[cls.registry_name()] = cls
        if "transform" in cls.__dict__:
            cls.transform = _lists_in_the_form_given(cls.__dict__["transform"])  # type: ignore[method-assign]

    @classmethod
    def registry_name(cls) -> str:
        if cls.__module__.startswith(("tabflow.ops.", "tabflow.graph.")):
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

    #: Whether the op gives one output row per input row, computed from that row alone (with
    #: the fitted statistics), and, for a statistics op, whether its statistics are the same
    #: however the rows are split into partitions. Then running it on partitions joined
    #: together gives what it gives on each, row for row, and a workflow may read many small
    #: files as fewer, larger partitions for it. An op that looks across the rows of a
    #: partition (a group-by, a lag, a function of a column's mean, folds drawn per
    #: partition) or drops or adds rows (Dropna, Filter, a join) leaves it False, as an op of
    #: unknown behaviour (a user's subclass) does.
    row_wise: bool = False

    #: Attributes an op derives on first use from its parameters and fitted state (an
    #: engine's hash tables, prepared matrices). They are left out of pickles, which they
    #: could dwarf, and rebuilt wherever the op runs; the op reads their entries with
    #: :meth:`_derived`.
    _derived_attributes: tuple[str, ...] = ()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        for name in self._derived_attributes:
            state.pop(name, None)
        return state

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        if _is_fitted_name(name):
            self._fitted_state_changed()

    def __delattr__(self, name: str) -> None:
        object.__delattr__(self, name)
        if _is_fitted_name(name):
            self._fitted_state_changed()

    def _fitted_state_changed(self) -> None:
        # Derived attributes stand for the fitted state they were built from: setting it
        # (a fit, ``op.vocabs_ = ...``, ``clear()``) leaves them stale, so they go and are
        # built again from the new state on next use. What others built from the state (a
        # workflow's serving plan) sees the change in ``state_version``.
        for name in self._derived_attributes:
            self.__dict__.pop(name, None)
        self.__dict__["_state_version"] = self.__dict__.get("_state_version", 0) + 1

    def state_version(self) -> Any:
        """A value that changes whenever the op's fitted state is set or removed, by a fit,
        :meth:`~StatOperator.clear`, a load or by hand (``op.means_ = ...``): what was compiled
        from the state (a workflow's serving plan) stands for it while this is unchanged.

        Examples
        --------
        >>> from tabflow import ops
        >>> op = ops.Normalize()
        >>> before = op.state_version()
        >>> op.means_ = {"x": 0.0}
        >>> op.state_version() != before
        True
        """
        return self.__dict__.get("_state_version", 0)

    def _derived(self, name: str, key: Any, build: Callable[[], Any]) -> Any:
        """Entry ``key`` of the derived attribute ``name`` (a dict, one of
        ``_derived_attributes``), made by ``build()`` on first use.

        Threads that transform partitions side by side reach a fresh op together; one of them
        builds the entry while the others wait for it, instead of each building its own copy
        (as much work again, and as much memory until the copies are dropped).
        """
        entries = self.__dict__.setdefault(name, {})
        if key in entries:
            return entries[key]
        # id(self) names this op while the lock exists: the op is alive until the build ends.
        ident = (id(self), name, key)
        with _DERIVED_LOCKS_GUARD:
            slot = _DERIVED_LOCKS.setdefault(ident, [threading.RLock(), 0])
            slot[1] += 1
        try:
            with slot[0]:
                if key not in entries:
                    entries[key] = build()
                return entries[key]
        finally:
            with _DERIVED_LOCKS_GUARD:
                slot[1] -= 1
                if slot[1] == 0:
                    del _DERIVED_LOCKS[ident]

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
        with rebuilding_ops():
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
        if isinstance(other, Node):
            return other >> self
        try:
            selector = other if isinstance(other, ColumnSelector) else ColumnSelector(_listed(other))
        except TypeError:  # nodes in the list: one column group feeds the op, as ``+ [...]`` is
            return as_group(other) >> self
        # ``names >> op``: the op makes the node that selects its input (merlin's hook).
        return self.create_node(selector) >> self

    def create_node(self, selector: ColumnSelector) -> Node:
        """The node that selects ``selector``'s columns when the op follows a selector
        (``ColumnSelector([...]) >> op``); override to return a Node subclass.

        Examples
        --------
        >>> from tabflow import ColumnSelector, ops
        >>> ops.LogOp().create_node(ColumnSelector(["x"])).selector.names
        ['x']
        """
        return Node(selector)

    @property
    def dependencies(self) -> list[Any]:
        """Extra input columns passed to transform but not part of the op's selector, e.g.
        the target column of a target encoding: names, selectors, nodes, or a list of them."""
        return []

    # ---------------------------------------------------------------- transform
    def transform(self, col_selector: ColumnSelector, df: Frame) -> Frame:
        """Return a frame with the op's output columns. The default passes columns through."""
        return df[col_selector.names]

    def validate_input(self, input_schema: Schema, col_selector: ColumnSelector) -> None:
        """Raise a clear error when the input columns cannot be handled (e.g. dtypes)."""

    def dictionary_string_columns(self, col_selector: ColumnSelector) -> list[str]:
        """Input columns this op handles when their strings arrive dictionary-encoded.

        Parquet files store strings as a dictionary of distinct values plus indices. A
        workflow reads a source string column that way, without materialising its strings,
        when every op reading it lists it here. The op's ``transform`` (and ``fit_partition``)
        then receives it as an Arrow dictionary of strings (``pd.ArrowDtype``; the backends'
        ``value_counts``, ``lookup`` and ``hash_values`` accept it) rather than ``str``. It
        must not return the column as an output. The default lists none: ops see the dtype
        their input schema says.

        Examples
        --------
        >>> from tabflow import ops
        >>> from tabflow.graph.selector import ColumnSelector
        >>> ops.Categorify().dictionary_string_columns(ColumnSelector(["a", "b"]))
        ['a', 'b']
        >>> ops.FillMissing().dictionary_string_columns(ColumnSelector(["a"]))
        []
        """
        return []

    def array_kernels(self, col_selector: ColumnSelector, input_schema: Schema) -> list[Kernel] | None:
        """What :meth:`transform` computes, as NumPy kernels for the serving plan
        (:mod:`tabflow.graph.serving`).

        Returns :class:`~tabflow.graph.kernels.Kernel` objects giving exactly the values and
        dtypes ``transform`` gives for inputs of ``input_schema``'s dtypes, or None: the
        serving plan then calls ``transform`` on a small frame. The base class passes its
        columns through, as its ``transform`` does; the plan never uses the kernels of ops
        that run user code (those of other packages, ``LambdaOp``).

        Examples
        --------
        >>> from tabflow import ops
        >>> from tabflow.graph.selector import ColumnSelector
        >>> from tabflow.schema import ColumnSchema, Schema
        >>> schema = Schema([ColumnSchema("x", dtype="float64")])
        >>> [(k.outputs, k.dtype) for k in ops.LogOp().array_kernels(ColumnSelector(["x"]), schema)]
        [(('x',), 'float32')]
        """
        if type(self).transform is not Operator.transform:
            return None
        return renaming_kernels({name: name for name in col_selector.names}, input_schema)

    # ----------------------------------------------------------------- schema
    def compute_input_schema(
        self, root_schema: Schema, parents_schema: Schema, deps_schema: Schema, selector: ColumnSelector | None
    ) -> Schema:
        """The columns the op receives: its parents' columns plus its dependencies' ones
        (``parents_schema + deps_schema``, as in merlin: a name in both is merged, the
        dependency's dtype and shape winning). ``root_schema`` is the data's schema.

        Examples
        --------
        >>> from tabflow import ColumnSelector, ops
        >>> from tabflow.schema import Schema
        >>> ops.Operator().compute_input_schema(Schema(["a", "y"]), Schema(["a"]), Schema(["y"]), ColumnSelector(["a"])).column_names
        ['a', 'y']
        """
        combined = parents_schema + deps_schema
        self._validate_matching_cols(combined, selector, "compute_input_schema")
        return combined

    def compute_selector(
        self,
        input_schema: Schema,
        selector: ColumnSelector | None,
        parents_selector: ColumnSelector | None = None,
        dependencies_selector: ColumnSelector | None = None,
    ) -> ColumnSelector:
        """The columns the op applies to. ``selector`` is what its parents give it (their
        columns, with the groups a selection or a ``+`` of groups carries; tags and ``"*"``
        resolved against ``input_schema``); ``parents_selector`` is the same, and
        ``dependencies_selector`` names the dependencies' columns, which the op reads but
        does not transform.

        Examples
        --------
        >>> from tabflow import ColumnSelector, ops
        >>> from tabflow.schema import Schema
        >>> ops.Operator().compute_selector(Schema(["a", "b"]), ColumnSelector("*")).names
        ['a', 'b']
        """
        selector = selector or ColumnSelector("*")
        self._validate_matching_cols(input_schema, selector, "compute_selector")
        return selector.resolve(input_schema)

    def output_column_names(self, col_selector: ColumnSelector) -> ColumnSelector:
        """Names of the output columns (default: the input names, or ``column_mapping``).

        An override may return a :class:`ColumnSelector` or a plain list of names.
        """
        if type(self).column_mapping is not Operator.column_mapping:
            return ColumnSelector(list(self.column_mapping(col_selector)))
        return ColumnSelector(col_selector.names)

    def column_mapping(self, col_selector: ColumnSelector) -> dict[str, list[str]]:
        """``{output column: [input columns it is computed from]}``.

        The default follows :meth:`output_column_names`: as many outputs as inputs are
        computed one from each, in order (a rename); otherwise an output that keeps an
        input's name comes from it and any other from all the inputs.

        Examples
        --------
        >>> from tabflow import ColumnSelector, ops
        >>> class Suffixed(ops.Operator):
        ...     def output_column_names(self, col_selector):
        ...         return [name + "_s" for name in col_selector.names]
        >>> Suffixed().column_mapping(ColumnSelector(["a", "b"]))
        {'a_s': ['a'], 'b_s': ['b']}
        """
        out_names = _names_of(self.output_column_names(col_selector))
        inputs = col_selector.names
        if len(out_names) == len(inputs):
            return {name: [source] for name, source in zip(out_names, inputs)}
        return {name: [name] if name in inputs else list(inputs) for name in out_names}

    @property
    def output_dtype(self) -> Any:
        """Dtype of every output column, or None to keep the input dtype.

        Any spelling NVTabular ops used is accepted (``"float32"``, ``np.float32``,
        ``np.dtype("int32")``, ``float``); the schema holds its canonical name, and the columns
        a user-defined op's transform returns are cast to it. A list column stays a list of
        that dtype.
        """
        return None

    @property
    def output_tags(self) -> list[Any]:
        return []

    @property
    def output_properties(self) -> dict[str, Any]:
        return {}

    @property
    def dynamic_dtypes(self) -> bool:
        """True when the output dtypes are only known from the data: tabflow then takes
        them from the op's output on the data while fitting, even where ``output_dtype`` names one."""
        return False

    @property
    def is_subgraph(self) -> bool:
        """Always False: a named subgraph is a node (:class:`tabflow.graph.Subgraph`)."""
        return False

    @property
    def supports(self) -> Supports:
        return Supports.CPU_DATAFRAME | Supports.GPU_DATAFRAME

    @property
    def supported_formats(self) -> DataFormats:
        """pandas and cuDF frames: the only data tabflow's graph hands an op."""
        return DataFormats.PANDAS_DATAFRAME | DataFormats.CUDF_DATAFRAME

    def compute_output_schema(
        self, input_schema: Schema, col_selector: ColumnSelector | None, prev_output_schema: Schema | None = None
    ) -> Schema:
        """Output schema of the op given its input schema (dependencies included): one
        :meth:`compute_column_schema` per entry of :meth:`column_mapping`.

        A pure function of its arguments: nothing is stored on the op, so one op object may
        be used in several nodes. With ``dynamic_dtypes``, the dtypes of
        ``prev_output_schema`` (an earlier resolution of the same node) are kept.

        Examples
        --------
        >>> from tabflow import ColumnSelector, ops
        >>> from tabflow.schema import ColumnSchema, Schema
        >>> ops.LogOp().compute_output_schema(Schema([ColumnSchema("x", dtype="int64")]), ColumnSelector(["x"])).dtypes
        {'x': 'float32'}
        """
        if not col_selector:
            col_selector = ColumnSelector(input_schema.column_names)
        if col_selector.tags or col_selector.all:
            col_selector = col_selector.resolve(input_schema)
        self._validate_matching_cols(input_schema, col_selector, "compute_output_schema")
        mapping = self.column_mapping(col_selector)
        schema = Schema(
            [self.compute_column_schema(name, input_schema.select_by_name(sources)) for name, sources in mapping.items()]
        )
        if self.dynamic_dtypes and prev_output_schema is not None:
            schema = Schema(
                [c.with_dtype(prev_output_schema[c.name].dtype) if c.name in prev_output_schema else c for c in schema]
            )
        return schema

    def compute_column_schema(self, col_name: str, input_schema: Schema) -> ColumnSchema:
        """Schema of one output column; ``input_schema`` holds the columns it is computed
        from (the fragment of the op's input schema that ``column_mapping`` names for it).

        Built as merlin builds it, by ``_compute_dtype``, ``_compute_tags``,
        ``_compute_properties`` and ``_compute_shape`` in turn, so an op may override any one.

        Examples
        --------
        >>> from tabflow import ops
        >>> from tabflow.schema import ColumnSchema, Schema, Tags
        >>> source = Schema([ColumnSchema("x", dtype="int64", tags=[Tags.CONTINUOUS], properties={"p": 1})])
        >>> c = ops.Operator().compute_column_schema("x_out", source)
        >>> c.name, c.dtype, [str(t) for t in c.tags], c.properties
        ('x_out', 'int64', ['continuous'], {'p': 1})
        """
        return self._compute_column_schema(
            col_name, input_schema, methods=[self._compute_dtype, self._compute_tags, self._compute_properties, self._compute_shape]
        )

    def _compute_column_schema(
        self, col_name: str, input_schema: Schema, methods: Sequence[Callable[[ColumnSchema, Schema], ColumnSchema]] | None = None
    ) -> ColumnSchema:
        column = ColumnSchema(col_name)
        for method in methods or []:
            column = method(column, input_schema)
        return column

    def _compute_dtype(self, col_schema: ColumnSchema, input_schema: Schema) -> ColumnSchema:
        """The first source column's element dtype (float64 without sources), or
        ``output_dtype``; whether the column is a list comes from :meth:`_compute_shape`."""
        sources = list(input_schema)
        dtype = sources[0].element_dtype if sources else "float64"
        if self.output_dtype is not None:
            dtype = self.output_dtype
        return col_schema.with_dtype(dtype)

    def _compute_tags(self, col_schema: ColumnSchema, input_schema: Schema) -> ColumnSchema:
        """The source columns' tags, then ``output_tags``."""
        column = col_schema
        # Source by source: a later source's tag displaces a contradictory earlier one
        # (CONTINUOUS after CATEGORICAL) instead of making one impossible tag set.
        for source in input_schema:
            column = column.with_tags(source.tags)
        return column.with_tags(self.output_tags) if self.output_tags else column

    def _compute_properties(self, col_schema: ColumnSchema, input_schema: Schema) -> ColumnSchema:
        """The properties of the single source column (none for a column computed from
        several), then ``output_properties``."""
        sources = list(input_schema)
        properties = {k: v for k, v in sources[0].properties.items() if k != "value_count"} if len(sources) == 1 else {}
        properties.update(self.output_properties)
        return col_schema.with_properties(properties) if properties else col_schema

    def _compute_shape(self, col_schema: ColumnSchema, input_schema: Schema) -> ColumnSchema:
        """The first source column's shape (a list stays a list of the same lengths); a
        declared list dtype on a scalar source is kept."""
        sources = list(input_schema)
        if not sources or (col_schema.is_list and not sources[0].is_list):
            return col_schema
        return col_schema.with_shape(sources[0].shape)

    def validate_schemas(
        self, parents_schema: Schema, deps_schema: Schema, input_schema: Schema, output_schema: Schema, strict_dtypes: bool = False
    ) -> None:
        """Raise when the resolved schemas do not suit the op (called once every schema of
        its node is known); the default accepts everything."""

    def _validate_matching_cols(self, schema: Schema, selector: ColumnSelector | None, method_name: str) -> None:
        """ValueError naming the columns ``selector`` names that ``schema`` lacks."""
        if not selector or selector.all:
            return
        missing = [name for name in selector.names if name not in schema]
        if missing:
            raise ValueError(
                f"Missing column(s) {missing} at the input to {type(self).__name__}.{method_name}: the op's input "
                f"columns are {schema.column_names}"
            )

    @property
    def runs_user_code(self) -> bool:
        """True for ops defined outside tabflow (and for LambdaOp, which calls a user
        function): their output dtypes may be learned from the data, and lists they return
        become list columns."""
        return not type(self).__module__.startswith("tabflow.")

    # ---------------------------------------------------------------- artifacts
    def save_artifacts(self, artifact_path: str | os.PathLike | None = None) -> None:
        """Write files the op needs besides its parameters and fitted attributes;
        :meth:`tabflow.Workflow.save` calls it with the directory being saved."""

    def load_artifacts(self, artifact_path: str | os.PathLike | None = None) -> None:
        """Read what :meth:`save_artifacts` wrote; :meth:`tabflow.Workflow.load` calls it
        with the loaded directory."""

    # -------------------------------------------------------------- fitted state
    def fitted_state(self) -> dict[str, Any]:
        """Attributes set by fitting (names ending in ``_``)."""
        return {k: v for k, v in vars(self).items() if _is_fitted_name(k)}


#: merlin's other name of :class:`Operator` (``merlin.dag.BaseOperator``).
BaseOperator = Operator


class StatOperator(Operator):
    """An op with statistics fitted as an explicit map / combine / finalize.

    Subclasses implement :meth:`fit_partition` (per partition, returns a small partial
    result), :meth:`combine_partials` (merges partials; must be associative, it runs as a
    tree) and :meth:`fit_finalize` (sets attributes ending in ``_``). An op whose merge gives
    the same result in any grouping and order (integer counts, not floating-point sums) sets
    :attr:`exact_combine`, and the workflow then folds its partials into a running total. NVTabular-style
    subclasses that override ``fit(col_selector, ddf)`` instead (returning dask objects) are
    fitted by :mod:`tabflow.compat.legacy_fit`.

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

    #: Whether :meth:`combine_partials` gives the same result in any grouping and order. Then
    #: the workflow merges each step's partials into one running total (the previous step's
    #: result is one of the partials) rather than as a tree, whose groups' results would all
    #: be held until the last merge: the fit's memory stays flat in the number of partitions.
    exact_combine: bool = False

    def fit_partition(self, col_selector: ColumnSelector, df: Frame) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement fit_partition or fit")

    def combine_partials(self, partials: list[Any]) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement combine_partials")

    def fit_finalize(self, partial: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement fit_finalize")

    def fitted_state(self) -> dict[str, Any]:
        """Attributes set by fitting: names ending in ``_``, plus those :meth:`mark_fitted` named."""
        state = super().fitted_state()
        for name in getattr(self, "_state_names", ()):
            if hasattr(self, name):
                state[name] = getattr(self, name)
        return state

    @property
    def fitted(self) -> bool:
        # NVTabular-style subclasses may keep state under names without "_": mark_fitted names them.
        return bool(self.fitted_state()) or getattr(self, "_fitted_by_workflow", False)

    def mark_fitted(self, state_names: Iterable[str] = ()) -> None:
        """Record that a fit (or a load) gave this op its statistics.

        ``state_names`` are the attributes without a trailing ``_`` that hold statistics of an
        NVTabular-style op (its ``fit_finalize`` may name them freely), so that
        :meth:`fitted_state` and saving keep them.

        Examples
        --------
        >>> from tabflow.graph.operator import StatOperator
        >>> class Legacy(StatOperator):
        ...     def fit(self, col_selector, ddf):
        ...         return None
        >>> op = Legacy()
        >>> op.means = {"a": 1.0}
        >>> op.mark_fitted(["means"])
        >>> op.fitted, op.fitted_state()
        (True, {'means': {'a': 1.0}})
        """
        self._state_names = sorted(state_names)
        self._fitted_by_workflow = True

    def clear(self) -> None:
        """Forget fitted statistics."""
        for name in list(self.fitted_state()):
            delattr(self, name)
        self._state_names = []
        self._fitted_by_workflow = False
        self._fitted_state_changed()

    def check_is_fitted(self) -> None:
        if not self.fitted:
            raise NotFittedError(
                f"{type(self).__name__} has no statistics yet: call workflow.fit(dataset) "
                "(or fit_transform) before transform"
            )

    # ----------------------------------------------------------------- updates
    #: Fitted attributes an update needs besides what :meth:`fitted_partial` reads from the
    #: statistics, each with why a fitted op may lack it (``{"counts_": "it was fitted by
    #: ..."}``): :meth:`check_updatable` refuses an op without them, naming the reason.
    update_needs: dict[str, str] = {}

    def fitted_partial(self) -> Any:
        """The fitted statistics as one more partial for :meth:`combine_partials`.

        :meth:`tabflow.Workflow.partial_fit` computes the partial of the new data as a fit
        does, merges it after this one (``combine_partials([fitted, new])``, the data seen
        first coming first) and finalizes the result with :meth:`fit_finalize`: a fit and an
        update run one code path. An op whose statistics
        cannot be merged this way leaves this method undefined; :meth:`check_updatable`
        then says so.

        Examples
        --------
        >>> import pandas as pd
        >>> import tabflow as nvt
        >>> from tabflow import ops
        >>> op = ops.NormalizeMinMax()
        >>> _ = nvt.Workflow(["x"] >> op).fit(pd.DataFrame({"x": [1.0, 4.0]}))
        >>> op.fitted_partial()
        {'x': (1.0, 4.0)}
        """
        self.check_updatable()
        raise NotUpdatableError(f"{type(self).__name__} cannot be updated with new data")  # pragma: no cover

    def check_updatable(self) -> None:
        """Raise :class:`NotUpdatableError` naming the op and why, unless its fitted state can
        be continued with new data. :meth:`tabflow.Workflow.partial_fit` asks every op before
        it reads any data, so that a refusal leaves the workflow as it was.

        Examples
        --------
        >>> from tabflow import ops
        >>> class Mean(ops.StatOperator):
        ...     pass
        >>> try:
        ...     Mean().check_updatable()
        ... except ops.NotUpdatableError as err:
        ...     print(str(err)[:47])
        Mean cannot be updated with new data: it has no
        """
        if type(self).fitted_partial is StatOperator.fitted_partial:
            raise NotUpdatableError(
                f"{type(self).__name__} cannot be updated with new data: it has no fitted_partial() giving its "
                "fitted statistics as a partial to merge with the new data's; refit the workflow on all the data, "
                "or implement fitted_partial"
            )
        if not self.fitted:
            raise NotFittedError(f"{type(self).__name__} has no statistics to update: fit the workflow first")
        for name, why in self.update_needs.items():
            if not hasattr(self, name):
                raise NotUpdatableError(f"{type(self).__name__} cannot be updated with new data: {why}")

    def set_storage_path(self, new_path: str | os.PathLike, copy: bool = False) -> None:
        """Move files the op keeps outside the workflow to ``new_path`` (writing them there
        when ``copy``). :meth:`tabflow.Workflow.save` calls it with ``copy=True`` to bundle
        them with the saved workflow, :meth:`tabflow.Workflow.load` with ``copy=False`` to
        point the op at the loaded directory. tabflow's statistics are saved with the
        workflow itself, so only ops that also write files (``Categorify(out_path=...)``)
        have anything to move."""


# The base classes are usable as ops themselves (``Operator()`` passes columns through).
OPERATOR_REGISTRY[Operator.registry_name()] = Operator
OPERATOR_REGISTRY[StatOperator.registry_name()] = StatOperator


def _listed(names: Any) -> Any:
    """A pandas Index or NumPy array of names as a list (as ``>>`` takes them)."""
    return names.tolist() if hasattr(names, "tolist") and not isinstance(names, str) else names


def _names_of(columns: Any) -> list[str]:
    """Column names from a selector, a list of names or a single name."""
    if isinstance(columns, ColumnSelector):
        return columns.names
    if isinstance(columns, str):
        return [columns]
    return [str(name) for name in columns]
