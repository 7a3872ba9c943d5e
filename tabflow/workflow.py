"""Workflow: fit the statistics of a column graph and transform data with it.

Fitting is a sequence of passes over the data. Each pass takes every statistics op whose
upstream statistics are already known, runs the graph up to those ops on each partition
(``fit_partition``), merges the partial results as a tree (``combine_partials``) and
finalizes them (``fit_finalize``). Transforming runs the whole graph as one function per
partition under a single ``map_partitions`` whose ``meta`` comes from the declared output
schema; an in-memory frame goes through the very same function.

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

import json
import os
import uuid
import warnings
from typing import Any, Iterable, Sequence

import dask

from tabflow.backends import backend_for, get_backend
from tabflow.backends.pandas_backend import SAMPLE_VARIANTS
from tabflow.ops.lambdaop import LambdaOp
from tabflow.ops.operator import NotFittedError, Operator, StatOperator
from tabflow.schema import Schema
from tabflow.selector import ColumnSelector, Node, as_node
from tabflow.serialize import LoadError, UntrustedCodeError, decode_op, decode_selector, encode_op

__all__ = ["Workflow", "DuplicateColumnWarning"]

_FORMAT = "tabflow.workflow"
# 2: node schemas saved (load computes nothing), functions by registered name or as code.
_VERSION = 2
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
        self.output_node = as_node(output_node)
        self.client = client
        self.input_schema: Schema | None = None
        self.output_schema: Schema | None = None

    # ----------------------------------------------------------------- graph
    @property
    def nodes(self) -> list[Node]:
        """Every node in topological order, the output node last."""
        return [*self.output_node.ancestors(), self.output_node]

    @property
    def ops(self) -> list[Operator]:
        return [node.op for node in self.nodes if node.op is not None]

    @property
    def input_dtypes(self) -> dict[str, str]:
        """``{column: dtype}`` of the columns the workflow reads, as fitted.

        Examples
        --------
        >>> import pandas as pd
        >>> import tabflow as nvt
        >>> from tabflow import ops
        >>> wf = nvt.Workflow(["x"] >> ops.Normalize()).fit(pd.DataFrame({"x": [1, 2], "y": [0.5, 1.0]}))
        >>> wf.input_dtypes, wf.output_dtypes
        ({'x': 'int64'}, {'x': 'float32'})
        """
        self._require_schema()
        return self.input_schema.dtypes

    @property
    def output_dtypes(self) -> dict[str, str]:
        """``{column: dtype}`` of the columns the workflow produces."""
        self._require_schema()
        return self.output_schema.dtypes

    def fit_schema(self, input_schema: Schema) -> "Workflow":
        """Resolve every node's input and output schema from the dataset's schema."""
        for node in self.nodes:
            _resolve_node(node, input_schema)
        self.input_schema = Schema(
            [input_schema[name] for name in input_schema.column_names if name in self._source_columns()]
        )
        self.output_schema = self.output_node.output_schema
        return self

    def _source_columns(self) -> set[str]:
        return {name for node in self.nodes if node.kind == "selection" for name in node.input_selector.names}

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
        from tabflow.dataset import Dataset

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
                self._fit_pass(ddf, modern, dataset)
            for node in ready:
                if node.op.uses_legacy_fit:
                    self._legacy_fit(ddf, node, dataset)
            if not ready:  # only reachable when an op's fit_finalize leaves it unfitted
                raise RuntimeError(f"cannot fit {[type(n.op).__name__ for n in remaining]}: their inputs never got fitted")
            remaining = [n for n in remaining if n not in ready]
            # Fitted statistics can change schemas downstream (e.g. cardinalities).
            self.fit_schema(dataset.schema)
        return self

    def _fit_pass(self, ddf: Any, nodes: list[Node], dataset: Any) -> None:
        runner = dask.delayed(_GraphRunner(nodes), name=f"tabflow-fit-graph-{uuid.uuid4().hex}", traverse=False)
        partials = [dask.delayed(_fit_partition, pure=False)(runner, part) for part in ddf.to_delayed()]
        if not partials:
            raise ValueError("cannot fit a workflow on a dataset with no partitions")
        while len(partials) > 1:
            partials = [
                dask.delayed(_combine_partials, pure=False)(runner, *partials[i : i + _COMBINE_SPLIT_EVERY])
                for i in range(0, len(partials), _COMBINE_SPLIT_EVERY)
            ]
        (combined,) = self._compute(partials[0])
        for node, partial in zip(nodes, combined):
            node.op.fit_finalize(partial)
            node.op._fitted_by_workflow = True

    def _legacy_fit(self, ddf: Any, node: Node, dataset: Any) -> None:
        backend = get_backend(dataset.engine)
        input_schema = node.input_schema
        meta = backend.empty_frame(input_schema.dtypes)
        runner = dask.delayed(_GraphRunner([node]), name=f"tabflow-legacy-{uuid.uuid4().hex}", traverse=False)
        inputs = ddf.map_partitions(_node_inputs_partition, runner, meta=meta, enforce_metadata=False)
        stats = node.op.fit(node.input_selector, inputs)
        (computed,) = self._compute(stats)
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

        Examples
        --------
        >>> import pandas as pd
        >>> import tabflow as nvt
        >>> from tabflow import ops
        >>> wf = nvt.Workflow(["x"] >> ops.Clip(min_value=0)).fit(pd.DataFrame({"x": [-1, 2]}))
        >>> wf.transform(pd.DataFrame({"x": [-5, 5]}))["x"].tolist()
        [0, 5]
        """
        from tabflow.dataset import Dataset

        self._require_fitted()
        if isinstance(data, Dataset):
            return self._transform_dataset(data)
        if _is_dask_collection(data):
            return self._transform_dataset(Dataset(data)).to_ddf()
        backend = backend_for(data)
        if not backend.is_frame(data):
            raise TypeError(f"Workflow.transform expects a Dataset or a DataFrame, got {type(data).__name__}")
        self._check_columns(data.columns)
        return _GraphRunner([self.output_node], self.input_schema).transform(data)

    def fit_transform(self, data: Any) -> Any:
        """``fit(data)`` then ``transform(data)``."""
        return self.fit(data).transform(data)

    def _transform_dataset(self, dataset: Any) -> Any:
        from tabflow.dataset import Dataset

        self._check_columns(dataset.schema.column_names)
        backend = get_backend(dataset.engine)
        meta = backend.empty_frame(self.output_schema.dtypes)
        runner = dask.delayed(
            _GraphRunner([self.output_node], self.input_schema),
            name=f"tabflow-transform-graph-{uuid.uuid4().hex}",
            traverse=False,
        )
        # Only the columns the graph reads travel through the transform.
        ddf = dataset.to_ddf()
        if list(ddf.columns) != self.input_schema.column_names:
            ddf = ddf[self.input_schema.column_names]
        ddf = ddf.map_partitions(_transform_partition, runner, meta=meta, enforce_metadata=False)
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
    def save(self, path: str, overwrite: bool = False) -> None:
        """Save as ``path/workflow.json`` plus parquet files for fitted tables (no pickle).

        The directory is written under a temporary name and published at the end, so a
        failed save never leaves a directory that looks like a complete workflow. An
        existing ``path`` is replaced only when it is empty or a previous saved workflow
        (it holds ``workflow.json``); anything else is an error before anything is written,
        unless ``overwrite=True``.

        Functions given to ops are saved by their registered name
        (:func:`tabflow.register_function`) or, otherwise, as their source code with the
        plain values they use; :meth:`load` runs such code only with ``trust_code=True``.

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
        from tabflow.io.atomic import check_target, discard, publish, temporary_directory

        self._require_schema()
        path = os.path.abspath(path)
        check_target(path, "workflow", overwrite)
        tmp = temporary_directory(path)
        try:
            index = {node.id: i for i, node in enumerate(self.nodes)}
            nodes = []
            for i, node in enumerate(self.nodes):
                entry: dict[str, Any] = {
                    "id": i,
                    "kind": node.kind,
                    "parents": [index[p.id] for p in node.parents],
                    "dependencies": [index[d.id] for d in node.dependencies],
                    "input_selector": node.input_selector.to_dict(),
                    "input_schema": node.input_schema.to_dict(),
                    "output_schema": node.output_schema.to_dict(),
                }
                if node.selector is not None:
                    entry["selector"] = node.selector.to_dict()
                if node.dropped is not None:
                    entry["dropped"] = node.dropped.to_dict()
                if node.op is not None:
                    entry["op"] = encode_op(node.op, tmp, f"node{i}")
                nodes.append(entry)
            document = {
                "format": _FORMAT,
                "version": _VERSION,
                "nodes": nodes,
                "output": index[self.output_node.id],
                "input_schema": self.input_schema.to_dict(),
                "output_schema": self.output_schema.to_dict(),
            }
            with open(os.path.join(tmp, "workflow.json"), "w", encoding="utf-8") as handle:
                json.dump(document, handle, indent=1)
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
        code (``transform``, ``fit``) raises :class:`tabflow.serialize.UntrustedCodeError`.

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
        tabflow.serialize.LoadError
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
        from tabflow.serialize import read_json

        file = os.path.join(path, "workflow.json")
        if not os.path.exists(file):
            raise LoadError(f"{file} not found: {path!r} is not a saved tabflow workflow")
        document = read_json(file, "workflow file")
        if not isinstance(document, dict) or document.get("format") != _FORMAT:
            raise LoadError(f"{file} is not a tabflow workflow file")
        version = document.get("version", 0)
        if not isinstance(version, int) or version < 1:
            raise LoadError(f"{file} has an invalid format version {version!r:.40}")
        if version > _VERSION:
            raise LoadError(f"{file} was written by a newer tabflow (format version {version}); upgrade tabflow to load it")
        entries = document.get("nodes")
        if not isinstance(entries, list) or not entries:
            raise LoadError(f"{file} holds no nodes")
        built: list[Node] = []
        for i, entry in enumerate(entries):
            built.append(_load_node(entry, i, built, path, trust_code, restore_schemas=version >= 2))
        output = document.get("output")
        if not isinstance(output, int) or isinstance(output, bool) or not 0 <= output < len(built):
            raise LoadError(f"{file}: the output node {output!r:.40} is not one of its {len(built)} nodes")
        workflow = cls(built[output], client=client)
        try:
            input_schema = Schema.from_dict(document["input_schema"])
            output_schema = Schema.from_dict(document["output_schema"]) if version >= 2 else None
        except (KeyError, TypeError, ValueError) as err:
            raise LoadError(f"{file}: malformed workflow schema ({type(err).__name__}: {err})") from None
        if output_schema is None:
            # Format 1 saved no node schemas: they are computed (registered functions only).
            workflow.fit_schema(input_schema)
        else:
            workflow.input_schema, workflow.output_schema = input_schema, output_schema
        return workflow

    def __repr__(self) -> str:
        ops = " -> ".join(dict.fromkeys(type(op).__name__ for op in self.ops))
        return f"Workflow({ops or 'selection only'})"


# ---------------------------------------------------------------------------- execution


class _GraphRunner:
    """Runs part of a graph on one in-memory frame. One instance is shared by all tasks."""

    def __init__(self, targets: Sequence[Node], input_schema: Schema | None = None) -> None:
        self.targets = list(targets)
        self.input_schema = input_schema

    def transform(self, frame: Any) -> Any:
        if self.input_schema is not None:
            frame = _conform(frame, self.input_schema)
        return _evaluate(self.targets[0], frame, {})

    def node_inputs(self, frame: Any) -> list[Any]:
        cache: dict[int, Any] = {}
        return [_node_input(node, frame, cache) for node in self.targets]


def _conform(frame: Any, schema: Schema) -> Any:
    """Cast input columns to the dtypes the workflow was fitted on, where that is lossless.

    A file without nulls reads an integer column as int64 where the fitted data had Int64,
    and an in-memory frame holds strings as ``str`` where partitions hold ``string``; casting
    keeps the transformed output on the declared output schema.
    """
    backend = backend_for(frame)
    dtypes = frame.dtypes
    casts = {}
    for column in schema:
        if column.name in dtypes.index:
            wanted = backend.engine_dtype(column.dtype)
            if dtypes[column.name] != wanted:
                casts[column.name] = wanted
    if not casts:
        return frame
    columns = {}
    for name in casts:
        # The backend casts only where no value changes (10.5 stays a float rather than
        # becoming 10) and raises naming the column for a non-number in a numeric column.
        original = frame[name]
        conformed = backend.conform_column(original, schema[name].dtype)
        if conformed is not original:
            columns[name] = conformed
    return frame.assign(**columns) if columns else frame


def _transform_partition(frame: Any, runner: _GraphRunner) -> Any:
    return runner.transform(frame)


def _node_inputs_partition(frame: Any, runner: _GraphRunner) -> Any:
    return runner.node_inputs(frame)[0]


def _fit_partition(runner: _GraphRunner, frame: Any) -> list[Any]:
    inputs = runner.node_inputs(frame)
    return [node.op.fit_partition(node.input_selector, data) for node, data in zip(runner.targets, inputs)]


def _combine_partials(runner: _GraphRunner, *partials: list[Any]) -> list[Any]:
    return [node.op.combine_partials([p[i] for p in partials]) for i, node in enumerate(runner.targets)]


def _evaluate(node: Node, frame: Any, cache: dict[int, Any]) -> Any:
    if node.id in cache:
        return cache[node.id]
    names = node.output_schema.column_names
    if node.kind == "selection":
        out = frame[names]
    elif node.kind == "op":
        op = node.op
        if isinstance(op, StatOperator) and not op.fitted:
            raise NotFittedError(f"{type(op).__name__} has no statistics yet: call workflow.fit(dataset) first")
        out = op.transform(node.input_selector, _node_input(node, frame, cache))
        if _runs_user_code(op):
            # Lists a user function returns as Python objects become list columns, as their
            # schema says (observed the same way).
            out = backend_for(out).with_list_columns(out)
        produced = set(out.columns)
        missing = [n for n in names if n not in produced]
        if missing:
            raise ValueError(
                f"{type(op).__name__}.transform did not return column(s) {missing}; it returned "
                f"{list(out.columns)}. Its output_column_names/column_mapping must match transform."
            )
        out = out[names] if list(out.columns) != names else out
    else:
        parents = [_evaluate(p, frame, cache) for p in node.parents]
        out = _concat_unique(parents, names)
    cache[node.id] = out
    return out


def _node_input(node: Node, frame: Any, cache: dict[int, Any]) -> Any:
    parts = [_evaluate(p, frame, cache) for p in node.parents]
    parts += [_evaluate(d, frame, cache) for d in node.dependencies]
    return _concat_unique(parts, node.input_schema.column_names)


def _concat_unique(frames: list[Any], names: list[str]) -> Any:
    if len(frames) == 1:
        out = frames[0]
        return out if list(out.columns) == names else out[names]
    backend = backend_for(frames[0])
    picked, seen = [], set()
    for frame in frames:
        keep = [c for c in frame.columns if c not in seen and c in names]
        seen.update(keep)
        if keep:
            picked.append(frame[keep] if len(keep) != len(frame.columns) else frame)
    _check_same_rows(picked)
    out = backend.concat_columns(picked)
    return out if list(out.columns) == names else out[names]


def _check_same_rows(frames: list[Any]) -> None:
    """Columns side by side must describe the same rows; a row filter (ops.Filter,
    ops.Dropna) in one branch of ``+`` only would otherwise pair unrelated rows or pad with
    nulls."""
    first = frames[0] if frames else None
    for frame in frames[1:]:
        if len(frame) != len(first) or not frame.index.equals(first.index):
            raise ValueError(
                f"cannot put columns {list(first.columns)} and {list(frame.columns)} side by side: they "
                f"hold different rows ({len(first)} vs {len(frame)}). A row filter (ops.Filter, ops.Dropna) "
                "inside one branch of `+` is ambiguous; apply it to the whole selection instead, e.g. "
                "(cats + conts) >> ops.Filter(f)"
            )


def _is_fitted(node: Node) -> bool:
    return not isinstance(node.op, StatOperator) or node.op.fitted


def _is_dask_collection(obj: Any) -> bool:
    return dask.is_dask_collection(obj)


# ---------------------------------------------------------------------------- schemas


def _resolve_node(node: Node, input_schema: Schema) -> None:
    if node.kind == "selection":
        node.input_selector = node.selector.resolve(input_schema)
        node.input_schema = input_schema.select(node.input_selector.names)
        node.output_schema = node.input_schema
        node.column_origins = {name: ("input", name) for name in node.output_schema.column_names}
        return
    parent_schemas = [p.output_schema for p in node.parents]
    parent_origins = [p.column_origins for p in node.parents]
    if node.kind == "concat":
        node.input_schema, node.column_origins = _union(parent_schemas, parent_origins)
        node.input_selector = ColumnSelector(node.input_schema.column_names)
        node.output_schema = node.input_schema
        return
    if node.kind == "drop":
        node.input_schema = parent_schemas[0]
        node.input_selector = ColumnSelector(node.input_schema.column_names)
        node.output_schema = node.input_schema.without(node.dropped.names)
        node.column_origins = {n: parent_origins[0][n] for n in node.output_schema.column_names}
        return
    selector_schema, selector_origins = _union(parent_schemas, parent_origins)
    parent = node.parents[0]
    if len(node.parents) == 1 and parent.kind == "selection":
        node.input_selector = parent.input_selector  # keeps nested column groups
    else:
        node.input_selector = ColumnSelector(selector_schema.column_names)
    node.input_schema, _ = _union(
        [selector_schema, *(d.output_schema for d in node.dependencies)],
        [selector_origins, *(d.column_origins for d in node.dependencies)],
    )
    op = node.op
    try:
        op.validate_input(node.input_schema, node.input_selector)
    except (TypeError, ValueError, KeyError) as err:
        raise type(err)(f"{type(op).__name__} on columns {node.input_selector.names}: {err}") from None
    node.output_schema = _observed_dtypes(op, node, op.compute_output_schema(node.input_schema, node.input_selector))
    node.column_origins = {name: ("op", node.id, type(op).__name__) for name in node.output_schema.column_names}


def _observed_dtypes(op: Operator, node: Node, declared: Schema) -> Schema:
    """For a user-defined op that declares no ``output_dtype``, the dtypes its transform
    actually returns on a two-row sample of its input dtypes.

    NVTabular learned output dtypes by running ops; scripts written for it define ops that
    turn, say, date strings into day counts without declaring so. tabflow's own ops declare
    their dtypes, and a statistics op is only sampled once fitted. String columns are tried
    as letters, then digits, then date-times; when no sample can be transformed the declared
    schema stands.
    """
    if not _runs_user_code(op) or isinstance(op, LambdaOp) or op.output_dtype is not None:
        return declared  # LambdaOp infers its own dtypes
    if isinstance(op, StatOperator) and not op.fitted:
        return declared
    pandas = get_backend("pandas")
    for variant in range(SAMPLE_VARIANTS):
        try:
            out = op.transform(node.input_selector, pandas.sample_frame(node.input_schema.dtypes, variant))
            break
        except UntrustedCodeError:
            raise
        except Exception:  # noqa: BLE001 - user code; the next sample may suit it
            continue
    else:
        return declared
    backend = backend_for(out)
    columns = []
    for column in declared:
        if column.name in out.columns:
            observed = backend.observed_dtype(out[column.name])
            if observed != str(column.dtype):
                column = column.with_dtype(observed)
        columns.append(column)
    return Schema(columns)


def _runs_user_code(op: Operator) -> bool:
    """Ops defined outside tabflow, and LambdaOp (which calls a user function)."""
    return not type(op).__module__.startswith("tabflow.") or isinstance(op, LambdaOp)


def _union(schemas: list[Schema], origins: list[dict[str, Any]] | None = None) -> tuple[Schema, dict[str, Any]]:
    """Columns of several schemas, each once; ``origins`` say which node computed each column.

    The same name reaching a node along two paths is fine when both paths carry the column
    that one node computed (``a + a``). When two different nodes computed it (``movieId``
    encoded and ``movieId`` joined in raw) the first one is kept, as NVTabular scripts
    expect (``encoded + joined`` is a common idiom), with a warning: the other is hidden.
    """
    origins = origins or [{} for _ in schemas]
    columns: dict[str, Any] = {}
    where: dict[str, Any] = {}
    for schema, origin in zip(schemas, origins):
        for column in schema:
            source = origin.get(column.name, ("input", column.name))
            if column.name in columns and (where[column.name] != source or columns[column.name] != column):
                warnings.warn(
                    f"column {column.name!r} is produced twice with different definitions "
                    f"(by {_describe_origin(where[column.name])} and by {_describe_origin(source)}); the first, "
                    f"by {_describe_origin(where[column.name])}, is kept. To keep the other, rename one of "
                    "them (ops.Rename) or drop one (node - [name]).",
                    DuplicateColumnWarning,
                    stacklevel=2,
                )
            columns.setdefault(column.name, column)
            where.setdefault(column.name, source)
    return Schema(columns.values()), where


# ---------------------------------------------------------------------------- loading

_NODE_KINDS = {"selection", "op", "concat", "drop"}


def _load_node(entry: Any, i: int, built: list[Node], path: str, trust_code: bool, restore_schemas: bool) -> Node:
    """One node of a saved workflow, every field checked (the document may come from anyone)."""
    where = f"node {i}"
    if not isinstance(entry, dict):
        raise LoadError(f"{where}: malformed node {entry!r:.80}")
    kind = entry.get("kind")
    if kind not in _NODE_KINDS:
        raise LoadError(f"{where}: unknown node kind {kind!r:.40}")

    def earlier(key: str) -> list[Node]:
        indices = entry.get(key, [])
        if not isinstance(indices, list) or not all(
            isinstance(k, int) and not isinstance(k, bool) and 0 <= k < i for k in indices
        ):
            raise LoadError(f"{where}: its {key} must be indices of earlier nodes, got {indices!r:.80}")
        return [built[k] for k in indices]

    parents, dependencies = earlier("parents"), earlier("dependencies")
    selector = decode_selector(entry["selector"], where) if "selector" in entry else None
    dropped = decode_selector(entry["dropped"], where) if "dropped" in entry else None
    op = decode_op(entry["op"], path, trust_code=trust_code, owner=where) if "op" in entry else None
    node = Node(selector=selector, op=op, parents=parents, dependencies=dependencies, dropped=dropped)
    if node.kind != kind or (kind == "selection" and selector is None) or (kind != "selection" and not parents):
        raise LoadError(f"{where}: its fields do not describe a {kind} node")
    if restore_schemas:
        try:
            node.input_selector = decode_selector(entry["input_selector"], where)
            node.input_schema = _load_schema(entry["input_schema"], where)
            node.output_schema = _load_schema(entry["output_schema"], where)
        except KeyError as err:
            raise LoadError(f"{where}: the saved node lacks {err}") from None
    return node


def _load_schema(data: Any, where: str) -> Schema:
    try:
        schema = Schema.from_dict(data)
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise LoadError(f"{where}: malformed saved schema ({type(err).__name__}: {err})") from None
    for column in schema:
        if not isinstance(column.name, str) or not isinstance(column.dtype, str):
            raise LoadError(f"{where}: malformed saved column {column.name!r:.60}")
    return schema


class DuplicateColumnWarning(UserWarning):
    """Two branches of a workflow produce the same column name; the first is kept.

    Examples
    --------
    >>> import warnings
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> df = pd.DataFrame({"x": [-1.0, 2.0]})
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     out = nvt.Workflow((["x"] >> ops.Clip(min_value=0)) + ["x"]).fit_transform(df)
    >>> out["x"].tolist(), caught[0].category.__name__
    ([0.0, 2.0], 'DuplicateColumnWarning')
    """


def _describe_origin(origin: Any) -> str:
    return "the input data" if origin[0] == "input" else f"op {origin[2]}"
