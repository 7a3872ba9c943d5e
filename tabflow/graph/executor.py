"""Running a graph: one function per partition, for dask collections and in-memory frames.

A :class:`GraphRunner` evaluates the nodes a workflow asks for on one frame: the whole graph
to transform, or the inputs of statistics ops to fit them. The same runner object serves
``map_partitions`` over a dask collection (:func:`map_graph`, one task per partition with
``meta`` from the declared schema) and a single in-memory frame (serving), so both paths
run the very same code.

Examples
--------
>>> import pandas as pd
>>> import tabflow as nvt
>>> from tabflow import ops
>>> from tabflow.graph.executor import GraphRunner
>>> wf = nvt.Workflow(["x"] >> ops.Clip(min_value=0)).fit(pd.DataFrame({"x": [1]}))
>>> GraphRunner([wf.output_node], wf.input_schema).transform(pd.DataFrame({"x": [-2, 3]}))["x"].tolist()
[0, 3]
"""

from __future__ import annotations

import contextvars
import operator
import pickle
import threading
import uuid
from typing import Any, Callable, Sequence, SupportsIndex

import cloudpickle
import dask

from tabflow.backends import backend_for
from tabflow.backends.protocol import Frame
from tabflow.graph.columns import input_frame, planned_inputs
from tabflow.schema import Schema
from tabflow.schema.dtypes import is_unknown

__all__ = ["GraphRunner", "map_graph", "map_node_inputs", "fit_partials", "evaluate", "register_fit_task_hook", "combining_last"]

#: Called at the start of every fit task (one partition's statistics, a merge of them), with
#: whether only merges call it. The data layer registers the release of memory the allocators
#: hold free (``io/memory.py``), so that what one task freed leaves resident memory before the
#: next allocates; a hook, so that the graph names no allocator.
_FIT_TASK_HOOKS: list[tuple[Callable[[], object], bool]] = []


def register_fit_task_hook(hook: Callable[[], object], merges_only: bool = False) -> Callable[[], object]:
    """Call ``hook()`` at the start of every fit task from now on (once, however often given);
    with ``merges_only``, of every task that merges statistics (no partition is read in one).

    Examples
    --------
    >>> from tabflow.graph.executor import register_fit_task_hook
    >>> hook = lambda: None
    >>> register_fit_task_hook(hook) is register_fit_task_hook(hook)
    True
    """
    if all(registered is not hook for registered, _ in _FIT_TASK_HOOKS):
        _FIT_TASK_HOOKS.append((hook, merges_only))
    return hook


def _fit_task_started(merging: bool = False) -> None:
    for hook, merges_only in _FIT_TASK_HOOKS:
        if merging or not merges_only:
            hook()


_LAST_COMBINE: contextvars.ContextVar[bool] = contextvars.ContextVar("tabflow_last_combine", default=False)


def combining_last() -> bool:
    """Whether the ``combine_partials`` running in this thread is the last of a folded fit
    (an op with ``exact_combine``): every partition's statistics are in it, so no partition is
    read beside it, and the op may use every core.

    Examples
    --------
    >>> from tabflow.graph.executor import combining_last
    >>> combining_last()  # outside a fit's combine
    False
    """
    return _LAST_COMBINE.get()


class GraphRunner:
    """Evaluates part of a graph on one in-memory frame. One instance is shared by all tasks.

    A runner is serialised once, to bytes it keeps: every later copy (another partition's
    submission, a worker handing it to another worker) sends those bytes. Serialising the
    live graph again could race with a task running on it: ops build engine tables on first
    use and pandas objects fill caches as they are read, so a worker pickling the runner for
    a peer while transforming a partition with it would fail ("dictionary changed size
    during iteration") and leave the peer's task waiting forever. A copy rebuilds the graph
    from the bytes when it first runs, so the dask scheduler, which only passes the runner
    on, never rebuilds it.

    Parameters
    ----------
    targets : list of Node
        The nodes to compute (the output node, or statistics ops whose inputs are wanted).
    input_schema : Schema, optional
        The dtypes the graph was fitted on; input frames are conformed to them first.
    """

    def __init__(self, targets: Sequence[Any], input_schema: Schema | None = None) -> None:
        self._graph: tuple[list[Any], Schema | None] | None = (list(targets), input_schema)
        self._serialized: Any = None  # bytes, or a view of the buffer a copy arrived in
        self._lock = threading.Lock()

    @classmethod
    def _from_bytes(cls, serialized: Any) -> "GraphRunner":
        runner = cls.__new__(cls)
        runner._graph, runner._serialized, runner._lock = None, serialized, threading.Lock()
        return runner

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[Any, tuple[Any]]:
        with self._lock:
            if self._serialized is None:
                # cloudpickle: users' ops may hold lambdas (LambdaOp) or classes defined in
                # a notebook.
                self._serialized = cloudpickle.dumps(self._graph, protocol=pickle.HIGHEST_PROTOCOL)
            serialized = self._serialized
        # Protocol 5 lets dask send the bytes as they are, without copying them into each
        # submission's message (a copy that arrived so holds a view of dask's buffer).
        if operator.index(protocol) >= 5:
            return GraphRunner._from_bytes, (pickle.PickleBuffer(serialized),)
        return GraphRunner._from_bytes, (bytes(serialized),)

    def _live_graph(self) -> tuple[list[Any], Schema | None]:
        graph = self._graph
        if graph is None:
            with self._lock:
                if self._graph is None:
                    self._graph = pickle.loads(self._serialized)
                graph = self._graph
        return graph

    @property
    def targets(self) -> list[Any]:
        """The nodes the runner computes."""
        return self._live_graph()[0]

    @property
    def input_schema(self) -> Schema | None:
        """The dtypes input frames are conformed to (None: taken as they come)."""
        return self._live_graph()[1]

    def transform(self, frame: Frame) -> Frame:
        """The first target's output for ``frame``."""
        targets, input_schema = self._live_graph()
        if input_schema is not None:
            frame = conform(frame, input_schema)
        return evaluate(targets[0], frame, {}, consumer_counts([targets[0]], inputs_only=False))

    def node_inputs(self, frame: Frame) -> list[Frame]:
        """What each target node's op receives for ``frame`` (parents' and dependencies' columns)."""
        targets, input_schema = self._live_graph()
        if input_schema is not None:
            frame = conform(frame, input_schema)
        cache: dict[int, Any] = {}
        remaining = consumer_counts(targets, inputs_only=True)
        return [_node_input(node, frame, cache, remaining) for node in targets]


def conform(frame: Frame, schema: Schema) -> Frame:
    """Cast columns to the dtypes ``schema`` declares, where no value changes: a workflow's
    input columns to the dtypes it was fitted on, a user function's outputs to the dtypes
    its op declared.

    A file without nulls reads an integer column as int64 where the fitted data had Int64,
    and an in-memory frame may hold text as ``object`` or ``string`` where the engine holds
    ``str``; casting
    keeps the transformed output on the declared output schema. A cast that would change a
    value (10.5 to 10) is not made, so the ops see the value as it is; a string that is not a
    number in a numeric column is an error naming the column and value.
    """
    backend = backend_for(frame)
    dtypes = frame.dtypes
    columns = {}
    for column in schema:
        if is_unknown(column.dtype):
            continue  # a hand-written schema's column: nothing to conform to
        if column.name in dtypes.index and dtypes[column.name] != backend.engine_dtype(column.dtype):
            conformed = backend.conform_column(frame[column.name], column.dtype)
            if conformed is not frame[column.name]:
                columns[column.name] = conformed
    return frame.assign(**columns) if columns else frame


def evaluate(node: Any, frame: Frame, cache: dict[int, Frame], remaining: dict[int, int] | None = None) -> Frame:
    """The output of ``node`` for the input ``frame`` (``cache`` holds nodes already run).

    With ``remaining`` (:func:`consumer_counts`), a node's output leaves ``cache`` once every
    node reading it has run: a chain of ops then holds two of its outputs at a time, not all.
    """
    if node.id in cache:
        return cache[node.id]
    parents = [evaluate(p, frame, cache, remaining) for p in node.parents]
    dependencies = [evaluate(d, frame, cache, remaining) for d in _read_dependencies(node)]
    out = node.step.run(node, parents, dependencies, frame)
    cache[node.id] = out
    if remaining is not None:
        del parents, dependencies
        _consumed([*node.parents, *_read_dependencies(node)], cache, remaining)
    return out


def _read_dependencies(node: Any) -> list[Any]:
    """The dependencies whose outputs ``node``'s step reads (some steps only order on them)."""
    return list(node.dependencies) if node.step.reads_dependencies else []


def _node_input(node: Any, frame: Frame, cache: dict[int, Frame], remaining: dict[int, int] | None = None) -> Frame:
    upstream = [*node.parents, *node.dependencies]
    parts = [evaluate(n, frame, cache, remaining) for n in upstream]
    out = input_frame(parts, node.input_schema.column_names, frame)
    if remaining is not None:
        del parts
        _consumed(upstream, cache, remaining)
    return out


def consumer_counts(roots: Sequence[Any], inputs_only: bool) -> dict[int, int]:
    """How many times each node's output is read while :func:`evaluate` computes ``roots``
    (``inputs_only``: while :func:`_node_input` assembles their inputs): one per edge from a
    node that runs to a parent or a dependency it reads. The roots' own outputs (with
    ``inputs_only=False``) are not counted; they are what the caller keeps.

    Examples
    --------
    >>> from tabflow import ops
    >>> from tabflow.graph.executor import consumer_counts
    >>> logged = ["x"] >> ops.LogOp()
    >>> both = (logged >> ops.Rename(postfix="_a")) + (logged >> ops.Rename(postfix="_b"))
    >>> consumer_counts([both], inputs_only=False)[logged.id]  # read by both renames
    2
    """
    counts: dict[int, int] = {}
    seen: set[int] = set()
    stack: list[Any] = []
    for root in roots:
        if inputs_only:
            for upstream in [*root.parents, *root.dependencies]:
                counts[upstream.id] = counts.get(upstream.id, 0) + 1
                stack.append(upstream)
        else:
            stack.append(root)
        while stack:
            node = stack.pop()
            if node.id in seen:
                continue
            seen.add(node.id)
            for upstream in [*node.parents, *_read_dependencies(node)]:
                counts[upstream.id] = counts.get(upstream.id, 0) + 1
                stack.append(upstream)
    return counts


def _consumed(upstream: Sequence[Any], cache: dict[int, Frame], remaining: dict[int, int]) -> None:
    for node in upstream:
        remaining[node.id] -= 1
        if remaining[node.id] == 0:
            cache.pop(node.id, None)


def _delayed(runner: GraphRunner, purpose: str) -> Any:
    # One named delayed object: the runner (and the graph it holds) is serialised once per
    # computation, not once per partition task.
    return dask.delayed(runner, name=f"tabflow-{purpose}-{uuid.uuid4().hex}", traverse=False)


def map_graph(ddf: Any, runner: GraphRunner, meta: Any) -> Any:
    """``runner.transform`` over every partition of ``ddf``, in one ``map_partitions``."""
    return ddf.map_partitions(_transform_partition, _delayed(runner, "transform-graph"), meta=meta, enforce_metadata=False)


def map_node_inputs(ddf: Any, runner: GraphRunner, meta: Any) -> Any:
    """The inputs of ``runner``'s one target node, for every partition of ``ddf``."""
    return ddf.map_partitions(_node_inputs_partition, _delayed(runner, "node-inputs"), meta=meta, enforce_metadata=False)


def fit_partials(ddf: Any, runner: GraphRunner, split_every: int, count_rows: bool = False) -> Any:
    """One delayed value: the targets' statistics over ``ddf``, as a tree of ``fit_partition``
    per partition then ``combine_partials`` ``split_every`` at a time (None: no partitions).
    With ``count_rows``, the list of the targets' statistics ends with the number of rows.

    A target whose op sets ``exact_combine`` folds its partials into one running total
    instead, ``split_every - 1`` new partials per step: the partials' tree would hold one
    merged result per group of partitions until the last merge, a memory that grows with the
    number of partitions, where a running total holds one. The other targets keep the tree,
    whose grouping (and so the rounding of their floating-point merges) stays as it was.
    """
    delayed_runner = _delayed(runner, "fit-graph")
    partials = [dask.delayed(_fit_partition, pure=False)(delayed_runner, part, count_rows) for part in ddf.to_delayed()]
    if not partials:
        return None
    folded = [bool(getattr(node.op, "exact_combine", False)) for node in runner.targets]
    if not any(folded):
        return _combine_tree(partials, split_every, lambda *group: dask.delayed(_combine_partials, pure=False)(delayed_runner, *group))
    results = []
    for i, fold in enumerate(folded):
        combine = _target_combiner(delayed_runner, i)
        target_partials = [partial[i] for partial in partials]
        results.append(_combine_fold(target_partials, split_every, combine) if fold else _combine_tree(target_partials, split_every, combine))
    if count_rows:
        rows = [partial[len(folded)] for partial in partials]
        results.append(_combine_tree(rows, split_every, lambda *group: dask.delayed(_sum, pure=True)(*group)))
    return dask.delayed(list, pure=False)(results)


def _sum(*numbers: int) -> int:
    return sum(numbers)


def _target_combiner(delayed_runner: Any, target: int) -> Any:
    return lambda *group, last=False: dask.delayed(_combine_target, pure=False)(delayed_runner, target, *group, last=last)


def _combine_tree(partials: list[Any], split_every: int, combine: Any) -> Any:
    while len(partials) > 1:
        partials = [combine(*partials[i : i + split_every]) for i in range(0, len(partials), split_every)]
    return partials[0]


def _combine_fold(partials: list[Any], split_every: int, combine: Any) -> Any:
    if len(partials) == 1:
        return partials[0]
    total = combine(*partials[:split_every], last=len(partials) <= split_every)
    step = max(split_every - 1, 1)
    for start in range(split_every, len(partials), step):
        total = combine(total, *partials[start : start + step], last=start + step >= len(partials))
    return total


def _transform_partition(frame: Frame, runner: GraphRunner) -> Frame:
    return runner.transform(frame)


def _node_inputs_partition(frame: Frame, runner: GraphRunner) -> Any:
    return runner.node_inputs(frame)[0]


def _fit_partition(runner: GraphRunner, frame: Frame, count_rows: bool = False) -> list[Any]:
    _fit_task_started()
    inputs = runner.node_inputs(frame)
    partials = []
    for node, data in zip(runner.targets, inputs):
        with planned_inputs(node.input_schema):
            partials.append(node.op.fit_partition(node.input_selector, data))
    return [*partials, len(frame)] if count_rows else partials


def _combine_partials(runner: GraphRunner, *partials: list[Any]) -> list[Any]:
    _fit_task_started(merging=True)
    targets = runner.targets
    combined = [node.op.combine_partials([p[i] for p in partials]) for i, node in enumerate(targets)]
    if len(partials[0]) > len(targets):  # the rows counted
        combined.append(sum(p[len(targets)] for p in partials))
    return combined


def _combine_target(runner: GraphRunner, target: int, *partials: Any, last: bool = False) -> Any:
    _fit_task_started(merging=True)
    token = _LAST_COMBINE.set(last)
    try:
        return runner.targets[target].op.combine_partials(list(partials))
    finally:
        _LAST_COMBINE.reset(token)
