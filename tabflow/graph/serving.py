"""The serving plan: a fitted workflow compiled once for requests of a few rows.

Transforming a one-row frame through the graph costs tens of milliseconds, nearly all of it
pandas overhead per column and per op. :class:`ServingPlan` walks the graph once and keeps
only the work: structural nodes (selections, ``+``, ``-``, subsets) become a table saying
where each column lives, and every op node becomes a call of the op's NumPy
:class:`~tabflow.graph.kernels.Kernel` objects on 2-D blocks of columns
(``Operator.array_kernels``). An op without kernels runs its node's step on a small frame of
its input columns: what the batch path runs, so correct, just slower.

A request is first conformed to the fitted dtypes exactly as the batch path conforms a frame
(:func:`tabflow.graph.executor.conform`). When a value does not fit its fitted dtype (10.5 in
an integer column), or an op without kernels changes the rows or returns other dtypes than
its schema says, the request goes through the batch path instead: the plan's result is
always the batch path's result.

Examples
--------
>>> import pandas as pd
>>> import tabflow as nvt
>>> from tabflow import ops
>>> from tabflow.graph.serving import ServingPlan
>>> df = pd.DataFrame({"c": ["a", "b", "a"], "x": [1.0, None, 3.0]})
>>> wf = nvt.Workflow((["c"] >> ops.Categorify()) + (["x"] >> ops.FillMissing(0.0)))
>>> plan = ServingPlan(wf.fit(df).output_node, wf.input_schema)
>>> {name: values.tolist() for name, values in plan.transform({"c": "b", "x": None}).items()}
{'c': [4], 'x': [0.0]}
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable, Sequence, cast

import numpy as np

from tabflow.backends import kernels as host_kernels
from tabflow.backends.kernels import is_request, request_frame
from tabflow.exceptions import MissingColumnError
from tabflow.graph.executor import GraphRunner
from tabflow.graph.kernels import Block, Kernel, supported
from tabflow.graph.steps import Apply, Concat, Drop, Nested, Select, Subset
from tabflow.schema import Schema

__all__ = ["ServingPlan", "missing_columns_error", "is_request", "request_frame"]

# Frames of at most this many rows are read cell by cell: a column costs pandas ~25 us to
# hand out and conform, a cell ~1 us from the blocks, ~3.5 us by ``iat`` (a 39-column frame:
# ~1.1 ms by columns, ~0.04 ms a row by cells).
_CELL_ROWS = 8
# Sets of column labels a plan remembers layouts for; a server sees one or a few.
_LAYOUTS = 16
# Layouts remembered per set of labels, one per set of dtypes: frames built from JSON
# bodies (``pd.DataFrame([row])``) hold a number column as int64, float64 or object
# depending on which values are null, so one server sees a few of them.
_DTYPE_LAYOUTS = 64
# The types of request values that are one value each (anything else is looked at closer).
_SCALARS = frozenset({str, int, float, bool, type(None)})


class _Unsupported(Exception):
    """The graph has a step the plan cannot run (every request takes the batch path)."""


class _BatchPath(Exception):
    """This request must take the batch path (a value that does not conform, rows changed)."""


@dataclass(frozen=True)
class _Ref:
    """Where a column lives while a request runs: a register and, for a block, its row."""

    register: int
    position: int
    dtype: str


def missing_columns_error(missing: Sequence[str], available: Sequence[Any]) -> MissingColumnError:
    """The error for a request or dataset without columns the workflow reads."""
    return MissingColumnError(
        f"the data lacks column(s) {list(missing)} that the workflow reads; it has {sorted(map(str, available))}. "
        f"Add them (None where a value is unknown), or serve without them: workflow.remove_inputs({list(missing)!r}) "
        "drops every output computed from them"
    )


class ServingPlan:
    """A fitted graph compiled for small in-memory requests.

    Built once per fitted workflow (``Workflow.compile_serving``) and immutable afterwards
    (it only remembers where the columns of the frames it served were, a memo any thread
    may add to), so one plan serves any number of threads at once.

    Parameters
    ----------
    output_node : Node
        The graph's output node, with its schemas resolved (fitted or loaded).
    input_schema : Schema
        The columns the graph reads, with their fitted dtypes.
    output_schema : Schema, optional
        The workflow's output schema (default: the output node's).

    Attributes
    ----------
    fallbacks : list of str
        Names of the ops run by their ``transform`` on a small frame (no kernels).
    unsupported : str or None
        Why every request takes the batch path (a subgraph loop), else None.
    list_outputs : bool
        Whether an output column is a list column (a frame answer then holds Arrow lists,
        which ``Workflow.transform`` hands to users as NumPy arrays).
    """

    def __init__(self, output_node: Any, input_schema: Schema, output_schema: Schema | None = None) -> None:
        self.input_schema = input_schema
        self.output_schema = output_node.output_schema if output_schema is None else output_schema
        self._runner = GraphRunner([output_node], input_schema)
        self._names = frozenset(input_schema.column_names)
        self._widths: list[int | None] = []
        self._steps: list[Callable[[list, _Request], None]] = []
        self.fallbacks: list[str] = []
        self.unsupported: str | None = None
        self.list_outputs = any(column.is_list for column in self.output_schema)
        self._ops: dict[int, Any] = {}
        try:
            refs = self._compile_inputs()
            produced = self._compile_node(output_node, refs, {})
            self._outputs = self._compile_outputs([(name, produced[name]) for name in self.output_schema.column_names])
            self._frame_parts = self._compile_frame_parts(self._outputs)
            self._output_labels = host_kernels.column_labels(self.output_schema.column_names)
        except _Unsupported as reason:
            self.unsupported = str(reason)
        # Taken once compiled: compiling reads the state, and may put it in another form.
        self._state_versions = [(op.state_version, op.state_version()) for op in self._ops.values()]
        # Facts about the request frames seen, by column labels: a memo, not state (any
        # thread may add one; each is built whole before it is stored).
        self._layouts: dict[tuple, _LabelLayouts] = {}

    def is_current(self) -> bool:
        """Whether every op still holds the fitted state the plan was compiled from (an op's
        state set by hand since, ``op.vocabs_["c"] = frame``, makes the plan stale).

        Examples
        --------
        >>> import pandas as pd
        >>> import tabflow as nvt
        >>> from tabflow import ops
        >>> normalize = ops.Normalize()
        >>> plan = nvt.Workflow(["x"] >> normalize).fit(pd.DataFrame({"x": [1.0, 3.0]})).compile_serving()
        >>> plan.is_current()
        True
        >>> normalize.means_ = {"x": 0.0}
        >>> plan.is_current()
        False
        """
        for version_of, version in self._state_versions:  # a loop: asked once per request
            if version_of() != version:
                return False
        return True

    # ------------------------------------------------------------------ compiling
    def _register(self, width: int | None) -> int:
        self._widths.append(width)
        return len(self._widths) - 1

    def _compile_inputs(self) -> dict[str, _Ref]:
        groups: dict[str, list[str]] = {}
        opaque = []
        for column in self.input_schema:
            dtype = str(column.dtype)
            if supported(dtype):
                groups.setdefault(dtype, []).append(column.name)
            else:
                opaque.append((column.name, dtype))
        refs = {}
        # (dtype, names, register) per block of input columns, then one register per column
        # without an array layout (held as a pandas array).
        self._input_blocks = []
        for dtype, names in groups.items():
            register = self._register(len(names))
            self._input_blocks.append((dtype, tuple(names), register))
            refs.update({name: _Ref(register, j, dtype) for j, name in enumerate(names)})
        self._input_opaque = []
        for name, dtype in opaque:
            register = self._register(None)
            self._input_opaque.append((name, dtype, register))
            refs[name] = _Ref(register, 0, dtype)
        self._block_names = [name for _, names, _ in self._input_blocks for name in names]
        return refs

    def _compile_node(self, node: Any, inputs: dict[str, _Ref], done: dict[int, dict[str, _Ref]]) -> dict[str, _Ref]:
        if node.id in done:
            return done[node.id]
        step = node.step
        parents = [self._compile_node(p, inputs, done) for p in node.parents]
        dependencies = [self._compile_node(d, inputs, done) for d in node.dependencies] if step.reads_dependencies else []
        names = node.output_schema.column_names
        if isinstance(step, Select):
            produced = {name: inputs[name] for name in names}
        elif isinstance(step, Apply):
            # A column an op adds to its input schema (compute_input_schema) comes from the data.
            produced = self._compile_op(node, _last_of([inputs, *parents, *dependencies], node.input_schema.column_names)) if names else {}
        elif isinstance(step, Concat):
            produced = _last_of([*parents, *dependencies], names)
        elif isinstance(step, (Subset, Drop)) or (isinstance(step, Nested) and step.loop_until is None):
            # A subgraph's dependency is the node that feeds it, not a part of its output.
            produced = _last_of(parents, names)
        else:
            raise _Unsupported(f"the graph has a {step.label} step, which the serving plan does not run")
        done[node.id] = produced
        return produced

    def _compile_op(self, node: Any, inputs: dict[str, _Ref]) -> dict[str, _Ref]:
        self._ops[id(node.op)] = node.op
        kernels = _kernels_of(node)
        if kernels is not None:
            produced = self._compile_kernels(kernels, inputs, node.input_schema)
            declared = node.output_schema
            if produced is not None and sorted(produced) == sorted(declared.column_names) and all(
                produced[name].dtype == str(declared[name].dtype) for name in produced
            ):
                return produced
        self.fallbacks.append(type(node.op).__name__)
        outputs = []
        produced = {}
        for column in node.output_schema:
            dtype = str(column.dtype)
            register = self._register(1 if supported(dtype) else None)
            outputs.append((column.name, dtype, register))
            produced[column.name] = _Ref(register, 0, dtype)
        self._steps.append(_Fallback(node, [(name, inputs[name]) for name in node.input_schema.column_names], outputs))
        return produced

    def _compile_kernels(self, kernels: list[Kernel], inputs: dict[str, _Ref], schema: Schema) -> dict[str, _Ref] | None:
        produced: dict[str, _Ref] = {}
        for kernel in kernels:
            groups = [[inputs[name] for name in group] for group in kernel.inputs]
            # Each group is of the one dtype the kernel was made for.
            if any(ref.dtype != str(schema[name].dtype) for group, refs in zip(kernel.inputs, groups) for name, ref in zip(group, refs)):
                return None
            if any(len({ref.dtype for ref in refs}) != 1 for refs in groups):
                return None
            if kernel.fn is None:
                (refs,) = groups
                produced.update({name: _Ref(ref.register, ref.position, kernel.dtype) for name, ref in zip(kernel.outputs, refs)})
                continue
            register = self._register(len(kernel.outputs))
            self._steps.append(_Call(kernel.fn, [self._gather(refs) for refs in groups], register))
            produced.update({name: _Ref(register, j, kernel.dtype) for j, name in enumerate(kernel.outputs)})
        return produced

    def _gather(self, refs: list[_Ref]) -> Callable[[list], Block]:
        """How a kernel's input group is read from the registers: a whole block as it is,
        some rows of one block, or rows of several blocks stacked."""
        registers = {ref.register for ref in refs}
        if len(registers) == 1:
            register = refs[0].register
            positions = [ref.position for ref in refs]
            width = self._widths[register]
            if width is not None and positions == list(range(width)):
                return operator.itemgetter(register)
            return _Take(register, np.array(positions, dtype=np.intp))
        return _Stack([(ref.register, ref.position) for ref in refs])

    def _compile_outputs(self, outputs: list[tuple[str, _Ref]]) -> list[tuple]:
        """Runs of outputs in output order: ``("block", register, names, positions)`` for
        NumPy columns of one block, ``("column", name, ref)`` for the others."""
        runs: list[tuple] = []
        for name, ref in outputs:
            numpy = self._widths[ref.register] is not None and not host_kernels.has_mask(ref.dtype) and host_kernels.value_dtype(ref.dtype).kind != "O"
            if not numpy:
                runs.append(("column", name, ref))
            elif runs and runs[-1][0] == "block" and runs[-1][1] == ref.register:
                runs[-1][2].append(name)
                runs[-1][3].append(ref.position)
            else:
                runs.append(("block", ref.register, [name], [ref.position]))
        # A run that is a whole block in order is handed out row by row (no indexing).
        return [
            ("rows", run[1], run[2]) if run[0] == "block" and run[3] == list(range(self._widths[run[1]])) else run
            for run in runs
        ]

    def _compile_frame_parts(self, runs: list[tuple]) -> list[tuple]:
        """The answer frame's parts, in output order: ``("rows", register)`` and ``("block",
        register, positions)`` for 2-D blocks of NumPy columns, ``("columns", [(name, ref),
        ...])`` for a run of other columns."""
        parts: list[tuple] = []
        for run in runs:
            if run[0] == "rows":
                parts.append(("rows", run[1]))
            elif run[0] == "block":
                parts.append(("block", run[1], np.array(run[3], dtype=np.intp)))
            elif parts and parts[-1][0] == "columns":
                parts[-1][1].append((run[1], run[2]))
            else:
                parts.append(("columns", [(run[1], run[2])]))
        return parts

    # ------------------------------------------------------------------ serving
    def transform(self, request: Any) -> Any:
        """Transform a request: a pandas DataFrame (returns one, as ``Workflow.transform``
        does) or a dict of columns (returns a dict of arrays).

        Parameters
        ----------
        request : pandas.DataFrame or dict
            A dict maps each input column to one value or to a 1-D sequence of values (list,
            tuple, NumPy array, pandas Series); it is the frame ``pd.DataFrame(request)``
            (one row when every value is a scalar), conformed to the fitted dtypes as frames
            are. Columns the workflow does not read are ignored.

        Returns
        -------
        pandas.DataFrame or dict
            For a frame, the frame the batch path returns (same dtypes, column order and
            index). For a dict, ``{output column: 1-D array}``: a NumPy array of the output
            dtype for NumPy dtypes, the pandas array the frame would hold (``Int64``,
            ``string``, lists) otherwise.
        """
        if isinstance(request, Mapping):
            return self._serve_dict(request)
        if not host_kernels.is_frame(request):
            raise TypeError(f"a serving request is a pandas DataFrame or a dict of columns, got {type(request).__name__}")
        return self._serve_frame(request)

    def _serve_frame(self, frame: Any) -> Any:
        layout = self._layout(frame)
        if layout.batch_path:
            return self._runner.transform(frame)
        registers = [None] * len(self._widths)
        request = _Request(len(frame), frame.index)
        try:
            self._read_frame(frame, layout, request.rows, registers)
            self._run(registers, request)
        except _BatchPath:
            return self._runner.transform(frame)
        return self._frame(registers, request.index)

    def _layout(self, frame: Any) -> "_FrameLayout":
        """What the plan needs to know of a frame's columns, built once per set of column
        labels and of dtype keys (see _dtype_key)."""
        columns, dtypes = host_kernels.frame_layout(frame)
        key = tuple(columns)
        known = self._layouts.get(key)
        if known is None:
            known = _LabelLayouts(self, columns)
            if len(self._layouts) >= _LAYOUTS:
                self._layouts.clear()
            self._layouts[key] = known
        return known.find(dtypes)

    def _serve_dict(self, request: Mapping[str, Any]) -> dict[str, Any]:
        if not self._names <= request.keys():
            raise missing_columns_error([name for name in self.input_schema.column_names if name not in request], list(request))
        registers = [None] * len(self._widths)
        rows = None if self.unsupported is not None else self._read_dict(request, registers)
        if rows is not None:
            try:
                self._run(registers, _Request(rows, None))
                return self._columns(registers)
            except _BatchPath:
                pass
        out = self._serve_frame(request_frame(request, self.input_schema.column_names))
        return {name: host_kernels.frame_column(out[name]) for name in out.columns}

    def _run(self, registers: list, request: "_Request") -> None:
        # The batch path computes with pandas, which silences NumPy's floating-point warnings
        # (NaN and infinities are documented results); ops run by their transform get the
        # caller's settings back.
        if self.fallbacks:
            request.errors = dict(np.geterr())
        with np.errstate(all="ignore"):
            for step in self._steps:
                step(registers, request)

    def _frame(self, registers: list, index: Any) -> Any:
        parts: list[Any] = []
        for part in self._frame_parts:
            kind = part[0]
            if kind == "rows":
                # A copy: the frame takes its parts over, and a register may be another
                # output's too (a renamed column) or a kernel's input handed on unchanged.
                parts.append(registers[part[1]].values.copy())
            elif kind == "block":
                parts.append(registers[part[1]].values[part[2]])
            else:
                parts.append({name: _column(registers, ref) for name, ref in part[1]})
        return host_kernels.frame_of_parts(parts, self._output_labels, index)

    def _columns(self, registers: list) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for run in self._outputs:
            kind = run[0]
            if kind == "rows":
                out.update(zip(run[2], registers[run[1]].values))
            elif kind == "block":
                values = registers[run[1]].values
                out.update((name, values[position]) for name, position in zip(run[2], run[3]))
            else:
                out[run[1]] = _column(registers, run[2])
        return out

    # ------------------------------------------------------------------ reading
    def _read_frame(self, frame: Any, layout: "_FrameLayout", rows: int, registers: list) -> None:
        table = None
        if rows <= _CELL_ROWS and layout.cell_positions:
            table = host_kernels.frame_cells(frame, layout.cell_positions)
        for (dtype, names, register), groups in zip(self._input_blocks, layout.groups):
            if table is None:
                registers[register] = _block_of([host_kernels.conform(frame[name], dtype) for name in names], dtype)
            else:
                registers[register] = _cells_block(frame, table, groups, names, rows, dtype)
        for name, dtype, register in self._input_opaque:
            array = host_kernels.conform_pandas(frame[name], dtype)
            if array is None:
                raise _BatchPath
            registers[register] = array

    def _read_dict(self, request: Mapping[str, Any], registers: list) -> int | None:
        """Fill the input registers from a dict; the number of rows, or None when the dict
        must go through ``pd.DataFrame`` (values that are not plain ones of the fitted dtypes)."""
        if self._input_opaque:
            return None
        values = [request[name] for name in self._block_names]
        scalars = _SCALARS.issuperset(map(type, values)) or not any(
            isinstance(value, host_kernels.SEQUENCES) for value in values
        )
        if scalars:
            rows = 1
        elif all(isinstance(value, host_kernels.SEQUENCES) and np.ndim(value) == 1 for value in values):
            lengths = {len(value) for value in values}
            if len(lengths) != 1:
                return None
            (rows,) = lengths
        else:
            return None  # scalars repeated along sequences, nested lists: pandas decides
        start = 0
        for dtype, names, register in self._input_blocks:
            group = values[start : start + len(names)]
            start += len(names)
            if scalars:
                converted = host_kernels.from_python(group, (len(names), 1), dtype)
                if converted is None:
                    return None
                registers[register] = Block(*converted)
                continue
            columns = [_sequence_column(value, dtype, rows) for value in group]
            if any(column is None for column in columns):
                return None
            registers[register] = _block_of(columns, dtype)
        return rows

    def __repr__(self) -> str:
        state = f"batch path only: {self.unsupported}" if self.unsupported else f"{len(self._steps)} steps"
        return f"ServingPlan({len(self.input_schema)} inputs -> {len(self.output_schema)} outputs, {state})"


class _Request:
    """What the steps of one request share: its rows, its index (None for a dict until a
    step needs a frame) and the caller's NumPy error settings."""

    __slots__ = ("rows", "index", "errors")

    def __init__(self, rows: int, index: Any) -> None:
        self.rows = rows
        self.index = index
        self.errors: dict[str, Any] = {}

    def frame_index(self) -> Any:
        if self.index is None:
            self.index = host_kernels.range_index(self.rows)
        return self.index


class _LabelLayouts:
    """Where the plan's input columns are in frames of one set of column labels, and the
    layouts of such frames: the last one served (checked first: a server's frames are mostly
    alike) and one per set of dtype keys.

    Attributes
    ----------
    batch_path : bool
        True when every such frame takes the batch path (the plan cannot run the graph, or
        column labels repeat).
    block_positions : list of list of int
        Per input block of the plan, the frame positions of its columns.
    cell_positions : list of int
        The positions of the columns read cell by cell.
    """

    __slots__ = ("batch_path", "block_positions", "cell_positions", "last", "by_keys")

    def __init__(self, plan: ServingPlan, columns: list[Any]) -> None:
        where: dict[Any, int] = {}
        for position, name in enumerate(columns):
            where.setdefault(name, position)
        missing = [name for name in plan.input_schema.column_names if name not in where]
        if missing:
            raise missing_columns_error(missing, columns)
        self.batch_path = plan.unsupported is not None or len(where) != len(columns)
        self.block_positions = [] if self.batch_path else [[where[name] for name in names] for _, names, _ in plan._input_blocks]
        self.cell_positions = [position for positions in self.block_positions for position in positions]
        self.last: _FrameLayout | None = None
        self.by_keys: dict[tuple, _FrameLayout] = {}

    def find(self, dtypes: list[Any]) -> "_FrameLayout":
        last = self.last
        if last is not None and last.dtypes == dtypes:
            return last
        keys = tuple(map(_dtype_key, dtypes))
        layout = self.by_keys.get(keys)
        if layout is None:
            if len(self.by_keys) >= _DTYPE_LAYOUTS:
                self.by_keys.clear()
            layout = self.by_keys[keys] = _FrameLayout(self, dtypes, keys)
        self.last = layout
        return layout


class _FrameLayout:
    """Facts about request frames of one set of column labels and dtypes: the plan's input
    columns grouped by dtype, and how their cells are read.

    Attributes
    ----------
    dtypes : list
        The dtypes of the frame it was built for, in column order.
    batch_path : bool
        As :class:`_LabelLayouts`'.
    groups : list
        Per input block of the plan, ``[(members, positions, source dtype), ...]``: its
        columns of one source dtype, as rows of the block and column positions in the frame.
    cell_positions : list of int
        As :class:`_LabelLayouts`'.
    """

    __slots__ = ("dtypes", "batch_path", "groups", "cell_positions")

    def __init__(self, labels: _LabelLayouts, dtypes: list[Any], keys: tuple) -> None:
        self.dtypes = dtypes
        self.batch_path = labels.batch_path
        self.cell_positions = labels.cell_positions
        self.groups: list[list[tuple[list[int], list[int], Any]]] = []
        for block_positions in labels.block_positions:
            # Grouped by dtype key (see _dtype_key: pandas dtypes of one name are conformed alike).
            by_source: dict[Any, tuple[list[int], list[int], Any]] = {}
            for member, position in enumerate(block_positions):
                members, positions, _ = by_source.setdefault(keys[position], ([], [], dtypes[position]))
                members.append(member)
                positions.append(position)
            self.groups.append(list(by_source.values()))


def _dtype_key(dtype: Any) -> Any:
    """What tells request columns' dtypes apart for reading: a NumPy dtype itself (hashed in
    C; its ``name`` costs ~2 us), a pandas dtype by name (``string`` of either storage, one
    ``category`` for any categories: each is conformed alike, a column at a time where its
    cells cannot tell)."""
    return dtype if isinstance(dtype, np.dtype) else dtype.name


class _Call:
    """A kernel call: gather its input blocks, store its output block."""

    __slots__ = ("fn", "gathers", "register")

    def __init__(self, fn: Callable[..., Block], gathers: list[Callable[[list], Block]], register: int) -> None:
        self.fn = fn
        self.gathers = gathers
        self.register = register

    def __call__(self, registers: list, request: _Request) -> None:
        if len(self.gathers) == 1:
            registers[self.register] = self.fn(self.gathers[0](registers))
        else:
            registers[self.register] = self.fn(*[gather(registers) for gather in self.gathers])


class _Fallback:
    """An op without kernels: its node's step run on a small frame of its input columns."""

    def __init__(self, node: Any, inputs: list[tuple[str, _Ref]], outputs: list[tuple[str, str, int]]) -> None:
        self.node = node
        self.inputs = inputs
        self.outputs = outputs

    def __call__(self, registers: list, request: _Request) -> None:
        index = request.frame_index()
        # Copies: an op may write into its input frame, and the blocks feed other steps too.
        frame = host_kernels.frame({name: _column(registers, ref).copy() for name, ref in self.inputs}, index)
        with np.errstate(**request.errors):
            out = self.node.step.run(self.node, [frame], [], frame)
        if len(out) != request.rows or not out.index.equals(index):
            raise _BatchPath  # rows filtered or reordered: only the batch path pairs them up
        for name, dtype, register in self.outputs:
            series = out[name]
            if host_kernels.canonical_dtype(series.dtype) != dtype:
                raise _BatchPath  # a dtype its schema does not declare: later kernels expect that one
            if supported(dtype):
                values, nulls = host_kernels.from_pandas(series, dtype)
                registers[register] = Block(values[None], None if nulls is None else nulls[None])
            else:
                registers[register] = series.array


class _Take:
    __slots__ = ("register", "positions")

    def __init__(self, register: int, positions: np.ndarray) -> None:
        self.register = register
        self.positions = positions

    def __call__(self, registers: list) -> Block:
        block = registers[self.register]
        return Block(block.values[self.positions], None if block.nulls is None else block.nulls[self.positions])


class _Stack:
    __slots__ = ("pairs",)

    def __init__(self, pairs: list[tuple[int, int]]) -> None:
        self.pairs = pairs

    def __call__(self, registers: list) -> Block:
        blocks = [(registers[register], position) for register, position in self.pairs]
        values = np.stack([block.values[position] for block, position in blocks])
        if blocks[0][0].nulls is None:
            return Block(values)
        return Block(values, np.stack([block.nulls[position] for block, position in blocks]))


# --------------------------------------------------------------------------- helpers
def _kernels_of(node: Any) -> list[Kernel] | None:
    """The op's kernels for this node, or None when its transform must run.

    Only tabflow's own ops are trusted with kernels, and only kernels written alongside the
    transform in force: a subclass that overrides ``transform`` inherits none. An op whose
    ``array_kernels`` fails is run by its transform, which reports its own errors.
    """
    op = node.op
    if op.runs_user_code:
        return None
    kernel_class = _defining_class(type(op), "array_kernels")
    if not issubclass(kernel_class, _defining_class(type(op), "transform")):
        return None
    try:
        return op.array_kernels(node.input_selector, node.input_schema)
    except Exception:  # noqa: BLE001 - e.g. untrusted saved code, which transform reports
        return None


def _defining_class(cls: type, name: str) -> type:
    return next(klass for klass in cls.__mro__ if name in vars(klass))


def _last_of(sources: list[dict[str, _Ref]], names: Sequence[str]) -> dict[str, _Ref]:
    """Each column from the last source that has it (the batch path's ``concat_unique``)."""
    return {name: next(source[name] for source in reversed(sources) if name in source) for name in names}


def _cells_block(
    frame: Any, table: list[Any], groups: list[tuple[list[int], list[int], Any]], names: Sequence[str], rows: int, dtype: str
) -> Block:
    """An input block from cells read by :func:`~tabflow.backends._host_arrays.frame_cells`;
    a group of columns whose cells cannot tell (see ``from_cells``) is read as columns."""
    parts = []
    for members, positions, source in groups:
        if rows == 1:
            row = table[0]
            cells = [row[position] for position in positions]
        else:
            cells = [table[row][position] for position in positions for row in range(rows)]
        converted = host_kernels.from_cells(cells, (len(positions), rows), source, dtype)
        if converted is None:
            block = _block_of([host_kernels.conform(frame[names[member]], dtype) for member in members], dtype)
            converted = (block.values, block.nulls)
        parts.append((members, converted))
    if len(parts) == 1:
        return Block(*parts[0][1])
    width = sum(len(members) for members, _ in parts)
    values = np.empty((width, rows), dtype=host_kernels.value_dtype(dtype))
    nulls = np.zeros(values.shape, dtype=bool) if host_kernels.has_mask(dtype) else None
    for members, (part_values, part_nulls) in parts:
        values[members] = part_values
        if nulls is not None:
            nulls[members] = part_nulls
    return Block(values, nulls)


def _block_of(columns: list[tuple[np.ndarray, np.ndarray | None] | None], dtype: str) -> Block:
    if any(column is None for column in columns):
        raise _BatchPath  # a value that its fitted dtype cannot hold exactly
    present = cast("list[tuple[np.ndarray, np.ndarray]]", columns)  # None ruled out above; masked dtypes have null masks
    values = np.stack([column[0] for column in present])
    if not host_kernels.has_mask(dtype):
        return Block(values)
    return Block(values, np.stack([column[1] for column in present]))


def _sequence_column(value: Any, dtype: str, rows: int) -> tuple[np.ndarray, np.ndarray | None] | None:
    """One dict request column given as a sequence, in the layout of ``dtype`` (None: let
    pandas build the frame)."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "iufb":
            return host_kernels.conform_array(value, dtype)
        return host_kernels.from_python(value.tolist(), (rows,), dtype)
    if isinstance(value, (list, tuple)):
        return host_kernels.from_python(value, (rows,), dtype)
    return None  # a pandas Series or array: pandas builds the frame


def _column(registers: list, ref: _Ref) -> Any:
    """One column: a NumPy array (NumPy dtypes), else the pandas array a frame holds."""
    held = registers[ref.register]
    if not isinstance(held, Block):
        return held
    values = held.values[ref.position]
    if held.nulls is None and values.dtype.kind != "O":
        return values
    return host_kernels.to_pandas(values, None if held.nulls is None else held.nulls[ref.position], ref.dtype)
