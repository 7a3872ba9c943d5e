"""What a node does: select input columns, apply an op, concatenate, or drop columns.

Each step answers two questions: which columns (and dtypes, tags, properties) come out for
given upstream schemas (:meth:`Step.resolve`, a pure function: nothing is stored on the step
or its op), and what frame comes out for given upstream frames (:meth:`Step.run`).

Examples
--------
>>> from tabflow import Node
>>> from tabflow.schema import Schema
>>> node = Node(["b"])
>>> node.step.resolve(node, {}, Schema(["a", "b"])).output_schema.column_names
['b']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Mapping, Sequence

from tabflow.backends import backend_for
from tabflow.exceptions import MissingColumnError
from tabflow.graph.columns import (
    cast_to_schema,
    combine_selectors,
    concat_unique,
    declares_dtypes,
    input_frame,
    merge_schemas,
    observes_dtypes,
    planned_inputs,
)
from tabflow.graph.executor import conform, evaluate
from tabflow.graph.selector import ColumnSelector
from tabflow.graph.structural import ConcatColumns, SelectionOp, StructuralOp, SubsetColumns, SubtractionOp
from tabflow.schema import Schema
from tabflow.schema.dtypes import UNKNOWN, is_unknown

__all__ = ["NodeSchema", "Step", "Select", "Apply", "Concat", "Group", "Subset", "Drop", "Nested"]


@dataclass(frozen=True)
class NodeSchema:
    """The resolved columns of one node."""

    input_selector: ColumnSelector
    input_schema: Schema
    output_schema: Schema
    output_selector: ColumnSelector | None = None

    @property
    def columns(self) -> ColumnSelector:
        """The output columns as the next op sees them: with the column groups a selection
        or a ``+`` of groups carries, else the plain names."""
        return self.output_selector if self.output_selector is not None else ColumnSelector(self.output_schema.column_names)


class Step:
    """Base of the four steps. ``kind`` names the step in saved workflows and pictures."""

    kind: ClassVar[str] = ""
    #: Whether :meth:`run` needs its dependencies' frames (a drop only needs their names).
    reads_dependencies: ClassVar[bool] = True
    op: Any = None
    selector: ColumnSelector | None = None
    dropped: ColumnSelector | None = None

    @property
    def row_wise(self) -> bool:
        """Whether the step's output rows come each from the same input row alone
        (:attr:`Operator.row_wise <tabflow.ops.Operator.row_wise>` for an op): selecting and
        joining columns do."""
        return True

    def resolve(self, node: Any, schemas: Mapping[int, NodeSchema], source: Schema) -> NodeSchema:
        """The node's schema from the schemas of the nodes upstream of it (``schemas``, by
        node id) and the input data's schema."""
        raise NotImplementedError

    def run(self, node: Any, parents: Sequence[Any], dependencies: Sequence[Any], source: Any) -> Any:
        """The node's output frame from its parents' and dependencies' frames (and the input)."""
        raise NotImplementedError

    def structural_op(self) -> StructuralOp | None:
        """merlin's op for a node that runs no op of its own (``node.op`` of it)."""
        return None

    @property
    def label(self) -> str:
        return self.kind


class Select(Step):
    """Columns of the input data (names, nested groups, or tags)."""

    kind = "selection"

    def __init__(self, selector: ColumnSelector) -> None:
        self.selector = selector

    def resolve(self, node, schemas, source):
        selector = self.selector.resolve(source)
        schema = source.select(selector.names)
        return NodeSchema(selector, schema, schema, selector)

    def run(self, node, parents, dependencies, source):
        # Always a new frame: an op that assigns to its input in place must not change the
        # caller's frame (with copy-on-write the columns themselves are not copied).
        return source[node.output_schema.column_names]

    def structural_op(self) -> SelectionOp:
        return SelectionOp(self.selector)

    @property
    def label(self) -> str:
        return ", ".join(map(str, self.selector.grouped_names)) or ", ".join(map(str, self.selector.tags))

    def __repr__(self) -> str:
        return repr(self.selector)


class Apply(Step):
    """An op applied to its parents' columns (plus its dependencies' columns)."""

    kind = "op"

    def __init__(self, op: Any) -> None:
        self.op = op

    @property
    def row_wise(self) -> bool:
        return bool(getattr(self.op, "row_wise", False))

    def resolve(self, node, schemas, source):
        parents = [schemas[p.id] for p in node.parents]
        dependencies = [schemas[d.id] for d in node.dependencies]
        parents_schema = merge_schemas([p.output_schema for p in parents])
        deps_schema = merge_schemas([d.output_schema for d in dependencies])
        # The parents' column groups (a selection's nested lists, a ``+`` of a group) reach
        # the op, which may encode or cross a group together.
        parents_selector = combine_selectors([p.columns for p in parents])
        dependencies_selector = combine_selectors([d.columns for d in dependencies])
        op = self.op
        # merlin's hooks, in merlin's order: the columns the op receives, the ones it
        # applies to, what it produces, then its own check of all of them.
        input_schema = op.compute_input_schema(source, parents_schema, deps_schema, parents_selector)
        from_data = [n for n in input_schema.column_names if n not in parents_schema and n not in deps_schema]
        unknown = [n for n in from_data if n not in source]
        if unknown:
            raise ValueError(
                f"{type(op).__name__}.compute_input_schema asks for column(s) {unknown}, which neither its "
                f"inputs {parents_schema.column_names + deps_schema.column_names} nor the data {source.column_names} have"
            )
        selector = op.compute_selector(input_schema, parents_selector, parents_selector, dependencies_selector)
        try:
            # A schema written by hand may leave dtypes "unknown": those columns are checked
            # when the workflow is fitted, on the dtypes the data has.
            # So are the outputs of ops that learn their dtypes from the data (LambdaOp),
            # once they have seen it.
            if not any(is_unknown(column.dtype) for column in input_schema):
                op.validate_input(input_schema, selector)
        except (TypeError, ValueError, KeyError) as err:
            raise type(err)(f"{type(op).__name__} on columns {selector.names}: {err}") from None
        output = op.compute_output_schema(input_schema, selector, None)
        if observes_dtypes(op):
            # Known once the op has run on the data (tabflow.graph.schemas.observe_schemas);
            # ops downstream check their inputs then.
            output = Schema([column.with_dtype(UNKNOWN) for column in output])
        op.validate_schemas(parents_schema, deps_schema, input_schema, output, False)
        return NodeSchema(selector, input_schema, output)

    def run(self, node, parents, dependencies, source):
        op = self.op
        if not node.output_schema.column_names:
            # Every output was removed (Workflow.remove_inputs): nothing to compute.
            return (parents[0] if parents else source)[[]]
        frame = input_frame([*parents, *dependencies], node.input_schema.column_names, source)
        with planned_inputs(node.input_schema):
            out = op.transform(node.input_selector, frame)
        if getattr(op, "runs_user_code", False):
            # Lists a user function returns as Python objects become list columns, as their
            # schema says (observed the same way). Its results are cast to the declared
            # dtypes where exact: the same function gives int32 string lengths on cuDF and
            # Int64 on pandas, and the schema (inferred once) is what both engines promise.
            out = conform(backend_for(out).with_list_columns(out), node.output_schema)
        names = node.output_schema.column_names
        missing = [n for n in names if n not in set(out.columns)]
        if missing:
            raise ValueError(
                f"{type(op).__name__}.transform did not return column(s) {missing}; it returned "
                f"{list(out.columns)}. Its output_column_names/column_mapping must match transform."
            )
        out = out if list(out.columns) == names else out[names]
        if getattr(op, "runs_user_code", False) and declares_dtypes(op):
            # A user op's declared dtypes (output_dtype np.float32, "int32", ..., or its own
            # schema hooks) are what its schema and dask's meta say: make the data match,
            # whatever dtype its transform computed.
            out = cast_to_schema(out, node.output_schema)
        return out

    @property
    def label(self) -> str:
        return type(self.op).__name__

    def __repr__(self) -> str:
        return repr(self.op)


class Concat(Step):
    """The columns of the parents, then of the dependencies, side by side (``a + b``: ``a``
    is the parent and ``b`` a dependency, as in merlin), each name once; the column groups
    of the operands are kept for the op that follows.

    A column that several operands give is merged as merlin merges it
    (:func:`~tabflow.graph.columns.merge_schemas`): the later operand's values, dtype and
    shape, every operand's tags and properties.
    """

    kind = "concat"

    def resolve(self, node, schemas, source):
        parents = [schemas[n.id] for n in node.parents]
        dependencies = [schemas[n.id] for n in node.dependencies]
        # As merlin's ConcatColumns: the parents' schemas added up, plus the dependencies'.
        schema = merge_schemas([p.output_schema for p in parents]) + merge_schemas([d.output_schema for d in dependencies])
        selector = combine_selectors([o.columns for o in [*parents, *dependencies]])
        return NodeSchema(ColumnSelector(schema.column_names), schema, schema, self._grouping(selector))

    def _grouping(self, selector: ColumnSelector) -> ColumnSelector:
        return selector

    def run(self, node, parents, dependencies, source):
        return concat_unique([*parents, *dependencies], node.output_schema.column_names)

    def structural_op(self) -> ConcatColumns:
        return ConcatColumns()

    @property
    def label(self) -> str:
        return "+"

    def __repr__(self) -> str:
        return "concat"


class Group(Concat):
    """The parents' columns as one column group: a list operand of ``+`` that is not all
    names (``node + [other_node, "c"]``), as in NVTabular, so that an op such as
    ``Categorify(encode_type="combo")`` or ``HashedCross`` treats them together."""

    kind = "group"

    def _grouping(self, selector: ColumnSelector) -> ColumnSelector:
        return ColumnSelector(subgroups=[ColumnSelector(selector.names)])

    @property
    def label(self) -> str:
        return "[ ]"

    def __repr__(self) -> str:
        return "group"


class Subset(Step):
    """Some of the parent's output columns, by name (``node["a"]``, ``node[["a", "b"]]``)."""

    kind = "subset"

    def __init__(self, selector: ColumnSelector) -> None:
        self.selector = selector

    def resolve(self, node, schemas, source):
        parent = schemas[node.parents[0].id]
        missing = [name for name in self.selector.names if name not in parent.output_schema]
        if missing:
            raise MissingColumnError(
                f"node[{self.selector.grouped_names}]: column(s) {missing} are not among the node's output "
                f"columns {parent.output_schema.column_names}"
            )
        selector = self.selector.resolve(parent.output_schema)  # tags pick among the parent's columns
        output = parent.output_schema.select(selector.names)
        return NodeSchema(selector, parent.output_schema, output, selector)

    def run(self, node, parents, dependencies, source):
        names = node.output_schema.column_names
        frame = parents[0]
        return frame if list(frame.columns) == names else frame[names]

    def structural_op(self) -> SubsetColumns:
        return SubsetColumns()

    @property
    def label(self) -> str:
        return str(self.selector.grouped_names)

    def __repr__(self) -> str:
        return f"subset {self.selector!r}"


class Drop(Step):
    """The parent's columns without some (``a - cols``), named or produced by other nodes
    (``a - b``: b is a dependency whose output columns are dropped; it is never run)."""

    kind = "drop"
    reads_dependencies = False

    def __init__(self, dropped: ColumnSelector) -> None:
        self.dropped = dropped

    def resolve(self, node, schemas, source):
        parent = schemas[node.parents[0].id]
        names = [*self.dropped.names, *(n for d in node.dependencies for n in schemas[d.id].output_schema.column_names)]
        output = parent.output_schema.without(names)
        return NodeSchema(ColumnSelector(parent.output_schema.column_names), parent.output_schema, output)

    def run(self, node, parents, dependencies, source):
        names = node.output_schema.column_names
        frame = parents[0]
        return frame if list(frame.columns) == names else frame[names]

    def structural_op(self) -> SubtractionOp:
        return SubtractionOp(self.dropped)

    @property
    def label(self) -> str:
        return "- " + ", ".join(self.dropped.names) if self.dropped.names else "-"

    def __repr__(self) -> str:
        return f"drop {self.dropped!r}"


class Nested(Step):
    """A named subgraph (``Subgraph(name, node)``): its parent is the subgraph's output node.

    The subgraph's nodes are ordinary ancestors (fitted, saved and resolved with the rest);
    this step names them, so that ``Workflow.get_subworkflow(name)`` finds them, and with
    ``loop_until`` runs the subgraph again on its own output until ``loop_until(frame)`` is
    true (the subgraph must then read the columns it writes). A subgraph fed by a node
    (``node >> Subgraph(...)``) has that node as its dependency: the loop feeds the output
    back in its place.
    """

    kind = "subgraph"

    def __init__(self, name: str, loop_until: Any = None) -> None:
        self.name = name
        self.loop_until = loop_until

    @property
    def row_wise(self) -> bool:
        # A loop runs as often as its condition on the whole frame says.
        return self.loop_until is None

    def resolve(self, node, schemas, source):
        parent = schemas[node.parents[0].id]
        return NodeSchema(parent.columns, parent.output_schema, parent.output_schema, parent.output_selector)

    def run(self, node, parents, dependencies, source):
        out = parents[0]
        if self.loop_until is not None:
            inner = node.parents[0]
            while not self.loop_until(out):
                fed = {feed.id: out for feed in node.dependencies}
                out = evaluate(inner, out, fed)
        return out

    @property
    def label(self) -> str:
        return f"Subgraph({self.name})"

    def __repr__(self) -> str:
        return f"subgraph {self.name!r}"
