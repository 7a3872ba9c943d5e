"""Workflow: fit the statistics of a column graph and transform data with it.

The facade over the graph layer. Fitting is a sequence of passes over the data: each pass
takes every statistics op whose upstream statistics are already known, runs the graph up to
those ops on each partition (``fit_partition``), merges the partial results as a tree
(``combine_partials``) and finalizes them (``fit_finalize``). Transforming runs the whole
graph as one function per partition under a single ``map_partitions`` whose ``meta`` comes
from the declared output schema; an in-memory frame goes through the very same function
(:mod:`tabflow.graph.executor`). Schemas come from the pure schema pass
(:mod:`tabflow.graph.schemas`); saving and loading from :mod:`tabflow.serialize`.

Examples
--------
>>> import pandas as pd
>>> import tabflow as nvt
>>> from tabflow import ops
>>> df = pd.DataFrame({"c": ["a", "b", "a", None], "x": [1.0, None, 3.0, 5.0]})
>>> wf = nvt.Workflow((["c"] >> ops.Categorify()) + (["x"] >> ops.FillMissing(fill_val=0.0)))
>>> out = wf.fit_transform(df)
>>> out["c"].tolist(), out["x"].tolist()
([3, 4, 3, 1], [1.0, 0.0, 3.0, 5.0])
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import threading
import time
from collections.abc import Mapping
from typing import Any, Iterable, Protocol, Sequence

import dask

from tabflow.backends import backend_for, get_backend
from tabflow.dataset import Dataset
from tabflow.exceptions import LoadError, SaveError
from tabflow.graph.columns import observes_dtypes
from tabflow.graph.executor import GraphRunner, fit_partials, map_graph, map_node_inputs
from tabflow.graph.executors import register_graph_fitter
from tabflow.graph.graph import Graph
from tabflow.graph.node import Node
from tabflow.graph.operator import keep_update_state
from tabflow.graph.schemas import data_columns, dictionary_string_inputs
from tabflow.graph.serving import (
    ServingPlan,
    is_request,
    missing_columns_error,
    request_frame,
)
from tabflow.io.atomic import check_target, discard, files_under, publish, recover, temporary_directory
from tabflow.io.fs import is_remote, local_path
from tabflow.io.memory import keep_large_buffers_mapped
from tabflow.io.progress import compute
from tabflow.io.writer import Gathered
from tabflow.ops.operator import NotFittedError, NotUpdatableError, Operator, StatOperator
from tabflow.schema import Schema
from tabflow.schema.dtypes import is_unknown
from tabflow.serialize.workflow_file import read_graph, write_graph

__all__ = ["Workflow", "WorkflowNode"]

#: NVTabular's name of :class:`tabflow.graph.Node` (``nvtabular.workflow.WorkflowNode``).
WorkflowNode = Node

logger = logging.getLogger(__name__)

_COMBINE_SPLIT_EVERY = 8
#: Rows of the data that ops learning their output dtypes from it (LambdaOp) are run on.
_SAMPLE_ROWS = 256

class FrameFitter(Protocol):
    """How statistics ops that are not fitted as map / combine / finalize are fitted: on the
    whole Dask frame of their inputs, in a pass of their own."""

    def accepts(self, op: Operator) -> bool: ...

    def fit(self, op: Operator, col_selector: Any, ddf: Any) -> Any: ...

    def finish(self, op: Operator, computed: Any) -> None: ...


# Registered by tabflow.compat (the layer above), which holds NVTabular's ``fit(col_selector,
# ddf)`` protocol, so that the workflow knows only the map / combine / finalize one.
_FRAME_FITTERS: list[FrameFitter] = []


def register_frame_fitter(fitter: FrameFitter) -> FrameFitter:
    """Make ``Workflow.fit`` fit the statistics ops ``fitter.accepts`` on their whole input frame:
    it computes ``fitter.fit(op, selector, ddf)`` in a pass of its own and hands the result
    to ``fitter.finish(op, computed)``, which must leave the op fitted.

    Examples
    --------
    >>> from tabflow.workflow import _FRAME_FITTERS
    >>> from tabflow.compat.legacy_fit import LEGACY_FIT
    >>> LEGACY_FIT in _FRAME_FITTERS
    True
    """
    if fitter not in _FRAME_FITTERS:
        _FRAME_FITTERS.append(fitter)
    return fitter


def _frame_fitter(op: Operator) -> FrameFitter | None:
    return next((f for f in _FRAME_FITTERS if f.accepts(op)), None)


#: ``Workflow.transform`` sends pandas frames of at most this many rows (and dicts) through
#: the serving plan (:meth:`Workflow.compile_serving`); larger ones through the batch path.
#: (On the Criteo workflow the plan is the faster one up to about 2,000 rows.)
SERVING_MAX_ROWS = 1024
# One plan is built per workflow even when threads ask for it at once.
_SERVING_LOCK = threading.Lock()


class Workflow:
    """A graph of ops from input columns to output columns.

    Parameters
    ----------
    output_node : Node, ColumnSelector or list
        The graph's output, e.g. ``cats + conts + ["label"]``.
    client : distributed.Client, optional
        Dask cluster to compute on. By default the active distributed client, if there is
        one, else dask's local scheduler.

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> wf = nvt.Workflow(["x"] >> ops.Normalize())
    >>> wf.fit_transform(pd.DataFrame({"x": [1.0, 2.0, 3.0]}))["x"].round(3).tolist()
    [-1.0, 0.0, 1.0]
    """

    def __init__(self, output_node: Any, client: Any = None) -> None:
        self.graph = Graph(output_node)
        self.client = client
        # Nodes already resolved (a part of a fitted workflow) keep their schemas, as in
        # NVTabular: such a workflow transforms without another fit.
        self.input_schema: Schema | None = self.graph.input_schema
        self.output_schema: Schema | None = self.graph.output_schema

    # ----------------------------------------------------------------- graph
    @property
    def output_node(self) -> Node:
        """The graph's output node."""
        return self.graph.output_node

    @property
    def nodes(self) -> list[Node]:
        """Every node in topological order, the output node last."""
        return self.graph.nodes

    @property
    def subworkflows(self) -> list[str]:
        """Names of the graph's subgraphs (:class:`tabflow.graph.Subgraph`)."""
        return list(self.graph.subgraphs)

    def get_subworkflow(self, subgraph_name: str) -> "Workflow":
        """The subgraph ``subgraph_name`` as a workflow of its own, sharing this one's fitted
        ops (ValueError naming the known subgraphs otherwise).

        A subgraph fed by a node (``node >> Subgraph(...)``) keeps the nodes that feed it:
        its workflow reads the data's columns, as the whole workflow does.
        """
        return Workflow(self.graph.subgraph(subgraph_name).output_node, client=self.client)

    @property
    def ops(self) -> list[Operator]:
        return [node.op for node in self.nodes if node.step.op is not None]

    @property
    def input_dtypes(self) -> dict[str, str]:
        """``{column: dtype}`` of the columns the workflow reads, as fitted (empty before).

        Examples
        --------
        >>> import pandas as pd
        >>> import tabflow as nvt
        >>> from tabflow import ops
        >>> wf = nvt.Workflow(["x"] >> ops.Normalize()).fit(pd.DataFrame({"x": [1, 2], "y": [0.5, 1.0]}))
        >>> wf.input_dtypes, wf.output_dtypes
        ({'x': 'int64'}, {'x': 'float64'})
        """
        return self.input_schema.dtypes if self.input_schema is not None else {}

    @property
    def output_dtypes(self) -> dict[str, str]:
        """``{column: dtype}`` of the columns the workflow produces (empty before fitting)."""
        return self.output_schema.dtypes if self.output_schema is not None else {}

    def fit_schema(self, input_schema: Schema, sample: Any = None) -> "Workflow":
        """Resolve every node's input and output schema from the dataset's schema.

        ``sample``, a frame of a few real rows of the data, lets the ops that learn their
        output dtypes from the data (a ``LambdaOp`` without ``dtype``, a user op that declares
        none) see them; ``fit`` and a first ``transform`` pass one. Without it their dtypes
        stay as planned (``"unknown"`` for a ``LambdaOp``) until the workflow sees data.
        """
        nodes = self.graph.construct_schema(input_schema, sample).nodes
        read = data_columns(nodes)
        self.input_schema = Schema([input_schema[name] for name in input_schema.column_names if name in read])
        self.output_schema = self.output_node.output_schema
        return self

    def remove_inputs(self, input_cols: Iterable[str]) -> "Workflow":
        """Stop reading ``input_cols``, and drop every output computed from them.

        For serving a fitted workflow without the columns only training has, such as the
        label. The fitted statistics stay; a column group or cross involving a removed
        column goes as a whole. Fitting again reads the removed columns again.

        Examples
        --------
        >>> import pandas as pd
        >>> import tabflow as nvt
        >>> from tabflow import ops
        >>> df = pd.DataFrame({"x": [1.0, 3.0], "label": [0, 1]})
        >>> wf = nvt.Workflow((["x"] >> ops.Normalize()) + ["label"]).fit(df)
        >>> wf.remove_inputs(["label"]).transform(pd.DataFrame({"x": [2.0]})).columns.tolist()
        ['x']
        """
        input_schema, _ = self._require_schema()
        names = [input_cols] if isinstance(input_cols, str) else list(input_cols)
        self.graph.remove_inputs(names)
        self.input_schema = input_schema.without(names)
        self.output_schema = self.output_node.output_schema
        return self

    def clear_stats(self) -> None:
        """Forget the fitted statistics of every statistics op (as NVTabular's ``clear_stats``)."""
        self.graph.clear_stats()
        self.__dict__.pop("_serving_plan", None)  # it holds the statistics it was built with
        self.n_updates_, self.n_samples_seen_ = 0, None

    def _require_schema(self) -> tuple[Schema, Schema]:
        """The input and output schemas, once the workflow has seen data."""
        if self.input_schema is None or self.output_schema is None:
            raise NotFittedError("the workflow has not seen any data yet: call fit(dataset) first")
        return self.input_schema, self.output_schema

    # ------------------------------------------------------------------- fit
    def fit(self, dataset: Any, progress: bool = False) -> "Workflow":
        """Compute the statistics of every statistics op, in as few passes as possible.

        The passes are logged (logger ``tabflow.workflow``, level INFO). Freed partition
        buffers go back to the operating system (:mod:`tabflow.io.memory`). A fit starts
        afresh: it forgets what earlier fits and updates learned (:meth:`partial_fit`
        continues them instead).

        Parameters
        ----------
        dataset : Dataset, or a pandas/cuDF/dask DataFrame
        progress : bool, default False
            Show a progress bar of each pass over the data (see :mod:`tabflow.io.progress`:
            tqdm's Dask callback on Dask's local schedulers, ``distributed.progress`` with a
            distributed client).
        """
        return self._fit(dataset, progress, update=False, keep_state=False)

    def partial_fit(self, dataset: Any, progress: bool = False) -> "Workflow":
        """Continue the fitted statistics with new data, as scikit-learn's ``partial_fit``.

        Each statistics op computes its partial statistics of ``dataset`` as a fit does,
        merges them with its fitted ones (:meth:`~tabflow.ops.StatOperator.fitted_partial`)
        and finalizes the merge: the work grows with the new data and the size of the fitted
        statistics (vocabularies, group tables), not with the data seen before. On a
        workflow not fitted yet it is a fit, which also keeps what later updates need
        (counts of values still below Categorify's ``freq_threshold``, FillMedian's value
        counts, ...; see the guide's *Incremental training* page).

        - Categorify: values already known keep their indices; new values get indices after
          the existing ones, in the order a fit gives them; ``freq_threshold`` applies to the
          counts summed over every update, ``max_size`` caps the total.
        - Normalize, NormalizeMinMax, ReduceDtypeSize, ValueCount, TargetEncoding, JoinGroupby,
          FillMedian and DataStats: the statistics of all the data seen, merged exactly (up to
          floating-point rounding for means and variances).

        Ops are updated in the order a fit fits them: an op downstream of another statistics
        op sees the new data transformed with the updated statistics. New data is read with
        the workflow's fitted input dtypes, as :meth:`transform` reads it. An op that cannot
        be updated (a user op without ``fitted_partial``, Categorify with ``single_table``)
        raises :class:`~tabflow.ops.NotUpdatableError` naming it before any data is read,
        and the workflow is left as it was.

        :attr:`n_updates_` and :attr:`n_samples_seen_` count the updates since the last
        :meth:`fit` and the rows seen; both are saved with the workflow.

        Parameters
        ----------
        dataset : Dataset, or a pandas/cuDF/dask DataFrame
        progress : bool, default False
            As for :meth:`fit`.

        Examples
        --------
        >>> import pandas as pd
        >>> import tabflow as nvt
        >>> from tabflow import ops
        >>> wf = nvt.Workflow((["c"] >> ops.Categorify()) + (["x"] >> ops.Normalize()))
        >>> day1 = pd.DataFrame({"c": ["a", "b", "a"], "x": [1.0, 2.0, 3.0]})
        >>> day2 = pd.DataFrame({"c": ["z", "z", "b"], "x": [4.0, 5.0, 6.0]})
        >>> wf.partial_fit(day1).transform(pd.DataFrame({"c": ["a", "b", "z"], "x": [0.0] * 3}))["c"].tolist()
        [3, 4, 2]
        >>> out = wf.partial_fit(day2).transform(pd.DataFrame({"c": ["a", "b", "z"], "x": [3.5] * 3}))
        >>> out["c"].tolist(), out["x"].tolist(), (wf.n_updates_, wf.n_samples_seen_)
        ([3, 4, 5], [0.0, 0.0, 0.0], (1, 6))
        """
        if self.input_schema is None or not all(_is_fitted(n) for n in self.nodes):
            return self._fit(dataset, progress, update=False, keep_state=True)
        return self._fit(dataset, progress, update=True, keep_state=True)

    def _fit(self, dataset: Any, progress: bool, update: bool, keep_state: bool) -> "Workflow":
        """The fit passes of :meth:`fit` (``update`` False) and :meth:`partial_fit`."""
        dataset = dataset if isinstance(dataset, Dataset) else Dataset(dataset)
        keep_large_buffers_mapped()
        stat_nodes = [n for n in self.nodes if isinstance(n.op, StatOperator)]
        input_schema: Schema | None = None
        if update:
            input_schema = self._require_schema()[0]
            self._check_columns(dataset.schema.column_names)
            for node in stat_nodes:  # every refusal before any data is read
                if _frame_fitter(node.op) is not None:
                    raise NotUpdatableError(
                        f"{type(node.op).__name__} cannot be updated with new data: it is fitted by NVTabular's "
                        "fit(col_selector, ddf) on the whole frame, not as partials to merge; refit the workflow"
                    )
                node.op.check_updatable()
        else:
            for node in stat_nodes:
                node.op.clear()
        sample = self._sample(dataset)
        # The schema pass checks every op's input (validate_input) before any data is read.
        self.fit_schema(input_schema if input_schema is not None else dataset.schema, sample)
        columns = input_schema.column_names if input_schema is not None else None
        read = functools.partial(dataset.to_ddf, columns, dictionary_strings=dictionary_string_inputs(self.nodes), arrow_lists=True)
        ddf = read()
        gathered = None  # the small partitions read together, made for the first pass that can
        verb = "update" if update else "fit"
        logger.info("%s: %d statistics op(s) over %d partition(s)", verb, len(stat_nodes), ddf.npartitions)
        remaining = list(stat_nodes)
        done: set[int] = set()
        rows: int | None = None
        passes = 0
        while remaining:
            ready = [n for n in remaining if all(_is_done(a, done, update) for a in n.ancestors())]
            modern = [n for n in ready if _frame_fitter(n.op) is None]
            if modern:
                passes += 1
                data = ddf
                if _row_wise(modern):
                    # Statistics computed by row-wise ops alone do not depend on where
                    # partitions end: small partitions (many small files) are read together,
                    # paying each op's cost per partition once per ``part_size`` of rows.
                    gathered = data = read(coalesce=True) if gathered is None else gathered
                counted = self._fit_pass(data, modern, passes, progress, input_schema, keep_state, count_rows=rows is None)
                rows = counted if rows is None else rows
            for node in ready:
                fitter = _frame_fitter(node.op)
                if fitter is not None:
                    passes += 1
                    self._frame_fit(fitter, ddf, node, dataset, passes, progress)
            if not ready:  # only reachable when an op's fit_finalize leaves it unfitted
                raise RuntimeError(f"cannot fit {[type(n.op).__name__ for n in remaining]}: their inputs never got fitted")
            done.update(n.id for n in ready)
            remaining = [n for n in remaining if n not in ready]
            # Fitted statistics can change schemas downstream (e.g. cardinalities), and ops
            # after them can now be run on the sample to learn their dtypes.
            self.fit_schema(input_schema if input_schema is not None else dataset.schema, sample)
        if rows is None:  # no pass over the data counted them
            rows = dataset.num_rows
        self.n_updates_ = self.n_updates_ + 1 if update else 0
        self.n_samples_seen_ = (self.n_samples_seen_ or 0) + rows if update else rows
        return self

    @property
    def n_updates_(self) -> int:
        """Updates (:meth:`partial_fit` calls that continued fitted statistics) since the
        last :meth:`fit`, or since the first :meth:`partial_fit`; saved with the workflow."""
        return int(self.__dict__.get("_n_updates", 0))

    @n_updates_.setter
    def n_updates_(self, value: int) -> None:
        self.__dict__["_n_updates"] = int(value)

    @property
    def n_samples_seen_(self) -> int | None:
        """Rows the fitted statistics were computed from, over the fit and every update
        (None: unknown, for a workflow saved before tabflow counted them, or never fitted)."""
        return self.__dict__.get("_n_samples_seen")

    @n_samples_seen_.setter
    def n_samples_seen_(self, value: int | None) -> None:
        self.__dict__["_n_samples_seen"] = None if value is None else int(value)

    def _sample(self, data: Any) -> Any:
        """The first rows of the first non-empty partition of ``data`` (a Dataset or a frame),
        for the ops whose output dtypes are learned from the data; None when the graph has
        none, so that nothing is read for it."""
        if not any(n.step.op is not None and observes_dtypes(n.step.op) for n in self.nodes):
            return None
        if not isinstance(data, Dataset):
            return data.head(_SAMPLE_ROWS)
        ddf = data.to_ddf(arrow_lists=True)
        part = None
        for i in range(ddf.npartitions):
            (part,) = compute(ddf.partitions[i].head(_SAMPLE_ROWS, npartitions=1, compute=False), client=data.client or self.client)
            if len(part):
                break
        return part

    def _fit_pass(
        self, ddf: Any, nodes: list[Node], number: int, progress: bool, input_schema: Schema | None,
        keep_state: bool, count_rows: bool,
    ) -> int | None:
        """One pass over the data for ``nodes``; with ``input_schema`` an update, whose new
        partials are merged with each op's fitted one. Returns the rows counted (with
        ``count_rows``)."""
        combined = fit_partials(ddf, GraphRunner(nodes, input_schema), _COMBINE_SPLIT_EVERY, count_rows=count_rows)
        if combined is None:
            raise ValueError("cannot fit a workflow on a dataset with no partitions")
        (partials,) = self._compute_pass(number, nodes, progress, combined)
        rows = int(partials[len(nodes)]) if count_rows else None
        with keep_update_state() if keep_state else contextlib.nullcontext():
            for node, partial in zip(nodes, partials):
                if input_schema is not None:
                    partial = node.op.combine_partials([node.op.fitted_partial(), partial])
                node.op.fit_finalize(partial)
                node.op.mark_fitted()
        return rows

    def _frame_fit(self, fitter: FrameFitter, ddf: Any, node: Node, dataset: Any, number: int, progress: bool) -> None:
        meta = get_backend(dataset.engine).empty_frame(_schema_of(node.input_schema).dtypes)
        inputs = map_node_inputs(ddf, GraphRunner([node]), meta)
        (computed,) = self._compute_pass(number, [node], progress, fitter.fit(node.op, node.input_selector, inputs))
        fitter.finish(node.op, computed)

    def _compute_pass(self, number: int, nodes: list[Node], progress: bool, *collections: Any) -> tuple:
        """Compute one fit pass's statistics, logged and with an optional progress bar."""
        ops = ", ".join(f"{node.label}({_columns_text(_schema_of(node.input_schema).column_names)})" for node in nodes)
        logger.info("fit pass %d: %s", number, ops)
        start = time.perf_counter()
        computed = compute(*collections, client=self.client, progress=progress, desc=f"fit pass {number}")
        logger.info("fit pass %d done in %.2f s", number, time.perf_counter() - start)
        return computed

    # -------------------------------------------------------------- transform
    def transform(self, data: Any, progress: bool = False) -> Any:
        """Transform a Dataset (lazily, returning a Dataset), an in-memory frame or a dict (now).

        A workflow whose statistics ops are all fitted already (or that has none) needs no
        ``fit``: as in NVTabular, its schemas are resolved from the first data it
        transforms; so an op fitted in one workflow can transform in another.

        A pandas frame of at most :data:`SERVING_MAX_ROWS` rows, and a dict of columns,
        go through the serving plan (see :meth:`serve`): the same result as the batch path,
        without its per-column pandas overhead (a one-row request takes well under a
        millisecond instead of tens).

        ``progress=True`` makes the returned Dataset show a progress bar when it is computed
        (``to_parquet``, ``compute``), the transform itself computing nothing. A dask
        DataFrame in gives a dask DataFrame out, which carries no such setting; an in-memory
        frame is transformed at once, without Dask.

        Frames and dask DataFrames come back with list columns as the engine's users know
        them (:meth:`Dataset.to_ddf`: on pandas one NumPy array per row, as
        ``pd.read_parquet`` gives them); a dict request gets :meth:`serve`'s arrays.

        Examples
        --------
        >>> import pandas as pd
        >>> import tabflow as nvt
        >>> from tabflow import ops
        >>> wf = nvt.Workflow(["x"] >> ops.Clip(min_value=0)).fit(pd.DataFrame({"x": [-1, 2]}))
        >>> wf.transform(pd.DataFrame({"x": [-5, 5]}))["x"].tolist()
        [0, 5]
        >>> nvt.Workflow(["x"] >> ops.LogOp()).transform(pd.DataFrame({"x": [0.0]}))["x"].tolist()
        [0.0]
        """
        plan = self._current_serving_plan()
        if plan is not None and is_request(data, SERVING_MAX_ROWS):
            # A request, once the plan exists: nothing else to check.
            return plan.transform(data) if isinstance(data, Mapping) else _frame_answer(plan, data)
        # A schema given to fit_schema by hand may leave dtypes unknown; the data has them.
        # A stateless op that learns its dtypes from the data (LambdaOp) learns them from the
        # first data transformed when the workflow was never fitted.
        unresolved = self.output_schema is None or any(
            is_unknown(dtype) for dtype in [*self.input_dtypes.values(), *self.output_dtypes.values()]
        )
        if unresolved and all(_is_fitted(n) for n in self.nodes):
            frame = request_frame(data) if isinstance(data, Mapping) else data
            dataset = frame if isinstance(frame, Dataset) else Dataset(frame)
            self.fit_schema(dataset.schema, self._sample(dataset if dask.is_dask_collection(frame) or frame is dataset else frame))
        self._require_fitted()
        if isinstance(data, Mapping):
            return self.serve(data)
        if isinstance(data, Dataset):
            return self._transform_dataset(data, progress)
        if dask.is_dask_collection(data):
            return self._transform_dataset(Dataset(data), progress).to_ddf()
        backend = backend_for(data)
        if not backend.is_frame(data):
            raise TypeError(f"Workflow.transform expects a Dataset or a DataFrame, got {type(data).__name__}")
        self._check_columns(data.columns)
        if backend.name == "pandas" and len(data) <= SERVING_MAX_ROWS:
            return _frame_answer(self.compile_serving(), data)
        return backend.lists_as_arrays(GraphRunner([self.output_node], self.input_schema).transform(data))

    def fit_transform(self, data: Any, progress: bool = False) -> Any:
        """``fit(data, progress)`` then ``transform(data, progress)``."""
        return self.fit(data, progress=progress).transform(data, progress=progress)

    def _transform_dataset(self, dataset: Dataset, progress: bool) -> Dataset:
        self._check_columns(dataset.schema.column_names)
        input_schema, output_schema = self._require_schema()
        meta = get_backend(dataset.engine).empty_frame(output_schema.dtypes)
        # Only the columns the graph reads travel through the transform.
        read = functools.partial(
            dataset.to_ddf, input_schema.column_names, dictionary_strings=dictionary_string_inputs(self.nodes), arrow_lists=True,
        )
        ddf = read()
        runner = GraphRunner([self.output_node], input_schema)
        out = Dataset(map_graph(ddf, runner, meta), schema=output_schema, cpu=dataset.engine == "pandas", client=dataset.client or self.client)
        # The transform keeps partitions one to one, so each still comes from the same file.
        out._partition_sources = dataset._partition_sources
        gathering = dataset._gathered_partitions()
        if gathering is not None and dataset._partition_lengths is not None and _row_wise([self.output_node]):
            # Row-wise ops give the same rows over gathered partitions: written in order,
            # many small files are transformed a part_size at a time (see Operator.row_wise).
            out._gathered = Gathered(map_graph(read(coalesce=True), runner, meta), gathering[1], list(dataset._partition_lengths))
        out._progress = progress
        logger.info(
            "transform: %d partition(s), %d column(s) in, %d out; computed when the result is written or computed",
            ddf.npartitions, len(input_schema), len(output_schema),
        )
        return out

    def _require_fitted(self) -> tuple[Schema, Schema]:
        """The input and output schemas, once every statistics op is fitted."""
        schemas = self._require_schema()
        unfitted = [type(n.op).__name__ for n in self.nodes if isinstance(n.op, StatOperator) and not n.op.fitted]
        if unfitted:
            raise NotFittedError(
                f"op(s) {unfitted} have no statistics yet: call workflow.fit(dataset) before transform"
            )
        return schemas

    def _check_columns(self, columns: Iterable[str]) -> None:
        available = list(columns)
        present = set(available)
        missing = [name for name in self._require_schema()[0].column_names if name not in present]
        if missing:
            raise missing_columns_error(missing, available)

    # ---------------------------------------------------------------- serving
    def serve(self, request: Any) -> Any:
        """Transform one request of a few rows through the serving plan (:meth:`compile_serving`).

        ``transform`` takes this path by itself for a dict and for a pandas frame of at most
        :data:`SERVING_MAX_ROWS` rows; ``serve`` takes it for any size.

        Parameters
        ----------
        request : dict or pandas.DataFrame
            A dict maps each input column to one value or to a 1-D sequence of values (list,
            tuple, NumPy array, pandas Series); it stands for the frame
            ``pd.DataFrame(request)`` (one row when every value is a scalar) and is conformed
            to the fitted dtypes as a frame is: numbers to the fitted integer or float dtype
            when no value changes (``3.0`` for an integer column is ``3``), None, NaN and NA
            to null. Columns the workflow does not read are ignored; a missing one is a
            KeyError naming it.

        Returns
        -------
        pandas.DataFrame or dict
            For a frame, exactly the frame ``transform`` returns (dtypes, column order,
            index). For a dict, ``{output column: 1-D array}`` in output order: a NumPy
            array of the output dtype (``int64`` codes, ``float32``/``float64`` values, ...)
            for NumPy dtypes, else the pandas array the frame's column holds (``Int64``,
            ``string``, list columns).

        Examples
        --------
        >>> import pandas as pd
        >>> import tabflow as nvt
        >>> from tabflow import ops
        >>> df = pd.DataFrame({"c": ["a", "b", "a"], "x": [1.0, None, 3.0]})
        >>> wf = nvt.Workflow((["c"] >> ops.Categorify()) + (["x"] >> ops.FillMissing() >> ops.Normalize()))
        >>> out = wf.fit(df).serve({"c": "b", "x": None})
        >>> out["c"].tolist(), out["x"].round(3).tolist(), out["x"].dtype
        ([4], [-0.873], dtype('float64'))
        >>> wf.serve({"c": ["a", "zzz", None], "x": [3.0, 0.0, 1.0]})["c"].tolist()
        [3, 2, 1]
        """
        self._require_fitted()
        return self.compile_serving().transform(request)

    def compile_serving(self) -> ServingPlan:
        """The serving plan of this fitted workflow, built on first use and kept.

        The plan turns every op into NumPy work on the request's columns (ops with no
        kernel run their ``transform`` on a small frame) and gives exactly what the batch
        path gives; see :class:`tabflow.graph.serving.ServingPlan`. It is built again after
        ``fit``, ``remove_inputs``, any change of the workflow's schemas or of an op's fitted
        state (:meth:`~tabflow.ops.Operator.state_version`); one plan serves
        any number of threads at once.

        Examples
        --------
        >>> import pandas as pd
        >>> import tabflow as nvt
        >>> from tabflow import ops
        >>> wf = nvt.Workflow(["x"] >> ops.LambdaOp(lambda col: col * 2) >> ops.LogOp())
        >>> plan = wf.fit(pd.DataFrame({"x": [1.0]})).compile_serving()
        >>> plan.fallbacks, plan is wf.compile_serving()
        (['LambdaOp'], True)
        """
        input_schema, output_schema = self._require_fitted()
        plan = self._current_serving_plan()
        if plan is None:
            with _SERVING_LOCK:
                plan = self._current_serving_plan()
                if plan is None:
                    plan = ServingPlan(self.output_node, input_schema, output_schema)
                    self._serving_plan = plan
        return plan

    def _current_serving_plan(self) -> ServingPlan | None:
        plan = self.__dict__.get("_serving_plan")
        # Schemas are replaced, never changed in place, by fit, remove_inputs and load; an
        # op's fitted state can be set by hand.
        if (
            plan is None
            or plan.input_schema is not self.input_schema
            or plan.output_schema is not self.output_schema
            or not plan.is_current()
        ):
            return None
        return plan

    # --------------------------------------------------------------- save/load
    def save(self, path: str, overwrite: bool = False, modules_byvalue: Any = None) -> None:
        """Save as ``path/workflow.json`` plus parquet files for fitted tables (no pickle).

        The directory is written under a temporary name and published at the end, so a
        failed save never leaves a directory that looks like a complete workflow. An
        existing ``path`` is replaced as a whole when it is empty or holds only a previous
        saved workflow; into a directory holding other files too, the workflow's files are
        added beside them (a previous workflow's files replaced), and a file of the workflow
        that would overwrite a file tabflow did not write is an error naming it
        (:mod:`tabflow.io.atomic`). ``overwrite=True`` replaces the directory and everything
        in it.

        Functions given to ops are saved by their registered name
        (:func:`tabflow.register_function`) or, otherwise, as their source code with the
        plain values they use; :meth:`load` runs such code only with ``trust_code=True``.
        NVTabular's ``modules_byvalue`` (which modules cloudpickle embedded) is accepted and
        changes nothing: no module is ever saved.

        A workflow that has not seen data yet saves its graph and its ops' parameters; the
        loaded workflow is fitted (or given a schema with ``fit_schema``) like a new one. A
        fitted one also records how many updates (:meth:`partial_fit`) and rows its
        statistics come from (``"seen"`` in ``workflow.json``); the loaded workflow continues
        from there.

        As in NVTabular, each op's files go with it: ``op.save_artifacts(directory)`` runs
        for every op and ``op.set_storage_path(directory, copy=True)`` for every statistics
        op (``Categorify(out_path=...)`` copies its vocabulary files, and then points at the
        saved directory).

        Examples
        --------
        >>> import os, tempfile, pandas as pd
        >>> import tabflow as nvt
        >>> from tabflow import ops
        >>> wf = nvt.Workflow(["x"] >> ops.LambdaOp(lambda col: col * 2)).fit(pd.DataFrame({"x": [1]}))
        >>> d = os.path.join(tempfile.mkdtemp(), "wf"); wf.save(d)
        >>> nvt.Workflow.load(d, trust_code=True).transform(pd.DataFrame({"x": [5]}))["x"].tolist()
        [10]
        """
        path = _local_directory(path, "save", SaveError)
        check_target(path, "workflow", overwrite)
        tmp = temporary_directory(path, "workflow", overwrite)
        try:
            seen = {"updates": self.n_updates_, "rows": self.n_samples_seen_} if self.input_schema is not None else None
            write_graph(tmp, self.output_node, self.input_schema, self.output_schema, seen)
            # Files an op already wrote into ``path`` (Categorify(out_path=path)) are the ones
            # the workflow bundles, under the same names: replacing them loses nothing.
            bundled: set[str] = set()
            for op in self._distinct_ops():
                op.save_artifacts(tmp)
                if isinstance(op, StatOperator):
                    stored = getattr(op, "out_path", None)
                    before = set(files_under(tmp))
                    op.set_storage_path(tmp, copy=True)
                    if stored is not None and os.path.abspath(os.fspath(stored)) == path:
                        bundled |= set(files_under(tmp)) - before
            publish(tmp, path, "workflow", overwrite, replaceable=bundled)
        except BaseException:
            discard(tmp)
            raise
        for op in self._distinct_ops():
            if isinstance(op, StatOperator):
                op.set_storage_path(path, copy=False)  # the files now live under the published name
        logger.info("saved the workflow (%d nodes) to %s", len(self.nodes), path)

    @classmethod
    def load(cls, path: str, client: Any = None, trust_code: bool = False) -> "Workflow":
        """Load a workflow saved by :meth:`save`.

        Loading never runs, imports or calls anything named in the files: it builds only
        tabflow ops and op classes this process defines, with the parameters their
        signatures declare and their fitted attributes; functions are found only among the
        registered ones (:func:`tabflow.register_function`); saved tables are read only
        from inside ``path``; schemas are the saved ones (no op is called to compute them).
        Code saved with the workflow (lambdas, unregistered functions) is kept as text: the
        loaded workflow has its schemas, statistics and embedding sizes, but running that
        code (``transform``, ``fit``) raises :class:`tabflow.exceptions.UntrustedCodeError`.
        Once built, statistics ops are pointed at ``path``
        (``op.set_storage_path(path, copy=False)``) and every op's ``load_artifacts(path)``
        runs, as NVTabular's did.

        Parameters
        ----------
        path : str
            Directory written by :meth:`save`.
        client : distributed.Client, optional
        trust_code : bool, default False
            Compile the saved code so that it runs (and import the modules it names). Only
            for workflows from a source you trust: the code can do anything.

        Raises
        ------
        tabflow.exceptions.LoadError
            A file that is not a workflow, a newer format, an unknown op or parameter, an
            unregistered function name, a file reference outside ``path``, a malformed or
            oversized document; the message names the node and the entry.

        Examples
        --------
        >>> import tempfile, pandas as pd
        >>> import tabflow as nvt
        >>> from tabflow import ops
        >>> wf = nvt.Workflow(["x"] >> ops.Normalize()).fit(pd.DataFrame({"x": [1.0, 3.0]}))
        >>> d = tempfile.mkdtemp() + "/wf"; wf.save(d)
        >>> nvt.Workflow.load(d).transform(pd.DataFrame({"x": [2.0]}))["x"].tolist()
        [0.0]
        """
        path = _local_directory(path, "load", LoadError)
        if os.path.isdir(path):
            try:
                recover(path)  # a save killed while moving its files in beside others: finish it
            except SaveError as err:
                raise LoadError(str(err)) from None
        saved = read_graph(path, trust_code=trust_code)
        workflow = cls(saved.output_node, client=client)
        if saved.input_schema is None:
            pass  # saved before it saw any data: fit it (or call fit_schema) as a new one
        elif saved.output_schema is None:
            # Format 1 saved no node schemas: they are computed (registered functions only).
            workflow.fit_schema(saved.input_schema)
        else:
            workflow.input_schema, workflow.output_schema = saved.input_schema, saved.output_schema
        if saved.seen is not None:
            workflow.n_updates_, workflow.n_samples_seen_ = saved.seen["updates"], saved.seen["rows"]
        for op in workflow._distinct_ops():
            if isinstance(op, StatOperator):
                op.set_storage_path(path, copy=False)
            op.load_artifacts(path)
        return workflow

    def _distinct_ops(self) -> list[Operator]:
        """Each op once, though one op object may sit in several nodes."""
        return list({id(op): op for op in self.ops}.values())

    def __getstate__(self) -> dict[str, Any]:
        # The serving plan holds compiled functions; a copy builds its own when it serves.
        state = dict(self.__dict__)
        state.pop("_serving_plan", None)
        return state

    def __repr__(self) -> str:
        ops = " -> ".join(dict.fromkeys(type(op).__name__ for op in self.ops))
        return f"Workflow({ops or 'selection only'})"


def _local_directory(path: Any, verb: str, error: type[Exception]) -> str:
    """``path`` as an absolute local path (``file://`` URLs taken); a URL of another
    protocol is an ``error``: a saved workflow is a local directory."""
    text = local_path(os.fspath(path))
    if is_remote(text):
        how = (
            "save it to a local directory, then copy that directory to the store (for example fsspec's "
            "fs.put(local_dir, url, recursive=True))" if verb == "save" else
            "copy the directory to a local one first (for example fsspec's fs.get(url, local_dir, recursive=True)), "
            "then load that"
        )
        raise error(f"Workflow.{verb} works on local directories, not {text!r}: {how}")
    return os.path.abspath(text)


def _is_fitted(node: Node) -> bool:
    return not isinstance(node.op, StatOperator) or node.op.fitted


def _row_wise(nodes: Sequence[Node]) -> bool:
    """Whether every step computing ``nodes`` and their inputs is row-wise (see
    :attr:`Operator.row_wise <tabflow.ops.Operator.row_wise>`)."""
    return all(node.step.row_wise for target in nodes for node in [target, *target.ancestors()])


def _is_done(node: Node, done: set[int], update: bool) -> bool:
    """Whether ``node``'s statistics are final for this fit (an update: updated already)."""
    if not isinstance(node.op, StatOperator):
        return True
    return node.id in done if update else node.op.fitted


def _columns_text(names: list[str], shown: int = 4) -> str:
    """Column names for a log line: the first few and how many there are."""
    if len(names) <= shown:
        return ", ".join(names)
    return ", ".join(names[:shown]) + f", ... ({len(names)} columns)"


@register_graph_fitter
def _fit_graph(output_node: Node, dataset: Any, client: Any, refit: bool) -> None:
    """merlin's ``DaskExecutor.fit``: the workflow's fit passes over the graph ending at
    ``output_node`` (its nodes and ops are fitted in place)."""
    workflow = Workflow(output_node, client=client)
    if not refit and all(_is_fitted(n) for n in workflow.nodes):
        workflow.fit_schema((dataset if isinstance(dataset, Dataset) else Dataset(dataset)).schema)
        return
    workflow.fit(dataset)


def _schema_of(schema: Schema | None) -> Schema:
    """A node's schema, set by the schema pass that runs before any fit pass."""
    if schema is None:
        raise NotFittedError("the workflow's schemas are not computed yet: call fit(dataset) first")
    return schema


def _frame_answer(plan: ServingPlan, frame: Any) -> Any:
    """The serving plan's answer to a request frame, in the form handed to users."""
    answer = plan.transform(frame)
    # Only list columns change on the way out, and the plan knows whether it makes any:
    # looking for them in every answer's dtypes took a third of a one-row request's time.
    return backend_for(answer).lists_as_arrays(answer) if plan.list_outputs else answer
