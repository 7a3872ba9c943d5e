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

import os
from typing import Any, Iterable

import dask

from tabflow.backends import backend_for, get_backend
from tabflow.dataset import Dataset
from tabflow.graph.columns import DuplicateColumnWarning
from tabflow.graph.executor import GraphRunner, fit_partials, map_graph, map_node_inputs
from tabflow.graph.graph import Graph
from tabflow.graph.node import Node
from tabflow.graph.steps import Select
from tabflow.io.atomic import check_target, discard, publish, temporary_directory
from tabflow.ops.operator import NotFittedError, Operator, StatOperator
from tabflow.schema import Schema
from tabflow.schema.dtypes import is_unknown
from tabflow.serialize.workflow_file import read_graph, write_graph

__all__ = ["Workflow", "DuplicateColumnWarning"]

_COMBINE_SPLIT_EVERY = 8


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
        return [node.op for node in self.nodes if node.op is not None]

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

    def fit_schema(self, input_schema: Schema) -> "Workflow":
        """Resolve every node's input and output schema from the dataset's schema."""
        nodes = self.graph.construct_schema(input_schema).nodes
        read = {name for node in nodes if isinstance(node.step, Select) for name in node.input_selector.names}
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
        self._require_schema()
        names = [input_cols] if isinstance(input_cols, str) else list(input_cols)
        self.graph.remove_inputs(names)
        self.input_schema = self.input_schema.without(names)
        self.output_schema = self.output_node.output_schema
        return self

    def clear_stats(self) -> None:
        """Forget the fitted statistics of every statistics op (as NVTabular's ``clear_stats``)."""
        self.graph.clear_stats()

    def _require_schema(self) -> None:
        if self.output_schema is None:
            raise NotFittedError("the workflow has not seen any data yet: call fit(dataset) first")

    # ------------------------------------------------------------------- fit
    def fit(self, dataset: Any) -> "Workflow":
        """Compute the statistics of every statistics op, in as few passes as possible.

        Parameters
        ----------
        dataset : Dataset, or a pandas/cuDF/dask DataFrame
        """
        dataset = dataset if isinstance(dataset, Dataset) else Dataset(dataset)
        self.fit_schema(dataset.schema)
        stat_nodes = [n for n in self.nodes if isinstance(n.op, StatOperator)]
        for node in stat_nodes:
            node.op.clear()
        ddf = dataset.to_ddf()
        remaining = list(stat_nodes)
        while remaining:
            ready = [n for n in remaining if all(_is_fitted(a) for a in n.ancestors())]
            modern = [n for n in ready if not n.op.uses_legacy_fit]
            if modern:
                self._fit_pass(ddf, modern)
            for node in ready:
                if node.op.uses_legacy_fit:
                    self._legacy_fit(ddf, node, dataset)
            if not ready:  # only reachable when an op's fit_finalize leaves it unfitted
                raise RuntimeError(f"cannot fit {[type(n.op).__name__ for n in remaining]}: their inputs never got fitted")
            remaining = [n for n in remaining if n not in ready]
            # Fitted statistics can change schemas downstream (e.g. cardinalities).
            self.fit_schema(dataset.schema)
        return self

    def _fit_pass(self, ddf: Any, nodes: list[Node]) -> None:
        combined = fit_partials(ddf, GraphRunner(nodes), _COMBINE_SPLIT_EVERY)
        if combined is None:
            raise ValueError("cannot fit a workflow on a dataset with no partitions")
        (partials,) = self._compute(combined)
        for node, partial in zip(nodes, partials):
            node.op.fit_finalize(partial)
            node.op._fitted_by_workflow = True

    def _legacy_fit(self, ddf: Any, node: Node, dataset: Any) -> None:
        meta = get_backend(dataset.engine).empty_frame(node.input_schema.dtypes)
        inputs = map_node_inputs(ddf, GraphRunner([node]), meta)
        (computed,) = self._compute(node.op.fit(node.input_selector, inputs))
        before = dict(vars(node.op))
        node.op.fit_finalize(computed)
        # Legacy ops keep statistics under any attribute name; remember which ones were set
        # so that saving the workflow keeps them.
        params = set(node.op._param_names())
        node.op._state_names = sorted(
            name
            for name, value in vars(node.op).items()
            if not name.startswith("_") and name not in params and (name not in before or before[name] is not value)
        )
        node.op._fitted_by_workflow = True

    def _compute(self, *collections: Any) -> tuple:
        if self.client is not None:
            return dask.compute(*collections, scheduler=self.client)
        return dask.compute(*collections)

    # -------------------------------------------------------------- transform
    def transform(self, data: Any) -> Any:
        """Transform a Dataset (lazily, returning a Dataset) or an in-memory frame (now).

        A workflow without statistics ops needs no ``fit``: as in NVTabular, its schemas are
        resolved from the first data it transforms.

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
        # A schema given to fit_schema by hand may leave dtypes unknown; the data has them.
        unresolved = self.output_schema is None or any(is_unknown(dtype) for dtype in self.input_dtypes.values())
        if unresolved and not any(isinstance(n.op, StatOperator) for n in self.nodes):
            self.fit_schema((data if isinstance(data, Dataset) else Dataset(data)).schema)
        self._require_fitted()
        if isinstance(data, Dataset):
            return self._transform_dataset(data)
        if dask.is_dask_collection(data):
            return self._transform_dataset(Dataset(data)).to_ddf()
        backend = backend_for(data)
        if not backend.is_frame(data):
            raise TypeError(f"Workflow.transform expects a Dataset or a DataFrame, got {type(data).__name__}")
        self._check_columns(data.columns)
        return GraphRunner([self.output_node], self.input_schema).transform(data)

    def fit_transform(self, data: Any) -> Any:
        """``fit(data)`` then ``transform(data)``."""
        return self.fit(data).transform(data)

    def _transform_dataset(self, dataset: Dataset) -> Dataset:
        self._check_columns(dataset.schema.column_names)
        meta = get_backend(dataset.engine).empty_frame(self.output_schema.dtypes)
        # Only the columns the graph reads travel through the transform.
        ddf = dataset.to_ddf()
        if list(ddf.columns) != self.input_schema.column_names:
            ddf = ddf[self.input_schema.column_names]
        ddf = map_graph(ddf, GraphRunner([self.output_node], self.input_schema), meta)
        out = Dataset(ddf, schema=self.output_schema, cpu=dataset.engine == "pandas", client=dataset.client or self.client)
        # The transform keeps partitions one to one, so each still comes from the same file.
        out._partition_sources = dataset._partition_sources
        return out

    def _require_fitted(self) -> None:
        self._require_schema()
        unfitted = [type(n.op).__name__ for n in self.nodes if isinstance(n.op, StatOperator) and not n.op.fitted]
        if unfitted:
            raise NotFittedError(
                f"op(s) {unfitted} have no statistics yet: call workflow.fit(dataset) before transform"
            )

    def _check_columns(self, columns: Iterable[str]) -> None:
        available = set(columns)
        missing = [name for name in self.input_schema.column_names if name not in available]
        if missing:
            raise KeyError(
                f"the data lacks column(s) {missing} that the workflow reads; it has {sorted(available)}"
            )

    # --------------------------------------------------------------- save/load
    def save(self, path: str, overwrite: bool = False, modules_byvalue: Any = None) -> None:
        """Save as ``path/workflow.json`` plus parquet files for fitted tables (no pickle).

        The directory is written under a temporary name and published at the end, so a
        failed save never leaves a directory that looks like a complete workflow. An
        existing ``path`` is replaced only when it is empty or a previous saved workflow
        (it holds ``workflow.json``); anything else is an error before anything is written,
        unless ``overwrite=True``.

        Functions given to ops are saved by their registered name
        (:func:`tabflow.register_function`) or, otherwise, as their source code with the
        plain values they use; :meth:`load` runs such code only with ``trust_code=True``.
        NVTabular's ``modules_byvalue`` (which modules cloudpickle embedded) is accepted and
        changes nothing: no module is ever saved.

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
        self._require_schema()
        path = os.path.abspath(path)
        check_target(path, "workflow", overwrite)
        tmp = temporary_directory(path)
        try:
            write_graph(tmp, self.output_node, self.input_schema, self.output_schema)
            publish(tmp, path, "workflow", overwrite)
        except BaseException:
            discard(tmp)
            raise

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
        saved = read_graph(path, trust_code=trust_code)
        workflow = cls(saved.output_node, client=client)
        if saved.output_schema is None:
            # Format 1 saved no node schemas: they are computed (registered functions only).
            workflow.fit_schema(saved.input_schema)
        else:
            workflow.input_schema, workflow.output_schema = saved.input_schema, saved.output_schema
        return workflow

    def __repr__(self) -> str:
        ops = " -> ".join(dict.fromkeys(type(op).__name__ for op in self.ops))
        return f"Workflow({ops or 'selection only'})"


def _is_fitted(node: Node) -> bool:
    return not isinstance(node.op, StatOperator) or node.op.fitted
