"""merlin's executors (``merlin.dag.executors``): run a graph on a frame or on a dask collection.

tabflow's :class:`~tabflow.graph.executor.GraphRunner` is the one per-partition function;
these classes are merlin's entry points onto it, for scripts that drive a graph themselves:

- :class:`LocalExecutor` transforms one in-memory frame (merlin's serving path);
- :class:`DaskExecutor` transforms every partition of a dask DataFrame in one
  ``map_partitions`` and fits a graph's statistics ops on a dataset (as ``Workflow.fit``).

Both take a :class:`~tabflow.graph.Graph`, a node, or a list of nodes (whose outputs are put
side by side), with resolved schemas (``graph.construct_schema(schema)`` or a fitted workflow).

Examples
--------
>>> import pandas as pd
>>> from tabflow import ops
>>> from tabflow.graph import Graph
>>> from tabflow.graph.executors import LocalExecutor
>>> from tabflow.schema import Schema, ColumnSchema
>>> graph = Graph(["x"] >> ops.Clip(min_value=0)).construct_schema(Schema([ColumnSchema("x", dtype="int64")]))
>>> LocalExecutor().transform(pd.DataFrame({"x": [-1, 2]}), graph)["x"].tolist()
[0, 2]
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from tabflow.backends import backend_for, collection_engine, get_backend
from tabflow.graph.columns import concat_unique
from tabflow.graph.executor import GraphRunner, conform, evaluate
from tabflow.graph.graph import Graph
from tabflow.graph.node import Node
from tabflow.graph.operator import NotFittedError, StatOperator
from tabflow.schema import Schema
from tabflow.schema.dtypes import canonical_dtype, is_unknown

__all__ = ["LocalExecutor", "DaskExecutor", "register_graph_fitter"]

# How a dataset fits a graph: the workflow's fit passes, registered by tabflow.workflow (the
# layer above), so that the graph layer needs no import of it.
_GRAPH_FITTER: list[Callable[..., Any]] = []


def register_graph_fitter(fit: Callable[..., Any]) -> Callable[..., Any]:
    """Make ``fit(output_node, dataset, client, refit)`` what :meth:`DaskExecutor.fit` runs."""
    _GRAPH_FITTER[:] = [fit]
    return fit


def _nodes(graph: Any, who: str) -> list[Node]:
    if isinstance(graph, Graph):
        return [graph.output_node]
    if isinstance(graph, Node):
        return [graph]
    if isinstance(graph, (list, tuple)) and all(isinstance(n, Node) for n in graph):
        return list(graph)
    raise TypeError(f"{who} runs a Graph, a Node or a list of Nodes, got {type(graph).__name__}")


def _check_ready(nodes: list[Node], who: str) -> None:
    for node in nodes:
        for upstream in [*node.ancestors(), node]:
            if upstream.output_schema is None:
                raise ValueError(
                    f"{who}: the graph has no schemas yet; call graph.construct_schema(dataset.schema) "
                    "(or fit it) first"
                )
            if isinstance(upstream.op, StatOperator) and not upstream.op.fitted:
                raise NotFittedError(
                    f"{who}: graphs containing {type(upstream.op).__name__} must be fitted before attempting to use them "
                    "to transform data: fit the graph first (DaskExecutor().fit(dataset, graph), or Workflow.fit)"
                )


def _output_names(nodes: list[Node], additional_columns: Any) -> list[str]:
    names = [name for node in nodes for name in node.output_schema.column_names]
    return list(dict.fromkeys([*names, *(additional_columns or [])]))


class LocalExecutor:
    """Transforms one in-memory frame (pandas or cuDF) with a graph.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow import Workflow, ops
    >>> from tabflow.graph.executors import LocalExecutor
    >>> wf = Workflow(["x"] >> ops.Normalize()).fit(pd.DataFrame({"x": [1.0, 3.0]}))
    >>> LocalExecutor().transform(pd.DataFrame({"x": [2.0], "y": [5]}), wf.graph, additional_columns=["y"]).to_dict("list")
    {'x': [0.0], 'y': [5]}
    """

    def transform(
        self,
        transformable: Any,
        graph: Any,
        output_dtypes: Mapping[str, Any] | None = None,
        additional_columns: Any = None,
        capture_dtypes: bool = False,
        strict: bool = False,
        target_format: Any = None,
    ) -> Any:
        """The graph's output for ``transformable``.

        Parameters
        ----------
        transformable : pandas or cuDF DataFrame
        graph : Graph, Node or list of Node
            Several nodes' outputs are put side by side, each column once.
        output_dtypes : dict, optional
            ``{column: dtype}`` the output is cast to (any form a schema takes).
        additional_columns : list of str, optional
            Input columns passed through beside the graph's output.
        capture_dtypes : bool, default False
            Record the dtypes each node produced in its ``output_schema`` (as merlin does
            to learn the dtypes of ops that do not declare them).
        strict : bool, default False
            Raise when a node's output dtypes differ from its planned ones.
        target_format : None
            merlin's tensor-table formats; tabflow's executors take and return frames.

        Raises
        ------
        TypeError
            With ``strict``, for a node whose data does not have its planned dtypes.
        ValueError
            For a ``target_format``, or a graph without schemas.
        """
        if target_format is not None:
            raise ValueError(
                f"target_format={target_format!r}: tabflow's executors transform dataframes; convert the "
                "result with the loader (tabflow.loader) to get tensors"
            )
        nodes = _nodes(graph, "LocalExecutor")
        _check_ready(nodes, "LocalExecutor")
        cache: dict[int, Any] = {}
        outputs = []
        for node in nodes:
            schema = Graph(node).input_schema
            frame = conform(transformable, schema) if schema is not None else transformable
            outputs.append(evaluate(node, frame, cache))
        if capture_dtypes or strict:
            _check_dtypes([*{n.id: n for node in nodes for n in [*node.ancestors(), node]}.values()], cache, capture_dtypes, strict)
        if additional_columns:
            outputs.append(transformable[list(dict.fromkeys(additional_columns))])
        # A column several nodes give is the first node's; additional columns only fill in
        # what no node gives (concat_unique takes each column from the last frame).
        out = outputs[0] if len(outputs) == 1 else concat_unique(outputs[::-1], _output_names(nodes, additional_columns))
        if output_dtypes:
            backend = backend_for(out)
            out = out.assign(
                **{name: backend.astype(out[name], canonical_dtype(dtype)) for name, dtype in output_dtypes.items() if dtype is not None and name in out.columns}
            )
        return out


def _check_dtypes(nodes: list[Node], outputs: Mapping[int, Any], capture: bool, strict: bool) -> None:
    for node in nodes:
        out = outputs.get(node.id)
        if out is None:
            continue
        backend = backend_for(out)
        seen = {name: backend.observed_dtype(out[name]) for name in node.output_schema.column_names if name in out.columns}
        planned = node.output_schema.dtypes
        if strict:
            # Compared as the engine names dtypes: on cuDF a column planned "Int64" is an
            # int64 column (canonical_dtype("Int64") is "int64" there).
            wrong = {
                n: (planned[n], d) for n, d in seen.items()
                if not is_unknown(planned[n]) and backend.canonical_dtype(planned[n]) != d
            }
            if wrong:
                raise TypeError(
                    f"{node.label}: column(s) {sorted(wrong)} hold other dtypes than planned "
                    f"({', '.join(f'{n}: planned {p}, got {g}' for n, (p, g) in sorted(wrong.items()))})"
                )
        if capture:
            node.output_schema = Schema(
                [c.with_dtype(seen[c.name]) if c.name in seen and seen[c.name] != c.dtype else c for c in node.output_schema]
            )


class DaskExecutor:
    """Transforms every partition of a dask DataFrame, and fits graphs on datasets.

    Parameters
    ----------
    client : distributed.Client, optional
        The cluster that fits (default: the active client, else dask's local scheduler).

    Examples
    --------
    >>> import pandas as pd, dask.dataframe as dd
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> from tabflow.graph import Graph
    >>> from tabflow.graph.executors import DaskExecutor
    >>> graph = Graph(["x"] >> ops.Normalize())
    >>> DaskExecutor().fit(nvt.Dataset(pd.DataFrame({"x": [1.0, 3.0]})), graph)
    >>> ddf = dd.from_pandas(pd.DataFrame({"x": [2.0, 3.0]}), npartitions=2)
    >>> DaskExecutor().transform(ddf, graph).compute()["x"].tolist()
    [0.0, 0.7071067811865475]
    """

    def __init__(self, client: Any = None) -> None:
        self.client = client

    def __getstate__(self) -> dict[str, Any]:
        # A client does not travel to workers.
        return {k: v for k, v in self.__dict__.items() if k != "client"}

    def transform(
        self,
        ddf: Any,
        graph: Any,
        output_dtypes: Mapping[str, Any] | None = None,
        additional_columns: Any = None,
        capture_dtypes: bool = False,
        strict: bool = False,
    ) -> Any:
        """A dask DataFrame of the graph's output, one ``map_partitions`` over ``ddf``.

        ``output_dtypes``, ``additional_columns`` and ``strict`` as for
        :meth:`LocalExecutor.transform`; the output's ``meta`` comes from the planned output
        schema (and ``output_dtypes``). ``capture_dtypes`` learns dtypes on the first
        partition (the workflow does this while fitting, see
        :func:`tabflow.graph.schemas.observe_schemas`).
        """
        nodes = _nodes(graph, "DaskExecutor")
        _check_ready(nodes, "DaskExecutor")
        if capture_dtypes:
            LocalExecutor().transform(_first_rows(ddf), nodes, capture_dtypes=True, strict=strict)
        names = _output_names(nodes, None)
        dtypes = {name: t for node in nodes for name, t in node.output_schema.dtypes.items()}
        extra = [c for c in (additional_columns or []) if c not in dtypes]
        dtypes.update({c: canonical_dtype(ddf.dtypes[c]) for c in extra})
        dtypes.update({n: canonical_dtype(d) for n, d in (output_dtypes or {}).items() if d is not None})
        unknown = [n for n in [*names, *extra] if is_unknown(dtypes[n])]
        if unknown:
            raise ValueError(
                f"DaskExecutor: the dtypes of column(s) {unknown} are known only from the data; fit the graph "
                "(or transform with capture_dtypes=True), or pass output_dtypes"
            )
        meta = get_backend(collection_engine(ddf)).empty_frame({n: dtypes[n] for n in [*names, *extra]})
        if extra:  # passed through untouched: described by the input's own dtypes
            meta = meta.astype({c: ddf.dtypes[c] for c in extra})
        executor = _PartitionExecutor(nodes, additional_columns, output_dtypes, strict)
        return ddf.map_partitions(executor, meta=meta, enforce_metadata=False)

    def fit(self, dataset: Any, graph: Any, refit: bool = True) -> None:
        """Fit the statistics ops of ``graph`` on ``dataset`` (a tabflow Dataset or a frame),
        in as few passes as their dependencies allow, as ``Workflow.fit`` does.

        ``refit=False`` only resolves the schemas when every statistics op is fitted already;
        otherwise all of them are fitted together (tabflow fits a graph's statistics in the
        same passes, so one already fitted is fitted again).
        """
        if not _GRAPH_FITTER:  # pragma: no cover - tabflow/__init__ imports the workflow
            raise RuntimeError("tabflow.workflow has not been imported: import tabflow first")
        node = graph.output_node if isinstance(graph, Graph) else graph
        _GRAPH_FITTER[0](node, dataset, self.client, refit)


def _first_rows(ddf: Any, n: int = 256) -> Any:
    """The first rows of the first non-empty partition (the last, empty, one if none)."""
    part = None
    for i in range(ddf.npartitions):
        part = ddf.partitions[i].head(n, npartitions=1)
        if len(part):
            break
    return part


class _PartitionExecutor:
    """The function each partition runs: a :class:`GraphRunner` per node, serialised once."""

    def __init__(self, nodes: list[Node], additional_columns: Any, output_dtypes: Any, strict: bool) -> None:
        self.runners = [GraphRunner([node], Graph(node).input_schema) for node in nodes]
        self.names = _output_names(nodes, additional_columns)
        self.additional_columns = list(additional_columns or [])
        self.output_dtypes = {n: canonical_dtype(d) for n, d in (output_dtypes or {}).items() if d is not None}
        self.strict = strict

    def __call__(self, partition: Any) -> Any:
        outputs = [runner.transform(partition) for runner in self.runners]
        if self.additional_columns:
            outputs.append(partition[self.additional_columns])
        out = outputs[0] if len(outputs) == 1 else concat_unique(outputs[::-1], self.names)  # the first node's column wins
        if self.strict:
            _check_dtypes([runner.targets[0] for runner in self.runners], {r.targets[0].id: o for r, o in zip(self.runners, outputs)}, False, True)
        if self.output_dtypes:
            backend = backend_for(out)
            out = out.assign(**{n: backend.astype(out[n], d) for n, d in self.output_dtypes.items() if n in out.columns})
        return out
